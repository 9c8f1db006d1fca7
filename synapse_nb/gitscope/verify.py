"""Memory follows the code: do remembered paths still exist, were they renamed, what touched them?

- :func:`check_paths` says, for many paths at once, whether each exists at HEAD,
  was renamed (and to what), is missing, or is outside the repository (refused,
  never read). Two git processes at most, whatever the number of paths.
- :func:`commits_touching` lists the commits after a timestamp that changed any
  of the paths (for staleness: "this checkpoint mentions src/auth.py, changed since").

Paths are taken relative to the work tree root (absolute paths inside the work
tree are accepted). A path with a ``..`` component, an absolute path outside the
work tree, a path inside ``.git`` or an empty path is reported ``outside``.

Examples
--------
>>> from synapse_nb.gitscope import find_repo, check_paths
>>> check_paths(find_repo(), ["src/auth.py", "../etc/passwd"])  # doctest: +SKIP
{'src/auth.py': PathStatus(path='src/auth.py', state='renamed', renamed_to='src/security/auth.py'),
 '../etc/passwd': PathStatus(path='../etc/passwd', state='outside', renamed_to=None)}
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from synapse_nb.errors import ValidationError
from synapse_nb.gitscope._git import coerce_repo, run_git, validate_sha
from synapse_nb.gitscope.repo import RepoInfo, head

if TYPE_CHECKING:
    from synapse_nb.gitscope.reverts import CommitInfo

__all__ = ["PATH_STATES", "PathStatus", "check_paths", "commits_touching"]

PATH_STATES = ("exists", "renamed", "missing", "outside")
_CHUNK = 500


@dataclass(frozen=True)
class PathStatus:
    """What became of one remembered path.

    Attributes
    ----------
    path : str
        The path as given.
    state : str
        ``"exists"`` (a file or folder at HEAD), ``"renamed"`` (git recorded a rename
        chain ending at a path that exists at HEAD), ``"missing"`` or ``"outside"``
        (not a path inside the work tree: refused, never looked at).
    renamed_to : str or None
        The path at HEAD when ``state == "renamed"``.

    Examples
    --------
    >>> PathStatus("a.py", "renamed", "b.py").ok
    True
    """

    path: str
    state: str
    renamed_to: str | None = None

    @property
    def ok(self) -> bool:
        """True when the path (or what it was renamed to) exists at HEAD."""
        return self.state in ("exists", "renamed")


def _relative(repo: RepoInfo, raw: object) -> str | None:
    """The repo-relative POSIX path for ``raw``, or None when it is outside / malformed."""
    if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
        return None
    text = raw.replace(os.sep, "/")
    if os.path.isabs(text):
        for root in (str(repo.work_tree), os.path.realpath(repo.work_tree)):
            prefix = root.rstrip("/") + "/"
            if text.startswith(prefix):
                text = text[len(prefix) :]
                break
        else:
            return None
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if not parts or ".." in parts or parts[0] == ".git":
        return None
    return "/".join(parts)


def _head_paths(repo: RepoInfo, rev: str) -> tuple[set[str], set[str]]:
    out = run_git(repo, "ls-tree", "-r", "-z", "--name-only", "--full-tree", rev)
    files = {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}
    dirs: set[str] = set()
    for f in files:
        parent = f.rpartition("/")[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    return files, dirs


def _rename_pairs(fields: list[str]) -> dict[str, str]:
    """``R<score> old new`` triples from ``--name-status -z`` output, as {old: new}."""
    pairs: dict[str, str] = {}
    i = 0
    while i < len(fields):
        if fields[i].startswith("R") and i + 2 < len(fields):
            pairs[fields[i + 1]] = fields[i + 2]
            i += 3
        else:
            i += 1
    return pairs


def _renames(repo: RepoInfo, since: str | None, window: int) -> list[dict[str, str]]:
    """Renames as one {old: new} map per commit, oldest first (one map for ``since..HEAD``)."""
    if since is not None:
        out = run_git(repo, "diff", "-M", "-z", "--name-status", "--diff-filter=R", since, "HEAD")
        return [_rename_pairs(out.decode("utf-8", "surrogateescape").split("\0"))]
    out = run_git(
        repo, "log", "-M", "-z", "--name-status", "--diff-filter=R", f"--max-count={window}", "--format=%x1e", "HEAD"
    )
    maps = []
    for chunk in reversed(out.split(b"\x1e")):  # git prints newest first
        fields = [f.lstrip("\n") for f in chunk.decode("utf-8", "surrogateescape").split("\0")]
        pairs = _rename_pairs(fields)
        if pairs:
            maps.append(pairs)
    return maps


def check_paths(
    repo: RepoInfo | str | Path,
    paths: Iterable[str],
    *,
    since: str | None = None,
    rename_window: int = 2000,
) -> dict[str, PathStatus]:
    """Check many remembered paths against HEAD in one or two git calls.

    Parameters
    ----------
    repo : RepoInfo or path
        The repository.
    paths : iterable of str
        Paths relative to the work tree root (or absolute inside it).
    since : str, optional
        A commit sha the paths were remembered at: renames are read from
        ``git diff -M <since> HEAD`` (exact). Without it, renames come from the
        newest ``rename_window`` commits of ``git log -M`` on HEAD.
    rename_window : int
        Commits searched for renames when ``since`` is not given.

    Returns
    -------
    dict of str to PathStatus
        Keyed by the paths as given, in sorted order.

    Raises
    ------
    GitError
        Not a repository, or git cannot read it.
    ValidationError
        ``since`` is not a hex sha, ``rename_window`` < 1, or ``paths`` is a single string.

    Examples
    --------
    >>> statuses = check_paths("/path/to/repo", ["src/a.py", "docs/"])  # doctest: +SKIP
    >>> statuses["src/a.py"].state  # doctest: +SKIP
    'exists'
    """
    if isinstance(paths, str):
        raise ValidationError("paths must be an iterable of path strings, not a single string; wrap it in a list")
    if isinstance(rename_window, bool) or not isinstance(rename_window, int) or rename_window < 1:
        raise ValidationError(f"rename_window must be a positive integer, got {rename_window!r}")
    since_sha = None if since is None else validate_sha(since, "since")
    info = coerce_repo(repo)
    given = sorted({p if isinstance(p, str) else repr(p) for p in paths})
    rel = {p: _relative(info, p) for p in given}
    result: dict[str, PathStatus] = {}
    state = head(info)
    files: set[str] = set()
    dirs: set[str] = set()
    if state.commit is not None and any(r is not None for r in rel.values()):
        files, dirs = _head_paths(info, state.commit)
    missing = [p for p in given if rel[p] is not None and rel[p] not in files and rel[p] not in dirs]
    renames: list[dict[str, str]] = []
    if missing and state.commit is not None:
        renames = _renames(info, since_sha, rename_window)
    for p in given:
        r = rel[p]
        if r is None:
            result[p] = PathStatus(p, "outside")
        elif r in files or r in dirs:
            result[p] = PathStatus(p, "exists")
        else:
            current = r
            for step in renames:
                current = step.get(current, current)
            if current != r and current in files:
                result[p] = PathStatus(p, "renamed", current)
            else:
                result[p] = PathStatus(p, "missing")
    return result


def _parse_since(since_iso: str) -> int:
    if not isinstance(since_iso, str):
        raise ValidationError(f"since_iso must be an ISO 8601 timestamp string, got {since_iso!r}")
    text = since_iso.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValidationError(
            f"since_iso {since_iso!r} is not an ISO 8601 timestamp; use e.g. 2024-03-01T12:00:00Z"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def commits_touching(repo: RepoInfo | str | Path, paths: Iterable[str], since_iso: str) -> list[CommitInfo]:
    """Commits on HEAD's history, committed after ``since_iso``, that changed any of ``paths``.

    Parameters
    ----------
    repo : RepoInfo or path
        The repository.
    paths : iterable of str
        Files or folders relative to the work tree; outside paths are ignored (never read).
        Matched literally (no glob magic), so names with ``*`` or spaces are safe.
    since_iso : str
        ISO 8601 timestamp (``Z`` or an offset; naive means UTC). Strictly later commits count.

    Returns
    -------
    list of CommitInfo
        Ordered by (commit date, sha), oldest first; empty with no commits or no valid paths.

    Examples
    --------
    >>> [c.subject for c in commits_touching("/path/to/repo", ["src/auth.py"],
    ...                                      "2024-03-01T00:00:00Z")]  # doctest: +SKIP
    ['Rotate JWT keys']
    """
    if isinstance(paths, str):
        raise ValidationError("paths must be an iterable of path strings, not a single string; wrap it in a list")
    after = _parse_since(since_iso)
    info = coerce_repo(repo)
    rel = sorted({r for r in (_relative(info, p) for p in paths) if r is not None})
    if not rel or head(info).commit is None:
        return []
    from synapse_nb.gitscope.reverts import CommitInfo  # the revert scanner loads only when commits are read

    found: dict[str, tuple[int, CommitInfo]] = {}
    for i in range(0, len(rel), _CHUNK):
        out = run_git(
            info,
            "--literal-pathspecs",
            "log",
            "-z",
            f"--since=@{after}",
            "--format=%H%x1f%an <%ae>%x1f%ct%x1f%s",
            "HEAD",
            "--",
            *rel[i : i + _CHUNK],
        )
        for record in out.decode("utf-8", "replace").split("\0"):
            parts = record.strip("\n").split("\x1f")
            if len(parts) != 4:
                continue
            sha, author, ctime, subject = parts
            ts = int(ctime)
            if ts > after:
                date = datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                found[sha] = (ts, CommitInfo(sha, subject, author, date))
    return [ci for _, ci in sorted(found.values(), key=lambda v: (v[0], v[1].sha))]
