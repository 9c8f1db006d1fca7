"""An intent router on the gate's analysis: ``fit`` / ``predict`` / ``evaluate`` / ``calibrate``.

Texts become word (1-2)-gram and ``char_wb`` (2-5)-gram TF-IDF features (scikit-learn, sublinear tf,
sorted vocabularies), concatenated and L2-normalised. A *method* turns features into one score per
route:

* ``"linear"`` (default) -- one-vs-rest ``LinearSVC`` (liblinear, ``random_state=0``); out-of-scope
  examples are an extra class, so every route learns them as negatives; the score is the route's
  margin.
* ``"centroid"`` -- cosine similarity to the L2-normalised mean of each route's examples.
* ``"knn"`` -- cosine similarity to the route's nearest example (works with one example per route,
  which is how note triggers are routed).

``predict`` takes the best route and returns ``None`` ("no route") when its score is below the
route's threshold (``route_thresholds_``, else ``threshold_``). ``calibrate`` chooses thresholds by
an exhaustive search over the distinct scores of the data it is given, never any other split.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import precision_recall_fscore_support
from sklearn.preprocessing import normalize
from sklearn.svm import LinearSVC

from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.text import char_vectorizer_kwargs, word_vectorizer_kwargs
from synapse_nb.gate.scorer import GateConfig

__all__ = ["CRITERIA", "METHODS", "OOS_LABELS", "ROUTER_CONFIG", "RouteMetrics", "Router", "RouterMetrics"]

#: Labels that mean "no route" (out of scope). They may be used as negatives, never as a route.
OOS_LABELS: tuple[str | None, ...] = (None, "", "oos")
#: Scoring methods a :class:`Router` accepts.
METHODS: tuple[str, ...] = ("centroid", "knn", "linear")
#: Calibration criteria :meth:`Router.calibrate` accepts.
CRITERIA: tuple[str, ...] = ("accuracy", "balanced")
#: The router's default analysis: no stop words (intents live in "what", "how", "my"), char 2-5-grams.
ROUTER_CONFIG = GateConfig(stop_words=None, char_ngram_range=(2, 5))

_OOS = "\x00oos"  # internal class name of out-of-scope rows; cannot collide with a real label
_KNN_CHUNK = 512


@dataclass(frozen=True)
class RouteMetrics:
    """Precision, recall and F1 of one route (scikit-learn, ``zero_division=0``)."""

    route: str
    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class RouterMetrics:
    """How well predictions match labels.

    Attributes
    ----------
    n : int
        Rows scored.
    accuracy : float
        Out-of-scope counted as its own class (Larson et al. 2019's "151-class" accuracy on CLINC150).
    in_scope_accuracy : float or None
        Share of in-scope rows routed to their label (None without in-scope rows).
    oos_recall, oos_precision, oos_f1 : float or None
        Out-of-scope as the positive class; None when there are no out-of-scope rows.
    per_route : tuple of RouteMetrics
        One per route of the router, sorted by route.
    """

    n: int
    accuracy: float
    in_scope_accuracy: float | None
    oos_recall: float | None
    oos_precision: float | None
    oos_f1: float | None
    per_route: tuple[RouteMetrics, ...] = field(default=())

    def summary(self) -> str:
        """One line with the headline figures, in percent.

        >>> RouterMetrics(10, 0.9, 0.95, 0.5, 1.0, 0.667).summary()
        'n=10 accuracy=90.00 in_scope=95.00 oos_recall=50.00 oos_precision=100.00 oos_f1=66.70'
        """

        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{100 * v:.2f}"

        return (
            f"n={self.n} accuracy={pct(self.accuracy)} in_scope={pct(self.in_scope_accuracy)} "
            f"oos_recall={pct(self.oos_recall)} oos_precision={pct(self.oos_precision)} oos_f1={pct(self.oos_f1)}"
        )


def _norm_label(label: object, where: str) -> str:
    if label is None or (isinstance(label, str) and label in OOS_LABELS):
        return _OOS
    if not isinstance(label, str):
        raise ValidationError(f"{where} must be a str route name or None/''/'oos' for no route, got {label!r}")
    return label


def _check_texts(texts: Sequence[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise ValidationError(f"{name} must be a sequence of str, not a single str")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ValidationError(f"{name}[{i}] must be str, got {type(t).__name__}")
    return out


def _check_pair(texts: Sequence[str], labels: Sequence[str | None]) -> tuple[list[str], list[str]]:
    xs = _check_texts(texts)
    if isinstance(labels, str):
        raise ValidationError("labels must be a sequence (one label per text), not a single str")
    ys = list(labels)
    if len(xs) != len(ys):
        raise ValidationError(f"texts and labels differ in length ({len(xs)} vs {len(ys)}); give one label per text")
    if not xs:
        raise ValidationError("texts is empty; give at least one labelled example")
    return xs, [_norm_label(y, f"labels[{i}]") for i, y in enumerate(ys)]


class Router:
    """Routes texts to labelled routes, or to ``None`` when nothing fits well enough.

    Parameters
    ----------
    config : GateConfig, optional
        Analysis settings (n-gram ranges, stop words, caps, sublinear tf). Default :data:`ROUTER_CONFIG`.
    method : {"linear", "centroid", "knn"}
        How features become route scores (see the module docs). Default ``"linear"``.
    threshold : float, optional
        Global threshold on the best route's score. ``None`` (default) routes everything until
        :meth:`calibrate` sets one.
    C : float
        Regularisation of ``"linear"`` (``LinearSVC(C=...)``). Default ``1.0``.
    oos_negatives : bool
        Fit out-of-scope examples as an extra class (``"linear"``) so routes learn them as negatives.
        Default ``True``. ``"centroid"`` and ``"knn"`` ignore them.
    min_route_examples : int
        :meth:`calibrate` with ``per_route=True`` gives a route its own threshold only when the
        calibration data has at least this many rows labelled with it; others use the global one.
        Default ``10``.

    Examples
    --------
    >>> r = Router(method="knn").fit(
    ...     ["book a flight to paris", "fly me to rome", "what's the weather", "will it rain today"],
    ...     ["travel", "travel", "weather", "weather"])
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
        method: str = "linear",
        threshold: float | None = None,
        C: float = 1.0,  # noqa: N803 - scikit-learn's name
        oos_negatives: bool = True,
        min_route_examples: int = 10,
    ) -> None:
        if config is not None and not isinstance(config, GateConfig):
            raise ValidationError(f"config must be a GateConfig or None, got {type(config).__name__}")
        if method not in METHODS:
            raise ValidationError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if not (isinstance(C, (int, float)) and C > 0):
            raise ValidationError(f"C must be a positive number, got {C!r}")
        if not isinstance(min_route_examples, int) or min_route_examples < 1:
            raise ValidationError(f"min_route_examples must be an int >= 1, got {min_route_examples!r}")
        self.config = config if config is not None else ROUTER_CONFIG
        self.method = method
        self.C = float(C)
        self.oos_negatives = bool(oos_negatives)
        self.min_route_examples = min_route_examples
        self.threshold_: float = -math.inf
        self.set_threshold(threshold)
        self.route_thresholds_: dict[str, float] = {}
        self.criterion_: str | None = None
        self.routes_: list[str] = []
        self._fitted = False

    # -- fitting ----------------------------------------------------------------------------
    def set_threshold(self, threshold: float | None) -> Router:
        """Set the global threshold (``None``: route everything); returns ``self``."""
        if threshold is None:
            self.threshold_ = -math.inf
        elif isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and not math.isnan(threshold):
            self.threshold_ = float(threshold)
        else:
            raise ValidationError(f"threshold must be a number or None, got {threshold!r}")
        return self

    def _vectorizers(self) -> tuple[TfidfVectorizer, TfidfVectorizer]:
        cfg = self.config
        word = TfidfVectorizer(
            **word_vectorizer_kwargs(  # type: ignore[arg-type]
                ngram_range=cfg.word_ngram_range,
                stop_words=cfg.stop_words,
                max_chars=cfg.max_query_chars,
                max_token_chars=cfg.max_token_chars,
            ),
            sublinear_tf=cfg.sublinear_tf,
        )
        char = TfidfVectorizer(
            **char_vectorizer_kwargs(  # type: ignore[arg-type]
                ngram_range=cfg.char_ngram_range, max_chars=cfg.max_query_chars, max_token_chars=cfg.max_token_chars
            ),
            sublinear_tf=cfg.sublinear_tf,
        )
        return word, char

    def _features(self, texts: list[str], *, fit: bool = False) -> sp.csr_matrix:
        if fit:
            self._word_vec, self._char_vec = self._vectorizers()
            try:
                w = self._word_vec.fit_transform(texts)
            except ValueError:  # empty vocabulary: no example has a word
                raise ValidationError("no example has any word to learn from; give texts with letters or digits") from None
            c = self._char_vec.fit_transform(texts)
        else:
            w = self._word_vec.transform(texts)
            c = self._char_vec.transform(texts)
        return normalize(sp.hstack([w, c], format="csr"))

    def fit(self, texts: Sequence[str], labels: Sequence[str | None]) -> Router:
        """Learn the routes from labelled examples.

        Parameters
        ----------
        texts : sequence of str
            Example utterances (none may be blank).
        labels : sequence of str or None
            One per text: a route name, or ``None`` / ``""`` / ``"oos"`` for an out-of-scope example.

        Returns
        -------
        Router
            ``self``, with ``routes_`` (sorted route names).

        Raises
        ------
        ValidationError
            Mismatched lengths, no examples, a blank text, no route, or (for ``"linear"``) a single
            class with no out-of-scope examples to contrast it with.
        """
        xs, ys = _check_pair(texts, labels)
        for i, t in enumerate(xs):
            if not t.strip():
                raise ValidationError(f"texts[{i}] is blank; every example needs some words")
        routes = sorted({y for y in ys if y != _OOS})
        if not routes:
            raise ValidationError("labels hold no route (all are None/''/'oos'); give at least one routed example")
        classes = sorted(set(ys)) if self.oos_negatives else routes
        if self.method == "linear" and len(classes) < 2:
            raise ValidationError(
                f"method 'linear' needs at least two classes, got only {classes[0]!r}; "
                "add another route or out-of-scope examples, or use method='knn'"
            )
        X = self._features(xs, fit=True)
        y = np.array(ys, dtype=object)
        self.routes_ = routes
        if self.method == "linear":
            keep = np.ones(len(ys), dtype=bool) if self.oos_negatives else (y != _OOS)
            model = LinearSVC(C=self.C, random_state=0).fit(X[keep], y[keep])
            cls = list(model.classes_)
            if len(cls) == 2:  # binary: liblinear gives one column, positive = classes_[1]
                coef = np.vstack([-model.coef_[0], model.coef_[0]])
                inter = np.array([-model.intercept_[0], model.intercept_[0]])
            else:
                coef, inter = model.coef_, model.intercept_
            idx = [cls.index(r) for r in routes]
            self._coef = np.ascontiguousarray(coef[idx].T, dtype=np.float64)  # (n_features, n_routes)
            self._intercept = np.asarray(inter[idx], dtype=np.float64)
        elif self.method == "centroid":
            rows = [normalize(np.asarray(X[y == r].mean(axis=0))) for r in routes]
            self._coef = np.ascontiguousarray(np.vstack(rows).T, dtype=np.float64)
            self._intercept = np.zeros(len(routes))
        else:  # knn
            order = [i for r in routes for i in np.flatnonzero(y == r)]
            counts = [int((y == r).sum()) for r in routes]
            self._examples = X[order].T.tocsr()  # (n_features, n_examples), grouped by route
            self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.route_thresholds_ = {}
        self.criterion_ = None
        self._fitted = True
        return self

    # -- scoring ----------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not self._fitted:
            raise ConflictError("this Router is not fitted; call fit(texts, labels) first")

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
        X = self._features(xs)
        if self.method != "knn":
            return np.asarray(X @ self._coef, dtype=np.float64) + self._intercept
        out = np.empty((len(xs), len(self.routes_)))
        for lo in range(0, len(xs), _KNN_CHUNK):
            sims = (X[lo : lo + _KNN_CHUNK] @ self._examples).toarray()
            out[lo : lo + _KNN_CHUNK] = np.maximum.reduceat(sims, self._starts, axis=1)
        return out

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

    def evaluate(self, texts: Sequence[str], labels: Sequence[str | None]) -> RouterMetrics:
        """Compare :meth:`predict` with ``labels`` (``None``/``""``/``"oos"`` = out of scope).

        Labels naming a route the router does not know count as errors, never as routes.
        """
        self._check_fitted()
        xs, ys = _check_pair(texts, labels)
        pred = [_OOS if p is None else p for p in self.predict(xs)]
        return _metrics(ys, pred, self.routes_)

    # -- calibration ------------------------------------------------------------------------
    def calibrate(
        self,
        texts: Sequence[str],
        labels: Sequence[str | None],
        *,
        criterion: str = "accuracy",
        per_route: bool = False,
        seed: int = 0,
        max_candidates: int | None = None,
    ) -> Router:
        """Choose threshold(s) that maximise ``criterion`` on the data given (a validation split).

        Parameters
        ----------
        texts, labels : sequences
            Calibration data. Pass a validation split, never the split you will report on.
        criterion : {"accuracy", "balanced"}
            ``"accuracy"``: out-of-scope as its own class (Larson et al. 2019). ``"balanced"``: mean
            of in-scope accuracy and out-of-scope recall (needs both kinds of rows).
        per_route : bool
            Also give each route with at least ``min_route_examples`` calibration rows its own
            threshold (others fall back to the global one).
        seed : int
            Seeds the candidate subsample when ``max_candidates`` is set.
        max_candidates : int, optional
            Search at most this many thresholds (a seeded sample of the distinct scores) instead
            of all of them.

        Returns
        -------
        Router
            ``self``, with ``threshold_``, ``route_thresholds_`` and ``criterion_`` set.

        Notes
        -----
        Both criteria are sums of per-row gains, so the search is exact: rows sorted by best score,
        each candidate threshold (midway between consecutive distinct scores, or +-inf) evaluated
        with cumulative sums in integer arithmetic. Of equally good thresholds, the middle one (in
        sorted order) is taken.
        """
        self._check_fitted()
        if criterion not in CRITERIA:
            raise ValidationError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
        if max_candidates is not None and (not isinstance(max_candidates, int) or max_candidates < 1):
            raise ValidationError(f"max_candidates must be an int >= 1 or None, got {max_candidates!r}")
        xs, ys = _check_pair(texts, labels)
        y = np.array([self.routes_.index(v) if v in self.routes_ else (-1 if v == _OOS else -2) for v in ys])
        scores = self.decision_scores(xs)
        best = scores.argmax(axis=1)
        top = scores[np.arange(len(best)), best]
        correct = (best == y) & (y >= 0)
        is_oos = y == -1
        n_in, n_oos = int((y != -1).sum()), int(is_oos.sum())
        if criterion == "balanced":
            if n_in == 0 or n_oos == 0:
                raise ValidationError(
                    "criterion 'balanced' needs both in-scope and out-of-scope rows in the calibration data"
                )
            w_in, w_oos = n_oos, n_in  # (C/n_in + R/n_oos)/2 scaled by 2*n_in*n_oos: exact integers
        else:
            w_in, w_oos = 1, 1
        rng = np.random.default_rng(seed)
        glob = _best_threshold(top, correct, is_oos, w_in, w_oos, max_candidates, rng)
        self.threshold_ = glob
        self.route_thresholds_ = {}
        if per_route:
            for j, r in enumerate(self.routes_):
                if int((y == j).sum()) < self.min_route_examples:
                    continue
                rows = best == j
                self.route_thresholds_[r] = _best_threshold(
                    top[rows], correct[rows], is_oos[rows], w_in, w_oos, max_candidates, rng
                )
        self.criterion_ = criterion
        return self


def _best_threshold(
    top: np.ndarray,
    correct: np.ndarray,
    is_oos: np.ndarray,
    w_in: int,
    w_oos: int,
    max_candidates: int | None,
    rng: np.random.Generator,
) -> float:
    """The threshold maximising w_in*(accepted & correct) + w_oos*(rejected & oos), exactly."""
    if len(top) == 0:
        return -math.inf
    order = np.lexsort((np.arange(len(top)), -top))  # by score descending, stable
    t, c, o = top[order], correct[order].astype(np.int64), is_oos[order].astype(np.int64)
    # accepting the first k rows (k at a boundary between distinct scores, or 0 / all)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(t) != 0) + 1, [len(t)]])
    cum_c = np.concatenate([[0], np.cumsum(c)])
    cum_o = np.concatenate([[0], np.cumsum(o)])
    gain = w_in * cum_c[bounds] + w_oos * (cum_o[-1] - cum_o[bounds])
    cand = np.arange(len(bounds))
    if max_candidates is not None and len(cand) > max_candidates:
        cand = np.sort(rng.choice(cand, size=max_candidates, replace=False))
    g = gain[cand]
    ties = cand[g == g.max()]
    k = int(bounds[ties[len(ties) // 2]])
    if k == 0:
        return math.inf
    if k == len(t):
        return -math.inf
    return float((t[k - 1] + t[k]) / 2.0)


def _metrics(ys: list[str], pred: list[str], routes: list[str]) -> RouterMetrics:
    y = np.array(ys, dtype=object)
    p = np.array(pred, dtype=object)
    n = len(ys)
    ins = y != _OOS
    oos = ~ins
    in_acc = float((p[ins] == y[ins]).mean()) if ins.any() else None
    if oos.any():
        pr, rc, f1, _ = precision_recall_fscore_support(
            oos, p == _OOS, average="binary", pos_label=True, zero_division=0
        )
        oos_m: tuple[float | None, ...] = (float(rc), float(pr), float(f1))
    else:
        oos_m = (None, None, None)
    per: tuple[RouteMetrics, ...] = ()
    if routes:
        pr_a, rc_a, f1_a, sup = precision_recall_fscore_support(
            y.astype(str), p.astype(str), labels=routes, average=None, zero_division=0
        )
        per = tuple(
            RouteMetrics(r, float(pr_a[i]), float(rc_a[i]), float(f1_a[i]), int(sup[i])) for i, r in enumerate(routes)
        )
    return RouterMetrics(
        n=n,
        accuracy=float((p == y).mean()),
        in_scope_accuracy=in_acc,
        oos_recall=oos_m[0],
        oos_precision=oos_m[1],
        oos_f1=oos_m[2],
        per_route=per,
    )
