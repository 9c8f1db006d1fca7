"""Exactly-once writes when the connection dies during COMMIT (issue 29, D1).

A TCP proxy on 127.0.0.1 (tests/team/proxy.py) cuts the client's connection right after forwarding its COMMIT (the
server commits, the client never hears it) or right before (the server never sees it). Every write kind is cut
again and again: the store looks the transaction up (``pg_xact_status``) instead of guessing, so a cut that
committed is a success with one record, a cut that did not is an ``OfflineError`` saying nothing was written
(retried here, as the message says), and when the server cannot even be asked the caller gets
``CommitUnknownError``, whose recommended retry (the same call on the same handle) returns the record the first
attempt wrote. Never a second record. The default run cuts each kind 6 times (3 after, 3 before); the
``slow``-marked variant 50 times per kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import synapse_nb.store.postgres.pool as pgpool
from synapse_nb.errors import CommitUnknownError, OfflineError
from tests.team.proxy import CutProxy

#: The look-up's own window; the tests shorten it only while the server cannot be reached.
RESOLVE_SECONDS = pgpool.COMMIT_RESOLVE_SECONDS

#: kind -> (write the n-th record on a vault, the n-th record's text as stored, list the kind's texts)
KINDS: dict[str, tuple[Callable[[Any, int], Any], Callable[[Any], list[str]]]] = {
    "memory": (lambda v, n: v.remember("knowledge", f"fact_{n}", f"memory number {n}"),
               lambda v: [m.content for m in v.memories.list()]),
    "decision": (lambda v, n: v.decisions.create(f"decision number {n}"),
                 lambda v: [d.decision for d in v.decisions.list()]),
    "checkpoint": (lambda v, n: v.checkpoints.create(f"checkpoint number {n}"),
                   lambda v: [c.doing for c in v.checkpoints.list()]),
    "episode": (lambda v, n: v.episodes.log(f"task_{n}", status="success", outcome=f"episode number {n}"),
                lambda v: [e.outcome for e in v.episodes.history(limit=None)]),
    "lesson": (lambda v, n: v.lessons.create(f"lesson number {n}"),
               lambda v: [les.summary for les in v.lessons.list()]),
    "note": (lambda v, n: v.notes.add(f"note_{n}", f"when number {n}", f"note number {n}"),
             lambda v: [x.body for x in v.notes.list()]),
}


@pytest.fixture()
def proxy(pg_admin_url: str) -> Iterator[CutProxy]:
    port = int(pg_admin_url.rsplit(":", 1)[1].split("/", 1)[0])
    with CutProxy(port) as p:
        yield p


def _cut_writes(vault: Any, proxy: CutProxy, kind: str, cuts: int) -> None:
    write, texts = KINDS[kind]
    vault._store.keeper = None  # its own commits (the offline copy's feed position) would take the cut meant here
    outcomes = {"committed": 0, "retried": 0}
    for n in range(cuts):
        proxy.cut("after" if n % 2 == 0 else "before")
        try:
            write(vault, n)
            outcomes["committed"] += 1
        except OfflineError as exc:  # the server says the commit did not happen: retry, as the message says
            assert "nothing was written" in str(exc)
            write(vault, n)
            outcomes["retried"] += 1
        assert proxy.pending_cuts() == 0, "the write sent no COMMIT through the proxy"
    stored = texts(vault)
    for n in range(cuts):
        want = [t for t in stored if t is not None and t.endswith(f"number {n}")]
        assert len(want) == 1, f"{kind} {n}: {len(want)} records after a cut commit (0 lost, 0 duplicated wanted)"
    assert len(stored) == cuts
    # a cut after the COMMIT was forwarded mostly commits (and the caller is told so); a reset connection can still
    # lose the COMMIT on its way in, which the look-up then reports as not written: either way, one record
    assert outcomes["committed"] >= cuts // 4
    assert vault._store.integrity_check() == "ok"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_commit_cut_off_is_written_exactly_once(kind: str, team_url: str, proxy: CutProxy, machine: Any) -> None:
    v = machine("cut", proxy.url(team_url))
    _cut_writes(v, proxy, kind, 6)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fifty_cut_commits_per_kind_write_each_record_once(kind: str, team_url: str, proxy: CutProxy,
                                                           machine: Any) -> None:
    v = machine("cut", proxy.url(team_url))
    _cut_writes(v, proxy, kind, 50)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_unknown_outcome_retried_as_the_message_says_returns_the_first_record(
        kind: str, team_url: str, proxy: CutProxy, machine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server cannot be asked while the commit is looked up: CommitUnknownError; the same call again on the same
    handle, once the server is back, asks it and returns what the first attempt wrote (same id), writing nothing."""
    write, texts = KINDS[kind]
    v = machine("unknown", proxy.url(team_url))
    write(v, 0)  # the pool is connected
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", 0.3)  # the refused look-up gives up quickly
    proxy.cut("after")
    proxy.refuse()  # every new connection (the look-up's too) is closed at once
    with pytest.raises(CommitUnknownError, match="make the same call again on this machine"):
        write(v, 1)
    proxy.accept()
    # the retry's look-up gets the usual window: 0.3 s may not even cover its connection on a loaded machine
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", RESOLVE_SECONDS)
    again = write(v, 1)
    first = [t for t in texts(v) if t is not None and t.endswith("number 1")]
    assert len(first) == 1 and len(texts(v)) == 2
    assert [t for t in texts(v) if t == first[0]] == first and again.id.startswith(again.prefix)
    # the look-up is spent: a later identical call is a new write (a memory's key, a note's name: the same record)
    assert (write(v, 1).id == again.id) == (kind in ("memory", "note"))


def test_the_retry_may_come_from_another_process_on_the_machine(team_url: str, proxy: CutProxy, machine: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The attempt in doubt is kept in the machine's cache folder: the same CLI command run again (a new handle, as a
    new process opens) asks the server about it and returns the first attempt's record."""
    first = machine("cli", proxy.url(team_url))
    first.decisions.create("warm up")
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", 0.3)
    proxy.cut("after")
    proxy.refuse()
    with pytest.raises(CommitUnknownError):
        first.decisions.create("decided once, retried by a new process")
    proxy.accept()
    monkeypatch.setattr(pgpool, "COMMIT_RESOLVE_SECONDS", RESOLVE_SECONDS)  # the retry's look-up: the usual window
    first.close()
    again = machine("cli", proxy.url(team_url))  # the same machine folder, a new handle
    dec = again.decisions.create("decided once, retried by a new process")
    assert [d.id for d in again.decisions.list() if d.decision.startswith("decided once")] == [dec.id]


def test_a_committed_answer_is_read_back_before_it_is_believed(team_url: str, machine: Any) -> None:
    """After a server crash a transaction id that never reached the log is handed out again, so the server may report
    another transaction's commit for it: the look-up reads back what the transaction wrote, and only believes a
    commit whose records are there."""
    from synapse_nb.models import TABLES

    v = machine("m", team_url)
    mem = v.remember("knowledge", "there", "a committed record")
    store = v._store
    with store.transaction() as c:  # some committed transaction, as another client's reusing the id
        xid = str(c.execute("SELECT pg_current_xact_id()::text").fetchone()[0])
        store.stamp("")
    url, project = store.url, store.project
    ours = pgpool.written_check(project, TABLES, {("memory", mem.id): False}, mem.updated_at)
    assert pgpool.resolve_commit(url, xid, 0, ours) == "committed"  # its records are there
    never = pgpool.written_check(project, TABLES, {("decision", "dec_000000000000"): False}, mem.updated_at)
    assert pgpool.resolve_commit(url, xid, 0, never) == "aborted"  # committed says the id; the record is not there
    future = str(int(xid) + 10**6)
    assert pgpool.resolve_commit(url, future, 0, never) == "aborted"  # an id the server never handed out
