"""Review 51 of the git hook's snapshot: a listing that failed or was cut short is no snapshot, an environment's
variable never carries the listing, and a late hook never moves the scan's place backwards. Real git throughout."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.gitscope import find_repo, install_hooks
from synapse_nb.gitscope.history import SNAPSHOT_END, parse_snapshot, snapshot

Git = Callable[..., str]


@pytest.fixture()
def repo(git_repo: Path, git: Git, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    for var in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "SYNAPSE_ACTOR", "snapshot"):
        monkeypatch.delenv(var, raising=False)
    (git_repo / ".gitignore").write_text(".synapse/\n", encoding="utf-8")
    (git_repo / "pay.py").write_text("retry = 3\n", encoding="utf-8")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "Add retry to payment client")
    return git_repo


def _run_hook(repo: Path, env: dict[str, str] | None = None) -> str:
    """The installed post-commit hook's own script, run by sh where git runs it (the work tree's root), in the
    foreground; what it added to hook.log."""
    log = repo / ".synapse" / "hook.log"
    before = log.read_text(encoding="utf-8") if log.exists() else ""
    subprocess.run(["sh", str(repo / ".git" / "hooks" / "post-commit")], cwd=repo, env=env or dict(os.environ),
                   stdin=subprocess.DEVNULL, check=True, timeout=60)
    return log.read_text(encoding="utf-8")[len(before):]


def _revert_without_hooks(repo: Path, git: Git) -> str:
    git(repo, "-c", "core.hooksPath=/dev/null", "revert", "--no-edit", "HEAD")
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_failed_ref_listing_is_no_snapshot_and_the_hook_says_so(repo: Path, git: Git, tmp_path: Path) -> None:
    """Found by review 51: the script dropped for-each-ref's failure (2>/dev/null, status ignored); the snapshot held
    HEAD and no refs, and the lesson was made "outside any branch" (in force on every branch once approved),
    silently. Now the listing ends with an end line only when it succeeded; without it the hook reads the refs
    itself, and that failure is logged."""
    v = syn.open_vault(repo)
    assert v.lessons.scan() == []
    install_hooks(repo, background=False)
    _revert_without_hooks(repo, git)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    wrapper = bin_dir / "git"  # git itself, but for-each-ref fails half way (what a broken ref store does)
    wrapper.write_text(f'#!/bin/sh\nfor a; do if [ "$a" = for-each-ref ]; then "{real}" "$@" | head -n 1; exit 128; '
                       f'fi; done\nexec "{real}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    logged = _run_hook(repo, {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert "error: GitError: git for-each-ref failed" in logged, logged
    assert v.lessons.pending() == []
    (made,) = v.lessons.scan()  # git works again: the revert is found, on its branch
    assert made.branch == "main"


def test_a_tag_of_a_missing_object_leaves_the_revert_on_its_branch(repo: Path, git: Git) -> None:
    """Review 51's case (t7): a tag naming an object that is not there. git lists it (ids and names need no object);
    the scan drops it and the lesson is on main, not outside any branch."""
    v = syn.open_vault(repo)
    assert v.lessons.scan() == []
    install_hooks(repo, background=False)
    revert = _revert_without_hooks(repo, git)
    (repo / ".git" / "refs" / "tags" / "gone").write_text("1234567890" * 4 + "\n", encoding="utf-8")
    assert "ok: 1 new pending lesson" in _run_hook(repo)
    (made,) = v.lessons.pending()
    assert made.revert_commit["sha"] == revert and made.branch == "main"


def test_a_snapshot_cut_short_is_none(repo: Path, git: Git) -> None:
    """A pipe cut short passed part of the refs as all of them: only a text ending with the end line is a snapshot."""
    for n in range(3):
        git(repo, "tag", f"v{n}")
    now = snapshot(find_repo(repo))
    head = git(repo, "rev-parse", "HEAD").strip()
    whole = f"HEAD {head}\n{now.refs}{SNAPSHOT_END}\n"  # the listing ends with a newline; the end line follows
    assert parse_snapshot(whole) == type(now)(head, now.refs.rstrip("\n"))
    assert parse_snapshot(f"HEAD {head}\n{SNAPSHOT_END}\n") == type(now)(head, "")  # no refs at all
    for cut in range(len(whole) - len(SNAPSHOT_END) - 1):
        assert parse_snapshot(whole[:cut]) is None, cut
    assert parse_snapshot(f"HEAD {head}\n{now.refs}") is None  # a script of the last pass: no end line


@pytest.mark.parametrize("name", ["snapshot", "SYNAPSE_HOOK_LISTING"])
def test_an_exported_variable_never_carries_the_listing_to_python(repo: Path, git: Git, name: str) -> None:
    """Found by review 51: the script held the listing in a plain variable ``snapshot``; a person's environment that
    exported one exported the listing to python, and past 128 KiB (3,000 tags) exec failed: no scan, no log line."""
    v = syn.open_vault(repo)
    assert v.lessons.scan() == []
    install_hooks(repo, background=False)
    head = git(repo, "rev-parse", "HEAD").strip()
    subprocess.run(["git", "update-ref", "--stdin"], cwd=repo, check=True, text=True,
                   input="".join(f"create refs/tags/release-{i:05d} {head}\n" for i in range(3000)))
    _revert_without_hooks(repo, git)
    logged = _run_hook(repo, {**os.environ, name: "x"})
    assert "ok: 1 new pending lesson" in logged, logged
    assert [les.branch for les in v.lessons.pending()] == ["main"]


def test_a_late_hook_never_brings_back_a_lesson_the_person_rejected(repo: Path, git: Git) -> None:
    """Found by review 51 (t9): a hook whose snapshot was older than a scan that already ran saved its older tips as
    the place, moving it backwards, and the next scan read the range again. A rejected lesson is deleted (no trace
    of its revert stays), so the revert came back as a new pending lesson. Now the place keeps the commits the late
    snapshot does not reach that were made on top of it."""
    v = syn.open_vault(repo)
    assert v.lessons.scan() == []
    (repo / "pay.py").write_text("retry = 5\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "Raise retries")
    late = snapshot(find_repo(repo))  # the hook of this commit starts here, and waits
    revert = _revert_without_hooks(repo, git)  # the next commit's scan runs first
    (made,) = v.lessons.scan()
    assert made.revert_commit["sha"] == revert
    v.lessons.reject(made.id)
    assert v.lessons.scan(at=late) == []  # the late hook
    assert revert in v._ctx.store.meta.scan_tips(v._ctx.mind)  # the place did not move back
    assert v.lessons.scan() == [] and v.lessons.pending() == []  # the rejected revert stays rejected


def test_the_place_drops_a_commit_rewritten_away(repo: Path, git: Git) -> None:
    """The place stays bounded: a commit an amend left behind (no branch reaches it, and it is not on top of where
    HEAD was) is not kept, as before."""
    v = syn.open_vault(repo)
    git(repo, "commit", "-q", "--allow-empty", "-m", "wip")
    assert v.lessons.scan() == []
    wip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "commit", "-q", "--amend", "--allow-empty", "-m", "wip, reworded")
    assert v.lessons.scan() == []
    assert v._ctx.store.meta.scan_tips(v._ctx.mind) == (git(repo, "rev-parse", "HEAD").strip(),)
    assert wip not in v._ctx.store.meta.scan_tips(v._ctx.mind)


def _unknown_type_tag(repo: Path, git: Git, name: str) -> None:
    """Review 52's recipe, ordinary git commands only: an object of a type git does not know, an annotated tag
    naming it as a commit, and ``git update-ref`` (git parses the tag, not what it names)."""
    odd = subprocess.run(["git", "hash-object", "-t", "foo", "--literally", "-w", "--stdin"], cwd=repo,
                         input=f"{name}\n".encode(), capture_output=True, check=True).stdout.decode().strip()
    tag = (f"object {odd}\ntype commit\ntag {name}\ntagger a <a@x> 1700000000 +0000\n\nmsg\n").encode()
    sha = subprocess.run(["git", "hash-object", "-t", "tag", "--literally", "-w", "--stdin"], cwd=repo, input=tag,
                         capture_output=True, check=True).stdout.decode().strip()
    git(repo, "update-ref", f"refs/tags/{name}", sha)


def test_a_tag_of_an_object_git_cannot_read_stops_no_scan(repo: Path, git: Git) -> None:
    """Found by review 52: git stops a whole ``cat-file --batch-check`` at an object of a type it does not know,
    so one such tag made every scan fail, the hook's and the person's ("git cat-file failed ... hint: Support for
    <GIT_DIR>/info/grafts is deprecated", not even git's own reason). The refs git cannot read are set aside; a
    branch's revert is a lesson on its branch, and git's reason is the one a failure names."""
    v = syn.open_vault(repo)
    assert v.lessons.scan() == []
    for i in range(5):  # several, among ordinary tags and branches
        git(repo, "tag", f"v{i}")
        git(repo, "branch", f"b{i}")
        _unknown_type_tag(repo, git, f"odd{i}")
    install_hooks(repo, background=False)
    git(repo, "checkout", "-q", "-b", "side")
    revert = _revert_without_hooks(repo, git)
    assert "ok: 1 new pending lesson" in _run_hook(repo)
    (made,) = v.lessons.pending()
    assert made.revert_commit["sha"] == revert and made.branch == "side"
    git(repo, "checkout", "-q", "main")
    (repo / "pay.py").write_text("retry = 5\n", encoding="utf-8")
    git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-qam", "More retries")
    git(repo, "-c", "core.hooksPath=/dev/null", "revert", "--no-edit", "HEAD")  # the person's manual scan too
    (also,) = v.lessons.scan()
    assert also.branch == "main"
    info = find_repo(repo)
    assert info is not None
    from synapse_nb.errors import GitError
    from synapse_nb.gitscope._git import run_git

    with pytest.raises(GitError, match="fatal: invalid object type"):
        run_git(info, "cat-file", "--batch-check", input=b"refs/tags/odd0^{}\n")
