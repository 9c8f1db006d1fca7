"""The revert scan against review 45: a planted shallow file, a codec that is no charset, a huge side branch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from synapse_nb.gitscope import scan_reverts
from synapse_nb.gitscope.testing import ScratchRepo


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("a.txt", "a\n", "init")
    return r


def _revert(r: ScratchRepo) -> str:
    r.commit_file("b.txt", "bad\n", "Add retry loop to payments")
    r.git("revert", "--no-edit", "HEAD")
    return r.head_sha()


@pytest.mark.parametrize("codec", ["idna", "punycode", "undefined", "unicode_escape", "base64"])
def test_a_commit_declaring_a_codec_that_is_no_charset_stops_no_scan(repo: ScratchRepo, codec: str) -> None:
    repo.git("checkout", "-q", "-b", "agent-notes")  # review 45: `encoding idna` and \xff\xfe failed every scan
    subprocess.run(["git", "-c", f"i18n.commitEncoding={codec}", "commit", "-q", "--allow-empty", "-F", "-"],
                   cwd=repo.root, env=repo.env(), input=b"notes\n\n\xff\xfe\n", check=True)
    notes = repo.head_sha()
    repo.git("checkout", "-q", "main")
    revert = _revert(repo)
    result = scan_reverts(repo.root)
    assert [r.revert.sha for r in result.reverts] == [revert] and result.note is None
    assert notes in result.scanned_tips


def test_a_planted_shallow_line_hides_no_revert_and_a_real_shallow_clone_still_scans(repo: ScratchRepo,
                                                                                      tmp_path: Path) -> None:
    scan_reverts(repo.root)
    revert = _revert(repo)
    repo.commit_file("c.txt", "c\n", "docs")
    shallow = repo.root / ".git" / "shallow"  # review 45: an agent's one line (or `git fetch --depth=1`)
    shallow.write_text(repo.head_sha() + "\n")
    result = scan_reverts(repo.root, since=[repo.git("rev-parse", f"{revert}~2")])
    assert [r.revert.sha for r in result.reverts] == [revert] and not result.truncated
    first = scan_reverts(repo.root)  # a first scan too
    assert [r.revert.sha for r in first.reverts] == [revert] and first.note is None
    clone = tmp_path / "clone"  # a real shallow clone: its boundary is honoured, and said
    subprocess.run(["git", "clone", "-q", "--depth=2", f"file://{repo.root}", str(clone)], env=repo.env(),
                   check=True, capture_output=True)
    shallow_result = scan_reverts(clone)
    assert shallow_result.truncated and "shallow clone" in (shallow_result.note or "")


def _fast_import(r: ScratchRepo, n: int, ref: str, start: str, msg: str = "w") -> None:
    lines = [f"commit {ref}\ncommitter Bot <b@x> {1_700_000_000 + i} +0000\ndata {len(msg) + 1}\n{msg}\n"
             + (f"from {start}\n\n" if i == 0 else "\n") for i in range(n)]
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=r.root, env=r.env(),
                   input="".join(lines).encode(), check=True, capture_output=True)


def test_heads_new_history_is_a_place_of_its_own_before_the_rest_is_walked(repo: ScratchRepo) -> None:
    place = scan_reverts(repo.root).scanned_tips
    _fast_import(repo, 50, "refs/heads/agent-scratch", "refs/heads/main")
    revert = _revert(repo)
    result = scan_reverts(repo.root, since=place, max_commits=10, head_only=True)
    assert [r.revert.sha for r in result.reverts] == [revert]  # HEAD's part alone: the side branch is not read
    assert result.commits_scanned == 2 and set(result.scanned_tips) == set(place) | {revert}
    rest = scan_reverts(repo.root, since=result.scanned_tips, max_commits=10)
    assert rest.reverts == () and set(rest.scanned_tips) == {revert, repo.git("rev-parse", "agent-scratch")}


def test_a_first_scan_of_a_long_history_reads_git_only_as_far_as_its_window(repo: ScratchRepo,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _fast_import(repo, 3000, "refs/heads/main", "refs/heads/main^0")
    repo.git("reset", "-q", "--hard", "main")
    revert = _revert(repo)
    from synapse_nb.gitscope import history

    seen: list[int] = []
    graph = history.graph
    monkeypatch.setattr(history, "graph", lambda *a, **k: seen.append(len(nodes := graph(*a, **k))) or nodes)
    result = scan_reverts(repo.root, max_commits=100)
    assert [r.revert.sha for r in result.reverts] == [revert] and result.truncated
    assert seen == [101] and "first scan" in (result.note or "")  # 101 read of 3,003 (review 45)
    assert result.scanned_tips == (revert,)


def test_a_revert_behind_thousands_of_branches_is_read_in_the_next_scan(repo: ScratchRepo) -> None:
    repo.git("checkout", "-q", "-b", "feature")  # the person works on a feature branch
    place = scan_reverts(repo.root).scanned_tips
    repo.git("checkout", "-q", "main")
    revert = _revert(repo)  # a colleague's revert on main, not checked out
    repo.git("checkout", "-q", "feature")
    base = repo.git("rev-parse", "feature")
    lines = [f"commit refs/heads/scratch/{i}\ncommitter Bot <b@x> {1_700_000_000 + i} +0000\ndata 2\nw\nfrom {base}\n\n"
             for i in range(1500)]  # review 45: one-commit branches off the saved place filled every window
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.root, env=repo.env(),
                   input="".join(lines).encode(), check=True, capture_output=True)
    result = scan_reverts(repo.root, since=place, max_commits=100)
    assert [r.revert.sha for r in result.reverts] == [revert] and result.truncated
    assert "every one that may be a revert" in (result.note or "") and revert in result.scanned_tips
