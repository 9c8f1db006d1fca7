"""An agent login's own rows hold no more than the package writes (migration 16, review 16): every column it chose is
counted in what agents hold, no row is dated after the server's clock, and an episode names another speaker only as
reported. Each test ran the reviewer's SQL against a real server and failed before the migration."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

DENIED = psycopg.errors.InsufficientPrivilege
TOO_MANY = psycopg.errors.ConfigurationLimitExceeded


def clock(c: psycopg.Connection[Any]) -> str:
    row = c.execute("SELECT next_stamp()").fetchone()
    assert row is not None
    return str(row[0])


def episode(c: psycopg.Connection[Any], rid: str, *, actor: str | None = None, at: str | None = None,
            rank_body: list[str] | None = None, mind: str = "default") -> None:
    ts = at or clock(c)
    c.execute("INSERT INTO episodes(id, mind, task_key, status, outcome, refs, source, created_at, updated_at, terms, "
              "actor, rank_body) VALUES (%s, %s, 'chat', 'unknown', 'said so', '[]', 'agent', %s, %s, '{said}', %s, "
              "%s)", (rid, mind, ts, ts, actor, rank_body or ["said", "so"]))


def held_bytes(c: psycopg.Connection[Any]) -> int:
    row = c.execute("SELECT * FROM agent_holdings('default')").fetchone()
    assert row is not None
    return int(row[3])


def test_every_column_an_agent_login_chose_is_counted(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    before = held_bytes(agent_sql)
    episode(agent_sql, "epi_raw1", actor="x (reported by agent)", rank_body=["said"] * 20_000)
    grew = held_bytes(agent_sql) - before
    assert grew > 20_000 * 5  # the ranking array's bytes (and the actor's) are what agents hold
    human.settings.set("agent_megabytes_per_vault", 1)
    with pytest.raises(TOO_MANY, match="MB of text held in the whole vault"):
        episode(agent_sql, "epi_raw2", actor="y (reported by agent)", rank_body=["padding" * 9] * 20_000)


def test_an_agent_logins_row_is_not_dated_after_the_servers_clock(human: Any,
                                                                   agent_sql: psycopg.Connection[Any]) -> None:
    with pytest.raises(DENIED, match="after the server's clock"):
        episode(agent_sql, "epi_future", at="2099-01-01T00:00:00.000000Z")
    episode(agent_sql, "epi_past", at="2020-01-01T00:00:00.000000Z")  # older: a prune's cut-off takes it sooner
    episode(agent_sql, "epi_now")
    with pytest.raises(DENIED):  # an agent login updates no episode (its grants), nor dates one later
        agent_sql.execute("UPDATE episodes SET updated_at = '2099-01-01T00:00:00.000000Z' WHERE id = 'epi_now'")
    ts = clock(agent_sql)
    agent_sql.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at, terms) "
                      "VALUES ('note_raw', 'default', 'n', 't', 'b', 'agent', %s, %s, '{b}')", (ts, ts))
    with pytest.raises(DENIED, match="after the server's clock"):  # its own note, which it may change
        agent_sql.execute("UPDATE notes SET updated_at = '2099-01-01T00:00:00.000000Z' WHERE id = 'note_raw'")
    # a person's prune takes the old one, and the person's own writes are dated as before
    human.episodes.log("person_run", outcome="ran")
    assert "epi_past" in human.prune(agent_records_older_than="30d").agent_records_deleted


def test_an_agent_logins_episode_names_another_speaker_only_as_reported(
        human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    with pytest.raises(DENIED, match="as said by 'Maria'"):
        episode(agent_sql, "epi_maria", actor="Maria")
    with pytest.raises(DENIED, match="over 200 characters"):
        episode(agent_sql, "epi_long", actor="M" * 300 + " (reported by agent)")
    episode(agent_sql, "epi_ok", actor="Maria (reported by agent)")
    episode(agent_sql, "epi_self", actor="agent")
    with pytest.raises(DENIED):
        agent_sql.execute("UPDATE episodes SET actor = 'Maria' WHERE id = 'epi_ok'")
    # a person's episodes name anyone, as before
    assert human.episodes.log("chat", outcome="hello", actor="Maria", thread="t1").actor == "Maria"
