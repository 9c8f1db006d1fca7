"""A read-only open that cannot read the WAL in place reads a private copy made for that open, never one kept for
the next (review 94, F1: the twenty-first pass kept the copy in ``$TMPDIR/synapse-ro-copies-<uid>``, where an agent of
the same Unix user rewrote it, and every later read of a vault the read-only mount protected showed the agent's text
as a person's approved lesson).

Review 89's test (test_failures_review89.py) proves no acknowledged commit is dropped; these prove nothing this user
can write stands in for the vault, and nothing of the vault stays in ``TMPDIR``.
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
keys, texts = [], []
for _ in range(int(sys.argv[2])):
    v = syn.open_vault(sys.argv[1], readonly=True)
    keys.append(sorted(m.key for m in v.memories.list()))
    texts.append(sorted(m.content for m in v.memories.list()))
    v.close()
print(json.dumps({"keys": keys, "texts": texts, "copied": copied}))
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


def _forge_every_database_under(folder: Path) -> int:
    """What an agent of this Unix user does to the read-only copies it can reach: rewrite each one's memories."""
    forged = 0
    for p in folder.rglob("*") if folder.is_dir() else ():
        if p.is_file():
            with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(p)) as db:
                db.execute("UPDATE memories SET content = 'zqforged by the agent'")
                db.commit()
                forged += 1
    return forged


def test_every_read_only_open_copies_the_vault_itself_and_leaves_nothing(vault_dir: Path, tmp_path: Path) -> None:
    tmpdir, writer_tmp = tmp_path / "tmp", tmp_path / "writer-tmp"
    tmpdir.mkdir()
    writer_tmp.mkdir()
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    _commit_and_die(vault_dir, "a", 3, writer_tmp)
    want = ["a_0", "a_1", "a_2", "old"]
    first = _read_only(vault_dir, tmpdir, opens=3)
    assert first["keys"] == [want] * 3  # every acknowledged commit, at every open
    assert first["copied"] == ["synapse.db", "synapse.db-wal"] * 3  # from the vault, at each open
    assert sorted(tmpdir.iterdir()) == []  # nothing kept: nothing for another process to rewrite

    # review 94, F1: an agent of this user rewrites whatever copy it can reach; the next read (another process: the
    # next prompt's hook, the person's CLI) reads the vault, not the agent's text
    assert _forge_every_database_under(tmpdir) == 0
    again = _read_only(vault_dir, tmpdir, opens=1)
    assert again["keys"] == [want] and "zqforged by the agent" not in again["texts"][0]


def test_copies_an_earlier_version_kept_are_never_read_and_are_removed(vault_dir: Path, tmp_path: Path) -> None:
    """The twenty-first pass's kept copies (one an agent rewrote, one holding a text since purged): never read, and
    removed by the next open, read-only or writable."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    _commit_and_die(vault_dir, "a", 2, tmpdir)
    kept = tmpdir / f"synapse-ro-copies-{os.getuid()}"
    kept.mkdir(mode=0o700)
    planted = kept / "0123456789abcdef01234567-0123456789abcdef01234567.db"
    shutil.copyfile(vault_dir / "synapse.db", planted)
    assert _forge_every_database_under(kept) == 1
    out = _read_only(vault_dir, tmpdir, opens=1)
    assert out["keys"] == [["a_0", "a_1", "old"]] and "zqforged by the agent" not in out["texts"][0]
    assert not kept.exists()


def test_a_copy_made_while_a_writer_began_is_read_by_that_open_and_removed(
        vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``-shm`` that appears while the copy is made says a writer began: that open reads its copy, which is
    removed at once like every other, and the next open reads the vault in place."""
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
    assert sorted(tmpdir.iterdir()) == []


def test_no_temporary_folder_is_a_clear_error(vault_dir: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with syn.open_vault(vault_dir) as v:
        v.remember("knowledge", "old", "zqold committed long ago")
    _commit_and_die(vault_dir, "a", 1, tmp_path)

    def none(*a: Any, **kw: Any) -> str:
        raise FileNotFoundError(2, "No usable temporary directory found")

    monkeypatch.setattr(tempfile, "mkdtemp", none)
    monkeypatch.setattr(tempfile, "gettempdir", none)
    with pytest.raises(syn.StoreError, match=r"no private copy could be made .*open the vault once where it can be"):
        open_copy(vault_dir / "synapse.db", vault_dir / "synapse.db-wal", connect)
