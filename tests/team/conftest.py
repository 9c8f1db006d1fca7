"""Team vault fixtures: a fresh project on the session's real PostgreSQL (``pg_admin_url`` in tests/conftest.py),
login roles for a person and an agent, and "machines" (separate local cache folders)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import synapse_nb as syn
from synapse_nb.store.postgres.server import PgServer, ServerUnavailable
from synapse_nb.team import open_team_vault


def url_as(url: str, user: str) -> str:
    """The same server URL, logged in as ``user`` (trust authentication on the test server)."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{user}@{rest.split('@', 1)[-1]}"


@pytest.fixture()
def project(new_team_project: Callable[[str], str]) -> str:
    return new_team_project("t")


@pytest.fixture()
def team_url(pg_admin_url: str, project: str) -> str:
    """The admin URL of a fresh project (``?project=...``)."""
    return f"{pg_admin_url}?project={project}"


@pytest.fixture()
def logins(pg_admin_url: str, project: str) -> dict[str, str]:
    """Login roles: ``human`` (member of <project>_human) and ``agent`` (member of <project>_agent, granted every
    mind as ``team init --agent`` does): their URLs."""
    out = {}
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        for who in ("human", "agent"):
            login = f"{project}_{who}_login"
            c.execute(f"CREATE ROLE {login} LOGIN IN ROLE {project}_{who}")
            out[who] = url_as(pg_admin_url, login) + f"?project={project}"
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (f"{project}_agent_login",))
    return out


@pytest.fixture()
def machine(tmp_path: Path) -> Iterator[Callable[..., syn.Vault]]:
    """``machine(name, url, **kw)``: a team vault handle whose caches live in their own folder (one per name)."""
    opened: list[Any] = []

    def open_one(name: str, url: str, **kw: Any) -> syn.Vault:
        folder = tmp_path / f"machine_{name}"
        folder.mkdir(exist_ok=True)
        v = open_team_vault(url, local=folder, **kw)
        opened.append(v)
        return v

    yield open_one
    for v in opened:
        v.close()


@pytest.fixture()
def own_server(pg_admin_url: str, launch_pg_server: Callable[[], PgServer]) -> Iterator[PgServer]:
    """A server of the test's own, which it may stop or kill (the session's server keeps serving the others)."""
    try:
        srv = launch_pg_server()
    except ServerUnavailable as exc:  # pragma: no cover - the session server started, so this one does too
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))
    yield srv
    srv.destroy()


@pytest.fixture()
def human(team_url: str, machine: Callable[..., syn.Vault]) -> syn.Vault:
    """A person's handle on the team vault."""
    return machine("h", team_url)


@pytest.fixture()
def agent_sql(logins: dict[str, str], project: str) -> Iterator[psycopg.Connection[Any]]:
    """A raw connection as the agent login, autocommit (each statement its own transaction): what an agent's own
    SQL can do, past the package."""
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        yield c
