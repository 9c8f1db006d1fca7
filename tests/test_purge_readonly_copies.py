"""A purge removes this Unix user's private copies read-only opens keep of the vault (a twenty-second pass; a weakness
left by review 92's reuse of those copies).

A read-only open where SQLite cannot read the WAL in place (no ``-shm`` on a read-only mount) reads a merged copy of
the vault kept in ``$TMPDIR/synapse-ro-copies-<uid>`` (synapse_nb/store/sqlite/readonly_copy.py). A writable open
removed the vault's copies, but a person's handle opened before the copy was made (a read-only open racing it, a
notebook kept open) then purged a record, said "caches scrubbed", and the copy kept the purged text until the next
read-only open or an hour. Now a deletion's and a purge's scrub removes every copy this user keeps of the vault's
file and of any file at its path. Each test fails without the change.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.store.sqlite import connect as sqlite_connect
from synapse_nb.store.sqlite import readonly_copy
from synapse_nb.store.sqlite.connect import connect

SECRET = b"zqpurgedsecret4242"
#: a person's write left in the WAL by a process killed before its checkpoint (the -shm then goes: a read-only
#: mount's read-only opens cannot read the WAL in place, and keep a merged copy)
_WRITE_THEN_DIE = """
import os, signal, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
v._store._conn.execute("PRAGMA wal_autocheckpoint = 0")
print(v.remember("knowledge", "leak", sys.argv[2] + " was pasted into the chat").id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture()
def copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    return tmpdir / f"synapse-ro-copies-{os.getuid()}"


def _holding(folder: Path) -> list[str]:
    """The files under the copies folder that hold the secret's bytes."""
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and SECRET in p.read_bytes())


def _read_only_copy(db: Path) -> None:
    """What a read-only open on a read-only mount does while no ``-shm`` is there: make and keep a merged copy."""
    shm = db.with_name(db.name + "-shm")
    aside = db.with_name("shm.aside")
    if shm.exists():
        shm.rename(aside)  # (the person's open handle keeps its own mapping of it)
    try:
        readonly_copy.open_copy(db, db.with_name(db.name + "-wal"), connect).close()
    finally:
        if aside.exists():
            aside.rename(shm)


def _person_with_secret(project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[syn.Vault, str, Path]:
    """A person's handle opened before a read-only open kept its copy (the copy landed after the open's clean-up),
    and the id of the memory holding the secret."""
    project.mkdir()
    proc = subprocess.run([sys.executable, "-c", _WRITE_THEN_DIE, str(project), SECRET.decode()],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    db = project / ".synapse" / "synapse.db"
    db.with_name("synapse.db-shm").unlink()
    with monkeypatch.context() as m:  # a read-only open racing the person's open: its copy lands after the clean-up
        m.setattr(sqlite_connect, "forget", lambda *a, **kw: None)
        v = syn.open_vault(project)
    return v, proc.stdout.split()[0], db


def test_a_purge_leaves_no_read_only_copy_holding_the_text(tmp_path: Path, copies: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    v, mid, db = _person_with_secret(tmp_path / "project", monkeypatch)
    _read_only_copy(db)
    assert _holding(copies)  # the copy a read-only open keeps holds the text
    report = v.purge(mid)
    assert "caches scrubbed" in str(report)
    assert _holding(copies) == []  # was the kept copy, until the next read-only open or the hour
    v.close()


def test_every_copy_of_the_vaults_path_goes_also_one_of_a_file_replaced_since(tmp_path: Path, copies: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy kept of the vault's file before it was replaced at its path (a restore: another inode) holds what that
    file held; the purge of the record in the file there now removes it too."""
    v, mid, db = _person_with_secret(tmp_path / "project", monkeypatch)
    _read_only_copy(db)
    v.close()
    restored = db.with_name("restored.db")
    shutil.copyfile(db, restored)  # the vault restored from a backup of itself: the same records, another file
    os.replace(restored, db)
    other = tmp_path / "other"  # another vault's copy stays
    other.mkdir()
    with syn.open_vault(other) as o:
        o.remember("knowledge", "unrelated", "the orders service stores its data in postgres")
        _read_only_copy(other / ".synapse" / "synapse.db")
    with monkeypatch.context() as m:
        m.setattr(sqlite_connect, "forget", lambda *a, **kw: None)
        v = syn.open_vault(tmp_path / "project")
    kept = sorted(p.name for p in copies.iterdir())
    assert len(_holding(copies)) == 1 and len(kept) == 2
    v.purge(mid)
    assert _holding(copies) == [] and len(list(copies.iterdir())) == 1  # the other vault's copy is kept
    v.close()
