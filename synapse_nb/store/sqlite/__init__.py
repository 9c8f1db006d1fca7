"""SQLite, the system of record: :class:`SqliteStore` implements :class:`synapse_nb.store.base.VaultStore`.

Where the SQL is:

========================  =====================================================================================
``store/sql/`` (package)  the statements both backends share (:mod:`synapse_nb.store.sql`): the kind tables,
                          settings, sessions, flags, references, recall's candidates, tags and keys, export, import
``dialect.py``            what SQLite says its own way: FTS5 search, ``+column`` planner hints, ``IS``
``schema.py``             tables, FTS5 indexes, triggers, the ``gate_candidates`` view, migrations
``db.py``                 the connection: pragmas, transactions (``BEGIN IMMEDIATE`` + retry), snapshots,
                          write stamps (``meta`` row ``clock``), change notification
``queries.py``            recall's word statistics (FTS5 vocabulary) and BM25, the index outbox
``ranking.py``            recall engine v2's ranking inputs (FTS5 postings, document lengths, ``rank_log``)
========================  =====================================================================================

Examples
--------
>>> import tempfile, pathlib
>>> from synapse_nb.store.records import View
>>> s = SqliteStore(pathlib.Path(tempfile.mkdtemp()) / "synapse.db")
>>> s.schema_version == SCHEMA_VERSION
True
>>> s.memories.list(View("default", "2026-01-01T00:00:00.000000Z"))
[]
"""

from __future__ import annotations

from typing import Any

from synapse_nb.store.sql import (
    CheckpointsTable,
    DecisionsTable,
    EpisodesTable,
    ExportsQueries,
    FlagsQueries,
    HistoryQueries,
    LessonsTable,
    LinksQueries,
    MemoriesTable,
    MetaQueries,
    NotesTable,
    RefsQueries,
    RevisionsQueries,
    SessionsQueries,
    Table,
    TransferQueries,
)
from synapse_nb.store.sqlite.db import LOCK_TIMEOUT_S, Database
from synapse_nb.store.sqlite.dialect import fts_query
from synapse_nb.store.sqlite.queries import OutboxQueries, RecallQueries
from synapse_nb.store.sqlite.readonly_copy import forget
from synapse_nb.store.sqlite.schema import (
    FTS_TABLES,
    GET_VAULT_UID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SET_VAULT_UID,
    split_sql,
)

__all__ = ["LOCK_TIMEOUT_S", "MIGRATIONS", "SCHEMA_VERSION", "SCRUB_BUSY_MS", "SqliteStore", "Store", "fts_query",
           "split_sql"]

#: Milliseconds a deletion's scrub waits for another process's read of the vault's file to end before it says the
#: WAL still holds the deleted text (review 34: it waited the 10 s busy timeout, then said nothing).
SCRUB_BUSY_MS = 2000


class SqliteStore(Database):
    """One vault's SQLite database, seen through the store seam (a :class:`~synapse_nb.store.base.VaultStore`).

    Safe to share between threads of one process, and between vault handles of several minds and actors.
    The low-level :meth:`query` / :meth:`transaction` it inherits are for the repositories and tests only.
    """

    def __init__(self, path: Any, *, readonly: bool = False, refusal: str | None = None) -> None:
        super().__init__(path, readonly=readonly, refusal=refusal)
        #: what the last :meth:`scrub` left in the vault's file and its WAL, and why (None: nothing)
        self.wal_behind: str | None = None
        self.memories = MemoriesTable(self)
        self.checkpoints = CheckpointsTable(self)
        self.decisions = DecisionsTable(self)
        self.lessons = LessonsTable(self)
        self.episodes = EpisodesTable(self)
        self.notes = NotesTable(self)
        self._tables: dict[str, Table[Any, SqliteStore]] = {
            t.kind: t for t in (self.memories, self.checkpoints, self.decisions, self.lessons, self.episodes,
                                self.notes)}
        self.meta = MetaQueries(self)
        self.sessions = SessionsQueries(self)
        self.flags = FlagsQueries(self)
        self.refs = RefsQueries(self)
        self.recall = RecallQueries(self)
        self.outbox = OutboxQueries(self)
        self.transfer = TransferQueries(self, self._tables)
        self.history = HistoryQueries(self)
        self.revisions = RevisionsQueries(self)
        self.links = LinksQueries(self)
        self.exports = ExportsQueries(self)

    def table(self, kind: str) -> Table[Any, SqliteStore]:
        """The table of a kind ("memory" -> :attr:`memories`)."""
        return self._tables[kind]

    def scrub(self) -> None:
        """After a deletion: merge every FTS5 index (FTS5 keeps a deleted row's words in its segments until a merge;
        SQLite 3.40 has no ``secure-delete`` option), then checkpoint and truncate the WAL (its frames hold the pages
        as they were). ``PRAGMA secure_delete`` (set on every connection) zeroes the pages the deletion freed.
        Another process's open read (an agent's ``sqlite3 synapse.db``, ``BEGIN; SELECT ...``) keeps the WAL from
        being truncated: :attr:`wal_behind` says so then (review 34). First, the private copies read-only opens keep
        of the vault (:func:`~synapse_nb.store.sqlite.readonly_copy.forget`: this Unix user's, of that file and of any
        at its path) are removed: one kept after this handle was opened held the deleted text for up to an hour (a
        twenty-second pass)."""
        self.wal_behind = None
        if self.readonly:
            return
        forget(self.path)  # never fails; before the write lock is asked for (a locked vault keeps none either)
        with self.transaction():
            for table in FTS_TABLES:
                self.write(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        if not self.truncate_wal(SCRUB_BUSY_MS):
            self.wal_behind = (
                f"the vault's database {self.path} was NOT fully scrubbed: another process has a read open on it "
                f"(`fuser {self.path}` names it), so the file and its WAL ({self.path}-wal) still hold the deleted "
                "text until that read ends and a checkpoint runs (the next deletion or purge, or the last "
                "connection to the file closing, runs one)")

    def vault_uid(self) -> str | None:
        """This vault's identity: the random id in ``meta`` (``vault_uid``, schema v5). A writable store gives one to
        a vault that lacks it (written once, never changed); a read-only one answers None then."""
        row = self.query_one(GET_VAULT_UID)
        if row is None and not self.readonly:
            with self.transaction(moves_version=False):
                self.write(SET_VAULT_UID)
            row = self.query_one(GET_VAULT_UID)
        return str(row["value"]) if row is not None and row["value"] else None

    def for_actor(self, actor: str) -> SqliteStore:
        """This store: a local vault has no database roles (the kind managers enforce the human gate)."""
        return self


#: The names earlier versions used (tests and scripts import them from here).
Store = SqliteStore
_split_sql = split_sql
