"""``synapse-nb checkpoint``: save and restore work state (per git branch)."""

from __future__ import annotations

from typing import Annotated

import typer

from synapse_nb.cli._common import (
    PROG,
    Group,
    JsonOpt,
    LimitOpt,
    People,
    SourceOpt,
    echo_json,
    fail,
    filters,
    group_help,
    limit_arg,
    open_vault_for,
    print_record,
    print_records,
    record_json,
)
from synapse_nb.errors import NoCheckpointError
from synapse_nb.provenance import inline, label_text
from synapse_nb.render import plural

__all__ = ["checkpoint_app"]


checkpoint_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Save and restore work state (per git branch).",
    'synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py', "synapse-nb checkpoint restore"))


@checkpoint_app.command("create")
def checkpoint_create(
    ctx: typer.Context,
    doing: Annotated[str, typer.Option("--doing", "-d", help="What you are working on (required).")],
    path: Annotated[str | None, typer.Argument(
        help="Project folder (default: --vault, else the current folder).")] = None,
    files: Annotated[str | None, typer.Option("--files", "-f", help="Changed files, comma-separated.")] = None,
    next_step: Annotated[str | None, typer.Option("--next-step", help="What to do next.")] = None,
    blockers: Annotated[str | None, typer.Option("--blockers", help="What is in the way.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Save the current work state (branch and commit are read from git).

    Examples:

        synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py,tests/test_auth.py \
            --next-step "Run pytest"

        synapse-nb checkpoint create ~/project --doing "Migrating to WAL" --blockers "CI is red"
    """
    v = open_vault_for(ctx, path)
    c = v.checkpoint(doing, files=files, next_step=next_step, blockers=blockers, origin="cli")
    print_record(c, as_json, f"saved {c.id} [{label_text(c.branch or 'no branch')}] {inline(c.doing)}")


@checkpoint_app.command("list")
def checkpoint_list(
    ctx: typer.Context,
    branch: Annotated[str | None, typer.Option(
        "--branch", "-b", help="Only this branch (default: every branch).")] = None,
    source: SourceOpt = None,
    limit: LimitOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """List checkpoints: people's first, then agents', each newest first.

    A person's checkpoint is never pushed out of the limit by agents' newer ones; a line on stderr says how many
    the limit left out.

    Examples:

        synapse-nb checkpoint list

        synapse-nb checkpoint list --branch main --json
    """
    v = open_vault_for(ctx)
    shown = People.of(v.checkpoints.list(branch=branch), limit_arg(limit), "checkpoint", "checkpoints", source)
    recs = shown.records
    total = 0 if recs or as_json else v.checkpoints.count()
    where = f" on branch {branch}" if branch is not None else ""
    empty = f"no checkpoints{filters(None, source=source)}{where}" if total else "no checkpoints yet"
    if total and source is None:  # none on that branch, so every one is on another branch
        empty += f" ({plural(total, 'checkpoint')} on other branches)"
    elif total:
        empty += f" ({plural(total, 'checkpoint')} in all)"
    print_records(recs, as_json, empty, more=shown.more)


@checkpoint_app.command("restore")
def checkpoint_restore(
    ctx: typer.Context,
    which: Annotated[str, typer.Argument(
        metavar="latest|ID", help="'latest' (current branch) or an id / unique prefix.")] = "latest",
    as_json: JsonOpt = False,
) -> None:
    """Print the restore pack of a checkpoint: what you were doing, files, next step, blockers.

    'latest' is the newest saved on purpose (not by an automatic checkpoint); the checkpoints saved after it are
    listed under it.

    Examples:

        synapse-nb checkpoint restore

        synapse-nb checkpoint restore ckp_3f9a --json
    """
    v = open_vault_for(ctx)
    try:
        c = v.checkpoints.restore(which)
    except NoCheckpointError as exc:
        fail(exc.with_remedy(f'{PROG} checkpoint create --doing "what you are working on"'))
    resume = v.checkpoints.resume(c)  # with what was saved after it (the automatic checkpoints since: review 86)
    if as_json:
        persons = record_json(resume.persons) if resume.persons is not None else None  # review 87
        echo_json({**record_json(c), "restore_text": resume.body, "later": resume.later, "agents": resume.agents,
                   "since": [record_json(x) for x in resume.since], "persons": persons})
    else:
        typer.echo(resume.text)  # with the legend when an agent's line is in it
