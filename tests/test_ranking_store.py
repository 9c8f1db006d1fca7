"""Schema v3: the ranking table (gate_docs + context, rank_fts) and its migration from v1 and v2."""

from __future__ import annotations

import gzip
import random
import sqlite3
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.store import sqlite as store
from synapse_nb.store.rankwords import CONTEXT_SEP
from synapse_nb.store.records import RankRow

FIXTURES = Path(__file__).parent / "fixtures"
TS = "2026-01-01T00:00:00.000000Z"


def _expected_contexts(s: store.SqliteStore) -> dict[str, str]:
    """Context as the contract defines it, computed in Python from the rows: the two records before it in its
    thread, for a person's record the two people's records before it (an agent's episode left out: review 70), joined
    by CONTEXT_SEP (v12: each body's words are capped on their own, review 75)."""
    rows = [tuple(r) for r in s.query("SELECT d.rid, d.mind, d.thread, d.seq, d.body, e.source = 'agent' "
                                      "FROM gate_docs d LEFT JOIN episodes e ON e.id = d.rid")]
    out = {r[0]: "" for r in rows}
    threads: dict[tuple[str, str], list[tuple]] = {}
    for r in rows:
        if r[2] is not None:
            threads.setdefault((r[1], r[2]), []).append(r)
    for members in threads.values():
        members.sort(key=lambda r: (r[3], r[0]))
        for i, r in enumerate(members):
            before = members[:i] if r[5] else [p for p in members[:i] if not p[5]]
            out[r[0]] = CONTEXT_SEP.join(p[4].replace(CONTEXT_SEP, " ") for p in before[-2:]).strip(" " + CONTEXT_SEP)
    return out


def _contexts(s: store.SqliteStore) -> dict[str, str]:
    return {r[0]: r[1] for r in s.query("SELECT rid, context FROM gate_docs")}


def _fts_ok(s: store.SqliteStore) -> None:
    with s.transaction() as c:
        c.execute("INSERT INTO rank_fts(rank_fts, rank) VALUES ('integrity-check', 1)")


def test_triggers_keep_every_context_exact_through_random_writes(tmp_path: Path) -> None:
    """People's and agents' episodes written, moved, edited, flipped between the two and deleted: every context is
    what a rebuild from the rows gives (a person's skips the agents' episodes)."""
    rng = random.Random(7)
    v = syn.open_vault(tmp_path)
    agent = v.as_agent()
    v.settings.set("agent_writes_per_hour", 10_000)
    s = v._store
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
    live: list[str] = []
    for step in range(300):
        op = rng.random()
        if op < 0.55 or not live:
            thread = rng.choice(["t1", "t2", None])
            e = rng.choice([v, agent]).episodes.log(
                f"k{step}", outcome=" ".join(rng.sample(words, 3)), thread=thread,
                seq=rng.randrange(30) if thread and rng.random() < 0.5 else None, actor=rng.choice(["ann", "bob"]))
            live.append(e.id)
        elif op < 0.8:
            rid = rng.choice(live)
            with s.transaction() as c:
                if rng.random() < 0.15:  # an agent's episode becomes a person's, or the reverse
                    c.execute("UPDATE episodes SET source = CASE source WHEN 'agent' THEN 'user' ELSE 'agent' END "
                              "WHERE id = ?", (rid,))
                elif rng.random() < 0.5:
                    c.execute("UPDATE episodes SET outcome = ? WHERE id = ?", (" ".join(rng.sample(words, 2)), rid))
                else:
                    t = rng.choice(["t1", "t2", None])
                    c.execute("UPDATE episodes SET thread = ?, seq = ? WHERE id = ?",
                              (t, rng.randrange(30) if t else None, rid))
        else:
            rid = live.pop(rng.randrange(len(live)))
            with s.transaction() as c:
                c.execute("DELETE FROM episodes WHERE id = ?", (rid,))
        if step % 50 == 0:
            assert _contexts(s) == _expected_contexts(s), step
    assert _contexts(s) == _expected_contexts(s)
    _fts_ok(s)
    assert s.integrity_check() == "ok"


def test_a_v10_vault_migrates_to_contexts_that_leave_agents_episodes_out(tmp_path: Path) -> None:
    """Schema v11 (review 70): a vault an older synapse_nb left, where two agent's episodes sort just before a
    person's answer and fill its context, opens with the answer's context the question again, every context exact,
    and its FTS5 index whole: the answer is found for the question's words, not for the agent's."""
    from conftest import downgrade

    v = syn.open_vault(tmp_path)
    agent = v.as_agent()
    v.episodes.log("chat", outcome="where should we go camping", thread="s1", actor="Ann")
    bob = v.episodes.log("chat", outcome="the lake, leave at seven", thread="s1", actor="Bob")
    planted = []
    while len(planted) < 2:
        e = agent.episodes.log("chat", outcome="bitcoin giveaway", thread="s1", seq=bob.seq, actor="agent")
        if e.id < bob.id:
            planted.append(e.id)
    v.close()
    conn = sqlite3.connect(tmp_path / ".synapse" / "synapse.db")
    downgrade(conn, 10)
    assert "bitcoin" in dict(conn.execute("SELECT rid, context FROM gate_docs").fetchall())[bob.id]  # v10's rule
    conn.close()
    again = syn.open_vault(tmp_path)
    s = again._store
    assert s.schema_version == store.SCHEMA_VERSION == 15
    assert _contexts(s)[bob.id] == "chat where should we go camping" and _contexts(s) == _expected_contexts(s)
    _fts_ok(s)
    assert bob.id in {h.id for h in s.recall.bm25(again.mind, ["camping"], depth=10)}
    # every match (ids are random: finding two planted before bob can take dozens of agent episodes, more than 10)
    bitcoin = {h.id for h in s.recall.bm25(again.mind, ["bitcoin"], depth=10_000)}
    assert bob.id not in bitcoin
    assert all(p in bitcoin for p in planted)
    assert s.integrity_check() == "ok"


def test_bm25_orders_by_score_then_id_within_the_mind(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    other = syn.open_vault(tmp_path, mind="other")
    a = v.episodes.log("chat", outcome="Where did you go camping?", thread="s1", actor="Ann")
    b = v.episodes.log("chat", outcome="Up in the mountains, last week.", thread="s1", actor="Bob")
    v.memories.remember("project", "gear", "camping gear lives in the garage")
    other.memories.remember("project", "gear", "camping camping camping")
    s = v._store
    hits = s.recall.bm25(v.mind, ["camping"], depth=10)
    assert hits[0].id == a.id and len(hits) == 3  # b matches through its context only
    assert b.id in {h.id for h in hits}
    assert all(h.score > 0 for h in hits)
    assert [(-h.score, h.id) for h in hits] == sorted((-h.score, h.id) for h in hits)
    assert s.recall.bm25(v.mind, [], depth=10) == []
    assert s.recall.bm25(v.mind, ["not", "or", "near"], depth=10) == []  # FTS5 keywords are plain words
    assert s.recall.rank_count(v.mind) == (3, 4)
    rows = s.recall.rank_rows(v.mind)
    assert [r.id for r in rows] == sorted(r.id for r in rows)
    assert RankRow("episode", a.id, "s1", 0, "Ann", True, 6) in [r._replace(doc=-1) for r in rows]  # 6 tokens


def _v2_vault(path: Path) -> None:
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    for v in (0, 1):
        for stmt in store.split_sql(store.MIGRATIONS[v]):
            conn.execute(stmt)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO episodes(id, mind, task_key, status, outcome, refs, source, created_at, updated_at) "
                 "VALUES ('epi_0123456789ab', 'default', 'deploy', 'success', 'rolled out the canary', '[]', "
                 f"'user', '{TS}', '{TS}')")
    conn.execute("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, "
                 "confidence, created_at, updated_at) VALUES ('mem_0123456789ab', 'other', 'project', 'db', "
                 f"'migrations run with alembic', '[\"db\"]', 2, 'user', 1, 1.0, '{TS}', '{TS}')")
    conn.commit()
    conn.close()


def test_v2_vault_migrates_to_v4_with_a_ranking_table(tmp_path: Path) -> None:
    path = tmp_path / ".synapse" / "synapse.db"
    _v2_vault(path)
    v = syn.open_vault(tmp_path / ".synapse")
    s = v._store
    assert s.schema_version == store.SCHEMA_VERSION == 15
    assert [tuple(r) for r in s.query("SELECT rid, mind, kind, context FROM gate_docs ORDER BY rid")] == [
        ("epi_0123456789ab", "default", "episode", ""), ("mem_0123456789ab", "other", "memory", "")]
    assert [h.id for h in s.recall.bm25("default", ["canary"], depth=5)] == ["epi_0123456789ab"]
    assert [h.id for h in s.recall.bm25("other", ["migration"], depth=5)] == ["mem_0123456789ab"]  # porter
    assert s.recall.bm25("default", ["migration"], depth=5) == []
    _fts_ok(s)
    # the new triggers run on the migrated vault: a threaded episode gets its context
    v.episodes.log("deploy", outcome="canary is green", thread="rollout")
    e = v.episodes.log("deploy", outcome="promoted", thread="rollout")
    assert e.seq == 1 and _contexts(s)[e.id] == "deploy canary is green"
    assert _contexts(s) == _expected_contexts(s)


def test_v1_fixture_migrates_and_ranks(tmp_path: Path) -> None:
    d = tmp_path / ".synapse"
    d.mkdir()
    (d / "synapse.db").write_bytes(gzip.decompress((FIXTURES / "vault_schema_v1.db.gz").read_bytes()))
    v = syn.open_vault(d)
    s = v._store
    assert s.schema_version == store.SCHEMA_VERSION
    n = s.query_one("SELECT count(*) FROM gate_docs WHERE mind = '' OR kind = ''")[0]
    assert n == 0  # every row got its mind and kind
    assert s.recall.bm25(v.mind, ["migrations"], depth=5)
    _fts_ok(s)


def test_episode_structure_is_checked_and_exported(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    with pytest.raises(syn.ValidationError, match="thread"):
        v.episodes.log("x", seq=3)
    with pytest.raises(syn.ValidationError, match="seq"):
        v.episodes.log("x", thread="t", seq=-1)
    with pytest.raises(syn.ValidationError, match="actor"):
        v.episodes.log("x", thread="t", actor="  ")
    e = v.episodes.log("x", thread="t", actor="Ann", outcome="hello")
    plain = v.episodes.log("y")
    lines = v.export_jsonl().splitlines()
    assert any('"thread": "t"' in ln and '"actor": "Ann"' in ln for ln in lines)
    assert not any(plain.id in ln and '"thread"' in ln for ln in lines)  # unset optional fields are left out
    (tmp_path / "copy").mkdir()
    w = syn.open_vault(tmp_path / "copy")
    w.import_jsonl(lines, trust=True)
    got = w.episodes.get(e.id)
    assert (got.thread, got.seq, got.actor) == ("t", 0, "Ann")
