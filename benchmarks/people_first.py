"""What "people first" costs recall where agents wrote nearly everything.

Run: ``nice .venv/bin/python benchmarks/people_first.py [--records 100000] [--queries 60] [--rounds 6]``

Prints (asserts nothing; figures go to docs/benchmarks.md): for one vault of ``--records`` decisions and checkpoints
of four random words each out of 30 (an agent's 48 of every 50, a person's the other two; stored in one
transaction), the median recall time of ``--queries`` two-word queries with the rule (a person's record as relevant
takes a kept agent record's place in its kind's top five, ``recall/scoring.py``) and with it off (no kept record
yields: the rule's work is skipped), alternated A B A B over ``--rounds`` rounds, the median per-round ratio, and
in how many queries a person's record took an agent record's place.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

import synapse_nb as syn
from synapse_nb.models import Checkpoint, Decision, Record
from synapse_nb.recall import scoring

WORDS = ("deploy release cache api server database config flag merge review test build docs error log user branch "
         "version task setup helm chart canary rollback metrics alert queue worker retry timeout").split()


def never(rec: Record) -> bool:  # the rule off: no kept record gives its place
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    rng = random.Random(0)
    v = syn.open_vault(tempfile.mkdtemp(prefix="synapse-people-first-"))
    store = v._store
    with store.transaction():
        for i in range(a.records):
            ts = f"2027-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1_000_000:06d}Z"
            text = f"{' '.join(rng.sample(WORDS, 4))} {i}"
            who = "user" if i % 50 in (0, 1) else "agent"
            if i % 2:
                store.decisions.insert(Decision(id=f"dec_{i:012x}", mind="default", created_at=ts, updated_at=ts,
                                                decision=text, source=who))
            else:
                store.checkpoints.insert(Checkpoint(id=f"ckp_{i:012x}", mind="default", created_at=ts, updated_at=ts,
                                                    doing=text, source=who, origin=who))
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(a.queries)]
    for q in queries:  # warm: the structure arrays, each word's postings
        v.recall(q)
    rule = scoring.yields_place
    times: dict[str, list[float]] = {"on": [], "off": []}
    ratios = []
    for r in range(a.rounds):
        got: dict[str, list[float]] = {}
        for label in (("on", "off") if r % 2 == 0 else ("off", "on")):
            scoring.yields_place = rule if label == "on" else never
            got[label] = []
            for q in queries:
                t0 = time.perf_counter()
                v.recall(q)
                got[label].append((time.perf_counter() - t0) * 1000)
            times[label] += got[label]
        ratios.append(statistics.median(got["on"]) / statistics.median(got["off"]))
    scoring.yields_place = rule
    gave = sum(any(row.bar == "person" for row in v.recall(q).explain()) for q in queries)
    print(f"vault: {a.records:,} decisions and checkpoints, two in 50 a person's; {a.queries} two-word queries")
    for label in ("on", "off"):
        ms = sorted(times[label])
        p90 = ms[int(len(ms) * 0.9)]
        print(f"people first {label:>3}: recall p50 {statistics.median(ms):.2f} ms, p90 {p90:.2f} ms")
    print(f"on / off, median per-round ratio: {statistics.median(ratios):.2f}x; a person's record took an agent "
          f"record's place in {gave} of {a.queries} queries")
    v.close()


if __name__ == "__main__":
    main()
