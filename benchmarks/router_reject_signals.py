"""The router's reject decision from several signals instead of one score: chosen on val only (issue 32, a fourth pass).

Run from the repository root (CLINC150: six router fits, about 3 minutes on 2 shared cores; cached after)::

    nice .venv/bin/python benchmarks/router_reject_signals.py
    nice .venv/bin/python benchmarks/router_reject_signals.py --only clinc150 --variants default,lr-oof

Today a query is routed when its best route's score (the linear model's margin over the out-of-scope class, or
the ``auto`` blend's) clears one threshold chosen on val. Here the best route stays the same (so in-scope accuracy
with no rejection, ``NR``, does not move) but the number compared with the threshold is a combination of cheap,
deterministic signals of the query and its best route ``r``:

- ``top``: ``r``'s score; ``gap``: its margin over the second route; ``lin`` / ``cen``: ``r``'s linear score
  (margin over the out-of-scope class) and centroid cosine; ``oosm``: the out-of-scope class's own margin;
- ``knn``: the best cosine to a training row of ``r``; ``knn_oos``: to an out-of-scope training row;
- ``unk_w`` / ``unk_c``: the share of the query's word / ``char_wb`` n-grams never seen in training;
- ``len``: ``ln(1 + words)``.

Combiners (each gives one score per query; its threshold and the ``auto`` blend are then chosen by the
``balanced`` criterion exactly as ``Router.calibrate`` chooses them):

- ``default``: ``top`` (today's router);
- ``lr-oof``: a logistic regression (standardised signals, balanced classes) of "routed right" (in-scope rows
  whose best route is right) against "out of scope", fitted on train's out-of-fold signals: each fifth of train
  scored by a router fitted on the other four (train has out-of-scope rows); no val row is trained on;
  ``lr-oof-all``: the same with wrong in-scope rows as negatives too;
- ``lr-val``: the regression fitted on the val rows the threshold is chosen on; ``lr-oof+val``: on both;
- ``lr-oof:top/unk_w/len``: a regression on those signals only;
- ``top+SIGNAL`` (``top+S1+S2``): ``top + a * z(SIGNAL)`` (``z``: standardised on train's out-of-fold rows), ``a``
  (each ``a``) chosen with the threshold on val from a grid of 11 values (a two- or three-signal linear rule);
  ``@val``: standardised on the val rows the rule is chosen on instead (no out-of-fold fits needed);
- ``prior=P``: today's score, with the threshold chosen by a criterion that states an out-of-scope prior ``P``
  (``P * oos recall + (1 - P) * in-scope accuracy``; ``balanced`` is ``P = 0.5``).

The key (``benchmarks/router_defaults.py``'s): val cut into 5 label-stratified folds; each fold predicted with the
combiner, threshold and blend fitted on train's out-of-fold rows and/or the other four folds; the pooled predictions
scored: **val-cc balanced** (mean of in-scope accuracy and out-of-scope recall), on CLINC150 and agent_vault. One of
CLINC150 val's 100 out-of-scope rows is 0.5 on it, one of agent_vault val's 23 is 2.2. ``--seeds 0,1,2,3``
re-cuts val's folds with other seeds (the key uses seed 0): how much of a gap is the cut. No test row is read.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.eval import load_dataset, routing_metrics
from synapse_nb.gate import Router
from synapse_nb.gate import router as R
from synapse_nb.gate.calibration import search_threshold
from synapse_nb.gate.defaults import BLEND_GRID
from synapse_nb.gate.folds import stratified_folds
from synapse_nb.text import fts_tokens, normalise, word_ngrams

SIGNALS = ("top", "gap", "lin", "cen", "oosm", "knn", "knn_oos", "unk_w", "unk_c", "len")
PAIR_GRID = (-2.0, -1.0, -0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5, 1.0, 2.0)
DEFAULT_VARIANTS = ("default,prior=0.25,prior=0.75,lr-oof,lr-oof-all,lr-val,lr-oof+val,lr-oof:top/unk_w/len,"
                    "lr-oof:top/gap/knn/knn_oos,lr-oof:top/oosm/knn_oos/unk_w/len,top+gap,top+knn,top+knn_oos,"
                    "top+unk_w,top+unk_c,top+cen,top+oosm,top+len,top+unk_w+len,top+oosm+unk_w,top+oosm+len,"
                    "top+knn_oos+unk_w,top+oosm+len@val")


class SignalRouter(Router):
    """The default router that also keeps the out-of-scope class's own weights (the ``oosm`` signal)."""

    def _fit_linear(self, T: sp.csr_matrix, S: sp.csr_matrix | None, X: sp.csr_matrix, y: np.ndarray,
                    routes: list[str]) -> None:
        """``Router._fit_linear`` (default options: out-of-scope rows a class), keeping that class's weights."""
        from sklearn.svm import LinearSVC

        XL = R._join(self._feat.weigh(T, idf_power=self.linear_idf), S)
        model = LinearSVC(C=self.C, random_state=0).fit(XL, y)
        cls = list(model.classes_)
        coef, inter = np.asarray(model.coef_, dtype=np.float64), np.asarray(model.intercept_, dtype=np.float64)
        assert len(cls) > 2 and R._OOS in cls, "the signals need routes and out-of-scope training rows"
        W, b = coef[[cls.index(r) for r in routes]], inter[[cls.index(r) for r in routes]]
        j = cls.index(R._OOS)
        self._lin_W, self._lin_b = np.ascontiguousarray((W - coef[j]).T), b - inter[j]
        self._oos_w, self._oos_b = coef[j], float(inter[j])

    def fit(self, texts: Any, labels: Any, *, descriptions: Any = None) -> SignalRouter:
        super().fit(texts, labels, descriptions=descriptions)
        desc = R._check_descriptions(descriptions)
        xs = list(texts) + list(desc.values())
        ys = [R._norm_label(v, "labels") for v in labels] + list(desc)
        self._train_X = self._feat.weigh(self._feat.counts(xs))
        self._train_y = np.array(ys, dtype=object)
        return self

    def matrices(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Per-route and per-row signal matrices of ``texts`` (the blend-independent parts)."""
        T = self._feat.counts(texts)
        lin, cen = self._linear(T, None), self._centroid(T, None)
        X = self._feat.weigh(T)
        knn = np.full((len(texts), len(self.routes_)), -1.0)
        knn_oos = np.full(len(texts), -1.0)
        yt = self._train_y
        for lo in range(0, len(texts), 512):
            sims = (X[lo : lo + 512] @ self._train_X.T).toarray()
            for j, r in enumerate(self.routes_):
                if (yt == r).any():
                    knn[lo : lo + 512, j] = sims[:, yt == r].max(axis=1)
            if (yt == R._OOS).any():
                knn_oos[lo : lo + 512] = sims[:, yt == R._OOS].max(axis=1)
        oosm = np.asarray(self._feat.weigh(T, idf_power=self.linear_idf) @ self._oos_w).ravel() + self._oos_b
        unk_w, unk_c, length = np.zeros(len(texts)), np.zeros(len(texts)), np.zeros(len(texts))
        cfg, wv, cv = self.config, self._feat.word_vocab, self._feat.char_vocab
        for i, t in enumerate(texts):
            toks = [w for w in fts_tokens(normalise(t, cfg.max_query_chars)) if len(w) <= cfg.max_token_chars]
            grams = word_ngrams(toks, cfg.word_ngram_range)
            chars = [g for w in toks for g in self._feat._char_grams(w)]
            unk_w[i] = sum(g not in wv for g in grams) / max(1, len(grams))
            unk_c[i] = sum(g not in cv for g in chars) / max(1, len(chars))
            length[i] = math.log1p(len(toks))
        return {"lin": lin, "cen": cen, "knn": knn, "knn_oos": knn_oos, "oosm": oosm, "unk_w": unk_w,
                "unk_c": unk_c, "len": length}


def signals(m: dict[str, np.ndarray], blend: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(scores, best route, signal rows)`` at ``blend``: the signals of each row's best route, in SIGNALS order."""
    scores = m["lin"] if blend == 0.0 else m["cen"] if blend == 1.0 else (1 - blend) * m["lin"] + blend * m["cen"]
    arg = scores.argmax(axis=1)
    rows = np.arange(len(arg))
    top = scores[rows, arg]
    second = np.partition(scores, -2, axis=1)[:, -2] if scores.shape[1] > 1 else top
    F = np.column_stack([top, top - second, m["lin"][rows, arg], m["cen"][rows, arg], m["oosm"], m["knn"][rows, arg],
                         m["knn_oos"], m["unk_w"], m["unk_c"], m["len"]])
    return scores, arg, F


def load(ds: str, cache: Path) -> dict[str, Any]:
    """Train's out-of-fold matrices and val's (router fitted on all of train), cached on disk."""
    data = load_dataset(ds)
    xtr, ytr = data.split("train")
    desc: dict[str, str] = {}
    if data.route_descriptions or data.route_examples:  # as `synapse-nb gate eval` fits agent_vault
        desc = dict(data.route_descriptions)
        for route, examples in sorted(data.route_examples.items()):
            xtr, ytr = xtr + list(examples), ytr + [route] * len(examples)
    xva, yva = data.split("val")
    key = hashlib.sha256(repr((ds, xtr, ytr, xva, yva, sorted(desc.items()), 1)).encode()).hexdigest()[:16]
    path = cache / f"{ds}-{key}.npz"
    router = None
    if not path.exists():
        router = SignalRouter().fit(xtr, ytr, descriptions=desc or None)
        routes = router.routes_
        val = router.matrices(xva)
        fold = stratified_folds(ytr, 5, seed=0)
        oof: dict[str, np.ndarray] = {}
        for k in range(5):
            rest, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
            part = SignalRouter().fit([xtr[i] for i in rest], [ytr[i] for i in rest], descriptions=desc or None)
            cols = np.array([routes.index(r) for r in part.routes_])
            for name, mat in part.matrices([xtr[i] for i in held]).items():
                if mat.ndim == 1:
                    oof.setdefault(name, np.zeros(len(xtr)))[held] = mat
                else:
                    full = oof.setdefault(name, np.full((len(xtr), len(routes)), -np.inf))
                    full[np.ix_(held, cols)] = mat
            print(f"  {ds}: fold {k + 1}/5 scored", file=sys.stderr, flush=True)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, routes=np.array(routes), **{f"val_{k}": v for k, v in val.items()},
                 **{f"oof_{k}": v for k, v in oof.items()})
    z = np.load(path)
    routes = [str(r) for r in z["routes"]]
    col = {r: j for j, r in enumerate(routes)}

    def idx(ys: list[Any]) -> np.ndarray:
        return np.array([-1 if y is None else col.get(y, -2) for y in ys])

    return {"routes": routes, "val": {k[4:]: z[k] for k in z.files if k.startswith("val_")},
            "oof": {k[4:]: z[k] for k in z.files if k.startswith("oof_")}, "yva": yva, "yva_i": idx(yva),
            "ytr_i": idx(ytr), "data": data, "xtr": xtr, "ytr": ytr, "desc": desc, "router": router}


def weights(y: np.ndarray, prior: tuple[int, int]) -> tuple[int, int]:
    """Integer ``(w_in, w_oos)`` for ``P * oos recall + (1 - P) * in-scope accuracy`` with ``P = p / q``."""
    p, q = prior
    n_oos = int((y == -1).sum())
    return (q - p) * n_oos, p * (len(y) - n_oos)


def choose(cands: dict[float, tuple[np.ndarray, np.ndarray]], y: np.ndarray, w: tuple[int, int]) -> tuple[float, float]:
    """The blend and threshold maximising the criterion on rows ``(best route, score)``; ties: the first blend."""
    best: tuple[int, float, float] | None = None
    for blend, (arg, score) in cands.items():
        th, gain = search_threshold(score, (arg == y) & (y >= 0), y == -1, w[0], w[1], None,
                                    np.random.default_rng(0))
        if best is None or gain > best[0]:
            best = (gain, blend, th)
    assert best is not None
    return best[1], best[2]


def _lr(F: np.ndarray, target: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit((F - mu) / sd, target)
    coef, b = model.coef_[0].astype(np.float64), float(model.intercept_[0])
    return lambda G: ((G - mu) / sd) @ coef + b


Combiner = Callable[[np.ndarray], dict[float, tuple[np.ndarray, np.ndarray]]]


def variant(name: str, d: dict[str, Any]) -> Combiner:
    """``rest -> {blend: (best route, score) of every val row}``: the combiner fitted without the held-out fold."""
    val, oof, yv, yt = d["val"], d["oof"], d["yva_i"], d["ytr_i"]
    per = {b: signals(val, b) for b in BLEND_GRID}
    per_oof = {b: signals(oof, b) for b in BLEND_GRID}
    stats = {b: (F.mean(axis=0), np.where(F.std(axis=0) > 0, F.std(axis=0), 1.0)) for b, (_, _, F) in per_oof.items()}

    if name == "default" or name.startswith("prior="):
        return lambda rest: {b: (arg, F[:, 0]) for b, (_, arg, F) in per.items()}
    if name.startswith("lr-"):
        src, _, subset = name[3:].partition(":")
        use = [SIGNALS.index(x) for x in subset.split("/")] if subset else list(range(len(SIGNALS)))

        def fit_lr(rest: np.ndarray) -> dict[float, tuple[np.ndarray, np.ndarray]]:
            out = {}
            for b, (_, arg, F) in per.items():
                _, targ, Ftr = per_oof[b]
                rows_f, rows_y, rows_a = [], [], []
                if src.startswith("oof"):
                    rows_f.append(Ftr), rows_y.append(yt), rows_a.append(targ)
                if src.endswith("val"):
                    rows_f.append(F[rest]), rows_y.append(yv[rest]), rows_a.append(arg[rest])
                G, yy, aa = np.vstack(rows_f), np.concatenate(rows_y), np.concatenate(rows_a)
                good = (aa == yy) & (yy >= 0)
                keep = np.ones(len(yy), bool) if src == "oof-all" else (good | (yy == -1))
                mu, sd = stats[b]
                out[b] = (arg, _lr(G[keep][:, use], good[keep].astype(int), mu[use], sd[use])(F[:, use]))
            return out

        return fit_lr
    if name.startswith("top+"):
        rule, _, on = name.partition("@")
        js = [SIGNALS.index(x) for x in rule.split("+")[1:]]
        zs = dict(stats)

        def combined(b: float, F: np.ndarray, coefs: tuple[float, ...]) -> np.ndarray:
            mu, sd = zs[b]
            return F[:, 0] + sum(a * (F[:, j] - mu[j]) / sd[j] for a, j in zip(coefs, js, strict=True))

        def fit_rule(rest: np.ndarray) -> dict[float, tuple[np.ndarray, np.ndarray]]:
            w = weights(yv[rest], (1, 2))
            if on == "val":  # standardised on the calibration rows themselves (no out-of-fold fits)
                for b, (_, _, F) in per.items():
                    sd = F[rest].std(axis=0)
                    zs[b] = (F[rest].mean(axis=0), np.where(sd > 0, sd, 1.0))
            best: tuple[int, tuple[float, ...]] | None = None
            for coefs in itertools.product(PAIR_GRID, repeat=len(js)):  # with the threshold, on the rows given
                cands = {b: (arg[rest], combined(b, F[rest], coefs)) for b, (_, arg, F) in per.items()}
                blend, th = choose(cands, yv[rest], w)
                arg_b, s_b = cands[blend]
                gain = (w[0] * int(((s_b >= th) & (arg_b == yv[rest]) & (yv[rest] >= 0)).sum())
                        + w[1] * int(((s_b < th) & (yv[rest] == -1)).sum()))
                if best is None or gain > best[0]:  # ties: the first coefficients of the grid
                    best = (gain, coefs)
            assert best is not None
            return {b: (arg, combined(b, F, best[1])) for b, (_, arg, F) in per.items()}

        return fit_rule
    raise SystemExit(f"unknown variant {name!r}")


def val_cc(name: str, d: dict[str, Any], fit: Combiner, seed: int = 0) -> tuple[list[str | None], float]:
    """Val's predictions, each fold at the combiner/blend/threshold fitted without it; NR in-scope accuracy."""
    yv, routes = d["yva_i"], d["routes"]
    prior = (1, 2)
    if name.startswith("prior="):
        p = float(name[6:])
        prior = (round(p * 100), 100)
    fold = stratified_folds(d["yva"], 5, seed=seed)
    pred: list[str | None] = [None] * len(yv)
    for k in range(5):
        rest, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        cands = fit(rest)
        blend, th = choose({b: (a[rest], s[rest]) for b, (a, s) in cands.items()}, yv[rest], weights(yv[rest], prior))
        arg, score = cands[blend]
        for i in held:
            pred[i] = routes[arg[i]] if score[i] >= th else None
    cands = fit(np.arange(len(yv)))
    blend, _ = choose(cands, yv, weights(yv, prior))
    inn = yv != -1
    return pred, float(np.mean(cands[blend][0][inn] == yv[inn]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="clinc150,agent_vault", help="comma-separated datasets")
    ap.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated variants")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds of val's 5 folds (a row each)")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "synapse_nb" / "router_signals"))
    args = ap.parse_args(argv)
    print("dataset      variant                 seed  val-cc bal  val-cc 151  in-scope  oos rec  NR in-scope")
    for ds in args.only.split(","):
        d = load(ds, Path(args.cache))
        for name in args.variants.split(","):
            for seed in map(int, args.seeds.split(",")):
                pred, nr = val_cc(name, d, variant(name, d), seed)
                m = routing_metrics(d["yva"], pred)
                ins, oos = float(m.in_scope_accuracy or 0.0), float(m.oos_recall or 0.0)
                print(f"{ds:<12} {name:<23} {seed:>4} {100 * (ins + oos) / 2:>10.1f} {100 * m.accuracy:>11.1f} "
                      f"{100 * ins:>9.1f} {100 * oos:>8.1f} {100 * nr:>12.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
