"""The agent hook events: their names in synapse-nb and in the harnesses, what their input says, what an answer is.

Standard library (and :mod:`synapse_nb.errors`) only: ``synapse-nb hook`` parses the event before it loads the
vault. :mod:`synapse_nb.agents.handlers` does each event's work; :mod:`synapse_nb.agents.hooks` runs the process.

>>> parse_event("UserPromptSubmit",  # doctest: +NORMALIZE_WHITESPACE
...             '{"session_id": "s1", "prompt": "deploy?", "hook_event_name": "UserPromptSubmit"}')
HookEvent(name='prompt', session='s1', prompt='deploy?', source=None, cwd=None, tool_name=None, files=(),
          harness_name='UserPromptSubmit', structured=True)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from synapse_nb.errors import ValidationError
from synapse_nb.render import head_lines, whole_ids

__all__ = ["CLAUDE_EVENTS", "EDIT_TOOLS", "EVENTS", "MAX_CONTEXT_CHARS", "MAX_PROMPT_CHARS", "HookAnswer", "HookEvent",
           "canonical_event", "cut_context", "cut_parts", "parse_event"]

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
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"stdin is not JSON ({exc.msg} at character {exc.pos}); a hook reads the "
                "event as a JSON object, e.g. {\"session_id\": \"...\", \"prompt\": \"...\"}"
            ) from None
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
    """What a run says: ``context`` for the agent, ``notice`` for the human, ``stderr`` one line (or ""); and
    ``delivered``, called once the answer is printed: it marks what the context gives as given to the session.
    ``json_notice``: the notice in the JSON form when it says otherwise (an event whose JSON form carries no context,
    ``PreCompact``: the notice cannot say the context follows)."""

    context: str = ""
    notice: str = ""
    stderr: str = ""
    delivered: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    json_notice: str | None = None


def cut_context(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """``text`` in at most ``limit`` characters: whole lines from the top, then how many lines were cut."""
    return cut_parts([(text, ())], limit)[0]


def cut_parts(parts: Sequence[tuple[str, Collection[str]]], limit: int = MAX_CONTEXT_CHARS) -> tuple[str, set[str]]:
    """The parts' texts, one after the other on their own lines, cut as :func:`cut_context` cuts, and the ids of
    the parts whose every line was kept: what a hook marks as given is what its cut printed, never what the cut
    removed (review 31: a SessionStart cut 7 of 30 lessons and marked all 30 as given).

    >>> text, kept = cut_parts([("a", ["x"]), ("b" * 30, ["y"])], 200)
    >>> text.split(), sorted(kept)
    (['a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'], ['x', 'y'])
    >>> cut_parts([("a", ["x"]), ("b" * 300, ["y"])], 200)[1]
    {'x'}
    """
    text = "\n".join(t for t, _ in parts)
    if len(text) <= limit:
        return text, {i for _, ids in parts for i in ids}
    out, left, cut = head_lines(text, limit - 160)
    kept = whole_ids(parts, 0 if cut else len(out))
    left += cut  # a cut first line counts as left out
    return "\n".join(out) + (f"\n(… {left} more line{'s' if left != 1 else ''} cut to fit {limit:,} characters; "
                             "synapse-nb recall or the MCP tools give the rest)"), kept
