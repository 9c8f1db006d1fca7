"""The SQLite connection of a vault: opening, migrating, transactions, snapshots, stamps, change notification.

One file, ``synapse.db``, in WAL mode: readers never block writers, several processes (a kernel, the CLI, an
agent's MCP server, a git hook) share it.

- Every write is one ``BEGIN IMMEDIATE`` transaction, retried with backoff while another process holds the
  write lock, so "database is locked" does not reach a caller under ordinary contention (it surfaces as a
  ``StoreError`` only after :data:`LOCK_TIMEOUT_S`).
- A snapshot is a deferred read transaction: several reads see one committed state.
- The schema is versioned with ``PRAGMA user_version``; migrations run forward, each in its own transaction.
  A vault from a newer version is refused, never modified.
- The write stamp (``meta`` row ``clock``) is read once per transaction and written back before the commit.
- The vault's state number (``meta`` row ``state_version``) is one more after each commit that changed a row (a
  session's marks aside): :meth:`Database.data_version`'s first number, the same for every connection (review 84).
- Every record a transaction writes is noted (:meth:`Database.touched`); listeners hear the list after the commit.
- The triggers queue their FTS5 writes (schema v4, ``fts_queue``); the queue is applied, one statement per FTS5
  table, before the commit and before any statement run through this class that names an FTS5 table, so a read
  inside a write transaction sees its own writes. (FTS5 flushes its pending index at every statement savepoint:
  applied per row, as the v3 triggers did, its writes were about half of an upsert's instructions.)
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from synapse_nb._util import next_stamp
from synapse_nb.errors import (
    ConflictError,
    PermissionDeniedError,
    SchemaError,
    StoreError,
    SynapseError,
    ValidationError,
)
from synapse_nb.store.sql.dialect import Dialect
from synapse_nb.store.sqlite.connect import LOCK_TIMEOUT_S, check_side_files, open_failure, open_sqlite
from synapse_nb.store.sqlite.dialect import SQLITE
from synapse_nb.store.sqlite.schema import (
    FTS_FLUSH,
    FTS_MARKERS,
    FTS_QUEUE_CLEAR,
    FTS_QUEUE_TARGETS,
    INDICES,
    MIGRATIONS,
    SCHEMA_VERSION,
    split_sql,
)

__all__ = ["LOCK_TIMEOUT_S", "Database"]

#: How many of a connection's latest commits it remembers the changed records of (changes_between)
CHANGE_LOG = 256
#: How long a statement waits for a lock another connection holds (``PRAGMA busy_timeout``), in milliseconds.
BUSY_MS = 10_000
T = TypeVar("T")
Change = tuple[str, str, bool]

GET_CLOCK = "SELECT value FROM meta WHERE key = 'clock'"
SET_CLOCK = "INSERT INTO meta(key, value) VALUES ('clock', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
#: The clock moves to ``ts`` unless it is later already; a clock outside the sane window (``_util.sane_ts``) is
#: replaced, never kept (stamp() would ignore it, and later stamps must come after what was imported).
ADVANCE_CLOCK = ("INSERT INTO meta(key, value) VALUES ('clock', ?) ON CONFLICT(key) DO UPDATE SET value = "
                 "CASE WHEN value >= '1970-01-01T00:00:00.000000Z' AND value < '2100-01-01T00:00:00.000000Z' "
                 "AND value GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]"
                 ".[0-9][0-9][0-9][0-9][0-9][0-9]Z' THEN max(value, excluded.value) ELSE excluded.value END")
GET_STATE = "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'state_version'"
BUMP_STATE = ("INSERT INTO meta(key, value) VALUES ('state_version', '1') ON CONFLICT(key) DO UPDATE SET value = "
              "CAST(value AS INTEGER) + 1")


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _refused(exc: sqlite3.IntegrityError, path: Path) -> SynapseError:
    """A constraint the statement broke, as the package's error tree (as a team vault reports it)."""
    msg = str(exc)
    if "UNIQUE" in msg or "PRIMARY KEY" in msg:
        return ConflictError(msg)
    if "CHECK" in msg or "NOT NULL" in msg:
        return ValidationError(f"the vault refused a value: {msg}")
    return StoreError(f"the vault {path} refused a write: {msg}")


class Database:
    """A connection to one vault database, safe to share between threads of one process.

    The repositories (:mod:`synapse_nb.store.sql`, :mod:`synapse_nb.store.sqlite.queries`) run their statements
    through it (a :class:`~synapse_nb.store.sql.connection.SqlDatabase`); :class:`synapse_nb.store.sqlite.SqliteStore`
    puts them together. A write that breaks a constraint raises :class:`ConflictError` (a uniqueness rule) or
    :class:`ValidationError` (a CHECK), never ``sqlite3``'s exceptions.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> s = Database(pathlib.Path(tempfile.mkdtemp()) / "synapse.db")
    >>> with s.transaction() as c:
    ...     _ = c.execute("INSERT INTO meta(key, value) VALUES ('hello', 'world')")
    >>> s.query_one("SELECT value FROM meta WHERE key = 'hello'")["value"]
    'world'
    """

    #: SQLite's way of saying what the shared statements leave to the backend
    dialect: Dialect = SQLITE
    #: the vault this database stands for, as :func:`synapse_nb.embedder_trust.vault_identity` names it (None: its
    #: own): an ``as_of`` recall's past, rebuilt in a temporary folder, loads the embedder a person set for the vault
    trust_identity: str | None = None

    def __init__(self, path: str | Path, *, readonly: bool = False, refusal: str | None = None) -> None:
        self.path = Path(path)
        #: ``refusal`` opens read-only and says why a write is refused (a PermissionDeniedError carrying it)
        self._readonly = readonly or refusal is not None
        self._refusal = refusal
        readonly = self._readonly
        self._lock = threading.RLock()
        self._depth = 0  # write transaction nesting
        self._snap = 0  # snapshot nesting (outside a write transaction)
        self._after_commit: list[Callable[[], None]] = []
        self._on_rollback: list[Callable[[], None]] = []
        self._changes: dict[tuple[str, str], bool] = {}
        self._listeners: list[Callable[[list[Change]], None]] = []
        self._precommit: list[Callable[[list[Change]], None]] = []  # on_change(before=True): heard before the COMMIT
        self._clock: str | None = None  # the last stamp, while a write transaction holds the lock
        self._clock_dirty = False
        #: incremented after every commit through this connection (PRAGMA data_version only sees others')
        self.write_gen = 0
        #: (write_gen, the records it changed) of this connection's latest commits, for changes_between
        self._change_log: collections.deque[tuple[int, list[Change]]] = collections.deque(maxlen=CHANGE_LOG)
        self._fts_queue = False  # the schema queues FTS5 writes (set once migrated to a version that does)
        try:
            if not readonly:
                if not self.path.parent.is_dir():  # never created here: a typo must not become a vault
                    raise StoreError(f"the vault folder {self.path.parent} does not exist; open the vault with "
                                     "open_vault(), which creates it inside an existing folder only")
                if not os.access(self.path.parent, os.W_OK):
                    raise StoreError(f"the vault folder {self.path.parent} is read-only; open it with "
                                     "open_vault(..., readonly=True) to read it (CLI: SYNAPSE_READONLY=1)")
            check_side_files(self.path)
            self._conn = open_sqlite(self.path, readonly, refusal)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: a deletion deletes (schema v6)
            if not readonly:
                self._retry(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except SynapseError:
            self.close()
            raise
        except sqlite3.DatabaseError as exc:
            self.close()
            raise open_failure(self.path, exc) from exc  # a full disk is not a damaged file (review 89)
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot open the vault database {self.path}: {exc}") from exc

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def location(self) -> str:
        return str(self.path)

    # -- schema ---------------------------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"the vault {self.path} has schema version {version}, newer than this synapse_nb knows "
                f"({SCHEMA_VERSION}); upgrade synapse_nb to open it"
            )
        if version == SCHEMA_VERSION:
            self._fts_queue = True
            self._ensure_indices()
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
                    for stmt in split_sql(script):
                        c.execute(stmt)
                    c.execute(f"PRAGMA user_version = {version + 1}")
            version = self.schema_version
        self._fts_queue = version >= 4  # v4 brought fts_queue; the older migrations above ran without it
        self._ensure_indices()

    def _ensure_indices(self) -> None:
        """Create the :data:`INDICES` a writable vault lacks (one read when none is missing; no version moves)."""
        if self.readonly:
            return
        with self._lock:
            have = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        missing = [sql for name, sql in INDICES.items() if name not in have]
        if missing:
            with self.transaction() as c:
                for sql in missing:
                    c.execute(sql)

    # -- transactions ---------------------------------------------------------------------------------------
    def _retry(self, fn: Callable[[], T]) -> T:
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
    def transaction(self, *, moves_version: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``); nested calls join the outer one.

        Commits on success, rolls back on any exception. Callbacks registered with :meth:`after_commit` run
        after the outermost commit, then the change listeners. ``moves_version=False``: the transaction writes
        nothing recall's per-version caches hold (a session's marks), so this connection's :meth:`data_version`
        stays put (other connections still see PRAGMA data_version move, which only costs them a re-read).
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            if self._snap:
                raise StoreError("a write transaction cannot start inside a snapshot (a read-only view); "
                                 "write before or after it")
            if self._refusal is not None:
                raise PermissionDeniedError(self._refusal)
            if self.readonly:
                raise StoreError(f"the vault {self.path} is opened read-only; writes are refused")
            try:
                self._retry(lambda: self._conn.execute("BEGIN IMMEDIATE"))
            except sqlite3.OperationalError as exc:
                raise StoreError(f"could not lock the vault {self.path} for writing: {exc}") from exc
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"the vault database {self.path} cannot be written: {exc}") from exc
            self._depth, changed = 1, self._conn.total_changes
            try:
                yield self._conn
                if self._precommit and self._changes:  # under the write lock, before the commit (review 89)
                    for listener in list(self._precommit):
                        listener(sorted((k, r, d) for (k, r), d in self._changes.items()))
                self._apply_fts_queue()
                if self._clock_dirty:
                    self._conn.execute(SET_CLOCK, (self._clock,))
                if moves_version and self._conn.total_changes != changed:
                    self._conn.execute(BUMP_STATE)
                self._conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                self._after_commit.clear()
                self._changes.clear()  # rolled-back ids are never reported
                rollbacks, self._on_rollback = self._on_rollback, []
                for cb in rollbacks:
                    cb()
                if isinstance(exc, sqlite3.OperationalError) and ("disk" in str(exc).lower()
                                                                 or "readonly" in str(exc).lower()
                                                                 or "read-only" in str(exc).lower()):
                    raise StoreError(f"the vault {self.path} cannot be written: {exc}; nothing was changed") from exc
                if isinstance(exc, sqlite3.IntegrityError):
                    raise _refused(exc, self.path) from exc
                if isinstance(exc, sqlite3.DatabaseError):
                    raise StoreError(f"the vault {self.path} failed a write: {exc}; nothing was changed") from exc
                raise
            finally:
                self._depth = 0
                self._clock, self._clock_dirty = None, False
            self.write_gen += moves_version
            self._on_rollback = []
            callbacks, self._after_commit = self._after_commit, []
            changes = sorted((k, r, d) for (k, r), d in self._changes.items())
            self._changes.clear()
            if moves_version:
                self._change_log.append((self.write_gen, changes))
        for cb in callbacks:
            cb()
        if changes:
            for listener in list(self._listeners):
                listener(changes)

    @contextlib.contextmanager
    def snapshot(self, *, lazy: bool = False) -> Iterator[None]:
        """Several reads that see one committed state (a deferred read transaction); joins a write transaction.
        ``lazy`` changes nothing here (see the store contract).

        The connection is held by this thread until the block ends: keep it short, and write nothing in it.
        """
        with self._lock:
            if self._depth or self._snap:
                self._snap += not self._depth
                try:
                    yield
                finally:
                    self._snap -= not self._depth
                return
            self._conn.execute("BEGIN")
            self._snap = 1
            try:
                yield
            finally:
                self._snap = 0
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("COMMIT")

    def write_if_free(self, sql: str, params: Sequence[Any] = ()) -> bool:
        """One statement in a write transaction of its own, only if nothing has to be waited for: False (nothing
        written) when another thread holds this connection, a transaction or snapshot is open here, the vault is
        read-only, or another process holds the write lock (no busy wait). For what may be skipped and done
        another time (recall's rank file digests). Moves no :meth:`data_version` of this connection (other
        connections see ``PRAGMA data_version`` move: one re-read of their caches)."""
        if self.readonly or not self._lock.acquire(blocking=False):
            return False
        try:
            if self._depth or self._snap:
                return False
            try:
                self._conn.execute("PRAGMA busy_timeout = 0")
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            except sqlite3.Error:
                return False
            try:
                self._conn.execute(sql, params)
                self._conn.execute("COMMIT")
                return True
            except sqlite3.Error:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                return False
        finally:
            self._lock.release()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` once the current outermost transaction has committed (at once outside one)."""
        if self._depth:
            self._after_commit.append(callback)
        else:
            callback()

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` if the current outermost transaction rolls back."""
        if self._depth:
            self._on_rollback.append(callback)

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    # -- what changed -----------------------------------------------------------------------------------------
    def touched(self, kind: str, rid: str, *, deleted: bool = False) -> None:
        """Note that the current write transaction changed (kind, id); listeners hear of it after the commit."""
        self._changes[(kind, rid)] = deleted

    def on_change(self, listener: Callable[[list[Change]], None], *, before: bool = False) -> None:
        """Call ``listener([(kind, id, deleted), ...])`` after each committed write through this connection; with
        ``before``, inside the write transaction just before its commit (what it makes durable outside the database,
        a marker file, is so before the commit is; an exception rolls the transaction back)."""
        (self._precommit if before else self._listeners).append(listener)

    def stamp(self, now: str) -> str:
        """The write timestamp: ``now``, or 1 µs after the vault's last stamp (strictly increasing per vault).

        Taken under the write lock, so the order holds across processes. The last stamp is read once per
        transaction and written back before the commit. A last stamp outside the sane window (year 9999, set by
        an import of an older version) is ignored rather than stepped past: never an OverflowError
        (:func:`synapse_nb._util.next_stamp`).
        """
        with self._lock:
            if not self._depth:
                with self.transaction():
                    return self.stamp(now)
            last = self._clock
            if last is None:
                row = self._conn.execute(GET_CLOCK).fetchone()
                last = row[0] if row is not None else ""
            now = next_stamp(last, now)
            self._clock, self._clock_dirty = now, True
            return now

    def advance_clock(self, ts: str) -> None:
        """Make later stamps come after ``ts``."""
        with self.transaction() as c:
            if self._clock_dirty:
                c.execute(SET_CLOCK, (self._clock,))
            c.execute(ADVANCE_CLOCK, (ts,))
            self._clock, self._clock_dirty = None, False

    # -- the FTS5 write queue ------------------------------------------------------------------------------------
    def _apply_fts_queue(self) -> None:
        """Apply the FTS5 writes the triggers queued in this write transaction (in their order), then empty it."""
        if self._fts_queue:
            targets = {r[0] for r in self._conn.execute(FTS_QUEUE_TARGETS)}
            if targets:
                for table, sql in FTS_FLUSH.items():  # a fixed order: the indexes are independent of each other
                    if table in targets:
                        self._conn.execute(sql)
                self._conn.execute(FTS_QUEUE_CLEAR)

    def _before(self, sql: str) -> None:
        """Inside a write transaction, apply the FTS5 queue before a statement that names an FTS5 table."""
        if self._depth and self._fts_queue and any(m in sql for m in FTS_MARKERS):
            self._apply_fts_queue()

    # -- statements -------------------------------------------------------------------------------------------
    def write(self, sql: str, params: Sequence[Any] = (), change: Change | None = None) -> sqlite3.Cursor:
        """Run one write statement in the current transaction (or in one of its own), noting ``change``."""
        with self._lock:
            if self._depth:  # the common case, a write inside a caller's transaction: no extra context manager
                self._before(sql)
                try:
                    cur = self._conn.execute(sql, params)
                except sqlite3.IntegrityError as exc:
                    raise _refused(exc, self.path) from exc
                if change is not None:
                    self._changes[change[:2]] = change[2]
                return cur
        with self.transaction():
            return self.write(sql, params, change)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one write statement once per row, in the current transaction (or in one of its own)."""
        with self._lock:
            if self._depth:
                self._before(sql)
                try:
                    self._conn.executemany(sql, rows)
                except sqlite3.IntegrityError as exc:
                    raise _refused(exc, self.path) from exc
                return
        with self.transaction():
            self.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            self._before(sql)
            try:
                return self._retry(lambda: self._conn.execute(sql, params).fetchall())
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "fts5" in str(exc).lower():
                    raise
                raise StoreError(f"reading the vault {self.path} failed: {exc}") from exc

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def iter_query(self, sql: str, params: Sequence[Any] = (), *, size: int = 5000) -> Iterator[sqlite3.Row]:
        """Rows of a query, fetched ``size`` at a time (for scans too large to hold at once).

        The connection is held by this thread until the iterator is exhausted or closed.
        """
        with self._lock:
            self._before(sql)
            cur = self._conn.execute(sql, params)
            try:
                while rows := cur.fetchmany(size):
                    yield from rows
            finally:
                cur.close()

    def data_version(self) -> tuple[int, int, int]:
        """Changes whenever anyone commits: (the vault's state number, ``PRAGMA data_version``, this connection's
        commit counter). The first names the committed state for every connection; the others are this one's view."""
        with self._lock:
            row = self._conn.execute(GET_STATE).fetchone()
            seen = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            return (int(row[0]) if row else 0), seen, self.write_gen

    def changes_between(self, old: tuple[int, ...], new: tuple[int, ...]) -> list[Change] | None:
        """This connection's own commits between the two versions, from its log of the latest
        :data:`CHANGE_LOG`; None when another connection committed in between (PRAGMA data_version moved) or the
        log no longer reaches back."""
        if len(old) != 3 or len(new) != 3 or old[1] != new[1] or old[2] > new[2]:
            return None
        with self._lock:
            log = [(gen, ch) for gen, ch in self._change_log if old[2] < gen <= new[2]]
        if [gen for gen, _ in log] != list(range(old[2] + 1, new[2] + 1)):
            return None
        return [c for _, ch in log for c in ch]

    def snapshot_now(self) -> str | None:
        """None: a local vault has no clock of its own; "now" is the caller's."""
        return None

    def snapshot_cache(self, name: str) -> dict[Any, Any] | None:
        """None: reads are local, so nothing is kept between snapshots."""
        return None

    def integrity_check(self) -> str:
        row = self.query_one("PRAGMA integrity_check")
        return str(row[0]) if row is not None else "no answer"

    def checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it (best effort: a reader holding it open keeps it)."""
        if self.readonly or self._depth:
            return
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def truncate_wal(self, busy_ms: int) -> bool:
        """:meth:`checkpoint` for a deletion's scrub: waits ``busy_ms`` at most for other connections' reads, and
        says whether the WAL was copied in and truncated (False: another process's open read kept it; SQLite
        answers that as a row, not an error; review 34)."""
        if self.readonly or self._depth:
            return True
        with self._lock:
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
                busy, log_frames, done = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error:
                return False
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        return not busy and log_frames == done

    def close(self) -> None:
        with self._lock:
            conn = getattr(self, "_conn", None)
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
