"""A team vault's registry of recall's delta sessions, and an agent's sessions bounded by the server (review 28,
migration 19: sql/session_registry.sql), as the SQLite vault's (tests/test_session_registry.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import psycopg

from synapse_nb._util import fmt_ts
from synapse_nb.store.sql.queries import AGENT_SESSION_ROWS, AGENT_SESSIONS_PER_MIND, AGENT_SESSIONS_PER_VAULT

ROWS = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) "
        "SELECT %s, %s, 'mem_' || lpad(i::text, 12, '0'), repeat('d', 16), %s "  # a digest's form (migration 35)
        "FROM generate_series(%s::int, %s::int) i")


def registry(c: psycopg.Connection[Any]) -> dict[tuple[str, str], tuple[bool, str, str, int]]:
    return {(r[0], r[1]): (r[2], r[3], r[4], int(r[5])) for r in c.execute(
        "SELECT mind, session, agent, first_seen, last_seen, n FROM session_registry").fetchall()}


def recount(c: psycopg.Connection[Any]) -> dict[tuple[str, str], tuple[bool, str, int]]:
    return {(r[0], r[1]): (r[2], r[3], int(r[4])) for r in c.execute(
        "SELECT mind, session, starts_with(session, 'agent:'), max(seen_at), count(*) FROM session_seen "
        "GROUP BY mind, session").fetchall()}


def counts(c: psycopg.Connection[Any]) -> dict[tuple[str, str], tuple[bool, str, int]]:
    return {k: (a, last, n) for k, (a, _, last, n) in registry(c).items()}


def test_an_agent_logins_session_holds_a_bounded_number_of_rows(human: Any, machine: Any, logins: dict[str, str],
                                                                project: str, pg_admin_url: str,
                                                                agent_sql: psycopg.Connection[Any]) -> None:
    """Its own SQL too: one statement past the bound keeps the first rows that fit, a later one none; a row it holds
    is still updated; the package's recall in that session is given its records in full, again."""
    mine = f"agent:{project}_agent_login:api:conv-1"
    now = human._ctx.now_ts()
    agent_sql.execute(ROWS, ("default", mine, now, 1, AGENT_SESSION_ROWS + 5))
    agent_sql.execute(ROWS, ("default", mine, now, 5000, 5002))
    agent_sql.execute("UPDATE session_seen SET digest = repeat('e', 16) WHERE session = %s "
                      "AND rid = 'mem_000000000001'", (mine,))
    n = agent_sql.execute("SELECT count(*), max(rid), min(digest) FROM session_seen WHERE session = %s",
                          (mine,)).fetchone()
    assert n == (AGENT_SESSION_ROWS, f"mem_{AGENT_SESSION_ROWS:012d}", "d" * 16)
    human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    agent = machine("bot", logins["agent"], actor="agent")
    first = agent.recall("how do deploys go", session="conv-1").items
    assert first and agent.recall("how do deploys go", session="conv-1").items == first  # not marked: in full
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        assert registry(c)[("default", mine)][3] == AGENT_SESSION_ROWS and counts(c) == recount(c)


def test_a_mind_and_the_project_keep_a_bounded_number_of_agent_sessions(human: Any, machine: Any, project: str,
                                                                        logins: dict[str, str],
                                                                        pg_admin_url: str) -> None:
    """A new agent session admitted past a mind's bound (or the project's): the least recently given gives way
    whole. A person's session never does. A person's recall with a new session reads the registry: recorded."""
    old = human._ctx.now() - timedelta(days=2)
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        for s in range(AGENT_SESSIONS_PER_MIND):
            c.execute(ROWS, ("default", f"agent:x:old{s:03d}", fmt_ts(old + timedelta(minutes=s)), 1, 2))
        c.execute(ROWS, ("default", "nb-person", fmt_ts(old - timedelta(days=1)), 1, 2))
    human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    agent = machine("bot", logins["agent"], actor="agent")
    assert agent.recall("how do deploys go", session="conv-1").items
    assert human.recall("how do deploys go", session="nb-new").items
    assert human.recall("how do deploys go", session="nb-new").nothing_new
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        reg = registry(c)
        agents = {k[1] for k, v in reg.items() if v[0]}
        assert len(agents) == AGENT_SESSIONS_PER_MIND and f"agent:{project}_agent_login:api:conv-1" in agents
        assert "agent:x:old000" not in agents and ("default", "nb-person") in reg and counts(c) == recount(c)
        for s in range(AGENT_SESSIONS_PER_VAULT - AGENT_SESSIONS_PER_MIND):
            c.execute(ROWS, ("other", f"agent:x:m{s:03d}", fmt_ts(old + timedelta(hours=1, minutes=s)), 1, 1))
        c.execute(ROWS, ("third", "agent:x:new", human._ctx.now_ts(), 1, 1))
        reg = registry(c)
        assert sum(v[0] for v in reg.values()) == AGENT_SESSIONS_PER_VAULT and ("third", "agent:x:new") in reg
        assert ("default", "agent:x:old001") not in reg and counts(c) == recount(c)


MANY = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) "  # sessions i, minds in turn
        "SELECT (%s::text[])[1 + i %% cardinality(%s::text[])], %s || lpad(i::text, 4, '0'), "
        "'mem_000000000001', repeat('d', 16), %s "
        "FROM generate_series(1, %s) i")


def test_one_statement_of_an_agents_sql_keeps_the_bounds(human: Any, project: str, pg_admin_url: str,
                                                         agent_sql: psycopg.Connection[Any]) -> None:
    """Review 33: the sessions a statement wrote were exempt, so one INSERT of 300 sessions left 300 in a mind and
    600 across three minds 600 in the project (every other agent session gone). A statement keeps at most the bound
    of its own (the most recently given), older ones give way only as much as needed, a person's session none."""
    mine = f"agent:{project}_agent_login:"
    old = fmt_ts(human._ctx.now() - timedelta(days=2))
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        c.execute(ROWS, ("default", "nb-person", old, 1, 2))
        c.execute(ROWS, ("default", "agent:x:other", old, 1, 2))  # another agent login's session
        one = ["default"]
        agent_sql.execute(MANY, (one, one, mine + "s", human._ctx.now_ts(), AGENT_SESSIONS_PER_MIND + 44))
        reg = registry(c)
        agents = sorted(k[1] for k, v in reg.items() if v[0])
        assert len(agents) == AGENT_SESSIONS_PER_MIND and counts(c) == recount(c)
        assert agents[-1] == f"{mine}s{AGENT_SESSIONS_PER_MIND + 44:04d}"  # a tie on last_seen: the greatest kept
        assert reg[("default", "nb-person")][3] == 2
        c.execute("DELETE FROM session_seen WHERE starts_with(session, 'agent:')")
        c.execute(ROWS, ("other", "agent:x:other", old, 1, 2))
        minds = ["m0", "m1", "m2"]
        agent_sql.execute(MANY, (minds, minds, mine + "t", human._ctx.now_ts(), AGENT_SESSIONS_PER_VAULT + 88))
        reg = registry(c)
        keys = [k for k, v in reg.items() if v[0]]
        assert len(keys) == AGENT_SESSIONS_PER_VAULT and counts(c) == recount(c)
        assert ("other", "agent:x:other") not in reg and reg[("default", "nb-person")][3] == 2
        assert all(sum(1 for m, _ in keys if m == f"m{i}") <= AGENT_SESSIONS_PER_MIND for i in range(3))
        # fewer than the bound in one statement: the older ones give way only as much as needed
        c.execute("DELETE FROM session_seen WHERE starts_with(session, 'agent:')")
        for s in range(AGENT_SESSIONS_PER_MIND):
            at = fmt_ts(human._ctx.now() - timedelta(hours=s + 1))
            c.execute(ROWS, ("default", f"agent:x:old{s:03d}", at, 1, 1))
        agent_sql.execute(MANY, (one, one, mine + "u", human._ctx.now_ts(), 10))
        kept = {k[1] for k, v in registry(c).items() if v[0]}
        assert len(kept) == AGENT_SESSIONS_PER_MIND and "agent:x:old245" in kept and "agent:x:old246" not in kept


def test_prune_drops_an_agent_session_by_its_first_day(human: Any, project: str, pg_admin_url: str) -> None:
    now = human._ctx.now()
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        for session in ("agent:x:long", "nb-long"):
            c.execute(ROWS, ("default", session, fmt_ts(now - timedelta(days=40)), 1, 5))
            c.execute("UPDATE session_seen SET seen_at = %s WHERE session = %s",
                      (fmt_ts(now - timedelta(minutes=5)), session))  # given again: every row new
        c.execute(ROWS, ("default", "agent:x:fresh", fmt_ts(now - timedelta(days=3)), 1, 5))
    assert human.prune().sessions_cleared == 5
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        assert set(registry(c)) == {("default", "nb-long"), ("default", "agent:x:fresh")} and counts(c) == recount(c)


def test_no_login_writes_the_registry(human: Any, agent_sql: psycopg.Connection[Any], logins: dict[str, str],
                                      project: str) -> None:
    agent_sql.execute(ROWS, ("default", f"agent:{project}_agent_login:c", human._ctx.now_ts(), 1, 2))
    for url in (logins["agent"], logins["human"]):
        with psycopg.connect(url.split("?")[0], autocommit=True) as c:
            c.execute(f"SET search_path = {project}")
            assert len(registry(c)) == 1
            try:
                c.execute("UPDATE session_registry SET n = 0")
            except psycopg.errors.InsufficientPrivilege:
                pass
            else:
                raise AssertionError("a login wrote the registry")


def test_a_project_at_18_with_marks_fills_its_registry_at_19(pg_admin_url: str) -> None:
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"ses{uuid.uuid4().hex[:8]}"
    ts = "2026-01-01T00:00:00.000000Z"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:18]) == (0, 18)
        c.execute(f"SET search_path = {project}")
        c.execute(ROWS, ("default", "agent:x:a", ts, 1, 3))
        c.execute(ROWS, ("other", "nb-1", "2026-01-02T00:00:00.000000Z", 1, 2))
        c.execute("UPDATE session_seen SET seen_at = '2026-01-03T00:00:00.000000Z' WHERE rid = 'mem_000000000001' "
                  "AND session = 'nb-1'")
        assert migrate(c, project, MIGRATIONS[:19]) == (18, 19)
        c.execute(f"SET search_path = {project}")
        assert registry(c) == {("default", "agent:x:a"): (True, ts, ts, 3),
                               ("other", "nb-1"): (False, "2026-01-02T00:00:00.000000Z",
                                                   "2026-01-03T00:00:00.000000Z", 2)}


def test_an_agent_login_is_told_a_lesson_it_was_given_is_no_longer_in_force(human: Any, machine: Any,
                                                                           logins: dict[str, str]) -> None:
    """Review 87 on a team vault: the agent role reads its session's lesson marks (session_key), but no withdrawn
    lesson nor its history, so the lesson is counted as no longer in force, not named; the recall never fails."""
    friday = human.lessons.create("Never run migrations on Friday")
    human.lessons.approve(friday.id, text="Never run database migrations on a Friday.")
    staging = human.lessons.create("Use the staging db for tests")
    human.lessons.approve(staging.id, text="Always run the billing tests against the staging database.")
    human.remember("procedure", "migrate", "the billing database migration script lives in tools/migrate.py")
    agent = machine("bot", logins["agent"], actor="agent")
    assert "Friday" in agent.recall("migration script", session="c1").text
    human.lessons.withdraw(friday.id)
    r = agent.recall("migration script", session="c1")
    assert [g[0] for g in r.no_longer] == [friday.id]
    lines = r.text.splitlines()
    assert lines[0] == "APPROVED SYSTEM MEMORY — CRITICAL: ADHERE" and "Friday" not in r.text
    told = "(1 approved lesson shown earlier in this session is no longer in force; its wording cannot be read here)"
    assert told in lines
    assert "(the other approved lesson shown earlier in this session is still in force)" in lines
    assert agent.recall("migration script", session="c1").no_longer == ()  # told once


def test_a_lesson_rejected_or_purged_is_told_to_the_sessions_that_were_given_it(human: Any, machine: Any,
                                                                                logins: dict[str, str], project: str,
                                                                                pg_admin_url: str) -> None:
    """s21 on a team vault (migration 33): a lesson's marks outlive its deletion. The agent role reads no rejected
    lesson nor its history: counted, as a withdrawn one (review 87); a person is told its wording. A purge leaves
    the marks reading 'purged', no digest of the text: each session is told a lesson was deleted, without words."""
    friday = human.lessons.create("Never run migrations on Friday")
    human.lessons.approve(friday.id, text="Never run database migrations on a Friday.")
    staging = human.lessons.create("Use the staging db for tests")
    human.lessons.approve(staging.id, text="Always run the billing tests against the staging database.")
    human.remember("procedure", "migrate", "the billing database migration script lives in tools/migrate.py")
    agent = machine("bot", logins["agent"], actor="agent")
    for session in ("c1", "c2"):
        assert "Friday" in agent.recall("migration script", session=session).text
    assert "Friday" in human.recall("migration script", session="p1").text
    digest = human.lessons.get(friday.id).digest
    human.lessons.reject(friday.id)
    r = agent.recall("migration script", session="c1")
    assert r.no_longer == ((friday.id, None, "unknown"),) and "Friday" not in r.text
    assert ("(1 approved lesson shown earlier in this session is no longer in force; its wording cannot be read here)"
            in r.text.splitlines())
    assert agent.recall("migration script", session="c1").no_longer == ()  # told once
    mine = human.recall("migration script", session="p1")
    assert mine.no_longer == ((friday.id, "Never run database migrations on a Friday.", "rejected"),)
    assert ('(no longer in force, do not follow: "Never run database migrations on a Friday." — shown earlier in '
            "this session, since rejected by a person)") in mine.text.splitlines()
    human.purge(friday.id)
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        marks = sorted(r[0] for r in c.execute("SELECT digest FROM session_seen WHERE rid = %s", (friday.id,)))
    assert marks == ["gone", "gone", "purged"] and digest not in marks  # c1 and p1 were told; c2 was not
    r = agent.recall("migration script", session="c2")
    assert r.no_longer == ((friday.id, None, "purged"),) and "Friday" not in r.text
    assert ("(no longer in force: an approved lesson shown earlier in this session was deleted by a person, its "
            "wording with it; do not follow it)") in r.text.splitlines()
    assert agent.recall("migration script", session="c2").no_longer == ()
