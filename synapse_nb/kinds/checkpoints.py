"""Checkpoints: work state (doing, changed files, next step, blockers) scoped to the git branch and commit."""

from __future__ import annotations

import sqlite3
from typing import Any

from synapse_nb._util import MAX_TEXT, check_choice, check_files, check_optional_text, check_text, new_id
from synapse_nb.errors import NoCheckpointError, ValidationError
from synapse_nb.kinds._base import KindManager, dumps, loads
from synapse_nb.models import Checkpoint, RecordList

__all__ = ["ORIGINS", "Checkpoints"]

#: Where a checkpoint came from.
ORIGINS = ("api", "notebook", "cli", "agent", "auto", "watch")
_CURRENT: Any = object()


class Checkpoints(KindManager[Checkpoint]):
    """``vault.checkpoints``: save and restore work state per git branch.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> c = v.checkpoint(doing="Refactoring JWT auth", files=["src/auth.py"], next_step="Run pytest")
    >>> v.checkpoints.latest().id == c.id
    True
    """

    table = "checkpoints"
    record_cls = Checkpoint

    def _from_row(self, r: sqlite3.Row) -> Checkpoint:
        return Checkpoint(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"], doing=r["doing"],
            changed_files=tuple(loads(r["changed_files"], [])), next_step=r["next_step"], blockers=r["blockers"],
            branch=r["branch"], commit=r["commit_sha"], origin=r["origin"], source=r["source"],
        )

    def create(self, doing: str, *, files: Any = None, next_step: str | None = None, blockers: Any = None,
               origin: str = "api") -> Checkpoint:
        """Save the current work state; branch and commit are read from git (outside git: none).

        Parameters
        ----------
        doing : what is being worked on (required).
        files : changed files, a list or "a.py,b.py".
        next_step : what to do next.
        blockers : what is in the way (text, or a list joined with "; ").
        origin : api, notebook, cli, agent, auto or watch.
        """
        doing = check_text(doing, "doing", max_len=MAX_TEXT)
        changed = check_files(files, "files")
        nxt = check_optional_text(next_step, "next_step")
        if isinstance(blockers, list | tuple):
            blockers = "; ".join(check_text(b, "blocker", allow_empty=True) for b in blockers if str(b).strip())
        blk = check_optional_text(blockers, "blockers")
        origin = check_choice(origin, "origin", ORIGINS)
        if self._v.actor == "agent" and origin not in ("agent", "auto"):
            origin = "agent"
        branch, commit = self._v._git_head()
        cid = new_id("ckp")
        with self._v._store.transaction() as c:
            ts = self._v._stamp(c)
            c.execute(
                "INSERT INTO checkpoints(id, mind, branch, commit_sha, doing, changed_files, next_step, blockers, "
                "origin, source, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (cid, self._v.mind, branch, commit, doing, dumps(list(changed)), nxt, blk, origin, self._v.actor,
                 ts, ts),
            )
            self._v._touched("checkpoint", cid)
        return Checkpoint(id=cid, mind=self._v.mind, created_at=ts, updated_at=ts, doing=doing,
                          changed_files=changed, next_step=nxt, blockers=blk, branch=branch, commit=commit,
                          origin=origin, source=self._v.actor)

    def latest(self, branch: Any = _CURRENT) -> Checkpoint | None:
        """The newest checkpoint of the current git branch (or of ``branch``); ``None`` when there is none.

        Outside git, or on a detached HEAD, "the branch" is none: the newest checkpoint saved without one.
        """
        if branch is _CURRENT:
            branch = self._v._git_head()[0]
        elif branch is not None:
            branch = check_text(branch, "branch", max_len=255, multiline=False)
        rows = self._rows("$branch IS ?", (branch,), limit=1)
        return self._from_row(rows[0]) if rows else None

    def restore(self, id: str = "latest") -> Checkpoint:
        """The checkpoint to resume from: ``"latest"`` (current branch) or an id / unique id prefix.

        Raises :class:`~synapse_nb.errors.NoCheckpointError` when the branch has none yet (its message says
        how to make one; each surface names its own way with ``with_remedy``).
        """
        if id == "latest":
            ckp = self.latest()
            if ckp is None:
                branch = self._v._git_head()[0]
                # none on this branch, so every checkpoint of the mind is on another one
                raise NoCheckpointError(branch=branch, mind=self._v.mind, elsewhere=self.count())
            return ckp
        return self.get(id)

    def list(self, *, branch: Any = None, limit: int | None = None) -> RecordList[Checkpoint]:
        """Checkpoints newest first; ``branch=None`` lists every branch, a name lists one branch."""
        if branch is None:
            return self._list(limit=limit)
        if not isinstance(branch, str):
            raise ValidationError(f"branch must be a branch name, got {type(branch).__name__}")
        branch = check_text(branch, "branch", max_len=255, multiline=False)
        return self._list("$branch = ?", (branch,), limit=limit)
