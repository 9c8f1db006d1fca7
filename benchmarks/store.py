"""Store benchmark: memory upserts/s, FTS search latency at 10k and 100k memories, checkpoint create latency.

Not a test: prints a table. Deterministic data (seeded), temporary vaults, no network.

    .venv/bin/python benchmarks/store.py            # full run (10k and 100k)
    .venv/bin/python benchmarks/store.py --quick    # 2k and 10k, for a smoke run

Targets (issue 2, 2-core machine): >= 5,000 upserts/s batched, search p50 <= 2 ms at 100k,
checkpoint create p50 <= 15 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import synapse_nb as syn

_WORDS = (
    "deploy release migration database schema index query cache latency throughput retry timeout backoff "
    "kubernetes docker container image registry build pipeline test fixture mock coverage lint format "
    "notebook kernel widget magic cell output dataframe pandas polars arrow parquet csv json yaml config "
    "auth token session cookie jwt oauth permission role user agent memory lesson checkpoint decision "
    "branch commit revert merge rebase conflict review approve reject feature bug fix refactor rename "
    "logging metrics tracing alert dashboard incident postmortem rollback canary staging production "
    "python typing dataclass protocol generic async await thread process queue worker scheduler cron "
    "embedding vector search ranking recall precision threshold calibration split seed bootstrap"
).split()
CATEGORIES = syn.CATEGORIES


def _vocabulary(n: int = 6000) -> tuple[list[str], list[float]]:
    """The domain words plus made-up words, with Zipf weights (1/rank), like real text: a few words are
    everywhere, most are rare. Deterministic."""
    rng = random.Random(0)
    syll = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    made = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(n)})
    rng.shuffle(made)
    words = list(_WORDS) + [w for w in made if w not in _WORDS][: n - len(_WORDS)]
    return words, [1.0 / (r + 1) for r in range(len(words))]


VOCAB, WEIGHTS = _vocabulary()


def sentence(rng: random.Random, lo: int = 8, hi: int = 24) -> str:
    return " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(lo, hi))).capitalize() + "."


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def rows(n: int, rng: random.Random, start: int = 0) -> list[tuple[str, str, str, list[str], str]]:
    """The arguments of n ``remember`` calls (category, key, content, tags, priority), generated up front so that a
    timed loop measures the store, not the sentence generator."""
    return [(CATEGORIES[i % 8], f"fact_{i}", sentence(rng), [rng.choice(_WORDS), rng.choice(_WORDS)],
             syn.PRIORITIES[i % 4]) for i in range(start, start + n)]


def fill(v: syn.Vault, data: list[tuple[str, str, str, list[str], str]]) -> float:
    """Insert the generated memories in transactions of 1000; return seconds (the data is made before the clock
    starts)."""
    t0 = time.perf_counter()
    for lo in range(0, len(data), 1000):
        with v.transaction():
            for cat, key, content, tags, prio in data[lo:lo + 1000]:
                v.remember(cat, key, content, tags=tags, priority=prio)
    return time.perf_counter() - t0


def bench_upserts(tmp: Path, n_batched: int, n_single: int) -> tuple[float, float, float]:
    rng = random.Random(1)
    (tmp / "upserts").mkdir()
    data = rows(n_batched, rng)
    singles = [sentence(rng) for _ in range(n_single)]
    updates = [sentence(rng) for _ in range(n_single)]
    with syn.open_vault(tmp / "upserts") as v:
        t = fill(v, data)
        batched = n_batched / t
        t0 = time.perf_counter()
        for i, text in enumerate(singles):
            v.remember("knowledge", f"single_{i}", text)
        single = n_single / (time.perf_counter() - t0)
        # upserts of existing keys (update in place), batched
        t0 = time.perf_counter()
        with v.transaction():
            for i, text in enumerate(updates):
                v.remember(CATEGORIES[i % 8], f"fact_{i}", text)
        update = n_single / (time.perf_counter() - t0)
    return batched, single, update


def memory_lines(template: dict, start: int, n: int, rng: random.Random) -> list[str]:
    """Export lines for n generated memories, shaped like ``template`` (an exported memory)."""
    out = []
    for i in range(start, start + n):
        doc = dict(template, id=f"mem_{i:012x}", category=CATEGORIES[i % 8], key=f"fact_{i}", content=sentence(rng),
                   tags=sorted({rng.choice(_WORDS), rng.choice(_WORDS)}), priority=i % 4)
        out.append(json.dumps(doc, sort_keys=True))
    return out


def bench_search(tmp: Path, sizes: list[int], n_queries: int) -> list[tuple[int, float, float, float, float]]:
    """Vaults are filled through import_jsonl (the bulk path), so the fill does not depend on upsert speed."""
    rng = random.Random(2)
    out = []
    (tmp / "template").mkdir()
    (tmp / "search").mkdir()
    with syn.open_vault(tmp / "template") as t:
        t.remember("knowledge", "template", "x")
        header, line = t.export_jsonl().splitlines()[:2]
    template = json.loads(line)
    with syn.open_vault(tmp / "search") as v:
        have = 0
        for size in sizes:
            t0 = time.perf_counter()
            v.import_jsonl([header, *memory_lines(template, have, size - have, rng)], trust=True)
            fill_rate = (size - have) / (time.perf_counter() - t0)
            have = size
            qrng = random.Random(3)
            queries = [" ".join(qrng.choices(VOCAB, WEIGHTS, k=qrng.randint(1, 3))) for _ in range(n_queries)]
            for q in queries[:20]:  # warm the page cache
                v.memories.search(q, limit=10)
            lat = []
            for q in queries:
                t0 = time.perf_counter()
                v.memories.search(q, limit=10)
                lat.append((time.perf_counter() - t0) * 1000)
            out.append((size, statistics.median(lat), pct(lat, 95), max(lat), fill_rate))
    return out


def bench_checkpoints(tmp: Path, n: int) -> tuple[float, float]:
    repo = tmp / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "B", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "B",
           "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    lat = []
    with syn.open_vault(repo) as v:
        for i in range(n):
            t0 = time.perf_counter()
            c = v.checkpoint(f"step {i}: refactoring auth", files=["src/auth.py"], next_step="run tests")
            lat.append((time.perf_counter() - t0) * 1000)
        assert c.branch == "main" and c.commit
    return statistics.median(lat), pct(lat, 95)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = ap.parse_args()
    sizes = [2_000, 10_000] if args.quick else [10_000, 100_000]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        n_up = 2_000 if args.quick else 10_000
        batched, single, update = bench_upserts(tmp, n_up, 500 if args.quick else 1_000)
        search = bench_search(tmp, sizes, 200 if args.quick else 500)
        ck50, ck95 = bench_checkpoints(tmp, 100 if args.quick else 300)
    rows = [
        (f"memory upserts/s, batched (1000 per transaction, {n_up:,} into an empty vault)", f"{batched:,.0f}",
         ">= 5,000"),
        ("memory upserts/s, unbatched (1 transaction each)", f"{single:,.0f}", ""),
        ("memory updates in place/s, batched", f"{update:,.0f}", ""),
    ]
    for size, p50, p95, mx, rate in search:
        tgt = "<= 2 ms" if size >= 100_000 else ""
        rows.append((f"FTS search at {size:,} memories: p50 / p95 / max (ms)", f"{p50:.2f} / {p95:.2f} / {mx:.2f}",
                     tgt))
        rows.append((f"  (bulk import to {size:,}: records/s)", f"{rate:,.0f}", ""))
    rows.append(("checkpoint create in a git repo: p50 / p95 (ms)", f"{ck50:.2f} / {ck95:.2f}", "<= 15 ms"))
    w = max(len(r[0]) for r in rows)
    print(f"synapse_nb {syn.__version__}, Python {sys.version.split()[0]}, SQLite "
          f"{__import__('sqlite3').sqlite_version}, {os.cpu_count()} CPUs")
    print(f"{'measure':<{w}}  {'value':>22}  target")
    for name, val, tgt in rows:
        print(f"{name:<{w}}  {val:>22}  {tgt}")


if __name__ == "__main__":
    main()
