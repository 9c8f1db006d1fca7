"""Review 95, F2 on a team vault (migration 36: sql/session_classes.sql; the package's MARK_SEEN): the agent hooks'
sessions (``agent:<login>:hook:<id>``) have room and bounds of their own, and a session's lesson marks are always
recorded, bounded apart (as the SQLite vault's schema v15: tests/test_session_kinds.py).

The room of new sessions an hour is the package's (MARK_SEEN counts the hour's sessions of the key's kind); the bounds
of what a session and a mind hold are the server's (the triggers of session_seen)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from synapse_nb._util import fmt_ts
from synapse_nb.recall.delta import SESSIONS_PER_HOUR
from synapse_nb.store.sql.queries import (
    AGENT_SESSION_LESSONS,
    AGENT_SESSION_ROWS,
    AGENT_SESSIONS_PER_MIND,
    AGENT_SESSIONS_PER_VAULT,
)
from synapse_nb.vault import Vault, open_team_vault

ROWS = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) "
        "SELECT %s, %s, %s || lpad(i::text, 12, '0'), repeat('d', 16), %s FROM generate_series(%s::int, %s::int) i")
ASK = "migration script"
FRIDAY = "Never run database migrations on a Friday."
TOLD = "(1 approved lesson shown earlier in this session is no longer in force; its wording cannot be read here)"


@pytest.fixture()
def admin(pg_admin_url: str, project: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        yield c


def rows(c: psycopg.Connection[Any], session: str, mind: str = "default") -> int:
    return int(c.execute("SELECT count(*) FROM session_seen WHERE mind = %s AND session = %s",
                         (mind, session)).fetchone()[0])


def test_a_hook_session_is_told_only_by_its_keys_form(admin: psycopg.Connection[Any]) -> None:
    """The hooks' kind is the stored key's surface after the login (as session_key writes it): no session id an
    agent chooses for another surface reads as one."""
    got = admin.execute("SELECT _hook_session(s) FROM unnest(%s::text[]) WITH ORDINALITY AS u(s, i) ORDER BY i",
                        (["agent:bot:hook:1", 'agent:"Bot:x":hook:1', "agent:bot:mcp:n:hook:1",
                          'agent:"a:hook:":mcp:1', "user:bot:hook:1", "agent:hook:1"],)).fetchall()
    assert [r[0] for r in got] == [True, True, False, False, False, False]


def test_an_agents_other_sessions_leave_the_hooks_their_room(human: Any, machine: Any, logins: dict[str, str],
                                                            project: str, admin: psycopg.Connection[Any],
                                                            tmp_path: Path) -> None:
    """The hour's room of the agent's other sessions is full (its throw-away recalls under new names): a hook session
    is still recorded, and told of a lesson rejected after it was given; another new session of the full kind
    records its lessons only, and is told too."""
    friday = human.lessons.create("Never run migrations on Friday")
    human.lessons.approve(friday.id, text=FRIDAY)
    human.remember("procedure", "migrate", "the billing database migration script lives in tools/migrate.py")
    login, now = f"{project}_agent_login", human._ctx.now_ts()
    for s in range(SESSIONS_PER_HOUR):
        admin.execute(ROWS, ("default", f"agent:{login}:api:junk{s:03d}", "mem_", now, 1, 1))
    (tmp_path / "hook").mkdir()
    hook: Vault = open_team_vault(logins["agent"], actor="agent", surface="hook", local=tmp_path / "hook")
    try:
        first = hook.recall(ASK, session="H")
        assert first.items and FRIDAY in first.text
        assert hook.recall(ASK, session="H").nothing_new  # recorded: nothing new
        api = machine("bot", logins["agent"], actor="agent")
        mine = api.recall(ASK, session="A")
        again = api.recall(ASK, session="A")
        assert again.items == mine.items and again.shown_before == {friday.id}  # past the room: its lessons only
        human.lessons.reject(friday.id)
        for v, session in ((hook, "H"), (api, "A")):
            r = v.recall(ASK, session=session)
            assert [g[0] for g in r.no_longer] == [friday.id] and TOLD in r.text.splitlines()
    finally:
        hook.close()


def test_no_flood_of_other_agent_sessions_makes_a_hook_session_give_way(human: Any,
                                                                        admin: psycopg.Connection[Any]) -> None:
    now = human._ctx.now()
    admin.execute(ROWS, ("default", "agent:x:hook:H", "mem_", fmt_ts(now - timedelta(minutes=5)), 1, 3))
    for s in range(AGENT_SESSIONS_PER_MIND + 10):
        admin.execute(ROWS, ("default", f"agent:x:api:a{s:03d}", "mem_", fmt_ts(now), 1, 1))
    for s in range(AGENT_SESSIONS_PER_VAULT):
        admin.execute(ROWS, (f"m{s % 3}", f"agent:x:mcp:n:b{s:03d}", "mem_", fmt_ts(now), 1, 1))
    assert rows(admin, "agent:x:hook:H") == 3
    others = admin.execute("SELECT count(*) FROM session_registry WHERE agent AND NOT _hook_session(session)")
    assert others.fetchone()[0] == AGENT_SESSIONS_PER_VAULT
    for s in range(AGENT_SESSIONS_PER_MIND):  # its own kind's: it gives way (the bounds hold)
        admin.execute(ROWS, ("default", f"agent:x:hook:h{s:03d}", "mem_", fmt_ts(now), 1, 1))
    assert rows(admin, "agent:x:hook:H") == 0


def test_a_sessions_lesson_marks_are_bounded_apart_from_its_records(human: Any, project: str,
                                                                     agent_sql: psycopg.Connection[Any],
                                                                     admin: psycopg.Connection[Any]) -> None:
    """An agent login's own SQL too: one statement past a bound keeps what fits."""
    mine, now = f"agent:{project}_agent_login:api:", human._ctx.now_ts()
    agent_sql.execute(ROWS, ("default", mine + "S", "mem_", now, 1, AGENT_SESSION_ROWS + 5))
    agent_sql.execute(ROWS, ("default", mine + "S", "les_", now, 1, 5))  # a session full of records: its lessons
    assert rows(admin, mine + "S") == AGENT_SESSION_ROWS + 5
    agent_sql.execute(ROWS, ("default", mine + "T", "les_", now, 1, AGENT_SESSION_LESSONS + 40))
    assert rows(admin, mine + "T") == AGENT_SESSION_LESSONS
    agent_sql.execute(ROWS, ("default", mine + "T", "mem_", now, 1, AGENT_SESSION_ROWS + 5))
    assert rows(admin, mine + "T") == AGENT_SESSION_LESSONS + AGENT_SESSION_ROWS
    reg = admin.execute("SELECT n FROM session_registry WHERE session = %s", (mine + "T",)).fetchone()
    assert reg[0] == AGENT_SESSION_LESSONS + AGENT_SESSION_ROWS
