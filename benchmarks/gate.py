"""Benchmark the gate: recall scorer speed, router throughput, and CLINC150 figures.

Run from the repository root::

    .venv/bin/python benchmarks/gate.py                 # everything (about a minute on 2 cores)
    .venv/bin/python benchmarks/gate.py --skip-clinc    # scorer speed only
    .venv/bin/python benchmarks/gate.py --methods linear,knn --per-route

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

from synapse_nb.gate import CorpusScorer, Router, query_terms  # noqa: E402

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
        nokeys = _timeit(lambda: s.score(queries[0], sub, doc_freq=df, n_docs=n))

        def cold() -> None:
            s.clear_cache()
            s.score(queries[0], sub, doc_freq=df, n_docs=n, doc_keys=keys)

        cold_t = _timeit(cold)
        s.score(queries[0], sub, doc_freq=df, n_docs=n, doc_keys=keys)
        warm_t = _timeit(lambda: s.score(queries[1], sub, doc_freq=df, n_docs=n, doc_keys=keys))
        print(f"{n:>10} {1e3 * nokeys:>9.2f} {1e3 * cold_t:>9.2f} {1e3 * warm_t:>9.2f}")


def _split(data: dict, name: str) -> tuple[list[str], list[str | None]]:
    rows = data[name] + data["oos_" + name]
    return [t for t, _ in rows], [None if lab == "oos" else lab for _, lab in rows]


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
    ap.add_argument("--methods", default="linear,centroid,knn", help="comma-separated router methods")
    ap.add_argument("--per-route", action="store_true", help="also calibrate per-route thresholds")
    args = ap.parse_args(argv)
    if not CLINC.exists():
        print(f"CLINC150 not found at {CLINC}; set $CLINC150", file=sys.stderr)
        return 2
    data = json.loads(CLINC.read_text())
    bench_scorer([t for t, _ in data["train"]])
    if not args.skip_clinc:
        bench_clinc([m for m in args.methods.split(",") if m], args.per_route)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
