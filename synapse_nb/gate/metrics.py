"""Routing metrics, defined once: what "out of scope" means, the figures, their intervals, the threshold curve.

Every routing figure in synapse_nb comes from this module: :meth:`synapse_nb.gate.Router.evaluate` and
:meth:`~synapse_nb.gate.Router.calibrate`, :func:`synapse_nb.eval.evaluate_router`,
:func:`synapse_nb.eval.threshold_sweep` and the notebooks. The point figures are scikit-learn's
(``accuracy_score``, ``precision_recall_fscore_support``, ``confusion_matrix``); the bootstrap and the
threshold curve count the same per-row events with numpy, and ``tests/test_gate_metrics.py`` checks that
they agree with scikit-learn on random inputs.

Out of scope is ``None``. A raw label that is ``None``, NaN, or a string that is empty, ``"oos"``,
``"none"`` or ``"null"`` (any case, surrounding spaces ignored) means out of scope
(:func:`normalize_label`); so no route can be called ``"oos"``, and tables name the out-of-scope class
:data:`OOS`.

Pure: numpy here, scikit-learn and polars imported where a figure or a table is built.

Examples
--------
>>> m = routing_metrics(["a", "b", None, None], ["a", None, None, "a"])
>>> m.in_scope_accuracy, m.oos_recall, m.oos_precision, m.accuracy
(0.5, 0.5, 0.5, 0.5)
>>> normalize_label(" OOS "), normalize_label("billing")
(None, 'billing')
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from synapse_nb.errors import ValidationError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import polars as pl

__all__ = [
    "HEADLINE_METRICS",
    "OOS",
    "OOS_STRINGS",
    "RoutingMetrics",
    "bootstrap_ci",
    "format_value",
    "normalize_label",
    "routing_metrics",
    "threshold_counts",
]

#: The name of the out-of-scope class in tables (confusion matrix, per-route report).
OOS = "oos"
#: Label strings (compared stripped and lower-cased) that mean out of scope, besides ``None`` and NaN.
OOS_STRINGS: tuple[str, ...] = ("", "none", "null", "oos")
#: The figures reported with bootstrap intervals.
HEADLINE_METRICS: tuple[str, ...] = ("in_scope_accuracy", "oos_recall", "oos_precision", "oos_f1", "accuracy")


def normalize_label(value: Any) -> str | None:
    """The route name of a raw label, or ``None`` for out of scope: the one definition.

    Strings are stripped; numbers (a Parquet column of ints) become their text. Booleans are refused: a
    ``True`` label is a mistake, not a route.

    Raises
    ------
    ValidationError
        For a boolean or a value that is neither text, a number nor ``None``.

    Examples
    --------
    >>> [normalize_label(v) for v in ["auth", " auth ", "", "OOS", "None", "null", None, float("nan"), 7]]
    ['auth', 'auth', None, None, None, None, None, None, '7']
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise ValidationError(
            f"label {value!r} is a boolean; accepted: a route name, or None/''/'oos' for out of scope")
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        value = int(value) if float(value).is_integer() else value
    if not isinstance(value, (str, int, np.integer, float, np.floating)):
        raise ValidationError(
            f"label {value!r} is a {type(value).__name__}; accepted: a route name (str), or None/''/'oos' "
            "for out of scope")
    text = str(value).strip()
    return None if text.lower() in OOS_STRINGS else text


def _normalise_pair(y_true: Iterable[Any], y_pred: Iterable[Any]) -> tuple[list[str | None], list[str | None]]:
    if isinstance(y_true, str) or isinstance(y_pred, str):
        raise ValidationError("y_true and y_pred must be sequences of labels, not a single str")
    t = [normalize_label(v) for v in y_true]
    p = [normalize_label(v) for v in y_pred]
    if len(t) != len(p):
        raise ValidationError(f"y_true has {len(t)} labels but y_pred has {len(p)}; they must be the same length")
    if not t:
        raise ValidationError("y_true is empty; routing metrics need at least one labelled row")
    return t, p


def format_value(value: Any) -> str:
    """A metric as a table shows it: ``n/a`` for None, floats to three decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


@dataclass(frozen=True)
class RoutingMetrics:
    """Routing quality with out of scope as a class of its own. Every figure is a fraction in [0, 1].

    Attributes
    ----------
    n, n_in_scope, n_oos
        Rows scored, of which labelled with a route / out of scope.
    in_scope_accuracy
        Among rows with a true route, the share routed to exactly that route (``None`` if there are none).
    oos_recall, oos_precision, oos_f1
        Out of scope as the positive class; ``None`` when there are no out-of-scope rows. Precision is 0.0
        when nothing was predicted out of scope.
    accuracy
        Share of rows whose prediction equals the truth, out of scope counting as its own class (Larson et
        al. 2019's "151-class" accuracy on CLINC150).
    per_route
        polars DataFrame ``route, precision, recall, f1, support`` (scikit-learn, ``zero_division=0``): one row
        per route (those given to :func:`routing_metrics` as ``routes``, else the true labels), sorted, then an
        ``oos`` row when there are out-of-scope rows.
    confusion
        polars DataFrame: column ``true`` then one column per predicted class (routes sorted, ``oos`` last);
        cell = count.

    Examples
    --------
    >>> routing_metrics(["a", "a", None], ["a", None, None]).summary()
    'n=3 accuracy=66.67 in_scope=50.00 oos_recall=100.00 oos_precision=50.00 oos_f1=66.67'
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

    def summary(self) -> str:
        """One line with the headline figures, in percent."""

        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{100 * v:.2f}"

        return (
            f"n={self.n} accuracy={pct(self.accuracy)} in_scope={pct(self.in_scope_accuracy)} "
            f"oos_recall={pct(self.oos_recall)} oos_precision={pct(self.oos_precision)} oos_f1={pct(self.oos_f1)}"
        )

    def confusion_pandas(self) -> pd.DataFrame:
        """The confusion table as pandas, indexed by the true class."""
        return self.confusion.to_pandas().set_index("true")

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={format_value(v)}" for k, v in self.to_dict().items())
        return f"RoutingMetrics({parts})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{format_value(v)}</td></tr>"
            for k, v in self.to_dict().items()
        )
        return f"<table><caption>RoutingMetrics</caption>{rows}</table>"


def routing_metrics(
    y_true: Sequence[Any], y_pred: Sequence[Any], *, routes: Sequence[str] | None = None
) -> RoutingMetrics:
    """Score route predictions against the truth, with out of scope (``None``) as a class of its own.

    Parameters
    ----------
    y_true, y_pred
        Labels; see :func:`normalize_label` for what means out of scope.
    routes
        The routes to report in ``per_route`` (a router's ``routes_``, so a route it never predicted and
        never saw in ``y_true`` still gets a row). Default: the routes of ``y_true``.

    Returns
    -------
    RoutingMetrics

    Raises
    ------
    ValidationError
        Different lengths, no rows, or a label that is neither text nor ``None``.

    Examples
    --------
    >>> m = routing_metrics(["a", "a", "b"], ["a", "b", "b"])
    >>> round(m.in_scope_accuracy, 3), m.oos_recall
    (0.667, None)
    >>> m.per_route["route"].to_list()
    ['a', 'b']
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    t, p = _normalise_pair(y_true, y_pred)
    ts = np.array([OOS if v is None else v for v in t], dtype=object)
    ps = np.array([OOS if v is None else v for v in p], dtype=object)
    t_oos, p_oos = ts == OOS, ps == OOS
    n, n_oos = len(t), int(t_oos.sum())
    in_acc = float(accuracy_score(ts[~t_oos], ps[~t_oos])) if n_oos < n else None
    if n_oos:
        prec, rec, f1, _ = precision_recall_fscore_support(
            t_oos, p_oos, average="binary", pos_label=True, zero_division=0)
        oos: tuple[float | None, ...] = (float(rec), float(prec), float(f1))
    else:
        oos = (None, None, None)
    if routes is None:
        report = sorted({v for v in t if v is not None})
    else:
        report = sorted({r for r in (normalize_label(v) for v in routes) if r is not None})
    report_labels = [*report, OOS] if n_oos else report
    if report_labels:
        pr, rc, f, sup = precision_recall_fscore_support(
            ts.astype(str), ps.astype(str), labels=report_labels, average=None, zero_division=0)
    else:
        pr = rc = f = sup = np.array([])
    per_route = pl.DataFrame(
        {"route": report_labels, "precision": [float(x) for x in pr], "recall": [float(x) for x in rc],
         "f1": [float(x) for x in f], "support": [int(x) for x in sup]},
        schema={"route": pl.String, "precision": pl.Float64, "recall": pl.Float64, "f1": pl.Float64,
                "support": pl.Int64},
    )
    seen = sorted({v for v in (*t, *p) if v is not None})
    classes = [*seen, OOS] if (t_oos.any() or p_oos.any()) else seen
    # one class: every row is on the diagonal (scikit-learn warns about a 1 x 1 matrix)
    cm = np.array([[n]]) if len(classes) == 1 else confusion_matrix(ts.astype(str), ps.astype(str), labels=classes)
    confusion = pl.DataFrame(
        {"true": classes, **{c: [int(x) for x in cm[:, j]] for j, c in enumerate(classes)}},
        schema={"true": pl.String, **dict.fromkeys(classes, pl.Int64)},
    )
    return RoutingMetrics(
        n=n, n_in_scope=n - n_oos, n_oos=n_oos, in_scope_accuracy=in_acc, oos_recall=oos[0],
        oos_precision=oos[1], oos_f1=oos[2], accuracy=float(accuracy_score(ts, ps)),
        per_route=per_route, confusion=confusion,
    )


# ------------------------------------------------------------------------------------- counted figures
def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _figures(correct_in: np.ndarray, n_in: np.ndarray, tp_oos: np.ndarray, pred_oos: np.ndarray,
             n_oos: np.ndarray, n: np.ndarray | int) -> dict[str, np.ndarray]:
    """The headline figures from event counts (arrays broadcast): NaN where a figure is undefined.

    ``correct_in``: in-scope rows routed to their route; ``tp_oos``: out-of-scope rows predicted out of
    scope; ``pred_oos``: rows predicted out of scope. The same definitions as :func:`routing_metrics`.
    """
    recall = _ratio(tp_oos, n_oos)
    precision = np.where(n_oos > 0, np.where(pred_oos > 0, _ratio(tp_oos, pred_oos), 0.0), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = precision + recall
        f1 = np.where(s > 0, 2 * precision * recall / np.where(s > 0, s, 1), 0.0)
    f1 = np.where(np.isnan(recall), np.nan, f1)
    return {
        "in_scope_accuracy": _ratio(correct_in, n_in),
        "oos_recall": recall,
        "oos_precision": precision,
        "oos_f1": f1,
        "accuracy": (correct_in + tp_oos) / n,
    }


def bootstrap_ci(
    y_true: Sequence[Any],
    y_pred: Sequence[Any],
    metric: str | Callable[[list[str | None], list[str | None]], float | None],
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of a routing figure; deterministic for a given ``seed``.

    Parameters
    ----------
    y_true, y_pred
        Labels as for :func:`routing_metrics`.
    metric
        A :data:`HEADLINE_METRICS` name (counted vectorised, the same definitions as :func:`routing_metrics`)
        or a callable ``f(y_true, y_pred) -> float | None``.
    n_boot
        Number of resamples (rows drawn with replacement, numpy PCG64 seeded with ``seed``).
    alpha
        The interval covers ``1 - alpha``.

    Returns
    -------
    (low, high)
        ``(None, None)`` when the figure is undefined on every resample (no out-of-scope rows, ...).

    Examples
    --------
    >>> lo, hi = bootstrap_ci(["a", "b", "a", None], ["a", "b", "b", None], "accuracy", n_boot=200)
    >>> 0.0 <= lo <= 0.75 <= hi <= 1.0
    True
    """
    if not isinstance(n_boot, int) or n_boot < 1:
        raise ValidationError(f"n_boot={n_boot!r}; accepted: an integer >= 1")
    if not 0 < alpha < 1:
        raise ValidationError(f"alpha={alpha}; accepted: a number strictly between 0 and 1")
    if isinstance(metric, str) and metric not in HEADLINE_METRICS:
        raise ValidationError(f"unknown metric {metric!r}; accepted: {', '.join(HEADLINE_METRICS)} or a callable")
    if not isinstance(metric, str) and not callable(metric):
        raise ValidationError(f"metric={metric!r}; accepted: a RoutingMetrics figure name or a callable")
    t, p = _normalise_pair(y_true, y_pred)
    n = len(t)
    rng = np.random.default_rng(seed)
    values: list[np.ndarray] = []
    if isinstance(metric, str):
        t_oos = np.array([v is None for v in t])
        p_oos = np.array([v is None for v in p])
        correct_in = np.array([a == b for a, b in zip(t, p, strict=True)]) & ~t_oos
        chunk = max(1, min(n_boot, 2_000_000 // max(n, 1)))
        done = 0
        while done < n_boot:
            k = min(chunk, n_boot - done)
            idx = rng.integers(0, n, size=(k, n))
            tt = t_oos[idx]
            fig = _figures(correct_in[idx].sum(1), (~tt).sum(1), (tt & p_oos[idx]).sum(1), p_oos[idx].sum(1),
                           tt.sum(1), n)
            values.append(fig[metric].astype(float))
            done += k
    else:
        out = np.empty(n_boot)
        for b in range(n_boot):
            idx = rng.integers(0, n, size=n)
            v = metric([t[i] for i in idx], [p[i] for i in idx])
            out[b] = np.nan if v is None else float(v)
        values.append(out)
    allv = np.concatenate(values)
    allv = allv[~np.isnan(allv)]
    if allv.size == 0:
        return (None, None)
    low, high = np.quantile(allv, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))


def threshold_counts(
    top: np.ndarray, correct: np.ndarray, is_oos: np.ndarray, thresholds: np.ndarray
) -> dict[str, np.ndarray]:
    """What a global threshold does: for each threshold ``t``, a row is routed when ``top >= t``.

    Parameters
    ----------
    top
        Each row's best route score.
    correct
        Whether the best route is the row's true route (False for out-of-scope rows).
    is_oos
        Whether the row's truth is out of scope.
    thresholds
        The thresholds to evaluate (any order).

    Returns
    -------
    dict
        Per threshold: ``routed_correct`` (in-scope rows routed to their route), ``rejected_oos``
        (out-of-scope rows rejected), ``rejected`` (rows rejected), integer arrays; and the figures of
        :data:`HEADLINE_METRICS` plus ``routed`` (share routed), float arrays with NaN where undefined.

    Examples
    --------
    >>> c = threshold_counts(np.array([0.9, 0.2, 0.5]), np.array([True, False, False]),
    ...                      np.array([False, True, False]), np.array([0.0, 0.3, 1.0]))
    >>> c["routed_correct"].tolist(), c["rejected_oos"].tolist(), c["in_scope_accuracy"].tolist()
    ([1, 1, 0], [0, 1, 1], [0.5, 0.5, 0.0])
    """
    top = np.asarray(top, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool) & ~np.asarray(is_oos, dtype=bool)
    is_oos = np.asarray(is_oos, dtype=bool)
    th = np.asarray(thresholds, dtype=np.float64)
    order = np.argsort(top, kind="stable")
    s = top[order]
    # rows with score < t are rejected: the first searchsorted(s, t, "left") rows in ascending order
    k = np.searchsorted(s, th, side="left")
    cum_c = np.concatenate([[0], np.cumsum(correct[order])])
    cum_o = np.concatenate([[0], np.cumsum(is_oos[order])])
    n, n_oos = len(top), int(is_oos.sum())
    n_in = n - n_oos
    routed_correct = cum_c[-1] - cum_c[k]
    rejected_oos = cum_o[k]
    out: dict[str, np.ndarray] = {"routed_correct": routed_correct, "rejected_oos": rejected_oos, "rejected": k}
    out |= _figures(routed_correct, np.full(len(th), n_in), rejected_oos, k, np.full(len(th), n_oos), max(n, 1))
    out["routed"] = (n - k) / max(n, 1)
    return out
