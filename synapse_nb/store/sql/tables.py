"""One repository per kind table, written once for both backends: every statement on ``memories``,
``checkpoints``, ``decisions``, ``lessons``, ``episodes`` and ``notes``, and the mapping between their rows and
the model records.

Statements that never change are named constants; listings compose a ``WHERE`` from fixed fragments whose
``$`` stands for the table (``$id`` is ``id`` in a plain listing and ``t.id`` in a full-text search). No caller
text ever becomes SQL: values are always bound parameters, and search text becomes one bound value through the
backend's dialect (:meth:`~synapse_nb.store.sql.dialect.Dialect.search_query`). Each table's name and columns
come from the registry (:data:`synapse_nb.models.KINDS`); what a backend says its own way (lists of ids, the
planner's hints, full-text search, derived columns) from its dialect.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from synapse_nb.models import (
    KIND_BY_NAME,
    PRIORITIES,
    Checkpoint,
    Decision,
    Episode,
    Lesson,
    Memory,
    Note,
    Record,
    past_agent_limits,
)
from synapse_nb.store.records import MemoryCounts, MemoryFilter, View
from synapse_nb.store.sql import decode as dec
from synapse_nb.store.sql import lesson_sql
from synapse_nb.store.sql.authors import people
from synapse_nb.store.sql.connection import D, Fields, Repository
from synapse_nb.store.sql.dialect import ALWAYS

__all__ = ["CheckpointsTable", "DecisionsTable", "EpisodesTable", "LessonsTable", "MAX_IDS", "MemoriesTable",
           "NotesTable", "PAGE_ORDER", "PRIORITY_RANK", "Table", "dumps"]

R = TypeVar("R", bound=Record)
#: A record field's value as its column stores it.
Encoder = Callable[[Any], Any]
#: Record field -> (column, encoder): the fields :meth:`Table.update` sets.
Columns = Mapping[str, tuple[str, Encoder]]

#: A priority's stored number (critical 0 ... low 3: the default order sorts by it).
PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}
#: Most ids bound in one statement of :meth:`Table.get_many` (a backend binding a list as one value uses one).
MAX_IDS = 500


def dumps(value: Any) -> str:
    """A JSON column value: sorted keys, Unicode kept readable."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _base(r: Fields) -> dict[str, Any]:
    """The fields every record has, as text whatever the row holds (:mod:`~synapse_nb.store.sql.decode`)."""
    return {"id": r["id"], "mind": r["mind"], "created_at": dec.stamp(r["created_at"]),
            "updated_at": dec.stamp(r["updated_at"])}


def _json_list(v: Any) -> str:
    return dumps([list(x) if isinstance(x, tuple) else x for x in v])


def _as_is(v: Any) -> Any:
    return v


class Table(Repository[D], Generic[R, D]):
    """Statements every kind table shares. Subclasses name their kind, their order and their row mapping."""

    kind: ClassVar[str] = ""
    #: the kind's table and columns (from the registry)
    table: ClassVar[str] = ""
    fields: ClassVar[tuple[str, ...]] = ()
    #: ORDER BY of :meth:`list`
    order_by: ClassVar[str] = "created_at DESC, id DESC"
    #: record field -> (column, encoder) for :meth:`update`
    columns: ClassVar[Columns] = {}
    #: the rows that stand as a person's (``authors.people``: ``provenance.human_record`` in SQL, set per kind by
    #: ``__init_subclass__``): :meth:`_match` reads them apart from agents' and first
    people: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.kind:
            cls.table, cls.fields = KIND_BY_NAME[cls.kind].table, KIND_BY_NAME[cls.kind].fields
            cls.people = people(cls.kind, "$")

    def __init__(self, db: D) -> None:
        super().__init__(db)
        self._cols = db.dialect.columns(self.fields)  # a record's columns, read
        self._tcols = db.dialect.columns(self.fields, "t")
        self._derived = db.dialect.derived_columns(self.kind)
        cols = [*self.fields, *(x.column for x in self._derived)]
        values = ["?"] * len(self.fields) + [x.value for x in self._derived]
        self._insert_sql = f"INSERT INTO {self.table}({', '.join(cols)}) VALUES ({','.join(values)})"
        self._update_sql: dict[tuple[tuple[str, ...], bool], str] = {}  # by the fields they set, terms or not

    # -- the row <-> record mapping (each kind its own) ----------------------------------------------------------
    def from_row(self, r: Fields, now: str = "") -> R:  # pragma: no cover - abstract
        """The record a row (or an export document) holds; ``now``: when a lesson's effective status is judged."""
        raise NotImplementedError

    def to_row(self, record: R) -> tuple[Any, ...]:  # pragma: no cover - abstract
        """A record's column values, in :attr:`fields` order."""
        raise NotImplementedError

    def _visible(self, view: View) -> tuple[str, tuple[Any, ...]]:
        """Extra WHERE fragment and parameters limiting what a view reads."""
        return ALWAYS, ()

    def _select(self, view: View, where: str = ALWAYS, params: tuple[Any, ...] = (), *, order: str | None = None,
                limit: int | None = None, by_id: bool = False) -> builtins.list[R]:
        vis, vparams = self._visible(view)
        # by_id: ``where`` names ids, so the primary key finds the rows and mind is checked per row. Left to choose,
        # SQLite's planner weighs every index on mind against the id list: preparing "mind = ? AND id IN (...)" took
        # 2-3 ms on memories (0.07 ms with +mind), paid whenever a new list length is prepared
        mind = self._db.dialect.unindexed("mind") if by_id else "mind"
        sql = (f"SELECT {self._cols} FROM {self.table} WHERE {mind} = ? AND ({vis}) AND ({where}) "
               f"ORDER BY {order or self.order_by}").replace("$", "")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self.from_row(r, view.now) for r in self._db.query(sql, (view.mind, *vparams, *params))]

    def _match(self, view: View, text: str, where: str, params: tuple[Any, ...], limit: int) -> builtins.list[R]:
        """A search's records: people's first (:attr:`people`), then agents' in what the limit leaves, each part
        best match first. Ranked together, 101 agent memories saying "deploy deploy deploy" took every place of a
        search for "deploy" at any limit (12 at the default 10), and a person's verified memory was in none (review
        71: the MCP ``search`` tool and the CLI's searches; recall keeps people their room apart already)."""
        out = self._match_part(view, text, f"({where}) AND ({self.people})", params, limit)
        if len(out) < limit:  # IS NOT TRUE: a row whose columns hold NULL is an agent's, never left out
            out += self._match_part(view, text, f"({where}) AND ({self.people}) IS NOT TRUE", params,
                                    limit - len(out))
        return out

    def _match_part(self, view: View, text: str, where: str, params: tuple[Any, ...],
                    limit: int) -> builtins.list[R]:
        dialect = self._db.dialect
        query = dialect.search_query(text)
        if query is None:
            return self._select(view, where, params, limit=limit)
        vis, vparams = self._visible(view)
        s = dialect.search(self.table)
        sql = (f"SELECT {self._tcols} FROM {s.source} WHERE {s.condition} AND t.mind = ? AND ({vis}) AND ({where}) "
               f"ORDER BY {s.rank}, t.updated_at DESC, t.id LIMIT {int(limit)}").replace("$", "t.")
        return [self.from_row(r, view.now) for r in self._db.query(sql, (query, view.mind, *vparams, *params))]

    # -- reads --------------------------------------------------------------------------------------------------
    def get(self, view: View, id: str) -> R | None:
        rows = self._select(view, "$id = ?", (id,), by_id=True)
        return rows[0] if rows else None

    def get_many(self, view: View, ids: Iterable[str]) -> dict[str, R]:
        dialect = self._db.dialect
        out: dict[str, R] = {}
        for batch in dialect.batches(sorted(set(ids)), MAX_IDS):
            cond, params = dialect.is_in("$id", batch)
            out.update((r.id, r) for r in self._select(view, cond, params, order="$id", by_id=True))
        return out

    def mind_of(self, id: str) -> str | None:
        row = self._db.query_one(f"SELECT mind FROM {self.table} WHERE id = ?", (id,))
        return None if row is None else str(row["mind"])

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> builtins.list[str]:
        rows = self._db.query(  # the primary key drives the range scan; mind is checked per row
            f"SELECT id FROM {self.table} WHERE id >= ? AND id < ? AND {self._db.dialect.unindexed('mind')} = ? "
            "ORDER BY id LIMIT ?", (prefix, prefix + "\U0010ffff", mind, int(limit)))
        return [r["id"] for r in rows]

    def list(self, view: View, *, limit: int | None = None) -> builtins.list[R]:
        return self._select(view, limit=limit)

    def agents_before(self, view: View, before: str) -> builtins.list[R]:
        """The agents' records no person took on (a memory: unverified), last changed before ``before``."""
        unverified = " AND $verified = 0" if self.kind == "memory" else ""
        return self._select(view, f"$source = 'agent'{unverified} AND $updated_at < ?", (before,))

    def count(self, view: View) -> int:
        vis, vparams = self._visible(view)
        row = self._db.query_one(f"SELECT count(*) FROM {self.table} WHERE mind = ? AND ({vis})".replace("$", ""),
                                 (view.mind, *vparams))
        return int(row[0]) if row else 0

    def search(self, view: View, text: str, *, limit: int) -> builtins.list[R]:
        return self._match(view, text, ALWAYS, (), limit)

    # -- writes -------------------------------------------------------------------------------------------------
    def insert(self, record: R) -> None:
        self.insert_row(record.id, self.to_row(record))

    def insert_row(self, id: str, values: tuple[Any, ...]) -> None:
        """Insert a record given as its column values (:attr:`fields` order, as stored), with the columns the
        backend derives from them."""
        if self._derived:
            values += self._db.dialect.derived_values(self.kind, dict(zip(self.fields, values, strict=True)))
        self._db.write(self._insert_sql, values, (self.kind, id, False))

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        names = tuple(changes)
        unknown = [n for n in names if n not in self.columns]
        if unknown:
            raise TypeError(f"{self.kind} has no updatable field {unknown[0]!r}")
        values = [self.columns[n][1](v) for n, v in changes.items()]
        if not self._derived:
            self._db.write(self._update_statement(names, False), (*values, updated_at, id), (self.kind, id, False))
            return
        with self._db.transaction():  # the derived columns follow the record as it is after the update
            derived: tuple[Any, ...] = ()
            row = self._db.query_one(f"SELECT {self._cols} FROM {self.table} WHERE id = ?", (id,))
            if row is not None:
                stored = {f: row[f] for f in self.fields}
                stored.update((self.columns[n][0], v) for n, v in zip(names, values, strict=True))
                derived = self._db.dialect.derived_values(self.kind, stored)
            self._db.write(self._update_statement(names, bool(derived)), (*values, updated_at, *derived, id),
                           (self.kind, id, False))

    def _update_statement(self, names: tuple[str, ...], derived: bool) -> str:
        sql = self._update_sql.get((names, derived))
        if sql is None:
            sets = [*(f"{self.columns[n][0]} = ?" for n in names), "updated_at = ?"]
            sets += [f"{x.column} = {x.value}" for x in self._derived] if derived else []
            sql = self._update_sql[(names, derived)] = f"UPDATE {self.table} SET {', '.join(sets)} WHERE id = ?"
        return sql

    def delete(self, id: str) -> None:
        self._db.write(f"DELETE FROM {self.table} WHERE id = ?", (id,), (self.kind, id, True))


# -- memories -------------------------------------------------------------------------------------------------
MEMORY_STATS = ("SELECT count(*) AS n, coalesce(sum(verified), 0) AS v, "
                "count(CASE WHEN expires_at IS NOT NULL AND expires_at <= ? THEN 1 END) AS e "
                "FROM memories WHERE mind = ?")
EXPIRED_MEMORIES = "SELECT id FROM memories WHERE mind = ? AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY id"
DELETE_EXPIRED_MEMORIES = "DELETE FROM memories WHERE mind = ? AND expires_at IS NOT NULL AND expires_at <= ?"
#: MemoriesTable.page orders: name -> ORDER BY (the id always breaks ties, so a page is stable).
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


#: No condition on memories.
NO_FILTER = MemoryFilter()


def _memory_where(view: View, f: MemoryFilter) -> tuple[str, tuple[Any, ...]]:
    where: list[str] = [ALWAYS]
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
        params.append(PRIORITY_RANK[f.priority])
    if f.verified is not None:
        where.append("$verified = ?")
        params.append(int(f.verified))
    if f.source is not None:
        where.append("$source = ?")
        params.append(f.source)
    return " AND ".join(where[1:] or where), tuple(params)


class MemoriesTable(Table[Memory, D]):
    kind = "memory"
    order_by = "priority ASC, updated_at DESC, id DESC"
    columns: ClassVar[Columns] = {
        "content": ("content", _as_is), "tags": ("tags", _json_list), "source": ("source", _as_is),
        "priority": ("priority", PRIORITY_RANK.__getitem__), "verified": ("verified", int),
        "confidence": ("confidence", _as_is), "expires_at": ("expires_at", _as_is),
    }

    def from_row(self, r: Fields, now: str = "") -> Memory:
        return Memory(
            **_base(r), category=dec.text(r["category"]), key=dec.text(r["key"]), content=dec.text(r["content"]),
            tags=dec.text_items(r["tags"]), priority=dec.priority(r["priority"]), source=dec.source(r["source"]),
            verified=dec.verified(r["verified"]), confidence=dec.number(r["confidence"], 0.0, 0.0, 1.0) or 0.0,
            expires_at=dec.opt_stamp(r["expires_at"]),
        )

    def to_row(self, m: Memory) -> tuple[Any, ...]:
        return (m.id, m.mind, m.category, m.key, m.content, dumps(list(m.tags)), PRIORITY_RANK[m.priority], m.source,
                int(m.verified), m.confidence, m.expires_at, m.created_at, m.updated_at)

    def by_key(self, mind: str, category: str, key: str) -> Memory | None:
        row = self._db.query_one(f"SELECT {self._cols} FROM memories WHERE mind = ? AND category = ? AND key = ?",
                                 (mind, category, key))
        return None if row is None else self.from_row(row)

    def list(self, view: View, *, where: MemoryFilter = NO_FILTER,
             limit: int | None = None) -> builtins.list[Memory]:
        return self._select(view, *_memory_where(view, where), limit=limit)

    def search(self, view: View, text: str, *, where: MemoryFilter = NO_FILTER,
               limit: int) -> builtins.list[Memory]:
        return self._match(view, text, *_memory_where(view, where), limit)

    def count(self, view: View, *, where: MemoryFilter = NO_FILTER) -> int:
        cond, params = _memory_where(view, where)
        row = self._db.query_one(f"SELECT count(*) FROM memories WHERE mind = ? AND ({cond})".replace("$", ""),
                                 (view.mind, *params))
        return int(row[0]) if row else 0

    def page(self, view: View, text: str, *, where: MemoryFilter, sort: str | None, descending: bool, offset: int,
             limit: int) -> tuple[builtins.list[Memory], int]:
        dialect = self._db.dialect
        cond, fparams = _memory_where(view, where)
        conds = ["t.mind = ?", cond.replace("$", "t.")]
        params: list[Any] = [view.mind, *fparams]
        query = dialect.search_query(text)
        source_sql, rank = "memories t", "t.priority ASC"
        if query is not None:
            # the text match drives the join (SQLite: else it may probe the FTS index once per row)
            s = dialect.search("memories", text_first=True)
            source_sql, rank = s.source, s.rank
            conds.insert(0, s.condition)
            params.insert(0, query)
        if sort is None:
            order = f"{rank}, t.updated_at DESC"
        else:
            asc, desc = ("DESC", "ASC") if descending else ("ASC", "DESC")
            order = PAGE_ORDER[sort].format(asc=asc, desc=desc)
        if sort != "id":
            order += ", t.id ASC"
        sql_where = " AND ".join(c for c in conds if c != ALWAYS)
        row = self._db.query_one(f"SELECT count(*) FROM {source_sql} WHERE {sql_where}", tuple(params))
        total = int(row[0]) if row else 0
        rows = self._db.query(f"SELECT {self._tcols} FROM {source_sql} WHERE {sql_where} ORDER BY {order} "
                              "LIMIT ? OFFSET ?", (*params, limit, offset))
        return [self.from_row(r) for r in rows], total

    def expiring(self, mind: str, after: str, until: str) -> builtins.list[Memory]:
        return self._select(View(mind, after), "expires_at IS NOT NULL AND expires_at > ? AND expires_at <= ?",
                            (after, until), order="expires_at ASC, id ASC")

    def stats(self, mind: str, now: str) -> MemoryCounts:
        row = self._db.query_one(MEMORY_STATS, (now, mind))
        n, ver, exp = (int(row["n"] or 0), int(row["v"] or 0), int(row["e"] or 0)) if row else (0, 0, 0)
        return MemoryCounts(total=n, verified=ver, expired=exp)

    def delete_expired(self, mind: str, now: str) -> tuple[str, ...]:
        with self._db.transaction():
            ids = tuple(str(r[0]) for r in self._db.query(EXPIRED_MEMORIES, (mind, now)))
            self._db.write(DELETE_EXPIRED_MEMORIES, (mind, now))
            for i in ids:
                self._db.touched("memory", i, deleted=True)
        return ids


# -- checkpoints ----------------------------------------------------------------------------------------------
#: An automatic checkpoint's row (``Checkpoint.automatic`` as ``from_row`` reads it: an agent's "watch" is "agent").
_AUTOMATIC = "$origin = 'auto' OR ($origin = 'watch' AND $source = 'user')"
class CheckpointsTable(Table[Checkpoint, D]):
    kind = "checkpoint"
    columns: ClassVar[Columns] = {"changed_files": ("changed_files", _json_list)}

    def from_row(self, r: Fields, now: str = "") -> Checkpoint:
        source, origin = dec.source(r["source"]), dec.text(r["origin"])
        if source == "agent":  # an agent's checkpoint reads from the agent or the automatic checkpoint, whatever let
            # another origin in (an agent login's SQL on a server before migration 21 held it, an edited file)
            origin = past_agent_limits("checkpoint", {"origin": origin}).get("origin", origin)
        return Checkpoint(
            **_base(r), doing=dec.text(r["doing"]), changed_files=dec.text_items(r["changed_files"]),
            next_step=dec.opt_text(r["next_step"]), blockers=dec.opt_text(r["blockers"]),
            branch=dec.opt_text(r["branch"]), commit=dec.opt_text(r["commit_sha"]), origin=origin, source=source,
        )

    def to_row(self, c: Checkpoint) -> tuple[Any, ...]:
        return (c.id, c.mind, c.branch, c.commit, c.doing, dumps(list(c.changed_files)), c.next_step, c.blockers,
                c.origin, c.source, c.created_at, c.updated_at)

    def latest(self, view: View, branch: str | None, *, automatic: bool = True,
               person: bool = False) -> Checkpoint | None:
        where = self._db.dialect.same("$branch", "?") + ("" if automatic else f" AND ({_AUTOMATIC}) IS NOT TRUE")
        rows = self._select(view, where + (f" AND {self.people}" if person else ""), (branch,), limit=1)
        return rows[0] if rows else None

    def since(self, view: View, after: Checkpoint, *,
              limit: int | None) -> tuple[builtins.list[Checkpoint], int, int]:
        where = f"{self._db.dialect.same('$branch', '?')} AND ($created_at > ? OR ($created_at = ? AND $id > ?))"
        params = (after.branch, after.created_at, after.created_at, after.id)
        vis, vparams = self._visible(view)  # people's first (review 87: 50 agents' pushed a person's out), counted
        row = self._db.query_one(f"SELECT count(*), sum(CASE WHEN {self.people} THEN 0 ELSE 1 END) FROM {self.table} "
                                 f"WHERE mind = ? AND ({vis}) AND ({where})".replace("$", ""), (view.mind, *vparams,
                                                                                             *params))
        rows = self._select(view, where, params, order=f"CASE WHEN {self.people} THEN 0 ELSE 1 END, {self.order_by}",
                            limit=limit)
        return rows, int(row[0] or 0) if row else 0, int(row[1] or 0) if row else 0

    def list(self, view: View, *, branch: str | None = None, limit: int | None = None) -> builtins.list[Checkpoint]:
        if branch is None:
            return self._select(view, limit=limit)
        return self._select(view, "$branch = ?", (branch,), limit=limit)


# -- decisions ------------------------------------------------------------------------------------------------
class DecisionsTable(Table[Decision, D]):
    kind = "decision"

    def from_row(self, r: Fields, now: str = "") -> Decision:
        return Decision(
            **_base(r), decision=dec.text(r["decision"]), rationale=dec.opt_text(r["rationale"]),
            tags=dec.text_items(r["tags"]), branch=dec.opt_text(r["branch"]), commit=dec.opt_text(r["commit_sha"]),
            source=dec.source(r["source"]),
        )

    def to_row(self, d: Decision) -> tuple[Any, ...]:
        return (d.id, d.mind, d.decision, d.rationale, dumps(list(d.tags)), d.branch, d.commit, d.source,
                d.created_at, d.updated_at)

    def list(self, view: View, *, limit: int | None = None, source: str | None = None) -> builtins.list[Decision]:
        if source is None:
            return self._select(view, limit=limit)
        if source not in ("user", "agent"):
            raise ValueError(f"source {source!r}")
        # the value in the statement, not a parameter: the partial index decisions_user is used only so
        return self._select(view, f"$source = '{source}'", limit=limit)

    def search(self, view: View, text: str, *, tag: str | None = None, limit: int) -> builtins.list[Decision]:
        if tag is None:
            return self._match(view, text, ALWAYS, (), limit)
        return self._match(view, text, "$id IN (SELECT rid FROM tags WHERE tag = ? AND kind = 'decision')", (tag,),
                           limit)


# -- lessons (their statements: lesson_sql.py) -----------------------------------------------------------
def _commit_json(v: dict[str, Any] | None) -> str | None:
    return json.dumps(v, sort_keys=True) if v else None


class LessonsTable(Table[Lesson, D]):
    kind = "lesson"
    columns: ClassVar[Columns] = {
        "status": ("status", _as_is), "lesson_text": ("lesson_text", _as_is),
        "approved_at": ("approved_at", _as_is), "expires_at": ("expires_at", _as_is),
        "analysis": ("analysis", _as_is), "analysis_by": ("analysis_by", _as_is),
        "files_affected": ("files_affected", _json_list),
        "source": ("source", _as_is),  # a person's scan takes over an agent's scan's lesson (Lessons.scan), and
        "revert_commit": ("revert_commit", _commit_json),  # marks it as one an agent's lesson named first (review 42)
    }

    def _visible(self, view: View) -> tuple[str, tuple[Any, ...]]:
        if view.in_force_only:
            return "$status = 'approved' AND $expires_at > ?", (view.now,)
        return ALWAYS, ()

    def from_row(self, r: Fields, now: str = "") -> Lesson:
        status = dec.one_of(r["status"], dec.LESSON_STATUSES, "pending")
        expires_at = dec.opt_stamp(r["expires_at"])
        if status == "approved" and expires_at is not None and expires_at <= now:
            status = "expired"
        return Lesson(
            **_base(r), status=status, summary=dec.text(r["summary"]), branch=dec.opt_text(r["branch"]),
            revert_commit=dec.commit(r["revert_commit"]), reverted_commits=dec.commits(r["reverted_commits"]),
            files_affected=dec.text_items(r["files_affected"]), diffstat=dec.diffstat(r["diffstat"]),
            analysis=dec.opt_text(r["analysis"]),
            analysis_by=None if r["analysis_by"] is None else dec.source(r["analysis_by"]),
            lesson_text=dec.opt_text(r["lesson_text"]), approved_at=dec.opt_stamp(r["approved_at"]),
            expires_at=expires_at, source=dec.source(r["source"]),
        )

    def to_row(self, x: Lesson) -> tuple[Any, ...]:
        rc = x.revert_commit
        return (x.id, x.mind, x.status, x.summary, x.branch, rc["sha"] if rc else None, _commit_json(rc),
                dumps(list(x.reverted_commits)), dumps(list(x.files_affected)), _json_list(x.diffstat), x.analysis,
                x.analysis_by, x.lesson_text, x.approved_at, x.expires_at, x.source, x.created_at, x.updated_at)

    def list(self, view: View, *, status: str | None = None, limit: int | None = None) -> builtins.list[Lesson]:
        if status is None:
            return self._select(view, limit=limit)
        memo = self._db.snapshot_cache("approved_lessons") if status == "approved" and limit is None else None
        if memo is not None:
            # the approved lessons (what heads every recall) are read once per data version inside a snapshot of a
            # connection that keeps answers; which of them are in force at view.now is decided here as below
            rows = memo.get(view.mind)
            if rows is None:
                rows = memo[view.mind] = tuple(self._db.query(lesson_sql.APPROVED_LESSONS.format(cols=self._cols),
                                                              (view.mind,)))
            return [self.from_row(r, view.now) for r in rows
                    if r["expires_at"] is None or r["expires_at"] > view.now]
        return self._select(view, f"{lesson_sql.EFFECTIVE_STATUS} = ?", (view.now, status),
                            order="approved_at DESC, id DESC" if status == "approved" else None, limit=limit)

    def has_revert(self, mind: str, sha: str) -> bool:
        return self._db.query_one(lesson_sql.LESSON_FOR_REVERT, (mind, sha)) is not None

    def holding_revert(self, mind: str, sha: str) -> tuple[str, str, str] | None:
        row = self._db.query_one(lesson_sql.LESSON_HOLDING_REVERT, (mind, sha))
        return None if row is None else (row["id"], row["source"], row["status"])

    def analysis_state(self, id: str) -> tuple[str, str | None] | None:
        row = self._db.query_one(lesson_sql.LESSON_ANALYSIS_STATE, (id,))
        return None if row is None else (row["status"], row["analysis_by"])

    def agent_pending(self, mind: str) -> int:
        row = self._db.query_one(lesson_sql.LESSONS_AGENT_PENDING, (mind,))
        return int(row[0] or 0) if row else 0

    def pending_total(self, mind: str) -> int:
        row = self._db.query_one(lesson_sql.LESSONS_PENDING, (mind,))
        return int(row[0] or 0) if row else 0

    def status_counts(self, mind: str, now: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self._db.query(lesson_sql.LESSON_STATUS_COUNTS, (now, mind)):  # a status no write makes: read pending
            s = dec.one_of(r["s"], dec.LESSON_STATUSES, "pending")
            out[s] = out.get(s, 0) + int(r["n"])
        return out

    def expiring(self, mind: str, after: str, until: str) -> tuple[str, ...]:
        return tuple(r["id"] for r in self._db.query(lesson_sql.LESSONS_EXPIRING, (mind, after, until)))

    def run_out(self, mind: str, after: str, now: str) -> int:
        row = self._db.query_one(lesson_sql.LESSONS_RUN_OUT_COUNT, (mind, now, after))
        return int(row[0] or 0) if row else 0

    def expire(self, mind: str, now: str, updated_at: str) -> tuple[str, ...]:
        with self._db.transaction():
            ids = tuple(str(r[0]) for r in self._db.query(lesson_sql.LESSONS_RUN_OUT, (mind, now)))
            self._db.write(lesson_sql.EXPIRE_LESSONS, (updated_at, mind, now))
            for i in ids:
                self._db.touched("lesson", i)
        return ids


# -- episodes -------------------------------------------------------------------------------------------------
class EpisodesTable(Table[Episode, D]):
    kind = "episode"

    def from_row(self, r: Fields, now: str = "") -> Episode:
        return Episode(
            **_base(r), task_key=dec.text(r["task_key"]),
            status=dec.one_of(r["status"], dec.EPISODE_STATUSES, "unknown"), outcome=dec.opt_text(r["outcome"]),
            refs=dec.text_items(r["refs"]), duration_s=dec.number(r["duration_s"], None),
            source=dec.source(r["source"]), thread=dec.opt_text(r["thread"]), seq=dec.seq(r["seq"]),
            actor=dec.opt_text(r["actor"]),
        )

    def to_row(self, e: Episode) -> tuple[Any, ...]:
        return (e.id, e.mind, e.task_key, e.status, e.outcome, dumps(list(e.refs)), e.duration_s, e.source,
                e.created_at, e.updated_at, e.thread, e.seq, e.actor)

    def next_seq(self, mind: str, thread: str) -> int:
        row = self._db.query_one("SELECT max(seq) FROM episodes WHERE mind = ? AND thread = ?", (mind, thread))
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def last(self, view: View, task_key: str, *, source: str | None = None) -> Episode | None:
        if source is None:
            rows = self._select(view, "$task_key = ?", (task_key,), limit=1)
        else:  # a row is a person's only when it says exactly "user" (decode.source)
            rows = self._select(view, "$task_key = ? AND $source = ?", (task_key, source), limit=1)
        return rows[0] if rows else None

    def history(self, view: View, task_key: str | None, *, limit: int | None) -> builtins.list[Episode]:
        if task_key is None:
            return self._select(view, limit=limit)
        return self._select(view, "$task_key = ?", (task_key,), limit=limit)


# -- notes ----------------------------------------------------------------------------------------------------
class NotesTable(Table[Note, D]):
    kind = "note"
    order_by = "name ASC, id ASC"  # names are unique per mind; the id ends every order
    columns: ClassVar[Columns] = {
        "trigger": ("trigger", _as_is), "body": ("body", _as_is), "source": ("source", _as_is),
    }

    def from_row(self, r: Fields, now: str = "") -> Note:
        return Note(**_base(r), name=dec.text(r["name"]), trigger=dec.text(r["trigger"]), body=dec.text(r["body"]),
                    source=dec.source(r["source"]))

    def to_row(self, n: Note) -> tuple[Any, ...]:
        return (n.id, n.mind, n.name, n.trigger, n.body, n.source, n.created_at, n.updated_at)

    def by_name(self, view: View, name: str) -> Note | None:
        rows = self._select(view, "$name = ?", (name,))
        return rows[0] if rows else None
