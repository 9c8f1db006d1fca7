"""Whether a revert commit's change undoes the commits it names (review 42: a commit whose message is git's revert
message for a person's commit, "This reverts commit <sha>.", changed another file and left the person's change as it
was; the scan made a lesson of it and review called it "git revert ... (checked in this repository)").

A message is anyone's words; the change is git's. :func:`undo_check` compares the two, file by file, as the lines
each change removes and adds (``git diff-tree -p -U0``: no context, no line numbers, so a revert made after later
commits moved the lines still matches), and binary files by their blobs:

- ``"undoes it"``: in every file the named commits changed, the revert removes the lines they added and adds back
  the lines they removed (a file they created it deletes; it may change more besides, as a conflict's resolution
  does);
- ``"undoes part of it"``: it undoes some of those files, or some of the lines (a partial revert, or one edited by
  hand);
- ``"does not undo it"``: none of it (the message only);
- ``"not checked"``: a named commit is not in this repository, git could not read one, or it changes no file.

Several named commits (a revert of a squash or of a range) count as their net change per file; a merge is compared
with the parent git's message names (``reversing changes made to <sha>``), else its first parent; the revert itself
with its first parent. Two git processes: ``git cat-file --batch`` for the parents, one ``git diff-tree --stdin``.

>>> sorted(STATES)
['does not undo it', 'not checked', 'undoes it', 'undoes part of it']
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from synapse_nb.gitscope import history
from synapse_nb.gitscope._git import run_git
from synapse_nb.gitscope.repo import RepoInfo

__all__ = ["STATES", "UndoCheck", "review_revert", "undo_check"]

STATES = ("undoes it", "undoes part of it", "does not undo it", "not checked")
_MAINLINE_RE = re.compile(rb"This reverts commit ([0-9a-fA-F]{7,64}), reversing\s+changes made to ([0-9a-fA-F]{7,64})")
_HEADER_RE = re.compile(rb"^([0-9a-f]{40}(?:[0-9a-f]{24})?)(?: \(from [0-9a-f]+\))?$")
_INDEX_RE = re.compile(rb"^index ([0-9a-f]+)\.\.([0-9a-f]+)")
_HEX_RE = re.compile(r"[0-9a-f]{4,64}")  # a commit's id, full or abbreviated: no other name is asked of git


@dataclass(frozen=True)
class UndoCheck:
    """What :func:`undo_check` found.

    Attributes
    ----------
    state : str
        One of :data:`STATES`.
    named : tuple of str
        The commits compared with (full ids once found; as given when not).
    undone, partly, untouched : tuple of str
        The files the named commits changed that the revert undoes, undoes in part, and leaves as they are (git's
        paths as its patch header writes them), sorted.
    why : str
        For ``"not checked"``: the reason, in words.
    """

    state: str
    named: tuple[str, ...] = ()
    undone: tuple[str, ...] = ()
    partly: tuple[str, ...] = ()
    untouched: tuple[str, ...] = ()
    why: str = ""
    #: the files the revert changes that none of the named commits changed (a revert may carry more: a change
    #: smuggled in beside a real undo is named at review)
    besides: tuple[str, ...] = ()


@dataclass
class _File:
    old: set[bytes] = field(default_factory=set)  # blob ids before (binary files are compared by blob)
    new: set[bytes] = field(default_factory=set)
    plus: Counter[bytes] = field(default_factory=Counter)
    minus: Counter[bytes] = field(default_factory=Counter)


def _parse(out: bytes) -> dict[bytes, dict[bytes, _File]]:
    """``git diff-tree --stdin -p -U0 --full-index`` output: per commit, per file (its ``diff --git`` line)."""
    commits: dict[bytes, dict[bytes, _File]] = {}
    files: dict[bytes, _File] | None = None
    current: _File | None = None
    in_hunk = False
    for line in out.split(b"\n"):
        m = _HEADER_RE.match(line)  # a commit's id alone on a line (a patch's lines start with a sign)
        if m:
            files = commits.setdefault(m.group(1), {})
            current, in_hunk = None, False
            continue
        if files is None:
            continue
        if line.startswith(b"diff --git "):
            current, in_hunk = files.setdefault(line[len(b"diff --git "):], _File()), False
        elif current is None:
            continue
        elif in_hunk and line[:1] in (b"+", b"-", b"\\"):
            if line[:1] == b"+":
                current.plus[line[1:]] += 1
            elif line[:1] == b"-":
                current.minus[line[1:]] += 1
        elif line.startswith(b"@@"):
            in_hunk = True
        else:
            in_hunk = False
            idx = _INDEX_RE.match(line)
            if idx:
                current.old.add(idx.group(1))
                current.new.add(idx.group(2))
    return commits


def _name(key: bytes) -> str:
    """A file's path from its ``diff --git a/P b/P`` header (the same path twice: no renames are detected)."""
    half = key[: (len(key) - 1) // 2].decode("utf-8", "replace")
    return half[1:-1][2:] if half.startswith('"') else half[2:]


def undo_check(repo: RepoInfo, revert: str, named: list[str] | None = None) -> UndoCheck:
    """Whether commit ``revert``'s change undoes the commits ``named`` (ids, full or abbreviated; by default the ones
    its message names, ``This reverts commit <id>``): see the module."""
    return review_revert(repo, revert, named)[1]


def review_revert(repo: RepoInfo, revert: str, named: list[str] | None = None,
                  read: dict[str, history.RawCommit] | None = None) -> tuple[str, UndoCheck]:
    """What review reads of a lesson's revert, from one read of the revert and the commits it names: whether it is a
    revert (``"revert"``: git's ``This reverts commit`` line or a ``Revert "..."`` subject,
    :func:`synapse_nb.gitscope.reverts.is_revert`; ``"not a revert"``; ``"missing"``: no such commit here) and
    whether its change undoes them (:func:`undo_check`). Two git processes (``git cat-file --batch``, ``git
    diff-tree``); a third when ``named`` is empty (the ids the revert's message names, read once it is). ``read``, when
    given, takes the commits read, by the id as given (review compares a lesson's commits with them)."""
    from synapse_nb.gitscope.reverts import _REVERTS_RE, MAX_NAMED, is_revert

    revert = revert.strip().lower() if isinstance(revert, str) else ""
    wanted = list(dict.fromkeys(n.strip().lower() for n in named or () if isinstance(n, str) and n.strip()))
    wanted = wanted[:MAX_NAMED]  # the named commits a check compares (a lesson keeps as many)
    missing = UndoCheck("not checked", tuple(wanted), why="a commit it names is not in this repository" if wanted
                        else "it names no commit")
    if not _HEX_RE.fullmatch(revert):
        return "missing", missing
    try:
        commits = history.read_commits(repo, [revert, *(n for n in wanted if _HEX_RE.fullmatch(n))])
    except Exception:  # noqa: BLE001 - review text: no git, an unreadable repository or object: nothing backs it
        return "missing", UndoCheck("not checked", tuple(wanted), why="git could not read the commits")
    if read is not None:
        read.update(commits)
    rev = commits.get(revert)
    if rev is None:
        return "missing", missing
    found = "revert" if is_revert(rev) else "not a revert"
    if not wanted:
        wanted = list(dict.fromkeys(m.lower() for m in _REVERTS_RE.findall(rev.body)))[:MAX_NAMED]
        if not wanted:
            return found, missing
        try:  # the ids git's message names are hex (_REVERTS_RE)
            commits |= history.read_commits(repo, wanted)
        except Exception:  # noqa: BLE001 - as above
            return found, UndoCheck("not checked", tuple(wanted), why="git could not read the commits")
    targets = [commits[n] for n in wanted if n in commits]
    if len(targets) < len(wanted):
        return found, UndoCheck("not checked", tuple(wanted), why="a commit it names is not in this repository")
    return found, _compare(repo, rev, targets)


def _compare(repo: RepoInfo, rev: history.RawCommit, targets: list[history.RawCommit]) -> UndoCheck:
    """Whether ``rev``'s change undoes ``targets``' (one ``git diff-tree --stdin``)."""
    found = tuple(t.sha for t in targets)
    body = rev.body.encode("utf-8", "replace")
    mainline = {m.group(1).decode().lower(): m.group(2).decode().lower() for m in _MAINLINE_RE.finditer(body)}
    lines = []
    for t in targets:
        parent = t.parents[0] if t.parents else None
        named_parent = next((v for k, v in mainline.items() if t.sha.startswith(k)), None)
        if named_parent is not None:  # a merge reverted with -m: the parent git's message names
            parent = next((p for p in t.parents if p.startswith(named_parent)), parent)
        lines.append(f"{t.sha} {parent}" if parent else t.sha)
    lines.append(f"{rev.sha} {rev.parents[0]}" if rev.parents else rev.sha)
    try:
        out = run_git(repo, "diff-tree", "--stdin", "--root", "-p", "-U0", "--no-renames", "--full-index",
                      "--no-color", "--no-ext-diff", "--no-textconv", input="".join(x + "\n" for x in lines).encode())
    except Exception:  # noqa: BLE001 - as above
        return UndoCheck("not checked", found, why="git could not compare the changes")
    diffs = _parse(out)
    undone_by = diffs.get(rev.sha.encode(), {})
    wanted_files: dict[bytes, _File] = {}
    for sha in dict.fromkeys(found):
        for key, f in diffs.get(sha.encode(), {}).items():
            total = wanted_files.setdefault(key, _File())
            total.old |= f.old
            total.new |= f.new
            total.plus.update(f.plus)
            total.minus.update(f.minus)
    undone: list[str] = []
    partly: list[str] = []
    untouched: list[str] = []
    for key, f in sorted(wanted_files.items()):
        added, removed = f.plus - f.minus, f.minus - f.plus  # the net change of several commits
        r = undone_by.get(key)
        if r is None:
            untouched.append(_name(key))
        elif not (added or removed):  # a binary file, an empty one or a mode: back to a blob it had before
            (undone if r.new & f.old or not f.old else untouched).append(_name(key))
        elif not (added - r.minus) and not (removed - r.plus):  # every line it changed, changed back
            undone.append(_name(key))
        elif (added & r.minus) or (removed & r.plus):
            partly.append(_name(key))
        else:
            untouched.append(_name(key))
    if not (undone or partly or untouched):
        return UndoCheck("not checked", found, why="the commits it names change no file")
    state = ("undoes it" if not partly and not untouched else "undoes part of it" if undone or partly
             else "does not undo it")
    besides = tuple(_name(key) for key in sorted(undone_by) if key not in wanted_files)
    return UndoCheck(state, found, tuple(undone), tuple(partly), tuple(untouched), besides=besides)
