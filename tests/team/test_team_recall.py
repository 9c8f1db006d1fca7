"""Recall on a team vault: stamped with the version it read, "now" from the server, and few round trips."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb.context
import synapse_nb.vault
from synapse_nb._util import fmt_ts
from synapse_nb.cli import app

TOPICS = ["deploys", "migrations", "backups", "timeouts", "caching", "retries"]


def _fill(v: Any, n: int = 24) -> None:
    for i in range(n):
        t = TOPICS[i % len(TOPICS)]
        v.remember("knowledge", f"{t}_{i}", f"{t} note {i}: how we handle {t} and {TOPICS[(i * 5) % 6]} safely",
                   tags=[t])
    v.decide("we deploy on fridays only with retries on", tags=["deploys"])


def test_two_machines_at_one_version_give_the_same_bytes_and_stamp(team_url: str, machine: Any) -> None:
    a, b = machine("a", team_url), machine("b", team_url)
    _fill(a)
    les = b.lessons.create("Reverted the cache change")
    a.lessons.approve(les.id)
    queries = [f"how do we handle {t}?" for t in TOPICS] + ["deploys and retries", "caching backups"]
    ra = [a.recall(q) for q in queries]
    rb = [b.recall(q) for q in queries]
    assert [r.text for r in ra] == [r.text for r in rb]
    assert {r.version for r in ra} == {r.version for r in rb} and len({r.version for r in ra}) == 1
    assert ra[0].version.isdigit()  # the server's gate_stats.version, not a per-machine counter
    assert [json.dumps(r.to_dict()) for r in ra] == [json.dumps(r.to_dict()) for r in rb]
    # a write anywhere moves the stamp for every machine; the same query then reads the new state
    before = ra[0].version
    b.remember("knowledge", "deploys_new", "deploys now go through the canary first")
    after_a, after_b = a.recall(queries[0]), b.recall(queries[0])
    assert after_a.version == after_b.version and int(after_a.version) > int(before)
    assert after_a.text == after_b.text and "canary" in after_a.text
    # a session's marks are not recall state: the stamp does not move with them
    r1 = a.recall("caching backups", session="s1")
    assert a.recall("caching backups", session="s1").version == r1.version


def test_the_cli_json_shows_the_version(team_url: str, machine: Any) -> None:
    a = machine("a", team_url)
    _fill(a, 6)
    out = CliRunner().invoke(app, ["--vault", team_url, "recall", "how do we handle deploys?", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["version"] == a.recall("how do we handle deploys?").version


def test_recall_now_is_the_servers_clock_unless_a_clock_is_given(team_url: str, machine: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    real = datetime.now(UTC)
    m = machine("w", team_url).remember("knowledge", "canary_rule", "deploys go through the canary first",
                                    expires=fmt_ts(real + timedelta(hours=1)))
    # a machine whose own clock runs a day ahead: by its clock the memory expired, by the server's it has not
    ahead = lambda: datetime.now(UTC) + timedelta(days=1)  # noqa: E731
    monkeypatch.setattr(synapse_nb.vault, "utcnow", ahead)
    monkeypatch.setattr(synapse_nb.context, "utcnow", ahead)
    skewed = machine("skewed", team_url)
    assert [i.id for i in skewed.recall("how do deploys go through the canary?").items] == [m.id]
    # an injected clock (what tests freeze time with) still decides
    frozen = machine("frozen", team_url, clock=lambda: real + timedelta(days=1))
    assert frozen.recall("how do deploys go through the canary?").items == ()


def test_a_warm_recall_costs_few_round_trips_and_caches_follow_every_write(team_url: str, machine: Any) -> None:
    """Round trips are a team vault's latency. Once a query's words were read at this version (a repeated query,
    the common case), a recall is: open the snapshot with its version and the server's clock (1), the ranking
    (1), close (1), the settings (1) and the kept items' file flags (1); a session adds its marks (read 1,
    write 1). Everything else is kept per data version: lessons, frequencies, counts, tag and key matches,
    candidate rows, records (a record the gate reads for the first time at a version costs one round trip)."""
    a, b = machine("a", team_url), machine("b", team_url)
    _fill(a)
    rt = a._store.round_trips
    q = "how do we handle deploys and retries?"

    def cost(**kw: Any) -> int:
        before = rt.count
        a.recall(q, **kw)
        return rt.count - before

    cost()
    assert cost() <= 5
    cost(session="s1")
    cost(session="s1")  # the gate walks past what s1 was given: records first read here, one round trip each
    assert cost(session="s1") <= 7
    cost(session="s2")
    assert cost(session="s2") <= 7
    # a write elsewhere moves the version: what it may have changed is read again, records the walk read before
    # are not (they are kept by id and updated_at)
    b.remember("knowledge", "unrelated", "an unrelated fact about pelicans")
    assert cost() <= 12
    # every cache follows a write made on another machine: a warm handle answers as a cold one does
    fresh = iter(range(100))

    def same_as_a_cold_handle() -> str:
        text = a.recall(q).text
        assert text == machine(f"cold{next(fresh)}", team_url).recall(q).text
        return text

    les = b.lessons.create("Deploys need a second reviewer")
    b.lessons.approve(les.id)
    assert "second reviewer" in same_as_a_cold_handle()
    m = b.remember("knowledge", "deploys_and_retries", "retry budget for deploys is three attempts", tags=["retries"])
    assert "three attempts" in same_as_a_cold_handle()
    b.notes.add("deploys_and_retries", "when deploys need retries", "see the runbook")  # a key match, via a note
    assert "deploys_and_retries" in same_as_a_cold_handle()
    b.memories.delete(m.id)
    assert "three attempts" not in same_as_a_cold_handle()


def test_an_agent_handle_recalls_through_its_role_in_as_few_round_trips(team_url: str, machine: Any) -> None:
    """An agent handle runs every checkout as the project's agent role: SET ROLE travels with the first statement
    (also with a snapshot's multi-statement start), so it costs the agent no extra round trip there."""
    user = machine("u", team_url)
    _fill(user)
    les = user.lessons.create("Deploys need a second reviewer")
    user.lessons.approve(les.id)
    user.lessons.create("a pending lesson the agent may not see")
    agent = machine("ag", team_url, actor="agent")
    q = "how do we handle deploys and retries?"
    r = agent.recall(q, session="agent-1")
    assert r.text == user.recall(q).text and r.version == user.recall(q).version and "second reviewer" in r.text
    rt = agent._store.round_trips
    agent.recall(q, session="agent-1")
    before = rt.count
    agent.recall(q, session="agent-1")
    assert rt.count - before <= 9  # the user's 7, and RESET ROLE when a connection goes back to the pool
