"""Recall on a team vault: stamped with the version it read, "now" from the server, and few round trips."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb.context
import synapse_nb.vault.facade
from synapse_nb._util import fmt_ts
from synapse_nb.cli import app

TOPICS = ["deploys", "migrations", "backups", "timeouts", "caching", "retries"]


def _fill(v: Any, n: int = 24) -> None:
    for i in range(n):
        t = TOPICS[i % len(TOPICS)]
        v.remember("knowledge", f"{t}_{i}", f"{t} note {i}: how we handle {t} and {TOPICS[(i * 5) % 6]} safely",
                   tags=[t])
    v.decide("we deploy on fridays only with retries on", tags=["deploys"])


def test_two_machines_at_one_version_give_the_same_bytes_and_stamp(team_url: str, machine: Any) -> None:
    a, b = machine("a", team_url), machine("b", team_url)
    _fill(a)
    les = b.lessons.create("Reverted the cache change")
    a.lessons.approve(les.id)
    queries = [f"how do we handle {t}?" for t in TOPICS] + ["deploys and retries", "caching backups"]
    ra = [a.recall(q) for q in queries]
    rb = [b.recall(q) for q in queries]
    assert [r.text for r in ra] == [r.text for r in rb]
    assert {r.version for r in ra} == {r.version for r in rb} and len({r.version for r in ra}) == 1
    assert ra[0].version.isdigit()  # the server's gate_stats.version, not a per-machine counter
    assert [json.dumps(r.to_dict()) for r in ra] == [json.dumps(r.to_dict()) for r in rb]
    # a write anywhere moves the stamp for every machine; the same query then reads the new state
    before = ra[0].version
    b.remember("knowledge", "deploys_new", "deploys now go through the canary first")
    after_a, after_b = a.recall(queries[0]), b.recall(queries[0])
    assert after_a.version == after_b.version and int(after_a.version) > int(before)
    assert after_a.text == after_b.text and "canary" in after_a.text
    # a session's marks are not recall state: the stamp does not move with them
    r1 = a.recall("caching backups", session="s1")
    assert a.recall("caching backups", session="s1").version == r1.version


def test_the_cli_json_shows_the_version(team_url: str, machine: Any) -> None:
    a = machine("a", team_url)
    _fill(a, 6)
    out = CliRunner().invoke(app, ["--vault", team_url, "recall", "how do we handle deploys?", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["version"] == a.recall("how do we handle deploys?").version


def test_recall_now_is_the_servers_clock_unless_a_clock_is_given(team_url: str, machine: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    real = datetime.now(UTC)
    m = machine("w", team_url).remember("knowledge", "canary_rule", "deploys go through the canary first",
                                    expires=fmt_ts(real + timedelta(hours=1)))
    # a machine whose own clock runs a day ahead: by its clock the memory expired, by the server's it has not
    ahead = lambda: datetime.now(UTC) + timedelta(days=1)  # noqa: E731
    monkeypatch.setattr(synapse_nb.vault.facade, "utcnow", ahead)
    monkeypatch.setattr(synapse_nb.context, "utcnow", ahead)
    skewed = machine("skewed", team_url)
    assert [i.id for i in skewed.recall("how do deploys go through the canary?").items] == [m.id]
    # an injected clock (what tests freeze time with) still decides
    frozen = machine("frozen", team_url, clock=lambda: real + timedelta(days=1))
    assert frozen.recall("how do deploys go through the canary?").items == ()


def _without_ranking(v: Any) -> Callable[..., int]:
    """``cost(query, **kw)``: the round trips of one recall on ``v`` outside its ranking reads (the structure rows,
    the BM25 totals and the query words' postings, read once per data version and then kept; or the store's BM25
    statement where recall falls back to it)."""
    rt, queries = v._store.round_trips, v._store.recall
    ranking = [0]

    def counting(read: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kw: Any) -> Any:
            before = rt.count
            try:
                return read(*args, **kw)
            finally:
                ranking[0] += rt.count - before
        return counted

    for name in ("bm25", "postings", "rank_rows", "rank_totals"):
        setattr(queries, name, counting(getattr(queries, name)))

    def cost(q: str, **kw: Any) -> int:
        before, ranking[0] = rt.count, 0
        v.recall(q, **kw)
        return rt.count - before - ranking[0]

    return cost


def _warm_pair(machine: Any, team_url: str) -> tuple[Any, Any, str, Callable[..., int]]:
    """Machines a (filled, one recall of the query made) and b, the query, and a's :func:`_without_ranking` cost
    of it."""
    a, b = machine("a", team_url), machine("b", team_url)
    _fill(a)
    q = "how do we handle deploys and retries?"
    cost = functools.partial(_without_ranking(a), q)
    cost()
    return a, b, q, cost


def test_a_warm_recall_costs_one_round_trip_and_caches_follow_every_write(team_url: str, machine: Any) -> None:
    """Round trips are a team vault's latency. Once a query's words were read at this version (a repeated query,
    the common case), a recall is exactly one: a lazy snapshot reads its version and the server's clock in one
    autocommitted statement, and every read is then served from what is kept for that version, so no transaction
    is opened (a read the caches lack opens it: BEGIN with the version check, and ROLLBACK). The saved default
    bars and the kept items' file flags are kept per data version (writing either moves it); a session adds its
    marks (read 1, write 1). Everything else is kept per
    data version too: lessons, frequencies, counts, tag and key matches, candidate rows, records (a record the
    gate reads for the first time at a version costs one round trip)."""
    a, b, q, cost = _warm_pair(machine, team_url)
    assert cost() == 1
    rt = a._store.round_trips.count
    a.recall(q)  # the ranking reads themselves are kept per data version: a repeated query makes none
    assert a._store.round_trips.count - rt == 1
    cost(session="s1")
    cost(session="s1")  # the walk skips what s1 was given: the records it reads past a skip cost one round trip each
    assert cost(session="s1") == 2  # its marks read; nothing new was given, so none written
    cost(session="s2")
    assert cost(session="s2") == 3  # its marks read, and what it was newly given written
    # a write elsewhere moves the version: what it may have changed is read again, records the walk read before
    # are not (they are kept by id and updated_at)
    b.remember("knowledge", "unrelated", "an unrelated fact about pelicans")
    assert cost() <= 12  # (one of them: the hidden sides of open duplicate links, read once per version)
    # every cache follows a write made on another machine: a warm handle answers as a cold one does
    fresh = iter(range(100))

    def same_as_a_cold_handle() -> str:
        text = a.recall(q).text
        assert text == machine(f"cold{next(fresh)}", team_url).recall(q).text
        return text

    les = b.lessons.create("Deploys need a second reviewer")
    b.lessons.approve(les.id)
    assert "second reviewer" in same_as_a_cold_handle()
    m = b.remember("knowledge", "deploys_and_retries", "retry budget for deploys is three attempts", tags=["retries"])
    assert "three attempts" in same_as_a_cold_handle()
    b.notes.add("deploys_and_retries", "when deploys need retries", "see the runbook")  # a key match, via a note
    assert "deploys_and_retries" in same_as_a_cold_handle()
    b.memories.delete(m.id)
    assert "three attempts" not in same_as_a_cold_handle()


def test_an_agent_handle_recalls_through_its_role_in_as_few_round_trips(team_url: str, machine: Any) -> None:
    """An agent handle runs every checkout as the project's agent role: SET ROLE travels with the first statement
    (also with a snapshot's multi-statement start) and RESET ROLE with the last (the snapshot's ROLLBACK, a
    one-statement read or write), so an agent's recall costs what a user's does."""
    user = machine("u", team_url)
    _fill(user)
    les = user.lessons.create("Deploys need a second reviewer")
    user.lessons.approve(les.id)
    user.lessons.create("a pending lesson the agent may not see")
    agent = machine("ag", team_url, actor="agent")
    q = "how do we handle deploys and retries?"
    r = agent.recall(q, session="agent-1")
    assert r.text == user.recall(q).text and r.version == user.recall(q).version and "second reviewer" in r.text
    cost = functools.partial(_without_ranking(agent), q)
    cost(session="agent-1")
    assert cost() == 1  # as the user's: SET ROLE and RESET ROLE travel with the one statement
    cost(session="agent-2")
    assert cost(session="agent-2") == 3  # and with the session marks' read and write


def test_settings_and_file_flags_written_elsewhere_are_never_served_stale(team_url: str, machine: Any) -> None:
    """A warm handle keeps the saved default bars and the file flags per data version (no round trip); writing
    either on another machine moves the version, so the next recall reads them again and answers as a cold
    handle does."""
    from synapse_nb.recall import Bars

    a, b, q, cost = _warm_pair(machine, team_url)
    assert cost() == 1
    first = a.recall(q)
    assert len(first.items) > 1
    fresh = iter(range(100))

    def same_as_a_cold_handle() -> Any:
        r = a.recall(q)
        cold = machine(f"cold{next(fresh)}", team_url).recall(q)
        assert (r.text, r.version) == (cold.text, cold.version)
        return r

    b.save_default_bars(Bars(top_k=1))
    one = same_as_a_cold_handle()
    assert int(one.version) > int(first.version) and len(one.items) < len(first.items)
    assert one.bars.top_k == 1
    kept = one.items[0].id
    b._store.flags.replace("default", {kept: ["src/gone.py"]}, {}, one.items[0].record.updated_at)
    flagged = same_as_a_cold_handle()
    assert int(flagged.version) > int(one.version)
    assert "[files missing at HEAD (names as listed, not anyone's words): \"src/gone.py\"]" in flagged.text
    assert cost() <= 4 and cost() == 1  # read once at the new version, then kept
    b._store.flags.replace("default", {}, {}, one.items[0].record.updated_at)
    assert "files missing" not in same_as_a_cold_handle().text
    b.settings.set("recall_top_k", 5)
    assert same_as_a_cold_handle().text == first.text
    # the lesson scan's positions (meta, not a setting) move no version
    version = a.recall(q).version
    b._store.meta.set_scan_tips("default", ["abc"])
    assert a.recall(q).version == version


def test_no_pooled_connection_keeps_the_agent_role_after_an_agent_recall(team_url: str, machine: Any) -> None:
    """RESET ROLE now rides with an agent checkout's last statement: every connection back in the shared pool is
    its login role again (a user handle on the same pool acts as the user)."""
    user = machine("u", team_url)
    _fill(user, 6)
    agent = machine("ag", team_url, actor="agent")
    for s in ("x", "y", None):  # snapshots, one-statement reads and the session marks' writes
        agent.recall("how do we handle deploys?", session=s)
    assert agent.memories.list()
    pool = agent._store.pool
    conns = [pool.getconn() for _ in range(pool.get_stats()["pool_size"])]
    try:
        roles = {c.execute("SELECT current_user = session_user").fetchone()[0] for c in conns}
    finally:
        for c in conns:
            pool.putconn(c)
    assert roles == {True}


def test_a_lazy_snapshot_that_finds_the_vault_moved_reads_again_and_answers_as_a_cold_handle(
        team_url: str, machine: Any) -> None:
    """Between a lazy snapshot's first statement (the version) and the transaction it opens for a read the
    caches lack, another machine commits: the open sees another version, raises SnapshotMoved before any read,
    and recall reads again in an ordinary snapshot -- its answer and stamp are the new state's, as a cold
    handle's are."""
    a, b = machine("a", team_url), machine("b", team_url)
    _fill(a)
    q = "how do we handle deploys and retries?"
    a.recall(q)
    store, wrote = a._store, []
    connection = store._connection

    def write_first(*args: Any, **kw: Any) -> Any:
        if store._state.lazy_open is not None and not wrote:  # the lazy snapshot is about to open its transaction
            wrote.append(b.remember("knowledge", "deploy_retries", "deploys and retries: retry a deploy twice"))
        return connection(*args, **kw)

    store._connection = write_first
    before = a._store.round_trips.count
    r = a.recall("retries for deploys, and how we handle a failed deploy")  # new words: postings are read
    assert wrote and a._store.round_trips.count - before >= 4  # point, BEGIN (moved), ROLLBACK, then again
    assert int(r.version) > int(a.recall(q).version) - 1 and r.version == b.recall(q).version
    cold = machine("cold", team_url).recall("retries for deploys, and how we handle a failed deploy")
    assert (r.text, r.version) == (cold.text, cold.version)
    assert "retry a deploy twice" in r.text


def test_the_walk_reads_a_cold_handles_records_in_one_round_trip_per_kind(team_url: str, machine: Any) -> None:
    """The records the walk always reads (the first top-k of each kind above the margin) cost one round trip per
    kind on a cold handle, not one per record; a warm handle reads none."""
    a = machine("a", team_url)
    _fill(a)
    b = machine("b", team_url)
    store, reads = b._store, []
    for kind in ("memory", "decision"):
        table = store.table(kind)
        for name in ("get", "get_many"):
            read = getattr(table, name)

            def counted(*args: Any, _read: Callable[..., Any] = read, _name: str = name, **kw: Any) -> Any:
                before = store.round_trips.count
                try:
                    return _read(*args, **kw)
                finally:
                    reads.append((_name, store.round_trips.count - before))
            setattr(table, name, counted)
    q = "how do we handle deploys and retries?"
    r = b.recall(q)
    kinds = {i.kind for i in r.items}
    assert len(r.items) > 2 and kinds == {"memory", "decision"}
    assert reads == [("get_many", 1)] * len(kinds)
    assert r.text == a.recall(q).text
    reads.clear()
    assert b.recall(q).text == r.text and reads == []


def test_new_sessions_past_the_hours_bound_are_not_recorded(team_url: str, machine: Any, logins: dict[str, str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound on new sessions is decided inside the write's one statement on a team vault (as the agent role,
    past row-level security's view of its minds)."""
    from synapse_nb.recall import delta

    monkeypatch.setattr(delta, "SESSIONS_PER_HOUR", 2)
    user = machine("h", team_url)
    _fill(user)
    agent = machine("bot", logins["agent"], actor="agent")
    for i in range(4):
        assert agent.recall("deploy", session=f"s{i}").items
    rows = user._ctx.store.query("SELECT DISTINCT session FROM session_seen ORDER BY session")
    login = logins["agent"].split("://", 1)[1].split("@", 1)[0]
    assert [r["session"] for r in rows] == [f"agent:{login}:api:s0", f"agent:{login}:api:s1"]  # per login, surface
    assert not agent.recall("deploy", session="s0").items  # a known session's delta holds
