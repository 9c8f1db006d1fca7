"""Opening a vault: on this machine (:func:`open_vault`) or a team vault on PostgreSQL (:func:`open_team_vault`).

Creating a vault, migrating its schema, the offline copy of a team vault whose server cannot be reached.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, overload

from synapse_nb._calls import checked_call
from synapse_nb._util import Clock
from synapse_nb.borrowed import identify, symlinked
from synapse_nb.context import GitView, acting_actor, check_agent_clock, check_identity
from synapse_nb.dupes_owed import run_at_open as owed_checks
from synapse_nb.errors import (
    OfflineError,
    PermissionDeniedError,
    StoreError,
    ValidationError,
    VaultNotFoundError,
)
from synapse_nb.gitscope.repo import find_repo
from synapse_nb.gitscope.vaultdir import (
    ensure_gitignore,
    holds_only_vault_files,
)
from synapse_nb.purge import run_owed
from synapse_nb.store.sqlite import SqliteStore
from synapse_nb.vault.facade import Vault
from synapse_nb.vault.locate import (
    DB_NAME,
    VAULT_DIRNAME,
    _set_local_aside,
    locate,
    retire_shared_cache,
    team_cache_dir,
    team_url_of,
)

if TYPE_CHECKING:
    from synapse_nb.offline import OfflineVault

__all__ = ["ReadableVault", "open_team_vault", "open_vault"]

#: What a read that accepts a team vault's stale copy gets (``offline=True``): the vault, or this machine's stale,
#: read-only copy of it. ``if v.offline:`` tells them apart (mypy narrows on it: ``Vault.offline`` is
#: ``Literal[False]``, ``OfflineVault.offline`` ``Literal[True]``).
ReadableVault: TypeAlias = "Vault | OfflineVault"


@overload
def open_vault(path: str | Path | None = None, *, mind: str = "default", actor: str = "user",
               clock: Clock | None = None, readonly: bool = False, create: bool = True,
               offline: Literal[False] = False, surface: str = "api") -> Vault: ...
@overload
def open_vault(path: str | Path | None = None, *, mind: str = "default", actor: str = "user",
               clock: Clock | None = None, readonly: bool = False, create: bool = True,
               offline: bool, surface: str = "api") -> ReadableVault: ...
@checked_call  # a misspelt keyword is a ValidationError naming what open_vault takes (review 78)
def open_vault(path: str | Path | None = None, *, mind: str = "default", actor: str = "user",
               clock: Clock | None = None, readonly: bool = False, create: bool = True,
               offline: bool = False, surface: str = "api") -> ReadableVault:
    """Open the vault for a project; with ``create`` (the default), create it if it does not exist yet.

    Where the vault is: see :func:`find_vault_dir` (``path`` and ``SYNAPSE_HOME`` name a project
    folder or a vault folder, the same way). A vault is created only inside an existing folder:
    missing parent folders are never created, so a mistyped path is a :class:`VaultNotFoundError`
    naming it, never a new empty vault. A new vault folder gets a ``.gitignore`` holding ``*`` (and an
    existing one gets it when missing), so git never stages, reverts or stashes the vault.
    ``vault.created`` says whether this call created it. A *borrowed* vault (``vault.borrowed``,
    :mod:`synapse_nb.borrowed`: it came with the repository, or a symlink leads out of the project to it) is flagged in
    every recall; a person's writable open records a vault no clone brought as this checkout's own.

    Parameters
    ----------
    path : a project folder (the vault is ``.synapse/`` at its git root, or in it outside git), or a
        vault folder itself, or a team vault URL (``postgresql://user@host:port/db?project=NAME``, see
        ``docs/team.md``). Default: ``SYNAPSE_HOME`` if set, else the current folder.
    mind : which mind's records to see and write (default "default").
    actor : "user" (human surfaces: writes are verified) or "agent" (writes are proposals). In an agent's
        environment (``CLAUDECODE=1``, ...: :func:`synapse_nb.context.agent_environment`) a writable handle acts as
        the agent whatever is asked (:func:`synapse_nb.context.acting_actor`), as the CLI does there.
    clock : a callable returning an aware ``datetime`` (tests); default the real UTC clock. For a person's handles
        only: a handle that acts as the agent (``actor="agent"``, or any writable handle in an agent's environment)
        runs on the real clock, and ``clock=`` there is a :class:`PermissionDeniedError`
        (:func:`synapse_nb.context.check_agent_clock`: "now" bounds the agent's quotas and stamps its writes).
    readonly : open without write access (every write raises ``StoreError``); never creates.
    create : create the vault when there is none (default True, for code that is about to write);
        ``create=False`` is for reading: a missing vault is a :class:`VaultNotFoundError`. The surfaces
        open through a :class:`~synapse_nb.vault.VaultSession`, which never creates a vault for a read.
    offline : for a team vault URL only: when its server cannot be reached, return this machine's stale,
        read-only copy (a :class:`synapse_nb.offline.OfflineVault`: ``search``/``recall`` answer marked
        ``STALE`` with the copy's age, everything else raises :class:`OfflineError`) instead of raising
        :class:`OfflineError`. Typed :data:`ReadableVault` then: narrow on ``v.offline`` before using the vault.
    surface : where this handle's changes come from, for their history ("cli", "mcp", "notebook", "hook", ...;
        default "api"); the surfaces set it through :class:`~synapse_nb.vault.VaultSession`.

    Raises
    ------
    VaultNotFoundError
        The folder does not exist, or there is no vault and ``create`` is False (or ``readonly``).
    PermissionDeniedError
        ``clock`` given for a handle that acts as the agent (see ``clock``).

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
    if not isinstance(path, str | os.PathLike | None):  # open_vault(5) was Python's TypeError (review 78)
        raise ValidationError(f"path must be a folder (a str or pathlib.Path) or a team vault URL "
                              f"(postgresql://...), got {type(path).__name__}")
    check_agent_clock(acting_actor(check_identity(mind, actor)), clock)  # before anything is created
    team = path if path is not None else os.environ.get("SYNAPSE_HOME", "").strip() or None
    if isinstance(team, str) and team.lower().startswith(("postgresql://", "postgres://")):
        return open_team_vault(team, mind=mind, actor=actor, clock=clock, readonly=readonly, offline=offline,
                               surface=surface)
    vault_dir, project_dir, shown, named = locate(path)
    team_url = team_url_of(vault_dir)
    if team_url is not None:  # `team join` made this folder's vault the team vault: one clear vault per folder
        from synapse_nb.vault.pins import checked_team_urls  # only for a team folder: the hooks' cold path skips it

        # the server a person confirmed for the folder on this machine, checked before anything connects or moves
        urls = checked_team_urls(vault_dir, actor=actor)
        if urls is not None:
            # a handle that acts as the agent logs in as the folder's agent login when a person set one: the server
            # then sees the agent's own login, and no person's rights are in that connection (review 30)
            agent = acting_actor(check_identity(mind, actor)) == "agent"
            team_url = urls.agent_url if agent and urls.agent_url is not None else urls.url
        aside = None if readonly else _set_local_aside(vault_dir)
        if aside is not None:
            logging.getLogger("synapse_nb.team").warning(
                "%s names the team vault %s; the local vault database found there was renamed aside to %s (kept)",
                vault_dir / "team.toml", team_url, aside)
        return open_team_vault(team_url, mind=mind, actor=actor, clock=clock, readonly=readonly,
                               local=project_dir, offline=offline, surface=surface)
    borrowed = symlinked(vault_dir, project_dir, named=named)  # before anything is created: no write through it
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
    if borrowed is None:  # came with the repository? by the vault's id first; at most one git ls-files per open
        try:
            person = not readonly and acting_actor(check_identity(mind, actor)) == "user"
            borrowed = identify(vault_dir, uid=store.vault_uid(), db_name=DB_NAME, person=person, created=created)
        except BaseException:
            store.close()
            raise
    v = Vault(vault_dir, project_dir=project_dir, mind=mind, actor=actor, clock=clock, readonly=readonly,
              _store=store, _git=GitView(project_dir, vault_dir, borrowed), surface=surface)
    v.created = created
    if refusal is None and not readonly and acting_actor(check_identity(mind, actor)) == "user":
        run_owed(vault_dir, lambda: v.index)  # a person's deletion killed before its index scrub (review 89)
        owed_checks(store)  # an import killed before its duplicate check ended (a twenty-second pass)
    return v


@overload
def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None,
                    offline: Literal[False] = False, surface: str = "api") -> Vault: ...
@overload
def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None, offline: bool,
                    surface: str = "api") -> ReadableVault: ...
def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None, offline: bool = False,
                    surface: str = "api") -> ReadableVault:
    """Open a team vault (``postgresql://user@host:port/db?project=NAME``; see ``docs/team.md``).

    ``project`` defaults to the repository's folder name. This machine's caches (the offline copy: the retrieval
    index and its position in the change feed) live in ``.synapse/team/<server>-<project>/`` at the root of
    ``local`` 's repository (default: the current folder's), apart from a local vault's; two handles with different
    ``local`` folders are two machines. A folder whose ``.synapse/team.toml`` names a team vault (``team join``
    writes it) opens it by :func:`open_vault` too, whatever surface asks. An agent handle runs as the
    project's agent database role, so the server itself refuses what the human gate forbids. An unreachable
    server is an :class:`OfflineError` saying so: nothing is ever written to a local fork; with ``offline``,
    this machine's stale copy is returned instead when it has one (see :func:`open_vault`).
    """
    acting = acting_actor(check_identity(mind, actor))
    check_agent_clock(acting, clock)
    from synapse_nb.team_extra import require_psycopg

    require_psycopg()
    from synapse_nb.store.postgres import PgStore, parse_team_url, project_for  # psycopg: team vaults only
    from synapse_nb.store.postgres.cachedir import claim_folder

    start = Path(local or Path.cwd()).resolve()
    repo = find_repo(start)
    project_dir = repo.main_work_tree if repo is not None else start
    conninfo, project = parse_team_url(url, project_for(project_dir))
    vault_dir = project_dir / VAULT_DIRNAME
    folder = team_cache_dir(vault_dir, conninfo, project)  # apart from a local vault's index: never mixed
    try:
        vault_dir.mkdir(exist_ok=True)  # never its parents
        ensure_gitignore(vault_dir)
    except OSError as exc:
        raise StoreError(f"cannot create this machine's cache folder {folder}: {exc.strerror or exc}") from exc
    # a real folder of this Unix user's, in a team/ with the sticky bit, or moved aside and made afresh (review 59);
    # what another user put in it set aside, and it 0700, its files 0600, whatever the umask (review 57)
    folder = claim_folder(folder)
    try:
        store = PgStore(conninfo, project, folder=folder, readonly=readonly,
                        role="agent" if acting == "agent" else None, keep_copy=True)
    except OfflineError as exc:
        if not offline:
            raise
        from synapse_nb.offline import OfflineVault, has_copy
        from synapse_nb.store.postgres.copyfile import health

        if not has_copy(folder):
            said = health(folder)  # a copy set aside as damaged says so (review 85)
            raise OfflineError(f"{exc}; and this machine has no copy of it to read ({folder}: "
                               f"{said + '; ' if said and said.startswith('being rebuilt') else ''}every call that "
                               "reaches the server makes and keeps one, as do `synapse-nb index rebuild` and index "
                               "searches)") from exc
        location = f"{conninfo.split('?')[0].rsplit('@', 1)[-1]}?project={project}"
        return OfflineVault(folder, location=location, mind=mind, actor=acting,
                            reason=str(exc).split(": this machine")[0], why=exc.reason)
    # the folder an older version shared between logins goes once the server answered (this login's copy is rebuilt)
    retire_shared_cache(vault_dir, conninfo, project)
    try:
        v = Vault(folder, project_dir=project_dir, mind=mind, actor=actor, clock=clock, readonly=readonly,
                  _store=store, _git=GitView(project_dir, vault_dir), surface=surface)
    except BaseException:
        store.close()
        raise
    if not readonly and acting == "user":  # what a deletion left owed, as a local vault's open runs it (a twenty-first
        # pass: a team vault's waited for the next sync or repair): the index's rewrite, then the offline copy's scrub
        run_owed(folder, lambda: v.index)
        if store.keeper is not None:
            store.keeper.run_owed()
        owed_checks(store)
    return v
