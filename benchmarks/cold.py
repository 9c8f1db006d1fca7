"""Cold-path benchmark: one recall in a fresh process, as a hook runs it on every prompt (issue 28, part 2).

Builds vaults of 10k and 100k records (1M with ``--sizes``; the same deterministic mixed records as
``benchmarks/recall.py``, bulk-loaded through ``import_jsonl``), then times, each in a fresh process and
alternated round by round so load on a shared machine hits all alike:

- ``pass``: ``python -c pass`` (the reference: every ratio is to its median in the same run);
- ``import_cli``: ``python -c "import synapse_nb.cli"``;
- ``cli_recall``: ``python -m synapse_nb --vault V recall QUERY --session S`` (a new session each run);
- ``hook_prompt``: ``python -m synapse_nb --vault V hook prompt --session S --text QUERY`` when the branch has
  the ``hook`` command (issue 28 part 1), else left out;
- ``api_recall``: ``python -c "open_vault(V, actor='agent').recall(Q, session=S)"`` (the smallest cold recall).

Then "first recall after another process's write" at each size: a warm process recalls, another process writes a
memory, the warm process recalls again (``after_write``), against the same process's warm recall with nothing
written in between (``warm``); the goal is after_write <= 2x warm at 100k.

    python benchmarks/cold.py                          # 10k and 100k
    python benchmarks/cold.py --sizes 10000,100000,1000000 --runs 7
    python benchmarks/cold.py --vault-dir /tmp/coldvaults   # keep (and reuse) the built vaults

Goals (issue 28): cold hook/recall <= 8x ``python -c pass`` at 10k, <= 12x at 100k, <= 25x at 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall import (  # the same records and queries as benchmarks/recall.py
    export_lines,
    queries,
)

ROOT = Path(__file__).resolve().parent.parent


def build(size: int, where: Path | None) -> Path:
    """A vault of ``size`` records (kept under ``where`` and reused when given), with its own git repository."""
    import synapse_nb as syn

    base = (where if where is not None else Path(tempfile.mkdtemp(prefix="synbench-cold-"))) / f"v{size}"
    if (base / ".synapse" / "synapse.db").exists() or (base / "synapse.db").exists():
        return base
    base.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(base)], check=True)
    v = syn.open_vault(base)
    v.import_jsonl(export_lines(size), trust=True)
    v.close()
    return base


def _env() -> dict[str, str]:
    drop = ("SYNAPSE_HOME", "SYNAPSE_READONLY", "SYNAPSE_DEBUG", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # as an installed package runs: from bytecode (kept outside the source tree), not compiled on every start
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "synbench-pycache")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["SYNAPSE_ACTOR"] = "agent"
    return env


def _has_hook(env: dict[str, str]) -> bool:
    r = subprocess.run([sys.executable, "-m", "synapse_nb", "hook", "--help"], capture_output=True, env=env,
                       check=False)
    return r.returncode == 0


def commands(vault: Path, query: str, session: str, hook: bool) -> dict[str, list[str]]:
    py = sys.executable
    api = (f"from synapse_nb import open_vault; "
           f"open_vault({str(vault)!r}, actor='agent').recall({query!r}, session={session!r})")
    out = {"pass": [py, "-c", "pass"],
           "import_cli": [py, "-c", "import synapse_nb.cli"],
           "cli_recall": [py, "-m", "synapse_nb", "--vault", str(vault), "recall", query, "--session", session],
           "api_recall": [py, "-c", api]}
    if hook:
        out["hook_prompt"] = [py, "-m", "synapse_nb", "--vault", str(vault), "hook", "prompt", "--session", session,
                              "--text", query]
    return out


def _time(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, env=env, cwd=cwd, check=False)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return dt


def cold(vault: Path, runs: int, hook: bool) -> dict[str, float]:
    """Medians (ms) of each command in fresh processes, alternated per round, and their ratios to ``pass``."""
    env = _env()
    qs = queries(runs + 1, seed=7)
    times: dict[str, list[float]] = {}
    for warmup in (True, False):  # one untimed round first: the OS file cache holds the vault and the code
        for i in range(1 if warmup else runs):
            q = qs[i]
            for name, cmd in commands(vault, q, f"bench-{time.time_ns()}", hook).items():
                dt = _time(cmd, env, vault)
                if not warmup:
                    times.setdefault(name, []).append(dt * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {f"{k}_ms": round(v, 1) for k, v in med.items()}
    out.update({f"{k}_x_pass": round(v / med["pass"], 2) for k, v in med.items() if k != "pass"})
    return out


_AFTER = r"""
import json, statistics, subprocess, sys, time
from synapse_nb import open_vault
vault, n, env_py = sys.argv[1], int(sys.argv[2]), sys.executable
sys.path.insert(0, sys.argv[3])
from recall import queries
qs = queries(2 * n + 2, seed=11)
v = open_vault(vault, actor="agent")
v.recall(qs[0])
warm, after = [], []
write = ("from synapse_nb import open_vault; v = open_vault(%r, actor='agent'); "
         "v.remember('knowledge', 'cold_bench_%%d' %% %s, 'deploy latency note written by another process')")
for i in range(n):
    t = time.perf_counter(); v.recall(qs[2 * i + 1]); warm.append((time.perf_counter() - t) * 1000)
    subprocess.run([env_py, "-c", write % (vault, i)], check=True)
    t = time.perf_counter(); v.recall(qs[2 * i + 2]); after.append((time.perf_counter() - t) * 1000)
print(json.dumps({"warm_ms": statistics.median(warm), "after_write_ms": statistics.median(after)}))
"""


def after_write(vault: Path, n: int) -> dict[str, float]:
    """On a copy of the vault: first recall after another process's write vs a warm recall (medians, ms)."""
    import shutil

    tmp = Path(tempfile.mkdtemp(prefix="synbench-cold-aw-"))
    try:
        shutil.copytree(vault, tmp / "v")
        out = subprocess.run([sys.executable, "-c", _AFTER, str(tmp / "v"), str(n), str(Path(__file__).parent)],
                             capture_output=True, text=True, env=_env(), check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"warm_ms": round(r["warm_ms"], 2), "after_write_ms": round(r["after_write_ms"], 2),
            "after_write_x_warm": round(r["after_write_ms"] / r["warm_ms"], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--runs", type=int, default=9, help="fresh processes per command and size (median)")
    ap.add_argument("--writes", type=int, default=9, help="writes of the after-write measure")
    ap.add_argument("--vault-dir", type=Path, help="build the vaults here and reuse them on later runs")
    args = ap.parse_args()
    hook = _has_hook(_env())
    for size in [int(s) for s in args.sizes.split(",")]:
        t = time.perf_counter()
        vault = build(size, args.vault_dir)
        res: dict[str, object] = {"size": size, "build_s": round(time.perf_counter() - t, 1), "hook": hook}
        res.update(cold(vault, args.runs, hook))
        res.update(after_write(vault, args.writes))
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
