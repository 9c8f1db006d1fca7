"""The one routing-metrics module agrees with scikit-learn on random inputs; one out-of-scope definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

from synapse_nb.errors import ValidationError
from synapse_nb.gate.metrics import (
    OOS,
    RoutingMetrics,
    bootstrap_ci,
    normalize_label,
    routing_metrics,
    threshold_counts,
)


def _random_pair(rng: np.random.Generator, n: int) -> tuple[list, list]:
    choices = ["a", "b", "c", "d", None, "oos", "", "NULL"]
    return ([choices[i] for i in rng.integers(0, len(choices), n)],
            [choices[i] for i in rng.integers(0, len(choices), n)])


@pytest.mark.parametrize("seed", range(20))
def test_routing_metrics_agree_with_scikit_learn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t, p = _random_pair(rng, int(rng.integers(1, 60)))
    m = routing_metrics(t, p)
    ts = [OOS if normalize_label(v) is None else v for v in t]
    ps = [OOS if normalize_label(v) is None else v for v in p]
    assert m.accuracy == pytest.approx(accuracy_score(ts, ps))
    inn = [i for i, v in enumerate(ts) if v != OOS]
    if inn:
        assert m.in_scope_accuracy == pytest.approx(accuracy_score([ts[i] for i in inn], [ps[i] for i in inn]))
    else:
        assert m.in_scope_accuracy is None
    if OOS in ts:
        pr, rc, f1, _ = precision_recall_fscore_support(
            [v == OOS for v in ts], [v == OOS for v in ps], average="binary", zero_division=0)
        assert (m.oos_precision, m.oos_recall, m.oos_f1) == pytest.approx((pr, rc, f1))
    else:
        assert m.oos_recall is m.oos_precision is m.oos_f1 is None
    classes = m.confusion["true"].to_list()
    cm = confusion_matrix(ts, ps, labels=classes)
    assert m.confusion.drop("true").to_numpy().tolist() == cm.tolist()
    labels = m.per_route["route"].to_list()
    pr, rc, f1, sup = precision_recall_fscore_support(ts, ps, labels=labels, average=None, zero_division=0)
    assert m.per_route["recall"].to_list() == pytest.approx(rc.tolist())
    assert m.per_route["support"].to_list() == sup.tolist()


@pytest.mark.parametrize("seed", range(10))
def test_threshold_counts_equal_routing_metrics_at_every_threshold(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    top = np.round(rng.random(n), 2)  # ties on purpose
    is_oos = rng.random(n) < 0.3
    correct = (rng.random(n) < 0.7) & ~is_oos
    ths = np.array([-math.inf, 0.0, 0.25, 0.5, 0.51, 0.99, math.inf])
    c = threshold_counts(top, correct, is_oos, ths)
    truth = [None if o else "r" for o in is_oos]
    for k, th in enumerate(ths):
        pred = [None if s < th else ("r" if ok else "other") for s, ok in zip(top, correct, strict=True)]
        m = routing_metrics(truth, pred)
        for key in ("accuracy", "in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1"):
            want = getattr(m, key)
            got = c[key][k]
            assert (want is None and np.isnan(got)) or got == pytest.approx(want), (key, th)


def test_bootstrap_counts_equal_the_callable_path() -> None:
    rng = np.random.default_rng(5)
    t, p = _random_pair(rng, 80)
    for name in ("accuracy", "in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1"):
        fast = bootstrap_ci(t, p, name, n_boot=200, seed=3)
        slow = bootstrap_ci(t, p, lambda a, b, name=name: getattr(routing_metrics(a, b), name), n_boot=200, seed=3)
        assert fast == pytest.approx(slow), name
    assert bootstrap_ci(["a"], ["a"], "oos_recall", n_boot=10) == (None, None)
    with pytest.raises(ValidationError, match="unknown metric"):
        bootstrap_ci(["a"], ["a"], "f2")


def test_one_out_of_scope_definition_everywhere() -> None:
    from synapse_nb.eval import data as eval_data
    from synapse_nb.eval import normalize_label as from_eval
    from synapse_nb.gate import metrics

    assert from_eval is normalize_label and eval_data.normalize_label is normalize_label
    for raw in (None, "", " OOS ", "none", "Null", float("nan")):
        assert normalize_label(raw) is None
    assert normalize_label(7) == "7" and normalize_label(" billing ") == "billing"
    with pytest.raises(ValidationError, match="boolean"):
        normalize_label(True)
    assert not hasattr(eval_data, "OOS_STRINGS") and metrics.OOS_STRINGS == ("", "none", "null", "oos")
    import synapse_nb.eval.metrics as em
    import synapse_nb.gate.router as gr

    assert not hasattr(em, "routing_metrics") and not hasattr(em, "RoutingMetrics")  # retired duplicates
    assert not hasattr(gr, "RouterMetrics") and not hasattr(gr, "OOS_LABELS")


def test_result_type_renders() -> None:
    m = routing_metrics(["a", None, "b"], ["a", None, None], routes=["a", "b", "c"])
    assert isinstance(m, RoutingMetrics)
    assert m.per_route["route"].to_list() == ["a", "b", "c", "oos"]
    assert "RoutingMetrics(n=3" in repr(m) and "<table>" in m._repr_html_()
    assert m.confusion_pandas().loc["b", "oos"] == 1
    with pytest.raises(ValidationError, match="same length"):
        routing_metrics(["a"], ["a", "b"])
