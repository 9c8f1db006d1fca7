"""What every command module shares: the root app, error handling at the edge, opening the vault, printing.

Only :mod:`typer` and the standard library are imported here (plus :mod:`synapse_nb.errors`,
:mod:`synapse_nb.people` and :mod:`synapse_nb.render`, which are standard library only): ``synapse-nb --help`` and
``--version`` load nothing else. Each command imports the rest of the package when it runs.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, overload

import typer
from typer.core import TyperGroup

from synapse_nb import __version__
from synapse_nb.cli._help import reflow
from synapse_nb.errors import SynapseError
from synapse_nb.people import People  # (re-exported: the listings read it from here)
from synapse_nb.provenance import inline
from synapse_nb.render import (
    plural,
    shown_id,  # (review 41: an id as a reader shows it)
    tags_text,
    when,
)

if TYPE_CHECKING:  # pragma: no cover
    # typer 0.29 vendors click: a group's parse_args receives this Context (typer.Context is a subclass)
    from typer._click.core import Context as ClickContext

    from synapse_nb.models import Record
    from synapse_nb.vault import Notice, ReadableVault, Vault, VaultSession

__all__ = [
    "CREATING_COMMANDS", "PROG", "TAGS_HELP", "VAULT_WIDE_COMMANDS",
    "Group", "JsonOpt", "LimitOpt", "People", "SourceOpt", "YesOpt", "app", "cli_actor",
    "echo_json", "echo_legend", "fail", "filters", "group_help", "limit_arg", "listing_line", "none_found",
    "open_vault_for", "print_mapping", "print_record", "print_records", "record_json", "refuse_in_an_agents_shell",
    "require_human_here", "state",
]

PROG = "synapse-nb"

#: The commands that write and so may create a vault (inside an existing folder only, saying so on stderr).
#: Every other command reads: it never creates a vault and fails with "no vault at PATH ..." instead.
CREATING_COMMANDS = frozenset({
    "checkpoint create", "decision log", "init", "lessons scan", "memory import", "remember", "settings set",
    "watch",
})
#: The commands whose --mind does not matter (they act on the whole vault): no word on an empty mind.
VAULT_WIDE_COMMANDS = frozenset({
    "index check", "index rebuild", "memory export", "memory import", "memory prune-history", "settings get",
    "settings list", "settings reset", "settings set", "watch",
})


# ------------------------------------------------------------------------------------------------ errors at the edge
def _one_line(text: str) -> str:
    """An error's text as one quoted line: it may carry what an agent wrote (a file's contents a library echoes, a
    name), so banner, label and mark look-alikes are neutralised like any record's (review 23)."""
    return inline(text)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line on stderr and stop with ``code``."""
    typer.echo(f"{PROG}: error: {_one_line(message)}", err=True)
    raise typer.Exit(code)


_RST_LITERAL = re.compile(r"``(.+?)``", re.S)


def _plain_help(text: str | None) -> str | None:
    """A docstring as help text: an RST literal (````x````, right for the API docs) as ``'x'``."""
    return None if text is None else _RST_LITERAL.sub(r"'\1'", text)


def _polish_help(cmd: Any) -> None:
    """Help as a terminal shows it, in every command below ``cmd`` (the one place docstrings become help text):

    - a flag (``--json``, ``--explain``, ``--help`` itself) gets an empty metavar: typer's help printed ``--json
      <bool>`` as if the flag took a value;
    - a docstring's RST literals read as quotes: ``recall query --help`` printed ````synapse-nb recall QUERY````
      verbatim (review 68);
    - a docstring's paragraphs are one line each and its examples keep their lines, each short enough for 80
      columns (:func:`synapse_nb.cli._help.reflow`): the source's line breaks broke sentences and examples in the
      middle (review 78).
    """
    help_text = _plain_help(cmd.help)
    cmd.help = None if help_text is None else reflow(help_text, plain=getattr(cmd, "rich_markup_mode", None) is None)
    names = (getattr(cmd, "context_settings", None) or {}).get("help_option_names", ["--help"])
    for param in [*cmd.params, cmd.get_help_option(SimpleNamespace(help_option_names=names))]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if param is not None and isinstance(getattr(param, "help", None), str):
            param.help = _plain_help(param.help)
    for sub in getattr(cmd, "commands", {}).values():
        _polish_help(sub)


class Group(TyperGroup):
    """A command group: called without a command, it prints its help and exits with 2."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            raise typer.Exit(2)
        return super().parse_args(ctx, args)


class _RootGroup(Group):
    """The root command: turns every error into one line on stderr and an exit code (0, 1, 2)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> int:
        _polish_help(self)
        code, aborted, said = 0, False, ""
        try:
            rv = super().main(args, prog_name or PROG, complete_var, standalone_mode=False,
                              windows_expand_args=windows_expand_args, **extra)
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except typer.TyperException as exc:  # typer's (click's) own errors: bad usage (exit 2), bad files (1)
            ctx = getattr(exc, "ctx", None)  # usage errors carry the command they happened in
            if exc.exit_code == 2:
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                said = f"{PROG}: usage error: {_one_line(exc.format_message())}{hint}"
            else:
                said = f"{PROG}: error: {_one_line(exc.format_message())}"
            code = exc.exit_code
        except (typer.Abort, KeyboardInterrupt, EOFError):
            said = f"{PROG}: aborted"
            code, aborted = 1, True
        except SynapseError as exc:
            said = f"{PROG}: error: {_one_line(str(exc)) or type(exc).__name__}"
            code = 1
        except typer.Exit as exc:
            code = exc.exit_code
        except BrokenPipeError:
            code = 1
        except Exception as exc:  # never a traceback for a user; SYNAPSE_DEBUG=1 shows it
            if os.environ.get("SYNAPSE_DEBUG"):
                raise
            said = (f"{PROG}: unexpected error ({type(exc).__name__}): {_one_line(str(exc))} "
                    "(set SYNAPSE_DEBUG=1 for a traceback)")
            code = 1
        if code and not aborted:  # refused or failed; not a watcher stopped with Ctrl-C
            _undo_empty_creation()
        _say_created()  # the vaults this command created and kept, before its error (review 78)
        if said:
            typer.echo(said, err=True)
        if not code:
            _say_new_minds()
        _SESSIONS.clear()
        _NEW_MINDS.clear()
        if standalone_mode:
            sys.exit(code)
        return code


# ------------------------------------------------------------------------------------------------ the root app
app = typer.Typer(
    name=PROG, cls=_RootGroup, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


def group_help(summary: str, *examples: str) -> str:
    """A command group's help: the summary, then its examples."""
    return summary + "\n\nExamples:\n\n" + "\n\n".join(f"    {e}" for e in examples)


@dataclass
class _State:
    vault: str | None = None
    mind: str = "default"
    actor: str | None = None


def _agent_marker() -> str | None:
    from synapse_nb.context import agent_environment  # standard library only, like this module

    return agent_environment()


def cli_actor(given: str | None) -> str:
    """Who the CLI acts as: ``--actor``, else ``SYNAPSE_ACTOR``, else the agent in an agent's environment (a shell a
    coding agent started: :func:`synapse_nb.context.agent_environment`), else the user.

    An agent's shell cannot make itself the user: ``--actor user`` (or ``SYNAPSE_ACTOR=user``) there is refused.
    """
    raw = given if given is not None else os.environ.get("SYNAPSE_ACTOR", "").strip() or None
    marker = _agent_marker()
    if raw is None:
        return "agent" if marker else "user"
    actor = raw.strip().lower()
    if actor not in ("user", "agent"):
        fail(f"actor {raw!r} is not accepted; use user or agent (--actor, SYNAPSE_ACTOR)", 2)
    if actor == "user" and marker:
        fail(f"this shell belongs to an agent ({marker}): the CLI acts as the agent here, and --actor user (or "
             "SYNAPSE_ACTOR=user) is refused; a human runs human-only commands in their own terminal")
    return actor


def refuse_in_an_agents_shell(refusal: str) -> None:
    """Fail with ``refusal`` (what the command is and why it is a person's) when this process is in an agent's
    environment: commands whose effect outlives the call (hooks, a watcher, the harness's settings)."""
    marker = _agent_marker()
    if marker is not None:
        fail(f"{refusal}, and this shell belongs to an agent ({marker}); run it in your own terminal")


def require_human_here(ctx: typer.Context, yes: bool, action: str) -> None:
    """Before a human-only command (approve, reject, verify, import, prune): the CLI must act as the user, in no
    agent's environment, and at a terminal, unless ``--yes`` says a human runs it from a script.

    An agent runs commands without a terminal (its shell has none); a human at a terminal or with ``--yes`` passes.
    The core refuses the agent actor and agents' environments again (``Context.require_human``).
    """
    st = state(ctx)
    actor = cli_actor(st.actor)
    if actor != "user":
        marker = _agent_marker()
        why = f"this shell belongs to an agent ({marker})" if marker else "the CLI acts as the agent (--actor agent)"
        fail(f"{action} is for a human only and {why}; a human runs it in their own terminal")
    if not yes and not sys.stdin.isatty():
        fail(f"{action} is for a human only and there is no terminal here (an agent's shell has none); run it in "
             "your terminal, or pass --yes when you, a human, run it from a script")


YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Confirm that you, a human, run this human-only command "
                                      "without a terminal (from a script or a pipe).")]


def state(ctx: typer.Context) -> _State:
    """The root options (``--vault``, ``--mind``) of this invocation."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, _State) else _State()


def _version(value: bool) -> None:
    if value:
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
    actor: Annotated[str | None, typer.Option(
        "--actor", metavar="user|agent",
        help="Act as the user (a human: writes are verified) or as an agent (writes are proposals). Default: "
             "SYNAPSE_ACTOR, else agent in a shell a coding agent started (CLAUDECODE=1, GEMINI_CLI=1, ...: see "
             "docs/agents.md), else user. An agent's shell cannot choose user.")] = None,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Memory for LLM agents and the people who steer them: checkpoints, decisions, lessons, memories, recall.

    The CLI acts as the human user (what it writes is verified, and only a human approves lessons), except in a
    shell a coding agent started, or with --actor agent / SYNAPSE_ACTOR=agent: there it acts as the agent, and
    human-only commands (approve, reject, verify, import, prune) are refused. Without a terminal, human-only
    commands also need --yes.

    Examples:

        synapse-nb demo

        synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py --next-step "Run pytest"

        synapse-nb --vault ~/project recall "how do we run migrations?"
    """
    ctx.obj = _State(vault=vault, mind=mind, actor=actor)


# ------------------------------------------------------------------------------------------------ the vault
def _command_name(ctx: typer.Context) -> str:
    names: list[str] = []
    c: ClickContext | None = ctx
    while c is not None and c.parent is not None:
        names.append(c.info_name or "")
        c = c.parent
    return " ".join(reversed(names))


@overload
def open_vault_for(ctx: typer.Context, path: str | None = None, *, offline: Literal[False] = False) -> Vault: ...
@overload
def open_vault_for(ctx: typer.Context, path: str | None = None, *, offline: Literal[True]) -> ReadableVault: ...
def open_vault_for(ctx: typer.Context, path: str | None = None, *, offline: bool = False) -> ReadableVault:
    """The vault for this command: ``path`` (a command's PATH argument), else ``--vault``, else SYNAPSE_HOME/cwd.

    Opened through a :class:`~synapse_nb.vault.VaultSession`: reading commands never create a vault; writing ones
    (:data:`CREATING_COMMANDS`) create it inside an existing folder and say where on stderr, once, and a command
    that then fails takes it back when nothing was written. With ``SYNAPSE_READONLY=1`` the vault is opened read-only
    (a vault on a read-only disk or share): reads work, every write fails with a clear error. ``offline`` (read
    commands that can answer from a stale copy): a team vault whose server cannot be reached gives this machine's
    copy (``v.offline`` is True: narrow on it) instead of an error.
    """
    from synapse_nb.vault import VaultSession  # here: the store and the kinds load only when a command runs

    st = state(ctx)
    session = VaultSession(path if path is not None else st.vault, mind=st.mind, actor=cli_actor(st.actor),
                           offline=offline, on_notice=_say, surface="cli")
    _SESSIONS.append(session)
    command = _command_name(ctx)
    v = (session.write() if command in CREATING_COMMANDS else session.read_or_stale() if offline
         else session.read())
    if command == "watch":  # runs until stopped: its new vault is said now
        _say_created()
    if not v.offline and command not in VAULT_WIDE_COMMANDS:
        _check_mind(v, writes=command in CREATING_COMMANDS)
    return v


def _check_mind(v: Vault, *, writes: bool) -> None:
    """A mind that holds no record while the vault's other minds do (review 68 F6: a mistyped ``--mind`` was a
    silent "no memories yet", or a new mind): a read says so on stderr now, naming the minds and a close one; a write
    says so once it has made the mind (:func:`_say_new_minds`). Stdout, recall's text included, is unchanged."""
    from synapse_nb.vault.minds import empty_mind_line, other_minds

    minds = other_minds(v)
    if minds is None:
        return
    if writes:
        _NEW_MINDS.append((v, minds))
    else:
        typer.echo(f"{PROG}: {empty_mind_line(v.mind, minds)}", err=True)


def _say_new_minds() -> None:
    """After a command that succeeded: each mind a write of it made, among other minds, said on stderr once."""
    from synapse_nb.vault.minds import made_mind_line

    while _NEW_MINDS:
        if (line := made_mind_line(*_NEW_MINDS.pop(0))) is not None:
            typer.echo(f"{PROG}: {line}", err=True)


def _say(notice: Notice) -> None:
    """A vault notice, as the CLI says it: created on stderr, once the command is over (:func:`_say_created`), so a
    refused first write, whose new vault is taken back, says its error alone (review 78: three lines, "created", the
    error, "removed", for a vault the user never saw); a take-back of a vault already announced says so. The recall
    text carries the borrowed line, the stale copy's answer its STALE line, the store's error the read-only refusal.
    """
    if notice.kind == "created":
        _UNSAID.append(notice)
    elif notice.kind == "removed":
        held = [n for n in _UNSAID if n.path == notice.path]
        for n in held:
            _UNSAID.remove(n)
        if not held:
            typer.echo(notice.line(PROG), err=True)


def _say_created() -> None:
    """Say each vault this invocation created and kept (``watch``, which runs until stopped, says it at once)."""
    while _UNSAID:
        typer.echo(_UNSAID.pop(0).line(PROG), err=True)


#: the vaults this invocation created, not said yet
_UNSAID: list[Notice] = []


#: the vault sessions of this invocation: a command that fails before writing anything takes back the vault it created
_SESSIONS: list[VaultSession] = []
#: the handles of this invocation's writes to a mind that held nothing, with the vault's minds before
_NEW_MINDS: list[tuple[Vault, tuple[str, ...]]] = []


def _undo_empty_creation() -> None:
    """After a failed command: a vault this invocation created and nothing was written to is taken back."""
    while _SESSIONS:
        _SESSIONS.pop().take_back()


# ------------------------------------------------------------------------------------------------ printing
def echo_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (non-ASCII kept)."""
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def listing_line(r: Record) -> str:
    """One record as a listing line: full id, time, then its summary (provenance mark first)."""
    return f"{shown_id(r.id)}  {when(r.created_at, seconds=True)}  {r.summary_line()}"


def record_json(r: Record) -> dict[str, Any]:
    """A record as ``--json`` prints it: ``provenance`` first, then its fields with every text quoted (one line,
    invisible characters escaped, banner look-alikes neutralised: :func:`synapse_nb.provenance.record_json`).
    ``synapse-nb memory export`` is the exact, byte-for-byte form."""
    from synapse_nb.provenance import record_json as quoted_record  # standard library only

    return quoted_record(r)


def print_records(records: Iterable[Record], as_json: bool, empty: str, *, more: str = "") -> None:
    """A listing: JSON records, or one line each, or ``empty`` when there are none; ``more`` (what the limit left
    out: :class:`People`) goes to stderr, so ``--json`` stays the list of records."""
    records = list(records)
    if as_json:
        echo_json([record_json(r) for r in records])
    elif not records:
        typer.echo(empty)
    else:
        echo_legend(records)
        for r in records:
            typer.echo(listing_line(r))
    if more:
        typer.echo(more, err=True)


def echo_legend(records: Iterable[Record | None]) -> None:
    """Before a listing an agent may read: what an ``[agent · unverified]`` line is, when one is listed (the line
    recall and the restore pack say: :func:`synapse_nb.recall.assembly.legend_for`)."""
    from synapse_nb.recall.assembly import legend_for  # recall's, on first use

    if legend := legend_for(records):
        typer.echo(legend)


def print_record(record: Record, as_json: bool, text: str) -> None:
    """One record: its JSON, or ``text``."""
    if as_json:
        echo_json(record_json(record))
    else:
        typer.echo(text)


def none_found(total: int, noun: str, plural_form: str, filtered: str) -> str:
    """What an empty listing says: "no decisions yet" only when the mind has none at all, else what the
    filters excluded, e.g. "no decisions tagged db (5 decisions in all)"."""
    if total == 0:
        return f"no {plural_form} yet"
    return f"{filtered} ({plural(total, noun, plural_form)} in all)"


def filters(query: str | None, tag: str | None = None, category: str | None = None, source: str | None = None) -> str:
    """The filters of a search, as words: ' by agents tagged db in category procedure matching "run"'."""
    words = {"user": " by a person", "agent": " by agents"}.get((source or "").strip().lower(), "")
    if tag is not None:
        words += f" tagged {tags_text([tag])}"
    if category is not None:
        words += f" in category {category.strip().lower()}"
    if query and query.strip():
        words += f" matching {query.strip()!r}"
    return words


def print_mapping(out: Any, indent: str = "") -> None:
    """A nested dict of figures as indented ``key: value`` lines (floats to 4 places)."""
    if not isinstance(out, dict):
        typer.echo(f"{indent}{out}")
        return
    for k in out:
        v = out[k]
        if isinstance(v, dict):
            typer.echo(f"{indent}{k}:")
            print_mapping(v, indent + "  ")
        elif isinstance(v, float):
            typer.echo(f"{indent}{k}: {v:.4f}")
        else:
            typer.echo(f"{indent}{k}: {v}")


# ------------------------------------------------------------------------------------------------ options
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON with stable field names instead of text.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=0, help="Show at most N records (0: all).")]
SourceOpt = Annotated[str | None, typer.Option(
    "--source", help="Only a person's records (user) or only agents' (agent); default: both, people's first.")]
TAGS_HELP = ("Comma-separated tags, one word each (trimmed, lower-cased, a leading # dropped: "
             "'#DB,deploy' gives db, deploy).")


def limit_arg(n: int) -> int | None:
    """``--limit 0`` means all."""
    return None if n == 0 else n
