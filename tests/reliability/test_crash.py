"""Crash safety: ``kill -9`` a writer at random points; the vault opens, holds together and loses no acknowledged write.

Bounded form: 10 kills of a writer on one vault (state accumulates across kills), 3 kills during an index
sync, and one deterministic kill in the middle of a LanceDB update. ``benchmarks/reliability.py`` does 100+.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import harness as h

import synapse_nb as syn

KILLS = 10


def kill_writer_runs(vault_dir: Path, work: Path, runs: int, seed: int = 0) -> list[h.Report]:
    """Start a writer, let it acknowledge a random number of writes, SIGKILL it, verify; ``runs`` times."""
    rng = random.Random(seed)
    journals: list[Path] = []
    reports = []
    for run in range(runs):
        j = work / f"crash{run}"
        journals.append(j)
        p = h.spawn("write", vault_dir, j, seed=10_000 + run, n_ops=100_000, worker=run)
        assert h.wait_for_acks(j, rng.randint(1, 30)), Path(f"{j}.log").read_text()[-2000:]
        time.sleep(rng.random() * 0.02)
        p.send_signal(signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
        reports.append(h.verify_vault(vault_dir, journals, check_index=False))
    return reports


def test_kill_9_writer_at_random_points(vault_dir: Path, tmp_path: Path) -> None:
    reports = kill_writer_runs(vault_dir, tmp_path, KILLS)
    for i, rep in enumerate(reports):
        assert rep.integrity == "ok", i
        assert rep.problems == [], (i, rep.problems[:5])
    assert reports[-1].acked >= KILLS
    v = syn.open_vault(vault_dir)
    try:  # the index catches up with everything the killed writers committed
        v.index.sync()
        assert v.index.check().ok
    finally:
        v.close()


def _filled(vault_dir: Path, n: int = 300) -> None:
    v = syn.open_vault(vault_dir)
    v.index.rebuild()
    with v.transaction():
        for i in range(n):
            v.remember("knowledge", f"fact_{i}", f"fact {i} about deployment number {i % 17}", tags=[f"t{i % 5}"])
    v.close()


def test_kill_9_during_index_sync_is_detected_and_repaired(vault_dir: Path, tmp_path: Path) -> None:
    _filled(vault_dir)
    rng = random.Random(7)
    for run in range(3):
        j = tmp_path / f"sync{run}"
        p = h.spawn("sync", vault_dir, j, seed=run, n_ops=50)
        assert h.wait_for_acks(j, 1)
        time.sleep(rng.random() * 0.3)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
        v = syn.open_vault(vault_dir)
        try:
            assert v._store.integrity_check() == "ok"
            v.index.check(repair=True)
            assert v.index.check().ok
            v.remember("knowledge", f"after_kill_{run}", f"written after sync kill {run}")
        finally:
            v.close()
    v = syn.open_vault(vault_dir)
    try:
        q = "fact about deployment number 3"
        top = v.recall(q).items
        assert top and top[0].id in [h.id for h in v.index.search(q, k=20)]  # the repaired index finds it too
    finally:
        v.close()


_HALF_UPSERT = """
import os, signal, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
raw = v.index.raw
original = raw.upsert
def half_then_die(rows):
    original(rows[: len(rows) // 2])   # half of the update reaches LanceDB ...
    os.kill(os.getpid(), signal.SIGKILL)  # ... then the process dies
raw.upsert = half_then_die
v.index.sync()
"""


def test_interrupted_index_update_is_detected_then_sync_repairs_it(vault_dir: Path) -> None:
    _filled(vault_dir, 12)
    proc = subprocess.run([sys.executable, "-c", _HALF_UPSERT, str(vault_dir)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    v = syn.open_vault(vault_dir)
    try:
        report = v.index.check()
        assert not report.ok and len(report.missing) == 6  # detected: the half that never arrived
        assert v.index.sync() == 12  # the outbox still holds the whole update: the next sync applies it
        assert v.index.check().ok
    finally:
        v.close()


def test_kill_9_mid_transaction_leaves_no_half_record(vault_dir: Path) -> None:
    """A process killed while its big transaction is open: none of it is visible, the vault opens clean."""
    script = ("import os, signal, sys\nimport synapse_nb as syn\nv = syn.open_vault(sys.argv[1])\n"
              "with v.transaction():\n    for i in range(200):\n"
              "        v.remember('knowledge', f'half_{i}', f'zqhalf{i} never committed', tags=['half'])\n"
              "        v.decide(f'zqhalfdec{i} never committed', tags=['half'])\n"
              "    os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(vault_dir)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert (vault_dir / "synapse.db-wal").exists()  # the crash left the WAL behind
    v = syn.open_vault(vault_dir)
    try:
        assert v._store.integrity_check() == "ok"
        assert v.memories.count() == 0 and v.decisions.count() == 0
        assert list(v.memories.by_tag("half")) == [] and list(v.memories.search("zqhalf1")) == []
    finally:
        v.close()
