"""Settings, sessions, flags, references, recall statistics, the change feed and export/import of a team vault.

Settings, sessions, flags and file references are the SQLite repositories as they are (standard SQL). Recall's
word statistics come from the shared ``gate_df``/``gate_stats`` (every machine reads the same numbers); the index
outbox is replaced by the change feed (:class:`FeedOutbox`); export/import carry the ``terms`` column.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import ConflictError
from synapse_nb.models import RANKED_KINDS
from synapse_nb.store.postgres.db import map_error
from synapse_nb.store.postgres.ranking import RankingQueries
from synapse_nb.store.postgres.tables import GATE_KINDS, gate_terms, gate_text, rank_tokens
from synapse_nb.store.records import EXPORT_FIELDS, Candidate
from synapse_nb.store.sqlite import queries as lite

if TYPE_CHECKING:
    from synapse_nb.store.postgres.db import PgDatabase

__all__ = ["FeedOutbox", "FeedPosition", "RecallQueries", "SessionsQueries", "TransferQueries"]

CANDIDATE_COLS = "id, kind, mind, text, updated_at, expires_at"
KEY_MATCHES = ("SELECT id, name FROM (SELECT 0 AS src, id, key AS name FROM memories WHERE mind = ? AND key = ANY(?) "
               "UNION ALL SELECT 1, id, name FROM notes WHERE mind = ? AND name = ANY(?)) m ORDER BY src, id")


def _candidate(r: Any) -> Candidate:
    return Candidate(r["kind"], r["id"], r["mind"], r["text"], r["updated_at"], r["expires_at"])


class RecallQueries(RankingQueries, lite.RecallQueries):
    """Candidates from the ``gate_candidates`` view; N and document frequencies from ``gate_stats``/``gate_df``;
    the ranking reads of recall engine v2 from :class:`~synapse_nb.store.postgres.ranking.RankingQueries`."""

    def count(self) -> int:
        """Inside a snapshot, read with its version in its first round trip; else one read."""
        n = self._db.snapshot_docs()
        if n is not None:
            return n
        row = self._db.query_one("SELECT n_docs FROM gate_stats WHERE id = 1")
        return int(row[0]) if row else 0

    def fetch(self, mind: str, ids_by_kind: Mapping[str, Iterable[str]]) -> list[Candidate]:
        ids = sorted({i for kind in RANKED_KINDS for i in ids_by_kind.get(kind, ())})
        if not ids:
            return []
        rows = self._db.query(f"SELECT {CANDIDATE_COLS} FROM gate_candidates WHERE mind = ? AND id = ANY(?) "
                              "ORDER BY id", (mind, ids))
        wanted = {k: set(v) for k, v in ids_by_kind.items()}
        return [_candidate(r) for r in rows if r["id"] in wanted.get(r["kind"], ())]

    def doc_freq(self, terms: Sequence[str]) -> dict[str, int]:
        """Per term (recall keeps the answers per data version: recall/candidates.py)."""
        want = list(dict.fromkeys(terms))
        if not want:
            return {}
        rows = self._db.query("SELECT term, n FROM gate_df WHERE term = ANY(?) AND n > 0", (want,))
        return {r["term"]: int(r["n"]) for r in rows}

    def key_matches(self, mind: str, keys: Sequence[str]) -> list[tuple[str, str]]:
        """Memories then notes, each by id (as SQLite), in one statement per 400 keys (recall keeps the answers per
        data version)."""
        out: list[tuple[str, str]] = []
        for chunk in lite._chunks(list(keys), 400):
            out += [(r["id"], r["name"]) for r in self._db.query(KEY_MATCHES, (mind, chunk, mind, chunk))]
        return out


class MetaQueries(lite.MetaQueries):
    """Settings as SQLite's, but read inside a snapshot they are kept per data version (migration 4: writing a
    setting moves the version), so a warm recall's saved default bars cost no round trip."""

    def settings(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        memo = self._db.snapshot_cache("settings")  # type: ignore[attr-defined]
        if memo is None:
            return super().settings(names)
        key = None if names is None else tuple(names)
        if key not in memo:
            memo[key] = super().settings(key)
        return dict(memo[key])


MARK_SEEN = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) SELECT ?, ?, u.rid, u.digest, ? "
             "FROM unnest(?::text[], ?::text[]) AS u(rid, digest) ORDER BY u.rid "
             "ON CONFLICT (mind, session, rid) DO UPDATE SET digest = excluded.digest, seen_at = excluded.seen_at")


class SessionsQueries(lite.SessionsQueries):
    """Session marks as SQLite's, but recording what a recall gave is one statement (one round trip)."""

    def mark(self, mind: str, session: str, pairs: Sequence[tuple[str, str]], now: str) -> None:
        given = dict(pairs)  # the last digest of a repeated id wins, as the row-by-row upsert does
        rids = sorted(given)
        if rids:
            self._db.write_once(MARK_SEEN, (mind, session, now, rids, [given[r] for r in rids]))


# -- the change feed ------------------------------------------------------------------------------------------
FEED_SNAPSHOT = "SELECT pg_current_snapshot()::text AS snap, pg_snapshot_xmin(pg_current_snapshot())::text AS xmin"
FEED_CHANGES = ("SELECT DISTINCT rid FROM change_log WHERE xid >= ?::xid8 AND pg_visible_in_snapshot(xid, ?::pg_snapshot) "
                "AND NOT pg_visible_in_snapshot(xid, ?::pg_snapshot) AND kind <> 'lesson' ORDER BY rid")
REPORT_FOLLOWER = ("INSERT INTO followers(name, cursor_xid, snapshot, synced_at) VALUES (?, ?::xid8, ?::pg_snapshot, "
                   "now()) ON CONFLICT (name) DO UPDATE SET cursor_xid = excluded.cursor_xid, "
                   "snapshot = excluded.snapshot, synced_at = excluded.synced_at")


class FeedPosition:
    """Where this machine's index copy stands in the change feed: ``folder/team-feed.json`` (or memory only).

    ``cursor`` is ``pg_snapshot_xmin`` and ``snapshot`` the snapshot of the last applied read, saved only after
    the index applied it; ``synced_at`` is when (UTC, ISO) -- the age of an offline copy.
    """

    def __init__(self, folder: Path | None, location: str) -> None:
        self.path = None if folder is None else Path(folder) / "team-feed.json"
        self.location = location
        self._mem: dict[str, str] = {}

    def load(self) -> dict[str, str]:
        if self.path is None:
            return dict(self._mem)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
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


class FeedOutbox:
    """The :class:`~synapse_nb.store.base.Outbox` of a team vault: the change feed read with the snapshot rule.

    ``change_log`` rows carry the writing transaction's ``xid8``. A read takes a REPEATABLE READ snapshot and asks
    for rows with ``xid >= cursor`` visible in it and not in the previous one; once the index applied them the
    position becomes (``pg_snapshot_xmin`` of that snapshot, the snapshot). Sequence values commit out of order,
    so a sequence cursor would miss rows; this rule cannot. Re-applying a change is harmless (index rows carry a
    digest), so a lost or rewound position only costs time.
    """

    def __init__(self, db: PgDatabase, folder: Path | None) -> None:
        self._db = db
        self._pos = FeedPosition(folder, db.location)
        self._lock = threading.Lock()
        self._read: tuple[str, str] | None = None  # the snapshot pending() read, saved by ack()
        self._marks: dict[int, tuple[str, str]] = {}
        self._listener: Any = None  # the LISTEN connection of wait()
        self._listen_lock = threading.Lock()
        self.name = f"{socket.gethostname()}:{folder}" if folder is not None else f"{socket.gethostname()}:memory"

    @property
    def position(self) -> dict[str, str]:
        """The saved position: cursor, snapshot, synced_at (empty before the first sync)."""
        return self._pos.load()

    def _changes(self) -> tuple[list[str] | None, str, str]:
        """(changed ids, or None when there is no position yet; snapshot; xmin)."""
        pos = self._pos.load()
        with self._db.snapshot():
            now = self._db.query_one(FEED_SNAPSHOT)
            snap, xmin = now["snap"], now["xmin"]  # type: ignore[index]
            if not pos.get("cursor"):
                rows = self._db.query("SELECT id AS rid FROM gate_candidates ORDER BY id")
                return [r["rid"] for r in rows] or None, snap, xmin
            rows = self._db.query(FEED_CHANGES, (pos["cursor"], snap, pos["snapshot"]))
        return [r["rid"] for r in rows], snap, xmin

    def has_pending(self) -> bool:
        ids, _, _ = self._changes()
        return ids is None or bool(ids)

    def wait(self, timeout: float) -> bool:
        """Block until a transaction that changed records commits (its ``NOTIFY <project>_changes``, delivered at
        commit) or ``timeout`` seconds passed. A wake-up only: the caller then reads with the snapshot rule, so a
        lost or merged notification costs at most ``timeout``. One listening connection per store, outside the
        pool; it is reopened after an error."""
        import psycopg

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
            now = self._db.query_one(FEED_SNAPSHOT)
        with self._lock:
            mark = len(self._marks) + 1
            self._marks[mark] = (now["xmin"], now["snap"])  # type: ignore[index]
        return mark

    def ack_through(self, seq: int) -> None:
        with self._lock:
            read = self._marks.pop(seq, None)
        if read is not None:
            self._save(*read)

    def _save(self, cursor: str, snap: str) -> None:
        self._pos.save(cursor, snap)
        if not self._db.readonly:
            self._db.write(REPORT_FOLLOWER, (self.name, cursor, snap))

    def docs(self, ids: Sequence[str]) -> list[Candidate]:
        if not ids:
            return []
        return [_candidate(r) for r in self._db.query(
            f"SELECT {CANDIDATE_COLS} FROM gate_candidates WHERE id = ANY(?) ORDER BY id", (list(ids),))]

    def all_docs(self) -> Iterator[Candidate]:
        return (_candidate(r) for r in self._db.iter_query(
            f"SELECT {CANDIDATE_COLS} FROM gate_candidates ORDER BY id"))

    def lag(self) -> dict[str, Any]:
        """How far this machine's index copy is behind: changes not yet applied, last sync time."""
        pos = self._pos.load()
        ids, _, _ = self._changes()
        return {"behind": None if ids is None and not pos else len(ids or ()), "synced_at": pos.get("synced_at"),
                "cursor": pos.get("cursor")}


# -- export / import ------------------------------------------------------------------------------------------
class TransferQueries(lite.TransferQueries):
    def rows(self, kind: str) -> Iterator[dict[str, Any]]:
        json_fields = lite.JSON_FIELDS[kind]
        cols = EXPORT_FIELDS[kind]
        for row in self._db.query(f"SELECT {', '.join(cols)} FROM {lite.TABLES[kind]} ORDER BY id"):
            yield {k: json.loads(row[k]) if k in json_fields and row[k] is not None else row[k] for k in cols}

    def insert(self, kind: str, doc: Mapping[str, Any]) -> bool:
        table = lite.TABLES[kind]
        cols = list(EXPORT_FIELDS[kind])
        values = lite._columns_json(kind, doc)
        with self._db.transaction() as c:
            existing = c.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE id = ?", (doc["id"],)).fetchone()
            if existing is not None:
                if list(existing) == values:
                    return False
                raise ConflictError(f"{kind} {doc['id']} already exists with different content")
            marks = lite._marks(len(cols))
            if kind in GATE_KINDS:
                text = gate_text(kind, dict(zip(cols, values, strict=False)))
                cols += ["terms", "rank_body"]
                values = [*values, gate_terms(text), rank_tokens(text)]
                marks += ",?,stem_all(?::text[])"
            try:
                c.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({marks})", values)
            except ConflictError as exc:
                raise ConflictError(f"{kind} {doc['id']} conflicts with the vault ({exc})") from None
            self._db.touched(kind, doc["id"])
        return True
