"""The deterministic TF-IDF gate: relevance scoring for recall, and an intent router.

Offline, no model calls, the same answer whatever ``PYTHONHASHSEED``. See ``docs/gate.md``.

>>> from synapse_nb.gate import CorpusScorer, query_terms
>>> query_terms("Deploying the API")
['api', 'deploying']
"""

from __future__ import annotations

from synapse_nb.gate.router import (
    CRITERIA,
    METHODS,
    OOS_LABELS,
    ROUTER_CONFIG,
    RouteMetrics,
    Router,
    RouterMetrics,
)
from synapse_nb.gate.scorer import CorpusScorer, GateConfig, Match, idf, query_terms

__all__ = [
    "CRITERIA",
    "METHODS",
    "OOS_LABELS",
    "ROUTER_CONFIG",
    "CorpusScorer",
    "GateConfig",
    "Match",
    "RouteMetrics",
    "Router",
    "RouterMetrics",
    "idf",
    "query_terms",
]
