"""``Vault.status``: counts per kind and state, and the ids of what needs a person, people's records first.

Review 73 F3: 250 agent memories expiring within the week made ``memory status``'s expiring line one line of 4,551
characters listing every id, the person's last. Each list of ids now gives people's records first
(:func:`synapse_nb.people.people_first`) and :class:`~synapse_nb.models.Status`'s text shows the first few of each
line (:data:`synapse_nb.reports.MOST_IDS`), counting the rest; ``to_dict`` (``memory status --json``) keeps every id.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING

from synapse_nb._util import fmt_ts
from synapse_nb.changes import Conflicts
from synapse_nb.gitscope.vaultdir import tracked_files, untrack_command
from synapse_nb.models import Status
from synapse_nb.people import people_first
from synapse_nb.store.records import View

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.vault import Vault

__all__ = ["empty_status", "people_first_ids", "status"]


def status(ctx: Context, vault: Vault) -> Status:
    """What :meth:`synapse_nb.vault.Vault.status` gives, in ``ctx``'s mind."""
    store, m, agent = ctx.store, ctx.mind, ctx.actor == "agent"
    now = ctx.now()
    ts = fmt_ts(now)
    mem = store.memories.stats(m, ts)
    counts: dict[str, dict[str, int]] = {"memories": {"total": mem.total, "verified": mem.verified,
                                                      "unverified": mem.total - mem.verified,
                                                      "expired": mem.expired}}
    view = View(m, ts)
    for name, table in (("checkpoints", store.checkpoints), ("decisions", store.decisions),
                        ("episodes", store.episodes), ("notes", store.notes)):
        counts[name] = {"total": table.count(view)}
    les = dict.fromkeys(("pending", "approved", "expired"), 0) | store.lessons.status_counts(m, ts)
    counts["lessons"] = {"approved": les["approved"]} if agent else les
    # people's first, each side in the store's order (an agent's drafts and memories are many: review 73)
    pending = () if agent else tuple(x.id for x in people_first(vault.lessons.pending()))
    expiring = tuple(x.id for x in vault.memories.expiring(timedelta(days=7)))  # people's first, as listed
    les_soon = store.lessons.expiring(m, ts, fmt_ts(now + timedelta(days=2)))
    flags = vault.flags()
    prefix, tracked = tracked_files(vault.path)
    borrowed = ctx.git.borrowed
    awaiting = () if borrowed is None or agent else tuple(x.id for x in vault.lessons.awaiting_local())
    # what waits for a person, counted in a person's view (review 26: status never said proposals waited); the pairs
    # of two agents' unverified records apart (review 83: 5,000 agent memories made 24,994 pairs "awaiting a human")
    pairs = None if agent else Conflicts.of(store.links.of_mind(m, "open"), ctx.stored)
    waiting = (None, None, None) if pairs is None else (len(store.revisions.of_mind(m, "pending")),
                                                        len(pairs) - pairs.agents, pairs.agents)
    return Status(vault_path=str(vault.path), mind=m, actor=ctx.actor, counts=counts, pending_lessons=pending,
                  expiring_memories=expiring, expiring_lessons=les_soon, schema_version=store.schema_version,
                  dangling=people_first_ids(ctx, sorted(r for r, f in flags.items() if "dangling" in f)),
                  possibly_stale=people_first_ids(ctx, sorted(r for r, f in flags.items() if "stale" in f)),
                  tracked_by_git=tracked,
                  untrack_command=untrack_command(prefix) if tracked and prefix else None,
                  borrowed=borrowed.line if borrowed is not None else None, awaiting_local_approval=awaiting,
                  settings_not_in_force=vault.settings.not_in_force_lines(),
                  pending_revisions=waiting[0], open_conflicts=waiting[1], agents_conflicts=waiting[2])


def empty_status(vault_path: str, mind: str, actor: str) -> Status:
    """What :func:`status` gives of a project with no vault yet (``vault_path``: where the first write creates it):
    every count 0, in the shape a vault's status has (an agent's view counts approved lessons only). The MCP tool
    ``get_status`` answers it on a new project (review 93: a tool error there)."""
    counts: dict[str, dict[str, int]] = {"memories": dict.fromkeys(("total", "verified", "unverified", "expired"), 0)}
    counts |= {name: {"total": 0} for name in ("checkpoints", "decisions", "episodes", "notes")}
    counts["lessons"] = dict.fromkeys(("approved",) if actor == "agent" else ("pending", "approved", "expired"), 0)
    return Status(vault_path=vault_path, mind=mind, actor=actor, counts=counts, pending_lessons=(),
                  expiring_memories=(), expiring_lessons=(), schema_version=0)


def people_first_ids(ctx: Context, ids: Iterable[str]) -> tuple[str, ...]:
    """``ids`` of records of the mind with people's first (each side in the given order): the records are read
    (:meth:`~synapse_nb.context.Context.stored`) to see whose each is; an id no record answers (deleted since it was
    flagged) goes last."""
    ids = list(ids)
    found = ctx.stored(ids)
    return (*(r.id for r in people_first(found[i] for i in ids if i in found)), *(i for i in ids if i not in found))
