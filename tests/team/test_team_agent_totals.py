"""The agents' bounded totals on a team vault (migration 15): the server keeps what agents hold and refuses an agent
login's own SQL past a bound; the package refuses first, in its words; a person's writes are counted, never refused."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from synapse_nb.errors import QuotaExceededError
from synapse_nb.settings import SETTINGS

TS = "2026-01-01T00:00:00.000000Z"
TOO_MANY = psycopg.errors.ConfigurationLimitExceeded


def checkpoint_rows(c: psycopg.Connection[Any], first: int, n: int, mind: str = "default", doing: str = "raw") -> None:
    c.execute("INSERT INTO checkpoints(id, mind, doing, origin, source, created_at, updated_at, terms) "
              "SELECT 'ckp_raw' || i, %s, %s || i, 'agent', 'agent', %s, %s, '{raw}' "
              "FROM generate_series(%s::int, %s::int) i", (mind, doing, TS, TS, first, first + n - 1))


def holdings(c: psycopg.Connection[Any], mind: str = "default") -> tuple[int, ...]:
    row = c.execute("SELECT * FROM agent_holdings(%s)", (mind,)).fetchone()
    assert row is not None
    return tuple(int(x) for x in row)


def test_the_server_holds_the_package_defaults(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    row = agent_sql.execute("SELECT * FROM agent_total_limits()").fetchone()
    assert row == tuple(SETTINGS[n][0] for n in ("agent_records_per_mind", "agent_records_per_vault",
                                                 "agent_megabytes_per_vault"))
    human.settings.set("agent_records_per_vault", 7)
    assert agent_sql.execute("SELECT * FROM agent_total_limits()").fetchone()[1] == 7


def test_an_agent_logins_raw_inserts_past_the_vault_bound_are_refused(
        human: Any, agent_sql: psycopg.Connection[Any], logins: dict[str, str], project: str) -> None:
    human.settings.set("agent_records_per_vault", 5)
    checkpoint_rows(agent_sql, 0, 3)
    with pytest.raises(TOO_MANY, match="5 records held in the whole vault"):
        checkpoint_rows(agent_sql, 10, 3)  # 6 > 5: the statement is refused whole
    checkpoint_rows(agent_sql, 20, 2, mind="invented")  # 5: the bound, taken (in another mind)
    with pytest.raises(TOO_MANY, match="agent_records_per_vault"):
        checkpoint_rows(agent_sql, 30, 1, mind="invented-2")  # a new mind does not escape it
    with pytest.raises(TOO_MANY):
        agent_sql.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at, terms) "
                          "VALUES ('note_raw', 'third', 'n', 't', 'b', 'agent', %s, %s, '{b}')", (TS, TS))
    assert holdings(agent_sql)[2] == 5
    # a person's writes pass, and a person deleting agent records frees room
    human.checkpoint("the human goes on")
    human.notes.add("human_note", "when", "x")
    assert holdings(agent_sql)[2] == 5
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # an agent may not delete a checkpoint...
        agent_sql.execute("SELECT delete_record('checkpoints', 'ckp_raw0')")
    assert holdings(agent_sql)[2] == 5
    with psycopg.connect(logins["human"].split("?")[0], autocommit=True) as c:  # ...a person may
        c.execute(f"SET search_path = {project}")
        c.execute("SELECT delete_record('checkpoints', 'ckp_raw0')")
    assert holdings(agent_sql)[2] == 4
    checkpoint_rows(agent_sql, 40, 1)


def test_records_per_mind_and_the_megabytes_on_the_server(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    human.settings.set("agent_records_per_mind", 2)
    checkpoint_rows(agent_sql, 0, 2)
    with pytest.raises(TOO_MANY, match="2 records held in mind default"):
        checkpoint_rows(agent_sql, 10, 1)
    checkpoint_rows(agent_sql, 20, 2, mind="other")
    human.settings.set("agent_records_per_mind", 1000)
    human.settings.set("agent_megabytes_per_vault", 1)
    big = "y" * 400_000
    checkpoint_rows(agent_sql, 30, 2, doing=big)  # 0.8 MB
    with pytest.raises(TOO_MANY, match="1 MB of text held in the whole vault"):
        checkpoint_rows(agent_sql, 40, 1, doing=big)
    with pytest.raises(TOO_MANY, match="agent_megabytes_per_vault"):  # growing one's own note past it, too
        agent_sql.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at, terms) "
                          "VALUES ('note_raw', 'default', 'n', 't', %s, 'agent', %s, %s, '{b}')", (big, TS, TS))
    assert holdings(agent_sql)[3] <= 1_000_000


def test_the_package_refuses_first_in_its_own_words(human: Any, machine: Any, logins: dict[str, str]) -> None:
    human.settings.set("agent_records_per_vault", 2)
    agent = machine("agent", logins["agent"], actor="agent")
    agent.checkpoint("one")
    agent.decide("two")
    with pytest.raises(QuotaExceededError, match=r"^agent write refused: the agents' quota of 2 records held in the "
                                                 r"whole vault is reached.*agent_records_per_vault"):
        agent.checkpoint("three")
    other = machine("agent2", logins["agent"], actor="agent", mind="invented")
    with pytest.raises(QuotaExceededError, match="agent_records_per_vault"):
        other.notes.add("n", "t", "b")
    human.checkpoint("a person's write passes")
    dec = human.decisions.list()[0]
    human.decisions.delete(dec.id)  # a person deletes a stale agent decision: room again
    agent.checkpoint("three, now")


def test_a_project_at_14_with_agent_records_is_counted_by_migration_15(pg_admin_url: str) -> None:
    import uuid

    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"tot{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:14]) == (0, 14)
        c.execute(f"SET search_path = {project}")
        checkpoint_rows(c, 0, 3, mind="a")
        checkpoint_rows(c, 10, 2, mind="b", doing="é")
        c.execute("INSERT INTO checkpoints(id, mind, doing, origin, source, created_at, updated_at, terms) "
                  "VALUES ('ckp_user', 'a', 'a person', 'user', 'user', %s, %s, '{p}')", (TS, TS))
        assert migrate(c, project, MIGRATIONS[:15]) == (14, 15)
        c.execute(f"SET search_path = {project}")
        assert holdings(c, "a")[:1] == (3,) and holdings(c, "b")[0] == 2
        raw = c.execute("SELECT sum(octet_length(doing) + octet_length(changed_files) + octet_length(origin)) "
                        "FROM checkpoints WHERE source = 'agent'").fetchone()
        assert raw is not None and holdings(c)[2:] == (5, int(raw[0]))
        # migration 16 counts again, the ranking arrays too (each row's terms: "raw", 3 bytes)
        assert migrate(c, project, MIGRATIONS[:16]) == (15, 16)
        c.execute(f"SET search_path = {project}")
        assert holdings(c)[2:] == (5, int(raw[0]) + 5 * 3)
