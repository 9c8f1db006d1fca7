"""What one commit changed, for a reviewer: ``git show --stat`` and the patch, capped in size.

Examples
--------
>>> import tempfile
>>> from synapse_nb.gitscope import find_repo
>>> from synapse_nb.gitscope.testing import ScratchRepo
>>> with tempfile.TemporaryDirectory() as tmp:
...     r = ScratchRepo.init(tmp)
...     sha = r.commit_file("a.txt", "hello\\n", "Add a")
...     d = show_commit(find_repo(tmp), sha)
...     (d.subject, "a.txt" in d.stat, "+hello" in d.patch, d.truncated)
('Add a', True, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from synapse_nb.errors import GitError, ValidationError
from synapse_nb.gitscope import history
from synapse_nb.gitscope._git import coerce_repo, run_git, validate_sha
from synapse_nb.gitscope.repo import RepoInfo

__all__ = ["CommitDiff", "show_commit"]

#: Default caps: a patch longer than this is cut (the stat is always complete up to its own cap).
MAX_PATCH_LINES = 400
MAX_PATCH_CHARS = 40_000
_MAX_STAT_LINES = 200


@dataclass(frozen=True)
class CommitDiff:
    """One commit as ``git show`` prints it: header, ``--stat`` and the patch (maybe cut short).

    Attributes
    ----------
    sha, subject : the full commit id and its first message line.
    stat : the ``--stat`` block (files and +/- counts, then the summary line).
    patch : the unified diff, at most the caps' worth of it.
    truncated : True when the patch was cut; ``omitted_lines`` says how many lines are not shown.
    """

    sha: str
    subject: str
    stat: str
    patch: str
    truncated: bool
    omitted_lines: int

    def __str__(self) -> str:
        tail = (f"\n... {self.omitted_lines} more lines not shown (git show {self.sha[:12]} prints them all)"
                if self.truncated else "")
        return f"{self.stat}\n\n{self.patch}{tail}"


def _cap(text: str, max_lines: int, max_chars: int) -> tuple[str, int]:
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for line in lines:
        if len(kept) >= max_lines or size + len(line) + 1 > max_chars:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept), len(lines) - len(kept)


def show_commit(repo: RepoInfo | str | Path, sha: str, *, max_lines: int = MAX_PATCH_LINES,
                max_chars: int = MAX_PATCH_CHARS, timeout: float = 20.0) -> CommitDiff:
    """``git show --stat`` and the patch of one commit, the patch capped at ``max_lines`` / ``max_chars``.

    Raises
    ------
    GitError
        ``repo`` is not a repository, or git cannot show ``sha`` (unknown commit, git missing).
    ValidationError
        ``sha`` is not 4 to 64 hex digits, or a cap is not a positive whole number.
    """
    info = coerce_repo(repo)
    sha = validate_sha(sha)
    for name, n in (("max_lines", max_lines), ("max_chars", max_chars)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValidationError(f"{name} must be a whole number >= 1, got {n!r}")
    # the id and subject from the commit as stored (history's one reader: a message in UTF-8, else its header's
    # charset if that is a text encoding), not ``git show --format``, which re-encodes a commit declaring another
    # charset, and showed a UTF-8 subject declared IBM037 as nothing
    found = history.read_commits(info, [sha]).get(sha)
    if found is None:
        raise GitError(f"git cannot show {sha}: no commit by that id in {info.work_tree}")
    full, subject = found.sha, found.subject
    stat = run_git(info, "show", "--stat=100", "--format=", "--no-color", full, "--", timeout=timeout)
    stat_text, _ = _cap(stat.decode("utf-8", "replace").strip("\n"), _MAX_STAT_LINES, max_chars)
    raw = run_git(info, "show", "--format=", "--patch", "--no-color", "--no-ext-diff", full, "--", timeout=timeout)
    patch, omitted = _cap(raw.decode("utf-8", "replace").strip("\n"), max_lines, max_chars)
    return CommitDiff(sha=full, subject=subject, stat=stat_text, patch=patch, truncated=omitted > 0,
                      omitted_lines=omitted)
