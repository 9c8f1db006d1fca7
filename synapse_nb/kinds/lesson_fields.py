"""A lesson's git fields as a write accepts them: the revert commit, the reverted commits and the diffstat rows
(:meth:`synapse_nb.kinds.lessons.Lessons.create` checks them; ``scan()`` builds them from git), and the branch a
scanned revert's lesson holds on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from synapse_nb._util import MAX_FILES, check_text
from synapse_nb.errors import ValidationError

__all__ = ["check_commit", "check_diffstat", "commit_dict", "scope_of"]


def commit_dict(ci: Any) -> dict[str, Any]:
    return {"sha": ci.sha, "subject": ci.subject, "author": ci.author, "date": ci.date}


_COMMIT_KEYS = ("sha", "subject", "author", "date")


def check_commit(value: Any, field: str) -> dict[str, Any]:
    """A commit description: a dict with a non-empty ``sha`` and optional subject/author/date text."""
    if not isinstance(value, dict):
        raise ValidationError(f"{field} must be a dict with keys {', '.join(_COMMIT_KEYS)}, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in _COMMIT_KEYS)
    if unknown:
        raise ValidationError(f"{field} has unknown keys {unknown}; accepted: {', '.join(_COMMIT_KEYS)}")
    out: dict[str, Any] = {}
    for key in _COMMIT_KEYS:
        v = value.get(key)
        if v is None and key != "sha":
            out[key] = None
            continue
        out[key] = check_text(v, f"{field}.{key}", max_len=1024, multiline=False).strip()
    if not out["sha"]:
        raise ValidationError(f"{field}.sha must not be empty")
    return out


def check_diffstat(diffstat: Any) -> list[list[Any]]:
    """Rows of (path, added, deleted): counts are whole numbers >= 0 or None (binary files)."""
    if diffstat is None:
        return []
    if isinstance(diffstat, str | bytes) or not isinstance(diffstat, list | tuple):
        raise ValidationError("diffstat must be a list of (path, added, deleted) rows")
    if len(diffstat) > MAX_FILES:
        raise ValidationError(f"diffstat: {len(diffstat):,} rows given; at most {MAX_FILES} are accepted")
    stats = []
    for row in diffstat:
        if not isinstance(row, list | tuple) or len(row) != 3:
            raise ValidationError(f"diffstat rows must be (path, added, deleted), got {row!r}")
        path, added, deleted = row
        counts = []
        for n in (added, deleted):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 10**9):
                raise ValidationError(f"diffstat counts must be whole numbers >= 0 or None, got {n!r}")
            counts.append(n)
        stats.append([check_text(path, "diffstat path", max_len=1024, multiline=False), *counts])
    return stats


def scope_of(branches: Sequence[str], trunks: Sequence[str], current: str | None) -> str | None:
    """The branch a scanned revert's lesson holds on, from the branches that reach it: a trunk among them (main,
    master or a branch of setting ``trunk_branches``: their lessons hold on every branch), else the current branch
    among them, else the one branch, else none (every branch). The first name in sorted order was taken: an agent's
    `git branch 0` at main scoped a person's lesson to a branch no session is on (review 19); origin's HEAD is not
    asked, since an agent's shell repoints it (review 20). A remote-tracking name counts as its branch.

    >>> scope_of(["0", "main"], ("main", "master"), "0"), scope_of(["a", "b"], ("main",), None)
    ('main', None)
    """
    names = list(dict.fromkeys(b.split("/", 1)[1] if b.startswith("origin/") else b for b in branches))
    for trunk in trunks:
        if trunk in names:
            return trunk
    if current in names:
        return current
    return names[0] if len(names) == 1 else None
