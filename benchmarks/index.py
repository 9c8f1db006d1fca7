"""Benchmark the LanceDB retrieval index: rebuild, incremental upserts, search latency, peak RSS.

Rows are synthetic but shaped like a vault: mixed kinds, 4 minds, 10-80 words each drawn
(seeded) from a Zipf-weighted (s=0.9) list of ~20k words (816 technical words plus seeded
pseudo-words; the order is shuffled, so frequent words are a random mix), 10% with an expiry.
Queries are 3-8 words drawn uniformly from the 2000 first-listed words. Each size runs in a fresh temp folder.

Usage::

    .venv/bin/python benchmarks/index.py                          # 10k and 100k
    .venv/bin/python benchmarks/index.py --sizes 10000,100000,1000000
    .venv/bin/python benchmarks/index.py --sizes 100000 --recall   # also ANN recall@10 vs exact

Peak RSS (``resource.getrusage``) is the whole process high-water mark, so run one size per
process when you want the figure for that size alone (``--sizes 1000000``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.store.index import IndexRow, RetrievalIndex

KINDS = ("memory", "memory", "memory", "decision", "lesson", "checkpoint", "episode", "note")
MINDS = ("default", "default", "research", "ops")
NOW = "2026-06-01T00:00:00Z"

_STEMS = (
    "deploy migrat databas schema token auth session cache index query notebook kernel widget branch commit "
    "revert lesson memory checkpoint decision episode pipeline config secret server client request response "
    "error retry timeout queue worker batch stream vector embed search recall gate score budget tenant user "
    "agent model prompt context window tool call render plot frame column row table join filter sort group "
    "metric latency throughput memory disk network docker kubernetes cluster node pod service ingress route "
    "alembic postgres sqlite lance arrow parquet polars pandas numpy python rust typescript react api graphql"
).split()


_SYLLABLES = (
    "ka ri to na mo le su vi da pe gro stan fel mar ton bel cor dex lin qua ser tra ven wor zen pol hex mic nov"
).split()


def _vocab() -> list[str]:
    """About 20k distinct words: 816 technical words, then seeded pseudo-words (a vault's long tail)."""
    import numpy as np

    suffixes = ("", "s", "ing", "ed", "er", "ion", "al", "ly")
    words = [s + x for s in _STEMS for x in suffixes]
    rng = np.random.Generator(np.random.PCG64(3))
    seen = set(words)
    while len(words) < 20_000:
        w = "".join(rng.choice(_SYLLABLES, size=int(rng.integers(2, 4))).tolist())
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def make_rows(n: int, seed: int = 7, first_id: int = 0) -> Iterator[IndexRow]:
    """Yield ``n`` deterministic synthetic rows with ids numbered from ``first_id``."""
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(seed))
    vocab = np.array([*_vocab(), "the", "a", "of", "to", "and", "in", "we", "it", "for", "on"])
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 0.9
    weights /= weights.sum()
    perm = rng.permutation(len(vocab))
    vocab = vocab[perm]
    block = 10_000
    for start in range(0, n, block):
        m = min(block, n - start)
        lengths = rng.integers(10, 81, size=m)
        words = rng.choice(vocab, size=int(lengths.sum()), p=weights)
        kinds = rng.integers(0, len(KINDS), size=m)
        minds = rng.integers(0, len(MINDS), size=m)
        expiring = rng.random(size=m) < 0.1
        days = rng.integers(1, 400, size=m)
        pos = 0
        for j in range(m):
            i = first_id + start + j
            text = " ".join(words[pos : pos + lengths[j]].tolist())
            pos += int(lengths[j])
            exp = f"2026-{1 + int(days[j]) % 12:02d}-{1 + int(days[j]) % 28:02d}T00:00:00Z" if expiring[j] else None
            yield IndexRow(
                id=f"{KINDS[kinds[j]][:3]}_{i:08d}",
                kind=KINDS[kinds[j]],
                mind=MINDS[minds[j]],
                text=text,
                digest=f"d{i}",
                updated_at="2026-01-01T00:00:00Z",
                expires_at=exp,
            )


def queries(n: int, seed: int = 11) -> list[str]:
    """Deterministic 3-8 word queries from the same vocabulary."""
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(seed))
    vocab = _vocab()[:2000]  # queries use the common words, as people do
    return [" ".join(rng.choice(vocab, size=int(rng.integers(3, 9))).tolist()) for _ in range(n)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def bench(n: int, n_queries: int, recall: bool, ann_threshold: int = 150_000) -> dict[str, float]:
    out: dict[str, float] = {"rows": n}
    with tempfile.TemporaryDirectory() as tmp:
        idx = RetrievalIndex(Path(tmp) / "index", ann_threshold=ann_threshold)
        t0 = time.perf_counter()
        idx.rebuild(make_rows(n), total=n)
        out["rebuild_s"] = time.perf_counter() - t0
        extra = list(make_rows(101, seed=99, first_id=n))
        t0 = time.perf_counter()
        idx.upsert([extra[0]])
        out["upsert1_ms"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        idx.upsert(extra[1:101])
        out["upsert100_ms"] = (time.perf_counter() - t0) * 1000
        qs = queries(n_queries)
        for mode in ("hybrid", "vector", "fts"):  # warm caches (index files, vector copy) with other queries
            for q in queries(20, seed=5):
                idx.search(q, mind="default", now=NOW, k=50, mode=mode)
        for mode in ("hybrid", "vector", "fts"):
            times = []
            for q in qs:
                t0 = time.perf_counter()
                idx.search(q, mind="default", now=NOW, k=50, mode=mode)
                times.append((time.perf_counter() - t0) * 1000)
            out[f"{mode}_p50_ms"] = statistics.median(times)
            out[f"{mode}_p95_ms"] = pct(times, 95)
        if recall and idx.has_ann():
            hits = 0
            total = 0
            for q in qs[:50]:
                approx = {h.id for h in idx.search(q, mind="default", now=NOW, k=10, mode="vector")}
                truth = {h.id for h in idx.search(q, mind="default", now=NOW, k=10, mode="vector", exact=True)}
                hits += len(approx & truth)
                total += len(truth)
            out["ann_recall@10"] = hits / max(1, total)
        idx.close()
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated row counts (1000000 takes minutes)")
    ap.add_argument("--queries", type=int, default=200, help="queries per mode")
    ap.add_argument("--recall", action="store_true", help="measure ANN recall@10 against exact search")
    ap.add_argument("--ann-threshold", type=int, default=150_000, help="rows from which the IVF index is built")
    args = ap.parse_args(argv)
    os.environ.setdefault("LANCEDB_LOG", "error")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    cols = ["rows", "rebuild_s", "upsert1_ms", "upsert100_ms", "hybrid_p50_ms", "hybrid_p95_ms", "vector_p50_ms",
            "vector_p95_ms", "fts_p50_ms", "fts_p95_ms", "peak_rss_mb"]
    if args.recall:
        cols.append("ann_recall@10")
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, {args.queries} queries/mode, k=50, "
          "mind prefilter")
    print(" | ".join(cols))
    for n in sizes:
        r = bench(n, args.queries, args.recall, args.ann_threshold)
        print(" | ".join(f"{r.get(c, float('nan')):.{0 if c == 'rows' else 2}f}" for c in cols), flush=True)


if __name__ == "__main__":
    main()
