"""One clear vault per folder (issue 29, D2): after `team join`, every surface in the folder uses the team vault
without SYNAPSE_HOME, the old local database is renamed aside (kept, named), and the team copy's cache lives in its
own folder keyed by server and project, so no rebuild can mix a local vault into it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.vault import VaultSession


@pytest.fixture()
def repo_with_local_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "acme"
    folder.mkdir()
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.chdir(folder)
    local = syn.open_vault(folder)
    local.remember("knowledge", "local_only", "written in the local vault before the team existed")
    local.close()
    return folder


def test_after_join_every_surface_uses_the_team_vault(repo_with_local_vault: Path, team_url: str,
                                                      machine: Any) -> None:
    folder = repo_with_local_vault
    run = CliRunner()
    out = run.invoke(app, ["team", "join", team_url, "--from", ".synapse"])
    assert out.exit_code == 0, out.output
    aside = sorted((folder / ".synapse").glob("synapse.db.before-team-*"))
    assert next(p.name for p in aside if not p.name.endswith(("-wal", "-shm"))) in out.output  # named in the message
    assert not (folder / ".synapse" / "synapse.db").exists()
    assert (folder / ".synapse" / "team.toml").is_file()

    # the CLI without SYNAPSE_HOME writes to the team vault: another machine sees it
    out = run.invoke(app, ["remember", "knowledge", "from_cli", "written by the CLI after the join"])
    assert out.exit_code == 0, out.output
    other = machine("other", team_url)
    assert {"local_only", "from_cli"} <= {m.key for m in other.memories.list()}
    theirs = other.remember("knowledge", "from_other", "written on another machine")

    # every surface opens through a VaultSession: it gets the team vault too
    with VaultSession(None) as s:
        v = s.read()
        assert v._store.dialect.name == "postgresql" and v.path.parent.name == "team"
        assert theirs.id in {m.id for m in v.memories.list()}

    # index rebuild rebuilds the team copy (its own folder), from the server: the other machine's record is in it
    out = run.invoke(app, ["index", "rebuild", "--json"])
    assert out.exit_code == 0, out.output
    out = run.invoke(app, ["team", "search-local", "written on another machine"])
    assert out.exit_code == 0 and theirs.id in out.output, out.output
    copies = list((folder / ".synapse" / "team").iterdir())
    assert len(copies) == 1 and (copies[0] / "index").is_dir() and not (folder / ".synapse" / "index").exists()

    # team status says what this folder's vault is and where the old one went
    out = run.invoke(app, ["team", "status", "--json"])
    st = json.loads(out.output)
    assert st["folder_vault"] == team_url and st["local_vault_set_aside"]


def test_a_local_database_reappearing_is_set_aside_at_the_next_open(repo_with_local_vault: Path, team_url: str,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    folder = repo_with_local_vault
    assert CliRunner().invoke(app, ["team", "join", team_url]).exit_code == 0
    # an older synapse_nb (or a copy by hand) puts a local database back
    (folder / ".synapse" / "synapse.db").write_bytes(
        next((folder / ".synapse").glob("synapse.db.before-team-*")).read_bytes())
    v = syn.open_vault(folder)
    try:
        assert v._store.dialect.name == "postgresql"
        assert not (folder / ".synapse" / "synapse.db").exists()
        assert "renamed aside" in caplog.text
    finally:
        v.close()
