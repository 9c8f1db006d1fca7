"""Checkpoints: work state (doing, changed files, next step, blockers) scoped to the git branch and commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from synapse_nb._calls import Files
from synapse_nb._util import (
    MAX_TEXT,
    check_choice,
    check_files,
    check_limit,
    check_optional_text,
    check_stored_strings,
    check_text,
    new_id,
)
from synapse_nb.errors import NoCheckpointError, ValidationError
from synapse_nb.kinds._base import KindManager, exactly_once
from synapse_nb.models import AGENT_ORIGINS, Checkpoint, RecordList, past_agent_limits
from synapse_nb.provenance import inline, label_text

if TYPE_CHECKING:
    from synapse_nb.store.base import CheckpointTable

__all__ = ["AGENT_ORIGINS", "ORIGINS", "Checkpoints"]

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

    record_cls = Checkpoint

    @property
    def _table(self) -> CheckpointTable:
        return self._ctx.store.checkpoints

    @staticmethod
    def check_record(c: Checkpoint) -> None:
        """What a stored checkpoint is: the write path builds only such records, and an import refuses others."""
        check_text(c.doing, "doing", max_len=MAX_TEXT, stored=True)
        check_stored_strings(c.changed_files, "changed_files")
        if c.origin not in ORIGINS:
            raise ValidationError(f"origin {c.origin!r} is not one of {', '.join(ORIGINS)}")

    @staticmethod
    def past_agent_limits(fields: Mapping[str, Any]) -> list[str]:
        """An agent's checkpoint comes from the agent or the automatic checkpoint (:data:`AGENT_ORIGINS`): one
        naming the CLI, a notebook or the watcher reads as a person's.

        >>> Checkpoints.past_agent_limits({"origin": "cli"}), Checkpoints.past_agent_limits({"origin": "auto"})
        (['origin=cli'], [])
        """
        held = "origin" in past_agent_limits("checkpoint", fields)
        return [f"origin={inline(str(fields.get('origin')), 20)}"] if held else []

    @exactly_once
    def create(self, doing: str, *, files: Files | None = None, next_step: str | None = None,
               blockers: Files | None = None,
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
        if not isinstance(blockers, str | Sequence | None) or isinstance(blockers, bytes):
            raise ValidationError(f"blockers must be text or a list of texts, got {type(blockers).__name__}")
        if not isinstance(blockers, str | None):
            blockers = "; ".join(check_text(b, "blocker", allow_empty=True) for b in blockers if str(b).strip())
        blk = check_optional_text(blockers, "blockers")
        origin = check_choice(origin, "origin", ORIGINS)
        ctx = self._ctx
        if ctx.actor == "agent":  # from the agent or the automatic checkpoint (one rule: models.past_agent_limits)
            origin = past_agent_limits("checkpoint", {"origin": origin}).get("origin", origin)
        branch, commit = ctx.git.head()
        with ctx.store.transaction():
            ts = self._begin_write(new_record=True)
            ckp = Checkpoint(id=new_id("ckp"), mind=ctx.mind, created_at=ts, updated_at=ts, doing=doing,
                             changed_files=changed, next_step=nxt, blockers=blk, branch=branch, commit=commit,
                             origin=origin, source=ctx.actor)
            self._table.insert(ckp)
            self._changed("create", None, ckp, ts)
        return ckp

    def carry_forward(self, doing: str | None = None, *, files: Files | None = None, next_step: str | None = None,
                      fallback: str, origin: str = "auto") -> Checkpoint:
        """Save a checkpoint that keeps what the latest one on this branch says wherever the caller gives nothing:
        its doing (else ``fallback``), changed files, next step and blockers. What is carried is old stored text,
        so it goes through :func:`synapse_nb.provenance.salvage` (a vault may hold text written before the write
        path cleaned line breaks and controls). Used when a context is about to be compacted: the MCP tool
        ``signal_low_context`` and the agent hooks' ``PreCompact``.

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> _ = v.checkpoint("Refactor auth", files=["src/auth.py"], next_step="run tests")
        >>> c = v.checkpoints.carry_forward(fallback="context at 70%")
        >>> c.doing, c.changed_files, c.next_step, c.origin
        ('Refactor auth', ('src/auth.py',), 'run tests', 'auto')
        """
        from synapse_nb.provenance import salvage

        last = self.latest()
        blockers = None
        if last is not None:
            doing = doing or salvage(last.doing)
            if not files:
                files = [f for f in (salvage(f, multiline=False) for f in last.changed_files) if f]
            next_step = next_step if next_step is not None else salvage(last.next_step)
            blockers = salvage(last.blockers)
        return self.create(doing or fallback, files=files or None, next_step=next_step, blockers=blockers,
                           origin=origin)

    def latest(self, branch: str | None = _CURRENT) -> Checkpoint | None:
        """The newest checkpoint of the current git branch (or of ``branch``); ``None`` when there is none.

        Outside git, or on a detached HEAD, "the branch" is none: the newest checkpoint saved without one.
        """
        if branch is _CURRENT:
            branch = self._ctx.git.head()[0]
        elif branch is not None:
            branch = check_text(branch, "branch", max_len=255, multiline=False)
        return self._table.latest(self._view(), branch)

    def restore(self, id: str = "latest") -> Checkpoint:
        """The checkpoint to resume from: ``"latest"`` (current branch) or an id / unique id prefix.

        Raises :class:`~synapse_nb.errors.NoCheckpointError` when the branch has none yet (its message says
        how to make one; each surface names its own way with ``with_remedy``).
        """
        if id == "latest":
            ckp = self.latest()
            if ckp is None:
                branch = self._ctx.git.head()[0]
                # none on this branch, so every checkpoint of the mind is on another one
                raise NoCheckpointError(branch=branch, mind=self._ctx.mind, elsewhere=self.count(),
                                        shown_branch=label_text(branch) if branch is not None else None)
            return ckp
        return self.get(id)

    def list(self, *, branch: str | None = None, limit: int | None = None) -> RecordList[Checkpoint]:
        """Checkpoints newest first; ``branch=None`` lists every branch, a name lists one branch."""
        limit = check_limit(limit)
        if branch is None:
            return RecordList(self._table.list(self._view(), limit=limit))
        if not isinstance(branch, str):
            raise ValidationError(f"branch must be a branch name, got {type(branch).__name__}")
        branch = check_text(branch, "branch", max_len=255, multiline=False)
        return RecordList(self._table.list(self._view(), branch=branch, limit=limit))
