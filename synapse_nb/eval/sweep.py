"""The threshold trade-off curve of a fitted router (:func:`threshold_sweep`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from synapse_nb.errors import ValidationError
from synapse_nb.eval.progress import progress_bar
from synapse_nb.gate.metrics import normalize_label, threshold_counts

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

    from synapse_nb.eval.router_eval import RouterLike

__all__ = ["threshold_sweep"]


def threshold_sweep(
    router: RouterLike,
    texts: Sequence[str],
    labels: Sequence[Any],
    thresholds: Sequence[float] | None = None,
    *,
    batch_size: int = 2048,
    progress: bool | None = None,
) -> pl.DataFrame:
    """The trade-off curve of a fitted router: figures as a single global threshold moves.

    Rule applied at each threshold ``t``: route to the best-scoring route (first in ``routes_`` on ties)
    when its score is ``>= t``, else out of scope. This is the global-threshold decision; a router with
    per-route thresholds may predict differently at its own ``threshold_``. The figures are
    :func:`synapse_nb.gate.metrics.threshold_counts`' (the same definitions as ``routing_metrics``).

    Parameters
    ----------
    router
        A fitted :class:`RouterLike` (its ``decision_scores`` are computed once, ``batch_size`` texts at a time).
    texts, labels
        The data to sweep on; use a validation split, not the test split, to choose a threshold.
    thresholds
        Values to try; by default up to 101 quantiles of the best scores plus one value above the
        maximum (everything out of scope).
    batch_size
        Texts scored per ``decision_scores`` call (the progress bar moves once per batch).
    progress
        A progress bar on standard error: ``None`` (default) only on a terminal.

    Returns
    -------
    polars.DataFrame
        Columns ``threshold`` (ascending), ``in_scope_accuracy``, ``oos_recall``, ``oos_precision``,
        ``accuracy``, ``routed`` (share of rows routed). Undefined figures are null.

    Examples
    --------
    >>> curve = threshold_sweep(router, *data.split("val"))  # doctest: +SKIP
    >>> curve.filter(curve["oos_recall"] >= 0.9).head(1)     # doctest: +SKIP
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    if isinstance(texts, str):
        raise ValidationError("texts must be a sequence of str, not a single str")
    xs = list(texts)
    y = [normalize_label(v) for v in labels]
    if len(y) != len(xs):
        raise ValidationError(f"{len(xs)} texts but {len(y)} labels; they must be the same length")
    if not y:
        raise ValidationError("texts is empty; a sweep needs at least one labelled row")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValidationError(f"batch_size={batch_size!r}; accepted: an int >= 1")
    routes = list(router.routes_)
    parts = []
    n_batches = -(-len(xs) // batch_size)
    with progress_bar(n_batches, "threshold sweep", enabled=progress, unit="batch") as bar:
        for lo in range(0, len(xs), batch_size):
            parts.append(np.asarray(router.decision_scores(xs[lo : lo + batch_size]), dtype=float))
            bar.update(1)
    scores = np.vstack(parts)
    if scores.ndim != 2 or scores.shape != (len(y), len(routes)):
        raise ValidationError(
            f"decision_scores returned shape {scores.shape}; expected ({len(y)}, {len(routes)}) = (texts, routes_)"
        )
    arg = scores.argmax(axis=1)
    best = scores[np.arange(len(y)), arg]
    if thresholds is None:
        qs = np.quantile(best, np.linspace(0.0, 1.0, 101))
        grid = np.unique(np.append(qs, np.nextafter(best.max(), np.inf)))
    else:
        grid = np.array(sorted(float(t) for t in thresholds), dtype=float)
    t_oos = np.array([v is None for v in y])
    same = np.array([routes[a] == v for a, v in zip(arg, y, strict=True)])
    c = threshold_counts(best, same, t_oos, grid)

    def col(name: str) -> list[float | None]:
        return [None if np.isnan(v) else float(v) for v in c[name]]

    return pl.DataFrame(
        {
            "threshold": grid.tolist(),
            "in_scope_accuracy": col("in_scope_accuracy"),
            "oos_recall": col("oos_recall"),
            "oos_precision": col("oos_precision"),
            "accuracy": col("accuracy"),
            "routed": col("routed"),
        },
        schema={
            "threshold": pl.Float64,
            "in_scope_accuracy": pl.Float64,
            "oos_recall": pl.Float64,
            "oos_precision": pl.Float64,
            "accuracy": pl.Float64,
            "routed": pl.Float64,
        },
    )
