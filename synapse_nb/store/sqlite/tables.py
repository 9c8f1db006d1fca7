"""One repository per kind table: every statement on ``memories``, ``checkpoints``, ``decisions``, ``lessons``,
``episodes`` and ``notes``, and the mapping between their rows and the model records.

Statements that never change are named constants; listings compose a ``WHERE`` from fixed fragments whose
``$`` stands for the table (``$id`` is ``id`` in a plain listing and ``t.id`` in a full-text search). No caller
text ever becomes SQL: values are always bound parameters, and search text goes through :func:`fts_query`.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from synapse_nb.models import PRIORITIES, Checkpoint, Decision, Episode, Lesson, Memory, Note, Record
from synapse_nb.store.records import MemoryCounts, MemoryFilter, View
from synapse_nb.text import MAX_FTS_QUERY_TERMS, fts_query_terms

if TYPE_CHECKING:
    from synapse_nb.store.sqlite.db import Database

__all__ = ["CheckpointsTable", "DecisionsTable", "EpisodesTable", "LessonsTable", "MemoriesTable", "NotesTable",
           "fts_query"]

R = TypeVar("R", bound=Record)

#: Most words taken from a search query (the rest are ignored).
MAX_QUERY_TERMS = MAX_FTS_QUERY_TERMS
_PRIO_RANK = {p: i for i, p in enumerate(PRIORITIES)}
#: Most ids bound in one statement of :meth:`_Table.get_many`.
MAX_IDS = 500


def fts_query(text: str) -> str | None:
    """Turn arbitrary user text into a safe FTS5 query: every word quoted, all required.

    Operators, quotes, parentheses and column filters in the input are treated as plain text; ``None`` when the
    text holds no word at all.

    >>> fts_query('deploy "prod" OR NOT x*')
    '"deploy" "prod" "or" "not" "x"'
    """
    words = fts_query_terms(text, MAX_QUERY_TERMS)
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


def dumps(value: Any) -> str:
    """A JSON column value: sorted keys, Unicode kept readable."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def loads(value: str | None, default: Any) -> Any:
    return default if value is None else json.loads(value)


def _json_list(v: Any) -> str:
    return dumps([list(x) if isinstance(x, tuple) else x for x in v])


def _same(v: Any) -> Any:
    return v


class _Table(Generic[R]):
    """Statements every kind table shares. Subclasses name the table, its order and its row mapping."""

    kind: ClassVar[str] = ""
    table: ClassVar[str] = ""
    #: ORDER BY of :meth:`list`
    order_by: ClassVar[str] = "created_at DESC, id DESC"
    #: record field -> (column, encoder) for :meth:`update`
    columns: ClassVar[dict[str, tuple[str, Callable[[Any], Any]]]] = {}
    insert_sql: ClassVar[str] = ""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._update_sql: dict[tuple[str, ...], str] = {}  # UPDATE statements by the fields they set

    # subclasses map rows and records
    def _from_row(self, r: sqlite3.Row, now: str) -> R:  # pragma: no cover - abstract
        raise NotImplementedError

    def _params(self, rec: R) -> tuple[Any, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _visible(self, view: View) -> tuple[str, tuple[Any, ...]]:
        """Extra WHERE fragment and parameters limiting what a view reads."""
        return "1", ()

    def _select(self, view: View, where: str = "1", params: tuple[Any, ...] = (), *, order: str | None = None,
                limit: int | None = None, by_id: bool = False) -> builtins.list[R]:
        vis, vparams = self._visible(view)
        # by_id: ``where`` names ids, so the primary key finds the rows and mind is checked per row (+mind). Left to
        # choose, SQLite's planner weighs every index on mind against the id list: preparing "mind = ? AND id IN
        # (...)" took 2-3 ms on memories (0.07 ms with +mind), paid whenever a new list length is prepared
        mind = "+mind" if by_id else "mind"
        sql = (f"SELECT * FROM {self.table} WHERE {mind} = ? AND ({vis}) AND ({where}) "
               f"ORDER BY {order or self.order_by}").replace("$", "")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self._from_row(r, view.now) for r in self._db.query(sql, (view.mind, *vparams, *params))]

    def _match(self, view: View, text: str, where: str, params: tuple[Any, ...], limit: int) -> builtins.list[R]:
        match = fts_query(text)
        if match is None:
            return self._select(view, where, params, limit=limit)
        vis, vparams = self._visible(view)
        t = self.table
        sql = (f"SELECT t.* FROM {t}_fts f JOIN {t} t ON t.rowid = f.rowid WHERE {t}_fts MATCH ? AND t.mind = ? "
               f"AND ({vis}) AND ({where}) ORDER BY f.rank, t.updated_at DESC, t.id LIMIT {int(limit)}"
               ).replace("$", "t.")
        return [self._from_row(r, view.now) for r in self._db.query(sql, (match, view.mind, *vparams, *params))]

    # -- reads --------------------------------------------------------------------------------------------------
    def get(self, view: View, id: str) -> R | None:
        rows = self._select(view, "$id = ?", (id,), by_id=True)
        return rows[0] if rows else None

    def get_many(self, view: View, ids: Iterable[str]) -> dict[str, R]:
        want = sorted(set(ids))
        out: dict[str, R] = {}
        for start in range(0, len(want), MAX_IDS):
            chunk = want[start:start + MAX_IDS]
            out.update((r.id, r) for r in self._select(view, f"$id IN ({','.join('?' * len(chunk))})", tuple(chunk),
                                                       order="$id", by_id=True))
        return out

    def mind_of(self, id: str) -> str | None:
        row = self._db.query_one(f"SELECT mind FROM {self.table} WHERE id = ?", (id,))
        return None if row is None else str(row["mind"])

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> builtins.list[str]:
        rows = self._db.query(  # the primary key drives the range scan; mind is checked per row (+mind)
            f"SELECT id FROM {self.table} WHERE id >= ? AND id < ? AND +mind = ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\U0010ffff", mind, int(limit)))
        return [r["id"] for r in rows]

    def list(self, view: View, *, limit: int | None = None) -> builtins.list[R]:
        return self._select(view, limit=limit)

    def count(self, view: View) -> int:
        vis, vparams = self._visible(view)
        row = self._db.query_one(f"SELECT count(*) FROM {self.table} WHERE mind = ? AND ({vis})".replace("$", ""),
                                 (view.mind, *vparams))
        return int(row[0]) if row else 0

    def search(self, view: View, text: str, *, limit: int) -> builtins.list[R]:
        return self._match(view, text, "1", (), limit)

    # -- writes -------------------------------------------------------------------------------------------------
    def insert(self, record: R) -> None:
        self._db.write(self.insert_sql, self._params(record), (self.kind, record.id, False))

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        names = tuple(changes)
        sql = self._update_sql.get(names)
        if sql is None:
            unknown = [n for n in names if n not in self.columns]
            if unknown:
                raise TypeError(f"{self.kind} has no updatable field {unknown[0]!r}")
            sets = ", ".join([*(f"{self.columns[n][0]} = ?" for n in names), "updated_at = ?"])
            sql = self._update_sql[names] = f"UPDATE {self.table} SET {sets} WHERE id = ?"
        params = [self.columns[n][1](v) for n, v in changes.items()]
        self._db.write(sql, (*params, updated_at, id), (self.kind, id, False))

    def delete(self, id: str) -> None:
        self._db.write(f"DELETE FROM {self.table} WHERE id = ?", (id,), (self.kind, id, True))


# -- memories -------------------------------------------------------------------------------------------------
INSERT_MEMORY = ("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, confidence, "
                 "expires_at, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")
MEMORY_BY_KEY = "SELECT * FROM memories WHERE mind = ? AND category = ? AND key = ?"
MEMORY_STATS = ("SELECT count(*) AS n, sum(verified) AS v, sum(expires_at IS NOT NULL AND expires_at <= ?) AS e "
                "FROM memories WHERE mind = ?")
EXPIRED_MEMORIES = "SELECT id FROM memories WHERE mind = ? AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY id"
DELETE_EXPIRED_MEMORIES = "DELETE FROM memories WHERE mind = ? AND expires_at IS NOT NULL AND expires_at <= ?"
#: MemoryTable.page orders: name -> ORDER BY (the id always breaks ties, so a page is stable).
PAGE_ORDER = {
    "priority": "t.priority {asc}, t.updated_at {desc}",
    "updated": "t.updated_at {asc}",
    "created": "t.created_at {asc}",
    "category": "t.category {asc}, t.key {asc}",
    "key": "t.key {asc}",
    "content": "t.content {asc}",
    "verified": "t.verified {asc}, t.updated_at {desc}",
    "source": "t.source {asc}, t.updated_at {desc}",
    "expires": "t.expires_at IS NULL {asc}, t.expires_at {asc}",  # never-expiring last (first reversed)
    "id": "t.id {asc}",
}


def _memory_where(view: View, f: MemoryFilter) -> tuple[str, tuple[Any, ...]]:
    where: list[str] = ["1"]
    params: list[Any] = []
    if f.unexpired:
        where.append("($expires_at IS NULL OR $expires_at > ?)")
        params.append(view.now)
    if f.tag is not None:
        where.append("$id IN (SELECT rid FROM tags WHERE tag = ? AND kind = 'memory')")
        params.append(f.tag)
    if f.category is not None:
        where.append("$category = ?")
        params.append(f.category)
    if f.priority is not None:
        where.append("$priority = ?")
        params.append(_PRIO_RANK[f.priority])
    if f.verified is not None:
        where.append("$verified = ?")
        params.append(int(f.verified))
    if f.source is not None:
        where.append("$source = ?")
        params.append(f.source)
    return " AND ".join(where[1:] or where), tuple(params)


class MemoriesTable(_Table[Memory]):
    kind = "memory"
    table = "memories"
    order_by = "priority ASC, updated_at DESC, id DESC"
    insert_sql = INSERT_MEMORY
    columns = {"content": ("content", _same), "tags": ("tags", _json_list), "source": ("source", _same),
               "priority": ("priority", _PRIO_RANK.__getitem__), "verified": ("verified", int),
               "confidence": ("confidence", _same), "expires_at": ("expires_at", _same)}

    def _from_row(self, r: sqlite3.Row, now: str = "") -> Memory:
        return Memory(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
            category=r["category"], key=r["key"], content=r["content"], tags=tuple(loads(r["tags"], [])),
            priority=PRIORITIES[r["priority"]], source=r["source"], verified=bool(r["verified"]),
            confidence=float(r["confidence"]), expires_at=r["expires_at"],
        )

    def _params(self, m: Memory) -> tuple[Any, ...]:
        return (m.id, m.mind, m.category, m.key, m.content, dumps(list(m.tags)), _PRIO_RANK[m.priority], m.source,
                int(m.verified), m.confidence, m.expires_at, m.created_at, m.updated_at)

    def by_key(self, mind: str, category: str, key: str) -> Memory | None:
        row = self._db.query_one(MEMORY_BY_KEY, (mind, category, key))
        return None if row is None else self._from_row(row)

    def list(self, view: View, *, where: MemoryFilter = MemoryFilter(),
             limit: int | None = None) -> builtins.list[Memory]:
        return self._select(view, *_memory_where(view, where), limit=limit)

    def search(self, view: View, text: str, *, where: MemoryFilter = MemoryFilter(),
               limit: int) -> builtins.list[Memory]:
        return self._match(view, text, *_memory_where(view, where), limit)

    def count(self, view: View, *, where: MemoryFilter = MemoryFilter()) -> int:
        cond, params = _memory_where(view, where)
        row = self._db.query_one(f"SELECT count(*) FROM memories WHERE mind = ? AND ({cond})".replace("$", ""),
                                 (view.mind, *params))
        return int(row[0]) if row else 0

    def page(self, view: View, text: str, *, where: MemoryFilter, sort: str | None, descending: bool, offset: int,
             limit: int) -> tuple[builtins.list[Memory], int]:
        cond, fparams = _memory_where(view, where)
        conds = ["t.mind = ?", cond.replace("$", "t.")]
        params: list[Any] = [view.mind, *fparams]
        match = fts_query(text)
        source_sql = "memories t"
        if match is not None:
            # CROSS JOIN keeps the FTS match as the outer loop (else SQLite may probe the FTS once per row)
            source_sql = "memories_fts f CROSS JOIN memories t ON t.rowid = f.rowid"
            conds.insert(0, "memories_fts MATCH ?")
            params.insert(0, match)
        if sort is None:
            order = "f.rank, t.updated_at DESC" if match is not None else "t.priority ASC, t.updated_at DESC"
        else:
            asc, desc = ("DESC", "ASC") if descending else ("ASC", "DESC")
            order = PAGE_ORDER[sort].format(asc=asc, desc=desc)
        if sort != "id":
            order += ", t.id ASC"
        sql_where = " AND ".join(c for c in conds if c != "1")
        row = self._db.query_one(f"SELECT count(*) FROM {source_sql} WHERE {sql_where}", tuple(params))
        total = int(row[0]) if row else 0
        rows = self._db.query(f"SELECT t.* FROM {source_sql} WHERE {sql_where} ORDER BY {order} LIMIT ? OFFSET ?",
                              (*params, limit, offset))
        return [self._from_row(r) for r in rows], total

    def expiring(self, mind: str, after: str, until: str) -> builtins.list[Memory]:
        return self._select(View(mind, after), "expires_at IS NOT NULL AND expires_at > ? AND expires_at <= ?",
                            (after, until), order="expires_at ASC, id ASC")

    def stats(self, mind: str, now: str) -> MemoryCounts:
        row = self._db.query_one(MEMORY_STATS, (now, mind))
        n, ver, exp = (int(row["n"] or 0), int(row["v"] or 0), int(row["e"] or 0)) if row else (0, 0, 0)
        return MemoryCounts(total=n, verified=ver, expired=exp)

    def delete_expired(self, mind: str, now: str) -> tuple[str, ...]:
        with self._db.transaction() as c:
            ids = tuple(r[0] for r in c.execute(EXPIRED_MEMORIES, (mind, now)))
            c.execute(DELETE_EXPIRED_MEMORIES, (mind, now))
            for i in ids:
                self._db.touched("memory", i, deleted=True)
        return ids


# -- checkpoints ----------------------------------------------------------------------------------------------
class CheckpointsTable(_Table[Checkpoint]):
    kind = "checkpoint"
    table = "checkpoints"
    insert_sql = ("INSERT INTO checkpoints(id, mind, branch, commit_sha, doing, changed_files, next_step, blockers, "
                  "origin, source, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")
    columns = {"changed_files": ("changed_files", _json_list)}

    def _from_row(self, r: sqlite3.Row, now: str = "") -> Checkpoint:
        return Checkpoint(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"], doing=r["doing"],
            changed_files=tuple(loads(r["changed_files"], [])), next_step=r["next_step"], blockers=r["blockers"],
            branch=r["branch"], commit=r["commit_sha"], origin=r["origin"], source=r["source"],
        )

    def _params(self, c: Checkpoint) -> tuple[Any, ...]:
        return (c.id, c.mind, c.branch, c.commit, c.doing, dumps(list(c.changed_files)), c.next_step, c.blockers,
                c.origin, c.source, c.created_at, c.updated_at)

    def latest(self, view: View, branch: str | None) -> Checkpoint | None:
        rows = self._select(view, "$branch IS ?", (branch,), limit=1)
        return rows[0] if rows else None

    def list(self, view: View, *, branch: str | None = None, limit: int | None = None) -> builtins.list[Checkpoint]:
        if branch is None:
            return self._select(view, limit=limit)
        return self._select(view, "$branch = ?", (branch,), limit=limit)


# -- decisions ------------------------------------------------------------------------------------------------
class DecisionsTable(_Table[Decision]):
    kind = "decision"
    table = "decisions"
    insert_sql = ("INSERT INTO decisions(id, mind, decision, rationale, tags, branch, commit_sha, source, created_at, "
                  "updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)")

    def _from_row(self, r: sqlite3.Row, now: str = "") -> Decision:
        return Decision(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
            decision=r["decision"], rationale=r["rationale"], tags=tuple(loads(r["tags"], [])), branch=r["branch"],
            commit=r["commit_sha"], source=r["source"],
        )

    def _params(self, d: Decision) -> tuple[Any, ...]:
        return (d.id, d.mind, d.decision, d.rationale, dumps(list(d.tags)), d.branch, d.commit, d.source,
                d.created_at, d.updated_at)

    def search(self, view: View, text: str, *, tag: str | None = None, limit: int) -> builtins.list[Decision]:
        if tag is None:
            return self._match(view, text, "1", (), limit)
        return self._match(view, text, "$id IN (SELECT rid FROM tags WHERE tag = ? AND kind = 'decision')", (tag,),
                           limit)


# -- lessons --------------------------------------------------------------------------------------------------
_EFFECTIVE = "(CASE WHEN $status = 'approved' AND $expires_at <= ? THEN 'expired' ELSE $status END)"
LESSON_FOR_REVERT = "SELECT 1 FROM lessons WHERE mind = ? AND revert_sha = ?"
LESSON_ANALYSIS_STATE = "SELECT status, analysis_by FROM lessons WHERE id = ?"
LESSON_STATUS_COUNTS = ("SELECT CASE WHEN status = 'approved' AND expires_at <= ? THEN 'expired' ELSE status END AS s, "
                        "count(*) AS n FROM lessons WHERE mind = ? GROUP BY s ORDER BY s")
LESSONS_EXPIRING = ("SELECT id FROM lessons WHERE mind = ? AND status = 'approved' AND expires_at > ? AND "
                    "expires_at <= ? ORDER BY expires_at, id")
LESSONS_RUN_OUT = "SELECT id FROM lessons WHERE mind = ? AND status = 'approved' AND expires_at <= ? ORDER BY id"
EXPIRE_LESSONS = ("UPDATE lessons SET status = 'expired', updated_at = ? WHERE mind = ? AND status = 'approved' "
                  "AND expires_at <= ?")


def _commit_json(v: dict[str, Any] | None) -> str | None:
    return json.dumps(v, sort_keys=True) if v else None


class LessonsTable(_Table[Lesson]):
    kind = "lesson"
    table = "lessons"
    insert_sql = ("INSERT INTO lessons(id, mind, status, summary, branch, revert_sha, revert_commit, reverted_commits, "
                  "files_affected, diffstat, analysis, analysis_by, lesson_text, approved_at, expires_at, source, "
                  "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
    columns = {"status": ("status", _same), "lesson_text": ("lesson_text", _same),
               "approved_at": ("approved_at", _same), "expires_at": ("expires_at", _same),
               "analysis": ("analysis", _same), "analysis_by": ("analysis_by", _same),
               "files_affected": ("files_affected", _json_list)}

    def _visible(self, view: View) -> tuple[str, tuple[Any, ...]]:
        if view.in_force_only:
            return "$status = 'approved' AND $expires_at > ?", (view.now,)
        return "1", ()

    def _from_row(self, r: sqlite3.Row, now: str) -> Lesson:
        status = r["status"]
        if status == "approved" and r["expires_at"] is not None and r["expires_at"] <= now:
            status = "expired"
        return Lesson(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"], status=status,
            summary=r["summary"], branch=r["branch"], revert_commit=loads(r["revert_commit"], None),
            reverted_commits=tuple(loads(r["reverted_commits"], [])),
            files_affected=tuple(loads(r["files_affected"], [])),
            diffstat=tuple(tuple(x) for x in loads(r["diffstat"], [])), analysis=r["analysis"],
            analysis_by=r["analysis_by"], lesson_text=r["lesson_text"], approved_at=r["approved_at"],
            expires_at=r["expires_at"], source=r["source"],
        )

    def _params(self, x: Lesson) -> tuple[Any, ...]:
        rc = x.revert_commit
        return (x.id, x.mind, x.status, x.summary, x.branch, rc["sha"] if rc else None, _commit_json(rc),
                dumps(list(x.reverted_commits)), dumps(list(x.files_affected)), _json_list(x.diffstat), x.analysis,
                x.analysis_by, x.lesson_text, x.approved_at, x.expires_at, x.source, x.created_at, x.updated_at)

    def list(self, view: View, *, status: str | None = None, limit: int | None = None) -> builtins.list[Lesson]:
        if status is None:
            return self._select(view, limit=limit)
        return self._select(view, f"{_EFFECTIVE} = ?", (view.now, status),
                            order="approved_at DESC, id DESC" if status == "approved" else None, limit=limit)

    def has_revert(self, mind: str, sha: str) -> bool:
        return self._db.query_one(LESSON_FOR_REVERT, (mind, sha)) is not None

    def analysis_state(self, id: str) -> tuple[str, str | None] | None:
        row = self._db.query_one(LESSON_ANALYSIS_STATE, (id,))
        return None if row is None else (row["status"], row["analysis_by"])

    def status_counts(self, mind: str, now: str) -> dict[str, int]:
        return {r["s"]: int(r["n"]) for r in self._db.query(LESSON_STATUS_COUNTS, (now, mind))}

    def expiring(self, mind: str, after: str, until: str) -> tuple[str, ...]:
        return tuple(r["id"] for r in self._db.query(LESSONS_EXPIRING, (mind, after, until)))

    def expire(self, mind: str, now: str, updated_at: str) -> tuple[str, ...]:
        with self._db.transaction() as c:
            ids = tuple(r[0] for r in c.execute(LESSONS_RUN_OUT, (mind, now)))
            c.execute(EXPIRE_LESSONS, (updated_at, mind, now))
            for i in ids:
                self._db.touched("lesson", i)
        return ids


# -- episodes -------------------------------------------------------------------------------------------------
class EpisodesTable(_Table[Episode]):
    kind = "episode"
    table = "episodes"
    insert_sql = ("INSERT INTO episodes(id, mind, task_key, status, outcome, refs, duration_s, source, created_at, "
                  "updated_at, thread, seq, actor) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")

    def _from_row(self, r: sqlite3.Row, now: str = "") -> Episode:
        return Episode(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
            task_key=r["task_key"], status=r["status"], outcome=r["outcome"], refs=tuple(loads(r["refs"], [])),
            duration_s=r["duration_s"], source=r["source"], thread=r["thread"], seq=r["seq"], actor=r["actor"],
        )

    def _params(self, e: Episode) -> tuple[Any, ...]:
        return (e.id, e.mind, e.task_key, e.status, e.outcome, dumps(list(e.refs)), e.duration_s, e.source,
                e.created_at, e.updated_at, e.thread, e.seq, e.actor)

    def next_seq(self, mind: str, thread: str) -> int:
        row = self._db.query_one("SELECT max(seq) FROM episodes WHERE mind = ? AND thread = ?", (mind, thread))
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def last(self, view: View, task_key: str) -> Episode | None:
        rows = self._select(view, "$task_key = ?", (task_key,), limit=1)
        return rows[0] if rows else None

    def history(self, view: View, task_key: str | None, *, limit: int | None) -> builtins.list[Episode]:
        if task_key is None:
            return self._select(view, limit=limit)
        return self._select(view, "$task_key = ?", (task_key,), limit=limit)


# -- notes ----------------------------------------------------------------------------------------------------
class NotesTable(_Table[Note]):
    kind = "note"
    table = "notes"
    order_by = "name ASC, id ASC"  # names are unique per mind; the id ends every order
    insert_sql = ("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at) "
                  "VALUES (?,?,?,?,?,?,?,?)")
    columns = {"trigger": ("trigger", _same), "body": ("body", _same), "source": ("source", _same)}

    def _from_row(self, r: sqlite3.Row, now: str = "") -> Note:
        return Note(id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
                    name=r["name"], trigger=r["trigger"], body=r["body"], source=r["source"])

    def _params(self, n: Note) -> tuple[Any, ...]:
        return (n.id, n.mind, n.name, n.trigger, n.body, n.source, n.created_at, n.updated_at)

    def by_name(self, view: View, name: str) -> Note | None:
        rows = self._select(view, "$name = ?", (name,))
        return rows[0] if rows else None
