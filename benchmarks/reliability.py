"""Benchmark form of the reliability suite: the big numbers, printed.

    python benchmarks/reliability.py [--workers 8] [--ops 2000] [--kills 100] [--fuzz 300]

- load: ``workers`` processes x ``ops`` operations (every kind of write, recalls, searches, index syncs,
  a few CLI calls) on one vault, then every promise checked (tests/reliability/harness.py:verify_vault);
- crash: ``kills`` SIGKILLs of a writer at random points on one vault, verified after each;
- fuzz: the hostile-input tests with ``fuzz`` hypothesis examples each, counting the cases tried.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "reliability"))
sys.path.insert(0, str(REPO / "tests"))

import harness as h  # noqa: E402

import synapse_nb as syn  # noqa: E402


def load(workers: int, ops: int, work: Path) -> None:
    vault_dir = work / "load" / ".synapse"
    vault_dir.parent.mkdir(parents=True, exist_ok=True)
    v = syn.open_vault(vault_dir)
    v.index.rebuild()
    v.close()
    journals = [work / f"load{i}" for i in range(workers)]
    t0 = time.perf_counter()
    procs = [h.spawn("load", vault_dir, j, seed=i, n_ops=ops, cli_ops=5) for i, j in enumerate(journals)]
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - t0
    entries = [e for j in journals for e in h.read_journal(j)]
    timing = collections.defaultdict(list)
    for e in entries:
        if e["op"] == "timing":
            timing[e["what"]].append(e["s"])
    rep = h.verify_vault(vault_dir, journals, check_index=True)
    n = sum(len(x) for x in timing.values()) + len(rep.errors) + len(rep.known)
    print(f"load: {workers} processes x {ops} ops = {n} operations in {wall:.1f} s ({n / wall:.0f} ops/s), "
          f"exit codes {sorted(set(codes))}")
    print(f"  acknowledged records {rep.acked}, records in vault {rep.records}, integrity {rep.integrity}")
    print(f"  errors reaching a caller: {len(rep.errors)} (+{len(rep.known)} of known core bug 12)")
    print(f"  problems: {len(rep.problems)}" + (f"; first: {rep.problems[:3]}" if rep.problems else ""))
    for what, xs in sorted(timing.items()):
        xs.sort()
        print(f"  {what:<13} n={len(xs):<6} median {xs[len(xs) // 2] * 1000:8.1f} ms   max {xs[-1] * 1000:9.1f} ms")


def crash(kills: int, work: Path) -> None:
    from test_crash import kill_writer_runs

    vault_dir = work / "crash" / ".synapse"
    vault_dir.parent.mkdir(parents=True, exist_ok=True)
    syn.open_vault(vault_dir).close()
    t0 = time.perf_counter()
    reports = kill_writer_runs(vault_dir, work, kills, seed=1)
    ok = sum(1 for r in reports if not r.problems and r.integrity == "ok")
    print(f"crash: {ok}/{kills} kill -9 runs survived (opens, integrity ok, every acknowledged write there once, "
          f"no phantom or half record), {reports[-1].acked} acknowledged writes, {time.perf_counter() - t0:.0f} s")
    for r in reports:
        if r.problems:
            print("  problem:", r.problems[:3])


def fuzz(examples: int, work: Path) -> None:
    count = work / "fuzz_count"
    env = {**os.environ, "SYNAPSE_FUZZ_EXAMPLES": str(examples), "SYNAPSE_FUZZ_COUNT_FILE": str(count)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-o", "addopts=",
                           "tests/reliability/test_hostile.py"], cwd=REPO, env=env, capture_output=True, text=True)
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
    print(f"fuzz: {count.read_text() if count.exists() else '?'} hostile cases tried ({examples} per test), "
          f"{time.perf_counter() - t0:.0f} s: {tail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--fuzz", type=int, default=300)
    ap.add_argument("--only", choices=["load", "crash", "fuzz"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if a.only in (None, "crash"):
            crash(a.kills, work)
        if a.only in (None, "fuzz"):
            fuzz(a.fuzz, work)
        if a.only in (None, "load"):
            load(a.workers, a.ops, work)


if __name__ == "__main__":
    main()
