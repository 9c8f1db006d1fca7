"""The duplicate check weighs a pair of two people's records by people's records alone on a team vault too
(migration 18, review 22): the server keeps the agents' unverified records' word counts beside everyone's."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from tests.test_history import RELEASE_P1, RELEASE_P2

TS = "2026-01-01T00:00:00.000000Z"


def test_an_agent_logins_writes_never_hide_a_persons_newer_record(human: Any, machine: Any,
                                                                   logins: dict[str, str]) -> None:
    """The reproduction of review 22 on a team vault: a person's P1, thirty memories of an agent login holding only
    the words P2 adds, the person's P2. The pair is listed and hides nothing (as with no agent writes); the agent's
    counts are what a recount of the records gives, and a person's verify moves a record to people's."""
    p1 = human.remember("procedure", "release_billing", RELEASE_P1)
    bot = machine("bot", logins["agent"], actor="agent")
    flood = [bot.remember("context", f"note_{i}", f"then rotate webhook secrets entry {i}") for i in range(30)]
    p2 = human.remember("procedure", "billing_release_steps", RELEASE_P2)
    (link,) = [lk for lk in human.memories.conflicts() if p2.id in (lk.a, lk.b)]
    assert {link.a, link.b} == {p1.id, p2.id} and link.relation == "duplicate" and link.hidden is None
    assert p2.id not in human._store.links.hidden(human.mind)
    recall = human._store.recall
    assert recall.count(agents=True) == 30
    assert recall.doc_freq(["webhook", "billing"]) == {"webhook": 31, "billing": 2}
    assert recall.doc_freq(["webhook", "billing"], agents=True) == {"webhook": 30}
    with human._store.snapshot():  # the duplicate check's reads: the agents' counts come with everyone's
        trips = human._store.round_trips.count
        assert recall.doc_freq(["webhook", "rotate"]) == {"webhook": 31, "rotate": 31}
        assert recall.doc_freq(["webhook"], agents=True) == {"webhook": 30} and recall.count(agents=True) == 30
        assert human._store.round_trips.count - trips == 1
    human.memories.verify(flood[0].id)
    assert recall.count(agents=True) == 29 and recall.doc_freq(["webhook"], agents=True) == {"webhook": 29}
    assert human._store.integrity_check() == "ok"


def test_a_project_at_17_with_agent_records_is_counted_by_migration_18(pg_admin_url: str) -> None:
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"avo{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:17]) == (0, 17)
        c.execute(f"SET search_path = {project}")
        for i, (source, verified, terms) in enumerate([("agent", 0, "{a,b}"), ("agent", 1, "{a}"), ("user", 1, "{a,c}"),
                                                       ("agent", 0, "{b}")]):
            c.execute("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, "
                      "confidence, created_at, updated_at, terms) VALUES (%s, 'default', 'project', %s, 'x', '[]', 2, "
                      "%s, %s, 1.0, %s, %s, %s)", (f"mem_{i:012x}", f"k{i}", source, verified, TS, TS, terms))
        c.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at, terms) "
                  "VALUES ('note_raw', 'other', 'n', 't', 'b', 'agent', %s, %s, '{c}')", (TS, TS))
        assert migrate(c, project, MIGRATIONS[:18]) == (17, 18)
        c.execute(f"SET search_path = {project}")
        assert c.execute("SELECT n_docs, agent_docs FROM gate_stats").fetchone() == (5, 3)
        assert dict(c.execute("SELECT term, agents FROM gate_df WHERE n > 0 ORDER BY term").fetchall()) == {
            "a": 1, "b": 2, "c": 1}
