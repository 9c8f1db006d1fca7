"""Evaluation: labelled routing data, metrics, router evaluation, and the LoCoMo loader.

>>> from synapse_nb.eval import routing_metrics
>>> routing_metrics(["a", None], ["a", None]).accuracy
1.0
"""

from __future__ import annotations

from synapse_nb.eval.data import LabelledData, bundled_datasets_dir, load_dataset, load_labelled, normalize_label
from synapse_nb.eval.locomo import Conversation, Question, Turn, load_locomo, normalize_evidence
from synapse_nb.eval.metrics import RoutingMetrics, bootstrap_ci, mrr, ndcg_at_k, recall_at_k, routing_metrics
from synapse_nb.eval.retrieval import RETRIEVERS, locomo_questions, locomo_table, run_locomo_eval
from synapse_nb.eval.routing import (
    RouterEvaluation,
    RouterLike,
    evaluate_router,
    load_results,
    run_gate_eval,
    save_results,
    threshold_sweep,
)
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
