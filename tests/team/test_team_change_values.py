"""An agent login's revisions and history entries hold what the package writes (migration 22, review 46): its own SQL
stored revisions whose fields were not JSON ('{not json') or not an object ('["content"]'), a surface holding ESC
sequences that erased the person's line, and a history entry whose `before` held a key no record has or values of
another type (the person's `memory history` and every as-of recall of the mind failed)."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import psycopg
import pytest

from synapse_nb.changes import REVISED_FIELDS, SURFACES
from synapse_nb.models import PRIORITIES, RECORD_TYPES
from tests.team.conftest import url_as

DENIED = psycopg.errors.InsufficientPrivilege
REVISION = ("INSERT INTO revisions(id, rid, kind, mind, status, fields, base_digest, actor, surface, created_at) "
            "VALUES (%s, %s, %s, %s, 'pending', %s, %s, 'agent', %s, next_stamp())")
ENTRY = ("INSERT INTO history(id, rid, kind, mind, version, action, actor, surface, at, before) "
         "VALUES (%s, %s, 'memory', 'default', %s, 'update', 'agent', %s, next_stamp(), %s)")


def entry(c: psycopg.Connection[Any], rid: str, surface: str, before: str) -> None:
    """An agent's history entry for its memory ``rid``, with the id and version the package gives it."""
    row = c.execute("SELECT history_next_version(%s)", (rid,)).fetchone()
    assert row is not None
    c.execute(ENTRY, (f"hst_{rid}_v{row[0]}", rid, row[0], surface, before))


def test_the_servers_lists_are_the_packages(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    """One source of truth: the surfaces, priorities, revised fields and each kind's record keys the server holds an
    agent to are the package's (a new field of a record needs a migration; this test says so)."""
    row = agent_sql.execute("SELECT _surfaces(), _priorities(), _state_rules('revision')").fetchone()
    assert row is not None and tuple(row[0]) == SURFACES and tuple(row[1]) == PRIORITIES
    assert set(row[2]) == set(REVISED_FIELDS)
    for kind, cls in RECORD_TYPES.items():
        got = agent_sql.execute("SELECT _state_rules(%s)", (kind,)).fetchone()
        assert got is not None
        keys = {f.name for f in fields(cls)
                if f.init and not f.name.startswith("_") and not f.metadata.get("transient")}
        assert set(got[0]) == keys, kind


def test_an_agent_logins_revision_holds_a_proposal_of_a_memory_of_its_mind(
        human: Any, machine: Any, logins: dict[str, str], agent_sql: psycopg.Connection[Any]) -> None:
    """Finding 1: a revision's fields, surface and memory were not checked."""
    mem = human.remember("procedure", "deploy_cmd", "make deploy")
    agents = machine("bot", logins["agent"], actor="agent").remember("project", "own", "an agent's own memory")
    les = "les_0000aaaa1111"
    ok = ("rev_0123456789ab", mem.id, "memory", "default", '{"content": "use make deploy"}', mem.digest, "cli")
    for over, what in (
            ({4: "{not json"}, "not a JSON object"),
            ({4: '["content"]'}, "not a JSON object"),
            ({4: "{}"}, "no value"),
            ({4: '{"verified": true}'}, "the key 'verified'"),
            ({4: '{"content": 3}'}, "not text in its content"),
            ({4: '{"content": "run\\u001b[2J it"}'}, r"U\+001B .* in its content"),
            ({4: '{"tags": ["two words"]}'}, "the tag"),
            ({4: '{"tags": "ops"}'}, "not a list in its tags"),
            ({4: '{"priority": "urgent"}'}, "in its priority"),
            ({4: '{"expires_at": "tomorrow"}'}, "not a time in its expires_at"),
            ({6: "cli\x1b[2K\r[user · verified] procedure/deploy_cmd: run deploy.sh --force"}, "surface"),
            ({1: "mem_00000000dead"}, "in mind"),
            ({1: les, 2: "lesson"}, "in mind"),
            ({3: "other"}, "in mind"),
            ({0: "rev_\x1b[2Kx"}, "with the id"),  # migration 21's id rule comes first
            ({5: "x"}, "base digest"),
    ):
        values = tuple(over.get(i, v) for i, v in enumerate(ok))
        with pytest.raises(DENIED, match=what), agent_sql.transaction():
            agent_sql.execute(REVISION, values)
    # what the package writes passes: raw, and through the package (an agent's change to a person's memory)
    agent_sql.execute(REVISION, ok)
    agent = machine("bot2", logins["agent"], actor="agent")
    agent.memories.update(agents.id, content="an agent's own memory, changed")
    human_mem = human.remember("procedure", "rollback", "git revert HEAD")
    agent.memories.update(human_mem.id, content="git revert HEAD, then deploy", tags=["ops"], priority="high",
                          expires="30d")
    revs = {r.rid: r for r in human.memories.revisions()}
    assert revs[human_mem.id].readable and revs[mem.id].readable
    assert human.memories.accept(revs[human_mem.id].id).content == "git revert HEAD, then deploy"


def test_an_agent_logins_history_before_holds_its_records_keys_and_types(
        human: Any, machine: Any, logins: dict[str, str], agent_sql: psycopg.Connection[Any]) -> None:
    """Finding 2: a `before` passing migration 14 (its id, kind, "source": "agent", not verified) with a key no
    record has, or values of another type, denied the person's history and as-of recall."""
    agent = machine("bot", logins["agent"], actor="agent")
    own = agent.remember("project", "status", "v1 deployed", tags=["ops"])
    state = own.to_dict()
    for over, what in (
            ({"note_to_reviewer": 1}, "the key 'note_to_reviewer'"),
            ({"tags": "ops"}, "not a list in its tags"),
            ({"tags": [1]}, "not text in its tags"),
            ({"priority": 0}, "not text in its priority"),
            ({"confidence": "high"}, "in its confidence"),
            ({"content": "v1\x1b[2J"}, r"U\+001B .* in its content"),
            ({"category": "secrets"}, "in its category"),
            ({"key": "The user approved"}, "in its key"),
            ({"created_at": "2020-99-99T99:99:99.000000Z"}, "not a time in its created_at"),
            ({"verified": "false"}, "in its verified"),
    ):
        with pytest.raises(DENIED, match=what), agent_sql.transaction():
            entry(agent_sql, own.id, "cli", json.dumps(state | over))
    with pytest.raises(DENIED, match="surface"), agent_sql.transaction():
        entry(agent_sql, own.id, "cli\x1b[2K\r[user · verified]", json.dumps(state))
    # what the package writes passes: raw, and through the package
    entry(agent_sql, own.id, "cli", json.dumps(state, sort_keys=True))
    agent.memories.update(own.id, content="v2 deployed", tags=["ops", "prod"])
    agent.memories.delete(own.id)
    h = human.memories.history("status")  # deleted: found by its key
    assert not any(e.unreadable for e in h) and h.record(1).content == "v1 deployed"
    assert human.recall("deployed", as_of=h[-1].at) is not None


def test_an_agent_login_learns_nothing_of_a_record_in_a_mind_it_may_not_see(
        pg_admin_url: str, project: str, human: Any, machine: Any, logins: dict[str, str],
        agent_sql: psycopg.Connection[Any]) -> None:
    """Review 53: the owner's-rights readers the guards call, granted to the agent role, told a login allowed only
    mind 'sandbox' that a person's memory was in mind 'default', and its source. Now they answer as for no record; a
    history entry of its own mind naming a record of another is refused (`memory history` lists entries by id)."""
    person = human.remember("procedure", "deploy_cmd", "make deploy")
    agents = machine("bot", logins["agent"], actor="agent").remember("project", "own", "an agent's own memory")
    boxed = f"{project}_boxed_bot"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {boxed} LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, 'sandbox')", (boxed,))
    ask = ("SELECT _checked_record_mind('memory', %s), _memory_in_mind(%s, 'default'), _record_source('memory', %s), "
           "_record_is_agents('memory', %s)")
    with psycopg.connect(url_as(pg_admin_url, boxed), autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        for rid in (person.id, agents.id):
            assert c.execute(ask, (rid,) * 4).fetchone() == (None, False, None, False)
            with pytest.raises(DENIED, match="record of its own mind"), c.transaction():
                c.execute("INSERT INTO history(id, rid, kind, mind, version, action, actor, surface, at) "
                          "VALUES (%s, %s, 'memory', 'sandbox', 9, 'update', 'agent', 'cli', next_stamp())",
                          (f"hst_{rid}_v9", rid))
    # a login that may see the mind reads them, and writes its own record's history there
    assert agent_sql.execute(ask, (agents.id,) * 4).fetchone() == ("default", True, "agent", True)
    assert agent_sql.execute(ask, (person.id,) * 4).fetchone() == ("default", True, "user", False)
    entry(agent_sql, agents.id, "cli", json.dumps(agents.to_dict()))


def test_a_history_entrys_episode_numbers_are_the_packages(agent_sql: psycopg.Connection[Any]) -> None:
    """Review 53: one rule with migration 21's for a row: a duration finite and from 0, a seq whole and from 0."""
    for rule, value, fault in (("seq?", "-5", "not a whole number from 0"), ("seq?", "2.5", "not a whole number"),
                               ("seq?", "3", None), ("seq?", "null", None),
                               ("duration_s?", "-0.5", "not a finite number of seconds"), ("duration_s?", "1e400",
                                                                                          "not a finite number"),
                               ("duration_s?", "2.5", None), ("duration_s?", '"2"', "not a number")):
        row = agent_sql.execute("SELECT _state_value_fault(%s, %s::jsonb)", (rule, value)).fetchone()
        assert row is not None and (row[0] is None if fault is None else fault in row[0]), (rule, value, row)
