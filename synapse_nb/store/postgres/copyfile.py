"""The offline copy's file (``copy.db``), opened as a file any process of the person's Unix user can replace.

Review 85: a same-user process put a regular 0600 SQLite file at ``copy.db`` whose ``docs`` was a view over an endless
recursive query, and every offline read (``recall``, ``memory search``, ``team search-local``, the MCP ``recall``, the
prompt hook) hung without limit, and every online write added the 10 s exit flush of a keeper that never ended; a
truncated or garbage file made every offline read end in "unexpected error (DatabaseError): database disk image is
malformed", every later sync failed silently, and ``team status`` went on calling the copy fresh. So:

- :func:`open_copy` checks ``sqlite_schema`` against exactly the objects :data:`SCHEMA` makes (:func:`expected_schema`:
  the table, its FTS5 index and that index's own tables, nothing else) before anything is read: a view, a trigger, an
  index or a table more, or one of another shape, is a :class:`CopyDamaged`; a file with no schema yet is a new copy;
- every connection has a deadline (a progress handler: :data:`READ_SECONDS` for a reader, :data:`WRITE_SECONDS` for a
  sync or a scrub), so no statement on a crafted file runs without end; a reader waits at most :data:`BUSY_SECONDS` for
  a writer's lock;
- :func:`damaged` tells a damaged file (malformed, not a database, a schema of another shape, a read past its
  deadline) from a busy one, and :func:`set_copy_aside` moves it aside with its ``-wal``, ``-shm`` and feed position
  (:data:`~synapse_nb.store.postgres.cachedir.GOES_WITH`), so the next sync rebuilds it whole; a deletion's scrub
  removes what was set aside (:func:`drop_damaged`: it holds what it held);
- :func:`health` is what ``team status`` says of it: fine, damaged (then set aside), being rebuilt, or none.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
import time
from pathlib import Path

from synapse_nb.own_files import open_regular, state
from synapse_nb.store.postgres.cachedir import ASIDE, open_own, set_aside

__all__ = ["BUSY_SECONDS", "COPY_DB", "COPY_FEED", "CopyDamaged", "READ_SECONDS", "SCHEMA", "WRITE_SECONDS", "damaged",
           "drop_damaged", "expected_schema", "health", "open_copy", "set_copy_aside"]

#: The copy's files in the machine's cache folder: the candidates, and where they stand in the change feed.
COPY_DB = "copy.db"
COPY_FEED = "copy-feed.json"
#: Every object of the copy (:func:`expected_schema` reads what it makes).
SCHEMA = """
CREATE TABLE IF NOT EXISTS docs(id TEXT PRIMARY KEY, kind TEXT NOT NULL, mind TEXT NOT NULL, text TEXT NOT NULL,
                                updated_at TEXT NOT NULL, expires_at TEXT);
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(text, content='docs', content_rowid='rowid',
                                                     tokenize='porter unicode61 remove_diacritics 2');
"""
#: The longest a read of the copy may take (a search of the package's copy takes milliseconds).
READ_SECONDS = 10.0
#: The longest one connection of a sync or a scrub may work (a batch of the change feed, a VACUUM).
WRITE_SECONDS = 120.0
#: The longest a reader waits for another process's lock on the copy (a sync or a scrub waits 30 s, as before).
BUSY_SECONDS = 2.0
#: How many of SQLite's virtual-machine steps run between two looks at the deadline.
_STEPS = 1000


class CopyDamaged(Exception):
    """``copy.db`` is not a copy the package made (its ``reason``); ``aside`` is where it was moved, if it was."""

    def __init__(self, reason: str, aside: Path | None = None) -> None:
        super().__init__(reason)
        self.reason, self.aside = reason, aside


@functools.cache
def expected_schema() -> frozenset[tuple[str, str, str, str | None]]:
    """(type, name, table, sql) of every row :data:`SCHEMA` puts in ``sqlite_schema``, as this SQLite writes them."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(SCHEMA)
        return frozenset(_schema_of(con))
    finally:
        con.close()


def _schema_of(con: sqlite3.Connection) -> list[tuple[str, str, str, str | None]]:
    return [(str(a), str(b), str(c), None if d is None else str(d))
            for a, b, c, d in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")]


def _deadline(con: sqlite3.Connection, seconds: float) -> None:
    """Interrupt any statement of ``con`` still running ``seconds`` from now (``sqlite3.OperationalError``:
    interrupted)."""
    end = time.monotonic() + seconds
    con.set_progress_handler(lambda: int(time.monotonic() > end), _STEPS)


def open_copy(folder: Path, *, write: bool = False) -> tuple[sqlite3.Connection, bool] | None:
    """(a connection to the folder's ``copy.db``, whether it was made now: no schema until this call), checked: this
    user's regular file, not replaced between the check and SQLite's open, holding exactly :func:`expected_schema`
    (else :class:`CopyDamaged`; an error of SQLite's reading it is raised as it is: :func:`damaged` tells). A reader
    (``write`` False) gets None when there is no copy yet (none, or no schema) and never creates one; a writer
    creates the file (0600) and its schema when missing, and sets the WAL journal."""
    db = folder / COPY_DB
    if write:
        if state(db) == "damaged":  # a FIFO, a symlink, a folder: a cache, made anew (its feed position goes with it)
            set_copy_aside(folder, "not a regular file")
        fd = open_own(db, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO put there meanwhile never blocks
    else:
        got = open_regular(db)
        if got is None:
            return None
        fd = got
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    con = (sqlite3.connect(db, timeout=30, isolation_level=None) if write  # a sync in the background, or a scrub
           else sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=BUSY_SECONDS))
    try:
        now = os.lstat(db)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):  # replaced between the check and the open
            raise CopyDamaged(f"{db} was replaced while it was opened")
        _deadline(con, WRITE_SECONDS if write else READ_SECONDS)
        found = _schema_of(con)
        if not found:
            if not write:
                con.close()
                return None
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(SCHEMA)
            return con, True
        if set(found) != expected_schema() or len(found) != len(expected_schema()):
            raise CopyDamaged(_schema_said(found))
        if write:
            con.execute("PRAGMA journal_mode=WAL")
        return con, False
    except BaseException:
        con.close()
        raise


def _schema_said(found: list[tuple[str, str, str, str | None]]) -> str:
    """How a copy's schema differs from the package's: what it has more, lacks, or has of another shape."""
    want = {(t, n): sql for t, n, _, sql in expected_schema()}
    have = {(t, n): sql for t, n, _, sql in found}
    more = [f"{t} {n}" for t, n in sorted(have.keys() - want.keys())]
    less = [f"{t} {n}" for t, n in sorted(want.keys() - have.keys())]
    other = [f"{t} {n}" for t, n in sorted(have.keys() & want.keys()) if have[(t, n)] != want[(t, n)]]
    parts = [f"{what} {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}"
             for what, names in (("it has", more), ("it lacks", less), ("of another shape:", other)) if names]
    return "its schema is not the package's copy's: " + ("; ".join(parts) or "an object twice")


def damaged(exc: BaseException) -> str | None:
    """Why ``exc``, raised while reading or writing the copy, means the file is damaged (not a copy to keep), or None
    when it does not: another process holds it locked (busy), or it is not SQLite's error at all."""
    if isinstance(exc, CopyDamaged):
        return exc.reason
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return None
    if text == "interrupted":
        return f"a statement on it ran past its deadline ({READ_SECONDS:g}s to read, {WRITE_SECONDS:g}s to write)"
    return text or type(exc).__name__


def set_copy_aside(folder: Path, reason: str) -> Path | None:
    """Move a damaged ``copy.db`` aside (``copy.db.set-aside-damaged-<time>``, kept, never read) with its ``-wal``,
    ``-shm`` and feed position, so the next sync rebuilds the copy whole; the name it has now (None: it was gone)."""
    try:
        return set_aside(folder / COPY_DB, "damaged", said=f"is damaged ({reason})")
    except OSError:
        return None


def drop_damaged(folder: Path) -> None:
    """Remove the copies this user's syncs and reads set aside as damaged, with what went aside with them: each holds
    what it held, deleted and purged records included (a deletion's scrub calls this). Only this user's regular files
    named so are removed (another user's set aside there stays: it is never read)."""
    if not folder.is_dir():
        return
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    for p in folder.iterdir():
        if not (p.name.startswith(f"{COPY_DB}{ASIDE}damaged-") or f"{ASIDE}with-{COPY_DB}-" in p.name):
            continue
        with contextlib.suppress(OSError):
            st = p.lstat()
            if stat.S_ISREG(st.st_mode) and uid in (None, st.st_uid):
                p.unlink()


def health(folder: Path) -> str | None:
    """What ``team status`` says of this machine's copy: None when it is one the package made and synced; else that it
    is damaged (then set aside: :func:`set_copy_aside`, and the next sync rebuilds it whole), being rebuilt (set aside
    before, or with no feed position: the next sync replaces it whole), or that there is none yet."""
    db = folder / COPY_DB
    aside = sorted(p.name for p in folder.glob(f"{COPY_DB}{ASIDE}damaged-*")) if folder.is_dir() else []
    if state(db) == "missing":
        if aside:
            return (f"being rebuilt: the copy was damaged and set aside as {aside[-1]} (kept, never read); the next "
                    "sync with the server rebuilds it whole")
        return "none yet: the next operation that reaches the server makes it"
    try:
        if state(db) == "damaged":
            raise CopyDamaged("it is not a regular file (a FIFO, a symlink or a folder is in its place)")
        opened = open_copy(folder)
        if opened is not None:
            try:
                verdict = opened[0].execute("PRAGMA quick_check").fetchone()
            finally:
                opened[0].close()
            if verdict is None or verdict[0] != "ok":
                raise CopyDamaged(f"its integrity check says {verdict[0] if verdict else 'nothing'!r}")
    except (sqlite3.DatabaseError, CopyDamaged) as exc:
        reason = damaged(exc)
        if reason is None:
            return None  # busy: another process is writing it
        moved = set_copy_aside(folder, reason)
        return (f"damaged ({reason}): set aside as {moved.name if moved else 'nothing (it could not be moved)'}; the "
                "next sync with the server rebuilds it whole, and offline reads have no copy until then")
    if opened is None or state(folder / COPY_FEED) == "missing":
        return "being rebuilt: no feed position yet, so the next sync with the server replaces it whole"
    return None
