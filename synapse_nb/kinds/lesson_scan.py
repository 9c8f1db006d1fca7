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
from typing import TYPE_CHECKING, Any

from synapse_nb.kinds.lesson_fields import git_fields
from synapse_nb.models import Lesson

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["AGENT_PLACE_BYTES", "FIRST_BY", "backing", "first_found_by_agent", "in_gits_words", "keeps_place",
           "taken_over"]

#: The key of a lesson's ``revert_commit`` a person's scan sets to ``"agent"`` when it takes over (or replaces) a
#: lesson an agent made of that revert: review shows it. A person's write only (a team server refuses the key from
#: an agent login, whose ``revert_commit`` holds sha, subject, author and date).
FIRST_BY = "first_by"
_FILES_SHOWN = 3
#: The largest lesson scan place an agent's scan saves (JSON bytes, the bound a team server holds an agent login to:
#: ``_meta_agent_guard``): past it the scan keeps its last place (about 23,800 ref tips).
AGENT_PLACE_BYTES = 1_048_576


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


def _who(les: Lesson) -> str:
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
    found, check = review_revert(repo, str(sha), named)  # one read of the revert and what it names
    if found == "not a revert":
        return f"{who}; names commit {short}, which is in this repository but reverts nothing"
    if found != "revert":
        return f"{who}; names revert {short}, which this repository does not have"
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
