"""``synapse-nb agent`` (install the memory hooks into an agent's settings) and ``synapse-nb hook EVENT`` (what
those hooks run). The work is in :mod:`synapse_nb.agents`; this module parses and prints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from synapse_nb.cli._common import Group, JsonOpt, echo_json, fail, group_help, refuse_in_an_agents_shell, state

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.agents.claude_code import FileChange

__all__ = ["agent_app", "hook"]

agent_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Make an agent's memory loop a mechanism: hooks that recall on every prompt, checkpoint edits and restore "
    "after compaction.",
    "synapse-nb agent install claude-code", "synapse-nb agent status", "synapse-nb agent uninstall claude-code"))

AgentArg = Annotated[str, typer.Argument(metavar="AGENT", help="The agent: claude-code.")]
ScopeOpt = Annotated[str, typer.Option(
    "--scope", metavar="project|local|user",
    help="Which settings file: project (.claude/settings.json, committed), local (.claude/settings.local.json, "
         "yours only) or user (~/.claude/settings.json, every project).")]
ProjectOpt = Annotated[str | None, typer.Option(
    "--project", metavar="PATH", help="The project folder (default: the git work tree of the current folder).")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print the diff of each file and change nothing.")]
NoMcpOpt = Annotated[bool, typer.Option("--no-mcp", help="Leave the project's .mcp.json alone.")]


def _agent(name: str) -> None:
    from synapse_nb.agents.claude_code import AGENTS

    if name.strip().lower() not in AGENTS:
        fail(f"agent {name!r} is not known; use one of: {', '.join(AGENTS)} (other agents: see docs/agents.md, "
             "'Other agents', for the hook lines to add by hand)", 2)


def _report(changes: list[FileChange], dry_run: bool, verb: str) -> None:
    from synapse_nb.agents.claude_code import apply_changes

    if dry_run:
        diffs = [ch.diff() for ch in changes if ch.changed]
        typer.echo("".join(diffs).rstrip("\n") if diffs else f"nothing to {verb}: the files are already as wanted")
        return
    backups = apply_changes(changes)
    for ch in changes:
        label = "the MCP server" if ch.what == "mcp" else "the synapse-nb hooks"
        if not ch.changed:
            typer.echo(f"{ch.path}: {label} already {'installed' if verb == 'install' else 'absent'}; nothing changed")
        elif ch.after is None:
            typer.echo(f"{ch.path}: removed (it held only {label})")
        else:
            typer.echo(f"{ch.path}: {'added' if verb == 'install' else 'removed'} {label}")
    for b in backups:
        typer.echo(f"backup of the previous content: {b}")


def _person_only(action: str, dry_run: bool) -> None:
    """Refuse ``action`` in an agent's environment (a dry run only shows): the hooks and the MCP entry are commands
    the harness runs in every later session, and ``--command`` names any (review 10: an agent's shell wrote `curl ...
    | sh; synapse-nb` into the user-wide Claude Code settings)."""
    if not dry_run:
        refuse_in_an_agents_shell(f"{action} is for a human only: it writes commands an agent's harness runs in every "
                                  "later session")


@agent_app.command("install")
def agent_install(
    ctx: typer.Context,
    agent: AgentArg,
    scope: ScopeOpt = "project",
    project: ProjectOpt = None,
    command: Annotated[str | None, typer.Option(
        "--command", metavar="CMD", help="How the hooks run synapse-nb (default: the absolute path of the synapse-nb "
                                         "script, else this Python with -m synapse_nb).")] = None,
    no_mcp: NoMcpOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Install the memory hooks into Claude Code's settings, merged with what is there (idempotent, with a backup).

    SessionStart gives the approved lessons and the latest checkpoint, UserPromptSubmit recalls what is new for
    each prompt, PreCompact saves a checkpoint, PostToolUse counts edits for automatic checkpoints and SessionEnd
    logs the session as an episode. The project scope also registers the MCP server in .mcp.json; for the
    others the claude mcp add line is printed.

    Examples:

        synapse-nb agent install claude-code

        synapse-nb agent install claude-code --scope local --dry-run

        synapse-nb --mind work agent install claude-code --scope user
    """
    from synapse_nb.agents.claude_code import SHARED, install, mcp_add_command, resolved_command
    from synapse_nb.vault import find_vault_dir

    _agent(agent)
    _person_only("installing an agent's hooks", dry_run)
    st = state(ctx)
    if command is None:  # an absolute path: Claude Code may start without this venv on its PATH (review 68)
        command, warning = resolved_command(scope)
        if warning is not None:
            typer.echo(f"{'note' if warning.startswith(SHARED) else 'warning'}: {warning}", err=True)
    changes = install(scope, project=project, command=command, mind=st.mind, mcp=not no_mcp)
    _report(changes, dry_run, "install")
    if scope != "project" and not no_mcp:
        typer.echo(f"register the MCP server too: {mcp_add_command(scope, command, st.mind)}")
    if not dry_run:
        vault_dir, _ = find_vault_dir(project)
        if not (vault_dir / "synapse.db").is_file():
            typer.echo(f"note: no vault yet at {vault_dir}; the hooks stay silent until there is one "
                       "(synapse-nb init)", err=True)


@agent_app.command("uninstall")
def agent_uninstall(
    agent: AgentArg,
    scope: ScopeOpt = "project",
    project: ProjectOpt = None,
    no_mcp: NoMcpOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Remove the synapse-nb hooks (and the project's MCP entry), leaving every other setting as it is.

    Examples:

        synapse-nb agent uninstall claude-code

        synapse-nb agent uninstall claude-code --scope user --dry-run
    """
    from synapse_nb.agents.claude_code import uninstall

    _agent(agent)
    _person_only("uninstalling an agent's hooks", dry_run)
    _report(uninstall(scope, project=project, mcp=not no_mcp), dry_run, "uninstall")


@agent_app.command("status")
def agent_status(
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show where the synapse-nb hooks are installed (each scope's settings file) and whether .mcp.json has the server.

    Examples:

        synapse-nb agent status

        synapse-nb agent status --json
    """
    from synapse_nb.agents.claude_code import status

    scopes, mcp, mcp_notes = status(project=project)
    if as_json:
        echo_json({"agent": "claude-code", "scopes": [s.to_dict() for s in scopes], "mcp_json": mcp,
                   "mcp_notes": list(mcp_notes)})
        return
    for s in scopes:
        if s.error:
            typer.echo(f"{s.scope:8} {s.path}: unreadable: {s.error}")
        elif s.events:
            typer.echo(f"{s.scope:8} {s.path}: hooks for {', '.join(s.events)}")
        else:
            typer.echo(f"{s.scope:8} {s.path}: {'no synapse-nb hooks' if s.exists else 'no file'}")
        for note in s.notes:  # a hook command that runs nothing, or only while PATH has it (review 68)
            typer.echo(f"         note: {note}")
    typer.echo(f"mcp      .mcp.json: {'registers synapse-nb' if mcp else 'no synapse-nb server'}")
    for note in mcp_notes:
        typer.echo(f"         note: {note}")


def hook(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(
        metavar="EVENT", help="session-start, prompt, pre-compact, post-tool, stop or session-end (Claude Code's "
                              "SessionStart, UserPromptSubmit, PreCompact, PostToolUse, Stop, SessionEnd too).")],
    session: Annotated[str | None, typer.Option("--session", metavar="ID", help="The session id (instead of "
                                                "session_id on stdin).")] = None,
    text: Annotated[str | None, typer.Option("--text", help="The prompt (instead of prompt on stdin).")] = None,
    file: Annotated[list[str] | None, typer.Option("--file", metavar="PATH", help="A file the edit changed "
                                                   "(post-tool; repeat for more).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="session-start: startup, resume, clear or "
                                               "compact; pre-compact: manual or auto.")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="auto|text|json", help="json: Claude Code's "
                                     "hookSpecificOutput; text: plain; auto: json when stdin named its "
                                     "event.")] = "auto",
) -> None:
    """Run one agent hook: reads the event JSON on stdin, prints what the agent should be given (or nothing).

    Always exits 0; a problem (no vault, bad input, a locked database) is one line on stderr and empty stdout.
    It acts as the agent and never creates a vault. Without --text/--session/--file, the event is read from
    stdin as JSON (session_id, prompt, source, cwd, tool_name, tool_input).

    Examples:

        echo '{"session_id": "s1", "prompt": "how do we deploy?"}' | synapse-nb hook UserPromptSubmit

        synapse-nb hook prompt --session s1 --text "how do we deploy?"

        synapse-nb hook post-tool --session s1 --file src/app.py
    """
    from synapse_nb.agents.hooks import run

    st = state(ctx)
    args = [event, *(["--session", session] if session is not None else []),
            *(["--text", text] if text is not None else []), *(a for f in file or [] for a in ("--file", f)),
            *(["--source", source] if source is not None else []), "--format", fmt]
    run(args, vault=st.vault, mind=st.mind)
