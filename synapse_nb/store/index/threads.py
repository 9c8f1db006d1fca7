"""Which record a semantic document ends with: the record before it in its thread (moved out of
:mod:`synapse_nb.store.indexer`, which is at the module size cap)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synapse_nb.store.base import Candidate, RecallQueries

__all__ = ["neighbours"]


def neighbours(recall: RecallQueries, cands: Sequence[Candidate],
               whole: dict[str, dict[str, str]] | None) -> tuple[dict[str, str], set[str], set[str]]:
    """(id -> the id whose text its document ends with; the ids whose document ends with a candidate's; the
    candidates that are agents' unverified records, read when ``whole`` is None).
    ``whole`` keeps each mind's map across calls (a rebuild reads every mind's structure once).

    The record before it in its thread, by seq then id; for a person's record, the person's record before it:
    an agent's unverified record (``RankRow.agent``, :func:`synapse_nb.store.sql.authors.agents_case`) is
    skipped, so an agent, who may give its episode any thread and seq, never moves a person's vector."""
    by_mind: dict[str, list[str]] = {}
    for c in cands:
        by_mind.setdefault(c.mind, []).append(c.id)
    out: dict[str, str] = {}
    after: set[str] = set()
    agents: set[str] = set()
    for mind, ids in sorted(by_mind.items()):
        if whole is not None and mind in whole:
            prev = whole[mind]
        else:
            rows = recall.rank_rows(mind) if whole is not None else recall.rank_rows(mind, ids=ids)
            threads: dict[str, list[tuple[int, str, bool]]] = {}
            asked = set(ids) if whole is None else set()
            for r in rows:
                if r.agent and r.id in asked:
                    agents.add(r.id)
                if r.thread is not None:
                    threads.setdefault(r.thread, []).append((r.seq or 0, r.id, r.agent))
            prev = {}
            for members in threads.values():
                members.sort()
                last: str | None = None
                last_person: str | None = None
                for _, rid, agent in members:
                    p = last if agent else last_person
                    if p is not None:
                        prev[rid] = p
                    last = rid
                    if not agent:
                        last_person = rid
            if whole is not None:
                whole[mind] = prev
        out.update((i, prev[i]) for i in ids if i in prev)
        if whole is None:
            wanted = set(ids)
            after.update(i for i, p in prev.items() if p in wanted)
    return out, after, agents
