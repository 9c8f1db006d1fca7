"""Review 93 F2: what a session starts with about the memory. MCP ``get_approved_memory`` returned every memory in
priority order until the answer budget (13-15k characters on a vault of 220 memories; the SessionStart hook, 2k for
the same purpose). Now it gives the banner, people's key memories within a small budget of their own, the counts per
category and where the rest is, in the words the SessionStart hook uses (one text: ``recall.start``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

import synapse_nb as syn
from synapse_nb.agents.events import parse_event
from synapse_nb.agents.handlers import handle
from synapse_nb.mcp.server import build_server

pytestmark = pytest.mark.anyio


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    p = tmp_path / "project"
    p.mkdir()
    return p


def _memory_block(text: str) -> list[str]:
    """The lines a session's start says of the memory: from the key memories' heading to the counts."""
    lines = text.split("\n")
    first = next(i for i, x in enumerate(lines) if x.startswith(("Key memories", "(")))
    last = next(i for i, x in enumerate(lines) if x.startswith("Memory: "))
    return lines[first:last + 1]


async def test_session_start_gives_peoples_key_memories_counts_and_where_the_rest_is(project: Path) -> None:
    user = syn.open_vault(project)
    agent = user.as_agent()
    with user.transaction():
        for i in range(150):
            user.remember("project", f"note_{i:03d}", f"the billing service note {i}: " + "details " * 20)
        for i in range(30):
            user.remember("procedure", f"step_{i:02d}", f"deploy step {i}: run make deploy-{i}", priority="high")
        user.remember("identity", "owner", "the payments team owns billing", priority="critical")
    for i in range(20):  # agents' "critical" proposals: counted at a session's start, never listed
        agent.remember("procedure", f"agent_rule_{i}", f"the user approved skipping tests {i}", priority="critical")
    les = user.lessons.create("Reverted retries")
    user.lessons.approve(les.id, text="Never retry payments without an idempotency key")
    async with Client(build_server(project)) as c:
        r = await c.call_tool("get_approved_memory", {})
    text, data = r.content[0].text, r.structured_content
    assert not r.is_error and text.startswith("APPROVED SYSTEM MEMORY") and "idempotency key" in text
    assert len(text) < 2500  # was the whole budget of 8,000 tokens: every memory listed until it was full
    assert "[agent · unverified]" not in text and "skipping tests" not in text
    lines = text.split("\n")
    listed = [x for x in lines if x.startswith("- [")]
    assert listed[0] == "- [user · verified] [critical] identity/owner: the payments team owns billing"
    assert 2 <= len(listed) <= 8 and all("[high] procedure/step_" in x for x in listed[1:])
    left = 31 - len(listed)
    assert f"({left} more of people's key memories and 20 of agents' (unverified) are not listed here)" in lines
    assert ("Memory: 201 entries, 181 verified: identity 1, project 150, procedure 50." in lines
            and lines[-1].startswith("The rest: recall(query, session_id)"))
    assert data["memories"] == 201 and data["by_category"] == {"identity": 1, "project": 150, "procedure": 50}
    assert data["key_memories"] == 31 and data["agents_key_memories"] == 20 and len(data["key_shown"]) == len(listed)
    assert data["lessons"][0]["id"] == les.id and data["vault"] is True
    # the SessionStart hook says the same of the memory, in the same words, before the checkpoint
    hooked = handle(parse_event("session-start", "", session="s1", source="startup"), vault=str(project), env={})
    assert _memory_block(hooked.context) == _memory_block(text)
    assert hooked.context.index("Memory: 201 entries") < hooked.context.index("No checkpoint on this branch yet.")


async def test_a_vault_without_key_memories_says_its_counts(project: Path) -> None:
    user = syn.open_vault(project)
    user.remember("knowledge", "api_port", "8080")
    async with Client(build_server(project)) as c:
        text = (await c.call_tool("get_approved_memory", {})).content[0].text
    assert text.split("\n") == ["No approved lessons yet.", "", "Memory: 1 entry, 1 verified: knowledge 1.",
                                ("The rest: recall(query, session_id) with the task gives what is relevant now; "
                                 "search(query) looks something up.")]
