"""An agent's write in a large vault: the agent quotas are counted on every agent write (``kinds/_base.py``,
``check_agent_quota``), so their cost must not grow with what humans wrote.

Run: ``nice .venv/bin/python benchmarks/agent_write_quota.py [--sizes 10,50000,200000] [--writes 30]``. For each
size, a fresh vault in a temp folder gets that many human memories in one import (one history entry each, all
within the hour the hourly quota counts), then an agent writes ``--writes`` new memories; prints per size the import
time and the agent write's median and p90 in ms (one JSON line each). Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import synapse_nb as syn


def one(size: int, writes: int, folder: Path) -> dict[str, float]:
    v = syn.open_vault(folder)
    v.remember("context", "seed", "seed fact")
    lines = v.export_jsonl().splitlines()
    rows = [json.loads(ln) for ln in lines]
    mem = next(r for r in rows if r.get("kind") == "memory")
    out = [ln for ln, r in zip(lines, rows, strict=True) if r.get("kind") not in ("memory", "history")]
    for i in range(size):
        out.append(json.dumps({**mem, "id": f"mem_{i:012x}", "key": f"k{i}", "content": f"fact number {i} about x"}))
    t0 = time.perf_counter()
    v.import_jsonl(out, trust=True)
    imported = time.perf_counter() - t0
    agent = v.as_agent()
    took = []
    for i in range(writes):
        t0 = time.perf_counter()
        agent.remember("context", f"agent_{i}", f"agent note {i}")
        took.append((time.perf_counter() - t0) * 1000)
    v.close()
    took.sort()
    return {"human_memories": size, "import_s": round(imported, 1),
            "agent_write_ms_p50": round(statistics.median(took), 2),
            "agent_write_ms_p90": round(took[int(0.9 * (len(took) - 1))], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,50000,200000")
    ap.add_argument("--writes", type=int, default=30)
    args = ap.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(one(size, args.writes, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
