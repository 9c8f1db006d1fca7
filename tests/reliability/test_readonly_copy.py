"""A read-only open that cannot read the WAL in place reuses one private copy while the vault is unchanged (a carried
weakness of review 89's fix, review 92: every such open copied the whole vault into ``TMPDIR``).

Review 89's test (test_failures_review89.py) proves no acknowledged commit is dropped; these prove the copy is made
once, kept only in this user's own private folder, made anew when the vault changes, and removed when it is stale.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.store.sqlite.connect import connect
from synapse_nb.store.sqlite.readonly_copy import open_copy

_WRITE_THEN_DIE = """
import os, signal, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
v._store._conn.execute("PRAGMA wal_autocheckpoint = 0")  # keep every commit in the WAL
for i in range(int(sys.argv[3])):
    v.remember("knowledge", f"{sys.argv[2]}_{i}", f"zq{sys.argv[2]}{i} acknowledged write")
os.kill(os.getpid(), signal.SIGKILL)
"""
# every open of the process reads the vault read-only; the files each copied, by name
_READ_ONLY = """
import json, shutil, sys
import synapse_nb as syn
copied = []
real = shutil.copyfile
def counted(src, dst, *a, **kw):
    copied.append(str(src).rsplit("/", 1)[-1])
    return real(src, dst, *a, **kw)
shutil.copyfile = counted
keys = []
for _ in range(int(sys.argv[2])):
    v = syn.open_vault(sys.argv[1], readonly=True)
    keys.append(sorted(m.key for m in v.memories.list()))
    v.close()
print(json.dumps({"keys": keys, "copied": copied}))
"""


def _commit_and_die(vault_dir: Path, prefix: str, n: int, tmp: Path) -> None:
    """``n`` commits left in the WAL by a writer killed before its checkpoint, and no ``-shm`` (SQLite cannot make
    it again on a read-only folder)."""
    proc = subprocess.run([sys.executable, "-c", _WRITE_THEN_DIE, str(vault_dir), prefix, str(n)],
                          capture_output=True, timeout=120, env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert (vault_dir / "synapse.db-wal").stat().st_size > 0
    (vault_dir / "synapse.db-shm").unlink()


def _read_only(vault_dir: Path, tmpdir: Path, opens: int) -> dict[str, Any]:
    """``opens`` read-only opens in one process, on a read-only folder, its ``TMPDIR`` ``tmpdir``."""
    env = dict(os.environ, TMPDIR=str(tmpdir))
    if os.geteuid() == 0:  # root ignores chmod: a read-only bind mount in a private mount namespace
        cmd = ["unshare", "-m", "sh", "-c",
               'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" -c "$3" "$1" "$4"', "sh",
               str(vault_dir), sys.executable, _READ_ONLY, str(opens)]
    else:
        os.chmod(vault_dir, 0o555)
        cmd = [sys.executable, "-c", _READ_ONLY, str(vault_dir), str(opens)]
    before = {p.name: p.read_bytes() for p in vault_dir.iterdir() if p.is_file()}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    finally:
        os.chmod(vault_dir, 0o755)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {p.name: p.read_bytes() for p in vault_dir.iterdir() if p.is_file()} == before  # nothing written
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_a_read_only_open_reuses_one_private_copy_while_the_vault_is_unchanged(
        vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmpdir, writer_tmp = tmp_path / "tmp", tmp_path / "writer-tmp"
    tmpdir.mkdir()
    writer_tmp.mkdir()
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    _commit_and_die(vault_dir, "a", 3, writer_tmp)
    want = ["a_0", "a_1", "a_2", "old"]
    first = _read_only(vault_dir, tmpdir, opens=3)
    assert first["keys"] == [want] * 3  # every acknowledged commit, at every open
    assert first["copied"] == ["synapse.db", "synapse.db-wal"]  # copied once, not at each open (was 6 files)
    folder = tmpdir / f"synapse-ro-copies-{os.getuid()}"
    kept = sorted(folder.iterdir())
    assert [p.suffix for p in kept] == [".db"] and sorted(tmpdir.iterdir()) == [folder]
    assert folder.stat().st_mode & 0o777 == 0o700 and kept[0].stat().st_mode & 0o777 == 0o600

    # another process (the next prompt's hook) reads the same copy: nothing copied
    assert _read_only(vault_dir, tmpdir, opens=1) == {"keys": [want], "copied": []}

    # a folder others may write is never used: each open copies for itself, as before, and leaves nothing
    folder.chmod(0o777)
    try:
        alone = _read_only(vault_dir, tmpdir, opens=2)
    finally:
        folder.chmod(0o700)
    assert alone["keys"] == [want] * 2 and len(alone["copied"]) == 4 and sorted(folder.iterdir()) == kept

    # the vault changed: a new copy, the stale one removed
    _commit_and_die(vault_dir, "b", 1, writer_tmp)
    later = _read_only(vault_dir, tmpdir, opens=2)
    assert later["keys"] == [sorted([*want, "b_0"])] * 2 and len(later["copied"]) == 2
    now = sorted(folder.iterdir())
    assert len(now) == 1 and now != kept

    # a writable open (a person's purge among them) leaves no copy of the vault behind
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    syn.open_vault(vault_dir).close()
    assert sorted(folder.iterdir()) == []

    def no_temporary_folder() -> str:
        raise FileNotFoundError("No usable temporary directory found")

    monkeypatch.setattr(tempfile, "gettempdir", no_temporary_folder)  # a sandbox with none: opens as before
    with syn.open_vault(vault_dir, readonly=True) as v:
        assert sorted(m.key for m in v.memories.list()) == sorted([*want, "b_0"])
    syn.open_vault(vault_dir).close()


def test_a_copy_made_while_a_writer_began_is_not_kept(vault_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``-shm`` that appears while the copy is made says a writer began: the copy may hold a state no commit had;
    that open reads it (removed at once, as before), and the next open reads the vault in place."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    _commit_and_die(vault_dir, "a", 2, tmpdir)
    db, wal = vault_dir / "synapse.db", vault_dir / "synapse.db-wal"
    real = shutil.copyfile

    def writer_begins(src: Any, dst: Any, *a: Any, **kw: Any) -> Any:
        (vault_dir / "synapse.db-shm").touch()
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    monkeypatch.setattr(shutil, "copyfile", writer_begins)
    conn = open_copy(db, wal, connect)
    try:
        keys = sorted(r[0] for r in conn.execute("SELECT key FROM memories"))
    finally:
        conn.close()
    assert keys == ["a_0", "a_1", "old"]
    assert [p.name for p in tmpdir.iterdir()] == [f"synapse-ro-copies-{os.getuid()}"]
    assert sorted((tmpdir / f"synapse-ro-copies-{os.getuid()}").iterdir()) == []  # nothing kept


def test_a_kept_copy_that_cannot_be_read_is_made_anew(vault_dir: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    _commit_and_die(vault_dir, "a", 2, tmpdir)
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    db, wal = vault_dir / "synapse.db", vault_dir / "synapse.db-wal"
    open_copy(db, wal, connect).close()
    (kept,) = (tmpdir / f"synapse-ro-copies-{os.getuid()}").iterdir()
    kept.write_bytes(b"not a database" * 100)  # damaged (the disk, another process of this user)
    conn = open_copy(db, wal, connect)
    try:
        assert sorted(r[0] for r in conn.execute("SELECT key FROM memories")) == ["a_0", "a_1", "old"]
    finally:
        conn.close()
    with contextlib.closing(sqlite3.connect(f"file:{kept}?mode=ro", uri=True)) as again:  # made anew, kept
        assert again.execute("SELECT count(*) FROM memories").fetchone()[0] == 3
