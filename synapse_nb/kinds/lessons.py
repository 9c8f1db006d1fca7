"""Lessons from reverted changes: pending until a human approves; approved ones expire and can be re-approved.

State machine::

    (revert found / create) --> pending --approve--> approved --(lesson_expiry_days pass)--> expired
                                 |   ^                  |  ^                                  |
                                 |   +----withdraw------+  +-------------re-approve-----------+
                                 +--reject--> deleted

Status is computed at read time (an approved lesson past ``expires_at`` *is* expired); ``prune()``
also persists it. Only the user actor approves or rejects; an agent reads approved, unexpired lessons
only, and reaches a pending one only through :meth:`Lessons.submit_analysis`, by its full id (a human
names lessons by id or unique prefix; an agent by the exact id, so that probing prefixes finds nothing), and
messages never list an id the actor may not read. Approving wording an agent wrote takes an explicit choice
(:meth:`Lessons.approve`'s ``accept_agent_text``).

In a *borrowed* vault (:mod:`synapse_nb.borrowed`: git tracks it, or a symlink leads to it from outside) an
approved lesson is in force only once a human here re-approved it (:meth:`Lessons.approve`, recorded outside the
vault); until then it is "awaiting local approval" (:meth:`Lessons.awaiting_local`), and agents do not see it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from synapse_nb import history
from synapse_nb._calls import Files
from synapse_nb._util import (
    MAX_FILES,
    MAX_TEXT,
    check_branch,
    check_files,
    check_limit,
    check_stored_strings,
    check_text,
    fmt_ts,
    new_id,
)
from synapse_nb.errors import (
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    ValidationError,
)
from synapse_nb.gitscope.repo import TRUNKS
from synapse_nb.kinds import lesson_approvers, lesson_scan
from synapse_nb.kinds._base import KindManager, check_agent_totals, exactly_once
from synapse_nb.kinds.lesson_errors import changed_since, not_pending
from synapse_nb.kinds.lesson_fields import check_commit, check_diffstat, check_stored_counts, git_fields, scope_of
from synapse_nb.kinds.lesson_scan import MAX_REVERTED
from synapse_nb.models import Lesson, RecordList
from synapse_nb.settings import TRUNK_BRANCHES, Settings

if TYPE_CHECKING:
    from synapse_nb.gitscope.history import Snapshot
    from synapse_nb.store.base import LessonTable, View

__all__ = ["MAX_REVERTED", "STATUSES", "Lessons"]

STATUSES = ("pending", "approved", "expired")
#: Pending lessons agents created that a mind holds: each waits for a human's decision, so an agent's next one
#: (by hand, or by scanning reverts it committed) is refused until a human has reviewed some. A lesson a person's
#: scan took over from an agent's scan counts until a human decides it (review 65: it counted as the person's).
AGENT_PENDING_LESSONS = 50
#: Pending lessons a person's scan fills a mind to: past it a scan makes no more and keeps its place, so the reverts
#: it left wait for the next scan after a review (150 reverts an agent committed made 100 lessons in one person's
#: scan, past the agents' cap, when they were scanned as the person's). An agent's lesson is refused past it too.
SCAN_PENDING_LESSONS = 100
_CURRENT: Any = object()


class Lessons(KindManager[Lesson]):
    """``vault.lessons``: review, approve and reject lessons from reverts.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> les = v.lessons.create("Reverted 'retry payments': double charges", files=["src/pay.py"])
    >>> les.status
    'pending'
    >>> v.lessons.approve(les.id).status
    'approved'
    """

    record_cls = Lesson
    agent_prefixes = False  # an agent reaches a pending lesson only by the full id a human gave it

    @property
    def _table(self) -> LessonTable:
        return self._ctx.store.lessons

    def _view(self) -> View:
        return self._ctx.view(in_force_only=self._ctx.actor == "agent")  # agents see lessons in force only

    def approved_here(self, les: Lesson) -> bool:
        """Whether ``les`` counts as approved in this checkout: approved, and, in a borrowed vault, re-approved by a
        human here (same text and branch, that approval still running)."""
        if les.status != "approved":
            return False
        borrowed = self._ctx.git.borrowed
        if borrowed is None:
            return True
        return borrowed.approvals is not None and borrowed.approvals.approved_here(les, self._ctx.now_ts())

    def _hide_borrowed(self, recs: list[Lesson]) -> list[Lesson]:
        """An agent reads a borrowed vault's approved lessons only once a human here re-approved them."""
        if self._ctx.actor != "agent" or self._ctx.git.borrowed is None:
            return recs
        return [x for x in recs if self.approved_here(x)]

    def get(self, id: str) -> Lesson:
        """The lesson with this id (or unique id prefix; an agent: the full id, of a lesson in force)."""
        les = super().get(id)
        if not self._hide_borrowed([les]):
            raise PermissionDeniedError(f"lesson {id.strip()!r} is not readable by the agent actor")
        return les

    def search(self, q: str, *, limit: int = 50) -> RecordList[Lesson]:
        """Full-text search over lessons (an agent: approved lessons in force only)."""
        return RecordList(self._hide_borrowed(list(super().search(q, limit=limit))))

    @staticmethod
    def check_record(les: Lesson) -> None:
        """What a stored lesson is: the write path builds only such records, and an import refuses others."""
        if les.status not in STATUSES:
            raise ValidationError(f"status {les.status!r} is not one of {', '.join(STATUSES)}")
        check_text(les.summary, "summary", max_len=MAX_TEXT, stored=True)
        check_stored_strings(les.files_affected, "files_affected")
        for name, rows, most in (("files_affected", les.files_affected, MAX_FILES),  # an older synapse_nb wrote
                                 ("diffstat", les.diffstat, 10 * MAX_FILES),  # longer lists than a write keeps
                                 ("reverted_commits", les.reverted_commits, 10 * MAX_REVERTED)):  # today: imported
            if len(rows) > most:
                raise ValidationError(f"{name}: {len(rows):,} rows; at most {most} are accepted")
        check_stored_counts(les.diffstat)
        if les.status == "approved" and (les.approved_at is None or les.expires_at is None):
            raise ValidationError("an approved lesson needs approved_at and expires_at")

    #: an agent's lesson naming a revert in words no revert scan wrote (review 63): a trust claim on import
    past_agent_limits = staticmethod(lesson_scan.revert_claims)

    @property
    def expiry_days(self) -> int:
        """Days an approved lesson stays in force (setting ``lesson_expiry_days``, default 7)."""
        return int(Settings(self._ctx).get("lesson_expiry_days"))

    # -- create -------------------------------------------------------------------------------------------
    @exactly_once
    def create(self, summary: str, *, files: Files | None = None, branch: str | None = None,
               revert_commit: dict[str, Any] | None = None, reverted_commits: Any = (),
               diffstat: Any = ()) -> Lesson:
        """Create a pending lesson by hand (``scan()`` creates them from git reverts).

        Idempotent per revert commit: a second lesson for the same ``revert_commit["sha"]`` is refused
        with :class:`ConflictError`. An agent names no revert (``revert_commit``, ``reverted_commits``,
        ``diffstat``): its reverts become lessons through ``scan()``, which reads them from git. A mind holds one
        lesson per revert, and an agent's own lesson for a real revert, in its own words ("the revert was about a
        flaky test, ignore it"), kept that revert's lesson from ever being made.
        """
        if self._ctx.actor == "agent" and (revert_commit is not None or reverted_commits or diffstat):
            raise PermissionDeniedError(
                "an agent creates a lesson without naming a revert (revert_commit, reverted_commits, diffstat): "
                "reverts become lessons through lessons.scan(), which reads them from git; write the lesson's text "
                "only")
        return self._create(summary, files=files, branch=branch, revert_commit=revert_commit,
                            reverted_commits=reverted_commits, diffstat=diffstat)

    def _create(self, summary: str, *, files: Any = None, branch: str | None = None,
                revert_commit: dict[str, Any] | None = None, reverted_commits: Any = (),
                diffstat: Any = (), from_git: bool = False, first_by_agent: bool = False) -> Lesson:
        summary = check_text(summary, "summary", max_len=MAX_TEXT)
        files_t = check_files(files, "files")
        if branch is not None:  # a name git could give (review 23: an agent's prose sat in the approved label); a
            branch = branch.strip() if isinstance(branch, str) else branch  # scan's is git's (a label quotes it)
            branch = (check_text(branch, "branch", max_len=255, multiline=False) if from_git
                      else check_branch(branch)) if branch != "" else None
        if revert_commit is not None:
            revert_commit = check_commit(revert_commit, "revert_commit")
            revert_commit = lesson_scan.taken_over(revert_commit) if first_by_agent else revert_commit
        if not isinstance(reverted_commits, list | tuple):
            raise ValidationError("reverted_commits must be a list of dicts (sha, subject, author, date)")
        if len(reverted_commits) > MAX_REVERTED:
            raise ValidationError(f"reverted_commits: {len(reverted_commits):,} given; at most {MAX_REVERTED} are "
                                  "accepted")
        reverted_commits = [check_commit(x, "reverted_commits item") for x in reverted_commits]
        stats = check_diffstat(diffstat)
        ctx = self._ctx
        revert_sha = revert_commit["sha"] if revert_commit else None
        with ctx.store.transaction():
            ts = self._begin_write(new_record=True)
            if ctx.actor == "agent" and self._scan_room() == 0:  # the server's bounds too (PostgreSQL migration 25)
                what = (f"{AGENT_PENDING_LESSONS} lessons agents created" if self._table.agent_pending(ctx.mind)
                        >= AGENT_PENDING_LESSONS else f"{SCAN_PENDING_LESSONS} lessons")
                raise QuotaExceededError(f"agent write refused: {what} wait for a human in mind {ctx.mind!r}; a human "
                                         "reviews them first (synapse-nb lessons review), then new ones are taken")
            if revert_sha and self._table.has_revert(ctx.mind, revert_sha):
                raise ConflictError(f"a lesson for revert {revert_sha[:12]} already exists in mind {ctx.mind!r}")
            les = Lesson(id=new_id("les"), mind=ctx.mind, created_at=ts, updated_at=ts, status="pending",
                         summary=summary, branch=branch, revert_commit=revert_commit,
                         reverted_commits=tuple(reverted_commits), files_affected=files_t,
                         diffstat=tuple(tuple(s) for s in stats), source=ctx.actor)
            self._table.insert(les)
            self._changed("create", None, les, ts)
        return les

    # -- reads --------------------------------------------------------------------------------------------
    def list(self, *, status: str | None = None, limit: int | None = None) -> RecordList[Lesson]:
        """Lessons newest first, optionally one status (pending, approved, expired).

        An agent sees only approved, unexpired lessons; asking for pending or expired ones is refused.
        """
        limit = check_limit(limit)
        if status is None:
            return RecordList(self._hide_borrowed(self._table.list(self._view(), limit=limit)))
        if status not in STATUSES:
            raise ValidationError(f"status {status!r} is not accepted; use one of: {', '.join(STATUSES)}")
        if self._ctx.actor == "agent" and status != "approved":
            raise PermissionDeniedError(f"an agent may not list {status} lessons; only approved lessons are shown "
                                        "to agents (a pending lesson is reached by id, to submit an analysis)")
        return RecordList(self._hide_borrowed(self._table.list(self._view(), status=status, limit=limit)))

    def pending(self) -> RecordList[Lesson]:
        """Lessons waiting for a human decision (user actor only, outside an agent's environment)."""
        return self.list(status="pending")

    def waiting(self, *, most: int = 1000) -> int:
        """How many lessons wait for a human decision (at most ``most``): a count only, no id or text, so any handle
        may ask (the agent hooks tell the human how many wait). A team vault's agent role reads none: 0."""
        return sum(self.waiting_by(most=most).values())

    def waiting_by(self, *, most: int = 1000) -> dict[str, int]:
        """:meth:`waiting` by what made them, in one read: a revert scan ("git": a lesson in a scan's words for the
        revert it names, :func:`~synapse_nb.kinds.lesson_scan.scan_worded`) or someone's hand ("agent", "user")
        (review 27: the hooks' notice said "from reverted changes" of lessons an agent wrote; review 63: of an agent's
        lesson naming a revert in its own words)."""
        rows = self._table.list(self._ctx.view(), status="pending", limit=check_limit(most))
        by = ["git" if x.revert_commit and lesson_scan.scan_worded(x.to_dict()) else x.source if x.source == "agent"
              else "user" for x in rows]
        return {maker: by.count(maker) for maker in ("git", "agent", "user")}

    def expired_count(self, within: timedelta | None = None) -> int:
        """How many approved lessons ran out (within the last ``within``; None: ever): a count only, as :meth:`waiting`
        (the hooks tell the human how many went out of force, and how to approve them again: review 86), counted by
        the store (the SessionStart hook asks it)."""
        if within is not None and not isinstance(within, timedelta):
            raise ValidationError(f"within must be a timedelta or None, got {type(within).__name__}")
        now = self._ctx.now()
        return self._table.run_out(self._ctx.mind, "" if within is None else fmt_ts(now - within), fmt_ts(now))

    def approved(self) -> RecordList[Lesson]:
        """Approved lessons still in force, most recently approved first (these head every recall)."""
        return self.list(status="approved")

    def in_force(self, branch: str | None = _CURRENT) -> RecordList[Lesson]:
        """The approved lessons that head every recall on ``branch`` (default: the current git branch).

        Those of that branch, of a default branch (main and master, whether or not they exist here, the branches a
        person named in setting ``trunk_branches``, and origin's HEAD's branch: nothing an agent's shell does to refs
        removes a trunk's lessons) and those with no branch;
        outside git, every approved lesson. Most recently approved first. In a borrowed vault,
        only those a human here re-approved (:meth:`approved_here`).
        """
        git = self._ctx.git
        if branch is _CURRENT:
            branch = git.head()[0]
        les = list(self.approved())
        if git.borrowed is not None:
            les = [x for x in les if self.approved_here(x)]
        if git.repo is not None or branch is not None:  # outside git there is no branch to scope by
            scope = git.default_branches() | {branch}
            if any(x.branch is not None and x.branch not in scope for x in les):  # the setting, read when it counts
                scope |= set(self._trunks())
            les = [x for x in les if x.branch is None or x.branch in scope]
        les.sort(key=lambda x: (x.approved_at or "", x.id), reverse=True)
        return RecordList(les)

    def not_in_force(self) -> dict[str, int]:
        """How many approved lessons (not run out) are not in force here, and why: ``"borrowed"``, a borrowed vault's
        that no human here re-approved (:meth:`approved_here`); ``"branch"``, scoped to other branches. Counts only,
        no id or text, so any handle may ask (review 95: the hooks tell the person when the lessons they approved do
        not reach the agent, and "No approved lessons yet" is said only where none exist)."""
        rows = self._table.list(self._ctx.view(in_force_only=True), status="approved")
        here = sum(self.approved_here(x) for x in rows)
        return {"borrowed": len(rows) - here, "branch": max(0, here - len(self.in_force()))}

    def awaiting_local(self) -> RecordList[Lesson]:
        """A borrowed vault's approved lessons no human here re-approved yet (not in force; the user actor only).

        Empty for a vault of one's own. ``synapse-nb lessons approve ID`` (or :meth:`approve`) re-approves one.
        """
        if self._ctx.git.borrowed is None:
            return RecordList()
        self._require_user("list lessons awaiting local approval")
        return RecordList(x for x in self.approved() if not self.approved_here(x))

    def expired(self) -> RecordList[Lesson]:
        """Approved lessons whose time ran out; they can be re-approved."""
        return self.list(status="expired")

    # -- human decisions ------------------------------------------------------------------------------------
    def approve(self, id: str, *, text: str | None = None, expiry_days: int | None = None,
                accept_agent_text: bool = False, seen: str | None = None) -> Lesson:
        """Approve a pending lesson, or re-approve an expired one (a human only; an in-force lesson is a
        :class:`ConflictError`).

        The lesson text becomes ``text`` if given (your wording), else the wording already approved once (an
        expired lesson), else the submitted analysis, else the draft summary. Approving is a human act on text a
        human read: when that wording would be an agent's (an analysis an agent submitted, or the summary of a
        lesson an agent created), it is refused unless ``accept_agent_text=True`` says you read it and approve it
        as it is (CLI ``--accept-agent-text``; the LessonReview widget's "Approve the agent's wording"). It stays
        in force for ``expiry_days`` (default: the vault's ``lesson_expiry_days``). An empty or blank ``text`` is
        refused (:class:`ValidationError`).

        ``seen`` binds the approval to the wording you read (:meth:`proposed_wording` when it was shown): without
        ``text``, the approval is refused (:class:`ConflictError`, nothing changes) when the wording is no longer
        that one. An agent may replace its own analysis of a pending lesson at any time, so between reading and
        approving the wording can change; every surface that shows a wording and then approves it (``lessons
        review``, ``lessons approve`` at a terminal, the LessonReview widget) passes what it showed.

        In a borrowed vault (:mod:`synapse_nb.borrowed`) every approval is also recorded here, outside the vault
        (``<git-common-dir>/synapse-nb/approvals.json``), and only so recorded lessons are in force. A lesson approved
        elsewhere (awaiting local approval) is re-approved as it reads by recording that alone: the borrowed
        database is not rewritten. Through an outside symlink a change of wording is refused like every write.

        Examples
        --------
        >>> v.lessons.approve("les_3f9a0c12be47",
        ...                   text="Never retry payments without an idempotency key")  # doctest: +SKIP
        >>> les = v.lessons.get("les_3f9a0c12be47")  # doctest: +SKIP
        >>> wording, by = v.lessons.proposed_wording(les)  # read it  # doctest: +SKIP
        >>> v.lessons.approve(les.id, accept_agent_text=True, seen=wording, expiry_days=14)  # doctest: +SKIP
        """
        self._require_user("approve a lesson")
        if not isinstance(accept_agent_text, bool):
            raise ValidationError(f"accept_agent_text must be True or False, got {accept_agent_text!r}")
        if seen is not None and not isinstance(seen, str):
            raise ValidationError(f"seen must be the wording you read (a str), got {type(seen).__name__}")
        if text is not None:
            text = check_text(text, "lesson text", max_len=MAX_TEXT, allow_empty=True)
            if not text.strip():
                raise ValidationError("lesson text must not be empty; give the lesson's wording, or leave the text "
                                      "out to approve the analysis (or else the summary) as it is")
        les = self.get(id)
        borrowed = self._ctx.git.borrowed
        if les.status == "approved" and (borrowed is None or self.approved_here(les)):
            raise ConflictError(f"lesson {les.id} is already approved and in force until {les.expires_at}; "
                                "only pending or expired lessons can be approved")
        if borrowed is not None and borrowed.approvals is None:
            raise PermissionDeniedError(f"cannot approve lesson {les.id} here: {borrowed.why}, and outside git there "
                                        f"is nowhere to record a local approval; {borrowed.remedy}")
        proposed = text is None
        if text is None:
            text, by = self.proposed_wording(les)
            if seen is not None and text != seen:
                raise changed_since(les.id, text, by)
            if by == "agent" and not accept_agent_text:
                what = "the analysis an agent submitted" if text == les.analysis else \
                    "the summary of a lesson an agent created (no revert scan found it)"
                raise ConflictError(
                    f"lesson {les.id}'s wording would be {what}; read it, then give your own wording (text=...; CLI "
                    "--text) or approve the agent's wording as it is (accept_agent_text=True; CLI "
                    "--accept-agent-text)")
        days = self.expiry_days if expiry_days is None else expiry_days
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3650:
            raise ValidationError(f"expiry_days must be a whole number of days from 1 to 3650, got {days!r}")
        ctx = self._ctx
        now = ctx.now()
        until = fmt_ts(now + timedelta(days=days))
        if borrowed is not None and les.status == "approved" and text == les.text:
            # a borrowed lesson approved elsewhere, approved here as it reads: recorded outside the vault only
            # (the tracked database is not rewritten, nothing is written through a symlink)
            assert borrowed.approvals is not None
            borrowed.approvals.record(les, at=fmt_ts(now), expires_at=until, vault=borrowed.path)
            return replace(les, expires_at=min(les.expires_at or until, until))  # in force here until then
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            self._table.update(les.id, updated_at=ts, status="approved", lesson_text=text, approved_at=fmt_ts(now),
                               expires_at=until)
            approved = self.get(les.id)
            if proposed:  # checked after the write, which holds the row until commit (a team server's plain BEGIN
                # locks nothing at a read): an analysis that landed since the read above rolls the approval back
                now_reads, by = self.proposed_wording(replace(approved, lesson_text=les.lesson_text))
                if now_reads != text:
                    raise changed_since(les.id, now_reads, by)
            self._changed("approve", les, approved, ts)
            if borrowed is not None and borrowed.approvals is not None:  # inside the transaction: both or neither
                borrowed.approvals.record(approved, at=fmt_ts(now), expires_at=until, vault=borrowed.path)
        return approved

    #: The wording an approval without ``text`` would give a lesson, and who wrote it (``lesson_approvers``).
    proposed_wording = staticmethod(lesson_approvers.proposed_wording)

    reapprove = approve

    def withdraw(self, id: str) -> Lesson:
        """Withdraw an approval (a human only): the lesson stops heading recalls now and is pending again.

        A wording a human or a revert scan wrote is kept as the proposed wording, so re-approving takes one step.
        An agent's wording (its analysis, or the summary of a lesson it created, approved as it was) is not kept
        apart from the record it came from: the proposed wording is again that analysis or summary, the agent's,
        needing ``accept_agent_text``, and an analysis the agent submits later replaces it (a kept copy would pass
        for a human's wording once the analysis beside it changed). :meth:`reject` deletes the lesson instead. Only an
        approved lesson in force can be withdrawn (an expired one is already out of force: a
        :class:`ConflictError`). A borrowed vault's approvals are refused: withdraw in the vault's own checkout.

        >>> v.lessons.withdraw("les_3f9a0c12be47").status  # doctest: +SKIP
        'pending'
        """
        self._require_user("withdraw a lesson's approval")
        les = self.get(id)
        if les.status != "approved":
            raise ConflictError(f"lesson {les.id} is {les.status}; only an approved lesson in force can be withdrawn")
        borrowed = self._ctx.git.borrowed
        if borrowed is not None:
            raise PermissionDeniedError(f"cannot withdraw lesson {les.id} here: {borrowed.why}; {borrowed.remedy}")
        ctx = self._ctx
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            kept = {"lesson_text": None} if les.wording_by == "agent" else {}  # see the docstring
            self._table.update(les.id, updated_at=ts, status="pending", approved_at=None, expires_at=None, **kept)
            after = self.get(les.id)
            self._changed("update", les, after, ts)
        return after

    def reject(self, id: str) -> Lesson:
        """Reject a lesson: it is deleted (user actor only). Returns what it was."""
        self._require_user("reject a lesson")
        les = self.get(id)
        ctx = self._ctx
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            self._table.delete(les.id)
            self._changed("reject", les, None, ts)
        return les

    def submit_analysis(self, id: str, text: str) -> Lesson | None:
        """Attach an explanation of why the reverted change failed.

        From an agent it is a proposal stored beside the draft (the agent gets ``None`` back: it may not
        read pending lessons); only a human approval makes it the lesson text. From a user it is stored
        the same way and the updated lesson is returned. Only a pending lesson takes an analysis (a
        :class:`ConflictError` otherwise): an approved or expired lesson's wording is set, and who wrote it is
        read from the analysis beside it.
        """
        text = check_text(text, "analysis", max_len=MAX_TEXT)
        full = self.resolve_id(id)  # a human: id or unique prefix; an agent: the full id only
        ctx = self._ctx
        named = full if ctx.actor == "user" else repr(id.strip())  # never spell out a hidden id to an agent
        with ctx.store.transaction():
            ts = self._begin_write()
            state = self._table.analysis_state(full)
            if state is None:  # deleted since it resolved
                raise NotFoundError(f"no lesson {named}: it was removed meanwhile; nothing was written")
            status, analysis_by = state
            if status != "pending" and ctx.actor == "agent":
                raise ConflictError(f"lesson {named} is {status}; an agent may only analyse pending lessons")
            if status != "pending":  # its wording is set: who wrote it is read from the analysis beside it
                raise not_pending(named, status)
            if ctx.actor == "agent" and analysis_by == "user":
                raise PermissionDeniedError(f"lesson {named} already has an analysis written by the user; an agent "
                                            "may not replace it")
            # who wrote it: an agent's analysis needs an explicit approval (every context in an agent's environment
            # is the agent's: context.Context)
            by = ctx.actor
            before = None if ctx.actor == "agent" else self._table.get(self._view(), full)
            self._table.update(full, updated_at=ts, analysis=text, analysis_by=by)
            state = self._table.analysis_state(full)  # again after the write, which holds the row until commit (a
            if state is not None and state[0] != "pending":  # team server's plain BEGIN locks nothing at a read):
                raise not_pending(named, state[0])  # an approval that landed since rolls the analysis back
            if before is None:  # an agent may not read the lesson: its entry names the change, not the text
                # (stamped after the update: a team vault's submit_analysis() takes a stamp of its own)
                history.record(ctx, "analyse", None, None, at=ctx.store.stamp(ctx.now_ts()), rid=full, kind="lesson")
                check_agent_totals(ctx, new_record=False)  # its analysis of its own pending lesson adds bytes
            else:
                self._changed("update", before, replace(before, analysis=text, analysis_by=by, updated_at=ts), ts)
        return None if ctx.actor == "agent" else self.get(full)

    def backing(self, les: Lesson) -> str:
        """What backs ``les``, in words a reviewer reads before approving: who created it (and whether an agent's
        lesson named its revert first), whether git knows the revert it names, and whether that revert's change
        undoes the commits it names (:func:`synapse_nb.kinds.lesson_scan.backing`)."""
        return lesson_scan.backing(self._ctx, les)

    # -- git ------------------------------------------------------------------------------------------------
    def scan(self, *, max_commits: int | None = None, at: Snapshot | None = None) -> lesson_scan.Scanned:
        """Create one pending lesson per git revert not seen before (idempotent, across branches).

        Reads history since the last scan (HEAD's first), up to ``max_commits`` commits and every one that may be a
        revert (setting ``scan_window``, default 2000; past it the ``note`` says so). Returns the lessons created by
        this scan (user actor; an agent gets an empty list back: it may not read pending lessons; ``made`` counts
        them either way). A scan fills a
        mind to at most :data:`SCAN_PENDING_LESSONS` pending lessons (an agent's, also to at most
        :data:`AGENT_PENDING_LESSONS` of agents'); the reverts past that wait, and the scan keeps its place until a
        later one has room for them. An agent's scan saves a place only in a mind where agents hold a record
        (:func:`~synapse_nb.kinds.lesson_scan.keeps_place`).
        ``at`` (a git hook's): read history only up to where HEAD and the refs were when the hook started
        (:func:`synapse_nb.gitscope.history.snapshot`); later commits are the next scan's, run in its own environment.
        Without it, HEAD and the refs are read once, at the start, and both passes read history up to there.
        """
        from synapse_nb.gitscope import history  # the revert scanner loads when a scan runs (cold start)
        from synapse_nb.gitscope.reverts import scan_reverts

        ctx, repo = self._ctx, self._ctx.git.repo
        at = at or (history.snapshot(repo) if repo is not None else None)  # HEAD and the refs read once: both
        if repo is None or at is None or not history.tips(repo, at)[0]:  # passes read history up to there; no git or
            return lesson_scan.nothing_to_scan(ctx)  # no commit: nothing to find, said in the note (review 68)
        # where the last scan stopped, kept apart for agents: positions an agent wrote (past a revert it did not scan,
        # say) never make a human's scan skip a revert, and on a team vault an agent login's never move another's
        # (the store keys them by login: migration 20); each scan is idempotent (one lesson per revert)
        scope = f"agent:{ctx.mind}" if ctx.actor == "agent" else ctx.mind
        since = ctx.store.meta.scan_tips(scope)
        window = int(Settings(ctx).get("scan_window")) if max_commits is None else int(max_commits)
        prefix = ctx.git.prefix  # the vault's own files never show up in a lesson
        created, taken, notes = [], [], []  # type: list[str], list[str], list[str | None]
        trunks, current = self._trunks(), ctx.git.head()[0]  # read once a scan, not once a revert
        firsts: set[str] = set()  # reverts an agent's lesson named first (review 42: review says so)
        for head_only in (True, False):  # HEAD's new history first, its place saved before the rest is walked
            # (review 45: 200,000 commits an agent put on a side branch made every hook time out, saving nothing)
            result = scan_reverts(repo, since=since, max_commits=window, exclude=(prefix,) if prefix else (),
                                  head_only=head_only, at=at)
            with ctx.store.transaction():
                room = self._scan_room()
                held = 0  # reverts past the room: the scan keeps its place, the next one finds them again
                # a person's scan takes over an agent's lesson of a revert in git's words: it is git's (review 2)
                for rv in result.reverts:
                    branch = scope_of(rv.branches, trunks, current)
                    if ctx.actor == "agent":
                        if self._table.has_revert(ctx.mind, rv.revert.sha):
                            continue
                    elif (holder := self._table.holding_revert(ctx.mind, rv.revert.sha)) is not None:
                        made = self._agents_pending(holder)
                        if made is None:  # a person's, or decided: one lesson per revert
                            continue
                        ts = self._begin_write()
                        if lesson_scan.in_gits_words(made, rv, branch, MAX_REVERTED):  # kept: an agent's named it first
                            commit = lesson_scan.taken_over(made.revert_commit or {})
                            self._table.update(made.id, updated_at=ts, source="user", revert_commit=commit)
                            self._changed("update", made, replace(made, updated_at=ts, source="user",
                                                                  revert_commit=commit), ts)
                            taken.append(made.id)
                            continue
                        # an agent's lesson naming this revert in words not git's (a team vault's agent login's SQL)
                        # took the revert's place, and rejecting it lost the revert (review 4): it gives way to git's
                        self._table.delete(made.id)
                        self._changed("delete", made, None, ts)
                        firsts.add(rv.revert.sha)
                    if len(created) >= room:
                        held += 1
                        continue
                    # a revert of more files than a lesson keeps: the first ones (its summary counts them all)
                    les = self._create(rv.summary, branch=branch, from_git=True,
                                       first_by_agent=rv.revert.sha in firsts, **git_fields(rv, MAX_REVERTED))
                    created.append(les.id)
                if not held and tuple(sorted(result.scanned_tips)) != tuple(since):  # an agent's rewrite counts
                    if lesson_scan.keeps_place(ctx, result.scanned_tips):  # (migration 13)
                        ctx.store.meta.set_scan_tips(scope, result.scanned_tips)
                    since = tuple(sorted(result.scanned_tips))
            notes.append(result.note)
            if result.whole or held:  # one pass read everything (only HEAD moved), or the room is full: no second
                break
        out = lesson_scan.Scanned(self.get(i) for i in taken + created if ctx.actor != "agent")
        out.made = len(taken) + len(created)  # an agent's count too, of lessons it may not read (review 90)
        out.note = "; ".join(dict.fromkeys(n for n in notes if n)) or None  # a window cut, said (review 42)
        return out

    def _agents_pending(self, holder: tuple[str, str, str]) -> Lesson | None:
        """The lesson holding a revert (:meth:`LessonTable.holding_revert`) when it is an agent's and pending: a
        person's scan takes it over or replaces it."""
        rid, source, status = holder
        if source != "agent" or status != "pending":
            return None
        return self._table.get(self._view(), rid)

    def _trunks(self) -> tuple[str, ...]:
        """main, master and the branches a person named in setting ``trunk_branches``: their approved lessons hold on
        every branch, and a scanned revert reaching one is scoped to it. A setting, so no agent's ref write moves it
        (origin's HEAD does for a trunk of another name)."""
        return TRUNKS + tuple(Settings(self._ctx).get(TRUNK_BRANCHES))

    def _scan_room(self) -> int:
        """How many lessons a scan may make now: up to :data:`SCAN_PENDING_LESSONS` pending ones in all, and an
        agent's also up to :data:`AGENT_PENDING_LESSONS` pending ones agents made; an agent's counts the mind's
        (a team vault's agent role reads no pending lesson: its server counts them, as its check does)."""
        ctx, table = self._ctx, self._table
        room = SCAN_PENDING_LESSONS - table.pending_total(ctx.mind)  # one count (not the rows waiting_by reads)
        if ctx.actor == "agent":  # both bounds (review 65: alternating with a person's scans, 300 pending)
            room = min(room, AGENT_PENDING_LESSONS - table.agent_pending(ctx.mind))
        return max(0, room)
