"""Review 95, F2: the agent hooks' sessions have room of their own, and a session's lesson marks are always recorded
(schema v15: store/sqlite/sessions_schema.py; SESSION_ROOM; recall/delta.py).

Every session whose stored name starts with ``agent:`` shared one room of 256 new sessions a mind an hour, and an
agent's reads (the Python API, MCP, the CLI under fresh session names) cost no write quota: 300 throw-away recalls
(0.8 s) filled it, and from then on the hook's sessions recorded nothing: every prompt repeated the same context, and
a lesson the person rejected after SessionStart gave it was never named "no longer in force" (its marks were never
recorded). Now the hooks' sessions (``agent:hook:``) and the other agent sessions each have their own room and their
own bounds (256 a mind, 512 the vault), and lesson marks are recorded past the room, bounded apart per session.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import downgrade

import synapse_nb as syn
from synapse_nb._util import fmt_ts
from synapse_nb.agents.hooks import respond
from synapse_nb.recall.delta import SESSIONS_PER_HOUR
from synapse_nb.store.sql.queries import (
    AGENT_SESSION_LESSONS,
    AGENT_SESSION_ROWS,
    AGENT_SESSIONS_PER_MIND,
    AGENT_SESSIONS_PER_VAULT,
)
from tests.test_agent_hooks import claude

ASK = "what should I know before I deploy billing?"
FRIDAYS = "Never deploy billing on Fridays; run the migrations dry-run first"
GONE = "(no longer in force, do not follow: "


@pytest.fixture()
def repo(git_repo: Path) -> Path:
    with syn.open_vault(git_repo) as v:
        v.remember("procedure", "run_migrations", "Run alembic upgrade head before deploying the billing api")
        v.remember("knowledge", "billing_cache", "The billing api caches invoices in redis for ten minutes")
        v.lessons.approve(v.lessons.create("fridays").id, text=FRIDAYS)
        v.lessons.approve(v.lessons.create("redis").id, text="Page the on-call before touching the redis config")
    return git_repo


def flood(repo: Path, n: int = SESSIONS_PER_HOUR + 44, surface: str = "api") -> None:
    """The agent's throw-away recalls, each under a new session name (no write quota: reads)."""
    with syn.open_vault(repo, actor="agent", surface=surface) as v:
        for i in range(n):
            v.recall("deploy billing redis cache", session=f"junk-{i}")


def hook(repo: Path, event: str, session: str) -> str:
    """The hook as Claude Code runs it (in this process): the context it gives the agent."""
    out = respond([event], json.dumps(claude(event, repo, session, source="startup", prompt=ASK)), vault=str(repo),
                  env={})
    assert out.stdout == "" or "hookSpecificOutput" in out.stdout, out
    return str(json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]) if out.stdout else ""


def test_an_agents_throwaway_recalls_leave_the_hooks_their_room(repo: Path) -> None:
    """The reviewer's f_flood.sh: after the flood, the hook's session still gets only what is new."""
    flood(repo)
    hook(repo, "SessionStart", "after-1")
    first = hook(repo, "UserPromptSubmit", "after-1")
    assert "procedure/run_migrations" in first
    assert hook(repo, "UserPromptSubmit", "after-1") == ""  # recorded: nothing new, no noise


def test_a_lesson_rejected_after_a_flood_is_named_no_longer_in_force(repo: Path) -> None:
    """The reviewer's f_flood_gone.sh: the session start's lessons were marked, so the rejection is told."""
    flood(repo)
    assert FRIDAYS in hook(repo, "SessionStart", "sess-A")
    with syn.open_vault(repo) as person:
        person.lessons.reject(next(x.id for x in person.lessons.in_force() if x.text == FRIDAYS))
    text = hook(repo, "UserPromptSubmit", "sess-A")
    assert f'{GONE}"{FRIDAYS}" — shown earlier in this session, since rejected by a person)' in text


def test_lesson_marks_are_recorded_past_the_room_of_their_kind(repo: Path) -> None:
    """Even the hooks' own room full (the agent can run the hook itself), a new hook session records the lessons it
    was given (only those: its records are given again, as a session past the room's are) and is told of one gone."""
    flood(repo, surface="hook")
    with syn.open_vault(repo, actor="agent", surface="hook") as v:
        first = v.recall(ASK, session="H")
        assert first.items and {x.text for x in first.lessons} >= {FRIDAYS}
        again = v.recall(ASK, session="H")
        assert [x.id for x in again.items] == [x.id for x in first.items]  # the room is full: records not marked
        assert again.shown_before == {x.id for x in first.lessons}  # the lessons were
        with syn.open_vault(repo) as person:
            person.lessons.reject(next(x.id for x in person.lessons.in_force() if x.text == FRIDAYS))
        assert f'{GONE}"{FRIDAYS}"' in v.recall(ASK, session="H").text


NOW = datetime.now(UTC)


def _marks(v: syn.Vault, session: str, n: int, at: datetime, mind: str = "default", kind: str = "mem") -> None:
    v._ctx.store.sessions.mark(mind, session, [(f"{kind}_{i:012x}", "d") for i in range(n)], fmt_ts(at))


def _rows(v: syn.Vault, session: str, mind: str = "default") -> int:
    return int(v._ctx.store.query_one("SELECT count(*) FROM session_seen WHERE mind = ? AND session = ?",
                                      (mind, session))[0])


def test_no_flood_of_other_agent_sessions_makes_a_hook_session_give_way(repo: Path) -> None:
    """In its mind, or across the minds an agent names: the bounds are each kind's. Within its own kind a hook
    session still gives way (the bounds hold)."""
    with syn.open_vault(repo, actor="agent") as v:
        _marks(v, "agent:hook:H", 3, NOW - timedelta(minutes=5))
        for s in range(AGENT_SESSIONS_PER_MIND + 10):  # newer than H, in its mind
            _marks(v, f"agent:api:a{s:03d}", 1, NOW)
        for s in range(AGENT_SESSIONS_PER_VAULT):  # and in minds of the agent's naming
            _marks(v, f"agent:mcp:x:b{s:03d}", 1, NOW, mind=f"m{s % 3}")
        assert _rows(v, "agent:hook:H") == 3
        others: Any = v._ctx.store.query_one("SELECT count(*) FROM session_registry WHERE agent = 1 AND "
                                             "substr(session, 1, 11) <> 'agent:hook:'")
        assert others[0] == AGENT_SESSIONS_PER_VAULT
        for s in range(AGENT_SESSIONS_PER_MIND):  # hook sessions given something after it: it gives way
            _marks(v, f"agent:hook:h{s:03d}", 1, NOW)
        assert _rows(v, "agent:hook:H") == 0


def test_a_sessions_lesson_marks_are_bounded_apart_from_its_records(repo: Path) -> None:
    with syn.open_vault(repo, actor="agent") as v:
        _marks(v, "agent:api:S", AGENT_SESSION_ROWS, NOW)
        _marks(v, "agent:api:S", 5, NOW, kind="les")  # a session full of records still records its lessons
        assert _rows(v, "agent:api:S") == AGENT_SESSION_ROWS + 5
        v._ctx.store.sessions.mark("default", "agent:api:S", [("mem_ffffffffffff", "d")], fmt_ts(NOW))
        assert _rows(v, "agent:api:S") == AGENT_SESSION_ROWS + 5  # its records are bounded as before
        _marks(v, "agent:api:T", AGENT_SESSION_LESSONS + 40, NOW, kind="les")
        assert _rows(v, "agent:api:T") == AGENT_SESSION_LESSONS
        _marks(v, "agent:api:T", AGENT_SESSION_ROWS, NOW)  # its lessons do not count against its records
        assert _rows(v, "agent:api:T") == AGENT_SESSION_LESSONS + AGENT_SESSION_ROWS


def test_a_v14_vault_bounds_its_sessions_by_kind_once_migrated(repo: Path) -> None:
    with syn.open_vault(repo, actor="agent") as v:
        _marks(v, "agent:hook:H", 3, NOW - timedelta(minutes=5))
    conn = sqlite3.connect(repo / ".synapse" / "synapse.db")
    downgrade(conn, 14)  # v9's bounds: every agent session of one kind
    conn.close()
    with syn.open_vault(repo) as person, syn.open_vault(repo, actor="agent") as v:
        assert person._ctx.store.schema_version == 15
        for s in range(AGENT_SESSIONS_PER_MIND):
            _marks(v, f"agent:api:a{s:03d}", 1, NOW)
        assert _rows(v, "agent:hook:H") == 3  # kept: its marks, and its kind's bounds
