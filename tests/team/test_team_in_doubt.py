"""An attempt in doubt counts only as the person's own login's (review 57, finding 5).

``in-doubt.json`` in a machine's cache folder keeps the writes whose commit could not be looked up, so that their
retry returns what the first attempt wrote instead of writing it twice (tests/team/test_team_exactly_once.py). An
agent planted an entry under the hash of the person's next call, with the transaction id of a commit of its own
login and the id of the person's memory: the person's ``remember`` printed "updated" and wrote nothing. Now the
write transaction leaves a mark with its commit (migration 23: a random nonce the entry keeps, the call's name; the
server sets the login and transaction), and a retry believes a commit only on a mark of its own login.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import synapse_nb.store.postgres.pool as pgpool
from synapse_nb.errors import CommitUnknownError
from synapse_nb.store.postgres import IN_DOUBT
from tests.team.proxy import CutProxy

#: The look-up's own window; shortened only while the server cannot be reached.
RESOLVE_SECONDS = pgpool.COMMIT_RESOLVE_SECONDS
NEW = "deploy with make release; NEVER pass --force (it skipped the migrations in the March outage)"


def _call_key(v: Any, category: str, key: str, text: str) -> tuple[Any, ...]:
    """The exactly-once key of ``v.remember(category, key, text)``, as the package computes it (read off a real call
    of the same form, so the planted entry is the one the person's next call looks up)."""
    seen: list[Any] = []
    store = v._store
    real = store.once

    def spy(k: Any, call: Callable[[], Any]) -> tuple[bool, Any]:
        seen.append(k)
        return real(k, call)

    store.once = spy
    try:
        v.remember(category, key, "the probe's text")
    finally:
        del store.once
    (probe,) = seen
    assert probe[3] == repr((category, key, "the probe's text"))
    return (*probe[:3], repr((category, key, text)), *probe[4:])


def _plant(folder: Path, key: tuple[Any, ...], entry: dict[str, Any]) -> None:
    path = folder / IN_DOUBT
    path.write_text(json.dumps({pgpool.op_name(key): entry}), encoding="utf-8")
    path.chmod(0o600)  # a file as the package writes it: only the mark decides


@pytest.mark.parametrize("forged", ["review", "full_shape", "agent_mark"])
def test_a_planted_entry_never_drops_the_persons_write(forged: str, logins: dict[str, str], machine: Any,
                                                       agent_sql: psycopg.Connection[Any], project: str) -> None:
    """review: the reproduction's entry (no nonce); full_shape: an entry of the package's shape with a made-up
    nonce; agent_mark: the agent's own SQL writes a mark for the person's call (naming the person's login) and
    plants its nonce and transaction. Each time the person's write is made: the text changes, history has it."""
    person = machine("p", logins["human"])
    mem = person.remember("procedure", "deploy", "deploy uses make release, never --force")
    key = _call_key(person, "procedure", "deploy", NEW)
    versions = len(person.history(mem.id))
    if forged == "agent_mark":
        nonce = secrets.token_hex(16)
        row = agent_sql.execute("INSERT INTO write_marks(nonce, op, login) VALUES (%s, %s, %s) RETURNING xid::text, "
                                "login", (nonce, pgpool.op_name(key), logins["human"].split("//")[1].split("@")[0]))
        xid, login = row.fetchone()
        assert login == f"{project}_agent_login"  # the server set the login that wrote it, whatever the statement said
    else:
        nonce = secrets.token_hex(16)
        xid = str(agent_sql.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # committed (autocommit)
    entry: dict[str, Any] = {"xid": xid, "first_stamp": None, "written": [["memory", mem.id, False]]}
    if forged != "review":
        entry |= {"nonce": nonce, "first_stamp": mem.updated_at}
    _plant(Path(person.path), key, entry)
    out = person.remember("procedure", "deploy", NEW)
    assert out.id == mem.id and out.content == NEW
    assert person.memories.get(mem.id).content == NEW
    assert len(person.history(mem.id)) == versions + 1  # the write is in history
    assert pgpool.op_name(key) not in json.loads((Path(person.path) / IN_DOUBT).read_text(encoding="utf-8"))


def test_the_agent_login_neither_reads_nor_spends_the_persons_marks(logins: dict[str, str], machine: Any,
                                                                   agent_sql: psycopg.Connection[Any]) -> None:
    """A mark is its login's: another login sees none of it and deletes none of it."""
    person = machine("p", logins["human"])
    person.remember("knowledge", "fact", "a person's write made exactly once")
    store = person._store
    with psycopg.connect(store.url, autocommit=True) as c:
        own = c.execute(f"SELECT nonce FROM {store.project}.write_marks").fetchall()
    assert own  # the remember left its mark (one a write transaction of it)
    assert agent_sql.execute("SELECT count(*) FROM write_marks").fetchone()[0] == 0
    assert agent_sql.execute("SELECT spend_write_mark(%s)", own[0]).fetchone() == (0,)  # the way marks are spent
    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # no DELETE on the table: no lock on it (migration 29)
        agent_sql.execute("DELETE FROM write_marks WHERE nonce = %s", own[0])
    with psycopg.connect(store.url, autocommit=True) as c:
        assert c.execute(f"SELECT count(*) FROM {store.project}.write_marks").fetchone()[0] == len(own)


@pytest.fixture()
def proxy(pg_admin_url: str) -> Iterator[CutProxy]:
    port = int(pg_admin_url.rsplit(":", 1)[1].split("/", 1)[0])
    with CutProxy(port) as p:
        yield p


def _in_doubt(v: Any, proxy: CutProxy, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """A decision whose COMMIT reached the server while the look-up could not: CommitUnknownError, as in
    tests/team/test_team_exactly_once.py."""
    v._store.keeper = None  # its own commits would take the cut meant here
    v.decisions.create("warm up")
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", 0.3)
    proxy.cut("after")
    proxy.refuse()
    with pytest.raises(CommitUnknownError):
        v.decisions.create(text)
    proxy.accept()
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", RESOLVE_SECONDS)


def test_a_genuine_entry_still_returns_the_first_attempts_record(team_url: str, proxy: CutProxy, machine: Any,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 pg_admin_url: str) -> None:
    """The person's own attempt in doubt: its entry (this user's alone) holds the mark's nonce; the retry finds the
    mark, returns the record written, writes nothing, and spends the mark."""
    v = machine("cli", proxy.url(team_url))
    _in_doubt(v, proxy, monkeypatch, "decided once")
    path = Path(v.path) / IN_DOUBT
    assert path.stat().st_mode & 0o777 == 0o600
    (entry,) = json.loads(path.read_text(encoding="utf-8")).values()
    assert len(entry["nonce"]) == 32 and entry["first_stamp"]
    again = v.decisions.create("decided once")
    assert [d.id for d in v.decisions.list() if d.decision == "decided once"] == [again.id]
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert c.execute(f"SELECT count(*) FROM {v._store.project}.write_marks WHERE nonce = %s",
                         (entry["nonce"],)).fetchone()[0] == 0  # spent: a copy planted again is not believed


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_an_entry_file_others_may_write_is_set_aside(mode: int, team_url: str, proxy: CutProxy, machine: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of entries writable by the group or others is no file of the package's: set aside, the call is made
    (here the first attempt had committed, so the decision is there twice: what setting the file aside costs)."""
    v = machine("cli", proxy.url(team_url))
    _in_doubt(v, proxy, monkeypatch, "decided in doubt")
    (Path(v.path) / IN_DOUBT).chmod(mode)
    v.decisions.create("decided in doubt")
    assert len([d for d in v.decisions.list() if d.decision == "decided in doubt"]) == 2


def test_an_entry_file_another_user_owns_is_set_aside(team_url: str, machine: Any) -> None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    v = machine("p", team_url)
    path = Path(v.path) / IN_DOUBT
    path.write_text(json.dumps({"a" * 64: {"xid": "1"}}), encoding="utf-8")
    path.chmod(0o600)
    assert v._store._doubts() == {"a" * 64: {"xid": "1"}}
    os.chown(path, 65534, 65534)
    assert v._store._doubts() == {}


@contextlib.contextmanager
def _running_transaction(url: str) -> Iterator[str]:
    """A transaction kept running (an active statement, so no idle timeout ends it) on a connection of ``url``'s
    login: its id, while it runs."""
    conn = psycopg.connect(url.split("?")[0])  # not autocommit: the statements below are one transaction
    xid = str(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0])  # type: ignore[index]
    pid = conn.info.backend_pid
    sleeper = threading.Thread(target=_quietly, args=(conn, "SELECT pg_sleep(60)"), daemon=True)
    sleeper.start()
    try:
        yield xid
    finally:
        with psycopg.connect(url.split("?")[0], autocommit=True) as c:
            c.execute("SELECT pg_cancel_backend(%s)", (pid,))
        sleeper.join(10)
        conn.close()


def _quietly(conn: psycopg.Connection[Any], sql: str) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.execute(sql)


def test_an_entry_naming_another_logins_running_transaction_is_set_aside(logins: dict[str, str], machine: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 59 (F3): an entry of the package's shape naming a transaction the agent's own login keeps running held
    every attempt of the person's write for the look-up's whole window (10 s) and was kept. No backend of the
    person's login holds that transaction, so it cannot be the person's cut commit: set aside, the write is made."""
    # a window far longer than the write's own work, however busy the machine (against the usual 10 s, a write
    # that took half of it could not be told from one slowed by the machine): a look-up that waited takes 60 s
    window = 60.0
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", window)
    person = machine("p", logins["human"])
    mem = person.remember("procedure", "deploy", "deploy uses make release, never --force")
    key = _call_key(person, "procedure", "deploy", NEW)
    with _running_transaction(logins["agent"]) as xid:
        _plant(Path(person.path), key, {"xid": xid, "nonce": "0" * 32, "first_stamp": None,
                                        "written": [["memory", mem.id, False]]})
        started = time.monotonic()
        out = person.remember("procedure", "deploy", NEW)
        took = time.monotonic() - started
    assert out.content == NEW and person.memories.get(mem.id).content == NEW
    assert took < window / 2, took
    assert pgpool.op_name(key) not in json.loads((Path(person.path) / IN_DOUBT).read_text(encoding="utf-8"))


def test_an_entry_of_a_transaction_this_login_runs_waits_and_names_its_file(logins: dict[str, str], machine: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction a backend of the person's own login still runs may be its cut commit: waited for (the write is
    not made), and the error names the entry's file and how to set it aside; the entry is kept."""
    person = machine("p", logins["human"])
    mem = person.remember("procedure", "deploy", "deploy uses make release, never --force")
    key = _call_key(person, "procedure", "deploy", NEW)
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", 1.0)
    path = Path(person.path) / IN_DOUBT
    with _running_transaction(logins["human"]) as xid:
        _plant(Path(person.path), key, {"xid": xid, "nonce": "0" * 32, "first_stamp": None,
                                        "written": [["memory", mem.id, False]]})
        with pytest.raises(CommitUnknownError) as err:
            person.remember("procedure", "deploy", NEW)
    assert str(path) in str(err.value) and "set the entry aside" in str(err.value)
    assert pgpool.op_name(key) in json.loads(path.read_text(encoding="utf-8"))
    assert person.memories.get(mem.id).content != NEW
