"""Named routers side by side: one row each with its figures, 95 % intervals and costs (the notebooks' tables).

Each row is one :func:`~synapse_nb.eval.router_eval.evaluate_router` run with its own router and options (the
criterion, cross-fitting, descriptions), so the default, the other criterion, the cross-fitted protocol and the
semantic options are compared on the same splits with the same rules. Rows computed elsewhere (an expensive
variant run by a benchmark script) are read back with :func:`recorded_rows` and marked ``source="recorded"``.

Examples
--------
>>> from synapse_nb.gate import Router                                              # doctest: +SKIP
>>> compare_routers("agent_vault", {"default": {"router": Router, "with_descriptions": True}})  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import ValidationError
from synapse_nb.eval.data import LabelledData, load_dataset
from synapse_nb.eval.router_eval import RouterEvaluation, evaluate_router

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["COLUMNS", "compare_routers", "evaluation_row", "no_rejection_accuracy", "recorded_rows", "rows_frame"]

_FIGURES = ("accuracy", "in_scope_accuracy", "oos_recall")
#: The columns of a comparison table, in order.
COLUMNS: tuple[str, ...] = ("dataset", "variant", "criterion", "embedder", "source",
                            *(f"{k}{s}" for k in _FIGURES for s in ("", "_lo", "_hi")), "nr_in_scope",
                            "n_train", "n_val", "n_test", "fit_seconds", "queries_per_second")


def no_rejection_accuracy(router: Any, texts: list[str], labels: list[str | None]) -> float | None:
    """In-scope accuracy with no rejection: the best route of every in-scope text (what a set without out-of-scope
    rows measures), or ``None`` without in-scope rows."""
    rows = [i for i, y in enumerate(labels) if y is not None]
    if not rows:
        return None
    scores = router.decision_scores([texts[i] for i in rows])
    routes = list(router.routes_)
    hits = sum(routes[int(j)] == labels[i] for i, j in zip(rows, scores.argmax(axis=1), strict=True))
    return float(hits) / len(rows)


def evaluation_row(name: str, result: RouterEvaluation, nr_in_scope: float | None = None) -> dict[str, Any]:
    """One table row of an evaluation (fractions in [0, 1]; ``fit_seconds`` and ``queries_per_second`` are timings)."""
    params = result.config.get("router_params") or {}
    row: dict[str, Any] = {"dataset": result.config.get("dataset"), "variant": name, "criterion": result.criterion,
                           "embedder": params.get("embedder"), "source": "live"}
    for key in _FIGURES:
        lo, hi = result.ci.get(key, (None, None))
        row |= {key: getattr(result.metrics, key), f"{key}_lo": lo, f"{key}_hi": hi}
    row |= {"nr_in_scope": nr_in_scope, "n_train": result.n_train, "n_val": result.n_val, "n_test": result.n_test,
            "fit_seconds": result.fit_seconds, "queries_per_second": result.queries_per_second}
    return row


def rows_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A comparison table (:data:`COLUMNS`) of :func:`evaluation_row` dicts, e.g. of evaluations run elsewhere."""
    import polars as pl  # polars (about 1 s to import): only where a table is built

    schema: dict[str, Any] = dict.fromkeys(("dataset", "variant", "criterion", "embedder", "source"), pl.String)
    schema |= {f"{k}{s}": pl.Float64 for k in _FIGURES for s in ("", "_lo", "_hi")}
    schema |= {"nr_in_scope": pl.Float64, "n_train": pl.Int64, "n_val": pl.Int64, "n_test": pl.Int64,
               "fit_seconds": pl.Float64, "queries_per_second": pl.Float64}
    return pl.DataFrame([{k: r.get(k) for k in COLUMNS} for r in rows], schema=schema)


def compare_routers(
    dataset: LabelledData | str | os.PathLike[str],
    rows: Mapping[str, Mapping[str, Any]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    results: dict[str, RouterEvaluation] | None = None,
) -> pl.DataFrame:
    """Evaluate each named router on ``dataset``; one row per name, in the order given.

    Parameters
    ----------
    dataset
        A :class:`LabelledData` or anything :func:`~synapse_nb.eval.data.load_dataset` takes.
    rows
        Name -> ``{"router": a router or a callable returning a fresh one, **evaluate_router options}``
        (``criterion``, ``cross_fit``, ``with_descriptions``, ...; the defaults are ``evaluate_router``'s).
    n_boot, seed
        Bootstrap resamples and seed of the 95 % intervals.
    results
        A dict to receive each name's :class:`RouterEvaluation` (predictions, thresholds), if wanted.

    Returns
    -------
    polars.DataFrame
        :data:`COLUMNS`: figures with ``_lo``/``_hi`` bounds, ``nr_in_scope`` (:func:`no_rejection_accuracy` on
        test), sizes, ``fit_seconds`` (fit and calibration) and ``queries_per_second`` (one batch ``predict`` of
        the test split).
    """
    data = dataset if isinstance(dataset, LabelledData) else load_dataset(dataset)
    out: list[dict[str, Any]] = []
    for name, spec in rows.items():
        opts = dict(spec)
        if "router" not in opts:
            raise ValidationError(f"row {name!r}: give a 'router' (a router, or a callable returning one)")
        router = opts.pop("router")
        if isinstance(router, type) or (callable(router) and not hasattr(router, "fit")):
            router = router()
        res = evaluate_router(router, data, n_boot=n_boot, seed=seed, **opts)
        if results is not None:
            results[name] = res
        nr = no_rejection_accuracy(router, *data.split(res.config["test"]))
        out.append(evaluation_row(name, res, nr))
    return rows_frame(out)


def recorded_rows(path: str | os.PathLike[str], *, dataset: str | None = None,
                  keep: Callable[[dict[str, Any]], bool] | None = None) -> pl.DataFrame:
    """Rows a benchmark script recorded (a JSON list of :func:`evaluation_row` dicts), marked ``source="recorded"``.

    ``dataset`` keeps that dataset's rows only; ``keep`` filters further.
    """
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)
    picked = [r | {"source": "recorded"} for r in rows
              if (dataset is None or r.get("dataset") == dataset) and (keep is None or keep(r))]
    return rows_frame(picked)
