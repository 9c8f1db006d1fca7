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
  status 0, empty stdout and one line on stderr;
- **never create a vault**, and with ``SYNAPSE_READONLY=1`` write nothing at all;
- **act as the agent**: everything it writes (checkpoints, episodes) is the agent's proposal. The one thing it
  reads as the user is the *number* of pending lessons, which goes to the human only (Claude Code's
  ``systemMessage``; stderr in text form), never into the agent's context;
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import SynapseError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.agents.sessions import SessionState
    from synapse_nb.models import Checkpoint
    from synapse_nb.vault import Vault

__all__ = ["CLAUDE_EVENTS", "DEFAULT_TIMEOUT_S", "EDIT_TOOLS", "EVENTS", "MAX_CONTEXT_CHARS", "HookAnswer",
           "HookEvent", "canonical_event", "is_hook_call", "main", "parse_event", "respond"]

#: The events, by their synapse-nb names.
EVENTS = ("session-start", "prompt", "pre-compact", "post-tool", "stop", "session-end")
#: Claude Code's name of each event (the ``hookEventName`` a JSON answer carries when the input named none).
CLAUDE_EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "pre-compact": "PreCompact",
                 "post-tool": "PostToolUse", "stop": "Stop", "session-end": "SessionEnd"}
_ALIASES = {
    **{k.replace("-", ""): k for k in EVENTS}, **{v.lower(): k for k, v in CLAUDE_EVENTS.items()},
    "userprompt": "prompt", "beforeagent": "prompt", "aftertool": "post-tool", "edit": "post-tool",
    "precompress": "pre-compact", "afteragent": "stop",
}
#: Tools whose use is a file edit (Claude Code's, Gemini CLI's, Codex's).
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "replace", "apply_patch"})
#: Most characters of context a hook gives the agent (Claude Code's cap for hook output).
MAX_CONTEXT_CHARS = 10_000
#: Most characters of a prompt that recall reads (its gate analyses the first 2,000).
MAX_PROMPT_CHARS = 4_000
#: Most characters read from stdin.
MAX_STDIN_CHARS = 8_000_000
#: Seconds a run may take before it gives up (exit 0, empty stdout): ``SYNAPSE_AGENT_HOOK_TIMEOUT``.
DEFAULT_TIMEOUT_S = 10.0
#: Token budgets: the session-start answer, and the restore pack.
SESSION_START_TOKENS = 2000
RESTORE_TOKENS = 1500
_PROG = "synapse-nb hook"


# ------------------------------------------------------------------------------------------------ the event
@dataclass(frozen=True)
class HookEvent:
    """One hook call: the event (a name of :data:`EVENTS`) and what its input said.

    ``harness_name`` is the event's name as the harness wrote it (``hook_event_name``); ``structured`` is True
    when the input was JSON naming its event (the answer is then JSON too, unless ``--format`` says otherwise).
    """

    name: str
    session: str | None = None
    prompt: str | None = None
    source: str | None = None
    cwd: str | None = None
    tool_name: str | None = None
    files: tuple[str, ...] = ()
    harness_name: str | None = None
    structured: bool = False


def canonical_event(name: str) -> str:
    """The synapse-nb name of an event given by any of its names.

    >>> canonical_event("UserPromptSubmit"), canonical_event("session_start"), canonical_event("AfterTool")
    ('prompt', 'session-start', 'post-tool')
    """
    key = str(name).strip().lower().replace("-", "").replace("_", "")
    if key not in _ALIASES:
        raise ValidationError(f"unknown hook event {name!r}; use one of {', '.join(EVENTS)} (or Claude Code's "
                              f"{', '.join(CLAUDE_EVENTS.values())})")
    return _ALIASES[key]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _tool_files(tool_input: Any) -> tuple[str, ...]:
    """The files a tool call edits, from its input (``file_path``, ``notebook_path``, ``path``, ``paths``)."""
    if not isinstance(tool_input, dict):
        return ()
    out = [tool_input.get(k) for k in ("file_path", "notebook_path", "path")]
    paths = tool_input.get("paths")
    if isinstance(paths, list):
        out.extend(paths)
    return tuple(dict.fromkeys(p for p in out if isinstance(p, str) and p.strip()))


def parse_event(name: str, stdin: str = "", *, session: str | None = None, text: str | None = None,
                files: Sequence[str] = (), source: str | None = None) -> HookEvent:
    """The event from its name, the JSON on stdin (``stdin``) and the generic form's options (which win).

    Fields read from the JSON: ``session_id`` (or ``sessionId``), ``prompt`` (or ``user_prompt``), ``source`` (or
    ``trigger``), ``cwd``, ``hook_event_name``, ``tool_name`` and ``tool_input``'s file path. Input that is
    not a JSON object is a :class:`~synapse_nb.errors.ValidationError` (the hook then says so on stderr only).

    >>> parse_event("prompt", '{"session_id": "s1", "user_prompt": "deploy?"}').prompt
    'deploy?'
    """
    event = canonical_event(name)
    data: dict[str, Any] = {}
    if stdin.strip():
        try:
            data = json.loads(stdin)
        except ValueError as exc:
            raise ValidationError(f"stdin is not JSON ({exc.msg} at character {exc.pos}); a hook reads the "
                                  "event as a JSON object, e.g. {\"session_id\": \"...\", \"prompt\": \"...\"}") from None
        if not isinstance(data, dict):
            raise ValidationError(f"stdin is JSON but not an object (a {type(data).__name__}); a hook reads the "
                                  "event as a JSON object")
    harness = _text(data.get("hook_event_name"))
    sid = session or _text(data.get("session_id")) or _text(data.get("sessionId"))
    prompt = text if text is not None else _text(data.get("prompt")) or _text(data.get("user_prompt"))
    return HookEvent(
        name=event, session=sid.strip() if sid else None, prompt=prompt,
        source=source or _text(data.get("source")) or _text(data.get("trigger")), cwd=_text(data.get("cwd")),
        tool_name=_text(data.get("tool_name")), files=tuple(files) or _tool_files(data.get("tool_input")),
        harness_name=harness, structured=harness is not None)


# ------------------------------------------------------------------------------------------------ the answer
@dataclass(frozen=True)
class HookAnswer:
    """What a run says: ``context`` for the agent, ``notice`` for the human, ``stderr`` one line (or "")."""

    context: str = ""
    notice: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class HookOutput:
    """What the process prints: ``stdout`` (maybe empty) and ``stderr`` (one line or empty)."""

    stdout: str = ""
    stderr: str = ""


def _cut(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """``text`` in at most ``limit`` characters: whole lines from the top, then how many lines were cut."""
    if len(text) <= limit:
        return text
    lines, out, used = text.split("\n"), [], 0
    for line in lines:
        if used + len(line) + 1 > limit - 160:
            break
        out.append(line)
        used += len(line) + 1
    left = len(lines) - len(out)
    if not out:  # one huge line: its start
        out, left = [lines[0][: limit - 160] + "…"], len(lines)
    return "\n".join(out) + (f"\n(… {left} more line{'s' if left != 1 else ''} cut to fit {limit:,} characters; "
                             "synapse-nb recall or the MCP tools give the rest)")


def render(event: HookEvent, answer: HookAnswer, fmt: str = "auto") -> HookOutput:
    """The printed form of ``answer``: JSON in Claude Code's shape (``fmt`` json, or auto with structured input),
    else plain text (the human's notice then goes to stderr)."""
    context = _cut(answer.context.strip("\n")) if answer.context.strip() else ""
    as_json = fmt == "json" or (fmt == "auto" and event.structured)
    if not as_json:
        err = answer.stderr or (answer.notice if answer.notice else "")
        return HookOutput(stdout=context + "\n" if context else "", stderr=err)
    obj: dict[str, Any] = {}
    if context and event.name in ("session-start", "prompt"):
        obj["hookSpecificOutput"] = {"hookEventName": event.harness_name or CLAUDE_EVENTS[event.name],
                                     "additionalContext": context}
    if answer.notice:
        obj["systemMessage"] = answer.notice
    return HookOutput(stdout=json.dumps(obj, ensure_ascii=False) + "\n" if obj else "", stderr=answer.stderr)


# ------------------------------------------------------------------------------------------------ the events
def _state_key(v: Vault, event: HookEvent) -> str:
    return f"{v.mind}:{event.session or '-'}"


def _relative(v: Vault, path: str) -> str:
    """A tool's file path as the vault's records name files: relative to the work tree when inside it."""
    p = Path(path)
    roots = [r for r in ((v.repo.work_tree if v.repo is not None else None), v.project_dir) if r is not None]
    if p.is_absolute():
        for root in roots:
            try:
                return p.resolve().relative_to(Path(root).resolve()).as_posix()
            except (ValueError, OSError):
                continue
    return path


def restore_pack(v: Vault, checkpoint: Checkpoint | None, budget_tokens: int = RESTORE_TOKENS) -> str:
    """What a compacted context needs back: the banner, the checkpoint, recent decisions and key memories (verified
    first), whole lines within ``budget_tokens`` (the same pack ``signal_low_context`` returns)."""
    from synapse_nb.recall import banner_text, record_line
    from synapse_nb.render import estimate_tokens

    blocks = [b for b in (banner_text(v.lessons.in_force()),
                          checkpoint.restore_text() if checkpoint else "No checkpoint on this branch yet.") if b]
    decisions = v.decisions.list(limit=5)
    if decisions:
        blocks.append("Recent decisions:\n" + "\n".join(record_line(d) for d in decisions))
    key_mems = [m for m in v.memories.list(limit=50) if m.priority in ("critical", "high")]
    key_mems.sort(key=lambda m: not m.verified)  # human-verified first: a cut drops proposals first
    if key_mems:
        blocks.append("Key memories:\n" + "\n".join(record_line(m) for m in key_mems))
    out: list[str] = []
    used = omitted = 0
    for b, block in enumerate(blocks):
        if b and out:
            out.append("")
        for line in block.split("\n"):
            cost = estimate_tokens(line + "\n")
            if used + cost > budget_tokens:
                omitted += 1
                continue
            out.append(line)
            used += cost
    text = "\n".join(out).strip("\n")
    return text + (f"\n(… {omitted} more line{'s' if omitted != 1 else ''} left out to fit {budget_tokens} tokens)"
                   if omitted else "")


def _pending_notice(v: Vault) -> str:
    """For the human only: how many lessons wait for a decision (read as the user, read-only; never shown to the
    agent's context)."""
    from synapse_nb.vault import open_vault

    try:
        with open_vault(v.path, mind=v.mind, actor="user", readonly=True, create=False) as human:
            n = len(human.lessons.pending())
    except SynapseError:
        return ""
    if not n:
        return ""
    return (f"synapse-nb: {n} lesson{'s' if n != 1 else ''} from reverted changes wait{'' if n != 1 else 's'} for "
            "your review (synapse-nb lessons review, in your own terminal)")


def _session_start(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import session_state
    from synapse_nb.recall import banner_text

    lessons = list(v.lessons.in_force())
    if event.session and writable:
        v.recall("", session=event.session)  # marks the banner's lessons as given to this session
    latest = v.checkpoints.latest()
    if event.source == "compact":
        context = "synapse-nb restore pack after compaction:\n\n" + restore_pack(v, latest)
    else:
        from synapse_nb.render import estimate_tokens

        head = "synapse-nb project memory (relevant records are recalled on each prompt):"
        ckp = (f"Latest checkpoint on this branch:\n{latest.restore_text()}" if latest
               else "No checkpoint on this branch yet.")
        banner = banner_text(lessons) or "No approved lessons yet."
        context = f"{head}\n\n{banner}\n\n{ckp}"
        if estimate_tokens(context) > SESSION_START_TOKENS:
            context = _cut(context, SESSION_START_TOKENS * 4)
    if writable:
        with session_state(v.path, _state_key(v, event)) as st:
            st.lessons = [x.id for x in lessons]
    return HookAnswer(context=context, notice=_pending_notice(v))


def _prompt(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import read_state, session_state
    from synapse_nb.recall import banner_text
    from synapse_nb.render import shorten

    prompt = (event.prompt or "").strip()
    if not prompt:
        return HookAnswer()
    r = v.recall(prompt[:MAX_PROMPT_CHARS], session=event.session)
    key = _state_key(v, event)
    st = read_state(v.path, key)
    new_lessons = [x for x in r.lessons if x.id not in st.lessons]
    if writable and (st.task is None or new_lessons):
        with session_state(v.path, key) as st:
            st.task = st.task or shorten(prompt, 200)
            st.lessons = list(dict.fromkeys([*st.lessons, *(x.id for x in new_lessons)]))
    if r.items:
        return HookAnswer(context=r.text)
    if new_lessons:
        return HookAnswer(context=banner_text(new_lessons))
    return HookAnswer()  # nothing new: no noise in the agent's context


def _pre_compact(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import read_state, session_state
    from synapse_nb.provenance import salvage

    key = _state_key(v, event)
    st = read_state(v.path, key)
    last = v.checkpoints.latest()
    if not writable:
        return HookAnswer(context=restore_pack(v, last))
    why = "saved before the context was compacted" + (f" ({event.source})" if event.source else "")
    doing = f"{st.task} — {why}" if st.task else salvage(last.doing) if last else f"agent session {why}"
    files = list(dict.fromkeys([*st.changed, *st.files])) or (
        [f for f in (salvage(f, multiline=False) for f in last.changed_files) if f] if last else [])
    c = v.checkpoint(doing, files=files[:200], next_step=salvage(last.next_step) if last else None,
                     blockers=salvage(last.blockers) if last else None, origin="auto")
    with session_state(v.path, key) as s:
        s.edits, s.files, s.lessons = 0, [], []  # compaction drops the lessons from the context: shown again
        s.checkpoints += 1
    return HookAnswer(context=restore_pack(v, c),
                      notice=f"synapse-nb: saved checkpoint {c.id} before compaction; the restore pack follows it")


def _post_tool(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import session_state
    from synapse_nb.kinds.autocheckpoint import AutoCheckpoint

    edit = event.tool_name in EDIT_TOOLS if event.tool_name else bool(event.files)  # the generic form: --file
    if not writable or not edit:
        return HookAnswer()
    every = AutoCheckpoint.every_from(v.settings.get, "file")
    with session_state(v.path, _state_key(v, event)) as st:
        st.touch(_relative(v, event.files[0]) if event.files else "")
        for extra in event.files[1:]:
            st.touch(_relative(v, extra))
            st.edits -= 1  # one tool call is one edit, whatever it lists
        if st.edits >= every:
            _auto_checkpoint(v, st)
    return HookAnswer()


def _auto_checkpoint(v: Vault, st: SessionState) -> None:
    task = f"; working on: {st.task}" if st.task else ""
    v.checkpoint(f"auto checkpoint after {st.edits} file edits by the agent{task}", files=st.files[:200],
                 origin="auto")
    st.edits, st.files = 0, []
    st.checkpoints += 1


def _episode(v: Vault, event: HookEvent, writable: bool) -> HookAnswer:
    from synapse_nb.agents.sessions import read_state, session_state

    key = _state_key(v, event)
    if not writable or not read_state(v.path, key).changed:
        return HookAnswer()
    with session_state(v.path, key) as st:
        if st.changed:
            n = len(st.changed)
            shown = ", ".join(st.changed[:20]) + (f" and {n - 20} more" if n > 20 else "")
            task = f"task: {st.task}; " if st.task else ""
            v.episodes.log(f"agent session {event.session or '-'}"[:200], status="unknown",
                           outcome=f"{task}changed {n} file{'s' if n != 1 else ''}: {shown}", refs=st.changed[:200])
            st.changed = []
            st.episodes += 1
    return HookAnswer()


_HANDLERS = {"session-start": _session_start, "prompt": _prompt, "pre-compact": _pre_compact,
             "post-tool": _post_tool, "stop": _episode, "session-end": _episode}


def handle(event: HookEvent, *, vault: str | None = None, mind: str = "default",
           env: Mapping[str, str] | None = None) -> HookAnswer:
    """Run ``event`` on its vault, as the agent; raises what goes wrong (:func:`respond` turns it into stderr).

    The vault: ``vault`` (``--vault``), else ``SYNAPSE_HOME``, else the event's ``cwd``, else the current folder.
    """
    from synapse_nb.vault import open_vault

    env = os.environ if env is None else env
    readonly = env.get("SYNAPSE_READONLY", "").strip() not in ("", "0")
    path = vault if vault is not None else (None if env.get("SYNAPSE_HOME", "").strip() else event.cwd)
    with open_vault(path, mind=mind, actor="agent", create=False, readonly=readonly) as v:
        if v.offline:  # a team vault's stale copy: recall and search only
            return HookAnswer(stderr=f"{_PROG}: {event.name}: the team vault's server cannot be reached; skipped")
        return _HANDLERS[event.name](v, event, not readonly)


# ------------------------------------------------------------------------------------------------ the process
_GLOBAL = {"--vault", "--mind"}
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
    event, opts = args[0], {"--file": []}
    i = 1
    while i < len(args):
        name, eq, val = args[i].partition("=")
        if name not in _OPTS:
            raise ValidationError(f"unknown argument {args[i]!r} for synapse-nb hook; accepted: {', '.join(sorted(_OPTS))}")
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
            mind: str | None = None) -> HookOutput:
    """The whole run for ``argv`` (the arguments after ``hook``) and ``stdin``, as what it prints; never raises.

    ``vault`` and ``mind`` are the root options when the call came through the CLI.
    """
    name = argv[0] if argv else "?"
    try:
        event_name, opts = _parse_hook_args(list(argv))
        name = event_name
        event = parse_event(event_name, stdin, session=opts.get("--session"), text=opts.get("--text"),
                            files=opts["--file"], source=opts.get("--source"))
        name = event.name
        answer = handle(event, vault=vault, mind=mind or "default", env=env)
        return render(event, answer, opts.get("--format", "auto"))
    except SynapseError as exc:
        return HookOutput(stderr=f"{_PROG}: {name}: {' '.join(str(exc).split()) or type(exc).__name__}")
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the user's prompt
        return HookOutput(stderr=f"{_PROG}: {name}: unexpected {type(exc).__name__}: {' '.join(str(exc).split())}")


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


def run(args: Sequence[str], *, vault: str | None = None, mind: str | None = None) -> int:
    """Run the hook for ``args`` (after ``hook``) in this process: read stdin, answer within the time limit, print,
    and return 0 whatever happened (past the limit the process exits at once, printing nothing on stdout)."""
    try:
        timeout = float(os.environ.get("SYNAPSE_AGENT_HOOK_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        timeout = DEFAULT_TIMEOUT_S
    result: list[HookOutput] = []

    def work() -> None:
        result.append(respond(args, _read_stdin(args), vault=vault, mind=mind))

    thread = threading.Thread(target=work, name="synapse-agent-hook", daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        name = args[0] if args else "?"
        try:
            sys.stderr.write(f"{_PROG}: {name}: gave up after {timeout:g} s (a locked or slow vault); nothing "
                             "was added\n")
            sys.stderr.flush()
        finally:
            os._exit(0)  # the stuck work is abandoned; SQLite's journal keeps the vault consistent
    out = result[0]
    try:
        if out.stdout:
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
