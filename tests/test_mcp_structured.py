"""Review 86 F2: the MCP answers' structured content is what Claude Code (and VS Code) hand the model: whenever an
answer has structured content, the model gets ``JSON.stringify(structuredContent)`` and never the text
(anthropics/claude-code#79944). So every tool's structured content holds its whole text answer, first, and no other
field contradicts it: a change to a person's memory is a pending revision (not the person's record read as the
outcome), a restore with no checkpoint on this branch carries the guidance and names the other branches', and the
session-start summary carries its memory lines. Sent twice, the text still fits the ``mcp_answer_tokens`` budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git
from mcp import Client

import synapse_nb as syn
from synapse_nb.mcp.server import TOOL_NAMES, build_server

pytestmark = pytest.mark.anyio


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def project(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("SYNAPSE_READONLY", raising=False)
    return git_repo


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _vault(project: Path) -> tuple[syn.Vault, dict[str, str]]:
    """A project as an agent meets it: approved lessons, a person's memories, agents' proposals, a pending lesson, a
    note, decisions, and a checkpoint on ``main`` only (the tests run on another branch)."""
    v = syn.open_vault(project)
    for i in range(3):
        les = v.lessons.create(f"Reverted retry change {i}", files=[f"src/pay{i}.py"])
        v.lessons.approve(les.id, text=f"Retry payments {i} only with an idempotency key")
    pending = v.lessons.create("Reverted cache warmup")
    v.remember("project", "deploy_target", "Billing deploys to eu-west-1", priority="high")
    for i in range(8):
        v.as_agent().remember("knowledge", f"billing_fact_{i}", f"billing talks to ledger-{i} over port {8000 + i}")
    v.decide("Use WAL for the billing store", rationale="readers never block")
    v.notes.add("deploy_runbook", "how to deploy billing", "1. make deploy-billing\n2. watch the dashboard")
    v.as_agent().checkpoint("Adding a clear timeout error to login", files=["src/auth.py"],
                            next_step="Write test_login_timeout")
    run_git(project, "checkout", "-q", "-b", "feature/x")
    return v, {"pending": pending.id}


def _calls(ids: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("get_approved_memory", {}),
        ("restore_checkpoint", {}),  # none on feature/x: one on main
        ("recall", {"query": "how does billing deploy and which port does the ledger use?", "session_id": "s1"}),
        ("search", {"query": "billing"}),
        ("expand_note", {"name": "deploy_runbook"}),
        ("get_status", {}),
        ("remember", {"category": "project", "key": "deploy_target", "content": "Billing deploys to us-east-1 now"}),
        ("remember", {"category": "knowledge", "key": "ledger_timeout", "content": "ledger calls time out at 5 s"}),
        ("create_checkpoint", {"doing": "Moving billing to us-east-1", "changed_files": ["deploy.yaml"],
                               "next_step": "Run the smoke checks"}),
        ("restore_checkpoint", {}),  # found now
        ("log_decision", {"decision": "Deploy billing with blue-green", "rationale": "no downtime"}),
        ("log_episode", {"task_key": "run_tests", "status": "failure", "outcome": "2 failed in test_billing.py"}),
        ("log_episode", {"task_key": "run_tests", "status": "success"}),  # the prior run's warning
        ("submit_lesson_analysis", {"lesson_id": ids["pending"], "analysis": "the warmup raced the deploy"}),
        ("signal_low_context", {"token_count": 70_000, "capacity": 100_000}),
        ("signal_low_context", {"token_count": 10_000, "capacity": 100_000}),
        ("get_status", {"verbose": True}),  # an argument it does not take: the note is part of the answer
    ]


@pytest.mark.parametrize("budget", [None, 600])
async def test_every_tools_structured_content_holds_its_whole_text(project: Path, budget: int | None) -> None:
    """A client that reads only the structured content loses no line of any tool's answer, in the default budget
    and in a small one that cuts the answers; sent twice, the text still fits the budget."""
    v, ids = _vault(project)
    if budget is not None:
        v.settings.set("mcp_answer_tokens", budget)
    calls = _calls(ids)
    assert {name for name, _ in calls} == set(TOOL_NAMES)
    async with Client(build_server(project)) as c:
        for name, args in calls:
            r = await c.call_tool(name, args)
            assert not r.is_error, (name, r.content)
            text, data = r.content[0].text, r.structured_content
            held = "\n".join(_strings(data))
            missing = [line for line in text.splitlines() if line.strip() and line not in held]
            assert not missing, (name, missing)
            assert next(iter(data)) == "text" and data["text"] == text, name
            sent = len(text) + len(json.dumps(data, ensure_ascii=False))
            assert sent <= (budget or 8000) * 4, (name, sent)


async def test_a_change_to_a_persons_memory_reads_as_pending_not_as_done(project: Path) -> None:
    """Review 86: remember on a person's key answered the person's record as its structured content, with nothing
    saying the change was only proposed."""
    v, _ = _vault(project)
    async with Client(build_server(project)) as c:
        r = await c.call_tool("remember", {"category": "project", "key": "deploy_target",
                                           "content": "Billing deploys to us-east-1 now"})
        data = r.structured_content
        [rev] = v.memories.revisions()
        assert data["pending_revision"] is True and data["revision_id"] == rev.id
        assert data["proposed"] == {"content": "Billing deploys to us-east-1 now"}
        assert data["unchanged"]["content"] == "Billing deploys to eu-west-1"
        assert data["unchanged"]["provenance"] == "[user · verified]" and "content" not in data
        assert f"pending revision {rev.id}" in data["text"] and "unchanged until then" in data["text"]
        # the person's own words again: nothing new is proposed; the answer names the change that waits
        r = await c.call_tool("remember", {"category": "project", "key": "deploy_target",
                                           "content": "Billing deploys to eu-west-1"})
        assert r.structured_content["revision_id"] == rev.id and r.structured_content["proposed"] == data["proposed"]
        # a person's memory with no change waiting: the answer says there is nothing to change
        v.memories.reject(rev.id)
        r = await c.call_tool("remember", {"category": "project", "key": "deploy_target",
                                           "content": "Billing deploys to eu-west-1"})
        assert r.structured_content["pending_revision"] is False and "pending" not in r.content[0].text
        assert "already holds this" in r.content[0].text and r.structured_content["revision_id"] is None
        # an agent's own key: the memory it wrote is the outcome
        r = await c.call_tool("remember", {"category": "knowledge", "key": "ledger_timeout", "content": "5 s"})
        assert r.structured_content["pending_revision"] is False and r.structured_content["content"] == "5 s"
    assert v.memories.get("deploy_target", category="project").content == "Billing deploys to eu-west-1"
    assert v.memories.revisions() == []


async def test_no_checkpoint_on_this_branch_names_the_other_branches_ones(project: Path) -> None:
    """Review 86: the text said "1 checkpoint on other branches: restore one by its id" and the structured content
    was {"found": false}; neither gave an id to restore."""
    v, _ = _vault(project)
    [ckp] = v.checkpoints.list()
    async with Client(build_server(project)) as c:
        r = await c.call_tool("restore_checkpoint", {})
        data, text = r.structured_content, r.content[0].text
        assert data["found"] is False and data["elsewhere"] == 1 and data["text"] == text
        assert "1 checkpoint on other branches" in text and "create_checkpoint" in text
        assert ckp.id in text and "Adding a clear timeout error to login" in text
        assert text.startswith("([agent · unverified] lines")  # an agent's checkpoint: what such a line is
        r = await c.call_tool("restore_checkpoint", {"checkpoint_id": ckp.id})
        assert r.structured_content["found"] is True and r.structured_content["id"] == ckp.id


async def test_recall_gives_each_line_once(project: Path) -> None:
    """Review 86: recall's structured content held the whole text and every line again in items[].line (2-3 times
    the text); the items keep what the text does not say (kind, id, score, matched words)."""
    _vault(project)
    async with Client(build_server(project)) as c:
        r = await c.call_tool("recall", {"query": "which port does the billing ledger use?", "session_id": "s1"})
        data = r.structured_content
        assert data["items"] and all("line" not in item for item in data["items"])
        assert all({"kind", "id", "score", "matched"} <= set(item) for item in data["items"])
        assert len(json.dumps(data, ensure_ascii=False)) < 2 * len(r.content[0].text)
