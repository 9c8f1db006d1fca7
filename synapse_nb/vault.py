"""The vault: the front door to every memory kind.

A vault is a folder (by default ``.synapse/`` at the root of the git work tree; worktrees of one
repository share it; outside git, the current folder) holding ``synapse.db`` (SQLite, the system of
record) and ``index/`` (the LanceDB retrieval cache, rebuildable).

Every vault handle has a ``mind`` (records never cross minds unless asked) and an ``actor``:
``"user"`` for human surfaces (notebook, widgets, CLI) and ``"agent"`` for agent surfaces (MCP).
The permission model lives here, in the core, so that no surface can forget it: an agent proposes
(unverified memories, checkpoints, decisions, episodes, lesson analyses) and can never approve or
reject a lesson, verify a memory, overwrite or delete a user's record, claim ``source="user"``,
read pending lessons, change settings or import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from synapse_nb._util import Clock, fmt_ts, parse_duration, shift, utcnow
from synapse_nb.borrowed import Borrowed, detect
from synapse_nb.context import ACTORS, Context, GitView, check_identity
from synapse_nb.errors import (ConflictError, OfflineError, PermissionDeniedError, StoreError, SynapseError,
                               ValidationError, VaultNotFoundError)
from synapse_nb.gitscope.repo import RepoInfo, find_repo
from synapse_nb.gitscope.vaultdir import (GITIGNORE_TEXT, ensure_gitignore, holds_only_vault_files, tracked_files,
                                          untrack_command)
from synapse_nb.kinds.checkpoints import Checkpoints
from synapse_nb.kinds.decisions import Decisions
from synapse_nb.kinds.episodes import Episodes
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.kinds.memories import Memories
from synapse_nb.kinds.notes import Notes
from synapse_nb.models import Checkpoint, Decision, Memory, PruneReport, Status
from synapse_nb.settings import BAR_SETTINGS, SEMANTIC, SETTINGS, Settings
from synapse_nb.store.records import Change, View
from synapse_nb.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from synapse_nb.follow import VerifyReport
    from synapse_nb.recall import Bars, Recall
    from synapse_nb.recall.engine import Recaller
    from synapse_nb.store.indexer import VaultIndex
    from synapse_nb.transfer import ImportCounts

__all__ = ["ACTORS", "BAR_SETTINGS", "SETTINGS", "Settings", "Vault", "find_vault_dir", "open_team_vault",
           "open_vault"]

VAULT_DIRNAME = ".synapse"
DB_NAME = "synapse.db"


def find_vault_dir(path: str | Path | None = None) -> tuple[Path, Path]:
    """Where the vault for ``path`` lives, and the project folder it belongs to. Creates nothing.

    ``path`` (and ``SYNAPSE_HOME``, which is used when ``path`` is None: the two mean the same thing)
    names either

    - a **vault folder**: a folder named ``.synapse`` (it need not exist yet, its parent must), or an
      existing folder holding ``synapse.db``. Its project is the folder around a ``.synapse``, and the
      current folder for a vault folder of another name; or
    - a **project folder** (anything else; it must exist): its vault is ``.synapse/`` at the main work
      tree of the git repository containing it (so worktrees share one vault), or ``.synapse/`` in the
      folder itself outside git.

    Without ``path`` and ``SYNAPSE_HOME`` the project folder is the current folder.

    Raises
    ------
    VaultNotFoundError
        The folder named does not exist (a typo must never look like an empty vault), or is a file.
    ConflictError
        The folder holds a ``synapse.db`` *and* a ``.synapse/`` vault: two vaults, and no way to tell
        which one is meant (an older version wrote ``SYNAPSE_HOME/synapse.db`` beside the project's vault).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> proj = pathlib.Path(tempfile.mkdtemp())
    >>> find_vault_dir(proj) == (proj.resolve() / ".synapse", proj.resolve())
    True
    """
    vault_dir, project_dir, _, _ = _locate(path)
    return vault_dir, project_dir


def _locate(path: str | Path | None) -> tuple[Path, Path, str, Path | None]:
    """:func:`find_vault_dir` plus how to name the location in a message (``SYNAPSE_HOME=/x`` or ``/x``), and the
    vault folder as named (absolute, not resolved) when the path named the vault folder itself (else None)."""
    label = ""
    if path is None and os.environ.get("SYNAPSE_HOME", "").strip():
        path, label = os.environ["SYNAPSE_HOME"].strip(), "SYNAPSE_HOME="
    try:
        named = None if path is None else Path(path).expanduser().absolute()
        base = (Path.cwd() if path is None else Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as exc:
        raise VaultNotFoundError(f"cannot resolve the vault location {label}{path!s}: {exc}") from None
    if base.name == VAULT_DIRNAME:
        if not base.parent.is_dir():
            raise VaultNotFoundError(f"no vault at {label}{base}: the folder {base.parent} does not exist (a typo?); "
                                     "synapse-nb never creates missing folders")
        if base.exists() and not base.is_dir():
            raise VaultNotFoundError(f"no vault at {label}{base}: it is a file, not a vault folder")
        return base, base.parent, f"{label}{base}", named
    if not base.exists():
        raise VaultNotFoundError(f"no vault at {label}{base}: the folder does not exist (a typo?); name an existing "
                                 "project folder or vault folder (synapse-nb never creates missing folders)")
    if not base.is_dir():
        hint = f"; name the folder that holds it: {base.parent}" if base.name == DB_NAME else ""
        raise VaultNotFoundError(f"no vault at {label}{base}: it is a file, not a project or vault folder{hint}")
    if (base / DB_NAME).is_file():
        if (base / VAULT_DIRNAME / DB_NAME).is_file():
            aside = base / "old-vault"
            raise ConflictError(
                f"{label}{base} holds two vaults: {base / DB_NAME} and {base / VAULT_DIRNAME}/; a path names a "
                "project folder (its vault is .synapse/) or a vault folder, never both. Keep the project's vault and "
                f"move the stray one aside: mkdir {aside} && mv {base / DB_NAME}* {aside}/ (then merge it if wanted: "
                f"synapse-nb --vault {aside} memory export | synapse-nb --vault {base} memory import -)")
        return base, Path.cwd().resolve(), f"{label}{base}", named  # a vault folder of another name serves the project you work in
    repo = find_repo(base)
    if repo is not None:
        return repo.main_work_tree / VAULT_DIRNAME, base, f"{label}{base}", None
    return base / VAULT_DIRNAME, base, f"{label}{base}", None


def open_vault(path: str | Path | None = None, *, mind: str = "default", actor: str = "user",
               clock: Clock | None = None, readonly: bool = False, create: bool = True,
               offline: bool = False) -> Vault:
    """Open the vault for a project; with ``create`` (the default), create it if it does not exist yet.

    Where the vault is: see :func:`find_vault_dir` (``path`` and ``SYNAPSE_HOME`` name a project
    folder or a vault folder, the same way). A vault is created only inside an existing folder:
    missing parent folders are never created, so a mistyped path is a :class:`VaultNotFoundError`
    naming it, never a new empty vault. A new vault folder gets a ``.gitignore`` holding ``*`` (and an
    existing one gets it when missing), so git never stages, reverts or stashes the vault.
    ``vault.created`` says whether this call created it. A *borrowed* vault (``vault.borrowed``,
    :mod:`synapse_nb.borrowed`: git tracks it, or a symlink leads out of the project to it) is flagged in every recall.

    Parameters
    ----------
    path : a project folder (the vault is ``.synapse/`` at its git root, or in it outside git), or a
        vault folder itself, or a team vault URL (``postgresql://user@host:port/db?project=NAME``, see
        ``docs/team.md``). Default: ``SYNAPSE_HOME`` if set, else the current folder.
    mind : which mind's records to see and write (default "default").
    actor : "user" (human surfaces: writes are verified) or "agent" (writes are proposals).
    clock : a callable returning an aware ``datetime`` (tests); default the real UTC clock.
    readonly : open without write access (every write raises ``StoreError``); never creates.
    create : create the vault when there is none (default True, for code that is about to write);
        ``create=False`` is for reading: a missing vault is a :class:`VaultNotFoundError`. The CLI,
        the magics and the MCP server open with ``create=False`` for every read.
    offline : for a team vault URL only: when its server cannot be reached, return this machine's stale,
        read-only copy (a :class:`synapse_nb.offline.OfflineVault`: ``search``/``recall`` answer marked
        ``STALE`` with the copy's age, everything else raises :class:`OfflineError`) instead of raising
        :class:`OfflineError`. The CLI's read commands pass it.

    Raises
    ------
    VaultNotFoundError
        The folder does not exist, or there is no vault and ``create`` is False (or ``readonly``).

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> v.mind, v.actor, v.created
    ('default', 'user', True)
    >>> syn.open_vault(tempfile.mkdtemp(), create=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synapse_nb.errors.VaultNotFoundError: no vault at ...
    """
    check_identity(mind, actor)  # before anything is created
    team = path if path is not None else os.environ.get("SYNAPSE_HOME", "").strip() or None
    if isinstance(team, str) and team.lower().startswith(("postgresql://", "postgres://")):
        return open_team_vault(team, mind=mind, actor=actor, clock=clock, readonly=readonly, offline=offline)
    vault_dir, project_dir, shown, named = _locate(path)
    borrowed = detect(vault_dir, project_dir, named=named, db_name=DB_NAME)  # one git ls-files per open, not per recall
    refusal = borrowed.refusal if borrowed is not None else None
    created = False
    if not (vault_dir / DB_NAME).is_file():
        if readonly or not create:
            raise VaultNotFoundError(
                f"no vault at {shown} (looked for .synapse/ at the git root, or in the folder outside git: "
                f"{vault_dir}); create one with `synapse-nb init` or by writing a memory")
        if refusal is not None:  # never create a vault (or its .gitignore) outside the project
            raise PermissionDeniedError(refusal)
        try:
            vault_dir.mkdir(exist_ok=True)  # never parents: find_vault_dir checked that the folder around exists
        except OSError as exc:
            raise StoreError(f"cannot create the vault folder {vault_dir}: {exc.strerror or exc}") from exc
        created = True
    if not readonly and refusal is None and (vault_dir.name == VAULT_DIRNAME or created
                                             or holds_only_vault_files(vault_dir)):
        ensure_gitignore(vault_dir)  # never into a folder that also holds the user's own files
    store = SqliteStore(vault_dir / DB_NAME, readonly=readonly, refusal=refusal)
    v = Vault(vault_dir, project_dir=project_dir, mind=mind, actor=actor, clock=clock, readonly=readonly,
              _store=store, _git=GitView(project_dir, vault_dir, borrowed))
    v.created = created
    return v


def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None, offline: bool = False) -> Vault:
    """Open a team vault (``postgresql://user@host:port/db?project=NAME``; see ``docs/team.md``).

    ``project`` defaults to the repository's folder name. This machine's caches (the retrieval index and its
    position in the change feed) live in ``.synapse/`` at the root of ``local`` 's repository (default: the current
    folder's); two handles with different ``local`` folders are two machines. An agent handle runs as the
    project's agent database role, so the server itself refuses what the human gate forbids. An unreachable
    server is an :class:`OfflineError` saying so: nothing is ever written to a local fork; with ``offline``,
    this machine's stale copy is returned instead when it has one (see :func:`open_vault`).
    """
    try:
        from synapse_nb.store.postgres import PgStore, parse_team_url, project_for  # psycopg: team vaults only
    except ImportError as exc:
        raise StoreError(f"a team vault needs psycopg ({exc}); install it with: pip install 'synapse_nb[team]'") from exc

    check_identity(mind, actor)
    start = Path(local or Path.cwd()).resolve()
    repo = find_repo(start)
    project_dir = repo.main_work_tree if repo is not None else start
    conninfo, project = parse_team_url(url, project_for(project_dir))
    folder = project_dir / VAULT_DIRNAME
    try:
        folder.mkdir(exist_ok=True)  # never its parents
    except OSError as exc:
        raise StoreError(f"cannot create this machine's cache folder {folder}: {exc.strerror or exc}") from exc
    ensure_gitignore(folder)
    try:
        store = PgStore(conninfo, project, folder=folder, readonly=readonly,
                        role="agent" if actor == "agent" else None)
    except OfflineError as exc:
        if not offline:
            raise
        from synapse_nb.offline import OfflineVault, has_copy

        if not has_copy(folder):
            raise OfflineError(f"{exc}; and this machine has no copy of it to read ({folder}/index is made by "
                               "`synapse-nb index rebuild` or an index search while the server is reachable)") from exc
        location = f"{conninfo.split('?')[0].rsplit('@', 1)[-1]}?project={project}"
        return OfflineVault(folder, location=location, mind=mind, actor=actor,  # type: ignore[return-value]
                            reason=str(exc).split(": this machine")[0])
    try:
        return Vault(folder, project_dir=project_dir, mind=mind, actor=actor, clock=clock, readonly=readonly,
                     _store=store)  # type: ignore[arg-type]
    except BaseException:
        store.close()
        raise


class Vault:
    """One vault, seen as one mind by one actor: the facade over the core. Use :func:`open_vault` to get one.

    It builds the :class:`~synapse_nb.context.Context` (store, mind, actor, clock, git view) that the kind
    managers, recall, follow, transfer and settings work in, and exposes them.
    """

    #: False: this handle reads and writes the system of record (an offline team vault's stale copy is True)
    offline = False

    def __init__(self, vault_dir: str | Path, *, project_dir: str | Path | None = None, mind: str = "default",
                 actor: str = "user", clock: Clock | None = None, readonly: bool = False,
                 _store: SqliteStore | None = None, _git: GitView | None = None) -> None:
        check_identity(mind, actor)
        self.path = Path(vault_dir)
        #: True when :func:`open_vault` created this vault (surfaces say where, once)
        self.created = False
        self.project_dir = Path(project_dir) if project_dir is not None else self.path.parent
        self.mind = mind
        self.actor = actor
        self._clock = clock or utcnow
        self._store = _store or SqliteStore(self.path / DB_NAME, readonly=readonly)
        self._git = _git or GitView(self.project_dir, self.path)
        self._ctx = Context(store=self._store, mind=mind, actor=actor, git=self._git,  # type: ignore[arg-type]
                            clock=self._clock)
        self.memories = Memories(self._ctx)
        self.checkpoints = Checkpoints(self._ctx)
        self.decisions = Decisions(self._ctx)
        self.lessons = Lessons(self._ctx)
        self.episodes = Episodes(self._ctx)
        self.notes = Notes(self._ctx)
        self.settings = Settings(self._ctx)
        self._recaller: Recaller | None = None
        self._index: VaultIndex | None = None

    # -- identity -----------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Vault {self.path} mind={self.mind!r} actor={self.actor!r}>"

    def with_mind(self, mind: str) -> Vault:
        """The same vault (same connection) seen as another mind."""
        return Vault(self.path, project_dir=self.project_dir, mind=mind, actor=self.actor, clock=self._clock,
                     _store=self._store, _git=self._git)

    def as_agent(self) -> Vault:
        """The same vault (same connection) acting as the agent actor. There is no ``as_user``."""
        return Vault(self.path, project_dir=self.project_dir, mind=self.mind, actor="agent", clock=self._clock,
                     _store=self._store.for_actor("agent"), _git=self._git)  # a team vault: the agent's role

    @property
    def borrowed(self) -> Borrowed | None:
        """Why this vault is borrowed (:class:`synapse_nb.borrowed.Borrowed`, found by :func:`open_vault`), or None."""
        return self._git.borrowed

    @property
    def db_path(self) -> Path:
        return self._store.path

    @property
    def repo(self) -> RepoInfo | None:
        """The git repository of the project folder, or ``None`` outside git."""
        return self._git.repo

    @property
    def git_prefix(self) -> str | None:
        """The vault folder relative to its project's repository root (``".synapse/"``), or None.

        Lesson scans, ``verify`` and staleness leave paths inside it out: the vault's own files are
        never a code change.
        """
        return self._git.prefix

    def tracked_by_git(self) -> tuple[str, ...]:
        """Files of the vault folder that git tracks (committed by an older version, or forced in).

        Repository-relative paths, sorted; empty outside git or when nothing is tracked (the normal
        case: the vault folder's ``.gitignore`` keeps it out). One ``git ls-files``; :meth:`status`
        reports it with the command that untracks the vault.
        """
        return tracked_files(self.path)[1]

    def close(self) -> None:
        self._store.close()

    def discard_if_unused(self) -> bool:
        """Close this vault and remove it if this handle created it and nothing has been written to it.

        Surfaces call it after a refused first write (an empty key, an unknown category), so a typo leaves no
        vault behind. Only the files a new vault holds are removed (a ``.gitignore`` the user wrote stays, and a
        folder that holds anything else stays); returns True when the vault folder is gone.
        """
        from itertools import islice

        from synapse_nb.transfer import export_lines  # the same records an export would hold

        if not self.created:
            return False
        try:
            if next(islice(export_lines(self._store), 1, None), None) is not None:  # more than the header line
                return False
        except SynapseError:
            return False
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            (self.path / (DB_NAME + suffix)).unlink(missing_ok=True)
        ignore = self.path / ".gitignore"
        if ignore.is_file() and ignore.read_text(encoding="utf-8", errors="replace") == GITIGNORE_TEXT:
            ignore.unlink()  # ours; a .gitignore the user wrote stays
        try:
            self.path.rmdir()
        except OSError:
            return False
        return True

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def on_change(self, listener: Callable[[list[Change]], None]) -> None:
        """Call ``listener([(kind, id, deleted), ...])`` after each committed write to this vault's connection
        (through this handle, or another handle of it such as ``with_mind`` or ``as_agent``)."""
        self._store.on_change(listener)

    def transaction(self) -> AbstractContextManager[object]:
        """Group several writes into one transaction (faster in bulk, all-or-nothing).

        >>> with v.transaction():  # doctest: +SKIP
        ...     for i in range(1000):
        ...         v.remember("knowledge", f"fact_{i}", "...")
        """
        return self._store.transaction()

    # -- shortcuts ----------------------------------------------------------------------------------------
    def remember(self, category: str, key: str, content: str, **kwargs: Any) -> Memory:
        """Shortcut for :meth:`Memories.remember` (upsert by (category, key)).

        Tags (``tags=["db", "deploy"]`` or ``tags="db,deploy"``) are one word each, trimmed, lower-cased,
        with a leading ``#`` dropped: ``"#DB"`` is the tag ``db``.
        """
        return self.memories.remember(category, key, content, **kwargs)

    def checkpoint(self, doing: str, *, files: Any = None, next_step: str | None = None, blockers: Any = None,
                   origin: str = "api") -> Checkpoint:
        """Shortcut for :meth:`Checkpoints.create`."""
        return self.checkpoints.create(doing, files=files, next_step=next_step, blockers=blockers, origin=origin)

    def decide(self, decision: str, *, rationale: str | None = None, tags: Any = None) -> Decision:
        """Shortcut for :meth:`Decisions.create`.

        Tags (``tags=["storage"]`` or ``tags="storage,sqlite"``) are one word each, trimmed, lower-cased,
        with a leading ``#`` dropped: ``"#SQLite"`` is the tag ``sqlite``.
        """
        return self.decisions.create(decision, rationale=rationale, tags=tags)

    # -- recall -------------------------------------------------------------------------------------------
    def recall(self, query: str, *, session: str | None = None, branch: str | None = None, files: Any = None,
               budget_tokens: int | None = None, bars: Bars | None = None, path: str = "auto") -> Recall:
        """What this turn needs to know: only the new and relevant across all memories, or "nothing new".

        The approved-lesson banner comes first on every call. With ``session``, what that session already
        received unchanged is not repeated. See :mod:`synapse_nb.recall` for the gate and its bars.

        Parameters
        ----------
        query : the question or the turn's text.
        session : a stable id per conversation/notebook for the per-turn delta.
        branch : the branch whose lessons and checkpoints count (default: the current git branch).
        files : files being worked on; records that refer to them get a bonus.
        budget_tokens : most tokens for the hits (default: the bars' ``budget_tokens``).
        bars : a :class:`synapse_nb.recall.Bars` to override the gate's thresholds (default:
            :meth:`default_bars`, the bars saved in the vault's settings, else ``Bars()``).
        path : "auto" (default) or "rank": BM25 over the ranking table, then the structure step ("exhaustive"
            and "index", recall v1's candidate paths, are accepted and run the same ranking).

        Examples
        --------
        >>> r = v.recall("how do we run migrations?", session="s1")  # doctest: +SKIP
        >>> print(r.text)  # doctest: +SKIP
        """
        if self._recaller is None:
            from synapse_nb.recall.engine import Recaller  # loaded by the first recall (import synapse_nb stays light)

            self._recaller = Recaller(self._ctx, lambda: self.index, defaults=self._recall_settings)
        return self._recaller.recall(query, session=session, branch=branch, files=files,
                                     budget_tokens=budget_tokens, bars=bars, path=path)

    def default_bars(self, saved: dict[str, Any] | None = None) -> Bars:
        """The gate's bars a recall uses when given none: ``Bars()`` with the saved defaults applied.

        The user saves them with :meth:`save_default_bars` (the ``GateExplorer`` widget's "Save as my
        defaults" button) or the settings ``recall_floor``, ``recall_margin``, ``recall_top_k`` and
        ``recall_budget_tokens``.

        >>> v.default_bars().floor  # doctest: +SKIP
        0.3
        """
        from synapse_nb.recall import Bars  # recall loads on first use (import synapse_nb stays light)

        saved = saved if saved is not None else self.settings.get_many(BAR_SETTINGS.values())
        return Bars(**{field: saved[name] for field, name in BAR_SETTINGS.items()})

    def _recall_settings(self) -> tuple[Bars, float]:
        """The saved default bars and the ``recall_semantic`` weight, in one settings read (recall reads them inside
        its snapshot)."""
        saved = self.settings.get_many([*BAR_SETTINGS.values(), SEMANTIC])
        return self.default_bars(saved), float(saved[SEMANTIC])

    def save_default_bars(self, bars: Bars) -> Bars:
        """Save ``bars``' floor, margin, top-k and budget as this vault's recall defaults (user only).

        Every later ``recall`` without ``bars`` (notebook, CLI, MCP) uses them. Returns the saved defaults.

        >>> from synapse_nb.recall import Bars
        >>> v.save_default_bars(Bars(floor=0.25, top_k=3))  # doctest: +SKIP
        """
        from synapse_nb.recall import Bars  # recall loads on first use (import synapse_nb stays light)

        if not isinstance(bars, Bars):
            raise ValidationError(f"bars must be a synapse_nb.recall.Bars, got {type(bars).__name__}")
        self.settings.set_many({name: getattr(bars, field) for field, name in BAR_SETTINGS.items()})
        return self.default_bars()

    @property
    def index(self) -> VaultIndex:
        """The LanceDB retrieval index (:class:`synapse_nb.store.indexer.VaultIndex`): ``rebuild()``, ``check()``."""
        if self._index is None:
            from synapse_nb.store.indexer import VaultIndex  # index upkeep loads on first use (cold start)

            self._index = VaultIndex(self._store, self.path, mind=self.mind, now=self._ctx.now_ts)
        return self._index

    # -- memory follows the code -------------------------------------------------------------------------
    def verify(self, *, fix: bool = False) -> VerifyReport:
        """Check every file a lesson, checkpoint, decision or memory refers to against git HEAD.

        Reports dangling references (missing files), renames git knows, and records that name files
        changed by commits made after they were written (possibly stale). With ``fix`` (user only),
        lesson and checkpoint file lists follow the renames and records are marked, so recall and
        status show the marks. Returns a :class:`synapse_nb.follow.VerifyReport`.

        >>> print(v.verify())  # doctest: +SKIP
        verified 12 file references: 1 dangling, 0 renamed, 0 records possibly stale
          missing   checkpoint ckp_3f9a0c12be47: src/old_auth.py
        """
        from synapse_nb.follow import verify  # git checks load when asked for (cold start)

        return verify(self._ctx, fix=fix)

    def flags(self) -> dict[str, dict[str, Any]]:
        """Marks left by ``verify(fix=True)``: {id: {"dangling": [paths], "stale": [shas]}}."""
        return self._store.flags.of_mind(self.mind)

    # -- status, prune ------------------------------------------------------------------------------------
    def status(self) -> Status:
        """Counts per kind and state, pending lessons, and what expires soon."""
        store, m = self._store, self.mind
        now = self._ctx.now()
        ts = fmt_ts(now)
        mem = store.memories.stats(m, ts)
        counts: dict[str, dict[str, int]] = {"memories": {"total": mem.total, "verified": mem.verified,
                                                          "unverified": mem.total - mem.verified,
                                                          "expired": mem.expired}}
        view = View(m, ts)
        for name, table in (("checkpoints", store.checkpoints), ("decisions", store.decisions),
                            ("episodes", store.episodes), ("notes", store.notes)):
            counts[name] = {"total": table.count(view)}
        les = {s: 0 for s in ("pending", "approved", "expired")} | store.lessons.status_counts(m, ts)
        counts["lessons"] = {"approved": les["approved"]} if self.actor == "agent" else les
        pending = () if self.actor == "agent" else tuple(x.id for x in self.lessons.pending())
        expiring = tuple(x.id for x in store.memories.expiring(m, ts, fmt_ts(now + timedelta(days=7))))
        les_soon = store.lessons.expiring(m, ts, fmt_ts(now + timedelta(days=2)))
        flags = self.flags()
        prefix, tracked = tracked_files(self.path)
        borrowed = self._git.borrowed
        awaiting = () if borrowed is None or self.actor == "agent" else tuple(x.id for x in self.lessons.awaiting_local())
        return Status(vault_path=str(self.path), mind=m, actor=self.actor, counts=counts, pending_lessons=pending,
                      expiring_memories=expiring, expiring_lessons=les_soon, schema_version=store.schema_version,
                      dangling=tuple(sorted(r for r, f in flags.items() if "dangling" in f)),
                      possibly_stale=tuple(sorted(r for r, f in flags.items() if "stale" in f)),
                      tracked_by_git=tracked,
                      untrack_command=untrack_command(prefix) if tracked and prefix else None,
                      borrowed=borrowed.line if borrowed is not None else None, awaiting_local_approval=awaiting)

    def prune(self, *, sessions_older_than: str | timedelta = "30d") -> PruneReport:
        """Delete expired memories, mark expired lessons, forget old per-session delta state (user only)."""
        self._ctx.require_human("prune the vault")
        age = parse_duration(sessions_older_than, "sessions_older_than")
        store = self._store
        now = self._ctx.now()
        ts = fmt_ts(now)
        with store.transaction():
            mem_ids = store.memories.delete_expired(self.mind, ts)
            les_ids = store.lessons.expire(self.mind, ts, store.stamp(self._ctx.now_ts()))
            sessions = store.sessions.prune(self.mind, fmt_ts(shift(now, -age, "sessions_older_than")))
        return PruneReport(memories_deleted=mem_ids, lessons_expired=les_ids, sessions_cleared=sessions)

    # -- export / import ----------------------------------------------------------------------------------
    def export_jsonl(self, dest: str | Path | IO[str] | None = None) -> str:
        """Export the whole vault (every mind, every kind) as JSON Lines, sorted and stable.

        Returns the text; also writes it to ``dest`` (a path or a text file) when given. Importing the
        export into an empty vault gives an identical vault (same ids, same timestamps).
        """
        from synapse_nb.transfer import export_lines  # loads the kind checks import needs (cold start)

        if self.actor != "user":
            raise PermissionDeniedError("an agent may not export the vault (it would read pending lessons)")
        text = "".join(line + "\n" for line in export_lines(self._store))
        if dest is not None:
            if hasattr(dest, "write"):
                dest.write(text)
            else:
                target = Path(dest).expanduser()
                if not target.parent.is_dir():
                    raise ValidationError(f"cannot export to {str(dest)!r}: the folder {str(target.parent)!r} does "
                                          "not exist (a typo?); folders are never created")
                try:
                    target.write_text(text, encoding="utf-8")
                except OSError as exc:
                    raise StoreError(f"cannot write the export to {str(dest)!r}: {exc.strerror or exc}") from exc
        return text

    def import_jsonl(self, source: str | Path | IO[str] | Iterable[str], *, trust: bool = False) -> ImportCounts:
        """Import an export (a path, a text file, or lines; a file splits on ``\n`` only) in one all-or-nothing
        transaction (user only). Identical records are skipped; any conflict, malformed line or timestamp outside
        1970-2100 (or after the vault's clock plus a day) refuses the whole import, naming the line. Trust claims
        (``source="user"``, verified, decided lessons, ``analysis_by="user"``, settings) are refused unless
        ``trust=True`` (only for a file you stand behind); returns counts per kind, accepted claims in ``.claims``.
        """
        from synapse_nb.transfer import import_lines, source_lines  # loaded when asked for (cold start)

        self._ctx.require_human("import records")
        return import_lines(self._ctx, source_lines(source), trust=trust)
