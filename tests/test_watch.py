"""The git-directory watcher (synapse_nb.gitscope.watch) on real repositories."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from synapse_nb.errors import ConflictError, GitError, ValidationError
from synapse_nb.gitscope import HeadState, Watcher
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.gitscope.watch import changed_paths


def wait_for(cond: Callable[[], bool], limit: float = 10.0) -> bool:
    """Wait for a condition set by watcher threads (a bound for safety, not a timing assertion)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("a.txt", "a\n", "Add a")
    return r


class Recorder:
    def __init__(self) -> None:
        self.commits: list[HeadState] = []
        self.batches: list[list[str]] = []

    def watcher(self, repo: ScratchRepo, tmp_path: Path, **kw: object) -> Watcher:
        return Watcher(
            repo.root,
            on_commit=self.commits.append,
            on_files_changed=self.batches.append,
            lock_path=tmp_path / "watch.lock",
            debounce=0.05,
            **kw,  # type: ignore[arg-type]
        )


def test_check_logic_counts_new_files_and_resets_after_commit(repo: ScratchRepo, tmp_path: Path) -> None:
    rec = Recorder()
    repo.write("pre-existing.txt", "x\n")  # changed before start: not new
    w = rec.watcher(repo, tmp_path, every_files=3)
    w.start()
    try:
        for name in ["b.txt", "c.txt", "d e.txt", "ü.txt"]:
            repo.write(name, "x\n")
        repo.write("a.txt", "changed\n")
        w.check()
        assert rec.batches == [sorted(["a.txt", "b.txt", "c.txt"])]  # first 3 in status order, then sorted
        w.check()  # nothing new
        assert len(rec.batches) == 1 and rec.commits == []
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", "Many files")
        w.check()
        assert rec.commits == [HeadState("main", repo.head_sha())]
        repo.write("a.txt", "again\n")  # committed, changed again: counts again
        repo.write("f.txt", "x\n")
        w.check()
        # "d e.txt" and "ü.txt" were still pending (counted once, before the commit)
        assert rec.batches[-1] == sorted(["a.txt", "d e.txt", "ü.txt"])
        assert len(rec.batches) == 2
    finally:
        w.stop()


def test_real_events_fire_on_commit_and_on_files(repo: ScratchRepo, tmp_path: Path) -> None:
    rec = Recorder()
    with rec.watcher(repo, tmp_path, every_files=2):
        sha = repo.commit_file("b.txt", "b\n", "Add b")
        assert wait_for(lambda: any(c.commit == sha for c in rec.commits))
        repo.write("c.txt", "c\n")
        repo.write("d.txt", "d\n")
        repo.git("add", "c.txt", "d.txt")  # index changes: status is read
        assert wait_for(lambda: rec.batches == [["c.txt", "d.txt"]])
        repo.git("checkout", "-q", "-b", "topic")
        assert wait_for(lambda: rec.commits[-1].branch == "topic")


def test_linked_worktree_sees_its_own_head(repo: ScratchRepo, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "side", str(wt))
    rec = Recorder()
    w = Watcher(wt, rec.commits.append, rec.batches.append, lock_path=tmp_path / "l", debounce=0.05)
    with w:
        sha = ScratchRepo(wt).commit_file("s.txt", "s\n", "Side")
        assert wait_for(lambda: bool(rec.commits) and rec.commits[-1] == HeadState("side", sha))


def test_single_instance_lock(repo: ScratchRepo, tmp_path: Path) -> None:
    rec = Recorder()
    first = rec.watcher(repo, tmp_path)
    second = rec.watcher(repo, tmp_path)
    first.start()
    try:
        with pytest.raises(ConflictError, match="another watcher"):
            second.start()
        assert not second.running
        with pytest.raises(ConflictError, match="already running"):
            first.start()
    finally:
        first.stop()
    second.start()  # the lock was released
    second.stop()
    second.stop()  # idempotent


def test_default_lock_lives_in_the_vault_folder(repo: ScratchRepo) -> None:
    w = Watcher(repo.root, print, print)
    assert w.lock_path == repo.root.resolve() / ".synapse" / "watch.lock"


def test_callback_errors_are_logged_not_fatal(
    repo: ScratchRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[HeadState] = []

    def boom(state: HeadState) -> None:
        seen.append(state)
        raise RuntimeError("callback bug")

    w = Watcher(repo.root, boom, print, lock_path=tmp_path / "l", debounce=0.05)
    with caplog.at_level(logging.INFO, logger="synapse_nb.watch"), w:
        repo.commit_file("b.txt", "b\n", "Add b")
        w.check()
        repo.commit_file("c.txt", "c\n", "Add c")
        w.check()
    assert len({s.commit for s in seen}) == 2
    assert "callback boom failed" in caplog.text and "HEAD moved" in caplog.text


def test_bad_arguments(repo: ScratchRepo, tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not inside a git work tree"):
        Watcher(tmp_path, print, print)
    with pytest.raises(ValidationError, match="every_files"):
        Watcher(repo.root, print, print, every_files=0)
    with pytest.raises(ValidationError, match="callables"):
        Watcher(repo.root, "nope", print)  # type: ignore[arg-type]


def test_changed_paths_handles_renames_spaces_and_untracked(repo: ScratchRepo) -> None:
    from synapse_nb.gitscope import find_repo

    repo.git("mv", "a.txt", "new name.txt")
    repo.write("dir/ü.txt", "x\n")
    info = find_repo(repo.root)
    assert info is not None
    assert changed_paths(info) == ["a.txt", "dir/ü.txt", "new name.txt"]


def test_run_forever_stops_cleanly_on_sigterm(repo: ScratchRepo, tmp_path: Path) -> None:
    lock = tmp_path / "watch.lock"
    script = textwrap.dedent(
        f"""
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stdout)
        from synapse_nb.gitscope import Watcher
        Watcher({str(repo.root)!r}, print, print, lock_path={str(lock)!r}).run_forever()
        print("clean exit")
        """
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        assert wait_for(lambda: lock.exists() and lock.read_text().strip() == str(proc.pid), 20)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    text = out.decode()
    assert "signal 15 received" in text and "stopped watching" in text and "clean exit" in text
    rec = Recorder()
    w = rec.watcher(repo, tmp_path)
    w.start()  # the lock is free again
    w.stop()
