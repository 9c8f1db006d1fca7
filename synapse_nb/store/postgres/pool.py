"""The connections of a team vault: psycopg_pool with a bounded reconnection backoff, the pool's log lines routed to
the package's logger, result rows, and the look-up of a commit whose connection died.

- :class:`BoundedBackoffPool`: after the server went away, the pool tries again after :data:`RECONNECT_FIRST`
  seconds, then 1.5 times later each time, never more than :data:`RECONNECT_MAX` apart, so the first call once
  the server is back finds a connection (psycopg_pool's own backoff doubles from 1 s: 11-13 s after a 30 s outage).
- :func:`route_pool_log`: psycopg_pool's warnings ("error connecting in ...") go to ``synapse_nb.team.pool``; with no
  logging set up they are not printed (a CLI user sees the package's one-line error instead).
- :func:`resolve_commit`: what the server says became of a transaction whose connection died during COMMIT, and
  :func:`connection_lost`: whether an error means it died (else the server answered: nothing to look up).
- :func:`mark_sql`, :func:`written_check`, :func:`drop_mark`: the mark a write made exactly once leaves with its
  commit (migration 23), which its retry must find on its own login before it believes the commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool
from psycopg_pool.base import AttemptWithBackoff

__all__ = ["COMMIT_RESOLVE_SECONDS", "NOT_OURS", "RECONNECT_FIRST", "RECONNECT_MAX", "BoundedBackoffPool",
           "RoundTrips", "Row",
           "connection_lost", "drop_mark", "log", "mark_sql", "op_name", "resolve_commit", "route_pool_log",
           "row_factory", "written_check"]

log = logging.getLogger("synapse_nb.team")
log.addHandler(logging.NullHandler())  # the pool's lines reach a user only through their own logging setup


class _ToPackageLog(logging.Handler):
    """psycopg_pool's own lines ("error connecting in 'synapse-acme': ...") re-logged on ``synapse_nb.team.pool``:
    a CLI user sees the package's one-line errors, never the pool's raw lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger("synapse_nb.team.pool").log(record.levelno, "%s", record.getMessage())


def route_pool_log() -> None:
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(h, _ToPackageLog) for h in pool_log.handlers):
        pool_log.addHandler(_ToPackageLog())
        pool_log.propagate = False


#: Reconnecting after the server went away: the first attempt after RECONNECT_FIRST seconds, then each one 1.5
#: times later, never more than RECONNECT_MAX apart (psycopg_pool's own backoff doubles from 1 s, so after a long
#: outage its next attempt could be 16 s after the server was back). A refused connection costs the server nothing.
RECONNECT_FIRST = 0.05
RECONNECT_MAX = 0.5
#: How long a commit whose connection died is looked into (the server asked whether it committed) before the
#: caller gets :class:`~synapse_nb.errors.CommitUnknownError`.
COMMIT_RESOLVE_SECONDS = 10.0


class _Backoff(AttemptWithBackoff):
    INITIAL_DELAY = RECONNECT_FIRST
    DELAY_JITTER = 0.1
    DELAY_BACKOFF = 1.5

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RECONNECT_MAX)


class BoundedBackoffPool(ConnectionPool):
    """A pool whose reconnection backoff is bounded (:data:`RECONNECT_MAX`)."""

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        super()._add_connection(attempt or _Backoff(timeout=self.reconnect_timeout), growing)


class Row:
    """A result row readable by column name or position (as ``sqlite3.Row``)."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key]] if isinstance(key, str) else self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


def row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    index = {c.name: i for i, c in enumerate(cursor.description or ())}
    return lambda values: Row(index, values)



class RoundTrips:
    """How many statements a handle (and its siblings on the same pool) sent to the server: each one is a network
    round trip, which is what a team vault's latency is made of. Tests pin recall's count with it."""

    def __init__(self) -> None:
        self.count = 0

    def __repr__(self) -> str:
        return f"RoundTrips({self.count})"


#: What :func:`resolve_commit` answers (``own=True``) for a transaction in progress that no backend of this login holds.
NOT_OURS = "not ours"
#: Whether a backend of this login (the session user) holds transaction ``xid`` (an ``xid8``): pg_stat_activity shows
#: a login the ``backend_xid`` of its own backends (of another role's only to superusers and pg_read_all_stats).
_OWN_BACKEND = ("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE usename = session_user AND "
                "backend_xid::text = (%s::xid8::text::numeric %% 4294967296)::text)")


def resolve_commit(url: str, xid: str, pid: int,
                   confirm: Callable[[psycopg.Connection[Any]], bool] | None = None, *,
                   own: bool = False) -> str | None:
    """"committed" or "aborted": what became of transaction ``xid`` whose connection died during its COMMIT; None
    when the server could not be asked within :data:`COMMIT_RESOLVE_SECONDS`.

    ``own`` (an entry of ``in-doubt.json``, which any process of the Unix user may write): a transaction still in
    progress is waited for only while a backend of this login holds it, since only then can it be this login's cut
    commit; else the answer is :data:`NOT_OURS` at once (review 59: an entry naming a transaction the agent's own
    login kept running blocked every attempt of the person's write for the whole window).

    Asked on a connection of its own (the pool may still be reconnecting). While the server has not yet noticed
    the dead connection the transaction is "in progress"; after a second its backend (``pid``, still running
    ``xid``) is ended, which settles it: a commit record already written stays committed, anything else aborts.

    A transaction id is only a hint after a server crash: one that never reached the write-ahead log is handed out
    again after the restart (the server then says "in the future", or reports another transaction's outcome). So a
    "committed" answer is read back: ``confirm(connection)`` checks that the records the transaction wrote are there
    as it wrote them; when they are not, the transaction did not commit.
    """
    deadline = time.monotonic() + COMMIT_RESOLVE_SECONDS
    started, delay = time.monotonic(), RECONNECT_FIRST
    while True:
        with contextlib.suppress(psycopg.OperationalError), \
                psycopg.connect(url, autocommit=True, connect_timeout=2) as c:
            while time.monotonic() < deadline:
                try:
                    row = c.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
                except psycopg.errors.InvalidParameterValue:  # "in the future": lost in a crash, never committed
                    return "aborted"
                status = row[0] if row else None
                if status == "committed" and confirm is not None and not confirm(c):
                    status = "aborted"  # the id was reused after a crash: what we wrote is not there
                if status in ("committed", "aborted"):
                    log.info("a commit cut off by a dead connection was looked up: %s (xid %s)", status, xid)
                    return str(status)
                if status is None:  # too old for the server to remember: cannot be known
                    return None
                if own and not (c.execute(_OWN_BACKEND, (xid,)).fetchone() or (False,))[0]:
                    row = c.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()  # it may have just ended
                    if row is not None and row[0] == "in progress":
                        log.warning("an attempt in doubt names transaction %s, which no backend of this login holds: "
                                    "not this login's", xid)
                        return NOT_OURS
                    continue
                if time.monotonic() - started > 1.0 and pid:
                    c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = %s AND "
                              "backend_xid::text = (%s::xid8::text::numeric %% 4294967296)::text", (pid, xid))
                time.sleep(RECONNECT_FIRST)
        if time.monotonic() >= deadline:
            log.warning("a commit cut off by a dead connection could not be looked up (xid %s)", xid)
            return None
        time.sleep(delay)
        delay = min(delay * 1.5, RECONNECT_MAX)


#: SQLSTATEs of an OperationalError that ends the connection itself: the server shut down or crashed, an
#: administrator ended the session (``pg_terminate_backend``), or it cannot accept a connection now (57P01-57P03).
_LOST = ("57P01", "57P02", "57P03")


def connection_lost(exc: BaseException, conn: object = None) -> bool:
    """Whether ``exc`` means the connection is gone (libpq's own error, which carries no SQLSTATE: the server went
    away; class 08, connection exception; 57P01-57P03; or ``conn`` closed), so a COMMIT sent on it may or may not
    have happened. Any other error (a lock timeout, 55P03; a deadlock, 40P01; a statement cancelled) is the server's
    answer: the transaction was rolled back, and nothing needs looking up (review 85: an agent's table lock made a
    person's COMMIT time out, and the person read "the server went away while committing")."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    if getattr(conn, "closed", False):
        return True
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in _LOST


def op_name(key: Any) -> str:
    """The name of a write operation made exactly once (``key``: method, mind, actor, arguments): what
    ``in-doubt.json`` and its mark on the server know it by."""
    return hashlib.sha256(repr(key).encode("utf-8")).hexdigest()


def mark_sql(project: str, nonce: str, key: Any) -> str:
    """The statement a write made exactly once sends in its COMMIT's round trip, before it: its mark
    (``write_marks``, migration 23; the server sets the login and transaction). ``nonce``: 32 hex digits, fresh."""
    if len(nonce) != 32 or any(ch not in "0123456789abcdef" for ch in nonce):
        raise ValueError(f"a write mark's nonce is 32 lower-case hex digits, got {nonce!r}")
    return f"INSERT INTO {project}.write_marks(nonce, op) VALUES ('{nonce}', '{op_name(key)}'); "


def drop_mark(url: str, project: str, nonce: str) -> None:
    """Spend a mark a retry believed (best effort: one left behind is dropped a day later)."""
    with contextlib.suppress(psycopg.Error), psycopg.connect(url, autocommit=True, connect_timeout=2) as c:
        c.execute(f"SELECT {project}.spend_write_mark(%s)", (nonce,))  # its login's only (migration 29)


def written_check(project: str, tables: dict[str, str], written: dict[tuple[str, str], bool],
                  first_stamp: str | None,
                  mark: tuple[str, str, str] | None = None) -> Callable[[psycopg.Connection[Any]], bool]:
    """The read-back of :func:`resolve_commit`: every record the transaction wrote (``(kind, id) -> deleted``) is
    there with a stamp at least its first one (``first_stamp``: stamps increase strictly per project, so a row
    stamped since then was written by it or after it), and every record it deleted is gone. ``mark``: (nonce,
    operation name, transaction id) of a write made exactly once, whose mark the asking login must see: written
    by that transaction, on that login (a row exists only if it committed; a login sees only its own)."""
    def check(c: psycopg.Connection[Any]) -> bool:
        if mark is not None and c.execute(
                f"SELECT 1 FROM {project}.write_marks WHERE nonce = %s AND op = %s AND xid = %s::xid8 "
                "AND login = session_user", mark).fetchone() is None:
            return False
        for (kind, rid), deleted in sorted(written.items()):
            row = c.execute(f"SELECT updated_at FROM {project}.{tables[kind]} WHERE id = %s", (rid,)).fetchone()
            if (row is not None) if deleted else (row is None or (first_stamp is not None
                                                                   and str(row[0]) < first_stamp)):
                return False
        return True
    return check
