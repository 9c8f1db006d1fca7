"""Recall: per turn, only what is new and relevant across all memories, or "nothing new".

``vault.recall(query, session=..., branch=..., files=..., budget_tokens=...)``, one module per step
(docs/recall.md; why: docs/decisions/0008-recall-engine-v2.md):

1. **Rank** (:mod:`~synapse_nb.recall.rank`) — the store's BM25 over the ranking table (each record's gate text
   and, at a lower weight, the two records before it in its thread), then the structure step: neighbours in the
   thread (an answer follows its question), the thread's best, the actor the query names, tag / key / file
   bonuses. Ties by id. Lessons, the ranking, word statistics and the session's history are read in one snapshot.
2. **Gate** (:mod:`~synapse_nb.recall.scoring`) — "nothing new" unless the query's support (best
   and second-best coverage among the top ranked records, :mod:`~synapse_nb.recall.coverage`, less the share of
   the query's words the vault never saw) reaches :attr:`Bars.floor`; then one walk
   in rank order: the margin to the best rank score, the session delta (what the session already received
   unchanged is skipped without using a slot, :mod:`~synapse_nb.recall.delta`), top-k per kind, token budget.
3. **Marks** (:mod:`~synapse_nb.recall.stale`) — kept records whose files changed since, or were missing at the
   last ``verify --fix``, say so.
4. **Assembly** (:mod:`~synapse_nb.recall.assembly`) — the approved-lesson banner first (always), then hits
   grouped by kind, priority then recency, ``[unverified]`` marked, notes as their trigger only
   (``vault.notes.expand(name)``, the MCP tool ``expand_note``).

:class:`~synapse_nb.recall.engine.Recaller` runs the steps (it is loaded by the first recall, with the gate);
the public types are in :mod:`~synapse_nb.recall.types` and re-exported here.
"""

from __future__ import annotations

from synapse_nb.recall.assembly import BANNER, banner_text, legend_for, record_line, with_legend
from synapse_nb.recall.types import (
    EMPTY_REASONS,
    KIND_ORDER,
    MAX_EXPLAIN,
    MAX_QUERY_CHARS,
    Bars,
    ExplainRow,
    Recall,
    RecallExplanation,
    RecallItem,
)

__all__ = ["BANNER", "EMPTY_REASONS", "KIND_ORDER", "MAX_EXPLAIN", "MAX_QUERY_CHARS", "Bars", "ExplainRow", "Recall",
           "RecallExplanation", "RecallItem", "banner_text", "legend_for", "record_line", "with_legend"]
