"""Schema migrations of a team vault: ordered, idempotent, under ``pg_advisory_xact_lock``, all or nothing.

One transaction:

1. ``pg_advisory_xact_lock(0x53594E, hashtext(project))``: concurrent ``team init`` runs of one project queue
   here; COMMIT/ROLLBACK releases the lock, so a crashed migrator never leaves it held. Each lock wait of the
   transaction is bounded (:data:`MIGRATION_LOCK_WAIT`): any login may hold that lock at session level, and past the
   bound ``team init`` stops with a :class:`~synapse_nb.errors.BusyError` naming the session that holds it.
2. bootstrap (idempotent, not versioned): the roles ``<project>_owner`` / ``_human`` / ``_agent`` (NOLOGIN
   groups), ``_agent`` granted to ``_human`` (a person may act as an agent, never the reverse), the schema owned by
   ``<project>_owner``, and ``<project>.schema_version``.
3. ``max(version)`` newer than this code knows: :class:`~synapse_nb.errors.SchemaError`, nothing touched.
4. each missing migration (``sql/*.sql``, ``@S@`` = the project) runs as ``<project>_owner``, then its row is added.

PostgreSQL DDL is transactional: any error rolls everything back, so a half-migrated schema never exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synapse_nb.errors import BusyError, SchemaError, StoreError, ValidationError

__all__ = ["AGENT_CONNECTION_LIMIT", "CODE_VERSION", "IDLE_IN_TRANSACTION_TIMEOUT", "LOCK_CLASS", "LOCK_TIMEOUT",
           "MIGRATIONS", "MIGRATION_LOCK_WAIT", "Migration", "agent_connection_limit", "bootstrap", "check",
           "check_project", "current_version", "migrate", "role_settings", "roles"]

SQL_DIR = Path(__file__).resolve().parent / "sql"
LOCK_CLASS = 0x53594E  # "SYN": the advisory-lock namespace of synapse_nb
_PROJECT_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
#: PostgreSQL's reserved key words (``pg_get_keywords()``, categories R and T, in PostgreSQL 15, and 16's
#: ``system_user``): the project's schema name is written unquoted in every migration, and none of these works
#: there (``full`` was accepted and its migration failed with a syntax error).
RESERVED: frozenset[str] = frozenset((
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization", "binary", "both",
    "case", "cast", "check", "collate", "collation", "column", "concurrently", "constraint", "create", "cross",
    "current_catalog", "current_date", "current_role", "current_schema", "current_time", "current_timestamp",
    "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end", "except", "false", "fetch",
    "for", "foreign", "freeze", "from", "full", "grant", "group", "having", "ilike", "in", "initially", "inner",
    "intersect", "into", "is", "isnull", "join", "lateral", "leading", "left", "like", "limit", "localtime",
    "localtimestamp", "natural", "not", "notnull", "null", "offset", "on", "only", "or", "order", "outer",
    "overlaps", "placing", "primary", "references", "returning", "right", "select", "session_user", "similar",
    "some", "symmetric", "system_user", "table", "tablesample", "then", "to", "trailing", "true", "union", "unique",
    "user", "using", "variadic", "verbose", "when", "where", "window", "with",
))


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str  # a file name in sql/, or SQL text

    def text(self, project: str) -> str:
        body = (SQL_DIR / self.sql).read_text(encoding="utf-8") if self.sql.endswith(".sql") else self.sql
        return body.replace("@S@", check_project(project))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "schema v2 ported from SQLite", "schema.sql"),
    Migration(2, "human gate: roles, grants, guards, row-level security", "security.sql"),
    Migration(3, "ranking documents of recall engine v2 (BM25: body, context; threads)", "ranking.sql"),
    Migration(4, "settings and file flags move the data version (recall keeps them per version)", "inputs.sql"),
    Migration(5, "the write clock ignores a stamp outside 1970-2100 instead of overflowing", "clock.sql"),
    Migration(6, "write stamps from the server's clock; no function takes a client's time", "server_clock.sql"),
    Migration(7, "no table-level UPDATE/DELETE for people and agents (no LOCK TABLE); deletes by function",
              "locks.sql"),
    Migration(8, "minds isolated by row-level security (mind_grants)", "minds.sql"),
    Migration(9, "memory that keeps its history: history, revisions, links, exports", "history.sql"),
    Migration(10, "indices for the agent quotas: the agents' history entries and memories per mind",
              "agent_writes.sql"),
    Migration(11, "the agents' hourly quota counts each login's writes in every mind; conflict links pass the "
              "proposal guard", "agent_quota_minds.sql"),
    Migration(12, "the agent quotas held by the server: raw SQL with an agent login cannot write past them",
              "agent_quota_server.sql"),
    Migration(13, "a machine's feed position is its login's; an agent's feed and scan positions count against the "
              "hourly quota", "agent_quota_positions.sql"),
    Migration(14, "an agent's history entry describes only its own record, unverified, as the package writes it",
              "agent_history_words.sql"),
    Migration(15, "what agents hold is bounded: records per mind and in the project, megabytes of their text, "
              "counted by triggers and held by the server", "agent_totals.sql"),
    Migration(16, "an agent login's own rows: every column it chose counted, no date after the server's clock, "
              "another speaker only as reported; its lesson history pending, its ranking arrays its text's, the "
              "duplicate check's mark on the clock", "agent_rows.sql"),
    Migration(17, "an agent login's branch names are names git could give a branch (a lesson's sits in its approved "
              "label)", "agent_branches.sql"),
    Migration(18, "the word statistics of agents' unverified records beside everyone's: the duplicate check weighs a "
              "pair of two people's records by people's records alone", "agent_vocab.sql"),
    Migration(19, "a registry of the sessions recall's delta keeps: the room check of a new session reads it, and an "
              "agent's sessions hold bounded rows, a mind and the project bounded sessions", "session_registry.sql"),
    Migration(20, "an agent login's lesson scan place is its own (scan_tips:agent:<login>:<mind>) and a list of "
              "commit ids; the places agents shared are removed", "agent_scan_places.sql"),
    Migration(21, "the values of a row are values the package writes: timestamps real UTC instants, a memory's "
              "category one of CATEGORIES; an agent login's text without controls, line breaks in one-line fields "
              "or invisible format characters, and its JSON items of the types the package writes; every login's "
              "new ids of the package's form", "agent_row_values.sql"),
    Migration(22, "an agent login's revisions and history entries hold what the package writes: a revision's fields "
              "the values of REVISED_FIELDS for a memory of its mind, a surface one of SURFACES, a history entry's "
              "before the keys and value types of its kind's record, a conflict pair one the duplicate check writes "
              "after the agent's own write", "agent_change_values.sql"),
    Migration(23, "a write whose commit was in doubt is believed committed only on a mark its own transaction wrote "
              "with its login (write_marks)", "write_marks.sql"),
    Migration(24, "the word statistics keep no word no record holds (a purge's words go), and an agent login reads "
              "the counts of the words it names only (gate_df_of), never the list of words", "word_stats.sql"),
    Migration(25, "a lesson a person's scan took over from an agent's counts as the agents' until a human decides it, "
              "and an agent's lesson joins at most 100 pending ones in its mind (pending_lessons: any role's count)",
              "agent_lesson_caps.sql"),
    Migration(26, "a person's ranking context holds the people's episodes before it in its thread alone: an agent's "
              "unverified one is left out (an agent's context still holds anyone's)", "person_context.sql"),
    Migration(27, "a record's search text is folded (case, accents) and split into words by the package's rules, "
              "not the database's locale, and stemmed with no stop list, as a local vault's FTS5 reads it",
              "search_fold.sql"),
    Migration(28, "a record's ranking words hold each distinct word at most 32 times, as a local vault's index: a "
              "word repeated thousands of times costs a read no more than 32 times", "rank_cap.sql"),
    Migration(29, "no role can lock write_marks: people and agents keep SELECT and INSERT on it, a retry spends its "
              "mark through spend_write_mark() and a new mark drops its login's old ones with the owner's rights",
              "write_marks_locks.sql"),
    Migration(30, "the ranking statistics of agents' unverified records beside everyone's (their documents' length, "
              "each ranking document's side): recall weighs a query's words by people's records alone",
              "agent_rank_stats.sql"),
    Migration(31, "a person's recall sessions are kept per login, as an agent's are: two people naming one session "
              "no longer share what it was given", "session_people.sql"),
    Migration(32, "who decided a revision: decided_login, set by the server to the session's login when a revision is "
              "accepted or rejected, as migration 11 sets the login that proposed it", "revision_deciders.sql"),
    Migration(33, "a lesson's session marks outlive its deletion (recall names a rejected lesson to the sessions "
              "given it) and a purge leaves them reading 'purged', no digest of its text", "lesson_marks.sql"),
    Migration(34, "the ranking contexts of the threaded episodes an import or a join copied are filled: they were "
              "left empty, so a joined vault ranked otherwise than the local one", "episode_contexts.sql"),
    Migration(35, "an agent login writes no history entry for a memory a person verified or a lesson a person decided, "
              "and its sessions' marks hold a record's digest or 'gone', never 'purged'", "agent_decided.sql"),
    Migration(36, "the agent hooks' sessions and the other agent sessions keep their bounds apart (no flood of an "
              "agent's reads makes a hook session give way), and a session's lesson marks are bounded apart from its "
              "records'", "session_classes.sql"),
)
#: The schema version this synapse_nb reads and writes.
CODE_VERSION = MIGRATIONS[-1].version


def check_project(project: object) -> str:
    """A project (PostgreSQL schema) name: a lower-case letter, then up to 39 lower-case letters, digits or ``_``, and
    none of PostgreSQL's reserved words (:data:`RESERVED`).

    >>> check_project("acme_research")
    'acme_research'
    >>> check_project("full")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synapse_nb.errors.ValidationError: project name 'full' is not accepted: it is one of PostgreSQL's reserved ...
    """
    if not isinstance(project, str) or not _PROJECT_RE.match(project):
        raise ValidationError(f"project name {project!r} is not accepted; use 1-40 characters: a lower-case letter, "
                              "then lower-case letters, digits or '_'")
    if project in RESERVED:
        raise ValidationError(f"project name {project!r} is not accepted: it is one of PostgreSQL's reserved words "
                              f"(a schema name); add a letter or a word, e.g. 'team_{project}' or '{project}team'")
    return project


def roles(project: str) -> dict[str, str]:
    """The database roles of a project: owner, human, agent."""
    return {r: f"{check_project(project)}_{r}" for r in ("owner", "human", "agent")}


BOOTSTRAP = """
DO $$
DECLARE r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['@S@_owner', '@S@_human', '@S@_agent'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile from another database of this cluster
            END;
        END IF;
    END LOOP;
    IF NOT pg_has_role(current_user, '@S@_owner', 'MEMBER') THEN
        EXECUTE format('GRANT %I TO %I', '@S@_owner', current_user);
    END IF;
    IF NOT pg_has_role('@S@_human', '@S@_agent', 'MEMBER') THEN
        GRANT @S@_agent TO @S@_human;
    END IF;
    FOREACH r IN ARRAY ARRAY['@S@_owner', '@S@_human', '@S@_agent'] LOOP
        EXECUTE format('ALTER ROLE %I SET lock_timeout = %L', r, '@LOCK_TIMEOUT@');
        EXECUTE format('ALTER ROLE %I SET idle_in_transaction_session_timeout = %L', r, '@IDLE_TIMEOUT@');
    END LOOP;
    -- the project's agent logins (an agent and nothing more) with no connection limit get AGENT_CONNECTION_LIMIT:
    -- one agent login never holds every connection slot of the server (a limit an administrator set is kept)
    FOR r IN SELECT rolname FROM pg_roles WHERE rolcanlogin AND NOT rolsuper AND rolconnlimit = -1
               AND pg_has_role(oid, '@S@_agent', 'MEMBER') AND NOT pg_has_role(oid, '@S@_human', 'MEMBER')
               AND NOT pg_has_role(oid, '@S@_owner', 'MEMBER') LOOP
        BEGIN
            EXECUTE format('ALTER ROLE %I CONNECTION LIMIT @CONN_LIMIT@', r);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE WARNING 'synapse: cannot set CONNECTION LIMIT @CONN_LIMIT@ on the agent login % (no right to '
                          'alter it)', r;
        END;
    END LOOP;
END $$;
CREATE SCHEMA IF NOT EXISTS @S@ AUTHORIZATION @S@_owner;
CREATE TABLE IF NOT EXISTS @S@.schema_version(
    version integer PRIMARY KEY CHECK (version > 0),
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text NOT NULL DEFAULT session_user
);
ALTER TABLE @S@.schema_version OWNER TO @S@_owner;
GRANT USAGE ON SCHEMA @S@ TO @S@_human, @S@_agent;
GRANT SELECT ON @S@.schema_version TO @S@_human, @S@_agent;
"""


#: How long a statement of the package waits for a lock (the project's write lock held by another client) before
#: it fails with a clear error, and how long a session may sit idle inside a transaction before the server ends
#: it (a stalled or stopped client, a psql session left open). Set on every connection the package opens and, by
#: ``team init`` and ``team grant``, on the project's roles and the logins added to them (ALTER ROLE ... SET).
LOCK_TIMEOUT = "5s"
IDLE_IN_TRANSACTION_TIMEOUT = "30s"
#: The connections one agent login may hold at once (``ALTER ROLE ... CONNECTION LIMIT``), set by ``team init`` on
#: every agent login of the project that has none (a limit an administrator set, ``ALTER ROLE login CONNECTION
#: LIMIT n``, is kept): an agent holding its login's connections open cannot take every connection slot of the
#: server from the people's logins (review 57). One agent process holds up to about 10 (a pool of 8, a
#: listening connection, a commit's look-up), so 16 leaves room for a second one at its busiest.
AGENT_CONNECTION_LIMIT = 16


def bootstrap(project: str) -> str:
    """The bootstrap statements of ``project`` (roles, schema, version table, the roles' timeouts, the agent logins'
    connection limit)."""
    return (BOOTSTRAP.replace("@S@", check_project(project)).replace("@LOCK_TIMEOUT@", LOCK_TIMEOUT)
            .replace("@IDLE_TIMEOUT@", IDLE_IN_TRANSACTION_TIMEOUT)
            .replace("@CONN_LIMIT@", str(AGENT_CONNECTION_LIMIT)))


def agent_connection_limit(login: str) -> str:
    """The statement giving the agent login ``login`` :data:`AGENT_CONNECTION_LIMIT` when it has no limit yet
    (``team init --agent``; a limit an administrator set is kept)."""
    return (f"DO $$ BEGIN IF (SELECT rolconnlimit FROM pg_roles WHERE rolname = '{login}') = -1 THEN "
            f'ALTER ROLE "{login}" CONNECTION LIMIT {AGENT_CONNECTION_LIMIT}; END IF; END $$')


def role_settings(login: str) -> list[str]:
    """The statements giving a login the package's timeouts (``team init --human/--agent``, ``team grant``)."""
    return [f'ALTER ROLE "{login}" SET lock_timeout = \'{LOCK_TIMEOUT}\'',
            f'ALTER ROLE "{login}" SET idle_in_transaction_session_timeout = \'{IDLE_IN_TRANSACTION_TIMEOUT}\'']


def current_version(conn: Any, project: str) -> int:
    """The project's schema version (0 when the project does not exist yet)."""
    check_project(project)
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{project}.schema_version",)).fetchone()
    if not row[0]:
        return 0
    return int(conn.execute(f"SELECT coalesce(max(version), 0) FROM {project}.schema_version").fetchone()[0])


def _refuse_newer(version: int, project: str, code_version: int) -> None:
    if version > code_version:
        raise SchemaError(
            f"the team vault project {project!r} has schema version {version}, newer than this synapse_nb knows "
            f"({code_version}); upgrade synapse_nb on this machine to use it (nothing was changed)")


def check(conn: Any, project: str, code_version: int = CODE_VERSION) -> int:
    """On open: refuse a newer schema, and a missing or older one (``synapse-nb team init URL`` makes it)."""
    v = current_version(conn, project)
    _refuse_newer(v, project, code_version)
    if v == 0:
        raise SchemaError(f"the server has no team vault project {project!r}; create it with "
                          f"`synapse-nb team init URL` (URL with ?project={project})")
    if v < code_version:
        raise SchemaError(f"the team vault project {project!r} has schema version {v}, this synapse_nb needs "
                          f"{code_version}; run `synapse-nb team init URL` to upgrade it")
    return v


#: How long ``team init`` waits for a lock: the project's migration lock (another ``team init`` migrating it, or any
#: session holding ``pg_advisory_lock(LOCK_CLASS, hashtext(project))``, which every login may take and no idle
#: timeout ends), and each lock a migration's statements need on the project's tables. Past it, ``team init`` stops
#: with :class:`~synapse_nb.errors.BusyError` naming the session that holds it (review 85: it waited forever).
MIGRATION_LOCK_WAIT = "60s"

#: The sessions holding the project's migration lock (the two-key advisory lock: classid, objid, objsubid 2).
_ADVISORY_HOLDERS = """
SELECT l.pid, a.usename, a.application_name, a.backend_start, a.state
  FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = %s::oid
   AND l.objid = hashtext(%s)::oid AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
 ORDER BY l.pid"""
#: The sessions holding a lock on a table of the project (the migration waited for one of them).
_TABLE_HOLDERS = """
SELECT l.pid, a.usename, a.application_name, a.backend_start, a.state,
       string_agg(DISTINCT c.relname || ' ' || l.mode, ', ') AS locks
  FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = %s
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.granted AND l.pid <> pg_backend_pid() AND c.relkind IN ('r', 'p', 'v', 'm')
 GROUP BY 1, 2, 3, 4, 5 ORDER BY 1"""


def _holders(conn: Any, project: str, *, advisory: bool) -> str:
    """Who holds what ``team init`` waited for, as a person reads it (pid, login, application, since when)."""
    try:
        rows = (conn.execute(_ADVISORY_HOLDERS, (LOCK_CLASS, project)) if advisory
                else conn.execute(_TABLE_HOLDERS, (project,))).fetchall()
    except Exception as exc:  # noqa: BLE001 - only what the message says: the error is raised anyway
        return f"who holds it could not be read ({type(exc).__name__})"
    if not rows:
        return "no session holds it any more"
    said = []
    for row in rows[:5]:
        pid, login, app, since, state = row[:5]
        what = f"pid {pid}, login {login or '(not visible to this login)'}, application {app or ''!r}"
        what += f", connected since {since.isoformat(timespec='seconds')}" if since is not None else ""
        what += f", {state}" if state else ""
        said.append(what + (f", holding {row[5]}" if not advisory else ""))
    return "held by " + "; ".join(said) + (f" (and {len(rows) - 5} more)" if len(rows) > 5 else "")


def migrate(conn: Any, project: str, migrations: tuple[Migration, ...] = MIGRATIONS) -> tuple[int, int]:
    """Bring ``project`` to the last of ``migrations`` on an autocommit connection; (version before, after)."""
    import psycopg  # the team extra; loaded only for a team vault

    from synapse_nb.store.postgres.pool import connection_lost

    check_project(project)
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migrations must be numbered 1..n in order, got {versions}")
    locked = False
    try:
        with conn.transaction():
            # every lock wait of this transaction is bounded, the migration lock's first (no login's session-level
            # hold of it, nor a client's open transaction on a table, keeps team init waiting without end)
            conn.execute(f"SET LOCAL lock_timeout = '{MIGRATION_LOCK_WAIT}'")
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, project))
            locked = True
            conn.execute(bootstrap(project))
            before = current_version(conn, project)
            _refuse_newer(before, project, versions[-1] if versions else 0)
            for m in migrations:
                if m.version <= before:
                    continue
                conn.execute(f"SET LOCAL ROLE {project}_owner")
                conn.execute(f"SET LOCAL search_path = {project}, pg_catalog")
                conn.execute(m.text(project))
                conn.execute(f"INSERT INTO {project}.schema_version(version, name, applied_by) "
                             "VALUES (%s, %s, session_user)", (m.version, m.name))
                conn.execute("RESET ROLE")
                conn.execute("RESET search_path")
            after = current_version(conn, project)
        return before, after
    except psycopg.errors.LockNotAvailable as exc:
        what = ("the project's migration lock (another `team init`, or any session that took "
                f"pg_advisory_lock({LOCK_CLASS}, hashtext('{project}')))" if not locked
                else "a lock on one of the project's tables")
        raise BusyError(f"`team init` waited {MIGRATION_LOCK_WAIT} for {what} and stopped (nothing was changed): "
                        f"{_holders(conn, project, advisory=not locked)}. If that is not another `team init` at work, "
                        "end the session (SELECT pg_terminate_backend(pid)) and run `team init` again") from exc
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StoreError(f"`team init` needs a role that may create roles and schemas (a superuser, or one with "
                         f"CREATEROLE and CREATE on the database): {exc}") from exc
    except psycopg.OperationalError as exc:
        if not connection_lost(exc, conn):
            raise StoreError(f"the team vault server stopped the migration (nothing was changed): {exc}") from exc
        raise StoreError(f"the team vault server went away during the migration (nothing was changed): {exc}") from exc
