"""``synapse-nb memory history / revert / revisions / accept / reject / conflicts / resolve / purge / prune-history``:
memory that keeps its history (issue 30). Every decision here is a human's: the core refuses the agent actor, and
these commands refuse an agent's shell and, without a terminal, need ``--yes``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from synapse_nb.changes import MOST_PAIRS, PROPOSED_MARK
from synapse_nb.cli._common import (
    PROG,
    JsonOpt,
    YesOpt,
    echo_json,
    echo_legend,
    fail,
    limit_arg,
    open_vault_for,
    print_record,
    require_human_here,
)
from synapse_nb.cli.memory import memory_app
from synapse_nb.differences import LEGEND, changes
from synapse_nb.provenance import inline, mark, quoted
from synapse_nb.render import (
    from_now,
    shown_id,  # (review 41: an id as a reader shows it)
)

if TYPE_CHECKING:
    from synapse_nb.changes import Revision

__all__ = ["memory_accept", "memory_conflicts", "memory_history", "memory_prune_history", "memory_purge",
           "memory_reject", "memory_resolve", "memory_revert", "memory_revisions"]

#: What `memory history` shows of a version whose next entry holds no record of it (written with SQL: review 46).
UNKNOWN_VERSION = "(unknown: the next entry holds no record of it)"

CategoryOpt = Annotated[str | None, typer.Option("--category", "-c", help="The category, when several memories "
                                                 "share the key.")]


@memory_app.command("history")
def memory_history(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY|ID", help="A memory's key, id or id prefix (a deleted one too: "
                                       "its key or full id).")],
    category: CategoryOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every version of a memory: when, what, who (user / agent) through which surface, the digests before and after.
    Named by key, it also names the other memories of its category that held the key before it (deleted ones), by id.
    Versions an imported file supplied read "[from a file: ...]" (--json: "from_file": true): their time, actor and
    surface are what the file says.

    Examples:

        synapse-nb memory history deploy_procedure

        synapse-nb memory history mem_3f9a --json
    """
    v = open_vault_for(ctx)
    h = v.memories.history(key, category=category)
    filed = h.from_file()  # what an imported file says, not what this vault recorded (review 92)
    if as_json:
        echo_json(quoted([{**e.to_dict(), "content": getattr(h.record(e.version), "content", None)}
                          | ({"from_file": True} if e.version in filed else {}) for e in h]))
        if h.note:  # the listing stays a list; the note goes where a reader of the terminal sees it
            typer.echo(f"{PROG}: note: {h.note}", err=True)
        return
    versions = [(e, h.record(e.version), h.known(e.version)) for e in h]
    echo_legend([rec for _, rec, _ in versions])  # an agent's versions are its words, as in every listing
    for e, rec, known in versions:
        what = (f"{mark(rec)} {inline(getattr(rec, 'content', ''), 70)}" if rec is not None else "(deleted)"
                if known else UNKNOWN_VERSION)
        typer.echo(f"{e.line(from_file=e.version in filed)}  {what}")
    if h.note:  # other memories held the key before this one (review 91)
        typer.echo(f"note: {h.note}")


@memory_app.command("revert")
def memory_revert(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="ID|KEY", help="The memory (id, id prefix or key; a deleted one by "
                                       "its full id or key).")],
    to: Annotated[int, typer.Option("--to", help="The version to restore (see `memory history`).")],
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Restore an earlier version of a memory as a new change (human only). It comes back as that version was,
    verified only if that version was (verify it after reading it: `memory verify ID`).

    Examples:

        synapse-nb memory revert deploy_procedure --to 1
    """
    require_human_here(ctx, yes, "reverting a memory")
    m = open_vault_for(ctx).memories.revert(key, to=to)
    # a team vault: another person's verified version replaced is named, with the way back (as `remember` does)
    print_record(m, as_json, f"reverted {shown_id(m.id)} to version {to}: {m.summary_line()}"
                 + (f"\n{m.note}" if m.note else ""))
    if as_json and m.note:
        typer.echo(f"{PROG}: note: {m.note}", err=True)


@memory_app.command("revisions")
def memory_revisions(
    ctx: typer.Context,
    status: Annotated[str, typer.Option("--status", help="pending, accepted, rejected or all.")] = "pending",
    as_json: JsonOpt = False,
) -> None:
    """Agents' proposed changes to memories a human wrote or verified, waiting for a human (accept / reject).

    Examples:

        synapse-nb memory revisions

        synapse-nb memory revisions --status all --json
    """
    _listing(open_vault_for(ctx).memories.revisions(status=None if status == "all" else status), status,
             "revisions", as_json)


@memory_app.command("accept")
def memory_accept(
    ctx: typer.Context,
    revision: Annotated[str, typer.Argument(metavar="REVISION", help="A revision id (rev_...) or unique prefix.")],
    force: Annotated[bool, typer.Option("--force", help="Accept a revision made against an older version of the "
                                        "memory (read `memory history` first).")] = False,
    yes: YesOpt = False,
) -> None:
    """Accept an agent's pending revision (human only): the memory takes its values and stays verified. A revision
    proposed before the memory last changed is refused unless --force.

    At a terminal, every value the revision proposes is shown in full beside the memory's, line by line as stored
    (- now, + proposed; a space in a run shown as ␣, a look-alike letter as its code point), with a warning when the
    two read the same but differ, and accepted only as shown, once you confirm (`memory revisions` lists them cut to
    a line); with --yes nothing is asked.

    Examples:

        synapse-nb memory accept rev_3f9a0c12be47
    """
    require_human_here(ctx, yes, "accepting a revision")
    v = open_vault_for(ctx)
    seen = None
    if not yes:  # at a terminal: all the memory takes, whole (review 12: a listing's 60 characters were accepted)
        rev = v.memories.revision(revision)
        if not rev.readable:  # no values to show: never accepted (review 46)
            fail(f"not accepted: {shown_id(rev.id)} holds no values a revision proposes; reject it")
        mem = v.memories.get(rev.rid)
        # each value as stored, line by line, beside the memory's (review 26: one quoted line each hid a moved line
        # break and Cyrillic letters in a URL: two identical lines, accepted as the person's verified memory)
        typer.echo(f"{shown_id(rev.id)} proposes for {mark(mem)} {mem.address} ({shown_id(mem.id)}):\n{LEGEND}",
                   err=True)
        for ch in changes(mem, rev.proposed):
            val = rev.proposed[ch.field]
            soon = f" ({from_now(val, v.now())})" if ch.field == "expires_at" and isinstance(val, str) else ""
            typer.echo(f"  {ch.field}, - now / + proposed {PROPOSED_MARK}{soon}:", err=True)
            for line in ch.diff:
                typer.echo(f"    {line}", err=True)
            if ch.warning:
                typer.echo(f"  {ch.warning}", err=True)
        if not typer.confirm("accept these values as yours (the memory stays verified)?", default=False, err=True):
            fail(f"not accepted: {shown_id(rev.id)} is still pending")
        seen = rev.fields
    m = v.memories.accept(revision, force=force, seen=seen)
    typer.echo(f"accepted {inline(revision, 40)}: {m.summary_line()}" + (f"\n{m.note}" if m.note else ""))


@memory_app.command("reject")
def memory_reject(
    ctx: typer.Context,
    revision: Annotated[str, typer.Argument(metavar="REVISION", help="A revision id (rev_...) or unique prefix.")],
    yes: YesOpt = False,
) -> None:
    """Reject an agent's pending revision (human only): the memory stays as it is.

    Examples:

        synapse-nb memory reject rev_3f9a0c12be47
    """
    require_human_here(ctx, yes, "rejecting a revision")
    r = open_vault_for(ctx).memories.reject(revision)
    typer.echo(f"rejected {shown_id(r.id)}; {shown_id(r.rid)} is unchanged")


@memory_app.command("conflicts")
def memory_conflicts(
    ctx: typer.Context,
    status: Annotated[str, typer.Option("--status", help="open, kept, merged, superseded or all.")] = "open",
    agents: Annotated[bool, typer.Option("--agents", help="List the pairs of two agents' unverified records too "
                                         "(after people's); without it one line counts them.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help=(
        f"Show at most N pairs (0: all; default {MOST_PAIRS}, and all with --json)."))] = None,
    check_all: Annotated[bool, typer.Option("--check-all", help="First check every write a bulk load left waiting "
                                            "for the duplicate check (a listing checks some), however long it "
                                            "takes.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Pairs of records that look like duplicates or contradictions (same subject, differing numbers, dates, names or
    negation), found on write; a human decides each with `memory resolve`.

    Pairs of two people's records come first, then a person's and an agent's, at most 20 unless -n; the pairs of two
    agents' unverified records are counted in one line, and --agents lists them after people's. --json lists every
    pair, people's first, unless -n is given.

    A person's bulk write (more than 32 records in one transaction) is checked later: each listing checks some of its
    writes and says how many still wait; --check-all checks them all first.

    Examples:

        synapse-nb memory conflicts

        # every open pair, agents' too, however many:
        synapse-nb memory conflicts --agents -n 0

        synapse-nb memory conflicts --status all --json

        synapse-nb memory conflicts --check-all
    """
    v = open_vault_for(ctx)
    rows = v.memories.conflicts(status=None if status == "all" else status, check_all=check_all)
    if as_json:  # every pair unless -n, people's first (a script reads them all)
        most = None if limit is None else limit_arg(limit)
        echo_json(quoted([r.to_dict() for r in rows[:most]]))
    else:  # people's pairs first, the sides' marks after their ids, agents' pairs counted (review 83)
        if not (rows if agents else rows.people):
            typer.echo(f"no {'' if status == 'all' else status + ' '}conflicts"
                       + (" with a person's record" if rows else ""))
        for line in rows.lines(MOST_PAIRS if limit is None else limit_arg(limit), agents=agents):
            typer.echo(line)
    if rows.note:  # writes still waiting for the check (review 75): on stderr with --json, which stays a list
        typer.echo(f"note: {rows.note}", err=as_json)


@memory_app.command("resolve")
def memory_resolve(
    ctx: typer.Context,
    link: Annotated[str, typer.Argument(metavar="CONFLICT", help="A conflict id (lnk_...) or unique prefix.")],
    action: Annotated[str, typer.Argument(metavar="merge|keep|supersede", help="merge: the duplicate goes (its tags "
                                          "join the other); keep: both stand; supersede: the newer stands.")],
    yes: YesOpt = False,
) -> None:
    """Decide a duplicate or contradiction (human only); deletions are kept in history (revert brings them back).

    At a terminal, merge and supersede first show the record they would delete and ask; with --yes nothing is asked.
    A merge never deletes a person's record for an agent's copy (the agent's goes).

    Examples:

        synapse-nb memory resolve lnk_3f9a0c12be47 merge

        synapse-nb memory resolve lnk_3f9a0c12be47 keep
    """
    require_human_here(ctx, yes, "resolving a conflict")
    v = open_vault_for(ctx)
    gone = v.memories.deletes(link, action)
    if gone is not None and not yes:
        typer.echo(f"{action} deletes {shown_id(gone.id)}: {gone.summary_line()}", err=True)
        if not typer.confirm("delete it?", default=False, err=True):
            fail(f"not resolved: {shown_id(link)} is still open")
    x = v.memories.resolve(link, action)
    typer.echo(f"{shown_id(x.id)}: {x.status}" + (f"; deleted {shown_id(gone.id)}" if gone is not None else ""))


@memory_app.command("purge")
def memory_purge(
    ctx: typer.Context,
    record: Annotated[str, typer.Argument(metavar="ID", help="The record's full id (any kind; a deleted one too).")],
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove a record and every trace of it (human only): the record, its history, revisions and links, the
    index, FTS and ranking tables and the caches; says which exports taken earlier still hold it.

    At a terminal, what goes is shown first (the record's mark, address and text, or a deleted one's last known
    version, and its history, revision and link counts) and asked, default no; with --yes nothing is asked.

    Examples:

        synapse-nb memory purge mem_3f9a0c12be47

        synapse-nb memory purge mem_3f9a0c12be47 --yes
    """
    require_human_here(ctx, yes, "purging a record")
    v = open_vault_for(ctx)
    if not yes:  # at a terminal: what goes for good, then asked (review 64: nothing was shown, nothing asked)
        typer.echo(str(v.purge_target(record)), err=True)
        if not typer.confirm("purge it? (no history is kept: it cannot be reverted)", default=False, err=True):
            fail(f"not purged: {inline(record, 40)} is as it was")
    report = v.purge(record)
    if as_json:
        echo_json(report.to_dict())
    else:
        typer.echo(str(report))


@memory_app.command("prune-history")
def memory_prune_history(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option("--older-than", help="The retention window: entries older than this "
                                            "(a duration such as 180d) go; each record keeps its newest.")],
    yes: YesOpt = False,
) -> None:
    """Remove history entries older than a retention window (human only; nothing else ever removes history).

    Examples:

        synapse-nb memory prune-history --older-than 365d
    """
    require_human_here(ctx, yes, "pruning history")
    n = open_vault_for(ctx).prune_history(older_than=older_than)
    typer.echo(f"removed {n} history entries older than {older_than}")


def _listing(rows: Sequence[Revision], status: str, noun: str, as_json: bool) -> None:
    """Print revisions: a line each, ``no <status> <noun>`` when there are none, or JSON (``memory conflicts`` prints
    its own: people's pairs first, agents' counted)."""
    if as_json:  # an agent's proposed text, quoted as every --json quotes stored text
        echo_json(quoted([r.to_dict() for r in rows]))
        return
    if not rows:
        typer.echo(f"no {'' if status == 'all' else status + ' '}{noun}")
    else:  # a revision's values are an agent's words (Revision.line marks them)
        from synapse_nb.recall.assembly import AGENT_WORDS  # recall's legend, on first use

        typer.echo(AGENT_WORDS)
    for r in rows:
        typer.echo(r.line())
