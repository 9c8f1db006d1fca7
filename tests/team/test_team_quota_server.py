"""The agent quotas held by the team vault's server (migration 12): an agent login running its own SQL cannot write
past the hourly quota, a mind's agent memories or its pending agent lessons; the package's writes count the same rows,
so a write the package allows never meets the server's refusal, and the package's own words come first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from synapse_nb.errors import QuotaExceededError
from synapse_nb.kinds.lessons import AGENT_PENDING_LESSONS
from synapse_nb.settings import SETTINGS

TS = "2026-01-01T00:00:00.000000Z"
TOO_MANY = psycopg.errors.ConfigurationLimitExceeded


@pytest.fixture()
def human(team_url: str, machine: Any) -> Any:
    return machine("h", team_url)


@pytest.fixture()
def agent_sql(logins: dict[str, str], project: str) -> Iterator[psycopg.Connection[Any]]:
    """A raw connection as the agent login, autocommit (each statement its own transaction)."""
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        yield c


def checkpoint_rows(c: psycopg.Connection[Any], first: int, n: int, mind: str = "default") -> None:
    """One statement inserting ``n`` agent checkpoints."""
    c.execute("INSERT INTO checkpoints(id, mind, doing, origin, source, created_at, updated_at, terms) "
              "SELECT 'chk_raw' || i, %s, 'raw step ' || i, 'agent', 'agent', %s, %s, '{raw}' "
              "FROM generate_series(%s::int, %s::int) i", (mind, TS, TS, first, first + n - 1))


def count(c: psycopg.Connection[Any], sql: str) -> int:
    row = c.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def test_the_server_holds_the_package_defaults(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    """The limits the server reads are the package's: its defaults when no human set one, the setting once set."""
    row = agent_sql.execute("SELECT * FROM agent_quota_limits()").fetchone()
    assert row == (SETTINGS["agent_writes_per_hour"][0], SETTINGS["agent_memories_per_mind"][0], AGENT_PENDING_LESSONS)
    human.settings.set("agent_writes_per_hour", 7)
    human.settings.set("agent_memories_per_mind", 9)
    assert agent_sql.execute("SELECT * FROM agent_quota_limits()").fetchone() == (7, 9, AGENT_PENDING_LESSONS)


def test_raw_inserts_past_the_hourly_quota_are_refused(human: Any, agent_sql: psycopg.Connection[Any],
                                                       team_url: str, project: str) -> None:
    """Before migration 12 the quota was the package's count: the agent login's own INSERT wrote any number."""
    human.settings.set("agent_writes_per_hour", 5)
    checkpoint_rows(agent_sql, 0, 3)
    with pytest.raises(TOO_MANY, match="quota of 5 writes per hour"):
        checkpoint_rows(agent_sql, 10, 3)  # one statement of three: 6 > 5, refused whole
    checkpoint_rows(agent_sql, 20, 2)  # 5: the quota, taken
    for attempt in (lambda: checkpoint_rows(agent_sql, 30, 1),
                    lambda: agent_sql.execute("INSERT INTO decisions(id, mind, decision, tags, source, created_at, "
                                              "updated_at, terms) VALUES ('dec_raw', 'default', 'd', '[]', 'agent', "
                                              "%s, %s, '{d}')", (TS, TS))):
        with pytest.raises(TOO_MANY):
            attempt()
    assert count(agent_sql, "SELECT count(*) FROM checkpoints WHERE id LIKE 'chk_raw%'") == 5
    assert human.checkpoints.latest() is not None  # a person's writes are not counted
    human.checkpoint("the human goes on")
    # a million rows in one statement: refused whole, nothing kept
    with pytest.raises(TOO_MANY):
        checkpoint_rows(agent_sql, 1000, 1_000)
    assert count(agent_sql, "SELECT count(*) FROM checkpoints WHERE id LIKE 'chk_raw%'") == 5
    with psycopg.connect(team_url.split("?")[0]) as admin:
        logged = count(admin, f"SELECT sum(n) FROM {project}.agent_write_log")
    assert logged == 5  # the rows that went through; a refused statement's count is rolled back with it


def test_an_update_a_deletion_and_a_proposal_count_too(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    human.settings.set("agent_writes_per_hour", 4)
    agent_sql.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                      "created_at, updated_at, terms) SELECT 'mem_raw' || i, 'default', 'k', 'k' || i, 'c', 2, "
                      "'agent', 0, 0.5, %s, %s, '{c}' FROM generate_series(1, 2) i", (TS, TS))
    agent_sql.execute("UPDATE memories SET content = 'c2' WHERE id = 'mem_raw1'")
    agent_sql.execute("SELECT delete_record('memories', 'mem_none')")  # deletes nothing: counts nothing
    agent_sql.execute("UPDATE memories SET content = 'c3' WHERE id = 'mem_raw1'")
    with pytest.raises(TOO_MANY):
        agent_sql.execute("UPDATE memories SET content = 'c4' WHERE id = 'mem_raw1'")
    with pytest.raises(TOO_MANY):
        agent_sql.execute("SELECT delete_record('memories', 'mem_raw2')")
    with pytest.raises(TOO_MANY):
        agent_sql.execute("INSERT INTO revisions(id, rid, kind, mind, status, fields, base_digest, actor, surface, "
                          "created_at) VALUES ('rev_raw', 'mem_raw', 'memory', 'default', 'pending', '{}', 'x', "
                          "'agent', 'sql', %s)", (TS,))
    assert human.memories.get("mem_raw1").content == "c3" and human.memories.get("mem_raw2")


def test_raw_history_rows_are_bounded_too(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    """An agent writes history entries for its own writes; rows of its own past the quota are refused."""
    human.settings.set("agent_writes_per_hour", 4)
    insert = ("INSERT INTO history(id, rid, kind, mind, version, action, actor, surface, at) "
              "SELECT 'hst_raw' || i, 'chk_x', 'checkpoint', 'default', i, 'create', 'agent', 'sql', next_stamp() "
              "FROM generate_series(%s::int, %s::int) i")
    agent_sql.execute(insert, (1, 4))
    with pytest.raises(TOO_MANY, match="history entries"):
        agent_sql.execute(insert, (5, 5))


def test_a_minds_agent_memories_and_pending_lessons_are_capped_by_the_server(
        human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    human.settings.set("agent_memories_per_mind", 3)
    memory = ("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
              "created_at, updated_at, terms) SELECT 'mem_raw' || i, %s, 'k', 'k' || i, 'c', 2, 'agent', 0, 0.5, "
              "%s, %s, '{c}' FROM generate_series(%s::int, %s::int) i")
    agent_sql.execute(memory, ("default", TS, TS, 1, 3))
    with pytest.raises(TOO_MANY, match="3 memories in mind default"):
        agent_sql.execute(memory, ("default", TS, TS, 4, 4))
    agent_sql.execute(memory, ("other", TS, TS, 5, 5))  # another mind holds its own
    lesson = ("INSERT INTO lessons(id, mind, status, summary, source, created_at, updated_at) "
              "SELECT 'les_raw' || i, 'default', 'pending', 'Reverted ' || i, 'agent', %s, %s "
              "FROM generate_series(%s::int, %s::int) i")
    agent_sql.execute(lesson, (TS, TS, 1, AGENT_PENDING_LESSONS))
    with pytest.raises(TOO_MANY, match="pending lessons in mind default"):
        agent_sql.execute(lesson, (TS, TS, AGENT_PENDING_LESSONS + 1, AGENT_PENDING_LESSONS + 1))
    assert len([x for x in human.lessons.list() if x.status == "pending"]) == AGENT_PENDING_LESSONS


def test_the_package_refuses_first_in_its_own_words(human: Any, machine: Any, logins: dict[str, str],
                                                    team_url: str, project: str) -> None:
    """Every kind of agent write the package makes counts the rows the server counts: at a quota of N the package's
    N writes all go through (none meets the server's refusal) and the next is the package's refusal."""
    mine = human.remember("preference", "code_style", "black, 120 columns")
    pending = human.lessons.create("Reverted the retry change")
    writes = [
        lambda a: a.checkpoint("step one", next_step="step two"),
        lambda a: a.decide("use helm charts for the deploy"),
        lambda a: a.episodes.log("ran the migration", status="success"),
        lambda a: a.notes.add("deploy", "how to deploy", "helm upgrade --install"),
        lambda a: a.remember("knowledge", "db", "postgres 15"),
        lambda a: a.memories.update(a.memories.search("postgres")[0].id, content="postgres 16"),
        lambda a: a.remember("preference", "code_style", "tabs"),  # a proposal to the human's memory
        lambda a: a.lessons.create("Reverted the cache change"),
        lambda a: a.lessons.submit_analysis(pending.id, "the retry hid timeouts"),
        lambda a: a.memories.delete(a.memories.search("postgres")[0].id),
    ]
    human.settings.set("agent_writes_per_hour", len(writes))
    agent = machine("bot", logins["agent"], actor="agent")
    for write in writes:
        write(agent)
    with pytest.raises(QuotaExceededError, match="every mind") as refused:
        agent.checkpoint("one too many")
    assert "team vault" not in str(refused.value)  # the package's words, not the server's
    with psycopg.connect(team_url.split("?")[0]) as admin:
        buckets = dict(admin.execute(f"SELECT bucket, sum(n) FROM {project}.agent_write_log WHERE login = %s "
                                     "GROUP BY bucket", (f"{project}_agent_login",)).fetchall())
    assert buckets["records"] == len(writes) and buckets["history"] <= len(writes), buckets  # one row per write
    assert human.memories.get(mine.id).content == "black, 120 columns"
    # beneath the kind managers (a patched client), the server's refusal is the package's error too
    store = agent._store
    with pytest.raises(QuotaExceededError, match="refused by the team vault"), store.transaction():
        store.checkpoints.insert(_raw_checkpoint(store))


def _raw_checkpoint(store: Any) -> Any:
    from synapse_nb.models import Checkpoint

    now = store.stamp(TS)
    return Checkpoint(id="ckp_beneath", mind="default", created_at=now, updated_at=now, doing="beneath the API",
                      origin="agent", source="agent")
