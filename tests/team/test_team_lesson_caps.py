"""Review 65 on a team vault (PostgreSQL migration 25): both caps of pending lessons hold for agents on the server.

Before: the server counted a mind's agents' pending lessons by ``source = 'agent'`` only, so a person's scan that took
an agent's scan's lessons over (git's words, ``first_by``) emptied the count with no human review; and the agent role
reads no pending lesson, so an agent's scan read the mind's total as 0 and nothing held it to 100. Alternating an
agent login's scans and a person's grew a mind past both caps, and an agent's own SQL inserted lessons past 100.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from synapse_nb.errors import QuotaExceededError
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.kinds import lesson_scan
from synapse_nb.kinds.lessons import AGENT_PENDING_LESSONS, SCAN_PENDING_LESSONS
from synapse_nb.team import open_team_vault
from tests.team.conftest import url_as

TS = "2026-01-01T00:00:00.000000Z"
TOO_MANY = psycopg.errors.ConfigurationLimitExceeded
AGENT_LESSON = ("INSERT INTO lessons(id, mind, status, summary, source, created_at, updated_at) "
                "VALUES (%s, 'default', 'pending', 'Reverted by hand', 'agent', %s, %s)")


def _repo_with_reverts(root: Path, n: int) -> ScratchRepo:
    repo = ScratchRepo.init(root)
    for i in range(n):
        repo.commit_file(f"f{i}.py", f"x = {i}\n", f"Add f{i}")
        repo.git("revert", "--no-edit", "HEAD")
    return repo


def _people_lessons(admin: psycopg.Connection[Any], project: str, n: int, *, first_by_agent: bool = False) -> None:
    """``n`` pending lessons of a person in mind default; ``first_by_agent``: taken over from an agent's scan."""
    commit = ('\'{"sha": "s\' || i || \'", "subject": "Revert", "author": "P", "date": "' + TS + '"'
              + (', "first_by": "agent"' if first_by_agent else "") + "}'")
    admin.execute(f"INSERT INTO {project}.lessons(id, mind, status, summary, revert_sha, revert_commit, source, "
                  f"created_at, updated_at) SELECT 'les_p' || i, 'default', 'pending', 'Reverted ' || i, "
                  f"'s' || i, {commit}, 'user', %s, %s FROM generate_series(1, %s) i", (TS, TS, n))


def test_alternating_agent_and_person_scans_stay_at_both_caps(team_url: str, logins: dict[str, str],
                                                              tmp_path: Path) -> None:
    """Before: the agent's second scan made 50 more (150 pending: 50 of them agents' no human had seen)."""
    repo = _repo_with_reverts(tmp_path / "repo", SCAN_PENDING_LESSONS + 20)
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    human = open_team_vault(team_url, local=repo.root)
    try:
        agents_count = human._ctx.store.lessons.agent_pending
        agent.lessons.scan()
        assert len(human.lessons.pending()) == AGENT_PENDING_LESSONS
        taken = human.lessons.scan()  # takes the agent's 50 over (git's words) and makes 50 of its own
        assert len(taken) == SCAN_PENDING_LESSONS and {x.source for x in taken} == {"user"}
        assert agents_count("default") == AGENT_PENDING_LESSONS  # before: 0
        agent.lessons.scan()
        assert len(human.lessons.pending()) == SCAN_PENDING_LESSONS  # the total (before: 150)
        for les in taken:  # a human rejects the person's own: only the 50 taken over from the agent wait
            if not lesson_scan.first_found_by_agent(les):
                human.lessons.reject(les.id)
        agent.lessons.scan()
        assert len(human.lessons.pending()) == AGENT_PENDING_LESSONS  # the agents' cap
        assert agents_count("default") == AGENT_PENDING_LESSONS
        with pytest.raises(QuotaExceededError, match=f"{AGENT_PENDING_LESSONS} lessons agents created"):
            agent.lessons.create("an agent's own lesson")
        human.lessons.approve(next(x.id for x in taken if lesson_scan.first_found_by_agent(x)))  # a human decides
        assert agent.lessons.create("an agent's own lesson").source == "agent"
    finally:
        agent.close()
        human.close()


def test_an_agents_scan_in_a_mind_a_persons_scan_filled_makes_none(team_url: str, logins: dict[str, str],
                                                                     tmp_path: Path) -> None:
    """Before: the agent role read the mind's total as 0 and its scan made its 50 (150 pending)."""
    repo = _repo_with_reverts(tmp_path / "repo", SCAN_PENDING_LESSONS + 5)
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    human = open_team_vault(team_url, local=repo.root)
    try:
        assert len(human.lessons.scan()) == SCAN_PENDING_LESSONS
        assert agent._ctx.store.lessons.pending_total("default") == SCAN_PENDING_LESSONS
        assert agent.lessons.scan() == []  # no refusal either: the package reads the count the server checks
        assert len(human.lessons.pending()) == SCAN_PENDING_LESSONS
    finally:
        agent.close()
        human.close()


def test_an_agent_logins_own_insert_past_either_cap_is_refused(pg_admin_url: str, project: str, team_url: str,
                                                               logins: dict[str, str], machine: Any,
                                                               agent_sql: psycopg.Connection[Any]) -> None:
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        _people_lessons(admin, project, AGENT_PENDING_LESSONS, first_by_agent=True)
        with pytest.raises(TOO_MANY, match=f"quota of {AGENT_PENDING_LESSONS} pending lessons in mind default"):
            agent_sql.execute(AGENT_LESSON, ("les_raw1", TS, TS))  # before: the taken-over 50 were not counted
        admin.execute(f"DELETE FROM {project}.lessons")
        _people_lessons(admin, project, SCAN_PENDING_LESSONS)
        with pytest.raises(TOO_MANY, match=f"{SCAN_PENDING_LESSONS} pending lessons in mind default"):
            agent_sql.execute(AGENT_LESSON, ("les_raw1", TS, TS))  # before: the 101st pending lesson
        agent = machine("bot", logins["agent"], actor="agent")
        with pytest.raises(QuotaExceededError, match=f"agent write refused: {SCAN_PENDING_LESSONS} lessons wait"):
            agent.lessons.create("an agent's own lesson")  # the package's words first
        assert agent.lessons.waiting() == 0  # the agent role reads no pending lesson, only the count
        assert agent_sql.execute("SELECT pending_lessons('default')").fetchone() == (SCAN_PENDING_LESSONS,)
        admin.execute(f"DELETE FROM {project}.lessons WHERE id = 'les_p1'")
        agent_sql.execute(AGENT_LESSON, ("les_raw1", TS, TS))  # room for one again
        # a login that may not see the mind learns nothing of it
        other = f"{project}_agent_other"
        admin.execute(f"CREATE ROLE {other} LOGIN IN ROLE {project}_agent")
        admin.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, 'other')", (other,))
        with psycopg.connect(url_as(pg_admin_url, other), autocommit=True) as c:
            c.execute(f"SET search_path = {project}")
            assert c.execute("SELECT pending_lessons('default'), pending_lessons('other')").fetchone() == (0, 0)


def test_the_first_by_of_a_value_that_is_not_json_reads_as_none(pg_admin_url: str, project: str,
                                                                 team_url: str, human: Any) -> None:
    """The column holds JSON objects (checked); the count still never fails on another value."""
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(f"SET search_path = {project}")
        got = admin.execute("SELECT _first_by('not json {first'), _first_by('[\"first_by\"]'), "
                            "_first_by('{\"first_by\": \"agent\"}'), _first_by('{\"\\u0066irst_by\": \"agent\"}'), "
                            "_first_by(NULL), _first_by('{\"sha\": \"a\"}')").fetchone()
    assert got == (None, None, "agent", "agent", None, None)
