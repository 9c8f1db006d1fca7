"""The deterministic TF-IDF gate: relevance scoring for recall, and an intent router.

Offline, no model calls, the same answer whatever ``PYTHONHASHSEED``. See ``docs/gate.md``.

>>> from synapse_nb.gate import CorpusScorer, query_terms
>>> query_terms("Deploying the API")
['api', 'deploying']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synapse_nb.gate.defaults import CRITERIA, DEFAULT_CRITERION, DEFAULTS, METHODS, RouterDefaults

if TYPE_CHECKING:
    from synapse_nb.gate.metrics import OOS, RoutingMetrics, normalize_label, routing_metrics
    from synapse_nb.gate.router import ROUTER_CONFIG, Router
    from synapse_nb.gate.scorer import CorpusScorer, GateConfig, Match, ScoreBatch, idf, query_terms

# Lazy exports (the package's one idiom: names for type checkers under TYPE_CHECKING, a plain
# ``from ... import`` inside ``__getattr__`` so the import-graph test sees the edge, the value cached).
# The defaults load eagerly (the CLI's help text reads them; no numpy); the rest on first use, so that
# ``synapse-nb checkpoint create`` never imports numpy.
_ROUTER_NAMES = ("ROUTER_CONFIG", "Router")
_METRICS_NAMES = ("OOS", "RoutingMetrics", "normalize_label", "routing_metrics")
_SCORER_NAMES = ("CorpusScorer", "GateConfig", "Match", "ScoreBatch", "idf", "query_terms")


def __getattr__(name: str) -> Any:
    if name in _ROUTER_NAMES:
        from synapse_nb.gate import router  # imports scikit-learn (seconds): only when the router is used

        value = getattr(router, name)
    elif name in _METRICS_NAMES:
        from synapse_nb.gate import metrics

        value = getattr(metrics, name)
    elif name in _SCORER_NAMES:
        from synapse_nb.gate import scorer

        value = getattr(scorer, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CRITERIA",
    "DEFAULTS",
    "DEFAULT_CRITERION",
    "METHODS",
    "OOS",
    "ROUTER_CONFIG",
    "CorpusScorer",
    "GateConfig",
    "Match",
    "Router",
    "RouterDefaults",
    "RoutingMetrics",
    "ScoreBatch",
    "idf",
    "normalize_label",
    "query_terms",
    "routing_metrics",
]
