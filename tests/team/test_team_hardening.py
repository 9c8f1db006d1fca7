"""What no client of a team vault controls (issue 29): the write clock (D3), the locks (D4) and the minds it may see.

- Stamps come from the server: one machine's clock 365 days fast or slow moves nothing, and no role can call a
  function with a time (``next_stamp('2999-...')``) or write the clock row.
- No person's or agent's role can ``LOCK TABLE``; a writer that stalls holding the project's write lock (a process
  stopped with SIGSTOP, a psql session left in a transaction) holds the others back at most ``lock_timeout``
  (then they get a clear ``BusyError``) and is ended by the server after ``idle_in_transaction_session_timeout``;
  readers never wait.
- An agent login sees and writes only the minds granted to it (row-level security), with raw SQL as through the API.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql
import pytest

import synapse_nb.context
import synapse_nb.vault.facade
from synapse_nb._util import fmt_ts
from synapse_nb.errors import BusyError, PermissionDeniedError
from synapse_nb.store.postgres.migrate import LOCK_TIMEOUT
from synapse_nb.team import grant, init
from tests.team.conftest import url_as

LOCK_S = float(LOCK_TIMEOUT.rstrip("s"))


def _login(admin_url: str, project: str, name: str, kind: str, minds: tuple[str, ...] = ("*",)) -> str:
    """A login role added the way `team init --human/--agent` adds it; its URL."""
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {name} LOGIN")
    init(f"{admin_url}?project={project}", **{f"{kind}s": (name,)}, minds=minds)
    return url_as(admin_url, name)


# -- D3: the clock -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("skew_days", [365, -365])
def test_a_machine_with_a_skewed_clock_moves_no_stamp(skew_days: int, team_url: str, machine: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    honest = machine("honest", team_url)
    first = honest.decisions.create("before the skewed machine")
    skewed_now = lambda: datetime.now(UTC) + timedelta(days=skew_days)  # noqa: E731
    monkeypatch.setattr(synapse_nb.vault.facade, "utcnow", skewed_now)
    monkeypatch.setattr(synapse_nb.context, "utcnow", skewed_now)
    skewed = machine("skewed", team_url)
    written = [first]
    for n in range(3):
        written.append(skewed.decisions.create(f"from the skewed machine {n}"))
        written.append(honest.decisions.create(f"from the honest machine {n}"))
    real_after = fmt_ts(datetime.now(UTC) + timedelta(seconds=1))
    stamps = [d.created_at for d in written]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # in write order, strictly increasing
    assert first.created_at <= stamps[-1] < real_after  # the server's clock: neither a year ahead nor behind


def test_no_role_can_set_the_clock(team_url: str, machine: Any, logins: dict[str, str], project: str) -> None:
    v = machine("m", team_url)
    v.remember("knowledge", "k", "before")
    for who in ("agent", "human"):
        with psycopg.connect(logins[who].split("?")[0], autocommit=True) as c:
            c.execute(f"SET search_path = {project}")
            with pytest.raises(psycopg.errors.UndefinedFunction):  # no function takes a time any more
                c.execute("SELECT next_stamp('2999-01-01T00:00:00.000000Z')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("INSERT INTO meta(key, value) VALUES ('clock', '2999-01-01T00:00:00.000000Z') "
                          "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            stamp = c.execute("SELECT next_stamp()").fetchone()
            assert stamp is not None and stamp[0] < fmt_ts(datetime.now(UTC) + timedelta(seconds=1))
    assert v.remember("knowledge", "k2", "after").created_at < fmt_ts(datetime.now(UTC) + timedelta(seconds=1))


# -- D4: locks -------------------------------------------------------------------------------------------------
#: Every LOCK mode stronger than a write's own (ROW EXCLUSIVE, which INSERT, UPDATE and DELETE take): SHARE and up wait
#: for a person's writes and make them wait, ACCESS EXCLUSIVE a person's reads and pg_dump too.
STRONGER_THAN_A_WRITE = ("SHARE UPDATE EXCLUSIVE", "SHARE", "SHARE ROW EXCLUSIVE", "EXCLUSIVE", "ACCESS EXCLUSIVE")


def test_no_role_can_lock_a_table(team_url: str, machine: Any, logins: dict[str, str], project: str,
                                  pg_admin_url: str) -> None:
    """Every relation of the project that LOCK TABLE takes (tables, partitioned tables, views: read from the catalog,
    so a table a later migration adds is tried too), every mode a person's write or read waits for, as the agent's
    and the person's login: refused (review 85: migration 23's DELETE on write_marks let the agent lock it)."""
    v = machine("m", team_url)
    mine = v.remember("knowledge", "k", "c")
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        tables = [r[0] for r in c.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s "
            "AND c.relkind IN ('r', 'p', 'v') ORDER BY 1", (project,)).fetchall()]
    assert len(tables) > 30 and {"memories", "gate_stats", "write_marks", "schema_version"} <= set(tables)
    for who in ("agent", "human"):
        login = logins[who].split("//")[1].split("@")[0]
        with psycopg.connect(logins[who].split("?")[0]) as c:  # a transaction, as LOCK needs
            c.execute("SET lock_timeout = '1s'")
            c.commit()
            for table in tables:
                name = psycopg.sql.Identifier(project, table)
                rights = c.execute("SELECT has_table_privilege(%s, %s, 'UPDATE, DELETE, TRUNCATE')",
                                   (login, f"{project}.{table}")).fetchone()
                assert rights == (False,), (who, table)  # what PostgreSQL 15 takes for any mode above ROW EXCLUSIVE
                for mode in STRONGER_THAN_A_WRITE:
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        c.execute(psycopg.sql.SQL("LOCK TABLE {} IN {} MODE").format(name, psycopg.sql.SQL(mode)))
                    c.rollback()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(f"TRUNCATE {project}.memories")
            c.rollback()
    # the roles still delete what the gate lets them, through the checked functions
    agent = machine("bot", logins["agent"], actor="agent")
    own = agent.remember("knowledge", "bot_fact", "an agent's own memory")
    agent.memories.delete(own.id)
    with pytest.raises(PermissionDeniedError, match="may not delete"):
        agent.memories.delete(mine.id)
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:  # the function itself refuses too
        c.execute(f"SET search_path = {project}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="delete the user's memory"):
            c.execute("SELECT * FROM delete_record('memories', %s)", (mine.id,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="delete from decisions"):
            c.execute("SELECT * FROM delete_record('decisions', 'dec_x')")
    human = machine("person", logins["human"])
    human.memories.delete(mine.id)
    assert [m.key for m in v.memories.list()] == []


def test_the_roles_team_init_adds_carry_the_timeouts(pg_admin_url: str, project: str) -> None:
    for kind in ("human", "agent"):
        url = _login(pg_admin_url, project, f"{project}_{kind}_timeouts", kind)
        with psycopg.connect(url) as c:
            assert c.execute("SHOW lock_timeout").fetchone()[0] == LOCK_TIMEOUT  # type: ignore[index]
            assert c.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == "30s"  # type: ignore[index]


HOLDER = textwrap.dedent("""
    import sys, time
    import synapse_nb.store.postgres.migrate as m
    m.IDLE_IN_TRANSACTION_TIMEOUT = sys.argv[3]   # the server ends this session that long after it stalls
    from synapse_nb.team import open_team_vault
    v = open_team_vault(sys.argv[1], local=sys.argv[2])
    with v.transaction():
        v.remember("knowledge", "held", "written by the client that stalls")
        print("holding", flush=True)
        time.sleep(120)
""")


def test_a_stalled_writer_holds_the_others_back_at_most_lock_timeout(team_url: str, machine: Any, tmp_path: Path,
                                                                     logins: dict[str, str], project: str) -> None:
    writer, reader = machine("writer", team_url), machine("reader", team_url)
    writer.remember("knowledge", "deploys", "deploys go through the canary first")
    reader.recall("how do deploys go?")

    # a psql-like session left in a transaction, holding the project's write lock
    with psycopg.connect(logins["human"].split("?")[0]) as held:
        held.execute(f"SET search_path = {project}")
        held.execute("SELECT next_stamp()")
        t0 = time.monotonic()
        with pytest.raises(BusyError, match=f"another client held the team vault's write lock for {LOCK_TIMEOUT}"):
            writer.remember("knowledge", "blocked", "waits for the lock")
        waited = time.monotonic() - t0
        # one lock_timeout waited (the server's: a busy machine only adds to it), not two: bounds relative to the
        # limit: the client's own work around the wait (+1 s before) can take longer than that on a busy machine
        assert LOCK_S - 0.5 < waited < 2 * LOCK_S
        t0 = time.monotonic()
        assert reader.recall("how do deploys go?").items  # readers never wait
        # a reader that waited for the lock would wait lock_timeout (the lock is held past these lines) and fail
        assert reader.memories.list() and time.monotonic() - t0 < LOCK_S

    # a client process stopped (SIGSTOP) while it holds the lock: the server ends its session after the idle timeout
    folder = tmp_path / "stalled"
    folder.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, team_url, str(folder), "2s"], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        os.kill(proc.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        assert reader.recall("how do deploys go?").items and time.monotonic() - t0 < LOCK_S  # (as above)
        # proceeds within one lock_timeout (a wait longer than that is a BusyError): the server ended the session
        # 2 s after it stalled; under 2 * lock_timeout: the write was not retried after a BusyError
        t0 = time.monotonic()
        writer.remember("knowledge", "after_stall", "proceeds once the server ended the stalled session")
        assert time.monotonic() - t0 < 2 * LOCK_S
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert "held" not in [m.key for m in writer.memories.list()]  # the stalled transaction was rolled back
    assert writer._store.integrity_check() == "ok"


# -- minds -----------------------------------------------------------------------------------------------------
def test_an_agent_login_sees_and_writes_only_its_granted_minds(pg_admin_url: str, project: str, team_url: str,
                                                               machine: Any) -> None:
    people = machine("people", team_url)
    for mind in ("alpha", "beta"):
        people.with_mind(mind).remember("knowledge", f"{mind}_secret", f"only for {mind}")
    a_url = _login(pg_admin_url, project, f"{project}_agent_a", "agent", minds=("alpha",))
    assert grant(team_url, f"{project}_agent_a", "alpha")["minds"] == ["alpha"]

    with psycopg.connect(a_url, autocommit=True) as c:  # raw SQL as the agent's own login
        c.execute(f"SET search_path = {project}")
        assert [r[0] for r in c.execute("SELECT DISTINCT mind FROM memories ORDER BY 1")] == ["alpha"]
        assert [r[0] for r in c.execute("SELECT DISTINCT mind FROM gate_candidates ORDER BY 1")] == ["alpha"]
        assert [r[0] for r in c.execute("SELECT DISTINCT mind FROM change_log ORDER BY 1")] == ["alpha"]
        assert c.execute("SELECT count(*) FROM memories WHERE mind = 'beta'").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                      "created_at, updated_at, terms) VALUES ('mem_x', 'beta', 'knowledge', 'k', 'c', 2, 'agent', 0, "
                      "0.5, '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', '{c}')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT * FROM mind_grants")

    a_beta = machine("a", f"{a_url}?project={project}", mind="beta", actor="agent")
    assert a_beta.memories.list() == [] and a_beta.recall("what is only for beta?").items == ()
    with pytest.raises(PermissionDeniedError):
        a_beta.remember("knowledge", "intruder", "written into a mind not granted")
    a_alpha = machine("a2", f"{a_url}?project={project}", mind="alpha", actor="agent")
    assert [m.key for m in a_alpha.memories.list()] == ["alpha_secret"]
    a_alpha.remember("knowledge", "alpha_note", "an agent writes in its own mind")

    # revoked: nothing left; granted every mind (by the CLI): both
    grant(team_url, f"{project}_agent_a", "alpha", revoke=True)
    assert a_alpha.memories.list() == []
    from typer.testing import CliRunner

    from synapse_nb.cli import app

    out = CliRunner().invoke(app, ["team", "grant", team_url, f"{project}_agent_a", "--mind", "*", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["minds"] == ["*"], out.output
    assert len(a_beta.memories.list()) == 1
