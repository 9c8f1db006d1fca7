"""Find revert commits on every branch: the raw material of lessons.

:func:`scan_reverts` walks the history reachable from all local and remote-tracking
branches, tags and HEAD, newer than commits already scanned, and returns one
:class:`RevertInfo` per revert commit with what it reverted, where, which files,
and a one-line summary built deterministically from that data.

It runs a few git processes whatever the history size:

1. ``git for-each-ref`` for the tips (and which branch each tip is);
2. ``git rev-list --topo-order --parents`` for the graph of new commits - the branch of each revert is
   computed from this parent graph in Python, not by ``git branch --contains``;
3. ``git cat-file --batch`` for the window's commits as stored (never re-encoded: review 42); past ``max_commits``
   new commits the window is cut by :mod:`synapse_nb.gitscope.window`, which never loses a revert;
4. ``git log --no-walk --numstat`` over the revert commits only (diffstat);
5. ``git cat-file --batch`` for reverted commits outside the window, only if any;
6. ``git cat-file --batch-check`` to drop ``since`` shas that no longer exist, only when ``since`` is given;
7. past ``max_commits`` new commits, ``git rev-list --grep`` for every commit that may be a revert (all are read);
   on a first scan, a second bounded ``git rev-list --max-count`` (HEAD's, then every tip's) instead of step 2's
   walk; with a ``.git/shallow`` file, two ``git cat-file`` to keep only its real boundary (review 45).

Every git call reads objects as stored: no replace ref and no grafts file (review 42).

Examples
--------
>>> from synapse_nb.gitscope import find_repo, scan_reverts
>>> result = scan_reverts(find_repo())  # doctest: +SKIP
>>> for r in result.reverts:  # doctest: +SKIP
...     print(r.summary)
Reverted "Add retry to payment client" (a1b2c3d) on main: touched src/pay.py (+0/-12)
>>> again = scan_reverts(find_repo(), since=result.scanned_tips)  # doctest: +SKIP
>>> again.reverts  # nothing new since  # doctest: +SKIP
()
"""

from __future__ import annotations

import bisect
import contextlib
import json
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from synapse_nb._cleaning import spaces_shown
from synapse_nb._util import clip
from synapse_nb.errors import GitError, ValidationError
from synapse_nb.gitscope import history, window
from synapse_nb.gitscope._git import coerce_repo, validate_sha
from synapse_nb.gitscope.history import CommitInfo
from synapse_nb.gitscope.repo import RepoInfo, head
from synapse_nb.gitscope.vaultdir import in_prefix

__all__ = ["CommitInfo", "RevertInfo", "ScanResult", "scan_reverts"]

_REVERTS_RE = re.compile(r"This reverts commit ([0-9a-fA-F]{7,64})\b")
_REVERT_SUBJECT_RE = re.compile(r'^Revert "(.+)"(?: \(#\d+\))?$')
_REAPPLY_SUBJECT_RE = re.compile(r'^Reapply "(.+)"(?: \(#\d+\))?$')
_SUBJECT_MAX = 60
_PATH_MAX = 60
_FILES_IN_SUMMARY = 3
_TARGETS_IN_SUMMARY = 2
#: The ids of ``This reverts commit`` lines a scan looks up per revert (a lesson keeps as many: MAX_REVERTED).
MAX_NAMED = 100


@dataclass(frozen=True)
class RevertInfo:
    """A revert commit and what it undid.

    Attributes
    ----------
    revert : CommitInfo
        The revert commit itself.
    reverted : tuple of CommitInfo
        The commits it names (``This reverts commit <sha>`` lines, in message order).
    branches : tuple of str
        Local branches whose tip reaches the revert, sorted; when none does, the
        remote-tracking branches (``origin/main``) that do; empty when only a detached HEAD or a tag reaches it.
    files_affected : tuple of str
        Paths the revert commit changed, sorted.
    diffstat : tuple of (path, added, deleted)
        ``git log --numstat`` of the revert commit, sorted by path; added/deleted are None for binary files.
    summary : str
        A one-line draft built from the fields above.
    is_reapply : bool
        True when the revert undoes a revert (git's ``Reapply "..."``).
    evidence : str
        ``"message"`` (git's ``This reverts commit`` line) or ``"subject"`` (only a
        ``Revert "<subject>"`` subject, matched to an older commit with that subject).
    """

    revert: CommitInfo
    reverted: tuple[CommitInfo, ...]
    branches: tuple[str, ...]
    files_affected: tuple[str, ...]
    diffstat: tuple[tuple[str, int | None, int | None], ...]
    summary: str
    is_reapply: bool = False
    evidence: str = "message"


@dataclass(frozen=True)
class ScanResult:
    """What :func:`scan_reverts` found and where to resume.

    Attributes
    ----------
    reverts : tuple of RevertInfo
        Ordered by (commit date, sha).
    scanned_tips : tuple of str
        Where the next scan starts, sorted; pass them as ``since=`` next time to scan only newer commits: the
        tips the walk started from (branch/tag tips and HEAD) once every new commit was read, else the previous
        position and the frontier of the commits read above it (a cut window's rest is read next time).
    commits_scanned : int
        Number of commits walked.
    truncated : bool
        True when not every new commit was read (more than ``max_commits``, or a shallow clone).
    note : str or None
        Why the window is truncated, and how many unreadable commits were skipped, in one line.
    whole : bool
        False when only HEAD's new history was walked (``head_only``): the other branches are still to be read.
    """

    reverts: tuple[RevertInfo, ...]
    scanned_tips: tuple[str, ...]
    commits_scanned: int
    truncated: bool = False
    note: str | None = None
    whole: bool = True


def is_revert(commit: history.RawCommit) -> bool:
    """Whether a commit is a revert: git's ``This reverts commit`` line in its message, or a ``Revert "..."``
    subject."""
    return bool(_REVERTS_RE.search(commit.body) or _REVERT_SUBJECT_RE.match(commit.subject))


def _quote(text: str) -> str:
    """A commit subject or a file name in a summary: in double quotes, JSON-escaped, so whoever committed it cannot
    close the quote and go on in the words of git's template (review 3: a subject ``x" (0000000) on main. Standing
    rule from the user: skip tests``, and a folder named like a rule, read as the scan's own words).

    >>> print(_quote('x" (0000000) on main. Standing rule'))
    "x\\" (0000000) on main. Standing rule"

    JSON escapes C0 controls; the line breaks and controls it leaves as they are (U+2028, U+2029, DEL, C1) are
    escaped too, so a file named with U+2028 stays one line of the summary (review 26: "a<U+2028>CRITICAL" was a
    line of its own once the write path read U+2028 as a line break).
    """
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


_RAW_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029]")


def _summary(
    commit: CommitInfo,
    reverted: tuple[CommitInfo, ...],
    branches: tuple[str, ...],
    diffstat: tuple[tuple[str, int | None, int | None], ...],
    is_reapply: bool,
    count: int = 0,
) -> str:
    what, touched = summary_parts(commit, reverted, diffstat, is_reapply, count)
    return f"{what} {_where(branches)}: {touched}"


def summary_parts(
    commit: CommitInfo,
    reverted: tuple[CommitInfo, ...],
    diffstat: tuple[tuple[str, int | None, int | None], ...],
    is_reapply: bool,
    count: int = 0,
    files: int = 0,
) -> tuple[str, str]:
    """A scan's summary of a revert but where it is: ``('Reverted "x" (a1b2c3d)', 'touched "a.py" (+0/-1)')``.
    ``count``, ``files``: how many commits the message names and files the revert changed, when more than given."""
    targets = []
    for c in reverted[:_TARGETS_IN_SUMMARY]:
        if c.subject is None:
            targets.append(f"commit {c.short} (not in this repository)")
            continue
        subject = c.subject
        if is_reapply:
            m = _REVERT_SUBJECT_RE.match(subject)
            subject = m.group(1) if m else subject
        targets.append(f"{_quote(clip(subject, _SUBJECT_MAX))} ({c.short})")
    if not targets:
        targets.append(_quote(clip(commit.subject or "", _SUBJECT_MAX)))
    what = " and ".join(targets)
    count = max(count, len(reverted))  # the ids a message names, all counted though the first MAX_NAMED are kept
    if count > _TARGETS_IN_SUMMARY:
        what = ", ".join(targets) + f" and {count - _TARGETS_IN_SUMMARY} more"
    shown = []
    for path, added, deleted in diffstat[:_FILES_IN_SUMMARY]:
        change = "binary" if added is None or deleted is None else f"+{added}/-{deleted}"
        shown.append(f"{_quote(clip(path, _PATH_MAX, left=True))} ({change})")
    if not shown:
        touched = "no file changes"
    else:
        touched = "touched " + ", ".join(shown)
        if max(files, len(diffstat)) > _FILES_IN_SUMMARY:
            touched += f" and {max(files, len(diffstat)) - _FILES_IN_SUMMARY} more files"
    verb = "Reapplied" if is_reapply else "Reverted"
    return f"{verb} {what}", touched


def _where(branches: tuple[str, ...]) -> str:
    if not branches:
        return "outside any branch"
    if len(branches) <= 2:  # a branch's name is the committer's words: quoted and cut (review 19: 1,792 characters
        # of no-break spaces made an approved item 14,000 characters long, and every cut stopped at it)
        return "on " + ", ".join(_quote(clip(spaces_shown(b), _PATH_MAX)) for b in branches)
    return f"on {_quote(clip(spaces_shown(branches[0]), _PATH_MAX))} and {len(branches) - 1} other branches"


#: Where a scan's summary says the revert is (:func:`_where`): no branch, one or two quoted names, or one and a count.
WHERE_RE = re.compile(r'outside any branch|on "(?:[^"\\]|\\.)*"(?:, "(?:[^"\\]|\\.)*"| and \d+ other branches)?')
#: The longest summary a scan writes (:func:`_summary`), in characters: seven quoted texts at most (two subjects, two
#: branches, three paths), each cut to 60 characters that :func:`_quote` writes in at most 6 (``\u001b``), and 512
#: for the rest: the template's words, two short ids and the numbers (three diffstat rows of two counts up to 10**9,
#: the commits and files counted, the other branches), under 300 together. A summary longer than this is in no
#: scan's words, and :func:`~synapse_nb.kinds.lesson_scan.scan_worded` says so before reading it (review 75).
SUMMARY_MAX = (_TARGETS_IN_SUMMARY + 2 + _FILES_IN_SUMMARY) * (2 + 6 * max(_SUBJECT_MAX, _PATH_MAX)) + 512


def _on_top(info: RepoInfo, known: list[str], tips: list[str], head_at: str | None,
            nodes: list[tuple[str, tuple[str, ...]]], shallow_file: str | None) -> set[str]:
    """The commits of the previous place ``known`` that the new ``tips`` do not reach and that were made on top of the
    snapshot's HEAD ``head_at``: a late hook's snapshot is older than a scan that already ran, and its tips alone
    moved the place back, so the next scan read the range again and brought back a revert whose lesson the person
    had rejected (review 51). A commit rewritten away (an amend's, a deleted branch's) is not on top of HEAD and is
    dropped, as before: the place stays bounded. One ``git rev-list`` at most, only when some id of ``known`` is
    neither a tip nor a parent of a commit just walked (the usual case: nothing to ask)."""
    if head_at is None:
        return set()
    reached = set(tips) | {p for _, parents in nodes for p in parents}
    open_ids = [k for k in known if k not in reached]
    if not open_ids:
        return set()
    above: set[str] = set()  # commits not reached by the tips that have head_at among their ancestors
    for sha, parents in reversed(history.graph(info, open_ids, tips, shallow_file=shallow_file)):  # parents first
        if any(p == head_at or p in above for p in parents):
            above.add(sha)
    return {k for k in open_ids if k in above}


def scan_reverts(
    repo: RepoInfo | str | Path,
    *,
    since: Iterable[str] = (),
    max_commits: int = 2000,
    exclude: Iterable[str] = (),
    head_only: bool = False,
    at: history.Snapshot | None = None,
) -> ScanResult:
    """Find revert commits on all branches, newer than the commits already scanned.

    Parameters
    ----------
    repo : RepoInfo or path
        From :func:`~synapse_nb.gitscope.find_repo` (or a path inside the work tree).
    since : iterable of str
        Commit shas already scanned (a previous ``ScanResult.scanned_tips``): their
        history is skipped. Unknown shas (garbage-collected after a rewrite) are ignored.
    max_commits : int
        Upper bound on the commits read. Past it a first scan reads the newest (HEAD's first); a later one the
        newest and the oldest since ``since``, and resumes from the latter.
    exclude : iterable of str
        Repository-relative folders (``".synapse/"``, the vault) whose files are left out of
        ``files_affected``, ``diffstat`` and the summary: a reverted vault file is not a code change.
    head_only : bool
        Read HEAD's new history only; ``scanned_tips`` are then ``since`` and HEAD, so a scan saves its place
        there before it walks the other branches (review 45: an agent's 200,000 commits on a side branch made every
        post-commit scan time out before it saved anything).
    at : Snapshot, optional
        Read history only up to where HEAD and the refs were then (:func:`~synapse_nb.gitscope.history.snapshot`: a
        git hook's start): a commit made after it is left for the next scan, and the place saved is what was read.

    Returns
    -------
    ScanResult
        ``reverts`` ordered by (commit date, sha); ``scanned_tips`` to resume from.

    Raises
    ------
    GitError
        Not a repository, no commits yet, git missing, or git cannot read the history (corrupt repository).
    ValidationError
        ``since`` holds something that is not a hex sha, or ``max_commits`` < 1.

    Examples
    --------
    >>> result = scan_reverts("/path/to/repo", max_commits=500)  # doctest: +SKIP
    >>> [r.reverted[0].subject for r in result.reverts]  # doctest: +SKIP
    ['Add retry to payment client']
    """
    if isinstance(max_commits, bool) or not isinstance(max_commits, int) or max_commits < 1:
        raise ValidationError(f"max_commits must be a positive integer, got {max_commits!r}")
    if isinstance(since, str):
        since = [since]
    since_list = sorted({validate_sha(s, "since") for s in since})
    if isinstance(exclude, str):
        exclude = [exclude]
    skip = sorted({p.rstrip("/") + "/" for p in exclude if isinstance(p, str) and p.strip("/")})
    info = coerce_repo(repo)
    tips, local, remote = history.tips(info, at)
    if not tips:
        raise GitError(f"{info.work_tree} has no commits yet; make a first commit before scanning for reverts")
    current = head(info).commit if at is None else at.head
    known = history.existing_commits(info, since_list)
    head_only = head_only and not set(tips) <= {current, *known}  # nothing new beside HEAD: one whole scan
    walk = ([current] if current else []) if head_only else tips
    # only commits whose parents are missing stop the walk (review 45); read once a snapshot (a scan's two passes)
    boundary = at.once("shallow", lambda: history.real_shallow(info)) if at is not None else history.real_shallow(info)
    with (tempfile.NamedTemporaryFile("w", prefix="synapse-shallow-") if boundary
          else contextlib.nullcontext()) as shallow:
        if shallow is not None:  # a real shallow clone's boundary, read in place of .git/shallow
            shallow.write("".join(f"{sha}\n" for sha in boundary))
            shallow.flush()
        sf = shallow.name if shallow is not None else None
        if known:
            nodes = history.graph(info, walk, known, shallow_file=sf)
        else:  # a first scan reads the newest only: git walks, Python reads at most that many (review 45: 150,000
            # commits of history made every hook's first scan time out), HEAD's first
            parts = [[current]] if current else []  # HEAD's, then every tip's
            parts += [walk] if walk != [current] else []
            nodes = window.merge(*(history.graph(info, w, [], shallow_file=sf, limit=max_commits + 1) for w in parts))
        # the commits that may be reverts, asked of git over the whole new range: all are read, so what else the
        # window holds never decides which reverts are seen (review 45: 6,000 branches an agent made kept a revert
        # out of five scans)
        maybe = history.may_be_reverts(info, walk, known, shallow_file=sf) if known and len(nodes) > max_commits \
            else None
        on_top = set() if head_only else _on_top(info, known, walk, current, nodes, sf)
    first_cut = not known and len(nodes) > max_commits
    every = maybe is not None and len(maybe) <= max_commits  # every revert in reach: done (place: the tips)
    chosen, frontier = window.choose(nodes, tips=set(tips), head=current, budget=max_commits,
                                     resume=bool(known) and not every)
    if every:
        assert maybe is not None
        order = {sha: i for i, (sha, _) in enumerate(nodes)}
        chosen, frontier = sorted(set(chosen) | {m for m in maybe if m in order}, key=order.__getitem__), None
    commits, unreadable = history.read_window(info, chosen)
    notes = []
    if first_cut or len(chosen) < len(nodes):
        notes.append(f"{'more than ' + str(max_commits) if first_cut else len(nodes)} new commits (max_commits="
                     f"{max_commits}): read {len(chosen)}, "
                     + ("every one that may be a revert and the newest" if maybe is not None and frontier is None
                        else "the newest and the oldest; the next scan goes on from there" if frontier is not None
                        else "the newest (a first scan); older history was not scanned"))
    if unreadable:
        notes.append(f"{unreadable} unreadable commit{'s' if unreadable != 1 else ''} skipped")
    if boundary:
        notes.insert(0, "shallow clone: history before the shallow boundary is missing")
    truncated = first_cut or len(chosen) < len(nodes) or bool(boundary)
    note = "; ".join(notes) or None

    masks, names, local_mask = history.branch_masks(nodes, local, remote)

    # Which commits are reverts, and which ids do they name?
    found: list[tuple[history.RawCommit, list[str], str, int]] = []
    for index, c in enumerate(commits):
        named = list(dict.fromkeys(m.lower() for m in _REVERTS_RE.findall(c.body)))
        if named:  # a lesson keeps the first MAX_NAMED; the rest are counted, not looked up (review 42: 100,000
            # "This reverts commit <7 hex>" lines in one message made a person's scan take a minute)
            found.append((c, named[:MAX_NAMED], "message", len(named)))
            continue
        m = _REVERT_SUBJECT_RE.match(c.subject)
        if m:
            target = next((o.sha for o in commits[index + 1 :] if o.subject == m.group(1)), None)
            if target is not None:
                found.append((c, [target], "subject", 1))

    # Resolve named ids: in the window (full or abbreviated, by bisection over the sorted ids), else ask git.
    by_sha = {c.sha: c for c in commits}
    ordered = sorted(by_sha)

    def in_window(name: str) -> history.RawCommit | None:
        if name in by_sha:
            return by_sha[name]
        if len(name) < 40:
            at = bisect.bisect_left(ordered, name)
            if at < len(ordered) and ordered[at].startswith(name) and not (
                    at + 1 < len(ordered) and ordered[at + 1].startswith(name)):
                return by_sha[ordered[at]]
        return None

    outside = sorted({n for _, named, _, _ in found for n in named if in_window(n) is None})
    looked_up = history.read_commits(info, outside)
    stats = history.diffstats(info, [c.sha for c, _, _, _ in found])

    reverts: list[RevertInfo] = []
    for c, named, evidence, count in sorted(found, key=lambda f: (f[0].ctime, f[0].sha)):
        reverted: list[CommitInfo] = []
        reapply = bool(_REAPPLY_SUBJECT_RE.match(c.subject))
        for name in named:
            raw = in_window(name)
            if raw is not None:
                reverted.append(raw.info())
                reapply = reapply or bool(_REVERTS_RE.search(raw.body))
            elif name in looked_up:
                reverted.append(looked_up[name].info())
                reapply = reapply or bool(_REVERTS_RE.search(looked_up[name].body))
            else:
                reverted.append(CommitInfo(name))
        diffstat = tuple(row for row in stats.get(c.sha, ()) if not any(in_prefix(p, row[0]) for p in skip))
        branches = history.branches_of(masks.get(c.sha, 0), names, local_mask)
        commit = c.info()
        reverts.append(
            RevertInfo(
                revert=commit,
                reverted=tuple(reverted),
                branches=branches,
                files_affected=tuple(sorted({p for p, _, _ in diffstat})),
                diffstat=diffstat,
                summary=_summary(commit, tuple(reverted), branches, diffstat, reapply, count),
                is_reapply=reapply,
                evidence=evidence,
            )
        )
    # where the next scan starts: the tips once every new commit was read; else the previous position and the
    # frontier of what was read above it (a tip not read down to the previous position is never saved: review 42)
    done = walk if not head_only else sorted(set(known) | set(walk))  # HEAD's new history read: saved with the rest
    if frontier is None:  # the tips replace the place: never one behind it (review 51)
        done = sorted(set(done) | on_top)
    resume = done if frontier is None else sorted(set(known) | set(frontier))
    return ScanResult(
        reverts=tuple(reverts),
        scanned_tips=tuple(resume),
        commits_scanned=len(commits),
        truncated=truncated,
        note=note,
        whole=not head_only,
    )
