"""The PostgreSQL connection of a team vault: pool, transactions, snapshots, stamps, errors, change notification.

Statements are dialect-neutral (``?`` placeholders: :mod:`synapse_nb.store.sql`); this connection renders them
for psycopg (:meth:`~synapse_nb.store.postgres.dialect.PgDialect.render`) when it sends them, so the shared
repositories run here as written; what PostgreSQL does its own way is :mod:`synapse_nb.store.postgres.dialect`,
:mod:`synapse_nb.store.postgres.tables` and :mod:`synapse_nb.store.postgres.queries`.

- A pool of autocommit connections (:mod:`synapse_nb.store.postgres.pool`) whose ``search_path`` is the project
  schema, with ``lock_timeout`` and ``idle_in_transaction_session_timeout`` set; a checkout's first statement is
  its check, so a server restart costs no caller an error.
- A write transaction pins one connection to the thread (nested calls join it), is READ COMMITTED and knows its
  transaction id: a COMMIT whose connection dies is looked up, never guessed (:meth:`PgDatabase.once`). Its
  first stamp (``next_stamp()``, the server's clock) takes the project's write lock, as ``BEGIN IMMEDIATE``.
- A snapshot is ``REPEATABLE READ READ ONLY`` on a pinned connection: recall's reads see one committed state.
- An agent handle runs every statement as ``<project>_agent`` (``SET ROLE``); psycopg errors become the package's
  :class:`~synapse_nb.errors.SynapseError` tree (:func:`~synapse_nb.store.postgres.errors.map_error`).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from synapse_nb.errors import CommitUnknownError, OfflineError, SnapshotMoved, StoreError
from synapse_nb.models import TABLES
from synapse_nb.store.postgres import migrate
from synapse_nb.store.postgres import pool as pgpool
from synapse_nb.store.postgres.dialect import POSTGRES, RECOUNT_MISMATCHES
from synapse_nb.store.postgres.errors import OFFLINE_HINT, connect_error, location, map_error, no_connection
from synapse_nb.store.postgres.pool import RoundTrips, Row, connection_lost
from synapse_nb.store.records import Change
from synapse_nb.store.sql.dialect import Dialect

__all__ = ["PgDatabase", "RoundTrips", "Row"]

#: Most answers kept per kind of read in :meth:`PgDatabase.snapshot_cache` (emptied when full).
MAX_MEMO = 50_000

#: The first round trip of a snapshot: open it and read what names its state (the project's data version) and
#: the server's clock, which is "now" for every read of the snapshot (``now()`` is the transaction's start).
BEGIN_SNAPSHOT = ("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
                  "SELECT version, fmt_ts(now()) AS now, n_docs, agent_docs FROM gate_stats WHERE id = 1")
#: A write transaction's first round trip: open it and learn its transaction id (and the backend's process id), so
#: a commit whose connection dies can be looked up afterwards (``pg_xact_status``) instead of being guessed.
BEGIN_WRITE = "BEGIN; SELECT pg_current_xact_id()::text AS xid, pg_backend_pid() AS pid"
#: A lazy snapshot's first round trip: the same state, read by one autocommitted statement (itself a snapshot).
SNAPSHOT_POINT = "SELECT version, fmt_ts(now()) AS now, n_docs, agent_docs FROM gate_stats WHERE id = 1"


def _point(row: Any) -> tuple[int, str, int, int]:  # (data version, server now, n_docs, the agents' unverified of
    # them, migration 18): a snapshot's first statement
    return (int(row[0]), str(row[1]), int(row[2]), int(row[3])) if row else (0, "", 0, 0)


class _State(threading.local):
    """Per thread: the pinned connection, transaction and snapshot depth, and what the transaction touched."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.depth = 0
        self.snap = 0
        self.snap_point: tuple[int, str, int, int] | None = None  # (data version, server now, n_docs, agent_docs)
        self.role_reset = False  # the checkout's role was already reset (with its last statement)
        self.lazy_open: Callable[[], None] | None = None  # opens a lazy snapshot's transaction on its first read
        self.changes: dict[tuple[str, str], bool] = {}
        self.op_key: Any = None  # the operation :meth:`PgDatabase.once` runs
        self.first_stamp: str | None = None  # the write transaction's first stamp (a commit's read-back)
        self.after_commit: list[Callable[[], None]] = []
        self.on_rollback: list[Callable[[], None]] = []
        self.before_commit: dict[tuple[str, ...], Callable[[], None]] = {}  # owed work, by key: :meth:`before_commit`


class _Cx:
    """What ``with store.transaction() as c`` yields: ``c.execute`` / ``c.executemany`` with ``?`` statements."""

    def __init__(self, db: PgDatabase, conn: Any) -> None:
        self._db, self._conn = db, conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db._run(self._conn, sql, params)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> Any:
        rows = list(seq)
        cur = self._conn.cursor()
        if rows:
            self._db.round_trips.count += 1  # psycopg pipelines the rows: one round trip
            try:
                cur.executemany(self._db.dialect.render(sql, bound=True), rows)
            except psycopg.Error as exc:
                raise map_error(exc) from exc
        return cur


class PgDatabase:
    """One project schema on a PostgreSQL server, seen through a connection pool (safe to share between threads).

    ``role`` = ``"agent"`` runs every statement as ``<project>_agent``. :meth:`sibling` gives another handle on
    the same pool (and the same change listeners) with another role.
    """

    #: PostgreSQL's way of saying what the shared statements leave to the backend
    dialect: Dialect = POSTGRES

    def __init__(self, url: str, project: str, *, readonly: bool = False, role: str | None = None,
                 pool_timeout: float = 5.0, _pool: ConnectionPool | None = None,
                 _listeners: list[Callable[[list[Change]], None]] | None = None,
                 _round_trips: RoundTrips | None = None) -> None:
        self.url = url
        self.project = migrate.check_project(project)
        self._readonly = readonly
        self.role = role
        self._set_role = f"SET ROLE {project}_agent" if role == "agent" else None
        self._state = _State()
        self._listeners = [] if _listeners is None else _listeners
        self._precommit: list[Callable[[list[Change]], None]] = []  # on_change(before=True): heard before the COMMIT
        #: statements sent to the server by this handle and its siblings (:meth:`sibling`, ``for_actor``)
        self.round_trips = RoundTrips() if _round_trips is None else _round_trips
        self._txn_gen = 0
        #: operations whose commit could not be looked up (``repr(key)`` -> xid, records written): ``PgStore.once``
        self._in_doubt: dict[str, dict[str, Any]] = {}
        self._memo_version: int | None = None
        self._memo: dict[str, dict[Any, Any]] = {}
        self._memo_lock = threading.Lock()
        self._owner = _pool is None
        if _pool is None:
            try:  # one direct attempt first: a failed connection is known at once, not after the pool's timeout
                psycopg.connect(url, connect_timeout=5).close()
            except psycopg.OperationalError as exc:  # refused by a server that answered: not offline
                raise connect_error(exc, self.location) from exc
            pgpool.route_pool_log()
            _pool = pgpool.BoundedBackoffPool(
                url, min_size=1, max_size=8, open=False, timeout=pool_timeout, name=f"synapse-{project}",
                kwargs={"autocommit": True, "connect_timeout": 5, "row_factory": pgpool.row_factory},
                configure=self._configure, reconnect_timeout=3600)
            try:
                _pool.open(wait=True, timeout=pool_timeout)
            except PoolTimeout as exc:
                _pool.close()
                offline = OfflineError(f"cannot reach the team vault server {self.location} within "
                                       f"{pool_timeout:g}s: {OFFLINE_HINT}")
                offline.reason = f"no connection within {pool_timeout:g}s"
                raise offline from exc
        self.pool = _pool
        if self._owner:
            try:
                with self._connection() as (conn, _):
                    migrate.check(conn, project)
            except BaseException:
                self.pool.close()
                raise

    def _configure(self, conn: Any) -> None:
        # every transaction on this connection waits for a lock at most LOCK_TIMEOUT, and the server ends it if
        # this client stalls inside it longer than IDLE_IN_TRANSACTION_TIMEOUT (a stopped process holding the
        # project's write lock blocks the others that long at most)
        conn.execute(f"SET search_path = {self.project}, pg_catalog; "
                     f"SET lock_timeout = '{migrate.LOCK_TIMEOUT}'; "
                     f"SET idle_in_transaction_session_timeout = '{migrate.IDLE_IN_TRANSACTION_TIMEOUT}'")

    # -- identity ---------------------------------------------------------------------------------------------
    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def location(self) -> str:
        """The server and project, without secrets: ``postgresql://user@host:port/db?project=p``."""
        return location(self.url, self.project)

    @property
    def schema_version(self) -> int:
        with self._connection() as (conn, _):
            return migrate.current_version(conn, self.project)

    # -- connections ------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connection(self, first: str | None = None, params: Sequence[Any] = (),
                    last: bool = False) -> Iterator[tuple[Any, Any]]:
        """(connection, cursor of ``first``): the thread's pinned connection, else one from the pool as this
        handle's role, with the statement ``first`` already run on it. ``last``: ``first`` is the checkout's only
        statement (an agent handle's ``RESET ROLE`` travels with it).

        A pooled connection is not checked before use (that would cost a round trip per checkout): the first
        statement is the check. When it finds the connection dead (a restarted server, a terminated backend),
        the pool is checked, the dead connections are dropped, and the statement is run once more on a fresh
        one. Only the first statement of a checkout is ever retried: a ``BEGIN``, a read, or an idempotent
        upsert outside a transaction; nothing of a transaction is.
        """
        st = self._state
        if st.conn is None and st.lazy_open is not None:
            st.lazy_open()  # a lazy snapshot's first read that needs the server: its transaction opens here
        if st.conn is not None:
            yield st.conn, (None if first is None else self._run(st.conn, first, params))
            return
        for attempt in (0, 1):
            try:
                with self.pool.connection() as conn:
                    st.role_reset = False
                    try:
                        cur = self._first(conn, first, params, last)
                    except psycopg.OperationalError as exc:
                        if attempt == 0 and conn.closed:
                            # the others idle since the same restart are dead too: replace them at once; leaving
                            # the block hands this one back, and the pool drops it
                            self.pool.check()
                            continue
                        raise map_error(exc) from exc
                    try:
                        yield conn, cur
                    finally:
                        if st.role_reset:
                            st.role_reset = False
                        elif self._set_role and not conn.closed and conn.info.transaction_status == 0:
                            self.round_trips.count += 1
                            with contextlib.suppress(psycopg.Error):
                                conn.execute("RESET ROLE")
                    return
            except PoolTimeout as exc:  # a server refusing the pool's reconnections is not offline
                raise no_connection(exc, self.url, self.location) from exc

    def _first(self, conn: Any, first: str | None, params: Sequence[Any], last: bool = False) -> Any:
        """Run the checkout's first statement (after ``SET ROLE`` for an agent handle, in the same round trip;
        ``last``: and ``RESET ROLE`` after it, still one round trip)."""
        if self._set_role is None:
            return None if first is None else self._run(conn, first, params, raw=True)
        self.round_trips.count += 1
        if first is None:
            conn.execute(self._set_role)
            return None
        try:
            if not params and not last:  # one simple query (it may hold several statements, as a snapshot's start)
                cur = conn.execute(f"{self._set_role}; {first}")
                cur.nextset()  # past SET ROLE: the cursor stands where the caller's statement put it
                return cur
            with conn.pipeline():
                conn.execute(self._set_role)
                cur = conn.execute(self.dialect.render(first, bound=bool(params)), params if params else None)
                if last:
                    conn.execute("RESET ROLE")
            self._state.role_reset = last
        except psycopg.OperationalError:
            raise
        except psycopg.Error as exc:
            raise map_error(exc) from exc
        return cur

    def _run(self, conn: Any, sql: str, params: Sequence[Any] = (), *, raw: bool = False) -> Any:
        """Run one statement (one round trip); ``raw``: let psycopg's connection errors through (the caller
        retries a dead connection)."""
        self.round_trips.count += 1
        try:
            return conn.execute(self.dialect.render(sql, bound=bool(params)), params if params else None)
        except psycopg.Error as exc:
            if raw and isinstance(exc, psycopg.OperationalError):
                raise
            raise map_error(exc) from exc

    # -- transactions -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self, *, moves_version: bool = True) -> Iterator[_Cx]:
        """One write transaction on a pinned connection; nested calls join it. Commits on success, rolls back on
        any exception; :meth:`after_commit` callbacks and the change listeners run after the outermost commit.
        ``moves_version`` is SQLite's (a session's marks); here the data version moves by the fold at commit,
        which session marks never touch."""
        st = self._state
        if st.depth:
            st.depth += 1
            try:
                yield _Cx(self, st.conn)
            finally:
                st.depth -= 1
            return
        if st.snap:
            raise StoreError("a write transaction cannot start inside a snapshot (a read-only view); "
                             "write before or after it")
        if self.readonly:
            raise StoreError(f"the team vault {self.location} is opened read-only; writes are refused")
        with self._connection(BEGIN_WRITE) as (conn, cur):
            cur.nextset()
            ident = cur.fetchone()
            xid, pid = (str(ident[0]), int(ident[1])) if ident else ("", 0)
            committing = False
            st.conn, st.depth = conn, 1
            # a write made exactly once leaves a mark with its commit, which its retry must find (migration 23)
            nonce = None if st.op_key is None else secrets.token_hex(16)
            try:
                yield _Cx(self, conn)
                while st.before_commit:  # in key order: two transactions owing the same work lock alike
                    owed, st.before_commit = st.before_commit, {}
                    for key in sorted(owed):
                        owed[key]()
                if self._precommit and st.changes:  # before the commit (review 89)
                    for listener in list(self._precommit):
                        listener(sorted((k, r, d) for (k, r), d in st.changes.items()))
                committing = True
                self.round_trips.count += 1
                conn.execute("COMMIT" if nonce is None else f"{pgpool.mark_sql(self.project, nonce, st.op_key)}COMMIT")
            except BaseException as exc:
                outcome, written = None, dict(st.changes)
                mark = None if nonce is None else (nonce, pgpool.op_name(st.op_key), xid)
                if committing and connection_lost(exc, conn) and xid:  # not a lock timeout: the server's answer
                    # the connection died during COMMIT: ask the server what became of the transaction (and read
                    # back what it wrote) instead of leaving the caller to guess
                    outcome = pgpool.resolve_commit(self.url, xid, pid, pgpool.written_check(
                        self.project, TABLES, written, st.first_stamp, mark))
                if outcome != "committed":
                    self._rolled_back(conn)
                    if outcome == "aborted":
                        raise OfflineError(
                            "the team vault server went away while committing and says the commit did not happen: "
                            "nothing was written; the next call reconnects") from exc
                    if isinstance(exc, psycopg.Error):
                        err = map_error(exc, committing=committing)
                        if isinstance(err, CommitUnknownError) and st.op_key is not None:
                            self.note_in_doubt(st.op_key, {"xid": xid, "nonce": nonce, "first_stamp": st.first_stamp,
                                                           "written": [[*kr, d] for kr, d in sorted(written.items())]})
                        raise err from exc
                    raise
            finally:
                st.conn, st.depth, st.first_stamp, st.before_commit = None, 0, None, {}
        st.on_rollback = []
        callbacks, st.after_commit = st.after_commit, []
        changes = sorted((k, r, d) for (k, r), d in st.changes.items())
        st.changes.clear()
        for cb in callbacks:
            cb()
        if changes:
            for listener in list(self._listeners):
                listener(changes)

    @contextlib.contextmanager
    def snapshot(self, *, lazy: bool = False) -> Iterator[None]:
        """Several reads that see one committed state (REPEATABLE READ READ ONLY); joins a write transaction.

        Its first round trip opens it and reads the project's data version and the server's ``now()``
        (:meth:`data_version` and :meth:`snapshot_now` answer from it without another round trip).

        ``lazy``: the first round trip is one autocommitted statement reading the same (version, now); the
        transaction opens only when a read inside needs the server, and if the version it sees differs it raises
        :class:`SnapshotMoved` before that read. A recall served from caches keyed by the version (a repeated
        query) then costs that one round trip: what it reads is the state of that version, which never changes.
        """
        st = self._state
        if st.depth or st.snap:
            st.snap += not st.depth
            try:
                yield
            finally:
                st.snap -= not st.depth
            return
        if lazy:
            yield from self._lazy_snapshot()
            return
        with self._connection(BEGIN_SNAPSHOT) as (conn, cur):
            cur.nextset()
            st.conn, st.snap, st.snap_point = conn, 1, _point(cur.fetchone())
            try:
                yield
            finally:
                st.conn, st.snap, st.snap_point = None, 0, None
                self._end_snapshot(conn)

    def _rolled_back(self, conn: Any) -> None:  # a transaction that did not commit: no callbacks, no changes
        st = self._state
        if not conn.closed:
            self.round_trips.count += 1
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")
        st.after_commit.clear()
        st.changes.clear()
        rollbacks, st.on_rollback = st.on_rollback, []
        for cb in rollbacks:
            cb()

    def note_in_doubt(self, key: Any, entry: dict[str, Any]) -> None:
        """A write operation (``key``: :meth:`PgStore.once`) whose commit could not be looked up: kept for its retry."""
        self._in_doubt[repr(key)] = entry

    def _end_snapshot(self, conn: Any) -> None:
        """Close a snapshot's read transaction: one round trip, with an agent's RESET ROLE in it."""
        if not conn.closed:
            self.round_trips.count += 1
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK; RESET ROLE" if self._set_role else "ROLLBACK")
                self._state.role_reset = self._set_role is not None

    def _lazy_snapshot(self) -> Iterator[None]:
        st = self._state
        with self._connection(SNAPSHOT_POINT, last=True) as (_, cur):
            point = _point(cur.fetchone())
        stack = contextlib.ExitStack()
        opened: list[Any] = []

        def open_transaction() -> None:
            st.lazy_open = None
            conn, cur = stack.enter_context(self._connection(BEGIN_SNAPSHOT))
            opened.append(conn)
            cur.nextset()
            now = cur.fetchone()
            st.conn = conn
            if now is None or int(now[0]) != point[0]:
                raise SnapshotMoved(f"the team vault changed during a read (version {point[0]} -> "
                                    f"{now[0] if now else '?'}); read again")

        st.snap, st.snap_point, st.lazy_open = 1, point, open_transaction
        try:
            yield
        finally:
            st.conn, st.snap, st.snap_point, st.lazy_open = None, 0, None, None
            try:
                if opened:
                    self._end_snapshot(opened[0])
            finally:
                stack.close()

    def after_commit(self, callback: Callable[[], None]) -> None:
        if self._state.depth:
            self._state.after_commit.append(callback)
        else:
            callback()

    def on_rollback(self, callback: Callable[[], None]) -> None:
        if self._state.depth:
            self._state.on_rollback.append(callback)

    def before_commit(self, key: tuple[str, ...], callback: Callable[[], None]) -> None:
        """Run ``callback`` in the outermost transaction, just before its COMMIT (its error rolls everything back),
        once per ``key`` however often it is owed: a thread's ranking contexts are refreshed once per transaction, not
        once per episode written (review 96). Outside a transaction it runs in one of its own."""
        if not self._state.depth:
            with self.transaction():
                self.before_commit(key, callback)
            return
        self._state.before_commit.setdefault(key, callback)

    @property
    def in_transaction(self) -> bool:
        return self._state.depth > 0

    # -- what changed -------------------------------------------------------------------------------------------
    def touched(self, kind: str, rid: str, *, deleted: bool = False) -> None:
        self._state.changes[(kind, rid)] = deleted

    def on_change(self, listener: Callable[[list[Change]], None], *, before: bool = False) -> None:
        (self._precommit if before else self._listeners).append(listener)

    def stamp(self, now: str) -> str:
        """The server's clock, or 1 µs after the project's last stamp (migration 6); takes the project's write lock
        until the commit. ``now`` (the caller's clock) is not sent: no client moves a team vault's stamps."""
        if not self._state.depth:
            with self.transaction():
                return self.stamp(now)
        row = self.query_one("SELECT next_stamp()")
        if row is None:  # a function call answers one row
            raise StoreError(f"the team vault {self.location} gave no stamp")
        self._state.first_stamp = self._state.first_stamp or str(row[0])
        return str(row[0])

    def advance_clock(self, ts: str) -> None:
        """Nothing: an import's latest stamp does not move the server's clock (a stamp from another machine's
        clock, or a hand-made export, could otherwise push every later stamp into the future). New stamps follow
        the server's clock; imported records keep their own."""

    # -- statements ---------------------------------------------------------------------------------------------
    def write(self, sql: str, params: Sequence[Any] = (), change: Change | None = None) -> psycopg.Cursor[Row]:
        """Run one write statement in the current transaction (or in one of its own), noting ``change``."""
        if self._state.depth:
            cur: psycopg.Cursor[Row] = self._run(self._state.conn, sql, params)
            if change is not None:
                self._state.changes[change[:2]] = change[2]
            return cur
        with self.transaction():
            return self.write(sql, params, change)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one write statement once per row (pipelined: one round trip), in the current transaction (or in one
        of its own)."""
        if self._state.depth:
            _Cx(self, self._state.conn).executemany(sql, rows)
            return
        with self.transaction():
            self.executemany(sql, rows)

    def write_once(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement that is atomic by itself (an idempotent upsert): inside a write transaction it joins it;
        outside one it runs alone, autocommitted (one round trip instead of ``BEGIN``, it, ``COMMIT``). It is
        not a record write (no change is reported, no stamp is taken)."""
        if self._state.depth:
            self._run(self._state.conn, sql, params)
            return
        if self._state.snap:
            raise StoreError("a write cannot run inside a snapshot (a read-only view); write before or after it")
        if self.readonly:
            raise StoreError(f"the team vault {self.location} is opened read-only; writes are refused")
        with self._connection(sql, params, last=True):
            pass

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._connection(sql, params, last=True) as (_, cur):
            return list(cur.fetchall())

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def iter_query(self, sql: str, params: Sequence[Any] = (), *, size: int = 5000) -> Iterator[Row]:
        with self._connection(sql, params) as (_, cur):
            while rows := cur.fetchmany(size):
                yield from rows

    def data_version(self) -> tuple[int, ...]:
        """``(gate_stats.version,)``: the same on every machine for the same committed state; it moves with every
        transaction that changes a record, a setting or a file flag, by anyone on any machine (the fold at commit;
        session marks move it not). Read with the snapshot
        that opened it (no round trip) inside one.

        Inside a write transaction the fold has not run yet, so the answer is unique to each call (a cache keyed
        by it never serves a state the transaction has since changed).
        """
        st = self._state
        if st.depth:
            self._txn_gen += 1
            return (-1, self._txn_gen)
        if st.snap_point is not None:
            return (st.snap_point[0],)
        row = self.query_one("SELECT version FROM gate_stats WHERE id = 1")
        return ((int(row[0]) if row else 0),)

    def snapshot_cache(self, name: str) -> dict[Any, Any] | None:
        """A dict for answers read inside the open snapshot, kept while the project's data version stays the same
        (every handle, any thread), or None outside a snapshot or inside a write transaction (nothing is kept).

        Only what a version-moving write changes may be kept in it (records, their tags, keys, word statistics,
        and since migration 4 the settings and file flags): every transaction that changes one moves the version,
        so an answer read at one version is the answer of every snapshot at that version. Session marks move no
        version and are never kept.
        Each handle (role) has its own: an agent's role reads fewer lessons.
        """
        st = self._state
        if st.snap_point is None or st.depth:
            return None
        version = st.snap_point[0]
        with self._memo_lock:
            if self._memo_version != version:
                self._memo_version, self._memo = version, {}
            memo = self._memo.setdefault(name, {})
            if len(memo) > MAX_MEMO:
                memo.clear()
            return memo

    def snapshot_docs(self) -> int | None:
        """The project's number of gate records as the open snapshot saw it (read with its version), else None."""
        point = self._state.snap_point
        return point[2] if point is not None and not self._state.depth else None

    def snapshot_agents(self) -> int | None:
        """The project's number of agents' unverified gate records as the open snapshot saw it, else None."""
        point = self._state.snap_point
        return point[3] if point is not None and not self._state.depth else None

    def snapshot_now(self) -> str | None:
        """The server's clock at the start of the open snapshot (fixed-width UTC text), else None."""
        point = self._state.snap_point
        return point[1] if point is not None and not self._state.depth else None

    def integrity_check(self) -> str:
        """"ok", or the terms whose stored frequency differs from a recount of the records."""
        rows = self.query(RECOUNT_MISMATCHES)
        if not rows:
            return "ok"
        return "gate frequencies differ from a recount: " + ", ".join(
            f"{r['term']} stored {r['stored']} counted {r['recount']}" for r in rows[:10])

    def close(self) -> None:
        if self._owner:
            self.pool.close()
