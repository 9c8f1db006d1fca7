"""Two processes updating the LanceDB index at once (deterministic replays of the interleavings the load found).

Each test pauses process A inside its index update and starts a real process B that writes and then
syncs the index (B must wait for A's index lock), then lets A finish. Afterwards a plain ``sync()``
must leave the index agreeing with SQLite.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import synapse_nb as syn

_B = """
import sys, synapse_nb as syn
v = syn.open_vault(sys.argv[1])
if sys.argv[2] == "update":
    v.memories.update(sys.argv[3], content="third version, written while A stalled")
else:
    v.remember("knowledge", "during", "written while the rebuild stalled")
open(sys.argv[4], "w").write("written")
v.index.sync()  # blocks on the index lock until A is done
"""


def _start_b(vault_dir: Path, action: str, arg: str, tmp: Path) -> subprocess.Popen:
    """Process B: writes, signals, then syncs the index (while A is still inside its own update)."""
    marker = tmp / f"b-{action}.written"
    proc = subprocess.Popen([sys.executable, "-c", _B, str(vault_dir), action, arg, str(marker)])
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() in (None, 0), "process B did not write"
        time.sleep(0.02)
    time.sleep(0.3)  # give B time to reach the index lock
    return proc


def test_sync_racing_another_sync_leaves_no_stale_row(vault_dir: Path, tmp_path: Path) -> None:
    a = syn.open_vault(vault_dir)
    procs: list[subprocess.Popen] = []
    try:
        m = a.remember("knowledge", "racy", "first version of the text")
        a.index.rebuild()
        a.memories.update(m.id, content="second version of the text")
        raw = a.index.raw
        original = raw.upsert

        def slow_upsert(rows):  # A read the outbox and the rows, then stalls before writing
            raw.upsert = original
            procs.append(_start_b(vault_dir, "update", m.id, tmp_path))
            return original(rows)

        raw.upsert = slow_upsert
        a.index.sync()
        assert procs[0].wait(timeout=60) == 0
        a.index.sync()
        report = a.index.check()
        assert report.ok, report
    finally:
        a.close()


def test_rebuild_racing_a_sync_loses_no_row(vault_dir: Path, tmp_path: Path) -> None:
    a = syn.open_vault(vault_dir)
    procs: list[subprocess.Popen] = []
    try:
        a.remember("knowledge", "before", "written before the rebuild")
        a.index.rebuild()
        raw = a.index.raw
        original = raw.rebuild

        def slow_rebuild(rows, **kw):  # A took its snapshot of SQLite, then stalls before writing
            rows = list(rows)
            raw.rebuild = original
            procs.append(_start_b(vault_dir, "remember", "-", tmp_path))
            return original(rows, **kw)

        raw.rebuild = slow_rebuild
        a.index.rebuild()
        assert procs[0].wait(timeout=60) == 0
        a.index.sync()
        report = a.index.check()
        assert report.ok, report
    finally:
        a.close()


def test_recall_survives_a_record_deleted_by_another_process_meanwhile(vault_dir: Path) -> None:
    a, b = syn.open_vault(vault_dir), syn.open_vault(vault_dir)
    try:
        m = a.remember("procedure", "run_migrations", "run migrations with alembic upgrade head")
        a.recall("warm up")
        recaller = a._recaller
        original = recaller._rank

        def then_delete(*args, **kw):  # the vault is ranked, then another process deletes a ranked record
            ranking = original(*args, **kw)
            recaller._rank = original
            b.memories.delete(m.id)
            return ranking

        recaller._rank = then_delete
        r = a.recall("how do we run migrations with alembic")
        assert m.id not in [i.id for i in r.items]
    finally:
        a.close()
        b.close()
