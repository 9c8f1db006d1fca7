"""``synapse-nb memory`` (inspect and maintain memories, export and import) and ``synapse-nb remember``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from synapse_nb.cli._common import (
    PROG,
    TAGS_HELP,
    Group,
    JsonOpt,
    LimitOpt,
    People,
    SourceOpt,
    YesOpt,
    echo_json,
    echo_legend,
    fail,
    filters,
    group_help,
    limit_arg,
    open_vault_for,
    print_record,
    print_records,
    require_human_here,
    state,
)
from synapse_nb.differences import shown_memory
from synapse_nb.models import CATEGORIES, PRIORITIES
from synapse_nb.provenance import mark
from synapse_nb.render import (
    plural,
    shown_id,  # (review 41: an id as a reader shows it)
    when,
)

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import Vault

__all__ = ["memory_app", "remember"]


memory_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Inspect and maintain the vault's memories.", "synapse-nb memory status", "synapse-nb memory search deploy"))


@memory_app.command("status")
def memory_status(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Counts per kind and state, pending lessons, what expires soon.

    Examples:

        synapse-nb memory status

        synapse-nb memory status --json
    """
    v = open_vault_for(ctx)
    st = v.status()
    if as_json:
        echo_json(st.to_dict())
        if st.git_warning:
            typer.echo(f"{PROG}: {st.git_warning}", err=True)
    else:
        typer.echo(str(st))
    if not (state(ctx).vault or os.environ.get("SYNAPSE_HOME", "").strip()):
        _agent_login_notice(v.project_dir)


def _agent_login_notice(project_dir: Path) -> None:
    """On stderr, in a folder whose team vault names no agent login: agent surfaces here log in as the person
    (review 30). Reads team.toml only (``synapse-nb team status`` says more)."""
    from synapse_nb.vault.locate import VAULT_DIRNAME, team_agent_url_of, team_url_of

    vault_dir = project_dir / VAULT_DIRNAME
    if team_url_of(vault_dir) is not None and team_agent_url_of(vault_dir) is None:
        typer.echo(f"{PROG}: agent surfaces here log in to the team vault as the person (team.toml names no "
                   "agent_url) and only SET ROLE to the agent role, which code the agent runs can skip; give the "
                   f"agent its own login: {PROG} team agent-login URL (docs/team.md, \"An agent's own login\")",
                   err=True)


@memory_app.command("list")
def memory_list(
    ctx: typer.Context,
    category: Annotated[str | None, typer.Option("--category", "-c", help="Only this category.")] = None,
    source: SourceOpt = None,
    limit: LimitOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """List memories: people's and verified ones first, then agents' unverified ones, each by priority then
    recency (expired ones are left out). With --limit, a line on stderr says how many it left out.

    Examples:

        synapse-nb memory list

        synapse-nb memory list --category procedure --json
    """
    v = open_vault_for(ctx)
    shown = People.of(v.memories.list(category=category), limit_arg(limit), "memory", "memories", source)
    recs = shown.records
    print_records(recs, as_json, "" if recs or as_json else _no_memories(v, category=category, source=source),
                  more=shown.more)


def _no_memories(v: Vault, query: str | None = None, tag: str | None = None, category: str | None = None,
                 source: str | None = None) -> str:
    """Why a memory listing is empty: none yet, none that match the filters, or only expired ones."""
    total = v.memories.count()
    live = v.memories.count(include_expired=False)
    if total == 0:
        return "no memories yet"
    expired = total - live
    left_out = f"; {plural(expired, 'expired memory', 'expired memories')} left out" if expired else ""
    if live == 0:
        return (f"no memories in force ({plural(expired, 'expired memory', 'expired memories')}; "
                f"'{PROG} memory prune' deletes them)")
    return (f"no memories{filters(query, tag, category, source)} ({plural(live, 'memory', 'memories')} in "
            f"all{left_out})")


@memory_app.command("prune")
def memory_prune(
    ctx: typer.Context,
    sessions_older_than: Annotated[str, typer.Option(
        "--sessions-older-than", help="Forget per-session recall state older than this.")] = "30d",
    agent_records_older_than: Annotated[str | None, typer.Option(
        "--agent-records-older-than", help="Also delete the mind's agents' records no person took on (unverified "
        "agent memories, agents' checkpoints, decisions, episodes, notes) last changed longer ago than this, "
        "e.g. 14d.")] = None,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete expired memories, mark expired lessons, forget old session state (human-only: see --yes); with
    --agent-records-older-than, also the agents' old unverified records (what frees the agents' totals).

    Examples:

        synapse-nb memory prune

        synapse-nb memory prune --sessions-older-than 7d --json

        synapse-nb memory prune --agent-records-older-than 14d
    """
    require_human_here(ctx, yes, "pruning the vault")
    rep = open_vault_for(ctx).prune(sessions_older_than=sessions_older_than,
                                    agent_records_older_than=agent_records_older_than)
    if as_json:
        echo_json(rep.to_dict())
    else:
        typer.echo(str(rep))


@memory_app.command("verify")
def memory_verify(
    ctx: typer.Context,
    memory_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Memory id or unique prefix to mark "
                                                    "verified; without it, check every file reference.")] = None,
    confidence: Annotated[float | None, typer.Option(
        "--confidence", min=0.0, max=1.0, help="Set the confidence too.")] = None,
    fix: Annotated[bool, typer.Option("--fix", help="Follow renames in lessons and checkpoints and mark dangling "
                                                    "and possibly stale records.")] = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Verify: with ID, mark that memory (typically an agent's proposal) verified by you; without ID, check
    every file a lesson, checkpoint, decision or memory refers to against git HEAD (dangling references,
    renames, records whose files changed since they were written). Exit code 1 when something is off.

    At a terminal, an agent's memory is shown first, line by line as stored (a space in a run shown as ␣, a look-alike
    letter as its code point), and verified only as shown, once you confirm (an agent may edit its memory at any
    time; with --yes nothing is asked and the memory as stored at that moment is verified).

    Examples:

        synapse-nb memory verify mem_3f9a

        synapse-nb memory verify mem_3f9a --confidence 0.9

        synapse-nb memory verify            # check file references against HEAD

        # follow renames, mark dangling and possibly stale records:
        synapse-nb memory verify --fix
    """
    if memory_id is not None or fix:
        require_human_here(ctx, yes, "verifying a memory" if memory_id is not None else "verify --fix")
    v = open_vault_for(ctx)
    if memory_id is None:
        report = v.verify(fix=fix)
        if as_json:
            echo_json(report.to_dict())
        else:
            typer.echo(str(report))
        if not report.ok and not fix:
            raise typer.Exit(1)
        return
    seen = None
    if not yes:  # at a terminal: verify what the human reads here (an agent may edit its memory at any time)
        seen = v.memories.get(memory_id)
        if seen.verified:  # verified already: an agent's edit of it is a revision, not a change under the eyes
            seen = None
        elif seen.source == "agent":  # all the human verifies: the digest bound below covers every field shown
            typer.echo(shown_memory(seen), err=True)
            if not typer.confirm("verify this memory as it reads?", default=False, err=True):
                fail(f"not verified: {shown_id(seen.id)} stays {mark(seen)}")
    m = v.memories.verify(memory_id, confidence=confidence, seen=seen)
    print_record(m, as_json, f"verified {shown_id(m.id)} {m.address}")


@memory_app.command("search")
def memory_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help=(
        "Words to look for (any text is safe); needed unless --tag, --category or --source is given."))] = "",
    tag: Annotated[str | None, typer.Option("--tag", help="Only memories with this tag.")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c", help="Only this category.")] = None,
    source: SourceOpt = None,
    limit: LimitOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """Full-text search over memories: people's and verified ones first, then agents' unverified ones, each best
    match first. A line on stderr says how many the limit left out.

    A query is needed, as ``%memory search`` needs one, unless --tag, --category or --source alone says which
    memories to list (``synapse-nb memory list`` lists every one).

    Examples:

        synapse-nb memory search deploy

        synapse-nb memory search "run migrations" --category procedure --json
    """
    if not query.strip() and tag is None and category is None and source is None:  # listed every memory, while
        raise typer.BadParameter(  # %memory search said a query is needed (review 93): both say so now
            "memory search needs a query (it was empty or blank), e.g. synapse-nb memory search migrations (or "
            "--tag T, --category C or --source S alone: every memory it names; synapse-nb memory list lists them "
            "all)", param_hint="QUERY")
    v = open_vault_for(ctx, offline=True)
    if v.offline:  # a team vault whose server cannot be reached: this machine's stale copy, marked so
        if tag is not None or category is not None or source is not None:
            raise typer.BadParameter("--tag, --category and --source need the server (the offline copy holds text "
                                     "only)")
        stale = v.search(query, k=limit or 1000)
        echo_json(stale.to_dict()) if as_json else typer.echo(stale.text)
        return
    read = People.search_read(limit_arg(limit), source)
    shown = People.of(v.memories.search(query, tag=tag, category=category, limit=read), limit_arg(limit),
                      "memory", "memories", source, read=read)
    recs = shown.records
    print_records(recs, as_json, "" if recs or as_json else _no_memories(v, query, tag, category, source),
                  more=shown.more)


@memory_app.command("expiring")
def memory_expiring(
    ctx: typer.Context,
    within: Annotated[str, typer.Option("--within", "-w", help="A duration such as 7d, 12h.")] = "7d",
    source: SourceOpt = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help=(
        "Show at most N records (0: all; default 20, and all with --json)."))] = None,
    as_json: JsonOpt = False,
) -> None:
    """Memories that expire soon: people's (and verified ones) first, then agents', each soonest first; 20 unless
    ``-n``, and all of them with ``--json`` (a script reads every one). A line on stderr says how many the limit left
    out.

    Examples:

        synapse-nb memory expiring

        synapse-nb memory expiring --within 30d --json

        synapse-nb memory expiring --within 90d -n 0  # all within 90 days
    """
    v = open_vault_for(ctx)
    most = limit_arg(limit) if limit is not None else None if as_json else 20
    shown = People.of(v.memories.expiring(within=within), most, "memory", "memories", source)
    recs = shown.records
    if as_json:
        print_records(recs, True, "", more=shown.more)
        return
    if not recs:
        typer.echo(f"nothing{filters(None, source=source)} expires within {within}")
    echo_legend(recs)
    for m in recs:
        typer.echo(f"{shown_id(m.id)}  expires {when(m.expires_at, seconds=True)}  {m.summary_line()}")
    if shown.more:
        typer.echo(shown.more, err=True)


@memory_app.command("export")
def memory_export(
    ctx: typer.Context,
    dest: Annotated[str | None, typer.Argument(help="File to write (default: stdout).")] = None,
    history: Annotated[bool, typer.Option("--history", help="Every history entry too, after the records.")] = False,
) -> None:
    """Export the whole vault as JSON Lines, sorted and stable (diffable, reviewable, shareable).

    Examples:

        synapse-nb memory export vault.jsonl

        synapse-nb memory export > vault.jsonl

        synapse-nb memory export vault.jsonl --history
    """
    v = open_vault_for(ctx)
    if dest is None or dest == "-":
        sys.stdout.write(v.export_jsonl(history=history))
        return
    text = v.export_jsonl(dest, history=history)
    kinds = [json.loads(line).get("kind") for line in text.split("\n")[1:] if line]  # line 1: the header
    n_settings, n_history, n_links = kinds.count("setting"), kinds.count("history"), kinds.count("link")
    typer.echo(f"exported {plural(len(kinds) - n_settings - n_history - n_links, 'record')}"
               + (f" and {plural(n_settings, 'setting')}" if n_settings else "")
               + (f" and {plural(n_links, 'conflict link')}" if n_links else "")
               + (f" and {plural(n_history, 'history entry', 'history entries')}" if n_history else "")
               + f" to {dest}", err=True)


@memory_app.command("import")
def memory_import(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(metavar="PATH", help="A JSON Lines export ('-' reads stdin).")],
    trust: Annotated[bool, typer.Option("--trust", help="Accept the file's trust claims (records by the user, "
                                        "verified memories, approved lessons and their wording, user analyses, "
                                        "settings, history of records it does not bring in as new, decided "
                                        "conflict links and links of records already here) as yours; they are "
                                        "listed.")] = False,
    trust_borrowed: Annotated[bool, typer.Option("--trust-borrowed-approvals", help=(
        "Beside --trust: also accept the lessons an export of a borrowed vault (one that came with a repository) "
        "lists as approved or worded by whoever committed it, not by a person there; without it such a file "
        "is refused."))] = False,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Import an export in one all-or-nothing transaction (identical records are skipped).

    A human-only command: refused in an agent's shell, and without a terminal (stdin from a pipe) unless --yes.
    What only a human makes (records with source user, verified memories, approved or expired lessons,
    analyses by the user, settings, history of a record the file does not bring in as new, and conflict links a
    person decided or that name a record already here) is refused, the
    whole file with it, unless you pass --trust: the error lists the claims; with --trust the output does, and each
    record that made one (its id and first line; the first 20, --json all). An export of a borrowed vault says so
    in its header: the lessons in it that nobody in that checkout approved also need --trust-borrowed-approvals
    (read them first).
    Timestamps must lie in 1970-2100, and no later than the vault's clock plus a day (a history entry: plus
    five minutes).

    Examples:

        synapse-nb memory import agent-notes.jsonl

        synapse-nb memory import my-backup.jsonl --trust

        cat my-backup.jsonl | synapse-nb memory import - --trust --yes
    """
    require_human_here(ctx, yes, "importing records with --trust" if trust else "importing records")
    v = open_vault_for(ctx)
    counts = v.import_jsonl(sys.stdin if source == "-" else source, trust=trust, trust_borrowed=trust_borrowed)
    if counts.empty:  # review 93: `cat missing.jsonl | ... import -` said "imported: ... 0", as if a file was read
        said = "standard input was empty" if source == "-" else f"the file {source!r} is empty"
        if as_json:
            echo_json(counts.to_dict())
        typer.echo(f"nothing to import: {said}", err=as_json)
        return
    if as_json:
        echo_json(counts.to_dict())
    else:
        if counts.borrowed:
            from synapse_nb.transfer import BORROWED_CLAIM  # loaded already by the import

            n = counts.claims.get(BORROWED_CLAIM, 0)
            typer.echo("NOTE: the file is an export of a BORROWED vault (one that came with a repository): " + (
                f"{plural(n, 'lesson')} approved by whoever committed it, not by a person there, accepted as "
                "approved with --trust-borrowed-approvals" if n else "only lessons a person there approved were "
                "accepted as approved"), err=True)
        typer.echo("imported: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
        if counts.checked is not None:  # into minds that held records: compared with them after the commit
            typer.echo(counts.checked.line())
        if counts.claims:
            typer.echo(f"trusted (accepted with --trust): {counts.claims_text()}")
            for line in counts.claimed_lines():  # what each is: one agent-added source=user memory among 200
                typer.echo(f"  {line}")


def remember(
    ctx: typer.Context,
    category: Annotated[str, typer.Argument(help=f"{', '.join(CATEGORIES[:-1])} or {CATEGORIES[-1]}.")],
    key: Annotated[str, typer.Argument(help="snake_case key; the same key again updates that memory.")],
    content: Annotated[str, typer.Argument(help="The text to remember.")],
    tags: Annotated[str | None, typer.Option("--tags", "-t", help=TAGS_HELP)] = None,
    priority: Annotated[str | None, typer.Option(
        "--priority", "-p", metavar="|".join(PRIORITIES), help="Priority.")] = None,
    expires: Annotated[str | None, typer.Option(
        "--expires", "-e", help="A duration (30d) or an ISO 8601 time.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember something; the same category+key updates in place.

    From your terminal it is verified (you are the human); in a shell a coding agent started (or with --actor
    agent) it is stored as the agent's unverified proposal, and a user's memory cannot be overwritten.

    Examples:

        synapse-nb remember procedure run_migrations "alembic upgrade head" --tags db,deploy --priority high

        synapse-nb remember context sprint_goal "Ship the v2 API" --expires 14d
    """
    v = open_vault_for(ctx)
    m = v.remember(category, key, content, tags=tags, priority=priority, expires=expires)
    if v.memories.needs_revision(m):
        print_record(m, as_json, f"{m.address} is a human's memory: the change is a pending revision for a "
                     f"human to accept (synapse-nb memory revisions); {shown_id(m.id)} is unchanged")
        return
    verb = "remembered" if m.created_at == m.updated_at else "updated"
    # a team vault: another person's verified version replaced is named, with the way back (review 90): the write
    # returns it (m.replaced, m.note), as it does to every surface
    prev = m.replaced
    whose = "" if prev is None else f"{prev.whose} memory "
    back = "" if prev is None else f"; {prev.restore_hint()}"
    print_record(m, as_json, f"{verb} {whose}{shown_id(m.id)} {mark(m)} {m.address} [{m.priority}]{back}")
    if as_json and m.note:  # the JSON stays the record; a person at the terminal still reads whose it was
        typer.echo(f"{PROG}: note: {m.note}", err=True)
