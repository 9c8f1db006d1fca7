"""Review 42: what a revert scan reads, whatever an agent writes into the repository first.

A flood of junk commits (the window), a replace ref or a grafts file, a commit in another encoding, and a message
naming thousands of ids: none of them hides a person's revert, stops a scan, or makes it slow.
"""

from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.gitscope import find_repo, scan_reverts
from synapse_nb.gitscope.reverts import MAX_NAMED
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.gitscope.undo import review_revert
from synapse_nb.kinds.lessons import MAX_REVERTED


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("a.txt", "a\n", "init")
    return r


def _flood(r: ScratchRepo, n: int, ref: str = "refs/heads/agent-scratch", start: str = "refs/heads/main") -> None:
    """``n`` empty commits dated 2090 on ``ref`` by git fast-import (no hook runs), as an agent can."""
    lines = []
    for i in range(n):
        msg = f"wip {i}\n"
        lines.append(f"commit {ref}\ncommitter Bot <b@x> {3_800_000_000 + i} +0000\ndata {len(msg)}\n{msg}")
        lines.append(f"from {start}\n\n" if i == 0 else "\n")
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=r.root, env=r.env(),
                   input="".join(lines).encode(), check=True)


def _revert(r: ScratchRepo) -> str:
    r.commit_file("b.txt", "bad\n", "Add retry loop to payments")
    r.git("revert", "--no-edit", "HEAD")
    return r.head_sha()


def test_a_flood_on_a_side_branch_before_the_first_scan_leaves_heads_revert_in(repo: ScratchRepo) -> None:
    _flood(repo, 60)
    revert = _revert(repo)
    result = scan_reverts(repo.root, max_commits=20)
    assert [r.revert.sha for r in result.reverts] == [revert]
    assert result.truncated and "max_commits=20" in (result.note or "") and "first scan" in (result.note or "")


def test_a_flood_after_a_scan_never_pushes_a_revert_out_of_a_later_scan(repo: ScratchRepo) -> None:
    place = scan_reverts(repo.root).scanned_tips
    _flood(repo, 60)  # on a side branch, dated 2090
    revert = _revert(repo)
    _flood(repo, 60, ref="refs/heads/main", start=revert)  # and on top of the revert, on the checked-out branch
    repo.git("reset", "-q", "--hard", "main")
    result = scan_reverts(repo.root, since=place, max_commits=20)
    # every commit that may be a revert is read, whatever the window (review 45): done in one scan
    assert [r.revert.sha for r in result.reverts] == [revert] and result.truncated
    assert "every one that may be a revert" in (result.note or "")
    assert set(result.scanned_tips) == {repo.head_sha(), repo.git("rev-parse", "agent-scratch")}


def test_the_vaults_scan_says_when_its_window_was_cut(repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    v = syn.open_vault(repo.root)
    assert v.lessons.scan().note is None
    _flood(repo, 30)
    revert = _revert(repo)
    found = v.lessons.scan(max_commits=10)
    assert [les.revert_commit["sha"] for les in found] == [revert]
    assert found.note is not None and "max_commits=10" in found.note
    assert v.lessons.scan(max_commits=100).note is None  # the rest, read from where the last scan stopped


@pytest.mark.parametrize("how", ["replace", "graft-ref", "grafts-file"])
def test_replace_refs_and_grafts_do_not_hide_a_revert(repo: ScratchRepo, how: str) -> None:
    revert = _revert(repo)
    repo.commit_file("c.txt", "x\n", "Unrelated work")
    if how == "replace":  # the revert's tree and parent, with a message that reverts nothing
        fake = repo.git("commit-tree", f"{revert}^{{tree}}", "-p", f"{revert}^", "-m", "Tidy b.txt")
        repo.git("replace", revert, fake)
    elif how == "graft-ref":
        repo.git("replace", "--graft", "HEAD", f"{revert}^^")
    else:
        (repo.root / ".git/info/grafts").write_text(f"{repo.head_sha()} {repo.git('rev-parse', f'{revert}^^')}\n")
    assert [r.revert.sha for r in scan_reverts(repo.root).reverts] == [revert]


def test_a_commit_in_another_encoding_neither_stops_nor_bends_a_scan(repo: ScratchRepo) -> None:
    repo.git("checkout", "-q", "-b", "scratch")  # an agent's commit, dated 2090, declared IBM037, in no config
    env = repo.env() | {"GIT_COMMITTER_DATE": "2090-01-01T00:00:00Z"}
    subprocess.run(["git", "-c", "i18n.commitEncoding=IBM037", "commit", "-q", "--allow-empty", "-m", "wip"],
                   cwd=repo.root, env=env, check=True)
    repo.git("checkout", "-q", "main")
    repo.commit_file("b.txt", "bad\n", "Add retry loop to payments")
    repo.git("config", "i18n.commitEncoding", "IBM037")  # and the person's revert recorded as IBM037 (config)
    subprocess.run(["git", "revert", "--no-edit", "HEAD"], cwd=repo.root, env=repo.env(), capture_output=True,
                   check=True)
    repo.git("config", "--unset", "i18n.commitEncoding")
    revert = repo.head_sha()
    assert b"encoding IBM037" in subprocess.run(["git", "cat-file", "commit", revert], cwd=repo.root,
                                                capture_output=True, check=True).stdout
    result = scan_reverts(repo.root)
    (rev,) = result.reverts
    assert rev.revert.sha == revert and rev.reverted[0].subject == "Add retry loop to payments"
    assert rev.revert.author == "Ada Tester <ada@example.com>" and result.note is None


def test_an_unreadable_commit_is_skipped_and_said_and_a_nul_merges_nothing(repo: ScratchRepo) -> None:
    target = repo.head_sha()
    tree = repo.git("rev-parse", "HEAD^{tree}")
    def obj(text: bytes) -> str:
        return subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"], cwd=repo.root,
                              env=repo.env(), input=text, capture_output=True, check=True).stdout.decode().strip()
    # no committer line: unreadable; a revert line past a NUL: git shows the message up to the NUL, so does the scan
    broken = obj(f"tree {tree}\nparent {target}\nauthor A <a@x> 1 +0000\n\nbroken\n".encode())
    nul = obj(f"tree {tree}\nparent {broken}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 2 +0000\n\nTidy\n\0"
              f"This reverts commit {target}.\n".encode())
    repo.git("update-ref", "refs/heads/side", nul)
    revert = _revert(repo)
    result = scan_reverts(repo.root)
    assert [r.revert.sha for r in result.reverts] == [revert]
    assert "1 unreadable commit skipped" in (result.note or "")


def test_a_message_naming_thousands_of_ids_is_read_quickly_and_counted(repo: ScratchRepo) -> None:
    assert MAX_NAMED == MAX_REVERTED  # a lesson keeps what the scan looked up
    for i in range(300):
        repo.commit_file("w.txt", f"{i}\n", f"wip {i}")
    rng = random.Random(1)
    ids = "".join(f"This reverts commit {rng.getrandbits(28):07x}.\n" for _ in range(20_000))
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-F", "-"], cwd=repo.root, env=repo.env(),
                   input=f"Revert stuff\n\n{ids}".encode(), check=True)
    # this process's CPU time, not the wall clock's, which another job on a busy machine lengthens (the quadratic
    # match was this process's work; git's own, in its child processes, is not counted)
    started = time.process_time()
    (rev,) = scan_reverts(repo.root).reverts
    assert time.process_time() - started < 5  # 20,000 ids x 300 commits took 10 s before (review 42)
    assert len(rev.reverted) == MAX_NAMED and f"and {20_000 - 2} more" in rev.summary


def test_more_commits_that_may_be_reverts_than_the_window_are_read_through_scan_by_scan(repo: ScratchRepo) -> None:
    place = scan_reverts(repo.root).scanned_tips
    for i in range(30):  # commits that only look like reverts, more than the window
        repo.commit_file("w.txt", f"{i}\n", f"Revert nothing {i}")
    revert = _revert(repo)
    result = scan_reverts(repo.root, since=place, max_commits=20)
    seen, scans = [r.revert.sha for r in result.reverts], 0
    while result.truncated:  # each scan goes on from the last: never skipped
        assert "next scan goes on" in (result.note or "") and repo.head_sha() not in result.scanned_tips
        result = scan_reverts(repo.root, since=result.scanned_tips, max_commits=20)
        seen += [r.revert.sha for r in result.reverts]
        scans += 1
        assert scans < 20
    assert set(seen) == {revert} and set(result.scanned_tips) == {repo.head_sha()}


def test_a_reverted_commit_read_outside_the_window_is_read_like_one_inside(repo: ScratchRepo) -> None:
    """The commits a revert names that an incremental scan looks up (outside its window) and the one review checks
    are read by the window's parser: a message in its header's charset, and only the message says "This reverts"
    (they were read as UTF-8 with replacement characters, header lines and all)."""
    repo.commit_file("a.txt", "retry\n", "x")
    head = subprocess.run(["git", "cat-file", "commit", "HEAD"], cwd=repo.root, capture_output=True, check=True)
    ebcdic = head.stdout.split(b"\n\n")[0] + b"\nencoding IBM037\n\n" + "Add retry loop\n".encode("cp037")
    target = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo.root, input=ebcdic,
                            capture_output=True, check=True).stdout.decode().strip()
    repo.git("reset", "-q", "--hard", target)
    first = scan_reverts(repo.root)
    repo.git("revert", "--no-edit", "HEAD")
    (rev,) = scan_reverts(repo.root, since=first.scanned_tips).reverts  # the target is below the window
    assert rev.reverted[0].sha == target and rev.reverted[0].subject == "Add retry loop"
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "Tidy"], cwd=repo.root, check=True,
                   env=repo.env() | {"GIT_AUTHOR_NAME": f"This reverts commit {target}"})
    assert review_revert(find_repo(repo.root), repo.head_sha())[0] == "not a revert"  # type: ignore[arg-type]
    assert review_revert(find_repo(repo.root), rev.revert.sha)[0] == "revert"  # type: ignore[arg-type]
