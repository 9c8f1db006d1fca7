"""What only a person's process may do, against review 45: a watcher (and the hook's lock), team join's effects."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_nb.errors import PermissionDeniedError
from synapse_nb.gitscope import Watcher
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.vault.locate import record_team_url, set_local_aside


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("a.txt", "a\n", "Add a")
    (r.root / ".synapse").mkdir()
    return r


def test_an_agents_watcher_takes_no_lock(repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    lock = repo.root / ".synapse" / "hook.lock"
    watcher = Watcher(repo.root, on_commit=lambda h: None, on_files_changed=lambda p: None, lock_path=lock)
    with pytest.raises(PermissionDeniedError, match="agent's environment"):
        watcher.start()
    assert not watcher.running
    with open(lock, "a+b") as fh:  # free: a person's hook takes it at once
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_held_hook_lock_is_waited_on_within_the_limit_and_its_holder_logged(
        repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "4")
    with open(repo.root / ".synapse" / "hook.lock", "a+b") as fh:  # held by this test's process
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        subprocess.run([sys.executable, "-m", "synapse_nb.gitscope.githook", "post-commit"], cwd=repo.root,
                       check=True, timeout=30)
    log = (repo.root / ".synapse" / "hook.log").read_text()
    assert "LockBusy: hook.lock is held by pid" in log and "timeout" not in log  # said, not a silent time-out
    # waited 3/4 of its 4 s limit (the hook's own count from its start, not this process's clock, which counts the
    # interpreter's start and imports as well: 4.7 s on a busy machine), and gave up within the limit: the hook's
    # own verdict above (a run past it logs "timeout"); its ms, counted after the join, may pass 4000 by a moment
    [line] = log.splitlines()
    took_ms = int(line.split(" ")[2].removesuffix("ms"))
    assert took_ms >= 3000, line


def test_team_joins_effects_are_a_persons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = tmp_path / ".synapse"
    vault.mkdir()
    (vault / "synapse.db").write_bytes(b"db")
    monkeypatch.setenv("CLAUDECODE", "1")
    with pytest.raises(PermissionDeniedError, match="agent's environment"):
        set_local_aside(vault)
    with pytest.raises(PermissionDeniedError, match="agent's environment"):
        record_team_url(vault, "postgresql://evil@127.0.0.1:1/x?project=p")
    assert sorted(p.name for p in vault.iterdir()) == ["synapse.db"]
    monkeypatch.delenv("CLAUDECODE")
    assert record_team_url(vault, "postgresql://team@db/x?project=p").name == "team.toml"
    assert set_local_aside(vault) is not None
