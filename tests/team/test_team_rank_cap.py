"""Review 75 F1 on a team vault: a record's ranking words hold each distinct word at most MAX_WORD_REPEATS times, the
rule of a local vault's index (schema v12), so a vault ranks alike on both backends; the migration caps the rows
written before."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

import synapse_nb as syn
from synapse_nb.store.postgres.dialect import rank_tokens
from synapse_nb.store.rankwords import MAX_WORD_REPEATS

TEXTS = [("spam", "deploy " * 200 + "billing"), ("short", "deploy billing twice deploy"),
         ("queues", "queue cache " * 50 + "deploy"), ("plain", "the cache of the queue"),
         ("tokens", "token alert token vacuum " * 12)]
QUERIES = (["deploy"], ["deploy", "billing"], ["queue"], ["cache", "deploy"], ["token", "alert"])


def _by_key(v: syn.Vault) -> dict[str, str]:
    ids = {}
    with v.transaction():
        for key, text in TEXTS:
            ids[v.remember("knowledge", key, text).id] = key
    return ids


def test_a_record_of_repeated_words_ranks_alike_on_both_backends(team_url: str, machine: Any, tmp_path: Path,
                                                                  pg_admin_url: str, project: str) -> None:
    team = machine("a", team_url)
    (tmp_path / "local").mkdir()
    local = syn.open_vault(tmp_path / "local")
    keys = {"team": _by_key(team), "local": _by_key(local)}
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        body = dict(c.execute(f"SELECT key, rank_body FROM {project}.memories").fetchall())
    assert body["spam"].count("deploy") == MAX_WORD_REPEATS  # of 200
    assert body["queues"].count("queue") == MAX_WORD_REPEATS + 1  # of 50, and its key: words are capped, not stems
    for query in QUERIES:
        got = {}
        for name, v in (("team", team), ("local", local)):
            hits = v._store.recall.bm25(v.mind, query, depth=50)
            got[name] = [(keys[name][h.id], h.score) for h in hits]
        assert [k for k, _ in got["team"]] == [k for k, _ in got["local"]], query
        assert [s for _, s in got["team"]] == pytest.approx([s for _, s in got["local"]], rel=1e-9), query
    lengths = {name: {keys[name][r.id]: r.length for r in v._store.recall.rank_rows(v.mind)}
               for name, v in (("team", team), ("local", local))}
    assert lengths["team"] == lengths["local"] and lengths["team"]["spam"] == MAX_WORD_REPEATS + 2
    assert team._store.recall.rank_totals() == local._store.recall.rank_totals()
    local.close()


def test_the_migration_caps_the_rows_written_before(pg_admin_url: str) -> None:
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"rcap{uuid.uuid4().hex[:8]}"
    last = 28
    rows = [("mem_000000000001", "deploy " * 100 + "Deploys deployed"), ("mem_000000000002", "café " * 50),
            ("mem_000000000003", "an ordinary fact about the queue")]
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:last - 1]) == (0, last - 1)
        c.execute(f"SET search_path = {project}")
        ts = c.execute("SELECT next_stamp()").fetchone()
        assert ts is not None
        for rid, text in rows:  # every occurrence, as the package wrote rank_body before
            c.execute("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, "
                      "confidence, created_at, updated_at, terms, rank_body) VALUES (%s, 'default', 'knowledge', "
                      "%s, %s, '[]', 2, 'user', 1, 1.0, %s, %s, '{}', stem_all(%s))",
                      (rid, rid[-1], text, ts[0], ts[0], [rid[-1], *text.lower().split()]))
        body = dict(c.execute("SELECT id, rank_body FROM memories").fetchall())
        assert body["mem_000000000001"].count("deploy") == 102
        assert migrate(c, project, MIGRATIONS[:last]) == (last - 1, last)
        c.execute(f"SET search_path = {project}")
        stems = {r[0]: r[1] for r in c.execute(
            "SELECT m.id, stem_all(%s) FROM memories m WHERE m.id = 'mem_000000000001'",
            (rank_tokens("1 " + rows[0][1] + " "),)).fetchall()}
        body = dict(c.execute("SELECT id, rank_body FROM memories").fetchall())
        assert body["mem_000000000001"] == stems["mem_000000000001"]  # ASCII: the package's rule, exactly
        assert body["mem_000000000001"].count("deploy") == MAX_WORD_REPEATS + 2  # deploy 32, deploys, deployed
        assert body["mem_000000000002"].count("café") == MAX_WORD_REPEATS  # by stem
        assert len(body["mem_000000000003"]) == 7  # not over the cap: as it was
        total, counted = c.execute("SELECT (SELECT total_dl FROM gate_stats), (SELECT sum(cardinality(rank_body) + "
                                   "cardinality(rank_ctx)) FROM rank_docs)").fetchone()
        assert total == counted
        c.execute(f"DROP SCHEMA {project} CASCADE")
