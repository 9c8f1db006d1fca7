"""The deterministic TF-IDF gate: relevance scoring for recall, and an intent router.

Offline, no model calls, the same answer whatever ``PYTHONHASHSEED``. See ``docs/gate.md``.

>>> from synapse_nb.gate import CorpusScorer, query_terms
>>> query_terms("Deploying the API")
['api', 'deploying']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synapse_nb.gate.scorer import CorpusScorer, GateConfig, Match, ScoreBatch, idf, query_terms

if TYPE_CHECKING:  # the router imports scikit-learn: loaded on first use, so recall stays light
    from synapse_nb.gate.router import CRITERIA, METHODS, OOS_LABELS, ROUTER_CONFIG, RouteMetrics, Router, RouterMetrics

_ROUTER_NAMES = ("CRITERIA", "METHODS", "OOS_LABELS", "ROUTER_CONFIG", "RouteMetrics", "Router", "RouterMetrics")


def __getattr__(name: str) -> Any:
    if name in _ROUTER_NAMES:
        from synapse_nb.gate import router

        return getattr(router, name)
    raise AttributeError(f"module 'synapse_nb.gate' has no attribute {name!r}")

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
    "ScoreBatch",
    "idf",
    "query_terms",
]
