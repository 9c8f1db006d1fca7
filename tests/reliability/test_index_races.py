"""Two processes updating the LanceDB index at once (deterministic replays of the interleavings the load found).

Each test opens two handles on one vault (as two processes would), pauses handle A inside its index
update, lets a write and handle B's complete sync happen, then lets A finish. Afterwards a plain
``sync()`` must leave the index agreeing with SQLite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import synapse_nb as syn


@pytest.mark.xfail(strict=True, reason="core bug 11 in core_bugs.md")
def test_sync_racing_another_sync_leaves_no_stale_row(vault_dir: Path) -> None:
    a, b = syn.open_vault(vault_dir), syn.open_vault(vault_dir)
    try:
        m = a.remember("knowledge", "racy", "first version of the text")
        a.index.rebuild()
        a.memories.update(m.id, content="second version of the text")
        raw = a.index.raw
        original = raw.upsert

        def slow_upsert(rows):  # A read the outbox and the rows, then stalls before writing
            raw.upsert = original
            b.memories.update(m.id, content="third version, written while A stalled")
            b.index.sync()
            return original(rows)

        raw.upsert = slow_upsert
        a.index.sync()
        a.index.sync()
        report = a.index.check()
        assert report.ok, report
    finally:
        a.close()
        b.close()


@pytest.mark.xfail(strict=True, reason="core bug 11 in core_bugs.md")
def test_rebuild_racing_a_sync_loses_no_row(vault_dir: Path) -> None:
    a, b = syn.open_vault(vault_dir), syn.open_vault(vault_dir)
    try:
        a.remember("knowledge", "before", "written before the rebuild")
        b.index.rebuild()
        raw = a.index.raw
        original = raw.rebuild

        def slow_rebuild(rows, **kw):  # A took its snapshot of SQLite, then stalls before writing
            rows = list(rows)
            raw.rebuild = original
            b.remember("knowledge", "during", "written while the rebuild stalled")
            b.index.sync()
            return original(rows, **kw)

        raw.rebuild = slow_rebuild
        a.index.rebuild()
        a.index.sync()
        report = a.index.check()
        assert report.ok, report
    finally:
        a.close()
        b.close()


@pytest.mark.xfail(strict=True, reason="core bug 12 in core_bugs.md")
def test_recall_survives_a_record_deleted_by_another_process_meanwhile(vault_dir: Path) -> None:
    a, b = syn.open_vault(vault_dir), syn.open_vault(vault_dir)
    try:
        m = a.remember("procedure", "run_migrations", "run migrations with alembic upgrade head")
        a.recall("warm up")
        recaller = a._recaller
        original = recaller._all_candidates

        def then_delete(*args, **kw):  # the candidates are read, then another process deletes one
            pool = original(*args, **kw)
            recaller._all_candidates = original
            b.memories.delete(m.id)
            return pool

        recaller._all_candidates = then_delete
        r = a.recall("how do we run migrations with alembic")
        assert m.id not in [i.id for i in r.items]
    finally:
        a.close()
        b.close()
