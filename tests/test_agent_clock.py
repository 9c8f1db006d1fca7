"""An agent's handle runs on the real clock: "now" bounds the agent (the hour its write quota and its new recall
sessions are counted over) and stamps the vault's clock for everyone, so the agent may not choose it
(``synapse_nb.context.check_agent_clock``). A person's handle keeps the clock it is given.

tests/conftest.py lets the rest of the suite play the agent on fake clocks (``context.AGENT_CLOCKS``); these tests
turn that off.
"""

from __future__ import annotations

import itertools
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb import context
from synapse_nb._util import Clock, fmt_ts, utcnow
from synapse_nb.errors import PermissionDeniedError, QuotaExceededError

REFUSED = "an agent's handle runs on the real clock"


@pytest.fixture(autouse=True)
def real_clocks_for_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context, "AGENT_CLOCKS", False)
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)


def jumping() -> tuple[datetime, Clock]:
    """The reviewer's clock: an hour later at every call, from now."""
    base, k = utcnow(), itertools.count()
    return base, lambda: base + timedelta(hours=next(k))


def stamp(folder: Path) -> str | None:
    """The vault's write clock (``meta`` row ``clock``): where its next stamp starts from."""
    db = sqlite3.connect(folder / ".synapse" / "synapse.db")
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()
    finally:
        db.close()
    return row[0] if row else None


def flood(folder: Path, n: int = 300, actor: str = "user") -> int:
    """Open an agent's handle on the jumping clock and write ``n`` checkpoints; how many were written."""
    _, clock = jumping()
    agent = syn.open_vault(folder, actor=actor, clock=clock)
    written = 0
    try:
        for i in range(n):
            agent.checkpoint(f"flood {i}")
            written += 1
    finally:
        agent.close()
    return written


def test_the_reviewers_flood_on_a_jumping_clock_is_refused_and_leaves_the_stamp(tmp_path: Path) -> None:
    human = syn.open_vault(tmp_path)
    human.settings.set("agent_writes_per_hour", 5)
    human.checkpoint("before the agent")
    before = stamp(tmp_path)
    with pytest.raises(PermissionDeniedError, match=REFUSED):
        flood(tmp_path, actor="agent")  # before the fix: 300 written, the stamp 300 hours ahead
    assert stamp(tmp_path) == before
    assert not [c for c in human.checkpoints.list() if c.source == "agent"]
    after = human.checkpoint("after the agent")  # the human's next stamp is not pushed ahead
    assert after.created_at <= fmt_ts(utcnow() + timedelta(minutes=1))
    agent = syn.open_vault(tmp_path, actor="agent")  # on the real clock the quota of 5 holds
    for i in range(5):
        agent.checkpoint(f"honest {i}")
    with pytest.raises(QuotaExceededError, match="quota of 5 writes per hour"):
        agent.checkpoint("one too many")


def test_a_python_process_in_an_agents_environment_may_not_bring_a_clock(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    syn.open_vault(tmp_path).settings.set("agent_writes_per_hour", 5)
    before = stamp(tmp_path)
    monkeypatch.setenv("CLAUDECODE", "1")
    with pytest.raises(PermissionDeniedError, match=rf"CLAUDECODE=1 \(Claude Code\).*{REFUSED}"):
        flood(tmp_path)  # actor "user" asked for; the process is the agent's
    assert stamp(tmp_path) == before
    _, clock = jumping()
    with pytest.raises(PermissionDeniedError, match=REFUSED):  # a read-only handle there is the agent's too
        syn.open_vault(tmp_path, clock=clock, readonly=True)
    with syn.open_vault(tmp_path, readonly=True) as reader:
        assert reader.actor == "agent"


def test_a_persons_handle_keeps_its_clock_and_an_agents_own_handle_refuses_it(tmp_path: Path) -> None:
    ahead = datetime(2031, 5, 1, 9, 0, tzinfo=UTC)
    human = syn.open_vault(tmp_path, clock=lambda: ahead)
    assert human.now() == ahead
    assert human.checkpoint("planned").created_at == fmt_ts(ahead)  # a person's own choice
    played = human.as_agent()  # the person's code plays the agent on the person's clock (a notebook's tour)
    assert played.actor == "agent" and played.now() == ahead
    with pytest.raises(PermissionDeniedError, match=REFUSED):
        syn.open_vault(tmp_path, actor="agent", clock=lambda: ahead)
    assert syn.open_vault(tmp_path, actor="agent", clock=utcnow).actor == "agent"  # the real clock, named
    agent = syn.open_vault(tmp_path, actor="agent").as_agent()
    assert agent.actor == "agent"
    past = agent.recall("planned", as_of=fmt_ts(ahead))  # rebuilt at that moment in a throwaway vault: still allowed
    assert "planned" in past.text


def test_a_refused_open_creates_no_vault(tmp_path: Path) -> None:
    _, clock = jumping()
    with pytest.raises(PermissionDeniedError, match=REFUSED):
        syn.open_vault(tmp_path, actor="agent", clock=clock)
    assert not (tmp_path / ".synapse").exists()
    with pytest.raises(PermissionDeniedError, match=REFUSED):  # a team vault: refused before any connection
        syn.open_vault("postgresql://agent@127.0.0.1:1/nowhere?project=p", actor="agent", clock=clock)


def test_the_suites_switch_lets_the_agent_run_on_a_fake_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, clock = jumping()
    with pytest.raises(PermissionDeniedError, match=REFUSED):
        syn.open_vault(tmp_path, actor="agent", clock=clock)
    monkeypatch.setattr(context, "AGENT_CLOCKS", True)
    with syn.open_vault(tmp_path, actor="agent", clock=clock) as agent:
        assert agent.actor == "agent" and agent.checkpoint("on a fake clock").source == "agent"


def test_a_context_built_by_hand_in_an_agents_environment_is_the_agents(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 3: ``Context(SqliteStore(...), "default", "user", git=GitView(...))`` and the kind managers, all
    public, skipped the ``Vault`` constructor, the one place ``acting_actor`` was applied: Python in an agent's
    environment wrote ``[user · verified]`` critical memories and ``[user]`` decisions, and lessons naming a real
    revert in its own words (shown as a revert scan's), with no quota. A context is the agent's there however it is
    built, ``_replace`` included, and runs on the real clock."""
    from synapse_nb.context import Context, GitView
    from synapse_nb.kinds.decisions import Decisions
    from synapse_nb.kinds.lessons import Lessons
    from synapse_nb.kinds.memories import Memories
    from synapse_nb.store.sqlite import SqliteStore

    syn.open_vault(tmp_path).settings.set("agent_writes_per_hour", 3)
    folder = tmp_path / ".synapse"
    monkeypatch.setenv("CLAUDECODE", "1")
    store = SqliteStore(folder / "synapse.db")
    ctx = Context(store, "default", "user", git=GitView(tmp_path, folder))
    assert ctx.actor == "agent" and ctx._replace(actor="user").actor == "agent"
    assert ctx.with_mind("research").actor == "agent" and ctx.at(fmt_ts(utcnow())).actor == "agent"
    with pytest.raises(PermissionDeniedError, match="source='user'"):
        Memories(ctx).remember("procedure", "deploy_rule", "Always deploy with --force", source="user",
                               verified=True, priority="critical")
    assert Decisions(ctx).create("Skip the test suite before deploys").source == "agent"
    with pytest.raises(PermissionDeniedError, match="without naming a revert"):
        Lessons(ctx).create("Reverted: the tests caused the outage", revert_commit={"sha": "0" * 40})
    Decisions(ctx).create("two")
    Decisions(ctx).create("three")
    with pytest.raises(QuotaExceededError):
        Decisions(ctx).create("one too many")
    _, clock = jumping()
    with pytest.raises(PermissionDeniedError, match=REFUSED):
        Context(store, "default", "user", git=GitView(tmp_path, folder), clock=clock)
    with pytest.raises(PermissionDeniedError, match=REFUSED):
        ctx._replace(clock=clock)
    with pytest.raises(PermissionDeniedError, match=REFUSED):  # a moment of its choosing is a clock of its choosing
        ctx.at(fmt_ts(utcnow() + timedelta(hours=2)))
    store.close()
    monkeypatch.delenv("CLAUDECODE")
    ahead = utcnow() + timedelta(days=3)
    human = syn.open_vault(tmp_path, clock=lambda: ahead)  # outside: a person's context keeps the clock it is given
    assert human.actor == "user" and human.as_agent().now() == ahead
    assert human.as_agent()._ctx.at(fmt_ts(ahead)).now() == ahead  # one recall's "now", on the person's clock
