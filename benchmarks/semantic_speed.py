"""Recall with the semantic channel off and on, on the synthetic vaults of ``benchmarks/recall.py``.

Per size: the vault is bulk-loaded, then, in a fresh process, the channel's table is built (``build_s``, texts
embedded per second) and recall is timed over the same queries three ways, alternating per query so the load of
the shared machine hits all alike: the channel off, the channel on (each query embedded afresh: the query-vector
cache is emptied before each), and a bare FTS5 ``bm25()`` top-20 over the same texts (the reference of
``benchmarks/recall.py``). Medians and their ratios to the reference; peak RSS of the measuring process.

    nice .venv/bin/python benchmarks/semantic_speed.py --sizes 10000,100000 --embedder wordllama
    nice .venv/bin/python benchmarks/semantic_speed.py --sizes 1000000 --queries 100
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from recall import _peak_rss_mb, export_lines, pct, queries, timed  # benchmarks/recall.py

import synapse_nb as syn
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.recall.engine import Recaller
from synapse_nb.recall.rank import RankParams, rank_words


def measure(path: Path, n_queries: int, embedder: str, weight: float) -> dict:
    v = syn.open_vault(path)
    v.settings.set("recall_embedder", embedder)
    qs = queries(n_queries)
    off = v.recall
    on = Recaller(v._ctx, lambda: v.index, params=RankParams(semantic=weight),
                  lessons=lambda c, b: Lessons(c).in_force(b))
    t = time.perf_counter()
    off_why = on.recall(qs[0]).semantic_off  # builds the index and the channel's table
    if off_why is not None:  # the model not loadable here: the "on" figures would be words only (review 68)
        raise SystemExit(f"the semantic channel is off: {off_why}")
    build = time.perf_counter() - t
    n = v.index.dense.count()
    conn = sqlite3.connect(f"file:{v.path / 'synapse.db'}?mode=ro", uri=True)
    bare_sql = "SELECT rowid FROM gate_vocab WHERE gate_vocab MATCH ? ORDER BY bm25(gate_vocab) LIMIT 20"

    def bare(q: str) -> None:
        words = rank_words(q)
        if words:
            conn.execute(bare_sql, (" OR ".join(f'"{w}"' for w in words),)).fetchall()

    def channel(q: str) -> None:
        on._dense._queries.clear()
        on.recall(q)

    off(qs[0])
    bare(qs[0])
    t_off, t_on, t_ref = [], [], []
    for q in qs:
        t_ref += timed(bare, [q])
        t_off += timed(off, [q])
        t_on += timed(channel, [q])
    res = {"rows": n, "build_s": round(build, 1), "embedded_per_s": round(n / build, 1),
           "ann": v.index.dense.has_ann(), "off_p50_ms": statistics.median(t_off), "off_p95_ms": pct(t_off, 95),
           "on_p50_ms": statistics.median(t_on), "on_p95_ms": pct(t_on, 95),
           "bare_fts5_p50_ms": statistics.median(t_ref)}
    res["ratio_off_to_bare"] = res["off_p50_ms"] / res["bare_fts5_p50_ms"]
    res["ratio_on_to_bare"] = res["on_p50_ms"] / res["bare_fts5_p50_ms"]
    res["ratio_on_to_off"] = res["on_p50_ms"] / res["off_p50_ms"]
    res["peak_rss_mb"] = _peak_rss_mb()
    conn.close()
    v.index.close()
    v.close()
    return {k: round(x, 3) if isinstance(x, float) else x for k, x in res.items()}


class Synthetic:
    """Random vectors (a batch's rows from one seeded generator): the index's own cost, without a model's."""

    name, version, dimension, fingerprint = "synthetic", "1", 256, "synthetic-256"

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        rng = np.random.default_rng(int(texts[0]) if texts and texts[0].isdigit() else 0)
        return rng.normal(size=(len(texts), self.dimension))


def dense_only(size: int, n_queries: int) -> dict:
    """The semantic table alone at ``size`` rows of synthetic vectors: build, then search p50/p95 (exact below the
    ANN threshold, HNSW above), one mind, 10% of the rows expiring."""
    from synapse_nb.store.embedders import quantize
    from synapse_nb.store.index.dense import DenseIndex, DenseRow

    tmp = Path(tempfile.mkdtemp(prefix=f"synsemdense{size}_"))
    try:
        d = DenseIndex(tmp, Synthetic())
        t = time.perf_counter()
        d.rebuild(DenseRow(f"r{i:08d}", "memory", "default", str(i), "d",
                           "2027-01-01T00:00:00Z" if i % 10 == 0 else None) for i in range(size))
        build = time.perf_counter() - t
        rng = np.random.default_rng(7)
        qs = quantize(rng.normal(size=(n_queries, 256)))
        now = "2026-06-01T00:00:00Z"
        d.search(qs[0], mind="default", now=now)
        ts = timed(lambda q: d.search(q, mind="default", now=now), list(qs))
        return {"size": size, "dense_only": True, "build_s": round(build, 1), "ann": d.has_ann(),
                "search_p50_ms": round(statistics.median(ts), 3), "search_p95_ms": round(pct(ts, 95), 3),
                "peak_rss_mb": round(_peak_rss_mb(), 1)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--weight", type=float, default=0.2)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--dense-only", action="store_true", help="the semantic table alone, synthetic vectors")
    ap.add_argument("--keep", help="build each size's vault in DIR/<size> once and measure it there again on later "
                    "runs (the channel's table is kept too: only the first run embeds)")
    args = ap.parse_args()
    if args.dense_only:
        for size in [int(s) for s in args.sizes.split(",")]:
            print(json.dumps(dense_only(size, args.queries)), flush=True)
        return
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.queries, args.embedder, args.weight)))
        return
    for size in [int(s) for s in args.sizes.split(",")]:
        tmp = Path(args.keep) / str(size) if args.keep else Path(tempfile.mkdtemp(prefix=f"synsem{size}_"))
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            if not (tmp / "synapse.db").is_file():
                v = syn.open_vault(tmp)
                v.import_jsonl(export_lines(size), trust=True)  # its own synthetic user records
                v.close()
            out = subprocess.run([sys.executable, __file__, "--measure", str(tmp), "--queries", str(args.queries),
                                  "--embedder", args.embedder, "--weight", str(args.weight)],
                                 capture_output=True, text=True, check=True).stdout
            print(json.dumps({"size": size, "embedder": args.embedder, **json.loads(out.strip().splitlines()[-1])}),
                  flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
