"""``%synapse`` and :class:`SynapseMagics`: the settings, vault handle and notebook state of all the magics.

There is one ``SynapseMagics`` per shell. It is the configurable behind ``%config SynapseMagics.<name>``
(the name notebooks have always used), it holds the vault handle every family reads through, the
recall session of the notebook and the automatic-checkpoint counter, and its :meth:`~SynapseMagics.post_run_cell`
is the extension's one ``post_run_cell`` hook.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand
from traitlets import Bunch, Int, TraitError, Unicode, observe, validate

from synapse_nb.context import check_mind
from synapse_nb.errors import GitError, OfflineError, SynapseError, VaultNotFoundError
from synapse_nb.gitscope import RepoInfo, changed_paths, find_repo
from synapse_nb.kinds.autocheckpoint import MAX_EVERY, AutoCheckpoint
from synapse_nb.magics._base import end_of_cell, usage_errors
from synapse_nb.magics._parse import default_session_id
from synapse_nb.settings import shown
from synapse_nb.vault import SETTINGS, Notice, ReadableVault, Vault, VaultSession, find_vault_dir
from synapse_nb.vault.minds import empty_mind_line, made_mind_line, other_minds

if TYPE_CHECKING:
    from synapse_nb.models import Memory
    from synapse_nb.offline import OfflineVault

__all__ = ["MAGIC_SETTINGS", "SynapseMagics", "git_changed_files"]

#: The settings ``%synapse`` shows, in order (``auto_checkpoint_every`` is an alias of ``auto_checkpoint_cells``).
MAGIC_SETTINGS = ("vault_path", "mind", "session", "lesson_expiry_days", "auto_checkpoint_cells", "default_budget")
#: Most tokens ``default_budget`` may give (the vault setting ``recall_budget_tokens``'s bound).
MAX_BUDGET = 1_000_000
#: Seconds ``git status`` may take after a cell (a hook must not hold up the notebook).
GIT_STATUS_TIMEOUT = 5.0


def _say(notice: Notice) -> None:
    """A vault notice in the notebook: a new vault, once, on stderr (the recall text carries the borrowed line, the
    stale copy's answer its STALE line)."""
    if notice.kind == "created":
        print(notice.line("synapse_nb"), file=sys.stderr)


def git_changed_files(work_tree: RepoInfo | str | Path, *, exclude: str | Path | None = None,
                      timeout: float = GIT_STATUS_TIMEOUT) -> list[str] | None:
    """What git reports changed in ``work_tree`` (:func:`synapse_nb.gitscope.changed_paths`), or ``None``.

    ``None`` when git cannot answer (not a repository, git missing, too slow): the automatic
    checkpoint then counts the cell as outside git. Paths inside ``exclude`` (the vault) never count.
    """
    repo = work_tree if isinstance(work_tree, RepoInfo) else find_repo(work_tree)
    if repo is None:
        return None
    try:
        return changed_paths(repo, exclude=exclude, timeout=timeout)
    except GitError:
        return None


@magics_class
class SynapseMagics(Magics):
    """The synapse_nb magics' settings and shared state, and the ``%synapse`` magic.

    Settings are traitlets, so ``%config SynapseMagics.lesson_expiry_days = 14`` works (and a
    ``c.SynapseMagics.vault_path = ...`` line in an IPython profile). The magic families
    (``%checkpoint``, ``%recall``, ...) are classes of their own that read the settings and the vault
    through this one object.
    """

    vault_path = Unicode(None, allow_none=True, help=(
        "Vault or project folder to use; None means SYNAPSE_HOME if set, else the current folder "
        "(the vault is .synapse/ at its git root)."
    )).tag(config=True)
    mind = Unicode("default", help="Which mind's records the magics read and write.").tag(config=True)
    session = Unicode(None, allow_none=True, help=(
        "Recall session id (what this notebook already received is not repeated); None means one "
        "stable id per kernel."
    )).tag(config=True)
    lesson_expiry_days = Int(None, allow_none=True, help=(
        "Days an approved lesson stays in force; setting it writes the vault's lesson_expiry_days. "
        "None means: leave the vault's value as it is."
    )).tag(config=True)
    auto_checkpoint_cells = Int(None, allow_none=True, help=(
        "Automatic checkpoint every N executed cells that changed something; None means the vault's "
        "auto_checkpoint_cells setting (not set there: auto_checkpoint_every, default 10)."
    )).tag(config=True)
    auto_checkpoint_every = Int(None, allow_none=True, help=(
        "Former name of auto_checkpoint_cells, still accepted: setting it sets auto_checkpoint_cells."
    )).tag(config=True)
    default_budget = Int(None, allow_none=True, help=(
        "Token budget for %recall when --budget is not given; None means the recall default."
    )).tag(config=True)

    def __init__(self, shell: InteractiveShell | None = None, **kwargs: Any) -> None:
        self._vaults: VaultSession | None = None
        self._configured: ReadableVault | None = None  # the handle the notebook's vault settings were written to
        self._session_auto: str | None = None
        self._mind_seen: ReadableVault | None = None  # the handle whose mind was checked (once a handle)
        #: a handle whose mind held no record among other minds, with them, until a write makes it (or it closes)
        self._new_mind: tuple[Vault, tuple[str, ...]] | None = None
        self._wrote = False  # a write handle was asked for in this cell
        #: the notebook's automatic checkpoints (``%checkpoint auto on|off``), counted in cells
        self.auto = AutoCheckpoint(unit="cell")
        #: results shown once in the running cell (see ``shown_once``)
        self.fresh: list[Any] = []
        #: what ``%memory verify ID`` last showed of each agent's memory: ``--yes`` verifies exactly that
        self.to_verify: dict[str, Memory] = {}
        super().__init__(shell=shell, **kwargs)

    # -- the vault --------------------------------------------------------------------------------------------
    @property
    def vault(self) -> Vault:
        """The vault the magics read (opened on first use, as the user actor).

        Reading never creates a vault: with none yet this raises ``VaultNotFoundError`` (a magic shows
        it as one line). Writing magics use :meth:`writable_vault`, which creates it; ``%recall`` and
        ``%memory search`` use :meth:`readable_vault`, which may be a team vault's stale copy.
        """
        v = self._session().read()
        self._configure(v)
        self._check_mind(v)
        return v

    def writable_vault(self) -> Vault:
        """The vault for a write: created inside an existing folder when there is none (said once on stderr)."""
        v = self._session().write()
        self._configure(v)
        self._check_mind(v, writes=True)
        return v

    def readable_vault(self) -> ReadableVault:
        """The vault for a read this machine's stale copy of a team vault can answer (``%recall``, ``%memory
        search``): a team vault whose server cannot be reached is the copy (``v.offline``: answers marked STALE, a
        write is a one-line OfflineError); the next magic tries the server again."""
        v = self._session().read_or_stale()
        self._configure(v)
        self._check_mind(v)
        return v

    def stale_copy(self, exc: OfflineError) -> OfflineVault:
        """This machine's stale copy once the server of the open team vault went away (``exc``, raised by a read
        the copy can answer); ``exc`` again when the server answers or there is no copy (the next magic retries)."""
        return self._session().stale_copy(exc)

    def _session(self) -> VaultSession:
        """The notebook's vault session: ``vault_path`` and ``mind`` as set now (a change closes it)."""
        if self._vaults is None:
            self._vaults = VaultSession(self.vault_path or None, mind=self.mind, actor="user", readonly=False,
                                        offline=True, on_notice=_say, surface="notebook")
        return self._vaults

    def _configure(self, v: ReadableVault) -> None:
        """Write the notebook's vault settings (``lesson_expiry_days``) to a handle the first time it is seen."""
        if v is self._configured:
            return
        self._configured = v
        if self.lesson_expiry_days is not None and not v.offline:
            v.settings.set("lesson_expiry_days", self.lesson_expiry_days)

    def _check_mind(self, v: ReadableVault, *, writes: bool = False) -> None:
        """The first time a handle is used: a mind that holds no record while other minds do (a mistyped
        ``SynapseMagics.mind``) is said on stderr by a read; a write's is said after its cell, once it made the mind
        (:meth:`post_run_cell`). As the CLI does (review 68 F6); no answer changes."""
        self._wrote = self._wrote or writes
        if v is self._mind_seen or v.offline:
            return
        self._mind_seen, self._new_mind = v, None
        minds = other_minds(v)
        if minds is None:
            return
        self._new_mind = (v, minds)
        if not writes:
            print(f"synapse_nb: {empty_mind_line(v.mind, minds)}", file=sys.stderr)

    def _say_new_mind(self) -> None:
        """After a cell that asked for a write handle: the new mind it made, if it did (once)."""
        pending, wrote, self._wrote = self._new_mind, self._wrote, False
        if pending is None or not wrote:
            return
        if (line := made_mind_line(*pending)) is not None:
            self._new_mind = None
            print(f"synapse_nb: {line}", file=sys.stderr)

    @property
    def session_id(self) -> str:
        """The recall session of this notebook: the ``session`` setting, else one id per kernel."""
        if self.session:
            return self.session
        if self._session_auto is None:
            self._session_auto = default_session_id()
        return self._session_auto

    def close(self) -> None:
        """Close the vault handle (the next magic opens it again)."""
        if self._vaults is not None:
            self._vaults.close()
            self._vaults = None
        self._configured = self._mind_seen = self._new_mind = None
        self.to_verify.clear()  # shown from the vault closed (another vault_path or mind: shown again from the next)

    # -- settings -----------------------------------------------------------------------------------------------
    @observe("vault_path", "mind")
    def _reopen(self, change: Bunch) -> None:
        self.close()

    @validate("lesson_expiry_days")
    def _check_expiry(self, proposal: Bunch) -> int | None:
        value = proposal["value"]
        if value is None:
            return value
        try:
            return int(self.writable_vault().settings.set("lesson_expiry_days", value))
        except SynapseError as exc:
            raise TraitError(f"lesson_expiry_days: {exc}") from None

    # each setting checked when %config sets it, the old value kept on a refusal (review 78: a default_budget of -3,
    # a mind of '' or a vault_path that does not exist were taken, and the next magic failed naming something else)
    @validate("vault_path")
    def _check_vault_path(self, proposal: Bunch) -> str | None:
        value: str | None = proposal["value"]
        if value is None or value == "" or value.lower().startswith(("postgresql://", "postgres://")):
            return value
        if not Path(value).expanduser().is_dir():
            raise TraitError(f"vault_path: no folder {value!r}; give an existing project or vault folder, a team vault "
                             "URL (postgresql://...), or None (SYNAPSE_HOME if set, else the current folder)")
        return value

    @validate("mind")
    def _check_mind_name(self, proposal: Bunch) -> str:
        try:
            return check_mind(proposal["value"])
        except SynapseError as exc:
            raise TraitError(f"{exc} (e.g. %config SynapseMagics.mind = 'research')") from None

    @validate("session")
    def _check_session(self, proposal: Bunch) -> str | None:
        value: str | None = proposal["value"]
        if value is not None and (not value.strip() or len(value) > 200 or not value.isprintable()):
            raise TraitError(f"session: {value!r} is not accepted; use a name of 1-200 printable characters, or None "
                             "(one id per kernel)")
        return value

    @validate("default_budget")
    def _check_budget(self, proposal: Bunch) -> int | None:
        value: int | None = proposal["value"]
        if value is not None and not 0 <= value <= MAX_BUDGET:
            raise TraitError(f"default_budget: {value} is not accepted; use a whole number of tokens from 0 to "
                             f"{MAX_BUDGET:,}, or None (the vault's recall_budget_tokens)")
        return value

    @validate("auto_checkpoint_cells", "auto_checkpoint_every")
    def _check_every(self, proposal: Bunch) -> int | None:
        value = proposal["value"]
        if value is not None and not 1 <= value <= MAX_EVERY:
            raise TraitError(f"{proposal['trait'].name} must be from 1 to {MAX_EVERY} cells, got {value}")
        out: int | None = value
        return out

    @observe("auto_checkpoint_every")
    def _old_name(self, change: Bunch) -> None:
        self.auto_checkpoint_cells = change["new"]

    def cells_per_checkpoint(self) -> int:
        """Cells per automatic checkpoint: the ``auto_checkpoint_cells`` setting, else the vault's."""
        if self.auto_checkpoint_cells is not None:
            return int(self.auto_checkpoint_cells)
        return AutoCheckpoint.every_from(self.vault.settings.get, "cell")

    # -- events ---------------------------------------------------------------------------------------------------
    def post_run_cell(self, result: Any) -> None:
        """IPython ``post_run_cell`` hook: end the cell's display suppression; count auto-checkpoint cells."""
        end_of_cell(self.fresh)
        self._say_new_mind()
        if not self.auto.enabled:
            return
        try:
            self.auto.set_every(self.cells_per_checkpoint())
            if self.auto.observe(success=bool(getattr(result, "success", True)), changed=self.changed_files()):
                self.auto.save(self.writable_vault().checkpoints, origin="auto")
        except Exception as exc:  # noqa: BLE001 - a hook must never break the user's cell
            print(f"synapse_nb: auto checkpoint skipped: {exc}")

    def changed_files(self) -> list[str] | None:
        """What git reports changed in the vault's work tree (the vault folder excepted); None outside git."""
        v = self.vault
        return None if v.repo is None else git_changed_files(v.repo, exclude=v.path)

    # -- %synapse -------------------------------------------------------------------------------------------------
    @no_var_expand
    @line_magic
    @usage_errors
    def synapse(self, line: str = "") -> None:
        """Show which vault, mind, actor, session and settings the magics use.

        Examples
        --------
        ::

            %synapse
            %config SynapseMagics.mind = "research"   # switch mind (the vault is reopened)
            %config SynapseMagics.lesson_expiry_days = 14
            %config SynapseMagics                     # every setting, with its help
        """
        if line.strip():
            raise UsageError(f"%synapse takes no arguments, got {line.strip()!r}")
        print(self.describe())

    def describe(self) -> str:
        """The text ``%synapse`` prints (it never creates the vault: before the first write it says so)."""
        try:
            v = self.vault
            path, project, repo, settings = v.path, v.project_dir, v.repo, v.settings.as_dict()
            mind, actor, note = v.mind, v.actor, ""
        except VaultNotFoundError:
            path, project = find_vault_dir(self.vault_path or None)
            repo = find_repo(project)
            settings = {k: SETTINGS[k][0] for k in sorted(SETTINGS)}
            mind, actor, note = self.mind, "user", " (none yet: the first write creates it)"
        width = max(len(k) for k in (*settings, *MAGIC_SETTINGS))  # one setting a line: nothing wraps mid-word
        lines = [
            f"vault    {path}{note}",
            f"project  {project}" + (f" (git work tree {repo.work_tree})" if repo is not None else " (no git)"),
            f"mind     {mind}",
            f"actor    {actor}",
            f"session  {self.session_id}",
            "vault settings (vault.settings; the vault's, for everyone using it):",
            *(f"  {k:<{width}} {shown(settings[k])}" for k in sorted(settings)),  # one quoted line each (review 41)
            "magic settings (%config SynapseMagics.<name>; this kernel's):",
            *(f"  {k:<{width}} {getattr(self, k)!r}" for k in MAGIC_SETTINGS),
            self.auto.describe(),
        ]
        return "\n".join(lines)
