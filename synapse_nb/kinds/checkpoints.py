"""Checkpoints: work state (doing, changed files, next step, blockers) scoped to the git branch and commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

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
from synapse_nb.checkpoint_lines import checkpoint_line
from synapse_nb.errors import NoCheckpointError, ValidationError
from synapse_nb.kinds._base import KindManager, exactly_once
from synapse_nb.models import AGENT_ORIGINS, Checkpoint, RecordList, past_agent_limits
from synapse_nb.provenance import inline, label_text

if TYPE_CHECKING:
    from synapse_nb.store.base import CheckpointTable

__all__ = ["AGENT_ORIGINS", "ORIGINS", "PERSONS_FIELD_CHARS", "SINCE_SHOWN", "Checkpoints", "Resume"]

#: Where a checkpoint came from.
ORIGINS = ("api", "notebook", "cli", "agent", "auto", "watch")
#: How many of the checkpoints saved after a restored one its restore text lists (the rest are counted).
SINCE_SHOWN = 3
_CURRENT: Any = object()


#: Most characters of each field of the person's checkpoint an agent's took the place of (``Checkpoints.resume``).
PERSONS_FIELD_CHARS = 300


class Resume(NamedTuple):
    """What a session resumes from (:meth:`Checkpoints.resume`): ``text``, the checkpoints it lists as saved since
    (``since``, people's first, of ``later``, ``agents`` of them agents') for a surface that gives them as fields
    too, the person's own checkpoint it names when it resumes from an agent's (``persons``, else None), and
    ``text`` without its heading and legend (``body``: a JSON answer's ``restore_text``)."""

    text: str
    since: RecordList[Checkpoint]
    later: int
    agents: int = 0
    persons: Checkpoint | None = None
    body: str = ""


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
                      fallback: str, origin: str | None = None) -> Checkpoint:
        """Save a checkpoint that keeps what the latest one on this branch (:meth:`latest`) says wherever the caller
        gives nothing: its doing (else ``fallback``), changed files, next step and blockers. What is carried is old
        stored text, so it goes through :func:`synapse_nb.provenance.salvage` (a vault may hold text written before
        the write path cleaned line breaks and controls). Used by the MCP tool ``signal_low_context`` when a context
        is about to be compacted. ``origin`` (default): ``auto`` when the caller gave neither ``doing`` nor
        ``next_step`` (an automatic checkpoint, :attr:`~synapse_nb.models.Checkpoint.automatic`: it never takes the
        place of the one a session resumes from), else the caller's own (``agent`` for the agent, ``api``).

        The new checkpoint is the actor's: an agent's reads ``[agent · unverified]`` whoever wrote what it carries,
        and a person's carries nothing of an agent's words (its files only: they are names), since under a
        person's mark they would read as that person's (review 86).

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> _ = v.checkpoint("Refactor auth", files=["src/auth.py"], next_step="run tests")
        >>> c = v.checkpoints.carry_forward(fallback="context at 70%")
        >>> c.doing, c.changed_files, c.next_step, c.origin
        ('Refactor auth', ('src/auth.py',), 'run tests', 'auto')
        """
        from synapse_nb.provenance import salvage

        if origin is None:
            origin = "auto" if doing is None and next_step is None else "agent" if self._ctx.actor == "agent" else "api"
        last = self.latest()
        blockers = None
        if last is not None:
            if not files:
                files = [f for f in (salvage(f, multiline=False) for f in last.changed_files) if f]
            if last.source == self._ctx.actor or self._ctx.actor == "agent":
                doing = doing or salvage(last.doing)
                next_step = next_step if next_step is not None else salvage(last.next_step)
                blockers = salvage(last.blockers)
        return self.create(doing or fallback, files=files or None, next_step=next_step, blockers=blockers,
                           origin=origin)

    def latest(self, branch: str | None = _CURRENT, *, automatic: bool = False) -> Checkpoint | None:
        """The checkpoint a session resumes from on the current git branch (or on ``branch``): the newest one saved
        on purpose (by a person, or an agent's ``create_checkpoint``), else, when the branch has only automatic ones
        (:attr:`~synapse_nb.models.Checkpoint.automatic`), the newest of those; ``None`` when there is none.
        ``automatic=True``: the newest whatever saved it. What was saved after it: :meth:`since`.

        Review 86: the agent hooks' automatic checkpoints (before a compaction, every N edits) took the place of the
        agent's own as "the latest", and a later session resumed from "continue" with no next step.

        Outside git, or on a detached HEAD, "the branch" is none: the newest checkpoint saved without one.
        """
        if branch is _CURRENT:
            branch = self._ctx.git.head()[0]
        elif branch is not None:
            branch = check_text(branch, "branch", max_len=255, multiline=False)
        view = self._view()
        found = None if automatic else self._table.latest(view, branch, automatic=False)
        return found or self._table.latest(view, branch)

    def since(self, checkpoint: Checkpoint, *, limit: int | None = SINCE_SHOWN) -> tuple[RecordList[Checkpoint], int]:
        """The checkpoints saved on ``checkpoint``'s branch after it, people's first, each newest first (at most
        ``limit``; None: all), and how many there are: what :meth:`~synapse_nb.models.Checkpoint.restore_text` lists
        under it (``since``, ``later``). People's come first so an agent's many automatic checkpoints never push a
        person's out of the few shown (review 87); :meth:`resume` counts the agents' apart.

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> c = v.checkpoint("Refactor auth", next_step="run tests")
        >>> _ = [v.checkpoint(f"{n} more changed files", origin="auto") for n in (3, 6)]
        >>> v.checkpoints.latest() == c, [x.doing for x in v.checkpoints.since(c)[0]], v.checkpoints.since(c)[1]
        (True, ['6 more changed files', '3 more changed files'], 2)
        """
        rows, total, _ = self._since(checkpoint, limit)
        return RecordList(rows), total

    def _since(self, checkpoint: Checkpoint, limit: int | None) -> tuple[list[Checkpoint], int, int]:
        if not isinstance(checkpoint, Checkpoint):
            raise ValidationError(f"checkpoint must be a Checkpoint (from latest(), restore() or list()), got "
                                  f"{type(checkpoint).__name__}")
        return self._table.since(self._view(), checkpoint, limit=check_limit(limit))

    def resume(self, checkpoint: Checkpoint, width: int | None = None, *, heading: str = "") -> Resume:
        """The text a session resumes from, as every surface gives it (the CLI's and the notebook's restore, the MCP
        ``restore_checkpoint``, the ``SessionStart`` hook): ``heading``, then the checkpoint's
        :meth:`~synapse_nb.models.Checkpoint.restore_text` (fields cut to ``width``) with the checkpoints saved
        after it (:meth:`since`) listed under it, and recall's legend first when any of them is an agent's (an
        agent's automatic checkpoint under a person's is one: review 86). The checkpoints since are listed people's
        first, the agents' counted apart; and when ``checkpoint`` is an agent's and its branch holds one a person saved
        on purpose, the newest of those is named on one line after it, said to be the person's (``persons``; fields
        cut to :data:`PERSONS_FIELD_CHARS`): an agent's ``create_checkpoint`` takes the place of the person's as the
        one resumed from, and "refactor done / next: deploy to prod now" hid "next: run the migration dry-run
        first" entirely (review 87).

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> c = v.checkpoint("Refactor auth", next_step="run tests")
        >>> _ = v.as_agent().checkpoint("12 files edited", origin="auto")
        >>> r = v.checkpoints.resume(c)
        >>> r.later, r.text.splitlines()[0].startswith("([agent · unverified] lines")
        (1, True)
        """
        from synapse_nb.recall.assembly import with_legend  # recall's legend, on first use

        rows, later, agents = self._since(checkpoint, SINCE_SHOWN)
        since = RecordList(rows)
        text = checkpoint.restore_text(width, since, later, agents)
        persons = None
        if checkpoint.source == "agent":
            persons = self._table.latest(self._view(), checkpoint.branch, automatic=False, person=True)
        if persons is not None and persons.id not in {c.id for c in since}:
            cut = min(width or PERSONS_FIELD_CHARS, PERSONS_FIELD_CHARS)
            text += ("\nThe person's own latest checkpoint on this branch (saved on purpose; the one resumed from "
                     f"above is an agent's):\n{checkpoint_line(persons, cut)}")
        return Resume(with_legend([checkpoint, *since], heading + text), since, later, agents, persons, text)

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
