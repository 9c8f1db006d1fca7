"""``Vault.prune``: expired memories deleted, expired lessons marked, old per-session delta state forgotten, and (asked
for) the agents' old records no person took on deleted: what frees the agents' totals after a flood."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from synapse_nb._util import fmt_ts, parse_duration, shift
from synapse_nb.models import RANKED_KINDS, PruneReport, Record
from synapse_nb.store.records import MemoryFilter, View

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["AGENT_PRUNED", "prune"]

#: The kinds whose agents' records ``agent_records_older_than`` deletes (a pending lesson waits for a person's review).
AGENT_PRUNED: tuple[str, ...] = RANKED_KINDS


def prune(ctx: Context, sessions_older_than: str | timedelta = "30d",
          agent_records_older_than: str | timedelta | None = None) -> PruneReport:
    """What :meth:`synapse_nb.vault.Vault.prune` does, in ``ctx``'s mind (a person only)."""
    from synapse_nb import history  # every deletion and expiry is a history entry (issue 30)

    ctx.require_human("prune the vault")
    age = parse_duration(sessions_older_than, "sessions_older_than")
    agent_age = (None if agent_records_older_than is None
                 else parse_duration(agent_records_older_than, "agent_records_older_than"))
    store, mind = ctx.store, ctx.mind
    now = ctx.now()
    ts = fmt_ts(now)
    stored = View(mind, "")  # lessons as stored (no effective status at a time)
    with store.transaction():
        stamp = store.stamp(ctx.now_ts())
        expired = {m.id: m for m in store.memories.list(View(mind, ts), where=MemoryFilter(unexpired=False))
                   if m.expires_at is not None and m.expires_at <= ts}
        running_out = store.lessons.get_many(stored, [x.id for x in store.lessons.list(View(mind, ts),
                                                                                        status="expired")])
        mem_ids = store.memories.delete_expired(mind, ts)
        les_ids = store.lessons.expire(mind, ts, stamp)
        after = store.lessons.get_many(stored, les_ids)
        history.record_many(ctx, "delete", [(expired[i], None) for i in mem_ids if i in expired], at=stamp)
        history.record_many(ctx, "expire", [(running_out.get(i), after.get(i)) for i in les_ids], at=stamp)
        sessions = store.sessions.prune(mind, fmt_ts(shift(now, -age, "sessions_older_than")))
        agents: list[Record] = []
        if agent_age is not None:
            before = fmt_ts(shift(now, -agent_age, "agent_records_older_than"))
            for kind in AGENT_PRUNED:
                table = store.table(kind)
                for rec in table.agents_before(stored, before):
                    table.delete(rec.id)
                    agents.append(rec)
            history.record_many(ctx, "delete", [(r, None) for r in agents], at=stamp)
    return PruneReport(memories_deleted=mem_ids, lessons_expired=les_ids, sessions_cleared=sessions,
                       agent_records_deleted=tuple(r.id for r in agents))
