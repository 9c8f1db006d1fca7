"""An intent router on the gate's analysis: ``fit`` / ``predict`` / ``evaluate`` / ``calibrate``.

Texts become word (1-2)-gram and ``char_wb`` (2-5)-gram rows (:class:`~synapse_nb.gate.features.Featurizer`:
scikit-learn's TF-IDF, computed a batch at a time). A *method* turns them into one score per route:

* ``"auto"`` (default) -- ``(1 - blend) * linear + blend * centroid``; :meth:`Router.calibrate` (or
  :meth:`Router.fit_calibrated`) chooses the blend with the threshold on calibration data: many examples
  per route favour the linear model, few examples and good route descriptions the centroid.
* ``"linear"`` -- one-vs-rest ``LinearSVC`` (liblinear, ``random_state=0``) on ``tf * idf ** linear_idf``
  rows. Out-of-scope training rows are a class of their own, and a route's score is its margin *minus
  the out-of-scope class's margin*: "how much more this route than no route".
* ``"centroid"`` -- cosine to the route's mean TF-IDF row, pulled toward the route's description when
  ``fit`` is given ``descriptions`` (``description_weight``).
* ``"knn"`` -- cosine to the route's nearest example (works with one example per route, as note
  triggers are routed).

``predict`` takes the best route and returns ``None`` ("no route") when its score is below the route's
threshold (``route_thresholds_``, else ``threshold_``). ``calibrate`` chooses thresholds by an exhaustive
search over the distinct scores of the data it is given; ``fit_calibrated`` does the same on
out-of-fold scores of the training data (cross-fitting) and then fits on all of it. Neither looks at any
other data. Scores are float64 and the same whatever ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.gate.features import Featurizer
from synapse_nb.gate.folds import stratified_folds
from synapse_nb.gate.metrics import RoutingMetrics, normalize_label, routing_metrics, threshold_counts
from synapse_nb.gate.scorer import GateConfig

__all__ = ["BLEND_GRID", "CRITERIA", "LINEAR_MIN_EXAMPLES", "METHODS", "ROUTER_CONFIG", "Router"]

#: Scoring methods a :class:`Router` accepts.
METHODS: tuple[str, ...] = ("auto", "centroid", "knn", "linear")
#: Calibration criteria: ``accuracy`` (out of scope as its own class) or ``balanced`` (mean of in-scope
#: accuracy and out-of-scope recall).
CRITERIA: tuple[str, ...] = ("accuracy", "balanced")
#: The router's default analysis: no stop words (intents live in "what", "how", "my"), char 2-5-grams.
ROUTER_CONFIG = GateConfig(stop_words=None, char_ngram_range=(2, 5))
#: The blends ``method="auto"`` tries when calibrating (0 = linear only, 1 = centroid only).
BLEND_GRID: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
#: ``method="auto"`` before calibration: linear only when the median route has at least this many
#: examples, else centroid only (a linear model needs examples; a described centroid does not).
LINEAR_MIN_EXAMPLES = 20

_OOS = "\x00oos"  # internal class name of out-of-scope rows; cannot collide with a real label
_KNN_CHUNK = 512


def _norm_label(label: object, where: str) -> str:
    try:
        route = normalize_label(label)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return _OOS if route is None else route


def _check_texts(texts: Sequence[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise ValidationError(f"{name} must be a sequence of str, not a single str")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ValidationError(f"{name}[{i}] must be str, got {type(t).__name__}")
    return out


def _check_pair(texts: Sequence[str], labels: Sequence[Any]) -> tuple[list[str], list[str]]:
    xs = _check_texts(texts)
    if isinstance(labels, str):
        raise ValidationError("labels must be a sequence (one label per text), not a single str")
    ys = list(labels)
    if len(xs) != len(ys):
        raise ValidationError(f"texts and labels differ in length ({len(xs)} vs {len(ys)}); give one label per text")
    if not xs:
        raise ValidationError("texts is empty; give at least one labelled example")
    return xs, [_norm_label(y, f"labels[{i}]") for i, y in enumerate(ys)]


def _check_descriptions(descriptions: Mapping[str, str] | None) -> dict[str, str]:
    if descriptions is None:
        return {}
    if not isinstance(descriptions, Mapping):
        raise ValidationError("descriptions must be a mapping {route: text} or None")
    out: dict[str, str] = {}
    for route in sorted(descriptions, key=str):
        text = descriptions[route]
        name = _norm_label(route, "descriptions key")
        if name == _OOS:
            raise ValidationError(f"descriptions key {route!r} means out of scope; describe routes only")
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"descriptions[{route!r}] must be a non-blank str")
        out[name] = text
    return out


def _number(value: object, name: str, lo: float, hi: float, *, open_lo: bool = False) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value)
            or not (lo < value if open_lo else lo <= value) or value > hi):
        bound = f"({lo:g}, {hi:g}]" if open_lo else f"[{lo:g}, {hi:g}]"
        raise ValidationError(f"{name} must be a number in {bound}, got {value!r}")
    return float(value)


def _unit_rows(M: np.ndarray) -> np.ndarray:
    norms = np.sqrt((M * M).sum(axis=1, keepdims=True))
    norms[norms == 0] = 1.0
    out: np.ndarray = M / norms
    return out


def _search(top: np.ndarray, correct: np.ndarray, is_oos: np.ndarray, w_in: int, w_oos: int,
            max_candidates: int | None, rng: np.random.Generator) -> tuple[float, int]:
    """``(threshold, gain)`` maximising ``w_in * routed_correct + w_oos * rejected_oos``, exactly.

    Candidates: +inf (reject all), the midpoints between consecutive distinct scores, -inf (route all).
    Of equally good thresholds the middle one (in that order) is taken.
    """
    if len(top) == 0:
        return -math.inf, 0
    s = np.unique(top)[::-1]  # distinct scores, descending
    cand = np.concatenate([[math.inf], (s[:-1] + s[1:]) / 2.0, [-math.inf]])
    keep = np.arange(len(cand))
    if max_candidates is not None and len(cand) > max_candidates:
        keep = np.sort(rng.choice(keep, size=max_candidates, replace=False))
    counts = threshold_counts(top, correct, is_oos, cand[keep])
    gain = w_in * counts["routed_correct"].astype(np.int64) + w_oos * counts["rejected_oos"].astype(np.int64)
    ties = np.flatnonzero(gain == gain.max())
    return float(cand[keep][ties[len(ties) // 2]]), int(gain.max())


class Router:
    """Routes texts to labelled routes, or to ``None`` when nothing fits well enough.

    Parameters
    ----------
    config : GateConfig, optional
        Analysis settings (n-gram ranges, stop words, caps, sublinear tf). Default :data:`ROUTER_CONFIG`.
    method : {"auto", "linear", "centroid", "knn"}
        How features become route scores (see the module docs). Default ``"auto"``.
    threshold : float, optional
        Global threshold on the best route's score. ``None`` (default) routes everything until
        :meth:`calibrate` sets one.
    C : float
        Regularisation of the linear model (``LinearSVC(C=...)``). Default ``2.0``.
    linear_idf : float
        Exponent on idf in the linear model's rows, in [0, 1]: 1 is TF-IDF, 0 sublinear tf only. Default
        ``0.5``: the model learns its own feature weights, and full idf made rare char n-grams cheap to
        overfit. Centroids and kNN always use full TF-IDF.
    oos_negatives : bool
        Fit out-of-scope examples as a class of the linear model, and score routes by their margin over
        it. Default ``True``.
    min_route_examples : int
        ``calibrate(per_route=True)`` gives a route its own threshold only with at least this many
        calibration rows labelled with it; others use the global one. Default ``10``.
    description_weight : float
        Share of a route's centroid taken by its description (``fit(descriptions=...)``), in [0, 1].
        Default ``0.5``.
    blend : float, optional
        ``method="auto"`` only: fix the blend instead of letting calibration choose it.
    cache_size : int
        Distinct tokens whose analysis is cached (never changes a score). Default ``50_000``.

    Examples
    --------
    >>> r = Router().fit(
    ...     ["book a flight to paris", "fly me to rome", "what's the weather", "will it rain today"],
    ...     ["travel", "travel", "weather", "weather"],
    ...     descriptions={"travel": "flights, trains and hotels", "weather": "forecasts: rain, sun, wind"})
    >>> r.routes_
    ['travel', 'weather']
    >>> r.predict(["is it going to rain", "a flight to berlin"])
    ['weather', 'travel']
    >>> r.set_threshold(0.9).predict(["tell me a joke"])
    [None]
    """

    def __init__(
        self,
        config: GateConfig | None = None,
        *,
        method: str = "auto",
        threshold: float | None = None,
        C: float = 2.0,
        linear_idf: float = 0.5,
        oos_negatives: bool = True,
        min_route_examples: int = 10,
        description_weight: float = 0.5,
        blend: float | None = None,
        cache_size: int = 50_000,
    ) -> None:
        if config is not None and not isinstance(config, GateConfig):
            raise ValidationError(f"config must be a GateConfig or None, got {type(config).__name__}")
        if method not in METHODS:
            raise ValidationError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if not isinstance(min_route_examples, int) or min_route_examples < 1:
            raise ValidationError(f"min_route_examples must be an int >= 1, got {min_route_examples!r}")
        if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 0:
            raise ValidationError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self.config = config if config is not None else ROUTER_CONFIG
        self.method = method
        self.C = _number(C, "C", 0.0, math.inf, open_lo=True)
        self.linear_idf = _number(linear_idf, "linear_idf", 0.0, 1.0)
        self.oos_negatives = bool(oos_negatives)
        self.min_route_examples = min_route_examples
        self.description_weight = _number(description_weight, "description_weight", 0.0, 1.0)
        self.blend = None if blend is None else _number(blend, "blend", 0.0, 1.0)
        self.cache_size = cache_size
        self.threshold_: float = -math.inf
        self.set_threshold(threshold)
        self.route_thresholds_: dict[str, float] = {}
        self.criterion_: str | None = None
        self.routes_: list[str] = []
        self.blend_: float | None = None
        self._fitted = False

    def get_params(self) -> dict[str, Any]:
        """The constructor's arguments (scikit-learn style), for records of an evaluation."""
        return {"method": self.method, "C": self.C, "linear_idf": self.linear_idf,
                "oos_negatives": self.oos_negatives, "min_route_examples": self.min_route_examples,
                "description_weight": self.description_weight, "blend": self.blend, "cache_size": self.cache_size,
                "config": repr(self.config)}

    def _clone(self) -> Router:
        return type(self)(self.config, method=self.method, C=self.C, linear_idf=self.linear_idf,
                          oos_negatives=self.oos_negatives, min_route_examples=self.min_route_examples,
                          description_weight=self.description_weight, blend=self.blend, cache_size=self.cache_size)

    def set_threshold(self, threshold: float | None) -> Router:
        """Set the global threshold (``None``: route everything); returns ``self``."""
        if threshold is None:
            self.threshold_ = -math.inf
        elif isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and not math.isnan(threshold):
            self.threshold_ = float(threshold)
        else:
            raise ValidationError(f"threshold must be a number or None, got {threshold!r}")
        return self

    # -- fitting ----------------------------------------------------------------------------
    def _featurizer(self) -> Featurizer:
        return Featurizer(self.config, cache_size=self.cache_size)

    def fit(self, texts: Sequence[str], labels: Sequence[Any], *,
            descriptions: Mapping[str, str] | None = None) -> Router:
        """Learn the routes from labelled examples and, optionally, one description per route.

        Parameters
        ----------
        texts : sequence of str
            Example utterances (none may be blank).
        labels : sequence of str or None
            One per text: a route name, or ``None`` / ``""`` / ``"oos"`` (any case) for out of scope.
        descriptions : mapping, optional
            Route name -> what the route is for (a hub's trigger, an intent's documentation). It counts as
            one more example of the route and takes ``description_weight`` of its centroid; a route may be
            defined by its description alone.

        Returns
        -------
        Router
            ``self``, with ``routes_`` (sorted route names).

        Raises
        ------
        ValidationError
            Mismatched lengths, no examples, a blank text, no route, a bad description, or (for
            ``"linear"``) a single class with no out-of-scope examples to contrast it with.
        """
        xs, ys = _check_pair(texts, labels)
        for i, t in enumerate(xs):
            if not t.strip():
                raise ValidationError(f"texts[{i}] is blank; every example needs some words")
        desc = _check_descriptions(descriptions)
        xs, ys = xs + list(desc.values()), ys + list(desc)
        routes = sorted({y for y in ys if y != _OOS})
        if not routes:
            raise ValidationError("labels hold no route (all are None/''/'oos'); give at least one routed example")
        classes = sorted(set(ys)) if self.oos_negatives else routes
        if self.method == "linear" and len(classes) < 2:
            raise ValidationError(
                f"method 'linear' needs at least two classes, got only {classes[0]!r}; "
                "add another route or out-of-scope examples, or use method='knn' or 'auto'")
        self._feat = self._featurizer().fit(xs)
        T = self._feat.counts(xs)
        X = self._feat.weigh(T)  # TF-IDF rows: centroids and kNN
        y = np.array(ys, dtype=object)
        self.routes_ = routes
        self._has_linear = self.method in ("auto", "linear") and len(classes) >= 2
        if self._has_linear:
            self._fit_linear(T, X, y, routes)
        if self.method in ("auto", "centroid"):
            self._fit_centroids(X, y, routes, desc)
        if self.method == "knn":
            order = [i for r in routes for i in np.flatnonzero(y == r)]
            counts = [int((y == r).sum()) for r in routes]
            self._examples = X[order].T.tocsr()  # (n_features, n_examples), grouped by route
            self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        if self.method == "auto":
            if self.blend is not None:
                default = self.blend
            elif not self._has_linear:
                default = 1.0
            else:
                per_route = np.array([int((y == r).sum()) for r in routes])
                default = 0.0 if float(np.median(per_route)) >= LINEAR_MIN_EXAMPLES else 1.0
            self.blend_ = float(default)
        else:
            self.blend_ = {"linear": 0.0, "centroid": 1.0}.get(self.method)
        self.route_thresholds_ = {}
        self.criterion_ = None
        self._fitted = True
        return self

    def _fit_linear(self, T: sp.csr_matrix, X: sp.csr_matrix, y: np.ndarray, routes: list[str]) -> None:
        from sklearn.svm import LinearSVC  # scikit-learn: only when a linear model is fitted

        keep = np.ones(len(y), dtype=bool) if self.oos_negatives else (y != _OOS)
        XL = X if self.linear_idf == 1.0 else self._feat.weigh(T, idf_power=self.linear_idf)
        model = LinearSVC(C=self.C, random_state=0).fit(XL[keep], y[keep])
        cls = list(model.classes_)
        if len(cls) == 2:  # binary: liblinear gives one column, positive = classes_[1]
            coef = np.vstack([-model.coef_[0], model.coef_[0]])
            inter = np.array([-model.intercept_[0], model.intercept_[0]])
        else:
            coef, inter = model.coef_, model.intercept_
        coef, inter = np.asarray(coef, dtype=np.float64), np.asarray(inter, dtype=np.float64)
        idx = [cls.index(r) for r in routes]
        W, b = coef[idx], inter[idx]
        if _OOS in cls:  # the margin over the out-of-scope class
            W, b = W - coef[cls.index(_OOS)], b - inter[cls.index(_OOS)]
        self._lin_W = np.ascontiguousarray(W.T)  # (n_features, n_routes)
        self._lin_b = b

    def _fit_centroids(self, X: sp.csr_matrix, y: np.ndarray, routes: list[str], desc: dict[str, str]) -> None:
        cen = _unit_rows(np.vstack([np.asarray(X[y == r].mean(axis=0)) for r in routes]))
        if desc and self.description_weight > 0:
            w = self.description_weight
            D = self._feat.transform(list(desc.values())).toarray()
            rows = [routes.index(r) for r in desc]
            cen[rows] = _unit_rows((1.0 - w) * cen[rows] + w * D)
        self._cen_W = np.ascontiguousarray(cen.T)

    # -- scoring ----------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not self._fitted:
            raise ConflictError("this Router is not fitted; call fit(texts, labels) first")

    def _linear(self, T: sp.csr_matrix) -> np.ndarray:
        X = self._feat.weigh(T, idf_power=self.linear_idf)
        out: np.ndarray = np.asarray(X @ self._lin_W, dtype=np.float64) + self._lin_b
        return out

    def _centroid(self, T: sp.csr_matrix) -> np.ndarray:
        return np.asarray(self._feat.weigh(T) @ self._cen_W, dtype=np.float64)

    def _scores(self, T: sp.csr_matrix, blend: float | None = None) -> np.ndarray:
        """Route scores of term-frequency rows: one sparse x dense product per part used."""
        if self.method != "knn":
            beta = self.blend_ if blend is None else blend
            if beta is None or beta == 0.0:  # a linear or centroid router has its blend set when fitted
                return self._linear(T)
            if beta == 1.0:
                return self._centroid(T)
            return (1.0 - beta) * self._linear(T) + beta * self._centroid(T)
        X = self._feat.weigh(T)
        out = np.empty((X.shape[0], len(self.routes_)))
        for lo in range(0, X.shape[0], _KNN_CHUNK):
            sims = (X[lo : lo + _KNN_CHUNK] @ self._examples).toarray()
            out[lo : lo + _KNN_CHUNK] = np.maximum.reduceat(sims, self._starts, axis=1)
        return out

    def decision_scores(self, texts: Sequence[str]) -> np.ndarray:
        """Score every text against every route.

        Returns
        -------
        numpy.ndarray
            Shape ``(len(texts), len(routes_))``, float64; columns follow ``routes_``.
        """
        self._check_fitted()
        xs = _check_texts(texts)
        if not xs:
            return np.zeros((0, len(self.routes_)))
        return self._scores(self._feat.counts(xs))

    def _thresholds(self) -> np.ndarray:
        return np.array([self.route_thresholds_.get(r, self.threshold_) for r in self.routes_], dtype=np.float64)

    def _decide(self, scores: np.ndarray) -> np.ndarray:
        """Index of the chosen route per row, -1 for no route. Ties go to the first route (sorted)."""
        if scores.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        best = scores.argmax(axis=1)
        top = scores[np.arange(len(best)), best]
        return np.where(top >= self._thresholds()[best], best, -1)

    def predict(self, texts: Sequence[str]) -> list[str | None]:
        """The best route per text, or ``None`` when its score is below its threshold."""
        idx = self._decide(self.decision_scores(texts))
        return [None if i < 0 else self.routes_[i] for i in idx]

    def evaluate(self, texts: Sequence[str], labels: Sequence[Any]) -> RoutingMetrics:
        """Compare :meth:`predict` with ``labels`` (see :func:`synapse_nb.gate.metrics.routing_metrics`).

        Labels naming a route the router does not know count as errors, never as routes.
        """
        self._check_fitted()
        xs, ys = _check_pair(texts, labels)
        truth = [None if y == _OOS else y for y in ys]
        return routing_metrics(truth, self.predict(xs), routes=self.routes_)

    # -- calibration ------------------------------------------------------------------------
    def _calibration_parts(self, texts: list[str]) -> dict[float, np.ndarray]:
        """Scores of ``texts`` for each candidate blend (a subclass that overrides ``decision_scores``: those)."""
        if type(self).decision_scores is not Router.decision_scores:
            return {self.blend_ if self.blend_ is not None else 0.0: np.asarray(self.decision_scores(texts))}
        return self._parts(self._feat.counts(texts))

    def _parts(self, T: sp.csr_matrix) -> dict[float, np.ndarray]:
        """The scores calibration compares: one matrix per candidate blend (the fixed one otherwise)."""
        if self.method == "auto" and self.blend is None and self._has_linear:
            lin, cen = self._linear(T), self._centroid(T)
            return {b: lin if b == 0.0 else cen if b == 1.0 else (1.0 - b) * lin + b * cen for b in BLEND_GRID}
        return {self.blend_ if self.blend_ is not None else 0.0: self._scores(T)}

    def _choose(self, parts: dict[float, np.ndarray], ys: list[str], criterion: str, per_route: bool,
                seed: int, max_candidates: int | None) -> None:
        if criterion not in CRITERIA:
            raise ValidationError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
        if max_candidates is not None and (not isinstance(max_candidates, int) or max_candidates < 1):
            raise ValidationError(f"max_candidates must be an int >= 1 or None, got {max_candidates!r}")
        col = {r: j for j, r in enumerate(self.routes_)}
        y = np.array([col.get(v, -1 if v == _OOS else -2) for v in ys])
        is_oos = y == -1
        n_in, n_oos = int((~is_oos).sum()), int(is_oos.sum())
        if criterion == "balanced":
            if n_in == 0 or n_oos == 0:
                raise ValidationError(
                    "criterion 'balanced' needs both in-scope and out-of-scope rows in the calibration data")
            w_in, w_oos = n_oos, n_in  # (C/n_in + R/n_oos)/2 scaled by 2*n_in*n_oos: exact integers
        else:
            w_in, w_oos = 1, 1
        best: tuple[int, float, float, np.ndarray, np.ndarray, np.ndarray] | None = None
        for blend, scores in parts.items():  # ties: the first blend (the more linear)
            arg = scores.argmax(axis=1)
            top = scores[np.arange(len(arg)), arg]
            correct = (arg == y) & (y >= 0)
            th, gain = _search(top, correct, is_oos, w_in, w_oos, max_candidates, np.random.default_rng(seed))
            if best is None or gain > best[0]:
                best = (gain, blend, th, arg, top, correct)
        assert best is not None
        _, blend, self.threshold_, arg, top, correct = best
        if self.method == "auto":
            self.blend_ = float(blend)
        self.route_thresholds_ = {}
        if per_route:
            rng = np.random.default_rng(seed)
            for j, r in enumerate(self.routes_):
                if int((y == j).sum()) < self.min_route_examples:
                    continue
                rows = arg == j
                self.route_thresholds_[r], _ = _search(
                    top[rows], correct[rows], is_oos[rows], w_in, w_oos, max_candidates, rng)
        self.criterion_ = criterion

    def calibrate(
        self,
        texts: Sequence[str],
        labels: Sequence[Any],
        *,
        criterion: str = "accuracy",
        per_route: bool = False,
        seed: int = 0,
        max_candidates: int | None = None,
    ) -> Router:
        """Choose threshold(s) -- and, for ``method="auto"``, the blend -- that maximise ``criterion``
        on the data given.

        Parameters
        ----------
        texts, labels : sequences
            Calibration data. Pass a validation split, never the split you will report on.
        criterion : {"accuracy", "balanced"}
            ``"accuracy"``: out of scope as its own class (Larson et al. 2019). ``"balanced"``: mean
            of in-scope accuracy and out-of-scope recall (needs both kinds of rows).
        per_route : bool
            Also give each route with at least ``min_route_examples`` calibration rows its own
            threshold (others fall back to the global one).
        seed : int
            Seeds the candidate subsample when ``max_candidates`` is set.
        max_candidates : int, optional
            Search at most this many thresholds (a seeded sample) instead of all of them.

        Returns
        -------
        Router
            ``self``, with ``threshold_``, ``route_thresholds_``, ``criterion_`` (and ``blend_``) set.

        Notes
        -----
        Both criteria are sums of per-row gains, so the search is exact: every threshold between two
        distinct scores (and +-inf) is counted with :func:`synapse_nb.gate.metrics.threshold_counts`. Of
        equally good thresholds, the middle one is taken; of equally good blends, the first of
        :data:`BLEND_GRID`.
        """
        self._check_fitted()
        xs, ys = _check_pair(texts, labels)
        self._choose(self._calibration_parts(xs), ys, criterion, per_route, seed, max_candidates)
        return self

    def fit_calibrated(
        self,
        texts: Sequence[str],
        labels: Sequence[Any],
        *,
        descriptions: Mapping[str, str] | None = None,
        criterion: str = "balanced",
        folds: int = 5,
        per_route: bool = False,
        seed: int = 0,
        max_candidates: int | None = None,
        progress: Any = None,
    ) -> Router:
        """Cross-fit: choose the threshold(s) and blend on out-of-fold scores, then fit on every row.

        The rows are split into ``folds`` label-stratified folds (:func:`~synapse_nb.gate.folds.stratified_folds`,
        ``seed``); each fold is scored by a router fitted on the others (with the same ``descriptions``), and
        :meth:`calibrate`'s search runs on those out-of-fold scores. Every labelled row is used once for
        calibration and every row for the final fit: with a small validation split (CLINC150 has 100
        out-of-scope validation rows) this gives several times more calibration rows than a split would.
        It costs ``folds + 1`` fits.

        Parameters
        ----------
        texts, labels, descriptions
            As for :meth:`fit`: pass the training *and* validation rows, never the rows you report on.
        criterion, per_route, seed, max_candidates
            As for :meth:`calibrate`; ``criterion`` defaults to ``"balanced"`` (prior-free).
        folds : int
            Number of folds (>= 2).
        progress : callable, optional
            Called as ``progress(done, total)`` after each of the ``folds + 1`` fits.

        Returns
        -------
        Router
            ``self``, fitted on every row, with ``threshold_``, ``route_thresholds_``, ``criterion_``,
            ``blend_`` and ``cv_folds_`` set.
        """
        xs, ys = _check_pair(texts, labels)
        fold = stratified_folds(ys, folds, seed=seed)
        routes = sorted({y for y in ys if y != _OOS} | set(_check_descriptions(descriptions)))
        oof: dict[float, np.ndarray] = {}
        for k in range(folds):
            train, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
            part = self._clone().fit([xs[i] for i in train], [ys[i] for i in train], descriptions=descriptions)
            cols = np.array([routes.index(r) for r in part.routes_])
            for blend, scores in part._calibration_parts([xs[i] for i in held]).items():
                full = oof.setdefault(blend, np.full((len(xs), len(routes)), -np.inf))
                full[np.ix_(held, cols)] = scores
            if progress is not None:
                progress(k + 1, folds + 1)
        self.fit(xs, ys, descriptions=descriptions)
        if self.method == "auto" and self.blend is None and not self._has_linear:
            oof = {1.0: oof[max(oof)]}
        self._choose(oof, ys, criterion, per_route, seed, max_candidates)
        self.cv_folds_ = folds
        if progress is not None:
            progress(folds + 1, folds + 1)
        return self
