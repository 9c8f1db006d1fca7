"""One offline copy per login, and a copy synced from nothing is replaced (review 30, finding 2).

A person's machine often runs two logins in one folder: the person's and their agent's own. The copy (``copy.db``
and its feed position ``copy-feed.json``) was kept per server and project, so both logins synced one copy: each
switch dropped the other's position (it names the login) and synced from nothing, which wrote the current rows but
deleted none, so a record a person purged stayed in the copy for good; and a login granted fewer minds moved the
shared position past the other minds' changes and stamped the copy fresh.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

import synapse_nb as syn
from synapse_nb.store.postgres.copy import COPY_DB, COPY_FEED
from synapse_nb.team import open_team_vault
from synapse_nb.vault.locate import TEAM_DIRNAME, VAULT_DIRNAME, team_cache_dir


def _copy_ids(folder: Path) -> set[str]:
    if not (folder / COPY_DB).is_file():
        return set()
    con = sqlite3.connect(folder / COPY_DB)
    try:
        return {r[0] for r in con.execute("SELECT id FROM docs")}
    finally:
        con.close()


def _copy_login(folder: Path) -> str:
    """The login whose sync the copy's feed position records (``location``: ``postgresql://login@...``)."""
    return str(json.loads((folder / COPY_FEED).read_text(encoding="utf-8"))["location"]).split("//")[1].split("@")[0]


def _synced(open_it: Callable[[], syn.Vault], query: str) -> Path:
    """Open, recall ``query`` (the copy syncs after it), close (the sync finishes): the handle's cache folder."""
    v = open_it()
    try:
        v.recall(query)
        return Path(v.path)
    finally:
        v.close()


def test_a_purge_reaches_a_persons_copy_that_their_agents_login_synced_in_the_same_folder(
        team_url: str, logins: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alice = open_team_vault(team_url, local=tmp_path / "a")
    try:
        secret = alice.remember("knowledge", "staging_db", "staging db password is Hunter2-staging-7731")
        kept = alice.remember("knowledge", "sprint", "the sprint plan is reviewed on mondays")
        bob = _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "staging db password")
        assert {secret.id, kept.id} <= _copy_ids(bob)
        alice.purge(secret.id)
    finally:
        alice.close()
    agent = _synced(lambda: open_team_vault(logins["agent"], local=tmp_path / "b", actor="agent"), "sprint plan")
    assert agent != bob and kept.id in _copy_ids(agent) and secret.id not in _copy_ids(agent)
    _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "sprint plan")
    assert secret.id not in _copy_ids(bob) and kept.id in _copy_ids(bob)  # the purge reached the person's copy
    assert _copy_login(bob) == logins["human"].split("//")[1].split("@")[0]


def test_a_login_granted_fewer_minds_never_stamps_another_logins_copy_fresh(
        pg_admin_url: str, project: str, team_url: str, logins: dict[str, str], tmp_path: Path) -> None:
    agent_login = logins["agent"].split("//")[1].split("@")[0]
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # team grant LOGIN --mind planner, '*' revoked
        c.execute(f"DELETE FROM {project}.mind_grants WHERE grantee = %s", (agent_login,))
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, 'planner')", (agent_login,))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bob = _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "incident")
    before = (bob / COPY_FEED).read_text(encoding="utf-8")
    alice = open_team_vault(team_url, local=tmp_path / "a")
    try:
        page = alice.remember("procedure", "incident_call", "page the on-call SRE before touching prod")
    finally:
        alice.close()
    _synced(lambda: open_team_vault(logins["agent"], local=tmp_path / "b", actor="agent", mind="planner"), "sprint")
    # the agent's sync (planner only) neither moved the person's position nor stamped the person's copy
    assert (bob / COPY_FEED).read_text(encoding="utf-8") == before and page.id not in _copy_ids(bob)
    _synced(lambda: open_team_vault(logins["human"], local=tmp_path / "b"), "incident")
    assert page.id in _copy_ids(bob) and (bob / COPY_FEED).read_text(encoding="utf-8") != before


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


def test_the_cache_folder_an_older_version_shared_between_logins_is_removed(
        team_url: str, logins: dict[str, str], tmp_path: Path) -> None:
    from synapse_nb.store.postgres import parse_team_url

    conninfo, project = parse_team_url(logins["human"], "x")
    shared = tmp_path / VAULT_DIRNAME / TEAM_DIRNAME / team_cache_dir(Path("."), conninfo, project).name.split("@")[1]
    (shared / "index").mkdir(parents=True)
    (shared / COPY_DB).write_bytes(b"a purged record's text")
    (shared / "in-doubt.json").write_text("{}", encoding="utf-8")
    v = open_team_vault(logins["human"], local=tmp_path)
    try:
        assert Path(v.path).name == f"{conninfo.split('//')[1].split('@')[0]}@{shared.name}"
        assert not shared.exists() and (Path(v.path) / "in-doubt.json").read_text(encoding="utf-8") == "{}"
    finally:
        v.close()


@pytest.mark.parametrize("url", ["postgresql://a@db/team", "postgresql://db/team?user=a"])
def test_two_logins_never_share_a_cache_folder(url: str) -> None:
    assert team_cache_dir(Path("."), url, "acme") != team_cache_dir(Path("."), "postgresql://b@db/team", "acme")
    assert team_cache_dir(Path("."), url, "acme") == team_cache_dir(Path("."), "postgresql://a@DB:5432/team", "acme")
