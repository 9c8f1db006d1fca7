"""A person's write-then-recall while an agent holds the vault-wide index lock (review 28).

Builds a vault of ``--records`` records (memories and decisions of 30 random words), turns the semantic channel on
(``recall_semantic`` 0.1, the default embedder) and builds its table; then, for ``--seconds``, on a copy:

- an agent's shell runs ``CLAUDECODE=1 synapse-nb index rebuild`` in a loop (0.2 s apart);
- an agent at its write quota (600 writes/h) creates and deletes one of its memories every 12 s;
- a person writes a decision and recalls, every 3 s.

Prints the person's write-then-recall median, p90 and max, the agent's delete median, and the rebuilds run and
refused. ``--checkout`` runs the package of another checkout (``PYTHONPATH``) for a before/after pair;
``--scrub-every 0`` makes every agent deletion run the whole-index rewrite again (the lock held for seconds each
time: what a recall then waits).

    python benchmarks/index_lock.py --records 20000 --seconds 150
    git worktree add /tmp/before <commit>; python benchmarks/index_lock.py --checkout /tmp/before
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD = """
import random, sys
from synapse_nb import open_vault
random.seed(1)
words = [f"w{i}" for i in range(5000)] + "deploy database migration auth token cache index server release".split()
v = open_vault(sys.argv[1])
with v.transaction():
    for i in range(int(sys.argv[2])):
        txt = " ".join(random.choice(words) for _ in range(30))
        if i % 2:
            v.decide(f"Decision {i}: {txt}", rationale="because " + txt[:60], tags=["t"])
        else:
            v.remember("project", f"k{i}", f"Memory {i}: {txt}")
v.settings.set("recall_semantic", 0.1)
if v.recall("how do we deploy the database migration?").semantic_off is not None:  # words only: no figure (review 68)
    raise SystemExit("the semantic channel is off: its model cannot be loaded here")
"""
AGENT = """
import statistics, sys, time
from synapse_nb import open_vault
from synapse_nb.store.index import scrub
if sys.argv[3] != "-":
    scrub.AGENT_SCRUB_EVERY = float(sys.argv[3])
a = open_vault(sys.argv[1], actor="agent")
end, took, i = time.time() + float(sys.argv[2]), [], 0
while time.time() < end:
    t0 = time.time()
    m = a.remember("context", f"tmp{i}", f"temporary note {i}")
    t = time.time(); a.memories.delete(m.id); took.append(1000 * (time.time() - t)); i += 1
    time.sleep(max(0.0, 12 - (time.time() - t0)))
print(f"agent deletes n={len(took)} median {statistics.median(took):.0f} ms max {max(took):.0f} ms")
"""
PERSON = """
import statistics, sys, time
from synapse_nb import open_vault
v = open_vault(sys.argv[1]); v.recall("warm up")
end, lat, i = time.time() + float(sys.argv[2]), [], 0
while time.time() < end:
    v.decide(f"person decision {i} about release cadence")
    t = time.time(); v.recall(f"release cadence {i}"); lat.append(1000 * (time.time() - t)); i += 1
    time.sleep(3.0)
lat.sort()
print(f"person write+recall n={len(lat)} median {statistics.median(lat):.0f} ms "
      f"p90 {lat[int(0.9 * len(lat))]:.0f} ms max {lat[-1]:.0f} ms")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=150.0)
    ap.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--scrub-every", default="-", help="the agent's AGENT_SCRUB_EVERY (default: the checkout's)")
    ap.add_argument("--vault", type=Path, help="a vault this script built before (copied, never changed)")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.checkout.resolve())}
    for name in ("CLAUDECODE", "SYNAPSE_ACTOR"):
        env.pop(name, None)
    tmp = Path(tempfile.mkdtemp(prefix="synbench-lock-"))
    built = args.vault or tmp / "built"
    if args.vault is None:
        built.mkdir()
        t = time.time()
        subprocess.run([sys.executable, "-c", BUILD, str(built), str(args.records)], env=env, check=True)
        print(f"built {args.records} records with the semantic channel on in {time.time() - t:.0f} s ({built})")
    work = tmp / "run"
    shutil.copytree(built, work)
    secs = str(args.seconds)
    agent = subprocess.Popen(["nice", sys.executable, "-c", AGENT, str(work), secs, args.scrub_every], env=env)
    person = subprocess.Popen([sys.executable, "-c", PERSON, str(work), secs], env=env)
    cli = [sys.executable, "-m", "synapse_nb", "--vault", str(work), "index", "rebuild"]
    ran = refused = 0
    end = time.time() + args.seconds
    while time.time() < end:
        res = subprocess.run(["nice", *cli], env={**env, "CLAUDECODE": "1"}, capture_output=True, check=False)
        ran += res.returncode == 0
        refused += res.returncode != 0
        time.sleep(0.2)
    person.wait()
    agent.wait()
    print(f"agent rebuilds run {ran}, refused {refused}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
