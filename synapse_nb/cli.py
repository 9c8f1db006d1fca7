"""``synapse-nb``: the command line, a thin shell over the vault (the CLI acts as the human user).

Every command parses its arguments, calls the core (:mod:`synapse_nb.vault`), renders the result
and turns library errors into CLI errors at this edge only:

- exit code 0: done; 1: the operation was refused or failed (a :class:`~synapse_nb.errors.SynapseError`,
  printed as ONE line on stderr, never a traceback); 2: usage error (bad arguments).
- ``--json`` on every reading command prints stable field names (records' ``to_dict()``; a list is a
  JSON array of records, each with its full ``id``).

Cold start matters: this module imports only :mod:`typer` at import time; everything else (the vault,
git, LanceDB, the eval code, the MCP SDK) is imported inside the command that needs it.

Examples
--------
>>> from typer.testing import CliRunner
>>> from synapse_nb.cli import app
>>> CliRunner().invoke(app, ["--version"]).output.startswith("synapse-nb ")
True
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.models import Record
    from synapse_nb.vault import Vault

__all__ = ["app", "main"]

PROG = "synapse-nb"


# ------------------------------------------------------------------------------------------------ plumbing
def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``synapse_nb._util.plural`` (imported when first used: the CLI's import stays light)."""
    from synapse_nb._util import plural as _plural

    return _plural(n, singular, plural_form)


def when(ts: str | None, *, seconds: bool = False) -> str:
    """``synapse_nb._util.when``: a stored UTC timestamp for people, e.g. ``2026-11-30 21:15 UTC``."""
    from synapse_nb._util import when as _when

    return _when(ts, seconds=seconds)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _fail(message: str, code: int = 1) -> NoReturn:
    """Print one line on stderr and stop with ``code``."""
    typer.echo(f"{PROG}: error: {_one_line(message)}", err=True)
    raise typer.Exit(code)


def _flags_take_no_value(cmd: Any) -> None:
    """Show flags as flags in ``--help``: typer's help prints ``--json <bool>`` as if the flag took a value.

    A flag (``--json``, ``--explain``, ``--help`` itself) gets an empty metavar, in every command below ``cmd``.
    """
    from types import SimpleNamespace

    names = (getattr(cmd, "context_settings", None) or {}).get("help_option_names", ["--help"])
    for param in [*cmd.params, cmd.get_help_option(SimpleNamespace(help_option_names=names))]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(cmd, "commands", {}).values():
        _flags_take_no_value(sub)


class _RootGroup(TyperGroup):
    """The root command: turns every error into one line on stderr and an exit code (0, 1, 2)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        from typer._click import exceptions as cx  # the click vendored by typer

        from synapse_nb.errors import SynapseError

        _flags_take_no_value(self)
        code = 0
        try:
            rv = super().main(args, prog_name or PROG, complete_var, standalone_mode=False,
                              windows_expand_args=windows_expand_args, **extra)
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except cx.NoArgsIsHelpError as exc:  # a group called without a command: show its help
            typer.echo(exc.format_message())
            code = 2
        except cx.UsageError as exc:
            hint = ""
            if exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            typer.echo(f"{PROG}: usage error: {_one_line(exc.format_message())}{hint}", err=True)
            code = exc.exit_code
        except typer.TyperException as exc:  # other click exceptions (file errors, ...)
            typer.echo(f"{PROG}: error: {_one_line(exc.format_message())}", err=True)
            code = exc.exit_code
        except (typer.Abort, KeyboardInterrupt, EOFError):
            typer.echo(f"{PROG}: aborted", err=True)
            code = 1
        except SynapseError as exc:
            typer.echo(f"{PROG}: error: {_one_line(str(exc)) or type(exc).__name__}", err=True)
            code = 1
        except typer.Exit as exc:
            code = exc.exit_code
        except BrokenPipeError:
            code = 1
        except Exception as exc:  # never a traceback for a user; SYNAPSE_DEBUG=1 shows it
            if os.environ.get("SYNAPSE_DEBUG"):
                raise
            typer.echo(f"{PROG}: unexpected error ({type(exc).__name__}): {_one_line(str(exc))} "
                       "(set SYNAPSE_DEBUG=1 for a traceback)", err=True)
            code = 1
        if standalone_mode:
            sys.exit(code)
        return code


class _RecallGroup(TyperGroup):
    """``recall QUERY ...`` runs ``recall query QUERY ...``; ``recall eval PATH`` is the LoCoMo eval."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["query", *args]
        return super().parse_args(ctx, args)


@dataclass
class _State:
    vault: str | None = None
    mind: str = "default"


def _state(ctx: typer.Context) -> _State:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, _State) else _State()


#: The commands that write and so may create a vault (inside an existing folder only, saying so on stderr).
#: Every other command reads: it never creates a vault and fails with "no vault at PATH ..." instead.
CREATING_COMMANDS = frozenset({
    "checkpoint create", "decision log", "init", "lessons scan", "memory import", "remember", "watch",
})


def _command_name(ctx: typer.Context) -> str:
    names: list[str] = []
    c: Any = ctx
    while c is not None and c.parent is not None:
        names.append(c.info_name or "")
        c = c.parent
    return " ".join(reversed(names))


def _open(ctx: typer.Context, path: str | None = None) -> Vault:
    """The vault for this command: ``path`` (a command's PATH argument), else ``--vault``, else SYNAPSE_HOME/cwd.

    Reading commands never create a vault; writing ones (:data:`CREATING_COMMANDS`) create it inside an
    existing folder and say where on stderr, once.
    """
    from synapse_nb.vault import open_vault

    st = _state(ctx)
    v = open_vault(path if path is not None else st.vault, mind=st.mind, actor="user",
                   create=_command_name(ctx) in CREATING_COMMANDS)
    if v.created:
        typer.echo(f"{PROG}: created a new vault at {v.path}", err=True)
    return v


def _echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def _record_line(r: Record) -> str:
    return f"{r.id}  {when(r.created_at, seconds=True)}  {r.summary_line()}"


def _print_records(records: Any, as_json: bool, empty: str) -> None:
    if as_json:
        _echo_json([r.to_dict() for r in records])
        return
    if not records:
        typer.echo(empty)
        return
    for r in records:
        typer.echo(_record_line(r))


def _none_found(total: int, noun: str, plural_form: str, filtered: str) -> str:
    """What an empty listing says: "no decisions yet" only when the mind has none at all, else what the
    filters excluded, e.g. "no decisions tagged db (5 decisions in all)"."""
    if total == 0:
        return f"no {plural_form} yet"
    return f"{filtered} ({plural(total, noun, plural_form)} in all)"


def _filters(query: str | None, tag: str | None = None, category: str | None = None) -> str:
    """The filters of a search, as words: ' tagged db in category procedure matching "run"'."""
    from synapse_nb._util import check_tags

    words = ""
    if tag is not None:
        words += f" tagged {', '.join(check_tags([tag]))}"
    if category is not None:
        words += f" in category {category.strip().lower()}"
    if query and query.strip():
        words += f" matching {query.strip()!r}"
    return words


def _print_record(record: Any, as_json: bool, text: str) -> None:
    if as_json:
        _echo_json(record.to_dict())
    else:
        typer.echo(text)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON with stable field names instead of text.")]
_TAGS_HELP = ("Comma-separated tags, one word each (trimmed, lower-cased, a leading # dropped: "
              "'#DB,deploy' gives db, deploy).")
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=0, help="Show at most N records (0: all).")]


def _limit(n: int) -> int | None:
    return None if n == 0 else n


# ------------------------------------------------------------------------------------------------ the app
app = typer.Typer(
    name=PROG, cls=_RootGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
def _group_help(summary: str, *examples: str) -> str:
    return summary + "\n\nExamples:\n\n" + "\n\n".join(f"    {e}" for e in examples)


checkpoint_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Save and restore work state (per git branch).",
    'synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py', "synapse-nb checkpoint restore"))
decision_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Log design decisions with their rationale.",
    'synapse-nb decision log "Use SQLite WAL mode" --rationale "Readers never block writers"',
    "synapse-nb decision list"))
lessons_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Review lessons learnt from reverted changes (only a human approves them).",
    "synapse-nb lessons scan", "synapse-nb lessons review"))
memory_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Inspect and maintain the vault's memories.", "synapse-nb memory status", "synapse-nb memory search deploy"))
recall_app = typer.Typer(cls=_RecallGroup, no_args_is_help=True, help=_group_help(
    "Ask the vault what is relevant now: 'recall QUERY' (short for 'recall query QUERY'), or 'recall eval PATH'.",
    'synapse-nb recall "how do we run migrations?"', "synapse-nb recall eval datasets/locomo --conversations 2"))
hooks_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Install or remove the git hooks that turn reverts into pending lessons.",
    "synapse-nb hooks install", "synapse-nb hooks uninstall"))
index_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Maintain the retrieval index (a cache rebuilt from the SQLite store).",
    "synapse-nb index check --repair", "synapse-nb index rebuild"))
gate_app = typer.Typer(no_args_is_help=True, help=_group_help(
    "Evaluate the recall gate as a router on labelled data.", "synapse-nb gate eval datasets/agent_vault --json"))
app.add_typer(checkpoint_app, name="checkpoint")
app.add_typer(decision_app, name="decision")
app.add_typer(lessons_app, name="lessons")
app.add_typer(memory_app, name="memory")
app.add_typer(recall_app, name="recall")
app.add_typer(hooks_app, name="hooks")
app.add_typer(index_app, name="index")
app.add_typer(gate_app, name="gate")


def _version(value: bool) -> None:
    if value:
        from synapse_nb._version import __version__

        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    vault: Annotated[str | None, typer.Option(
        "--vault", metavar="PATH",
        help="Project folder or vault folder, as SYNAPSE_HOME (default: SYNAPSE_HOME, else the git root of the "
             "current folder). It must exist: reads never create a vault.")] = None,
    mind: Annotated[str, typer.Option("--mind", help="Which mind's records to see and write.")] = "default",
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Memory for LLM agents and the people who steer them: checkpoints, decisions, lessons, memories, recall.

    The CLI acts as the human user: what it writes is verified, and only a human approves lessons.

    Examples:

        synapse-nb demo

        synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py --next-step "Run pytest"

        synapse-nb --vault ~/project recall "how do we run migrations?"
    """
    ctx.obj = _State(vault=vault, mind=mind)


# ------------------------------------------------------------------------------------------------ demo
@app.command()
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the throwaway vault folder and print where it is.")] = False,
) -> None:
    """A one-minute tour in a throwaway vault: checkpoint, decision, memory, lesson, recall.

    Nothing outside a temporary folder is touched.

    Examples:

        synapse-nb demo

        synapse-nb demo --keep
    """
    from synapse_nb.demo import run_demo

    run_demo(keep=keep)


# ------------------------------------------------------------------------------------------------ init
@app.command()
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
    from synapse_nb.vault import open_vault

    st = _state(ctx)
    with open_vault(path if path is not None else st.vault, mind=st.mind, actor="user", create=True) as v:
        typer.echo(f"created a new vault at {v.path}" if v.created else f"the vault already exists at {v.path}")
        st_git = v.status().git_warning
    if st_git:
        typer.echo(f"{PROG}: {st_git}", err=True)


# ------------------------------------------------------------------------------------------------ checkpoint
@checkpoint_app.command("create")
def checkpoint_create(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="Project folder (default: --vault, else the current folder).")] = None,
    doing: Annotated[str, typer.Option("--doing", "-d", help="What you are working on (required).")] = ...,  # type: ignore[assignment]
    files: Annotated[str | None, typer.Option("--files", "-f", help="Changed files, comma-separated.")] = None,
    next_step: Annotated[str | None, typer.Option("--next-step", help="What to do next.")] = None,
    blockers: Annotated[str | None, typer.Option("--blockers", help="What is in the way.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Save the current work state (branch and commit are read from git).

    Examples:

        synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py,tests/test_auth.py --next-step "Run pytest"

        synapse-nb checkpoint create ~/project --doing "Migrating to WAL" --blockers "CI is red"
    """
    v = _open(ctx, path)
    c = v.checkpoint(doing, files=files, next_step=next_step, blockers=blockers, origin="cli")
    _print_record(c, as_json, f"saved {c.id} [{c.branch or 'no branch'}] {c.doing}")


@checkpoint_app.command("list")
def checkpoint_list(
    ctx: typer.Context,
    branch: Annotated[str | None, typer.Option("--branch", "-b", help="Only this branch (default: every branch).")] = None,
    limit: LimitOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """List checkpoints, newest first.

    Examples:

        synapse-nb checkpoint list

        synapse-nb checkpoint list --branch main --json
    """
    v = _open(ctx)
    recs = v.checkpoints.list(branch=branch, limit=_limit(limit))
    total = 0 if recs or as_json else v.checkpoints.count()
    empty = f"no checkpoints on branch {branch}" if total else "no checkpoints yet"
    if total:  # none on that branch, so every one is on another branch
        empty += f" ({plural(total, 'checkpoint')} on other branches)"
    _print_records(recs, as_json, empty)


@checkpoint_app.command("restore")
def checkpoint_restore(
    ctx: typer.Context,
    which: Annotated[str, typer.Argument(metavar="latest|ID", help="'latest' (current branch) or an id / unique prefix.")] = "latest",
    as_json: JsonOpt = False,
) -> None:
    """Print the restore pack of a checkpoint: what you were doing, files, next step, blockers.

    Examples:

        synapse-nb checkpoint restore

        synapse-nb checkpoint restore ckp_3f9a --json
    """
    from synapse_nb.errors import NoCheckpointError

    v = _open(ctx)
    try:
        c = v.checkpoints.restore(which)
    except NoCheckpointError as exc:
        _fail(exc.with_remedy(f'{PROG} checkpoint create --doing "what you are working on"'))
    if as_json:
        _echo_json({**c.to_dict(), "restore_text": c.restore_text()})
    else:
        typer.echo(c.restore_text())


# ------------------------------------------------------------------------------------------------ decision
@decision_app.command("log")
def decision_log(
    ctx: typer.Context,
    decision: Annotated[str, typer.Argument(help="The decision, in one sentence.")],
    rationale: Annotated[str | None, typer.Option("--rationale", "-r", help="Why.")] = None,
    tags: Annotated[str | None, typer.Option("--tags", "-t", help=_TAGS_HELP)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Log a design decision (with the current branch and commit).

    Examples:

        synapse-nb decision log "Use SQLite WAL mode" --rationale "Readers never block writers" --tags storage,sqlite
    """
    v = _open(ctx)
    d = v.decide(decision, rationale=rationale, tags=tags)
    _print_record(d, as_json, f"logged {d.id} {d.decision}")


@decision_app.command("list")
def decision_list(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Option("--search", "-s", help="Full-text search.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only decisions with this tag.")] = None,
    limit: LimitOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """List decisions, newest first (optionally searched or filtered by tag).

    Examples:

        synapse-nb decision list

        synapse-nb decision list --tag storage --json
    """
    v = _open(ctx)
    if query is None and tag is None:
        recs = v.decisions.list(limit=_limit(limit))
    else:
        recs = v.decisions.search(query or "", tag=tag, limit=limit or 1_000_000)
    empty = ""
    if not recs and not as_json:
        empty = _none_found(v.decisions.count(), "decision", "decisions", "no decisions" + _filters(query, tag))
    _print_records(recs, as_json, empty)


# ------------------------------------------------------------------------------------------------ lessons
def _lesson_text(les: Any) -> str:
    lines = [f"{les.id}  [{les.status}]  {when(les.created_at, seconds=True)}",
             f"  summary:  {les.summary}"]
    if les.files_affected:
        lines.append(f"  files:    {', '.join(les.files_affected)}")
    if les.analysis:
        lines.append(f"  analysis ({les.analysis_by or '?'}): {les.analysis}")
    if les.lesson_text:
        lines.append(f"  lesson:   {les.lesson_text}")
    if les.expires_at:
        lines.append(f"  expires:  {when(les.expires_at, seconds=True)}")
    return "\n".join(lines)


@lessons_app.command("scan")
def lessons_scan(
    ctx: typer.Context,
    max_commits: Annotated[int | None, typer.Option("--max-commits", min=1, help="How far back the first scan looks.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Find git reverts not seen before and create one pending lesson for each.

    Examples:

        synapse-nb lessons scan

        synapse-nb lessons scan --max-commits 500 --json
    """
    from synapse_nb.errors import GitError
    from synapse_nb.gitscope import find_repo
    from synapse_nb.vault import find_vault_dir

    project = find_vault_dir(_state(ctx).vault)[1]
    if find_repo(project) is None:  # checked first: a scan that cannot run must not create a vault
        raise GitError(f"{project} is not inside a git repository; lesson scanning needs git")
    v = _open(ctx)
    created = v.lessons.scan(max_commits=max_commits)
    if as_json:
        _echo_json([x.to_dict() for x in created])
        return
    typer.echo(plural(len(created), "new pending lesson"))
    for les in created:
        typer.echo(_record_line(les))
    if created:
        typer.echo(f"review them with: {PROG} lessons review")


@lessons_app.command("list")
def lessons_list(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option("--status", "-s", metavar="pending|approved|expired",
                                               help="Only lessons in this state.")] = None,
    limit: LimitOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """List lessons (all, or one status).

    Examples:

        synapse-nb lessons list --status pending

        synapse-nb lessons list --json
    """
    v = _open(ctx)
    recs = v.lessons.list(status=status, limit=_limit(limit))
    if as_json:
        _print_records(recs, True, "")
        return
    empty = "" if recs else _none_found(v.lessons.count(), "lesson", "lessons", f"no {status} lessons")
    _print_records(recs, False, empty)


_ANSWERS = {"a": "a", "approve": "a", "e": "e", "edit": "e", "r": "r", "reject": "r", "s": "s", "skip": "s",
            "q": "q", "quit": "q"}


def _ask_choice() -> str:
    """One review answer (a/e/r/s/q); the end of input means quit."""
    for _ in range(5):
        try:
            raw = typer.prompt("[a]pprove / [e]dit / [r]eject / [s]kip / [q]uit", default="s")
        except typer.Abort:
            return "q"
        answer = _ANSWERS.get(str(raw).strip().lower())
        if answer:
            return answer
        typer.echo("please answer a, e, r, s or q")
    return "q"


@lessons_app.command("review")
def lessons_review(ctx: typer.Context) -> None:
    """Review pending lessons one at a time: approve, edit the text then approve, reject, or skip.

    Answers are read from the terminal (or from stdin when piped): a / e / r / s, q to stop.

    Examples:

        synapse-nb lessons review

        printf 'a\\ns\\n' | synapse-nb lessons review
    """
    v = _open(ctx)
    pending = v.lessons.pending()
    if not pending:
        typer.echo("no pending lessons: nothing to review")
        return
    done = {"approved": 0, "rejected": 0, "skipped": 0}
    typer.echo(f"{plural(len(pending), 'pending lesson')}. For each: [a]pprove, [e]dit then approve, [r]eject, [s]kip, "
               "[q]uit.")
    for i, les in enumerate(pending, 1):
        typer.echo(f"\n({i}/{len(pending)}) " + _lesson_text(les))
        answer = _ask_choice()
        if answer == "q":
            break
        if answer == "s":
            done["skipped"] += 1
            continue
        if answer == "r":
            v.lessons.reject(les.id)
            done["rejected"] += 1
            typer.echo(f"rejected {les.id}")
            continue
        text = None
        if answer == "e":
            current = les.lesson_text or les.analysis or les.summary
            try:
                text = typer.prompt("lesson text", default=current)
            except typer.Abort:
                break
        from synapse_nb.errors import ValidationError

        try:
            approved = v.lessons.approve(les.id, text=text)
        except ValidationError as exc:  # a blank edit: say so and go on with the next lesson
            typer.echo(f"not approved: {exc}; skipped {les.id}")
            done["skipped"] += 1
            continue
        done["approved"] += 1
        typer.echo(f"approved {approved.id} until {when(approved.expires_at)}")
    typer.echo(f"\nreviewed: {done['approved']} approved, {done['rejected']} rejected, {done['skipped']} skipped")


@lessons_app.command("approve")
def lessons_approve(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    text: Annotated[str | None, typer.Option("--text", help="The lesson text (default: the analysis, else the summary).")] = None,
    days: Annotated[int | None, typer.Option("--days", min=1, max=3650, help="Days in force (default: the vault setting).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve a pending lesson (or re-approve an expired one): it then heads every recall.

    Examples:

        synapse-nb lessons approve les_3f9a

        synapse-nb lessons approve les_3f9a --text "Never retry payments without an idempotency key" --days 30
    """
    v = _open(ctx)
    les = v.lessons.approve(lesson_id, text=text, expiry_days=days)
    _print_record(les, as_json, f"approved {les.id} until {when(les.expires_at)}: {les.lesson_text}")


@lessons_app.command("reject")
def lessons_reject(
    ctx: typer.Context,
    lesson_id: Annotated[str, typer.Argument(metavar="ID", help="Lesson id or unique prefix.")],
    as_json: JsonOpt = False,
) -> None:
    """Reject a lesson: it is deleted.

    Examples:

        synapse-nb lessons reject les_3f9a
    """
    v = _open(ctx)
    les = v.lessons.reject(lesson_id)
    _print_record(les, as_json, f"rejected {les.id}")


# ------------------------------------------------------------------------------------------------ memory
@memory_app.command("status")
def memory_status(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Counts per kind and state, pending lessons, what expires soon.

    Examples:

        synapse-nb memory status

        synapse-nb memory status --json
    """
    st = _open(ctx).status()
    if as_json:
        _echo_json(st.to_dict())
        if st.git_warning:
            typer.echo(f"{PROG}: {st.git_warning}", err=True)
    else:
        typer.echo(str(st))


@memory_app.command("list")
def memory_list(
    ctx: typer.Context,
    category: Annotated[str | None, typer.Option("--category", "-c", help="Only this category.")] = None,
    limit: LimitOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """List memories by priority then recency (expired ones are left out).

    Examples:

        synapse-nb memory list

        synapse-nb memory list --category procedure --json
    """
    v = _open(ctx)
    recs = v.memories.list(category=category, limit=_limit(limit))
    _print_records(recs, as_json, "" if recs or as_json else _no_memories(v, category=category))


def _no_memories(v: Vault, query: str | None = None, tag: str | None = None, category: str | None = None) -> str:
    """Why a memory listing is empty: none yet, none that match the filters, or only expired ones."""
    total = v.memories.count()
    live = v.memories.count(include_expired=False)
    if total == 0:
        return "no memories yet"
    expired = total - live
    left_out = f"; {plural(expired, 'expired memory', 'expired memories')} left out" if expired else ""
    if live == 0:
        return f"no memories in force ({plural(expired, 'expired memory', 'expired memories')}; " \
               f"'{PROG} memory prune' deletes them)"
    return f"no memories{_filters(query, tag, category)} ({plural(live, 'memory', 'memories')} in all{left_out})"


@memory_app.command("prune")
def memory_prune(
    ctx: typer.Context,
    sessions_older_than: Annotated[str, typer.Option("--sessions-older-than", help="Forget per-session recall state older than this.")] = "30d",
    as_json: JsonOpt = False,
) -> None:
    """Delete expired memories, mark expired lessons, forget old session state.

    Examples:

        synapse-nb memory prune

        synapse-nb memory prune --sessions-older-than 7d --json
    """
    rep = _open(ctx).prune(sessions_older_than=sessions_older_than)
    if as_json:
        _echo_json(rep.to_dict())
    else:
        typer.echo(str(rep))


@memory_app.command("verify")
def memory_verify(
    ctx: typer.Context,
    memory_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="Memory id or unique prefix to mark "
                                                    "verified; without it, check every file reference.")] = None,
    confidence: Annotated[float | None, typer.Option("--confidence", min=0.0, max=1.0, help="Set the confidence too.")] = None,
    fix: Annotated[bool, typer.Option("--fix", help="Follow renames in lessons and checkpoints and mark dangling "
                                                    "and possibly stale records.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Verify: with ID, mark that memory (typically an agent's proposal) verified by you; without ID, check
    every file a lesson, checkpoint, decision or memory refers to against git HEAD (dangling references,
    renames, records whose files changed since they were written). Exit code 1 when something is off.

    Examples:

        synapse-nb memory verify mem_3f9a

        synapse-nb memory verify mem_3f9a --confidence 0.9

        synapse-nb memory verify            # check file references against HEAD

        synapse-nb memory verify --fix      # follow renames, mark dangling and stale records
    """
    v = _open(ctx)
    if memory_id is None:
        report = v.verify(fix=fix)
        if as_json:
            _echo_json(report.to_dict())
        else:
            typer.echo(str(report))
        if not report.ok and not fix:
            raise typer.Exit(1)
        return
    m = v.memories.verify(memory_id, confidence=confidence)
    _print_record(m, as_json, f"verified {m.id} {m.category}/{m.key}")


@memory_app.command("search")
def memory_search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Words to look for (any text is safe).")] = "",
    tag: Annotated[str | None, typer.Option("--tag", help="Only memories with this tag.")] = None,
    category: Annotated[str | None, typer.Option("--category", "-c", help="Only this category.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N results.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Full-text search over memories, best match first.

    Examples:

        synapse-nb memory search deploy

        synapse-nb memory search "run migrations" --category procedure --json
    """
    v = _open(ctx)
    recs = v.memories.search(query, tag=tag, category=category, limit=limit)
    _print_records(recs, as_json, "" if recs or as_json else _no_memories(v, query, tag, category))


@memory_app.command("expiring")
def memory_expiring(
    ctx: typer.Context,
    within: Annotated[str, typer.Option("--within", "-w", help="A duration such as 7d, 12h.")] = "7d",
    as_json: JsonOpt = False,
) -> None:
    """Memories that expire soon, soonest first.

    Examples:

        synapse-nb memory expiring

        synapse-nb memory expiring --within 30d --json
    """
    v = _open(ctx)
    recs = v.memories.expiring(within=within)
    if as_json:
        _print_records(recs, True, "")
        return
    if not recs:
        typer.echo(f"nothing expires within {within}")
    for m in recs:
        typer.echo(f"{m.id}  expires {when(m.expires_at, seconds=True)}  {m.summary_line()}")


@memory_app.command("export")
def memory_export(
    ctx: typer.Context,
    dest: Annotated[str | None, typer.Argument(help="File to write (default: stdout).")] = None,
) -> None:
    """Export the whole vault as JSON Lines, sorted and stable (diffable, reviewable, shareable).

    Examples:

        synapse-nb memory export vault.jsonl

        synapse-nb memory export > vault.jsonl
    """
    v = _open(ctx)
    if dest is None or dest == "-":
        sys.stdout.write(v.export_jsonl())
        return
    text = v.export_jsonl(dest)
    kinds = [json.loads(line).get("kind") for line in text.splitlines()[1:]]  # line 1 is the format header
    n_settings = kinds.count("setting")
    typer.echo(f"exported {plural(len(kinds) - n_settings, 'record')}"
               + (f" and {plural(n_settings, 'setting')}" if n_settings else "") + f" to {dest}", err=True)


@memory_app.command("import")
def memory_import(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(metavar="PATH", help="A JSON Lines export ('-' reads stdin).")],
    as_json: JsonOpt = False,
) -> None:
    """Import an export in one all-or-nothing transaction (identical records are skipped).

    Examples:

        synapse-nb memory import vault.jsonl

        cat vault.jsonl | synapse-nb memory import -
    """
    v = _open(ctx)
    counts = v.import_jsonl(sys.stdin if source == "-" else source)
    if as_json:
        _echo_json(counts)
    else:
        typer.echo("imported: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))


@app.command()
def remember(
    ctx: typer.Context,
    category: Annotated[str, typer.Argument(help="identity, preference, project, context, knowledge, mistake, procedure or relationship.")],
    key: Annotated[str, typer.Argument(help="snake_case key; the same key again updates that memory.")],
    content: Annotated[str, typer.Argument(help="The text to remember.")],
    tags: Annotated[str | None, typer.Option("--tags", "-t", help=_TAGS_HELP)] = None,
    priority: Annotated[str | None, typer.Option("--priority", "-p", metavar="critical|high|normal|low", help="Priority.")] = None,
    expires: Annotated[str | None, typer.Option("--expires", "-e", help="A duration (30d) or an ISO 8601 time.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember something (verified, since you are the human); the same category+key updates in place.

    Examples:

        synapse-nb remember procedure run_migrations "alembic upgrade head" --tags db,deploy --priority high

        synapse-nb remember context sprint_goal "Ship the v2 API" --expires 14d
    """
    v = _open(ctx)
    m = v.remember(category, key, content, tags=tags, priority=priority, expires=expires)
    verb = "remembered" if m.created_at == m.updated_at else "updated"
    _print_record(m, as_json, f"{verb} {m.id} {m.category}/{m.key} [{m.priority}]")


# ------------------------------------------------------------------------------------------------ recall
@recall_app.command("query")
def recall_query(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What you (or the agent) are about to do or ask.")],
    session: Annotated[str | None, typer.Option("--session", help="Session id: what it already received is not repeated.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Also show every candidate's score, matched terms and bar.")] = False,
    budget: Annotated[int | None, typer.Option("--budget", min=1, help="Token budget for the text.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall what is relevant to QUERY (``synapse-nb recall QUERY`` is the short form).

    Approved lessons come first, always; then the hits that clear the gate, or "nothing new" with its reason:
    nothing relevant, all already given to this --session, or relevant items over the --budget.

    Examples:

        synapse-nb recall "how do we run migrations?"

        synapse-nb recall query "deploy to prod" --session s1 --explain --json
    """
    v = _open(ctx)
    r = v.recall(query, session=session, budget_tokens=budget)
    if as_json:
        out = r.to_dict()
        if explain:
            out["explain"] = r.explain().to_dicts()
        _echo_json(out)
        return
    typer.echo(r.text)
    if r.empty_reason == "over_budget":
        typer.echo(f"hint: raise --budget (it was {r.bars.budget_tokens}) to get the relevant items", err=True)
    if explain:
        typer.echo("\n" + str(r.explain()))


@recall_app.command("eval")
def recall_eval(
    path: Annotated[str, typer.Argument(help="The LoCoMo dataset folder or JSON file.")] = "datasets/locomo",
    conversations: Annotated[int | None, typer.Option("--conversations", min=1, help="Only the first N conversations.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate recall on LoCoMo questions (retrieval metrics of the gate over each conversation).

    Examples:

        synapse-nb recall eval datasets/locomo --conversations 2

        synapse-nb recall eval datasets/locomo --json
    """
    from synapse_nb.eval import run_locomo_eval

    kwargs: dict[str, Any] = {}
    if conversations is not None:
        kwargs["conversations"] = list(range(conversations))  # the first N, by position in the file
    out = run_locomo_eval(path, **kwargs)
    out = out.to_dict() if hasattr(out, "to_dict") else out
    if as_json:
        _echo_json(out)
    else:
        _print_mapping(out)


def _print_mapping(out: Any, indent: str = "") -> None:
    if not isinstance(out, dict):
        typer.echo(f"{indent}{out}")
        return
    for k in out:
        v = out[k]
        if isinstance(v, dict):
            typer.echo(f"{indent}{k}:")
            _print_mapping(v, indent + "  ")
        elif isinstance(v, float):
            typer.echo(f"{indent}{k}: {v:.4f}")
        else:
            typer.echo(f"{indent}{k}: {v}")


# ------------------------------------------------------------------------------------------------ hooks, watch
def _repo_for(ctx: typer.Context, path: str | None) -> Any:
    from synapse_nb.errors import GitError
    from synapse_nb.gitscope import find_repo

    base = path if path is not None else (_state(ctx).vault or os.getcwd())
    if not os.path.isdir(os.path.expanduser(base)):
        raise GitError(f"{base} is not an existing folder (a typo?); name a folder inside the repository")
    repo = find_repo(base)
    if repo is None:
        raise GitError(f"{base} is not inside a git repository; hooks need git (run 'git init' first)")
    return repo


@hooks_app.command("install")
def hooks_install(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A folder inside the repository (default: current).")] = None,
) -> None:
    """Install post-commit / post-rewrite hooks that scan for reverts (existing hooks are chained).

    Examples:

        synapse-nb hooks install

        synapse-nb hooks install ~/project
    """
    from synapse_nb.gitscope import install_hooks

    for p in install_hooks(_repo_for(ctx, path)):
        typer.echo(f"installed {p}")


@hooks_app.command("uninstall")
def hooks_uninstall(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A folder inside the repository (default: current).")] = None,
) -> None:
    """Remove the hooks installed by ``hooks install`` (restoring chained ones).

    Examples:

        synapse-nb hooks uninstall
    """
    from synapse_nb.gitscope import uninstall_hooks

    removed = uninstall_hooks(_repo_for(ctx, path))
    if not removed:
        typer.echo("no synapse-nb hooks installed")
    for p in removed:
        typer.echo(f"removed {p}")


@app.command()
def watch(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A folder inside the repository (default: current).")] = None,
    every: Annotated[int | None, typer.Option("--every", min=1, help="Auto checkpoint every N changed files (default: the vault setting).")] = None,
) -> None:
    """Watch the repository: scan for reverts on each commit, auto-checkpoint as changes pile up (Ctrl-C stops).

    Examples:

        synapse-nb watch

        synapse-nb watch ~/project --every 5
    """
    from synapse_nb.gitscope.watch import Watcher

    repo = _repo_for(ctx, path)
    v = _open(ctx, path)
    n = every if every is not None else int(v.settings.get("auto_checkpoint_every"))

    def on_commit(state: Any) -> None:
        created = v.lessons.scan()
        typer.echo(f"commit {str(getattr(state, 'commit', '') or '')[:12]} on {getattr(state, 'branch', None) or '-'}: "
                   f"{plural(len(created), 'new pending lesson')}")

    def on_files(paths: list[str]) -> None:
        c = v.checkpoint(f"auto checkpoint: {plural(len(paths), 'more changed file')}", files=paths[:500],
                         origin="watch")
        typer.echo(f"checkpoint {c.id}: {plural(len(paths), 'changed file')}")

    w = Watcher(repo.work_tree, on_commit=on_commit, on_files_changed=on_files, every_files=n,
                lock_path=v.path / "watch.lock")
    typer.echo(f"watching {path or os.getcwd()} (auto checkpoint every {plural(n, 'changed file')}); Ctrl-C stops",
               err=True)
    w.run_forever()


# ------------------------------------------------------------------------------------------------ index
@index_app.command("rebuild")
def index_rebuild(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Rebuild the retrieval index from the SQLite store (nothing is lost: the index is a cache).

    Examples:

        synapse-nb index rebuild
    """
    v = _open(ctx)
    n = v.index.rebuild()
    if as_json:
        _echo_json({"indexed": n})
    else:
        typer.echo(f"indexed {plural(n, 'record')}")


@index_app.command("check")
def index_check(
    ctx: typer.Context,
    repair: Annotated[bool, typer.Option("--repair", help="Fix the drift found.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Compare the index with the store (missing, stale, extra ids); exit 1 when it drifted and was not repaired.

    An index not built yet (a new vault: it is built on first use) is not drift: exit 0.

    Examples:

        synapse-nb index check

        synapse-nb index check --repair --json
    """
    v = _open(ctx)
    rep = v.index.check(repair=repair)
    out = {"ok": bool(rep.ok), "built": bool(rep.built), "repaired": bool(repair and not rep.ok),
           "missing": list(rep.missing), "stale": list(rep.stale), "extra": list(rep.extra)}
    if as_json:
        _echo_json(out)
    elif not rep.built:
        typer.echo("index not built yet (it is built on first use): built it now" if repair else
                   f"index not built yet (it is built on first use); to build it now: {PROG} index rebuild")
    elif rep.ok:
        typer.echo("index ok: it matches the store")
    else:
        typer.echo(f"index drift: {len(rep.missing)} missing, {len(rep.stale)} stale, {len(rep.extra)} extra"
                   + (" (repaired)" if repair else f" (fix it with: {PROG} index check --repair)"))
    if not rep.ok and not repair:
        raise typer.Exit(1)


# ------------------------------------------------------------------------------------------------ gate
@gate_app.command("eval")
def gate_eval(
    path: Annotated[str, typer.Argument(help="A labelled file (CSV/JSONL/Parquet), a dataset folder or a bundled name.")],
    train_split: Annotated[str, typer.Option("--train-split", help="Split the router is fitted on.")] = "train",
    val_split: Annotated[str | None, typer.Option("--val-split", help="Split thresholds are calibrated on ('' for none).")] = "val",
    test_split: Annotated[str, typer.Option("--test-split", help="Split that is scored.")] = "test",
    criterion: Annotated[str, typer.Option("--criterion", metavar="accuracy|balanced", help="Calibration criterion.")] = "accuracy",
    per_route: Annotated[bool, typer.Option("--per-route", help="Calibrate one threshold per route.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fit the gate's router on one split, calibrate on another, score the test split.

    Examples:

        synapse-nb gate eval datasets/agent_vault

        synapse-nb gate eval datasets/clinc150 --criterion balanced --json
    """
    from synapse_nb.eval import run_gate_eval

    out = run_gate_eval(path, train_split=train_split, val_split=val_split or None, test_split=test_split,
                        criterion=criterion, per_route=per_route)
    if as_json:
        _echo_json(out)
    else:
        _print_mapping(out)


# ------------------------------------------------------------------------------------------------ mcp
@app.command("mcp")
def mcp_serve(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="Project folder (default: --vault, else the current folder).")] = None,
) -> None:
    """Serve the vault to an agent over MCP (stdio). The agent can only propose; you approve.

    Examples:

        synapse-nb mcp

        synapse-nb --mind work mcp ~/project
    """
    from synapse_nb.mcp.server import serve
    from synapse_nb.vault import find_vault_dir

    st = _state(ctx)
    find_vault_dir(path if path is not None else st.vault)  # a mistyped folder stops here, before serving
    serve(path if path is not None else st.vault, mind=st.mind)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``synapse-nb`` (and ``python -m synapse_nb``): run and return the exit code.

    >>> main(["--version"])  # doctest: +SKIP
    synapse-nb 0.1.0
    0
    """
    cmd = typer.main.get_command(app)
    return int(cmd.main(argv, prog_name=PROG, standalone_mode=False) or 0)
