"""Every statement that is not one kind table's: settings and bookkeeping (``meta``), recall sessions, verify's
flags, file references, the recall gate's rows and word statistics, the index outbox, export and import.

Each class is a small repository over its tables; statements are named constants, and those taking a list of
ids bind one parameter per id (in chunks of :data:`CHUNK`, below SQLite's limit on parameters).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.models import PRIORITIES, RANKED_KINDS, TABLES, Record
from synapse_nb.store.records import EXPORT_FIELDS, JSON_FIELDS, Candidate, RankHit, RefSource
from synapse_nb.store.sqlite.db import CHUNK, _chunks, _marks
from synapse_nb.store.sqlite.ranking import RankingQueries

if TYPE_CHECKING:
    from synapse_nb.store.sqlite.db import Database
    from synapse_nb.store.sqlite.tables import _Table

__all__ = ["CHUNK", "FlagsQueries", "MetaQueries", "OutboxQueries", "RecallQueries", "RefsQueries",
           "SessionsQueries", "TransferQueries"]

# -- meta: settings, scan tips ---------------------------------------------------------------------------------
UPSERT_META = "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
ALL_SETTINGS = "SELECT key, value FROM meta WHERE key LIKE 'setting:%' ORDER BY key"
GET_META = "SELECT value FROM meta WHERE key = ?"


# agent records written or changed since a stamp, per kind: memories through memories_order (mind, priority,
# updated_at: one range per priority), the others by their own stamps
AGENT_WRITES = ("SELECT (SELECT count(*) FROM memories WHERE mind = ? AND priority IN (0, 1, 2, 3) AND updated_at >= ? "
                "AND source = 'agent') + " + " + ".join(
                    f"(SELECT count(*) FROM {t} WHERE mind = ? AND updated_at >= ? AND source = 'agent')"
                    for t in ("decisions", "checkpoints", "episodes", "notes", "lessons")))
AGENT_MEMORIES = "SELECT count(*) FROM memories WHERE mind = ? AND source = 'agent'"


class MetaQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def agent_writes(self, mind: str, since: str) -> int:
        row = self._db.query_one(AGENT_WRITES, (mind, since) * 6)
        return int(row[0] or 0) if row else 0

    def agent_memories(self, mind: str) -> int:
        row = self._db.query_one(AGENT_MEMORIES, (mind,))
        return int(row[0] or 0) if row else 0

    def settings(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        if names is None:
            rows = self._db.query(ALL_SETTINGS)
        else:
            keys = [f"setting:{n}" for n in names]
            rows = self._db.query(f"SELECT key, value FROM meta WHERE key IN ({_marks(len(keys))}) ORDER BY key",
                                  tuple(keys))
        return {r["key"][len("setting:"):]: json.loads(r["value"]) for r in rows}

    def set_settings(self, values: Mapping[str, Any]) -> None:
        with self._db.transaction() as c:
            c.executemany(UPSERT_META, [(f"setting:{k}", json.dumps(v)) for k, v in values.items()])

    def scan_tips(self, mind: str) -> tuple[str, ...]:
        row = self._db.query_one(GET_META, (f"scan_tips:{mind}",))
        return tuple(json.loads(row["value"])) if row else ()

    def set_scan_tips(self, mind: str, tips: Sequence[str]) -> None:
        with self._db.transaction() as c:
            c.execute(UPSERT_META, (f"scan_tips:{mind}", json.dumps(sorted(tips))))


# -- sessions ---------------------------------------------------------------------------------------------------
MARK_SEEN = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES (?,?,?,?,?) "
             "ON CONFLICT(mind, session, rid) DO UPDATE SET digest = excluded.digest, seen_at = excluded.seen_at")
PRUNE_SESSIONS = "DELETE FROM session_seen WHERE mind = ? AND seen_at < ?"


class SessionsQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def seen(self, mind: str, session: str, ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for chunk in _chunks(list(ids)):
            out.update((r["rid"], r["digest"]) for r in self._db.query(
                f"SELECT rid, digest FROM session_seen WHERE mind = ? AND session = ? AND rid IN ({_marks(len(chunk))})",
                (mind, session, *chunk)))
        return out

    def mark(self, mind: str, session: str, pairs: Sequence[tuple[str, str]], now: str) -> None:
        # a session's marks are no part of what recall ranks or caches: they do not move the data version (every
        # recall with a session that gave something new would otherwise start its next one cold)
        with self._db.transaction(moves_version=False) as c:
            c.executemany(MARK_SEEN, [(mind, session, r, d, now) for r, d in pairs])

    def prune(self, mind: str, before: str) -> int:
        with self._db.transaction(moves_version=False) as c:
            return max(0, c.execute(PRUNE_SESSIONS, (mind, before)).rowcount)


# -- flags ------------------------------------------------------------------------------------------------------
FLAGS_OF_MIND = "SELECT rid, flag, detail FROM flags WHERE mind = ? ORDER BY rid, flag"
DELETE_FLAGS = "DELETE FROM flags WHERE mind = ?"
INSERT_FLAG = "INSERT INTO flags(rid, mind, flag, detail, updated_at) VALUES (?,?,?,?,?)"


class FlagsQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def of_mind(self, mind: str) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self._db.query(FLAGS_OF_MIND, (mind,)):
            out.setdefault(r["rid"], {})[r["flag"]] = json.loads(r["detail"])
        return out

    def dangling(self, ids: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for chunk in _chunks(list(ids)):
            out.update((r["rid"], json.loads(r["detail"])) for r in self._db.query(
                f"SELECT rid, detail FROM flags WHERE flag = 'dangling' AND rid IN ({_marks(len(chunk))})",
                tuple(chunk)))
        return out

    def replace(self, mind: str, dangling: Mapping[str, Sequence[str]], stale: Mapping[str, Sequence[str]],
                updated_at: str) -> None:
        rows = [(rid, mind, "dangling", json.dumps(sorted(ps)), updated_at) for rid, ps in sorted(dangling.items())]
        rows += [(rid, mind, "stale", json.dumps(list(shas)), updated_at) for rid, shas in sorted(stale.items())]
        with self._db.transaction() as c:
            c.execute(DELETE_FLAGS, (mind,))
            c.executemany(INSERT_FLAG, rows)


# -- file references (verify) ---------------------------------------------------------------------------------
REF_LESSONS = "SELECT id, updated_at, files_affected FROM lessons WHERE mind = ? ORDER BY id"
REF_CHECKPOINTS = "SELECT id, updated_at, changed_files FROM checkpoints WHERE mind = ? ORDER BY id"
REF_DECISIONS = ("SELECT id, updated_at, decision || ' ' || coalesce(rationale, '') AS t FROM decisions "
                 "WHERE mind = ? ORDER BY id")
REF_MEMORIES = "SELECT id, updated_at, content FROM memories WHERE mind = ? ORDER BY id"


class RefsQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def sources(self, mind: str) -> list[RefSource]:
        q = self._db.query
        out = [RefSource("lesson", r["id"], r["updated_at"], files=tuple(json.loads(r["files_affected"])))
               for r in q(REF_LESSONS, (mind,))]
        out += [RefSource("checkpoint", r["id"], r["updated_at"], files=tuple(json.loads(r["changed_files"])))
                for r in q(REF_CHECKPOINTS, (mind,))]
        out += [RefSource("decision", r["id"], r["updated_at"], text=r["t"]) for r in q(REF_DECISIONS, (mind,))]
        out += [RefSource("memory", r["id"], r["updated_at"], text=r["content"]) for r in q(REF_MEMORIES, (mind,))]
        return out


# -- recall: candidates and word statistics --------------------------------------------------------------------
COUNT_GATE_DOCS = "SELECT count(*) FROM gate_docs"
MIND_CANDIDATES = ("SELECT id, kind, mind, text, updated_at, expires_at FROM gate_candidates WHERE mind = ? "
                   "ORDER BY id")


class RecallQueries(RankingQueries):
    def __init__(self, db: Database) -> None:
        self._db = db

    def count(self) -> int:
        row = self._db.query_one(COUNT_GATE_DOCS)
        return int(row[0]) if row else 0

    def candidates(self, mind: str) -> list[Candidate]:
        return [Candidate(r["kind"], r["id"], r["mind"], r["text"], r["updated_at"], r["expires_at"])
                for r in self._db.query(MIND_CANDIDATES, (mind,))]

    def fetch(self, mind: str, ids_by_kind: Mapping[str, Iterable[str]]) -> list[Candidate]:
        out: list[Candidate] = []
        for kind in RANKED_KINDS:
            ids = sorted(set(ids_by_kind.get(kind, ())))
            exp = "t.expires_at" if kind == "memory" else "NULL"
            for chunk in _chunks(ids):
                rows = self._db.query(
                    f"SELECT t.id, t.mind, t.updated_at, {exp} AS expires_at, g.body FROM {TABLES[kind]} t "
                    f"JOIN gate_docs g ON g.rid = t.id WHERE +t.mind = ? AND t.id IN ({_marks(len(chunk))})",
                    (mind, *chunk))
                out += [Candidate(kind, r["id"], r["mind"], r["body"], r["updated_at"], r["expires_at"]) for r in rows]
        out.sort(key=lambda c: c.id)
        return out

    def doc_freq(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        rows = self._db.query(f"SELECT term, doc FROM gate_vocab_row WHERE term IN ({_marks(len(terms))})",
                              tuple(terms))
        return {r["term"]: int(r["doc"]) for r in rows}

    def tag_counts(self, mind: str, tags: Sequence[str]) -> dict[str, int]:
        if not tags:
            return {}
        rows = self._db.query(f"SELECT tag, count(*) AS n FROM tags WHERE tag IN ({_marks(len(tags))}) AND mind = ? "
                              "GROUP BY tag ORDER BY tag", (*tags, mind))
        return {r["tag"]: int(r["n"]) for r in rows}

    def tag_matches(self, mind: str, tags: Sequence[str]) -> list[tuple[str, str, int]]:
        if not tags:
            return []
        # each record's own number of tags (tags_rid): a tag names less of a record that carries many
        return [(r["rid"], r["tag"], int(r["n"])) for r in self._db.query(
            "SELECT t.rid AS rid, t.tag AS tag, (SELECT count(*) FROM tags u WHERE u.rid = t.rid) AS n FROM tags t "
            f"WHERE t.mind = ? AND t.tag IN ({_marks(len(tags))}) ORDER BY t.rid, t.tag", (mind, *tags))]

    def key_matches(self, mind: str, keys: Sequence[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for chunk in _chunks(list(keys), 400):
            for table, col in (("memories", "key"), ("notes", "name")):
                out += [(r["id"], r["name"]) for r in self._db.query(
                    f"SELECT id, {col} AS name FROM {table} WHERE mind = ? AND {col} IN ({_marks(len(chunk))}) "
                    "ORDER BY id",
                    (mind, *chunk))]
        return out

    # -- ranking (schema v3): gate_docs is the ranking table, rank_fts its FTS5 index (porter; body, context) --
    def bm25(self, mind: str, words: Sequence[str], *, depth: int, w_body: float = 1.0,
             w_context: float = 0.2) -> list[RankHit]:
        if not words or depth <= 0:
            return []
        # every word is a [^\W_]+ run (recall's analyser), so quoting is safe: FTS5 keywords are plain terms
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self._db.query(RANK_BM25, (w_body, w_context, match, mind, depth))
        return [RankHit(r[0], float(r[1])) for r in rows]

    def rank_count(self, mind: str) -> tuple[int, int]:
        row = self._db.query_one(RANK_COUNT, (mind,))
        return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)


# The mind filter reads the covering index gate_docs_mind (gid, mind, rid), never the rows with their text.
RANK_BM25 = ("SELECT d.rid, -bm25(rank_fts, ?, ?) AS s FROM rank_fts "
             "JOIN gate_docs d INDEXED BY gate_docs_mind ON d.gid = rank_fts.rowid "
             "WHERE rank_fts MATCH ? AND d.mind = ? ORDER BY s DESC, d.rid LIMIT ?")
RANK_COUNT = "SELECT sum(mind = ?), count(*) FROM gate_docs"

# -- the index outbox -------------------------------------------------------------------------------------------
OUTBOX_ANY = "SELECT 1 FROM index_outbox LIMIT 1"
OUTBOX_PENDING = "SELECT rid, seq FROM index_outbox ORDER BY seq LIMIT ?"
OUTBOX_ACK = "DELETE FROM index_outbox WHERE rid = ? AND seq = ?"
OUTBOX_HIGH_WATER = "SELECT coalesce(max(seq), 0) FROM index_outbox"
OUTBOX_ACK_THROUGH = "DELETE FROM index_outbox WHERE seq <= ?"
ALL_CANDIDATES = "SELECT id, kind, mind, text, updated_at, expires_at FROM gate_candidates ORDER BY id"


def _candidate(r: sqlite3.Row) -> Candidate:
    return Candidate(r["kind"], r["id"], r["mind"], r["text"], r["updated_at"], r["expires_at"])


class OutboxQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def has_pending(self) -> bool:
        return self._db.query_one(OUTBOX_ANY) is not None

    def wait(self, timeout: float) -> bool:
        """Poll :meth:`has_pending` every 50 ms until it is True or ``timeout`` seconds passed."""
        end = time.monotonic() + max(0.0, timeout)
        while not self.has_pending():
            if time.monotonic() >= end:
                return False
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
        return True

    def pending(self, limit: int) -> list[tuple[str, int]]:
        return [(r["rid"], int(r["seq"])) for r in self._db.query(OUTBOX_PENDING, (limit,))]

    def ack(self, entries: Sequence[tuple[str, int]]) -> None:
        with self._db.transaction() as c:
            c.executemany(OUTBOX_ACK, entries)

    def high_water(self) -> int:
        row = self._db.query_one(OUTBOX_HIGH_WATER)
        return int(row[0]) if row else 0

    def ack_through(self, seq: int) -> None:
        with self._db.transaction() as c:
            c.execute(OUTBOX_ACK_THROUGH, (seq,))

    def docs(self, ids: Sequence[str]) -> list[Candidate]:
        rows: list[sqlite3.Row] = []
        for chunk in _chunks(list(ids)):
            rows += self._db.query(f"SELECT id, kind, mind, text, updated_at, expires_at FROM gate_candidates "
                                   f"WHERE id IN ({_marks(len(chunk))})", tuple(chunk))
        return [_candidate(r) for r in rows]

    def all_docs(self) -> Iterator[Candidate]:
        return (_candidate(r) for r in self._db.iter_query(ALL_CANDIDATES))


# -- export / import -------------------------------------------------------------------------------------------
def _columns_json(kind: str, doc: Mapping[str, Any]) -> list[Any]:
    """An export document's values in :data:`EXPORT_FIELDS` order, JSON fields as stored JSON text."""
    json_fields = JSON_FIELDS[kind]
    return [None if doc[f] is None else json.dumps(doc[f], sort_keys=True, ensure_ascii=False)
            if f in json_fields else doc[f] for f in EXPORT_FIELDS[kind]]


class TransferQueries:
    def __init__(self, db: Database, tables: Mapping[str, _Table[Any]]) -> None:
        self._db = db
        self._tables = tables

    def rows(self, kind: str) -> Iterator[dict[str, Any]]:
        json_fields = JSON_FIELDS[kind]
        for row in self._db.query(f"SELECT * FROM {TABLES[kind]} ORDER BY id"):
            yield {k: json.loads(row[k]) if k in json_fields and row[k] is not None else row[k] for k in row.keys()}

    def to_record(self, kind: str, doc: Mapping[str, Any]) -> Record:
        values = dict(zip(EXPORT_FIELDS[kind], _columns_json(kind, doc), strict=True))
        if kind == "memory":
            prio, ver = values["priority"], values["verified"]
            if isinstance(prio, bool) or prio not in range(len(PRIORITIES)):
                raise ValidationError(f"priority {prio!r} must be 0 (critical) to 3 (low)")
            if ver not in (0, 1) or isinstance(ver, float):
                raise ValidationError(f"verified {ver!r} must be 0 or 1")
        for f in JSON_FIELDS[kind]:
            v = doc[f]
            if f == "revert_commit":
                if v is not None and not isinstance(v, dict):
                    raise ValidationError(f"{f} must be an object or null, got {v!r}")
            elif not isinstance(v, list):
                raise ValidationError(f"{f} must be a list, got {v!r}")
        try:
            # export documents are rows: the table's own mapping reads them (no view: the stored status is kept)
            return self._tables[kind]._from_row(values, "")  # type: ignore[arg-type,no-any-return]
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            raise ValidationError(f"malformed {kind} fields: {exc}") from None

    def insert(self, kind: str, doc: Mapping[str, Any]) -> bool:
        table = TABLES[kind]
        cols = EXPORT_FIELDS[kind]
        values = _columns_json(kind, doc)
        with self._db.transaction() as c:
            existing = c.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE id = ?", (doc["id"],)).fetchone()
            if existing is not None:
                if list(existing) == values:
                    return False
                raise ConflictError(f"{kind} {doc['id']} already exists with different content")
            try:
                c.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({_marks(len(cols))})", values)
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"{kind} {doc['id']} conflicts with the vault ({exc})") from None
            self._db.touched(kind, doc["id"])
        return True

    def advance_clock(self, ts: str) -> None:
        self._db.advance_clock(ts)

