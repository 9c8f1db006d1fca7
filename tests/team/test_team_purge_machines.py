"""Review 91 F1: a purge on one team machine left the text on every other machine after its next sync.

A person purged on machine A: A, the server's rows and pg_dump were clean, but machine B (another person) and machine
C (the agent login) still held the full text after their next sync: in the LanceDB index folder (the sync applied
the feed's deletion as a soft delete; older versions kept the rows, and lancedb's ``checkout(version)`` read them
back) and in the offline copy ``copy.db`` (its FTS5 segments and free pages). ``index check`` on B said all was well.
Now a sync that applies a deletion from the feed scrubs it there, on an agent's machine too; ``index check`` names
what an older index version still holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb.store.index.queue import DEADLINE_ENV
from synapse_nb.team import open_team_vault

MARKER = "Xylozorbquent"
#: the marker a sync makes before it applies a deletion to the offline copy, removed once the copy is scrubbed
COPY_SCRUB = "copy-scrub.owed"


def _files_holding(folder: Path) -> list[str]:
    """Every file under ``folder`` whose bytes hold the marker (any case) or the secret's number."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and (MARKER.lower().encode() in (b := p.read_bytes()).lower() or b"7731" in b))


def _sync(url: str, folder: Path, actor: str, query: str) -> Path:
    """Open the machine's handle, recall (its index syncs; its copy syncs after it), close (the copy's sync ends):
    the machine's cache folder."""
    v = open_team_vault(url, local=folder, actor=actor)
    try:
        v.recall(query)
        v.index.sync()
        return Path(v.path)
    finally:
        v.close()


def test_a_purge_leaves_no_text_on_another_persons_or_the_agents_machine_after_their_next_sync(
        team_url: str, logins: dict[str, str], tmp_path: Path) -> None:
    machines = {"b": (logins["human"], "user"), "c": (logins["agent"], "agent")}
    for name in ("a", *machines):
        (tmp_path / name).mkdir()
    alice = open_team_vault(team_url, local=tmp_path / "a")
    try:
        secret = alice.remember("project", "deploy_token", f"The deploy token is {MARKER}-secret-7731 for staging")
        alice.remember("project", "deploy_token", f"The deploy token is {MARKER}-secret-7731 for staging and prod")
        kept = alice.remember("knowledge", "sprint", "the sprint plan is reviewed on mondays")
        folders = {name: _sync(url, tmp_path / name, actor, f"{MARKER} deploy token")
                   for name, (url, actor) in machines.items()}
        for folder in folders.values():
            assert any(f.startswith("index/") for f in _files_holding(folder))  # they hold it before the purge
            assert "copy.db" in _files_holding(folder)
        report = alice.purge(secret.id)
        assert "NOT" not in str(report), str(report)
    finally:
        alice.close()
    for name, (url, actor) in machines.items():
        folder = _sync(url, tmp_path / name, actor, "sprint plan")
        assert _files_holding(folder) == [], name  # neither the index folder nor the copy holds it
        assert not (folder / COPY_SCRUB).exists()
        v = open_team_vault(url, local=tmp_path / name, actor=actor)
        try:
            report = v.index.check()
            assert report.ok and report.held == (), (name, report)
            assert kept.id in [i.id for i in v.recall("sprint plan").items]  # what was kept is still there
        finally:
            v.close()


def test_index_check_names_what_an_older_version_holds_until_the_next_sync_scrubs_it(
        team_url: str, logins: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alice = open_team_vault(team_url, local=tmp_path / "a")
    try:
        secret = alice.remember("project", "deploy_token", f"The deploy token is {MARKER}-secret-7731 for staging")
        _sync(logins["human"], tmp_path / "b", "user", f"{MARKER} deploy token")
        alice.purge(secret.id)
    finally:
        alice.close()
    bob = open_team_vault(logins["human"], local=tmp_path / "b")
    try:
        monkeypatch.setenv(DEADLINE_ENV, "9999999999")  # an agent hook's time limit: the scrub stays owed
        bob.index.sync()
        report = bob.index.check()
        assert not report.ok and report.held == (secret.id,), report
        assert bob.index.scrub_owed_since is not None
        monkeypatch.delenv(DEADLINE_ENV)
        bob.index.sync()  # the next sync without one runs it
        assert bob.index.check().ok and bob.index.scrub_owed_since is None
        assert not [f for f in _files_holding(Path(bob.path)) if f.startswith("index/")]
    finally:
        bob.close()


def test_a_deletion_rewrites_the_deleting_machines_copy_once(team_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The sync that applies the machine's own deletion from the feed scrubs the copy (review 91); the store's scrub
    after the deletion runs the copy's scrub again only when that one was kept from finishing: a person's delete
    rewrote (VACUUMed) the whole copy twice."""
    import synapse_nb.store.postgres as pg
    from synapse_nb.store.postgres import copy

    calls: list[Path] = []
    real = copy.scrub

    def counted(folder: Path) -> str | None:
        calls.append(folder)
        return real(folder)

    monkeypatch.setattr(copy, "scrub", counted)
    monkeypatch.setattr(pg, "scrub_copy", counted)
    v = open_team_vault(team_url, local=tmp_path)
    try:
        gone = v.remember("project", "deploy_token", f"The deploy token is {MARKER}-secret-7731")
        v.remember("knowledge", "sprint", "the sprint plan is reviewed on mondays")
    finally:
        v.close()
    folder = _sync(team_url, tmp_path, "user", "sprint plan")  # the copy made and holding the text
    assert "copy.db" in _files_holding(folder)
    calls.clear()
    v = open_team_vault(team_url, local=tmp_path)
    try:
        v.memories.delete(gone.id)
    finally:
        v.close()
    assert len(calls) == 1, calls
    assert not (folder / COPY_SCRUB).exists() and "copy.db" not in _files_holding(folder)
