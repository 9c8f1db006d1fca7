"""Team vaults: one vault per repository on a shared PostgreSQL server, for many people, agents and machines.

PostgreSQL is the system of record; every machine keeps caches of it in its own ``.synapse/`` folder (the
retrieval index and its position in the change feed). ``docs/team.md`` explains the design.

- :func:`open_team_vault` opens ``postgresql://user@host:port/db?project=NAME`` (``open_vault`` does it for
  such a URL, from ``--vault`` or ``SYNAPSE_HOME`` too).
- :func:`init` creates or upgrades a project (idempotent; migrations under ``pg_advisory_xact_lock``) and its roles.
- :func:`join` moves a local vault into the team vault through export/import (all-or-nothing, idempotent).
- :func:`status` says where the server, the schema and this machine's index copy stand, and the folder's pin.
- :func:`trust` (a person only) pins the server the folder's ``team.toml`` names now, after a legitimate change
  (:mod:`synapse_nb.vault.pins`: every surface refuses a folder whose ``team.toml`` disagrees with its pin).
- :func:`agent_login` (a person only) names the agent's own database login for the folder (``agent_url``): every
  handle that acts as the agent there connects with it, not with the person's login.
- :func:`start_dev_server` / :func:`stop_dev_server`: a throwaway local server for trying it out.

>>> url = start_dev_server("/tmp/synapse-dev")["url"]        # doctest: +SKIP
>>> init(url)["project"]                                       # doctest: +SKIP
'myrepo'
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from synapse_nb._util import Clock
from synapse_nb.context import acting_actor, require_human
from synapse_nb.errors import ConflictError, PermissionDeniedError, StoreError, ValidationError
from synapse_nb.offline import OfflineVault, copy_age, has_copy
from synapse_nb.team_extra import require_psycopg
from synapse_nb.team_local import _cache, _project_dir, _split, offline_search
from synapse_nb.team_machines import current_join
from synapse_nb.vault.locate import (
    TEAM_DIRNAME,
    record_team_url,
    set_aside_databases,
    set_local_aside,
    team_agent_url_of,
    team_cache_dir,
    team_url_of,
)
from synapse_nb.vault.pins import (
    agent_identity,
    checked_team_urls,
    login_of,
    not_yours,
    pin_folder,
    pin_for,
    pin_state,
    server_identity,
    write_pin,
)

if TYPE_CHECKING:
    from synapse_nb.borrowed import Borrowed
    from synapse_nb.transfer import ImportCounts
    from synapse_nb.vault import ReadableVault, Vault

__all__ = ["agent_login", "grant", "init", "join", "offline_search", "open_team_vault", "recorded_url",
           "start_dev_server", "status", "stop_dev_server", "trust", "trust_preview"]

LOCAL_DIRNAME = ".synapse"
#: The most ``team-feed.json`` (a position in the change feed: a cursor and a snapshot) is read as (review 81).
FEED_CAP = 1024 * 1024


def recorded_url(local: str | Path | None = None) -> str | None:
    """The team vault URL this repository's ``.synapse/team.toml`` names (``team join`` writes it), or None."""
    return team_url_of(_project_dir(local) / LOCAL_DIRNAME)


@overload
def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None,
                    offline: Literal[False] = False) -> Vault: ...
@overload
def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None, offline: bool) -> ReadableVault: ...
def open_team_vault(url: str, *, mind: str = "default", actor: str = "user", clock: Clock | None = None,
                    readonly: bool = False, local: str | Path | None = None, offline: bool = False) -> ReadableVault:
    """Open a team vault: :func:`synapse_nb.vault.open_team_vault` (``open_vault`` does it for a URL)."""
    from synapse_nb.vault import open_team_vault as open_it

    return open_it(url, mind=mind, actor=actor, clock=clock, readonly=readonly, local=local, offline=offline)


def init(url: str, *, humans: tuple[str, ...] = (), agents: tuple[str, ...] = (), minds: tuple[str, ...] = ("*",),
         local: str | Path | None = None) -> dict[str, Any]:
    """Create the project (schema, tables, roles) or bring it to this version; idempotent.

    Runs every missing migration in one transaction under ``pg_advisory_xact_lock`` (concurrent runs queue).
    ``humans``/``agents`` are existing login roles to make members of the project's human / agent role (each gets
    the package's lock and idle timeouts); the agents see ``minds`` ("*": every mind; :func:`grant` changes it).
    Needs a role that may create roles and schemas. Returns the project, versions before/after, and roles.
    """
    require_psycopg()
    import psycopg

    from synapse_nb.store.postgres import PgStore
    from synapse_nb.store.postgres.errors import connect_error, location
    from synapse_nb.store.postgres.migrate import migrate, roles

    conninfo, project = _split(url, _project_dir(local))
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:  # refused by a server that is up, or unreachable: as every open says it
        raise connect_error(exc, location(conninfo, project)) from exc
    with conn:
        before, after = migrate(conn, project)
    if humans or agents:
        store = PgStore(conninfo, project)
        try:
            for login in humans:
                store.add_login(login, "human")
            for login in agents:
                store.add_login(login, "agent", minds=minds)
        finally:
            store.close()
    return {"project": project, "version_before": before, "version": after, "roles": roles(project),
            "humans": list(humans), "agents": list(agents), "agent_minds": list(minds) if agents else []}


def grant(url: str, login: str, mind: str, *, revoke: bool = False, local: str | Path | None = None) -> dict[str, Any]:
    """Let the role ``login`` see and write the mind ``mind`` (``"*"``: every mind) of the team vault, or no
    longer (``revoke``); the database enforces it (row-level security, migration 8). A login sees the minds granted
    to it or to a role it is a member of: people (``<project>_human``) are granted every mind by ``team init``,
    agents none. Needs the administrator's URL (the project's owner). Returns the login's minds afterwards."""
    from synapse_nb.store.postgres import PgStore

    conninfo, project = _split(url, _project_dir(local))
    store = PgStore(conninfo, project)
    try:
        minds = store.grant_mind(login, mind, revoke=revoke)
    finally:
        store.close()
    return {"project": project, "login": login, "minds": minds}


def join(url: str, source: str | Path = LOCAL_DIRNAME, *, local: str | Path | None = None,
         agent_url: str | None = None) -> ImportCounts:
    """Copy a local vault (``source``: its folder or project folder) into the team vault: its export imported in
    ONE transaction (all or nothing). Records already there with identical content are skipped, so joining
    again changes nothing; a record holding something else there refuses the whole join. Counts per kind.

    A repository with no local vault yet (a fresh clone) has nothing to copy: the join then only checks that the
    team vault can be opened, and counts nothing.

    Then the repository's ``.synapse/team.toml`` records the URL (without a password): from now on every surface
    (CLI, magics, MCP, widgets) opens the team vault in this folder without ``SYNAPSE_HOME``, and this folder's old
    local vault database is renamed aside (kept: ``synapse.db.before-team-<time>``). The result's ``team_file`` and
    ``set_aside`` name both (``set_aside`` None: there was no local database).

    Joining is a person's act (:func:`synapse_nb.context.require_human`: refused in an agent's environment, before
    anything is read, written or moved): it decides which vault every surface in the folder opens and sets the local
    one aside (review 36: an agent's join with an empty ``--from`` wrote ``team.toml`` and renamed the person's local
    vault aside, and the person's next command was refused). The join also pins the server for this folder on this
    machine (:mod:`synapse_nb.vault.pins`): the result's ``pinned`` is the server pinned and ``pinned_before`` the one
    it replaced (None: none, or the same).

    ``agent_url`` (a person only: refused in an agent's environment) names the agent's own database login on the same
    server (:func:`agent_login`), recorded in ``team.toml`` and pinned: every handle that acts as the agent in the
    folder connects with it. Without it, an agent login a person pinned for the folder before is kept when it reaches
    the same team vault; the result's ``agent_login`` is the one in force (None: agent surfaces use ``url``).

    The copy is trusted (``import_jsonl(trust=True)``): the local vault's user records, verified memories,
    approved lessons and settings were made through that vault's own human gate, and the join is the human's
    act; the claims it carried over are in the result's ``.claims``. A *borrowed* local vault (it came with the
    repository: :mod:`synapse_nb.borrowed`) whose lessons were approved or worded by whoever committed it, and not
    re-approved by a person here, is refused before anything is written or moved (review 63: they arrived approved
    and in force for the whole team): the person adopts the vault (``synapse-nb lessons adopt``) or approves each
    here (``synapse-nb lessons review``) first; the result's ``.borrowed`` says the copy came from a borrowed vault.
    """
    from synapse_nb.vault import open_vault

    require_human("join this folder to a team vault (it writes team.toml and sets the local vault aside)")
    if str(source).lower().startswith(("postgresql://", "postgres://")):
        raise ValidationError("--from names the local vault to copy (a folder), not a team vault URL")
    project_dir = _project_dir(local)
    vault_dir = project_dir / LOCAL_DIRNAME
    if agent_url is not None:  # before anything is copied: a person's act, on a login that is an agent's
        require_human("set the database login agent surfaces use in this folder")
        _check_agent_login(url, agent_identity(agent_url, url, project_dir), project_dir)
    else:
        agent_url = _pinned_agent_url(vault_dir, url, project_dir)
    from synapse_nb.errors import VaultNotFoundError
    from synapse_nb.transfer import ImportCounts

    try:
        src = open_vault(source, create=False, readonly=True)
    except VaultNotFoundError:
        src = None  # a fresh repository: nothing local to bring in; joining is only checking the team vault
    text = ""
    if src is not None:
        try:
            text = src.export_jsonl()
            _refuse_borrowed_approvals(None if isinstance(src, OfflineVault) else src.borrowed, text)
        finally:
            src.close()
    team = open_team_vault(url, local=local)
    try:  # trust_borrowed=False: the check above, again in the import's transaction
        counts = team.import_jsonl(text.split("\n"), trust=True) if text else ImportCounts({})
    finally:
        team.close()
    counts.team_file = record_team_url(vault_dir, url, agent_url)
    counts.set_aside = set_local_aside(vault_dir)
    counts.agent_login = server_identity(agent_url, project_dir) if agent_url is not None else None
    server = server_identity(url, project_dir)  # naming the URL is the person's explicit act: pin it
    before = write_pin(pin_folder(vault_dir), server, "join", agent_server=counts.agent_login or "")
    counts.pinned = server
    counts.pinned_before = before.server if before is not None and before.server != server else None
    return counts


def _refuse_borrowed_approvals(borrowed: Borrowed | None, text: str) -> None:
    """Refuse a join whose local vault is borrowed and holds lessons no person here approved (the export's header
    lists them: :func:`synapse_nb.transfer.approved_elsewhere`)."""
    ids = json.loads(text.split("\n", 1)[0]).get("approved_elsewhere") or []
    if borrowed is None or not ids:
        return
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    raise PermissionDeniedError(
        f"cannot join with this local vault: {borrowed.why}; nobody here approved {len(ids)} of its decided "
        f"lessons ({shown}), and a join would put them in force for everyone on the team vault. Nothing was "
        "copied, written or moved. Read them and approve each here (synapse-nb lessons review), "
        "or adopt the vault as your own in your own terminal (synapse-nb lessons adopt; then withdraw or reject "
        "what you do not want), and join again")


def _pinned_agent_url(vault_dir: Path, url: str, project_dir: Path) -> str | None:
    """The folder's ``agent_url`` when a person pinned it and it reaches the team vault ``url`` names; else None."""
    try:
        agent_url = team_agent_url_of(vault_dir) if vault_dir.is_dir() else None
        pin = pin_for(pin_folder(vault_dir)) if agent_url is not None else None
        if agent_url is None or pin is None or pin.agent_server != server_identity(agent_url, project_dir):
            return None
        agent_identity(agent_url, url, project_dir)
    except (ConflictError, ValidationError):
        return None
    return agent_url


def _check_agent_login(url: str, agent: str, project_dir: Path) -> None:
    """Refuse an agent login that is not one of the project's agents only, asked of the server over ``url`` (the
    person's login): :func:`synapse_nb.store.postgres.check_agent_login`."""
    from synapse_nb.store.postgres import check_agent_login

    conninfo, project = _split(url, project_dir)
    check_agent_login(conninfo, project, login_of(agent))


def _agent_verdict(conninfo: str, project: str, agent: str) -> str:
    """The server's check of an agent login (:func:`synapse_nb.store.postgres.check_agent_login`) as a person reads
    it: "passed: ...", "refused: <why>" or "not checked: <why>" (review 33)."""
    from synapse_nb.store.postgres import check_agent_login

    try:
        check_agent_login(conninfo, project, login_of(agent))
    except ValidationError as exc:
        return f"refused: {exc}"
    except StoreError as exc:
        return f"not checked: {exc}"
    return f"passed: the server says it is an agent of project {project} and nothing more"


def agent_login(agent_url: str | None, *, local: str | Path | None = None) -> dict[str, Any]:
    """Name the agent's own database login for this folder (``agent_url``; None: remove it, agent surfaces use the
    person's login again), in ``team.toml`` and in the folder's pin. Human-only (refused in an agent's
    environment). The folder's ``team.toml`` must agree with its pin first (else ``synapse-nb team trust``); the
    login is checked on the server over the folder's URL (:func:`_check_agent_login`). Returns ``folder``,
    ``team_file``, ``agent_login`` (the new one, None: none) and ``before`` (the one pinned before, None: none)."""
    require_human("set the database login agent surfaces use in this folder")
    project_dir = _project_dir(local)
    vault_dir = project_dir / LOCAL_DIRNAME
    urls = checked_team_urls(vault_dir, actor="user") if vault_dir.is_dir() else None
    if urls is None:
        raise ValidationError(f"{vault_dir / 'team.toml'} does not exist: this folder names no team vault (run "
                              "`synapse-nb team join URL --agent-url URL` to make it one, with an agent login)")
    named = None
    if agent_url is not None:
        named = agent_identity(agent_url, urls.url, project_dir)
        _check_agent_login(urls.url, named, project_dir)
    folder = pin_folder(vault_dir)
    pin = pin_for(folder)
    path = record_team_url(vault_dir, urls.url, agent_url)
    write_pin(folder, server_identity(urls.url, project_dir), "agent-login", agent_server=named or "")
    return {"folder": str(folder), "team_file": str(path), "agent_login": named,
            "before": (pin.agent_server or None) if pin is not None else None}


#: :func:`trust_preview`'s ``agent_check`` for a server not pinned here yet (:func:`trust` asks it then)
NOT_CHECKED = "not checked yet: the server is new here, so it is asked once you pin it (before anything is)"


def trust_preview(local: str | Path | None = None) -> dict[str, Any]:
    """What :func:`trust` would do here, changing nothing: ``folder``, ``team_file``, ``pinned`` (the server pinned
    now, or None), ``named`` (the server ``team.toml`` names), ``pinned_agent`` and ``named_agent`` (the agent login,
    None: none) and ``agrees``. For ``team trust`` to show a person before asking. Raises :class:`ValidationError`
    when the folder has no ``team.toml``, or its ``agent_url`` is not an agent login of that team vault.

    ``agent_check`` (None: the agent login is not new) is the server's verdict on a new or changed agent login
    (:func:`_agent_verdict`), asked only of a server already pinned here: a new server is not contacted before the
    person pins it (:func:`trust` asks it then, before pinning anything)."""
    project_dir = _project_dir(local)
    vault_dir = project_dir / LOCAL_DIRNAME
    url = team_url_of(vault_dir) if vault_dir.is_dir() else None
    if url is None:
        raise ValidationError(f"{vault_dir / 'team.toml'} does not exist: this folder names no team vault (run "
                              "`synapse-nb team join URL` to make it one)")
    folder = pin_folder(vault_dir)
    pin = pin_for(folder)
    named = server_identity(url, folder)
    agent_url = team_agent_url_of(vault_dir)
    named_agent = agent_identity(agent_url, url, folder) if agent_url is not None else None
    pinned_agent = (pin.agent_server or None) if pin else None
    check = None
    if named_agent is not None and named_agent != pinned_agent:
        check = (_agent_verdict(*_split(url, project_dir), named_agent) if pin is not None and pin.server == named
                 else NOT_CHECKED)
    agrees = pin is not None and pin.server == named and pinned_agent == named_agent
    return {"folder": str(folder), "team_file": str(vault_dir / "team.toml"), "pinned": pin.server if pin else None,
            "named": named, "pinned_agent": pinned_agent, "named_agent": named_agent, "agent_check": check,
            "agrees": agrees, "not_yours": None if agrees else not_yours(named, named_agent)}


def trust(local: str | Path | None = None, *, expect: str | None = None, expect_agent: str | None = None,
          other_login: bool = False) -> dict[str, Any]:
    """Pin the server this folder's ``team.toml`` names now, for this folder on this machine: a person accepting a
    change of team server (every surface refuses a folder whose ``team.toml`` disagrees with its pin). Human-only
    (:func:`synapse_nb.context.require_human`: refused in an agent's environment). ``expect``: the server the person
    was shown (:func:`trust_preview`'s ``named``; ``expect_agent``: its ``named_agent``, when it was shown one);
    refused, pinning nothing, when ``team.toml`` names another by now. A new or changed agent login is checked on
    the server first (review 33: an agent wrote a person's login there and it was pinned on the person's "y"): one the
    check refuses, or the server cannot check, is refused with why, pinning nothing. A ``team.toml`` whose logins
    look like another person's (:func:`~synapse_nb.vault.pins.not_yours`, the preview's ``not_yours``: a teammate's
    committed file) is refused unless ``other_login`` says the person means it (review 90). Returns
    :func:`trust_preview`'s answer as it was before, with ``changed``."""
    require_human("trust a new team server for this folder")
    preview = trust_preview(local)
    if expect is not None and preview["named"] != expect:
        raise ConflictError(f"team.toml changed while you were asked: it names {preview['named']} now, not {expect}; "
                            "nothing was pinned: run `synapse-nb team trust` again")
    if expect is not None and preview["named_agent"] != expect_agent:
        raise ConflictError(f"team.toml changed while you were asked: its agent login is {preview['named_agent']} "
                            f"by now, not {expect_agent}; nothing was pinned: run `synapse-nb team trust` again")
    # before a new server is asked of the agent login (a refusal the server gave already is said as it is)
    if preview["not_yours"] and not other_login and not str(preview["agent_check"]).startswith("refused"):
        raise ValidationError(
            f"team.toml may name another person's logins: {preview['not_yours']}. Nothing was pinned: working as "
            "them would put your writes under their name. Each person joins with their own logins: synapse-nb team "
            "join postgresql://YOUR_LOGIN@host:port/database?project=NAME --agent-url postgresql://YOUR_AGENT_LOGIN@"
            "host:port/database?project=NAME (docs/team.md, Setup step 3); if these logins are meant for you, "
            "confirm it at `synapse-nb team trust`'s question, or pass --other-login")
    if not preview["agrees"] and preview["agent_check"] is not None:
        verdict = preview["agent_check"]  # asked just now of a server pinned here: asked once (it was asked twice)
        if verdict == NOT_CHECKED:  # a new server: asked now, before anything is pinned
            project_dir = _project_dir(local)
            url = team_url_of(project_dir / LOCAL_DIRNAME) or ""
            verdict = _agent_verdict(*_split(url, project_dir), preview["named_agent"])
        if not verdict.startswith("passed"):
            raise ValidationError(f"team.toml's agent login {preview['named_agent']} was not pinned, nor anything "
                                  f"else: the server check {verdict}. Agent surfaces must log in as one of the "
                                  "project's agents only: fix agent_url in team.toml (or remove it), or set it with "
                                  "`synapse-nb team agent-login URL`, then run `synapse-nb team trust` again")
    if not preview["agrees"]:
        write_pin(Path(preview["folder"]), preview["named"], "trust", agent_server=preview["named_agent"] or "")
    return preview | {"changed": not preview["agrees"]}


def _local_position(folder: Path) -> dict[str, Any]:
    from synapse_nb.own_files import read_text  # a regular file under a cap, never a FIFO's hang (review 81)

    try:
        data = json.loads(read_text(folder / "team-feed.json", cap=FEED_CAP) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def status(url: str, *, local: str | Path | None = None) -> dict[str, Any]:
    """Where the team vault and this machine stand: server, schema version, this machine's index position and
    lag. When the server cannot be reached: ``online`` False, and the age of this machine's index copy (a stale,
    read-only copy: writes are refused until the server is back).

    For the folder's own team vault, ``agent_login`` says which login agent surfaces here use: the folder's agent
    login, or (none set) the person's, with what that leaves open and the command that sets one. In an agent's
    environment the server is asked over the agent login, when there is one."""
    from synapse_nb.store.postgres import CODE_VERSION, PgStore

    project_dir = _project_dir(local)
    conninfo, project, folder = _cache(url, project_dir)
    vault_dir = project_dir / LOCAL_DIRNAME
    recorded = team_url_of(vault_dir) if vault_dir.is_dir() else None
    out: dict[str, Any] = {
        "project": project, "code_version": CODE_VERSION, "local_folder": str(folder),
        # what this folder's vault is for every surface: the team vault team.toml names, else a local vault
        "folder_vault": recorded or "local (.synapse/synapse.db; no team.toml: run `synapse-nb team join URL`)",
        "local_vault_set_aside": [p.name for p in set_aside_databases(vault_dir)],
    }
    if recorded is not None and (vault_dir / "synapse.db").is_file():
        out["local_vault_shadowed"] = (f"{vault_dir / 'synapse.db'}: not used here (team.toml names the team vault); "
                                       "it is renamed aside at the next open")
    agent = acting_actor("user") == "agent"
    agent_url = None
    if recorded is not None:  # the server this machine pinned for the folder, and whether team.toml agrees
        out |= pin_state(vault_dir)
        agent_url = team_agent_url_of(vault_dir)
        out["agent_login"] = _agent_login_said(recorded, agent_url, project_dir, project)
        if url == recorded and agent and agent_url is not None and out["pin"] == "agrees":
            # the agent's shell: its own login, never the person's, and its own copy (review 90: the folder shown was
            # the person's, whose copy holds minds the agent login was never granted)
            conninfo, _, folder = _cache(agent_url, project_dir)
            out["local_folder"] = str(folder)
        if url == recorded and out["pin"] != "agrees":
            # this folder's vault, refused at every open: not contacted here either (it may be an agent's server;
            # an unpinned folder's too: review 8's `team status` reached the server an agent wrote into team.toml)
            return out | {"online": False, "error": f"not contacted: the team server pin {out['pin']}",
                          "writes": "refused (team.toml names a server no person confirmed here)"}
    try:
        store = PgStore(conninfo, project, folder=folder if folder.is_dir() else None, readonly=True,
                        role="agent" if agent else None)
    except StoreError as exc:
        pos = _local_position(folder)
        return out | {"online": False, "error": str(exc), "index_synced_at": pos.get("synced_at"),
                      "index_age": copy_age(pos.get("synced_at")), "writes": "refused (offline)",
                      "index_copy": has_copy(folder), **_copy_state(folder)}
    try:
        info = store.server_info()
        if recorded is not None:  # the folder's current join's rows: this machine's of an earlier join left out, said
            joined = (team_cache_dir(vault_dir, *_split(u, project_dir)) for u in (recorded, agent_url) if u)
            current = [folder, *joined]
            info["machines"], earlier, apart = current_join(info["machines"], vault_dir / TEAM_DIRNAME, current,
                                                            project)
            out |= {"earlier_joins": earlier} if earlier else {}
            out |= {"other_logins_rows": apart} if apart else {}
        if agent_url is not None and url == recorded:  # the server's verdict, before calling it the agent's own
            out["agent_login"] = _agent_login_said(recorded, agent_url, project_dir, project,
                                                   _agent_verdict(conninfo, project, agent_url))
        lag = store.outbox.lag()
        return out | {"online": True, "location": store.location, "schema_version": store.schema_version,
                      **info, "index_cursor": lag["cursor"], "index_synced_at": lag["synced_at"],
                      "index_age": copy_age(lag["synced_at"]), "index_behind": lag["behind"],
                      "index_copy": has_copy(folder), **_copy_state(folder)}
    finally:
        store.close()


def _copy_state(folder: Path) -> dict[str, Any]:
    """When this machine's offline copy (``copy.db``) last synced, whether it is one to read (``copy``: ok, damaged and
    set aside, being rebuilt, none yet) and whether its syncs are blocked now (review 33: a process holding its lock,
    an agent's too, keeps it at what it held, a purged record included)."""
    from synapse_nb.store.postgres.copy import COPY_LOCK, lock_held, synced_at
    from synapse_nb.store.postgres.copyfile import health

    # a damaged copy is set aside first (with its feed position): never called fresh (review 85)
    said = health(folder) if folder.is_dir() else None
    at = synced_at(folder)
    out: dict[str, Any] = {"copy_synced_at": at, "copy_age": copy_age(at), "copy": said or "ok"}
    if folder.is_dir() and lock_held(folder):
        out["copy_sync"] = (f"blocked: another process holds {folder / COPY_LOCK} (`fuser` names it), so the copy "
                            "stays as it was, deleted and purged records included, until that process ends")
    return out


def _agent_login_said(url: str, agent_url: str | None, project_dir: Path, project: str,
                      verdict: str = "not checked: the server was not asked") -> str:
    """What ``team status`` says of the login agent surfaces in the folder use (review 30): the agent's own only
    when the server's check (``verdict``, :func:`_agent_verdict`) passed it (review 33)."""
    if agent_url is not None:
        named = server_identity(agent_url, project_dir)
        if verdict.startswith("passed"):
            return (f"{named} (the agent's own login, checked on the server: an agent's shell, the MCP server, the "
                    "hooks and open_vault(actor='agent') here connect as it, never as the person)")
        if verdict.startswith("refused"):
            return (f"{named}: NOT an agent's own login, the server check {verdict}; agent surfaces here connect as "
                    "it: set the agent's own login with synapse-nb team agent-login URL (docs/team.md, \"An agent's "
                    "own login\")")
        return (f"{named} (named as the agent's own login; {verdict}): agent surfaces here connect as it")
    person = login_of(server_identity(url, project_dir)) or "(your Unix user's name)"
    return (f"none: agent surfaces here (an agent's shell, the MCP server, the hooks, open_vault(actor='agent')) "
            f"log in as the person, {person}, and only SET ROLE {project}_agent; any code the agent runs can "
            "use the same URL and password file (~/.pgpass) and skip SET ROLE, with the person's rights. Give the "
            "agent its own login: synapse-nb team agent-login postgresql://AGENT_LOGIN@host:port/database?project="
            f"{project}, and keep the person's password where the agent's process cannot read it (docs/team.md, "
            "\"An agent's own login\")")


def start_dev_server(folder: str | Path | None = None, *, project_url: bool = True) -> dict[str, Any]:
    """Start a throwaway PostgreSQL on 127.0.0.1 (trust authentication: for trying things out and tests only)
    in ``folder`` (a new folder under ``/tmp`` by default), create this repository's project in it, and leave
    it running. Returns the URL to use and the folder (stop it with :func:`stop_dev_server`)."""
    require_psycopg()
    from synapse_nb.store.postgres.server import PgServer

    srv = PgServer.launch(folder)
    url = srv.url
    info = init(url) if project_url else {}
    if info:
        url = f"{url}?project={info['project']}"
    return {"url": url, "folder": str(srv.base), "seconds": round(srv.initdb_seconds + srv.start_seconds, 2),
            "project": info.get("project")}


def stop_dev_server(folder: str | Path, *, keep: bool = False) -> None:
    """Stop the dev server in ``folder`` and (unless ``keep``) delete it."""
    require_psycopg()
    from synapse_nb.store.postgres.server import PgServer, find_bindir

    base = Path(folder)
    if not (base / "data").is_dir():
        raise ValidationError(f"{base} holds no dev server (no data/ folder)")
    PgServer(base=base, port=0, bindir=find_bindir()).stop()
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
