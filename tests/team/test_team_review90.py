"""A real team's day (review 90), on the real PostgreSQL.

F2: ``team search-local`` (and the cache folder ``team status`` reports) in an agent's shell read the person's offline
copy, which holds every mind the person reads: an agent login granted only ``default`` was shown the ``hr`` mind's
records. They read the agent login's own copy now, as offline recall does.

F5: people's recall session marks were shared between people on a team vault (alice's ``recall --session daily``
made bob's same session say "nothing new"); they are kept per login now, as agents' are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store.postgres.migrate import agent_connection_limit
from synapse_nb.team import open_team_vault

from .conftest import url_as


def _login(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0]


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder outside git, the current folder, no SYNAPSE_HOME, no agent's marker."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("CLAUDECODE", raising=False)
    f = tmp_path / "acme"
    f.mkdir()
    monkeypatch.chdir(f)
    return f


@pytest.fixture()
def opened() -> Iterator[list[Any]]:
    handles: list[Any] = []
    yield handles
    for v in handles:
        v.close()


@pytest.fixture()
def default_only(logins: dict[str, str], pg_admin_url: str, project: str) -> dict[str, str]:
    """The team fixtures' logins, the agent's with a connection limit (as `team init --agent` gives it) and granted
    only the mind `default` (`team grant ADMIN agent --mind '*' --revoke`, then `--mind default`)."""
    agent = _login(logins["agent"])
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(agent_connection_limit(agent))
        c.execute(f"DELETE FROM {project}.mind_grants WHERE grantee = %s", (agent,))
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, 'default')", (agent,))
    return logins


def _synced(v: Any, query: str) -> Path:
    """Recall ``query`` (the copy syncs after it), close (the sync finishes): the handle's cache folder."""
    try:
        v.recall(query)
        return Path(v.path)
    finally:
        v.close()


def test_search_local_and_status_in_an_agents_shell_read_the_agent_logins_own_copy(
        folder: Path, default_only: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    logins = default_only
    run = CliRunner()
    out = run.invoke(app, ["team", "join", logins["human"], "--agent-url", logins["agent"], "--json"])
    assert out.exit_code == 0, out.output
    person = syn.open_vault(folder)
    person.with_mind("hr").remember("context", "salary_band", "Secret: Carol's salary band is L7, raise pending")
    person.remember("context", "salary_review", "salary reviews happen in march")
    mine = _synced(person, "salary")
    theirs = _synced(syn.open_vault(folder, actor="agent"), "salary")
    assert mine != theirs and _login(logins["agent"]) in theirs.name

    out = run.invoke(app, ["--mind", "hr", "team", "search-local", "salary"])  # the person's own shell: every mind
    assert out.exit_code == 0 and "Carol's salary band" in out.output, out.output

    monkeypatch.setenv("CLAUDECODE", "1")  # the agent's shell: its own login's copy, its minds only
    out = run.invoke(app, ["--mind", "hr", "team", "search-local", "salary"])
    assert out.exit_code == 0 and out.output.startswith("STALE (local copy)"), out.output
    assert "Carol" not in out.output and "(no match in the local copy)" in out.output, out.output
    out = run.invoke(app, ["team", "search-local", "salary"])
    assert out.exit_code == 0 and "salary reviews happen in march" in out.output, out.output
    out = run.invoke(app, ["team", "status", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["local_folder"] == str(theirs)
    monkeypatch.delenv("CLAUDECODE")
    out = run.invoke(app, ["team", "status", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["local_folder"] == str(mine), out.output


def test_two_peoples_sessions_of_one_name_are_their_own(team_url: str, pg_admin_url: str, project: str,
                                                        tmp_path: Path, opened: list[Any]) -> None:
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for who in ("alice", "bob"):
            c.execute(f"CREATE ROLE {project}_{who} LOGIN IN ROLE {project}_human")
    alice_url, bob_url = (url_as(pg_admin_url, f"{project}_{who}") + f"?project={project}" for who in ("alice", "bob"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alice = open_team_vault(alice_url, local=tmp_path / "a")
    bob = open_team_vault(bob_url, local=tmp_path / "b")
    opened += [alice, bob]
    alice.remember("procedure", "deploy", "deploys go through the canary first, then prod after a soak")
    first = alice.recall("how do deploys go?", session="daily")
    assert "canary" in first.text and not first.nothing_new
    again = alice.recall("how do deploys go?", session="daily")
    assert again.nothing_new  # alice's own session: given already
    got = bob.recall("how do deploys go?", session="daily")
    assert "canary" in got.text and not got.nothing_new, got.text  # bob's session of the same name is his own


def test_an_agents_scan_on_a_team_vault_counts_the_lesson_it_made(team_url: str, default_only: dict[str, str],
                                                                  tmp_path: Path, opened: list[Any],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """F4: an agent's `lessons scan` said "0 new pending lessons" after creating one (it may not read them)."""
    from synapse_nb.gitscope.testing import ScratchRepo

    logins = default_only
    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("retry.py", "retry = 3\n", "Add retries")
    repo.git("revert", "--no-edit", "HEAD")
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("CLAUDECODE", raising=False)
    monkeypatch.chdir(repo.root)
    out = CliRunner().invoke(app, ["team", "join", logins["human"], "--agent-url", logins["agent"]])
    assert out.exit_code == 0, out.output
    monkeypatch.setenv("CLAUDECODE", "1")
    out = CliRunner().invoke(app, ["lessons", "scan"])  # the agent's shell: the folder's agent login
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[0] == ("1 new pending lesson, for a person to review (an agent cannot read pending "
                                          "lessons)"), out.stdout
    monkeypatch.delenv("CLAUDECODE")
    human = open_team_vault(team_url, local=repo.root)
    opened.append(human)
    assert len(human.lessons.pending()) == 1
    repo.commit_file("pay.py", "pay = 1\n", "Add pay")
    repo.git("revert", "--no-edit", "HEAD")
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    opened.append(agent)
    got = agent.lessons.scan()
    assert list(got) == [] and got.made == 1 and got.unread == 1  # made, though the agent may not read it
    assert len(human.lessons.pending()) == 2
