"""What a review reads of a lesson's revert (:func:`backing`), and how a person's scan takes over the lesson an agent's
scan made of a revert (:func:`in_gits_words`, :func:`taken_over`).

Two things a reviewer could not tell before review 42 (reproduced): that the revert a lesson names *says* it reverts
a commit without undoing it (git's revert message on a commit that changed another file), and that the revert was
first scanned in an agent's session (a person's later scan took the agent's lesson over as git's, and every trace of
the agent went). :func:`backing` now says both.

What "first found in an agent's session" means, and no more: the first scan that made the lesson ran as the agent.
A scan runs as the agent in an agent's environment (``synapse-nb lessons scan`` there, the API in its kernel) and as
the post-commit hook of a commit whose committer's processes hold a coding agent's marker
(:data:`synapse_nb.gitscope.githook.COMMITTER_AGENT`): the usual case is the agent's own commit. It is not proof of
who wrote the commit (git's author and committer lines are whatever the committer set), and its absence proves
nothing (a revert a person's scan found first, because the agent's hook did not run or timed out, carries no mark).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from synapse_nb._util import MAX_FILES, plural
from synapse_nb.kinds.lesson_fields import git_fields
from synapse_nb.models import Lesson, RecordList

if TYPE_CHECKING:
    from pathlib import Path

    from synapse_nb.context import Context

__all__ = ["AGENT_PLACE_BYTES", "FIRST_BY", "MAX_REVERTED", "NOT_GITS", "Scanned", "backing", "first_found_by_agent",
           "gits_commits", "in_gits_words", "keeps_place", "no_history_note", "nothing_to_scan", "revert_claims",
           "scan_said", "scan_worded", "taken_over"]

#: The key of a lesson's ``revert_commit`` a person's scan sets to ``"agent"`` when it takes over (or replaces) a
#: lesson an agent made of that revert: review shows it. A person's write only (a team server refuses the key from
#: an agent login, whose ``revert_commit`` holds sha, subject, author and date).
FIRST_BY = "first_by"
_FILES_SHOWN = 3
#: The largest lesson scan place an agent's scan saves (JSON bytes, the bound a team server holds an agent login to:
#: ``_meta_agent_guard``): past it the scan keeps its last place (about 23,800 ref tips).
AGENT_PLACE_BYTES = 1_048_576
#: The reverted commits a lesson keeps (a revert of a merge or a squash names many; the summary counts them all).
MAX_REVERTED = 100


class Scanned(RecordList[Lesson]):
    """The lessons a scan created that its caller may read (an agent: none, it may not read pending lessons), and
    ``made``: how many it created, an agent's scan's too (review 90: an agent's ``lessons scan`` said "0 new pending
    lessons" after creating one)."""

    #: How many pending lessons the scan created (or took over from an agent), whether or not the caller reads them.
    made: int = 0

    @property
    def unread(self) -> int:
        """How many of the lessons it made the caller was not given (an agent's scan: all of them)."""
        return max(0, self.made - len(self))

    def said(self) -> str:
        """What a surface prints of the scan (:func:`scan_said`)."""
        return scan_said(self)


def scan_said(found: Sequence[Lesson]) -> str:
    """What a surface prints of a scan's answer: "2 new pending lessons", and for lessons the caller cannot read (a
    :class:`Scanned` that made more than it holds), that a person reviews them; any other list, by its length.

    >>> s = Scanned(); s.made = 1; scan_said(s), scan_said([])
    ('1 new pending lesson, for a person to review (an agent cannot read pending lessons)', '0 new pending lessons')
    """
    made = max(getattr(found, "made", 0), len(found))
    text = plural(made, "new pending lesson")
    return text + (", for a person to review (an agent cannot read pending lessons)" if made > len(found) else "")


def nothing_to_scan(ctx: Context) -> Scanned:
    """The scan of a vault with no git history to read: no lesson, and a ``note`` that says why (outside a git
    repository, or before its first commit). Nothing to find is not an error: the README's first snippet, run in a
    fresh folder, raised GitError after writing three records (review 68)."""
    out = Scanned()
    out.note = no_history_note(ctx.git.project_dir, ctx.git.repo is not None)
    return out


def no_history_note(project: Path, in_git: bool) -> str:
    """Why a lesson scan of ``project`` finds nothing: no git repository, or no commit yet (``lessons scan`` says it
    too, without opening a vault)."""
    if not in_git:
        return (f"{project} is not inside a git repository: no reverts to scan (lessons come from git reverts; "
                "'git init' and commit to have them)")
    return f"{project} has no commits yet: no reverts to scan until there is history"


def first_found_by_agent(les: Lesson) -> bool:
    """Whether an agent's lesson named the revert ``les`` names before a person's scan took it (or ``les`` is still
    that agent's)."""
    return les.source == "agent" or (les.revert_commit or {}).get(FIRST_BY) == "agent"


def taken_over(revert_commit: dict[str, Any]) -> dict[str, Any]:
    """``revert_commit`` as a person's scan stores it once it took the revert from an agent's lesson."""
    return {**revert_commit, FIRST_BY: "agent"}


def in_gits_words(les: Lesson, rv: Any, branch: str | None, max_reverted: int) -> bool:
    """Whether ``les`` says of revert ``rv`` what a scan writes: its summary, branch, files and commits."""
    git = git_fields(rv, max_reverted)
    return (les.summary == rv.summary and les.files_affected == tuple(git["files"]) and les.branch == branch
            and les.revert_commit == git["revert_commit"] and list(les.reverted_commits) == git["reverted_commits"]
            and [tuple(x) for x in les.diffstat] == [tuple(x) for x in git["diffstat"]])


def keeps_place(ctx: Context, tips: tuple[str, ...]) -> bool:
    """Whether a lesson scan saves its place ``tips``: a person's does; an agent's only in a mind where agents hold a
    record (one they wrote, or a pending lesson they made), and only a place of at most :data:`AGENT_PLACE_BYTES`.

    Review 65: an agent's scans in 60 new minds of a repository of 2,000 branches added 5.3 MB of places at a quota
    of one write an hour. A new place now needs a record in its mind, and each record is a write counted under
    ``agent_writes_per_hour`` (a team server counts each write of a place itself: migration 13). A scan that saves
    no place is as correct: the next one reads from the last place (or afresh), and a revert that has a lesson in
    the mind makes no second one."""
    if ctx.actor != "agent":
        return True
    if len(json.dumps(sorted(tips))) > AGENT_PLACE_BYTES:
        return False
    return ctx.store.meta.agent_held(ctx.mind)[0] > 0


def scan_worded(fields: Mapping[str, Any]) -> bool:
    """Whether a lesson's fields (a record's ``to_dict()`` or an export line) are what a revert scan writes of the
    revert they name: a summary in git's template, from the commits, files and diffstat the lesson holds, and files
    that are the diffstat's (review 63: an agent-made export's pending lesson named a real revert, its summary in the
    agent's words, and review said "created by an agent's revert scan ... checked in this repository"). What git says
    of those commits, review reads (:func:`backing`). A subject or path holding a control character or a line break
    reads here as not a scan's (it is stored shown as ``<U+001B>``, the summary quotes it escaped).

    >>> f = {"summary": 'Reverted "use --force" (39c9a9e) on "main": touched "deploy.sh" (+0/-1)',
    ...      "revert_commit": {"sha": "e59a8b5", "subject": 'Revert "use --force"'},
    ...      "reverted_commits": [{"sha": "39c9a9ead7", "subject": "use --force"}],
    ...      "diffstat": [["deploy.sh", 0, 1]], "files_affected": ["deploy.sh"]}
    >>> scan_worded(f), scan_worded({**f, "summary": "Reverted because --force is the rule"})
    (True, False)
    """
    from synapse_nb.gitscope.history import CommitInfo
    from synapse_nb.gitscope.reverts import SUMMARY_MAX, WHERE_RE, summary_parts

    summary, rc, named, stats = (fields.get(k) for k in ("summary", "revert_commit", "reverted_commits", "diffstat"))
    if not isinstance(summary, str) or not isinstance(rc, dict) or len(summary) > SUMMARY_MAX:
        return False  # longer than any scan writes: not read (review 75: 32.5 KB of " and N more" took minutes)
    try:  # an export line's fields as they came: anything not a scan's shape is not its words
        commit = CommitInfo(str(rc["sha"]), rc.get("subject"))
        reverted = tuple(CommitInfo(str(c["sha"]), c.get("subject")) for c in named or ())
        diffstat = tuple((str(p), a, d) for p, a, d in stats or ())
        if [p for p, _, _ in diffstat] != list(fields.get("files_affected") or ()):
            return False
        for reapply in (False, True):
            for count, files in _counts_said(summary, *summary_parts(commit, reverted, diffstat, reapply),
                                             len(reverted) >= MAX_REVERTED, len(diffstat) >= MAX_FILES):
                what, touched = summary_parts(commit, reverted, diffstat, reapply, count, files)
                where = summary[len(what) + 1:len(summary) - len(touched) - 2]
                if summary.startswith(what + " ") and summary.endswith(": " + touched) and WHERE_RE.fullmatch(where):
                    return True
    except (TypeError, KeyError, AttributeError, ValueError):
        return False
    return False


_COUNT_RE = re.compile(r"(\d{1,7}) more\b")
_FILES_RE = re.compile(r"(\d{1,7}) more files")


def _counts_said(summary: str, what: str, touched: str, more_commits: bool, more_files: bool) -> list[tuple[int, int]]:
    """The (commits, files) counts to build ``summary`` from, its own words and the one count it says where git's
    template puts each (``what``, ``touched``: the template's words from the rows a lesson keeps): past the rows a
    lesson keeps (``more_commits``, ``more_files``), a scan's summary counts them all, and the counts it says are taken
    as said. Only there: review 75 found every " and N more" taken as a count, two nested loops over them, and a
    summary repeating it 2,400 times kept a person's ``lessons review`` 515 s before the first lesson; now at most
    four pairs.

    >>> _counts_said('Reverted "a" (1111111), "b" (2222222) and 298 more on "main": touched "x" (+1/-0)',
    ...              'Reverted "a" (1111111), "b" (2222222) and 98 more', 'touched "x" (+1/-0)', True, False)
    [(0, 0), (300, 0)]
    """
    counts, files = [0], [0]
    if more_commits:  # "<verb> <two targets> and N more <where>": N just after the targets
        stem = what[:what.rindex(" and ") + 5]
        said = _COUNT_RE.match(summary, len(stem)) if summary.startswith(stem) else None
        counts += [int(said[1]) + 2] if said else []
    if more_files:  # "...: touched <three files> and N more files": N at the end
        said = _FILES_RE.fullmatch(summary.rpartition(" and ")[2])
        files += [int(said[1]) + 3] if said else []
    return [(c, f) for c in counts for f in files]


#: The trust claim of an agent's lesson in a scan's words whose commits are not git's in the importing repository.
NOT_GITS = "lesson revert commits not as this repository has them"


def revert_claims(fields: Mapping[str, Any]) -> list[str]:
    """What of an agent's lesson no agent's write could have written (``Lessons.past_agent_limits``): a revert
    named (``revert_commit``, ``reverted_commits``, ``diffstat``) in words no revert scan wrote. An agent's
    ``lessons.create`` names no revert, and its scan writes git's words (:func:`scan_worded`; review 63).

    >>> revert_claims({"summary": "Reverted because --force is the rule", "revert_commit": {"sha": "e59a8b5"}})
    ['revert in words no revert scan wrote']
    """
    if not (fields.get("revert_commit") or fields.get("reverted_commits") or fields.get("diffstat")):
        return []
    return [] if fields.get("revert_commit") and scan_worded(fields) else ["revert in words no revert scan wrote"]


def gits_commits(repo: Any, docs: Sequence[Mapping[str, Any]], read: Mapping[str, Any] | None = None) -> list[bool]:
    """For each lesson (a record's ``to_dict()`` or an export line), whether the commits it names (its revert and the
    reverted ones) read as git's in ``repo``: sha, subject, author and date as a scan stores them (a commit this
    repository lacks: its id alone). One ``git cat-file --batch`` for all (none: ``read``, the commits review read, by
    id); every one True when git cannot read them (review says so)."""
    from synapse_nb.gitscope.history import CommitInfo, read_commits
    from synapse_nb.kinds.lesson_fields import commit_dict

    stored = [[{k: v for k, v in c.items() if k != FIRST_BY}
               for c in (d.get("revert_commit") or {}, *(d.get("reverted_commits") or ())) if isinstance(c, dict)]
              for d in docs]
    names = list(dict.fromkeys(str(c.get("sha")) for cs in stored for c in cs))
    try:
        commits = dict(read) if read is not None else read_commits(
            repo, [n for n in names if re.fullmatch(r"[0-9a-f]{4,64}", n)])
    except Exception:  # noqa: BLE001 - review text: git could not read them; review_revert says so
        return [True] * len(docs)
    return [all(c == commit_dict(commits[n].info() if (n := str(c.get("sha"))) in commits else CommitInfo(n))
                for c in cs) for cs in stored]


def _who(les: Lesson, gits: bool = True) -> str:
    """Who made ``les``; ``gits=False``: the commits it names are not git's (:func:`gits_commits`)."""
    if les.revert_commit and not (gits and scan_worded(les.to_dict())):  # a revert named in words no scan wrote
        return ("created by an agent, naming a revert in its own words (no revert scan wrote this lesson)"
                if les.source == "agent" else "created by a human, naming a revert (no revert scan wrote this lesson)")
    if les.source == "agent":
        return ("created by an agent's revert scan (in an agent's session: an agent may have committed the revert)"
                if les.revert_commit else "created by an agent")
    if not les.revert_commit:
        return "created by a human"
    if first_found_by_agent(les):
        return ("found by a revert scan; first found in an agent's session (an agent may have committed the "
                "revert; git's author line is whatever the committer set)")
    return "found by a revert scan"


def _files(names: tuple[str, ...]) -> str:
    from synapse_nb.gitscope.reverts import _quote
    from synapse_nb.kinds.lesson_fields import git_line

    shown = ", ".join(_quote(git_line(n, 60, left=True)) for n in names[:_FILES_SHOWN])
    return shown + (f" and {len(names) - _FILES_SHOWN} more" if len(names) > _FILES_SHOWN else "")


def backing(ctx: Context, les: Lesson) -> str:
    """What backs ``les``, in words a reviewer reads before approving: who created it, whether git knows the revert
    it names, and whether that revert's change undoes the commits the lesson says it reverted.

    ``"found by a revert scan; git revert a1b2c3d of f532a43 (checked in this repository: its change undoes it)"``;
    ``"...; git revert 73ace8d names f532a43 but its change does not undo it (message only: "src/pay.py" left as it
    was)"``; ``"... names revert a1b2c3d, which this repository does not have"``; ``"... no revert commit (made by
    hand)"``. Agent-created lessons say so first; a person's lesson an agent's scan found first says that.
    """
    who = _who(les)
    sha = (les.revert_commit or {}).get("sha")
    if not sha:
        return f"{who}; no revert commit (made by hand)"
    short = str(sha)[:7]
    repo = ctx.git.repo
    if repo is None:
        return f"{who}; names revert {short}, not checked (no git repository here)"
    from synapse_nb.gitscope.undo import review_revert  # git loads when a review asks

    named = [str(c["sha"]) for c in les.reverted_commits if isinstance(c, dict) and c.get("sha")]
    read: dict[str, Any] = {}
    found, check = review_revert(repo, str(sha), named, read)  # one read of the revert and what it names
    if found == "not a revert":
        return f"{who}; names commit {short}, which is in this repository but reverts nothing"
    if found != "revert":
        return f"{who}; names revert {short}, which this repository does not have"
    if who != _who(les, gits=False) and not gits_commits(repo, [les.to_dict()], read)[0]:  # a scan's template:
        who = _who(les, gits=False)  # its commits are not git's
    targets = "".join(c[:7] for c in check.named[:1]) + (f" and {len(check.named) - 1} more"
                                                          if len(check.named) > 1 else "")
    more = (f"; it also changes {len(check.besides)} other file{'s' if len(check.besides) != 1 else ''} "
            f"the commits it names did not: {_files(check.besides)}" if check.besides else "")
    if check.state == "undoes it":
        return f"{who}; git revert {short} of {targets} (checked in this repository: its change undoes it{more})"
    if check.state == "undoes part of it":
        left = check.partly + check.untouched
        return (f"{who}; git revert {short} names {targets} but its change undoes only part of it (checked in this "
                f"repository: {_files(left)} not or only partly changed back)")
    if check.state == "does not undo it":
        return (f"{who}; git revert {short} names {targets} but its change does not undo it (message only: "
                f"{_files(check.untouched)} left as {'it was' if len(check.untouched) == 1 else 'they were'})")
    return (f"{who}; git revert {short} (in this repository; whether its change undoes what it names was not "
            f"checked: {check.why})")
