"""``synapse-nb hook EVENT``: the memory loop run by an agent's lifecycle hooks, not by the agent's goodwill.

An agent harness (Claude Code, Codex CLI, Gemini CLI, ...) runs ``synapse-nb hook EVENT`` at fixed moments and
hands it the event as JSON on stdin. What each event does:

========================  ===================================================================================
event                     what the hook does
========================  ===================================================================================
``session-start``         the approved-lesson banner and the latest checkpoint of this branch for the agent,
                          the pending-lesson count for the human; after a compaction (``source`` compact),
                          the restore pack (banner, checkpoint, recent decisions, key memories)
``prompt``                ``recall(prompt, session=session_id)``: only what is new for the session; prints
                          NOTHING when nothing is new
``pre-compact``           saves a checkpoint from what the session knows (its task, the files it edited) and
                          returns the restore pack
``post-tool``             after a file-editing tool: counts the edit; every ``auto_checkpoint_files`` edits
                          (else ``auto_checkpoint_every``, default 10) writes an automatic checkpoint, silently
``stop``, ``session-end`` logs the session as an episode (its task, the files it changed) when it changed files
                          since its last episode, silently
========================  ===================================================================================

Claude Code's names (``SessionStart``, ``UserPromptSubmit``, ``PreCompact``, ``PostToolUse``, ``Stop``,
``SessionEnd``) and Gemini CLI's (``BeforeAgent``, ``AfterTool``, ``PreCompress``, ``AfterAgent``) are accepted
for the same events. The rules every run keeps:

- **never break the user's prompt**: malformed or missing stdin, no vault, a locked or corrupt database, an
  exception, a run past its time limit (``SYNAPSE_AGENT_HOOK_TIMEOUT`` seconds, default 10) all end with exit
  status 0, empty stdout and one line on stderr; but a ``session-start`` that fails where there is a vault (an
  unreadable or locked one, an exception, its time limit) prints :data:`START_FAILED` as the agent's context, one
  neutral line naming the MCP tools that load what it could not (s21: the session started without the approved
  lessons, and the agent was never told), never the error's text nor anything of the vault; and the person is told
  (Claude Code's ``systemMessage``: stderr is not shown a person for a hook that exits 0) that the session started
  without the approved lessons, with why as one of a few fixed classes (:data:`FAILED_WHY`) and the command that
  says more (:data:`START_FAILED_NOTICE`); a failing ``prompt`` run where there is a vault tells the person the same
  (:data:`PROMPT_FAILED_NOTICE`; review 95: an agent's one line in ``team.toml`` silenced every hook, unseen);
- **never create a vault**, and with ``SYNAPSE_READONLY=1`` write nothing at all;
- **act as the agent**: everything it writes (checkpoints, episodes) is the agent's proposal. The one thing it
  reads as the user is the *number* of pending lessons, which goes to the human only (Claude Code's
  ``systemMessage``; stderr in text form), never into the agent's context; so does the number of approved lessons
  a vault read as borrowed keeps from the agent (at every session start, and once a session at a prompt);
- **at most 10,000 characters** of context (whole lines; what was cut is said).

Output: with JSON on stdin that names its event (``hook_event_name``), a JSON answer in Claude Code's form
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}, "systemMessage": ...}`` (Gemini CLI
reads the same); otherwise plain text. ``--format text|json`` chooses.

The generic form, for any agent: ``synapse-nb hook prompt --session ID --text "..."``.

Examples
--------
>>> out = respond(["prompt", "--text", "how do we deploy?"], "", env={})  # doctest: +SKIP
>>> out.stdout                                                           # doctest: +SKIP
''
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from synapse_nb.agents.events import (
    CLAUDE_EVENTS,
    EDIT_TOOLS,
    EVENTS,
    MAX_CONTEXT_CHARS,
    HookAnswer,
    HookEvent,
    canonical_event,
    cut_context,
    parse_event,
)
from synapse_nb.errors import (
    OfflineError,
    ServerRefusedError,
    StoreError,
    SynapseError,
    TeamPinError,
    ValidationError,
    VaultNotFoundError,
)
from synapse_nb.stdio import use_utf8

__all__ = ["CLAUDE_EVENTS", "DEFAULT_TIMEOUT_S", "EDIT_TOOLS", "EVENTS", "FAILED_WHY", "MAX_CONTEXT_CHARS",
           "PROMPT_FAILED_NOTICE", "START_FAILED", "START_FAILED_NOTICE", "HookAnswer", "HookEvent", "HookOutput",
           "canonical_event", "is_hook_call", "main", "parse_event", "render", "respond"]

#: Most characters read from stdin.
MAX_STDIN_CHARS = 8_000_000
#: Seconds a run may take before it gives up (exit 0, empty stdout): ``SYNAPSE_AGENT_HOOK_TIMEOUT``.
DEFAULT_TIMEOUT_S = 10.0
#: The share of the limit the semantic channel may spend embedding queued writes (``store/index/queue.py``'s
#: ``DEADLINE_ENV`` names the variable): later ones wait for a later run, recall answers meanwhile from BM25 and
#: the vectors already there (review 21: two long agent memories made every run pass its limit).
_EMBED_SHARE = 0.5
_EMBED_DEADLINE = "SYNAPSE_EMBED_DEADLINE"
_PROG = "synapse-nb hook"
#: What a ``session-start`` run that could not answer gives the agent (its stdout is the session's context): that the
#: memory was not loaded and which MCP tools load it. Neutral and fixed: no error text, no vault text, no path.
START_FAILED = ("synapse-nb: this session's project memory (the approved lessons and the latest checkpoint) could not "
                "be loaded; call the synapse-nb MCP tools get_approved_memory and restore_checkpoint yourself, and "
                "recall before each task.")
#: Why a ``session-start`` or ``prompt`` run could not read the memory, as the person's notice says it: a few fixed
#: classes, never the error's text (it quotes what anyone can write: ``team.toml``'s URL, a path).
FAILED_WHY = {
    "team": "this folder's .synapse/team.toml names a team server or agent login no person confirmed on this machine",
    "offline": "the team vault's server could not be reached, or refused the connection",
    "store": "the vault could not be opened or read",
    "timeout": "it ran out of time",
    "error": "an error",
}
#: What the person is shown (Claude Code's ``systemMessage``; never the agent's context) when a ``session-start`` run
#: could not answer: the session started without the approved lessons (review 95: the agent was told, in its context,
#: and the reason went to stderr, which Claude Code does not show a person for a hook that exits 0).
START_FAILED_NOTICE = ("synapse-nb: this session started WITHOUT your approved lessons and the latest checkpoint: the "
                       "SessionStart hook could not load them ({why}); run `synapse-nb memory status` in your own "
                       "terminal to see why")
#: The same for a ``prompt`` run (each prompt whose hook fails says it: the memory did not reach the agent then).
PROMPT_FAILED_NOTICE = ("synapse-nb: the project memory (your approved lessons, the relevant records) did not reach "
                        "the agent with this prompt: the prompt hook could not read it ({why}); run `synapse-nb "
                        "memory status` in your own terminal to see why")


@dataclass(frozen=True)
class HookOutput:
    """What the process prints: ``stdout`` (maybe empty) and ``stderr`` (one line or empty)."""

    stdout: str = ""
    stderr: str = ""


def render(event: HookEvent, answer: HookAnswer, fmt: str = "auto") -> HookOutput:
    """The printed form of ``answer``: JSON in Claude Code's shape (``fmt`` json, or auto with structured input),
    else plain text (the human's notice then goes to stderr)."""
    context = cut_context(answer.context.strip("\n")) if answer.context.strip() else ""
    as_json = fmt == "json" or (fmt == "auto" and event.structured)
    if not as_json:
        err = answer.stderr or (answer.notice if answer.notice else "")
        return HookOutput(stdout=context + "\n" if context else "", stderr=err)
    obj: dict[str, Any] = {}
    if context and event.name in ("session-start", "prompt"):
        obj["hookSpecificOutput"] = {"hookEventName": event.harness_name or CLAUDE_EVENTS[event.name],
                                     "additionalContext": context}
    notice = answer.notice if answer.json_notice is None else answer.json_notice
    if notice:
        obj["systemMessage"] = notice
    return HookOutput(stdout=json.dumps(obj, ensure_ascii=False) + "\n" if obj else "", stderr=answer.stderr)


# ------------------------------------------------------------------------------------------------ the process
_GLOBAL = {"--vault", "--mind", "--actor"}  # --actor is accepted and ignored: a hook always acts as the agent
_OPTS = {"--session", "--text", "--file", "--source", "--format"}


def _split(argv: Sequence[str]) -> tuple[dict[str, str], list[str]] | None:
    """(global options, the arguments after ``hook``), or None when ``argv`` is not a hook call."""
    glob: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, val = a.partition("=")
        if name in _GLOBAL:
            if not eq:
                if i + 1 >= len(argv):
                    return None
                val, i = argv[i + 1], i + 1
            glob[name] = val
            i += 1
            continue
        if a == "hook":
            return glob, list(argv[i + 1:])
        return None
    return None


def is_hook_call(argv: Sequence[str]) -> bool:
    """True when ``argv`` (the command line after the program) runs ``synapse-nb [--vault P] [--mind M] hook ...``
    without asking for help: the light path that never loads the rest of the CLI."""
    split = _split(argv)
    return split is not None and not any(a in ("--help", "-h") for a in split[1])


def _parse_hook_args(args: list[str]) -> tuple[str, dict[str, Any]]:
    if not args or args[0].startswith("-"):
        raise ValidationError(f"give the event: synapse-nb hook EVENT (one of {', '.join(EVENTS)})")
    event = args[0]
    opts: dict[str, Any] = {"--file": []}
    i = 1
    while i < len(args):
        name, eq, val = args[i].partition("=")
        if name not in _OPTS:
            raise ValidationError(f"unknown argument {args[i]!r} for synapse-nb hook; "
                                  f"accepted: {', '.join(sorted(_OPTS))}")
        if not eq:
            if i + 1 >= len(args):
                raise ValidationError(f"{name} needs a value")
            val, i = args[i + 1], i + 1
        if name == "--file":
            opts["--file"].append(val)
        else:
            opts[name] = val
        i += 1
    if opts.get("--format", "auto") not in ("auto", "text", "json"):
        raise ValidationError(f"--format {opts['--format']!r} is not accepted; use auto, text or json")
    return event, opts


def respond(argv: Sequence[str], stdin: str, *, env: Mapping[str, str] | None = None, vault: str | None = None,
            mind: str | None = None, emit: Callable[[HookOutput], None] | None = None) -> HookOutput:
    """The whole run for ``argv`` (the arguments after ``hook``) and ``stdin``, as what it prints; never raises.

    ``vault`` and ``mind`` are the root options when the call came through the CLI. ``emit`` prints the output
    while the vault is still open: what the answer gives is marked as given to the session only after it returns
    (review 27); an error after that is the stderr line of an output whose stdout was already emitted.
    """
    name = argv[0] if argv else "?"
    shown: list[HookOutput] = []
    failed = _failed(argv, stdin)
    why = "error"
    try:
        event_name, opts = _parse_hook_args(list(argv))
        name = event_name
        event = parse_event(event_name, stdin, session=opts.get("--session"), text=opts.get("--text"),
                            files=opts["--file"], source=opts.get("--source"))
        name = event.name
        from synapse_nb.agents.handlers import handle  # the vault and recall load only now

        def deliver(answer: HookAnswer) -> None:
            out = render(event, answer, opts.get("--format", "auto"))
            if emit is not None:
                emit(out)  # raises when it could not print: nothing is then marked as given
            shown.append(out)

        handle(event, vault=vault, mind=mind or "default", env=env, deliver=deliver)
        return shown[0]
    except VaultNotFoundError as exc:  # no vault here: nothing to load, nothing failed
        err, failed = f"{_PROG}: {name}: {_quoted(exc) or type(exc).__name__}", None
    except SynapseError as exc:
        err, why = f"{_PROG}: {name}: {_quoted(exc) or type(exc).__name__}", _why(exc)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the user's prompt
        err = f"{_PROG}: {name}: unexpected {type(exc).__name__}: {_quoted(exc)}"
    if shown:  # printed before it failed: that stands
        return HookOutput(stdout=shown[0].stdout, stderr=err)
    return HookOutput(stdout=failed(why).stdout if failed is not None else "", stderr=err)


def _why(exc: BaseException) -> str:
    """The class of :data:`FAILED_WHY` an error is."""
    if isinstance(exc, TeamPinError):
        return "team"
    if isinstance(exc, OfflineError | ServerRefusedError):
        return "offline"
    return "store" if isinstance(exc, StoreError) else "error"


def _failed(argv: Sequence[str], stdin: str) -> Callable[[str], HookOutput] | None:
    """What a run for ``argv`` (after ``hook``) prints when it cannot answer, by why (a key of :data:`FAILED_WHY`), in
    the answer's form (JSON in Claude Code's shape for structured input or ``--format json``, else text): for
    ``session-start`` :data:`START_FAILED` for the agent and :data:`START_FAILED_NOTICE` for the person, for
    ``prompt`` :data:`PROMPT_FAILED_NOTICE` for the person (the text form prints no notice: its stderr line is the
    error), None for any other event (they print nothing)."""
    try:
        event_name, opts = _parse_hook_args(list(argv))
        name = canonical_event(event_name)
    except ValidationError:
        return None
    if name not in ("session-start", "prompt"):
        return None
    try:
        event = parse_event(event_name, stdin)
    except Exception:  # noqa: BLE001 - input it cannot read (not JSON, nested past the parser): said as text
        event = HookEvent(name=name)
    fmt = opts.get("--format", "auto")
    if name == "session-start":
        return lambda why: render(event, HookAnswer(context=START_FAILED, notice=START_FAILED_NOTICE.format(
            why=FAILED_WHY[why])), fmt)
    return lambda why: render(event, HookAnswer(notice=PROMPT_FAILED_NOTICE.format(why=FAILED_WHY[why])), fmt)


def _quoted(exc: BaseException) -> str:
    """An error's text as one quoted line (it may echo what an agent wrote: review 23); the neutraliser loads only
    on this path, so a hook that answers starts no slower."""
    from synapse_nb.provenance import inline

    return inline(exc)


def _read_stdin(args: Sequence[str]) -> str:
    """The event JSON: stdin unless it is a terminal or the generic form gave the fields as options."""
    if any(a.split("=", 1)[0] in ("--text", "--session", "--file") for a in args) or sys.stdin is None:
        return ""
    try:
        if sys.stdin.isatty():
            return ""
        return sys.stdin.read(MAX_STDIN_CHARS)
    except (OSError, ValueError, UnicodeDecodeError):
        return ""


def _why_slow(vault: str | None) -> str:
    """Why a hook ran out of time, as far as a look at the vault folder tells: a file the package keeps there that is
    not a regular file (review 79: a FIFO hung the hook, whose notice blamed "a locked or slow vault"), else that."""
    try:
        from synapse_nb.own_files import damaged_in
        from synapse_nb.vault.locate import find_vault_dir

        bad = damaged_in(find_vault_dir(vault)[0])
    except Exception:  # noqa: BLE001 - the notice is given whatever this look finds
        bad = []
    if not bad:
        return "a locked or slow vault"
    if bad[0].name == "team.toml":  # a person's configuration (review 81): never removed by the upkeep
        return (f"{bad[0]} cannot be read (a FIFO, a device, a folder or a file over 64 KiB is in its place); the "
                "person moves it aside and runs `synapse-nb team join` again")
    what = ("a folder: a symlink or a file" if bad[0].name in ("index", "cache")
            else "a regular file: a FIFO, a symlink or a folder")
    return (f"{bad[0]} is not {what} is in its place; the person removes it, or runs `synapse-nb index check "
            "--repair`")


def run(args: Sequence[str], *, vault: str | None = None, mind: str | None = None) -> int:
    """Run the hook for ``args`` (after ``hook``) in this process: read stdin, answer within the time limit, print,
    and return 0 whatever happened (past the limit the process exits at once, printing nothing more on stdout).

    The answer is printed while the vault is open, and what it gives is marked as given to the session only after
    it was written and flushed: a run killed at its limit before it printed leaves nothing marked (review 27: a
    run stuck on an agent's ``flock`` marked the banner as given, printed nothing and said "nothing was added").
    The event is read and the answer written as UTF-8 whatever the locale (:mod:`synapse_nb.stdio`; review 84: in a
    Latin-1 locale the banner's em dash failed the print, and the approved lessons never reached the agent).
    """
    use_utf8()
    try:
        timeout = float(os.environ.get("SYNAPSE_AGENT_HOOK_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        timeout = DEFAULT_TIMEOUT_S
    done, printed, printing = threading.Event(), threading.Event(), threading.Lock()
    stdin = _read_stdin(args)
    failed = _failed(args, stdin)  # a session-start's line for the agent and the person's notice, should it give up
    try:
        starting = bool(args) and canonical_event(args[0]) == "session-start"
    except ValidationError:
        starting = False

    def give_up() -> None:
        # A watchdog, not a worker: the work runs in the main thread (importing numpy and the recall engine in
        # a second thread costs ~25 ms more at every prompt), and this thread ends the process at the limit.
        if done.wait(timeout):
            return
        name = args[0] if args else "?"
        try:
            free = printing.acquire(timeout=2)  # never between the halves of an answer being written
            what = ("the context was given; what it gave may be given again" if printed.is_set()
                    else "no context was given to the agent")
            said = failed("timeout").stdout if free and failed is not None and not printed.is_set() else ""
            if said:  # the agent is told to load the memory itself, the person that it did not reach the agent
                sys.stdout.write(said)
                sys.stdout.flush()
                what = ("the agent was told to load the memory through the MCP tools" if starting
                        else "no context was given to the agent; the person was told")
            sys.stderr.write(f"{_PROG}: {name}: gave up after {timeout:g} s ({_why_slow(vault)}); {what}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        finally:
            os._exit(0)  # the stuck work is abandoned; SQLite's journal keeps the vault consistent

    def emit(out: HookOutput) -> None:
        with printing:  # printed is set under the lock: the watchdog never prints a second answer after this one
            if out.stdout:
                sys.stdout.write(out.stdout)
                sys.stdout.flush()
            printed.set()

    threading.Thread(target=give_up, name="synapse-agent-hook-limit", daemon=True).start()
    before = os.environ.get(_EMBED_DEADLINE)
    os.environ[_EMBED_DEADLINE] = f"{time.time() + timeout * _EMBED_SHARE:.3f}"
    try:
        out = respond(args, stdin, vault=vault, mind=mind, emit=emit)
    finally:
        if before is None:
            os.environ.pop(_EMBED_DEADLINE, None)
        else:
            os.environ[_EMBED_DEADLINE] = before
    done.set()
    try:
        if out.stdout and not printed.is_set():
            sys.stdout.write(out.stdout)
            sys.stdout.flush()
        if out.stderr:
            sys.stderr.write(out.stderr.replace("\n", " ") + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The light entry point: ``synapse-nb [--vault P] [--mind M] hook EVENT [...]`` without the CLI framework.

    Always returns 0 (an unknown option is one line on stderr, never a usage error that would block a prompt).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    split = _split(args)
    if split is None:
        sys.stderr.write(f"{_PROG}: not a hook call: {' '.join(args)!r}\n")
        return 0
    glob, rest = split
    return run(rest, vault=glob.get("--vault"), mind=glob.get("--mind"))
