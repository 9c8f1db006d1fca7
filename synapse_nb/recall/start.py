"""What a session starts with about the memory: people's key memories (bounded), the counts per category, and where
the rest is. One text for both surfaces that start a session, so they say the same:

- the ``SessionStart`` hook (startup, resume, clear: after the approved-lesson banner, before the checkpoint);
- the MCP tool ``get_approved_memory`` (after the banner; ``restore_checkpoint`` gives the checkpoint).

Review 93: ``get_approved_memory`` listed every memory, verified first, until the answer budget (13-15k characters
of unranked lines on a vault of 220 memories, against 2k from the hook for the same purpose). Now both give the key
memories people wrote or verified (priority critical or high, :data:`~synapse_nb.recall.pack.KEY_PRIORITIES`,
critical first, each most recently updated first) within their own small budget (:data:`START_MEMORY_TOKENS`,
whole lines, at most :data:`START_MEMORIES`), count the rest and agents' unverified key memories, give the counts per
category, and say where the rest is (``recall``/``search``; the hook's prompts). No agent's unverified record is
listed: at session start an agent's "critical" proposal is counted, and recall gives it with its mark when relevant.

The restore pack reads its key memories with :func:`key_memories_of` too (each author's apart, agents' last).

**What a start gives is marked as given to the session** (a twenty-second pass). Given a session (the hook's delta
session, the MCP tool's ``session_id`` as its ``recall`` keys it), the key memories a start lists are recorded in
that session's given-set once the answer is delivered, only those whose line it printed whole
(:meth:`StartMemory.mark_given`, :func:`synapse_nb.recall.delta.mark_records`): the per-turn recall (the prompt
hook, MCP ``recall``) then leaves them out as given earlier, unless they changed since (their digest). Before, each
was given again as new by the first prompt that matched it, after the session's start had just given it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from synapse_nb._util import estimate_tokens, plural
from synapse_nb.errors import SynapseError
from synapse_nb.models import CATEGORIES
from synapse_nb.recall.assembly import record_line
from synapse_nb.recall.pack import KEY_PRIORITIES

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.kinds.memories import Memories
    from synapse_nb.models import Memory

__all__ = ["START_MEMORIES", "START_MEMORY_TOKENS", "KeyMemories", "StartMemory", "key_memories_of", "none_approved",
           "start_memory"]

#: The token budget of what a session's start says of the memory (the key memories' lines, the counts, the pointer).
START_MEMORY_TOKENS = 300
#: Most key memories a session's start lists.
START_MEMORIES = 8
#: The authors whose key memories are read apart, people's first: verified (by a person), a person's unverified; then
#: agents' unverified ones (:data:`_AGENTS`; 50 agent memories marked critical filled one list of 50, and no verified
#: memory reached the restore pack).
_AUTHORS: tuple[Mapping[str, Any], ...] = ({"verified": True}, {"verified": False, "source": "user"})
_AGENTS: Mapping[str, Any] = {"verified": False, "source": "agent"}


@dataclass(frozen=True)
class KeyMemories:
    """The key memories read (at most ``most`` of each priority and author, newest first), people's and agents'
    apart, and how many there are of each in all."""

    people: list[Memory]
    people_total: int
    agents: list[Memory] = field(default_factory=list)
    agents_total: int = 0


def key_memories_of(memories: Memories, most: int, *, agents: bool = True) -> KeyMemories:
    """The key memories of ``memories`` (priority critical or high): those a person verified, then a person's
    unverified, each critical first and most recently updated first; then (``agents``: listed, else only counted)
    agents' unverified ones. Each author's are read apart, so no number of agent memories pushes a person's out."""
    people: list[Memory] = []
    total = 0
    for who in _AUTHORS:
        for p in KEY_PRIORITIES:
            page = memories.page(priority=p, sort="updated", descending=True, limit=most, **who)
            people += page.items
            total += page.total
    theirs: list[Memory] = []
    n_agents = 0
    for p in KEY_PRIORITIES:
        page = memories.page(priority=p, sort="updated", descending=True, limit=most if agents else 1, **_AGENTS)
        theirs += page.items if agents else []
        n_agents += page.total
    return KeyMemories(people, total, theirs, n_agents)


@dataclass(frozen=True)
class StartMemory:
    """What a session's start says of the memory: ``text`` and its numbers (the MCP answer's fields)."""

    text: str
    #: memories in force (not expired), and how many a person verified
    total: int
    verified: int
    by_category: dict[str, int]
    #: people's key memories in all, and the ids of those listed
    key: int
    shown: tuple[str, ...]
    #: agents' unverified key memories (counted, never listed)
    agents_key: int
    #: ``text`` as parts, one a line, each key memory's line with its id (what a hook's cut keeps whole: its ids)
    parts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    _mark: Callable[[Collection[str] | None], None] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"memories": self.total, "verified": self.verified, "by_category": dict(self.by_category),
                "key_memories": self.key, "key_shown": list(self.shown), "agents_key_memories": self.agents_key}

    def given_in(self, delivered: str) -> set[str]:
        """The ids of the key memories whose line ``delivered`` (the answer as sent, cut or not) holds whole."""
        lines = set(delivered.split("\n"))
        return {ids[0] for line, ids in self.parts if ids and line in lines}

    def mark_given(self, ids: Collection[str] | None = None) -> None:
        """Record the key memories listed (only ``ids``, those the delivery held whole; None: all) as given to the
        session :func:`start_memory` was asked for, once the answer is delivered; without a session, nothing."""
        if self._mark is not None:
            self._mark(ids)


def start_memory(memories: Memories, rest: str, budget_tokens: int = START_MEMORY_TOKENS, *,
                 session: str | None = None) -> StartMemory:
    """What a session's start says of ``memories`` within ``budget_tokens``: people's key memories, whole lines (at
    most :data:`START_MEMORIES`, stopping at the first that does not fit), what was left out counted, the counts per
    category, and ``rest``: where the rest is, in the surface's words. With ``session`` (as the per-turn recall names
    it), :meth:`StartMemory.mark_given` records the listed memories as given to it.

    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> _ = v.remember("procedure", "migrations", "run alembic upgrade head", priority="high")
    >>> print(start_memory(v.memories, "The rest: recall(query).").text)
    Key memories (priority critical or high; people's):
    - [user · verified] [high] procedure/migrations: run alembic upgrade head
    Memory: 1 entry, 1 verified: procedure 1.
    The rest: recall(query).
    """
    from synapse_nb.recall.delta import check_session

    check_session(session)  # as a recall's, before anything is read
    key = key_memories_of(memories, START_MEMORIES, agents=False)
    by_category = {c: n for c in CATEGORIES if (n := memories.count(category=c, include_expired=False))}
    total = sum(by_category.values())
    verified = memories.page(verified=True, limit=1).total if total else 0
    counts = (f"Memory: {plural(total, 'entry', 'entries')}, {verified:,} verified: "
              + ", ".join(f"{c} {n:,}" for c, n in by_category.items()) + "." if total else "Memory: 0 entries.")
    tail = [counts, rest] if rest else [counts]
    used = sum(estimate_tokens(x + "\n") for x in tail) + 40  # the heading and the line counting what was left out
    lines: list[str] = []
    listed: list[Memory] = []
    for m in key.people[:START_MEMORIES]:
        line = record_line(m)
        cost = estimate_tokens(line + "\n")
        if used + cost > budget_tokens:
            break
        lines.append(line)
        listed.append(m)
        used += cost
    shown = [m.id for m in listed]
    out: list[str] = []
    parts: list[tuple[str, tuple[str, ...]]] = []
    if lines:
        out += ["Key memories (priority critical or high; people's):", *lines]
        parts += [(out[0], ()), *((line, (m.id,)) for line, m in zip(lines, listed, strict=True))]
    left = key.people_total - len(lines)
    more = [f"{left:,}{' more' if lines else ''} of people's key memories"] if left else []
    if key.agents_total:
        more.append(f"{key.agents_total:,} of agents' (unverified)")
    if more:
        are = "is" if left + key.agents_total == 1 else "are"
        out.append(f"({' and '.join(more)} {are} not listed here)")
    text = "\n".join([*out, *tail])
    parts += [(line, ()) for line in text.split("\n")[len(parts):]]
    # (what the session is given is recorded through the memories' own context: its actor and surface key the
    # session as the per-turn recall's does)
    mark = functools.partial(_mark_listed, memories._ctx, session, listed) if session is not None and listed else None
    return StartMemory(text, total, verified, by_category, key.people_total, tuple(shown), key.agents_total,
                       tuple(parts), mark)


def _mark_listed(ctx: Context, session: str, listed: Sequence[Memory], ids: Collection[str] | None = None) -> None:
    from synapse_nb.recall.delta import mark_records

    mark_records(ctx, session, [m for m in listed if ids is None or m.id in ids])


class _Lessons(Protocol):
    def expired_count(self) -> int: ...

    def not_in_force(self) -> dict[str, int]: ...


def none_approved(lessons: _Lessons) -> str:
    """What a session's start says where the banner would be when no approved lesson is in force: "yet" only where
    none exists and none ever ran out (review 86: it read as a new project after every lesson expired); where approved
    lessons exist but are not in force here, that they exist and why, as counts (review 95: a vault read as borrowed
    said "No approved lessons yet" of three approved lessons). Nothing about approving: that is the person's act.
    ``lessons``: the vault's lessons (``v.lessons``; a protocol, so this module needs no vault: the vault's facade
    reads it).

    >>> class L:
    ...     def expired_count(self): return 0
    ...     def not_in_force(self): return {"borrowed": 3, "branch": 0}
    >>> print(none_approved(L()))  # doctest: +NORMALIZE_WHITESPACE
    No approved lesson is in force here: 3 approved lessons of this vault were not approved in this checkout
    (the borrowed vault's line above says why).
    """
    try:
        apart = lessons.not_in_force()
    except SynapseError:
        apart = {}
    borrowed, branch = apart.get("borrowed", 0), apart.get("branch", 0)
    if borrowed or branch:
        why = []
        if borrowed:
            were = "was" if borrowed == 1 else "were"
            why.append(f"{plural(borrowed, 'approved lesson')} of this vault {were} not approved in this checkout (the "
                       "borrowed vault's line above says why)")
        if branch:
            why.append(f"{plural(branch, 'approved lesson')} {'holds' if branch == 1 else 'hold'} on other branches "
                       "only")
        return f"No approved lesson is in force here: {' and '.join(why)}."
    try:
        expired = lessons.expired_count()
    except SynapseError:
        expired = 0
    return "No approved lessons." if expired else "No approved lessons yet."
