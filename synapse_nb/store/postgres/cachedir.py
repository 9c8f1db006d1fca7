"""This machine's cache folder of a team vault is this Unix user's own, and so is every file the package opens in it.

In the shared-group set-up docs/team.md recommends (the agent as its own Unix user, the project in a setgid group
folder, umask 002) ``.synapse/team/`` is group-writable: review 59 renamed the person's login folder aside as the
agent's Unix user, put a folder of its own under that name with a ``copy.db`` it owned, and the person's next
commands synced every mind its login reads into the agent's file (the agent read a mind its login was never
granted), and at an outage showed the agent's edited copy as the person's STALE recall. Now:

- :func:`claim_folder` makes ``.synapse/team/`` with the sticky bit (as ``/tmp`` has: a group member can create its
  own login's folder there, and neither rename nor delete another's), gives it to an existing one this user owns,
  and uses the login's folder only when it is a real directory this user owns; anything else is moved aside (a
  name saying why) and a new folder made 0700, with a warning, or the open refused when it cannot be moved. It ends
  with :func:`private_folder`: what another user put in the folder is set aside and the rest tightened (0700 / 0600);
  opening a team vault calls it once, and nothing after it sweeps the folder again (it is 0700 and this user's: no
  other user can put anything in it);
- :func:`open_own` opens a file there and checks it after opening (``fstat``: a regular file of this user's): a
  file another user owns, or a symlink, is set aside and made anew, never read or written;
- :func:`read_own_text` reads one only when it is this user's regular file.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import time
from pathlib import Path

from synapse_nb.errors import StoreError
from synapse_nb.own_files import open_regular

__all__ = ["ASIDE", "GOES_WITH", "OWN_FILES", "OWN_FOLDERS", "claim_folder", "is_own_folder", "open_own", "own_folder",
           "private_folder", "read_own_text", "set_aside", "sweep"]

log = logging.getLogger("synapse_nb.team")

#: What a name moved aside carries (``<name>.set-aside-<why>-<time>``); the package opens no such name.
ASIDE = ".set-aside-"
#: The files the package opens in a login's cache folder (``copy.py``'s copy, its WAL, lock and feed position; the
#: store's feed position and in-doubt entries): each must be this Unix user's regular file (review 59).
OWN_FILES = ("copy.db", "copy.db-wal", "copy.db-shm", "copy.lock", "copy-feed.json", "copy-scrub.owed",
             "team-feed.json", "in-doubt.json")
#: The folders it opens there (the retrieval index): each must be this user's real directory.
OWN_FOLDERS = ("index",)


def _uid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _why(st: os.stat_result, *, folder: bool) -> str | None:
    """Why an entry is not this user's own (a name part), or None when it is."""
    uid = _uid()
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if uid is not None and st.st_uid != uid:
        return f"owned-by-uid-{st.st_uid}"
    if folder and not stat.S_ISDIR(st.st_mode):
        return "not-a-folder"
    if not folder and not stat.S_ISREG(st.st_mode):
        return "not-a-file"
    return None


#: What goes aside with a file: the offline copy's ``-wal`` and ``-shm`` (SQLite would read an old WAL into the new
#: copy) and its feed position, which without the copy it stood for made the next sync apply only later changes to a
#: new, empty copy, and ``team status`` call it fresh (review 85).
GOES_WITH = {"copy.db": ("copy.db-wal", "copy.db-shm", "copy-feed.json")}


def set_aside(path: Path, why: str, *, said: str | None = None) -> Path:
    """Rename ``path`` to ``<name>.set-aside-<why>-<time>`` beside it (kept, never opened again), with what goes with
    it (:data:`GOES_WITH`); returns the name. ``said``: the warning's words for why (default: not this user's own)."""
    stamp = f"{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}"
    aside = path.with_name(f"{path.name}{ASIDE}{why}-{stamp}")
    os.rename(path, aside)
    log.warning("%s %s: moved aside to %s (kept; never read or written)", path,
                said or f"was not this Unix user's own ({why.replace('-', ' ')})", aside.name)
    for name in GOES_WITH.get(path.name, ()):
        with contextlib.suppress(OSError):
            os.rename(path.with_name(name), path.with_name(f"{name}{ASIDE}with-{path.name}-{stamp}"))
    return aside


def claim_folder(folder: Path) -> Path:
    """Make ``folder`` (``.synapse/team/<login>@...``) this Unix user's own 0700 folder, its parent ``team/``
    existing (with the sticky bit when this package makes it or this user owns it); returns the folder to use.

    A real directory another user owns that cannot be moved aside (``team/`` has the sticky bit: the person once
    opened the agent's login in their own process, as docs/team.md allows) is left to its owner, and this user's
    folder is ``<name>.uid-<uid>`` beside it, claimed the same way (second reader 60: the agent's every command
    failed there). Either is then made private (:func:`private_folder`). Raises :class:`StoreError` when the folder
    is a symlink or a file that cannot be moved aside, or when that second folder is not this user's either."""
    try:
        _claim(folder)
    except _Foreign as exc:
        uid = _uid()
        if not exc.folder_of_another or uid is None:
            raise exc.error from None
        mine = folder.with_name(f"{folder.name}.uid-{uid}")
        log.warning("%s is another Unix user's folder (%s) and cannot be moved aside: this user's copy is kept in %s",
                    folder, exc.why.replace("-", " "), mine.name)
        try:
            _claim(mine)
        except _Foreign as again:
            raise again.error from None
        folder = mine
    private_folder(folder)
    return folder


def private_folder(folder: Path) -> None:
    """Make this machine's cache folder of a team vault (already this user's real directory) the Unix user's own:
    each entry another user owns (and a symlink, and one of :data:`OWN_FILES` / :data:`OWN_FOLDERS` that is no
    regular file / directory) set aside (:func:`sweep`; review 59: another Unix user's ``copy.db`` there was read and
    written), then the folder 0700, each file in it 0600 and each folder in it 0700, whatever the umask.

    The copy holds every mind the login reads: made with the umask (0644 in a 0755 folder; 0664 in a 0775 one in the
    shared-group set-up docs/team.md recommends), an agent under another Unix user read minds its own login was
    never granted, and rewrote the person's copy (review 57). An older, wider folder is tightened when the package
    opens it. ``.synapse/team/`` around it is left as it is: the agent's Unix user makes its own login's folder there.
    """
    sweep(folder, OWN_FILES, OWN_FOLDERS)
    uid = _uid()
    with contextlib.suppress(OSError):
        for path, want in ((folder, 0o700), *((p, 0o700 if p.is_dir() and not p.is_symlink() else 0o600)
                                              for p in folder.iterdir())):
            st = path.lstat()
            if (uid is None or st.st_uid == uid) and not path.is_symlink() and st.st_mode & 0o777 != want:
                with contextlib.suppress(OSError):
                    path.chmod(want)


def is_own_folder(folder: Path) -> bool:
    """Whether ``folder`` is a real directory (not a symlink) this Unix user owns: a cache folder whose copy it may
    read as its own (``team search-local`` with no URL known: never another user's, an agent's own one included)."""
    try:
        st = folder.lstat()
    except OSError:
        return False
    return _why(st, folder=True) is None


def own_folder(folder: Path) -> Path:
    """The folder this user's copy of a login is in, without making anything: ``folder``, or the
    ``<name>.uid-<uid>`` beside it that :func:`claim_folder` made when ``folder`` was another user's (readers such
    as ``team search-local`` and ``team status`` then read this user's copy, never the other's)."""
    uid = _uid()
    mine = folder.with_name(f"{folder.name}.uid-{uid}")
    try:
        st = folder.lstat()
    except OSError:
        return folder
    if uid is None or _why(st, folder=True) is None or not mine.is_dir() or mine.is_symlink():
        return folder
    return mine


class _Foreign(Exception):
    """A login folder that is not this user's and cannot be moved aside."""

    def __init__(self, error: StoreError, why: str, folder_of_another: bool) -> None:
        super().__init__(str(error))
        self.error, self.why, self.folder_of_another = error, why, folder_of_another


def _claim(folder: Path) -> None:
    team = folder.parent
    try:
        team.mkdir()  # its parent (.synapse/) exists; the mode is the umask's (group-writable in the shared set-up)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot create this machine's cache folder {team}: {exc.strerror or exc}") from exc
    with contextlib.suppress(OSError):
        st = team.lstat()
        if stat.S_ISDIR(st.st_mode) and _uid() in (None, st.st_uid) and not st.st_mode & stat.S_ISVTX:
            os.chmod(team, stat.S_IMODE(st.st_mode) | stat.S_ISVTX)  # others' folders there: never renamed by them
    for attempt in (1, 2):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot create this machine's cache folder {folder}: {exc.strerror or exc}") from exc
        try:
            why = _why(folder.lstat(), folder=True)
        except OSError as exc:
            raise StoreError(f"cannot read this machine's cache folder {folder}: {exc.strerror or exc}") from exc
        if why is None:
            return
        try:
            if attempt == 2:
                raise OSError(errno.EEXIST, "made again at once by another process")
            set_aside(folder, why)
        except OSError as exc:
            raise _Foreign(StoreError(
                f"this machine's cache folder of the team vault, {folder}, is not this Unix user's own folder "
                f"({why.replace('-', ' ')}) and cannot be moved aside ({exc.strerror or exc}); the package never "
                "reads or writes its copy in a folder another user controls. Its owner or an administrator moves it "
                f"away (and gives {team} the sticky bit: chmod +t {team}, so group members cannot rename each "
                "other's folders); the next command makes this login's folder afresh"),
                why, why.startswith("owned-by-uid-") and folder.is_dir() and not folder.is_symlink()) from exc


def sweep(folder: Path, files: tuple[str, ...], folders: tuple[str, ...] = ()) -> None:
    """Set aside each entry of ``folder`` another user owns (or a symlink), and ``files`` / ``folders`` that are not
    this user's regular files / directories; a folder of ``folders`` whose mode let others write is walked, and set
    aside whole when anything in it is another user's (a cache: it is rebuilt)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if ASIDE in entry.name:
            continue
        try:  # one gone meanwhile (set aside with another: GOES_WITH) is passed
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        why = _why(st, folder=entry.name in folders) if entry.name in files + folders else \
            ("symlink" if stat.S_ISLNK(st.st_mode) else None) or _owner_only(st)
        if why is None and entry.name in folders and st.st_mode & 0o022:
            why = _foreign_inside(Path(entry.path))
        if why is not None:
            with contextlib.suppress(OSError):
                set_aside(Path(entry.path), why)


def _owner_only(st: os.stat_result) -> str | None:
    uid = _uid()
    return f"owned-by-uid-{st.st_uid}" if uid is not None and st.st_uid != uid else None


def _foreign_inside(path: Path) -> str | None:
    for root, dirs, names in os.walk(path):
        for name in dirs + names:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, name))
                if stat.S_ISLNK(st.st_mode) or _owner_only(st):
                    return "holding-another-users-files"
    return None


def open_own(path: Path, flags: int = os.O_RDWR) -> int:
    """A file descriptor of ``path``, created 0600 when missing (never through a symlink), checked after opening: a
    regular file of this user's, else it is set aside and made anew. Tightened to 0600."""
    extra = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for attempt in (1, 2):
        try:
            fd = os.open(path, flags | os.O_CREAT | extra | (os.O_EXCL if attempt == 2 else 0), 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP or attempt == 2:  # ELOOP: a symlink (O_NOFOLLOW)
                raise
            set_aside(path, "symlink")
            continue
        st = os.fstat(fd)
        why = _why(st, folder=False)
        if why is None:
            with contextlib.suppress(OSError):
                if stat.S_IMODE(st.st_mode) != 0o600:
                    os.fchmod(fd, 0o600)
            return fd
        os.close(fd)
        if attempt == 2:
            break
        set_aside(path, why)
    raise StoreError(f"{path} is not this Unix user's own file and could not be made anew: the package neither reads "
                     f"nor writes it; move it away")


def read_own_text(path: Path, *, private: bool = False, cap: int = 16 * 1024 * 1024) -> str | None:
    """``path``'s text when it is a regular file of this user's (checked after opening, on the descriptor read, never
    through a symlink); None when it is missing, another user's, or not a regular file, and with ``private`` when
    its group or others may write it too (``in-doubt.json``: an entry there decides whether a write is made), or
    larger than ``cap``. Opened without blocking (review 81: a FIFO at ``team-feed.json`` hung every command)."""
    fd = open_regular(path)  # the package's one safe open: no symlink followed, no FIFO waited on, regular files only
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if _why(st, folder=False) is not None or (private and st.st_mode & 0o022):
            log.warning("%s is not a file of this Unix user's%s: not read", path,
                        " that only it may write" if private else "")
            return None
        if st.st_size > cap:
            log.warning("%s is larger than %d bytes: not read", path, cap)
            return None
        try:
            data = fh.read(cap + 1)
            return data.decode("utf-8") if len(data) <= cap else None
        except (OSError, UnicodeDecodeError):
            return None
