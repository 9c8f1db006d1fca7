"""One way to open the package's own files: those it keeps beside ``synapse.db`` (the index folder's queues, scrub
marker and lock, recall's rank files, the hook's log and lock, the agent sessions' state) and in this user's
config and cache folders (pins, the embedders a person set, a team's feed).

Everything but ``synapse.db`` is derived or bookkeeping, and anyone who may write the vault folder (an agent
included) may leave a FIFO, a socket, a directory or a symlink where such a file belongs. Before (review 79) a
FIFO hung every recall and ``index check --repair`` while they held the index lock, and a symlink had the package
append its lines to the file it pointed at. So a file is read here only when it is a regular file, opened without
following a symlink, without blocking (``O_NONBLOCK``: a FIFO opens and is then seen for what it is), and no larger
than its caller's cap; anything else is *no file*, and the caller says what no file means (rebuild the cache,
compare everything, a scrub owed now). A file is written by replacing it (a temporary file, then ``os.replace``,
which never follows a symlink at the target) or appended to through :func:`open_regular` (``O_NOFOLLOW``, checked
regular once open). The person's upkeep (``index check --repair``, ``index rebuild``, a person's deletion's scrub)
removes what is in a file's place (:func:`remove`). The lock files are taken by :func:`synapse_nb.locks.held`.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp()); f = d / "a"; _ = f.write_bytes(b"abc")
>>> read_bytes(f, cap=10), read_bytes(f, cap=2), read_bytes(d / "none", cap=10), state(d / "none")
(b'abc', None, None, 'missing')
>>> os.mkfifo(d / "q"); (d / "l").symlink_to(f)
>>> read_bytes(d / "q", cap=10), read_bytes(d / "l", cap=10), state(d / "q"), state(d / "l"), state(f)
(None, None, 'damaged', 'damaged', 'file')
>>> remove(d / "q"), remove(d / "l"), f.read_bytes(), sorted(p.name for p in d.iterdir())
(True, True, b'abc', ['a'])
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

__all__ = ["CONFIG", "DERIVED", "FOLDERS", "MAX_WALK", "damaged_in", "irregular_in", "open_regular", "own_folder",
           "read_bytes", "read_text", "remove", "state", "write_atomic"]

#: The package's own files in a vault folder (glob patterns): each is derived or bookkeeping, and rebuilt when it is
#: not a regular file (docs/reliability.md, "Files beside the database").
DERIVED = ("synapse.db-wal", "synapse.db-shm", "synapse.db-journal", "index.lock", "index/*.queue",
           "index/scrub.owed", "cache/rank-*", "agent-sessions.json", "agent-sessions.lock", "hook.lock", "hook.log",
           "watch.lock")

#: The package's own folders in a vault folder: each is derived (the retrieval index, recall's rank files), and is
#: the package's only when it is a real folder (:func:`own_folder`; review 81).
FOLDERS = ("index", "cache")
#: The configuration a person wrote in a vault folder, with the most it may hold: read only when it is a regular
#: file (a symlink followed) under that cap, else a clear error naming it; never removed (review 81: a FIFO at
#: ``team.toml`` hung every command, ``/dev/zero`` there ate the machine's memory).
CONFIG = {"team.toml": 64 * 1024}

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def open_regular(path: str | Path, flags: int = os.O_RDONLY, mode: int = 0o600, *, follow: bool = False) -> int | None:
    """A descriptor of ``path`` opened with ``flags`` (and ``O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC``; ``mode`` when
    ``flags`` creates it) when it is a regular file; None when it is missing, a symlink, a FIFO, a socket, a device,
    a directory or cannot be opened. Opening never blocks and never follows a symlink at ``path``; with ``follow``
    (a file a person wrote, who may keep it elsewhere: ``team.toml``) a symlink is followed, what it names is still
    read only when it is a regular file."""
    try:
        fd = os.open(path, flags | (_NOFOLLOW & ~getattr(os, "O_NOFOLLOW", 0) if follow else _NOFOLLOW), mode)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read_bytes(path: str | Path, *, cap: int, follow: bool = False) -> bytes | None:
    """``path``'s bytes when it is a regular file of at most ``cap`` bytes; None otherwise (missing, not a regular
    file, a symlink unless ``follow``, larger than ``cap``, unreadable: "no file")."""
    fd = open_regular(path, follow=follow)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if os.fstat(fh.fileno()).st_size > cap:
                return None
            data = fh.read(cap + 1)
    except OSError:
        return None
    return data if len(data) <= cap else None


def read_text(path: str | Path, *, cap: int, errors: str = "strict", follow: bool = False) -> str | None:
    """:func:`read_bytes` decoded as UTF-8 (None also when it does not decode, with ``errors="strict"``)."""
    data = read_bytes(path, cap=cap, follow=follow)
    if data is None:
        return None
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError:
        return None


def state(path: str | Path) -> Literal["missing", "file", "damaged"]:
    """What is at ``path`` (never followed): nothing, a regular file, or something else in a file's place."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "damaged"
    return "file" if stat.S_ISREG(st.st_mode) else "damaged"


def own_folder(path: str | Path, *, fix: bool = False) -> bool:
    """Whether ``path`` (one of :data:`FOLDERS` in a vault folder) is the package's: a real folder, or nothing yet
    (made by the first write), never followed (``lstat``). A symlink there (to a person's folder, say) or a file is
    not: before (review 81) a person's ``index check --repair`` and ``index rebuild`` deleted files in the folder a
    symlink at ``.synapse/index`` or ``.synapse/cache`` named, and wrote LanceDB tables there. With ``fix`` (the
    person's upkeep) what is there is removed itself (a symlink, never its target) and an empty folder made in its
    place; True when the folder is the package's now.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "mine").mkdir(); (d / "link").symlink_to(d / "mine")
    >>> own_folder(d / "mine"), own_folder(d / "none"), own_folder(d / "link"), own_folder(d / "link", fix=True)
    (True, True, False, True)
    >>> (d / "link").is_symlink(), (d / "link").is_dir(), (d / "mine").is_dir()
    (False, True, True)
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if stat.S_ISDIR(st.st_mode):
        return True
    if not fix:
        return False
    with contextlib.suppress(OSError):
        os.unlink(path)  # the entry itself: a symlink, a file, a FIFO
    with contextlib.suppress(OSError):
        os.mkdir(path, 0o755)
    return own_folder(path)


#: The most entries of a folder :func:`irregular_in` looks at (a LanceDB table the scrub compacts holds tens).
MAX_WALK = 20_000


def irregular_in(folder: str | Path, *, most: int = MAX_WALK) -> Path | None:
    """The first entry under ``folder`` (a LanceDB table's folder) that is neither a regular file nor a folder (a
    FIFO, a socket, a device, a symlink), or ``folder`` itself when it is not a real folder or cannot be listed;
    None when there is none among the first ``most`` entries. Never followed, never opened: the entries' types as
    the folder lists them (review 81: a FIFO in a table hung recall, the prompt hook and ``index check --repair``
    in LanceDB's open). About 20 µs for a table of 40 files.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "data").mkdir(); _ = (d / "data" / "a.lance").write_bytes(b"x")
    >>> irregular_in(d) is None, os.mkfifo(d / "data" / "b.lance"), irregular_in(d) == d / "data" / "b.lance"
    (True, None, True)
    """
    here = Path(folder)
    todo, seen = [here], 0
    try:
        if not stat.S_ISDIR(os.lstat(here).st_mode):
            return here
        while todo:
            here = todo.pop()
            with os.scandir(here) as entries:
                for e in entries:
                    seen += 1
                    if seen > most:
                        return None
                    if e.is_dir(follow_symlinks=False):
                        todo.append(here / e.name)
                    elif not e.is_file(follow_symlinks=False):
                        return here / e.name
    except FileNotFoundError:
        return None
    except OSError:  # a folder that cannot be listed (chmod 000) is no readable table either
        return here
    return None


def damaged_in(folder: str | Path) -> list[Path]:
    """The entries of :data:`DERIVED` in the vault folder ``folder`` that are not regular files (a FIFO, a symlink, a
    folder in a file's place), the :data:`FOLDERS` that are not real folders (whose files are then not looked at)
    and the :data:`CONFIG` files that cannot be read (review 81): what a hook that ran out of time names, in place
    of "a slow vault", and what a person's upkeep removes (:func:`synapse_nb.store.index.scrub.sweep`; never a
    :data:`CONFIG` file)."""
    root = Path(folder)
    bad = [root / name for name in FOLDERS if not own_folder(root / name)]
    skip = tuple(f"{p.name}/" for p in bad)
    bad += [root / name for name, cap in CONFIG.items()
            if os.path.lexists(root / name) and read_bytes(root / name, cap=cap, follow=True) is None]
    if "index/" not in skip:  # a LanceDB table holding a FIFO, a symlink, a device (review 81)
        bad += [hit for t in sorted(root.glob("index/*.lance")) if (hit := irregular_in(t)) is not None]
    return bad + [p for pattern in DERIVED if not pattern.startswith(skip) for p in sorted(root.glob(pattern))
                  if state(p) == "damaged"]


def remove(path: str | Path) -> bool:
    """Remove what is at ``path`` when it is not a regular file (a symlink itself, never its target; a directory
    with what it holds): the person's upkeep, for a file the package rebuilds. True when something was removed."""
    if state(path) != "damaged":
        return False
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return True
    return False


def write_atomic(path: Path, data: str | bytes | bytearray | Iterable[bytes | bytearray], *,
                 mode: int | None = None, fsync: bool = False) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old file or the new one, never a part: a temporary file in
    the same folder (``mkstemp``: the owner's only, unless ``mode`` is given), written, then ``os.replace`` d over
    ``path``; on any failure the temporary file is removed and the error raised. ``data`` is text (UTF-8), bytes, or
    byte chunks written in turn (no copy of a large payload is joined first); ``fsync``: flushed to disk before the
    rename. The rename replaces whatever is at ``path`` (a symlink itself, never its target: review 79).

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> write_atomic(f, '{"a": 1}'); write_atomic(f, [b'{"a": ', b'2}'], mode=0o644)
    >>> f.read_text(), oct(f.stat().st_mode & 0o777), [p.name for p in f.parent.iterdir()]
    ('{"a": 2}', '0o644', ['a.json'])
    """
    import tempfile  # loaded only when something is written (the hook path reads far more often)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in [data] if isinstance(data, str | bytes | bytearray) else data:
                fh.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)  # the descriptor: never a symlink swapped in at the name (review 81)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
