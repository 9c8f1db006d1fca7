"""Episodes: a log of past runs; a new run of a known task key surfaces the prior run."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from synapse_nb._util import MAX_SHORT, check_choice, check_files, check_optional_text, check_text, new_id
from synapse_nb.errors import ValidationError
from synapse_nb.kinds._base import KindManager, dumps, loads
from synapse_nb.models import Episode, RecordList

__all__ = ["STATUSES", "Episodes"]

STATUSES = ("success", "failure", "unknown")


class Episodes(KindManager[Episode]):
    """``vault.episodes``: log runs and ask whether a task already ran.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> _ = v.episodes.log("train_baseline", status="success", outcome="val acc 0.91")
    >>> v.episodes.log("train_baseline").warning is not None   # warns, never blocks
    True
    """

    table = "episodes"
    record_cls = Episode

    def _from_row(self, r: sqlite3.Row) -> Episode:
        return Episode(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
            task_key=r["task_key"], status=r["status"], outcome=r["outcome"], refs=tuple(loads(r["refs"], [])),
            duration_s=r["duration_s"], source=r["source"],
        )

    def log(self, task_key: str, *, status: str = "unknown", outcome: str | None = None, refs: Any = None,
            duration_s: float | None = None) -> Episode:
        """Record a run of ``task_key``. The returned episode's ``prior`` / ``warning`` name the previous run."""
        task_key = self._key(task_key)
        status = check_choice(status, "status", STATUSES)
        outcome = check_optional_text(outcome, "outcome")
        refs_t = check_files(refs, "refs")
        if duration_s is not None:
            if isinstance(duration_s, bool) or not isinstance(duration_s, int | float) or not duration_s >= 0:
                raise ValidationError(f"duration_s must be a non-negative number of seconds, got {duration_s!r}")
            try:
                duration_s = float(duration_s)
            except OverflowError:
                raise ValidationError("duration_s is too large to represent") from None
            if duration_s == float("inf"):
                raise ValidationError("duration_s must be finite")
        eid = new_id("epi")
        with self._v._store.transaction() as c:
            ts = self._v._stamp(c)
            prior_row = c.execute("SELECT * FROM episodes WHERE mind = ? AND task_key = ? "
                                  "ORDER BY created_at DESC, id DESC LIMIT 1", (self._v.mind, task_key)).fetchone()
            c.execute("INSERT INTO episodes(id, mind, task_key, status, outcome, refs, duration_s, source, created_at, "
                      "updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                      (eid, self._v.mind, task_key, status, outcome, dumps(list(refs_t)), duration_s, self._v.actor,
                       ts, ts))
            self._v._touched("episode", eid)
        prior = self._from_row(prior_row) if prior_row is not None else None
        return Episode(id=eid, mind=self._v.mind, created_at=ts, updated_at=ts, task_key=task_key, status=status,
                       outcome=outcome, refs=refs_t, duration_s=duration_s, source=self._v.actor, prior=prior)

    def last(self, task_key: str) -> Episode | None:
        """The most recent run of ``task_key``, or ``None`` when it never ran."""
        rows = self._rows("$task_key = ?", (self._key(task_key),), limit=1)
        return self._from_row(rows[0]) if rows else None

    def history(self, task_key: str | None = None, *, limit: int | None = 50) -> RecordList[Episode]:
        """Past runs, newest first; all tasks, or one ``task_key``."""
        if task_key is None:
            return self._list(limit=limit)
        return self._list("$task_key = ?", (self._key(task_key),), limit=limit)

    @staticmethod
    def _key(task_key: Any) -> str:
        return check_text(task_key, "task_key", max_len=MAX_SHORT, multiline=False).strip()

    def prior_run_warning(self, task_key: str) -> str | None:
        """The "this already ran" warning a new run of ``task_key`` gets (``log(...).warning``), without logging.

        ``None`` when the task never ran. A surface shows it before the run starts (``%%episode``).

        >>> v.episodes.prior_run_warning("train_baseline")  # doctest: +SKIP
        "task 'train_baseline' already ran at 2026-11-30T21:15:07.123456Z (success: val acc 0.91) [epi_3f9a...]"
        """
        prior = self.last(task_key)
        return None if prior is None else replace(prior, prior=prior).warning
