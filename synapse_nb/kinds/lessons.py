"""Lessons from reverted changes: pending until a human approves; approved ones expire and can be re-approved.

State machine::

    (revert found / create) --> pending --approve--> approved --(lesson_expiry_days pass)--> expired
                                   |                    ^                                     |
                                   +--reject--> deleted +---------------re-approve------------+

Status is computed at read time (an approved lesson past ``expires_at`` *is* expired); ``prune()``
also persists it. Only the user actor approves or rejects; an agent reads approved, unexpired lessons
only, and reaches a pending one only through :meth:`Lessons.submit_analysis`, by its id or a unique id
prefix: ids and prefixes resolve the same way for every actor (among all the lessons of the mind), and
messages never list an id the actor may not read.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from typing import Any

from synapse_nb._util import MAX_TEXT, check_files, check_text, fmt_ts, new_id
from synapse_nb.errors import ConflictError, GitError, PermissionDeniedError, ValidationError
from synapse_nb.kinds._base import KindManager, dumps, loads
from synapse_nb.models import Lesson, RecordList

__all__ = ["STATUSES", "Lessons"]

STATUSES = ("pending", "approved", "expired")
_CURRENT: Any = object()
_EFFECTIVE = "(CASE WHEN $status = 'approved' AND $expires_at <= ? THEN 'expired' ELSE $status END)"


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

    table = "lessons"
    record_cls = Lesson
    order_by = "created_at DESC, id DESC"

    def _visible(self) -> tuple[str, tuple[Any, ...]]:
        if self._v.actor == "agent":  # agents see approved, unexpired lessons only
            return "$status = 'approved' AND $expires_at > ?", (self._v._now_ts(),)
        return "1", ()

    def _from_row(self, r: sqlite3.Row) -> Lesson:
        status = r["status"]
        if status == "approved" and r["expires_at"] is not None and r["expires_at"] <= self._v._now_ts():
            status = "expired"
        return Lesson(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"], status=status,
            summary=r["summary"], branch=r["branch"], revert_commit=loads(r["revert_commit"], None),
            reverted_commits=tuple(loads(r["reverted_commits"], [])),
            files_affected=tuple(loads(r["files_affected"], [])),
            diffstat=tuple(tuple(x) for x in loads(r["diffstat"], [])), analysis=r["analysis"],
            analysis_by=r["analysis_by"], lesson_text=r["lesson_text"], approved_at=r["approved_at"],
            expires_at=r["expires_at"], source=r["source"],
        )

    @property
    def expiry_days(self) -> int:
        """Days an approved lesson stays in force (setting ``lesson_expiry_days``, default 7)."""
        return int(self._v.settings.get("lesson_expiry_days"))

    # -- create -------------------------------------------------------------------------------------------
    def create(self, summary: str, *, files: Any = None, branch: str | None = None,
               revert_commit: dict[str, Any] | None = None, reverted_commits: Any = (),
               diffstat: Any = ()) -> Lesson:
        """Create a pending lesson by hand (``scan()`` creates them from git reverts).

        Idempotent per revert commit: a second lesson for the same ``revert_commit["sha"]`` is refused
        with :class:`ConflictError`.
        """
        summary = check_text(summary, "summary", max_len=MAX_TEXT)
        files_t = check_files(files, "files")
        if branch is not None:
            branch = check_text(branch, "branch", max_len=255, multiline=False).strip() or None
        if revert_commit is not None:
            revert_commit = _check_commit(revert_commit, "revert_commit")
        if not isinstance(reverted_commits, list | tuple):
            raise ValidationError("reverted_commits must be a list of dicts (sha, subject, author, date)")
        reverted_commits = [_check_commit(x, "reverted_commits item") for x in reverted_commits]
        stats = _check_diffstat(diffstat)
        lid = new_id("les")
        revert_sha = revert_commit["sha"] if revert_commit else None
        with self._v._store.transaction() as c:
            ts = self._v._stamp(c)
            if revert_sha and c.execute("SELECT 1 FROM lessons WHERE mind = ? AND revert_sha = ?",
                                        (self._v.mind, revert_sha)).fetchone():
                raise ConflictError(f"a lesson for revert {revert_sha[:12]} already exists in mind {self._v.mind!r}")
            c.execute(
                "INSERT INTO lessons(id, mind, status, summary, branch, revert_sha, revert_commit, reverted_commits, "
                "files_affected, diffstat, source, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (lid, self._v.mind, "pending", summary, branch, revert_sha,
                 json.dumps(revert_commit, sort_keys=True) if revert_commit else None,
                 dumps(list(reverted_commits)), dumps(list(files_t)), dumps(stats), self._v.actor, ts, ts),
            )
            self._v._touched("lesson", lid)
        return Lesson(id=lid, mind=self._v.mind, created_at=ts, updated_at=ts, status="pending", summary=summary,
                      branch=branch, revert_commit=revert_commit, reverted_commits=tuple(reverted_commits),
                      files_affected=files_t, diffstat=tuple(tuple(s) for s in stats), source=self._v.actor)

    # -- reads --------------------------------------------------------------------------------------------
    def list(self, *, status: str | None = None, limit: int | None = None) -> RecordList[Lesson]:
        """Lessons newest first, optionally one status (pending, approved, expired).

        An agent sees only approved, unexpired lessons; asking for pending or expired ones is refused.
        """
        if status is None:
            return self._list(limit=limit)
        if status not in STATUSES:
            raise ValidationError(f"status {status!r} is not accepted; use one of: {', '.join(STATUSES)}")
        if self._v.actor == "agent" and status != "approved":
            raise PermissionDeniedError(f"an agent may not list {status} lessons; only approved lessons are shown "
                                        "to agents (a pending lesson is reached by id, to submit an analysis)")
        return self._list(f"{_EFFECTIVE} = ?", (self._v._now_ts(), status), order=(
            "approved_at DESC, id DESC" if status == "approved" else None), limit=limit)

    def pending(self) -> RecordList[Lesson]:
        """Lessons waiting for a human decision (user actor only)."""
        return self.list(status="pending")

    def approved(self) -> RecordList[Lesson]:
        """Approved lessons still in force, most recently approved first (these head every recall)."""
        return self.list(status="approved")

    def in_force(self, branch: Any = _CURRENT) -> RecordList[Lesson]:
        """The approved lessons that head every recall on ``branch`` (default: the current git branch).

        Those of that branch, of the default branch (origin's HEAD, else main, else master) and those
        with no branch; outside git, every approved lesson. Most recently approved first.
        """
        if branch is _CURRENT:
            branch = self._v._git_head()[0]
        les = list(self.approved())
        if self._v.repo is not None or branch is not None:  # outside git there is no branch to scope by
            default = self._v._default_branch()
            les = [x for x in les if x.branch is None or x.branch in {branch, default}]
        les.sort(key=lambda x: (x.approved_at or "", x.id), reverse=True)
        return RecordList(les)

    def expired(self) -> RecordList[Lesson]:
        """Approved lessons whose time ran out; they can be re-approved."""
        return self.list(status="expired")

    # -- human decisions ------------------------------------------------------------------------------------
    def approve(self, id: str, *, text: str | None = None, expiry_days: int | None = None) -> Lesson:
        """Approve a pending lesson, or re-approve an expired one (user actor only; an in-force lesson is a
        :class:`ConflictError`).

        The lesson text becomes ``text`` if given, else the submitted analysis if any, else the draft
        summary. It stays in force for ``expiry_days`` (default: the vault's ``lesson_expiry_days``).
        An empty or blank ``text`` is refused (:class:`ValidationError`): leave it out (``None``) to approve
        the analysis or the summary as they are.
        """
        self._require_user("approve a lesson")
        if text is not None:
            text = check_text(text, "lesson text", max_len=MAX_TEXT, allow_empty=True)
            if not text.strip():
                raise ValidationError("lesson text must not be empty; give the lesson's wording, or leave the text "
                                      "out to approve the analysis (or else the summary) as it is")
        les = self.get(id)
        if les.status == "approved":
            raise ConflictError(f"lesson {les.id} is already approved and in force until {les.expires_at}; "
                                "only pending or expired lessons can be approved")
        lesson_text = text or les.lesson_text or les.analysis or les.summary
        days = self.expiry_days if expiry_days is None else expiry_days
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 3650:
            raise ValidationError(f"expiry_days must be a whole number of days from 1 to 3650, got {days!r}")
        now = self._v._now()
        with self._v._store.transaction() as c:
            c.execute("UPDATE lessons SET status = 'approved', lesson_text = ?, approved_at = ?, expires_at = ?, "
                      "updated_at = ? WHERE id = ?",
                      (lesson_text, fmt_ts(now), fmt_ts(now + timedelta(days=days)), self._v._stamp(c), les.id))
            self._v._touched("lesson", les.id)
        return self.get(les.id)

    reapprove = approve

    def reject(self, id: str) -> Lesson:
        """Reject a lesson: it is deleted (user actor only). Returns what it was."""
        self._require_user("reject a lesson")
        les = self.get(id)
        with self._v._store.transaction() as c:
            c.execute("DELETE FROM lessons WHERE id = ?", (les.id,))
            self._v._touched("lesson", les.id, deleted=True)
        return les

    def submit_analysis(self, id: str, text: str) -> Lesson | None:
        """Attach an explanation of why the reverted change failed.

        From an agent it is a proposal stored beside the draft (the agent gets ``None`` back: it may not
        read pending lessons); only a human approval makes it the lesson text. From a user it is stored
        the same way and the updated lesson is returned.
        """
        text = check_text(text, "analysis", max_len=MAX_TEXT)
        full = self.resolve_id(id)  # by id or unique prefix, the same for every actor
        named = full if self._v.actor == "user" else repr(id.strip())  # never spell out a hidden id to an agent
        with self._v._store.transaction() as c:
            row = c.execute("SELECT status, analysis_by FROM lessons WHERE id = ?", (full,)).fetchone()
            if row["status"] != "pending" and self._v.actor == "agent":
                raise ConflictError(f"lesson {named} is {row['status']}; an agent may only analyse pending lessons")
            if self._v.actor == "agent" and row["analysis_by"] == "user":
                raise PermissionDeniedError(f"lesson {named} already has an analysis written by the user; an agent "
                                            "may not replace it")
            c.execute("UPDATE lessons SET analysis = ?, analysis_by = ?, updated_at = ? WHERE id = ?",
                      (text, self._v.actor, self._v._stamp(c), full))
            self._v._touched("lesson", full)
        return None if self._v.actor == "agent" else self.get(full)

    # -- git ------------------------------------------------------------------------------------------------
    def scan(self, *, max_commits: int | None = None) -> RecordList[Lesson]:
        """Create one pending lesson per git revert not seen before (idempotent, across branches).

        Walks history since the last scan (the first scan looks at the newest ``max_commits`` commits,
        setting ``scan_window``, default 2000). Returns the lessons created by this scan (user actor;
        an agent gets an empty list back: it may not read pending lessons).
        """
        from synapse_nb.gitscope.reverts import scan_reverts

        repo = self._v.repo
        if repo is None:
            raise GitError(f"{self._v.project_dir} is not inside a git repository; lesson scanning needs git")
        key = f"scan_tips:{self._v.mind}"
        row = self._v._store.query_one("SELECT value FROM meta WHERE key = ?", (key,))
        since = tuple(json.loads(row["value"])) if row else ()
        window = int(self._v.settings.get("scan_window")) if max_commits is None else int(max_commits)
        prefix = self._v.git_prefix  # the vault's own files never show up in a lesson
        result = scan_reverts(repo, since=since, max_commits=window, exclude=(prefix,) if prefix else ())
        created: list[str] = []
        with self._v._store.transaction() as c:
            for rv in result.reverts:
                sha = rv.revert.sha
                if c.execute("SELECT 1 FROM lessons WHERE mind = ? AND revert_sha = ?",
                             (self._v.mind, sha)).fetchone():
                    continue
                les = self.create(
                    rv.summary, files=list(rv.files_affected), branch=(rv.branches[0] if rv.branches else None),
                    revert_commit=_commit_dict(rv.revert), reverted_commits=[_commit_dict(x) for x in rv.reverted],
                    diffstat=[tuple(x) for x in rv.diffstat],
                )
                created.append(les.id)
            c.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                      (key, json.dumps(sorted(result.scanned_tips))))
        if self._v.actor == "agent":
            return RecordList()
        return RecordList(self.get(i) for i in created)


def _commit_dict(ci: Any) -> dict[str, Any]:
    return {"sha": ci.sha, "subject": ci.subject, "author": ci.author, "date": ci.date}


_COMMIT_KEYS = ("sha", "subject", "author", "date")


def _check_commit(value: Any, field: str) -> dict[str, Any]:
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


def _check_diffstat(diffstat: Any) -> list[list[Any]]:
    """Rows of (path, added, deleted): counts are whole numbers >= 0 or None (binary files)."""
    if diffstat is None:
        return []
    if isinstance(diffstat, str | bytes) or not isinstance(diffstat, list | tuple):
        raise ValidationError("diffstat must be a list of (path, added, deleted) rows")
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
