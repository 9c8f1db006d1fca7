"""Evaluation: labelled routing data, metrics, router evaluation, and the LoCoMo loader.

Router evaluation (:mod:`~synapse_nb.eval.routing`, :mod:`~synapse_nb.eval.variants`) loads on first
use: it needs scikit-learn, which the LoCoMo retrieval evaluation does not.

>>> from synapse_nb.eval import routing_metrics
>>> routing_metrics(["a", None], ["a", None]).accuracy
1.0
"""

from __future__ import annotations

import typing as _typing  # a private name: this package's dir() lists only its public API

from synapse_nb.eval.data import LabelledData, bundled_datasets_dir, load_dataset, load_labelled
from synapse_nb.eval.locomo import Conversation, Question, Turn, load_locomo, normalize_evidence
from synapse_nb.eval.metrics import mrr, ndcg_at_k, recall_at_k
from synapse_nb.eval.retrieval import RETRIEVERS, locomo_questions, locomo_table, run_locomo_eval
from synapse_nb.gate.metrics import RoutingMetrics, bootstrap_ci, normalize_label, routing_metrics

if _typing.TYPE_CHECKING:
    from synapse_nb.eval.results import load_results, save_results
    from synapse_nb.eval.routing import RouterEvaluation, RouterLike, evaluate_router, run_gate_eval
    from synapse_nb.eval.sweep import threshold_sweep
    from synapse_nb.eval.variants import VARIANTS, gate_variants

__all__ = [
    "Conversation",
    "LabelledData",
    "Question",
    "RETRIEVERS",
    "RouterEvaluation",
    "RouterLike",
    "RoutingMetrics",
    "Turn",
    "VARIANTS",
    "bootstrap_ci",
    "bundled_datasets_dir",
    "evaluate_router",
    "gate_variants",
    "load_dataset",
    "load_labelled",
    "load_locomo",
    "load_results",
    "locomo_questions",
    "locomo_table",
    "mrr",
    "ndcg_at_k",
    "normalize_evidence",
    "normalize_label",
    "recall_at_k",
    "routing_metrics",
    "run_gate_eval",
    "run_locomo_eval",
    "save_results",
    "threshold_sweep",
]

# Lazy exports (the package's one idiom: names for type checkers under TYPE_CHECKING, a plain
# ``from ... import`` inside ``__getattr__`` so the import-graph test sees the edge, the value cached).
_ROUTING_NAMES = ("RouterEvaluation", "RouterLike", "evaluate_router", "run_gate_eval")
_RESULTS_NAMES = ("load_results", "save_results")
_VARIANTS_NAMES = ("VARIANTS", "gate_variants")


def __getattr__(name: str) -> _typing.Any:
    if name in _ROUTING_NAMES:
        from synapse_nb.eval import routing  # router evaluation: loads the router (scikit-learn) on first use

        value = getattr(routing, name)
    elif name in _RESULTS_NAMES:
        from synapse_nb.eval import results  # polars-backed results files

        value = getattr(results, name)
    elif name == "threshold_sweep":
        from synapse_nb.eval import sweep  # the threshold curve

        value = sweep.threshold_sweep
    elif name in _VARIANTS_NAMES:
        from synapse_nb.eval import variants  # imports scikit-learn at module level (it subclasses the Router)

        value = getattr(variants, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
