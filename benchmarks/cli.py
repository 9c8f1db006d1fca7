"""CLI cold-start benchmark: real ``synapse-nb`` processes, end to end (prints figures, asserts nothing).

Run: ``.venv/bin/python benchmarks/cli.py [--runs 15] [--records 10000]``

- ``synapse-nb checkpoint create ...`` median wall time (target <= 0.25 s);
- ``synapse-nb recall QUERY`` median on a vault of N memories (target <= 0.5 s);
- ``synapse-nb --version`` median (the floor: interpreter + typer).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = shutil.which("synapse-nb") or str(Path(sys.executable).with_name("synapse-nb"))


def timed(args: list[str], env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t)
    return out


def show(name: str, xs: list[float], target: float | None) -> None:
    med = statistics.median(xs)
    tgt = f"  target <= {target:.2f} s ({'ok' if med <= target else 'OVER'})" if target else ""
    print(f"{name:<42} median {med:.3f} s  min {min(xs):.3f}  max {max(xs):.3f}  (n={len(xs)}){tgt}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--records", type=int, default=10_000)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import synapse_nb as syn

    tmp = Path(tempfile.mkdtemp(prefix="synapse-bench-cli-"))
    try:
        # Every command names its vault folder explicitly (``--vault <folder>/.synapse``): a folder named
        # ``.synapse`` is a vault under every spelling, so the timed commands read the vault built here.
        env = {k: val for k, val in os.environ.items() if k != "SYNAPSE_HOME"}
        small = tmp / "small"
        small.mkdir()
        with syn.open_vault(small) as v:
            small_vault = str(v.path)
        print(f"python {sys.version.split()[0]}, {EXE}")
        show("synapse-nb --version", timed([EXE, "--version"], env, a.runs), None)
        show("synapse-nb checkpoint create", timed(
            [EXE, "--vault", small_vault, "checkpoint", "create", "--doing", "Refactoring JWT auth",
             "--files", "src/a.py,src/b.py", "--next-step", "Run pytest"], env, a.runs), 0.25)
        big = tmp / "big"
        big.mkdir()
        v = syn.open_vault(big)
        big_vault = str(v.path)
        words = ["deploy", "migration", "auth", "cache", "retry", "payment", "index", "schema", "queue", "billing",
                 "token", "session", "worker", "api", "client", "build", "test", "release", "config", "logging"]
        t = time.perf_counter()
        with v.transaction():
            for i in range(a.records):
                w = [words[(i * k + 3) % len(words)] for k in (1, 7, 13)]
                v.remember("knowledge", f"fact_{i}", f"{w[0]} {w[1]} note {i}: how the {w[2]} works", tags=[w[0]])
        v.close()
        print(f"built a {a.records}-memory vault in {time.perf_counter() - t:.1f} s")
        query = "how does the payment retry work?"
        hits = subprocess.run([EXE, "--vault", big_vault, "recall", query, "--json"], env=env, check=True,
                              capture_output=True, text=True).stdout
        n_items = len(json.loads(hits)["items"])
        if not n_items:  # a recall that finds nothing measures an empty vault, not recall
            raise SystemExit(f"the recall found nothing in {big_vault}: the benchmark is not measuring recall")
        print(f"the timed recall returns {n_items} items")
        show(f"synapse-nb recall ({a.records} memories)", timed(
            [EXE, "--vault", big_vault, "recall", query], env, a.runs), 0.5)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
