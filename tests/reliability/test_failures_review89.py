"""Failures that lost data or misled (review 89).

1. A purge killed after its commit, before its index scrub was marked owed, left the purged text in the index folder
   with nothing owing its removal: the scrub is now marked owed before the commit, the index scrub runs before the
   store's slow WAL truncate, and a person's next open runs a scrub a person's deletion left owed.
2. ``export_jsonl(dest)`` truncated the previous export in place: a full disk destroyed the last good backup.
3. A read-only open that could not create ``-shm`` read the file ``immutable``, ignoring the commits in its WAL.
4. A full disk at open said "if the file is corrupt ... move it aside to start a new vault"; a read-only index folder
   said "chmod u+rwx".
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.store.index.maintenance import own_index

SECRET = "zqpurgedtok7x"


def _files_holding(folder: Path, token: str) -> list[str]:
    """The files under ``folder`` whose bytes hold ``token`` (LanceDB keeps a deleted row's text in its files)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and token.encode() in p.read_bytes())


def _indexed_vault(vault_dir: Path) -> str:
    """Records, one holding :data:`SECRET`, an index built over them; returns the secret record's id."""
    v = syn.open_vault(vault_dir)
    try:
        with v.transaction():
            for i in range(30):
                v.remember("knowledge", f"k_{i}", f"deploy notes about service {i}")
        m = v.remember("knowledge", "secret", f"{SECRET} the staging password")
        v.index.rebuild()
    finally:
        v.close()
    assert _files_holding(vault_dir / "index", SECRET)
    return m.id


# a purge whose process dies right after the commit: the listeners that would scrub never run (SIGKILL, SIGHUP)
_PURGE_THEN_DIE = """
import os, sys
import synapse_nb as syn
from synapse_nb import purge
from synapse_nb.store.sqlite import SqliteStore
if sys.argv[3] == "after-commit":
    purge.scrub_deleted = lambda *a, **k: os._exit(7)   # killed before any scrub ran
else:
    SqliteStore.scrub = lambda self: os._exit(7)        # killed in the store's scrub (its WAL truncate waits 2 s)
v = syn.open_vault(sys.argv[1])
v.purge(sys.argv[2])
"""


def _purge_and_die(vault_dir: Path, rid: str, where: str) -> None:
    proc = subprocess.run([sys.executable, "-c", _PURGE_THEN_DIE, str(vault_dir), rid, where],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7, proc.stderr[-2000:]
    with sqlite3.connect(f"file:{vault_dir / 'synapse.db'}?mode=ro", uri=True) as c:  # the purge committed
        assert c.execute("SELECT count(*) FROM memories WHERE id = ?", (rid,)).fetchone()[0] == 0


def test_a_purge_killed_after_its_commit_leaves_its_scrub_owed_and_the_next_open_runs_it(vault_dir: Path) -> None:
    rid = _indexed_vault(vault_dir)
    _purge_and_die(vault_dir, rid, "after-commit")
    marker = vault_dir / "index" / "scrub.owed"
    assert marker.is_file() and marker.read_bytes().endswith(b" p\n")  # owed, by a person, before the commit
    assert _files_holding(vault_dir / "index", SECRET)  # the kill came before the scrub
    syn.open_vault(vault_dir).close()  # a person's next open runs it
    assert _files_holding(vault_dir / "index", SECRET) == []
    assert not marker.exists()


def test_the_index_scrub_runs_before_the_stores_slow_wal_truncate(vault_dir: Path) -> None:
    rid = _indexed_vault(vault_dir)
    _purge_and_die(vault_dir, rid, "in-store-scrub")
    assert _files_holding(vault_dir / "index", SECRET) == []  # scrubbed before the process died, no open needed


_AGENT_DELETE_THEN_DIE = """
import os, sys
import synapse_nb as syn
from synapse_nb import purge
purge.scrub_deleted = lambda *a, **k: os._exit(7)   # killed right after the commit
v = syn.open_vault(sys.argv[1], actor="agent")
m = v.remember("knowledge", "agent_note", sys.argv[2] + " agent note")
v.index.sync()
v.memories.delete(m.id)
"""


def test_an_agents_deletion_killed_after_its_commit_stays_owed_for_the_hourly_scrub(vault_dir: Path) -> None:
    _indexed_vault(vault_dir)
    proc = subprocess.run([sys.executable, "-c", _AGENT_DELETE_THEN_DIE, str(vault_dir), "zqagenttok"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7, proc.stderr[-2000:]
    marker = vault_dir / "index" / "scrub.owed"
    lines = marker.read_bytes().splitlines() if marker.exists() else []
    assert len(lines) == 1 and not lines[0].endswith(b" p")  # owed, an agent's: left for the hourly scrub
    syn.open_vault(vault_dir).close()
    assert marker.read_bytes().splitlines() == lines  # a person's open runs a person's owed scrub only


def test_the_marker_is_written_before_the_commit(vault_dir: Path) -> None:
    rid = _indexed_vault(vault_dir)
    v = syn.open_vault(vault_dir)
    try:
        marker = vault_dir / "index" / "scrub.owed"
        at_commit: list[bool] = []
        v._store.on_change(lambda ch: at_commit.append(marker.exists()), before=True)  # heard after the marker's
        v.memories.delete(rid)
        assert at_commit == [True]
        assert _files_holding(vault_dir / "index", SECRET) == [] and not marker.exists()  # then scrubbed, settled
    finally:
        v.close()


# -- 2. an export never destroys the earlier one ----------------------------------------------------------------
_EXPORT_ON_FULL_DISK = """
import json, resource, signal, sys
import synapse_nb as syn
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)       # a write past the limit fails with EFBIG: the disk is full
v = syn.open_vault(sys.argv[1])
v.memories.list()
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
try:
    v.export_jsonl(sys.argv[2])
    print(json.dumps({"error": None}))
except syn.SynapseError as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def test_an_export_that_fails_midway_leaves_the_earlier_export_whole(vault_dir: Path, tmp_path: Path) -> None:
    v = syn.open_vault(vault_dir)
    try:
        for i in range(10):
            v.remember("knowledge", f"k_{i}", f"zqexp{i} " + "x" * 3000)
        dest = tmp_path / "backup.jsonl"
        v.export_jsonl(dest)
        good = dest.read_bytes()
        os.chmod(dest, 0o640)
        for i in range(10, 40):  # the vault grows: the next export is larger than the room left
            v.remember("knowledge", f"k_{i}", f"zqexp{i} " + "x" * 3000)
    finally:
        v.close()
    proc = subprocess.run([sys.executable, "-c", _EXPORT_ON_FULL_DISK, str(vault_dir), str(dest),
                           str(len(good) + 5000)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    err = json.loads(proc.stdout.strip().splitlines()[-1])["error"]
    assert err.startswith("StoreError") and "the earlier file there is untouched" in err and "\n" not in err
    assert dest.read_bytes() == good  # the last good backup, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl", "project"]  # no temporary file left
    v = syn.open_vault(vault_dir)
    try:
        text = v.export_jsonl(dest)  # room again: replaced, whole, its permissions kept
    finally:
        v.close()
    assert dest.read_text(encoding="utf-8") == text and text.count('"content": "zqexp') == 40
    assert dest.stat().st_mode & 0o777 == 0o640


# -- 3. a read-only open reads the commits in the WAL ------------------------------------------------------------
_WRITE_THEN_DIE = """
import os, signal, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
v._store._conn.execute("PRAGMA wal_autocheckpoint = 0")  # keep every commit in the WAL
for i in range(5):
    v.remember("knowledge", f"wal_{i}", f"zqwal{i} acknowledged write")
os.kill(os.getpid(), signal.SIGKILL)
"""
_READ_ONLY_COUNT = """
import json, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1], readonly=True)
print(json.dumps({"keys": sorted(m.key for m in v.memories.list()),
                  "recall": [i.id for i in v.recall("zqwal3 acknowledged").items]}))
"""


def test_a_read_only_open_that_cannot_make_shm_still_reads_the_commits_in_the_wal(vault_dir: Path) -> None:
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    proc = subprocess.run([sys.executable, "-c", _WRITE_THEN_DIE, str(vault_dir)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert (vault_dir / "synapse.db-wal").stat().st_size > 0
    (vault_dir / "synapse.db-shm").unlink()  # SQLite cannot make it again on a read-only folder
    before = {p.name: p.read_bytes() for p in vault_dir.iterdir() if p.is_file()}
    if os.geteuid() == 0:  # root ignores chmod: a read-only bind mount in a private mount namespace
        cmd = ["unshare", "-m", "sh", "-c",
               'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" -c "$3" "$1"', "sh",
               str(vault_dir), sys.executable, _READ_ONLY_COUNT]
    else:
        os.chmod(vault_dir, 0o555)
        cmd = [sys.executable, "-c", _READ_ONLY_COUNT, str(vault_dir)]
    tmp = vault_dir.parent.parent / "tmp"  # the private copy's, never the machine's /tmp
    tmp.mkdir()
    try:
        proc2 = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ, TMPDIR=str(tmp)))
    finally:
        os.chmod(vault_dir, 0o755)
    assert proc2.returncode == 0, proc2.stderr[-2000:]
    out = json.loads(proc2.stdout.strip().splitlines()[-1])
    assert out["keys"] == ["old"] + [f"wal_{i}" for i in range(5)]  # every acknowledged commit
    assert len(out["recall"]) >= 1
    assert {p.name: p.read_bytes() for p in vault_dir.iterdir() if p.is_file()} == before  # nothing written


# -- 4. a full disk is not a damaged file; a read-only index folder needs no chmod --------------------------------
_OPEN_ON_FULL_DISK = """
import json, resource, shutil, signal, sys
import synapse_nb as syn
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
if sys.argv[2] == "full":  # what the disk says when no room is left (the limit below stands for the full disk)
    shutil.disk_usage = lambda p: shutil._ntuple_diskusage(1 << 30, 1 << 30, 0)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))  # no room to make synapse.db-shm
out = {}
for ro in (False, True):
    try:
        syn.open_vault(sys.argv[1], readonly=ro).memories.count()
        out[str(ro)] = "opened"
    except syn.SynapseError as exc:
        out[str(ro)] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@pytest.mark.parametrize("disk", ["full", "room"])
def test_an_open_that_cannot_grow_shm_never_calls_the_file_corrupt(vault_dir: Path, disk: str) -> None:
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "k", "zqfull kept")
    assert not (vault_dir / "synapse.db-shm").exists()
    before = (vault_dir / "synapse.db").read_bytes()
    proc = subprocess.run([sys.executable, "-c", _OPEN_ON_FULL_DISK, str(vault_dir), disk], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    err = out["False"]
    assert err.startswith("StoreError") and "SQLITE_IOERR_SHMSIZE" in err and "nothing was changed" in err, err
    assert "corrupt" not in err and "move it aside" not in err
    if disk == "full":
        assert f"the disk holding {vault_dir} is full" in err and "free space on it and retry" in err
    else:
        assert "does not say the file is damaged" in err
    assert out["True"] == "opened"  # a read-only open reads it (no WAL to ignore)
    assert (vault_dir / "synapse.db").read_bytes() == before


def test_an_index_folder_on_a_read_only_disk_says_so_not_chmod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    index = tmp_path / "index"
    index.mkdir()
    flags = os.statvfs(index).f_flag
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False)  # EROFS for every write
    monkeypatch.setattr(os, "statvfs", lambda p: os.statvfs_result((0,) * 8 + (flags | os.ST_RDONLY, 255)))
    with pytest.raises(syn.IndexError_) as ei:
        own_index(index)
    assert "read-only file system" in str(ei.value) and "remount" in str(ei.value)
    assert "chmod" not in str(ei.value)
