"""What git reports as changed in a work tree: the one ``git status`` parser of the package.

The notebook's automatic checkpoints and the watcher (``synapse-nb watch``) both ask git which files
differ from HEAD; they ask here. ``git status`` runs without taking the index lock
(``GIT_OPTIONAL_LOCKS=0``), so asking never writes the index (which would wake the watcher again).

Examples
--------
>>> parse_status_z(b" M a.py\\0?? new dir/b.py\\0D  gone.py\\0")
['a.py', 'gone.py', 'new dir/b.py']
"""

from __future__ import annotations

from pathlib import Path

from synapse_nb.gitscope._git import DEFAULT_TIMEOUT, run_git
from synapse_nb.gitscope.repo import RepoInfo

__all__ = ["changed_paths", "parse_status_z"]


def parse_status_z(out: bytes) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z --no-renames`` output, sorted and unique.

    Each entry is ``XY PATH`` (two status letters, a space, the path) ended by a NUL; with
    ``--no-renames`` a rename is a deletion plus an addition, so every entry is one path.
    Paths are decoded as UTF-8 with ``surrogateescape`` (no name is lost or altered).
    """
    paths = {field[3:] for field in out.decode("utf-8", "surrogateescape").split("\0") if len(field) > 3}
    return sorted(paths)


def changed_paths(repo: RepoInfo, *, exclude: str | Path | None = None,
                  timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """Paths that differ from HEAD (staged, unstaged, untracked), relative to the work tree, sorted.

    Parameters
    ----------
    repo : RepoInfo
        The work tree to ask about.
    exclude : path, optional
        A folder whose files never count (the vault folder, which lives in the work tree, so the
        vault's own writes are never a change).
    timeout : float
        Seconds git may take.

    Raises
    ------
    GitError
        git is missing, timed out or failed.

    Examples
    --------
    >>> changed_paths(find_repo("."), exclude=".synapse")  # doctest: +SKIP
    ['src/auth.py', 'tests/test_auth.py']
    """
    out = run_git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", timeout=timeout)
    paths = parse_status_z(out)
    if exclude is None:
        return paths
    try:
        prefix = Path(exclude).resolve().relative_to(Path(repo.work_tree).resolve()).as_posix().rstrip("/") + "/"
    except ValueError:  # outside this work tree (a linked worktree's vault lives in the main one)
        return paths
    return [p for p in paths if not (p + "/").startswith(prefix)]
