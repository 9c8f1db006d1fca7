"""Variants of the lexical router's linear model, scored like the defaults were chosen: on CLINC150's val only.

Run from the repository root (about 15 s a variant on 2 cores)::

    nice .venv/bin/python benchmarks/router_lexical_variants.py
    nice .venv/bin/python benchmarks/router_lexical_variants.py base base+w=1-3 base+aug=mix:300
    nice .venv/bin/python benchmarks/router_lexical_variants.py --ensemble base base+w=1-3 base+c=2-6 base+c=1-5

Each variant is ``method="linear"`` fitted on train and scored on val exactly as ``benchmarks/router_defaults.py``
scores a candidate (val cut into 5 label-stratified folds, each predicted at the threshold the ``balanced``
criterion chooses on the other four; ``NR``: val in-scope accuracy with no rejection). A name is ``base`` and
``+key=value`` parts:

- ``w=1-3`` / ``c=1-5``: word / ``char_wb`` n-gram range; ``C=4``; ``idf=0.25`` (``linear_idf``);
- ``cs=1``: Crammer-Singer multi-class SVM; ``hinge=1``: hinge loss; ``lr=1``: logistic regression;
- ``oosw=4``: weight of the out-of-scope class; ``raw=1``: a route's score is its own margin (not its margin
  over the out-of-scope class);
- ``ws=1.5``: the word block's length beside the unit-length char block;
- ``aug=mix:300``: that many pseudo out-of-scope rows, each the first half of an utterance of one intent and the
  second half of another's; ``aug=rand:300``: random word sequences drawn from the training utterances.

``--ensemble``: the named variants, then every combination of two or more of them scored by the mean of their
route scores (a small ensemble of routers over different n-gram views), each with the same key.

No test row is read. The figures and what was kept: docs/gate.md, "Defaults".
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from router_defaults import cross_calibrated

from synapse_nb.eval import load_dataset, routing_metrics
from synapse_nb.gate import GateConfig, Router
from synapse_nb.gate import router as R

DEFAULT_VARIANTS = ["base", "base+w=1-3", "base+c=1-5", "base+c=2-6", "base+cs=1", "base+ws=1.5", "base+ws=0.7",
                    "base+oosw=2", "base+oosw=4", "base+raw=1", "base+lr=1", "base+aug=mix:300", "base+aug=mix:1000",
                    "base+aug=rand:300", "base+aug=rand:1000"]


class Variant(Router):
    """The router with its linear model swapped (``model``, ``model_kw``), its word block rescaled (``word_scale``)
    or its route scores left raw (``raw``)."""

    model = "svc"
    model_kw: dict[str, Any] = {}  # noqa: RUF012 - set per variant class
    word_scale = 1.0
    raw = False

    def _scale(self, X: sp.csr_matrix) -> sp.csr_matrix:
        if self.word_scale == 1.0:
            return X
        X = X.tocsr(copy=True)
        X.data *= np.where(X.indices < self._feat.n_word, self.word_scale, 1.0)
        return X

    def _fit_linear(self, T: sp.csr_matrix, S: sp.csr_matrix | None, X: sp.csr_matrix, y: np.ndarray,
                    routes: list[str]) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        XL = self._scale(R._join(self._feat.weigh(T, idf_power=self.linear_idf), S))
        model: Any = (LinearSVC(C=self.C, random_state=0, **self.model_kw) if self.model == "svc"
                      else LogisticRegression(C=self.C, max_iter=2000, **self.model_kw))
        model.fit(XL, y)
        cls = list(model.classes_)
        coef, inter = np.asarray(model.coef_, float), np.asarray(model.intercept_, float)
        idx = [cls.index(r) for r in routes]
        W, b = coef[idx], inter[idx]
        if R._OOS in cls and not self.raw:
            W, b = W - coef[cls.index(R._OOS)], b - inter[cls.index(R._OOS)]
        self._lin_W, self._lin_b = np.ascontiguousarray(W.T), b

    def _linear(self, T: sp.csr_matrix, S: sp.csr_matrix | None) -> np.ndarray:
        X = self._scale(R._join(self._feat.weigh(T, idf_power=self.linear_idf), S))
        out: np.ndarray = np.asarray(X @ self._lin_W, dtype=np.float64) + self._lin_b
        return out


def make(name: str) -> tuple[Router, str | None]:
    """The router a variant name describes, and its augmentation (``kind:n``) if any."""
    kw: dict[str, Any] = {}
    attrs: dict[str, Any] = {}
    cfg: dict[str, Any] = {"stop_words": None, "char_ngram_range": (2, 5)}
    aug = None
    for part in name.split("+")[1:]:
        k, v = part.split("=")
        if k in ("w", "c"):
            cfg["word_ngram_range" if k == "w" else "char_ngram_range"] = tuple(map(int, v.split("-")))
        elif k == "C":
            kw["C"] = float(v)
        elif k == "idf":
            kw["linear_idf"] = float(v)
        elif k == "cs":
            attrs["model_kw"] = {"multi_class": "crammer_singer"}
        elif k == "hinge":
            attrs["model_kw"] = {"loss": "hinge", "max_iter": 5000}
        elif k == "oosw":
            attrs["model_kw"] = {"class_weight": {R._OOS: float(v)}}
        elif k == "lr":
            attrs["model"] = "lr"
        elif k == "raw":
            attrs["raw"] = True
        elif k == "ws":
            attrs["word_scale"] = float(v)
        elif k == "aug":
            aug = v
        else:
            raise SystemExit(f"unknown part {part!r} in {name!r}")
    cls = type("V", (Variant,), attrs)
    return cls(GateConfig(**cfg), method="linear", **kw), aug


def augment(xs: list[str], ys: list[Any], spec: str) -> tuple[list[str], list[Any]]:
    """``xs, ys`` with pseudo out-of-scope rows (seed 0)."""
    kind, n = spec.split(":")
    rng = random.Random(0)
    inn = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    out = []
    for _ in range(int(n)):
        if kind == "mix":
            (a, ya), (b, yb) = rng.sample(inn, 2)
            while yb == ya:
                b, yb = rng.choice(inn)
            wa, wb = a.split(), b.split()
            out.append(" ".join(wa[: max(1, len(wa) // 2)] + wb[len(wb) // 2 :]))
        else:
            words = [w for x, _ in inn for w in x.split()]
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 10))))
    return xs + out, ys + [None] * len(out)


class _Fixed(Router):
    """A fitted router whose route scores on ``texts`` are given (an ensemble's mean), for the shared key."""

    def __init__(self, like: Router, texts: list[str], scores: np.ndarray) -> None:
        super().__init__(method="linear")
        self.routes_, self._given = like.routes_, (texts, scores)

    def _calibration_parts(self, texts: list[str]) -> dict[float, np.ndarray]:
        assert texts == self._given[0]
        return {0.0: self._given[1]}


def ensembles(names: list[str], xtr: list[str], ytr: list[Any], xva: list[str], yva: list[Any]) -> None:
    """Each variant, then the mean route scores of every combination of them, on the shared val-cc key."""
    import itertools

    fitted = {}
    for name in names:
        router, _ = make(name)
        fitted[name] = router.fit(xtr, ytr)
    scores = {name: r._calibration_parts(xva)[0.0] for name, r in fitted.items()}
    print("ensemble                                      val-cc bal  val-cc 151  NR in-scope")
    for k in range(1, len(names) + 1):
        for combo in itertools.combinations(names, k):
            router = _Fixed(fitted[combo[0]], xva, sum(scores[c] for c in combo) / k)
            pred, nr = cross_calibrated(router, xva, yva, "balanced")
            m = routing_metrics(yva, pred)
            ins, oos = float(m.in_scope_accuracy or 0.0), float(m.oos_recall or 0.0)
            print(f"{' + '.join(combo):<45} {100 * (ins + oos) / 2:>10.1f} {100 * m.accuracy:>11.1f} "
                  f"{100 * nr:>12.2f}", flush=True)


def main(argv: list[str]) -> int:
    data = load_dataset("clinc150")
    xtr, ytr = data.split("train")
    xva, yva = data.split("val")
    if argv[:1] == ["--ensemble"]:
        ensembles(argv[1:] or ["base", "base+w=1-3", "base+c=2-6", "base+c=1-5"], xtr, ytr, xva, yva)
        return 0
    print("variant                      val-cc bal  val-cc 151  in-scope  oos rec  NR in-scope  fit s")
    for name in argv or DEFAULT_VARIANTS:
        router, aug = make(name)
        xa, ya = augment(xtr, ytr, aug) if aug else (xtr, ytr)
        t0 = time.perf_counter()
        router.fit(xa, ya)
        t_fit = time.perf_counter() - t0
        pred, nr = cross_calibrated(router, xva, yva, "balanced")
        m = routing_metrics(yva, pred)
        ins, oos = float(m.in_scope_accuracy or 0.0), float(m.oos_recall or 0.0)
        print(f"{name:<28} {100 * (ins + oos) / 2:>10.1f} {100 * m.accuracy:>11.1f} {100 * ins:>9.1f} "
              f"{100 * oos:>8.1f} {100 * nr:>12.2f} {t_fit:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
