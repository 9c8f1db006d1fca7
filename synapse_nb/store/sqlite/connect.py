"""Opening a vault's SQLite file: the connection, and what a failure to open it means.

**Side files** (review 79). A ``-wal``, ``-shm`` or ``-journal`` beside the database that is a symlink or not a
regular file is named, with how to remove it (:func:`check_side_files`).

**A read-only open** reads the file with ``mode=ro``; SQLite reads a WAL there whenever ``-shm`` exists, even on a
read-only mount (it keeps the WAL's index in its own memory). Where SQLite cannot create or map the ``-shm`` file (a
read-only mount without it, a folder this user may not write), it used to fall back to ``immutable=1``, which
ignores ``synapse.db-wal``: the commits still in the WAL (a writer killed before its checkpoint) vanished from
recall, listings and the prompt hook, silently (review 89). Now ``immutable=1`` is used only when there is no WAL to
ignore; otherwise the database and its WAL are copied into a private folder and the copy's WAL merged into it: every
acknowledged commit is answered, and nothing is written beside the vault. The copy is kept and reused while the
vault's files stay the same (:mod:`~synapse_nb.store.sqlite.readonly_copy`: it was made anew at every open, the
vault's size in time and space); a writable open, a deletion's or purge's scrub, and a read-only open that needs
none remove the vault's kept copies. A copy that cannot be made (no room for it) is a :class:`StoreError` saying why
and what to do.

**A failure to open** (review 89): a full disk (``SQLITE_FULL``, or a disk I/O error such as ``SQLITE_IOERR_SHMSIZE``
on a disk with no room left) said "disk I/O error; if the file is corrupt, restore it from an export ... or move it
aside to start a new vault", advice that puts an intact vault at risk. :func:`open_failure` reads SQLite's error name
and the free space: a full disk says so and that nothing was changed; another I/O error says the file is not known
to be damaged; only the other errors (a damaged file: ``SQLITE_CORRUPT``, ``SQLITE_NOTADB``) keep that advice.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
from pathlib import Path

from synapse_nb.errors import StoreError
from synapse_nb.store.sqlite.rankcap_schema import RANK_FUNCTIONS
from synapse_nb.store.sqlite.readonly_copy import forget, open_copy

__all__ = ["FULL_BELOW", "LOCK_TIMEOUT_S", "check_side_files", "connect", "open_failure", "open_sqlite"]

#: How long a writer waits for another process's write lock before giving up, in seconds.
LOCK_TIMEOUT_S = 60.0
#: Free bytes on the vault's disk below which an I/O error at open is read as a full disk (the ``-shm`` file alone
#: needs 32 KiB; a WAL grows by pages of 4 KiB).
FULL_BELOW = 1 << 20


def check_side_files(path: Path) -> None:
    """Refuse, naming it, a ``-wal``, ``-shm`` or ``-journal`` beside the database that is a symlink or not a regular
    file: SQLite cannot open the vault then, and its "unable to open database file" read as a damaged database whose
    remedy set the person's intact vault aside (review 79). These files are SQLite's own: removed, SQLite makes them
    anew (a symlink's target is never touched)."""
    for suffix in ("-wal", "-shm", "-journal"):
        side = path.with_name(path.name + suffix)
        try:
            st = os.lstat(side)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise StoreError(f"{side} is {what}, so SQLite cannot open the vault database {path} (which is not "
                             f"damaged by it); remove {side.name} (`rm {side}`) and run the command again")


def connect(uri: str) -> sqlite3.Connection:
    """A connection to ``uri`` as the vault uses it (autocommit: the vault begins its own transactions)."""
    # cached_statements: a recall prepares one statement per id-list length and kind (candidate rows, records,
    # tags, keys); Python's default cache of 128 was thrashed by a few hundred recalls, re-preparing each time
    conn = sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT_S, isolation_level=None,
                           check_same_thread=False, cached_statements=2048)
    for name, fn in RANK_FUNCTIONS.items():  # the ranking index's cap, applied with the FTS5 queue (v12)
        conn.create_function(name, 1, fn, deterministic=True)
    return conn


def open_sqlite(path: Path, readonly: bool, refusal: str | None) -> sqlite3.Connection:
    """The connection to the vault database ``path`` (see the module docstring)."""
    if not readonly:
        forget(path)  # a person's purge, among others, leaves no kept copy of what it removed
        return connect(f"file:{path}")
    if not path.is_file():
        raise StoreError(f"there is no vault database at {path} to open read-only")
    wal = path.with_name(path.name + "-wal")
    if refusal is not None and not wal.exists():
        # a folder we may not write to (a symlink out of the project): a WAL reader would create -wal/-shm
        # there; with no -wal nobody holds it open for writing, so it reads as immutable and nothing is created
        return _without_copy(path, connect(f"file:{path}?mode=ro&immutable=1"))
    conn = connect(f"file:{path}?mode=ro")
    try:
        conn.execute("PRAGMA user_version").fetchone()
        return _without_copy(path, conn)
    except sqlite3.OperationalError:
        conn.close()
    # a WAL database whose -shm SQLite cannot create or map (a read-only mount, a folder this user may not write)
    if _size(wal) == 0:  # nothing in a WAL to ignore: immutable reads every commit, and creates nothing
        return _without_copy(path, connect(f"file:{path}?mode=ro&immutable=1"))
    return open_copy(path, wal, connect)


def _without_copy(path: Path, conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn``, read in place: the vault's kept copies are of an earlier state, and removed."""
    forget(path)
    return conn


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _full(folder: Path) -> bool:
    """Whether the disk holding ``folder`` has (almost) no room left for this user."""
    with contextlib.suppress(OSError):
        return shutil.disk_usage(folder).free < FULL_BELOW
    return False


def open_failure(path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    """What SQLite's ``exc`` at opening the vault database ``path`` means, and what to do (see the module
    docstring)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name == "SQLITE_FULL" or (name.startswith("SQLITE_IOERR") and _full(path.parent)):
        return StoreError(f"cannot open the vault database {path}: the disk holding {path.parent} is full ({exc}, "
                          f"{name}); free space on it and retry; nothing was changed")
    if name.startswith("SQLITE_IOERR"):
        return StoreError(f"cannot open the vault database {path}: {exc} ({name}), which does not say the file is "
                          f"damaged; check the disk holding {path.parent} (free space, `dmesg`) and retry; nothing "
                          "was changed")
    return StoreError(f"cannot open the vault database {path}: {exc}; if the file is corrupt, restore it from an "
                      "export (`synapse-nb memory import`) or move it aside to start a new vault")
