"""``synapse-nb index``: check and rebuild the retrieval index (a cache of the vault's system of record)."""

from __future__ import annotations

from typing import Annotated

import typer

from synapse_nb.cli._common import PROG, Group, JsonOpt, echo_json, group_help, open_vault_for
from synapse_nb.render import plural

__all__ = ["index_app"]


index_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Maintain the retrieval index (a cache rebuilt from the vault: its SQLite file, or a team vault's server).",
    "synapse-nb index check --repair", "synapse-nb index rebuild"))


@index_app.command("rebuild")
def index_rebuild(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Rebuild the retrieval index from the vault (nothing is lost: the index is a cache).

    A local vault's index is rebuilt from its SQLite file; a team vault's (this machine's offline copy) from the
    team server, through this login, so it holds what this login may read. Every semantic table is removed too:
    the next recall with the semantic channel embeds the whole vault again (e5-small: about 10 records a second on
    one busy core; wordllama: thousands a second), in steps under an agent hook's time limit. For drift,
    ``index check --repair`` is the cheaper fix: it re-embeds only the rows it finds stale.

    Examples:

        synapse-nb index rebuild
    """
    v = open_vault_for(ctx)
    n = v.index.rebuild()
    if as_json:
        echo_json({"indexed": n})
    else:
        typer.echo(f"indexed {plural(n, 'record')}")


@index_app.command("check")
def index_check(
    ctx: typer.Context,
    repair: Annotated[bool, typer.Option("--repair", help="Fix the drift found.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Compare the index with the store (missing, stale, extra ids); exit 1 when it drifted and was not repaired.

    An index not built yet (a new vault: it is built on first use) is not drift: exit 0. A semantic table that
    cannot be read (``broken``) is reported (exit 1); --repair removes it, and the next recall with the semantic
    channel builds it again from the vault. A semantic row whose columns differ from the vault's, or whose vector is
    all zeros, is stale; --repair drops it and the next recall with the channel embeds it again. --repair always
    rewrites the whole index folder, so no deleted record's text is left in it; a deleted record an older version of
    the index still holds is reported (``held``) until then.

    Examples:

        synapse-nb index check

        synapse-nb index check --repair --json
    """
    v = open_vault_for(ctx)
    rep = v.index.check(repair=repair)
    out = {"ok": bool(rep.ok), "built": bool(rep.built), "repaired": bool(repair and not rep.ok),
           "missing": list(rep.missing), "stale": list(rep.stale), "extra": list(rep.extra),
           "broken": list(rep.broken), "held": list(rep.held)}
    if as_json:
        echo_json(out)
    else:
        for name in rep.broken:
            typer.echo(f"semantic table {name} cannot be read: removed (the next recall with the semantic channel "
                       "builds it again from the vault)" if repair else
                       f"semantic table {name} cannot be read (recall answers from BM25 without it); remove it with: "
                       f"{PROG} index check --repair (or {PROG} index rebuild), and the next recall with the semantic "
                       "channel builds it again from the vault")
        if not rep.built:
            typer.echo("index not built yet (it is built on first use): built it now" if repair else
                       f"index not built yet (it is built on first use); to build it now: {PROG} index rebuild")
        elif rep.missing or rep.stale or rep.extra:
            typer.echo(f"index drift: {len(rep.missing)} missing, {len(rep.stale)} stale, {len(rep.extra)} extra"
                       + (" (repaired)" if repair else f" (fix it with: {PROG} index check --repair)"))
        if rep.built and rep.held:  # review 91: a deletion's text in an older version's files
            typer.echo(f"index folder holds {len(rep.held)} deleted records in older versions of its tables "
                       + ("(scrubbed)" if repair else "(their text is in its files until the scrub: the next sync of a "
                          f"team vault, a person's next deletion, or {PROG} index check --repair)"))
        elif rep.built and not (rep.missing or rep.stale or rep.extra or rep.broken):
            typer.echo("index ok: it matches the store")
    if not rep.ok and not repair:
        raise typer.Exit(1)
