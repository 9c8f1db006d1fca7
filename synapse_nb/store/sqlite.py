"""SQLite, the system of record.

One file, ``synapse.db``, in WAL mode: readers never block writers, several
processes (a kernel, the CLI, an agent's MCP server, a git hook) share it.

- Every write is one ``BEGIN IMMEDIATE`` transaction, retried with backoff while
  another process holds the write lock, so "database is locked" does not reach a
  caller under ordinary contention (it surfaces as a ``StoreError`` only after
  ``LOCK_TIMEOUT_S``).
- The schema is versioned with ``PRAGMA user_version``; migrations run forward,
  each in its own transaction. A vault from a newer version is refused, never
  modified.
- Full-text search: one contentless FTS5 table per kind (porter stemming),
  kept in sync by triggers, so the index can never disagree with the rows. An
  external-content ``gate_vocab`` table over ``gate_docs`` (no stemming) gives the
  recall gate exact document frequencies of every word at no extra cost.
- Tags live in a side table maintained by triggers from each row's JSON tags.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from synapse_nb.errors import SchemaError, StoreError, SynapseError

__all__ = ["LOCK_TIMEOUT_S", "SCHEMA_VERSION", "Store"]

SCHEMA_VERSION = 2
#: How long a writer waits for another process's write lock before giving up, in seconds.
LOCK_TIMEOUT_S = 60.0

_FTS = {
    # table: (fts columns, expressions for them)
    "memories": (("key", "content", "tags"), ("replace({r}.key, '_', ' ')", "{r}.content", "{r}.tags")),
    "checkpoints": (("doing", "next_step", "blockers", "files"),
                    ("{r}.doing", "coalesce({r}.next_step, '')", "coalesce({r}.blockers, '')", "{r}.changed_files")),
    "decisions": (("decision", "rationale", "tags"), ("{r}.decision", "coalesce({r}.rationale, '')", "{r}.tags")),
    "lessons": (("summary", "analysis", "lesson_text", "files"),
                ("{r}.summary", "coalesce({r}.analysis, '')", "coalesce({r}.lesson_text, '')", "{r}.files_affected")),
    "episodes": (("task_key", "outcome", "refs"),
                 ("replace({r}.task_key, '_', ' ')", "coalesce({r}.outcome, '')", "{r}.refs")),
    "notes": (("name", "trigger", "body"), ("replace({r}.name, '_', ' ')", "{r}.trigger", "{r}.body")),
}

# The text the recall gate scores, per table (lessons are not gate candidates: approved ones are always shown).
GATE_TEXT = {
    "memories": "replace({r}.key, '_', ' ') || ' ' || {r}.content || ' ' || "
                "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.tags))",
    "checkpoints": "{r}.doing || ' ' || coalesce({r}.next_step, '') || ' ' || coalesce({r}.blockers, '') || ' ' || "
                   "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.changed_files))",
    "decisions": "{r}.decision || ' ' || coalesce({r}.rationale, '') || ' ' || "
                 "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.tags))",
    "episodes": "replace({r}.task_key, '_', ' ') || ' ' || coalesce({r}.outcome, '') || ' ' || "
                "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.refs))",
    "notes": "replace({r}.name, '_', ' ') || ' ' || {r}.trigger",
}
_TABLE_KIND = {"memories": "memory", "checkpoints": "checkpoint", "decisions": "decision", "lessons": "lesson",
               "episodes": "episode", "notes": "note"}

_TABLES_V1 = """
CREATE TABLE meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE memories(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    category TEXT NOT NULL,
    key TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 3),
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    verified INTEGER NOT NULL CHECK (verified IN (0, 1)),
    confidence REAL NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    expires_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (mind, category, key)
);
CREATE INDEX memories_order ON memories(mind, priority, updated_at DESC);
CREATE INDEX memories_key ON memories(mind, key);
CREATE INDEX memories_expiry ON memories(expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE checkpoints(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    branch TEXT,
    commit_sha TEXT,
    doing TEXT NOT NULL,
    changed_files TEXT NOT NULL DEFAULT '[]',
    next_step TEXT,
    blockers TEXT,
    origin TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX checkpoints_latest ON checkpoints(mind, branch, created_at DESC);
CREATE TABLE decisions(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    decision TEXT NOT NULL,
    rationale TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    branch TEXT,
    commit_sha TEXT,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX decisions_recent ON decisions(mind, created_at DESC);
CREATE TABLE lessons(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'expired')),
    summary TEXT NOT NULL,
    branch TEXT,
    revert_sha TEXT,
    revert_commit TEXT,
    reverted_commits TEXT NOT NULL DEFAULT '[]',
    files_affected TEXT NOT NULL DEFAULT '[]',
    diffstat TEXT NOT NULL DEFAULT '[]',
    analysis TEXT,
    analysis_by TEXT CHECK (analysis_by IN ('user', 'agent')),
    lesson_text TEXT,
    approved_at TEXT,
    expires_at TEXT,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX lessons_revert ON lessons(mind, revert_sha) WHERE revert_sha IS NOT NULL;
CREATE INDEX lessons_status ON lessons(mind, status, approved_at DESC);
CREATE TABLE episodes(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    task_key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('success', 'failure', 'unknown')),
    outcome TEXT,
    refs TEXT NOT NULL DEFAULT '[]',
    duration_s REAL,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX episodes_task ON episodes(mind, task_key, created_at DESC);
CREATE TABLE notes(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    name TEXT NOT NULL,
    trigger TEXT NOT NULL,
    body TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (mind, name)
);
CREATE TABLE tags(
    tag TEXT NOT NULL,
    mind TEXT NOT NULL,
    kind TEXT NOT NULL,
    rid TEXT NOT NULL,
    PRIMARY KEY (tag, mind, kind, rid)
) WITHOUT ROWID;
CREATE INDEX tags_rid ON tags(rid);
CREATE TABLE session_seen(
    mind TEXT NOT NULL,
    session TEXT NOT NULL,
    rid TEXT NOT NULL,
    digest TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (mind, session, rid)
) WITHOUT ROWID;
CREATE TABLE gate_docs(
    gid INTEGER PRIMARY KEY,
    rid TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL
);
CREATE VIRTUAL TABLE gate_vocab USING fts5(body, content='gate_docs', content_rowid='gid',
    tokenize="unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE gate_vocab_row USING fts5vocab(gate_vocab, 'row');
CREATE TABLE outbox_counter(n INTEGER NOT NULL);
INSERT INTO outbox_counter(n) VALUES (0);
CREATE TABLE index_outbox(
    rid TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER gate_docs_ai AFTER INSERT ON gate_docs BEGIN
    INSERT INTO gate_vocab(rowid, body) VALUES (new.gid, new.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (new.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_ad AFTER DELETE ON gate_docs BEGIN
    INSERT INTO gate_vocab(gate_vocab, rowid, body) VALUES ('delete', old.gid, old.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (old.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_au AFTER UPDATE ON gate_docs BEGIN
    INSERT INTO gate_vocab(gate_vocab, rowid, body) VALUES ('delete', old.gid, old.body);
    INSERT INTO gate_vocab(rowid, body) VALUES (new.gid, new.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (new.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE VIEW gate_candidates AS
    SELECT g.rid AS id, 'memory' AS kind, t.mind, g.body AS text, t.updated_at, t.expires_at
        FROM gate_docs g JOIN memories t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'decision', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN decisions t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'checkpoint', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN checkpoints t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'episode', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN episodes t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'note', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN notes t ON t.id = g.rid;
"""


def _fts_ddl() -> str:
    parts: list[str] = []
    for table, (cols, exprs) in _FTS.items():
        fts = f"{table}_fts"
        parts.append(
            f"CREATE VIRTUAL TABLE {fts} USING fts5({', '.join(cols)}, content='', "
            f"tokenize=\"porter unicode61 remove_diacritics 2\");"
        )
        new_vals = ", ".join(e.format(r="new") for e in exprs)
        old_vals = ", ".join(e.format(r="old") for e in exprs)
        fts_del = f"INSERT INTO {fts}({fts}, rowid, {', '.join(cols)}) VALUES ('delete', old.rowid, {old_vals});"
        kind = _TABLE_KIND[table]
        gate = GATE_TEXT.get(table)
        gate_ins = (f"INSERT INTO gate_docs(rid, body) VALUES (new.id, {gate.format(r='new')});" if gate else "")
        gate_del = "DELETE FROM gate_docs WHERE rid = old.id;" if gate else ""
        gate_upd = (f"UPDATE gate_docs SET body = {gate.format(r='new')} WHERE rid = new.id;" if gate else "")
        tag_ins = (f"INSERT OR IGNORE INTO tags(tag, mind, kind, rid) SELECT value, new.mind, '{kind}', new.id "
                   f"FROM json_each(new.tags);" if "tags" in cols else "")
        tag_del = "DELETE FROM tags WHERE rid = old.id;" if "tags" in cols else ""
        parts.append(
            f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {fts}(rowid, {', '.join(cols)}) VALUES (new.rowid, {new_vals}); {gate_ins} {tag_ins} END;"
        )
        parts.append(
            f"CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN "
            f"{fts_del} {gate_del} {tag_del} "
            f"DELETE FROM session_seen WHERE rid = old.id; END;"
        )
        parts.append(
            f"CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN "
            f"{fts_del} "
            f"INSERT INTO {fts}(rowid, {', '.join(cols)}) VALUES (new.rowid, {new_vals}); {gate_upd} "
            f"{tag_del} {tag_ins} END;"
        )
    return "\n".join(parts)


_V2_FLAGS = """
CREATE TABLE flags(
    rid TEXT NOT NULL,
    mind TEXT NOT NULL,
    flag TEXT NOT NULL CHECK (flag IN ('dangling', 'stale')),
    detail TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (rid, flag)
) WITHOUT ROWID;
CREATE INDEX flags_mind ON flags(mind);
""" + "".join(
    f"CREATE TRIGGER {t}_ad_flags AFTER DELETE ON {t} BEGIN DELETE FROM flags WHERE rid = old.id; END;\n"
    for t in ("memories", "checkpoints", "decisions", "lessons", "episodes", "notes"))

#: Forward migrations: MIGRATIONS[v] upgrades a vault from version v to v + 1.
#: v1: every kind, FTS5, tags, gate vocabulary, index outbox. v2: ``flags`` (dangling / stale marks from verify).
MIGRATIONS: dict[int, str] = {
    0: _TABLES_V1 + _fts_ddl(),
    1: _V2_FLAGS,
}


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


class Store:
    """A connection to one vault database, safe to share between threads of one process.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> s = Store(pathlib.Path(tempfile.mkdtemp()) / "synapse.db")
    >>> with s.transaction() as c:
    ...     _ = c.execute("INSERT INTO meta(key, value) VALUES ('hello', 'world')")
    >>> s.query_one("SELECT value FROM meta WHERE key = 'hello'")["value"]
    'world'
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self._depth = 0
        self._after_commit: list[Any] = []
        self._on_rollback: list[Any] = []
        #: incremented after every commit through this connection (PRAGMA data_version only sees others')
        self.write_gen = 0
        try:
            if not readonly:
                if not self.path.parent.is_dir():  # never created here: a typo must not become a vault
                    raise StoreError(f"the vault folder {self.path.parent} does not exist; open the vault with "
                                     "open_vault(), which creates it inside an existing folder only")
                if not os.access(self.path.parent, os.W_OK):
                    raise StoreError(f"the vault folder {self.path.parent} is read-only; open it with "
                                     "open_vault(..., readonly=True) to read it (CLI: SYNAPSE_READONLY=1)")
            self._conn = self._connect(readonly)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA busy_timeout = 10000")
            self._conn.execute("PRAGMA foreign_keys = ON")
            if not readonly:
                self._retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except SynapseError:
            self.close()
            raise
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError(
                f"cannot open the vault database {self.path}: {exc}; if the file is corrupt, restore it from an "
                "export (`synapse-nb memory import`) or move it aside to start a new vault"
            ) from exc
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot open the vault database {self.path}: {exc}") from exc

    def _connect(self, readonly: bool) -> sqlite3.Connection:
        kw: dict[str, Any] = {"uri": True, "timeout": LOCK_TIMEOUT_S, "isolation_level": None,
                              "check_same_thread": False}
        if not readonly:
            return sqlite3.connect(f"file:{self.path}", **kw)
        if not self.path.is_file():
            raise StoreError(f"there is no vault database at {self.path} to open read-only")
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", **kw)
        try:
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        except sqlite3.OperationalError:
            # a WAL database in a folder nobody can write: SQLite cannot create the -shm file. Nobody can
            # change it either, so reading it as immutable is safe.
            conn.close()
            return sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", **kw)

    # -- schema ---------------------------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"the vault {self.path} has schema version {version}, newer than this synapse_nb knows "
                f"({SCHEMA_VERSION}); upgrade synapse_nb to open it"
            )
        if version == SCHEMA_VERSION:
            return
        if self.readonly:
            raise SchemaError(f"the vault {self.path} needs a schema migration ({version} -> {SCHEMA_VERSION}) "
                              "but is opened read-only")
        while version < SCHEMA_VERSION:
            script = MIGRATIONS[version]
            with self.transaction() as c:
                # re-check under the write lock: another process may have migrated meanwhile
                current = int(c.execute("PRAGMA user_version").fetchone()[0])
                if current == version:
                    for stmt in _split_sql(script):
                        c.execute(stmt)
                    c.execute(f"PRAGMA user_version = {version + 1}")
            version = self.schema_version

    # -- transactions ---------------------------------------------------------------------------------------
    def _retry(self, fn):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        delay = 0.002
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.2)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); nested calls join the outer one.

        Commits on success, rolls back on any exception. Callbacks registered with
        :meth:`after_commit` run after the outermost commit.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            if self.readonly:
                raise StoreError(f"the vault {self.path} is opened read-only; writes are refused")
            try:
                self._retry(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            except sqlite3.OperationalError as exc:
                raise StoreError(f"could not lock the vault {self.path} for writing: {exc}") from exc
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"the vault database {self.path} cannot be written: {exc}") from exc
            self._depth = 1
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                self._after_commit.clear()
                rollbacks, self._on_rollback = self._on_rollback, []
                for cb in rollbacks:
                    cb()
                if isinstance(exc, sqlite3.OperationalError) and ("disk" in str(exc).lower()
                                                                 or "readonly" in str(exc).lower()
                                                                 or "read-only" in str(exc).lower()):
                    raise StoreError(f"the vault {self.path} cannot be written: {exc}; nothing was changed") from exc
                if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.IntegrityError):
                    raise StoreError(f"the vault {self.path} failed a write: {exc}; nothing was changed") from exc
                raise
            finally:
                self._depth = 0
            self.write_gen += 1
            self._on_rollback = []
            callbacks, self._after_commit = self._after_commit, []
        for cb in callbacks:
            cb()

    def after_commit(self, callback: Any) -> None:
        """Run ``callback()`` once the current outermost transaction has committed."""
        if self._depth:
            self._after_commit.append(callback)
        else:
            callback()

    def on_rollback(self, callback: Any) -> None:
        """Run ``callback()`` if the current outermost transaction rolls back."""
        if self._depth:
            self._on_rollback.append(callback)

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    # -- reads ----------------------------------------------------------------------------------------------
    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._retry(lambda: self._conn.execute(sql, params).fetchall())
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "fts5" in str(exc).lower():
                    raise
                raise StoreError(f"reading the vault {self.path} failed: {exc}") from exc

    def iter_query(self, sql: str, params: Any = (), *, size: int = 5000) -> Iterator[sqlite3.Row]:
        """Rows of a query, fetched ``size`` at a time (for scans too large to hold at once).

        The connection is held by this thread until the iterator is exhausted or closed.
        """
        with self._lock:
            cur = self._conn.execute(sql, params)
            try:
                while rows := cur.fetchmany(size):
                    yield from rows
            finally:
                cur.close()

    def query_one(self, sql: str, params: Any = ()) -> sqlite3.Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def data_version(self) -> int:
        """Changes whenever another connection commits (``PRAGMA data_version``)."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def integrity_check(self) -> str:
        return str(self.query_one("PRAGMA integrity_check")[0])

    def close(self) -> None:
        with self._lock:
            conn = getattr(self, "_conn", None)
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()


def _split_sql(script: str) -> list[str]:
    """Split a DDL script into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \n;"):
        out.append(buf.strip())
    return out
