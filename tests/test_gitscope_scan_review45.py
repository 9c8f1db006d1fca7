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
