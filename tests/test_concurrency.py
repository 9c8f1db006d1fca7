"""Several processes writing to one vault at once: no lost write, no duplicate, no error reaching a writer."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import synapse_nb as syn
from synapse_nb.store.sqlite import SCHEMA_VERSION

WORKERS = 4
WRITES = 150

_WORKER = textwrap.dedent('''
    import json, os, sys, time
    import synapse_nb as syn

    vault_dir, worker, writes, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    while not os.path.exists(go):          # start all writers together
        time.sleep(0.005)
    v = syn.open_vault(vault_dir, actor="agent" if worker % 2 else "user")
    for i in range(writes):
        kind = i % 5
        if kind == 0:
            r = v.remember("knowledge", f"w{worker}_fact_{i}", f"worker {worker} fact {i}", tags=[f"w{worker}"])
        elif kind == 1:
            r = v.checkpoint(f"worker {worker} step {i}", files=[f"f{i}.py"])
        elif kind == 2:
            r = v.decide(f"worker {worker} decision {i}", rationale="because")
        elif kind == 3:
            r = v.episodes.log(f"task_{worker}", status="success", outcome=f"run {i}")
        else:  # every worker upserts the same agent-owned key: one row in the end, never a duplicate
            r = v.as_agent().remember("context", "shared_counter", f"worker {worker} write {i}")
        print(json.dumps([r.kind, r.id]), flush=True)
    v.close()
''')


def test_parallel_writers(tmp_path: Path) -> None:
    vault_dir = tmp_path / ".synapse"
    syn.open_vault(vault_dir).close()  # created (and migrated) once; writers only open it
    script = tmp_path / "worker.py"
    script.write_text(_WORKER, encoding="utf-8")
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(Path(syn.__file__).parent.parent)}
    env.pop("SYNAPSE_HOME", None)
    procs = [subprocess.Popen([sys.executable, str(script), str(vault_dir), str(w), str(WRITES), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for w in range(WORKERS)]
    time.sleep(0.5)  # let them import
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert err.strip() == "", err  # no error, no warning reached any writer
    acked = [tuple(json.loads(line)) for out, _ in outs for line in out.splitlines()]
    assert len(acked) == WORKERS * WRITES

    with syn.open_vault(vault_dir) as v:
        assert v._store.integrity_check() == "ok"
        exported = [json.loads(x) for x in v.export_jsonl().splitlines()[1:]]
    stored = [(d["kind"], d["id"]) for d in exported]
    assert len(stored) == len(set(stored))  # exactly once
    assert not (set(acked) - set(stored)), "an acknowledged write is missing"
    per_worker_rounds = WRITES // 5
    counts = {k: sum(1 for d in exported if d["kind"] == k) for k in ("memory", "checkpoint", "decision", "episode")}
    assert counts == {"memory": WORKERS * per_worker_rounds + 1, "checkpoint": WORKERS * per_worker_rounds,
                      "decision": WORKERS * per_worker_rounds, "episode": WORKERS * per_worker_rounds}
    shared_rows = [d for d in exported if d.get("key") == "shared_counter"]
    assert len(shared_rows) == 1 and shared_rows[0]["content"].endswith(f"write {WRITES - 1}")
    # every FTS index agrees with its table after the storm
    con = sqlite3.connect(vault_dir / "synapse.db")
    try:
        for table in ("memories", "checkpoints", "decisions", "episodes"):
            con.execute(f"INSERT INTO {table}_fts({table}_fts, rank) VALUES ('integrity-check', 1)")
        assert con.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'fact'").fetchone()[0] == \
            WORKERS * per_worker_rounds
    finally:
        con.close()


def test_parallel_first_open_migrates_once(tmp_path: Path) -> None:
    """Writers racing to create a brand-new vault: one migrates, the others wait and open it."""
    vault_dir = tmp_path / "fresh" / ".synapse"
    vault_dir.parent.mkdir()  # the project folder exists; the vault does not yet
    script = tmp_path / "w.py"
    script.write_text(_WORKER, encoding="utf-8")
    go = tmp_path / "go"
    go.touch()
    env = {**os.environ, "PYTHONPATH": str(Path(syn.__file__).parent.parent)}
    procs = [subprocess.Popen([sys.executable, str(script), str(vault_dir), str(w), "10", str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for w in range(WORKERS)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    with syn.open_vault(vault_dir) as v:
        assert v._store.integrity_check() == "ok"
        assert v.status().schema_version == SCHEMA_VERSION
        assert v.checkpoints.count() == WORKERS * 2
