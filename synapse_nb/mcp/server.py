"""The MCP server: the vault as tools an agent calls (stdio, official ``mcp`` SDK 2.x).

The server opens the vault with ``actor="agent"``, so the core refuses every human-only write
(approving or rejecting a lesson, verifying a memory, changing settings, importing) even if a tool
tried: no tool does. Agent writes are proposals (unverified, ``source="agent"``).

Every tool returns structured content (a JSON object) plus readable text; a refused or malformed call
is a tool error carrying the :class:`~synapse_nb.errors.SynapseError` message, and the server keeps
serving. One vault handle is kept per server (SQLite WAL: a notebook and the CLI can use the same
vault at the same time). Reading tools never create a vault (no vault is a tool error saying how to
create one); writing tools (checkpoint, decision, remember, episode, low-context checkpoint) create it
inside an existing folder only, and say so once on stderr.

Examples
--------
>>> from synapse_nb.mcp.server import build_server
>>> server = build_server("/tmp/project")      # doctest: +SKIP
>>> server.run("stdio")                        # doctest: +SKIP

From a shell: ``synapse-nb mcp [PATH]``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from synapse_nb._version import __version__
from synapse_nb.errors import NoCheckpointError, OfflineError, SynapseError, ValidationError
from synapse_nb.provenance import inline, label_text, record_json, salvage
from synapse_nb.recall import banner_text, record_line
from synapse_nb.render import estimate_tokens, plural
from synapse_nb.vault import Vault, open_vault

__all__ = ["DEFAULT_ANSWER_TOKENS", "INSTRUCTIONS", "LOW_CONTEXT_RATIO", "SEARCH_KINDS", "TOOL_NAMES", "build_server", "serve"]

#: The default answer budget in tokens (the vault's ``mcp_answer_tokens`` setting overrides it).
DEFAULT_ANSWER_TOKENS = 8000
#: At or above this fraction of the context window, ``signal_low_context`` saves a checkpoint.
LOW_CONTEXT_RATIO = 0.6
#: What ``search(kind=...)`` accepts.
SEARCH_KINDS = ("all", "memory", "decision", "checkpoint", "lesson", "episode", "note")
#: Every tool the server offers, sorted.
TOOL_NAMES = (
    "create_checkpoint", "get_approved_memory", "get_status", "log_decision", "log_episode", "recall", "remember",
    "restore_checkpoint", "search", "signal_low_context", "submit_lesson_analysis",
)

INSTRUCTIONS = """\
synapse-nb keeps this project's memory: checkpoints, decisions, lessons from reverted changes and facts.
- At session start: call get_approved_memory (lessons a human approved: ADHERE to them) and restore_checkpoint.
- Each turn, before acting: call recall(query, session_id) with the task; it returns only what is new.
- After about 10 significant changes: create_checkpoint. After any design choice: log_decision.
- When the context window fills (>= 60%): signal_low_context(token_count, capacity) and keep its restore pack.
- When asked why a change was reverted: submit_lesson_analysis(lesson_id, analysis).
- remember() stores a proposal (unverified until a human verifies it). You cannot approve lessons, verify
  memories or change settings: a human does that.
"""


# ------------------------------------------------------------------------------------------------ helpers
@contextmanager
def _errors() -> Iterator[None]:
    """Library errors become tool errors with their one-line message."""
    try:
        yield
    except SynapseError as exc:
        raise ToolError(" ".join(str(exc).split()) or type(exc).__name__) from None


def _result(text: str, data: dict[str, Any], budget_tokens: int = DEFAULT_ANSWER_TOKENS,
            borrowed: dict[str, Any] | None = None) -> CallToolResult:
    """A tool answer within ``budget_tokens`` (text and structured content together; about 4 characters a token).

    The text keeps whole lines from the top and says how many it left out; the structured content keeps whole
    list items and cuts long strings, and says what it left out under ``"left_out"``. ``borrowed`` (a borrowed
    vault: :meth:`synapse_nb.borrowed.Borrowed.to_dict`) makes its ``line`` the first line of the text and is the
    ``"borrowed"`` field of the structured content; no cut ever drops either.
    """
    limit = max(400, budget_tokens * 4)
    if borrowed is not None:
        line = borrowed["line"]
        if not text.startswith(line):  # a recall's text starts with it already
            text = f"{line}\n\n{text}"
        data = {k: v for k, v in data.items() if k != "borrowed"}
        limit = max(400, limit - len(line) - _size(borrowed))
    text = _cut_text(text, limit // 2 if len(text) > limit // 2 else limit)
    data = _cut_data(data, max(200, limit - len(text)))
    if borrowed is not None:
        data = {**data, "borrowed": borrowed}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _cut_text(text: str, max_chars: int) -> str:
    """``text`` in at most about ``max_chars`` characters: whole lines from the top, then what was left out."""
    if len(text) <= max_chars:
        return text
    lines = text.split("\n")
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > max_chars - 120:
            break
        out.append(line)
        used += len(line) + 1
    if not out:  # one huge line: its start
        out, left = [lines[0][: max(0, max_chars - 120)] + "…"], len(lines) - 1
    else:
        left = len(lines) - len(out)
    return "\n".join(out) + (f"\n(… {plural(left, 'more line')} left out to fit the answer budget; ask for less, "
                             "e.g. a narrower query or a smaller limit)" if left else "\n(… the rest of the line "
                             "was left out to fit the answer budget)")


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _cut_data(data: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """``data`` in at most about ``max_chars`` characters of JSON: long strings cut, lists shortened from the end
    (keys in sorted order, so the same answer is cut the same way); what was cut is counted in ``"left_out"``."""
    if _size(data) <= max_chars:
        return data
    out = dict(data)
    left: dict[str, Any] = {}
    for key in sorted(out):
        v = out[key]
        if isinstance(v, str) and len(v) > 1000:
            out[key] = v[:1000] + "…"
            left[key] = f"{len(v) - 1000:,} characters"
    for key in sorted(out):
        v = out[key]
        if _size(out) <= max_chars:
            break
        if isinstance(v, list) and v:
            keep = list(v)
            while keep and _size({**out, key: keep}) > max_chars:
                keep = keep[: len(keep) // 2]
            out[key] = keep
            left[key] = f"{len(v) - len(keep):,} of {len(v):,} items"
    for key in sorted(out):
        if _size(out) <= max_chars:
            break
        if key != "left_out" and isinstance(out[key], dict | str) and _size(out[key]) > 200:
            left[key] = "left out"
            out[key] = None
    out["left_out"] = left
    return out


def _fit(blocks: list[str], budget: int) -> tuple[str, int]:
    """Join text blocks line by line while the estimate stays within ``budget`` tokens; a line is kept whole or
    left out (every record is one line, its provenance mark first, so a cut never keeps text without its mark)."""
    out: list[str] = []
    omitted = 0
    used = 0
    for b, block in enumerate(blocks):
        if b and out:
            out.append("")
        for line in block.split("\n"):
            cost = estimate_tokens(line + "\n")
            if used + cost > budget:
                omitted += 1
                continue
            out.append(line)
            used += cost
    text = "\n".join(out).strip("\n")
    if omitted:
        text += f"\n(… {plural(omitted, 'more line')} left out to fit {budget} tokens)"
    return text, omitted


def _lesson_brief(les: Any) -> dict[str, Any]:
    """What an agent is told of an approved lesson beside the banner that quotes it."""
    return {"id": les.id, "branch": les.branch, "approved_at": les.approved_at, "expires_at": les.expires_at,
            "wording_by": les.wording_by, "created_by": les.source}


def _manager(v: Vault, kind: str) -> Any:
    """The manager ``search(kind=...)`` reads for ``kind``."""
    return {"memory": v.memories, "decision": v.decisions, "checkpoint": v.checkpoints, "lesson": v.lessons,
            "episode": v.episodes, "note": v.notes}[kind]


class _Handle:
    """The agent's vault handle, opened on first use (so a bad path is a tool error, not a crash)."""

    def __init__(self, path: str | Path | None, mind: str, vault: Vault | None, clock: Callable[[], datetime] | None) -> None:
        self._path = path
        self._mind = mind
        self._clock = clock
        self._vault = vault.as_agent() if vault is not None else None
        self._given = vault is not None

    def get(self, *, write: bool = False) -> Vault:
        """The vault; read tools never create one, write tools create it inside an existing folder only.

        A team vault whose server cannot be reached is this machine's stale copy (``offline``: recall and search
        answer marked STALE, everything else is an OfflineError); the server is tried again on the next call."""
        if self._vault is not None and self._vault.offline:
            self._vault = None  # never stay offline once the server is back
        if self._vault is None:
            self._vault = open_vault(self._path, mind=self._mind, actor="agent", clock=self._clock, create=write,
                                     offline=True)
            if self._vault.created:  # stdout carries the protocol: say it on stderr, once
                print(f"synapse-nb: created a new vault at {self._vault.path}", file=sys.stderr, flush=True)
        return self._vault

    def stale_copy(self, exc: OfflineError) -> Any:
        """This machine's stale copy once the server of the open team vault went away (``exc``, raised by a read
        the copy can answer); ``exc`` again when the server answers or there is no copy. The live handle is
        closed, so the next call tries the server again."""
        if self._given or self._vault is None:
            raise exc
        self._vault.close()
        self._vault = None
        v = self.get()
        if not v.offline:
            raise exc
        return v

    def borrowed(self) -> dict[str, Any] | None:
        """Why the open vault is borrowed (it heads every answer), or None."""
        v = self._vault
        b = None if v is None or v.offline else v.borrowed  # a team vault is never file-borrowed
        return b.to_dict() if b is not None else None

    def answer_tokens(self) -> int:
        """The answer budget: the open vault's ``mcp_answer_tokens`` setting, else :data:`DEFAULT_ANSWER_TOKENS`."""
        v = self._vault
        if v is None or v.offline:
            return DEFAULT_ANSWER_TOKENS
        try:
            return int(v.settings.get("mcp_answer_tokens"))
        except SynapseError:
            return DEFAULT_ANSWER_TOKENS

    @contextmanager
    def writing(self) -> Iterator[Vault]:
        """The vault for a write tool. A first write that is refused takes back the vault it has just created
        (as the CLI does), so a bad argument leaves no empty vault behind."""
        fresh = self._vault is None
        v = self.get(write=True)
        try:
            yield v
        except SynapseError:
            if fresh and not v.offline and v.discard_if_unused():
                self._vault = None
                print(f"synapse-nb: removed the vault it had just created at {v.path} (nothing was written)",
                      file=sys.stderr, flush=True)
            raise


# ------------------------------------------------------------------------------------------------ the server
def build_server(path: str | Path | None = None, *, mind: str = "default", vault: Vault | None = None,
                 clock: Callable[[], datetime] | None = None) -> MCPServer:
    """The synapse-nb MCP server for one vault, acting as the agent.

    Parameters
    ----------
    path : project folder or vault folder (default: ``SYNAPSE_HOME``, else the current folder).
    mind : which mind the agent reads and writes.
    vault : an open vault to serve instead (tests, notebooks); it is used through ``as_agent()``.
    clock : a clock for the vault (tests).

    Examples
    --------
    >>> from mcp import Client                               # doctest: +SKIP
    >>> async with Client(build_server(tmp)) as c:           # doctest: +SKIP
    ...     r = await c.call_tool("get_status", {})
    """
    handle = _Handle(path, mind, vault, clock)
    server = MCPServer("synapse-nb", instructions=INSTRUCTIONS, version=__version__)

    def answer(text: str, data: dict[str, Any]) -> CallToolResult:
        return _result(text, data, handle.answer_tokens(), handle.borrowed())

    @server.tool()
    async def get_approved_memory() -> CallToolResult:
        """Call at the START of every session: the lessons a human approved (ADHERE to them) and the memory summary.

        Returns the approved-lesson banner (empty when none) and the memory list (verified and unverified).
        """
        with _errors():
            v = handle.get()
            lessons = v.lessons.in_force()
            banner = banner_text(lessons)
            mems = list(v.memories.list())
            mems.sort(key=lambda m: not m.verified)  # stable: human-verified first, each part by priority, recency
            n_ver = sum(1 for m in mems if m.verified)
            budget = handle.answer_tokens()
            head = (f"MEMORY ({plural(len(mems), 'entry', 'entries')}: {n_ver} verified, {len(mems) - n_ver} "
                    "unverified; verified first)")
            lines, used = [], estimate_tokens(banner) + estimate_tokens(head) + 60
            for m in mems:
                line = record_line(m)
                cost = estimate_tokens(line + "\n")
                if used + cost > budget * 0.45:  # the text and the structured content share the budget
                    break
                lines.append(line)
                used += cost
            left = len(mems) - len(lines)
            mem = "\n".join([head, *(lines if mems else ["(no memories)"])])
            if left:
                mem += (f"\n(… {plural(left, 'more memory', 'more memories')} left out to fit the answer budget of "
                        f"{budget:,} tokens; recall(query) or search(query) finds them)")
            text = f"{banner}\n\n{mem}" if banner else mem
            return answer(text, {"banner": banner, "lessons": [_lesson_brief(x) for x in lessons],
                                 "memories": len(mems), "memories_shown": len(lines), "memories_left_out": left,
                                 "verified": n_ver})

    @server.tool()
    async def restore_checkpoint(checkpoint_id: str | None = None) -> CallToolResult:
        """Call at the START of a session to resume work: the latest checkpoint on the current git branch.

        Give ``checkpoint_id`` (an id or unique prefix) to restore a specific one.
        """
        with _errors():
            try:
                c = handle.get().checkpoints.restore(checkpoint_id or "latest")
            except NoCheckpointError as exc:
                raise ToolError(exc.with_remedy("the create_checkpoint tool")) from None
            return answer(c.restore_text(), record_json(c))

    @server.tool()
    async def create_checkpoint(doing: str, changed_files: list[str] | None = None, next_step: str | None = None,
                                blockers: str | None = None) -> CallToolResult:
        """Call after about every 10 significant changes (and before risky steps): save what you are doing.

        ``doing``: the task in one sentence; ``changed_files``: paths changed so far; ``next_step``: what comes
        next; ``blockers``: what is in the way. Branch and commit are recorded automatically.
        """
        with _errors(), handle.writing() as vault:
            c = vault.checkpoint(doing, files=changed_files, next_step=next_step, blockers=blockers,
                                 origin="agent")
            return answer(f"checkpoint {c.id} saved on branch {label_text(c.branch) or '-'}", record_json(c))

    @server.tool()
    async def log_decision(decision: str, rationale: str | None = None,
                           tags: list[str] | None = None) -> CallToolResult:
        """Call right after making any design choice: log the decision and why, so later sessions keep to it.

        ``tags``: one word each (lower-cased, a leading # dropped).
        """
        with _errors(), handle.writing() as vault:
            d = vault.decide(decision, rationale=rationale, tags=tags)
            return answer(f"decision {d.id} logged", record_json(d))

    @server.tool()
    async def submit_lesson_analysis(lesson_id: str, analysis: str) -> CallToolResult:
        """Call when asked why a change was reverted: explain the failure for lesson ``lesson_id`` (id or unique prefix).

        The analysis is a proposal; a human reads it and decides whether it becomes an approved lesson.
        """
        with _errors():
            handle.get().lessons.submit_analysis(lesson_id, analysis)
            return answer(f"analysis submitted for lesson {lesson_id}; a human will review it",
                           {"lesson_id": lesson_id, "submitted": True})

    @server.tool()
    async def signal_low_context(token_count: int, capacity: int, doing: str | None = None,
                                 next_step: str | None = None, budget_tokens: int = 1500) -> CallToolResult:
        """Call when your context window fills up: ``token_count`` used out of ``capacity``.

        At 60% or more it saves a checkpoint (your ``doing``/``next_step`` if given, else the last checkpoint's)
        and returns a compact restore pack (approved lessons, checkpoint, recent decisions, key memories)
        within ``budget_tokens``: keep it when the context is compacted. Below 60% nothing is needed.
        """
        with _errors():
            for name, val in (("token_count", token_count), ("capacity", capacity), ("budget_tokens", budget_tokens)):
                if isinstance(val, bool) or not isinstance(val, int) or val < 0:
                    raise ValidationError(f"{name} must be a whole number >= 0, got {val!r}")
            if capacity < 1:
                raise ValidationError(f"capacity must be at least 1 token, got {capacity}")
            if not 100 <= budget_tokens <= 20_000:
                raise ValidationError(f"budget_tokens must be from 100 to 20000, got {budget_tokens}")
            ratio = token_count / capacity
            if ratio < LOW_CONTEXT_RATIO:
                text = (f"context at {ratio:.0%} of capacity (below {LOW_CONTEXT_RATIO:.0%}): nothing needed, "
                        "carry on")
                return answer(text, {"action": "none", "ratio": round(ratio, 4), "threshold": LOW_CONTEXT_RATIO,
                                      "checkpoint_id": None, "restore_pack": None, "tokens": 0})
            v = handle.get(write=True)
            last = v.checkpoints.latest()
            # the last checkpoint's fields are carried forward as the write path would store them today
            # (an old vault may hold text written before it cleaned line breaks and controls)
            c = v.checkpoint(
                doing or (salvage(last.doing) if last else f"session context at {ratio:.0%} of capacity"),
                files=[f for f in (salvage(f, multiline=False) for f in last.changed_files) if f] if last else None,
                next_step=next_step if next_step is not None else (salvage(last.next_step) if last else None),
                blockers=salvage(last.blockers) if last else None, origin="auto")
            lessons = v.lessons.in_force()
            blocks = [b for b in (banner_text(lessons), c.restore_text()) if b]
            decisions = v.decisions.list(limit=5)
            if decisions:
                blocks.append("Recent decisions:\n" + "\n".join(record_line(d) for d in decisions))
            key_mems = [m for m in v.memories.list(limit=50) if m.priority in ("critical", "high")]
            key_mems.sort(key=lambda m: not m.verified)  # human-verified first: a cut drops proposals first
            if key_mems:
                blocks.append("Key memories:\n" + "\n".join(record_line(m) for m in key_mems))
            pack, _ = _fit(blocks, budget_tokens)
            return answer(pack, {"action": "checkpoint_saved", "ratio": round(ratio, 4),
                                  "threshold": LOW_CONTEXT_RATIO, "checkpoint_id": c.id, "restore_pack": pack,
                                  "tokens": estimate_tokens(pack)})

    @server.tool()
    async def recall(query: str, session_id: str | None = None, budget_tokens: int | None = None) -> CallToolResult:
        """Call on EVERY turn before acting, with the task or question: what the vault knows that is relevant.

        With a stable ``session_id`` per conversation, only what this session has not yet seen is returned
        (otherwise "nothing new", with ``empty_reason``: nothing_relevant, already_given or over_budget).
        ``budget_tokens`` caps the hits' size (default 1200). Approved lessons always come first.
        """
        with _errors():
            kwargs = {} if budget_tokens is None else {"budget_tokens": budget_tokens}
            v = handle.get()
            try:
                r = None if v.offline else v.recall(query, session=session_id, **kwargs)
            except OfflineError as exc:  # the server went away since the handle was opened
                v, r = handle.stale_copy(exc), None
            if r is None:  # a team vault whose server cannot be reached: this machine's stale copy, marked so
                stale = v.recall(query)
                return answer(stale.text, stale.to_dict())
            text = r.text
            if r.empty_reason == "over_budget":
                text += f"\n(call recall again with a larger budget_tokens than {r.bars.budget_tokens} to get them)"
            return answer(text, {**r.to_dict(), "query": inline(query, 1000)})

    @server.tool()
    async def remember(category: str, key: str, content: str, tags: list[str] | None = None,
                       priority: str | None = None) -> CallToolResult:
        """Call when you learn a durable fact worth keeping (a preference, a procedure, project context).

        ``category``: identity, preference, project, context, knowledge, mistake, procedure or relationship;
        ``key``: snake_case (the same key updates your earlier proposal); ``priority``: critical, high, normal
        or low; ``tags``: one word each (lower-cased, a leading # dropped). It is stored as an unverified proposal
        until a human verifies it.
        """
        with _errors(), handle.writing() as vault:
            m = vault.remember(category, key, content, tags=tags, priority=priority)
            return answer(f"remembered {m.id} {m.category}/{m.key} (unverified proposal)", record_json(m))

    @server.tool()
    async def log_episode(task_key: str, status: str = "unknown", outcome: str | None = None,
                          refs: list[str] | None = None) -> CallToolResult:
        """Call after running a task (tests, a migration, a deploy): record how it ended.

        ``status``: success, failure or unknown. If the same ``task_key`` ran before, the prior run is returned
        as a warning: read it before repeating work.
        """
        with _errors(), handle.writing() as vault:
            e = vault.episodes.log(task_key, status=status, outcome=outcome, refs=refs)
            data = {**record_json(e), "prior": record_json(e.prior) if e.prior else None, "warning": e.warning}
            return answer(f"episode {e.id} logged" + (f"; warning: {e.warning}" if e.warning else ""), data)

    @server.tool()
    async def search(query: str, kind: str = "all", limit: int = 10) -> CallToolResult:
        """Call to look something up on purpose (full-text): ``kind`` is all, memory, decision, checkpoint,
        lesson (approved only), episode or note; at most ``limit`` results per kind (1-100)."""
        with _errors():
            if kind not in SEARCH_KINDS:
                raise ValidationError(f"kind {kind!r} is not accepted; use one of: {', '.join(SEARCH_KINDS)}")
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
                raise ValidationError(f"limit must be a whole number from 1 to 100, got {limit!r}")
            v = handle.get()
            kinds = SEARCH_KINDS[1:] if kind == "all" else (kind,)
            try:
                records = None if v.offline else [r for k in kinds for r in _manager(v, k).search(query, limit=limit)]
            except OfflineError as exc:  # the server went away since the handle was opened
                v, records = handle.stale_copy(exc), None
            if records is None:  # the stale copy: text only, filtered by kind (it cannot tell approved lessons)
                stale = v.search(query, k=1000)
                stale = replace(stale, hits=tuple(h for h in stale.hits if h.kind in kinds)[:limit])
                return answer(stale.text, {**stale.to_dict(), "kind": kind})
            lines = [f"{r.id}  {r.summary_line()}" for r in records] or [f"no match for {inline(query, 200)!r}"]
            return answer("\n".join(lines), {"query": inline(query, 1000), "kind": kind,
                                              "results": [record_json(r) for r in records]})

    @server.tool()
    async def get_status() -> CallToolResult:
        """Call to see the vault's counts (memories, checkpoints, decisions, approved lessons, ...)."""
        with _errors():
            st = handle.get().status()
            return answer(str(st), st.to_dict())

    return server


def serve(path: str | Path | None = None, *, mind: str = "default") -> None:
    """Run the server over stdio until the client closes it (what ``synapse-nb mcp`` does)."""
    logging.getLogger("mcp").setLevel(logging.WARNING)
    build_server(path, mind=mind).run("stdio")
