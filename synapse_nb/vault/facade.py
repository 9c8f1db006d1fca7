"""The vault handle, :class:`Vault`: one mind, one actor, every memory kind behind one front door."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, Literal, Self

from synapse_nb._calls import Files, checked_calls, shortcut_of
from synapse_nb._util import Clock, new_id, parse_ts, utcnow
from synapse_nb.borrowed import Adoption, Borrowed, adopt
from synapse_nb.changes import ExportMark
from synapse_nb.context import (
    Actor,
    Context,
    GitView,
    _ChosenClock,
    acting_actor,
    check_agent_clock,
    check_identity,
    check_surface,
)
from synapse_nb.errors import PermissionDeniedError, ValidationError
from synapse_nb.gitscope.repo import RepoInfo
from synapse_nb.gitscope.vaultdir import tracked_files
from synapse_nb.kinds._base import KindManager
from synapse_nb.kinds.checkpoints import Checkpoints
from synapse_nb.kinds.decisions import Decisions
from synapse_nb.kinds.episodes import Episodes
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.kinds.memories import Memories
from synapse_nb.kinds.notes import Notes
from synapse_nb.models import KIND_BY_NAME, Checkpoint, Decision, Lesson, Memory, PruneReport, Status
from synapse_nb.purge import PurgeReport, PurgeTarget, forget_deleted_prompts, owe_scrub, purge, purge_target
from synapse_nb.settings import BAR_SETTINGS, SEMANTIC, Settings
from synapse_nb.store.records import Change

if TYPE_CHECKING:
    from synapse_nb.follow import VerifyReport
    from synapse_nb.history import Versions
    from synapse_nb.recall import Bars, Recall
    from synapse_nb.recall.engine import Recaller
    from synapse_nb.recall.pack import Pack
    from synapse_nb.store.base import VaultStore
    from synapse_nb.store.indexer import VaultIndex
    from synapse_nb.transfer import ImportCounts

from synapse_nb.vault.locate import DB_NAME

__all__ = ["Vault"]

#: Stores whose deletions a handle scrubs from the index and caches (one listener per store).
_SCRUBBED: weakref.WeakSet[Any] = weakref.WeakSet()
#: The folder, beside the database, of recall's on-disk caches (``rank-*.bin``).
RANK_CACHE = "cache"


@checked_calls  # a misspelt keyword is a ValidationError naming what the method takes (review 78)
class Vault:
    """One vault, seen as one mind by one actor: the facade over the core. Use :func:`open_vault` to get one.

    It builds the :class:`~synapse_nb.context.Context` (store, mind, actor, clock, git view) that the kind
    managers, recall, follow, transfer and settings work in, and exposes them.

    >>> import tempfile, synapse_nb
    >>> v = synapse_nb.open_vault(tempfile.mkdtemp())
    >>> v.remember("procedure", "run_migrations", "alembic upgrade head").summary_line()
    '[user · verified] procedure/run_migrations: alembic upgrade head'
    >>> v.decide("Use SQLite WAL mode", rationale="Readers never block writers").summary_line()
    '[user] Use SQLite WAL mode'
    >>> print(v.recall("how do we run migrations?").text)
    RELEVANT MEMORY for: "how do we run migrations?"
    ## Memories
    - [user · verified] [normal] procedure/run_migrations: alembic upgrade head
    >>> v.lessons.list(), v.close()  # lessons come from git reverts (v.lessons.scan()), pending until approved
    (RecordList([]), None)
    """

    #: False: this handle reads and writes the system of record (an offline team vault's stale copy,
    #: :class:`synapse_nb.offline.OfflineVault`, is True): ``if v.offline:`` tells the two apart, for mypy too
    offline: ClassVar[Literal[False]] = False

    def __init__(self, vault_dir: str | Path, *, project_dir: str | Path | None = None, mind: str = "default",
                 actor: str = "user", clock: Clock | None = None, readonly: bool = False,
                 _store: VaultStore | None = None, _git: GitView | None = None, surface: str = "api",
                 _past: str | None = None, _person_clock: bool = False) -> None:
        checked = acting_actor(check_identity(mind, actor))  # an agent's python is the agent
        # the agent does not choose the hour its quotas count; not checked for a vault rebuilt from history for an
        # as_of recall (it stands at that moment, in a throwaway store), nor for a person's handle's as_agent(): the
        # person chose that clock (a process in an agent's environment gets no person's handle on a clock of its own)
        if not (_past or _person_clock):
            check_agent_clock(checked, clock)
        self._person_clock = _person_clock
        self._as_of = _past  # the moment a vault rebuilt from history stands at (its recalls say so: review 64)
        if checked != actor and _store is not None:
            _store = _store.for_actor(checked)  # a team vault: the agent's database role
        self.path = Path(vault_dir)
        #: True when :func:`open_vault` created this vault (a session's ``created`` notice says where, once)
        self.created = False
        self.project_dir = Path(project_dir) if project_dir is not None else self.path.parent
        if (_past or _person_clock) and clock is not None and not isinstance(clock, _ChosenClock):
            clock = _ChosenClock(clock)  # the context lets the agent's side run on it (a person chose it)
        self._clock = clock or utcnow
        if _store is None:
            from synapse_nb.store.sqlite import SqliteStore  # loaded already by opening.py; here for Vault(path)

            _store = SqliteStore(self.path / DB_NAME, readonly=readonly)
        self._store: VaultStore = _store
        self._git = _git or GitView(self.project_dir, self.path)
        #: where this handle's changes come from, for their history ("cli", "mcp", "notebook", ...; "api")
        self.surface = check_surface(surface)
        self._ctx = Context(store=self._store, mind=mind, actor=checked, git=self._git, clock=self._clock,
                            surface=self.surface)
        self.memories = Memories(self._ctx)
        self.checkpoints = Checkpoints(self._ctx)
        self.decisions = Decisions(self._ctx)
        self.lessons = Lessons(self._ctx)
        self.episodes = Episodes(self._ctx)
        self.notes = Notes(self._ctx)
        self.settings = Settings(self._ctx)
        self._recaller: Recaller | None = None
        self._index: VaultIndex | None = None
        if self._store not in _SCRUBBED:  # once per store: every handle of it shares its listeners
            _SCRUBBED.add(self._store)
            self._store.on_change(self._after_delete)
            self._store.on_change(owe_scrub(self._ctx, self.path), before=True)  # owed before it commits (review 89)

    def manager(self, kind: str) -> KindManager[Any]:
        """The manager of a record kind by name (``"memory"`` -> :attr:`memories`): the attribute named after the
        kind's table in the registry (:data:`synapse_nb.models.KINDS`).

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> v.manager("decision") is v.decisions
        True
        """
        if kind not in KIND_BY_NAME:
            raise ValidationError(f"unknown kind {kind!r}; kinds are {', '.join(KIND_BY_NAME)}")
        manager: KindManager[Any] = getattr(self, KIND_BY_NAME[kind].table)
        return manager

    # -- identity -----------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Vault {self.path} mind={self.mind!r} actor={self.actor!r}>"

    @property
    def mind(self) -> str:
        """The mind this handle reads and writes, fixed when it was made (:meth:`with_mind` gives another)."""
        return self._ctx.mind

    @property
    def actor(self) -> Actor:
        """Who this handle acts as (``"user"`` or ``"agent"``), fixed when it was made: its context's, which every
        check reads (review 29: an attribute set to ``"user"`` opened a pending lesson's history to an agent)."""
        return self._ctx.actor

    def minds(self) -> tuple[str, ...]:
        """This vault's minds that hold a record, sorted (a team vault's: those this login may see)."""
        return self._store.meta.minds()

    def with_mind(self, mind: str) -> Vault:
        """The same vault (same connection) seen as another mind."""
        return Vault(self.path, project_dir=self.project_dir, mind=mind, actor=self.actor, clock=self._clock,
                     _store=self._store, _git=self._git, surface=self.surface, _person_clock=self._person_clock)

    def as_agent(self) -> Vault:
        """The same vault (same connection) acting as the agent actor. There is no ``as_user``. It keeps this
        handle's clock when a person's handle chose it (a notebook that plays both on a fixed clock); an agent's own
        handle opens on the real clock only (:func:`synapse_nb.context.check_agent_clock`)."""
        return Vault(self.path, project_dir=self.project_dir, mind=self.mind, actor="agent", clock=self._clock,
                     _store=self._store.for_actor("agent"), _git=self._git,  # a team vault: the agent's role
                     surface=self.surface, _person_clock=self._person_clock or self.actor == "user")

    @property
    def borrowed(self) -> Borrowed | None:
        """Why this vault is borrowed (:class:`synapse_nb.borrowed.Borrowed`, found by :func:`open_vault`), or None."""
        return self._git.borrowed

    @property
    def db_path(self) -> Path:
        """The SQLite database file of a vault on this machine (``<vault>/synapse.db``); a team vault keeps its
        records on its server."""
        return self.path / DB_NAME

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

    def adopt(self) -> Adoption:
        """Make this vault this checkout's own (human-only): a borrowed vault's approved lessons are then in force
        here, whoever approved them, on this handle now and on every open from now on (recorded outside the vault,
        in ``<git-common-dir>/synapse-nb/vaults.json``); git tracking it never makes it borrowed again. A vault not
        borrowed is recorded as this checkout's own. A vault reached through a symlink out of the project is
        refused (name its folder: ``SYNAPSE_HOME``). :mod:`synapse_nb.borrowed`."""
        self._ctx.require_human("adopt a vault (its approved lessons would count as approved here)")
        vault_uid = getattr(self._store, "vault_uid", None)  # a local vault's
        if not callable(vault_uid):  # a team vault is never borrowed: nothing to record
            return Adoption(str(self.path), None, None)
        done = adopt(self.path, self._git.borrowed, uid=vault_uid(), db_name=DB_NAME)
        self._git.borrowed = None
        return done

    def tracked_by_git(self) -> tuple[str, ...]:
        """Files of the vault folder that git tracks (committed by an older version, or forced in).

        Repository-relative paths, sorted; empty outside git or when nothing is tracked (the normal
        case: the vault folder's ``.gitignore`` keeps it out). One ``git ls-files``; :meth:`status`
        reports it with the command that untracks the vault.
        """
        return tracked_files(self.path)[1]

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def on_change(self, listener: Callable[[list[Change]], None]) -> None:
        """Call ``listener([(kind, id, deleted), ...])`` after each committed write to this vault's connection
        (through this handle, or another handle of it such as ``with_mind`` or ``as_agent``)."""
        self._store.on_change(listener)

    def now(self) -> datetime:
        """The vault's clock (UTC): what it stamps writes and measures expiry with (a test's fake clock, if given)."""
        return self._clock()

    def version(self) -> str:
        """The vault's state as an opaque token that changes after every committed write, through this handle or
        by anyone else (another handle, process or machine). Compare two answers of one handle to know whether
        to re-read: the notebook widgets refresh when it moves.

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> before = v.version(); _ = v.remember("knowledge", "k", "text"); v.version() != before
        True
        """
        return ".".join(str(n) for n in self._store.data_version())

    def transaction(self) -> AbstractContextManager[object]:
        """Group several writes into one transaction (faster in bulk, all-or-nothing).

        >>> with v.transaction():  # doctest: +SKIP
        ...     for i in range(1000):
        ...         v.remember("knowledge", f"fact_{i}", "...")
        """
        return self._store.transaction()

    # -- shortcuts ----------------------------------------------------------------------------------------
    @shortcut_of(Memories.remember)
    def remember(self, *args: Any, **kwargs: Any) -> Memory:
        """Shortcut for :meth:`Memories.remember` (upsert by (category, key)), with its parameters.

        Tags (``tags=["db", "deploy"]`` or ``tags="db,deploy"``) are one word each, trimmed, lower-cased, with a
        leading ``#`` dropped: ``"#DB"`` is the tag ``db``."""
        return self.memories.remember(*args, **kwargs)

    @shortcut_of(Checkpoints.create)
    def checkpoint(self, *args: Any, **kwargs: Any) -> Checkpoint:
        """Shortcut for :meth:`Checkpoints.create`, with its parameters."""
        return self.checkpoints.create(*args, **kwargs)

    @shortcut_of(Decisions.create)
    def decide(self, *args: Any, **kwargs: Any) -> Decision:
        """Shortcut for :meth:`Decisions.create`, with its parameters.

        Tags (``tags=["storage"]`` or ``tags="storage,sqlite"``) are one word each, trimmed, lower-cased,
        with a leading ``#`` dropped: ``"#SQLite"`` is the tag ``sqlite``.
        """
        return self.decisions.create(*args, **kwargs)

    # -- recall -------------------------------------------------------------------------------------------
    def recall(self, query: str, *, session: str | None = None, branch: str | None = None, files: Files | None = None,
               budget_tokens: int | None = None, bars: Bars | None = None, path: str | None = None,
               as_of: datetime | str | None = None, record: bool = True) -> Recall:
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
        path : deprecated, and ignored: recall has one path since recall v2 (BM25 over the ranking table, then the
            structure step). "auto", "rank", "exhaustive" and "index" are still accepted, with a
            ``DeprecationWarning``; any other value is a ``ValidationError``.
        as_of : answer from the mind as it was at this time (a datetime or ISO 8601 text), rebuilt from its history
            in a throwaway vault: "what did the agent know when it made that decision?" (no session delta). It
            says so first (``Recall.as_of``); an agent gets only the lessons it may read now.
        record : False leaves what ``session`` is given unrecorded until ``Recall.mark_given()``, for a caller that
            delivers the answer later (the agent hook marks it given once it is printed).

        Examples
        --------
        >>> r = v.recall("how do we run migrations?", session="s1")  # doctest: +SKIP
        >>> print(r.text)  # doctest: +SKIP
        """
        if as_of is not None:
            return self._recall_as_of(query, as_of, branch=branch, files=files, budget_tokens=budget_tokens, bars=bars)
        if self._recaller is None:
            from synapse_nb.recall.engine import Recaller  # loaded by the first recall (import synapse_nb stays light)

            self._recaller = Recaller(self._ctx, lambda: self.index, defaults=self._recall_settings,
                                      lessons=lambda ctx, branch: Lessons(ctx).in_force(branch), as_of=self._as_of)
        if path is not None:
            from synapse_nb.recall.engine import check_path

            check_path(path)
            warnings.warn("Vault.recall(path=...) is deprecated and ignored: recall has one path since recall v2 "
                          "(docs/decisions/0008-recall-engine-v2.md); drop the argument", DeprecationWarning,
                          stacklevel=2)
        return self._recaller.recall(query, session=session, branch=branch, files=files,
                                     budget_tokens=budget_tokens, bars=bars, record=record)

    def _recall_as_of(self, query: str, as_of: datetime | str, **kw: Any) -> Recall:
        """:meth:`recall` over the mind as it was at ``as_of``: its records as this actor may read them (and the
        duplicate links open then) are rebuilt from history into a temporary vault whose clock stands at ``as_of``;
        the saved bars are today's. The answer says it is rebuilt from history (``Recall.as_of``)."""
        import tempfile

        from synapse_nb import embedder_trust, history
        from synapse_nb.store.sqlite import SqliteStore

        at = history.as_of_ts(as_of)
        records = history.mind_as_of(self._ctx, at)
        links = [replace(x, status="open") for x in self._store.links.of_mind(self.mind)
                 if x.created_at <= at and (x.decided_at is None or x.decided_at > at)]
        settings = self._store.meta.settings()
        moment = parse_ts(at)
        with tempfile.TemporaryDirectory(prefix="synapse-as-of-") as tmp:
            store = SqliteStore(Path(tmp) / DB_NAME)
            store.trust_identity = embedder_trust.vault_identity(self._store)  # its embedder as a person set it
            past = Vault(Path(tmp), project_dir=self.project_dir, mind=self.mind, actor=self.actor,
                         clock=lambda: moment, _store=store, _git=self._git, surface=self.surface, _past=at)
            try:
                with store.transaction():
                    for rec in records:
                        store.table(rec.kind).insert(rec)
                    store.links.insert(links)
                    store.meta.set_settings(settings)
                return past.recall(query, **kw)
            finally:
                past.close()

    def restore_pack(self, checkpoint: Checkpoint | None = None, *, budget_tokens: int | None = None,
                     note: str | None = None) -> Pack:
        """What a compacted context needs back, within ``budget_tokens`` (default
        :data:`synapse_nb.recall.pack.RESTORE_TOKENS`, 1,500): the approved-lesson banner, ``checkpoint``
        (default: ``checkpoints.latest()``) with those saved after it, the five latest decisions of people and the
        key memories (priority critical or high) verified or people's, then agents' five latest decisions and key
        memories, whole lines, each starting with its provenance mark (:mod:`synapse_nb.recall.pack`). An agent's
        writes cannot push a person's out of the pack: each author's are read apart. The MCP tool
        ``signal_low_context`` and the agent hooks return this pack. It is text (a ``str``) whose ``lessons`` are the
        ids of the lessons it prints whole.

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> print(v.restore_pack())
        No checkpoint on this branch yet.
        >>> _ = v.decide("Use SQLite as the system of record", rationale="one file")
        >>> print(v.restore_pack(budget_tokens=400).splitlines()[-1])  # doctest: +ELLIPSIS
        - [user] Use SQLite as the system of record — one file (...)
        """
        from synapse_nb.recall.pack import PACK_FIELD_CHARS, RESTORE_TOKENS, key_memories, restore_pack
        from synapse_nb.recall.start import key_memories_of

        ckp = checkpoint if checkpoint is not None else self.checkpoints.latest()
        # what happened after it, and the person's own when it is an agent's (review 87), as every resume says them
        resume = self.checkpoints.resume(ckp, PACK_FIELD_CHARS) if ckp is not None else None
        decisions = [*self.decisions.list(limit=5, source="user"), *self.decisions.list(limit=5, source="agent")]
        # each author's key memories read apart (as a session's start reads them); key_memories: the verified first
        key = key_memories_of(self.memories, 25)
        memories = [*key.people, *key.agents]
        borrowed = self._git.borrowed  # heads the pack like every recall (review 23: the SessionStart hook had none)
        lead = "\n".join(x for x in (borrowed.line if borrowed is not None else None, note) if x) or None
        return restore_pack(self.lessons.in_force(), ckp, decisions, key_memories(memories),
                            budget_tokens=RESTORE_TOKENS if budget_tokens is None else budget_tokens, note=lead,
                            since=resume.since if resume else (), later=resume.later if resume else 0,
                            resumed=resume.body if resume else None, persons=resume.persons if resume else None)

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

            self._index = VaultIndex(self._store, self.path, mind=self.mind, now=self._ctx.now_ts,
                                     require_human=self._ctx.require_human)
        return self._index

    # -- history, purge, deletion that deletes ---------------------------------------------------------------
    def history(self, record_id: str) -> Versions:
        """Every change of one record (any kind; a deleted one too), oldest first: version, when, action (create,
        update, verify, approve, reject, expire, delete, import, revert, accept), actor, surface, the digests before
        and after, and (``.record(n)``) the record as version ``n`` left it. See :mod:`synapse_nb.history`."""
        from synapse_nb import history

        rid = str(record_id).strip()
        if self.actor == "agent" and rid.startswith(KIND_BY_NAME["lesson"].prefix + "_"):
            self.lessons.get(rid)  # an agent reads the history of a lesson in force only
        return history.entries(self._ctx, rid)

    def prune_history(self, *, older_than: str | timedelta = "365d") -> int:
        """Remove this mind's history entries older than ``older_than`` (a retention window such as "180d"), keeping
        each record's newest entry (human only); how many were removed."""
        from synapse_nb import history

        return history.prune(self._ctx, older_than)

    def purge(self, record_id: str) -> PurgeReport:
        """Remove a record and every trace of it (human only): the record (if it still exists), its history,
        revisions and links, then the index, FTS and ranking tables and every cache, in this call. The report names
        the exports taken earlier that still hold it (exports are recorded when taken)."""
        self._scrub_left: tuple[str | None, str | None] = (None, None)
        report = purge(self._ctx, self._scrub, self.path)(str(record_id).strip())
        return report.with_copy(self._store, self._index, self._scrub_left)

    def purge_target(self, record_id: str) -> PurgeTarget:
        """What :meth:`purge` of ``record_id`` would remove (human only), to show before it does: the record's mark,
        address and summary (a deleted one's last known version) and its history, revision and link counts."""
        return purge_target(self._ctx, record_id)

    def _after_delete(self, changes: list[Change]) -> None:
        """After a commit that deleted records: scrub them in the same call (an agent's: see :meth:`_scrub`)."""
        gone = [rid for _, rid, deleted in changes if deleted]
        if gone:
            from synapse_nb import history

            self._scrub(gone, person=not history.deleted_by_agent(self._ctx, gone))
            forget_deleted_prompts(self._ctx, self.path, gone)  # the hooks' prompts its text held (review 91)

    def _scrub(self, ids: list[str], *, person: bool = True) -> None:
        """Leave none of the deleted text in the store's files, the caches and (a ``person``'s deletion) the index
        folder; what a locked vault left undone goes to a purge's report (:func:`~synapse_nb.purge.scrub_deleted`)."""
        from synapse_nb.purge import scrub_deleted

        self._scrub_left = scrub_deleted(self._store, self.path, lambda: self.index, ids, person=person)

    # -- memory follows the code -------------------------------------------------------------------------
    def verify(self, *, fix: bool = False) -> VerifyReport:
        """Check every file a lesson, checkpoint, decision or memory refers to against git HEAD.

        Reports dangling references (missing files), renames git knows, and records that name files
        changed by commits made after they were written (possibly stale). With ``fix`` (user only),
        lesson and checkpoint file lists follow the renames and records are marked, so recall and
        status show the marks. Returns a :class:`synapse_nb.follow.VerifyReport`.

        >>> print(v.verify())  # doctest: +SKIP
        verified 12 file references: 1 dangling, 0 renamed, 0 records possibly stale
          missing   checkpoint ckp_3f9a0c12be47: "src/old_auth.py"
        """
        from synapse_nb.follow import verify  # git checks load when asked for (cold start)

        return verify(self._ctx, fix=fix)

    def flags(self) -> dict[str, dict[str, Any]]:
        """Marks left by ``verify(fix=True)``: {id: {"dangling": [paths], "stale": [shas]}}."""
        return self._store.flags.of_mind(self.mind)

    # -- status, prune ------------------------------------------------------------------------------------
    def status(self) -> Status:
        """Counts per kind and state, pending lessons, and what expires soon; in a person's view, how many agents'
        revisions and open conflicts wait for them. Each list of ids gives people's records first."""
        from synapse_nb.vault.status import status  # the counts and lists load when asked for

        return status(self._ctx, self)

    def prune(self, *, sessions_older_than: str | timedelta = "30d",
              agent_records_older_than: str | timedelta | None = None) -> PruneReport:
        """Delete expired memories, mark expired lessons, forget old per-session delta state (user only).

        ``agent_records_older_than`` (e.g. "14d"): also delete this mind's agents' records no person took on (an
        unverified agent memory, an agent's checkpoint, decision, episode or note) last changed longer ago, each
        deletion recorded in history: what frees the room of the agents' totals after a flood
        (``agent_records_per_mind``, ``agent_records_per_vault``, ``agent_megabytes_per_vault``).
        """
        from synapse_nb.vault.pruning import prune  # maintenance loads on first use

        return prune(self._ctx, sessions_older_than, agent_records_older_than)

    # -- export / import ----------------------------------------------------------------------------------
    def export_jsonl(self, dest: str | Path | IO[str] | None = None, *, history: bool = False) -> str:
        """Export the whole vault (every mind, every kind) as JSON Lines, sorted and stable; ``history``: every
        history entry too (after the records).

        Returns the text; also writes it to ``dest`` (a path or a text file) when given. Importing the
        export into an empty vault gives an identical vault (same ids, same timestamps). The export is recorded
        (when, where to): a later purge names the exports that still hold what it removed. A borrowed vault's export
        says so, listing the lessons no person here approved (:mod:`synapse_nb.transfer`: ``"approved_elsewhere"``).
        """
        from synapse_nb.transfer import approved_elsewhere, export_lines  # loads the kind checks (cold start)

        if self.actor != "user":
            raise PermissionDeniedError("an agent may not export the vault (it would read pending lessons)")
        elsewhere = None if self._git.borrowed is None else approved_elsewhere(
            self._store, lambda r: isinstance(r, Lesson) and self.lessons.approved_here(r))
        lines = list(export_lines(self._store, history=history, elsewhere=elsewhere))
        text = "".join(line + "\n" for line in lines)
        n_hist, n_links = (sum(f'"kind": "{k}"' in x for x in lines) for k in ("history", "link"))  # text escapes "
        where = None if dest is None or hasattr(dest, "write") else str(Path(dest).expanduser().resolve())
        if dest is not None:
            if hasattr(dest, "write"):
                dest.write(text)
            else:
                target = Path(dest).expanduser()
                if not target.parent.is_dir():
                    raise ValidationError(f"cannot export to {str(dest)!r}: the folder {str(target.parent)!r} does "
                                          "not exist (a typo?); folders are never created")
                from synapse_nb.vault.export_file import write_export

                write_export(target, text, shown=str(dest))  # never a torn file over the last export (review 89)
        if not self._store.readonly:
            with self._store.transaction():  # stamped: after every write the export holds
                self._store.exports.record(ExportMark(
                    id=new_id("exp"), taken_at=self._store.stamp(self._ctx.now_ts()), dest=where,
                    records=len(lines) - 1 - n_hist - n_links, history=n_hist))
        return text

    def import_jsonl(self, source: str | Path | IO[str] | Iterable[str], *, trust: bool = False,
                     trust_borrowed: bool = False) -> ImportCounts:
        """Import an export (a path, a text file, or lines; a file splits on ``\n`` only) in one all-or-nothing
        transaction (user only). Identical records are skipped; any conflict, malformed line or timestamp outside
        1970-2100 (or after the vault's clock plus a day; a history entry's after it plus five minutes) refuses the
        whole import, naming the line. Trust claims (``source="user"``, verified, decided lessons, a lesson's wording,
        ``analysis_by="user"``, settings, history of a record the file does not bring in as new) are refused unless
        ``trust=True`` (only for a file you stand behind); returns counts per kind, accepted claims in ``.claims``.
        A borrowed vault's lessons approved elsewhere are accepted only with ``trust_borrowed=True`` (``.borrowed``).
        """
        from synapse_nb.transfer import import_lines, source_lines  # loaded when asked for (cold start)

        self._ctx.require_human("import records")
        return import_lines(self._ctx, source_lines(source), trust=trust, trust_borrowed=trust_borrowed)
