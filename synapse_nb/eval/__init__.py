"""Evaluation: labelled routing data, metrics, router evaluation, and the LoCoMo loader.

>>> from synapse_nb.eval import routing_metrics
>>> routing_metrics(["a", None], ["a", None]).accuracy
1.0
"""

from __future__ import annotations

from synapse_nb.eval.data import LabelledData, bundled_datasets_dir, load_dataset, load_labelled, normalize_label
from synapse_nb.eval.locomo import Conversation, Question, Turn, load_locomo, normalize_evidence
from synapse_nb.eval.metrics import RoutingMetrics, bootstrap_ci, mrr, ndcg_at_k, recall_at_k, routing_metrics
from synapse_nb.eval.routing import (
    RouterEvaluation,
    RouterLike,
    evaluate_router,
    load_results,
    run_gate_eval,
    save_results,
    threshold_sweep,
)

__all__ = [
    "Conversation",
    "LabelledData",
    "Question",
    "RouterEvaluation",
    "RouterLike",
    "RoutingMetrics",
    "Turn",
    "bootstrap_ci",
    "bundled_datasets_dir",
    "evaluate_router",
    "load_dataset",
    "load_labelled",
    "load_locomo",
    "load_results",
    "mrr",
    "ndcg_at_k",
    "normalize_evidence",
    "normalize_label",
    "recall_at_k",
    "routing_metrics",
    "run_gate_eval",
    "save_results",
    "threshold_sweep",
]
