"""Recall engine v2's ranking reads on a team vault (migration 3): BM25 equal to SQLite FTS5's ``bm25()`` on the
same documents (words whose stems both stemmers agree on), thread contexts, counts, rows."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
import pytest

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
