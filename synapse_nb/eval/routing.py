"""Evaluate a router on a labelled dataset: fit on train, calibrate on val, score test, keep the results.

The router is anything shaped like :class:`synapse_nb.gate.Router` (see :class:`RouterLike`): sklearn-style
``fit(texts, labels)``, ``predict(texts)``, ``decision_scores(texts)`` and
``calibrate(texts, labels, criterion=..., per_route=...)``. Thresholds are chosen on the validation split
only, never on the split being scored.

Examples
--------
>>> from synapse_nb.eval import evaluate_router, load_dataset    # doctest: +SKIP
>>> from synapse_nb.gate import Router                           # doctest: +SKIP
>>> result = evaluate_router(Router(), load_dataset("agent_vault"))  # doctest: +SKIP
>>> result.to_dict()["oos_recall"]                               # doctest: +SKIP
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from synapse_nb.errors import DatasetError, NotFoundError, ValidationError
from synapse_nb.eval.data import LabelledData, load_dataset, normalize_label
from synapse_nb.eval.metrics import HEADLINE_METRICS, RoutingMetrics, _fmt, bootstrap_ci, routing_metrics

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = [
    "CRITERIA",
    "RouterEvaluation",
    "RouterLike",
    "evaluate_router",
    "load_results",
    "run_gate_eval",
    "save_results",
    "threshold_sweep",
]

#: calibration criteria a router accepts
CRITERIA: tuple[str, ...] = ("accuracy", "balanced")


@runtime_checkable
class RouterLike(Protocol):
    """What :func:`evaluate_router` needs from a router (``synapse_nb.gate.Router`` has it).

    Labels ``None``/``""``/``"oos"`` mean out of scope. ``decision_scores`` returns one column per
    entry of ``routes_``; ``threshold_`` (global) and ``route_thresholds_`` (per route, or ``None``) are
    set by ``calibrate``, which records its criterion in ``criterion_``.
    """

    routes_: Sequence[str]
    threshold_: float
    route_thresholds_: Mapping[str, float] | None
    criterion_: str | None

    def fit(self, texts: Sequence[str], labels: Sequence[str | None]) -> Any: ...

    def decision_scores(self, texts: Sequence[str]) -> np.ndarray: ...

    def predict(self, texts: Sequence[str]) -> list[str | None]: ...

    def calibrate(
        self, texts: Sequence[str], labels: Sequence[str | None], criterion: str = "accuracy", per_route: bool = False
    ) -> Any: ...


def _json_safe(value: Any) -> Any:
    """Convert numpy scalars, tuples and non-finite floats into plain JSON values (sorted dict keys)."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


@dataclass(frozen=True)
class RouterEvaluation:
    """The result of :func:`evaluate_router`.

    Attributes
    ----------
    metrics
        :class:`~synapse_nb.eval.metrics.RoutingMetrics` on the test split.
    ci
        Headline figure -> 95 % percentile bootstrap interval ``(low, high)`` (1,000 resamples, seed 0).
    criterion
        The criterion that chose the thresholds, or ``None`` when the router was not calibrated.
    calibrated
        Whether ``calibrate`` ran (only with a validation split holding out-of-scope rows).
    thresholds
        ``{"global": float | None, "per_route": {route: float} | None}`` as the router had them at test time.
    n_train, n_val, n_test
        Rows used for fitting, calibration (0 when not calibrated) and scoring.
    queries_per_second
        Test rows divided by the wall time of one batch ``predict`` call.
    config
        How the run was set up: dataset, splits, requested criterion, per_route, router class and params.
    y_true, y_pred
        Test labels and predictions (``None`` = out of scope).
    """

    metrics: RoutingMetrics
    ci: Mapping[str, tuple[float | None, float | None]]
    criterion: str | None
    calibrated: bool
    thresholds: Mapping[str, Any]
    n_train: int
    n_val: int
    n_test: int
    queries_per_second: float
    config: Mapping[str, Any]
    y_true: tuple[str | None, ...] = field(repr=False, default=())
    y_pred: tuple[str | None, ...] = field(repr=False, default=())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe summary: headline figures, intervals, thresholds, sizes, speed and config."""
        m = self.metrics
        return _json_safe(
            {
                "in_scope_accuracy": m.in_scope_accuracy,
                "oos_recall": m.oos_recall,
                "oos_precision": m.oos_precision,
                "oos_f1": m.oos_f1,
                "accuracy": m.accuracy,
                "ci": {k: list(v) for k, v in self.ci.items()},
                "criterion": self.criterion,
                "calibrated": self.calibrated,
                "thresholds": dict(self.thresholds),
                "n_train": self.n_train,
                "n_val": self.n_val,
                "n_test": self.n_test,
                "n_oos_test": m.n_oos,
                "queries_per_second": self.queries_per_second,
                "config": dict(self.config),
            }
        )

    def _rows(self) -> list[tuple[str, str]]:
        rows = []
        for name in HEADLINE_METRICS:
            value = getattr(self.metrics, name)
            lo, hi = self.ci.get(name, (None, None))
            interval = f" [{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else ""
            rows.append((name, f"{_fmt(value)}{interval}"))
        g = self.thresholds.get("global")
        per = self.thresholds.get("per_route")
        rows += [
            ("criterion", str(self.criterion) if self.calibrated else "not calibrated"),
            ("threshold", _fmt(g) + (f" (+{len(per)} per-route)" if per else "")),
            ("n_train / n_val / n_test", f"{self.n_train} / {self.n_val} / {self.n_test}"),
            ("queries_per_second", f"{self.queries_per_second:,.0f}"),
        ]
        return rows

    def __repr__(self) -> str:
        head = f"RouterEvaluation({self.config.get('dataset', '?')}, router={self.config.get('router', '?')})"
        return "\n".join([head, *(f"  {k:<26} {v}" for k, v in self._rows())])

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in self._rows()
        )
        title = html.escape(f"{self.config.get('dataset', '?')} — {self.config.get('router', '?')}")
        return f"<table><caption>RouterEvaluation: {title} (95% bootstrap CI)</caption>{body}</table>"


def _thresholds(router: Any) -> dict[str, Any]:
    per = getattr(router, "route_thresholds_", None)
    glob = getattr(router, "threshold_", None)
    return {
        "global": None if glob is None else float(glob),
        "per_route": None if not per else {str(k): float(per[k]) for k in sorted(per)},
    }


def _router_params(router: Any) -> dict[str, Any]:
    get_params = getattr(router, "get_params", None)
    if callable(get_params):
        try:
            return _json_safe(dict(get_params()))
        except Exception:  # noqa: BLE001 - a router without sklearn params still evaluates
            return {}
    params = {}
    for key in sorted(vars(router)):
        value = vars(router)[key]
        if key.startswith("_") or key.endswith("_"):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            params[key] = value
    return _json_safe(params)


def evaluate_router(
    router: RouterLike,
    dataset: LabelledData | str | os.PathLike[str],
    *,
    train: str = "train",
    val: str | None = "val",
    test: str = "test",
    criterion: str = "accuracy",
    per_route: bool = False,
    calibrate: bool = True,
    with_descriptions: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> RouterEvaluation:
    """Fit ``router`` on ``train``, calibrate it on ``val``, score it on ``test``.

    Calibration runs only when ``calibrate`` is true and the dataset has a ``val`` split with at least
    one out-of-scope row (a threshold cannot be chosen without negatives); otherwise the router keeps its
    default thresholds and the result says ``calibrated=False``. The test split is never used to choose
    anything.

    Parameters
    ----------
    router
        A :class:`RouterLike`, e.g. ``synapse_nb.gate.Router()``; it is fitted in place.
    dataset
        A :class:`~synapse_nb.eval.data.LabelledData`, or anything :func:`~synapse_nb.eval.data.load_dataset` takes.
    train, val, test
        Split names. ``val=None`` skips calibration.
    criterion
        ``"accuracy"`` or ``"balanced"``, passed to ``router.calibrate``.
    per_route
        Calibrate one threshold per route (falling back to the global one).
    with_descriptions
        Also fit on each route's description and example requests (agent_vault's hub ``trigger`` and
        ``examples``), as a vault router would be; they belong to no split, so nothing leaks into test.
    n_boot, seed
        Bootstrap resamples and seed for the intervals.

    Returns
    -------
    RouterEvaluation

    Examples
    --------
    >>> result = evaluate_router(router, "agent_vault", criterion="balanced")  # doctest: +SKIP
    >>> print(result)                                                          # doctest: +SKIP
    """
    if criterion not in CRITERIA:
        raise ValidationError(f"criterion={criterion!r}; accepted: {', '.join(CRITERIA)}")
    data = dataset if isinstance(dataset, LabelledData) else load_dataset(dataset)
    if not data.splits:
        raise DatasetError(
            f"{data.source or data.name}: has no split column; evaluate_router needs {train!r} and {test!r} splits"
        )
    x_train, y_train = data.split(train)
    if with_descriptions:
        for route in sorted(set(data.route_descriptions) | set(data.route_examples)):
            extra = [data.route_descriptions[route]] if route in data.route_descriptions else []
            extra += list(data.route_examples.get(route, ()))
            x_train += extra
            y_train += [route] * len(extra)
    x_test, y_test = data.split(test)
    if not x_test:
        raise DatasetError(f"{data.source or data.name}: split {test!r} is empty")
    router.fit(x_train, y_train)
    did_calibrate = False
    n_val = 0
    reason = "calibrate=False"
    if calibrate and val is not None:
        if val not in data.splits:
            reason = f"no {val!r} split"
        elif not data.has_oos(val):
            reason = f"split {val!r} has no out-of-scope rows"
        else:
            x_val, y_val = data.split(val)
            router.calibrate(x_val, y_val, criterion=criterion, per_route=per_route)
            did_calibrate = True
            n_val = len(x_val)
            reason = ""
    start = time.perf_counter()
    y_pred = [normalize_label(p) for p in router.predict(x_test)]
    elapsed = time.perf_counter() - start
    qps = len(x_test) / elapsed if elapsed > 0 else float("inf")
    metrics = routing_metrics(y_test, y_pred)
    ci = {
        name: bootstrap_ci(y_test, y_pred, name, n_boot=n_boot, seed=seed)
        for name in HEADLINE_METRICS
        if getattr(metrics, name) is not None
    }
    used_criterion = (getattr(router, "criterion_", None) or criterion) if did_calibrate else None
    config = {
        "dataset": data.name,
        "source": data.source,
        "train": train,
        "val": val,
        "test": test,
        "criterion": criterion,
        "per_route": per_route,
        "calibrate": calibrate,
        "with_descriptions": with_descriptions,
        "calibration_skipped": reason or None,
        "router": type(router).__name__,
        "router_params": _router_params(router),
        "n_boot": n_boot,
        "seed": seed,
    }
    return RouterEvaluation(
        metrics=metrics,
        ci=ci,
        criterion=used_criterion,
        calibrated=did_calibrate,
        thresholds=_thresholds(router),
        n_train=len(x_train),
        n_val=n_val,
        n_test=len(x_test),
        queries_per_second=float(qps),
        config=config,
        y_true=tuple(y_test),
        y_pred=tuple(y_pred),
    )


def threshold_sweep(
    router: RouterLike,
    texts: Sequence[str],
    labels: Sequence[Any],
    thresholds: Sequence[float] | None = None,
) -> pl.DataFrame:
    """The trade-off curve of a fitted router: figures as a single global threshold moves.

    Rule applied at each threshold ``t``: route to the best-scoring route (first in ``routes_`` on ties)
    when its score is ``>= t``, else out of scope. This is the global-threshold decision; a router with
    per-route thresholds or extra rules (margins) may predict differently at its own ``threshold_``.

    Parameters
    ----------
    router
        A fitted :class:`RouterLike` (its ``decision_scores`` are computed once).
    texts, labels
        The data to sweep on; use a validation split, not the test split, to choose a threshold.
    thresholds
        Values to try; by default up to 101 quantiles of the best scores plus one value above the
        maximum (everything out of scope).

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

    y = [normalize_label(v) for v in labels]
    if len(y) != len(texts):
        raise ValidationError(f"{len(texts)} texts but {len(y)} labels; they must be the same length")
    if not y:
        raise ValidationError("texts is empty; a sweep needs at least one labelled row")
    scores = np.asarray(router.decision_scores(list(texts)), dtype=float)
    routes = list(router.routes_)
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
    routed = best[None, :] >= grid[:, None]  # (thresholds, rows)
    n_in, n_oos = int((~t_oos).sum()), int(t_oos.sum())
    in_ok = (routed & same[None, :] & ~t_oos[None, :]).sum(1)
    oos_ok = (~routed & t_oos[None, :]).sum(1)
    pred_oos = (~routed).sum(1)
    return pl.DataFrame(
        {
            "threshold": grid.tolist(),
            "in_scope_accuracy": [float(v) / n_in if n_in else None for v in in_ok],
            "oos_recall": [float(v) / n_oos if n_oos else None for v in oos_ok],
            "oos_precision": [(float(o) / p if p else 0.0) if n_oos else None for o, p in zip(oos_ok, pred_oos, strict=True)],
            "accuracy": ((in_ok + oos_ok) / len(y)).astype(float).tolist(),
            "routed": routed.mean(1).astype(float).tolist(),
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


# ---------------------------------------------------------------------------------------------- results

_SCALARS = (
    "in_scope_accuracy",
    "oos_recall",
    "oos_precision",
    "oos_f1",
    "accuracy",
    "criterion",
    "calibrated",
    "n_train",
    "n_val",
    "n_test",
    "n_oos_test",
    "queries_per_second",
)


def _result_row(result: RouterEvaluation | Mapping[str, Any], saved_at: str) -> dict[str, Any]:
    d = result.to_dict() if isinstance(result, RouterEvaluation) else _json_safe(dict(result))
    config = d.get("config") or {}
    row: dict[str, Any] = {
        "saved_at": saved_at,
        "dataset": config.get("dataset"),
        "router": config.get("router"),
    }
    for key in _SCALARS:
        row[key] = d.get(key)
    row["thresholds_json"] = json.dumps(d.get("thresholds"), sort_keys=True)
    row["ci_json"] = json.dumps(d.get("ci"), sort_keys=True)
    row["config_json"] = json.dumps(config, sort_keys=True)
    return row


_SCHEMA_TYPES = {
    "saved_at": "str",
    "dataset": "str",
    "router": "str",
    "criterion": "str",
    "calibrated": "bool",
    "n_train": "int",
    "n_val": "int",
    "n_test": "int",
    "n_oos_test": "int",
    "thresholds_json": "str",
    "ci_json": "str",
    "config_json": "str",
}


def save_results(
    result: RouterEvaluation | Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    saved_at: str | None = None,
) -> Path:
    """Append one evaluation (figures + configuration) as a row of a Parquet file, creating it if needed.

    Columns: ``saved_at`` (UTC ISO 8601), ``dataset``, ``router``, the headline figures, ``criterion``,
    ``calibrated``, sizes, ``queries_per_second``, and ``thresholds_json``, ``ci_json``, ``config_json``
    (JSON text with sorted keys). The file is rewritten atomically (temporary file + rename).

    Parameters
    ----------
    result
        A :class:`RouterEvaluation` or its :meth:`~RouterEvaluation.to_dict`.
    path
        The Parquet file.
    saved_at
        Timestamp to record; defaults to now (UTC).

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> save_results(result, "benchmarks/out/gate_runs.parquet")   # doctest: +SKIP
    >>> load_results("benchmarks/out/gate_runs.parquet")           # doctest: +SKIP
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    path = Path(path)
    stamp = saved_at or _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    row = _result_row(result, stamp)
    dtypes = {"str": pl.String, "bool": pl.Boolean, "int": pl.Int64}
    schema = {k: dtypes[_SCHEMA_TYPES[k]] if k in _SCHEMA_TYPES else pl.Float64 for k in row}
    new = pl.DataFrame([row], schema=schema)
    frame = pl.concat([load_results(path), new], how="diagonal_relaxed") if path.exists() else new
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DatasetError(f"{path}: cannot write results ({exc.strerror or exc})") from None
    return path


def load_results(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read the runs saved by :func:`save_results`, oldest first, as a polars DataFrame.

    Use ``.to_pandas()`` for pandas; ``json.loads`` the ``*_json`` columns for thresholds, intervals, config.
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    path = Path(path)
    if not path.is_file():
        raise NotFoundError(f"{path}: no results file; save_results(result, path) creates it")
    try:
        return pl.read_parquet(path)
    except Exception as exc:  # polars raises ComputeError / OSError variants
        raise DatasetError(f"{path}: not a readable results Parquet file ({exc})") from None


# ---------------------------------------------------------------------------------------------- CLI core


def run_gate_eval(
    path: str | os.PathLike[str],
    *,
    train_split: str = "train",
    val_split: str | None = "val",
    test_split: str = "test",
    criterion: str = "accuracy",
    method: str | None = None,
    per_route: bool = False,
    with_descriptions: bool = False,
) -> dict[str, Any]:
    """Evaluate ``synapse_nb.gate.Router`` on a labelled file or dataset; what ``synapse-nb gate eval PATH`` prints.

    Parameters
    ----------
    path
        A labelled file (CSV, JSON Lines, Parquet), a dataset folder, or a bundled dataset name.
    train_split, val_split, test_split
        Split names; calibration uses ``val_split`` only when it has out-of-scope rows.
    criterion
        ``"accuracy"`` or ``"balanced"``.
    method
        Passed to ``Router(method=...)`` when given (the router's scoring method).
    per_route
        Calibrate per-route thresholds.
    with_descriptions
        Also fit on route descriptions/examples when the dataset has them (agent_vault's hubs).

    Returns
    -------
    dict
        :meth:`RouterEvaluation.to_dict`: ``in_scope_accuracy``, ``oos_recall``, ``oos_precision``,
        ``oos_f1`` (``None`` without out-of-scope test rows), ``accuracy``, ``criterion``, ``thresholds``,
        ``n_train``, ``n_test``, ``queries_per_second``, ``ci``, ``config``; fractions in [0, 1].

    Examples
    --------
    >>> out = run_gate_eval("datasets/agent_vault")   # doctest: +SKIP
    >>> sorted(out)[:3]                               # doctest: +SKIP
    ['accuracy', 'calibrated', 'ci']
    """
    from synapse_nb.gate import Router  # the router imports scikit-learn: only when one is built here

    router = Router() if method is None else Router(method=method)
    result = evaluate_router(
        router,
        path,
        train=train_split,
        val=val_split,
        test=test_split,
        criterion=criterion,
        per_route=per_route,
        with_descriptions=with_descriptions,
    )
    return result.to_dict()
