"""Benchmark the gate: recall scorer speed, router throughput (against the previous router), CLINC150 figures.

Run from the repository root::

    .venv/bin/python benchmarks/gate.py                 # everything (a few minutes on 2 cores)
    .venv/bin/python benchmarks/gate.py --skip-clinc    # scorer speed only
    .venv/bin/python benchmarks/gate.py --throughput-only --runs 11
    .venv/bin/python benchmarks/gate.py --methods auto,linear,knn --per-route
    .venv/bin/python benchmarks/gate.py --throughput-only --semantic wordllama,e5-small   # + the semantic options

Throughput is ``decision_scores`` on the 5,500 CLINC150 test queries, the default router calibrated on val,
interleaved with the previous router's scoring path (scikit-learn ``TfidfVectorizer.transform`` of the word and
``char_wb`` blocks, ``hstack``, ``normalize``, ``LinearSVC.decision_function``: what ``Router.decision_scores``
did before issue 16: the scikit-learn reference pipeline) in the same process; medians, and the ratio of the
medians. ``--semantic SPECS`` adds the router with each embedder's features (``Router(embedder=...)``) to the
interleaved runs, its fit time, and for ``e5-small`` (20-50 texts/s: too slow to interleave over 5,500 queries)
a one-off timing on the first 200 test queries, embedding included.

CLINC150 ("Full") is read from ``$CLINC150`` or the project's ``datasets/clinc150/data_full.json``.
Thresholds are calibrated on ``val + oos_val`` only; figures are on ``test + oos_test``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.gate import CorpusScorer, Router, query_terms

CLINC = Path(os.environ.get("CLINC150", Path(__file__).resolve().parents[1] / "datasets/clinc150/data_full.json"))


def _timeit(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_scorer(texts: list[str]) -> None:
    """score() time for 200 and 2,000 candidates, without keys, cold cache and warm cache."""
    docs = [" ".join(texts[i : i + 3]) for i in range(0, 3 * 2000, 3)]  # ~25 words per "memory"
    queries = ["how do I move money between my accounts", "what is the weather going to be like tomorrow"]
    print("## recall scorer (median of 5; ms)")
    print(f"{'candidates':>10} {'no keys':>9} {'cold':>9} {'warm':>9}")
    for n in (200, 2000):
        sub = docs[:n]
        keys = [f"mem_{i}" for i in range(n)]
        df = {t: 10 for q in queries for t in query_terms(q)}
        s = CorpusScorer()
        nokeys = _timeit(lambda s=s, sub=sub, df=df, n=n: s.score(queries[0], sub, doc_freq=df, n_docs=n))

        def cold(s: CorpusScorer = s, sub: list[str] = sub, df: dict[str, int] = df, n: int = n,
                 keys: list[str] = keys) -> None:
            s.clear_cache()
            s.score(queries[0], sub, doc_freq=df, n_docs=n, doc_keys=keys)

        cold_t = _timeit(cold)
        s.score(queries[0], sub, doc_freq=df, n_docs=n, doc_keys=keys)
        warm_t = _timeit(lambda s=s, sub=sub, df=df, n=n, keys=keys:
                         s.score(queries[1], sub, doc_freq=df, n_docs=n, doc_keys=keys))
        print(f"{n:>10} {1e3 * nokeys:>9.2f} {1e3 * cold_t:>9.2f} {1e3 * warm_t:>9.2f}")


def _split(data: dict, name: str) -> tuple[list[str], list[str | None]]:
    rows = data[name] + data["oos_" + name]
    return [t for t, _ in rows], [None if lab == "oos" else lab for _, lab in rows]


class PreviousRouter:
    """The previous router's scoring path (before issue 16), kept here as the throughput reference."""

    def fit(self, texts: list[str], labels: list[str | None]) -> PreviousRouter:
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.svm import LinearSVC

        from synapse_nb.gate.router import ROUTER_CONFIG
        from synapse_nb.text import char_vectorizer_kwargs, word_vectorizer_kwargs

        cfg = ROUTER_CONFIG
        self.word = TfidfVectorizer(**word_vectorizer_kwargs(
            ngram_range=cfg.word_ngram_range, stop_words=cfg.stop_words, max_chars=cfg.max_query_chars,
            max_token_chars=cfg.max_token_chars), sublinear_tf=cfg.sublinear_tf, dtype=np.float64)
        self.char = TfidfVectorizer(**char_vectorizer_kwargs(
            ngram_range=cfg.char_ngram_range, max_chars=cfg.max_query_chars, max_token_chars=cfg.max_token_chars),
            sublinear_tf=cfg.sublinear_tf, dtype=np.float64)
        X = self._stack(self.word.fit_transform(texts), self.char.fit_transform(texts))
        self.model = LinearSVC(C=1.0, random_state=0).fit(X, ["\x00oos" if y is None else y for y in labels])
        return self

    @staticmethod
    def _stack(w, c):
        import scipy.sparse as sp
        from sklearn.preprocessing import normalize

        return normalize(sp.hstack([w, c], format="csr"))

    def decision_scores(self, texts: list[str]):
        return self.model.decision_function(self._stack(self.word.transform(texts), self.char.transform(texts)))


def bench_throughput(runs: int, semantic: list[str] | None = None) -> None:
    """Default router vs the previous router's scoring path (the scikit-learn pipeline), interleaved, same process."""
    data = json.loads(CLINC.read_text())
    xtr, ytr = _split(data, "train")
    xva, yva = _split(data, "val")
    xte, _ = _split(data, "test")
    t0 = time.perf_counter()
    old = PreviousRouter().fit(xtr, ytr)
    t_old = time.perf_counter() - t0
    t0 = time.perf_counter()
    new = Router().fit(xtr, ytr)
    t_new = time.perf_counter() - t0
    new.calibrate(xva, yva)
    sem: dict[str, Router] = {}
    slow: dict[str, Router] = {}
    for spec in semantic or []:
        from synapse_nb.store.embedders import load_embedder

        emb = load_embedder(spec)
        if spec == "e5-small":  # fitted on cached vectors (benchmarks/router_variants.py fills the cache); the
            from synapse_nb.eval.embedding_cache import CachedEmbedder  # queries below are timed uncached

            emb = CachedEmbedder(emb)
        t0 = time.perf_counter()
        r = Router(embedder=emb).fit(xtr, ytr)
        what = "vectors read from the cache" if spec == "e5-small" else f"embedding {len(xtr):,} texts included"
        print(f"fit with --embedder {spec}: {time.perf_counter() - t0:.1f}s ({what})")
        r.calibrate(xva, yva)
        r.embedder = getattr(emb, "inner", emb)
        (slow if spec == "e5-small" else sem)[spec] = r
    print(f"\n## router throughput: decision_scores on {len(xte):,} CLINC150 test queries x {len(new.routes_)} routes "
          f"(medians of {runs} interleaved runs)")
    print(f"fit on {len(xtr):,} rows: previous {t_old:.1f}s, default Router {t_new:.1f}s ({t_new / t_old:.2f}x)")
    times: dict[str, list[float]] = {"previous": [], "warm": [], "cold": [], "single_prev": [], "single_new": []}
    times |= {f"sem {spec}": [] for spec in sem}
    singles = xte[:300]
    for _ in range(runs):
        t = time.perf_counter(); old.decision_scores(xte); times["previous"].append(time.perf_counter() - t)  # noqa: E702
        t = time.perf_counter(); new.decision_scores(xte); times["warm"].append(time.perf_counter() - t)  # noqa: E702
        new._feat._cache.clear()
        t = time.perf_counter(); new.decision_scores(xte); times["cold"].append(time.perf_counter() - t)  # noqa: E702
        for spec, r in sem.items():
            t = time.perf_counter(); r.decision_scores(xte); times[f"sem {spec}"].append(time.perf_counter() - t)  # noqa: E702
    for q in singles:
        t = time.perf_counter(); old.decision_scores([q]); times["single_prev"].append(time.perf_counter() - t)  # noqa: E702
        t = time.perf_counter(); new.decision_scores([q]); times["single_new"].append(time.perf_counter() - t)  # noqa: E702
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = [("previous", "scikit-learn pipeline (previous router)"), ("warm", "default Router, warm token cache"),
            ("cold", "default Router, token cache emptied")]
    rows += [(f"sem {spec}", f"Router(embedder={spec!r}), warm cache") for spec in sem]
    for key, label in rows:
        print(f"{label:<42} {len(xte) / med[key]:>9,.0f} queries/s  ({med['previous'] / med[key]:.2f}x the "
              "scikit-learn pipeline)")
    for spec, r in slow.items():
        few = xte[:200]
        t = time.perf_counter(); old.decision_scores(few); ref = time.perf_counter() - t  # noqa: E702
        t = time.perf_counter(); r.decision_scores(few); took = time.perf_counter() - t  # noqa: E702
        print(f"Router(embedder={spec!r}), {len(few)} queries once, embedding included: {len(few) / took:,.0f} "
              f"queries/s ({ref / took:.3f}x the scikit-learn pipeline on the same 200)")
    print(f"one query per call (median of {len(singles)}): previous {1e3 * med['single_prev']:.2f} ms, "
          f"default Router {1e3 * med['single_new']:.2f} ms ({med['single_prev'] / med['single_new']:.1f}x)")


def bench_clinc(methods: list[str], per_route: bool) -> None:
    data = json.loads(CLINC.read_text())
    xtr, ytr = _split(data, "train")
    xva, yva = _split(data, "val")
    xte, yte = _split(data, "test")
    print(f"\n## CLINC150 full: train {len(xtr)}, val {len(xva)}, test {len(xte)} (oos included)")
    print("published (Larson et al. 2019, in-scope / oos recall): SVM 88.2/18.0, MLP 93.4/49.1, BERT 96.2/52.3")
    for method in methods:
        t0 = time.perf_counter()
        router = Router(method=method).fit(xtr, ytr)
        t_fit = time.perf_counter() - t0
        t1 = time.perf_counter()
        scores = router.decision_scores(xte)
        t_score = time.perf_counter() - t1
        print(
            f"\n[{method}] fit {t_fit:.1f}s; decision_scores {len(xte)} x {len(router.routes_)} routes: "
            f"{t_score:.3f}s = {len(xte) / t_score:,.0f} queries/s"
        )
        del scores
        modes = [False, True] if per_route else [False]
        for criterion in ("accuracy", "balanced"):
            for pr in modes:
                t2 = time.perf_counter()
                router.calibrate(xva, yva, criterion=criterion, per_route=pr)
                t_cal = time.perf_counter() - t2
                m = router.evaluate(xte, yte)
                label = f"{criterion}{' per-route' if pr else ''}"
                print(f"  {label:<22} threshold={router.threshold_:+.4f} (calibrate {t_cal:.2f}s)  TEST {m.summary()}")
        print(f"  total fit+calibrate+test for [{method}]: {time.perf_counter() - t0:.1f}s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-clinc", action="store_true", help="only time the recall scorer")
    ap.add_argument("--methods", default="auto,linear,centroid,knn", help="comma-separated router methods")
    ap.add_argument("--throughput-only", action="store_true", help="only the router throughput comparison")
    ap.add_argument("--runs", type=int, default=7, help="interleaved throughput runs (median)")
    ap.add_argument("--per-route", action="store_true", help="also calibrate per-route thresholds")
    ap.add_argument("--semantic", default="", help="comma-separated embedder specs to time beside the default")
    args = ap.parse_args(argv)
    if not CLINC.exists():
        print(f"CLINC150 not found at {CLINC}; set $CLINC150", file=sys.stderr)
        return 2
    data = json.loads(CLINC.read_text())
    semantic = [s for s in args.semantic.split(",") if s]
    if args.throughput_only:
        bench_throughput(args.runs, semantic)
        return 0
    bench_scorer([t for t, _ in data["train"]])
    if not args.skip_clinc:
        bench_throughput(args.runs, semantic)
        bench_clinc([m for m in args.methods.split(",") if m], args.per_route)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
