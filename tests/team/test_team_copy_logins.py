"""One offline copy per login, and a copy synced from nothing is replaced (review 30, finding 2).

A person's machine often runs two logins in one folder: the person's and their agent's own. The copy (``copy.db``
and its feed position ``copy-feed.json``) was kept per server and project, so both logins synced one copy: each
switch dropped the other's position (it names the login) and synced from nothing, which wrote the current rows but
deleted none, so a record a person purged stayed in the copy for good; and a login granted fewer minds moved the
shared position past the other minds' changes and stamped the copy fresh.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import synapse_nb as syn
from synapse_nb.store.postgres.copy import COPY_DB, COPY_FEED
from synapse_nb.team import open_team_vault


def _copy_ids(folder: Path) -> set[str]:
    if not (folder / COPY_DB).is_file():
        return set()
    con = sqlite3.connect(folder / COPY_DB)
    try:
        return {r[0] for r in con.execute("SELECT id FROM docs")}
    finally:
        con.close()


def _synced(open_it: Callable[[], syn.Vault], query: str) -> Path:
    """Open, recall ``query`` (the copy syncs after it), close (the sync finishes): the handle's cache folder."""
    v = open_it()
    try:
        v.recall(query)
        return Path(v.path)
    finally:
        v.close()


def test_a_copy_synced_from_no_position_is_replaced(team_url: str, logins: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alice = open_team_vault(team_url, local=tmp_path / "a")
    try:
        secret = alice.remember("knowledge", "staging_db", "staging db password is Hunter2-staging-7731")
        bob = _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "staging db password")
        assert _copy_ids(bob) == {secret.id}
        (bob / COPY_FEED).unlink()  # a lost position: the next sync starts from nothing
        alice.purge(secret.id)  # the vault now holds no record at all
        _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "staging db password")
        assert _copy_ids(bob) == set()
        (bob / COPY_FEED).unlink()
        kept = alice.remember("knowledge", "sprint", "the sprint plan is reviewed on mondays")
        con = sqlite3.connect(bob / COPY_DB)  # a row the server never had (an older copy's, say)
        cur = con.execute("INSERT INTO docs(id, kind, mind, text, updated_at) VALUES ('mem_0123456789ab', 'memory', "
                          "'default', 'stale', '2020-01-01T00:00:00Z')")
        con.execute("INSERT INTO docs_fts(rowid, text) VALUES (?, 'stale')", (cur.lastrowid,))
        con.commit()
        con.close()
        _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "sprint")
        assert _copy_ids(bob) == {kept.id}
    finally:
        alice.close()
