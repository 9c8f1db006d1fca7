"""The project commands: ``synapse-nb demo``, ``synapse-nb init`` and ``synapse-nb mcp``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from synapse_nb.cli._common import PROG, state

__all__ = ["demo", "init", "mcp_serve"]


def demo(
    keep: Annotated[bool, typer.Option("--keep",
                                       help="Keep the throwaway vault folder and print where it is.")] = False,
) -> None:
    """A one-minute tour in a throwaway vault: checkpoint, decision, memory, lesson, recall.

    Nothing outside a temporary folder is touched.

    Examples:

        synapse-nb demo

        synapse-nb demo --keep
    """
    from synapse_nb.demo import run_demo  # here: the demo opens a vault (the store and the kinds)

    run_demo(keep=keep)


def init(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="Project folder or vault folder (default: --vault, else the "
                                                    "current folder). It must exist.")] = None,
) -> None:
    """Create the vault for a project: .synapse/ at the git root, or in the folder outside git (idempotent).

    Only in an existing folder (missing folders are never created). The vault folder ignores itself in
    git (its .gitignore holds '*'); keep memory in git on purpose with 'synapse-nb memory export'.
    Reading commands never create a vault; writing ones (remember, checkpoint create, ...) do, like this.

    Examples:

        synapse-nb init

        synapse-nb init ~/project

        synapse-nb --vault ~/project init
    """
    from synapse_nb.vault import VaultSession  # here: the store and the kinds load only when a command runs

    st = state(ctx)
    with VaultSession(path if path is not None else st.vault, mind=st.mind, actor="user", readonly=False,
                      surface="cli") as session:
        v = session.write()
        created = session.notice("created")  # init's answer, on stdout
        typer.echo(created.text if created is not None else f"the vault already exists at {v.path}")
        st_git = v.status().git_warning
    if st_git:
        typer.echo(f"{PROG}: {st_git}", err=True)


def mcp_serve(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(
        help="Project folder (default: --vault, else the current folder).")] = None,
    hooks: Annotated[bool, typer.Option(
        "--hooks", help="The agent's harness runs the synapse-nb hooks (synapse-nb agent install claude-code "
                        "registers the server so): the agent is told the approved lessons, the checkpoint and each "
                        "prompt's recall arrive by the hooks, so it does not fetch them again.")] = False,
) -> None:
    """Serve the vault to an agent over MCP (stdio). The agent can only propose; you approve.

    Without --hooks the agent is told to fetch the approved lessons and the checkpoint at session start and to
    recall on every turn; with --hooks, that the hooks give it those, and to recall only for what a prompt did not
    name (it still checkpoints, logs decisions and episodes and proposes facts).

    Examples:

        synapse-nb mcp

        synapse-nb mcp --hooks

        synapse-nb --mind work mcp ~/project
    """
    from synapse_nb.mcp.server import serve  # here: the MCP SDK (and the recall stack) load only to serve
    from synapse_nb.vault import find_vault_dir  # here: the store and the kinds load only when a command runs

    st = state(ctx)
    where = find_vault_dir(path if path is not None else st.vault)[0]  # a mistyped folder stops here, before serving
    if sys.stdin.isatty():  # a person ran it at a terminal (a client pipes stdin): it waited there, silent (review 68)
        typer.echo(f"{PROG} MCP server (stdio) for vault {where}: configure your client as in docs/agents.md; "
                   "Ctrl-C to stop", err=True)  # stderr: stdout is the protocol's
    serve(path if path is not None else st.vault, mind=st.mind, hooks=hooks)
