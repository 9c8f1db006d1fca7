"""Operating a team vault (docs/team.md, "Operating a team vault"): a backup with pg_dump restores to the same
vault, a passfile URL and an admin URL that already has a query work, `team join` on a fresh repository succeeds,
and `team search-local` does not claim the server is down."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from synapse_nb.cli import app
from synapse_nb.store.postgres.server import find_bindir
from synapse_nb.team import init, open_team_vault


def test_a_pg_dump_of_the_project_restores_the_same_vault(pg_admin_url: str, team_url: str, project: str,
                                                          machine: Any, logins: dict[str, str],
                                                          tmp_path: Path) -> None:
    v = machine("m", team_url)
    v.remember("knowledge", "deploys", "deploys go through the canary first", tags="ops")
    v.with_mind("planner").decide("Keep one vault per repository", rationale="shared memory")
    les = v.lessons.create("Reverted the retry change")
    v.lessons.approve(les.id, text="Never retry payments without an idempotency key")
    before = v.export_jsonl()
    answer = v.recall("how do deploys go?").text
    dump = tmp_path / "vault.dump"
    bindir = find_bindir()
    subprocess.run([str(bindir / "pg_dump"), f"--schema={project}", "--format=custom", "-f", str(dump),
                    pg_admin_url], check=True, capture_output=True, text=True)
    # the handle's background offline copy reads the tables in a transaction: while it ran, DROP SCHEMA deadlocked
    # with it once in a full run (an administrator stops the vault's users before restoring a dump)
    v.close()
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"DROP SCHEMA {project} CASCADE")
    restored = subprocess.run([str(bindir / "pg_restore"), "--dbname", pg_admin_url, str(dump)],
                              capture_output=True, text=True)
    assert restored.returncode == 0, restored.stderr
    again = machine("after_restore", team_url)
    assert again.export_jsonl() == before
    assert again.recall("how do deploys go?").text == answer
    assert again._store.integrity_check() == "ok"
    assert again.remember("knowledge", "after", "writes work after a restore").created_at > les.created_at
    with psycopg.connect(logins["agent"].split("?")[0]) as c:  # the gate came back with it
        c.execute(f"SET search_path = {project}")
        try:
            c.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
            raise AssertionError("the agent could lock a restored table")
        except psycopg.errors.InsufficientPrivilege:
            pass


def test_passfile_urls_and_an_admin_url_with_a_query(pg_admin_url: str, project: str, tmp_path: Path) -> None:
    passfile = tmp_path / "pgpass"
    passfile.write_text("127.0.0.1:*:*:postgres:unused-under-trust\n", encoding="utf-8")
    passfile.chmod(0o600)
    admin = f"{pg_admin_url}?passfile={passfile}&connect_timeout=5"
    out = init(f"{admin}?project={project}", local=tmp_path)  # "$ADMIN_URL?project=..." on a URL with a query
    assert out["project"] == project
    v = open_team_vault(f"{admin}&project={project}", local=tmp_path)
    try:
        assert v.remember("knowledge", "k", "written through a passfile URL").key == "k"
    finally:
        v.close()


def test_team_join_on_a_fresh_repository_succeeds(team_url: str, tmp_path: Path, monkeypatch: Any) -> None:
    fresh = tmp_path / "fresh_clone"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    out = CliRunner().invoke(app, ["team", "join", team_url, "--from", ".synapse", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert {k: got[k] for k in ("trusted", "set_aside")} == {"trusted": {}, "set_aside": None}  # nothing to copy
    assert Path(got["team_file"]) == fresh / ".synapse" / "team.toml"


def test_search_local_says_it_did_not_ask_the_server(team_url: str, machine: Any, tmp_path: Path,
                                                     monkeypatch: Any) -> None:
    v = machine("laptop", team_url)
    v.remember("knowledge", "deploy_day", "deploys run on fridays")
    v.close()  # the copy is current (its keeper finished)
    monkeypatch.chdir(tmp_path / "machine_laptop")
    out = CliRunner().invoke(app, ["team", "search-local", "fridays"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("STALE (local copy)") and "cannot be reached" not in out.output
    assert "deploys run on fridays" in out.output


def test_a_dev_server_folder_the_postgres_user_cannot_reach_is_refused_with_the_reason(tmp_path: Path) -> None:
    """As root the cluster belongs to the 'postgres' user, which must pass through every folder above it: a folder
    under `mktemp -d` (mode 700) failed inside initdb with "Permission denied"; now it is refused first, naming the
    closed folder and what to do. As any other user initdb runs as that user, and the folder works."""
    import os
    import shutil

    from synapse_nb.errors import StoreError
    from synapse_nb.store.postgres.server import PgServer

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    target = closed / "pg"
    if os.geteuid() == 0:
        with pytest.raises(StoreError, match=r"cannot reach .* closed to other users .*chmod o\+x"):
            PgServer.create(target)
        assert not target.exists()
    else:
        srv = PgServer.create(target)
        assert srv.data.is_dir()
        shutil.rmtree(target)
