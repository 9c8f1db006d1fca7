"""The restore pack past a flood of agent decisions: a person's five latest decisions found behind many newer ones.

Run: ``nice .venv/bin/python benchmarks/restore_pack.py [--agent-decisions 100000] [--runs 20]``

Prints (asserts nothing; figures go to docs/benchmarks.md): for one vault holding five decisions of a person and then
``--agent-decisions`` newer agent decisions (stored in one transaction), the median time of
``vault.decisions.list(limit=5, source="user")`` and of ``vault.restore_pack()``, with the partial index
``decisions_user`` and with it dropped for the measurement (alternated, A B A B), and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import synapse_nb as syn
from synapse_nb.models import Decision
from synapse_nb.store.sqlite.schema import INDICES


def timed(call: object, runs: int) -> float:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()  # type: ignore[operator]
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent-decisions", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    v = syn.open_vault(tempfile.mkdtemp(prefix="synapse-pack-bench-"))
    for i in range(5):
        v.decide(f"the person's decision {i}")
    store = v._store
    with store.transaction():
        for i in range(a.agent_decisions):
            ts = f"2027-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1_000_000:06d}Z"
            store.decisions.insert(Decision(id=f"dec_{i:012x}", mind="default", created_at=ts, updated_at=ts,
                                            decision=f"agent decision {i}", source="agent"))
    found = [d.decision for d in v.decisions.list(limit=5, source="user")]
    expected = [f"the person's decision {i}" for i in range(4, -1, -1)]
    print(f"vault: 5 decisions of a person, then {a.agent_decisions:,} newer agent decisions; "
          f"the person's found: {found == expected}")
    rows = {"with": ([], []), "without": ([], [])}
    for _ in range(3):
        for label in ("with", "without"):
            if label == "without":
                store.query("DROP INDEX IF EXISTS decisions_user")
            else:
                store.query(INDICES["decisions_user"])
            rows[label][0].append(timed(lambda: v.decisions.list(limit=5, source="user"), a.runs))
            rows[label][1].append(timed(v.restore_pack, max(3, a.runs // 4)))
    for label, (lists, packs) in rows.items():
        print(f"{label:>7} decisions_user: decisions.list(source='user') {statistics.median(lists):.2f} ms, "
              f"restore_pack {statistics.median(packs):.1f} ms (medians)")
    ratio = statistics.median(rows["without"][1]) / statistics.median(rows["with"][1])
    print(f"restore_pack without the index / with it: {ratio:.0f}x")
    v.close()


if __name__ == "__main__":
    main()
