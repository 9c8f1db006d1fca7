"""Connection slots (review 57, finding 2): an agent login cannot take every connection slot of the server from the
people's logins (``CONNECTION LIMIT``, set by ``team init``), and a server that answers and refuses a connection is
a person's error naming its reason, never "offline" (no stale copy read instead)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

import synapse_nb as syn
from synapse_nb.errors import OfflineError, ServerRefusedError
from synapse_nb.store.postgres.errors import connect_error
from synapse_nb.store.postgres.migrate import AGENT_CONNECTION_LIMIT
from synapse_nb.store.postgres.server import PgServer
from synapse_nb.team import init, open_team_vault
from tests.team.conftest import url_as


def _limits(admin: str, *logins: str) -> list[int]:
    with psycopg.connect(admin, autocommit=True) as c:
        rows = [c.execute("SELECT rolconnlimit FROM pg_roles WHERE rolname = %s", (n,)).fetchone() for n in logins]
    return [int(r[0]) if r else 0 for r in rows]


def test_an_agent_login_at_its_limit_is_refused_while_the_person_recalls_live(
        pg_admin_url: str, team_url: str, project: str, machine: Callable[..., syn.Vault], tmp_path: Path) -> None:
    bot, alice = f"{project}_bot", f"{project}_alice"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {bot} LOGIN; CREATE ROLE {alice} LOGIN")
    init(team_url, humans=(alice,), agents=(bot,), local=tmp_path)
    assert _limits(pg_admin_url, bot, alice) == [AGENT_CONNECTION_LIMIT, -1]
    person_url = url_as(pg_admin_url, alice) + f"?project={project}"
    m = machine("writer", person_url).remember("procedure", "deploy", "deploy with make release")
    held: list[Any] = []
    try:
        for _ in range(AGENT_CONNECTION_LIMIT):  # the agent's own SQL holds every connection its login may have
            held.append(psycopg.connect(url_as(pg_admin_url, bot)))
        with pytest.raises(psycopg.OperationalError, match="too many connections for role"):
            held.append(psycopg.connect(url_as(pg_admin_url, bot)))
        with pytest.raises(ServerRefusedError, match=r"too many connections for role.*CONNECTION LIMIT") as refused:
            machine("agent", url_as(pg_admin_url, bot) + f"?project={project}", actor="agent", offline=True)
        assert not isinstance(refused.value, OfflineError)
        live = machine("laptop", person_url).recall("how do we deploy?")  # the person's login still connects
        assert not live.text.startswith("STALE") and [h.id for h in live.items][:1] == [m.id]
    finally:
        for c in held:
            c.close()


def test_team_init_caps_the_agent_logins_it_finds_and_keeps_a_limit_an_administrator_set(
        pg_admin_url: str, team_url: str, logins: dict[str, str], project: str, tmp_path: Path) -> None:
    agent, human, capped = f"{project}_agent_login", f"{project}_human_login", f"{project}_capped"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:  # agent logins made by hand or by an older version
        c.execute(f"CREATE ROLE {capped} LOGIN CONNECTION LIMIT 3 IN ROLE {project}_agent")
    assert _limits(pg_admin_url, agent, human, capped) == [-1, -1, 3]
    init(team_url, local=tmp_path)  # an upgrade: no --agent given
    assert _limits(pg_admin_url, agent, human, capped) == [AGENT_CONNECTION_LIMIT, -1, 3]


def test_a_login_the_server_refuses_is_an_error_not_the_stale_copy(
        pg_admin_url: str, team_url: str, project: str, machine: Callable[..., syn.Vault], tmp_path: Path) -> None:
    alice = f"{project}_alice"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {alice} LOGIN")
    init(team_url, humans=(alice,), local=tmp_path)
    url = url_as(pg_admin_url, alice) + f"?project={project}"
    v = machine("laptop", url)
    v.remember("procedure", "deploy", "deploy with make release")
    v.close()  # this machine keeps a copy of the vault
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"ALTER ROLE {alice} NOLOGIN")
    try:
        with pytest.raises(ServerRefusedError, match=rf'role "{alice}" is not permitted to log in.*team init'):
            machine("laptop", url, offline=True)
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as c:
            c.execute(f"ALTER ROLE {alice} LOGIN")


def test_team_init_says_a_refusal_as_every_open_does(pg_admin_url: str, project: str, tmp_path: Path) -> None:
    """`team init` raised a plain StoreError ("cannot reach the team vault server") on a server that answered and
    refused it, where every other connection raises ServerRefusedError naming the reason and what to do."""
    nobody = url_as(pg_admin_url, f"{project}_nobody") + f"?project={project}"  # a role the server does not know
    with pytest.raises(ServerRefusedError, match=rf'is up but refused this connection \(role "{project}_nobody" '
                                                 r"does not exist\).*team init URL --human LOGIN") as refused:
        init(nobody, local=tmp_path)
    assert not isinstance(refused.value, OfflineError)
    with pytest.raises(OfflineError, match=r"cannot reach the team vault server postgresql://a@127\.0\.0\.1:1/"):
        init(f"postgresql://a@127.0.0.1:1/team?project={project}", local=tmp_path)  # nothing listens: offline


@pytest.mark.parametrize(("text", "refused"), [
    ('connection to server at "h", port 1 failed: FATAL:  sorry, too many clients already', True),
    (('connection to server at "h", port 1 failed: FATAL:  remaining connection slots are reserved for '
      'non-replication superuser connections'), True),
    ('connection to server at "h", port 1 failed: FATAL:  password authentication failed for user "a"', True),
    ('connection to server at "h", port 1 failed: fe_sendauth: no password supplied', True),
    ('connection to server at "h", port 1 failed: FATAL:  database "x" does not exist', True),
    ('connection to server at "h", port 1 failed: FATAL:  permission denied for database "x"', True),
    ('connection to server at "h", port 1 failed: Connection refused Is the server running on that host?', False),
    ('connection to server at "h", port 1 failed: timeout expired', False),
    ("failed to resolve host 'nowhere.invalid': [Errno -2] Name or service not known", False),
    ('connection to server at "h", port 1 failed: FATAL:  the database system is shutting down', False),
    ('connection to server at "h", port 1 failed: FATAL:  the database system is starting up', False),
])
def test_only_a_server_that_cannot_be_reached_is_offline(text: str, refused: bool) -> None:
    err = connect_error(psycopg.OperationalError(text), "postgresql://a@h:1/db?project=p")
    assert isinstance(err, ServerRefusedError if refused else OfflineError)
    assert isinstance(err, OfflineError) is not refused
    if refused:
        assert "is up but refused this connection" in str(err) and text.split("FATAL:")[-1].strip() in str(err)


def test_a_full_server_gives_the_person_its_reason_not_a_stale_recall(own_server: PgServer, tmp_path: Path) -> None:
    """The review's case: every non-reserved slot held by another login; the person's CLI recall says why, and is
    no STALE answer from the local copy (which an agent can tamper with)."""
    with psycopg.connect(own_server.url, autocommit=True) as c:
        c.execute("CREATE ROLE alice LOGIN; CREATE ROLE hog LOGIN")
    init(f"{own_server.url}?project=slotsfull", humans=("alice",), local=tmp_path)
    url = url_as(own_server.url, "alice") + "?project=slotsfull"  # a person's login: no superuser's reserved slots
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("SYNAPSE_HOME", None)
    (tmp_path / "laptop").mkdir()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", url, *args], cwd=tmp_path / "laptop",
                              env=env, capture_output=True, text=True, timeout=120)

    assert cli("remember", "procedure", "deploy", "deploy with make release").returncode == 0
    (tmp_path / "desk").mkdir()
    desk = open_team_vault(url, local=tmp_path / "desk")  # a long-lived handle (a notebook, the MCP server)
    assert desk.recall("how do we deploy?").items
    held: list[Any] = []

    def fill() -> None:  # another login holds every connection slot left
        while True:
            try:
                held.append(psycopg.connect(url_as(own_server.url, "hog"), connect_timeout=5))
            except psycopg.OperationalError:
                return

    try:
        fill()
        out = cli("recall", "how do we deploy?")
        assert out.returncode != 0 and not out.stdout.startswith("STALE"), out
        assert "refused this connection (remaining connection slots are reserved" in out.stderr, out.stderr
        assert "not offline" in out.stderr and "CONNECTION LIMIT" in out.stderr, out.stderr
        for _ in range(20):  # the handle's pool may reconnect between the terminate and the fill: until it has none
            with psycopg.connect(own_server.url, autocommit=True) as admin:  # a superuser's reserved slot
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'alice'")
            fill()  # the slots the handle had are taken too
            # A terminated backend frees its slot when it exits (after the fill may have been refused), and a
            # reconnect still logging in is not yet in pg_stat_activity: settle, and only a quiet second fill counts
            time.sleep(0.5)
            before = len(held)
            fill()
            with psycopg.connect(own_server.url, autocommit=True) as admin:
                left = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = 'alice'").fetchone()
            if left is not None and left[0] == 0 and len(held) == before:
                break
        else:
            pytest.fail("the handle's pool kept reconnecting into the slots the test frees")
        with pytest.raises(ServerRefusedError, match="remaining connection slots are reserved"):
            desk.recall("how do we deploy?")  # its pool cannot reconnect: refused, not "went away"
    finally:
        desk.close()
        for c in held:
            c.close()


def test_the_full_server_hint_names_connections_that_never_log_in() -> None:
    """Review 59 (F2): raw TCP sockets that never log in took every slot; the refusal sent the administrator to
    pg_stat_activity, where they do not appear. The hint says so, and where they are seen and how they end."""
    text = 'connection to server at "h", port 1 failed: FATAL:  sorry, too many clients already'
    hint = str(connect_error(psycopg.OperationalError(text), "postgresql://a@h:1/db?project=p"))
    assert "pg_stat_activity" in hint and "never log in" in hint and "NOT there" in hint, hint
    assert "ss -tnp" in hint and "authentication_timeout" in hint and "firewall" in hint, hint
