"""The kind tables of a team vault: the SQLite repositories, with PostgreSQL's search, terms and guards.

Everything standard SQL is inherited from :mod:`synapse_nb.store.sqlite.tables` (same statements, same row <->
record mapping, so both backends read and list alike). What differs:

- **terms**: every write of a gate kind stores ``terms text[]``, the record's gate text analysed by the package's
  own text module (:func:`gate_terms`); triggers keep ``gate_df``/``gate_stats`` (the shared word statistics).
- **search**: a stored ``tsvector`` (english, like FTS5's porter) + GIN instead of FTS5.
- **lessons**: approval is guarded in the statement (a lesson approved meanwhile by someone else is a
  :class:`~synapse_nb.errors.ConflictError`, never a silent overwrite); an agent's analysis goes through the
  ``submit_analysis`` function, the only way the agent role can touch a lesson it may not read.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping
from typing import Any

from synapse_nb.errors import ConflictError, NotFoundError
from synapse_nb.models import RANKED_KINDS, Checkpoint, Lesson, Memory
from synapse_nb.store.records import EXPORT_FIELDS, MemoryCounts, MemoryFilter, View
from synapse_nb.store.sqlite import tables as lite
from synapse_nb.text import FTS_TOKEN_RE, MAX_QUERY_WORD_CHARS, fts_query_terms, normalise

__all__ = ["GATE_KINDS", "CheckpointsTable", "DecisionsTable", "EpisodesTable", "LessonsTable", "MemoriesTable",
           "NotesTable", "gate_terms", "gate_text"]

#: The kinds that carry gate terms and a ranking document (the registry's ranked kinds).
GATE_KINDS = RANKED_KINDS
#: Lessons stored as approved, most recently approved first (in force unless their time ran out).
APPROVED_LESSONS = "SELECT * FROM lessons WHERE mind = ? AND status = 'approved' ORDER BY approved_at DESC, id DESC"


def gate_terms(text: str) -> list[str]:
    """The gate terms of a record's gate text: every word as the recall gate analyses a query (lower-cased,
    accents stripped, split like FTS5's ``unicode61``), words over 64 characters left out, sorted, unique.

    These are what ``gate_df`` counts, so a query's word statistics equal SQLite's FTS5 vocabulary's.

    >>> gate_terms("Déploy the v1.2.3 e-mail hook_name, Déploy!")
    ['2', '3', 'deploy', 'e', 'hook', 'mail', 'name', 'the', 'v1']
    """
    return sorted({t for t in FTS_TOKEN_RE.findall(normalise(text, len(text) + 1)) if len(t) <= MAX_QUERY_WORD_CHARS})


def rank_tokens(text: str) -> list[str]:
    """The tokens of a ranking document's text, repeats kept, in order (stemmed by the server: ``stem_all``).

    >>> rank_tokens("Deploys, deploys: Café")
    ['deploys', 'deploys', 'cafe']
    """
    return FTS_TOKEN_RE.findall(normalise(text, len(text) + 1))


def _words(value: Any) -> str:
    if isinstance(value, str):
        value = json.loads(value)
    return " ".join(str(x) for x in value or ())


def gate_text(kind: str, r: Mapping[str, Any]) -> str:
    """The text the gate scores for a record given as columns (the generated ``gate_text`` column, in Python)."""
    if kind == "memory":
        return f"{r['key'].replace('_', ' ')} {r['content']} {_words(r['tags'])}"
    if kind == "checkpoint":
        return f"{r['doing']} {r['next_step'] or ''} {r['blockers'] or ''} {_words(r['changed_files'])}"
    if kind == "decision":
        return f"{r['decision']} {r['rationale'] or ''} {_words(r['tags'])}"
    if kind == "episode":
        return f"{r['task_key'].replace('_', ' ')} {r['outcome'] or ''} {_words(r['refs'])}"
    if kind == "note":
        return f"{r['name'].replace('_', ' ')} {r['trigger']}"
    raise KeyError(kind)


def search_query(text: str) -> str | None:
    """The words of a search box's text for ``plainto_tsquery`` (None: no word, list instead)."""
    words = fts_query_terms(text, lite.MAX_QUERY_TERMS)
    return " ".join(words) if words else None


class _Pg:
    """What every PostgreSQL kind table changes in its SQLite parent (mixed in first)."""

    kind: str
    table: str
    order_by: str
    insert_sql: str
    columns: dict[str, Any]
    _db: Any

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.cols = ", ".join(EXPORT_FIELDS[cls.kind])
        cls.tcols = ", ".join(f"t.{c}" for c in EXPORT_FIELDS[cls.kind])
        if cls.kind in GATE_KINDS:  # two more columns: the gate terms and the ranking document's stems
            head, _, tail = cls.insert_sql.rpartition("?)")
            cls.insert_sql = (head.replace(") VALUES (", ", terms, rank_body) VALUES (") + "?,?,stem_all(?::text[]))"
                              + tail)

    # from the SQLite parent: _params, _from_row, _visible
    _params: Any
    _from_row: Any
    _visible: Any

    def _derived(self, params: tuple[Any, ...]) -> tuple[list[str], list[str]]:
        """(gate terms, ranking tokens) of a record given as its insert parameters."""
        text = gate_text(self.kind, dict(zip(EXPORT_FIELDS[self.kind], params, strict=False)))
        return gate_terms(text), rank_tokens(text)

    def _select(self, view: View, where: str = "1", params: tuple[Any, ...] = (), *, order: str | None = None,
                limit: int | None = None, by_id: bool = False) -> builtins.list[Any]:
        # by_id is SQLite's planning hint (+mind); PostgreSQL plans an id list on the primary key by itself
        vis, vparams = self._visible(view)
        sql = (f"SELECT {self.cols} FROM {self.table} WHERE mind = ? AND ({vis}) AND ({where}) "
               f"ORDER BY {order or self.order_by}").replace("$", "")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [self._from_row(r, view.now) for r in self._db.query(sql, (view.mind, *vparams, *params))]

    def _match(self, view: View, text: str, where: str, params: tuple[Any, ...], limit: int) -> builtins.list[Any]:
        words = search_query(text)
        if words is None:
            return self._select(view, where, params, limit=limit)
        vis, vparams = self._visible(view)
        sql = (f"SELECT {self.tcols} FROM {self.table} t, plainto_tsquery('english', ?) q "
               f"WHERE (numnode(q) = 0 OR t.search_tsv @@ q) AND t.mind = ? AND ({vis}) AND ({where}) "
               f"ORDER BY ts_rank(t.search_tsv, q) DESC, t.updated_at DESC, t.id LIMIT {int(limit)}").replace("$", "t.")
        return [self._from_row(r, view.now) for r in self._db.query(sql, (words, view.mind, *vparams, *params))]

    def get_many(self, view: View, ids: Iterable[str]) -> dict[str, Any]:
        """As SQLite's, in one statement whatever the number of ids (one round trip)."""
        want = sorted(set(ids))
        return {r.id: r for r in self._select(view, "$id = ANY(?)", (want,), order="$id")} if want else {}

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> builtins.list[str]:
        rows = self._db.query(f"SELECT id FROM {self.table} WHERE id >= ? AND id < ? AND mind = ? ORDER BY id "
                              "LIMIT ?", (prefix, prefix + "\U0010ffff", mind, int(limit)))
        return [r["id"] for r in rows]

    def insert(self, record: Any) -> None:
        params = self._params(record)
        if self.kind in GATE_KINDS:
            params = (*params, *self._derived(params))
        self._db.write(self.insert_sql, params, (self.kind, record.id, False))

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        unknown = [n for n in changes if n not in self.columns]
        if unknown:
            raise TypeError(f"{self.kind} has no updatable field {unknown[0]!r}")
        sets = [f"{self.columns[n][0]} = ?" for n in changes] + ["updated_at = ?"]
        params: list[Any] = [self.columns[n][1](v) for n, v in changes.items()] + [updated_at]
        with self._db.transaction():
            if self.kind in GATE_KINDS:
                row = self._db.query_one(f"SELECT {self.cols} FROM {self.table} WHERE id = ?", (id,))
                if row is not None:
                    merged = {k: row[k] for k in row.keys()}
                    merged.update({self.columns[n][0]: p for n, p in zip(changes, params, strict=False)})
                    text = gate_text(self.kind, merged)
                    sets += ["terms = ?", "rank_body = stem_all(?::text[])"]
                    params += [gate_terms(text), rank_tokens(text)]
            self._db.write(f"UPDATE {self.table} SET {', '.join(sets)} WHERE id = ?", (*params, id),
                           (self.kind, id, False))


class MemoriesTable(_Pg, lite.MemoriesTable):
    def page(self, view: View, text: str, *, where: MemoryFilter, sort: str | None, descending: bool, offset: int,
             limit: int) -> tuple[builtins.list[Memory], int]:
        cond, fparams = lite._memory_where(view, where)
        conds = ["t.mind = ?", cond.replace("$", "t.")]
        params: list[Any] = [view.mind, *fparams]
        words = search_query(text)
        source_sql = "memories t"
        if words is not None:
            source_sql = "memories t, plainto_tsquery('english', ?) q"
            conds.insert(0, "(numnode(q) = 0 OR t.search_tsv @@ q)")
            params.insert(0, words)
        if sort is None:
            order = "ts_rank(t.search_tsv, q) DESC, t.updated_at DESC" if words is not None else \
                "t.priority ASC, t.updated_at DESC"
        else:
            asc, desc = ("DESC", "ASC") if descending else ("ASC", "DESC")
            order = lite.PAGE_ORDER[sort].format(asc=asc, desc=desc)
        if sort != "id":
            order += ", t.id ASC"
        sql_where = " AND ".join(c for c in conds if c != "1")
        row = self._db.query_one(f"SELECT count(*) FROM {source_sql} WHERE {sql_where}", tuple(params))
        total = int(row[0]) if row else 0
        rows = self._db.query(f"SELECT {self.tcols} FROM {source_sql} WHERE {sql_where} ORDER BY {order} "
                              "LIMIT ? OFFSET ?", (*params, limit, offset))
        return [self._from_row(r) for r in rows], total

    def stats(self, mind: str, now: str) -> MemoryCounts:
        row = self._db.query_one("SELECT count(*) AS n, coalesce(sum(verified), 0) AS v, "
                                 "count(*) FILTER (WHERE expires_at IS NOT NULL AND expires_at <= ?) AS e "
                                 "FROM memories WHERE mind = ?", (now, mind))
        return MemoryCounts(total=int(row["n"]), verified=int(row["v"]), expired=int(row["e"])) if row else \
            MemoryCounts(0, 0, 0)


class CheckpointsTable(_Pg, lite.CheckpointsTable):
    def latest(self, view: View, branch: str | None) -> Checkpoint | None:
        rows = self._select(view, "$branch IS NOT DISTINCT FROM ?", (branch,), limit=1)
        return rows[0] if rows else None


class DecisionsTable(_Pg, lite.DecisionsTable):
    pass


class EpisodesTable(_Pg, lite.EpisodesTable):
    """Episodes; a threaded one's writes also refresh its thread's ranking contexts (``rank_refresh_thread``)."""

    def _thread(self, id: str) -> tuple[str, str] | None:
        row = self._db.query_one("SELECT mind, thread FROM episodes WHERE id = ? AND thread IS NOT NULL", (id,))
        return None if row is None else (row["mind"], row["thread"])

    def _refresh(self, *threads: tuple[str, str] | None) -> None:
        for t in sorted({t for t in threads if t is not None}):
            self._db.write("SELECT rank_refresh_thread(?, ?)", t)

    def insert(self, record: Any) -> None:
        with self._db.transaction():
            super().insert(record)
            if getattr(record, "thread", None) is not None:
                self._refresh((record.mind, record.thread))

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        with self._db.transaction():
            before = self._thread(id)
            super().update(id, updated_at=updated_at, **changes)
            self._refresh(before, self._thread(id))

    def delete(self, id: str) -> None:
        with self._db.transaction():
            before = self._thread(id)
            super().delete(id)
            self._refresh(before)


class NotesTable(_Pg, lite.NotesTable):
    pass


class LessonsTable(_Pg, lite.LessonsTable):
    def list(self, view: View, *, status: str | None = None, limit: int | None = None) -> builtins.list[Lesson]:
        """As SQLite's; the approved lessons (what heads every recall) are read once per data version inside a
        snapshot, and which of them are still in force at ``view.now`` is decided here as the statement would."""
        memo = self._db.snapshot_cache("approved_lessons") if status == "approved" and limit is None else None
        if memo is None:
            return super().list(view, status=status, limit=limit)
        rows = memo.get(view.mind)
        if rows is None:
            rows = memo[view.mind] = tuple(self._db.query(APPROVED_LESSONS, (view.mind,)))
        return [self._from_row(r, view.now) for r in rows if r["expires_at"] is None or r["expires_at"] > view.now]

    def mind_of(self, id: str) -> str | None:
        row = self._db.query_one("SELECT lesson_mind(?)", (id,))
        return None if row is None or row[0] is None else str(row[0])

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> builtins.list[str]:
        return [r[0] for r in self._db.query("SELECT lesson_ids(?, ?, ?)", (mind, prefix, int(limit)))]

    def has_revert(self, mind: str, sha: str) -> bool:
        row = self._db.query_one("SELECT revert_known(?, ?)", (mind, sha))
        return bool(row and row[0])

    def analysis_state(self, id: str) -> tuple[str, str | None] | None:
        row = self._db.query_one("SELECT status, analysis_by FROM lesson_state(?)", (id,))
        return None if row is None else (row["status"], row["analysis_by"])

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        if self._db.role == "agent" and set(changes) == {"analysis", "analysis_by"}:
            # the agent role may not UPDATE lessons at all: its one write goes through a checked function
            self._db.write("SELECT submit_analysis(?, ?, ?)", (id, changes["analysis"], updated_at),
                           ("lesson", id, False))
            return
        if changes.get("status") != "approved":
            super().update(id, updated_at=updated_at, **changes)
            return
        names = list(changes)
        sets = ", ".join([*(f"{self.columns[n][0]} = ?" for n in names), "updated_at = ?"])
        params = [self.columns[n][1](v) for n, v in changes.items()]
        now = changes.get("approved_at") or updated_at
        # the guard is in the statement: of two people approving at once the second waits for the first's row
        # lock, re-reads the committed row (READ COMMITTED) and updates nothing
        cur = self._db.write(f"UPDATE lessons SET {sets} WHERE id = ? AND NOT (status = 'approved' AND "
                             "expires_at > ?)", (*params, updated_at, id, now), ("lesson", id, False))
        if cur.rowcount == 0:
            row = self._db.query_one("SELECT status, expires_at FROM lessons WHERE id = ?", (id,))
            if row is None:
                raise NotFoundError(f"no lesson {id}: it was rejected meanwhile (on this or another machine); "
                                    "nothing was written")
            raise ConflictError(f"lesson {id} was approved meanwhile (by someone else, on this or another machine) "
                                f"and is in force until {row['expires_at']}; nothing was written. Only pending or "
                                "expired lessons can be approved")
