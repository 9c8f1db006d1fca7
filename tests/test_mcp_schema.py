"""The MCP server as an agent reads it: schemas, annotations, answer budgets, refusals, read-only, stdio limits.

Every call goes through the SDK ``Client``, which checks each structured answer against the tool's
``outputSchema`` (a mismatch raises), so every answer below is also a schema check.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git
from mcp import Client

import synapse_nb as syn
from synapse_nb.kinds.episodes import STATUSES
from synapse_nb.mcp.server import HOOKS_INSTRUCTIONS, INSTRUCTIONS, SEARCH_KINDS, TOOL_NAMES, build_server
from synapse_nb.models import CATEGORIES, MAX_SHORT, MAX_TAGS, MAX_TEXT, PRIORITIES

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[1]
READ_TOOLS = {"get_approved_memory", "restore_checkpoint", "recall", "search", "get_status", "expand_note"}
#: the enum each parameter must carry, from the core's own constants
ENUMS = {("remember", "category"): CATEGORIES, ("remember", "priority"): PRIORITIES,
         ("log_episode", "status"): STATUSES, ("search", "kind"): SEARCH_KINDS}


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("SYNAPSE_READONLY", raising=False)
    p = tmp_path / "project"
    p.mkdir()
    return p


@pytest.fixture()
def user(project: Path) -> syn.Vault:
    return syn.open_vault(project)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SYNAPSE_HOME", "SYNAPSE_READONLY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _alternatives(prop: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in prop.get("anyOf", [prop]) if a.get("type") != "null"]


def text(r: Any) -> str:
    return r.content[0].text


# ------------------------------------------------------------------------------------------------ the schema
async def test_every_parameter_is_described_typed_and_bounded(project: Path) -> None:
    async with Client(build_server(project)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert tuple(sorted(tools)) == TOOL_NAMES
    for name, t in tools.items():
        props = t.input_schema.get("properties", {})
        for pname, prop in props.items():
            assert prop.get("description", "").endswith("."), (name, pname)
            alts = _alternatives(prop)
            assert len(alts) == 1 and alts[0].get("type") in ("string", "integer", "array"), (name, pname, prop)
            alt = alts[0]
            if (name, pname) in ENUMS:
                assert alt["enum"] == list(ENUMS[(name, pname)]), (name, pname)
            elif alt["type"] == "string":
                assert alt["maxLength"] in (MAX_TEXT, MAX_SHORT), (name, pname)
            elif alt["type"] == "integer":
                assert "minimum" in alt, (name, pname)
            else:
                assert "maxItems" in alt and "maxLength" in alt["items"], (name, pname)
    assert tools["log_decision"].input_schema["properties"]["tags"]["anyOf"][0]["maxItems"] == MAX_TAGS
    limit = tools["search"].input_schema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)
    assert tools["signal_low_context"].input_schema["required"] == ["token_count", "capacity"]


async def test_titles_annotations_output_schemas_and_plain_descriptions(project: Path) -> None:
    async with Client(build_server(project)) as c:
        tools = (await c.list_tools()).tools
    for t in tools:
        a = t.annotations
        assert t.title and a is not None and a.title == t.title
        assert a.read_only_hint is (t.name in READ_TOOLS), t.name
        assert a.destructive_hint is False and a.open_world_hint is False
        assert a.idempotent_hint is (t.name not in ("create_checkpoint", "log_decision", "signal_low_context",
                                                    "recall", "log_episode")), t.name
        assert t.output_schema and t.output_schema["type"] == "object", t.name
        assert {"left_out", "ignored_arguments"} <= set(t.output_schema["properties"]), t.name
        d = t.description or ""
        assert d.startswith("Call ") and d.rstrip().endswith(".") and len(d) > 60, t.name
        assert "``" not in d and ":class:" not in d and not re.search(r"\n[ \t]", d), (t.name, d)
        assert all(" ".join(p.split()) == p for p in d.split("\n\n")), (t.name, d)  # wrapped lines joined
    assert tools[0].output_schema is not None


def test_instructions_are_the_standing_instructions_of_the_docs() -> None:
    doc = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("## Standing instructions for the agent", 1)[1]
              .split("## Reading what", 1)[0].split("```text\n")[1:]]
    assert blocks == [INSTRUCTIONS, HOOKS_INSTRUCTIONS]
    assert all(name in INSTRUCTIONS for name in TOOL_NAMES if name not in ("search", "get_status"))


async def test_a_server_beside_the_hooks_tells_the_agent_not_to_fetch_what_they_give(project: Path) -> None:
    """Review 86 F4: beside the hooks, the default instructions (get_approved_memory and restore_checkpoint at
    session start, recall every turn) gave the agent everything twice. ``--hooks`` says the hooks give it; the
    agent still checkpoints, logs decisions and episodes, and proposes facts and analyses."""
    async with Client(build_server(project)) as c:
        plain = {t.name: t.description or "" for t in (await c.list_tools()).tools}
        assert c.instructions == INSTRUCTIONS
    async with Client(build_server(project, hooks=True)) as c:
        hooked = {t.name: t.description or "" for t in (await c.list_tools()).tools}
        assert c.instructions == HOOKS_INSTRUCTIONS
    flat = " ".join(HOOKS_INSTRUCTIONS.split())
    assert "At session start: call get_approved_memory" in INSTRUCTIONS and "Every turn, before acting" in INSTRUCTIONS
    assert "At session start: call" not in flat and "Every turn" not in flat
    assert "Do not call get_approved_memory or restore_checkpoint" in flat
    # review 87 F2: hooks that did not run (disabled, dropped, failed) give nothing; the agent then fetches it itself
    assert ("If no synapse-nb block reached you at session start (the hooks did not run, or failed), call "
            "get_approved_memory and then restore_checkpoint yourself.") in flat
    assert "or no synapse-nb block reached you at session start" in hooked["get_approved_memory"].split("\n\n")[0]
    assert "do not call recall for the prompt itself" in flat
    assert "recall(query, session_id) or search(query) only for a sub-task or question the prompt did not name" in flat
    for still in ("create_checkpoint(", "log_decision(", "log_episode(", "remember(", "submit_lesson_analysis(",
                  "expand_note(", "APPROVED"):
        assert still in HOOKS_INSTRUCTIONS, still
    changed = {name for name in plain if plain[name] != hooked[name]}
    assert changed == {"get_approved_memory", "restore_checkpoint", "recall"}
    for name in changed:
        assert hooked[name].startswith("Call ") and "hooks" in hooked[name].split("\n\n")[0], name
        assert plain[name].split("\n\n")[1:] == hooked[name].split("\n\n")[1:], name  # the rest is the same
    assert "Call on every turn" in plain["recall"] and "Call on every turn" not in hooked["recall"]


async def test_an_unknown_lesson_id_says_to_ask_the_person(project: Path, user: syn.Vault) -> None:
    """Review 86: an agent is never shown a pending lesson, so it may have no id to give submit_lesson_analysis;
    the refusal and the instructions say to ask the person for it (never a way around the human gate)."""
    pending = user.lessons.create("Reverted cache warmup")
    async with Client(build_server(project)) as c:
        for wrong in ("les_0123456789ab", pending.id[:8], "the cache warmup lesson"):
            r = await c.call_tool("submit_lesson_analysis", {"lesson_id": wrong, "analysis": "raced the deploy"})
            assert r.is_error and "ask the human for the lesson's full id" in text(r), text(r)
            assert "synapse-nb lessons review" in text(r) and pending.id not in text(r)
        r = await c.call_tool("submit_lesson_analysis", {"lesson_id": pending.id, "analysis": "raced the deploy"})
        assert not r.is_error
    for said in (INSTRUCTIONS, HOOKS_INSTRUCTIONS):
        assert "Without the lesson's full id, ask the human for it" in " ".join(said.split())
    assert user.lessons.get(pending.id).analysis == "raced the deploy"


async def test_recall_budget_tokens_is_bounded_to_what_can_answer(project: Path, user: syn.Vault) -> None:
    """Review 86: recall took budget_tokens 0 (no maximum), which can only answer "call again with a larger
    budget"; the schema takes 100 to the vault's own bound, and says why."""
    from synapse_nb.settings import MAX_TOKENS

    user.remember("procedure", "run_migrations", "alembic upgrade head inside the api container")
    async with Client(build_server(project)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        prop = _alternatives(tools["recall"].input_schema["properties"]["budget_tokens"])[0]
        assert (prop["minimum"], prop["maximum"]) == (100, MAX_TOKENS) == (100, 1_000_000)
        said = tools["recall"].input_schema["properties"]["budget_tokens"]["description"]
        assert "a smaller budget holds hardly one record line" in said and "1,000,000" in said
        for bad in (0, 99, MAX_TOKENS + 1):
            r = await c.call_tool("recall", {"query": "how do we run migrations?", "budget_tokens": bad})
            assert r.is_error and "budget_tokens must be a whole number from 100 to 1,000,000" in text(r), text(r)
        r = await c.call_tool("recall", {"query": "how do we run migrations?", "budget_tokens": 100})
        assert not r.is_error and "alembic upgrade head" in text(r)
    # a record the answer budget cannot hold: a larger budget_tokens would be lowered again, so it is not asked for
    user.settings.set("mcp_answer_tokens", 500)
    user.remember("procedure", "release_train", "The release train leaves at noon from the deploy host " * 12)
    async with Client(build_server(project)) as c:
        r = await c.call_tool("recall", {"query": "when does the release train leave?", "budget_tokens": 5000})
        assert r.structured_content["empty_reason"] == "over_budget" and "larger budget_tokens" not in text(r)
        assert "the answer budget leaves the hits 100 tokens (the vault's mcp_answer_tokens" in text(r)
        assert "search(query) lists them" in text(r)


# ------------------------------------------------------------------------------------------------ answers and caps
async def test_answers_fit_the_budget_and_say_what_they_left_out(project: Path, user: syn.Vault) -> None:
    with user.transaction():
        for i in range(600):
            user.remember("knowledge", f"fact_{i}", f"deploy note {i}: " + "the release train leaves at noon " * 30)
    async with Client(build_server(project)) as c:
        r = await c.call_tool("get_approved_memory", {})  # no memory is key: counted (review 93: listed to the budget)
        size = len(text(r)) + len(json.dumps(r.structured_content, ensure_ascii=False))
        assert size <= 1000 and "Memory: 600 entries, 600 verified: knowledge 600." in text(r)
        assert r.structured_content["memories"] == 600 and r.structured_content["key_shown"] == []
        assert "No approved lessons yet." in text(r)
        r = await c.call_tool("search", {"query": "release train", "kind": "memory", "limit": 100})
        data = r.structured_content
        assert len(text(r)) + len(json.dumps(data, ensure_ascii=False)) <= 8000 * 4 + 400
        assert data["left_out"]["results"].startswith(tuple("0123456789"))  # counted, shape kept
        assert all(isinstance(x, dict) and x["provenance"] for x in data["results"])
        long_query = "where does the release train leave " * 300  # 10,500 characters: accepted
        r = await c.call_tool("recall", {"query": long_query, "session_id": "s1"})
        assert not r.is_error and len(r.structured_content["query"]) <= 201
        assert long_query not in json.dumps(r.structured_content)


async def test_huge_queries_are_refused_in_one_line(project: Path, user: syn.Vault) -> None:
    user.remember("knowledge", "k", "v")
    huge = "x" * 2_000_000
    async with Client(build_server(project)) as c:
        for tool in ("search", "recall"):
            r = await c.call_tool(tool, {"query": huge})
            assert r.is_error and "\n" not in text(r) and len(text(r)) < 300
            assert text(r).endswith(f"query is 2,000,000 characters long; at most {MAX_TEXT:,} are accepted")


# ------------------------------------------------------------------------------------------------ refusals
async def test_wrong_types_are_refused_in_one_line(project: Path, user: syn.Vault) -> None:
    async with Client(build_server(project)) as c:
        cases = [
            ({"token_count": True, "capacity": 1}, "token_count must be a whole number >= 0, got true/false (true)"),
            ({"token_count": 70, "capacity": 100.0}, "capacity must be a whole number >= 1, got a number"),
            ({"token_count": 70.5, "capacity": 100}, "token_count must be a whole number >= 0, got a number"),
            ({"token_count": "70", "capacity": 100}, "token_count must be a whole number >= 0, got text ('70')"),
            ({"token_count": 150, "capacity": 100}, "token_count (150) is more than capacity (100)"),
            ({"capacity": 100}, "token_count is required (a whole number >= 0)"),
            ({"token_count": 1, "capacity": 10, "budget_tokens": 5}, ("budget_tokens must be a whole number from "
                                                                     "100 to 20,000, got a whole number (5)")),
        ]
        for args, message in cases:
            r = await c.call_tool("signal_low_context", args)
            assert r.is_error, args
            assert message in text(r) and "\n" not in text(r) and "pydantic" not in text(r), (args, text(r))
        r = await c.call_tool("search", {"query": "x", "limit": True})
        assert r.is_error and "limit must be a whole number from 1 to 100, got true/false" in text(r)
        r = await c.call_tool("log_episode", {"task_key": "t", "status": "exploded"})
        assert text(r).endswith("status 'exploded' is not accepted; use one of: success, failure, unknown")
        r = await c.call_tool("log_decision", {"decision": "d", "tags": ["ok", 5]})
        assert "tags item 2 must be text, got a whole number (5)" in text(r)
    assert user.checkpoints.list() == [] and user.episodes.list() == [] and user.decisions.list() == []


async def test_the_ignored_arguments_note_counts_in_the_answer_budget(project: Path, user: syn.Vault) -> None:
    """Review 43: the note naming arguments a tool does not take was added after the answer was fitted to
    ``mcp_answer_tokens``: 25 made-up arguments took a search answer of a 500-token budget to 3,188 characters."""
    user.settings.set("mcp_answer_tokens", 500)
    for i in range(30):
        user.remember("knowledge", f"release_{i}", f"the release train {i} leaves at noon " * 8)
    extra = {f"made_up_argument_number_{i:02d}_" + "x" * 40: i for i in range(25)}
    async with Client(build_server(project)) as c:
        for name, args in (("search", {"query": "release train", "limit": 50}), ("get_approved_memory", {})):
            r = await c.call_tool(name, {**args, **extra})
            size = len(text(r)) + len(json.dumps(r.structured_content, ensure_ascii=False))
            assert not r.is_error and size <= 500 * 4, (name, size)
            assert len(r.structured_content["ignored_arguments"]) == 10 and "ignored 25 arguments" in text(r)


async def test_unknown_arguments_are_named_in_the_answer(project: Path, user: syn.Vault) -> None:
    async with Client(build_server(project)) as c:
        r = await c.call_tool("remember", {"category": "knowledge", "key": "port", "content": "8080",
                                           "verified": True, "source": "user"})
        assert not r.is_error and r.structured_content["ignored_arguments"] == ["source", "verified"]
        assert "ignored 2 arguments this tool does not take: source, verified" in text(r)
        assert r.structured_content["verified"] is False and r.structured_content["source"] == "agent"
        r = await c.call_tool("get_status", {})
        assert "ignored_arguments" not in r.structured_content
        r = await c.call_tool("recall", {"query": 5, "sesion_id": "typo"})
        assert r.is_error and "query must be text" in text(r) and "does not take: sesion_id" in text(r)


async def test_readonly_environment_refuses_every_write(project: Path, user: syn.Vault,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    user.checkpoint("Migrating auth", next_step="Fix the refresh test")
    user.remember("knowledge", "deploy_cmd", "make release", priority="high")
    monkeypatch.setenv("SYNAPSE_READONLY", "1")
    async with Client(build_server(project)) as c:
        for tool, args in (("log_decision", {"decision": "Use WAL"}), ("create_checkpoint", {"doing": "x"}),
                           ("remember", {"category": "knowledge", "key": "k", "content": "v"}),
                           ("log_episode", {"task_key": "t"}),
                           ("submit_lesson_analysis", {"lesson_id": "les_1", "analysis": "why"})):
            r = await c.call_tool(tool, args)
            assert r.is_error and "the server is read-only (SYNAPSE_READONLY=1 in its environment)" in text(r)
            assert "\n" not in text(r)
        r = await c.call_tool("signal_low_context", {"token_count": 90, "capacity": 100})
        assert not r.is_error and r.structured_content["action"] == "read_only"
        assert "no checkpoint was saved" in text(r) and "Migrating auth" in text(r)
        assert "deploy_cmd" in text(await c.call_tool("recall", {"query": "how do we deploy a release?"}))
    assert len(user.checkpoints.list()) == 1 and user.decisions.list() == [] and len(user.memories.list()) == 1
    monkeypatch.setenv("SYNAPSE_READONLY", "0")  # "0" means writable, as in the CLI
    async with Client(build_server(project)) as c:
        assert not (await c.call_tool("log_decision", {"decision": "Use WAL"})).is_error


async def test_readonly_over_stdio(project: Path, user: syn.Vault) -> None:
    from mcp.client.stdio import StdioServerParameters

    user.remember("knowledge", "k", "v")
    params = StdioServerParameters(command=sys.executable, args=["-m", "synapse_nb", "mcp", str(project)],
                                   env={**_env(), "SYNAPSE_READONLY": "1"})
    async with Client(params) as c:
        r = await c.call_tool("log_decision", {"decision": "Use WAL"})
        assert r.is_error and "read-only" in text(r)
        assert not (await c.call_tool("get_status", {})).is_error
    assert user.decisions.list() == []


# ------------------------------------------------------------------------------------------------ get_status and git
async def test_get_status_runs_git_ls_files_once_per_index_change(git_repo: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.gitscope import _git

    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    calls: list[tuple[str, ...]] = []
    real = _git.run_git

    def counting(repo: Any, *args: str, **kwargs: Any) -> Any:
        if "ls-files" in args and args[-1].endswith("/"):  # the folder listing (opening asks about the db alone)
            calls.append(args)
        return real(repo, *args, **kwargs)

    monkeypatch.setattr(_git, "run_git", counting)
    syn.open_vault(git_repo).remember("knowledge", "k", "v")
    async with Client(build_server(git_repo)) as c:
        for _ in range(3):
            st = (await c.call_tool("get_status", {})).structured_content
        assert len(calls) == 1 and st["tracked_by_git"] == []
        run_git(git_repo, "add", "-f", ".synapse/synapse.db")  # the index changes: git is asked again
        st = (await c.call_tool("get_status", {})).structured_content
        assert len(calls) == 2 and st["tracked_by_git"] == [".synapse/synapse.db"]
        assert st["untrack_command"] == "git rm -r --cached .synapse"
        await c.call_tool("get_status", {})
        assert len(calls) == 2


# ------------------------------------------------------------------------------------------------ stdio
def _start(project: Path) -> subprocess.Popen[bytes]:
    p = subprocess.Popen([sys.executable, "-m", "synapse_nb", "mcp", str(project)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert p.stdin is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
    p.stdin.write(json.dumps(hello).encode() + b"\n" + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    p.stdin.flush()
    return p


def _reply(p: subprocess.Popen[bytes], within: float = 60.0) -> dict[str, Any]:
    """The server's next message; a failure (not a hang) when none comes within ``within`` seconds or it exits."""
    import concurrent.futures

    assert p.stdout is not None
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(p.stdout.readline)
        try:
            line = pending.result(timeout=within)
        except concurrent.futures.TimeoutError:
            p.kill()  # ends the read, so the pool can close
            raise AssertionError(f"no reply within {within:.0f} s") from None
    assert line, f"the server exited (code {p.poll()})"
    return json.loads(line)


def test_unreadable_lines_get_an_answer_and_lone_surrogates_are_served(project: Path, user: syn.Vault) -> None:
    user.remember("knowledge", "k", "the release train")
    p = _start(project)
    try:
        assert _reply(p)["id"] == 1
        assert p.stdin is not None
        p.stdin.write(b"this is not json\n")
        p.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": 5}\n')
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "release \ud800train"}}}
        p.stdin.write(json.dumps(call).encode() + b"\n")  # json.dumps escapes the lone surrogate as \ud800
        p.stdin.flush()
        parse, invalid, served = _reply(p), _reply(p), _reply(p)
        assert parse == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": parse["error"]["message"]}}
        assert invalid["id"] == 7 and invalid["error"]["code"] == -32600
        assert served["id"] == 2 and not served["result"].get("isError")
        assert "release \ufffdtrain" in served["result"]["structuredContent"]["query"]
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("depth", [300, 600])
def test_a_deeply_nested_message_gets_an_answer_and_the_server_serves_on(project: Path, user: syn.Vault,
                                                                         depth: int) -> None:
    """Review 43: arguments nested ~300 deep got no reply (the SDK's parser refuses 200 levels silently), ~600 deep
    ended the server (a RecursionError in the screening), so the session lost its memory server."""
    user.remember("knowledge", "k", "the release train")
    p = _start(project)
    try:
        assert _reply(p)["id"] == 1
        assert p.stdin is not None
        deep = "[" * depth + "]" * depth
        p.stdin.write(('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", '
                       f'"arguments": {{"query": {deep}}}}}}}\n').encode())
        call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "release train"}}}
        p.stdin.write(json.dumps(call).encode() + b"\n")
        p.stdin.flush()
        refused, served = _reply(p, 20), _reply(p, 20)
        assert refused["id"] == 3 and refused["error"]["code"] == -32600 and "nested" in refused["error"]["message"]
        assert served["id"] == 4 and not served["result"].get("isError") and p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_ctrl_c_stops_the_server_at_once(project: Path) -> None:
    p = _start(project)
    try:
        assert _reply(p)["id"] == 1  # serving, stdin open and idle
        p.send_signal(signal.SIGINT)
        code = p.wait(timeout=20)
        assert p.stderr is not None
        assert code == 130, p.stderr.read().decode()  # a guard against a hang, not a timing: it must not wait for Enter
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
