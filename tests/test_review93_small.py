"""Review 93's small items: the PreCompact hook's notice says where the restore pack goes (its JSON form carries none:
it arrives with SessionStart "compact"), and a recall that gives more on a query than the session was given before
says so in its heading (it read as the whole answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

import synapse_nb as syn
from synapse_nb.agents.events import parse_event
from synapse_nb.agents.handlers import handle
from synapse_nb.mcp.server import build_server
from tests.test_agent_hooks import claude, context_of, hook

MORE = "— more on this, not given earlier in this session ("


def test_precompact_says_where_the_restore_pack_goes(git_repo: Path) -> None:
    with syn.open_vault(git_repo) as v:
        v.checkpoint("Refactoring the billing client", next_step="run the tests")
    res = hook("PreCompact", claude("PreCompact", git_repo, "s1", trigger="manual"), cwd=git_repo)
    out = json.loads(res.stdout)
    assert "hookSpecificOutput" not in out  # Claude Code takes no context from PreCompact
    notice = out["systemMessage"]
    assert "follows" not in notice and notice.endswith(
        "the agent gets it in the restore pack when its session starts again after the compaction (the SessionStart "
        "hook, source compact)")
    saved = notice.split("saved checkpoint ")[1].split()[0]
    pack = context_of(hook("SessionStart", claude("SessionStart", git_repo, "s1", source="compact"), cwd=git_repo))
    assert pack.startswith("synapse-nb restore pack after compaction:") and saved in pack
    # the text form prints the pack itself, and says so
    res = hook("pre-compact", cwd=git_repo, args=("--session", "s2", "--format", "text"))
    assert "Refactoring the billing client" in res.stdout
    assert res.stderr.strip().endswith("before compaction; the restore pack follows it on stdout")


def _vault(project: Path) -> syn.Vault:
    user = syn.open_vault(project)
    with user.transaction():
        for i in range(12):
            user.remember("procedure", f"deploy_step_{i:02d}", f"to deploy the billing service, step {i}: make "
                                                               f"deploy-billing-{i}")
    return user


def test_a_recall_that_gives_more_on_a_query_says_so(tmp_path: Path) -> None:
    agent = _vault(tmp_path).as_agent()
    q = "how do we deploy the billing service?"
    first = agent.recall(q, session="s1", budget_tokens=80)
    assert first.items and first.given_before == 0 and MORE not in first.text
    assert f'RELEVANT MEMORY for: "{q}"\n' in first.text
    second = agent.recall(q, session="s1", budget_tokens=80)
    assert second.items and not {x.id for x in second.items} & {x.id for x in first.items}
    assert second.given_before == len(first.items) and second.to_dict()["given_before"] == len(first.items)
    n = len(first.items)
    assert (f'RELEVANT MEMORY for: "{q}" {MORE}{n} relevant item{"s" if n != 1 else ""} given earlier '
            f'{"are" if n != 1 else "is"} not repeated)\n') in second.text
    assert MORE not in agent.recall(q, session="s2", budget_tokens=80).text  # a new session: all of it is new


def test_the_prompt_hook_says_so_too(tmp_path: Path) -> None:
    _vault(tmp_path)
    with syn.open_vault(tmp_path) as v:
        v.settings.set("recall_budget_tokens", 80)
    said = []
    for _ in range(2):
        got = handle(parse_event("prompt", "", session="s1", text="how do we deploy the billing service?"),
                     vault=str(tmp_path), env={})
        said.append(got.context)
    assert "RELEVANT MEMORY" in said[0] and MORE not in said[0] and MORE in said[1]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_mcp_recall_says_so_too(tmp_path: Path, anyio_backend: str) -> None:
    _vault(tmp_path)
    async with Client(build_server(tmp_path)) as c:
        args = {"query": "how do we deploy the billing service?", "session_id": "s1", "budget_tokens": 100}
        first = await c.call_tool("recall", args)
        second = await c.call_tool("recall", args)
    assert MORE not in first.content[0].text and MORE in second.content[0].text
    assert second.structured_content["given_before"] == len(first.structured_content["items"])
