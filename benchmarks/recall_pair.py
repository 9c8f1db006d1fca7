"""Recall latency of two checkouts, interleaved query by query on one vault (a paired A/B on a noisy machine).

Two worker processes (one per checkout, ``PYTHONPATH`` set to it) open the same built vault and warm up with one
recall; the driver then sends the benchmark's queries one at a time, A then B (B then A for odd queries), so both
see the machine in the same state: on a shared VM whose speed drifts by half within a minute, whole runs taken
one after the other compare the minute, not the code. Prints each side's p50 and the ratio B/A (overall, and the
median of the per-query ratios).

    python benchmarks/recall.py --sizes 10000                # builds a vault, prints its folder's figures
    git worktree add /tmp/before <commit>
    python benchmarks/recall_pair.py /tmp/before . /tmp/synbench10000_xxxx --queries 200 [--session]

``--session``: every recall of both sides passes a session of its own (as ``%recall`` does), so each records what
it gave; each side then reads its own copy of the vault (another connection's commit moves a local vault's data
version, so two sides writing marks to one file would empty each other's caches).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _worker(vault: str, n_queries: int, session: str | None) -> None:
    sys.path.insert(0, str(HERE))
    from recall import queries

    import synapse_nb as syn

    v = syn.open_vault(vault)
    qs = queries(n_queries)
    v.recall(qs[0])
    print("ready", flush=True)
    for line in sys.stdin:
        q = qs[int(line)]
        t = time.perf_counter()
        v.recall(q, session=session)
        print((time.perf_counter() - t) * 1000, flush=True)
    v.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="checkout A (the reference)")
    ap.add_argument("b", help="checkout B")
    ap.add_argument("vault", help="a vault built by benchmarks/recall.py")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--session", action="store_true", help="recall with a session, as %%recall does")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        _worker(args.vault, args.queries, args.worker or None)
        return

    tmp = tempfile.mkdtemp(prefix="recall-pair-")

    def start(checkout: str, side: str) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(Path(checkout).resolve()))
        session = f"pair-{side}-{time.time_ns()}" if args.session else ""
        vault = args.vault
        if args.session:
            vault = shutil.copytree(args.vault, Path(tmp) / side)
        p = subprocess.Popen([sys.executable, __file__, checkout, checkout, str(vault), "--queries", str(args.queries),
                              "--worker", session], cwd=checkout, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        assert p.stdin is not None and p.stdout is not None
        if p.stdout.readline().strip() != "ready":
            raise SystemExit(f"the worker for {checkout} did not start")
        return p

    pa, pb = start(args.a, "a"), start(args.b, "b")

    def ask(p: subprocess.Popen[str], i: int) -> float:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(f"{i}\n")
        p.stdin.flush()
        return float(p.stdout.readline())

    ta: list[float] = []
    tb: list[float] = []
    for i in range(args.queries):
        if i % 2:
            tb.append(ask(pb, i))
            ta.append(ask(pa, i))
        else:
            ta.append(ask(pa, i))
            tb.append(ask(pb, i))
    for p in (pa, pb):
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    ma, mb = statistics.median(ta), statistics.median(tb)
    print(f"A p50 {ma:.2f} ms, B p50 {mb:.2f} ms, B/A {mb / ma:.3f}, "
          f"median per-query B/A {statistics.median(b / a for a, b in zip(ta, tb, strict=True)):.3f}")


if __name__ == "__main__":
    main()
