"""The private copy a read-only open reads when SQLite cannot read the vault's WAL in place: made for that open,
read, and removed at once.

SQLite (3.22 and later) reads a WAL database with ``mode=ro`` wherever ``synapse.db-shm`` exists, on a read-only
mount or in a folder this user may not write too (it builds the WAL's index in its own memory, whatever the file
holds): no copy is made then. Without ``-shm``, where it cannot be made, SQLite cannot read the WAL in place, so the
database and its WAL are copied into a new private folder (0700), the copy's WAL is merged into it, the copy is
opened, and the folder is removed (the open connection keeps reading its removed file) (review 89).

**Never kept across opens** (review 94, F1). The twenty-first pass kept the copy in ``$TMPDIR/synapse-ro-copies-<uid>``
and reused it while the vault's files were unchanged (160-200 ms saved per open on a 50k-record vault). But the copy
is read exactly where this user cannot write the vault, and the kept copy sat where this user *can* write: an agent of
the same Unix user edited it, and every later session start and the person's own reads showed the agent's text as
an approved lesson, from a vault the read-only mount protects. Nothing this user can write may stand in for the
vault, so each open copies from the vault itself (the time and space of the vault, at each such open; a prompt hook
on such a mount pays it at every prompt, and `synapse-nb memory status` once where the vault can be written ends it).
A copy that outlives its open is only a crash's leftover (a kill between the copy and its removal) in a private
``synapse-readonly-*`` folder. :func:`forget` removes the copies the twenty-first pass kept (a purged text among them).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from synapse_nb.errors import StoreError

__all__ = ["COPY_TRIES", "copies_folder", "forget", "open_copy"]

#: Times a copy of a database and its WAL is taken again when either changed while it was copied.
COPY_TRIES = 3
_FOLDER = "synapse-ro-copies-"  # where the twenty-first pass kept copies (removed by :func:`forget`)
_BUILD_PREFIX = "synapse-readonly-"


def copies_folder() -> Path | None:
    """This Unix user's folder of copies an earlier version kept (``$TMPDIR/synapse-ro-copies-<uid>``); None when
    there is none (missing, not a real directory, another user's, or the platform has no uids)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None
    try:
        folder = Path(tempfile.gettempdir()) / f"{_FOLDER}{getuid()}"
        st = os.lstat(folder)
    except OSError:  # none (the usual case), or no usable temporary folder at all (a read-only sandbox)
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != getuid():
        return None
    return folder


def forget(path: Path) -> None:
    """Remove the read-only copies an earlier version kept in this user's ``TMPDIR`` (of any vault: they were a
    cache, and one may hold a text a person has since purged). ``path`` is the vault being opened. Never fails: what
    is left is removed by a later open."""
    del path  # every kept copy goes, not only this vault's
    folder = copies_folder()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _state(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def open_copy(path: Path, wal: Path, connect: Callable[[str], sqlite3.Connection]) -> sqlite3.Connection:
    """A read-only connection to a private copy of the vault database ``path`` with its WAL ``wal`` merged into it,
    made for this open (see the module docstring). Raises :class:`StoreError` when no copy can be made, saying why
    and what to do."""
    why = (f"the vault database {path} cannot be read in place (SQLite cannot create or map {path.name}-shm here: a "
           f"read-only mount, or a folder this user may not write), and its WAL {wal.name} holds commits not yet in "
           f"{path.name}")
    fix = (f"open the vault once where it can be written (remount the disk read-write, or as the folder's owner: "
           f"any `synapse-nb memory status`), which copies the WAL into {path.name}")
    forget(path)  # copies an earlier version kept (review 94): nothing of the vault's stays in TMPDIR
    try:
        build = Path(tempfile.mkdtemp(prefix=_BUILD_PREFIX))  # 0700
    except OSError as exc:
        raise StoreError(f"{why}, and no private copy could be made ({exc.strerror or exc}); {fix}") from exc
    try:
        copy = _merged_copy(path, wal, build, connect, why, fix)
        conn = connect(f"file:{copy}?mode=ro&immutable=1")
        conn.execute("PRAGMA user_version").fetchone()  # opened now: the connection keeps the file it reads
        return conn
    except OSError as exc:
        raise StoreError(f"{why}, and no private copy could be made in {build.parent} ({exc.strerror or exc}); "
                         f"{fix}") from exc
    finally:
        shutil.rmtree(build, ignore_errors=True)  # an open connection keeps reading its (removed) file


def _merged_copy(path: Path, wal: Path, build: Path, connect: Callable[[str], sqlite3.Connection], why: str,
                 fix: str) -> Path:
    """Copy the database and its WAL into the folder ``build``, unchanged while copied, and merge the copy's WAL
    into the copy (the read needs no ``-wal`` or ``-shm``); returns the copy."""
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
    return copy
