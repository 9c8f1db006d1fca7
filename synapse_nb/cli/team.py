"""``synapse-nb team``: a team vault on PostgreSQL (init, join, status, trust, agent-login, a throwaway dev
server)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from synapse_nb.cli._common import (
    Group,
    JsonOpt,
    YesOpt,
    cli_actor,
    echo_json,
    fail,
    group_help,
    print_mapping,
    require_human_here,
    state,
)

__all__ = ["team_app"]

team_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Share one vault per repository on a PostgreSQL server (people, agents, machines; see docs/team.md).",
    "synapse-nb team dev-server", "synapse-nb team init postgresql://me@db:5432/team?project=acme",
    "synapse-nb team join postgresql://me@db:5432/team?project=acme --from .synapse",
    "synapse-nb team agent-login postgresql://agent_me@db:5432/team?project=acme",
    "synapse-nb --vault postgresql://me@db:5432/team?project=acme team status"))

UrlArg = Annotated[str, typer.Argument(metavar="URL", help=(
    "postgresql://user@host:port/database?project=NAME (project: one per repository; default: the repository's "
    "folder name)."))]


def _needs_team_extra() -> None:
    """Every team command's first step: without psycopg (the [team] extra) it stops with one line naming the extra
    (review 78: five of them ended in ModuleNotFoundError)."""
    from synapse_nb.team_extra import require_psycopg

    require_psycopg()


def _url(ctx: typer.Context, url: str | None, *, required: bool = True) -> str | None:
    """The team vault: URL, else --vault / SYNAPSE_HOME, else the one this folder's .synapse/team.toml records."""
    from synapse_nb.team import recorded_url

    if url and not url.lower().startswith(("postgresql://", "postgres://")):  # review 78: a URL that is none
        fail(f"{url!r} is not a postgresql:// URL; give postgresql://user@host:port/database?project=NAME "
             "(postgres:// too)", 2)
    url = url or state(ctx).vault or os.environ.get("SYNAPSE_HOME", "").strip() or recorded_url()
    if not url or not url.lower().startswith(("postgresql://", "postgres://")):
        if not required:
            return None
        fail("name the team vault: give URL, or --vault / SYNAPSE_HOME set to postgresql://..., or run `synapse-nb "
             "team join URL` here once (it records the URL in .synapse/team.toml)", 2)
    return url


@team_app.command("init")
def team_init(
    url: UrlArg,
    human: Annotated[list[str] | None, typer.Option(
        "--human", metavar="LOGIN", help="An existing login role to make a human of the project (repeatable).")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", metavar="LOGIN",
        help="An existing login role to make an agent of the project (repeatable).")] = None,
    mind: Annotated[list[str] | None, typer.Option(
        "--mind", metavar="NAME", help=("The minds the --agent logins may see (repeatable; default: every mind, "
                                        "'*'). Change it later with `team grant`."))] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create the project's schema and database roles, or upgrade them; safe to run again (idempotent).

    Migrations run in one transaction under an advisory lock, so two machines running it at once are fine.
    Needs a role that may create roles and schemas (a superuser, or CREATEROLE + CREATE on the database).

    Examples:

        synapse-nb team init postgresql://admin@db:5432/team?project=acme --human alice --agent ci_bot
    """
    _needs_team_extra()
    from synapse_nb.team import init

    out = init(url, humans=tuple(human or ()), agents=tuple(agent or ()), minds=tuple(mind or ("*",)))
    if as_json:
        echo_json(out)
        return
    change = ("already at" if out["version_before"] == out["version"] else
              f"schema {out['version_before']} ->")
    typer.echo(f"project {out['project']}: {change} version {out['version']}; roles "
               f"{out['roles']['human']} (people), {out['roles']['agent']} (agents), {out['roles']['owner']} (owner)")


@team_app.command("grant")
def team_grant(
    url: UrlArg,
    login: Annotated[str, typer.Argument(metavar="ROLE", help=(
        "A login role (or a project's group role, such as acme_human) whose minds to change."))],
    mind: Annotated[str, typer.Option("--mind", metavar="NAME", help="The mind ('*': every mind).")],
    revoke: Annotated[bool, typer.Option("--revoke", help="Take the mind away instead of granting it.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Let a role see and write one mind of the team vault (or no longer: --revoke); the database enforces it.

    A login sees the minds granted to it or to a role it belongs to. `team init` grants people (the project's
    _human role) every mind and agents none (its --agent logins get every mind unless --mind is given). Needs the
    administrator's URL (the one `team init` ran with).

    Examples:

        synapse-nb team grant postgresql://admin@db:5432/team?project=acme agent_a --mind planner

        synapse-nb team grant postgresql://admin@db:5432/team?project=acme agent_a --mind '*' --revoke
    """
    _needs_team_extra()
    from synapse_nb.team import grant

    out = grant(url, login, mind, revoke=revoke)
    if as_json:
        echo_json(out)
        return
    typer.echo(f"{out['login']} sees in project {out['project']}: " + (", ".join(out["minds"]) or "no mind"))


@team_app.command("join")
def team_join(
    ctx: typer.Context,
    url: UrlArg,
    source: Annotated[str, typer.Option("--from", metavar="PATH", help=(
        "The local vault to copy in (its folder, or a project folder).")) ] = ".synapse",
    agent_url: Annotated[str | None, typer.Option("--agent-url", metavar="URL", help=(
        "The agent's own database login on the same server (postgresql://AGENT_LOGIN@host:port/database?project="
        "NAME): every agent surface here (an agent's shell, MCP, hooks) connects as it, never as you. A person's "
        "act: refused in an agent's shell. Default: the agent login pinned here before, if any."))] = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy a local vault into the team vault in one transaction (all or nothing; joining again changes nothing).

    A local vault that came with the repository (borrowed) whose approved lessons nobody here approved is refused,
    nothing copied or moved: approve them here (lessons review) or adopt it (lessons adopt), then join.

    With --agent-url, agent surfaces in this folder log in as the agent's own login (see `team agent-login`);
    without one, they log in as you and only SET ROLE to the agent role, which code the agent runs can skip
    whenever it can read your password (docs/team.md, "An agent's own login").

    Examples:

        synapse-nb team join postgresql://alice@db:5432/team?project=acme --from .synapse

        synapse-nb team join postgresql://alice@db:5432/team?project=acme \\
            --agent-url postgresql://agent_alice@db:5432/team?project=acme
    """
    _needs_team_extra()
    from synapse_nb.team import join

    if cli_actor(state(ctx).actor) != "user":  # the core refuses an agent's environment again (team.join)
        fail("joining a team vault is a person's act (it writes .synapse/team.toml, which decides the vault every "
             "surface here opens, and sets the local vault aside) and this shell belongs to an agent (or the CLI "
             "acts as the agent); a person runs `synapse-nb team join URL` (with --agent-url URL for the agent's own "
             "login) in their own terminal")
    counts = join(url, source, agent_url=agent_url)
    if as_json:
        echo_json(counts.to_dict() | {"team_file": str(counts.team_file),
                                      "set_aside": None if counts.set_aside is None else str(counts.set_aside),
                                      "pinned": counts.pinned, "pinned_before": counts.pinned_before,
                                      "agent_login": counts.agent_login})
    else:
        typer.echo("imported " + (", ".join(f"{n} {k}" for k, n in counts.items()) or "nothing new"))
        if counts.claims:
            typer.echo(f"trusted (your local vault's): {counts.claims_text()}")
        if counts.borrowed:  # only lessons a person here approved (a join with others is refused)
            typer.echo("the local vault came with the repository (borrowed): every lesson it carried approved was "
                       "approved by you here, none only by whoever committed the vault")
        typer.echo(f"this folder's vault is now the team vault ({counts.team_file}): every synapse-nb command, magic, "
                   "widget and MCP server here uses it without SYNAPSE_HOME")
        if counts.pinned_before is not None:
            typer.echo(f"the team server pinned for this folder on this machine moved: {counts.pinned_before} -> "
                       f"{counts.pinned}")
        else:
            typer.echo(f"pinned the team server {counts.pinned} for this folder on this machine: a team.toml naming "
                       "another server is refused until you run `synapse-nb team trust`")
        if counts.agent_login is not None:
            typer.echo(f"agent surfaces here log in as the agent's own login: {counts.agent_login}")
        else:
            typer.echo("agent surfaces here (an agent's shell, MCP, hooks) log in as you and only SET ROLE to the "
                       "agent role: code the agent runs can skip it with your password file. Give the agent its own "
                       "login: synapse-nb team agent-login postgresql://AGENT_LOGIN@host:port/database?project=NAME "
                       "(docs/team.md, \"An agent's own login\")")
        if counts.set_aside is not None:
            typer.echo(f"the local vault database was renamed aside to {counts.set_aside} (kept; delete "
                       f"{counts.team_file} and rename it back to use the local vault again)")


@team_app.command("status")
def team_status(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Argument(
        metavar="[URL]", help="The team vault (default: --vault / SYNAPSE_HOME).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the server, the schema version, and this machine's index position and lag (or, offline, its age).

    In a folder whose .synapse/team.toml names the team vault, also the server pinned for it on this machine and
    whether team.toml agrees (pin: agrees, differs, none); a server that differs from the pin is not contacted.

    Exit 1 when the server cannot be reached (writes are refused until it is back) or is not contacted.

    Examples:

        synapse-nb team status postgresql://alice@db:5432/team?project=acme
    """
    _needs_team_extra()
    from synapse_nb.team import status

    out = status(str(_url(ctx, url)))
    if as_json:
        echo_json(out)
    else:
        print_mapping(out)
    if not out["online"]:
        raise typer.Exit(1)


@team_app.command("trust")
def team_trust(
    ctx: typer.Context,
    yes: YesOpt = False,
    other_login: Annotated[bool, typer.Option("--other-login", help=(
        "Pin, under --yes, a team.toml whose login (or agent login) is not yours as far as this machine can tell "
        "(your pins, PGUSER, your Unix user's name), on purpose. Without it that is refused under --yes.")) ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Accept the team server this folder's .synapse/team.toml names now: pin it for this folder on this machine.

    Every surface refuses a folder whose team.toml names another server than the one pinned here, or no pinned
    server (team join and team trust pin it; nothing pins on first use), since anything that can write the folder,
    an agent too, can rewrite team.toml. After a legitimate change of URL a person runs this: it shows the server
    (and the pinned one), and asks. A team.toml whose login is not yours (a teammate's) is said, and refused under
    --yes unless --other-login: each person joins with their own URL (`team join URL --agent-url AGENT_URL`).
    Human-only: refused in an agent's shell, and without a terminal unless --yes (nothing is asked then).

    Examples:

        synapse-nb team trust

        synapse-nb team trust --yes
    """
    _needs_team_extra()
    from synapse_nb.team import trust, trust_preview

    require_human_here(ctx, yes, "trusting a new team server")
    if state(ctx).vault or os.environ.get("SYNAPSE_HOME", "").strip():
        fail("team trust pins the server of the current folder's .synapse/team.toml; run it in that folder, "
             "without --vault or SYNAPSE_HOME", 2)
    seen = trust_preview()
    if not seen["agrees"] and not yes:
        person = "(none: agent surfaces use url, your login)"
        typer.echo(f"team.toml: {seen['team_file']}", err=True)
        typer.echo(f"  pinned now: {seen['pinned'] or '(none: no person has connected this folder yet)'}", err=True)
        typer.echo(f"  names:      {seen['named']}", err=True)
        if seen["pinned_agent"] != seen["named_agent"]:
            typer.echo(f"  agent login pinned now: {seen['pinned_agent'] or person}", err=True)
            typer.echo(f"  agent login named:      {seen['named_agent'] or person}", err=True)
        if seen["agent_check"] is not None:
            typer.echo(f"  agent login check:      {seen['agent_check']}", err=True)
            if seen["agent_check"].startswith("refused"):
                fail("nothing was pinned: the server refuses team.toml's agent login as an agent's own login; fix "
                     "agent_url in team.toml (or remove it), or set it with `synapse-nb team agent-login URL`")
        if seen["not_yours"]:  # a teammate's committed team.toml: pinning it makes you work as them (review 90)
            typer.echo(f"  NOT YOURS?   {seen['not_yours']}: pinned, every command here works as that login; each "
                       "person joins with their own: synapse-nb team join YOUR_URL --agent-url YOUR_AGENT_URL",
                       err=True)
        if not typer.confirm("pin the server (and agent login) team.toml names for this folder, from now on?",
                             default=False, err=True):
            fail("nothing was pinned")
        other_login = True  # the person saw it and said yes
    out = trust(expect=seen["named"], expect_agent=seen["named_agent"], other_login=other_login)
    if as_json:
        echo_json(out)
    elif not out["changed"]:
        typer.echo(f"already pinned for {out['folder']}: {out['named']}")
    else:
        typer.echo(f"pinned for {out['folder']}: {out['pinned'] or '(none)'} -> {out['named']}")
        if out["pinned_agent"] != out["named_agent"]:
            typer.echo(f"agent login: {out['pinned_agent'] or '(none)'} -> {out['named_agent'] or '(none: yours)'}")


@team_app.command("agent-login")
def team_agent_login(
    ctx: typer.Context,
    agent_url: Annotated[str | None, typer.Argument(metavar="[URL]", help=(
        "The agent's own login on this folder's team server: postgresql://AGENT_LOGIN@host:port/database?project="
        "NAME (same server, database and project as team.toml's url)."))] = None,
    remove: Annotated[bool, typer.Option("--remove", help=(
        "Remove the folder's agent login: agent surfaces log in as you again (and SET ROLE).")) ] = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Set the database login every agent surface in this folder connects with (team.toml's agent_url, pinned).

    An agent's shell, the MCP server, the hooks and open_vault(actor="agent") then log in as the agent's own login
    (a member of the project's agent role only: checked on the server), so no person's rights are in any connection
    the agent holds. Keep your own password where the agent's process cannot read it (another Unix user, a
    container): docs/team.md, "An agent's own login". Human-only: refused in an agent's shell, and without a
    terminal unless --yes. The agent cannot change it afterwards: a team.toml naming another agent login is refused
    until you run this or `team trust`.

    Examples:

        synapse-nb team agent-login postgresql://agent_alice@db:5432/team?project=acme

        synapse-nb team agent-login --remove
    """
    _needs_team_extra()
    from synapse_nb.team import agent_login

    require_human_here(ctx, yes, "setting the agent's database login")
    if (agent_url is None) == (not remove):
        fail("give the agent's URL (postgresql://AGENT_LOGIN@host:port/database?project=NAME), or --remove", 2)
    if state(ctx).vault or os.environ.get("SYNAPSE_HOME", "").strip():
        fail("team agent-login sets the agent login of the current folder's .synapse/team.toml; run it in that "
             "folder, without --vault or SYNAPSE_HOME", 2)
    out = agent_login(agent_url)
    if as_json:
        echo_json(out)
    elif out["agent_login"] is None:
        typer.echo(f"agent surfaces in {out['folder']} log in as you again (was {out['before'] or 'already so'}); "
                   "code the agent runs can skip SET ROLE with your password file")
    else:
        typer.echo(f"agent surfaces in {out['folder']} log in as {out['agent_login']} (pinned; was "
                   f"{out['before'] or 'your login'})")


@team_app.command("search-local")
def team_search_local(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most hits.")] = 10,
) -> None:
    """Search this machine's copy of the team vault without the server (works offline; marked STALE with its age).

    Examples:

        synapse-nb team search-local "how do we deploy"
    """
    _needs_team_extra()
    from synapse_nb.team import offline_search

    typer.echo(offline_search(query, mind=state(ctx).mind, k=limit, url=_url(ctx, None, required=False)))


@team_app.command("dev-server")
def team_dev_server(
    folder: Annotated[str | None, typer.Option("--dir", metavar="DIR", help=(
        "Folder for the server (default: a new folder under /tmp).")) ] = None,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the server in --dir and delete it.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Start a throwaway PostgreSQL on 127.0.0.1 with this repository's project, and print its URL.

    For trying the team vault out and for tests: trust authentication, no durability. Needs PostgreSQL's server
    binaries (Debian: apt-get install postgresql). Stop it with --stop --dir DIR.

    Examples:

        synapse-nb team dev-server --dir /tmp/synapse-dev

        synapse-nb team dev-server --stop --dir /tmp/synapse-dev
    """
    _needs_team_extra()
    from synapse_nb.team import start_dev_server, stop_dev_server

    if stop:
        if folder is None:
            fail("--stop needs --dir DIR (the folder the server runs in)", 2)
        stop_dev_server(folder)
        typer.echo(f"stopped and removed {folder}")
        return
    out = start_dev_server(folder)
    if as_json:
        echo_json(out)
        return
    typer.echo(out["url"])
    typer.echo(f"started in {out['seconds']}s in {out['folder']}; use it with: synapse-nb --vault '{out['url']}' "
               f"memory list; stop it with: synapse-nb team dev-server --stop --dir {out['folder']}", err=True)
