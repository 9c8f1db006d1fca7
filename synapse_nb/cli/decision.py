"""``synapse-nb decision``: log design decisions with their rationale, list and search them."""

from __future__ import annotations

from typing import Annotated

import typer

from synapse_nb.cli._common import (
    TAGS_HELP,
    Group,
    JsonOpt,
    LimitOpt,
    People,
    SourceOpt,
    filters,
    group_help,
    limit_arg,
    none_found,
    open_vault_for,
    print_record,
    print_records,
)
from synapse_nb.provenance import inline

__all__ = ["decision_app"]


decision_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Log design decisions with their rationale.",
    'synapse-nb decision log "Use SQLite WAL mode" --rationale "Readers never block writers"',
    "synapse-nb decision list"))


@decision_app.command("log")
def decision_log(
    ctx: typer.Context,
    decision: Annotated[str, typer.Argument(help="The decision, in one sentence.")],
    rationale: Annotated[str | None, typer.Option("--rationale", "-r", help="Why.")] = None,
    tags: Annotated[str | None, typer.Option("--tags", "-t", help=TAGS_HELP)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Log a design decision (with the current branch and commit).

    Examples:

        synapse-nb decision log "Use SQLite WAL mode" --rationale "Readers never block writers" --tags storage,sqlite
    """
    v = open_vault_for(ctx)
    d = v.decide(decision, rationale=rationale, tags=tags)
    print_record(d, as_json, f"logged {d.id} {inline(d.decision)}")


@decision_app.command("list")
def decision_list(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Option("--search", "-s", help="Full-text search.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only decisions with this tag.")] = None,
    source: SourceOpt = None,
    limit: LimitOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """List decisions: people's first, then agents', each newest first (or best match first with --search).

    A person's decision is never pushed out of the limit by agents' newer ones; a line on stderr says how many the
    limit left out.

    Examples:

        synapse-nb decision list

        synapse-nb decision list --source user

        synapse-nb decision list --tag storage --json
    """
    v = open_vault_for(ctx)
    read: int | None = None
    if query is None and tag is None:
        found = v.decisions.list()
    else:
        read = People.search_read(limit_arg(limit), source)
        found = v.decisions.search(query or "", tag=tag, limit=read)
    shown = People.of(found, limit_arg(limit), "decision", "decisions", source, read=read)
    empty = ""
    if not shown.records and not as_json:
        empty = none_found(v.decisions.count(), "decision", "decisions",
                           "no decisions" + filters(query, tag, source=source))
    print_records(shown.records, as_json, empty, more=shown.more)
