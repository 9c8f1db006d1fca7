"""What a team vault reads its own way: recall's word statistics, the change feed, one-statement session marks.

Settings, flags, file references, recall's candidates, tags and keys, export and import are the shared SQL of
:mod:`synapse_nb.store.sql`. Here: recall's N and document frequencies come from the shared ``gate_df`` /
``gate_stats`` (every machine reads the same numbers), its candidates' rows from the ``gate_candidates`` view in one
statement, its ranking reads from :mod:`synapse_nb.store.postgres.ranking`; the index outbox is the change feed
(:class:`FeedOutbox`); recording what a recall gave is one upsert of two arrays (one round trip).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from synapse_nb.errors import QuotaExceededError, StoreError
from synapse_nb.models import RANKED_KINDS
from synapse_nb.store.postgres.db import PgDatabase
from synapse_nb.store.postgres.errors import map_error
from synapse_nb.store.postgres.ranking import RankingQueries
from synapse_nb.store.records import Candidate
from synapse_nb.store.sql import CANDIDATES, CandidateDocs, candidate
from synapse_nb.store.sql import MetaQueries as SharedMetaQueries
from synapse_nb.store.sql import RecallQueries as SharedRecallQueries
from synapse_nb.store.sql import SessionsQueries as SharedSessionsQueries
from synapse_nb.store.sql.queries import scan_tips_of

__all__ = ["FeedOutbox", "FeedPosition", "RecallQueries", "SessionsQueries"]


class RecallQueries(RankingQueries, SharedRecallQueries[PgDatabase]):
    """Candidates from the ``gate_candidates`` view; N and document frequencies from ``gate_stats``/``gate_df``
    (and the agents' unverified records': ``agent_docs``/``agents``, migration 18); the ranking reads
    of recall engine v2 from :class:`~synapse_nb.store.postgres.ranking.RankingQueries`."""

    def count(self, *, agents: bool = False) -> int:
        """Inside a snapshot, read with its version in its first round trip; else one read."""
        n = self._db.snapshot_agents() if agents else self._db.snapshot_docs()
        if n is not None:
            return n
        row = self._db.query_one(f"SELECT {'agent_docs' if agents else 'n_docs'} FROM gate_stats WHERE id = 1")
        return int(row[0]) if row else 0

    def fetch(self, mind: str, ids_by_kind: Mapping[str, Iterable[str]]) -> list[Candidate]:
        ids = sorted({i for kind in RANKED_KINDS for i in ids_by_kind.get(kind, ())})
        if not ids:
            return []
        rows = self._db.query(f"{CANDIDATES} WHERE mind = ? AND id = ANY(?) ORDER BY id", (mind, ids))
        wanted = {k: set(v) for k, v in ids_by_kind.items()}
        return [candidate(r) for r in rows if r["id"] in wanted.get(r["kind"], ())]

    def doc_freq(self, terms: Sequence[str], *, agents: bool = False) -> dict[str, int]:
        """Per term (recall keeps the answers per data version: recall/candidates.py). The agents' counts come with
        everyone's, and inside a snapshot are kept for its version: the duplicate check reads both of the same
        words in one round trip."""
        want = list(dict.fromkeys(terms))
        if not want:
            return {}
        kept = self._db.snapshot_cache("agent_df")
        if agents and kept is not None and all(t in kept for t in want):
            return {t: kept[t] for t in want if kept[t] > 0}
        rows = self._db.query("SELECT term, n, agents FROM gate_df_of(?)", (want,))  # no agent reads gate_df
        if kept is not None:
            kept.update(dict.fromkeys(want, 0))
            kept.update((r["term"], int(r["agents"])) for r in rows)
        col = "agents" if agents else "n"
        return {r["term"]: int(r[col]) for r in rows if int(r[col]) > 0}


#: The room of a new session as the shared SESSION_ROOM counts it (a record's mark makes a session known; its kind's
#: sessions of the hour: people's, the agent hooks' and other agents' apart, migration 36's _hook_session), and a
#: lesson's mark recorded whatever the room (review 95).
MARK_SEEN = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) SELECT ?, k.s, u.rid, u.digest, ? "
             "FROM (SELECT session_key(?) AS s) k, unnest(?::text[], ?::text[]) AS u(rid, digest) "
             "WHERE ?::text IS NULL OR starts_with(u.rid, 'les_') "
             "OR EXISTS (SELECT 1 FROM session_seen x WHERE x.mind = ? AND x.session = k.s "
             "AND NOT (x.rid >= 'les_' AND x.rid < 'les`')) "
             "OR (SELECT count(*) FROM session_registry r WHERE r.mind = ? AND r.last_seen >= ? "
             "AND r.agent = starts_with(k.s, 'agent:') AND _hook_session(r.session) = _hook_session(k.s)) < ? "
             "ORDER BY u.rid "
             "ON CONFLICT (mind, session, rid) DO UPDATE SET digest = excluded.digest, seen_at = excluded.seen_at")
#: What a session was given of these ids, and (the flag) of every lesson (review 87): one statement, one round trip.
SEEN = ("SELECT rid, digest FROM session_seen WHERE mind = ? AND session = session_key(?) "
        "AND (rid = ANY(?) OR (?::boolean AND starts_with(rid, 'les_')))")


class SessionsQueries(SharedSessionsQueries[PgDatabase]):
    """Session marks as shared, but recording what a recall gave is one statement (one round trip), and an agent's
    session (``agent:<surface>:<id>``, recall/delta.py) is kept per database login (``session_key``, migration 12:
    one agent login's rows could otherwise leave records out of another agent's recall). Whether a new session has
    room reads ``session_registry`` (migration 19), which the server keeps with the marks and uses to bound an
    agent's."""

    def seen(self, mind: str, session: str, ids: Sequence[str], *, lessons: bool = False) -> dict[str, str]:
        want = list(dict.fromkeys(ids))
        if not want and not lessons:
            return {}
        return {r["rid"]: r["digest"] for r in self._db.query(SEEN, (mind, session, want, lessons))}

    def mark(self, mind: str, session: str, pairs: Sequence[tuple[str, str]], now: str, *,
             new_since: str | None = None, new_limit: int = 0) -> None:
        given = dict(pairs)  # the last digest of a repeated id wins, as the row-by-row upsert does
        rids = sorted(given)
        if rids:
            self._db.write_once(MARK_SEEN, (mind, now, session, rids, [given[r] for r in rids], new_since, mind,
                                            mind, new_since, new_limit))


#: The meta key of an agent's lesson scan place in a mind (the parameter): its login's own (migration 20).
AGENT_TIPS_KEY = "'scan_tips:agent:' || session_user || ':' || ?"


class MetaQueries(SharedMetaQueries[PgDatabase]):
    """Settings and quotas as shared, but the agents' writes are counted by a function of the schema
    (``agent_writes_since``, migration 10): row-level security hides from the agent role the history of pending
    lessons, so the shared count, run as the agent, missed its analyses of them. Since migration 11 it counts the
    calling login's own writes in every mind (each history entry and revision records its login)."""

    def agent_writes(self, since: str) -> int:
        row = self._db.query_one("SELECT agent_writes_since(?)", (since,))
        return int(row[0] or 0) if row else 0

    def agent_held(self, mind: str) -> tuple[int, int, int, int]:
        """What agents hold, from the counts the server keeps (migration 15): the agent role reads no table of them."""
        row = self._db.query_one("SELECT * FROM agent_holdings(?)", (mind,))
        return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), int(row[3] or 0)) if row else (0, 0, 0, 0)

    # an agent's lesson scan place is its login's (migration 20): the key names the server's session_user, so one
    # agent login's value (a bad one, or HEAD past a revert) never moves another's scan (review 30)
    def scan_tips(self, scope: str) -> tuple[str, ...]:
        if not scope.startswith("agent:"):
            return super().scan_tips(scope)
        row = self._db.query_one(f"SELECT value FROM meta WHERE key = {AGENT_TIPS_KEY}", (scope[len("agent:"):],))
        return scan_tips_of(row["value"]) if row else ()

    def set_scan_tips(self, scope: str, tips: Sequence[str]) -> None:
        if not scope.startswith("agent:"):
            super().set_scan_tips(scope, tips)
            return
        self._db.write(f"INSERT INTO meta(key, value) VALUES ({AGENT_TIPS_KEY}, ?) ON CONFLICT (key) DO UPDATE "
                       "SET value = excluded.value", (scope[len("agent:"):], json.dumps(sorted(tips))))


# -- the change feed ------------------------------------------------------------------------------------------
FEED_SNAPSHOT = "SELECT pg_current_snapshot()::text AS snap, pg_snapshot_xmin(pg_current_snapshot())::text AS xmin"
FEED_CHANGES = ("SELECT DISTINCT rid FROM change_log WHERE xid >= ?::xid8 "
                "AND pg_visible_in_snapshot(xid, ?::pg_snapshot) "
                "AND NOT pg_visible_in_snapshot(xid, ?::pg_snapshot) AND kind <> 'lesson' ORDER BY rid")
# a row per machine and login (migration 13: the server sets the login, and lets an agent role update only its own)
REPORT_FOLLOWER = ("INSERT INTO followers(name, cursor_xid, snapshot, synced_at) VALUES (?, ?::xid8, ?::pg_snapshot, "
                   "now()) ON CONFLICT (name, login) DO UPDATE SET cursor_xid = excluded.cursor_xid, "
                   "snapshot = excluded.snapshot, synced_at = excluded.synced_at")


class FeedPosition:
    """Where this machine's index copy stands in the change feed: ``folder/team-feed.json`` (or memory only).

    ``cursor`` is ``pg_snapshot_xmin`` and ``snapshot`` the snapshot of the last applied read, saved only after
    the index applied it; ``synced_at`` is when (UTC, ISO) -- the age of an offline copy.
    """

    def __init__(self, folder: Path | None, location: str, file: str = "team-feed.json") -> None:
        self.path = None if folder is None else Path(folder) / file
        self.location = location
        self._mem: dict[str, str] = {}

    def load(self) -> dict[str, str]:
        if self.path is None:
            return dict(self._mem)
        from synapse_nb.store.postgres.cachedir import read_own_text

        try:
            data = json.loads(read_own_text(self.path) or "{}")  # another user's file is no position (review 59)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("location") == self.location else {}

    def save(self, cursor: str, snapshot: str) -> None:
        data = {"location": self.location, "cursor": cursor, "snapshot": snapshot,
                "synced_at": datetime.now(UTC).isoformat(timespec="seconds")}
        if self.path is None:
            self._mem = data
            return
        if not self.path.parent.is_dir():
            return
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".team-feed.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, self.path)


class FeedOutbox(CandidateDocs[PgDatabase]):
    """The :class:`~synapse_nb.store.base.Outbox` of a team vault: the change feed read with the snapshot rule.

    ``change_log`` rows carry the writing transaction's ``xid8``. A read takes a REPEATABLE READ snapshot and asks
    for rows with ``xid >= cursor`` visible in it and not in the previous one; once the index applied them the
    position becomes (``pg_snapshot_xmin`` of that snapshot, the snapshot). Sequence values commit out of order,
    so a sequence cursor would miss rows; this rule cannot. Re-applying a change is harmless (index rows carry a
    digest), so a lost or rewound position only costs time.
    """

    #: it brings other machines' changes: a deletion it applies was scrubbed by no call on this machine, so the
    #: index's sync scrubs it (:meth:`~synapse_nb.store.indexer.VaultIndex._scrubs_feed`; review 91)
    shared = True

    def __init__(self, db: PgDatabase, folder: Path | None, *, position: str = "team-feed.json",
                 name: str = "") -> None:
        super().__init__(db)
        self._pos = FeedPosition(folder, db.location, position)
        self._lock = threading.Lock()
        self._read: tuple[str, str] | None = None  # the snapshot pending() read, saved by ack()
        self._marks: dict[int, tuple[str, str]] = {}
        self._listener: psycopg.Connection[Any] | None = None  # the LISTEN connection of wait()
        self._listen_lock = threading.Lock()
        where = str(folder) if folder is not None else "memory"
        self.name = f"{socket.gethostname()}:{where}{name}"

    @property
    def position(self) -> dict[str, str]:
        """The saved position: cursor, snapshot, synced_at (empty before the first sync)."""
        return self._pos.load()

    def _changes(self) -> tuple[list[str] | None, str, str]:
        """(changed ids, or None when there is no position yet; snapshot; xmin)."""
        pos = self._pos.load()
        with self._db.snapshot():
            snap, xmin = self._feed_snapshot()
            if not pos.get("cursor"):
                rows = self._db.query("SELECT id AS rid FROM gate_candidates ORDER BY id")
                return [r["rid"] for r in rows] or None, snap, xmin
            rows = self._db.query(FEED_CHANGES, (pos["cursor"], snap, pos["snapshot"]))
        return [r["rid"] for r in rows], snap, xmin

    def has_pending(self) -> bool:
        ids, _, _ = self._changes()
        return ids is None or bool(ids)

    def _feed_snapshot(self) -> tuple[str, str]:
        """(the server's current snapshot, its xmin), as text."""
        row = self._db.query_one(FEED_SNAPSHOT)
        if row is None:  # a SELECT without FROM answers one row
            raise StoreError(f"the team vault {self._db.location} answered no snapshot")
        return str(row["snap"]), str(row["xmin"])

    def wait(self, timeout: float) -> bool:
        """Block until a transaction that changed records commits (its ``NOTIFY <project>_changes``, delivered at
        commit) or ``timeout`` seconds passed. A wake-up only: the caller then reads with the snapshot rule, so a
        lost or merged notification costs at most ``timeout``. One listening connection per store, outside the
        pool; it is reopened after an error."""
        with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = psycopg.connect(self._db.url, autocommit=True, connect_timeout=5)
                    self._listener.execute(f'LISTEN "{self._db.project}_changes"')
                    return True  # changes may have committed before it listened: look once
                woke = False
                for _ in self._listener.notifies(timeout=max(0.0, timeout), stop_after=1):
                    woke = True
                # several commits may have notified: the next read takes them all, so drop the queued rest
                while self._listener.pgconn.notifies() is not None:
                    pass
                return woke
            except psycopg.Error as exc:
                if self._listener is not None:
                    self._listener.close()
                self._listener = None
                raise map_error(exc) from exc

    def close(self) -> None:
        """Close the listening connection (if :meth:`wait` opened one)."""
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None

    def pending(self, limit: int) -> list[tuple[str, int]]:
        ids, snap, xmin = self._changes()
        if not ids:  # nothing to apply: the position moves on at once
            self._save(xmin, snap)
            return []
        with self._lock:
            self._read = (xmin, snap)
        return [(rid, 0) for rid in ids]

    def ack(self, entries: Sequence[tuple[str, int]]) -> None:
        with self._lock:
            read, self._read = self._read, None
        if read is not None:
            self._save(*read)

    def high_water(self) -> int:
        with self._db.snapshot():
            snap, xmin = self._feed_snapshot()
        with self._lock:
            mark = len(self._marks) + 1
            self._marks[mark] = (xmin, snap)
        return mark

    def ack_through(self, seq: int) -> None:
        with self._lock:
            read = self._marks.pop(seq, None)
        if read is not None:
            self._save(*read)

    def _save(self, cursor: str, snap: str) -> None:
        self._pos.save(cursor, snap)
        if not self._db.readonly:
            try:
                self._db.write(REPORT_FOLLOWER, (self.name, cursor, snap))
            except QuotaExceededError as exc:  # what `team status` shows, counted for an agent (migration 13):
                # never fail a sync for it; the next sync reports again
                logging.getLogger("synapse_nb.team").info("this machine's feed position was not reported: %s", exc)

    def lag(self) -> dict[str, Any]:
        """How far this machine's index copy is behind: changes not yet applied, last sync time."""
        pos = self._pos.load()
        ids, _, _ = self._changes()
        return {"behind": None if ids is None and not pos else len(ids or ()), "synced_at": pos.get("synced_at"),
                "cursor": pos.get("cursor")}
