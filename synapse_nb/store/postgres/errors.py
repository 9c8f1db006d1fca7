"""psycopg's errors as the package's :class:`~synapse_nb.errors.SynapseError` tree, with a message saying what
happened (a refused value, a conflict, an unreachable server)."""

from __future__ import annotations

import re

import psycopg
from psycopg import errors as pgerr
from psycopg_pool import PoolTimeout

from synapse_nb.errors import (
    BusyError,
    CommitUnknownError,
    ConflictError,
    NotFoundError,
    OfflineError,
    PermissionDeniedError,
    QuotaExceededError,
    ServerRefusedError,
    StoreError,
    SynapseError,
    ValidationError,
)
from synapse_nb.store.postgres.pool import connection_lost

__all__ = ["OFFLINE_HINT", "REFUSALS", "busy_said", "connect_error", "location", "map_error", "no_connection"]


def map_error(exc: BaseException, *, committing: bool = False) -> SynapseError:
    """A psycopg error as the package's error tree, with a message saying what happened."""
    diag = getattr(exc, "diag", None)
    msg = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
    msg = " ".join(msg.split("\n")[0].split())  # libpq's connection errors span several lines
    hint = f" ({diag.message_hint})" if diag is not None and diag.message_hint else ""
    if isinstance(exc, pgerr.LockNotAvailable | pgerr.DeadlockDetected):
        return BusyError(busy_said(exc, msg))
    if isinstance(exc, pgerr.ConfigurationLimitExceeded):  # migration 12: a quota a human set, held by the server
        return QuotaExceededError(f"agent write refused by the team vault: {msg.removeprefix('synapse: ')}{hint}")
    if isinstance(exc, pgerr.InsufficientPrivilege):
        return PermissionDeniedError(f"the team vault refused: {msg}{hint}")
    if isinstance(exc, pgerr.ObjectNotInPrerequisiteState | pgerr.UniqueViolation | pgerr.ExclusionViolation):
        return ConflictError(f"{msg}{hint}")
    if isinstance(exc, pgerr.NoDataFound):
        return NotFoundError(msg)
    if isinstance(exc, pgerr.CheckViolation | pgerr.NotNullViolation | pgerr.InvalidParameterValue
                  | pgerr.InvalidTextRepresentation | pgerr.StringDataRightTruncation | pgerr.UntranslatableCharacter
                  | pgerr.CharacterNotInRepertoire):
        return ValidationError(f"the team vault refused a value: {msg}{hint}")
    if isinstance(exc, psycopg.OperationalError | PoolTimeout):
        if committing and not connection_lost(exc):  # the server answered the COMMIT round trip: rolled back
            return StoreError(f"the team vault refused the commit ({msg}){hint}: nothing was written; try again")
        if committing:
            return CommitUnknownError(
                f"the team vault server went away while committing ({msg}) and could not be asked whether the commit "
                "happened; once the server is back, make the same call again on this machine (the same command, or "
                "the same method with the same arguments): it asks the server first and returns what was written "
                "instead of writing it twice")
        return OfflineError(f"the team vault server is unreachable or went away ({msg}); nothing was written; "
                          "the next call reconnects")
    return StoreError(f"the team vault failed: {msg}{hint}")


#: The relation a lock wait names in its error's context ("while locking tuple (0,7) in relation "gate_stats"").
_RELATION = re.compile(r'in relation "([^"]+)"')


def busy_said(exc: BaseException, msg: str) -> str:
    """What a person reads when the server ended a statement that waited for a lock (55P03, ``lock_timeout``) or was
    caught in a deadlock (40P01): which lock, that nothing was written, and what ends a session that keeps holding it,
    as it is (a session may set its own timeouts: the package's are no promise about another client's)."""
    from synapse_nb.store.postgres.migrate import IDLE_IN_TRANSACTION_TIMEOUT, LOCK_TIMEOUT

    diag = getattr(exc, "diag", None)
    where = _RELATION.search((diag.context if diag is not None else None) or "")
    name = where.group(1) if where is not None else None
    if isinstance(exc, pgerr.DeadlockDetected):
        head = (f"the team vault server ended this write in a deadlock with another client's transaction ({msg}), so "
                "nothing was written; try again")
    elif name == "gate_stats":
        head = (f"another client held the team vault's write lock for {LOCK_TIMEOUT} (lock_timeout; the project's "
                "gate_stats row, which every write takes first), so nothing was written; try again")
    elif name is not None:
        head = (f"another client held a lock on the team vault's table {name} for {LOCK_TIMEOUT} (lock_timeout), so "
                "nothing was written; try again")
    else:
        head = (f"another client held a lock on one of the team vault's tables for {LOCK_TIMEOUT} (lock_timeout; a "
                "LOCK TABLE, or an administrator's maintenance or migration: the server names no table for such a "
                "wait), so nothing was written; try again")
    return (f"{head}. The server ends a session's transaction left idle after that session's "
            f"idle_in_transaction_session_timeout ({IDLE_IN_TRANSACTION_TIMEOUT} for the package's connections and "
            "the logins team init adds, unless the session set its own); `synapse-nb team status` shows the machines, "
            "pg_stat_activity every session, and an administrator ends one with SELECT pg_terminate_backend(pid)")


#: What an unreachable server means for this machine, in every message that says so.
OFFLINE_HINT = ("this machine is offline from the team vault, so it cannot write (no local fork is ever made); "
                "reads (`synapse-nb recall`, `synapse-nb memory search`, open_vault(url, offline=True)) answer from "
                "this machine's stale copy; check the URL, the network and the server")


#: What a server that answered says when it refuses a connection (libpq's text, the server's English messages:
#: a connect error carries no SQLSTATE), and what to do about it. Any other connect failure (refused by the
#: operating system, a timeout, an unknown host, a server starting up or shutting down) means the server cannot be
#: reached: :class:`OfflineError`, and a read may answer from the stale copy.
REFUSALS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("too many clients already", "remaining connection slots are reserved"),
     ("every connection slot of the server (max_connections) is taken; it frees when their clients close them. An "
     "administrator sees the logged-in ones with SELECT usename, count(*) FROM pg_stat_activity GROUP BY 1; "
     "connections that never log in (raw TCP sockets, a client stuck before its password) take slots too and are "
     "NOT there: on the server's host `ss -tnp state established '( sport = :PORT )'` lists every one, the server "
     "drops each after authentication_timeout (1 min by default), and only the network (a firewall) keeps them "
     "out; each agent login's logged-in connections are capped (CONNECTION LIMIT, docs/team.md \"Connection "
     "slots\")")),
    (("too many connections for role", "too many connections for database"),
     ("this login (or database) already holds as many connections as its CONNECTION LIMIT allows; close some of its "
     "sessions, or an administrator raises it: ALTER ROLE login CONNECTION LIMIT n (docs/team.md \"Connection "
     "slots\")")),
    (("authentication failed", "no password supplied", "no pg_hba.conf entry", "password is required"),
     ("check the URL's login and its password (~/.pgpass, PGPASSFILE or PGPASSWORD, docs/team.md) and the server's "
     "pg_hba.conf")),
    (("does not exist", "is not permitted to log in", "permission denied for database"),
     ("check the URL's login and database; an administrator creates the login and makes it a person or an agent of "
     "the project (synapse-nb team init URL --human LOGIN / --agent LOGIN)")),
)


#: libpq's words before its reason ("connection failed: connection to server at "h", port 1 failed: ").
_LIBPQ_PREFIX = re.compile(r'^(connection failed: )?'
                           r'(connection to server (at|on socket) "[^"]*"(, port \d+)? failed: )?')


def location(url: str, project: str) -> str:
    """The server and project of a libpq URL, without secrets: ``postgresql://user@host:port/db?project=p``."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    user = f"{info['user']}@" if info.get("user") else ""
    port = f":{info['port']}" if info.get("port") else ""
    host, db = info.get("host", "localhost"), info.get("dbname", "")
    return f"postgresql://{user}{host}{port}/{db}?project={project}"


def connect_error(exc: BaseException, location: str) -> SynapseError:
    """A failed connection to ``location`` as the package's error: :class:`ServerRefusedError` when the server
    answered and refused it (:data:`REFUSALS`: its reason and what to do; never a reason to read the stale copy),
    else :class:`OfflineError` (the server cannot be reached)."""
    text = " ".join(str(exc).split())[:300]
    low = text.lower()
    for phrases, todo in REFUSALS:
        if any(p in low for p in phrases):
            reason = text.split("FATAL:", 1)[-1].strip() if "FATAL:" in text else text
            return ServerRefusedError(f"the team vault server {location} is up but refused this connection "
                                      f"({reason}): {todo}; this is not offline, so no stale copy is read and "
                                      "nothing was written")
    offline = OfflineError(f"cannot reach the team vault server {location} ({text}): {OFFLINE_HINT}")
    offline.reason = _LIBPQ_PREFIX.sub("", text) or text  # its short reason: the location is said elsewhere
    return offline


def no_connection(exc: PoolTimeout, url: str, location: str) -> SynapseError:
    """The pool gave no connection in time: one direct attempt asks the server why. When it answers and refuses
    (every slot taken: the pool's reconnections were refused) that is :class:`ServerRefusedError`, never offline
    (a long-lived surface would read the stale copy instead); else :func:`map_error`'s :class:`OfflineError`."""
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError as refused:
        err = connect_error(refused, location)
        if isinstance(err, ServerRefusedError):
            return err
    return map_error(exc)
