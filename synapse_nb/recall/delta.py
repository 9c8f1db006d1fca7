"""The per-session delta: what a session already received, unchanged, is not given again.

``session_seen`` holds (mind, session, id) -> digest of what was given. A recall reads it once, for its kept
items and its lessons together, drops the items given before with the same digest, names the lessons shown
before by id only, and records what it gives in one write. Recording is a convenience: a failed write (a
read-only vault, a locked disk) never fails the recall.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from synapse_nb.errors import StoreError
from synapse_nb.models import Lesson
from synapse_nb.recall.types import ExplainRow, RecallItem

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["Delta", "session_delta"]

log = logging.getLogger("synapse_nb.recall")


@dataclass(frozen=True)
class Delta:
    """What a session is given this turn."""

    items: list[RecallItem]  # kept items not given before (or changed since)
    rows: list[ExplainRow]  # the explanation, items given before marked "delta"
    shown_before: set[str]  # ids of lessons this session was shown before, unchanged


def session_delta(ctx: Context, session: str | None, kept: list[RecallItem], rows: list[ExplainRow],
                  lessons: list[Lesson], now: str) -> Delta:
    """Apply the session's history (one read) and record what it is given now (one write)."""
    if session is None or not (kept or lessons):
        return Delta(kept, rows, set())
    store = ctx.store
    seen = store.sessions.seen(ctx.mind, session, [k.id for k in kept] + [x.id for x in lessons])
    fresh = [k for k in kept if seen.get(k.id) != k.record.digest]
    dropped = {k.id for k in kept} - {k.id for k in fresh}
    if dropped:
        rows = [replace(r, kept=False, bar="delta", reason="already given to this session, unchanged")
                if r.id in dropped else r for r in rows]
    shown_before = {x.id for x in lessons if seen.get(x.id) == x.digest}
    given = [(k.id, k.record.digest) for k in fresh] + [(x.id, x.digest) for x in lessons if x.id not in shown_before]
    if given and not store.readonly:
        try:
            store.sessions.mark(ctx.mind, session, given, now)
        except StoreError as exc:  # delta state is a convenience: never fail a recall for it
            log.warning("could not record what session %s has seen: %s", session, exc)
    return Delta(fresh, rows, shown_before)
