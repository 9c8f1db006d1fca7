"""Recall: per turn, only what is new and relevant across all memories, or "nothing new".

``vault.recall(query, session=..., branch=..., files=..., budget_tokens=...)``, one module per step:

1. **Candidates** (:mod:`~synapse_nb.recall.candidates`) — memories (not expired), decisions, checkpoints,
   episodes and note triggers of the mind. Small vaults are scored exhaustively from the store; large ones take
   candidates from the LanceDB index (vector + full text, fused by RRF) plus exact tag/key matches. A
   candidate's score is a pure function of (query, its text, the vault's word statistics), so both paths give
   the same answer wherever both can run. Lessons, candidates and word statistics are read in one snapshot.
2. **The gate** (:mod:`~synapse_nb.recall.scoring`) — :class:`synapse_nb.gate.CorpusScorer` (idf-weighted
   TF-IDF coverage, word and character n-grams) plus exact matches on tags, keys and the given files. A hit must
   clear :class:`Bars`: an absolute floor, a margin to the best hit, a top-k per kind and a token budget.
3. **Delta** (:mod:`~synapse_nb.recall.delta`) — with a ``session``, what that session already received
   unchanged is not repeated (its history is read once per recall).
4. **Marks** (:mod:`~synapse_nb.recall.stale`) — kept records whose files changed since, or were missing at the
   last ``verify --fix``, say so.
5. **Assembly** (:mod:`~synapse_nb.recall.render`) — the approved-lesson banner first (always), then hits
   grouped by kind, priority then recency, ``[unverified]`` marked, notes as their trigger only
   (``vault.notes.expand(name)``).

:class:`~synapse_nb.recall.engine.Recaller` runs the steps (it is loaded by the first recall, with the gate);
the public types are in :mod:`~synapse_nb.recall.types` and re-exported here.
"""

from __future__ import annotations

from synapse_nb.recall.render import BANNER, banner_text, record_line
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
           "RecallExplanation", "RecallItem", "banner_text", "record_line"]
