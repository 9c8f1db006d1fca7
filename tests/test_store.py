"""The SQLite store: transactions (nesting, rollback, after-commit), FTS kept in sync by triggers, the tags side
table, and lookups whose cost does not grow with the vault (counted in SQLite VM steps, not timed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.store.sqlite import SCHEMA_VERSION, Store, _split_sql


def test_transaction_commit_rollback_and_nesting(tmp_path: Path) -> None:
    s = Store(tmp_path / "synapse.db")
    with s.transaction() as c:
        c.execute("INSERT INTO meta(key, value) VALUES ('a', '1')")
        with s.transaction() as c2:  # joins the outer one
            assert s.in_transaction
            c2.execute("INSERT INTO meta(key, value) VALUES ('b', '2')")
    assert not s.in_transaction
    assert s.query_one("SELECT value FROM meta WHERE key = 'b'")["value"] == "2"
    with pytest.raises(RuntimeError), s.transaction() as c:
        c.execute("INSERT INTO meta(key, value) VALUES ('c', '3')")
        with s.transaction() as c2:
            c2.execute("INSERT INTO meta(key, value) VALUES ('d', '4')")
        raise RuntimeError("boom")
    assert s.query("SELECT key FROM meta WHERE key IN ('c', 'd')") == []
    assert not s.in_transaction
    s.close()


def test_after_commit_runs_once_after_commit_and_not_after_rollback(tmp_path: Path) -> None:
    s = Store(tmp_path / "synapse.db")
    calls: list[str] = []
    with s.transaction():
        s.after_commit(lambda: calls.append("x"))
        with s.transaction():
            s.after_commit(lambda: calls.append("y"))
        assert calls == []
    assert calls == ["x", "y"]
    with pytest.raises(ValueError), s.transaction():
        s.after_commit(lambda: calls.append("never"))
        raise ValueError
    assert calls == ["x", "y"]
    s.after_commit(lambda: calls.append("now"))  # outside a transaction: immediately
    assert calls == ["x", "y", "now"]


def test_vault_batch_is_all_or_nothing(vault: syn.Vault) -> None:
    before = vault.export_jsonl()
    with pytest.raises(syn.ValidationError), vault.transaction():
        vault.remember("project", "a", "1")
        vault.checkpoint("c")
        vault.remember("project", "b", "")  # refused: the whole batch rolls back
    assert vault.export_jsonl() == before
    with vault.transaction():
        for i in range(50):
            vault.remember("knowledge", f"fact_{i}", f"value {i}")
    assert vault.memories.count() == 50


def test_on_change_listeners_hear_committed_writes_only(vault: syn.Vault) -> None:
    heard: list[list[tuple[str, str, bool]]] = []
    vault.on_change(heard.append)
    m = vault.remember("project", "a", "1")
    assert heard == [[("memory", m.id, False)]]
    with pytest.raises(syn.ValidationError), vault.transaction():
        vault.remember("project", "b", "2")
        vault.remember("project", "c", "")
    assert len(heard) == 1
    with vault.transaction():
        c = vault.checkpoint("x")
        vault.memories.delete(m.id)
    assert heard[-1] == sorted([("checkpoint", c.id, False), ("memory", m.id, True)])


def _fts_ids(vault: syn.Vault, table: str, word: str) -> list[str]:
    rows = vault._store.query(f"SELECT t.id FROM {table}_fts f JOIN {table} t ON t.rowid = f.rowid "
                              f"WHERE {table}_fts MATCH ? ORDER BY t.id", (f'"{word}"',))
    return [r["id"] for r in rows]


def test_fts_follows_insert_update_delete(vault: syn.Vault) -> None:
    m = vault.remember("project", "alpha_key", "zebra content", tags=["tagone"])
    assert _fts_ids(vault, "memories", "zebra") == [m.id]
    assert _fts_ids(vault, "memories", "alpha") == [m.id]  # key words are indexed
    assert _fts_ids(vault, "memories", "tagone") == [m.id]
    vault.remember("project", "alpha_key", "giraffe content", tags=["tagtwo"])
    assert _fts_ids(vault, "memories", "zebra") == [] and _fts_ids(vault, "memories", "giraffe") == [m.id]
    assert _fts_ids(vault, "memories", "tagone") == []
    vault.memories.delete(m.id)
    assert _fts_ids(vault, "memories", "giraffe") == []
    n = vault.notes.add("okapi_note", "trigger word", "body word")
    assert _fts_ids(vault, "notes", "okapi") == [n.id] and _fts_ids(vault, "notes", "body") == [n.id]
    vault.notes.delete("okapi_note")
    assert _fts_ids(vault, "notes", "okapi") == []
    les = vault.lessons.create("lemur summary")
    vault.lessons.submit_analysis(les.id, "tapir analysis")
    assert _fts_ids(vault, "lessons", "tapir") == [les.id]
    vault.lessons.reject(les.id)
    assert _fts_ids(vault, "lessons", "lemur") == []
    for table in ("memories", "checkpoints", "decisions", "lessons", "episodes", "notes"):
        vault._store.query(f"INSERT INTO {table}_fts({table}_fts, rank) VALUES ('integrity-check', 1)")


def test_tags_side_table_tracks_rows(vault: syn.Vault) -> None:
    m = vault.remember("project", "a", "x", tags=["One", "two"])
    d = vault.decide("d", tags=["two"])
    rows = vault._store.query("SELECT tag, kind, rid FROM tags ORDER BY tag, kind")
    assert [tuple(r) for r in rows] == [("one", "memory", m.id), ("two", "decision", d.id), ("two", "memory", m.id)]
    vault.memories.update(m.id, tags=[])
    vault.decisions.delete(d.id)
    assert vault._store.query("SELECT * FROM tags") == []


def test_schema_and_pragmas(vault: syn.Vault) -> None:
    s = vault._store
    assert s.schema_version == SCHEMA_VERSION
    assert s.query_one("PRAGMA journal_mode")[0] == "wal"
    assert s.query_one("PRAGMA foreign_keys")[0] == 1
    assert s.query_one("PRAGMA busy_timeout")[0] > 0
    assert s.integrity_check() == "ok"


def test_split_sql_keeps_trigger_bodies() -> None:
    script = "CREATE TABLE a(x);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO a VALUES (1); SELECT 1; END;\n"
    assert _split_sql(script) == ["CREATE TABLE a(x);",
                                  "CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO a VALUES (1); SELECT 1; END;"]


def test_read_errors_are_store_errors(tmp_path: Path) -> None:
    s = Store(tmp_path / "synapse.db")
    with pytest.raises(syn.StoreError):
        s.query("SELECT * FROM no_such_table")
    s.close()


def _vm_steps(store: Store, fn) -> int:  # type: ignore[no-untyped-def]
    """How many SQLite virtual-machine steps (in units of 100) ``fn()`` costs: a cost measure that does not
    depend on machine speed."""
    n = 0

    def tick() -> int:
        nonlocal n
        n += 1
        return 0

    store._conn.set_progress_handler(tick, 100)
    try:
        fn()
    finally:
        store._conn.set_progress_handler(None, 100)
    return n


def test_lookup_by_id_does_not_scan_the_vault(tmp_path: Path) -> None:
    """get(id) and remember() must cost about the same in a vault of 100 or of 3,000 memories."""
    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    small = syn.open_vault(tmp_path / "small")
    big = syn.open_vault(tmp_path / "big")
    for v, n in ((small, 100), (big, 3_000)):
        with v.transaction():
            for i in range(n):
                v.remember("knowledge", f"fact_{i}", f"content {i}")
    costs = {}
    for name, v in (("small", small), ("big", big)):
        mid = v.memories.get_by_key("knowledge", "fact_50").id
        costs[name, "get"] = _vm_steps(v._store, lambda v=v, mid=mid: v.memories.get(mid))
        costs[name, "remember"] = _vm_steps(v._store, lambda v=v: v.remember("knowledge", "new_one", "x"))
        costs[name, "search"] = _vm_steps(v._store, lambda v=v: v.memories.search("content 50", limit=5))
    for op in ("get", "remember"):
        assert costs["big", op] <= 3 * costs["small", op] + 5, (op, costs)
    small.close()
    big.close()


def test_sqlite_has_fts5_and_json() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    assert con.execute("SELECT json_array(1, 2)").fetchone()[0] == "[1,2]"
    con.close()


def test_the_agent_quota_indices_need_no_schema_version(tmp_path: Path) -> None:
    """The agent quotas' partial indices are made on a writable open when missing, without moving the schema
    version (a vault stays openable by every synapse_nb of its version, and read-only); both quota counts use
    them."""
    from synapse_nb.store.sql.queries import AGENT_MEMORIES, AGENT_WRITES
    from synapse_nb.store.sqlite.schema import INDICES

    syn.open_vault(tmp_path).close()
    db = tmp_path / ".synapse" / "synapse.db"
    con = sqlite3.connect(db)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(INDICES) <= names and con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    plans = [" ".join(str(r[-1]) for r in con.execute("EXPLAIN QUERY PLAN " + q, args))
             for q, args in ((AGENT_WRITES, ("2026", "2026")), (AGENT_MEMORIES, ("m",)))]
    assert "history_agent_at" in plans[0] and "revisions_agent" in plans[0] and "memories_agent" in plans[1], plans
    for name in INDICES:  # a vault made before them (or by an older synapse_nb of the same version)
        con.execute(f"DROP INDEX {name}")
    con.commit()
    con.close()
    ro = syn.open_vault(tmp_path, readonly=True)  # read-only: opens as it is, creates nothing
    ro.close()
    con = sqlite3.connect(db)
    assert not set(INDICES) & {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    con.close()
    syn.open_vault(tmp_path).close()
    con = sqlite3.connect(db)
    assert set(INDICES) <= {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    con.close()
