"""The per-session delta: what a session already received, unchanged, is not given again.

``session_seen`` holds (mind, session, id) -> digest of what was given. A recall reads it once, for the records
its walk may reach and its lessons together; the gate skips records given before with the same digest *before*
top-k and budget (they never use a slot); lessons shown before are named by id only; what is given is recorded
in one write. Recording is a convenience: a failed write (a
read-only vault, a locked disk) never fails the recall.

A session's id comes from its caller (an MCP client, a hook's harness, ``--session``), so a caller naming a new
session on every call would add rows without end: a session the mind has not seen is recorded only while the mind
has had fewer than :data:`SESSIONS_PER_HOUR` sessions given something in the past hour (sessions already known go
on being recorded; a session over the bound gets every recall in full, as a recall without a session does).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from synapse_nb._util import fmt_ts
from synapse_nb.errors import StoreError
from synapse_nb.models import Lesson
from synapse_nb.recall.types import RecallItem

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["SESSIONS_PER_HOUR", "record_given", "seen_digests"]

#: New sessions a mind records in an hour (what each was given); a session past it is not recorded.
SESSIONS_PER_HOUR = 256



def seen_digests(ctx: Context, session: str | None, ids: Sequence[str]) -> dict[str, str]:
    """id -> digest of what ``session`` was given, for these ids (one read; empty without a session)."""
    if session is None or not ids:
        return {}
    return ctx.store.sessions.seen(ctx.mind, session, list(dict.fromkeys(ids)))


def record_given(ctx: Context, session: str | None, kept: list[RecallItem], lessons: list[Lesson],
                 seen: dict[str, str], now: str) -> set[str]:
    """Record what ``session`` is given now (one write); the ids of lessons it was shown before, unchanged."""
    if session is None:
        return set()
    store = ctx.store
    shown_before = {x.id for x in lessons if seen.get(x.id) == x.digest}
    given = [(k.id, k.record.digest) for k in kept] + [(x.id, x.digest) for x in lessons if x.id not in shown_before]
    if given and not store.readonly:
        try:
            # a session that was given before is known; another is recorded only within the hour's bound
            since = None if seen else fmt_ts(ctx.now() - timedelta(hours=1))
            store.sessions.mark(ctx.mind, session, given, now, new_since=since, new_limit=SESSIONS_PER_HOUR)
        except StoreError as exc:  # delta state is a convenience: never fail a recall for it
            import logging  # only on this rare path: logging costs a cold hook ~3 ms to import

            logging.getLogger("synapse_nb.recall").warning("could not record what session %s has seen: %s", session,
                                                           exc)
    return shown_before
