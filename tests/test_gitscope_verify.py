"""Memory follows the code (synapse_nb.gitscope.verify): path status and commits touching paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb.errors import GitError, ValidationError
from synapse_nb.gitscope import PathStatus, check_paths, commits_touching, find_repo
from synapse_nb.gitscope.testing import ScratchRepo


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.write("src/auth.py", "".join(f"def f{i}():\n    return {i}\n" for i in range(20)))
    r.write("src/my file ü.py", "x = 1\n")
    r.write("docs/a*b.md", "star\n")
    r.write("gone.txt", "bye\n")
    r.git("add", "-A")
    r.git("commit", "-q", "-m", "Initial")
    return r


def test_exists_missing_renamed_outside(repo: ScratchRepo, tmp_path: Path) -> None:
    start = repo.head_sha()
    (repo.root / "src" / "security").mkdir()
    repo.git("mv", "src/auth.py", "src/security/auth.py")
    repo.git("rm", "-q", "gone.txt")
    repo.git("commit", "-q", "-m", "Move auth, drop gone")
    repo.git("mv", "src/security/auth.py", "src/security/jwt.py")
    repo.git("commit", "-q", "-m", "Rename again")
    secret = tmp_path / "secret.txt"
    secret.write_text("never read")
    paths = [
        "src/auth.py",
        "src/my file ü.py",
        "docs/a*b.md",
        "docs",
        "docs/",
        "./src//my file ü.py",
        str(repo.root / "docs" / "a*b.md"),
        "gone.txt",
        "never-existed.py",
        "../secret.txt",
        "src/../../secret.txt",
        str(secret),
        ".git/config",
        "",
    ]
    got = check_paths(find_repo(repo.root), paths)  # type: ignore[arg-type]
    assert list(got) == sorted(paths)
    assert got["src/auth.py"] == PathStatus("src/auth.py", "renamed", "src/security/jwt.py")
    for p in ["src/my file ü.py", "docs/a*b.md", "docs", "docs/", "./src//my file ü.py",
              str(repo.root / "docs/a*b.md")]:
        assert got[p].state == "exists", p
    assert got["gone.txt"].state == "missing" and got["never-existed.py"].state == "missing"
    for p in ["../secret.txt", "src/../../secret.txt", str(secret), ".git/config", ""]:
        assert got[p] == PathStatus(p, "outside")
    assert got["src/auth.py"].ok and not got["gone.txt"].ok
    # with `since`, renames come from one diff start..HEAD (direct mapping)
    exact = check_paths(repo.root, ["src/auth.py", "gone.txt"], since=start)
    assert exact["src/auth.py"].renamed_to == "src/security/jwt.py"
    assert exact["gone.txt"].state == "missing"


def test_renamed_then_deleted_is_missing(repo: ScratchRepo) -> None:
    repo.git("mv", "src/auth.py", "old_auth.py")
    repo.git("commit", "-q", "-m", "Move")
    repo.git("rm", "-q", "old_auth.py")
    repo.git("commit", "-q", "-m", "Delete")
    assert check_paths(repo.root, ["src/auth.py"])["src/auth.py"].state == "missing"


def test_small_window_still_sees_the_newest_rename(repo: ScratchRepo) -> None:
    repo.git("mv", "src/auth.py", "src/jwt.py")
    repo.git("commit", "-q", "-m", "Move")
    assert check_paths(repo.root, ["src/auth.py"], rename_window=1)["src/auth.py"].state == "renamed"


def test_empty_repo_and_bad_input(tmp_path: Path, repo: ScratchRepo) -> None:
    empty = ScratchRepo.init(tmp_path / "empty")
    assert check_paths(empty.root, ["a.py"]) == {"a.py": PathStatus("a.py", "missing")}
    assert commits_touching(empty.root, ["a.py"], "2020-01-01T00:00:00Z") == []
    with pytest.raises(ValidationError, match="single string"):
        check_paths(repo.root, "src/auth.py")
    with pytest.raises(ValidationError, match="since"):
        check_paths(repo.root, ["a"], since="not a sha")
    with pytest.raises(ValidationError, match="ISO 8601"):
        commits_touching(repo.root, ["a"], "yesterday")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError):
        check_paths(plain, ["a"])


def test_commits_touching_after_a_timestamp(repo: ScratchRepo) -> None:
    first = repo.git("log", "-1", "--format=%cI")
    repo.commit_file("src/auth.py", "changed\n", "Rotate JWT keys")
    repo.commit_file("unrelated.txt", "x\n", "Unrelated")
    repo.commit_file("docs/a*b.md", "new\n", "Docs with a star")
    repo.commit_file("docs/ab.md", "other\n", "Not the star file")
    got = commits_touching(repo.root, ["src/auth.py", "docs/a*b.md", "../outside.txt"], first)
    assert [c.subject for c in got] == ["Rotate JWT keys", "Docs with a star"]  # strictly after, literal '*'
    assert all(c.date is not None and c.date.endswith("Z") for c in got)
    assert [c.date for c in got] == sorted(c.date for c in got)  # type: ignore[type-var]
    assert commits_touching(repo.root, ["docs"], first)[-1].subject == "Not the star file"
    assert commits_touching(repo.root, ["../outside.txt"], first) == []
    naive = first.replace("+00:00", "")
    assert [c.subject for c in commits_touching(repo.root, ["src/auth.py"], naive)] == ["Rotate JWT keys"]
