"""Repository discovery and HEAD, read straight from the files: no ``git`` process.

:func:`find_repo` walks up from a path to the work tree that contains it and
resolves the three directories git distinguishes (this work tree's git dir, the
shared "common" dir, and the main work tree). :func:`head` reads ``HEAD``, the
loose refs and ``packed-refs`` to say which branch and commit are checked out.

Both are pure file reads, well under a millisecond, so the vault can call them
on every open.

Examples
--------
>>> from synapse_nb.gitscope import find_repo, head
>>> info = find_repo("/")  # doctest: +SKIP
>>> info is None or isinstance(head(info).branch, (str, type(None)))  # doctest: +SKIP
True
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from synapse_nb.errors import GitError

__all__ = ["TRUNKS", "HeadState", "RepoInfo", "default_branch", "default_branches", "find_repo", "head"]

_SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_MAX_SYMREF_DEPTH = 5


@dataclass(frozen=True)
class RepoInfo:
    """Where a git work tree and its git directories are.

    Attributes
    ----------
    work_tree : Path
        Root of the work tree that contains the path given to :func:`find_repo`.
    git_dir : Path
        This work tree's git dir (``.git`` for the main work tree,
        ``.git/worktrees/NAME`` for a linked worktree, ``.git/modules/NAME`` for a submodule).
    common_dir : Path
        The git dir shared by all worktrees (objects, refs); equal to ``git_dir``
        for the main work tree.
    main_work_tree : Path
        Root of the main work tree; every linked worktree of one repository has
        the same value, so ``main_work_tree / ".synapse"`` is one vault for all of them.

    Examples
    --------
    >>> info = RepoInfo(Path("/r"), Path("/r/.git"), Path("/r/.git"), Path("/r"))
    >>> info.is_linked_worktree
    False
    """

    work_tree: Path
    git_dir: Path
    common_dir: Path
    main_work_tree: Path

    @property
    def is_linked_worktree(self) -> bool:
        """True for a worktree made by ``git worktree add`` (its git dir is not the common dir)."""
        return self.git_dir != self.common_dir


@dataclass(frozen=True)
class HeadState:
    """What is checked out.

    Attributes
    ----------
    branch : str or None
        Short branch name (``"main"``, ``"feature/x"``); None when HEAD is detached.
        A HEAD pointing outside ``refs/heads/`` keeps its full ref name.
    commit : str or None
        Full commit sha; None on an unborn branch (a repository with no commits yet).

    Examples
    --------
    >>> HeadState(branch="main", commit=None).is_unborn
    True
    """

    branch: str | None
    commit: str | None

    @property
    def detached(self) -> bool:
        """True when HEAD names a commit rather than a branch."""
        return self.branch is None

    @property
    def is_unborn(self) -> bool:
        """True when HEAD names a branch that has no commit yet."""
        return self.commit is None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise GitError(f"cannot read git file {path}: {exc.strerror or exc}") from exc


def _looks_like_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (
        (path / "commondir").is_file() or (path / "objects").is_dir()
    )


def _gitdir_from_file(dotgit: Path) -> Path | None:
    """Resolve a ``.git`` *file* (``gitdir: <path>``, used by worktrees and submodules)."""
    text = _read_text(dotgit)
    if text is None:
        return None
    first = text.split("\n")[0].strip() if text.strip() else ""
    if not first.startswith("gitdir:"):
        return None
    target = Path(first[len("gitdir:") :].strip())
    if not target.is_absolute():
        target = dotgit.parent / target
    return Path(os.path.realpath(target))


def _config_worktree(common_dir: Path) -> Path | None:
    """``core.worktree`` from the common dir's config (submodules set it), resolved."""
    text = _read_text(common_dir / "config")
    if text is None:
        return None
    section = ""
    for raw in text.split("\n"):  # git's own line breaks only (a name may hold U+2028)
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
            continue
        if section == "core" and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "worktree":
                value = value.strip().strip('"')
                target = Path(value)
                if not target.is_absolute():
                    target = common_dir / target
                return Path(os.path.realpath(target))
    return None


def _points_back(work_tree: Path, common_dir: Path) -> bool:
    """Whether ``work_tree``'s ``.git`` is ``common_dir`` (a folder, or a ``gitdir:`` file naming it): a configured
    ``core.worktree`` counts only then (review 7 set it in a clone's config to a folder of its own, and a linked
    worktree's vault, and its pin, moved there)."""
    dot = work_tree / ".git"
    if dot.is_dir():
        return Path(os.path.realpath(dot)) == Path(os.path.realpath(common_dir))
    text = _read_text(dot)
    if text is None or not text.startswith("gitdir:"):
        return False
    target = Path(text[len("gitdir:"):].strip())
    target = target if target.is_absolute() else work_tree / target
    return Path(os.path.realpath(target)) == Path(os.path.realpath(common_dir))


def _main_work_tree(work_tree: Path, git_dir: Path, common_dir: Path) -> Path:
    if git_dir == common_dir:
        return work_tree
    if common_dir.name == ".git":  # the usual layout: the main work tree is the folder that holds .git
        return common_dir.parent
    configured = _config_worktree(common_dir)
    if configured is not None and _points_back(configured, common_dir):  # a submodule's work tree
        return configured
    # A linked worktree of a bare repository: there is no main work tree; the
    # bare directory itself is the one place all worktrees share.
    return common_dir


def find_repo(path: str | Path | None = None) -> RepoInfo | None:
    """Find the git work tree containing ``path`` (default: the current directory).

    Walks up from ``path`` looking for ``.git`` (a directory, or a file saying
    ``gitdir: ...`` as in linked worktrees and submodules) and follows a
    ``commondir`` file to the shared git dir. Reads files only; never runs git.

    Parameters
    ----------
    path : str or Path, optional
        A file or folder inside the work tree. Need not exist (its nearest existing parent is used).

    Returns
    -------
    RepoInfo or None
        None when no work tree contains ``path`` (including bare repositories and
        paths inside a ``.git`` directory).

    Examples
    --------
    >>> find_repo("/")  # the root of the file system is not a work tree
    """
    start = Path(os.path.realpath(Path.cwd() if path is None else Path(path).expanduser()))
    while not start.exists() and start != start.parent:
        start = start.parent
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        if directory.name == ".git":  # inside a git dir, not a work tree
            return None
        dotgit = directory / ".git"
        if dotgit.is_dir():
            git_dir = Path(os.path.realpath(dotgit))
        elif dotgit.is_file():
            resolved = _gitdir_from_file(dotgit)
            if resolved is None:
                continue
            git_dir = resolved
        else:
            continue
        if not _looks_like_git_dir(git_dir):
            continue
        common_text = _read_text(git_dir / "commondir")
        if common_text is not None and common_text.strip():
            common = Path(common_text.strip())
            common_dir = Path(os.path.realpath(common if common.is_absolute() else git_dir / common))
        else:
            common_dir = git_dir
        return RepoInfo(
            work_tree=directory,
            git_dir=git_dir,
            common_dir=common_dir,
            main_work_tree=_main_work_tree(directory, git_dir, common_dir),
        )
    return None


def _packed_ref(common_dir: Path, ref: str) -> str | None:
    text = _read_text(common_dir / "packed-refs")
    if text is None:
        return None
    for line in (x.rstrip("\r") for x in text.split("\n")):  # a ref's name may hold U+2028: git's breaks only
        if not line or line[0] in "#^":
            continue
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha.strip()
    return None


def _is_per_worktree_ref(ref: str) -> bool:
    return ref == "HEAD" or ref.startswith(("refs/worktree/", "refs/bisect/", "refs/rewritten/"))


def _resolve_ref(repo: RepoInfo, ref: str) -> str | None:
    """Follow ``ref`` (symbolic refs too) to a sha, or None if it does not exist yet."""
    for _ in range(_MAX_SYMREF_DEPTH):
        base = repo.git_dir if _is_per_worktree_ref(ref) else repo.common_dir
        text = _read_text(base / ref)
        if text is None:
            text = _packed_ref(repo.common_dir, ref)
            if text is None:
                return None
        value = text.strip()
        if value.startswith("ref:"):
            ref = value[4:].strip()
            continue
        if not _SHA_RE.match(value):
            raise GitError(f"ref {ref} in {repo.common_dir} holds {value[:60]!r}; expected a commit sha")
        return value
    raise GitError(f"ref {ref} in {repo.common_dir} is a chain of more than {_MAX_SYMREF_DEPTH} symbolic refs")


def head(repo: RepoInfo) -> HeadState:
    """Read which branch and commit ``repo``'s work tree has checked out, without running git.

    Parameters
    ----------
    repo : RepoInfo
        From :func:`find_repo`.

    Returns
    -------
    HeadState
        ``branch`` None when detached; ``commit`` None on an unborn branch.

    Raises
    ------
    GitError
        HEAD is missing or unreadable, or a ref holds something that is not a sha,
        or the repository uses the reftable format (not read here).

    Examples
    --------
    >>> info = find_repo()  # doctest: +SKIP
    >>> head(info)  # doctest: +SKIP
    HeadState(branch='main', commit='e257bdd...')
    """
    text = _read_text(repo.git_dir / "HEAD")
    if text is None:
        raise GitError(f"no HEAD file in {repo.git_dir}; expected a git directory")
    value = text.strip()
    if (repo.common_dir / "reftable").is_dir():
        raise GitError(f"{repo.common_dir} uses the reftable ref format; only the files ref format is supported")
    if value.startswith("ref:"):
        ref = value[4:].strip()
        branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
        return HeadState(branch=branch, commit=_resolve_ref(repo, ref))
    if _SHA_RE.match(value):
        return HeadState(branch=None, commit=value)
    raise GitError(f"HEAD in {repo.git_dir} holds {value[:60]!r}; expected 'ref: refs/heads/<branch>' or a sha")


#: Branch names that are a repository's trunk whatever its refs say: their lessons hold on every branch.
TRUNKS = ("main", "master")


def default_branches(repo: RepoInfo | None) -> frozenset[str]:
    """The branches whose approved lessons hold on every branch: ``main`` and ``master`` whether or not they exist
    (an agent's shell deletes a branch or repoints ``refs/remotes/origin/HEAD`` as easily as it reads them; review
    12 silenced every lesson a person approved on main with one ``git symbolic-ref``), and origin's HEAD's branch.

    >>> sorted(default_branches(None))
    ['main', 'master']
    """
    out = set(TRUNKS)
    if repo is not None:
        got = default_branch(repo)
        if got is not None:
            out.add(got)
    return frozenset(out)


def default_branch(repo: RepoInfo) -> str | None:
    """The repository's default branch: origin's HEAD, else ``main``, else ``master``; None when none exists.

    Read from files only, like :func:`head`; an unreadable ref is not a default branch.
    """
    try:
        origin = _read_text(repo.common_dir / "refs" / "remotes" / "origin" / "HEAD")
    except GitError:
        origin = None
    if origin is not None and origin.strip().startswith("ref: refs/remotes/origin/"):
        return origin.strip()[len("ref: refs/remotes/origin/"):]
    for name in ("main", "master"):
        try:
            if _resolve_ref(repo, f"refs/heads/{name}"):
                return name
        except (GitError, ValueError):  # an unreadable ref (ValueError: it names a path with a NUL byte)
            continue
    return None
