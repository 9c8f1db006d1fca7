"""Recall engine v2's ranking reads on a team vault (migration 3): BM25 equal to SQLite FTS5's ``bm25()`` on the
same documents (words whose stems both stemmers agree on), thread contexts, counts, rows."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

import synapse_nb as syn

WORDS = ["deploy", "timeout", "queue", "cache", "shard", "tenant", "token", "alert", "vacuum", "replica"]


def _fts5_scores(docs: list[tuple[str, str, str]], query: list[str], w_body: float, w_ctx: float) -> list[tuple]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(rid UNINDEXED, body, context, "
               "tokenize='porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO f(rid, body, context) VALUES (?, ?, ?)", docs)
    match = " OR ".join(f'"{w}"' for w in query)
    return db.execute("SELECT rid, -bm25(f, 0, ?, ?) AS s FROM f WHERE f MATCH ? ORDER BY s DESC, rid",
                      (w_body, w_ctx, match)).fetchall()


def test_bm25_equals_fts5_on_the_same_documents(team_url: str, machine: Any, pg_admin_url: str,
                                                project: str) -> None:
    import random

    v = machine("a", team_url)
    rnd = random.Random(3)
    with v.transaction():
        for i in range(60):
            v.remember("knowledge", f"k{i:02d}", " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 12))))
        for i in range(6):  # one thread of episodes: each carries the bodies of its previous two as context
            v.episodes.log(f"step_{i}", status="success", outcome=" ".join(rnd.choice(WORDS) for _ in range(5)))
    eps = sorted(v.episodes.history(), key=lambda e: e.id)
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for n, e in enumerate(eps):
            c.execute(f"UPDATE {project}.episodes SET thread = 'run1', seq = %s WHERE id = %s", (n, e.id))
        c.execute(f"SELECT {project}.rank_refresh_thread('default', 'run1')")
    store = v._store
    bodies = {c.id: c.text for c in store.recall.candidates("default")}
    ctx = {e.id: " ".join(bodies[x.id] for x in eps[max(0, n - 2):n]) for n, e in enumerate(eps)}
    docs = [(rid, body, ctx.get(rid, "")) for rid, body in sorted(bodies.items())]
    for query in (["deploy"], ["timeout", "queue"], ["cache", "shard", "tenant"], ["vacuum", "nosuchword"]):
        for wb, wc in ((1.0, 0.2), (1.0, 1.0)):
            want = _fts5_scores(docs, query, wb, wc)
            got = store.recall.bm25("default", query, depth=100, w_body=wb, w_context=wc)
            assert [h.id for h in got] == [r[0] for r in want], query
            assert [h.score for h in got] == pytest.approx([r[1] for r in want], rel=1e-9)
    assert store.recall.bm25("default", [], depth=5) == [] and store.recall.bm25("other", ["deploy"], depth=5) == []
    assert store.recall.rank_count("default") == (66, 66) and store.recall.rank_count("other") == (0, 66)
    rows = store.recall.rank_rows("default")
    assert [r.id for r in rows] == sorted(bodies) and {r.thread for r in rows if r.kind == "episode"} == {"run1"}
    assert store.integrity_check() == "ok"


def test_total_length_follows_writes_and_deletes(team_url: str, machine: Any, pg_admin_url: str,
                                                 project: str) -> None:
    v = machine("a", team_url)
    m = v.remember("knowledge", "a_fact", "deploy the queue")
    v.remember("knowledge", "b_fact", "cache cache")
    v.memories.update(m.id, content="deploy the queue after the freeze")
    v.memories.delete(m.id)
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        stored, counted = c.execute(
            f"SELECT (SELECT total_dl FROM {project}.gate_stats), (SELECT sum(cardinality(rank_body) + "
            f"cardinality(rank_ctx)) FROM {project}.rank_docs)").fetchone()
    assert stored == counted == 4  # "b fact cache cache"


# -- review 83 (F1): recall weighs by people's records; the server keeps the agents' part (migration 30) -----------
TEXTS = [("user", "default", "deploy the queue cache before the tenant shard"),
         ("user", "default", "token alert on the replica"), ("user", "default", "vacuum the replica queue"),
         ("user", "other", "tenant shard token deploy"), ("agent", "default", "deploy deploy queue token alert cache"),
         ("agent", "default", "cache cache shard vacuum"), ("agent", "scratch", "deploy queue timeout " * 3),
         ("agent", "scratch", "replica replica tenant"), ("agent", "default", "timeout alert verified later")]
PROMPT = "deploy the queue after a timeout alert on the replica?"


def _write(person: Any, agent: Any) -> dict[str, str]:
    """The records of :data:`TEXTS` (their keys by id), the last agent memory then verified by the person."""
    ids = {}
    for i, (who, mind, text) in enumerate(TEXTS):
        v = person if who == "user" else agent
        v = v if mind == "default" else v.with_mind(mind)
        ids[v.remember("knowledge", f"k{i}", text).id] = f"k{i}"
    person.memories.verify(next(i for i, k in ids.items() if k == f"k{len(TEXTS) - 1}"))
    return ids


def test_people_weights_are_the_same_on_both_backends(team_url: str, machine: Any, logins: dict[str, str],
                                                      tmp_path: Path) -> None:
    """The same vault, people's and agents' records in three minds (one verified since), on a team vault and a local
    one: the agents' part of every statistic is the same, and so is recall's answer and its BM25 (to the last bits
    the two summation orders allow)."""
    team = machine("a", team_url)
    bot = machine("bot", logins["agent"], actor="agent")
    (tmp_path / "local").mkdir()
    local = syn.open_vault(tmp_path / "local")
    local.settings.set("agent_writes_per_hour", 1000)
    keys = {"team": _write(team, bot), "local": _write(local, local.as_agent())}
    stats = {}
    for name, v in (("team", team), ("local", local)):
        rq = v._store.recall
        post = rq.postings(v.mind, WORDS)
        stats[name] = (rq.rank_totals(), rq.rank_totals(agents=True), rq.count(), rq.count(agents=True),
                       {w: (p.n_vault, p.n_agents) for w, p in post.items()})
    assert stats["team"] == stats["local"]
    assert stats["team"][1][0] == 4 and stats["team"][4]["deploy"] == (4, 2)  # of the 4 holding it, 2 agents'
    got = {}
    for name, v in (("team", team), ("local", local)):
        r = v.recall(PROMPT)
        got[name] = ([keys[name][k.id] for k in r.items],
                     [(keys[name][e.id], e.score, e.coverage) for e in r.explain()])
    assert got["team"][0] == got["local"][0] and got["team"][0]
    assert [k for k, _, _ in got["team"][1]] == [k for k, _, _ in got["local"][1]]
    assert [s for _, s, _ in got["team"][1]] == pytest.approx([s for _, s, _ in got["local"][1]], rel=1e-9)
    assert [c for _, _, c in got["team"][1]] == [c for _, _, c in got["local"][1]]
    assert team._store.integrity_check() == "ok"
    local.close()


def test_an_agent_logins_records_in_another_mind_leave_a_minds_recall_as_it_was(human: Any, machine: Any,
                                                                                  logins: dict[str, str]) -> None:
    """Review 83's idf_hide.py on a team vault: an agent login's records of the rule's words in its own mind leave
    the person's mind's recall byte for byte as it was; the server's agents' length follows its writes and a
    person's verify (integrity_check recounts it)."""
    rule = "Never deploy the billing queue on a Friday"
    with human.transaction():
        for i in range(40):
            human.remember("project", f"fact_{i}", " ".join(WORDS[(i + k) % len(WORDS)] for k in range(6)))
        human.decide(rule, rationale="the Friday queue outage")
    q = "can I deploy the billing queue on friday after the vacuum?"
    before = human.recall(q)
    assert rule in before.text
    bot = machine("bot", logins["agent"], actor="agent").with_mind("scratch")
    flood = [bot.remember("context", f"fri_{i}", "friday deploy billing queue friday deploy billing queue")
             for i in range(60)]
    after = human.recall(q)
    assert after.text == before.text
    rq = human._store.recall
    assert rq.rank_totals(agents=True) == (60, 60 * 10)  # "fri n" + 8 words, each memory's key and content
    human.with_mind("scratch").memories.verify(flood[0].id)
    assert rq.rank_totals(agents=True) == (59, 59 * 10) and human._store.integrity_check() == "ok"


def test_a_project_at_29_with_agent_records_is_counted_by_migration_30(pg_admin_url: str) -> None:
    """Migration 30 fills the agents' length from the records already stored, and ``rank_docs.agent`` reads each
    row's side."""
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    version = 30
    project = f"ars{uuid.uuid4().hex[:8]}"
    ts = "2026-01-01T00:00:00.000000Z"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:version - 1]) == (0, version - 1)
        c.execute(f"SET search_path = {project}")
        for i, (source, verified, text) in enumerate([("agent", 0, "deploy the queue"), ("agent", 1, "queue"),
                                                       ("user", 1, "a person's deploy"), ("agent", 0, "cache cache")]):
            c.execute("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, "
                      "confidence, created_at, updated_at, terms, rank_body) VALUES (%s, 'default', 'project', %s, "
                      "%s, '[]', 2, %s, %s, 1.0, %s, %s, '{}', stem_all(%s))",
                      (f"mem_{i:012x}", f"k{i}", text, source, verified, ts, ts, [f"k{i}", *text.split()]))
        assert c.execute("SELECT n_docs, agent_docs, total_dl FROM gate_stats").fetchone() == (4, 2, 13)
        assert migrate(c, project, MIGRATIONS[:version]) == (version - 1, version)
        c.execute(f"SET search_path = {project}")
        assert c.execute("SELECT agent_docs, agent_dl FROM gate_stats").fetchone() == (2, 7)  # 4 + 3 words
        assert c.execute("SELECT id FROM rank_docs WHERE agent ORDER BY id").fetchall() == [
            ("mem_000000000000",), ("mem_000000000003",)]
        c.execute(f"DROP SCHEMA {project} CASCADE")
