"""Episodes: a log of past runs; a new run of a known task key surfaces the prior run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from synapse_nb._calls import Files
from synapse_nb._util import (
    MAX_SHORT,
    check_choice,
    check_files,
    check_limit,
    check_optional_text,
    check_stored_strings,
    check_text,
    new_id,
)
from synapse_nb.errors import ValidationError
from synapse_nb.kinds._base import KindManager, exactly_once
from synapse_nb.models import Episode, RecordList, past_agent_limits
from synapse_nb.provenance import REPORTED_ACTOR, agents_unverified

if TYPE_CHECKING:
    from synapse_nb.store.base import EpisodeTable

__all__ = ["REPORTED", "STATUSES", "Episodes"]

STATUSES = ("success", "failure", "unknown")
#: Appended to the actor an agent names when it logs an episode as someone else (``"Maria (reported by agent)"``).
REPORTED = REPORTED_ACTOR


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

    record_cls = Episode

    @property
    def _table(self) -> EpisodeTable:
        return self._ctx.store.episodes

    @staticmethod
    def check_record(e: Episode) -> None:
        """What a stored episode is: the write path builds only such records, and an import refuses others."""
        check_text(e.task_key, "task_key", multiline=False, stored=True)
        if e.status not in STATUSES:
            raise ValidationError(f"status {e.status!r} is not one of {', '.join(STATUSES)}")
        check_stored_strings(e.refs, "refs")
        if e.thread is not None:
            check_text(e.thread, "thread", max_len=MAX_SHORT, multiline=False, stored=True)
        if e.actor is not None:
            check_text(e.actor, "actor", max_len=MAX_SHORT, multiline=False, stored=True)
        if e.seq is not None and (isinstance(e.seq, bool) or not isinstance(e.seq, int) or not 0 <= e.seq < 2**62):
            raise ValidationError(f"seq must be a whole number >= 0, got {e.seq!r}")
        if e.duration_s is not None and (isinstance(e.duration_s, bool) or not isinstance(e.duration_s, int | float)
                                         or not 0 <= e.duration_s < float("inf")):  # what log() accepts
            raise ValidationError(f"duration_s must be a finite number of seconds >= 0, got {e.duration_s!r}")
        if e.seq is not None and e.thread is None:
            raise ValidationError("seq orders an episode in its thread: give thread too")

    @staticmethod
    def past_agent_limits(fields: Mapping[str, Any]) -> list[str]:
        """An agent logs as itself: an ``actor`` naming someone else is marked as reported (:meth:`log`); one that
        is not reads as that person's own words (review 14).

        >>> Episodes.past_agent_limits({"actor": "Maria"}), Episodes.past_agent_limits({"actor": f"Maria{REPORTED}"})
        (["actor as the speaker's own words"], [])
        """
        return ["actor as the speaker's own words"] if "actor" in past_agent_limits("episode", fields) else []

    @exactly_once
    def log(self, task_key: str, *, status: str = "unknown", outcome: str | None = None, refs: Files | None = None,
            duration_s: float | None = None, thread: str | None = None, seq: int | None = None,
            actor: str | None = None) -> Episode:
        """Record a run of ``task_key``. The returned episode's ``prior`` / ``warning`` name the previous run.

        ``thread`` names the conversation, session or run the episode is one step of, ``seq`` its order there
        (default: after the thread's last episode) and ``actor`` who said or did it. An agent logs as itself: an
        ``actor`` other than ``"agent"`` from the agent actor is stored marked ``"Maria (reported by agent)"``,
        and recall never boosts a reported actor as that person's own words. Recall ranks an episode
        with its thread's neighbours (the turn a question asks about sits next to the question) and boosts
        episodes whose actor the query names.

        >>> v.episodes.log("chat", outcome="Where is the lake?", thread="s1", actor="Ann").seq   # doctest: +SKIP
        0
        """
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
        ctx = self._ctx
        if isinstance(thread, str):
            thread = check_text(thread, "thread", max_len=MAX_SHORT, multiline=False, allow_empty=True).strip()
        if isinstance(actor, str):
            actor = check_text(actor, "actor", max_len=MAX_SHORT, multiline=False, allow_empty=True).strip()
            if ctx.actor == "agent":
                # an agent speaks only as itself: whoever else it names, it is reporting them (and the mark is kept
                # in the name, so recall never boosts it as that person's own words): models.past_agent_limits
                actor = past_agent_limits("episode", {"actor": actor}).get("actor", actor)
        probe = Episode(id="epi_0", mind=ctx.mind, created_at="", updated_at="", task_key=task_key,
                        thread=thread, seq=seq, actor=actor)
        if (probe.thread is not None and not isinstance(probe.thread, str)) or probe.thread == "":
            raise ValidationError(f"thread must be a non-empty text, got {thread!r}")
        if (probe.actor is not None and not isinstance(probe.actor, str)) or probe.actor == "":
            raise ValidationError(f"actor must be a non-empty text, got {actor!r}")
        self.check_record(probe)
        with ctx.store.transaction():
            ts = self._begin_write(new_record=True)
            prior = self._priors(task_key)
            if probe.thread is not None and seq is None:
                seq = self._table.next_seq(ctx.mind, probe.thread)
            epi = Episode(id=new_id("epi"), mind=ctx.mind, created_at=ts, updated_at=ts, task_key=task_key,
                          status=status, outcome=outcome, refs=refs_t, duration_s=duration_s, source=ctx.actor,
                          thread=probe.thread, seq=seq, actor=probe.actor)
            self._table.insert(epi)
            self._changed("create", None, epi, ts)
        return replace(epi, prior=prior.prior, prior_by_person=prior.prior_by_person)

    def last(self, task_key: str) -> Episode | None:
        """The most recent run of ``task_key``, or ``None`` when it never ran."""
        return self._table.last(self._view(), self._key(task_key))

    def history(self, task_key: str | None = None, *, limit: int | None = 50) -> RecordList[Episode]:
        """Past runs, newest first; all tasks, or one ``task_key``."""
        limit = check_limit(limit)
        key = None if task_key is None else self._key(task_key)
        return RecordList(self._table.history(self._view(), key, limit=limit))

    @staticmethod
    def _key(task_key: Any) -> str:
        return check_text(task_key, "task_key", max_len=MAX_SHORT, multiline=False).strip()

    def prior_run_warning(self, task_key: str) -> str | None:
        """The "this already ran" warning a new run of ``task_key`` gets (``log(...).warning``), without logging.

        ``None`` when the task never ran. A surface shows it before the run starts (``%%episode``).

        >>> v.episodes.prior_run_warning("train_baseline")  # doctest: +SKIP
        "task 'train_baseline' already ran at 2026-11-30 21:15 UTC [epi_3f9a...] [user] (success: val acc 0.91)"
        """
        return self._priors(self._key(task_key)).warning

    def _priors(self, task_key: str) -> Episode:
        """A probe of ``task_key`` holding the runs a new run's warning names: the latest (``prior``) and, when that
        is an agent's unverified run, a person's latest (``prior_by_person``: review 70)."""
        view = self._view()
        prior = self._table.last(view, task_key)
        person = self._table.last(view, task_key, source="user") if agents_unverified(prior) else None
        return Episode(id="epi_0", mind=self._ctx.mind, created_at="", updated_at="", task_key=task_key, prior=prior,
                       prior_by_person=person)
