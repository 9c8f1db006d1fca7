"""Schema v4: the triggers queue their FTS5 writes and the connection applies them once per transaction.

What must hold: every FTS5 index ends up exactly as v3's per-row trigger writes left it (same postings, positions,
document sizes, bm25 scores); a read inside a write transaction sees the transaction's own writes; a v2 or v3 vault
migrates; and the point of it all, a batch of upserts writes one FTS5 segment per index instead of one per row.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from conftest import downgrade

import synapse_nb as syn
from synapse_nb.store import sqlite as store
from synapse_nb.store.rankwords import CONTEXT_SEP
from synapse_nb.store.sqlite.schema import FTS_TABLES

TS = "2026-01-01T00:00:00.000000Z"
WORDS = ("deploy release canary rollback migrations database index query cache ann bob lake camping garage "
         "running runs tests fixture café naïve").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _workload(seed: int, n_tx: int = 12) -> list[list[tuple[str, tuple]]]:
    """Transactions of raw statements on every kind table: inserts, updates (text, tags, thread moves), deletes."""
    rng = random.Random(seed)
    live: dict[str, list[str]] = {k: [] for k in ("memories", "episodes", "notes", "decisions", "lessons",
                                                   "checkpoints")}
    txs: list[list[tuple[str, tuple]]] = []
    n = 0
    for _ in range(n_tx):
        tx: list[tuple[str, tuple]] = []
        for _ in range(rng.randint(5, 40)):
            table = rng.choice(list(live))
            ids = live[table]
            op = rng.random()
            if op < 0.55 or not ids:
                n += 1
                rid = f"{table[:3]}_{n:012x}"
                ids.append(rid)
                mind = rng.choice(["default", "default", "other"])
                if table == "memories":
                    tx.append((("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, "
                                "verified, confidence, created_at, updated_at) "
                                "VALUES (?,?,?,?,?,?,2,'user',1,1.0,?,?)"),
                               (rid, mind, "project", f"key_{n}", _text(rng, 8),
                                f'["{rng.choice(WORDS)}", "t{n % 3}"]', TS, TS)))
                elif table == "episodes":
                    thread = rng.choice(["t1", "t2", None])
                    tx.append((("INSERT INTO episodes(id, mind, task_key, status, outcome, refs, source, created_at, "
                                "updated_at, thread, seq, actor) VALUES (?,?,?,'success',?,'[]','user',?,?,?,?,?)"),
                               (rid, "default", f"task_{n % 4}", _text(rng, 6), TS, TS, thread,
                                rng.randrange(20) if thread else None, rng.choice(["ann", "bob", None]))))
                elif table == "notes":
                    tx.append((("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at) "
                                "VALUES (?,?,?,?,?,'user',?,?)"), (rid, mind, f"note_{n}", _text(rng, 3),
                                                                    _text(rng, 5), TS, TS)))
                elif table == "decisions":
                    tx.append((("INSERT INTO decisions(id, mind, decision, rationale, tags, source, created_at, "
                                "updated_at) VALUES (?,?,?,?,'[\"db\"]','user',?,?)"),
                               (rid, mind, _text(rng, 4), _text(rng, 6), TS, TS)))
                elif table == "lessons":
                    tx.append((("INSERT INTO lessons(id, mind, status, summary, analysis, source, created_at, "
                                "updated_at) VALUES (?,?,'pending',?,?,'user',?,?)"),
                               (rid, mind, _text(rng, 4), _text(rng, 6), TS, TS)))
                else:
                    tx.append((("INSERT INTO checkpoints(id, mind, doing, changed_files, origin, source, created_at, "
                                "updated_at) VALUES (?,?,?,'[\"src/a.py\"]','api','user',?,?)"),
                               (rid, mind, _text(rng, 5), TS, TS)))
            elif op < 0.85:
                rid = rng.choice(ids)
                col = {"memories": "content", "episodes": "outcome", "notes": "body", "decisions": "rationale",
                       "lessons": "analysis", "checkpoints": "doing"}[table]
                tx.append((f"UPDATE {table} SET {col} = ? WHERE id = ?", (_text(rng, 5), rid)))
                if table == "episodes" and rng.random() < 0.5:
                    t = rng.choice(["t1", "t2", None])
                    tx.append(("UPDATE episodes SET thread = ?, seq = ? WHERE id = ?",
                               (t, rng.randrange(20) if t else None, rid)))
            else:
                rid = ids.pop(rng.randrange(len(ids)))
                tx.append((f"DELETE FROM {table} WHERE id = ?", (rid,)))
        txs.append(tx)
    return txs


def _v3_db(path: Path) -> sqlite3.Connection:
    """A vault database with schema v3 exactly (per-row FTS5 writes by triggers), built by its own migrations."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for v in (0, 1, 2):
        for stmt in store.split_sql(store.MIGRATIONS[v]):
            conn.execute(stmt)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("COMMIT")
    return conn


#: The FTS5 tables of schemas v8 and v13 (agents' words and ranking statistics, agent_vocab_schema.py and
#: agent_rank_schema.py): v3 has none, and the workload above is a person's only, so they stay empty
#: (test_the_agents_words_are_exactly_their_unverified_records_words checks them).
V8_FTS = ("agent_vocab_fts", "agent_rank_fts")


def _index_state(path: Path) -> dict[str, list[tuple]]:
    """Every FTS5 index's postings with positions, its document sizes, and bm25 scores of each word (those of v3:
    every later one holds an agent's records only, and the workload writes none)."""
    conn = sqlite3.connect(path)
    out: dict[str, list[tuple]] = {}
    for t in FTS_TABLES:
        if t in V8_FTS:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone():
                assert conn.execute(f"SELECT count(*) FROM {t}_docsize").fetchone() == (0,), t
            continue
        conn.execute(f"CREATE VIRTUAL TABLE temp.vi_{t} USING fts5vocab(main, {t}, 'instance')")
        out[f"{t} postings"] = conn.execute(f"SELECT term, doc, col, offset FROM temp.vi_{t} "
                                            "ORDER BY term, doc, col, offset").fetchall()
        out[f"{t} docsize"] = conn.execute(f"SELECT id, sz FROM {t}_docsize ORDER BY id").fetchall()
        out[f"{t} bm25"] = [(w, *r) for w in ("deploy", "canary", "run", "naive", "cafe", "t1")
                            for r in conn.execute(f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH ? "
                                                  "ORDER BY rowid", (f'"{w}"',))]
    for table in ("gate_docs", "tags", "index_outbox"):
        out[table] = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
    # v12 joins a context's bodies with CONTEXT_SEP, v3 with a space: the same words to every tokenizer
    out["gate_docs"] = [tuple(v.replace(CONTEXT_SEP, " ") if isinstance(v, str) else v for v in r)
                        for r in out["gate_docs"]]
    conn.close()
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_queued_fts_writes_leave_every_index_exactly_as_per_row_triggers(tmp_path: Path, seed: int) -> None:
    txs = _workload(seed)
    old = _v3_db(tmp_path / "v3" / "synapse.db")
    for tx in txs:
        old.execute("BEGIN IMMEDIATE")
        for sql, params in tx:
            old.execute(sql, params)
        old.execute("COMMIT")
    old.close()
    (tmp_path / "v4").mkdir()
    new = store.SqliteStore(tmp_path / "v4" / "synapse.db")
    assert new.schema_version == store.SCHEMA_VERSION >= 4
    for tx in txs:
        with new.transaction() as c:
            for sql, params in tx:
                c.execute(sql, params)
        assert new.query_one("SELECT count(*) FROM fts_queue")[0] == 0  # applied by the commit
    new.close()
    before, after = _index_state(tmp_path / "v3" / "synapse.db"), _index_state(tmp_path / "v4" / "synapse.db")
    assert before.keys() == after.keys()
    for k in before:
        assert after[k] == before[k], k
    assert sum(len(v) for k, v in after.items() if k.endswith("postings")) > 1000  # the workload indexed a lot
    conn = sqlite3.connect(tmp_path / "v4" / "synapse.db")
    for t in ("gate_vocab", "rank_fts"):  # external content: the index agrees with gate_docs
        conn.execute(f"INSERT INTO {t}({t}, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_a_read_inside_a_write_transaction_sees_its_own_writes(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    s = v._store
    v.remember("project", "base", "the release train leaves on monday")
    with v.transaction():
        m = v.remember("project", "lake", "ann went camping by the lake", tags=["trip"])
        assert s.query_one("SELECT count(*) FROM fts_queue")[0] > 0  # queued, not yet applied
        assert [x.id for x in v.memories.search("camping")] == [m.id]  # memories_fts
        assert [h.id for h in s.recall.bm25(v.mind, ["camp"], depth=5)] == [m.id]  # rank_fts, porter
        assert s.recall.doc_freq(["lake"])["lake"] == 1  # gate_vocab
        v.remember("project", "lake", "bob stayed in the garage")  # update in place, then read again
        assert v.memories.search("camping") == [] and len(v.memories.search("garage")) == 1
    assert s.query_one("SELECT count(*) FROM fts_queue")[0] == 0
    with pytest.raises(RuntimeError), v.transaction():
        v.remember("project", "gone", "a rolled back kayak")
        raise RuntimeError("roll back")
    assert v.memories.search("kayak") == [] and s.query_one("SELECT count(*) FROM fts_queue")[0] == 0
    assert s.recall.doc_freq(["kayak"]).get("kayak", 0) == 0


def test_a_batch_of_upserts_writes_one_segment_per_index(tmp_path: Path) -> None:
    """The write-path property behind the upsert rate: FTS5 flushes its pending index at every statement savepoint,
    so per-row FTS5 writes gave one segment per row (merged again and again); queued, a batch gives one."""
    v = syn.open_vault(tmp_path)
    s = v._store
    with s.transaction() as c:
        for t in ("memories_fts", "gate_vocab", "rank_fts"):
            c.execute(f"INSERT INTO {t}({t}, rank) VALUES ('automerge', 0)")
            c.execute(f"INSERT INTO {t}({t}, rank) VALUES ('crisismerge', 2000)")
    with v.transaction():
        for i in range(200):
            v.remember("knowledge", f"fact_{i}", f"fact number {i} about the deploy pipeline", tags=["x"])
    for t in ("memories_fts", "gate_vocab", "rank_fts"):
        assert s.query_one(f"SELECT count(DISTINCT segid) FROM {t}_idx")[0] == 1, t
    assert len(v.memories.search("pipeline", limit=500)) == 200


def test_a_v3_vault_migrates_to_v4_and_keeps_its_indexes(tmp_path: Path) -> None:
    d = tmp_path / ".synapse"
    old = _v3_db(d / "synapse.db")
    old.execute("BEGIN IMMEDIATE")
    for sql, params in _workload(3, n_tx=1)[0]:
        old.execute(sql, params)
    old.execute("COMMIT")
    old.close()
    before = _index_state(d / "synapse.db")
    v = syn.open_vault(d)
    s = v._store
    assert s.schema_version == store.SCHEMA_VERSION == 15
    assert _index_state(d / "synapse.db") == before  # the migration rewrites no index
    m = v.remember("project", "kayak", "ann went kayaking on the fjord")
    assert [x.id for x in v.memories.search("kayaking")] == [m.id]
    assert [h.id for h in s.recall.bm25(v.mind, ["kayak"], depth=50)] == [m.id]  # porter: kayaking -> kayak
    with s.transaction() as c:
        for t in ("gate_vocab", "rank_fts"):
            c.execute(f"INSERT INTO {t}({t}, rank) VALUES ('integrity-check', 1)")
    assert s.integrity_check() == "ok"


def test_every_fts5_table_is_named_so_reads_apply_the_queue(tmp_path: Path) -> None:
    """Database applies the queue before a statement containing one of FTS_MARKERS: every FTS5 and fts5vocab table
    of the schema must carry one in its name, and be a target of the queue (or a vocab table over one)."""
    from synapse_nb.store.sqlite.schema import FTS_MARKERS
    s = store.SqliteStore(tmp_path / "synapse.db")
    virtual = [(r[0], r[1]) for r in s.query("SELECT name, sql FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'")]
    assert len(virtual) >= 9
    for name, sql in virtual:
        assert any(m in name for m in FTS_MARKERS), name
        if "fts5vocab" not in sql:
            assert name in FTS_TABLES, name
    assert set(FTS_TABLES) == {n for n, sql in virtual if "fts5vocab" not in sql}


def test_recall_postings_read_inside_a_write_transaction_see_its_queued_writes(tmp_path: Path) -> None:
    """Recall reads postings through a TEMP fts5vocab table created at run time (not in the schema above): its
    name carries a marker too, so a read inside a write transaction applies the queue first."""
    from synapse_nb.store.sqlite.ranking import RANK_INSTANCES
    from synapse_nb.store.sqlite.schema import FTS_MARKERS
    assert any(m in RANK_INSTANCES for m in FTS_MARKERS)
    v = syn.open_vault(tmp_path)
    v.remember("knowledge", "a", "pelicans migrate in spring")
    st = v._store
    st.recall.postings(v.mind, ["pelican"])  # the TEMP table exists from here on: its CREATE is not re-run
    with st.transaction():
        v.remember("knowledge", "b", "pelicans nest on islands")
        assert st.recall.postings(v.mind, ["pelican"])["pelican"].n_vault == 2
    assert st.recall.postings(v.mind, ["pelican"])["pelican"].n_vault == 2


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_agents_words_are_exactly_their_unverified_records_words(tmp_path: Path, seed: int) -> None:
    """Schema v8 (review 22): ``agent_vocab_fts`` and ``agent_gids`` hold the gate text of exactly the agents'
    unverified records, whatever a transaction does to them (a record written by either, verified, edited back to
    unverified, handed to a person, deleted), so people's statistics (``count`` and ``doc_freq`` less their
    ``agents=True`` counts) are a recount of people's records; and a vault of v7 migrates with its agents' records
    counted."""
    from synapse_nb.store.sql.authors import agents_case

    rng = random.Random(seed)
    s = store.SqliteStore(tmp_path / "synapse.db")
    live: dict[str, list[str]] = {"memories": [], "decisions": [], "notes": []}
    for n in range(200):
        table = rng.choice(list(live))
        ids, src = live[table], rng.choice(["user", "agent", "agent"])
        with s.transaction() as c:
            op = rng.random()
            if op < 0.5 or not ids:
                rid = f"{table[:3]}_{n:012x}"
                ids.append(rid)
                if table == "memories":
                    c.execute("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, "
                              "verified, confidence, created_at, updated_at) "
                              "VALUES (?,?,'project',?,?,'[]',2,?,?,1.0,?,?)",
                              (rid, rng.choice(["default", "other"]), f"key_{n}", _text(rng, 6), src,
                               int(src == "user" or rng.random() < 0.3), TS, TS))
                elif table == "decisions":
                    c.execute("INSERT INTO decisions(id, mind, decision, rationale, tags, source, created_at, "
                              "updated_at) VALUES (?,'default',?,?,'[]',?,?,?)",
                              (rid, _text(rng, 3), _text(rng, 4), src, TS, TS))
                else:
                    c.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at) "
                              "VALUES (?,'default',?,?,?,?,?,?)", (rid, f"note_{n}", _text(rng, 3), "b", src, TS, TS))
            elif op < 0.85:
                rid = rng.choice(ids)
                col = {"memories": "content", "decisions": "rationale", "notes": "trigger"}[table]
                if table == "memories" and rng.random() < 0.5:  # verified set or cleared, the text kept
                    c.execute("UPDATE memories SET verified = ? WHERE id = ?", (rng.randint(0, 1), rid))
                elif rng.random() < 0.3:  # the record changes hands (a person's remember over an agent's key)
                    c.execute(f"UPDATE {table} SET source = ?, {col} = ? WHERE id = ?", (src, _text(rng, 4), rid))
                else:
                    c.execute(f"UPDATE {table} SET {col} = ? WHERE id = ?", (_text(rng, 4), rid))
            else:
                c.execute(f"DELETE FROM {table} WHERE id = ?", (ids.pop(rng.randrange(len(ids))),))

    def recount(db: store.SqliteStore) -> tuple[int, dict[str, int]]:
        db.query("CREATE VIRTUAL TABLE IF NOT EXISTS temp.people_fts USING fts5(body, "
                 "tokenize='unicode61 remove_diacritics 2')")
        db.query("CREATE VIRTUAL TABLE IF NOT EXISTS temp.people_vocab USING fts5vocab(temp, people_fts, 'row')")
        db.query("DELETE FROM temp.people_fts")
        db.query(f"INSERT INTO temp.people_fts(body) SELECT d.body FROM gate_docs d "
                 f"WHERE NOT ({agents_case('d.kind', 'd.rid')})")
        return (int(db.query_one("SELECT count(*) FROM temp.people_fts")[0]),
                {r[0]: int(r[1]) for r in db.query("SELECT term, doc FROM temp.people_vocab")})

    everything = [*sorted(WORDS), "key", "note", "b"]

    def counted(db: store.SqliteStore) -> tuple[int, dict[str, int]]:
        every, agents = db.recall.doc_freq(everything), db.recall.doc_freq(everything, agents=True)
        return (db.recall.count() - db.recall.count(agents=True),
                {w: k - agents.get(w, 0) for w, k in every.items() if k > agents.get(w, 0)})

    n, people = recount(s)
    assert 0 < n < s.recall.count() and counted(s) == (n, {w: k for w, k in people.items() if w in everything})
    s.query("INSERT INTO agent_vocab_fts(agent_vocab_fts, rank) VALUES ('integrity-check', 1)")
    s.close()
    # a v7 vault: v8's objects dropped, then a writable open migrates and counts the agents' records already there
    conn = sqlite3.connect(tmp_path / "synapse.db")
    downgrade(conn, 7)
    conn.close()
    again = store.SqliteStore(tmp_path / "synapse.db")
    assert again.schema_version == store.SCHEMA_VERSION == 15
    assert counted(again) == (n, {w: k for w, k in people.items() if w in everything})
