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
