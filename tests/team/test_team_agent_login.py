"""A folder's agent login (``team.toml``'s ``agent_url``, review 30), on the real PostgreSQL.

Without it every agent surface in a folder logged in as the person whose ``url`` ``team join`` wrote, and only ran
``SET ROLE <project>_agent`` per checkout: code the agent runs connected with the same URL and password file, skipped
``SET ROLE``, approved its own lesson and verified its own memory. With an agent login set by a person, every handle
that acts as the agent connects as that login (the server sees it: ``session_user``, ``agent_write_log``), and no
person's rights are in that connection; the agent cannot change it (it is pinned like ``url``) nor set it.
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
from synapse_nb.errors import TeamPinError, ValidationError
from synapse_nb.store.postgres.migrate import AGENT_CONNECTION_LIMIT, agent_connection_limit
from synapse_nb.vault.pins import pin_for, server_identity

DENIED = psycopg.errors.InsufficientPrivilege


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder outside git, the current folder, no SYNAPSE_HOME."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
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
def logins(logins: dict[str, str], pg_admin_url: str) -> dict[str, str]:
    """The team fixtures' logins, the agent's given a connection limit as `team init --agent` gives it (the server's
    check refuses an agent login with none)."""
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(agent_connection_limit(_login(logins["agent"])))
    return logins


def _login(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0]


def _sessions(v: Any) -> tuple[str, str]:
    """(session_user, current_user) of a handle's own pooled connection, as its statements see them."""
    row = v._store.query_one("SELECT session_user AS s, current_user AS c")
    return str(row["s"]), str(row["c"])


def _join(logins: dict[str, str], *extra: str) -> dict[str, Any]:
    out = CliRunner().invoke(app, ["team", "join", logins["human"], *extra, "--json"])
    assert out.exit_code == 0, out.output
    return dict(json.loads(out.output))


def test_agent_handles_log_in_as_the_folders_agent_login(folder: Path, logins: dict[str, str], project: str,
                                                         pg_admin_url: str, opened: list[Any],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    person, agent = _login(logins["human"]), _login(logins["agent"])
    got = _join(logins, "--agent-url", logins["agent"])
    assert got["agent_login"] == server_identity(logins["agent"], folder)
    assert pin_for(folder).agent_server == server_identity(logins["agent"], folder)  # type: ignore[union-attr]
    assert "agent_url" in (folder / ".synapse" / "team.toml").read_text(encoding="utf-8")

    mine = syn.open_vault(folder)
    opened.append(mine)
    assert _sessions(mine) == (person, person)  # a person's handle: the folder's url
    bot = syn.open_vault(folder, actor="agent")
    opened.append(bot)
    assert _sessions(bot) == (agent, f"{project}_agent")  # the agent's own login, not the person's + SET ROLE
    monkeypatch.setenv("CLAUDECODE", "1")  # a "user" handle in an agent's python acts as the agent: same login
    shell = syn.open_vault(folder)
    opened.append(shell)
    assert _sessions(shell)[0] == agent
    monkeypatch.delenv("CLAUDECODE")

    lesson = bot.lessons.create("Standing rule: run deploy.sh --force on Fridays")
    bot.memories.remember("procedure", "api_tests", "run make test-api")
    with psycopg.connect(pg_admin_url) as admin:  # the server counted the agent's writes under its own login
        logged = {r[0] for r in admin.execute(f"SELECT login FROM {project}.agent_write_log").fetchall()}
    assert logged == {agent}

    # raw SQL on the agent handle's own connection, past the package: no person's rights there to take back
    with bot._store.pool.connection() as conn:
        conn.autocommit = True
        conn.execute("RESET ROLE")
        assert dict(conn.execute("SELECT session_user AS s, current_user AS c").fetchone()) == {"s": agent, "c": agent}
        conn.execute(f"SET search_path = {project}")
        with pytest.raises(DENIED):
            conn.execute("UPDATE lessons SET status = 'approved' WHERE id = %s", (lesson.id,))
        with pytest.raises(DENIED):
            conn.execute("UPDATE memories SET verified = 1, source = 'user' WHERE key = 'api_tests'")
        with pytest.raises(DENIED):
            conn.execute(f"SET ROLE {project}_human")
    assert mine.lessons.get(lesson.id).status == "pending"
    assert not mine.memories.get_by_key("procedure", "api_tests").verified


def test_an_agent_can_neither_change_nor_set_the_agent_login(folder: Path, logins: dict[str, str], opened: list[Any],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _join(logins, "--agent-url", logins["agent"])
    toml = folder / ".synapse" / "team.toml"
    pinned = toml.read_text(encoding="utf-8")
    run = CliRunner()

    monkeypatch.setenv("CLAUDECODE", "1")
    # pointing its surfaces back at the person's login (or dropping the line) is refused before anything connects
    for forged in (f'url = "{logins["human"]}"\nagent_url = "{logins["human"]}"\n', f'url = "{logins["human"]}"\n'):
        toml.write_text(forged, encoding="utf-8")
        with pytest.raises(TeamPinError, match="agent login") as err:
            syn.open_vault(folder, actor="agent")
        assert "team trust" in str(err.value)
        out = run.invoke(app, ["recall", "deploy"])
        assert out.exit_code == 1 and "agent login" in out.output, out.output
    # nor can it set one, by any command
    out = run.invoke(app, ["team", "agent-login", logins["human"], "--yes"])
    assert out.exit_code == 1 and "human" in out.output, out.output
    out = run.invoke(app, ["team", "join", logins["human"], "--agent-url", logins["agent"]])
    assert out.exit_code == 1 and "person" in out.output, out.output
    out = run.invoke(app, ["team", "trust", "--yes"])
    assert out.exit_code == 1 and "human" in out.output, out.output
    assert pin_for(folder).agent_server == server_identity(logins["agent"], folder)  # type: ignore[union-attr]
    monkeypatch.delenv("CLAUDECODE")

    with pytest.raises(TeamPinError, match="agent login"):  # the person's handles too, until they trust it
        syn.open_vault(folder)
    toml.write_text(pinned, encoding="utf-8")
    v = syn.open_vault(folder, actor="agent")
    opened.append(v)
    assert _sessions(v)[0] == _login(logins["agent"])


def test_team_status_says_agent_surfaces_use_the_persons_login_until_one_is_set(
        folder: Path, logins: dict[str, str], pg_admin_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got = _join(logins)
    assert got["agent_login"] is None
    run = CliRunner()
    out = run.invoke(app, ["team", "status", "--json"])
    said = json.loads(out.output)["agent_login"]
    assert out.exit_code == 0 and said.startswith("none:"), out.output
    assert f"log in as the person, {_login(logins['human'])}" in said and "skip SET ROLE" in said
    assert "synapse-nb team agent-login" in said
    out = run.invoke(app, ["memory", "status"])
    assert out.exit_code == 0 and "team agent-login" in out.output, out.output

    out = run.invoke(app, ["team", "agent-login", logins["agent"], "--yes"])
    assert out.exit_code == 0 and _login(logins["agent"]) in out.output, out.output
    out = run.invoke(app, ["team", "status", "--json"])
    st = json.loads(out.output)
    assert out.exit_code == 0 and st["pin"] == "agrees", st
    assert st["agent_login"].startswith(server_identity(logins["agent"], folder)) and "skip" not in st["agent_login"]
    out = run.invoke(app, ["memory", "status"])
    assert out.exit_code == 0 and "team agent-login" not in out.output, out.output
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # the person's login cannot be used from here on
        c.execute(f"ALTER ROLE {_login(logins['human'])} NOLOGIN")
    monkeypatch.setenv("CLAUDECODE", "1")  # the agent's own `team status` asks the server as the agent login
    out = run.invoke(app, ["team", "status", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["online"], out.output


def test_an_agent_login_must_be_an_agent_of_the_same_team_vault(folder: Path, logins: dict[str, str],
                                                                pg_admin_url: str, project: str) -> None:
    from synapse_nb.team import agent_login

    _join(logins)
    with pytest.raises(ValidationError, match="same login as the folder's url"):
        agent_login(logins["human"])
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # another person: a member of the human role
        c.execute(f"CREATE ROLE {project}_bob LOGIN IN ROLE {project}_human")
    bob = logins["human"].replace(_login(logins["human"]), f"{project}_bob")
    with pytest.raises(ValidationError, match=f"is a member of {project}_human"):
        agent_login(bob)
    with pytest.raises(ValidationError, match="not the team vault"):
        agent_login(logins["agent"].replace(f"project={project}", "project=other"))
    assert pin_for(folder).agent_server == ""  # type: ignore[union-attr]  # nothing was pinned


def test_an_agent_login_without_a_connection_limit_is_refused_with_its_fix(
        folder: Path, logins: dict[str, str], pg_admin_url: str, project: str, tmp_path: Path) -> None:
    """An agent login with no connection limit (made by hand, or an older vault's: -1) passed the server's check, so
    its agent could take every connection slot of the server from the people's logins. It is refused now, saying
    how to give it one; `team init` (which gives it one) makes it pass."""
    from synapse_nb.team import agent_login, init

    _join(logins)
    agent = _login(logins["agent"])
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"ALTER ROLE {agent} CONNECTION LIMIT -1")
    fix = rf"ALTER ROLE {agent} CONNECTION LIMIT {AGENT_CONNECTION_LIMIT}, or `synapse-nb team init ADMIN_URL`"
    with pytest.raises(ValidationError, match=rf"the agent login {agent} has no connection limit .*{fix}") as no:
        agent_login(logins["agent"])
    assert "accepted: a login role that `synapse-nb team init URL --agent LOGIN`" in str(no.value)
    assert pin_for(folder).agent_server == ""  # type: ignore[union-attr]  # nothing was pinned
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # and with another finding, both are said
        c.execute(f"ALTER ROLE {agent} CREATEROLE")
    with pytest.raises(ValidationError, match=r"has CREATEROLE: .*; it also has no connection limit"):
        agent_login(logins["agent"])
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"ALTER ROLE {agent} NOCREATEROLE")
    init(f"{pg_admin_url}?project={project}", local=tmp_path)  # the fix the message names
    assert agent_login(logins["agent"])["agent_login"] == server_identity(logins["agent"], folder)


def test_team_trust_checks_a_new_agent_login_on_the_server_and_status_calls_no_refused_login_the_agents(
        folder: Path, logins: dict[str, str], pg_admin_url: str, project: str) -> None:
    """Review 33: an agent rewrote agent_url to a person's login; `team trust` showed it and pinned it on "y", and
    `team status` then called that person's login "the agent's own login"."""
    from synapse_nb.team import trust, trust_preview

    _join(logins, "--agent-url", logins["agent"])
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # another person: a member of the human role
        c.execute(f"CREATE ROLE {project}_bob LOGIN IN ROLE {project}_human")
    bob = logins["human"].replace(_login(logins["human"]), f"{project}_bob")
    toml = folder / ".synapse" / "team.toml"
    pinned = toml.read_text(encoding="utf-8")
    toml.write_text(f'url = "{logins["human"]}"\nagent_url = "{bob}"\n', encoding="utf-8")
    check = trust_preview()["agent_check"]
    assert check.startswith("refused") and f"is a member of {project}_human" in check, check
    out = CliRunner().invoke(app, ["team", "trust", "--yes"])
    assert out.exit_code == 1 and "not pinned" in out.output and f"{project}_human" in out.output, out.output
    with pytest.raises(ValidationError, match="not pinned"):
        trust()
    assert pin_for(folder).agent_server == server_identity(logins["agent"], folder)  # type: ignore[union-attr]

    toml.write_text(pinned, encoding="utf-8")
    st = json.loads(CliRunner().invoke(app, ["team", "status", "--json"]).output)
    assert "checked on the server" in st["agent_login"] and "NOT" not in st["agent_login"], st
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # the pinned agent login made a person's meanwhile
        c.execute(f"GRANT {project}_human TO {_login(logins['agent'])}")
    st = json.loads(CliRunner().invoke(app, ["team", "status", "--json"]).output)
    said = st["agent_login"]
    assert "NOT an agent's own login" in said and "refused" in said and "the agent's own login," not in said, said


def test_team_trust_asks_the_server_once_for_a_changed_agent_login(
        folder: Path, logins: dict[str, str], pg_admin_url: str, project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the server pinned already and the agent login changed, `trust` asked the server for its verdict twice
    (once in its preview, once again before pinning)."""
    import synapse_nb.team as team

    _join(logins, "--agent-url", logins["agent"])
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {project}_bob LOGIN IN ROLE {project}_human")
    bob = logins["human"].replace(_login(logins["human"]), f"{project}_bob")
    (folder / ".synapse" / "team.toml").write_text(f'url = "{logins["human"]}"\nagent_url = "{bob}"\n',
                                                    encoding="utf-8")
    asked: list[str] = []
    real = team._agent_verdict

    def counted(*args: Any) -> str:
        asked.append(str(args[-1]))
        return real(*args)

    monkeypatch.setattr(team, "_agent_verdict", counted)
    with pytest.raises(ValidationError, match="not pinned"):
        team.trust()
    assert len(asked) == 1, asked
