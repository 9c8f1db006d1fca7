"""A process holding the offline copy's lock neither stalls a person's commands nor hides a stale copy (review 33).

Any process of the same Unix user (an agent's too) could take ``copy.lock`` and sleep: every sync waited for it
without a timeout, so a purge waited, then said "index, FTS and caches scrubbed" while ``team search-local`` still
answered the purged text from the copy; and every command waited at exit. A sync now tries for the lock for
``LOCK_SECONDS`` (made short here) and skips; the purge's report says the copy still holds the record and how to
remove it; ``team status`` says the copy's syncs are blocked; the next sync once the lock is free catches up.
"""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path

import pytest

from synapse_nb.store.postgres import copy
from synapse_nb.store.postgres.copy import COPY_DB, COPY_LOCK
from synapse_nb.team import open_team_vault, status


def _copy_ids(folder: Path) -> set[str]:
    con = sqlite3.connect(folder / COPY_DB)
    try:
        return {r[0] for r in con.execute("SELECT id FROM docs")}
    finally:
        con.close()


def test_a_held_copy_lock_skips_the_sync_and_the_purge_says_the_copy_still_holds_the_record(
        team_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy, "LOCK_SECONDS", 0.1, raising=False)
    v = open_team_vault(team_url, local=tmp_path)
    holder = None
    try:
        secret = v.remember("knowledge", "staging_db", "staging db password is Hunter2-staging-7731")
        keeper = v._store.keeper  # type: ignore[attr-defined]
        assert keeper.flush()
        folder = Path(v.path)
        assert secret.id in _copy_ids(folder)

        holder = open(folder / COPY_LOCK, "a+b")  # noqa: SIM115 - another open file: flock conflicts in-process too
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        report = v.purge(secret.id)
        said = str(report)
        assert report.copy_behind is not None and "NOT scrubbed" in said and "still holds" in said, said
        assert str(folder / COPY_LOCK) in said and "copy-feed.json" in said, said
        assert secret.id in _copy_ids(folder)  # what the report says: the copy stayed as it was
        assert keeper.flush(timeout=5)  # the sync gave up on the lock, it did not wait for it
        st = status(team_url, local=tmp_path)
        assert st["copy_sync"].startswith("blocked") and str(folder / COPY_LOCK) in st["copy_sync"], st
        assert st["copy_synced_at"] is not None

        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
        v.recall("staging")  # the next sync catches up
        assert keeper.flush() and keeper.behind is None
        assert secret.id not in _copy_ids(folder)
        assert "copy_sync" not in status(team_url, local=tmp_path)
    finally:
        if holder is not None:
            holder.close()
        v.close()


def test_a_purge_whose_copy_synced_says_nothing_of_it(team_url: str, tmp_path: Path) -> None:
    v = open_team_vault(team_url, local=tmp_path)
    try:
        secret = v.remember("knowledge", "staging_db", "staging db password is Hunter2-staging-7731")
        report = v.purge(secret.id)
        assert report.copy_behind is None and "NOT scrubbed" not in str(report)
        assert secret.id not in _copy_ids(Path(v.path))
    finally:
        v.close()


def test_an_open_read_of_the_copy_keeps_the_text_and_the_purge_says_so(
        team_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 34: an agent's plain read transaction on ``copy.db`` (``sqlite3 copy.db``, ``BEGIN; SELECT ...``) made
    the scrub wait the 30 s busy timeout; its ``wal_checkpoint(TRUNCATE)`` then answered busy as a row, which was
    ignored: the purged text stayed in ``copy.db`` and the purge said scrubbed. It now waits briefly and the report
    says the copy was NOT scrubbed, naming the reader; the next purge after the read ends scrubs it."""
    monkeypatch.setattr(copy, "SCRUB_BUSY_MS", 50, raising=False)
    v = open_team_vault(team_url, local=tmp_path)
    reader = None
    try:
        for i in range(30):
            v.remember("knowledge", f"filler_{i}", f"filler fact {i} about deploys and caches")
        secret = v.remember("knowledge", "staging_db", "staging db password is Hunter2-staging-7731")
        keeper = v._store.keeper  # type: ignore[attr-defined]
        assert keeper.flush()
        folder = Path(v.path)
        assert copy.scrub(folder) is None  # the text is in copy.db itself, the WAL truncated

        reader = sqlite3.connect(folder / COPY_DB, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM docs").fetchall()
        report = v.purge(secret.id)
        said = str(report)
        assert report.copy_behind is not None and "NOT scrubbed" in said, said
        assert f"fuser {folder / COPY_DB}" in said and "read" in said, said
        assert any(b"Hunter2-staging-7731" in f.read_bytes() for f in folder.glob("copy.db*"))
        reader.close()
        reader = None

        again = v.purge(v.remember("knowledge", "other", "something else").id)
        assert again.copy_behind is None, str(again)
        assert not any(b"Hunter2-staging-7731" in f.read_bytes() for f in folder.glob("copy.db*"))
    finally:
        if reader is not None:
            reader.close()
        v.close()
