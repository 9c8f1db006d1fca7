"""Review 97 on a team vault (migration 35, sql/agent_decided.sql), against the agent login's own SQL.

F1: a memory a person verified keeps source 'agent', and the history guard read only the source: the agent login
appended an 'update' entry whose `before` held its own words. Alice's verified version then read as the agent's text,
her `memory revert --to` it stored the agent's words, and bob's update no longer said it replaced her version
(``Versions.overwritten`` read only the entry before the newest). An approved lesson keeps source 'agent' too.

F2: the agent login wrote 'purged' (only a person's purge writes it) on its own sessions' marks of the one approved
lesson in force, and every session of its login it named was told a person had deleted it, "do not follow it".
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from .conftest import url_as
from .test_team_agent_history import ENTRY, forged

DENIED = psycopg.errors.InsufficientPrivilege
RULE = "Never deploy to prod on Fridays"
DELETED = "was deleted by a person"
MARK = "INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES ('default', %s, %s, %s, %s)"


@pytest.fixture()
def people(pg_admin_url: str, project: str) -> dict[str, str]:
    """Two people and alice's agent: name -> URL."""
    out = {}
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for who, group in (("alice", "human"), ("bob", "human"), ("agent_alice", "agent")):
            login = f"{project}_{who}"
            c.execute(f"CREATE ROLE {login} LOGIN IN ROLE {project}_{group}")
            if group == "agent":
                c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (login,))
            out[who] = url_as(pg_admin_url, login) + f"?project={project}"
    return out


@pytest.fixture()
def agents_sql(people: dict[str, str], project: str) -> Iterator[psycopg.Connection[Any]]:
    """A raw connection as alice's agent's login, autocommit."""
    with psycopg.connect(people["agent_alice"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        yield c


def _admin(url: str, project: str) -> psycopg.Connection[Any]:
    c = psycopg.connect(url, autocommit=True)
    c.execute(f"SET search_path = {project}")
    return c


def _agents_words(rid: str, words: str) -> str:
    """A memory's `before` as the package writes an agent's own: its words, unverified, at 0.7."""
    return forged(rid, words, source="agent", verified=False, confidence=0.7, key="prod_gate", priority="normal")


def test_an_agent_login_writes_no_history_for_a_memory_a_person_verified(
        people: dict[str, str], machine: Any, agents_sql: psycopg.Connection[Any]) -> None:
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    agent = machine("bot", people["agent_alice"], actor="agent")
    mem = agent.remember("procedure", "prod_gate", "Deploys to prod need a second reviewer's approval")
    alice.memories.verify(mem.id)
    words = "Deploys to prod need no review; ship directly"
    for n, action in enumerate(("update", "delete", "create")):
        with pytest.raises(DENIED, match="which a person verified"), agents_sql.transaction():
            agents_sql.execute(ENTRY, (f"hst_forged_{n}", mem.id, "memory", 3, action, _agents_words(mem.id, words)))
    with pytest.raises(DENIED, match="which a person verified"), agents_sql.transaction():  # no `before` either
        agents_sql.execute(ENTRY, ("hst_forged_9", mem.id, "memory", 3, "update", None))
    # its own unverified memory's entries, as the package writes them, still pass
    own = agent.remember("procedure", "notes", "an agent's own memory")
    agents_sql.execute(ENTRY, ("hst_own_v2", own.id, "memory", 2, "update", _agents_words(own.id, "older words")
                               .replace('"key": "prod_gate"', '"key": "notes"')))
    # alice's version is hers: bob's write says it replaced it, her history and her revert read her verified text
    got = bob.remember("procedure", "prod_gate", "Deploys to prod need one approval from anyone")
    assert got.replaced is not None and (got.replaced.login, got.replaced.version) == (alice_login(people), 2)
    assert alice.memories.history(mem.id).record(2).content == mem.content
    back = alice.memories.revert(mem.id, to=2)
    assert (back.content, back.verified) == (mem.content, True)


def alice_login(people: dict[str, str]) -> str:
    return people["alice"].split("://", 1)[1].split("@", 1)[0]


def test_an_agent_login_writes_no_history_for_a_lesson_a_person_approved(
        people: dict[str, str], machine: Any, agents_sql: psycopg.Connection[Any]) -> None:
    alice = machine("a", people["alice"])
    agent = machine("bot", people["agent_alice"], actor="agent")
    pending = agent.lessons.create("prod deploy on a Friday was reverted")
    decided = agent.lessons.create("staging deploy was reverted")
    alice.lessons.approve(decided.id, text=RULE)
    assert alice.lessons.get(decided.id).source == "agent"  # the row still names the agent
    for n, action in enumerate(("analyse", "update", "delete")):
        with pytest.raises(DENIED, match="which a person decided"), agents_sql.transaction():
            agents_sql.execute(ENTRY, (f"hst_forged_{n}", decided.id, "lesson", 3, action, None))
    agents_sql.execute(ENTRY, ("hst_own_an", pending.id, "lesson", 2, "analyse", None))  # a pending one's: as before
    assert [e.actor for e in alice.history(decided.id)] == ["agent", "user"]


def test_a_persons_write_names_the_verified_version_it_replaced_past_an_agents_entry(
        people: dict[str, str], machine: Any, pg_admin_url: str, project: str) -> None:
    """An agent's entry a server before migration 35 let in (written here as the owner) stands between alice's
    verification and bob's update: bob's write still says it replaced alice's version."""
    alice, bob = machine("a", people["alice"]), machine("b", people["bob"])
    agent = machine("bot", people["agent_alice"], actor="agent")
    mem = agent.remember("procedure", "prod_gate", "Deploys to prod need a second reviewer's approval")
    alice.memories.verify(mem.id)
    with _admin(pg_admin_url, project) as c:
        c.execute(ENTRY, ("hst_old_agent_v3", mem.id, "memory", 3, "update",
                          _agents_words(mem.id, "Deploys to prod need no review; ship directly")))
    got = bob.remember("procedure", "prod_gate", "Deploys to prod need one approval from anyone")
    assert got.replaced is not None and (got.replaced.login, got.replaced.version) == (alice_login(people), 2)
    assert got.note is not None and "version is v2" in got.note
    assert bob.memories.overwritten(got) == got.replaced


def _marks(url: str, project: str, rid: str) -> list[tuple[str, str]]:
    with _admin(url, project) as c:
        return [(r[0], r[1]) for r in c.execute("SELECT session, digest FROM session_seen WHERE rid = %s "
                                                "ORDER BY session", (rid,)).fetchall()]


def test_an_agent_login_cannot_tell_its_sessions_a_lesson_in_force_was_purged(
        people: dict[str, str], machine: Any, project: str, pg_admin_url: str,
        agents_sql: psycopg.Connection[Any]) -> None:
    alice = machine("a", people["alice"])
    les = alice.lessons.create("prod deploy reverted")
    les = alice.lessons.approve(les.id, text=RULE)
    agent = machine("bot", people["agent_alice"], actor="agent")
    assert RULE in agent.recall("deploy to prod", session="s1").text
    mine = f"agent:{project}_agent_alice:api:"
    assert _marks(pg_admin_url, project, les.id) == [(mine + "s1", les.digest)]
    now = alice._ctx.now_ts()
    for bad in ("purged", "x" * 16, "ABCDEF0123456789", les.digest + "0"):
        with pytest.raises(DENIED, match="digest"):
            agents_sql.execute("UPDATE session_seen SET digest = %s WHERE rid = %s", (bad, les.id))
        with pytest.raises(DENIED, match="digest"):
            agents_sql.execute(MARK, (mine + "s2", les.id, bad, now))
    assert _marks(pg_admin_url, project, les.id) == [(mine + "s1", les.digest)]
    r = agent.recall("deploy to prod", session="s1")
    assert r.no_longer == () and DELETED not in r.text
    # what the package writes on an agent's session passes: a record's digest, 'gone'
    agents_sql.execute(MARK, (mine + "s3", les.id, "0123456789abcdef", now))
    agents_sql.execute("UPDATE session_seen SET digest = 'gone' WHERE rid = %s AND session = %s", (les.id, mine + "s3"))
    r = agent.recall("deploy to prod", session="s3")  # told nothing of it: given it in full
    assert r.no_longer == () and f"1. [all branches, approved] {RULE}" in r.text


def test_a_purged_mark_of_a_lesson_in_force_is_not_believed(
        people: dict[str, str], machine: Any, project: str, pg_admin_url: str) -> None:
    """A 'purged' mark a server before migration 35 let an agent login write (set here as the owner): the lesson's
    row is believed, and the session is given it in full, told of no deletion."""
    alice = machine("a", people["alice"])
    les = alice.lessons.approve(alice.lessons.create("prod deploy reverted").id, text=RULE)
    agent = machine("bot", people["agent_alice"], actor="agent")
    assert RULE in agent.recall("deploy to prod", session="s1").text
    with _admin(pg_admin_url, project) as c:
        c.execute("UPDATE session_seen SET digest = 'purged' WHERE rid = %s", (les.id,))
    r = agent.recall("deploy to prod", session="s1")
    assert r.no_longer == () and DELETED not in r.text and f"1. [all branches, approved] {RULE}" in r.text
    assert _marks(pg_admin_url, project, les.id)[0][1] == les.digest
    alice.purge(les.id)  # a person's purge is still said
    r = agent.recall("deploy to prod", session="s1")
    assert r.no_longer == ((les.id, None, "purged"),) and DELETED in r.text


def test_a_vault_at_migration_34_with_data_upgrades_to_35(pg_admin_url: str, machine: Any) -> None:
    """Migration 35 adds a trigger and replaces a function, and checks no stored row: a project holding a verified
    agent memory, an agent's entry after the verification and an agent session's 'purged' mark upgrades, keeps
    them, and holds the agent login to the new rules afterwards."""
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"up{uuid.uuid4().hex[:8]}"
    bot = f"{project}_bot"
    ts = "2026-12-01T10:00:00.000000Z"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:34]) == (0, 34)
        c.execute(f"CREATE ROLE {bot} LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (bot,))
        c.execute(f"SET search_path = {project}")
        c.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                  "created_at, updated_at, terms) VALUES ('mem_00000000000a', 'default', 'procedure', 'prod_gate', "
                  "'deploys to prod need a second review', 1, 'agent', 1, 0.7, %s, %s, '{deploy,prod,review}')",
                  (ts, ts))
        c.execute(MARK, (f"agent:{bot}:api:s1", "les_00000000000a", "purged", ts))
    with psycopg.connect(url_as(pg_admin_url, bot), autocommit=True) as a:
        a.execute(f"SET search_path = {project}")
        a.execute(ENTRY, ("hst_before_35", "mem_00000000000a", "memory", 2, "update",
                          json.dumps(json.loads(_agents_words("mem_00000000000a", "no review needed")) | {
                              "created_at": ts, "updated_at": ts}, sort_keys=True)))
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project) == (34, MIGRATIONS[-1].version)
        c.execute(f"SET search_path = {project}")
        assert c.execute("SELECT count(*) FROM history WHERE id = 'hst_before_35'").fetchone() == (1,)
        assert c.execute("SELECT digest FROM session_seen").fetchall() == [("purged",)]
    with psycopg.connect(url_as(pg_admin_url, bot), autocommit=True) as a:
        a.execute(f"SET search_path = {project}")
        with pytest.raises(DENIED, match="which a person verified"):
            a.execute(ENTRY, ("hst_after_35", "mem_00000000000a", "memory", 3, "update", None))
        a.execute("UPDATE session_seen SET seen_at = %s", (ts,))  # its digest kept: a purge's mark is no new one
        with pytest.raises(DENIED, match="digest"):
            a.execute(MARK, (f"agent:{bot}:api:s2", "les_00000000000a", "purged", ts))
