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

import html
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from synapse_nb.errors import DatasetError, ValidationError
from synapse_nb.eval.data import LabelledData, load_dataset
from synapse_nb.eval.progress import progress_bar
from synapse_nb.gate.metrics import (
    HEADLINE_METRICS,
    RoutingMetrics,
    bootstrap_ci,
    format_value,
    normalize_label,
    routing_metrics,
)

__all__ = ["CRITERIA", "RouterEvaluation", "RouterLike", "evaluate_router", "run_gate_eval"]

#: calibration criteria a router accepts
CRITERIA: tuple[str, ...] = ("accuracy", "balanced")


@runtime_checkable
class RouterLike(Protocol):
    """What :func:`evaluate_router` needs from a router (``synapse_nb.gate.Router`` has it).

    Labels ``None``/``""``/``"oos"`` mean out of scope. ``decision_scores`` returns one column per
    entry of ``routes_``; ``threshold_`` (global) and ``route_thresholds_`` (per route, or ``None``) are
    set by ``calibrate``, which records its criterion in ``criterion_``.
    """

    @property
    def routes_(self) -> Sequence[str]: ...

    @property
    def threshold_(self) -> float: ...

    @property
    def route_thresholds_(self) -> Mapping[str, float] | None: ...

    @property
    def criterion_(self) -> str | None: ...

    def fit(self, texts: Sequence[str], labels: Sequence[str | None]) -> Any: ...  # may take descriptions=

    def decision_scores(self, texts: Sequence[str]) -> np.ndarray: ...

    def predict(self, texts: Sequence[str]) -> list[str | None]: ...

    def calibrate(self, texts: Sequence[str], labels: Sequence[Any], *, criterion: str = ...,
                  per_route: bool = ...) -> Any: ...


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
        :class:`~synapse_nb.gate.metrics.RoutingMetrics` on the test split.
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
        How the run was set up: dataset, splits, requested criterion, per_route, router class and params,
        and ``notes``: what was decided for the user (a split carved, calibration skipped and why).
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
        out: dict[str, Any] = _json_safe(
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
                               "notes": list(self.config.get("notes", ())),
                               "config": dict(self.config),
                           }
                       )
        return out

    def _rows(self) -> list[tuple[str, str]]:
        rows = []
        for name in HEADLINE_METRICS:
            value = getattr(self.metrics, name)
            lo, hi = self.ci.get(name, (None, None))
            interval = f" [{format_value(lo)}, {format_value(hi)}]" if lo is not None else ""
            rows.append((name, f"{format_value(value)}{interval}"))
        g = self.thresholds.get("global")
        per = self.thresholds.get("per_route")
        rows += [
            ("criterion", str(self.criterion) if self.calibrated else "not calibrated"),
            ("threshold", format_value(g) + (f" (+{len(per)} per-route)" if per else "")),
            ("n_train / n_val / n_test", f"{self.n_train} / {self.n_val} / {self.n_test}"),
            ("queries_per_second", f"{self.queries_per_second:,.0f}"),
        ]
        rows += [("note", note) for note in self.config.get("notes", ())]
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
            out: dict[str, Any] = _json_safe(dict(get_params()))
            return out
        except Exception:  # noqa: BLE001 - a router without sklearn params still evaluates
            return {}
    params = {}
    for key in sorted(vars(router)):
        value = vars(router)[key]
        if key.startswith("_") or key.endswith("_"):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            params[key] = value
    safe: dict[str, Any] = _json_safe(params)
    return safe


def _fit_accepts_descriptions(router: Any) -> bool:
    import inspect

    try:
        params = inspect.signature(router.fit).parameters
    except (TypeError, ValueError):
        return False
    return "descriptions" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _resolve_split(data: LabelledData, name: str, role: str) -> str:
    found = data.find_split(name)
    if found is None:
        raise DatasetError(
            f"{data.source or data.name}: no {role} split {name!r}; splits found: {', '.join(data.splits)}"
        )
    return found


def evaluate_router(
    router: RouterLike,
    dataset: LabelledData | str | os.PathLike[str],
    *,
    train: str = "train",
    val: str | None = "auto",
    test: str = "test",
    criterion: str = "accuracy",
    per_route: bool = False,
    calibrate: bool = True,
    with_descriptions: bool = False,
    holdout: float | None = None,
    cross_fit: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool | None = None,
) -> RouterEvaluation:
    """Fit ``router`` on ``train``, calibrate it on ``val``, score it on ``test``.

    The test split is never used to choose anything. Calibration needs out-of-scope rows (a threshold cannot
    be chosen without negatives): when the validation split has none, the router keeps its default
    thresholds and the result says ``calibrated=False`` and why (``config["notes"]``).

    Parameters
    ----------
    router
        A :class:`RouterLike`, e.g. ``synapse_nb.gate.Router()``; it is fitted in place.
    dataset
        A :class:`~synapse_nb.eval.data.LabelledData`, or anything :func:`~synapse_nb.eval.data.load_dataset` takes.
    train, test
        Split names; an unknown name is a :class:`~synapse_nb.errors.DatasetError` listing the splits found.
    val
        The calibration split. ``"auto"`` (default): the split named ``val``/``valid``/``validation``/``dev``
        if there is one, else one carved from ``train`` (``holdout`` of each label, default 0.2, ``seed``)
        when ``train`` has out-of-scope rows, else no calibration. A name: that split (unknown -> error).
        ``None``: no calibration.
    criterion
        ``"accuracy"`` or ``"balanced"``, passed to ``router.calibrate``.
    per_route
        Calibrate one threshold per route (falling back to the global one).
    with_descriptions
        Fit on each route's description and example requests too (agent_vault's hub ``trigger`` and
        ``examples``; they belong to no split, so nothing leaks into test). A router whose ``fit`` takes
        ``descriptions=`` gets them that way, others as extra training rows.
    holdout
        For data without splits: hold out this share of each label as ``test`` (stratified, ``seed``); the
        fraction is also the share carved from train for a missing validation split.
    cross_fit
        Instead of calibrating on ``val``: fit on ``train`` + ``val`` and choose the thresholds on out-of-fold
        scores of ``cross_fit`` folds (``router.fit_calibrated``; :class:`synapse_nb.gate.Router` has it).
    n_boot, seed
        Bootstrap resamples and seed for the intervals (the seed also seeds hold-outs and folds).
    progress
        A progress bar on standard error: ``None`` (default) only on a terminal.

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
    if cross_fit is not None and (not isinstance(cross_fit, int) or isinstance(cross_fit, bool) or cross_fit < 2):
        raise ValidationError(f"cross_fit={cross_fit!r}; accepted: an int >= 2 (folds) or None")
    data = dataset if isinstance(dataset, LabelledData) else load_dataset(dataset)
    where = data.source or data.name
    notes: list[str] = []
    fraction = 0.2 if holdout is None else holdout
    if not data.splits:
        if holdout is None:
            raise DatasetError(
                f"{where}: has no split column; pass --holdout 0.2 (holdout=0.2) to hold out a stratified "
                "test split, or name the split column with --split-col (split_col=)"
            )
        data = data.carve(holdout, into=test, seed=seed)
        notes.append(f"no split column: held out {holdout:g} of each label as {test!r} "
                     f"({len(data.split(test)[0])} rows, stratified, seed {seed})")
    train = _resolve_split(data, train, "training")
    if data.find_split(test) is None and holdout is not None:
        data = data.carve(holdout, into=test, source=train, seed=seed)
        notes.append(f"no {test!r} split: held out {holdout:g} of each label of {train!r} as {test!r} (seed {seed})")
    test = _resolve_split(data, test, "test")
    val_name: str | None = None
    if calibrate and val is not None:
        if val != "auto":
            val_name = _resolve_split(data, val, "validation")
        elif data.find_split("val") is not None:
            val_name = data.find_split("val")
        elif data.has_oos(train):
            data = data.carve(fraction, into="val", source=train, seed=seed)
            val_name = "val"
            notes.append(f"no validation split: carved {fraction:g} of each label of {train!r} as 'val' "
                         f"({len(data.split('val')[0])} rows, stratified, seed {seed}) to calibrate thresholds on")
        else:
            notes.append("no validation split, and no out-of-scope rows in train to carve one from: "
                         "thresholds not calibrated")
    x_train, y_train = data.split(train)
    descriptions: dict[str, str] = {}
    if with_descriptions:
        pass_desc = _fit_accepts_descriptions(router)
        for route in sorted(set(data.route_descriptions) | set(data.route_examples)):
            extra = list(data.route_examples.get(route, ()))
            if route in data.route_descriptions:
                if pass_desc:
                    descriptions[route] = data.route_descriptions[route]
                else:
                    extra.insert(0, data.route_descriptions[route])
            x_train += extra
            y_train += [route] * len(extra)
    x_test, y_test = data.split(test)
    if not x_test:
        raise DatasetError(f"{where}: split {test!r} is empty")
    fit_kwargs: dict[str, Any] = {"descriptions": descriptions} if descriptions else {}
    did_calibrate = False
    n_val = 0
    reason = "" if val_name else ("calibrate=False" if not calibrate else "val=None" if val is None else notes[-1])
    if val_name is not None and not data.has_oos(val_name) and cross_fit is None:
        reason = f"split {val_name!r} has no out-of-scope rows"
        notes.append(f"validation split {val_name!r} has no out-of-scope rows: thresholds not calibrated")
        val_name = None
    steps = (cross_fit + 1 if cross_fit else 1) + (1 if val_name and not cross_fit else 0) + 2
    with progress_bar(steps, f"gate eval {data.name}", enabled=progress) as bar:
        if cross_fit:
            fit_calibrated = getattr(router, "fit_calibrated", None)
            if not callable(fit_calibrated):
                raise ValidationError(f"cross_fit needs a router with fit_calibrated(); "
                                      f"{type(router).__name__} has none")
            x_cv, y_cv = list(x_train), list(y_train)
            if val_name is not None:
                x_val, y_val = data.split(val_name)
                x_cv, y_cv = x_cv + x_val, y_cv + y_val
            bar.set_postfix_str(f"fit + {cross_fit}-fold calibration")
            fit_calibrated(x_cv, y_cv, criterion=criterion, folds=cross_fit, per_route=per_route, seed=seed,
                           progress=lambda done, total: bar.update(1), **fit_kwargs)
            notes.append(f"fitted on {train!r}" + (f" + {val_name!r}" if val_name else "")
                         + f"; thresholds chosen on out-of-fold scores of {cross_fit} folds")
            x_train, n_val, did_calibrate, reason = x_cv, 0, True, ""
        else:
            bar.set_postfix_str("fit")
            router.fit(x_train, y_train, **fit_kwargs)
            bar.update(1)
            if val_name is not None:
                bar.set_postfix_str("calibrate")
                x_val, y_val = data.split(val_name)
                router.calibrate(x_val, y_val, criterion=criterion, per_route=per_route)
                did_calibrate, n_val, reason = True, len(x_val), ""
                bar.update(1)
        bar.set_postfix_str("predict")
        start = time.perf_counter()
        y_pred = [normalize_label(p) for p in router.predict(x_test)]
        elapsed = time.perf_counter() - start
        bar.update(1)
        qps = len(x_test) / elapsed if elapsed > 0 else float("inf")
        metrics = routing_metrics(y_test, y_pred, routes=getattr(router, "routes_", None))
        bar.set_postfix_str("intervals")
        ci = {
            name: bootstrap_ci(y_test, y_pred, name, n_boot=n_boot, seed=seed)
            for name in HEADLINE_METRICS
            if getattr(metrics, name) is not None
        }
        bar.update(1)
    used_criterion = (getattr(router, "criterion_", None) or criterion) if did_calibrate else None
    config = {
        "dataset": data.name,
        "source": data.source,
        "train": train,
        "val": val_name,
        "test": test,
        "criterion": criterion,
        "per_route": per_route,
        "calibrate": calibrate,
        "with_descriptions": with_descriptions,
        "holdout": holdout,
        "cross_fit": cross_fit,
        "calibration_skipped": reason or None,
        "router": type(router).__name__,
        "router_params": _router_params(router),
        "n_boot": n_boot,
        "seed": seed,
        "notes": notes,
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


# ---------------------------------------------------------------------------------------------- CLI core


def run_gate_eval(
    path: str | os.PathLike[str],
    *,
    train_split: str = "train",
    val_split: str | None = "auto",
    test_split: str = "test",
    criterion: str = "accuracy",
    method: str | None = None,
    per_route: bool = False,
    with_descriptions: bool | None = None,
    text_col: str | None = None,
    label_col: str | None = None,
    split_col: str | None = None,
    delimiter: str | None = None,
    encoding: str = "utf-8",
    errors: str = "strict",
    holdout: float | None = None,
    seed: int = 0,
    cross_fit: int | None = None,
    router_options: Mapping[str, Any] | None = None,
    n_boot: int = 1000,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Evaluate ``synapse_nb.gate.Router`` on a labelled file or dataset; what ``synapse-nb gate eval PATH`` prints.

    Parameters
    ----------
    path
        A labelled file (CSV/TSV, JSON Lines, JSON records, Parquet), a folder of split files
        (``train.*``, ``val.*``/``valid*``/``dev.*``, ``test.*``), a dataset folder or a bundled dataset name.
    train_split, val_split, test_split
        Split names (see :func:`evaluate_router`; ``val_split="auto"`` finds or carves one, ``None`` skips
        calibration, an unknown name is an error listing the splits found).
    criterion
        ``"accuracy"`` or ``"balanced"``.
    method
        ``Router(method=...)``: ``auto`` (default), ``linear``, ``centroid`` or ``knn``.
    per_route
        Calibrate per-route thresholds.
    with_descriptions
        Fit on route descriptions/examples; ``None`` (default): whenever the dataset has them (agent_vault's
        hubs), the setting of ``notebooks/gate_hub_routing.ipynb``.
    text_col, label_col, split_col, delimiter, encoding, errors
        How to read a file (:func:`synapse_nb.eval.load_labelled`).
    holdout, seed
        Hold-out share for data without splits (and for a validation split carved from train), and its seed.
    cross_fit
        Fit on train + val and choose thresholds on out-of-fold scores of this many folds.
    router_options
        Further ``Router`` arguments (``C``, ``linear_idf``, ``description_weight``, ``blend``).
    n_boot
        Bootstrap resamples for the intervals.
    progress
        A progress bar on standard error: ``None`` (default) only on a terminal.

    Returns
    -------
    dict
        :meth:`RouterEvaluation.to_dict`: ``in_scope_accuracy``, ``oos_recall``, ``oos_precision``,
        ``oos_f1`` (``None`` without out-of-scope test rows), ``accuracy``, ``criterion``, ``thresholds``,
        ``n_train``, ``n_test``, ``queries_per_second``, ``ci``, ``notes``, ``config``; fractions in [0, 1].

    Examples
    --------
    >>> out = run_gate_eval("datasets/agent_vault")   # doctest: +SKIP
    >>> sorted(out)[:3]                               # doctest: +SKIP
    ['accuracy', 'calibrated', 'ci']
    """
    from synapse_nb.gate import Router  # the router imports scikit-learn: only when one is built here

    options = dict(router_options or {})
    if method is not None:
        options["method"] = method
    router = Router(**options)
    data = load_dataset(path, text_col=text_col, label_col=label_col, split_col=split_col, delimiter=delimiter,
                        encoding=encoding, errors=errors)
    if with_descriptions is None:
        with_descriptions = bool(data.route_descriptions or data.route_examples)
    result = evaluate_router(
        router,
        data,
        train=train_split,
        val=val_split,
        test=test_split,
        criterion=criterion,
        per_route=per_route,
        with_descriptions=with_descriptions,
        holdout=holdout,
        cross_fit=cross_fit,
        n_boot=n_boot,
        seed=seed,
        progress=progress,
    )
    return result.to_dict()
