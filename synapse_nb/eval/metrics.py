"""Routing and retrieval metrics: out-of-scope aware routing scores, bootstrap intervals, recall@k, NDCG, MRR.

Routing labels are route names; ``None`` (or ``""``, ``"oos"``, ``"None"``) means *out of scope*. Every
figure is a fraction in [0, 1]; a figure that is undefined on the data (no out-of-scope rows for
``oos_recall``) is ``None``, never a misleading 0.

Examples
--------
>>> m = routing_metrics(["a", "b", None, None], ["a", None, None, "a"])
>>> m.in_scope_accuracy, m.oos_recall, m.oos_precision, m.accuracy
(0.5, 0.5, 0.5, 0.5)
>>> recall_at_k(["d3", "d1", "d9"], {"d1", "d2"}, k=2)
0.5
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from synapse_nb.errors import ValidationError
from synapse_nb.eval.data import normalize_label

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import polars as pl

__all__ = [
    "HEADLINE_METRICS",
    "OOS",
    "RoutingMetrics",
    "bootstrap_ci",
    "mrr",
    "ndcg_at_k",
    "recall_at_k",
    "routing_metrics",
]

#: the name used for "out of scope" in confusion tables and per-class reports
OOS = "oos"
#: the figures reported with bootstrap intervals
HEADLINE_METRICS: tuple[str, ...] = ("in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1", "accuracy")


def _normalise_pair(y_true: Sequence[Any], y_pred: Sequence[Any]) -> tuple[list[str | None], list[str | None]]:
    t = [normalize_label(v) for v in y_true]
    p = [normalize_label(v) for v in y_pred]
    if len(t) != len(p):
        raise ValidationError(f"y_true has {len(t)} labels but y_pred has {len(p)}; they must be the same length")
    if not t:
        raise ValidationError("y_true is empty; routing metrics need at least one labelled row")
    return t, p


def _frac(num: float, den: float) -> float | None:
    return None if den == 0 else float(num) / float(den)


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


@dataclass(frozen=True)
class RoutingMetrics:
    """Routing quality with out-of-scope handling. All figures are fractions in [0, 1].

    Attributes
    ----------
    n, n_in_scope, n_oos
        Rows scored, of which labelled with a route / out of scope.
    in_scope_accuracy
        Among rows with a true route, the share routed to exactly that route (``None`` if there are none).
    oos_recall, oos_precision, oos_f1
        Out of scope as the positive class; ``None`` when there are no out-of-scope rows. Precision is
        0.0 when nothing was predicted out of scope.
    accuracy
        Share of rows whose prediction equals the truth, out of scope counting as its own class.
    per_route
        polars DataFrame ``route, precision, recall, f1, support`` (sklearn, ``zero_division=0``),
        routes sorted, plus a final ``oos`` row when there are out-of-scope rows.
    confusion
        polars DataFrame: column ``true`` then one column per predicted class (routes sorted, ``oos`` last);
        cell = count.
    """

    n: int
    n_in_scope: int
    n_oos: int
    in_scope_accuracy: float | None
    oos_recall: float | None
    oos_precision: float | None
    oos_f1: float | None
    accuracy: float
    per_route: pl.DataFrame
    confusion: pl.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The scalar figures (JSON-safe)."""
        return {
            "n": self.n,
            "n_in_scope": self.n_in_scope,
            "n_oos": self.n_oos,
            "in_scope_accuracy": self.in_scope_accuracy,
            "oos_recall": self.oos_recall,
            "oos_precision": self.oos_precision,
            "oos_f1": self.oos_f1,
            "accuracy": self.accuracy,
        }

    def confusion_pandas(self) -> pd.DataFrame:
        """The confusion table as pandas, indexed by the true class."""
        return self.confusion.to_pandas().set_index("true")

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={_fmt(v)}" for k, v in self.to_dict().items())
        return f"RoutingMetrics({parts})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{_fmt(v)}</td></tr>"
            for k, v in self.to_dict().items()
        )
        return f"<table><caption>RoutingMetrics</caption>{rows}</table>"


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def routing_metrics(y_true: Sequence[Any], y_pred: Sequence[Any]) -> RoutingMetrics:
    """Score route predictions against the truth, with out of scope (``None``) as a class of its own.

    Parameters
    ----------
    y_true, y_pred
        Route names; ``None``, ``""``, ``"oos"`` or ``"None"`` mean out of scope.

    Returns
    -------
    RoutingMetrics

    Examples
    --------
    >>> m = routing_metrics(["a", "a", "b"], ["a", "b", "b"])
    >>> round(m.in_scope_accuracy, 3), m.oos_recall
    (0.667, None)
    >>> m.per_route["route"].to_list()
    ['a', 'b']
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support  # scikit-learn: seconds

    t, p = _normalise_pair(y_true, y_pred)
    n = len(t)
    t_oos = np.array([v is None for v in t])
    p_oos = np.array([v is None for v in p])
    correct = np.array([a == b for a, b in zip(t, p, strict=True)])
    n_oos = int(t_oos.sum())
    n_in = n - n_oos
    in_acc = _frac(correct[~t_oos].sum(), n_in)
    if n_oos:
        rec = _frac((t_oos & p_oos).sum(), n_oos)
        prec = float((t_oos & p_oos).sum() / p_oos.sum()) if p_oos.sum() else 0.0
        f1 = _f1(prec, rec)
    else:
        rec = prec = f1 = None
    routes = sorted({v for v in (*t, *p) if v is not None})
    classes = [*routes, OOS] if (t_oos.any() or p_oos.any()) else routes
    ts = [OOS if v is None else v for v in t]
    ps = [OOS if v is None else v for v in p]
    true_routes = sorted({v for v in t if v is not None})
    report_labels = [*true_routes, OOS] if n_oos else true_routes
    if report_labels:
        pr, rc, f, sup = precision_recall_fscore_support(ts, ps, labels=report_labels, zero_division=0)
    else:
        pr = rc = f = sup = np.array([])
    per_route = pl.DataFrame(
        {
            "route": report_labels,
            "precision": [float(x) for x in pr],
            "recall": [float(x) for x in rc],
            "f1": [float(x) for x in f],
            "support": [int(x) for x in sup],
        },
        schema={"route": pl.String, "precision": pl.Float64, "recall": pl.Float64, "f1": pl.Float64,
                "support": pl.Int64},
    )
    cm = confusion_matrix(ts, ps, labels=classes)
    confusion = pl.DataFrame(
        {"true": classes, **{c: [int(x) for x in cm[:, j]] for j, c in enumerate(classes)}},
        schema={"true": pl.String, **{c: pl.Int64 for c in classes}},
    )
    return RoutingMetrics(
        n=n,
        n_in_scope=n_in,
        n_oos=n_oos,
        in_scope_accuracy=in_acc,
        oos_recall=rec,
        oos_precision=prec,
        oos_f1=f1,
        accuracy=float(correct.mean()),
        per_route=per_route,
        confusion=confusion,
    )


# ------------------------------------------------------------------------------------------- bootstrap


def _vector_metric(name: str, correct: np.ndarray, t_oos: np.ndarray, p_oos: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Return f(idx[b, n]) -> metric per bootstrap row (nan where undefined)."""
    both = t_oos & p_oos
    ins = ~t_oos

    def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)

    def in_scope_accuracy(idx: np.ndarray) -> np.ndarray:
        return ratio((correct & ins)[idx].sum(1), ins[idx].sum(1))

    def oos_recall(idx: np.ndarray) -> np.ndarray:
        return ratio(both[idx].sum(1), t_oos[idx].sum(1))

    def oos_precision(idx: np.ndarray) -> np.ndarray:
        tp, pp, n_oos = both[idx].sum(1), p_oos[idx].sum(1), t_oos[idx].sum(1)
        prec = np.where(pp > 0, tp / np.where(pp > 0, pp, 1), 0.0)
        return np.where(n_oos > 0, prec, np.nan)

    def oos_f1(idx: np.ndarray) -> np.ndarray:
        r, p = oos_recall(idx), oos_precision(idx)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where((p + r) > 0, 2 * p * r / np.where((p + r) > 0, p + r, 1), 0.0)
        return np.where(np.isnan(r), np.nan, f)

    def accuracy(idx: np.ndarray) -> np.ndarray:
        return correct[idx].mean(1)

    table = {
        "in_scope_accuracy": in_scope_accuracy,
        "oos_recall": oos_recall,
        "oos_precision": oos_precision,
        "oos_f1": oos_f1,
        "accuracy": accuracy,
    }
    if name not in table:
        raise ValidationError(f"unknown metric {name!r}; accepted: {', '.join(table)} or a callable")
    return table[name]


def bootstrap_ci(
    y_true: Sequence[Any],
    y_pred: Sequence[Any],
    metric: str | Callable[[list[str | None], list[str | None]], float | None],
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of a routing metric; deterministic for a given ``seed``.

    Parameters
    ----------
    y_true, y_pred
        Labels as for :func:`routing_metrics`.
    metric
        A :class:`RoutingMetrics` figure name (``"in_scope_accuracy"``, ``"oos_recall"``,
        ``"oos_precision"``, ``"oos_f1"``, ``"accuracy"``; computed vectorised) or a callable
        ``f(y_true, y_pred) -> float | None``.
    n_boot
        Number of resamples (rows drawn with replacement, numpy PCG64 seeded with ``seed``).
    alpha
        The interval covers ``1 - alpha``.

    Returns
    -------
    (low, high)
        ``(None, None)`` when the metric is undefined on every resample (no out-of-scope rows, ...).

    Examples
    --------
    >>> lo, hi = bootstrap_ci(["a", "b", "a", None], ["a", "b", "b", None], "accuracy", n_boot=200)
    >>> 0.0 <= lo <= 0.75 <= hi <= 1.0
    True
    """
    if n_boot < 1:
        raise ValidationError(f"n_boot={n_boot}; accepted: an integer >= 1")
    if not 0 < alpha < 1:
        raise ValidationError(f"alpha={alpha}; accepted: a number strictly between 0 and 1")
    t, p = _normalise_pair(y_true, y_pred)
    n = len(t)
    rng = np.random.default_rng(seed)
    values: list[np.ndarray] = []
    if isinstance(metric, str):
        correct = np.array([a == b for a, b in zip(t, p, strict=True)])
        t_oos = np.array([v is None for v in t])
        p_oos = np.array([v is None for v in p])
        fn = _vector_metric(metric, correct, t_oos, p_oos)
        chunk = max(1, min(n_boot, 2_000_000 // max(n, 1)))
        done = 0
        while done < n_boot:
            k = min(chunk, n_boot - done)
            values.append(fn(rng.integers(0, n, size=(k, n))).astype(float))
            done += k
    elif callable(metric):
        out = np.empty(n_boot)
        for b in range(n_boot):
            idx = rng.integers(0, n, size=n)
            v = metric([t[i] for i in idx], [p[i] for i in idx])
            out[b] = np.nan if v is None else float(v)
        values.append(out)
    else:
        raise ValidationError(f"metric={metric!r}; accepted: a RoutingMetrics figure name or a callable")
    allv = np.concatenate(values)
    allv = allv[~np.isnan(allv)]
    if allv.size == 0:
        return (None, None)
    low, high = np.quantile(allv, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))


# ------------------------------------------------------------------------------------------- retrieval


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValidationError(f"k={k!r}; accepted: an integer >= 1")


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float | None:
    """Share of the relevant ids found in the first ``k`` ranked ids: ``|top-k ∩ relevant| / |relevant|``.

    Duplicates in ``ranked`` count once. ``None`` when ``relevant`` is empty (the question has no gold).

    Examples
    --------
    >>> recall_at_k(["a", "b", "c"], {"a", "c"}, k=2)
    0.5
    >>> recall_at_k(["a"], set(), k=5) is None
    True
    """
    _check_k(k)
    gold = set(relevant)
    if not gold:
        return None
    return len(set(ranked[:k]) & gold) / len(gold)


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float | None:
    """NDCG@k with binary gains: DCG = sum of ``1/log2(rank + 1)`` over relevant hits in the top ``k``,
    divided by the ideal DCG over ``min(|relevant|, k)`` hits. A repeated id only scores its first rank.
    ``None`` when ``relevant`` is empty.

    Examples
    --------
    >>> ndcg_at_k(["a", "b"], {"a"}, k=10)
    1.0
    >>> round(ndcg_at_k(["x", "a"], {"a"}, k=10), 4)
    0.6309
    """
    _check_k(k)
    gold = set(relevant)
    if not gold:
        return None
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in gold and doc not in seen:
            dcg += 1.0 / math.log2(rank + 1)
        seen.add(doc)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def mrr(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float | None:
    """Reciprocal rank of the first relevant id (within the first ``k`` when given), 0.0 if none is found.

    Average it over questions for the mean reciprocal rank. ``None`` when ``relevant`` is empty.

    Examples
    --------
    >>> mrr(["x", "y", "a"], {"a", "b"})
    0.3333333333333333
    >>> mrr(["x", "y", "a"], {"a"}, k=2)
    0.0
    """
    if k is not None:
        _check_k(k)
    gold = set(relevant)
    if not gold:
        return None
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc in gold:
            return 1.0 / rank
    return 0.0
