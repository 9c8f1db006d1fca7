"""gitscope.show_commit: one commit's --stat and patch, capped, for the lesson review."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb.errors import GitError, ValidationError
from synapse_nb.gitscope import find_repo, show_commit
from synapse_nb.gitscope.testing import ScratchRepo


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("cache.py", "CACHE = {}\n", "In-process cache")
    return r


def test_stat_and_patch(repo: ScratchRepo) -> None:
    repo.write("settings.py", "REDIS_URL = 'redis://localhost'\n")
    repo.git("add", "settings.py")
    sha = repo.commit_file("cache.py", "import redis\nCACHE = redis.Redis()\n", "Use Redis for the cache")
    d = show_commit(find_repo(repo.root), sha[:10])
    assert d.sha == sha and d.subject == "Use Redis for the cache"
    assert "cache.py" in d.stat and "settings.py" in d.stat and "2 files changed" in d.stat
    assert "+import redis" in d.patch and "-CACHE = {}" in d.patch and "+REDIS_URL" in d.patch
    assert not d.truncated and d.omitted_lines == 0 and str(d).startswith(d.stat)


def test_patch_is_capped(repo: ScratchRepo) -> None:
    sha = repo.commit_file("big.txt", "".join(f"line {i}\n" for i in range(5000)), "A big file")
    d = show_commit(repo.root, sha, max_lines=50)
    assert d.truncated and len(d.patch.splitlines()) == 50 and d.omitted_lines > 4900
    assert "more lines not shown" in str(d)
    small = show_commit(repo.root, sha, max_chars=1000)
    assert small.truncated and len(small.patch) <= 1000


def test_refusals(repo: ScratchRepo, tmp_path: Path) -> None:
    with pytest.raises(GitError):
        show_commit(repo.root, "deadbeef" * 5)
    with pytest.raises(ValidationError):
        show_commit(repo.root, "HEAD; rm -rf /")
    with pytest.raises(ValidationError):
        show_commit(repo.root, repo.head_sha(), max_lines=0)
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitError):
        show_commit(tmp_path / "plain", repo.head_sha())


def test_a_subject_declared_in_another_charset_reads_as_the_scan_reads_it(repo: ScratchRepo) -> None:
    """``git show --format=%s`` re-encodes a commit whose ``encoding`` header names another charset: a UTF-8 subject
    declared IBM037 (an agent's ``git -c i18n.commitEncoding=IBM037 commit``) showed as nothing at review. The
    subject is read as the revert scan reads it (history's one cat-file reader)."""
    import subprocess

    (repo.root / "b.txt").write_text("b\n", encoding="utf-8")
    repo.git("add", "b.txt")
    subprocess.run(["git", "-c", "i18n.commitEncoding=IBM037", "commit", "-q", "-F", "-"], cwd=repo.root,
                   input="Add b été\n".encode(), check=True)
    d = show_commit(repo.root, repo.head_sha())
    assert (d.sha, d.subject) == (repo.head_sha(), "Add b été")
    assert "b.txt" in d.stat and "+b" in d.patch
    assert show_commit(repo.root, repo.head_sha()[:7]).sha == repo.head_sha()
