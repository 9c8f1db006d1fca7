"""Faults: a damaged index, a truncated WAL, a full disk, a read-only vault, schema versions.

Each gives a clear SynapseError (or a warning and a working fallback) and a documented way back;
nothing already committed is lost silently.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.store.sqlite import SCHEMA_VERSION

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _seed(v: syn.Vault, n: int = 20) -> None:
    with v.transaction():
        for i in range(n):
            v.remember("procedure", f"step_{i}", f"run migrations step {i} with alembic", tags=["db"])


@pytest.mark.parametrize("damage", ["delete", "garbage"])
def test_damaged_index_recall_still_answers_warns_and_rebuild_fixes(rvault: syn.Vault, damage: str) -> None:
    _seed(rvault)
    rvault.index.rebuild()
    want = [i.id for i in rvault.recall("run migrations step 3").items]
    idx = rvault.index.path
    if damage == "delete":
        shutil.rmtree(idx)
    else:
        for f in sorted(idx.rglob("*")):
            if f.is_file():
                f.write_bytes(b"\x00garbage" * 8)
    fresh = syn.open_vault(rvault.path)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = fresh.recall("run migrations step 3")
        assert [i.id for i in r.items] == want
        assert not caught  # recall ranks from the store: a damaged index is not even read
        if damage == "garbage":  # the index's own check names a corrupt index
            with pytest.raises(syn.SynapseError):
                fresh.index.check()
        fresh.index.rebuild()
        assert fresh.index.check().ok
        assert [i.id for i in fresh.recall("run migrations step 3").items] == want
    finally:
        fresh.close()


_WRITE_THEN_DIE = """
import os, signal, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
v._store._conn.execute("PRAGMA wal_autocheckpoint = 0")  # keep every commit in the WAL
for i in range(60):
    v.remember("knowledge", f"wal_{i}", f"zqwal{i} committed " + "y" * 300)
    print(i, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_truncated_wal_opens_consistent_with_a_prefix_of_the_commits(vault_dir: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _WRITE_THEN_DIE, str(vault_dir)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    wal = vault_dir / "synapse.db-wal"
    size = wal.stat().st_size
    assert size > 100_000
    with open(wal, "r+b") as f:  # a torn WAL: the last ~40% of its frames never reached the disk
        f.truncate(int(size * 0.6))
    v = syn.open_vault(vault_dir)
    try:
        assert v._store.integrity_check() == "ok"
        keys = sorted(int(m.key.split("_")[1]) for m in v.memories.list())
        assert keys == list(range(len(keys)))  # a prefix of the commit order: no hole, no half record
        assert 0 < len(keys) < 60
        for k in keys:
            assert [m.key for m in v.memories.search(f"zqwal{k}")] == [f"wal_{k}"]
        v.remember("knowledge", "after_recovery", "the vault takes writes again")
    finally:
        v.close()


_FULL_DISK = """
import json, os, resource, signal, sys
import synapse_nb as syn
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)       # a write past the limit fails with EFBIG instead
v = syn.open_vault(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
acked, err, is_syn = [], None, None
for i in range(5000):
    try:
        m = v.remember("knowledge", f"full_{i}", f"zqfull{i} " + "z" * 2000)
        acked.append(m.key)
    except Exception as exc:
        err, is_syn = f"{type(exc).__module__}.{type(exc).__name__}: {exc}", isinstance(exc, syn.SynapseError)
        break
print(json.dumps({"acked": acked, "error": err, "is_synapse": is_syn}))
"""


def test_full_disk_refuses_the_write_clearly_and_keeps_what_was_committed(vault_dir: Path) -> None:
    limit = (vault_dir / "synapse.db").stat().st_size + 400_000
    proc = subprocess.run([sys.executable, "-c", _FULL_DISK, str(vault_dir), str(limit)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["error"] and out["is_synapse"], out["error"]
    assert "StoreError" in out["error"] and "full" in out["error"].lower() and "nothing was changed" in out["error"]
    assert "\n" not in out["error"]
    v = syn.open_vault(vault_dir)
    try:
        assert v._store.integrity_check() == "ok"
        assert sorted(m.key for m in v.memories.list()) == sorted(out["acked"])
    finally:
        v.close()


def test_readonly_open_reads_recalls_and_refuses_writes_untouched(vault_dir: Path) -> None:
    v = syn.open_vault(vault_dir)
    _seed(v)
    v.close()
    before = (vault_dir / "synapse.db").read_bytes()
    ro = syn.open_vault(vault_dir, readonly=True)
    try:
        assert len(ro.memories.list()) == 20
        assert ro.recall("run migrations step 4", session="s1").items
        for write in (lambda: ro.remember("knowledge", "nope", "x"), lambda: ro.decide("nope"),
                      lambda: ro.settings.set("scan_window", 5), lambda: ro.memories.delete("mem_")):
            with pytest.raises(syn.SynapseError) as ei:
                write()
            assert "\n" not in str(ei.value)
        with pytest.raises(syn.StoreError, match="read-only"):
            ro.remember("knowledge", "nope", "x")
    finally:
        ro.close()
    assert (vault_dir / "synapse.db").read_bytes() == before


_RO_FOLDER_RW = """
import json, sys
import synapse_nb as syn
out = {}
try:
    v = syn.open_vault(sys.argv[1])
    out["open"] = "ok"
    try:
        v.remember("knowledge", "nope", "x")
        out["write"] = "accepted"
    except syn.SynapseError as exc:
        out["write"] = f"{type(exc).__name__}: {exc}"
except syn.SynapseError as exc:
    out["open"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""
_RO_FOLDER_RO = """
import json, sys
import synapse_nb as syn
print(json.dumps({"readonly_count": syn.open_vault(sys.argv[1], readonly=True).memories.count()}))
"""


def _run_on_read_only_folder(vault_dir: Path, script: str) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """Root ignores chmod, so as root the folder is bind-mounted read-only in a private mount namespace."""
    v = syn.open_vault(vault_dir)
    _seed(v, 5)
    v.close()
    before = (vault_dir / "synapse.db").read_bytes()
    if os.geteuid() == 0:
        cmd = ["unshare", "-m", "sh", "-c",
               'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" -c "$3" "$1"', "sh",
               str(vault_dir), sys.executable, script]
    else:
        os.chmod(vault_dir, 0o555)
        os.chmod(vault_dir / "synapse.db", 0o444)
        cmd = [sys.executable, "-c", script, str(vault_dir)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(vault_dir, 0o755)
    return proc, before


def test_read_only_folder_refuses_writes_with_one_clear_line(vault_dir: Path) -> None:
    proc, before = _run_on_read_only_folder(vault_dir, _RO_FOLDER_RW)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    refusal = out["write"] if out["open"] == "ok" else out["open"]
    assert refusal.startswith("StoreError") and "\n" not in refusal, out
    assert (vault_dir / "synapse.db").read_bytes() == before


def test_read_only_folder_can_be_read_with_readonly_true(vault_dir: Path) -> None:
    proc, before = _run_on_read_only_folder(vault_dir, _RO_FOLDER_RO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"readonly_count": 5}
    assert (vault_dir / "synapse.db").read_bytes() == before


def test_newer_schema_is_refused_and_the_file_left_untouched(vault_dir: Path) -> None:
    db = vault_dir / "synapse.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = db.read_bytes()
    for readonly in (False, True):
        with pytest.raises(syn.SchemaError, match="upgrade synapse_nb") as ei:
            syn.open_vault(vault_dir, readonly=readonly)
        assert "\n" not in str(ei.value)
    assert db.read_bytes() == before


def test_empty_database_migrates_from_0_to_current_in_one_step(tmp_path: Path) -> None:
    d = tmp_path / ".synapse"
    d.mkdir()
    sqlite3.connect(d / "synapse.db").close()  # user_version 0, no tables
    v = syn.open_vault(d)
    try:
        assert v.status().schema_version == SCHEMA_VERSION
        v.remember("knowledge", "migrated", "works")
    finally:
        v.close()
    with pytest.raises(syn.SchemaError, match="read-only"):  # a migration is never attempted read-only
        e = tmp_path / "e" / ".synapse"
        e.mkdir(parents=True)
        sqlite3.connect(e / "synapse.db").close()
        syn.open_vault(e, readonly=True)


def test_vault_written_by_schema_1_opens_with_all_its_data(tmp_path: Path) -> None:
    """tests/fixtures/vault_schema_v1.db.gz was written by schema 1; every later version must migrate it."""
    d = tmp_path / ".synapse"
    d.mkdir()
    (d / "synapse.db").write_bytes(gzip.decompress((FIXTURES / "vault_schema_v1.db.gz").read_bytes()))
    want = (FIXTURES / "vault_schema_v1.jsonl").read_text(encoding="utf-8").splitlines()
    v = syn.open_vault(d)
    try:
        assert v.status().schema_version == SCHEMA_VERSION
        assert v._store.integrity_check() == "ok"
        assert v.export_jsonl().splitlines()[1:] == want[1:]  # every record, byte for byte (header names the schema)
        assert v.recall("how do we run database migrations").items
        assert v.index.rebuild() > 0 and v.index.check().ok
    finally:
        v.close()
