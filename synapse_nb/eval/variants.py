"""Gate variants compared in one table, with the same harness and the same splits.

Every variant is a :class:`synapse_nb.gate.Router` (or a subclass of it), so each goes through
:func:`~synapse_nb.eval.routing.evaluate_router`: fit on ``train``, thresholds calibrated on ``val`` only,
scored on ``test`` with bootstrap intervals.

* features ``word`` (word 1-2-gram TF-IDF), ``char`` (``char_wb`` 2-5-gram TF-IDF) or ``both`` (the router's
  default: both, concatenated and L2-normalised) × methods ``linear`` (one-vs-rest LinearSVC margin),
  ``centroid`` (cosine to route centroids) and ``knn`` (cosine to the nearest example);
* ``bm25``, ``vector`` and ``hybrid``: the training examples are written to the vault's LanceDB retrieval
  index (:class:`synapse_nb.store.index.RetrievalIndex`) and a query's score for a route is the best score
  of that route's examples among the top 50 hits (BM25 full text; cosine of the hashing embedder;
  their reciprocal-rank fusion). Routes without a hit score 0 (``bm25``, ``hybrid``) or -1 (``vector``).

Examples
--------
>>> table = gate_variants("agent_vault", variants=["both-linear", "bm25"])   # doctest: +SKIP
>>> table.select("variant", "accuracy", "in_scope_accuracy", "oos_recall")    # doctest: +SKIP
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from synapse_nb.errors import ValidationError
from synapse_nb.eval.data import LabelledData, load_dataset
from synapse_nb.eval.routing import evaluate_router
from synapse_nb.gate.features import Featurizer
from synapse_nb.gate.metrics import normalize_label
from synapse_nb.gate.router import Router
from synapse_nb.store.index import IndexRow, RetrievalIndex

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["FeatureRouter", "IndexRouter", "VARIANTS", "gate_variants", "make_variant", "subsample"]

_FEATURES = ("word", "char", "both")
_METHODS = ("linear", "centroid", "knn")
_INDEX_MODES = {"bm25": "fts", "vector": "vector", "hybrid": "hybrid"}
#: Every variant name, in table order: ``<features>-<method>`` then the index paths.
VARIANTS: tuple[str, ...] = tuple(f"{f}-{m}" for f in _FEATURES for m in _METHODS) + tuple(_INDEX_MODES)
_DEPTH = 50


class FeatureRouter(Router):
    """A :class:`~synapse_nb.gate.Router` restricted to word or char TF-IDF features (or both).

    Parameters
    ----------
    features : {"word", "char", "both"}
        Which TF-IDF block to keep; ``"both"`` is exactly :class:`Router`.
    **kwargs
        Passed to :class:`Router` (``method``, ``C``, ...).

    Examples
    --------
    >>> r = FeatureRouter("word", method="knn").fit(["book a flight", "rain today?"], ["travel", "weather"])
    >>> r.predict(["a flight to rome"])
    ['travel']
    """

    def __init__(self, features: str = "both", **kwargs: Any) -> None:
        if features not in _FEATURES:
            raise ValidationError(f"features must be one of {', '.join(_FEATURES)}, got {features!r}")
        super().__init__(**kwargs)
        self.features = features

    def _featurizer(self) -> Featurizer:
        blocks = ("word", "char") if self.features == "both" else (self.features,)
        return Featurizer(self.config, blocks=blocks, cache_size=self.cache_size)

    def _clone(self) -> FeatureRouter:
        return type(self)(self.features, **{k: v for k, v in self.get_params().items() if k != "config"},
                          config=self.config)


class IndexRouter(Router):
    """Routes by searching the training examples in a LanceDB retrieval index (BM25, vector or hybrid).

    The index lives in a temporary folder removed by :meth:`close` (or when the router is collected).
    Thresholds, calibration and prediction are :class:`Router`'s, on the scores described in the module.

    Parameters
    ----------
    mode : {"bm25", "vector", "hybrid"}
        Which search of :meth:`synapse_nb.store.index.RetrievalIndex.search` scores the routes.

    Examples
    --------
    >>> r = IndexRouter("bm25").fit(["book a flight", "will it rain"], ["travel", "weather"])
    >>> r.predict(["flight to rome"])
    ['travel']
    >>> r.close()
    """

    def __init__(self, mode: str = "bm25") -> None:
        if mode not in _INDEX_MODES:
            raise ValidationError(f"mode must be one of {', '.join(_INDEX_MODES)}, got {mode!r}")
        super().__init__(method="knn")
        self.mode = mode
        self._dir: str | None = None
        self._idx: Any = None

    def fit(self, texts: Sequence[str], labels: Sequence[str | None], *, descriptions: Any = None) -> IndexRouter:
        """Index the in-scope examples and route descriptions (out-of-scope rows are not routes: left out)."""
        xs, ys = list(texts), list(labels)
        if isinstance(texts, str) or isinstance(labels, str) or len(xs) != len(ys) or not xs:
            raise ValidationError("texts and labels must be equal-length, non-empty sequences (one label per text)")
        keep = [(x, r) for x, r in ((x, normalize_label(y)) for x, y in zip(xs, ys, strict=True)) if r is not None]
        keep += [(str(text), str(route)) for route, text in sorted((descriptions or {}).items())]
        if not keep:
            raise ValidationError("labels hold no route (all are None/''/'oos'); give at least one routed example")
        self.close()
        self._dir = tempfile.mkdtemp(prefix="synapse-variant-")
        self._idx = RetrievalIndex(self._dir)
        rows = [IndexRow(f"ex_{i:07d}", "example", "default", x, str(i), "2000-01-01T00:00:00Z")
                for i, (x, _) in enumerate(keep)]
        self._idx.rebuild(rows)
        self.routes_ = sorted({y for _, y in keep})
        col = {r: j for j, r in enumerate(self.routes_)}
        self._example_route = {f"ex_{i:07d}": col[y] for i, (_, y) in enumerate(keep)}
        self.route_thresholds_ = {}
        self.criterion_ = None
        self._fitted = True
        return self

    def decision_scores(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), len(routes_))``: each route's best example score among the top 50 hits."""
        self._check_fitted()
        xs = list(texts)
        empty = -1.0 if self.mode == "vector" else 0.0
        out = np.full((len(xs), len(self.routes_)), empty)
        for i, text in enumerate(xs):
            for hit in self._idx.search(text, mind="default", now="2000-01-02T00:00:00Z", k=_DEPTH,
                                        mode=_INDEX_MODES[self.mode]):
                j = self._example_route[hit.id]
                out[i, j] = max(out[i, j], hit.score)
        return out

    def close(self) -> None:
        """Remove the temporary index."""
        if self._idx is not None:
            self._idx.close()
            self._idx = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __del__(self) -> None:  # pragma: no cover - best effort cleanup
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - cleanup at collection: nothing can be reported, nothing must escape
            pass


def make_variant(name: str) -> Router:
    """A fresh, unfitted router for a variant name of :data:`VARIANTS`.

    >>> type(make_variant("char-centroid")).__name__, make_variant("bm25").mode
    ('FeatureRouter', 'bm25')
    """
    if name in _INDEX_MODES:
        return IndexRouter(name)
    features, _, method = name.partition("-")
    if features not in _FEATURES or method not in _METHODS:
        raise ValidationError(f"unknown variant {name!r}; accepted: {', '.join(VARIANTS)}")
    return FeatureRouter(features, method=method)


def subsample(data: LabelledData, split: str, n: int, *, seed: int = 0) -> LabelledData:
    """Keep a seeded, label-stratified sample of about ``n`` rows of ``split``; other splits unchanged.

    Each label keeps ``round(n * share)`` rows (at least one), chosen by a seeded permutation; rows keep
    their original order. Used to keep notebook runs under their time limit.

    >>> d = load_dataset("agent_vault")                        # doctest: +SKIP
    >>> len(subsample(d, "test", 50).split("test")[0])         # doctest: +SKIP
    50
    """
    if data.row_splits is None:
        raise ValidationError(f"{data.name}: has no split column to subsample")
    idx = [i for i, s in enumerate(data.row_splits) if s == split]
    if not idx:
        raise ValidationError(f"{data.name}: no rows in split {split!r}; splits: {', '.join(data.splits)}")
    if n >= len(idx):
        return data
    rng = np.random.default_rng(seed)
    by_label: dict[str, list[int]] = {}
    for i in idx:
        by_label.setdefault("" if data.labels[i] is None else str(data.labels[i]), []).append(i)
    chosen: set[int] = set()
    for label in sorted(by_label):
        rows = by_label[label]
        take = max(1, round(n * len(rows) / len(idx)))
        chosen.update(rows[j] for j in rng.permutation(len(rows))[:take])
    keep = [i for i in range(len(data.texts)) if data.row_splits[i] != split or i in chosen]
    return LabelledData(
        texts=tuple(data.texts[i] for i in keep),
        labels=tuple(data.labels[i] for i in keep),
        row_splits=tuple(data.row_splits[i] for i in keep),
        source=data.source,
        name=data.name,
        route_descriptions=data.route_descriptions,
        route_examples=data.route_examples,
    )


def gate_variants(
    dataset: LabelledData | str | os.PathLike[str],
    *,
    variants: Sequence[str] | None = None,
    criterion: str = "balanced",
    with_descriptions: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> pl.DataFrame:
    """Evaluate gate variants on one dataset with :func:`evaluate_router`; one row per variant.

    Parameters
    ----------
    dataset
        ``"clinc150"``, ``"agent_vault"``, a folder or file, or a :class:`LabelledData` (e.g. from
        :func:`subsample`). Needs ``train``, ``val`` and ``test`` splits.
    variants
        Names from :data:`VARIANTS` (default: all twelve), in the order given.
    criterion
        Threshold criterion on ``val``: ``"balanced"`` (default) or ``"accuracy"``.
    with_descriptions
        Also fit on route descriptions/examples (agent_vault hubs).
    n_boot, seed
        Bootstrap resamples and seed for the 95 % intervals.

    Returns
    -------
    polars.DataFrame
        ``dataset``, ``variant``, ``features``, ``method``, ``criterion``, ``accuracy`` (out of scope as its
        own class) with ``accuracy_lo``/``accuracy_hi``, ``in_scope_accuracy`` (+ ``_lo``/``_hi``),
        ``oos_recall`` (+ ``_lo``/``_hi``), ``oos_precision``, ``oos_f1``, ``threshold``, ``n_train``,
        ``n_val``, ``n_test``, ``queries_per_second`` (a timing: varies from run to run).

    Examples
    --------
    >>> gate_variants("agent_vault", variants=["word-knn"])["variant"].to_list()   # doctest: +SKIP
    ['word-knn']
    """
    import polars as pl  # polars (about 1 s to import): only where a table is built

    names = list(VARIANTS if variants is None else variants)
    for name in names:
        if name not in VARIANTS:
            raise ValidationError(f"unknown variant {name!r}; accepted: {', '.join(VARIANTS)}")
    data = dataset if isinstance(dataset, LabelledData) else load_dataset(dataset)
    rows: list[dict[str, Any]] = []
    for name in names:
        router = make_variant(name)
        try:
            res = evaluate_router(router, data, criterion=criterion, with_descriptions=with_descriptions,
                                  n_boot=n_boot, seed=seed)
        finally:
            if isinstance(router, IndexRouter):
                router.close()
        m = res.metrics
        features, method = (name.split("-") if "-" in name else ("index", name))
        row: dict[str, Any] = {"dataset": data.name, "variant": name, "features": features, "method": method,
                               "criterion": res.criterion}
        for key in ("accuracy", "in_scope_accuracy", "oos_recall"):
            lo, hi = res.ci.get(key, (None, None))
            row |= {key: getattr(m, key), f"{key}_lo": lo, f"{key}_hi": hi}
        g = res.thresholds.get("global")
        row |= {"oos_precision": m.oos_precision, "oos_f1": m.oos_f1,
                "threshold": None if g is None or not np.isfinite(g) else float(g),
                "n_train": res.n_train, "n_val": res.n_val, "n_test": res.n_test,
                "queries_per_second": res.queries_per_second}
        rows.append(row)
    floats = ["accuracy", "accuracy_lo", "accuracy_hi", "in_scope_accuracy", "in_scope_accuracy_lo",
              "in_scope_accuracy_hi", "oos_recall", "oos_recall_lo", "oos_recall_hi", "oos_precision", "oos_f1",
              "threshold"]
    schema: dict[str, Any] = {"dataset": pl.String, "variant": pl.String, "features": pl.String,
                              "method": pl.String, "criterion": pl.String}
    schema |= dict.fromkeys(floats, pl.Float64)
    schema |= {"n_train": pl.Int64, "n_val": pl.Int64, "n_test": pl.Int64, "queries_per_second": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
