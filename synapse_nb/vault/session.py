"""One way to open a vault, for every surface: :class:`VaultSession`.

A surface (the CLI, the magics, the MCP server, the agent hooks, the git hook) never calls :func:`open_vault`
itself: it makes one session per vault it serves and asks it for a handle to **read** or to **write**. The
session holds the policy every surface used to write out for itself:

- **read or write.** A read never creates a vault (no vault yet is a :class:`~synapse_nb.errors.VaultNotFoundError`
  saying how to make one); the first write creates it, inside an existing folder only, unless the session was
  made with ``create=False`` (the hooks, which never create one).
- **read-only.** ``readonly=None`` (the default) reads ``SYNAPSE_READONLY`` from the environment
  (:func:`~synapse_nb.context.readonly_requested`); a read-only session opens read-only and never creates a vault,
  so a write fails in the store with its own one-line error.
- **the stale copy of a team vault.** With ``offline=True``, a team vault whose server cannot be reached opens as
  this machine's stale, read-only copy (:class:`~synapse_nb.offline.OfflineVault`). Only
  :meth:`~VaultSession.read_or_stale` hands it out (typed ``Vault | OfflineVault``: the caller narrows on
  ``v.offline``); :meth:`~VaultSession.read` and :meth:`~VaultSession.write` raise the copy's
  :class:`~synapse_nb.errors.OfflineError` instead. The server is tried again at the next call: a session never stays
  offline once the server is back.
- **taking back an unused new vault.** :meth:`~VaultSession.take_back` removes the vault this session created when
  nothing was written to it (a refused first write: an empty key, an unknown category), and
  :meth:`~VaultSession.writing` does it when the write it wraps fails.
- **notices, as data.** What a human should be told about the vault is a :class:`Notice` (``created``,
  ``removed``, ``borrowed``, ``offline``, ``readonly``), passed to ``on_notice`` when it happens and kept in
  :attr:`~VaultSession.notices` for the open handle. Each surface renders them its own way:

  ========  =========================================  ===============================================
  notice    when                                       rendered by
  ========  =========================================  ===============================================
  created   a write created the vault                  MCP: one stderr line; CLI: one once the command
                                                       is over, none when it was taken back; magics:
                                                       printed on stderr; ``synapse-nb init``: its answer
  removed   a new vault was taken back                 MCP: one stderr line; CLI: none, unless the
                                                       created line was said already
  borrowed  the vault is borrowed                      MCP: the first line and ``borrowed`` field of every
            (:mod:`synapse_nb.borrowed`)               answer; elsewhere the recall text carries it
  offline   the handle is a team vault's stale copy    its answers start with ``STALE (offline)``
  readonly  the session is read-only                   MCP: the refusal of a writing tool; hooks: write
                                                       nothing
  ========  =========================================  ===============================================

>>> import tempfile
>>> said = []
>>> s = VaultSession(tempfile.mkdtemp(), on_notice=said.append)
>>> s.read()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
synapse_nb.errors.VaultNotFoundError: no vault at ...
>>> v = s.write()
>>> [n.kind for n in said], v.created
(['created'], True)
>>> s.take_back(), [n.kind for n in said], v.path.exists()
(True, ['created', 'removed'], False)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Self

from synapse_nb.context import check_identity, check_surface, readonly_requested
from synapse_nb.errors import OfflineError, SynapseError
from synapse_nb.vault.facade import Vault
from synapse_nb.vault.locate import DB_NAME
from synapse_nb.vault.opening import ReadableVault, open_vault

if TYPE_CHECKING:
    from synapse_nb._util import Clock
    from synapse_nb.offline import OfflineVault

__all__ = ["Notice", "NoticeKind", "VaultSession"]

NoticeKind = Literal["created", "removed", "borrowed", "offline", "readonly"]


class Notice(NamedTuple):  # a NamedTuple, not a dataclass: the agent hooks' cold path imports this module
    """Something to tell the human about the vault a session opened (see the table in :mod:`synapse_nb.vault.session`).

    ``text`` is one line without a surface's prefix; :meth:`line` adds one. ``data`` holds the details a surface
    may show as fields: the borrowed vault's :meth:`~synapse_nb.borrowed.Borrowed.to_dict`, the offline copy's
    ``location`` and ``reason``, the read-only session's ``reason``.

    >>> Notice("created", "created a new vault at /p/.synapse", Path("/p/.synapse")).line("synapse-nb")
    'synapse-nb: created a new vault at /p/.synapse'
    """

    kind: NoticeKind
    text: str
    path: Path
    data: Mapping[str, Any] = MappingProxyType({})

    def line(self, prog: str) -> str:
        """The notice as one line from ``prog`` (``"synapse-nb: created a new vault at ..."``)."""
        return f"{prog}: {self.text}"


class VaultSession:
    """A surface's way to one vault, opened on first use for reading or writing (see :mod:`synapse_nb.vault.session`).

    Parameters
    ----------
    path : a project folder, a vault folder or a team vault URL, as for :func:`~synapse_nb.vault.open_vault`
        (default: ``SYNAPSE_HOME``, else the current folder).
    mind, actor, clock : as for :func:`~synapse_nb.vault.open_vault`.
    readonly : open read-only (never creating a vault); None (the default): when ``SYNAPSE_READONLY`` in
        ``environ`` asks for it.
    create : whether the first write may create the vault (default True); reads never do.
    offline : a team vault whose server cannot be reached opens as this machine's stale copy (for
        :meth:`read_or_stale`) instead of raising :class:`~synapse_nb.errors.OfflineError`.
    vault : an open vault to serve instead of opening one (used as is; never reopened, never closed here).
    environ : the environment ``SYNAPSE_READONLY`` is read from (default: this process's).
    on_notice : called with each :class:`Notice` as it happens.
    surface : the surface asking ("cli", "mcp", "notebook", "hook", "git-hook"; default "api"): every change made
        through the handle is recorded in the vault's history as coming from it.
    """

    def __init__(self, path: str | Path | None = None, *, mind: str = "default", actor: str = "user",
                 clock: Clock | None = None, readonly: bool | None = None, create: bool = True,
                 offline: bool = False, vault: Vault | None = None, environ: Mapping[str, str] | None = None,
                 on_notice: Callable[[Notice], None] | None = None, surface: str = "api") -> None:
        check_identity(mind, actor)
        self._surface = check_surface(surface)
        from_env = readonly is None
        #: whether the vault is opened read-only (every write refused, never created)
        self.readonly: bool = readonly_requested(environ) if readonly is None else readonly
        self._readonly_reason = ("SYNAPSE_READONLY=1 in the environment" if from_env else "opened read-only")
        self._path = path
        self._mind = mind
        self._actor = actor
        self._clock = clock
        self._create = create
        self._offline = offline
        self._on_notice = on_notice
        self._given = vault is not None
        self._vault: ReadableVault | None = vault
        self._created: Vault | None = None  # the vault this session created, until it is taken back or closed
        self._notices: list[Notice] = []
        if vault is not None:
            self._opened(vault, ours=False)

    # -- the handle ---------------------------------------------------------------------------------------------
    @property
    def current(self) -> ReadableVault | None:
        """The open handle, or None before the first use (and after :meth:`close` or a take-back)."""
        return self._vault

    @property
    def notices(self) -> tuple[Notice, ...]:
        """The notices about the open handle (those of a handle closed since are gone)."""
        return tuple(self._notices)

    def notice(self, kind: NoticeKind) -> Notice | None:
        """The open handle's notice of ``kind``, or None."""
        return next((n for n in self._notices if n.kind == kind), None)

    def read(self) -> Vault:
        """The vault, for a read: never created (:class:`~synapse_nb.errors.VaultNotFoundError` when there is none).

        A team vault's stale copy cannot answer an ordinary read: :class:`~synapse_nb.errors.OfflineError` says so
        (use :meth:`read_or_stale` for the reads the copy answers: search and recall)."""
        v = self._open(write=False)
        if v.offline:
            v.refuse("read this without the server")
        return v

    def read_or_stale(self) -> ReadableVault:
        """The vault for a read that this machine's stale copy of a team vault can answer (search, recall): the
        vault, or, with ``offline`` and the server out of reach, the copy (``v.offline`` is True). Never creates."""
        return self._open(write=False)

    def write(self) -> Vault:
        """The vault, for a write: created inside an existing folder when there is none (a ``created`` notice),
        unless the session is read-only or made with ``create=False``. A read-only session gives its read-only
        handle (the write then fails in the store); a team vault's stale copy raises
        :class:`~synapse_nb.errors.OfflineError` (writes are refused until the server is back)."""
        v = self._open(write=True)
        if v.offline:
            v.refuse("write")
        return v

    @contextmanager
    def writing(self) -> Iterator[Vault]:
        """:meth:`write`, and if the write inside fails with a :class:`~synapse_nb.errors.SynapseError`, take back
        the vault this call has just created (:meth:`take_back`): a refused first write leaves no vault behind."""
        fresh = self._vault is None
        v = self.write()
        try:
            yield v
        except SynapseError:
            if fresh:
                self.take_back()
            raise

    def stale_copy(self, exc: OfflineError) -> OfflineVault:
        """This machine's stale copy once the server of the open team vault went away (``exc``, raised by a read the
        copy can answer); ``exc`` again when the server answers after all, when the session does not take the copy
        (``offline`` False, or a given vault) or there is no copy. The next call tries the server again."""
        if self._given or self._vault is None or not self._offline:
            raise exc
        self._drop()
        v = self._open(write=False)
        if not v.offline:
            raise exc
        return v

    def take_back(self) -> bool:
        """Remove the vault this session created if nothing has been written to it (a ``removed`` notice).

        Only the files a new vault holds go (a ``.gitignore`` the user wrote stays, and a folder that holds anything
        else stays, emptied of the vault's files); True when the vault folder is gone. A vault with any record or
        setting in it, one the session did not create, or one already taken back is kept (False)."""
        v = self._created
        if v is None or v is not self._vault:
            return False
        if not _unused(v):
            return False
        self._drop()
        gone = _remove_vault_files(v.path)
        if gone:
            self._say(Notice("removed", f"removed the vault it had just created at {v.path} (nothing was written)",
                             v.path))
        return gone

    def close(self) -> None:
        """Close the handle (a given vault stays open); the next use opens the vault again."""
        if self._given:
            return
        self._drop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._vault is not None:
            return f"<VaultSession {self._vault!r}>"
        return f"<VaultSession not open: {self._path or 'SYNAPSE_HOME or the current folder'}>"

    # -- inside -------------------------------------------------------------------------------------------------
    def _drop(self) -> None:
        if self._vault is not None:
            self._vault.close()
        self._vault, self._created, self._notices = None, None, []

    def _say(self, notice: Notice) -> None:
        if notice.kind != "removed":
            self._notices.append(notice)
        if self._on_notice is not None:
            self._on_notice(notice)

    def _open(self, *, write: bool) -> ReadableVault:
        v = self._vault
        if v is not None and v.offline:
            self._drop()  # never stay offline once the server is back: try it again
            v = None
        if v is not None:
            return v
        v = open_vault(self._path, mind=self._mind, actor=self._actor, clock=self._clock, readonly=self.readonly,
                       create=write and self._create and not self.readonly, offline=self._offline,
                       surface=self._surface)
        self._vault = v
        self._opened(v, ours=True)
        return v

    def _opened(self, v: ReadableVault, *, ours: bool) -> None:
        """The notices about a handle just opened (``ours``) or given (whoever opened it said what it created)."""
        if v.offline:
            self._say(Notice("offline", f"the team vault server {v.location} cannot be reached ({v.reason}): "
                             f"reading this machine's stale copy in {v.path}; writes are refused", v.path,
                             {"location": v.location, "reason": v.reason}))
        else:
            if v.created and ours:
                self._created = v
                self._say(Notice("created", f"created a new vault at {v.path}", v.path))
            if v.borrowed is not None:
                self._say(Notice("borrowed", v.borrowed.line, v.path, v.borrowed.to_dict()))
        if self.readonly:
            self._say(Notice("readonly", f"the vault is read-only ({self._readonly_reason}): every write is refused",
                             v.path, {"reason": self._readonly_reason}))


def _unused(v: Vault) -> bool:
    """Whether nothing has been written to ``v``: an export of it would hold its header line only."""
    from itertools import islice

    from synapse_nb.transfer import export_lines  # the same records an export would hold

    try:
        return next(islice(export_lines(v._store), 1, None), None) is None
    except SynapseError:
        return False


def _remove_vault_files(folder: Path) -> bool:
    """Remove what a new vault folder holds (its database files; its ``.gitignore`` when it is ours) and the folder
    if that leaves it empty; True when it is gone."""
    from synapse_nb.gitscope.vaultdir import GITIGNORE_TEXT

    for suffix in ("", "-wal", "-shm", "-journal"):
        (folder / (DB_NAME + suffix)).unlink(missing_ok=True)
    ignore = folder / ".gitignore"
    if ignore.is_file() and ignore.read_text(encoding="utf-8", errors="replace") == GITIGNORE_TEXT:
        ignore.unlink()  # ours; a .gitignore the user wrote stays
    try:
        folder.rmdir()
    except OSError:
        return False
    return True
