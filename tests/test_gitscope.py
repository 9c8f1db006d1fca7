"""Repository discovery and HEAD (synapse_nb.gitscope.repo), against real repos made by git."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import synapse_nb.gitscope as gs
from synapse_nb.errors import GitError
from synapse_nb.gitscope import HeadState, RepoInfo, find_repo, head
from synapse_nb.gitscope.testing import ScratchRepo


@pytest.fixture()
def repo(tmp_path: Path) -> ScratchRepo:
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("a.txt", "one\n", "Add a")
    return r


def test_find_repo_from_root_and_subdir(repo: ScratchRepo) -> None:
    sub = repo.root / "src" / "deep"
    sub.mkdir(parents=True)
    for start in (repo.root, sub, sub / "not-yet-a-file.py", repo.root / "a.txt"):
        info = find_repo(start)
        assert info == RepoInfo(
            work_tree=repo.root.resolve(),
            git_dir=(repo.root / ".git").resolve(),
            common_dir=(repo.root / ".git").resolve(),
            main_work_tree=repo.root.resolve(),
        )
        assert not info.is_linked_worktree


def test_find_repo_default_is_cwd(repo: ScratchRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.root)
    info = find_repo()
    assert info is not None and info.work_tree == repo.root.resolve()


def test_find_repo_outside_any_repo_and_inside_git_dir(tmp_path: Path, repo: ScratchRepo) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_repo(plain) is None
    assert find_repo(repo.root / ".git" / "refs") is None


def test_bare_repo_is_none(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, capture_output=True)
    assert find_repo(bare) is None


def test_head_on_branch_matches_git(repo: ScratchRepo) -> None:
    info = find_repo(repo.root)
    assert info is not None
    assert head(info) == HeadState(branch="main", commit=repo.head_sha())


def test_head_branch_with_slash_and_packed_refs(repo: ScratchRepo) -> None:
    repo.git("checkout", "-q", "-b", "feature/retry")
    sha = repo.commit_file("b.txt", "two\n", "Add b")
    repo.git("pack-refs", "--all")
    assert not (repo.root / ".git" / "refs" / "heads" / "feature" / "retry").exists()
    info = find_repo(repo.root)
    assert info is not None
    assert head(info) == HeadState(branch="feature/retry", commit=sha)


def test_loose_ref_wins_over_stale_packed_ref(repo: ScratchRepo) -> None:
    repo.git("pack-refs", "--all")
    sha = repo.commit_file("c.txt", "three\n", "Add c")  # writes a loose ref newer than the packed one
    info = find_repo(repo.root)
    assert info is not None and head(info).commit == sha


def test_detached_head(repo: ScratchRepo) -> None:
    first = repo.head_sha()
    repo.commit_file("b.txt", "two\n", "Add b")
    repo.git("checkout", "-q", "--detach", first)
    info = find_repo(repo.root)
    assert info is not None
    state = head(info)
    assert state == HeadState(branch=None, commit=first)
    assert state.detached and not state.is_unborn


def test_empty_repo_has_unborn_branch(tmp_path: Path) -> None:
    r = ScratchRepo.init(tmp_path / "empty", branch="trunk")
    info = find_repo(r.root)
    assert info is not None
    state = head(info)
    assert state == HeadState(branch="trunk", commit=None)
    assert state.is_unborn


def test_linked_worktree_shares_main_work_tree(repo: ScratchRepo, tmp_path: Path) -> None:
    wt = tmp_path / "wt dir é"
    repo.git("worktree", "add", "-q", "-b", "side", str(wt))
    side_sha = ScratchRepo(wt).commit_file("s.txt", "side\n", "Side work")
    info = find_repo(wt / "s.txt")
    assert info is not None
    assert info.work_tree == wt.resolve()
    git_says = Path(ScratchRepo(wt).git("rev-parse", "--absolute-git-dir")).resolve()
    assert info.git_dir == git_says
    assert info.git_dir.parent == (repo.root / ".git" / "worktrees").resolve()
    assert info.common_dir == (repo.root / ".git").resolve()
    assert info.main_work_tree == repo.root.resolve()
    assert info.is_linked_worktree
    assert head(info) == HeadState(branch="side", commit=side_sha)
    main = find_repo(repo.root)
    assert main is not None and main.main_work_tree == info.main_work_tree
    assert head(main).branch == "main"
    # a detached worktree keeps its own HEAD
    repo.git("pack-refs", "--all")
    wt2 = tmp_path / "wt2"
    repo.git("worktree", "add", "-q", "--detach", str(wt2), "main")
    info2 = find_repo(wt2)
    assert info2 is not None
    assert head(info2) == HeadState(branch=None, commit=repo.head_sha())


def test_submodule_is_its_own_repo(repo: ScratchRepo, tmp_path: Path) -> None:
    lib = ScratchRepo.init(tmp_path / "lib")
    lib_sha = lib.commit_file("lib.py", "x = 1\n", "Lib")
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib.root), "vendor/lib")
    sub = repo.root / "vendor" / "lib"
    assert (sub / ".git").is_file()
    info = find_repo(sub / "lib.py")
    assert info is not None
    assert info.work_tree == sub.resolve()
    assert info.git_dir == (repo.root / ".git" / "modules" / "vendor" / "lib").resolve()
    assert info.main_work_tree == sub.resolve()
    assert head(info).commit == lib_sha


def test_corrupt_head_raises_git_error(repo: ScratchRepo) -> None:
    info = find_repo(repo.root)
    assert info is not None
    (info.git_dir / "HEAD").write_text("garbage\n")
    with pytest.raises(GitError, match="HEAD"):
        head(info)
    (info.git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (info.git_dir / "refs" / "heads" / "main").write_text("not-a-sha\n")
    with pytest.raises(GitError, match="expected a commit sha"):
        head(info)


def test_gitdir_file_pointing_nowhere_is_skipped(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: ../missing\n")
    assert find_repo(broken) is None


def test_import_is_light_and_lazy() -> None:
    code = (
        "import sys, synapse_nb.gitscope as g\n"
        "heavy = [m for m in ('watchdog', 'pandas', 'lancedb', 'sklearn', 'typer') "
        "if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    with pytest.raises(AttributeError):
        _ = gs.no_such_name  # type: ignore[attr-defined]


def test_gitscope_never_imports_the_vault_at_module_level() -> None:
    import ast

    for source in sorted(Path(gs.__file__).parent.glob("*.py")):
        tree = ast.parse(source.read_text())
        for node in tree.body:  # module level only; lazy imports inside functions are fine
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith(("synapse_nb.vault", "synapse_nb.kinds")), source
                assert not (node.module == "synapse_nb" and any(a.name == "open_vault" for a in node.names)), source
            if isinstance(node, ast.Import):
                assert all(not a.name.startswith("synapse_nb.vault") for a in node.names), source
