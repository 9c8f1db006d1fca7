"""An agent's write in a vault already holding many agent records: the bounded totals (``agent_records_per_mind``,
``agent_records_per_vault``, ``agent_megabytes_per_vault``) are checked on every agent write, so their cost must not
grow with what agents hold (schema v7 keeps the counts by triggers; the check reads two rows).

Run: ``nice .venv/bin/python benchmarks/agent_totals.py [--sizes 10000,100000] [--writes 300] [--trees A B]``.
For each tree (a source folder of synapse_nb; default: this one) and size, in a child process importing from that
tree, a fresh vault gets that many agent checkpoints in one import (a person's import of records whose source is the
agent), the quotas are raised out of the way, then an agent writes ``--writes`` checkpoints; prints one JSON line per
tree and size with the agent write's median and p90 in ms, then, with two trees, the ratio of the second's median
to the first's. Compare with the tree before the totals: ``git archive main | tar -x -C /tmp/base`` and
``--trees /tmp/base .``. Figures: docs/architecture.md ("What is not defended").
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


def child(size: int, writes: int) -> dict[str, object]:
    import synapse_nb as syn
    from synapse_nb.errors import ValidationError

    with tempfile.TemporaryDirectory() as tmp:
        v = syn.open_vault(tmp)
        v.checkpoint("seed", files=["a.py"])
        lines = v.export_jsonl().splitlines()
        rows = [json.loads(ln) for ln in lines]
        ckp = next(r for r in rows if r.get("kind") == "checkpoint")
        out = [ln for ln, r in zip(lines, rows, strict=True) if r.get("kind") not in ("checkpoint", "history")]
        for i in range(size):
            out.append(json.dumps({**ckp, "id": f"ckp_{i:012x}", "source": "agent",
                                   "doing": f"agent step {i} on the parser", "changed_files": [f"src/m{i % 97}.py"]}))
        t0 = time.perf_counter()
        v.import_jsonl(out, trust=True)
        imported = time.perf_counter() - t0
        v.settings.set("agent_writes_per_hour", 10_000_000)
        for name in ("agent_records_per_mind", "agent_records_per_vault"):
            try:
                v.settings.set(name, 100_000_000)
            except ValidationError:  # a tree before the totals: no such setting
                pass
        agent = syn.open_vault(tmp, actor="agent")
        agent.checkpoint("warm up")
        took = []
        for i in range(writes):
            t0 = time.perf_counter()
            agent.checkpoint(f"agent write {i}", files=["src/x.py"], next_step="next")
            took.append((time.perf_counter() - t0) * 1000)
        v.close()
        agent.close()
    took.sort()
    return {"agent_records": size, "import_s": round(imported, 1), "writes": writes,
            "agent_write_ms_p50": round(statistics.median(took), 3),
            "agent_write_ms_p90": round(took[int(0.9 * (len(took) - 1))], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--trees", nargs="+", default=[str(Path(__file__).resolve().parents[1])])
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.writes)), flush=True)
        return
    for size in (int(s) for s in args.sizes.split(",")):
        medians = []
        for tree in args.trees:
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "PYTHONDONTWRITEBYTECODE": "1"}
            res = subprocess.run([sys.executable, __file__, "--child", str(size), "--writes", str(args.writes)],
                                 env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
            row = json.loads(res.stdout.strip().splitlines()[-1])
            row["tree"] = tree
            medians.append(float(row["agent_write_ms_p50"]))
            print(json.dumps(row), flush=True)
        if len(medians) == 2:
            print(json.dumps({"agent_records": size, "ratio_p50": round(medians[1] / medians[0], 3),
                              "delta_ms_p50": round(medians[1] - medians[0], 3)}), flush=True)


if __name__ == "__main__":
    main()
