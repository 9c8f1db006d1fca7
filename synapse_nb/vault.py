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

import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from synapse_nb._util import Clock, fmt_ts, parse_duration, parse_ts, shift, utcnow
from synapse_nb.errors import (
    ConflictError,
    PermissionDeniedError,
    StoreError,
    ValidationError,
    VaultNotFoundError,
)
from synapse_nb.kinds.checkpoints import Checkpoints
from synapse_nb.kinds.decisions import Decisions
from synapse_nb.kinds.episodes import Episodes
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.kinds.memories import Memories
from synapse_nb.kinds.notes import Notes
from synapse_nb.models import Checkpoint, Decision, Memory, PruneReport, Status
from synapse_nb.store.sqlite import Store

__all__ = ["ACTORS", "BAR_SETTINGS", "SETTINGS", "Settings", "Vault", "find_vault_dir", "open_vault"]

ACTORS = ("user", "agent")
VAULT_DIRNAME = ".synapse"
DB_NAME = "synapse.db"
_MIND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise ValidationError(f"expected a whole number from {lo} to {hi}, got {v!r}")
        try:
            n = int(v)
        except ValueError:
            raise ValidationError(f"expected a whole number from {lo} to {hi}, got {v!r}") from None
        if not lo <= n <= hi:
            raise ValidationError(f"expected a whole number from {lo} to {hi}, got {n}")
        return n
    return check


def _unit_interval(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise ValidationError(f"expected a number from 0 to 1, got {v!r}")
    try:
        x = float(v)
    except ValueError:
        raise ValidationError(f"expected a number from 0 to 1, got {v!r}") from None
    if not 0.0 <= x <= 1.0:  # also refuses NaN
        raise ValidationError(f"expected a number from 0 to 1, got {x}")
    return x


#: Known settings: name -> (default, validator, description).
SETTINGS: dict[str, tuple[Any, Callable[[Any], Any], str]] = {
    "lesson_expiry_days": (7, _int_range(1, 3650), "days an approved lesson stays in force"),
    "scan_window": (2000, _int_range(1, 10_000_000), "commits the first lesson scan looks back"),
    # automatic checkpoints count one unit each (synapse_nb.kinds.autocheckpoint); None: auto_checkpoint_every
    "auto_checkpoint_cells": (None, lambda v: None if v is None else _int_range(1, 100_000)(v),
                              "notebook: executed cells that changed something per auto checkpoint"),
    "auto_checkpoint_files": (None, lambda v: None if v is None else _int_range(1, 100_000)(v),
                              "synapse-nb watch: newly changed files per auto checkpoint"),
    "auto_checkpoint_every": (10, _int_range(1, 100_000), "auto checkpoints: what the two above are when not set"),
    # the recall gate's bars used when a recall is given none (same defaults as synapse_nb.recall.Bars)
    "recall_floor": (0.3, _unit_interval, "recall: lowest gate score a hit may have"),
    "recall_margin": (0.5, _unit_interval, "recall: a hit scores at least this times the best hit"),
    "recall_top_k": (5, _int_range(0, 1000), "recall: most hits per kind"),
    "recall_budget_tokens": (1200, _int_range(0, 1_000_000), "recall: most tokens for the hits"),
}
#: Bars fields and the settings that hold their saved defaults.
BAR_SETTINGS = {"floor": "recall_floor", "margin": "recall_margin", "top_k": "recall_top_k",
                "budget_tokens": "recall_budget_tokens"}


class Settings:
    """Vault settings stored in the database (so every surface sees the same values).

    Reading is open to every actor; changing a setting is for the user actor only.

    >>> v.settings.set("lesson_expiry_days", 14)  # doctest: +SKIP
    """

    def __init__(self, vault: Vault) -> None:
        self._v = vault

    def _check_name(self, name: str) -> None:
        if not isinstance(name, str) or name not in SETTINGS:
            raise ValidationError(f"unknown setting {name!r}; known settings: {', '.join(sorted(SETTINGS))}")

    def get(self, name: str) -> Any:
        self._check_name(name)
        row = self._v._store.query_one("SELECT value FROM meta WHERE key = ?", (f"setting:{name}",))
        return SETTINGS[name][0] if row is None else json.loads(row["value"])

    def set(self, name: str, value: Any) -> Any:
        if self._v.actor != "user":
            raise PermissionDeniedError("an agent may not change settings; a human changes them")
        self._check_name(name)
        value = SETTINGS[name][1](value)
        with self._v._store.transaction() as c:
            c.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                      (f"setting:{name}", json.dumps(value)))
        return value

    def set_many(self, values: dict[str, Any]) -> dict[str, Any]:
        """Set several settings in one transaction: every value is checked first, then all are written or none.

        >>> v.settings.set_many({"recall_floor": 0.25, "recall_top_k": 3})  # doctest: +SKIP
        {'recall_floor': 0.25, 'recall_top_k': 3}
        """
        if self._v.actor != "user":
            raise PermissionDeniedError("an agent may not change settings; a human changes them")
        if not isinstance(values, dict):
            raise ValidationError(f"settings must be given as a dict of name -> value, got {type(values).__name__}")
        checked = {}
        for name, value in values.items():
            self._check_name(name)
            checked[name] = SETTINGS[name][1](value)
        with self._v._store.transaction() as c:
            for name, value in checked.items():
                c.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                          "value = excluded.value", (f"setting:{name}", json.dumps(value)))
        return checked

    def as_dict(self) -> dict[str, Any]:
        return {name: self.get(name) for name in sorted(SETTINGS)}

    def __repr__(self) -> str:
        return f"Settings({self.as_dict()!r})"


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
    vault_dir, project_dir, _ = _locate(path)
    return vault_dir, project_dir


def _locate(path: str | Path | None) -> tuple[Path, Path, str]:
    """:func:`find_vault_dir` plus how to name the location in a message (``SYNAPSE_HOME=/x`` or ``/x``)."""
    from synapse_nb.gitscope.repo import find_repo

    label = ""
    if path is None and os.environ.get("SYNAPSE_HOME", "").strip():
        path, label = os.environ["SYNAPSE_HOME"].strip(), "SYNAPSE_HOME="
    try:
        base = (Path.cwd() if path is None else Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as exc:
        raise VaultNotFoundError(f"cannot resolve the vault location {label}{path!s}: {exc}") from None
    if base.name == VAULT_DIRNAME:
        if not base.parent.is_dir():
            raise VaultNotFoundError(f"no vault at {label}{base}: the folder {base.parent} does not exist (a typo?); "
                                     "synapse-nb never creates missing folders")
        if base.exists() and not base.is_dir():
            raise VaultNotFoundError(f"no vault at {label}{base}: it is a file, not a vault folder")
        return base, base.parent, f"{label}{base}"
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
        return base, Path.cwd().resolve(), f"{label}{base}"  # a vault folder of another name serves the project you work in
    repo = find_repo(base)
    if repo is not None:
        return repo.main_work_tree / VAULT_DIRNAME, base, f"{label}{base}"
    return base / VAULT_DIRNAME, base, f"{label}{base}"


def _check_identity(mind: str, actor: str) -> None:
    if actor not in ACTORS:
        raise ValidationError(f"actor {actor!r} is not accepted; use one of: {', '.join(ACTORS)}")
    if not isinstance(mind, str) or not _MIND.match(mind):
        raise ValidationError(f"mind {mind!r} is not accepted; use 1-64 letters, digits, '_', '.' or '-', "
                              "starting with a letter or digit")


_VAULT_ENTRY = re.compile(r"^(synapse\.db(-wal|-shm|-journal)?|index|[\w.-]+\.lock|hook\.log(\.1)?|\.gitignore)$")


def _holds_only_vault_files(folder: Path, limit: int = 64) -> bool:
    """True when every entry of ``folder`` is one synapse-nb writes (looks at ``limit`` entries at most)."""
    try:
        with os.scandir(folder) as it:
            for n, entry in enumerate(it):
                if n >= limit or not _VAULT_ENTRY.match(entry.name):
                    return False
    except OSError:
        return False
    return True


def open_vault(path: str | Path | None = None, *, mind: str = "default", actor: str = "user",
               clock: Clock | None = None, readonly: bool = False, create: bool = True) -> Vault:
    """Open the vault for a project; with ``create`` (the default), create it if it does not exist yet.

    Where the vault is: see :func:`find_vault_dir` (``path`` and ``SYNAPSE_HOME`` name a project
    folder or a vault folder, the same way). A vault is created only inside an existing folder:
    missing parent folders are never created, so a mistyped path is a :class:`VaultNotFoundError`
    naming it, never a new empty vault. A new vault folder gets a ``.gitignore`` holding ``*`` (and an
    existing one gets it when missing), so git never stages, reverts or stashes the vault.
    ``vault.created`` says whether this call created it.

    Parameters
    ----------
    path : a project folder (the vault is ``.synapse/`` at its git root, or in it outside git), or a
        vault folder itself. Default: ``SYNAPSE_HOME`` if set, else the current folder.
    mind : which mind's records to see and write (default "default").
    actor : "user" (human surfaces: writes are verified) or "agent" (writes are proposals).
    clock : a callable returning an aware ``datetime`` (tests); default the real UTC clock.
    readonly : open without write access (every write raises ``StoreError``); never creates.
    create : create the vault when there is none (default True, for code that is about to write);
        ``create=False`` is for reading: a missing vault is a :class:`VaultNotFoundError`. The CLI,
        the magics and the MCP server open with ``create=False`` for every read.

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
    from synapse_nb.gitscope.vaultdir import ensure_gitignore

    _check_identity(mind, actor)  # before anything is created
    vault_dir, project_dir, shown = _locate(path)
    created = False
    if not (vault_dir / DB_NAME).is_file():
        if readonly or not create:
            raise VaultNotFoundError(
                f"no vault at {shown} (looked for .synapse/ at the git root, or in the folder outside git: "
                f"{vault_dir}); create one with `synapse-nb init` or by writing a memory")
        try:
            vault_dir.mkdir(exist_ok=True)  # never parents: find_vault_dir checked that the folder around exists
        except OSError as exc:
            raise StoreError(f"cannot create the vault folder {vault_dir}: {exc.strerror or exc}") from exc
        created = True
    if not readonly and (vault_dir.name == VAULT_DIRNAME or created or _holds_only_vault_files(vault_dir)):
        ensure_gitignore(vault_dir)  # never into a folder that also holds the user's own files
    v = Vault(vault_dir, project_dir=project_dir, mind=mind, actor=actor, clock=clock, readonly=readonly)
    v.created = created
    return v


class Vault:
    """One vault, seen as one mind by one actor. Use :func:`open_vault` to get one."""

    def __init__(self, vault_dir: str | Path, *, project_dir: str | Path | None = None, mind: str = "default",
                 actor: str = "user", clock: Clock | None = None, readonly: bool = False,
                 _store: Store | None = None) -> None:
        _check_identity(mind, actor)
        self.path = Path(vault_dir)
        #: True when :func:`open_vault` created this vault (surfaces say where, once)
        self.created = False
        self.project_dir = Path(project_dir) if project_dir is not None else self.path.parent
        self.mind = mind
        self.actor = actor
        self._clock = clock or utcnow
        self._store = _store or Store(self.path / DB_NAME, readonly=readonly)
        self._repo_cache: Any = ...
        self._prefix_cache: Any = ...
        self._changed: dict[tuple[str, str], bool] = {}
        self._listeners: list[Callable[[list[tuple[str, str, bool]]], None]] = []
        self.memories = Memories(self)
        self.checkpoints = Checkpoints(self)
        self.decisions = Decisions(self)
        self.lessons = Lessons(self)
        self.episodes = Episodes(self)
        self.notes = Notes(self)
        self.settings = Settings(self)
        self._recaller: Any = None
        self._index: Any = None

    # -- identity -----------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Vault {self.path} mind={self.mind!r} actor={self.actor!r}>"

    def with_mind(self, mind: str) -> Vault:
        """The same vault (same connection) seen as another mind."""
        return Vault(self.path, project_dir=self.project_dir, mind=mind, actor=self.actor, clock=self._clock,
                     _store=self._store)

    def as_agent(self) -> Vault:
        """The same vault (same connection) acting as the agent actor. There is no ``as_user``."""
        return Vault(self.path, project_dir=self.project_dir, mind=self.mind, actor="agent", clock=self._clock,
                     _store=self._store)

    @property
    def db_path(self) -> Path:
        return self._store.path

    @property
    def repo(self) -> Any:
        """The git repository of the project folder (a ``RepoInfo``), or ``None`` outside git."""
        if self._repo_cache is ...:
            from synapse_nb.gitscope.repo import find_repo

            self._repo_cache = find_repo(self.project_dir)
        return self._repo_cache

    @property
    def git_prefix(self) -> str | None:
        """The vault folder relative to its project's repository root (``".synapse/"``), or None.

        Lesson scans, ``verify`` and staleness leave paths inside it out: the vault's own files are
        never a code change.
        """
        if self._prefix_cache is ...:
            from synapse_nb.gitscope.vaultdir import repo_prefix

            self._prefix_cache = repo_prefix(self.repo, self.path)
        return self._prefix_cache

    def _in_vault(self, path: str) -> bool:
        """Whether a remembered file path (repository-relative, or absolute) lies inside the vault folder."""
        if not isinstance(path, str):
            return False
        if os.path.isabs(path):
            try:
                Path(os.path.realpath(path)).relative_to(Path(os.path.realpath(self.path)))
                return True
            except ValueError:
                return False
        from synapse_nb.gitscope.vaultdir import in_prefix

        return in_prefix(self.git_prefix, path)

    def tracked_by_git(self) -> tuple[str, ...]:
        """Files of the vault folder that git tracks (committed by an older version, or forced in).

        Repository-relative paths, sorted; empty outside git or when nothing is tracked (the normal
        case: the vault folder's ``.gitignore`` keeps it out). One ``git ls-files``; :meth:`status`
        reports it with the command that untracks the vault.
        """
        from synapse_nb.gitscope.vaultdir import tracked_files

        return tracked_files(self.path)[1]

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals used by the kind managers --------------------------------------------------------------
    def _now(self) -> datetime:
        return self._clock()

    def _now_ts(self) -> str:
        return fmt_ts(self._clock())

    def _stamp(self, c: Any) -> str:
        """The write timestamp for the current transaction: now, or 1 µs after the vault's last stamp.

        Stamps are strictly increasing per vault across processes (they are taken under the write lock),
        so records never tie on ``created_at``/``updated_at`` and every listing has one order, the same
        in an imported copy.
        """
        now = self._now_ts()
        row = c.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()
        if row is not None and row[0] >= now:
            now = fmt_ts(parse_ts(row[0]) + timedelta(microseconds=1))
        c.execute("INSERT INTO meta(key, value) VALUES ('clock', ?) ON CONFLICT(key) DO UPDATE SET value = "
                  "excluded.value", (now,))
        return now

    def _git_head(self) -> tuple[str | None, str | None]:
        repo = self.repo
        if repo is None:
            return None, None
        from synapse_nb.gitscope.repo import head

        try:
            h = head(repo)
        except Exception:  # a broken repository must never block a write
            return None, None
        return h.branch, h.commit

    def _default_branch(self) -> str | None:
        """The repository's default branch: origin's HEAD, else main, else master (None outside git)."""
        repo = self.repo
        if repo is None:
            return None
        from synapse_nb.gitscope.repo import _resolve_ref

        try:
            origin = (repo.common_dir / "refs" / "remotes" / "origin" / "HEAD").read_text().strip()
            if origin.startswith("ref: refs/remotes/origin/"):
                return origin[len("ref: refs/remotes/origin/"):]
        except OSError:
            pass
        for name in ("main", "master"):
            try:
                if _resolve_ref(repo, f"refs/heads/{name}"):
                    return name
            except Exception:  # an unreadable ref is not a default branch
                continue
        return None

    def _touched(self, kind: str, rid: str, *, deleted: bool = False) -> None:
        """Record that (kind, id) changed in the current transaction; listeners hear of it after commit."""
        first = not self._changed
        self._changed[(kind, rid)] = deleted
        if first:
            self._store.on_rollback(self._changed.clear)  # rolled-back ids are never reported
            self._store.after_commit(self._flush_changes)

    def _flush_changes(self) -> None:
        changes = sorted((k, r, d) for (k, r), d in self._changed.items())
        self._changed.clear()
        for listener in list(self._listeners):
            listener(changes)

    def on_change(self, listener: Callable[[list[tuple[str, str, bool]]], None]) -> None:
        """Call ``listener([(kind, id, deleted), ...])`` after each committed write through this handle."""
        self._listeners.append(listener)

    def transaction(self) -> Any:
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
               budget_tokens: int | None = None, bars: Any = None, path: str = "auto") -> Any:
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
        path : "auto" (default), "exhaustive" or "index" — which candidate path to use.

        Examples
        --------
        >>> r = v.recall("how do we run migrations?", session="s1")  # doctest: +SKIP
        >>> print(r.text)  # doctest: +SKIP
        """
        if self._recaller is None:
            from synapse_nb.recall import Recaller

            self._recaller = Recaller(self)
        if bars is None:
            bars = self.default_bars()
        return self._recaller.recall(query, session=session, branch=branch, files=files,
                                     budget_tokens=budget_tokens, bars=bars, path=path)

    def default_bars(self) -> Any:
        """The gate's bars a recall uses when given none: ``Bars()`` with the saved defaults applied.

        The user saves them with :meth:`save_default_bars` (the ``GateExplorer`` widget's "Save as my
        defaults" button) or the settings ``recall_floor``, ``recall_margin``, ``recall_top_k`` and
        ``recall_budget_tokens``.

        >>> v.default_bars().floor  # doctest: +SKIP
        0.3
        """
        from synapse_nb.recall import Bars

        return Bars(**{field: self.settings.get(name) for field, name in BAR_SETTINGS.items()})

    def save_default_bars(self, bars: Any) -> Any:
        """Save ``bars``' floor, margin, top-k and budget as this vault's recall defaults (user only).

        Every later ``recall`` without ``bars`` (notebook, CLI, MCP) uses them. Returns the saved defaults.

        >>> from synapse_nb.recall import Bars
        >>> v.save_default_bars(Bars(floor=0.25, top_k=3))  # doctest: +SKIP
        """
        from synapse_nb.recall import Bars

        if not isinstance(bars, Bars):
            raise ValidationError(f"bars must be a synapse_nb.recall.Bars, got {type(bars).__name__}")
        self.settings.set_many({name: getattr(bars, field) for field, name in BAR_SETTINGS.items()})
        return self.default_bars()

    @property
    def index(self) -> Any:
        """The LanceDB retrieval index (:class:`synapse_nb.recall.VaultIndex`): ``rebuild()``, ``check()``."""
        if self._index is None:
            from synapse_nb.recall import VaultIndex

            self._index = VaultIndex(self)
        return self._index

    # -- memory follows the code -------------------------------------------------------------------------
    def verify(self, *, fix: bool = False) -> Any:
        """Check every file a lesson, checkpoint, decision or memory refers to against git HEAD.

        Reports dangling references (missing files), renames git knows, and records that name files
        changed by commits made after they were written (possibly stale). With ``fix`` (user only),
        lesson and checkpoint file lists follow the renames and records are marked, so recall and
        status show the marks. Returns a :class:`synapse_nb.follow.VerifyReport`.

        >>> print(v.verify())  # doctest: +SKIP
        verified 12 file references: 1 dangling, 0 renamed, 0 records possibly stale
          missing   checkpoint ckp_3f9a0c12be47: src/old_auth.py
        """
        from synapse_nb.follow import verify

        return verify(self, fix=fix)

    def flags(self) -> dict[str, dict[str, Any]]:
        """Marks left by ``verify(fix=True)``: {id: {"dangling": [paths], "stale": [shas]}}."""
        out: dict[str, dict[str, Any]] = {}
        for r in self._store.query("SELECT rid, flag, detail FROM flags WHERE mind = ? ORDER BY rid, flag",
                                   (self.mind,)):
            out.setdefault(r["rid"], {})[r["flag"]] = json.loads(r["detail"])
        return out

    # -- status, prune ------------------------------------------------------------------------------------
    def status(self) -> Status:
        """Counts per kind and state, pending lessons, and what expires soon."""
        now = self._now()
        ts = fmt_ts(now)
        q = self._store.query
        m = self.mind
        counts: dict[str, dict[str, int]] = {}
        row = q("SELECT count(*) AS n, sum(verified) AS v, sum(expires_at IS NOT NULL AND expires_at <= ?) AS e "
                "FROM memories WHERE mind = ?", (ts, m))[0]
        n, ver, exp = int(row["n"] or 0), int(row["v"] or 0), int(row["e"] or 0)
        counts["memories"] = {"total": n, "verified": ver, "unverified": n - ver, "expired": exp}
        for table in ("checkpoints", "decisions", "episodes", "notes"):
            counts[table] = {"total": int(q(f"SELECT count(*) FROM {table} WHERE mind = ?", (m,))[0][0])}
        les = {s: 0 for s in ("pending", "approved", "expired")}
        for r in q("SELECT CASE WHEN status = 'approved' AND expires_at <= ? THEN 'expired' ELSE status END AS s, "
                   "count(*) AS n FROM lessons WHERE mind = ? GROUP BY s", (ts, m)):
            les[r["s"]] = int(r["n"])
        if self.actor == "agent":
            les = {"approved": les["approved"]}
        counts["lessons"] = les
        pending = () if self.actor == "agent" else tuple(x.id for x in self.lessons.pending())
        soon = fmt_ts(now + timedelta(days=7))
        expiring = tuple(r["id"] for r in q(
            "SELECT id FROM memories WHERE mind = ? AND expires_at > ? AND expires_at <= ? ORDER BY expires_at, id",
            (m, ts, soon)))
        les_soon = tuple(r["id"] for r in q(
            "SELECT id FROM lessons WHERE mind = ? AND status = 'approved' AND expires_at > ? AND expires_at <= ? "
            "ORDER BY expires_at, id", (m, ts, fmt_ts(now + timedelta(days=2)))))
        flags = self.flags()
        from synapse_nb.gitscope.vaultdir import tracked_files, untrack_command

        prefix, tracked = tracked_files(self.path)
        return Status(vault_path=str(self.path), mind=m, actor=self.actor, counts=counts, pending_lessons=pending,
                      expiring_memories=expiring, expiring_lessons=les_soon, schema_version=self._store.schema_version,
                      dangling=tuple(sorted(r for r, f in flags.items() if "dangling" in f)),
                      possibly_stale=tuple(sorted(r for r, f in flags.items() if "stale" in f)),
                      tracked_by_git=tracked,
                      untrack_command=untrack_command(prefix) if tracked and prefix else None)

    def prune(self, *, sessions_older_than: str | timedelta = "30d") -> PruneReport:
        """Delete expired memories, mark expired lessons, forget old per-session delta state (user only)."""
        if self.actor != "user":
            raise PermissionDeniedError("an agent may not prune the vault; a human does")
        age = parse_duration(sessions_older_than, "sessions_older_than")
        now = self._now()
        ts = fmt_ts(now)
        with self._store.transaction() as c:
            mem_ids = tuple(r[0] for r in c.execute(
                "SELECT id FROM memories WHERE mind = ? AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY id",
                (self.mind, ts)))
            c.execute("DELETE FROM memories WHERE mind = ? AND expires_at IS NOT NULL AND expires_at <= ?",
                      (self.mind, ts))
            les_ids = tuple(r[0] for r in c.execute(
                "SELECT id FROM lessons WHERE mind = ? AND status = 'approved' AND expires_at <= ? ORDER BY id",
                (self.mind, ts)))
            c.execute("UPDATE lessons SET status = 'expired', updated_at = ? WHERE mind = ? AND status = 'approved' "
                      "AND expires_at <= ?", (self._stamp(c), self.mind, ts))
            cur = c.execute("DELETE FROM session_seen WHERE mind = ? AND seen_at < ?",
                            (self.mind, fmt_ts(shift(now, -age, "sessions_older_than"))))
            sessions = cur.rowcount
            for i in mem_ids:
                self._touched("memory", i, deleted=True)
            for i in les_ids:
                self._touched("lesson", i)
        return PruneReport(memories_deleted=mem_ids, lessons_expired=les_ids, sessions_cleared=max(0, sessions))

    # -- export / import ----------------------------------------------------------------------------------
    def export_jsonl(self, dest: str | Path | IO[str] | None = None) -> str:
        """Export the whole vault (every mind, every kind) as JSON Lines, sorted and stable.

        Returns the text; also writes it to ``dest`` (a path or a text file) when given. Importing the
        export into an empty vault gives an identical vault (same ids, same timestamps).
        """
        from synapse_nb.transfer import export_lines

        if self.actor != "user":
            raise PermissionDeniedError("an agent may not export the vault (it would read pending lessons)")
        text = "".join(line + "\n" for line in export_lines(self._store))
        if dest is not None:
            if hasattr(dest, "write"):
                dest.write(text)  # type: ignore[union-attr]
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

    def import_jsonl(self, source: str | Path | IO[str] | Iterable[str]) -> dict[str, int]:
        """Import an export (a path, a text file, or lines) in one all-or-nothing transaction (user only).

        Records whose id already exists with identical content are skipped; any conflict (an id or a
        (mind, category, key) already holding something else, duplicate ids, unknown kinds, malformed
        lines) refuses the whole import with a message naming the line. Returns counts per kind.
        """
        from synapse_nb.transfer import import_lines

        if self.actor != "user":
            raise PermissionDeniedError("an agent may not import records; a human imports an export")
        if isinstance(source, str | Path):
            p = Path(source)
            if not p.is_file():
                raise ValidationError(f"import file {str(p)!r} does not exist")
            try:
                lines: Iterable[str] = p.read_text(encoding="utf-8").splitlines()
            except UnicodeDecodeError as exc:
                raise ValidationError(f"import file {str(p)!r} is not UTF-8 text: {exc}") from None
        elif hasattr(source, "read"):
            lines = source.read().splitlines()  # type: ignore[union-attr]
        else:
            lines = source
        return import_lines(self, lines)

