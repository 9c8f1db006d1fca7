"""Recall benchmark: synthetic, realistic vaults at 10k, 100k and 1M records, recall against bare FTS5.

Prints recall p50/p95, the p50 of a bare SQLite FTS5 ``bm25()`` top-20 query over the same texts (the
vault's ``gate_vocab`` index of the gate texts, the OR of the query's words) measured side by side in the same
process (each query alternates recall, the bare query and the store's ranking query), their ratio, the store's
ranking query alone, and peak RSS; then, in another fresh process, recall alone (``recall_alone_*``: the same
queries one after another with nothing in between, the issue's absolute goal), and in a third recall with a session
(``recall_session_*``: as ``%recall`` and agents call it, so each recall records what it gave), and in a fourth,
on a copy of the vault, the first recall after each of 20 writes (``recall_after_write_*``: an agent that
remembers, then asks). Vaults are generated deterministically
(seeded), bulk-loaded through the public ``import_jsonl`` API, and measured in a fresh process. Records are
mixed: 60% memories, 10% decisions, 10% checkpoints, 17% episodes in threads of 20 turns with 40 actors
(the structure step runs on them), 3% notes.

    python benchmarks/recall.py                       # 10k and 100k
    python benchmarks/recall.py --sizes 10000,100000,1000000

Goals (issue 13): p50 <= 2 ms at 10k, <= 10 ms at 100k, <= 40 ms at 1M; <= 10x bare FTS5 at 10k; peak RSS
<= 1.5 GB at 1M.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import synapse_nb as syn
from synapse_nb.transfer import EXPORT_SCHEMA

TOPICS = ["api", "deploy", "database", "migrations", "auth", "jwt", "cache", "redis", "kafka", "worker", "cron",
          "pytest", "ci", "docker", "kubernetes", "frontend", "react", "webpack", "logging", "metrics", "alerts",
          "billing", "payments", "search", "index", "embedding", "notebook", "pandas", "polars", "sklearn",
          "training", "evaluation", "dataset", "release", "changelog", "version", "feature", "flag", "security",
          "secrets", "vault", "s3", "backup", "restore", "latency", "throughput", "timeout", "retry", "queue"]
FILLER = ("the we our this that it when before after with without for to of in on and or but not always never "
          "should must use run check keep move add remove fix update make sure team service module config file "
          "branch commit test build step job task user client server request response error warning value").split()


def _sentence(rng: random.Random, n: int) -> str:
    words = []
    for _ in range(n):
        words.append(rng.choice(TOPICS) if rng.random() < 0.3 else rng.choice(FILLER))
    words += [f"{rng.choice(TOPICS)}{rng.randrange(2000)}"]  # rarer terms: a long-tailed vocabulary
    return " ".join(words)


def export_lines(n: int, seed: int = 0):
    rng = random.Random(seed)
    yield json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA})
    ts = "2026-01-01T00:00:00.000000Z"
    cats = list(syn.CATEGORIES)
    episodes = 0
    for i in range(n):
        r = rng.random()
        rid = f"{i:012x}"
        common = {"mind": "default", "created_at": ts, "updated_at": ts, "id": None}
        if r < 0.60:
            doc = {**common, "kind": "memory", "id": f"mem_{rid}", "category": cats[i % 8], "key": f"k_{i}",
                   "content": _sentence(rng, rng.randint(10, 60)), "tags": sorted({rng.choice(TOPICS)}),
                   "priority": rng.randint(0, 3), "source": "user", "verified": 1, "confidence": 1.0,
                   "expires_at": None}
        elif r < 0.80:
            doc = {**common, "kind": "decision", "id": f"dec_{rid}", "decision": _sentence(rng, 8),
                   "rationale": _sentence(rng, 20), "tags": [rng.choice(TOPICS)], "branch": "main",
                   "commit_sha": None, "source": "user"}
        elif r < 0.90:
            doc = {**common, "kind": "checkpoint", "id": f"ckp_{rid}", "branch": "main", "commit_sha": None,
                   "doing": _sentence(rng, 10), "changed_files": [f"src/{rng.choice(TOPICS)}.py"],
                   "next_step": _sentence(rng, 6), "blockers": None, "origin": "api", "source": "user"}
        elif r < 0.97:
            turn = episodes
            episodes += 1
            doc = {**common, "kind": "episode", "id": f"epi_{rid}", "task_key": f"task_{i % 5000}",
                   "status": "success", "outcome": _sentence(rng, 12) + ("?" if rng.random() < 0.3 else ""),
                   "refs": [], "duration_s": None, "source": "user", "thread": f"session_{turn // 20}",
                   "seq": turn % 20, "actor": f"speaker{rng.randrange(40)}"}
        else:
            doc = {**common, "kind": "note", "id": f"note_{rid}", "name": f"note_{i}",
                   "trigger": _sentence(rng, 25), "body": _sentence(rng, 80), "source": "user"}
        yield json.dumps(doc, sort_keys=True)


def queries(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 5 == 4:
            out.append(rng.choice(["what is the weather in paris", "tell me a joke", "who won the match yesterday"]))
        else:
            out.append(" ".join(rng.sample(TOPICS, rng.randint(2, 4))) + f" {rng.choice(TOPICS)}{rng.randrange(2000)}")
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def timed(fn, qs):
    out = []
    for q in qs:
        t = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t) * 1000)
    return out


def run(size: int, n_queries: int) -> dict:
    """Build the vault (bulk import) here, then measure recall in a fresh process.

    The fresh process makes ``peak_rss_mb`` recall's own footprint: the bulk import holds every parsed
    line in memory (it is all-or-nothing), which would otherwise dominate the peak.
    """
    import subprocess
    import sys

    tmp = Path(tempfile.mkdtemp(prefix=f"synbench{size}_"))
    v = syn.open_vault(tmp)
    t = time.perf_counter()
    v.import_jsonl(export_lines(size), trust=True)  # its own synthetic user records
    load_s = time.perf_counter() - t
    v.close()
    res: dict = {"size": size, "load_s": load_s}
    # each measure in a fresh process of its own: side by side, alone, with a session, after writes
    for flags in ([], ["--alone"], ["--session"], ["--after-write", "20" if size <= 100_000 else "5"]):
        out = subprocess.run([sys.executable, __file__, "--measure", str(tmp), "--size", str(size), "--queries",
                              str(n_queries), *flags], capture_output=True, text=True, check=True).stdout
        res.update(json.loads(out.strip().splitlines()[-1]))
    return res


def after_write(path: Path, n_writes: int) -> dict:
    """On a copy of the vault (the writes stay there): one memory written, then one recall, ``n_writes`` times."""
    import shutil

    tmp = Path(tempfile.mkdtemp(prefix="synbench-aw-"))
    try:
        shutil.copytree(path, tmp / "v")
        v = syn.open_vault(tmp / "v")
        qs = queries(max(n_writes, 1))
        v.recall(qs[0])
        ts = []
        for i in range(n_writes):
            v.remember("knowledge", f"after_write_{i}", f"deploy latency note {i} written just before a recall")
            ts += timed(lambda x: v.recall(x), [qs[i]])
        v.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"recall_after_write_p50_ms": statistics.median(ts), "recall_after_write_max_ms": max(ts)}


def measure(path: Path, size: int, n_queries: int, alone: bool = False, session: bool = False) -> dict:
    import sqlite3

    from synapse_nb.recall.rank import rank_words

    v = syn.open_vault(path)
    qs = queries(n_queries)
    if alone or session:  # recall only, one query after another (warm: imports and structure arrays, with the
        # first query); with a session of its own, as %recall calls it, each recall records what it gave
        name = f"bench-{time.time_ns()}" if session else None
        v.recall(qs[0])
        ts = timed(lambda x: v.recall(x, session=name), qs)
        v.close()
        key = "recall_session" if session else "recall_alone"
        out = {f"{key}_p50_ms": statistics.median(ts), f"{key}_p95_ms": pct(ts, 95)}
        return out if session else {**out, "recall_alone_peak_rss_mb": _peak_rss_mb()}
    # the reference: a bare FTS5 bm25() top-20 over the same gate texts, on its own read-only connection
    conn = sqlite3.connect(f"file:{v.path / 'synapse.db'}?mode=ro", uri=True)
    bare_sql = "SELECT rowid FROM gate_vocab WHERE gate_vocab MATCH ? ORDER BY bm25(gate_vocab) LIMIT 20"

    def bare(q: str) -> None:
        words = rank_words(q)
        if words:
            conn.execute(bare_sql, (" OR ".join(f'"{w}"' for w in words),)).fetchall()

    store, mind = v._store, v.mind

    def store_rank(q: str) -> None:  # the store's ranking query alone (depth 100, both columns)
        store.recall.bm25(mind, rank_words(q), depth=100)

    v.recall(qs[0])  # warm: imports, scorer, structure arrays
    bare(qs[0])
    rec, ref, rank_only = [], [], []
    for q in qs:  # alternate, so load on the shared machine hits both alike
        ref += timed(bare, [q])
        rec += timed(lambda x: v.recall(x), [q])
        rank_only += timed(store_rank, [q])
    res: dict = {"recall_p50_ms": statistics.median(rec), "recall_p95_ms": pct(rec, 95),
                 "bare_fts5_top20_p50_ms": statistics.median(ref),
                 "store_rank_query_p50_ms": statistics.median(rank_only)}
    res["ratio_recall_to_bare"] = res["recall_p50_ms"] / res["bare_fts5_top20_p50_ms"]
    res["recall_peak_rss_mb"] = _peak_rss_mb()
    conn.close()
    v.close()
    return res


def _peak_rss_mb() -> float:
    """This process's own peak RSS: VmHWM (Linux keeps ru_maxrss across fork/exec, so a child would report
    its parent's peak); ru_maxrss elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--measure", help=argparse.SUPPRESS)  # internal: measure recall on a built vault
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--alone", action="store_true", help="with --measure: time recall alone (no reference queries)")
    ap.add_argument("--session", action="store_true", help="with --measure: time recall with a session (as %%recall)")
    ap.add_argument("--after-write", type=int, default=0, metavar="N",
                    help="with --measure: on a copy of the vault, time the first recall after each of N writes")
    args = ap.parse_args()
    if args.measure:
        if args.after_write:
            print(json.dumps(after_write(Path(args.measure), args.after_write)))
            return
        print(json.dumps(measure(Path(args.measure), args.size, args.queries, args.alone, args.session)))
        return
    for size in [int(s) for s in args.sizes.split(",")]:
        r = run(size, args.queries)
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}), flush=True)


if __name__ == "__main__":
    main()
