"""Review 85 F1 and F5: the locks a team vault's logins can hold, and what a person reads when one is held.

- Migration 29 takes table-level DELETE on ``write_marks`` back from people and agents (migration 23 had given it, and
  with it every LOCK mode: an agent's ``LOCK TABLE write_marks IN ACCESS EXCLUSIVE MODE`` held every write made exactly
  once, which the person read as "the server went away while committing"); marks are spent by ``spend_write_mark``.
  ``tests/team/test_team_hardening.py`` tries every mode on every table of the catalog.
- A lock a COMMIT waited for past ``lock_timeout``, and a deadlock, are the server's answer (rolled back): a
  :class:`BusyError` naming the lock, never a connection that went away.
- ``team init`` waits for the project's migration lock (any login may hold it at session level) and for its tables'
  locks at most ``MIGRATION_LOCK_WAIT``, then names the session holding it.
"""

from __future__ import annotations

import re
import secrets
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from synapse_nb.errors import BusyError, CommitUnknownError, OfflineError
from synapse_nb.store.postgres import migrate as pgmigrate
from synapse_nb.store.postgres.errors import map_error
from synapse_nb.store.postgres.migrate import CODE_VERSION, LOCK_CLASS, MIGRATIONS, Migration, migrate
from synapse_nb.team import init
from tests.team.conftest import url_as

DOCS = Path(__file__).resolve().parents[2] / "docs" / "team.md"


def _login(admin: psycopg.Connection[Any], project: str, kind: str) -> str:
    name = f"{project}_{kind}_{secrets.token_hex(3)}"
    admin.execute(f"CREATE ROLE {name} LOGIN IN ROLE {project}_{kind}")
    return name


def test_a_vault_migrated_to_29_keeps_its_marks_and_no_login_locks_them(pg_admin_url: str) -> None:
    """A project at 28, where the agent login could lock write_marks, migrated to 29: it no longer can, neither
    deletes a mark itself; its marks are still there, spent by spend_write_mark (its own only), and a new mark still
    drops its login's marks older than a day (the trigger now has the owner's rights)."""
    project = f"wml{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:28]) == (0, 28)
        agent, human = _login(c, project, "agent"), _login(c, project, "human")
        with psycopg.connect(url_as(pg_admin_url, agent)) as a:
            a.execute(f"LOCK TABLE {project}.write_marks IN ACCESS EXCLUSIVE MODE")  # what review 85 did, at 28
            a.rollback()
        with psycopg.connect(url_as(pg_admin_url, agent), autocommit=True) as a:
            for nonce in ("a" * 32, "b" * 32):
                a.execute(f"INSERT INTO {project}.write_marks(nonce, op) VALUES (%s, %s)", (nonce, "0" * 64))
        c.execute(f"UPDATE {project}.write_marks SET at = now() - interval '2 days' WHERE nonce = %s", ("b" * 32,))
        assert migrate(c, project, MIGRATIONS[:29]) == (28, 29)
        with psycopg.connect(url_as(pg_admin_url, agent)) as a:
            a.execute("SET lock_timeout = '1s'")
            for mode in ("SHARE", "EXCLUSIVE", "ACCESS EXCLUSIVE"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    a.execute(f"LOCK TABLE {project}.write_marks IN {mode} MODE")
                a.rollback()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                a.execute(f"DELETE FROM {project}.write_marks")
            a.rollback()
        with psycopg.connect(url_as(pg_admin_url, human), autocommit=True) as h:  # another login spends none of them
            assert h.execute(f"SELECT {project}.spend_write_mark(%s)", ("a" * 32,)).fetchone() == (0,)
        with psycopg.connect(url_as(pg_admin_url, agent), autocommit=True) as a:
            assert a.execute(f"SELECT nonce FROM {project}.write_marks ORDER BY 1").fetchall() == [("a" * 32,),
                                                                                                   ("b" * 32,)]
            a.execute(f"INSERT INTO {project}.write_marks(nonce, op) VALUES (%s, %s)", ("c" * 32, "0" * 64))
            assert a.execute(f"SELECT nonce FROM {project}.write_marks ORDER BY 1").fetchall() == [("a" * 32,),
                                                                                                   ("c" * 32,)]
            assert a.execute(f"SELECT {project}.spend_write_mark(%s)", ("a" * 32,)).fetchone() == (1,)
            assert a.execute(f"SELECT nonce FROM {project}.write_marks").fetchall() == [("c" * 32,)]
        c.execute(f"DROP SCHEMA {project} CASCADE")
        c.execute(f"DROP ROLE {agent}")
        c.execute(f"DROP ROLE {human}")


def test_a_lock_a_commit_waits_for_is_busy_not_a_server_gone_away(logins: dict[str, str], machine: Any,
                                                                   pg_admin_url: str, project: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A session holding write_marks locked (here the administrator's: no person's or agent's login can since
    migration 29) makes the person's remember, whose mark goes in with its COMMIT, wait lock_timeout: the server's
    answer, a BusyError naming a table lock, and nothing written; the next call after the lock is gone writes."""
    monkeypatch.setattr(pgmigrate, "LOCK_TIMEOUT", "1s")
    person = machine("p", logins["human"])
    person.remember("knowledge", "before", "written before the lock")
    with psycopg.connect(pg_admin_url) as holder:
        holder.execute(f"LOCK TABLE {project}.write_marks IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(BusyError) as got:
            person.remember("knowledge", "blocked", "waits for the table lock")
        holder.rollback()
    said = str(got.value)
    assert not isinstance(got.value, OfflineError | CommitUnknownError) and "went away" not in said
    assert "a lock on one of the team vault's tables for 1s" in said and "nothing was written" in said
    assert "unless the session set its own" in said  # what ends a holder's session, as it is
    assert [m.key for m in person.memories.list()] == ["before"]
    person.remember("knowledge", "blocked", "written once the lock is gone")
    assert sorted(m.key for m in person.memories.list()) == ["before", "blocked"]


def test_the_write_lock_and_a_deadlock_are_named(pg_admin_url: str) -> None:
    """The server's lock errors as a person reads them: the write lock (a row of gate_stats) by its name, a deadlock as
    one, also in a COMMIT's round trip (never "could not be asked whether the commit happened")."""
    project = f"wdl{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        migrate(c, project)
        c.execute(f"CREATE TABLE {project}.pair(id int PRIMARY KEY)")
        c.execute(f"INSERT INTO {project}.pair VALUES (1), (2)")
    first, second = psycopg.connect(pg_admin_url), psycopg.connect(pg_admin_url)
    try:
        first.execute(f"SELECT {project}.next_stamp()")
        second.execute("SET lock_timeout = '200ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable) as waited:
            second.execute(f"SELECT {project}.next_stamp()")
        second.rollback()
        first.rollback()
        assert "the team vault's write lock for" in str(map_error(waited.value))
        caught: list[BaseException] = []

        def take(conn: psycopg.Connection[Any], one: int, other: int, ready: threading.Barrier) -> None:
            try:
                conn.execute("SET deadlock_timeout = '100ms'")
                conn.execute(f"UPDATE {project}.pair SET id = id WHERE id = {one}")
                ready.wait()
                conn.execute(f"UPDATE {project}.pair SET id = id WHERE id = {other}")
            except psycopg.Error as exc:
                caught.append(exc)
            finally:
                conn.rollback()

        ready = threading.Barrier(2)
        threads = [threading.Thread(target=take, args=(first, 1, 2, ready)),
                   threading.Thread(target=take, args=(second, 2, 1, ready))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        (deadlock,) = caught
        assert isinstance(deadlock, psycopg.errors.DeadlockDetected)
        for committing in (False, True):
            err = map_error(deadlock, committing=committing)
            assert isinstance(err, BusyError) and "deadlock" in str(err) and "nothing was written" in str(err)
    finally:
        first.close()
        second.close()
        with psycopg.connect(pg_admin_url, autocommit=True) as c:
            c.execute(f"DROP SCHEMA {project} CASCADE")


def _end_after(pg_admin_url: str, pid: int, seconds: float) -> threading.Timer:
    """End session ``pid`` after ``seconds`` unless cancelled: a team init that waited without limit then goes on
    (and the test fails on what it returned) instead of hanging the test run."""
    def end() -> None:
        with psycopg.connect(pg_admin_url, autocommit=True) as c:
            c.execute("SELECT pg_terminate_backend(%s)", (pid,))
    timer = threading.Timer(seconds, end)
    timer.start()
    return timer


def test_team_init_names_the_session_holding_the_migration_lock(team_url: str, logins: dict[str, str],
                                                                project: str, pg_admin_url: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent login's session-level pg_advisory_lock on the project's migration lock (autocommit, idle: no idle
    timeout ends it) held team init forever; now it stops after MIGRATION_LOCK_WAIT, naming the session."""
    monkeypatch.setattr(pgmigrate, "MIGRATION_LOCK_WAIT", "1s")
    url = logins["agent"].split("?")[0] + "?application_name=held_by_the_agent"
    with psycopg.connect(url, autocommit=True) as held:
        held.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, project))
        pid = held.info.backend_pid
        timer = _end_after(pg_admin_url, pid, 60)
        try:
            with pytest.raises(BusyError) as got:
                init(team_url)
        finally:
            timer.cancel()
        said = str(got.value)
        assert said.startswith("`team init` waited 1s for the project's migration lock")
        assert f"pid {pid}, login {project}_agent_login, application 'held_by_the_agent'" in said
        assert "nothing was changed" in said and "pg_terminate_backend" in said
    assert init(team_url)["version"] == CODE_VERSION  # the session is gone: team init runs


def test_team_init_names_the_session_its_migration_waits_for(pg_admin_url: str, logins: dict[str, str],
                                                             project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A migration's DDL waits for a session's read of the table it changes (a transaction left open, its idle
    timeout switched off): at most MIGRATION_LOCK_WAIT, then the session and the lock it holds are named, and the
    whole migration is rolled back."""
    monkeypatch.setattr(pgmigrate, "MIGRATION_LOCK_WAIT", "1s")
    later = (*MIGRATIONS, Migration(CODE_VERSION + 1, "a later migration", "ALTER TABLE memories ADD COLUMN later int"))
    with psycopg.connect(logins["agent"].split("?")[0]) as reader, \
            psycopg.connect(pg_admin_url, autocommit=True) as admin:
        reader.execute("SET idle_in_transaction_session_timeout = 0")
        reader.execute(f"SELECT count(*) FROM {project}.memories").fetchone()
        timer = _end_after(pg_admin_url, reader.info.backend_pid, 60)
        try:
            with pytest.raises(BusyError, match=r"waited 1s for a lock on one of the project's tables .* login "
                                                rf"{project}_agent_login, .*idle in transaction, holding memories "
                                                r"AccessShareLock"):
                migrate(admin, project, later)
        finally:
            timer.cancel()
        assert pgmigrate.current_version(admin, project) == CODE_VERSION


def test_the_docs_list_every_migration() -> None:
    """docs/team.md's upgrade notes name the migrations in ranges that cover 1 to this code's version."""
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    listed = re.search(r"Migrations (\d+-\d+: .*?)\. ", text)
    assert listed is not None
    ranges = [tuple(map(int, r)) for r in re.findall(r"(?:^|; )(\d+)-(\d+): ", listed.group(1))]
    assert [n for a, b in ranges for n in range(a, b + 1)] == list(range(1, CODE_VERSION + 1)), ranges
