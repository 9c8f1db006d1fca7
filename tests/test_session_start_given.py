"""What a session's start gives of the memory is marked as given to the session (a twenty-second pass; a weakness left
by review 93's start text).

The SessionStart hook and the MCP tool ``get_approved_memory`` give a session its key memories (people's, priority
critical or high: synapse_nb/recall/start.py), but only the banner's lessons were recorded in the session's given-set:
the first prompt (hook) or ``recall`` (MCP) that matched a key memory gave it again as new, beside everything else
relevant, right after the start had given it. Now the key memories a start prints whole are marked, in the session
the per-turn path reads (the hook's delta session; the MCP server's own key for the ``session_id`` its ``recall``
takes), with their digest: a later turn gives them again only once they changed. Each test fails without the change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

import synapse_nb as syn
from synapse_nb.agents.events import parse_event
from synapse_nb.agents.handlers import handle
from synapse_nb.mcp.server import build_server

pytestmark = pytest.mark.anyio
RULE = "deploy the billing api with a blue-green switch after the smoke tests pass"
CHANGED = "deploy the billing api with a blue-green switch after the smoke tests and the canary pass"
ASK = "how do I deploy the billing api with the blue-green switch?"


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("SYNAPSE_READONLY", raising=False)
    p = tmp_path / "project"
    p.mkdir()
    with syn.open_vault(p) as v:
        v.remember("procedure", "billing_deploy", RULE, priority="critical")
        v.remember("knowledge", "orders_db", "the orders service stores its data in postgres")
    return p


def _hook(project: Path, name: str, session: str, **kw: str) -> str:
    return handle(parse_event(name, "", session=session, **kw), vault=str(project), env={}).context


def test_a_prompt_after_session_start_does_not_give_its_key_memories_again(project: Path) -> None:
    start = _hook(project, "session-start", "s1", source="startup")
    assert RULE in start  # the start gives it
    assert RULE not in _hook(project, "prompt", "s1", text=ASK)  # was given again as new
    assert RULE in _hook(project, "prompt", "s2", text=ASK)  # another session was not given it
    with syn.open_vault(project) as v:  # the person changes it: the session is given the new wording
        v.remember("procedure", "billing_deploy", CHANGED, priority="critical")
    assert CHANGED in _hook(project, "prompt", "s1", text=ASK)
    assert CHANGED not in _hook(project, "prompt", "s1", text=ASK)  # once


def test_a_new_start_of_the_session_gives_them_again_and_marks_them_again(project: Path) -> None:
    """/clear (a new delta epoch): the start gives its key memories again, and the next prompt does not repeat them."""
    _hook(project, "session-start", "s1", source="startup")
    assert RULE in _hook(project, "session-start", "s1", source="clear")
    assert RULE not in _hook(project, "prompt", "s1", text=ASK)


async def test_get_approved_memory_marks_them_for_the_recall_session_named(project: Path) -> None:
    async with Client(build_server(project)) as c:
        start = await c.call_tool("get_approved_memory", {"session_id": "conv-1"})
        assert RULE in start.content[0].text
        again = await c.call_tool("recall", {"query": ASK, "session_id": "conv-1"})
        assert RULE not in again.content[0].text  # was given again as new
        other = await c.call_tool("recall", {"query": ASK, "session_id": "conv-2"})
        assert RULE in other.content[0].text
        await c.call_tool("get_approved_memory", {})  # without a session_id: nothing marked
        assert RULE in (await c.call_tool("recall", {"query": ASK, "session_id": "conv-3"})).content[0].text
        with syn.open_vault(project) as v:
            v.remember("procedure", "billing_deploy", CHANGED, priority="critical")
        assert CHANGED in (await c.call_tool("recall", {"query": ASK, "session_id": "conv-1"})).content[0].text
        bad = await c.call_tool("get_approved_memory", {"session_id": "  "})
        assert bad.is_error and "session must be a non-empty printable string" in bad.content[0].text
