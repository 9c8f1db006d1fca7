"""The kind tables of a team vault that do more than the shared SQL (:mod:`synapse_nb.store.sql.tables`).

Every other kind table is the shared one as it is, over PostgreSQL's dialect (``tsvector`` search, gate terms:
:mod:`synapse_nb.store.postgres.dialect`). These two add what the server enforces or keeps itself:

- **lessons**: an agent reads and writes lessons only through ``SECURITY DEFINER`` functions (``lesson_mind``,
  ``lesson_ids``, ``revert_known``, ``lesson_state``, ``submit_analysis``): the agent role may not read a lesson
  that is not in force, whatever the Python code does. Approval is guarded in the statement: a lesson approved
  meanwhile by someone else is a :class:`~synapse_nb.errors.ConflictError`, never a silent overwrite.
- **episodes**: a threaded episode's writes, its import's too, also refresh its thread's ranking contexts
  (``rank_refresh_thread``, once per thread and transaction, before the commit; SQLite's triggers do it there).
"""

from __future__ import annotations

import builtins
import functools
from typing import Any

from synapse_nb.errors import ConflictError, NotFoundError
from synapse_nb.store.postgres.db import PgDatabase
from synapse_nb.store.sql import tables as shared

__all__ = ["EpisodesTable", "LessonsTable"]


class EpisodesTable(shared.EpisodesTable[PgDatabase]):
    """Episodes; a threaded one's writes also refresh its thread's ranking contexts (``rank_refresh_thread``).

    Every row goes in through :meth:`insert_row` (a log, a restore, an import's or a join's copy: review 96 F1, an
    import wrote its rows there and left each copied episode without context), and the refresh is owed to the end of
    the transaction (:meth:`~synapse_nb.store.postgres.db.PgDatabase.before_commit`), once per thread written: an
    import of a long thread costs one pass over it, not one per episode. Inside the transaction a thread's contexts
    are not yet refreshed, as the total length is not yet folded (both at commit)."""

    def _thread(self, id: str) -> tuple[str, str] | None:
        row = self._db.query_one("SELECT mind, thread FROM episodes WHERE id = ? AND thread IS NOT NULL", (id,))
        return None if row is None else (row["mind"], row["thread"])

    def _refresh(self, *threads: tuple[str, str] | None) -> None:
        for t in {t for t in threads if t is not None}:
            self._db.before_commit(("rank_refresh_thread", *t), functools.partial(self._refresh_now, *t))

    def _refresh_now(self, mind: str, thread: str) -> None:
        self._db.write("SELECT rank_refresh_thread(?, ?)", (mind, thread))

    def insert_row(self, id: str, values: tuple[Any, ...]) -> None:
        row = dict(zip(self.fields, values, strict=True))
        with self._db.transaction():
            super().insert_row(id, values)
            if row["thread"] is not None:
                self._refresh((row["mind"], row["thread"]))

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


class LessonsTable(shared.LessonsTable[PgDatabase]):
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

    def agent_pending(self, mind: str) -> int:
        row = self._db.query_one("SELECT agent_pending_lessons(?)", (mind,))  # the agent role reads no pending one
        return int(row[0] or 0) if row else 0

    def pending_total(self, mind: str) -> int:
        row = self._db.query_one("SELECT pending_lessons(?)", (mind,))  # a count for every role (migration 25)
        return int(row[0] or 0) if row else 0

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        if self._db.role == "agent" and set(changes) == {"analysis", "analysis_by"}:
            # the agent role may not UPDATE lessons at all: its one write goes through a checked function
            self._db.write("SELECT submit_analysis(?, ?)", (id, changes["analysis"]),
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
