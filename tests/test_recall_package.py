"""The recall package's own promises: one read and one write of the session history per recall, one rendering of
a memory line (the same in a recall and in ``recall_text``), and the reads a recall makes in one snapshot."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.recall import record_line
from synapse_nb.recall.assembly import MEMORY_CONTENT_CHARS


@contextlib.contextmanager
def _statements(vault: syn.Vault) -> Iterator[list[str]]:
    """The SQL statements the vault's connection runs while the ``with`` block runs (SQLite backend)."""
    seen: list[str] = []
    conn = vault._store._conn
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def test_a_recall_reads_and_writes_the_session_history_once(vault: syn.Vault) -> None:
    vault.lessons.approve(vault.lessons.create("always run the migrations before deploying").id)
    vault.remember("procedure", "run_migrations", "run the migrations with alembic upgrade head")
    vault.decide("migrations run in CI before every deploy")
    vault.recall("warm up the caches")
    for turn in range(2):
        with _statements(vault) as seen:
            r = vault.recall("how do we run migrations before deploying", session="s1")
        session_sql = [s for s in seen if ("session_seen" in s or "session_registry" in s)
                       and not s.lstrip().upper().startswith("CREATE")]
        reads = [s for s in session_sql if s.lstrip().upper().startswith("SELECT")]
        # one per row given (the trace repeats a statement for each trigger it runs: v9's session registry)
        writes = {s for s in session_sql if s.lstrip().upper().startswith("INSERT")}
        transactions = [s for s in seen if s.strip().upper() == "BEGIN IMMEDIATE"]
        # one read of what the session was given; a session given nothing before also has the hour's bound on new
        # sessions read (the session registry, schema v9), inside the write's transaction (on a team vault, inside
        # the write's statement)
        assert len(reads) == (2 if turn == 0 else 1), session_sql
        if turn == 0:  # two items and the lesson, recorded in one write transaction
            assert len(r.items) == 2 and len(writes) == 3 and len(transactions) == 1
        else:  # everything was given before: nothing new to record
            assert not r.items and r.empty_reason == "already_given" and not writes and not transactions
            # nothing new, the lesson given before: not a word of the banner (review 86)
            assert r.text.startswith("nothing new for:") and "APPROVED SYSTEM MEMORY" not in r.text


def test_lessons_candidates_and_statistics_are_read_in_one_snapshot(vault: syn.Vault) -> None:
    vault.remember("procedure", "run_migrations", "run the migrations with alembic upgrade head")
    vault.recall("warm up")
    with _statements(vault) as seen:
        vault.recall("how do we run migrations")
    begin = next(i for i, s in enumerate(seen) if s.strip().upper() == "BEGIN")
    end = next(i for i, s in enumerate(seen) if i > begin and s.strip().upper() == "COMMIT")
    inside = " ".join(seen[begin:end])
    assert "FROM lessons" in inside and "gate_vocab_row" in inside and "FROM tags" in inside


def test_the_walk_reads_its_records_in_one_statement_per_kind(vault: syn.Vault) -> None:
    """The records the walk reads whatever they hold (the first top_k of each kind above the margin) are read in
    one statement per kind; only records read because one before them was skipped are read alone; and a record
    read once is not read again while unchanged."""
    for i in range(8):
        vault.remember("procedure", f"migrations_{i}", f"run the database migrations step {i} with alembic")
        vault.decide(f"database migrations run in CI, rule {i}")
    vault.recall("warm up")
    q = "how do we run the database migrations"
    with _statements(vault) as seen:
        first = vault.recall(q)
    reads = [s for s in seen if s.startswith(("SELECT * FROM memories", "SELECT * FROM decisions"))]
    assert {i.kind for i in first.items} == {"memory", "decision"} and len(first.items) == 10
    assert len(reads) == 2 and all(" IN (" in s for s in reads), reads
    with _statements(vault) as seen:
        again = vault.recall(q, session="s1")
    assert again.text == first.text and not [s for s in seen if s.startswith("SELECT * FROM memories")]
    # s1 was given the first five of each kind: the walk skips them and reads the next ones, each alone
    with _statements(vault) as seen:
        skipped = vault.recall(q, session="s1")
    alone = [s for s in seen if s.startswith(("SELECT * FROM memories", "SELECT * FROM decisions"))]
    assert len(skipped.items) == 6 and len(alone) == 6 and not [s for s in alone if " IN (" in s]
    assert sum(row.bar == "delta" for row in skipped.explain()) == 10


def test_a_sessions_marks_leave_the_data_version_and_the_caches_alone(vault: syn.Vault) -> None:
    """Recording what a session was given writes only the session's marks, which nothing recall caches depends
    on: the data version stays put, so the next recall starts warm (the rank rows are not read again); a write
    to a record moves it."""
    vault.remember("procedure", "run_migrations", "run the migrations with alembic upgrade head")
    vault.decide("migrations run in CI before every deploy")
    vault.recall("warm up")
    before = vault._store.data_version()
    given = vault.recall("how do we run migrations", session="s1")
    assert given.items and vault._store.data_version() == before
    with _statements(vault) as seen:
        again = vault.recall("how do we run migrations", session="s1")
    assert not again.items and not [s for s in seen if "FROM gate_docs" in s]
    vault.remember("procedure", "deploy", "deploy with the release script")
    assert vault._store.data_version() != before


def test_recall_text_and_recall_render_a_memory_line_the_same_way(vault: syn.Vault) -> None:
    long = " ".join(f"word{i}" for i in range(200))  # about 1,400 characters
    m = vault.remember("knowledge", "long_fact", long, tags=["big"])
    line = record_line(m)
    shown = re.sub(r" #big$", "", line.split(": ", 1)[1])
    assert shown.endswith("…") and MEMORY_CONTENT_CHARS - 10 < len(shown) <= MEMORY_CONTENT_CHARS
    assert vault.memories.recall_text().splitlines()[1] == line
    r = vault.recall("word1 word2 word3 long fact", budget_tokens=10_000)
    assert [i.line for i in r.items] == [line]


def test_threads_sharing_a_vault_handle_recall_and_write_without_deadlock(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall holds the store's lock for its snapshot; caches take their own locks. Threads sharing one handle
    (a notebook kernel with widgets, an MCP server) must never wait on each other forever."""
    import threading
    import time

    vault = syn.open_vault(tmp_path)  # not the fixture: a stuck thread would hold its lock at teardown
    queries = vault._store.recall
    count = queries.count

    def slow_count(**kw: Any) -> int:  # widen the window in which a cache refresh reads the store
        time.sleep(0.005)
        return count(**kw)

    monkeypatch.setattr(queries, "count", slow_count)

    for i in range(30):
        vault.remember("knowledge", f"fact_{i}", f"deploy fact number {i}", tags=["deploy"])
    errors: list[BaseException] = []
    stop = threading.Event()

    def recaller(n: int) -> None:
        try:
            for j in range(25):
                r = vault.recall(f"deploy fact number {j % 30}", session=f"s{n}")
                assert r.text
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            i = 0
            while not stop.is_set():
                vault.remember("knowledge", f"new_{i % 5}", f"deploy note {i}")
                i += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=recaller, args=(n,), daemon=True) for n in range(3)]
    w = threading.Thread(target=writer, daemon=True)
    w.start()
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60  # a few seconds when nothing waits forever
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    stop.set()
    w.join(timeout=max(1.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in [*threads, w]), "a thread is stuck (deadlock)"
    vault.close()
    assert not errors, errors


def test_the_old_assembly_module_name_still_imports_and_warns() -> None:
    import importlib
    import sys

    import synapse_nb.recall.assembly as assembly

    sys.modules.pop("synapse_nb.recall.render", None)
    with pytest.warns(DeprecationWarning, match="synapse_nb.recall.assembly"):
        old = importlib.import_module("synapse_nb.recall.render")
    assert old.record_line is assembly.record_line and old.__all__ == assembly.__all__
