"""The vault folder and git: it ignores itself, and git is asked what it still tracks of it.

A vault is a binary SQLite file that git must never stage: a ``git revert`` of the commit that
added it deletes it, a ``git stash -u`` or a checkout replaces it. So, the way pytest and ruff treat
their caches, the vault folder holds its own ``.gitignore`` containing ``*`` (written when the vault
is created, and on open when missing), which keeps everything inside out of ``git add -A`` whatever
the user's own ignore rules. Memory goes into git only on purpose, as an export (sorted JSON Lines).

- :func:`ensure_gitignore` writes that file; it never fails (a read-only folder is skipped).
- :func:`repo_prefix` gives the vault folder's repository-relative path (``".synapse/"``), so lesson
  scans, verify and staleness can leave the vault's own files out.
- :func:`tracked_files` asks git (one ``git ls-files``) which files of the folder are still tracked,
  e.g. committed by an older version; :func:`untrack_command` is the one command that fixes it.
- :func:`tracked_path` says whether git tracks one file of the folder (the vault's database: a vault that came
  with a clone), :func:`committed_path` whether the last commit holds it, and :func:`symlink_exit` finds the
  symlink through which a folder leaves its project; they make a vault *borrowed* (:mod:`synapse_nb.borrowed`).

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> ensure_gitignore(d), (d / ".gitignore").read_text().splitlines()[-1]
(True, '*')
>>> ensure_gitignore(d)  # already there: left alone
False
>>> untrack_command(".synapse/")
'git rm -r --cached .synapse'
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from synapse_nb.errors import GitError
from synapse_nb.gitscope.repo import RepoInfo, find_repo

__all__ = ["GITIGNORE_NAME", "GITIGNORE_TEXT", "committed_in", "ensure_gitignore",
           "holds_only_vault_files", "in_prefix", "repo_prefix", "repos_holding", "symlink_exit", "tracked_files",
           "tracked_in", "tracked_path", "untrack_command"]

GITIGNORE_NAME = ".gitignore"
GITIGNORE_TEXT = (
    "# Written by synapse-nb: git never stages anything in the vault folder (a revert, stash or checkout\n"
    "# would replace or delete the vault). Keep memory in git on purpose with `synapse-nb memory export`.\n"
    "*\n"
)
#: At most this many tracked paths are reported (a warning needs a few examples, not a listing).
TRACKED_LIMIT = 1000


def ensure_gitignore(folder: str | Path) -> bool:
    """Write ``folder/.gitignore`` (``*``) unless it exists; True when written. Never raises.

    An existing ``.gitignore`` is left as it is (the user may have edited it). A folder that cannot
    be written (read-only, gone, not a folder) is skipped silently: ignoring git must never stop a
    vault from opening.
    """
    path = Path(folder) / GITIGNORE_NAME
    try:
        if path.exists():
            return False
        with open(path, "x", encoding="utf-8") as fh:  # "x": two processes never both write it
            fh.write(GITIGNORE_TEXT)
        return True
    except OSError:
        return False


_VAULT_ENTRY = re.compile(r"^(synapse\.db(-wal|-shm|-journal)?|index|cache|[\w.-]+\.lock|hook\.log(\.1)?|\.gitignore|"
                          r"agent-sessions\.json)$")


def holds_only_vault_files(folder: Path, limit: int = 64) -> bool:
    """True when every entry of ``folder`` is one synapse-nb writes (looks at ``limit`` entries at most): a folder
    that may be given the vault's ``.gitignore``."""
    try:
        with os.scandir(folder) as it:
            for n, entry in enumerate(it):
                if n >= limit or not _VAULT_ENTRY.match(entry.name):
                    return False
    except OSError:
        return False
    return True


def repo_prefix(repo: RepoInfo | None, folder: str | Path) -> str | None:
    """``folder`` relative to the repository root, as ``"a/b/"`` (None when outside, or the root itself).

    Paths git prints (diffs, ``ls-files``) are relative to the root of the repository, the same for
    every work tree; the vault lives in the main work tree, so both roots are tried.

    >>> repo_prefix(RepoInfo(Path("/r"), Path("/r/.git"), Path("/r/.git"), Path("/r")), "/r/.synapse")
    '.synapse/'
    """
    if repo is None:
        return None
    target = Path(os.path.realpath(folder))
    for root in (repo.work_tree, repo.main_work_tree):
        try:
            rel = target.relative_to(Path(os.path.realpath(root)))
        except ValueError:
            continue
        return rel.as_posix() + "/" if rel.parts else None
    return None


def repos_holding(folder: str | Path) -> list[tuple[RepoInfo, str]]:
    """Every repository whose work tree holds ``folder``, innermost first, each with the folder's prefix in it
    (:func:`repo_prefix`; "" when the folder is that work tree's root): a vault folder made a repository of its own
    (``git init .synapse``), or one reached in a repository nested in the project's (review 7: a worktree nested in
    its own repository, eight repositories deep), is still held by the project's, whose records, index and history say
    where it came from. Walks up to the file system's root.

    >>> repos_holding("/")
    []
    """
    out: list[tuple[RepoInfo, str]] = []
    seen: dict[Path, int] = {}
    at = Path(os.path.realpath(folder))
    while at.is_dir():
        repo = find_repo(at)
        if repo is None:
            break
        view = (repo, repo_prefix(repo, folder) or "")
        # one repository seen twice: the outer view is the real path (review 8: a `.git` file in `.synapse` naming
        # the project's git dir made the vault folder a "work tree" of it, where git tracked no `synapse.db`)
        if repo.common_dir in seen:
            out[seen[repo.common_dir]] = view
        else:
            seen[repo.common_dir] = len(out)
            out.append(view)
        root = Path(os.path.realpath(repo.work_tree))
        if root.parent == root or not at.is_relative_to(root):
            break
        at = root.parent
    return out


def in_prefix(prefix: str | None, path: str) -> bool:
    """Whether the repository-relative ``path`` lies inside the folder ``prefix`` (from :func:`repo_prefix`).

    >>> (in_prefix(".synapse/", "./.synapse/synapse.db"), in_prefix(".synapse/", ".synapse"),
    ...  in_prefix(".synapse/", "src/a.py"))
    (True, True, False)
    """
    if not prefix or not isinstance(path, str):
        return False
    text = path.replace(os.sep, "/")
    while text.startswith("./"):
        text = text[2:]
    return (text.rstrip("/") + "/").startswith(prefix)


def _index_stamp(repo: RepoInfo) -> tuple[int, ...] | None:
    """What changes whenever git rewrites the work tree's index (``git add``, ``rm``, commit, checkout): its
    times, size and inode; ``()`` while there is no index yet (a new repository); None when it cannot be read."""
    try:
        st = (repo.git_dir / "index").stat()
    except FileNotFoundError:
        return ()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


#: (repository git dir, prefix) -> (index stamp, paths): what ``git ls-files`` said while the index was unchanged
_TRACKED: dict[tuple[str, str], tuple[tuple[int, ...], tuple[str, ...]]] = {}


def tracked_files(folder: str | Path, *, timeout: float = 10.0) -> tuple[str | None, tuple[str, ...]]:
    """(prefix, paths): which files inside ``folder`` git tracks, repository-relative and sorted.

    One ``git ls-files`` against the repository that contains ``folder``; ``(None, ())`` outside git,
    when git is missing or cannot answer in ``timeout`` seconds (a status must never hang on git).
    At most :data:`TRACKED_LIMIT` paths are returned. The answer is kept per git index change (its
    modification time, size and inode), so a process that asks often (the MCP server's ``get_status``)
    runs git again only after the index changed.
    """
    from synapse_nb.gitscope._git import run_git

    repo = find_repo(folder)
    prefix = repo_prefix(repo, folder)
    if repo is None or prefix is None:
        return None, ()
    key, stamp = (str(repo.git_dir), prefix), _index_stamp(repo)
    kept = _TRACKED.get(key)
    if stamp is not None and kept is not None and kept[0] == stamp:
        return prefix, kept[1]
    try:
        out = run_git(repo, "--literal-pathspecs", "ls-files", "-z", "--full-name", "--", prefix, timeout=timeout)
    except GitError:
        return prefix, ()
    paths = tuple(sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)[:TRACKED_LIMIT])
    if stamp is not None and stamp == _index_stamp(repo):  # unchanged while git ran: safe to keep
        _TRACKED[key] = (stamp, paths)
    return prefix, paths


def untrack_command(prefix: str) -> str:
    """The command that stops git tracking the folder ``prefix`` (run at the repository root; files stay on disk)."""
    return f"git rm -r --cached {shlex.quote(prefix.rstrip('/'))}"


def tracked_path(folder: str | Path, name: str, *, timeout: float = 5.0) -> str | None:
    """The repository-relative path of ``folder/name`` when git tracks it (it is in the index), else None.

    One ``git ls-files`` for that one path; None outside git, for a folder the repository does not contain, and
    when git is missing or cannot answer in ``timeout`` seconds. When the index shows at a glance that git tracks
    nothing under ``folder`` (:func:`_index_lacks`), git is not asked: every vault open pays this check.
    """
    repo = find_repo(folder)
    prefix = repo_prefix(repo, folder)
    if repo is None or prefix is None:
        return None
    return tracked_in(repo, prefix, name, timeout=timeout)


def tracked_in(repo: RepoInfo, prefix: str, name: str, *, timeout: float = 5.0) -> str | None:
    """:func:`tracked_path` in ``repo`` for the file ``prefix + name`` (``prefix``: a folder as
    :func:`repo_prefix` gives it, or "" for the work tree's root)."""
    if prefix and _index_lacks(repo, prefix):
        return None
    return _listed(repo, ("ls-files", "-z", "--full-name", "--", prefix + name), timeout)


def committed_in(repo: RepoInfo, prefix: str, name: str, *, timeout: float = 5.0) -> str | None:
    """The repository-relative path of ``prefix + name`` when the work tree's last commit (``HEAD``) holds it, else
    None: a vault that came with a clone and was then taken out of the index only (``git rm --cached``, not
    committed). One ``git ls-tree``; None before the first commit, and when git cannot answer."""
    return _listed(repo, ("ls-tree", "-z", "--full-name", "--name-only", "HEAD", "--", prefix + name), timeout)


def _listed(repo: RepoInfo, args: tuple[str, ...], timeout: float) -> str | None:
    """The first path git lists for ``args`` (NUL-separated; one path asked for), or None (none, or git failed)."""
    from synapse_nb.gitscope._git import run_git

    try:
        out = run_git(repo, "--literal-pathspecs", *args, timeout=timeout)
    except GitError:
        return None
    paths = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    return paths[0] if paths else None


def _index_lacks(repo: RepoInfo, prefix: str, limit: int = 64 << 20) -> bool:
    """True when the work tree's index certainly holds no path under ``prefix`` (a repository-relative folder
    ending in ``/``): no index yet, or an index of version 2 or 3 (whole paths, no prefix compression) that is
    not split (no ``sharedindex.*`` beside it) and whose bytes do not contain ``prefix`` anywhere (a sparse
    index's directory entry ``prefix`` would). False whenever in doubt (version 4, split, larger than
    ``limit``, unreadable): then git is asked."""
    index = repo.git_dir / "index"
    try:
        if not index.exists():
            return True
        if index.stat().st_size > limit or any(repo.git_dir.glob("sharedindex.*")):
            return False
        data = index.read_bytes()
    except OSError:
        return False
    if data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
        return False
    return prefix.encode("utf-8", "surrogateescape") not in data


def symlink_exit(folder: str | Path, root: str | Path) -> tuple[Path, Path] | None:
    """(symlink, where it points) when ``folder`` is reached through a symlink that leads out of ``root``.

    None when ``folder`` (resolved) lies inside ``root`` (resolved): a symlink that stays in the project, or none;
    and when ``folder`` is not below ``root`` (a folder named outside the project is nobody's symlink into it).
    The symlink reported is the first component below ``root`` that is one (``root/.synapse`` itself, most often).

    >>> import tempfile, pathlib, os
    >>> root, away = pathlib.Path(tempfile.mkdtemp()), pathlib.Path(tempfile.mkdtemp())
    >>> os.symlink(away, root / ".synapse")
    >>> symlink_exit(root / ".synapse", root) == (root / ".synapse", away.resolve())
    True
    >>> symlink_exit(root / "plain", root) is None
    True
    """
    folder, root = Path(folder), Path(root)
    real_root = Path(os.path.realpath(root))

    def inside(p: Path) -> bool:
        real = Path(os.path.realpath(p))
        return real == real_root or real_root in real.parents

    if inside(folder):
        return None
    try:
        rel = folder.relative_to(root)
    except ValueError:
        return None
    step = root
    for part in rel.parts:  # the first step that leaves the root is the symlink (its parent was inside)
        step = step / part
        if not inside(step):
            return step, Path(os.path.realpath(step))
    return None  # pragma: no cover - folder itself left the root
