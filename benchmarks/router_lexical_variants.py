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
  ``nb=1``: NB-SVM (Wang & Manning 2012), each class's binary SVM on rows scaled by its NB log-count ratio;
- ``oosw=4``: weight of the out-of-scope class; ``raw=1``: a route's score is its own margin (not its margin
  over the out-of-scope class);
- ``ws=1.5``: the word block's length beside the unit-length char block;
- ``aug=mix:300``: that many pseudo out-of-scope rows, each the first half of an utterance of one intent and the
  second half of another's; ``aug=rand:300``: random word sequences drawn from the training utterances.

Analysis variants (any of them builds the rows with :class:`Blocks`, scikit-learn vectorizers over the analyzers
below, the same rows as the router's ``Featurizer`` when nothing is changed: ``gen=1`` checks that):

- ``stem=1``: Porter-stemmed words in the word block (snowballstemmer; ``STEMMER_SITE`` = a site-packages holding
  it is appended to ``sys.path``); ``stem=2``: in the char block too;
- ``digits=1``: every digit read as ``0`` (both blocks);
- ``char=1``: ``char`` n-grams across word boundaries instead of ``char_wb`` (with ``c=`` for the range);
- ``sub=0``: raw term frequency instead of ``1 + ln tf`` (both blocks); ``mindf=2``: word n-grams seen in fewer
  training rows are dropped (the char block keeps all);
- ``skip=3``: a third unit block of ordered word pairs 2..3 apart (skip-bigrams; the adjacent pairs are the word
  block's bigrams); ``sks=0.7``: its length;
- ``sw=1``: scikit-learn's English stop words dropped from the word block only;
- ``bos=1``: start and end markers in the word block (first / last word as bigrams with the marker);
- ``bin=1``: binary term frequency (both blocks);
- ``cw=bal``: ``class_weight="balanced"`` (CLINC150's train has 100 rows of every class: the same model);
- ``chs=0.8``: the char block's length beside the unit word block (with ``C=``: a C per block).

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
from synapse_nb.gate.features import Featurizer
from synapse_nb.text import ENGLISH_STOP_WORDS, char_wb_ngrams, fts_tokens, normalise, word_ngrams

DEFAULT_VARIANTS = ["base", "base+w=1-3", "base+c=1-5", "base+c=2-6", "base+cs=1", "base+ws=1.5", "base+ws=0.7",
                    "base+oosw=2", "base+oosw=4", "base+raw=1", "base+lr=1", "base+aug=mix:300", "base+aug=mix:1000",
                    "base+aug=rand:300", "base+aug=rand:1000"]


_STEM: dict[str, str] = {}


def _stem(tokens: list[str]) -> list[str]:
    """Porter stems of ``tokens`` (snowballstemmer's ``porter``), cached per token."""
    if "stemmer" not in _STEM:
        import os

        if os.environ.get("STEMMER_SITE"):
            sys.path.append(os.environ["STEMMER_SITE"])
        import snowballstemmer  # type: ignore[import-not-found]

        _STEM["stemmer"] = snowballstemmer.stemmer("porter")  # type: ignore[assignment]
    st: Any = _STEM["stemmer"]
    out = []
    for t in tokens:
        s = _STEM.get(t)
        if s is None:
            s = _STEM[t] = st.stemWord(t)
        out.append(s)
    return out


class Analysis:
    """The analyzers of one variant's blocks (picklable settings, plain functions of a text)."""

    def __init__(self, *, word: tuple[int, int] = (1, 2), char: tuple[int, int] = (2, 5), stem: int = 0,
                 digits: bool = False, char_wb: bool = True, stop: bool = False, bos: bool = False,
                 skip: int = 0) -> None:
        self.word, self.char, self.stem, self.digits = word, char, stem, digits
        self.char_wb, self.stop, self.bos, self.skip = char_wb, stop, bos, skip

    def tokens(self, text: str) -> list[str]:
        text = normalise(text, 2000)
        if self.digits:
            text = text.translate(_DIGITS)
        return [t for t in fts_tokens(text) if len(t) <= 64]

    def word_block(self, text: str) -> list[str]:
        toks = self.tokens(text)
        if self.stop:
            toks = [t for t in toks if t not in ENGLISH_STOP_WORDS]
        if self.stem >= 1:
            toks = _stem(toks)
        if self.bos:
            toks = ["\x02", *toks, "\x03"]
            return [g for g in word_ngrams(toks, self.word) if g not in ("\x02", "\x03")]
        return word_ngrams(toks, self.word)

    def char_block(self, text: str) -> list[str]:
        toks = self.tokens(text)
        if self.stem >= 2:
            toks = _stem(toks)
        joined = " ".join(toks)
        if self.char_wb:
            return char_wb_ngrams(joined, self.char)
        lo, hi = self.char
        return [joined[i : i + n] for n in range(lo, hi + 1) for i in range(len(joined) - n + 1)]

    def skip_block(self, text: str) -> list[str]:
        toks = self.tokens(text)
        return [f"{toks[i]} _ {toks[j]}" for i in range(len(toks))
                for j in range(i + 2, min(len(toks), i + self.skip + 1))]


_DIGITS = str.maketrans("123456789", "000000000")


class Blocks:
    """Rows like the router's ``Featurizer`` over any analyzers: one scikit-learn ``CountVectorizer`` a block,
    ``tf`` (``1 + ln tf``, raw or binary) times ``idf ** p``, each block to unit length, then the concatenation
    divided by the root of the number of non-empty blocks."""

    def __init__(self, analyzers: list[Any], *, tf: str = "sublinear", min_df: tuple[int, ...] = ()) -> None:
        self.analyzers, self.tf = analyzers, tf
        self.min_df = min_df + (1,) * (len(analyzers) - len(min_df))

    def fit(self, texts: list[str]) -> Blocks:
        from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

        self.vecs, idf = [], []
        for a, m in zip(self.analyzers, self.min_df, strict=True):
            v = CountVectorizer(analyzer=a, min_df=m, dtype=np.float64)
            idf.append(TfidfTransformer().fit(v.fit_transform(texts)).idf_)
            self.vecs.append(v)
        sizes = [len(i) for i in idf]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.n_word = sizes[0]
        self.idf = np.concatenate(idf)
        return self

    def block_of(self, indices: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets, indices, side="right") - 1

    def counts(self, texts: list[str]) -> sp.csr_matrix:
        T = sp.hstack([v.transform(texts) for v in self.vecs], format="csr", dtype=np.float64)
        T.sort_indices()
        if self.tf == "sublinear":
            np.log(T.data, out=T.data)
            T.data += 1.0
        elif self.tf == "binary":
            T.data[:] = 1.0
        return T

    def weigh(self, T: sp.csr_matrix, *, idf_power: float = 1.0) -> sp.csr_matrix:
        n, k = T.shape[0], len(self.vecs)
        data = T.data * self.idf[T.indices] ** idf_power
        rows = np.repeat(np.arange(n), np.diff(T.indptr))
        blk = self.block_of(T.indices)
        sq = np.bincount(rows * k + blk, weights=data * data, minlength=n * k).reshape(n, k)
        norms = np.sqrt(sq)
        total = np.sqrt((sq > 0).sum(axis=1)).astype(np.float64)
        norms[norms == 0] = 1.0
        total[total == 0] = 1.0
        data /= norms[rows, blk] * total[rows]
        return sp.csr_matrix((data, T.indices, T.indptr), shape=T.shape)


class Variant(Router):
    """The router with its linear model swapped (``model``, ``model_kw``), its blocks rescaled (``word_scale``,
    ``block_scale``), its route scores left raw (``raw``) or its rows built another way (``blocks``)."""

    model = "svc"
    model_kw: dict[str, Any] = {}  # noqa: RUF012 - set per variant class
    word_scale = 1.0
    block_scale: tuple[float, ...] = ()  # the blocks after the word block
    raw = False
    blocks: dict[str, Any] | None = None  # Blocks' settings: None is the router's own Featurizer

    def _featurizer(self) -> Featurizer | Blocks:  # type: ignore[override]
        if self.blocks is None:
            return super()._featurizer()
        b = dict(self.blocks)
        an = Analysis(word=self.config.word_ngram_range, char=self.config.char_ngram_range, **b.pop("analysis"))
        analyzers = [an.word_block, an.char_block] + ([an.skip_block] if an.skip else [])
        return Blocks(analyzers, **b)

    def _scale(self, X: sp.csr_matrix) -> sp.csr_matrix:
        scales = (self.word_scale, *self.block_scale)
        if all(s == 1.0 for s in scales):
            return X
        X = X.tocsr(copy=True)
        blk = (self._feat.block_of(X.indices) if isinstance(self._feat, Blocks)
               else (X.indices >= self._feat.n_word).astype(np.int64))
        full = np.ones(int(blk.max(initial=0)) + 1)
        full[: len(scales)] = scales[: len(full)]
        X.data *= full[blk]
        return X

    def _fit_linear(self, T: sp.csr_matrix, S: sp.csr_matrix | None, X: sp.csr_matrix, y: np.ndarray,
                    routes: list[str]) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        XL = self._scale(R._join(self._feat.weigh(T, idf_power=self.linear_idf), S))
        if self.model == "nbsvm":
            self._fit_nbsvm(T, XL, y, routes)
            return
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

    def _fit_nbsvm(self, T: sp.csr_matrix, XL: sp.csr_matrix, y: np.ndarray, routes: list[str]) -> None:
        """One binary SVM a class on rows scaled by the class's NB log-count ratio (Wang & Manning 2012),
        folded into the class's weights (``w * r``) so that scoring is the same product."""
        from sklearn.svm import LinearSVC

        B = (T > 0).astype(np.float64).tocsr()
        total = np.asarray(B.sum(axis=0)).ravel()
        classes = [*routes, R._OOS] if (y == R._OOS).any() else list(routes)
        W, b = np.zeros((XL.shape[1], len(classes))), np.zeros(len(classes))
        for k, c in enumerate(classes):
            pos = y == c
            p = 1.0 + np.asarray(B[pos].sum(axis=0)).ravel()
            q = 1.0 + total - (p - 1.0)
            r = np.log((p / p.sum()) / (q / q.sum()))
            m = LinearSVC(C=self.C, random_state=0).fit(XL @ sp.diags(r), pos.astype(int))
            W[:, k], b[k] = m.coef_[0] * r, m.intercept_[0]
        if R._OOS in classes and not self.raw:
            W, b = W[:, :-1] - W[:, -1:], b[:-1] - b[-1]
        else:
            W, b = W[:, : len(routes)], b[: len(routes)]
        self._lin_W, self._lin_b = np.ascontiguousarray(W), b

    def _linear(self, T: sp.csr_matrix, S: sp.csr_matrix | None) -> np.ndarray:
        X = self._scale(R._join(self._feat.weigh(T, idf_power=self.linear_idf), S))
        out: np.ndarray = np.asarray(X @ self._lin_W, dtype=np.float64) + self._lin_b
        return out


def make(name: str) -> tuple[Router, str | None]:
    """The router a variant name describes, and its augmentation (``kind:n``) if any."""
    kw: dict[str, Any] = {}
    attrs: dict[str, Any] = {}
    cfg: dict[str, Any] = {"stop_words": None, "char_ngram_range": (2, 5)}
    analysis: dict[str, Any] = {}
    blocks: dict[str, Any] = {}
    aug = None
    for part in name.split("+")[1:]:
        k, v = part.split("=")
        if k == "gen":
            blocks.setdefault("tf", "sublinear")
        elif k in ("stem", "skip"):
            analysis[k] = int(v)
        elif k in ("digits", "sw", "bos"):
            analysis[{"sw": "stop"}.get(k, k)] = v == "1"
        elif k == "char":
            analysis["char_wb"] = v != "1"
        elif k == "sub":
            blocks["tf"] = "sublinear" if v == "1" else "raw"
        elif k == "bin":
            blocks["tf"] = "binary"
        elif k == "mindf":
            blocks["min_df"] = (int(v),)
        elif k == "cw":
            attrs["model_kw"] = {"class_weight": "balanced"}
        elif k == "chs":
            attrs["block_scale"] = (float(v), *attrs.get("block_scale", (1.0,))[1:])
        elif k == "sks":
            attrs["block_scale"] = (attrs.get("block_scale", (1.0,))[0], float(v))
        elif k in ("w", "c"):
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
        elif k == "nb":
            attrs["model"] = "nbsvm"
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
    if analysis or blocks:
        attrs["blocks"] = {**blocks, "analysis": analysis}
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
