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

An agent's sessions are kept apart from people's (:func:`stored_session`: stored as ``agent:<id>``): a person's
session id is no secret (a notebook's is in ``session_seen`` for anyone who reads the vault), and an agent that
recalled under it marked what it was given as seen there, so the person's next recall left it out as not new. On a
team vault each agent login's sessions are apart too (``agent:<login>:<id>``, the schema's ``session_key``), and the
server refuses an agent's row for any other session (migration 12).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from synapse_nb._util import fmt_ts
from synapse_nb.errors import PermissionDeniedError, StoreError
from synapse_nb.models import Lesson
from synapse_nb.recall.types import RecallItem

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["AGENT_SESSION_PREFIX", "SESSIONS_PER_HOUR", "record_given", "seen_digests", "stored_session"]

#: New sessions a mind records in an hour (what each was given); a session past it is not recorded.
SESSIONS_PER_HOUR = 256
#: How an agent's session ids are stored: never the same as a person's.
AGENT_SESSION_PREFIX = "agent:"


def stored_session(ctx: Context, session: str) -> str:
    """The key ``session`` is kept under for this actor: an agent's ids are prefixed, so no agent can mark what a
    person's session was given.

    >>> from types import SimpleNamespace as NS
    >>> stored_session(NS(actor="agent"), "nb-1a2b3c4d5e6f"), stored_session(NS(actor="user"), "nb-1a2b3c4d5e6f")
    ('agent:nb-1a2b3c4d5e6f', 'nb-1a2b3c4d5e6f')
    """
    return AGENT_SESSION_PREFIX + session if ctx.actor == "agent" else session



def seen_digests(ctx: Context, session: str | None, ids: Sequence[str]) -> dict[str, str]:
    """id -> digest of what ``session`` was given, for these ids (one read; empty without a session)."""
    if session is None or not ids:
        return {}
    return ctx.store.sessions.seen(ctx.mind, stored_session(ctx, session), list(dict.fromkeys(ids)))


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
            store.sessions.mark(ctx.mind, stored_session(ctx, session), given, now, new_since=since,
                                new_limit=SESSIONS_PER_HOUR)
        except (StoreError, PermissionDeniedError) as exc:  # delta state is a convenience: never fail a recall for it
            # (a team vault's server bounds an agent's session state rows an hour, migration 12)
            import logging  # only on this rare path: logging costs a cold hook ~3 ms to import

            logging.getLogger("synapse_nb.recall").warning("could not record what session %s has seen: %s", session,
                                                           exc)
    return shown_before
