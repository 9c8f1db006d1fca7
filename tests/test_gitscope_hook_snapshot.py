"""A git hook's revert scan reads history only up to where HEAD and the refs were when the hook started (found by
review: a person's detached hook of an earlier commit, run after an agent's commit, scanned the agent's revert as the
person's, and review never said "first found in an agent's session"). Real git throughout."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.gitscope import find_repo, install_hooks, scan_reverts
from synapse_nb.gitscope.history import parse_snapshot, snapshot
from synapse_nb.kinds.lesson_scan import FIRST_BY

Git = Callable[..., str]


@pytest.fixture()
def repo(git_repo: Path, git: Git, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    for var in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "SYNAPSE_ACTOR"):
        monkeypatch.delenv(var, raising=False)
    (git_repo / "pay.py").write_text("retry = 3\n", encoding="utf-8")
    git(git_repo, "add", "pay.py")
    git(git_repo, "commit", "-q", "-m", "Add retry to payment client")
    return git_repo


def _head(git: Git, repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_persons_hook_that_runs_after_an_agents_revert_leaves_it_to_the_agents_scan(repo: Path, git: Git) -> None:
    human = syn.open_vault(repo)
    assert human.lessons.scan() == []  # the place is saved
    (repo / "notes.txt").write_text("n\n", encoding="utf-8")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "person's notes")  # the person's commit: its hook starts here ...
    persons_hook = snapshot(find_repo(repo))
    git(repo, "checkout", "-q", "-b", "agent-work")  # ... an agent reverts, on HEAD and on a branch of its own
    git(repo, "revert", "--no-edit", "HEAD~1")
    revert = _head(git, repo)
    agents_hook = snapshot(find_repo(repo))
    # the person's hook gets the lock after the agent's commit: it reads up to its own commit only
    assert human.lessons.scan(at=persons_hook) == [] and human.lessons.pending() == []
    assert human.as_agent().lessons.scan(at=agents_hook) == []  # the agent's hook: the lesson is the agent's
    (mine,) = human.lessons.pending()
    assert mine.source == "agent" and mine.revert_commit["sha"] == revert
    (taken,) = human.lessons.scan()  # a person's manual scan reads everything, and keeps that an agent's came first
    assert taken.id == mine.id and taken.revert_commit[FIRST_BY] == "agent"
    assert "first found in an agent's session" in human.lessons.backing(taken)


def test_a_snapshot_scan_saves_only_what_it_read_and_the_next_scan_finds_the_rest(repo: Path, git: Git) -> None:
    place = scan_reverts(repo).scanned_tips
    before = snapshot(find_repo(repo))
    git(repo, "checkout", "-q", "-b", "side")
    git(repo, "revert", "--no-edit", "HEAD")  # after the snapshot: not read, not passed
    revert = _head(git, repo)
    bounded = scan_reverts(repo, since=place, at=before)
    assert bounded.reverts == () and revert not in bounded.scanned_tips
    rest = scan_reverts(repo, since=bounded.scanned_tips)
    assert [r.revert.sha for r in rest.reverts] == [revert] and rest.reverts[0].branches == ("side",)


def test_the_hook_script_passes_where_head_and_the_refs_were(repo: Path, git: Git, tmp_path: Path) -> None:
    """The installed hook's own script: what it passes on stdin is the commit it ran for and the refs then."""
    install_hooks(repo, background=False)
    hook = repo / ".git" / "hooks" / "post-commit"
    out = tmp_path / "stdin.txt"
    text = hook.read_text(encoding="utf-8")
    assert "SYNAPSE_HOOK_SNAPSHOT=1" in text
    capture = tmp_path / "capture.py"
    capture.write_text(f"import sys\nopen({str(out)!r}, 'w').write(sys.stdin.read())\n", encoding="utf-8")
    hook.write_text(text.replace(" -P -m synapse_nb.gitscope.githook", f" {capture}"), encoding="utf-8")
    git(repo, "tag", "v1")
    (repo / "b.txt").write_text("b\n", encoding="utf-8")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "b")
    passed = parse_snapshot(out.read_text(encoding="utf-8"))
    assert passed is not None and passed.head == _head(git, repo)
    assert passed.refs.splitlines() == snapshot(find_repo(repo)).refs.splitlines()
    assert f"{_head(git, repo)} commit   refs/heads/main" in passed.refs.splitlines()


def test_a_snapshot_that_is_not_one_is_none() -> None:
    assert parse_snapshot("") is None and parse_snapshot("HEAD nothex\n") is None
    assert parse_snapshot("HEAD \n").head is None  # an unborn branch
