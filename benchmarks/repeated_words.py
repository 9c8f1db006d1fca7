"""A person's recall and write past an agent's records of one word repeated thousands of times (review 75 F1).

Run: ``nice .venv/bin/python benchmarks/repeated_words.py [--records 1000] [--runs 5]``

Prints (asserts nothing; figures go to docs/benchmarks.md): three vaults of the same person's 42 records, each with
``--records`` decisions an agent wrote in its own mind ("scratch"), text and rationale ``"deploy " * 4700`` cut to
32,768 characters (the finding's records), or ``"zebra "`` (a word no query holds: the control):

- ``deploy, capped``: as schema v12 indexes them (each word of a record at most 32 times);
- ``deploy, every occurrence``: the same records indexed as before v12 (the cap's SQL functions made the identity
  while the vault was written: what a vault written by an older synapse_nb held);
- ``zebra, capped``: the control.

For each, alternated, ``--runs`` times (after one round not counted, which reads the files into the page cache): a
fresh process opens the vault and times the person's first recall of
"how do we deploy billing?" (cold: no cache of this process) and then one ``remember`` of the person's (the
duplicate check reads the words' statistics); medians, and the ratio to the control of the same run.
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

import synapse_nb as syn
from synapse_nb.store.sqlite import rankcap_schema

PROMPT = "how do we deploy billing?"
CHILD = """
import json, sys, time
import synapse_nb as syn
t0 = time.perf_counter()
v = syn.open_vault(sys.argv[1])
text = v.recall(sys.argv[2]).text
t1 = time.perf_counter()
v.remember("procedure", f"probe_{time.time_ns()}", "deploy the billing service with make deploy then tag the release")
t2 = time.perf_counter()
print(json.dumps({"recall": t1 - t0, "remember": t2 - t1, "rule": "NEVER pass --force" in text}))
"""


def build(path: Path, word: str, records: int, *, capped: bool) -> float:
    saved = dict(rankcap_schema.RANK_FUNCTIONS)
    if not capped:
        rankcap_schema.RANK_FUNCTIONS.update(synapse_rank_words=lambda t: t, synapse_rank_context=lambda t: t)
    try:
        t0 = time.perf_counter()
        v = syn.open_vault(path)
        v.settings.set("agent_writes_per_hour", 10_000_000)
        with v.transaction():
            for i in range(40):
                v.remember("knowledge", f"fact_{i}", f"billing staging release docker cache item{i}")
        v.remember("procedure", "deploy", "To deploy billing run make deploy-billing; NEVER pass --force on main",
                   tags=["deploy"], priority="high")
        v.decide("Never deploy on Fridays", rationale="incidents")
        v.close()
        a = syn.open_vault(path, actor="agent", mind="scratch")
        text = ((word + " ") * 6000)[:32768]
        done = 0
        while done < records:
            with a.transaction():
                for _ in range(min(500, records - done)):
                    a.decide(text, rationale=text)
            done += 500
        a.close()
        return time.perf_counter() - t0
    finally:
        rankcap_schema.RANK_FUNCTIONS.update(saved)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    for k in ("CLAUDECODE", "GEMINI_CLI", "SYNAPSE_ACTOR", "CODEX_SANDBOX"):
        os.environ.pop(k, None)
    base = Path(tempfile.mkdtemp(prefix="synapse-repeat-bench-"))
    vaults = {"deploy, capped": ("deploy", True), "deploy, every occurrence": ("deploy", False),
              "zebra, capped": ("zebra", True)}
    for name, (word, capped) in vaults.items():
        (base / word / str(capped)).mkdir(parents=True)
        took = build(base / word / str(capped), word, a.records, capped=capped)
        print(f"built {name}: {a.records:,} agent decisions in {took:.1f} s")
    got: dict[str, dict[str, list[float]]] = {n: {"recall": [], "remember": []} for n in vaults}
    rule: dict[str, bool] = {}
    for run in range(a.runs + 1):  # the first round reads the files into the page cache: not counted
        for name, (word, capped) in vaults.items():
            out = subprocess.run([sys.executable, "-c", CHILD, str(base / word / str(capped)), PROMPT],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout)
            if run == 0:
                continue
            got[name]["recall"].append(r["recall"])
            got[name]["remember"].append(r["remember"])
            rule[name] = r["rule"]
    control = {k: statistics.median(got["zebra, capped"][k]) for k in ("recall", "remember")}
    for name in vaults:
        rec, rem = (statistics.median(got[name][k]) for k in ("recall", "remember"))
        print(f"{name:>25}: cold recall {rec:7.3f} s ({rec / control['recall']:5.1f}x the control), "
              f"remember {rem:6.3f} s ({rem / control['remember']:5.1f}x); the person's rule given: {rule[name]}")


if __name__ == "__main__":
    main()
