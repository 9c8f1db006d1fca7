"""A lesson's git fields as a write accepts them: the revert commit, the reverted commits and the diffstat rows
(:meth:`synapse_nb.kinds.lessons.Lessons.create` checks them; ``scan()`` builds them from git), and the branch a
scanned revert's lesson holds on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from synapse_nb._cleaning import LINE_BREAKS, code_point
from synapse_nb._util import MAX_FILES, MAX_PATH_CHARS, check_text, clip
from synapse_nb.errors import ValidationError

__all__ = ["BRANCH_CHARS", "GIT_TEXT_CHARS", "check_commit", "check_diffstat", "check_stored_counts", "commit_dict",
           "git_fields", "git_line", "scope_of"]

#: The longest commit subject, author or date a lesson keeps (a longer one is cut, ending in "...").
GIT_TEXT_CHARS = 1024
#: The longest branch name a scanned lesson keeps (its label shows it; a longer one is cut and names no branch).
BRANCH_CHARS = 255
_UNSTORABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f" + "".join(sorted(LINE_BREAKS - set("\n\r"))) + "]")


def git_line(text: str, limit: int = GIT_TEXT_CHARS, *, left: bool = False) -> str:
    r"""Git's text (a commit's subject, author or date, a file's path) as a lesson's one-line field stores it: every
    control character and line break shown as its code point, cut to ``limit`` characters (a path keeps its end).

    Git takes a subject with ESC in it, one of any length, and a file named with a line break; the write path refuses
    all three in a one-line field, and a scan that raised on them kept its place, so one such revert (an agent's
    commit and revert) stopped every later scan: no revert, a person's own included, became a lesson again
    (review 26). They are shown instead, as every reader shows what old data holds.

    >>> git_line("Use retries \x1b[0m"), git_line("notes\nREADME")
    ('Use retries <U+001B>[0m', 'notes<U+000A>README')
    >>> git_line("x" * 9, 6), git_line("a/b/c.py", 6, left=True)
    ('xxx...', '....py')
    """
    return clip(_UNSTORABLE.sub(lambda m: code_point(m.group()), text), limit, left=left)


def commit_dict(ci: Any) -> dict[str, Any]:
    """A commit git describes, as a lesson stores it (:func:`git_line` for its texts)."""
    return {"sha": ci.sha, **{key: None if getattr(ci, key) is None else git_line(getattr(ci, key))
                              for key in ("subject", "author", "date")}}


def git_fields(rv: Any, max_reverted: int) -> dict[str, Any]:
    """What a scan stores of revert ``rv`` (a :class:`~synapse_nb.gitscope.reverts.RevertInfo`) besides its summary
    and branch: the files, the commits and the diffstat, each text as :func:`git_line` gives it."""
    return {"files": [git_line(f, MAX_PATH_CHARS, left=True) for f in rv.files_affected[:MAX_FILES]],
            "revert_commit": commit_dict(rv.revert),
            "reverted_commits": [commit_dict(x) for x in rv.reverted[:max_reverted]],
            "diffstat": [(git_line(p, MAX_PATH_CHARS, left=True), a, d) for p, a, d in rv.diffstat[:MAX_FILES]]}


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
        check_stored_counts([row])
        stats.append([check_text(path, "diffstat path", max_len=1024, multiline=False), added, deleted])
    return stats


def check_stored_counts(diffstat: Any) -> None:
    """A diffstat's counts (each row's after its path) are whole numbers from 0 to 10**9, or None (a binary file):
    what a write takes, and what an import takes of a stored lesson (review 38).

    >>> check_stored_counts([["a.py", 3, None]])
    >>> check_stored_counts([["a.py", 10**10, 0]])
    Traceback (most recent call last):
    synapse_nb.errors.ValidationError: diffstat counts must be whole numbers from 0 to 10**9 or None, got 10000000000
    """
    for row in diffstat:
        for n in row[1:]:
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 10**9):
                raise ValidationError(f"diffstat counts must be whole numbers from 0 to 10**9 or None, got {n!r}")


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
    chosen = next((t for t in trunks if t in names), current if current in names else None)
    if chosen is None and len(names) == 1:
        chosen = names[0]
    # as :func:`git_line` shows it, at most 255 characters: git takes a name of 305 (nested folders) or holding U+2028,
    # which the write path refuses, and one such revert stopped every scan (review 31); shown so, it names no branch
    return None if chosen is None else git_line(chosen, BRANCH_CHARS)
