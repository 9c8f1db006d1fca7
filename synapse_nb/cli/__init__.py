"""``synapse-nb``: the command line, a thin shell over the vault (the human user's, or in an agent's shell the agent's).

Every command parses its arguments, calls the core (:mod:`synapse_nb.vault`), renders the result
and turns library errors into CLI errors at this edge only:

- exit code 0: done; 1: the operation was refused or failed (a :class:`~synapse_nb.errors.SynapseError`,
  printed as ONE line on stderr, never a traceback); 2: usage error (bad arguments).
- ``--json`` on every reading command prints stable field names (records' ``to_dict()`` with ``provenance``
  first and every text quoted on one line; a list is a
  JSON array of records, each with its full ``id``).

One module per command group: :mod:`~synapse_nb.cli.checkpoint`, :mod:`~synapse_nb.cli.decision`,
:mod:`~synapse_nb.cli.lessons`, :mod:`~synapse_nb.cli.memory` (and ``remember``),
:mod:`~synapse_nb.cli.recall`, :mod:`~synapse_nb.cli.git` (``hooks`` and ``watch``),
:mod:`~synapse_nb.cli.index`, :mod:`~synapse_nb.cli.gate`, :mod:`~synapse_nb.cli.team`,
:mod:`~synapse_nb.cli.project` (``demo``, ``init``, ``mcp``), :mod:`~synapse_nb.cli.agent` (``agent`` and ``hook``:
``python -m synapse_nb hook ...`` skips typer altogether, :func:`synapse_nb.agents.hooks.main`); the root app, error
handling and printing are in ``cli/_common.py``. This module assembles the command tree, in the order ``--help``
lists it.

Cold start matters: the command modules import only :mod:`typer` and the standard library at import
time (with :mod:`synapse_nb.errors` and :mod:`synapse_nb.render`, standard library only); the vault,
git watching, LanceDB, the eval code and the MCP SDK are imported inside the command that needs them.

Examples
--------
>>> from typer.testing import CliRunner
>>> from synapse_nb.cli import app
>>> CliRunner().invoke(app, ["--version"]).output.startswith("synapse-nb ")
True
"""

from __future__ import annotations

import typer

from synapse_nb.cli import (
    agent,
    checkpoint,
    decision,
    gate,
    git,
    index,
    lessons,
    memory,
    project,
    recall,
    settings,
    team,
)
from synapse_nb.cli import history as _history  # noqa: F401 - registers memory history, revert, purge, ...
from synapse_nb.cli._common import CREATING_COMMANDS, PROG, app
from synapse_nb.stdio import use_utf8

__all__ = ["CREATING_COMMANDS", "app", "main"]

# the command tree, in --help order: commands first, then the groups
app.command()(project.demo)
app.command()(project.init)
app.command()(memory.remember)
app.command()(git.watch)
app.command("mcp")(project.mcp_serve)
app.command("hook")(agent.hook)
app.add_typer(checkpoint.checkpoint_app, name="checkpoint")
app.add_typer(decision.decision_app, name="decision")
app.add_typer(lessons.lessons_app, name="lessons")
app.add_typer(memory.memory_app, name="memory")
app.add_typer(recall.recall_app, name="recall")
app.add_typer(git.hooks_app, name="hooks")
app.add_typer(index.index_app, name="index")
app.add_typer(gate.gate_app, name="gate")
app.add_typer(settings.settings_app, name="settings")
app.add_typer(team.team_app, name="team")
app.add_typer(agent.agent_app, name="agent")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``synapse-nb`` (and ``python -m synapse_nb``): run and return the exit code.

    >>> main(["--version"])  # doctest: +SKIP
    synapse-nb 0.1.0
    0
    """
    use_utf8()  # the same bytes whatever the locale: UTF-8 in and out (review 84; synapse_nb.stdio)
    cmd = typer.main.get_command(app)
    return int(cmd.main(argv, prog_name=PROG, standalone_mode=False) or 0)
