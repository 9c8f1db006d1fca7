"""The MCP server: the vault as tools an agent calls (stdio, official ``mcp`` SDK 2.x).

The server opens the vault with ``actor="agent"``, so the core refuses every human-only write
(approving or rejecting a lesson, verifying a memory, changing settings, importing) even if a tool
tried: no tool does. Agent writes are proposals (unverified, ``source="agent"``). With
``SYNAPSE_READONLY=1`` in its environment the vault is opened read-only and every writing tool is refused.

Every tool has a title, annotations (read-only, never destructive, idempotent where true), a plain-sentence
description, a described, typed and bounded input schema (``_schema.py``) and an ``outputSchema``; every answer
is readable text within the answer budget, which says what it left out, and structured content (a JSON object)
whose first field, ``text``, is that text whole (Claude Code and VS Code show the model only the structured content).
A refused or malformed call is a tool error carrying one line (which argument, what is accepted), and the server
keeps serving; arguments a tool does not take are named in the answer (``ignored_arguments``). Reading tools
never create a vault; on a new project the two session-start tools answer "no approved lessons" and "no
checkpoint yet" as normal results. Writing tools create the vault inside an existing folder only, and say so
once on stderr.

Examples
--------
>>> from synapse_nb.mcp.server import build_server
>>> server = build_server("/tmp/project")      # doctest: +SKIP
>>> server.run("stdio")                        # doctest: +SKIP

From a shell: ``synapse-nb mcp [PATH]``; ``synapse-nb mcp --hooks`` where the agent's harness runs the synapse-nb
hooks (``build_server(hooks=True)``: the instructions say what the hooks give, so the agent does not fetch it
twice).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError as PydanticValidationError

from synapse_nb._version import __version__
from synapse_nb.context import readonly_requested
from synapse_nb.errors import (
    NoCheckpointError,
    NotFoundError,
    OfflineError,
    SynapseError,
    ValidationError,
)
from synapse_nb.mcp import _schema as S
from synapse_nb.mcp._answers import answer_text, argument_error, result
from synapse_nb.mcp._handle import DEFAULT_ANSWER_TOKENS, Handle
from synapse_nb.mcp._instructions import HOOKED_DESCRIPTIONS, HOOKS_INSTRUCTIONS, INSTRUCTIONS, instructions
from synapse_nb.provenance import inline, label_text, quoted, record_json
from synapse_nb.recall import banner_text, legend_for, with_legend
from synapse_nb.recall.start import none_approved, start_memory
from synapse_nb.render import (
    estimate_tokens,
    plural,
    shown_id,  # (review 41: an id as a reader shows it)
)
from synapse_nb.vault import Vault

__all__ = ["DEFAULT_ANSWER_TOKENS", "HOOKS_INSTRUCTIONS", "INSTRUCTIONS", "LOW_CONTEXT_RATIO", "SEARCH_KINDS",
           "TOOL_NAMES", "build_server", "serve"]

#: At or above this fraction of the context window, ``signal_low_context`` saves a checkpoint.
LOW_CONTEXT_RATIO = 0.6
SEARCH_KINDS = S.SEARCH_KINDS
#: Every tool the server offers, sorted.
TOOL_NAMES = (
    "create_checkpoint", "expand_note", "get_approved_memory", "get_status", "log_decision", "log_episode", "recall",
    "remember", "restore_checkpoint", "search", "signal_low_context", "submit_lesson_analysis",
)

#: (title, read-only, idempotent) of each tool; no tool deletes or overwrites what a human wrote.
_TOOLS: dict[str, tuple[str, bool, bool]] = {
    "get_approved_memory": ("Approved lessons and memory", True, True),
    "restore_checkpoint": ("Restore the latest checkpoint", True, True),
    "create_checkpoint": ("Save a checkpoint", False, False),
    "log_decision": ("Log a design decision", False, False),
    "submit_lesson_analysis": ("Explain a reverted change", False, True),
    "signal_low_context": ("Context is filling up", False, False),
    "recall": ("Recall what is relevant now", True, False),  # read-only; a repeat says "nothing new"
    "remember": ("Propose a durable fact", False, True),
    "log_episode": ("Log how a task run ended", False, False),
    "search": ("Search the memory", True, True),
    "expand_note": ("Read a note's body", True, True),
    "get_status": ("Vault status", True, True),
}


#: What a recall's text holds besides its record lines, in tokens: the heading, the legend, the kinds' titles and
#: a note (the banner and the query are counted apart).
ANSWER_FRAME_TOKENS = 200

def _plain(doc: str | None) -> str:
    """A docstring as the plain sentences a client shows: no indentation, wrapped lines joined, paragraphs kept."""
    paragraphs = re.split(r"\n\s*\n", (doc or "").strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


@contextmanager
def _errors() -> Iterator[None]:
    """Library errors become tool errors with their one-line message."""
    try:
        yield
    except SynapseError as exc:
        raise ToolError(inline(exc) or type(exc).__name__) from None  # quoted: it may echo an agent's text


def _lesson_brief(les: Any) -> dict[str, Any]:
    """What an agent is told of an approved lesson beside the banner that quotes it."""
    return {"id": les.id, "branch": label_text(les.branch) or None, "approved_at": les.approved_at,
            "expires_at": les.expires_at, "wording_by": les.wording_by, "created_by": les.source}


def _recall_fields(fields: dict[str, Any], query: str, session: str | None) -> dict[str, Any]:
    """A recall's structured fields besides its text: each item without its line (the text holds the lines: review
    86, the structured content was 2-3 times the text), the query quoted and cut."""
    fields = {**fields, "query": inline(query, 200), "session": session}
    if "items" in fields:  # a stale copy's answer has hits, not items
        fields["items"] = [{k: x for k, x in item.items() if k != "line"} for item in fields["items"]]
    return fields


def _manager(v: Vault, kind: str) -> Any:
    """The manager ``search(kind=...)`` reads for ``kind``."""
    return v.manager(kind)


#: Where ``get_approved_memory`` says the rest of the memory is (after the key memories and the counts).
START_REST = ("The rest: recall(query, session_id) with the task gives what is relevant now; search(query) looks "
              "something up.")
#: What the reading tools answer on a project with no vault yet (a normal answer: review 93).
NOTHING_STORED = ("nothing stored yet (this project has no vault until the first write: remember, log_decision or "
                  "create_checkpoint creates it)")
#: What an agent that has no pending lesson's full id is told (review 86): it may not list pending lessons.
LESSON_ID_HINT = ("an agent is not shown pending lessons: ask the human for the lesson's full id (les_...; they see "
                  "it in synapse-nb lessons review)")
#: How many of the other branches' checkpoints a restore that finds none on this branch names.
OTHER_BRANCHES = 3
#: Each text field of a record in an answer is cut to this many characters, and a list of names to 50 (review 44:
#: `search` and `restore_checkpoint` read every field whole, 30 s and 14 s of CPU for agent text written to set off
#: every reading of the neutraliser; the answer budget cut most of it anyway).
FIELD_CHARS = 2000
#: Characters a call's answer must leave for what ``_Server.call_tool`` adds after it (the ignored arguments' note:
#: review 43, 25 made-up arguments took an answer 60% past a budget of 500 tokens).
_ADDED_LATER: ContextVar[int] = ContextVar("synapse_nb_mcp_added_later", default=0)
#: How many ignored arguments the note names, and at most how many characters of each.
_NAMED, _NAME_CHARS = 10, 30


class _Server(MCPServer):
    """The SDK's server with two changes at the call boundary: a refused argument is one line (which argument,
    what is accepted) instead of a pydantic dump, and arguments the tool does not take are named in the answer."""

    def __init__(self, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(tools=tools, **kwargs)
        self._inputs = {t.name: t.parameters for t in tools}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schema = self._inputs.get(name)
        extra = sorted(set(arguments) - set(schema.get("properties", {}))) if schema else []
        names = [inline(k, _NAME_CHARS) for k in extra[:_NAMED]]
        note = (f" (ignored {plural(len(extra), 'argument')} this tool does not take: "
                f"{', '.join(names)}{', ...' if len(extra) > _NAMED else ''})") if extra else ""
        # the note is added to the text content and to the structured content's text, and the names listed
        added = _ADDED_LATER.set(2 * len(note) + sum(len(n) + 4 for n in names) + 24 if note else 0)
        try:
            res = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if schema is not None and isinstance(exc.__cause__, PydanticValidationError):
                raise ToolError(f"Error executing tool {name}: {argument_error(exc.__cause__.errors(), schema)}"
                                f"{note}") from None
            if note:
                raise ToolError(f"{exc}{note}") from None
            raise
        finally:
            _ADDED_LATER.reset(added)
        if note and isinstance(res, CallToolResult) and not res.is_error:
            first = res.content[0] if res.content else None
            if isinstance(first, TextContent):
                first.text += f"\n{note.strip(' ()')}"
            if isinstance(res.structured_content, dict):  # the same text in both (review 86)
                if isinstance(first, TextContent):
                    res.structured_content["text"] = first.text
                res.structured_content["ignored_arguments"] = names
        return res

    #: set when Ctrl-C (SIGINT) stopped the stdio server
    interrupted = False

    async def run_stdio_async(self) -> None:
        """Serve over stdio with the reader of ``_stdio.py`` (unreadable lines get a reply) until the client closes
        stdin or Ctrl-C: SIGINT cancels the server at once (:attr:`interrupted` is then True)."""
        import signal

        import anyio
        from mcp.server.stdio import stdio_server

        from synapse_nb.mcp._stdio import Lines, Out, claim_stdio

        async def stop_on_sigint(scope: anyio.CancelScope) -> None:
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    self.interrupted = True
                    scope.cancel()
                    return

        with claim_stdio() as (rin, rout):
            out = Out(rout)
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_on_sigint, tg.cancel_scope)
                # the SDK reads its stdin with `async for line` and writes + flushes its stdout: ours do only that
                stdin, stdout = cast("anyio.AsyncFile[str]", Lines(rin, out)), cast("anyio.AsyncFile[str]", out)
                async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
                    low = self._lowlevel_server  # what MCPServer.run_stdio_async runs, with our streams
                    await low.run(read, write, low.create_initialization_options())
                tg.cancel_scope.cancel()  # the client closed stdin: stop watching for Ctrl-C


def _tool(fn: Callable[..., Any], hooks: bool = False) -> Tool:
    """``fn`` as a tool: its title and annotations from :data:`_TOOLS`, its docstring as plain sentences (with
    ``hooks``, the first paragraph of a tool that fetches what the hooks give says so: ``HOOKED_DESCRIPTIONS``), its
    parameters' schema from their annotations and its ``outputSchema`` from ``_schema.OUTPUT_SCHEMAS``."""
    title, read_only, idempotent = _TOOLS[fn.__name__]
    paragraphs = _plain(fn.__doc__).split("\n\n")
    if hooks and fn.__name__ in HOOKED_DESCRIPTIONS:
        paragraphs[0] = HOOKED_DESCRIPTIONS[fn.__name__]
    tool = Tool.from_function(fn, title=title, description="\n\n".join(paragraphs), structured_output=False,
                              annotations=ToolAnnotations(title=title, read_only_hint=read_only,
                                                          destructive_hint=False, idempotent_hint=idempotent,
                                                          open_world_hint=False))
    tool.fn_metadata.output_schema = S.OUTPUT_SCHEMAS[tool.name]  # advertised (the SDK validates no model here)
    return tool


# ------------------------------------------------------------------------------------------------ the server
def build_server(path: str | Path | None = None, *, mind: str = "default", vault: Vault | None = None,
                 clock: Callable[[], datetime] | None = None, readonly: bool | None = None,
                 hooks: bool = False) -> MCPServer:
    """The synapse-nb MCP server for one vault, acting as the agent.

    Parameters
    ----------
    path : project folder or vault folder (default: ``SYNAPSE_HOME``, else the current folder).
    mind : which mind the agent reads and writes.
    vault : an open vault to serve instead (tests, notebooks); it is used through ``as_agent()``.
    clock : a clock for the vault (tests; the server acts as the agent, whose handle runs on the real clock unless
        the suite sets ``synapse_nb.context.AGENT_CLOCKS``).
    readonly : open the vault read-only and refuse every writing tool (default: ``SYNAPSE_READONLY`` set and
        neither empty nor ``0``, as the CLI reads it).
    hooks : the agent's harness runs the synapse-nb hooks (``synapse-nb mcp --hooks``): the standing instructions
        (:data:`HOOKS_INSTRUCTIONS`) and the descriptions of the tools that fetch what the hooks give say the
        lessons, the checkpoint and each prompt's recall arrive by the hooks, so the agent does not fetch them again.

    Examples
    --------
    >>> from mcp import Client                               # doctest: +SKIP
    >>> async with Client(build_server(tmp)) as c:           # doctest: +SKIP
    ...     r = await c.call_tool("get_status", {})
    """
    handle = Handle(path, mind, vault, clock, readonly=readonly_requested() if readonly is None else readonly)

    def answer(text: str, data: dict[str, Any]) -> CallToolResult:
        # what call_tool adds afterwards (the ignored arguments' note) is counted in the budget too
        return result(text, data, handle.answer_tokens() - (_ADDED_LATER.get() + 3) // 4, handle.borrowed())

    def no_vault() -> bool:
        """Whether there is no vault yet (a new project): the reading tools then answer normally, "nothing stored
        yet", and create none (review 93: recall, search and get_status were tool errors there)."""
        return handle.new_project() is not None

    async def get_approved_memory(session_id: S.StartSessionId = None) -> CallToolResult:
        """Call at the start of every session: the lessons a human approved (follow them strictly), then the key
        memories people wrote or verified (priority critical or high), the memory's counts per category, and where
        the rest is (recall and search). With the session_id you pass recall, recall does not give those key
        memories again in this conversation unless they change.

        On a new project it answers that there are no approved lessons and no memories yet."""
        with _errors():
            if no_vault():
                return answer("no approved lessons and no memories yet (this project has no vault until the first "
                              "write)", {"lessons": [], "memories": 0, "verified": 0, "by_category": {},
                                         "key_memories": 0, "key_shown": [], "agents_key_memories": 0,
                                         "vault": False})
            v = handle.read()
            lessons = v.lessons.in_force()
            # what the SessionStart hook says at a session's start, in the same words (recall.start): the banner
            # whole, within the answer budget; the memory within its own small budget (review 93: every memory, in
            # priority order, until the answer budget: 13-15k characters on a vault of 220)
            # the key memories listed are marked as given to the conversation's recall session (this server's own
            # key for its session_id), those the answer holds whole, once it is cut (a twenty-second pass: recall
            # gave them again as new)
            start = start_memory(v.memories, START_REST, session=handle.session_key(session_id))
            text = f"{banner_text(lessons) or none_approved(v.lessons)}\n\n{start.text}"
            res = answer(text, {"lessons": [_lesson_brief(x) for x in lessons], **start.to_dict(), "vault": True})
            start.mark_given(start.given_in(answer_text(res)))
            return res

    async def restore_checkpoint(checkpoint_id: S.CheckpointId = None) -> CallToolResult:
        """Call at the start of a session to resume work: the latest checkpoint on the current git branch, or the
        one you name.

        With no checkpoint on this branch yet it answers so (found is false), naming the newest ones other branches
        hold by id; an id that matches nothing is an error."""
        with _errors():
            if no_vault() and not checkpoint_id:
                return answer("no checkpoint yet (this project has no vault until the first write); "
                              "create_checkpoint saves one", {"found": False, "elsewhere": 0})
            v = handle.read()
            try:
                c = v.checkpoints.restore(checkpoint_id or "latest")
            except NoCheckpointError as exc:
                if checkpoint_id:
                    raise ToolError(exc.with_remedy("the create_checkpoint tool")) from None
                said = " ".join(exc.with_remedy("the create_checkpoint tool").split())
                # "restore one by its id": the ids, or the agent has none to give (review 86)
                others = list(v.checkpoints.list(limit=OTHER_BRANCHES)) if exc.elsewhere else []
                if others:
                    said += ("\nNewest on other branches (restore_checkpoint(checkpoint_id) resumes one):\n"
                             + "\n".join(f"{shown_id(o.id)}  {o.summary_line()}" for o in others))
                return answer(with_legend(others, said), {"found": False, "elsewhere": exc.elsewhere})
            resume = v.checkpoints.resume(c, FIELD_CHARS)  # with the hooks' automatic ones since (review 86)
            persons = record_json(resume.persons, FIELD_CHARS) if resume.persons is not None else None
            return answer(resume.text, {**record_json(c, FIELD_CHARS), "found": True, "later": resume.later,
                                        "agents": resume.agents, "persons": persons,
                                        "since": [record_json(x, FIELD_CHARS) for x in resume.since]})

    async def create_checkpoint(doing: S.Doing, changed_files: S.ChangedFiles = None, next_step: S.NextStep = None,
                                blockers: S.Blockers = None) -> CallToolResult:
        """Call after about every 10 significant changes, and before risky steps: save what you are doing, so a
        later session (or you, after the context is compacted) can resume.

        The git branch and commit are recorded automatically."""
        with _errors(), handle.writing() as v:
            c = v.checkpoint(doing, files=changed_files, next_step=next_step, blockers=blockers,
                                 origin="agent")
            return answer(f"checkpoint {c.id} saved on branch {label_text(c.branch) or '-'}",
                          record_json(c, FIELD_CHARS))

    async def log_decision(decision: S.DecisionText, rationale: S.Rationale = None,
                           tags: S.Tags = None) -> CallToolResult:
        """Call right after making any design choice: log the decision and why, so later sessions keep to it."""
        with _errors(), handle.writing() as v:
            d = v.decide(decision, rationale=rationale, tags=tags)
            return answer(f"decision {d.id} logged", record_json(d, FIELD_CHARS))

    async def submit_lesson_analysis(lesson_id: S.LessonId, analysis: S.Analysis) -> CallToolResult:
        """Call when asked why a change was reverted: explain the failure behind the lesson you were given.

        The analysis is a proposal: a human reads it and decides whether it becomes an approved lesson."""
        with _errors():
            handle.refuse_if_readonly("submit_lesson_analysis writes an analysis")
            lessons = handle.read().lessons
            try:
                lessons.submit_analysis(lesson_id, analysis)
            except NotFoundError as exc:  # an agent is never shown a pending lesson: the person has its id
                raise ToolError(f"{inline(exc)}; {LESSON_ID_HINT}") from None
            return answer(f"analysis submitted for lesson {inline(lesson_id, 60)}; a human will review it",
                          {"lesson_id": inline(lesson_id, 60), "submitted": True})

    async def signal_low_context(token_count: S.TokenCount, capacity: S.Capacity, doing: S.LowDoing = None,
                                 next_step: S.LowNext = None, budget_tokens: S.PackBudget = 1500) -> CallToolResult:
        """Call when your context window fills up, with the tokens used and the window's size.

        At 60% or more it saves a checkpoint (your doing and next step if given, else the last checkpoint's) and
        returns a compact restore pack (approved lessons, the checkpoint, recent decisions, key memories) within
        budget_tokens: keep it when the context is compacted. Below 60% nothing is needed."""
        with _errors():
            if token_count > capacity:
                raise ValidationError(f"token_count ({token_count:,}) is more than capacity ({capacity:,}); give "
                                      "the tokens used and the size of the whole context window")
            ratio = token_count / capacity
            if ratio < LOW_CONTEXT_RATIO:
                text = (f"context at {ratio:.0%} of capacity (below {LOW_CONTEXT_RATIO:.0%}): nothing needed, "
                        "carry on")
                return answer(text, {"action": "none", "ratio": round(ratio, 4), "threshold": LOW_CONTEXT_RATIO,
                                     "checkpoint_id": None, "tokens": 0})
            v = handle.read() if handle.readonly else handle.write()
            c = (v.checkpoints.latest() if handle.readonly else
                 v.checkpoints.carry_forward(doing, next_step=next_step,
                                             fallback=f"session context at {ratio:.0%} of capacity"))
            pack = v.restore_pack(c, budget_tokens=budget_tokens,
                                  note="(read-only server: no checkpoint was saved; this is the last one)"
                                  if handle.readonly else None)
            return answer(pack, {"action": "read_only" if handle.readonly else "checkpoint_saved",  # the pack: text
                                 "ratio": round(ratio, 4), "threshold": LOW_CONTEXT_RATIO,
                                 "checkpoint_id": c.id if c else None, "tokens": estimate_tokens(pack)})

    async def recall(query: S.Query, session_id: S.SessionId = None,
                     budget_tokens: S.RecallBudget = None) -> CallToolResult:
        """Call on every turn before acting, with the task or question: what the vault knows that is relevant now.

        With a stable session_id per conversation only what this conversation has not seen yet is returned
        (otherwise "nothing new", with empty_reason nothing_relevant, already_given or over_budget; on a project with
        nothing stored yet, no_vault); the session is this server's own, never shared with another MCP client naming
        the same id. Approved lessons always come first."""
        with _errors():
            if no_vault():
                return answer(NOTHING_STORED, {"query": inline(query, 200), "session": session_id, "nothing_new": True,
                                               "empty_reason": "no_vault", "items": [], "lessons": []})
            v = handle.read_or_stale()
            if not v.offline:
                # what a session is marked as given must fit the answer it gets: the text, sent twice (the text
                # content and the structured content's text: review 86), keeps two fifths of the answer budget, and
                # the banner, the query's heading, the legend and the kinds' titles take their share (review 15:
                # the clamp to half the budget let the last record, marked given, be cut)
                banner = estimate_tokens(banner_text(v.lessons.in_force()))
                cap = max(S.MIN_RECALL_TOKENS, handle.answer_tokens() * 2 // 5 - banner - estimate_tokens(query)
                          - ANSWER_FRAME_TOKENS)
                asked = v.default_bars().budget_tokens if budget_tokens is None else budget_tokens
                budget_tokens = min(asked, cap)
                try:  # what the session is given is marked once the answer is cut: only what it kept whole
                    # this server's own session (review 71: every MCP server shared one delta per id)
                    r = v.recall(query, session=handle.session_key(session_id), budget_tokens=budget_tokens,
                                 record=False)
                except OfflineError as exc:  # the server went away since the handle was opened
                    v = handle.stale_copy(exc)
                else:
                    text = r.text
                    if r.empty_reason == "over_budget" and asked > cap:  # a larger budget_tokens is lowered again
                        text += (f"\n(the answer budget leaves the hits {cap:,} tokens (the vault's mcp_answer_tokens, "
                                 "which a human sets): search(query) lists them shortly)")
                    elif r.empty_reason == "over_budget":
                        text += (f"\n(call recall again with a larger budget_tokens than {r.bars.budget_tokens} to "
                                 "get them)")
                    res = answer(text, _recall_fields(r.to_dict(), query, session_id))
                    # review 71: the recall marked all it kept, then the answer's cut dropped a person's record,
                    # and the session's next call said it was "already given"
                    r.mark_given(r.given_in(answer_text(res)))
                    return res
            stale = v.recall(query)  # a team vault whose server cannot be reached: this machine's stale copy, marked so
            return answer(stale.text, _recall_fields(stale.to_dict(), query, None))

    async def remember(category: S.Category, key: S.Key, content: S.Content, tags: S.Tags = None,
                       priority: S.Priority = None) -> CallToolResult:
        """Call when you learn a durable fact worth keeping: a preference, a procedure, project context.

        It is stored as an unverified proposal until a human verifies it; the same category and key update your
        earlier proposal."""
        with _errors(), handle.writing() as v:
            m = v.remember(category, key, content, tags=tags, priority=priority)
            if not v.memories.needs_revision(m):
                return answer(f"remembered {m.id} {m.address} (unverified proposal)",
                              {"pending_revision": False, **record_json(m, FIELD_CHARS)})
            # a human's memory: the change waits for a human, and the person's record is not the outcome (review 86:
            # the structured content was the person's record alone, read as if the change were made)
            rev = v.memories.waiting_revision(m)
            if rev is None:  # the person's memory says this already: nothing was proposed
                return answer(f"{m.address} is a human's memory and already holds this: nothing to change; {m.id} "
                              "is unchanged", {"pending_revision": False, "revision_id": None, "proposed": None,
                                               "unchanged": record_json(m, FIELD_CHARS)})
            # (the change waiting may be an earlier call's: a later one that differs is refused until it is decided)
            return answer(f"{m.address} is a human's memory: the proposed change is stored as pending revision "
                          f"{rev.id} for a human to accept; {m.id} is unchanged until then",
                          {"pending_revision": True, "revision_id": rev.id,
                           "proposed": quoted(json.loads(rev.fields), FIELD_CHARS),
                           "unchanged": record_json(m, FIELD_CHARS)})

    async def log_episode(task_key: S.TaskKey, status: S.Status = "unknown", outcome: S.Outcome = None,
                          refs: S.Refs = None) -> CallToolResult:
        """Call after running a task (tests, a migration, a deploy): record how it ended.

        If the same task_key ran before, the prior run is returned as a warning: read it before repeating work. When
        the latest run is an agent's unverified one, a person's latest run of the task is named first."""
        with _errors(), handle.writing() as v:
            e = v.episodes.log(task_key, status=status, outcome=outcome, refs=refs)
            data = {**record_json(e, FIELD_CHARS), "prior": record_json(e.prior, FIELD_CHARS) if e.prior else None,
                    "prior_by_person": record_json(e.prior_by_person, FIELD_CHARS) if e.prior_by_person else None,
                    "warning": e.warning}
            said = f"episode {e.id} logged" + (f"; warning: {e.warning}" if e.warning else "")
            return answer(with_legend([e.prior], said), data)  # the prior run's outcome: an agent's words?

    async def search(query: S.Query, kind: S.SearchKind = "all", limit: S.SearchLimit = 10) -> CallToolResult:
        """Call to look something up on purpose (full-text search over the memory), by kind or over all kinds.

        Lessons are the approved ones only. In each kind the records people wrote or verified come first, then
        agents' in what the limit leaves. A field of a record another author wrote (an agent's analysis of a
        person's lesson) starts with that author's mark."""
        with _errors():
            if no_vault():
                return answer(NOTHING_STORED, {"query": inline(query, 200), "kind": kind, "results": [],
                                               "nothing_new": True, "empty_reason": "no_vault"})
            v = handle.read_or_stale()
            kinds = SEARCH_KINDS[1:] if kind == "all" else (kind,)
            if not v.offline:
                try:
                    records = [r for k in kinds for r in _manager(v, k).search(query, limit=limit)]
                except OfflineError as exc:  # the server went away since the handle was opened
                    v = handle.stale_copy(exc)
                else:
                    lines = ([f"{shown_id(r.id)}  {r.summary_line()}" for r in records]
                             or [f"no match for {inline(query, 200)!r}"])
                    if legend := legend_for(records):  # what an [agent · unverified] line is, as recall says it
                        lines.insert(0, legend)
                    return answer("\n".join(lines), {"query": inline(query, 200), "kind": kind,
                                                     "results": [record_json(r, FIELD_CHARS) for r in records]})
            # the stale copy: text only, filtered by kind (it cannot tell approved lessons)
            stale = v.search(query, k=1000)
            stale = replace(stale, hits=tuple(h for h in stale.hits if h.kind in kinds)[:limit])
            return answer(stale.text, {**stale.to_dict(), "query": inline(query, 200), "kind": kind})

    async def expand_note(name: S.NoteName) -> CallToolResult:
        """Call when recall (or search) lists a note you need: it returns the note's body by its name (recall shows
        only a note's trigger).

        A person's note comes back as written. An agent's note comes back after its mark, each line quoted: its
        words are another agent's proposal, not a rule. A name that matches no note is an error."""
        with _errors():
            notes = handle.read().notes
            note = notes.get_by_name(name)
            body = notes.expand(note.name)  # the mark and the quoting every reader gives an agent's note
            fields = {k: x for k, x in record_json(note, FIELD_CHARS).items() if k != "body"}  # the body is the text
            return answer(with_legend([note], body), fields)

    async def get_status() -> CallToolResult:
        """Call to see the vault's counts: memories, checkpoints, decisions, approved lessons, episodes, notes (all 0
        on a project with nothing stored yet)."""
        with _errors():
            where = handle.new_project()
            if where is not None:  # every count 0, as a vault's status has them
                from synapse_nb.vault.status import empty_status  # as Vault.status loads it: when asked for

                st = empty_status(str(where), handle.mind, "agent")
                counts = str(st).split("\n", 1)[1]
                return answer(f"{NOTHING_STORED}\n{counts}", {**st.to_dict(), "vault": False})
            st = handle.read().status()
            return answer(str(st), st.to_dict())

    tools = [_tool(fn, hooks) for fn in (get_approved_memory, restore_checkpoint, create_checkpoint, log_decision,
                                         submit_lesson_analysis, signal_low_context, recall, remember, log_episode,
                                         search, expand_note, get_status)]
    return _Server(tools, name="synapse-nb", instructions=instructions(hooks), version=__version__)


def serve(path: str | Path | None = None, *, mind: str = "default", hooks: bool = False) -> None:
    """Run the server over stdio until the client closes it or Ctrl-C (what ``synapse-nb mcp [--hooks]`` does)."""
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = build_server(path, mind=mind, hooks=hooks)
    try:
        server.run("stdio")
    except BaseException:
        # Ctrl-C: stop quietly with the usual status, whatever the SDK's tasks raised while being cancelled
        # (a relay task can meet a closed stream: BrokenResourceError in an ExceptionGroup)
        if isinstance(server, _Server) and server.interrupted:
            raise SystemExit(130) from None
        raise
    if isinstance(server, _Server) and server.interrupted:
        raise SystemExit(130)
