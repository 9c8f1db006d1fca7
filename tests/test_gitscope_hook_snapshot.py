"""A git hook's revert scan reads history only up to where HEAD and the refs were when the hook started (found by
review: a person's detached hook of an earlier commit, run after an agent's commit, scanned the agent's revert as the
person's, and review never said "first found in an agent's session"). Real git throughout."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.gitscope import find_repo, githook, install_hooks, scan_reverts
from synapse_nb.gitscope.history import parse_snapshot, snapshot, tips
from synapse_nb.kinds.lesson_scan import FIRST_BY
from tests.conftest import wait_for

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
    (repo / ".synapse").mkdir()  # a vault's folder: where there is none the hook reads nothing (next test)
    hook = repo / ".git" / "hooks" / "post-commit"
    out = tmp_path / "stdin.txt"
    text = hook.read_text(encoding="utf-8")
    assert "SYNAPSE_HOOK_SNAPSHOT=1" in text
    capture = tmp_path / "capture.py"
    capture.write_text(f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read())\n", encoding="utf-8")
    hook.write_text(text.replace(" -P -m synapse_nb.gitscope.githook", f" {capture}"), encoding="utf-8")
    git(repo, "tag", "v1")
    (repo / "b.txt").write_text("b\n", encoding="utf-8")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "b")
    passed = parse_snapshot(out.read_text(encoding="utf-8"))
    assert passed is not None and passed.head == _head(git, repo)
    assert passed.refs.splitlines() == snapshot(find_repo(repo)).refs.splitlines()
    assert f"{_head(git, repo)} refs/heads/main" in passed.refs.splitlines()


def test_a_snapshot_that_is_not_one_is_none() -> None:
    assert parse_snapshot("") is None and parse_snapshot("HEAD nothex\n") is None
    assert parse_snapshot("HEAD \nEND\n").head is None  # an unborn branch


def _capturing_hook(repo: Path, out: Path, *, background: bool) -> None:
    """The installed hook, running a script that writes what it was passed to ``out`` in place of the scan."""
    install_hooks(repo, background=background)
    hook = repo / ".git" / "hooks" / "post-commit"
    capture = out.with_suffix(".py")
    capture.write_text(f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read())\n", encoding="utf-8")
    hook.write_text(hook.read_text(encoding="utf-8").replace(" -P -m synapse_nb.gitscope.githook", f" {capture}"),
                    encoding="utf-8")


@pytest.mark.parametrize("background", [False, True])
def test_a_hook_with_no_vault_to_find_reads_no_ref_and_starts_nothing(repo: Path, git: Git, tmp_path: Path,
                                                                       background: bool) -> None:
    """Found by review: every commit waited for the refs' read (385 ms with 20,000 tags) even where the hook then
    found no vault and did nothing."""
    out = tmp_path / "stdin.txt"
    _capturing_hook(repo, out, background=background)
    git(repo, "commit", "-q", "--allow-empty", "-m", "no vault here")
    assert not out.exists()
    (repo / ".synapse").mkdir()
    git(repo, "commit", "-q", "--allow-empty", "-m", "a vault now")
    # each capture appends what it was passed; the second commit's is waited for (a 5 s poll, then a read of a file
    # a busy machine may not have written yet). A capture the first commit's hook had started (in the background: not
    # seen at once) was started before this one and does the same: it would be here too, and the snapshot below two
    assert wait_for(lambda: out.exists() and out.read_text(encoding="utf-8").endswith("END\n"), 60)
    passed = parse_snapshot(out.read_text(encoding="utf-8"))
    assert passed is not None and passed.head == _head(git, repo)
    assert out.read_text(encoding="utf-8").count("\nEND\n") == 1


def test_tips_read_the_types_of_refs_a_hook_passed_as_ids_and_names(repo: Path, git: Git) -> None:
    """The hook's script passes ids and names only (reading each ref's type opened every object while the commit
    waited); tips() reads the types afterwards: an annotated tag is its commit, a tag of a tree or a blob no tip."""
    main = _head(git, repo)
    git(repo, "checkout", "-q", "--detach")
    git(repo, "commit", "-q", "--allow-empty", "-m", "tagged only")
    tagged = _head(git, repo)
    git(repo, "tag", "-a", "-m", "keep", "v1")
    git(repo, "tag", "-a", "-m", "of a tag", "v1-again", "v1")
    git(repo, "tag", "tree", "HEAD^{tree}")
    git(repo, "checkout", "-q", "main")
    tag = git(repo, "rev-parse", "v1").strip()
    tree = git(repo, "rev-parse", "tree").strip()
    passed = parse_snapshot(f"HEAD {main}\n{main} refs/heads/main\n{tag} refs/tags/v1\n{tree} refs/tags/tree\nEND\n")
    assert passed is not None
    assert tips(find_repo(repo), passed) == (sorted({main, tagged}), {main: ["main"]}, {})
    assert tips(find_repo(repo)) == tips(find_repo(repo), snapshot(find_repo(repo)))
    assert tips(find_repo(repo))[0] == sorted({main, tagged})
    # what a script of the last pass passed (types between the id and the name) reads the same
    old = parse_snapshot(f"HEAD {main}\n{main} commit   refs/heads/main\n{tag} tag {tagged} commit refs/tags/v1\nEND")
    assert old is not None and tips(find_repo(repo), old) == (sorted({main, tagged}), {main: ["main"]}, {})


def test_a_passed_snapshot_with_a_ref_name_in_no_utf8_is_read(repo: Path, git: Git,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: the hook read its stdin in the locale's encoding; a branch name in no UTF-8 raised there, and
    the scan had no snapshot at all (not even one read now)."""
    head = _head(git, repo)
    passed = f"HEAD {head}\n{head} refs/heads/".encode() + b"caf\xe9\nEND\n"
    monkeypatch.setenv(githook.SNAPSHOT, "1")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(passed), encoding="utf-8", errors="strict"))
    at = githook._snapshot(repo)
    assert at is not None and at.head == head and at.refs == f"{head} refs/heads/caf\ufffd"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"no snapshot"), encoding="utf-8"))
    assert githook._snapshot(repo) == snapshot(find_repo(repo))  # not one: read now


def test_the_snapshot_is_read_within_the_hooks_time_limit(repo: Path) -> None:
    """Found by review: the hook read its snapshot before its time limit started, so a slow read held it past it."""
    (repo / ".synapse").mkdir()
    code = ("import time\nfrom synapse_nb.gitscope import githook\n"
            "githook._snapshot = lambda work_tree: time.sleep(60)\ngithook.main(['post-commit'])\n")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=repo, env={**os.environ, "SYNAPSE_HOOK_TIMEOUT": "0.5"},
                   stdin=subprocess.DEVNULL, check=True, timeout=120)
    assert time.perf_counter() - started < 30  # a read that waits a minute; the margin is for a loaded machine
    assert "timeout: gave up after 0.5 s" in (repo / ".synapse" / "hook.log").read_text(encoding="utf-8")


def test_a_manual_scan_reads_head_and_the_refs_once(repo: Path, git: Git, count_git: Callable[[], list[str]]) -> None:
    """Found by review: a manual scan read the refs once a pass (HEAD's, then every branch's), so twice; now once, at
    its start, and both passes read history up to there."""
    v = syn.open_vault(repo)
    assert v.lessons.scan() == []
    git(repo, "checkout", "-q", "-b", "side")
    git(repo, "revert", "--no-edit", "HEAD")  # on a side branch: the second pass reads it
    git(repo, "checkout", "-q", "main")
    (repo / "n.txt").write_text("n\n", encoding="utf-8")
    git(repo, "add", "n.txt")
    git(repo, "commit", "-q", "-m", "new on main")
    started = count_git()
    (made,) = v.lessons.scan()
    assert made.branch == "side"
    # 12 before: the refs read once a pass; a cat-file of their types and one of the since place a pass, rev-list and
    # cat-file of its window a pass, and one log of the revert's diffstat; 11 with the refs read once, 10 with their
    # types worked out once a snapshot
    assert started.count("for-each-ref") == 1 and len(started) == 10, started
