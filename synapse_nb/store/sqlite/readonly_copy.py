"""The private copy a read-only open reads when SQLite cannot read the vault's WAL in place, made once and reused
while the vault's files stay the same.

SQLite (3.22 and later) reads a WAL database with ``mode=ro`` wherever ``synapse.db-shm`` exists, on a read-only
mount or in a folder this user may not write too (it builds the WAL's index in its own memory, whatever the file
holds): no copy is made then. Without ``-shm``, where it cannot be made, SQLite cannot read the WAL in place, so the
database and its WAL are copied and the copy's WAL merged into it (review 89). That copy was made at every open: a
prompt hook on a read-only mount copied the whole vault at every prompt (the time and the space of the vault). Now:

- the copy is kept in this Unix user's own folder, ``$TMPDIR/synapse-ro-copies-<uid>`` (0700; not used when it is
  not a real directory of this user's), named by the vault's file (device and inode), by its path (the real path of
  ``synapse.db``) and by the state it copied (device, inode, size, mtime and ctime of ``synapse.db`` and of its
  WAL), and reused while both are the same: the next open costs a ``stat`` of each and opening the copy. A change to
  either file makes a new copy;
- a copy is kept only when the vault's files did not change while it was made and no ``-shm`` appeared (no writer
  began meanwhile: SQLite reads the vault in place again); else that open reads a copy of its own, removed at once,
  as every open did before, and so does every open where the folder cannot be used (no ``os.getuid``, not this
  user's, no room);
- cleaned up (:func:`forget`): a new copy removes the vault's earlier ones; a writable open of the vault, a
  deletion's and a purge's scrub (``SqliteStore.scrub``), and a read-only open that needs no copy remove the
  vault's copies, every one this user keeps of that file or of any file at that path (one made before the vault's
  file was replaced, by a restore, holds what it held); a copy no open used for :data:`KEEP_UNUSED_S` is removed by
  the next open that uses the folder.

A purge's scrub removing them matters (a twenty-second pass): a copy kept after the person's writable handle was
opened (a read-only open that made it meanwhile, while no ``-shm`` was there) held the purged text until the next
read-only open or the hour, while the purge said its caches were scrubbed. Another Unix user's copies (their own
``synapse-ro-copies-<uid>``, 0700) are beyond this user's reach: a purge cannot remove them, and they stay until that
user's next open of the vault or their hour (docs/recall.md says so).

The copy is as trusted as the folder: a process of this Unix user could replace it, as it could the vault itself
wherever it may write it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from synapse_nb.errors import StoreError

__all__ = ["COPY_TRIES", "KEEP_UNUSED_S", "copies_folder", "forget", "open_copy"]

#: Times a copy of a database and its WAL is taken again when either changed while it was copied.
COPY_TRIES = 3
#: Seconds after which a copy no open used is removed (by the next open that uses the folder).
KEEP_UNUSED_S = 3600
_FOLDER = "synapse-ro-copies-"
_BUILD = "build-"


def copies_folder(*, create: bool = False) -> Path | None:
    """This Unix user's folder of kept copies, made (0700) when ``create``; None when there is none to use (it is
    missing and not made, not a real directory, another user's, open to others, or the platform has no uids)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None
    uid = getuid()
    try:
        folder = Path(tempfile.gettempdir()) / f"{_FOLDER}{uid}"
    except OSError:  # no usable temporary folder at all (a read-only sandbox): an open's copy says so
        return None
    if create:
        with contextlib.suppress(FileExistsError, OSError):
            os.mkdir(folder, 0o700)
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return None
    return folder


def _state(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:24]


def _vault_name(path: Path) -> str:
    """The part of a copy's name that names the vault's file (its device and inode: the same through any path)."""
    st = os.stat(path)
    return _digest(("vault", st.st_dev, st.st_ino))


def _place_name(path: Path) -> str:
    """The part of a copy's name that names where the vault's file is (its real path: the same through any link to
    it, whichever file is there now)."""
    return _digest(("place", os.path.realpath(path)))


def forget(path: Path, *, keep: str | None = None) -> None:
    """Remove the kept copies of the vault database ``path`` (but ``keep``): of its file, and of any file at its path,
    and every entry of the folder no open used for :data:`KEEP_UNUSED_S`. Never fails: a copy left is removed by a
    later open."""
    folder = copies_folder()
    if folder is None:
        return
    try:
        vault: str | None = _vault_name(path)
    except OSError:  # no file there now: its path still names the copies of the one that was
        vault = None
    with contextlib.suppress(OSError):
        _prune(folder, vault, _place_name(path), keep)


def _prune(folder: Path, vault: str | None, place: str, keep: str | None) -> None:
    old = time.time() - KEEP_UNUSED_S
    with os.scandir(folder) as entries:
        for e in entries:
            with contextlib.suppress(OSError):
                st = e.stat(follow_symlinks=False)
                ours = (vault is not None and e.name.startswith(f"{vault}-")) or e.name.split("-")[1:2] == [place]
                if e.name == keep or not (ours or st.st_mtime < old):
                    continue
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)


def open_copy(path: Path, wal: Path, connect: Callable[[str], sqlite3.Connection]) -> sqlite3.Connection:
    """A read-only connection to a copy of the vault database ``path`` with its WAL ``wal`` merged into it: the kept
    one of their present state, else a new one (kept when it can be; see the module docstring). Raises
    :class:`StoreError` when no copy can be made, saying why and what to do."""
    why = (f"the vault database {path} cannot be read in place (SQLite cannot create or map {path.name}-shm here: a "
           f"read-only mount, or a folder this user may not write), and its WAL {wal.name} holds commits not yet in "
           f"{path.name}")
    fix = (f"open the vault once where it can be written (remount the disk read-write, or as the folder's owner: "
           f"any `synapse-nb memory status`), which copies the WAL into {path.name}")
    folder = copies_folder(create=True)
    vault = None
    if folder is not None:
        try:
            vault = f"{_vault_name(path)}-{_place_name(path)}"
            name = f"{vault}-{_digest((_state(path), _state(wal)))}.db"
        except OSError:
            folder = None
        else:
            kept = _reuse(folder / name, connect)
            if kept is not None:
                forget(path, keep=name)
                return kept
    try:
        build = Path(tempfile.mkdtemp(prefix=_BUILD, dir=folder) if folder is not None
                     else tempfile.mkdtemp(prefix="synapse-readonly-"))  # 0700
    except OSError as exc:
        raise StoreError(f"{why}, and no private copy could be made ({exc.strerror or exc}); {fix}") from exc
    try:
        copy, copied = _merged_copy(path, wal, build, connect, why, fix)
        conn = connect(f"file:{copy}?mode=ro&immutable=1")
        conn.execute("PRAGMA user_version").fetchone()  # opened now: the connection keeps the file it reads
        if folder is not None and vault is not None and not path.with_name(path.name + "-shm").exists():
            with contextlib.suppress(OSError):  # kept for the next opens (a writer that began meanwhile: not kept)
                os.chmod(copy, 0o600)
                name = f"{vault}-{_digest(copied)}.db"
                os.replace(copy, folder / name)
                forget(path, keep=name)
        return conn
    except OSError as exc:
        raise StoreError(f"{why}, and no private copy could be made in {build.parent} ({exc.strerror or exc}); "
                         f"{fix}") from exc
    finally:
        shutil.rmtree(build, ignore_errors=True)  # an open connection keeps reading its (removed) file


def _reuse(copy: Path, connect: Callable[[str], sqlite3.Connection]) -> sqlite3.Connection | None:
    """The kept copy ``copy`` opened read-only, marked used; None when there is none (or it cannot be read: it is
    removed, and made anew)."""
    try:
        st = os.lstat(copy)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        return None
    try:
        conn = connect(f"file:{copy}?mode=ro&immutable=1")
    except sqlite3.Error:
        return None
    try:
        conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error:
        conn.close()
        with contextlib.suppress(OSError):
            os.unlink(copy)
        return None
    with contextlib.suppress(OSError):
        os.utime(copy)  # used: not removed as unused
    return conn


def _merged_copy(path: Path, wal: Path, build: Path, connect: Callable[[str], sqlite3.Connection], why: str,
                 fix: str) -> tuple[Path, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Copy the database and its WAL into the folder ``build``, unchanged while copied, and merge the copy's WAL
    into the copy (the read needs no ``-wal`` or ``-shm``); returns the copy and the state it copied."""
    copy = build / path.name
    for _ in range(COPY_TRIES):
        before = _state(path), _state(wal)
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, build / wal.name)
        if (_state(path), _state(wal)) == before:
            break
    else:
        raise StoreError(f"{why}, and another process kept changing them while they were copied; run the command "
                         "again, or " + fix)
    merge = connect(f"file:{copy}")
    try:
        merge.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        merge.execute("PRAGMA journal_mode = DELETE").fetchall()
    finally:
        merge.close()
    with open(copy, "rb+") as f:  # on disk before it is kept under its name: never a torn copy after a crash
        os.fsync(f.fileno())
    return copy, before
