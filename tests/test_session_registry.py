"""Recall's per-session delta is bounded for agents and cheap for people (review 28; schema v9, sessions_schema.py).

An agent's reads alone grew ``session_seen`` without end (200 recalls a second under 256 session names: 588,000 rows
and 84 MB in six minutes), re-giving kept the rows new so ``memory prune`` never cleared them, and a person's recall
with a new session counted the distinct sessions of every row of the hour (2 ms to 100 ms)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import downgrade

import synapse_nb as syn
from synapse_nb._util import fmt_ts
from synapse_nb.recall.delta import SESSIONS_PER_HOUR
from synapse_nb.store.sql.queries import AGENT_SESSION_ROWS, AGENT_SESSIONS_PER_MIND, AGENT_SESSIONS_PER_VAULT

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> datetime:
        self.t += timedelta(milliseconds=1)
        return self.t


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[syn.Vault, syn.Vault]:
    clock = Clock()
    user = syn.open_vault(tmp_path, clock=clock)
    for i in range(12):
        user.remember("project", f"retention_{i}", f"logs are kept for {i + 10} days in the retention bucket")
    return user, syn.open_vault(tmp_path, actor="agent", clock=clock)


def _marks(v: syn.Vault, session: str, n: int, at: datetime, mind: str = "default") -> None:
    """``n`` made-up rows given to ``session`` (stored key) at ``at``, as one recall's write would record them."""
    v._ctx.store.sessions.mark(mind, session, [(f"mem_{i:012x}", "d") for i in range(n)], fmt_ts(at))


def _registry(v: syn.Vault) -> dict[tuple[str, str], tuple[int, str, str, int]]:
    return {(r[0], r[1]): (r[2], r[3], r[4], r[5]) for r in v._ctx.store.query(
        "SELECT mind, session, agent, first_seen, last_seen, n FROM session_registry")}


def _recount(v: syn.Vault) -> dict[tuple[str, str], tuple[int, str, int]]:
    """The registry as the rows say (its first_seen is older when rows were given again: not counted here)."""
    return {(r[0], r[1]): (int(r[1].startswith("agent:")), r[2], r[3]) for r in v._ctx.store.query(
        "SELECT mind, session, max(seen_at), count(*) FROM session_seen GROUP BY mind, session")}


def _counts(v: syn.Vault) -> dict[tuple[str, str], tuple[int, str, int]]:
    return {k: (a, last, n) for k, (a, _, last, n) in _registry(v).items()}


def test_the_bounds_keep_the_hours_bound_sound() -> None:
    """A session given something in the past hour never gives way in its mind: a mind keeps at least as many agent
    sessions as the hour admits (one that gave way would no longer be counted, and another could come in)."""
    assert SESSIONS_PER_HOUR <= AGENT_SESSIONS_PER_MIND <= AGENT_SESSIONS_PER_VAULT


def test_a_persons_new_session_does_not_pay_for_the_agents_marks(pair: tuple[syn.Vault, syn.Vault]) -> None:
    """The room check of a new session read every mark of the hour (count of distinct sessions): it reads the
    registry now, so a person's recall runs about the same SQLite steps with 60,000 agents' marks as without."""
    user, agent = pair
    conn: sqlite3.Connection = user._ctx.store._conn  # type: ignore[attr-defined]

    def steps(session: str) -> int:
        n = [0]

        def tick() -> int:
            n[0] += 1
            return 0

        conn.set_progress_handler(tick, 100)
        try:
            assert user.recall("how long are logs kept in the retention bucket?", session=session).items
        finally:
            conn.set_progress_handler(None, 0)
        return n[0] * 100

    user.recall("warm up the retention caches")
    clean = steps("nb-000000000001")
    for s in range(60):  # an hour of agents' recalls: 60 sessions of 1,000 rows
        _marks(agent, f"agent:s{s}", 1000, NOW)
    flooded = steps("nb-000000000002")
    assert flooded < clean + 20_000, (clean, flooded)  # the old count read 60,000 rows: 600,000+ steps


def test_an_agent_session_holds_a_bounded_number_of_rows(pair: tuple[syn.Vault, syn.Vault]) -> None:
    """Past AGENT_SESSION_ROWS a new record given is not marked (given again later: a lost mark, never a lost
    record); a record the session holds is still updated; a person's session has no such bound."""
    user, agent = pair
    _marks(agent, "agent:api:s1", AGENT_SESSION_ROWS, NOW)
    assert _registry(agent)[("default", "agent:api:s1")][3] == AGENT_SESSION_ROWS
    q = "how long are logs kept in the retention bucket?"
    first = agent.recall(q, session="s1")
    assert first.items and agent.recall(q, session="s1").items == first.items  # not marked: in full again
    _marks(agent, "agent:api:s1", 3, NOW + timedelta(minutes=1))  # held rows: updated
    assert agent._ctx.store.sessions.seen("default", "agent:api:s1", ["mem_000000000002"]) == {"mem_000000000002": "d"}
    assert _registry(agent)[("default", "agent:api:s1")] == (1, fmt_ts(NOW), fmt_ts(NOW + timedelta(minutes=1)),
                                                         AGENT_SESSION_ROWS)
    _marks(user, "p1", AGENT_SESSION_ROWS, NOW)
    given = {x.id for x in user.recall(q, session="p1").items}
    assert given and not given & {x.id for x in user.recall(q, session="p1").items}  # marked: not given again
    assert _counts(user) == _recount(user)


def test_a_mind_and_the_vault_keep_a_bounded_number_of_agent_sessions(pair: tuple[syn.Vault, syn.Vault]) -> None:
    """A new agent session admitted past AGENT_SESSIONS_PER_MIND: the one given something least recently gives way
    whole (rows and registry row). Minds are named by the agent, so the vault has a bound of its own."""
    user, agent = pair
    for s in range(AGENT_SESSIONS_PER_MIND):
        _marks(agent, f"agent:old{s:03d}", 2, NOW - timedelta(days=2, minutes=AGENT_SESSIONS_PER_MIND - s))
    _marks(user, "nb-person", 2, NOW - timedelta(days=3))  # a person's session: never given way
    assert agent.recall("how long are logs kept in the retention bucket?", session="new").items
    reg = _registry(agent)
    agents = {k[1] for k, v in reg.items() if v[0]}
    assert len(agents) == AGENT_SESSIONS_PER_MIND and "agent:api:new" in agents and "agent:old000" not in agents
    assert ("default", "nb-person") in reg and _counts(agent) == _recount(agent)
    for s in range(AGENT_SESSIONS_PER_VAULT - AGENT_SESSIONS_PER_MIND):  # another mind fills the vault's bound
        _marks(agent, f"agent:m{s:03d}", 1, NOW - timedelta(days=1, minutes=1000 - s), mind="other")
    assert sum(v[0] for v in _registry(agent).values()) == AGENT_SESSIONS_PER_VAULT
    _marks(agent, "agent:third", 1, NOW, mind="third")
    reg = _registry(agent)
    assert sum(v[0] for v in reg.values()) == AGENT_SESSIONS_PER_VAULT and ("third", "agent:third") in reg
    assert ("default", "agent:old001") not in reg and _counts(agent) == _recount(agent)


def test_one_statement_of_many_sessions_keeps_the_bounds(pair: tuple[syn.Vault, syn.Vault]) -> None:
    """Review 33 (the team vault's statement trigger let one INSERT of 300 sessions keep 300): here the bounds are
    row triggers, so each new session of a multi-row statement is admitted as one at a time is; the statement ends
    at the bounds exactly, a person's session untouched."""
    user, agent = pair
    _marks(user, "nb-person", 2, NOW - timedelta(days=3))
    store = agent._ctx.store
    many = ("WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?) "
            "INSERT INTO session_seen(mind, session, rid, digest, seen_at) "
            "SELECT CASE WHEN ? THEN 'm' || (i % 3) ELSE 'default' END, printf('agent:api:s%04d', i), "
            "'mem_000000000001', 'd', ? FROM g")
    with store.transaction():
        store.write(many, (AGENT_SESSIONS_PER_MIND + 44, 0, fmt_ts(NOW)))
    reg = _registry(agent)
    agents = sorted(k[1] for k, v in reg.items() if v[0])
    assert len(agents) == AGENT_SESSIONS_PER_MIND and agents[-1] == f"agent:api:s{AGENT_SESSIONS_PER_MIND + 44:04d}"
    assert reg[("default", "nb-person")][3] == 2 and _counts(agent) == _recount(agent)
    with store.transaction():
        store.write(many, (AGENT_SESSIONS_PER_VAULT + 88, 1, fmt_ts(NOW + timedelta(minutes=1))))
    reg = _registry(agent)
    keys = [k for k, v in reg.items() if v[0]]
    assert len(keys) == AGENT_SESSIONS_PER_VAULT and not any(m == "default" for m, _ in keys)
    assert reg[("default", "nb-person")][3] == 2 and _counts(agent) == _recount(agent)


def test_prune_drops_an_agent_session_by_its_first_day(pair: tuple[syn.Vault, syn.Vault]) -> None:
    """An agent re-giving a session's records kept their seen_at new, so prune (30 days by seen_at) never cleared
    them: an agent session first given something before the prune's time goes whole. A person's is as before."""
    user, agent = pair
    for session in ("agent:long", "nb-long"):
        _marks(agent, session, 5, NOW - timedelta(days=40))
        _marks(agent, session, 5, NOW - timedelta(minutes=5))  # given again: every row new
    _marks(agent, "agent:fresh", 5, NOW - timedelta(days=3))
    report = user.prune()
    assert report.sessions_cleared == 5
    assert set(_registry(user)) == {("default", "nb-long"), ("default", "agent:fresh")}
    assert _registry(user)[("default", "nb-long")][1] == fmt_ts(NOW - timedelta(days=40))  # kept by its seen_at
    assert _counts(user) == _recount(user)


def test_the_registry_stays_exact_whoever_writes(pair: tuple[syn.Vault, syn.Vault]) -> None:
    """Rows go with their record (a deletion's trigger), by prune, by hand; a session left with none goes."""
    user, agent = pair
    q = "how long are logs kept in the retention bucket?"
    given = user.recall(q, session="p1").items
    agent.recall(q, session="a1")
    user.memories.delete(given[0].id)
    store = user._ctx.store
    with store.transaction():
        store.write("UPDATE session_seen SET session = 'p2' WHERE session = 'p1' AND rid = ?", (given[1].id,))
    assert _counts(user) == _recount(user) and ("default", "p2") in _registry(user)
    with store.transaction():
        store.write("DELETE FROM session_seen WHERE session = 'p2'")
    assert ("default", "p2") not in _registry(user) and _counts(user) == _recount(user)


def test_a_v8_vault_fills_its_registry_when_it_migrates(pair: tuple[syn.Vault, syn.Vault], tmp_path: Path) -> None:
    user, agent = pair
    q = "how long are logs kept in the retention bucket?"
    user.recall(q, session="p1")
    agent.recall(q, session="a1")
    _marks(agent, "agent:s2", 7, NOW - timedelta(days=1))
    expected = _registry(user)
    user.close()
    agent.close()
    db = sqlite3.connect(tmp_path / ".synapse" / "synapse.db")
    downgrade(db, 8)
    db.close()
    again = syn.open_vault(tmp_path)
    assert again._ctx.store.schema_version == 15 and _registry(again) == expected and len(expected) == 3
    assert _counts(again) == _recount(again)
