"""PostgreSQL, the system of record of a team vault: :class:`PgStore` implements
:class:`synapse_nb.store.base.VaultStore`.

A team vault is one PostgreSQL schema (a *project*, one per repository) on a shared server; minds are a column,
as in SQLite. Open one with a URL: ``postgresql://user@host:port/db?project=acme`` (``project`` defaults to the
repository's folder name). See ``docs/team.md``.

Where the SQL is:

========================  =====================================================================================
``sql/schema.sql``        migration 1: the SQLite schema ported (CHECKs, COLLATE "C", tsvector + GIN, terms,
                          gate_df/gate_stats triggers, change_log, next_stamp)
``sql/security.sql``      migration 2: the human gate (roles, grants, guard triggers, row-level security,
                          SECURITY DEFINER functions)
``sql/ranking.sql``       migration 3: the ranking documents of recall engine v2 (BM25: body, context; threads)
``sql/inputs.sql``        migration 4: settings and file flags move the data version
``sql/clock.sql``         migration 5: next_stamp ignores a clock outside 1970-2100 (never overflows)
``sql/server_clock.sql``  migration 6: stamps from the server's clock; no function takes a client's time
``sql/locks.sql``         migration 7: no table-level UPDATE/DELETE for people and agents (no LOCK TABLE);
                          deletes through checked functions (routed by ``PgDialect.render``)
``sql/minds.sql``         migration 8: minds isolated by row-level security (``mind_grants``, ``team grant``)
``sql/history.sql``       migration 9: history, revisions, links, exports (issue 30) and their human gate
``migrate.py``            migrations under ``pg_advisory_xact_lock``; a newer schema is refused
``store/sql/`` (package)  the statements both backends share (:mod:`synapse_nb.store.sql`): the kind tables,
                          settings, sessions, flags, references, recall's candidates, tags and keys, export, import
``dialect.py``            what PostgreSQL says its own way: ``%s`` rendering, ``= ANY(?)`` lists, tsvector
                          search, the gate terms and ranking stems every ranked record stores, deletes by function
``db.py``                 transactions (a cut commit looked up), snapshots, stamps, change notification
``pool.py``               the pool (bounded reconnect backoff, its log lines routed), the commit look-up
``copy.py``               this machine's offline copy kept current after every operation
``errors.py``             psycopg's errors as the package's error tree
``tables.py``             lessons through the human gate's functions and guarded approval; episodes refresh
                          their thread's ranking contexts
``queries.py``            recall's word statistics (gate_df/gate_stats), the change feed (the index outbox),
                          one-statement session marks
``ranking.py``            recall engine v2's BM25 and its inputs (``rank_docs``)
``server.py``             a throwaway local server (tests, ``synapse-nb team dev-server``)
========================  =====================================================================================
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

from synapse_nb.errors import CommitUnknownError, StoreError, ValidationError
from synapse_nb.models import TABLES
from synapse_nb.own_files import write_atomic
from synapse_nb.store.postgres import migrate
from synapse_nb.store.postgres import pool as pgpool
from synapse_nb.store.postgres.cachedir import read_own_text
from synapse_nb.store.postgres.copy import CopyKeeper, behind_note, scrub_owed
from synapse_nb.store.postgres.copy import scrub as scrub_copy
from synapse_nb.store.postgres.db import PgDatabase, RoundTrips
from synapse_nb.store.postgres.dialect import gate_terms
from synapse_nb.store.postgres.migrate import (
    AGENT_CONNECTION_LIMIT,
    CODE_VERSION,
    agent_connection_limit,
    check_project,
    role_settings,
)
from synapse_nb.store.postgres.queries import FeedOutbox, MetaQueries, RecallQueries, SessionsQueries
from synapse_nb.store.postgres.tables import EpisodesTable, LessonsTable
from synapse_nb.store.records import Change
from synapse_nb.store.sql import (
    CheckpointsTable,
    DecisionsTable,
    ExportsQueries,
    FlagsQueries,
    HistoryQueries,
    LinksQueries,
    MemoriesTable,
    NotesTable,
    RefsQueries,
    RevisionsQueries,
    Table,
    TransferQueries,
)

__all__ = ["CODE_VERSION", "PgStore", "check_agent_login", "gate_terms", "is_team_url", "parse_team_url",
           "project_for"]

#: The write operations whose commit could not be looked up, kept for their retry (:meth:`PgStore.once`).
IN_DOUBT = "in-doubt.json"
#: Statements that start an operation that writes nothing (a read, a snapshot): the others tell the offline copy's
#: keeper that something may have been written.
READS = ("SELECT", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

_URL_RE = re.compile(r"^postgres(ql)?://", re.IGNORECASE)


def genuine_doubt(entry: object) -> bool:
    """Whether an ``in-doubt.json`` entry has the shape :meth:`PgStore.once` writes: a transaction id, the nonce of
    its mark (32 hex digits), its first stamp and the records it wrote (``[kind, id, deleted]``)."""
    if not isinstance(entry, dict) or set(entry) != {"xid", "nonce", "first_stamp", "written"}:
        return False
    xid, nonce, stamp, written = entry["xid"], entry["nonce"], entry["first_stamp"], entry["written"]
    return (isinstance(xid, str) and xid.isascii() and xid.isdigit() and len(xid) <= 20
            and isinstance(nonce, str) and re.fullmatch(r"[0-9a-f]{32}", nonce) is not None
            and (stamp is None or isinstance(stamp, str)) and isinstance(written, list)
            and all(isinstance(w, list) and len(w) == 3 and w[0] in TABLES and isinstance(w[1], str)
                    and isinstance(w[2], bool) for w in written))


def is_team_url(value: object) -> bool:
    """Whether a vault location is a team vault URL (``postgresql://`` or ``postgres://``)."""
    return isinstance(value, str) and bool(_URL_RE.match(value.strip()))


def project_for(folder: str | Path) -> str:
    """The default project name for a repository folder: its name, lower-cased, other characters as ``_``.

    >>> project_for("/src/My-Repo.v2")
    'my_repo_v2'
    """
    name = re.sub(r"[^a-z0-9_]+", "_", Path(folder).name.lower()).strip("_")[:40] or "vault"
    return name if name[0].isalpha() else f"p_{name}"[:40]


def parse_team_url(url: str, default_project: str | None = None) -> tuple[str, str]:
    """(connection URL for libpq, project) from a team vault URL; ``?project=`` is ours, the rest is libpq's.

    >>> parse_team_url("postgresql://bob@db:5432/team?project=acme&sslmode=require")
    ('postgresql://bob@db:5432/team?sslmode=require&require_auth=%21password', 'acme')
    >>> parse_team_url("postgresql://bob@db/team?passfile=/home/bob/.pgpass?project=acme")  # "$URL?project=..."
    ('postgresql://bob@db/team?passfile=%2Fhome%2Fbob%2F.pgpass&require_auth=%21password', 'acme')

    A password is never sent in clear text (``require_auth=!password``, libpq 16) unless the URL says otherwise.
    """
    if not is_team_url(url):
        raise ValidationError(f"{url!r} is not a team vault URL; use postgresql://user@host:port/database?project=NAME")
    parts = urlsplit(url.strip())
    # "$ADMIN_URL?project=acme" where ADMIN_URL already had "?sslmode=require": a second "?" is a "&"
    query = parse_qsl(parts.query.replace("?", "&"), keep_blank_values=True)
    projects = [v for k, v in query if k == "project"]
    rest = [(k, v) for k, v in query if k != "project"]
    project = projects[-1] if projects else default_project
    if project is None:
        raise ValidationError(f"the team vault URL {url!r} names no project; add ?project=NAME (one per repository)")
    if not any(k == "require_auth" for k, _ in rest):
        # never send a password as it is typed: a server that asks for one in clear text (one an agent pointed this
        # folder's team.toml at) got it (review 2); SCRAM, certificates, trust and peer are unaffected
        rest.append(("require_auth", "!password"))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), parts.fragment)), check_project(project)


def check_login(login: object, *, groups: str | None = None) -> str:
    """A login role's name as ``team init --human/--agent`` and ``team grant`` accept it (``groups``: the project
    whose group roles are accepted too)."""
    if not isinstance(login, str) or not re.match(r"^[a-z_][a-z0-9_]{0,62}$", login):
        raise ValidationError(f"login {login!r} is not accepted: lower-case letters, digits and '_'")
    if groups is None and login.endswith(("_owner", "_human", "_agent")):
        raise ValidationError(f"{login!r} looks like a project's group role; name a login role")
    return login


def check_grant_mind(mind: object) -> str:
    """A mind name for ``team grant`` (``*``: every mind)."""
    if not isinstance(mind, str) or not (mind == "*" or re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", mind)):
        raise ValidationError(f"mind {mind!r} is not accepted: '*' (every mind), or 1-64 letters, digits, '.', '_', "
                              "'-' starting with a letter or digit")
    return mind


def check_agent_login(conninfo: str, project: str, login: str) -> None:
    """Refuse ``login`` as a folder's agent login unless it is one of the project's agents and nothing more, asked of
    the server over ``conninfo`` (the person's login; ``pg_roles`` is readable by every login): it must exist and log
    in, be a member of ``<project>_agent``, and hold no person's or owner's role, superuser, ``BYPASSRLS`` nor
    ``CREATEROLE`` (each gives back what the agent role keeps from it), and have a connection limit (``team init``
    gives an agent login :data:`~synapse_nb.store.postgres.migrate.AGENT_CONNECTION_LIMIT`: one with none, made by
    hand or kept by an older vault, can take every connection slot of the server from the people's logins). Raises
    ValidationError saying what is wrong, how to fix it and what is accepted; StoreError when the server cannot be
    asked."""
    names = migrate.roles(project)
    accepted = (f"accepted: a login role that `synapse-nb team init URL --agent LOGIN` made an agent of project "
                f"{project} and nothing more")
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT rolcanlogin, rolsuper, rolbypassrls, rolcreaterole, pg_has_role(oid, %s, 'MEMBER'), "
                "pg_has_role(oid, %s, 'MEMBER'), pg_has_role(oid, %s, 'MEMBER'), rolconnlimit FROM pg_roles "
                "WHERE rolname = %s",
                (names["agent"], names["human"], names["owner"], login)).fetchone()
    except psycopg.Error as exc:
        raise StoreError(f"cannot check the agent login {login} on the team vault server: "
                         f"{' '.join(str(exc).split())}") from exc
    if row is None:
        raise ValidationError(f"the agent login {login} does not exist on the team vault server; {accepted}")
    can_login, superuser, bypass, createrole, agent_member, human, owner, conn_limit = row
    wrong = [why for why, bad in (
        ("cannot log in (no LOGIN)", not can_login), ("is a superuser", superuser), ("has BYPASSRLS", bypass),
        ("has CREATEROLE", createrole), (f"is not a member of {names['agent']}", not agent_member),
        (f"is a member of {names['human']} (a person's role)", human), (f"is a member of {names['owner']}", owner))
        if bad]
    unlimited = (f"has no connection limit (CONNECTION LIMIT -1): an agent holding its connections open can take "
                 f"every connection slot of the server from the people's logins; an administrator gives it one: "
                 f"ALTER ROLE {login} CONNECTION LIMIT {AGENT_CONNECTION_LIMIT}, or `synapse-nb team init "
                 f"ADMIN_URL` (it gives every agent login of the project that has none {AGENT_CONNECTION_LIMIT})"
                 if conn_limit is not None and int(conn_limit) < 0 else None)
    if wrong:
        raise ValidationError(f"the agent login {login} {', '.join(wrong)}: agent surfaces would hold more than the "
                              f"agent role's rights through it; {f'it also {unlimited}; ' if unlimited else ''}"
                              f"{accepted}")
    if unlimited:
        raise ValidationError(f"the agent login {login} {unlimited}; {accepted}")


class PgStore(PgDatabase):
    """One project of a team vault, seen through the store seam (a :class:`~synapse_nb.store.base.VaultStore`).

    Parameters
    ----------
    url : a libpq URL (``postgresql://user@host:port/db``; no ``project`` parameter).
    project : the project schema.
    folder : this machine's folder for caches (the retrieval index's feed position); None keeps it in memory.
    readonly : refuse writes.
    role : "agent" runs every statement as the project's agent role (what an agent's vault handle does).
    """

    def __init__(self, url: str, project: str, *, folder: str | Path | None = None, readonly: bool = False,
                 role: str | None = None, keep_copy: bool = False, _keeper: CopyKeeper | None = None,
                 **kw: Any) -> None:
        super().__init__(url, project, readonly=readonly, role=role, **kw)
        self.folder = None if folder is None else Path(folder)
        #: keeps this machine's offline copy current after every operation (``keep_copy``: a vault handle's store)
        self.keeper = _keeper if _keeper is not None else (
            CopyKeeper(self) if keep_copy and self.folder is not None else None)
        #: what the last :meth:`scrub` left in this machine's offline copy, and how to remove it (None: nothing)
        self.copy_behind: str | None = None
        self.path = (self.folder or Path(".")) / "team-feed.json"
        # typed on the connection (not this subclass), as the lessons and episodes of a team vault are
        self.memories: MemoriesTable[PgDatabase] = MemoriesTable(self)
        self.checkpoints: CheckpointsTable[PgDatabase] = CheckpointsTable(self)
        self.decisions: DecisionsTable[PgDatabase] = DecisionsTable(self)
        self.lessons = LessonsTable(self)
        self.episodes = EpisodesTable(self)
        self.notes: NotesTable[PgDatabase] = NotesTable(self)
        self._tables: dict[str, Table[Any, PgDatabase]] = {
            t.kind: t for t in (self.memories, self.checkpoints, self.decisions, self.lessons, self.episodes,
                                self.notes)}
        self.meta = MetaQueries(self)
        self.sessions = SessionsQueries(self)
        self.flags = FlagsQueries(self)
        self.refs = RefsQueries(self)
        self.recall = RecallQueries(self)
        self.outbox = FeedOutbox(self, self.folder)
        self.transfer = TransferQueries(self, self._tables)
        self.history = HistoryQueries(self)
        self.revisions = RevisionsQueries(self)
        self.links = LinksQueries(self)
        self.exports = ExportsQueries(self)

    def table(self, kind: str) -> Table[Any, PgDatabase]:
        """The table of a kind ("memory" -> :attr:`memories`)."""
        return self._tables[kind]

    def changes_between(self, old: tuple[int, ...], new: tuple[int, ...]) -> list[Change] | None:
        """None: which records another machine changed is the change feed's to tell (``follow``), so recall
        reads its structure rows afresh after any write."""
        return None

    def scrub(self) -> None:
        """After a deletion: this machine's offline copy applies it now, then is rewritten without the deleted text
        (:func:`~synapse_nb.store.postgres.copy.scrub`). The server keeps dead row versions until its autovacuum
        runs (an administrator's ``VACUUM`` removes them at once). When the copy could not sync (its lock held by
        another process, the server gone), it is left as it was and :attr:`copy_behind` says so (review 33); so it does
        when another process's open read of ``copy.db`` kept the scrub from truncating its WAL (review 34)."""
        self.copy_behind = None
        keeper = self.keeper
        if keeper is None or self.folder is None:
            return
        keeper.written()
        keeper.poke()
        reason = keeper.behind if keeper.flush() else "its sync did not finish in time"
        if reason is not None:
            self.copy_behind = behind_note(self.folder, reason)
            return
        # the sync that applied the deletion from the feed scrubbed the copy (review 91); again only when that was
        # kept from finishing (another process's open read kept the text: review 34), never a second VACUUM
        self.copy_behind = scrub_copy(self.folder) if scrub_owed(self.folder) else None

    def for_actor(self, actor: str) -> PgStore:
        """This store (same pool, same listeners) acting for ``actor``: "agent" runs as the project's agent role."""
        role = "agent" if actor == "agent" else self.role
        if role == self.role:
            return self
        return PgStore(self.url, self.project, folder=self.folder, readonly=self.readonly, role=role,
                       _pool=self.pool, _listeners=self._listeners, _round_trips=self.round_trips,
                       _keeper=self.keeper)

    def sibling_for_copy(self) -> PgStore:
        """A handle on the same pool for :class:`CopyKeeper`'s syncs: its own round-trip count, no keeper."""
        return PgStore(self.url, self.project, folder=self.folder, readonly=self.readonly, role=self.role,
                       _pool=self.pool, _listeners=[], _round_trips=RoundTrips())

    # -- this machine's offline copy --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connection(self, first: str | None = None, params: Sequence[Any] = (),
                    last: bool = False) -> Iterator[tuple[Any, Any]]:
        """The connection's checkout; once an operation is over (no connection pinned any more), the offline copy
        is poked: its keeper brings it up to date in the background."""
        with super()._connection(first, params, last) as got:
            yield got
        keeper = getattr(self, "keeper", None)  # None while the handle is being opened
        if keeper is not None and self._state.conn is None and self._state.lazy_open is None:
            if first is None or not first.lstrip().upper().startswith(READS):
                keeper.written()
            keeper.poke()

    # -- exactly once across retries ----------------------------------------------------------------------------
    def once(self, key: Any, call: Callable[[], Any]) -> tuple[bool, Any]:
        """One write operation exactly once across its caller's retries: ``(True, call())``, or ``(False, records)``
        when an earlier attempt of it (same ``key``: method, mind, actor, arguments) ended in
        :class:`~synapse_nb.errors.CommitUnknownError` and the server now says it committed, with its records there:
        the (kind, id) it wrote, which the caller reads back instead of writing again. The attempts in doubt are
        kept in this machine's cache folder (``in-doubt.json``), so the retry may come from another process (the
        same CLI command run again).

        An attempt counts only as this login's own: its transaction wrote a mark in its COMMIT's round trip (a
        random nonce the entry keeps, the call's name; the server sets the login and transaction id: migration 23),
        and the retry believes a commit only when this login sees that mark. An entry of another shape, a file
        another user owns or others may write, or a commit without the mark makes the write happen (review 57: a
        planted entry naming the person's memory and any committed transaction of the agent's own login had the
        person's ``remember`` print "updated" and write nothing)."""
        if self._state.depth or self._state.op_key is not None:
            return True, call()
        name = pgpool.op_name(key)
        prior = self._doubts().get(name)
        if prior is not None and not genuine_doubt(prior):
            pgpool.log.warning("an entry of %s not of the package's making was set aside; the write is made", IN_DOUBT)
            self._drop_doubt(name)
            prior = None
        if prior is not None:
            written = {(k, r): bool(d) for k, r, d in prior["written"]}
            status = pgpool.resolve_commit(self.url, prior["xid"], 0, pgpool.written_check(
                self.project, TABLES, written, prior["first_stamp"], (prior["nonce"], name, prior["xid"])), own=True)
            if status is None:
                where = self.folder / IN_DOUBT if self.folder is not None else IN_DOUBT
                raise CommitUnknownError(
                    f"the team vault server {self.location} still cannot be asked whether the earlier attempt of this "
                    f"write committed (entry {name} of {where}); make the same call again later, or set the entry "
                    f"aside (move {where} away, or delete that entry from it) and the call is made anew, written "
                    "twice if the earlier attempt did commit")
            self._drop_doubt(name)
            if status == "committed":
                pgpool.drop_mark(self.url, self.project, prior["nonce"])
                return False, sorted(written)
        self._state.op_key = key
        try:
            return True, call()
        finally:
            self._state.op_key = None

    def note_in_doubt(self, key: Any, entry: dict[str, Any]) -> None:
        doubts = self._doubts()
        doubts[pgpool.op_name(key)] = entry
        self._save_doubts(doubts)

    def _doubts(self) -> dict[str, Any]:
        if self.folder is None:
            return self._in_doubt
        path = self.folder / IN_DOUBT
        try:  # checked once open, on the descriptor read: this user's regular file that only it may write
            data = json.loads(read_own_text(path, private=True) or "{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _drop_doubt(self, name: str) -> None:
        doubts = self._doubts()
        doubts.pop(name, None)
        self._save_doubts(doubts)

    def _save_doubts(self, doubts: dict[str, Any]) -> None:
        if self.folder is None:
            self._in_doubt = doubts
            return
        with contextlib.suppress(OSError):  # mkstemp: the owner's alone (0600), a temporary name of its own
            write_atomic(self.folder / IN_DOUBT, json.dumps(doubts, sort_keys=True))

    def data_version(self) -> tuple[int, ...]:
        version = super().data_version()
        if self.keeper is not None and version[0] >= 0:
            self.keeper.saw(version[0])
        return version

    # -- team administration (``synapse-nb team status``) -----------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        """The server's version, the project's gate statistics and every machine's feed position."""
        with self.snapshot():
            ver = self.query_one("SELECT current_setting('server_version') AS v, fmt_ts(now()) AS now")
            stats = self.query_one("SELECT n_docs, version FROM gate_stats WHERE id = 1")
            # a row per machine and login (migration 13); a row from before it (login '') stops showing once its
            # machine reported again
            followers = self.query(
                "SELECT name, login, cursor_xid::text AS cursor, fmt_ts(synced_at) AS synced_at FROM followers f "
                "WHERE login <> '' OR NOT EXISTS (SELECT 1 FROM followers g WHERE g.name = f.name AND g.login <> '') "
                "ORDER BY name, login")
        return {"server_version": ver["v"] if ver else None, "server_now": ver["now"] if ver else None,
                "n_docs": int(stats["n_docs"]) if stats else 0, "data_version": int(stats["version"]) if stats else 0,
                "machines": [{"name": r["name"], "login": r["login"], "cursor": r["cursor"],
                              "synced_at": r["synced_at"]} for r in followers]}

    def add_login(self, login: str, kind: str, *, minds: tuple[str, ...] = ("*",)) -> None:
        """Make the existing login role ``login`` a member of the project's ``human`` or ``agent`` role, give it the
        package's lock and idle timeouts (``ALTER ROLE ... SET``) and, for an agent, the ``minds`` it may see and a
        connection limit (:data:`~synapse_nb.store.postgres.migrate.AGENT_CONNECTION_LIMIT`, when it has none)."""
        check_login(login)
        if kind not in ("human", "agent"):
            raise ValidationError(f"a login is added as 'human' or 'agent', not {kind!r}")
        with self.transaction() as c:
            c.execute(f"GRANT {self.project}_{kind} TO {login}")
            for stmt in role_settings(login):
                c.execute(stmt)
            if kind == "agent":
                c.execute(agent_connection_limit(login))
                for mind in minds:
                    self._grant_mind(c, login, mind)

    def grant_mind(self, login: str, mind: str, *, revoke: bool = False) -> list[str]:
        """Let the role ``login`` see the mind ``mind`` ("*": every mind), or stop it (``revoke``); returns the minds
        granted to it afterwards. Needs the project's owner (the ``team init`` administrator)."""
        check_login(login, groups=self.project)
        with self.transaction() as c:
            if revoke:
                c.execute("DELETE FROM mind_grants WHERE grantee = ? AND mind = ?", (login, check_grant_mind(mind)))
            else:
                self._grant_mind(c, login, mind)
                if not login.startswith(f"{self.project}_"):
                    for stmt in role_settings(login):
                        c.execute(stmt)
            rows = c.execute("SELECT mind FROM mind_grants WHERE grantee = ? ORDER BY mind", (login,)).fetchall()
        return [str(r[0]) for r in rows]

    @staticmethod
    def _grant_mind(c: Any, login: str, mind: str) -> None:
        c.execute("INSERT INTO mind_grants(grantee, mind) VALUES (?, ?) ON CONFLICT DO NOTHING",
                  (login, check_grant_mind(mind)))

    def close(self) -> None:
        if self.keeper is not None and self._owner:
            self.keeper.close()
        self.outbox.close()
        super().close()
