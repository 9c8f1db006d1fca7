"""An agent login's lesson scan place is its own, and a list of commits (review 30, finding 3; migration 20).

Agents kept one scan place per mind (meta ``scan_tips:agent:<mind>``) shared by every agent login, and the server
checked its key and size, not its value: one agent login's own SQL writing ``7`` there made every other agent's
``lessons scan`` fail (``tuple(json.loads(value))``), and HEAD there made their scans skip the reverts before it.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.team import open_team_vault
from tests.team.conftest import url_as

DENIED = psycopg.errors.InsufficientPrivilege
MARK = "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value"


def _repo_with_a_revert(tmp_path: Path) -> tuple[ScratchRepo, str]:
    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("retry.py", "retry = 3\n", "Add retries")
    repo.git("revert", "--no-edit", "HEAD")
    return repo, repo.git("rev-parse", "HEAD").strip()


def test_one_agent_logins_sql_neither_stops_nor_moves_another_agents_scan(
        pg_admin_url: str, project: str, team_url: str, logins: dict[str, str], tmp_path: Path) -> None:
    repo, head = _repo_with_a_revert(tmp_path)
    other = f"{project}_agent2"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {other} LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (other,))
    mine = f"scan_tips:agent:{project}_agent_login:default"
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        for key, value in (("scan_tips:agent:default", "7"),  # the place agents shared (review 30's repro)
                           ("scan_tips:agent:default", f'["{head}"]'),
                           (f"scan_tips:agent:{other}:default", f'["{head}"]'),  # another login's place
                           (mine, "7"), (mine, '["HEAD"]'), (mine, f'["{head}", 7]'), (mine, '{"a": 1}'),
                           (mine, "not json")):  # its own place: a list of commit ids only
            with pytest.raises(DENIED, match="meta key"):
                c.execute(MARK, (key, value))
        c.execute(MARK, (mine, f'["{head}"]'))  # its own place, past the revert: its own scans skip it
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    human = open_team_vault(team_url, local=repo.root)
    try:
        assert agent.lessons.scan() == [] and human.lessons.pending() == []
        second = open_team_vault(url_as(pg_admin_url, other) + f"?project={project}", local=repo.root,
                                 actor="agent")
        try:
            assert second.lessons.scan() == []  # an agent reads no pending lesson, but it proposed one
        finally:
            second.close()
        (les,) = human.lessons.pending()
        assert les.revert_commit is not None and les.revert_commit["sha"] == head
    finally:
        agent.close()
        human.close()


@pytest.mark.parametrize("value", ["7", '"x"', '{"a": 1}', "[1, 2]", '["HEAD"]', "not json", "null"])
def test_a_scan_place_that_is_not_a_list_of_commits_is_no_place(
        pg_admin_url: str, project: str, team_url: str, logins: dict[str, str], tmp_path: Path, value: str) -> None:
    """A person (whose writes the server does not check) or an older version stored something else: the scan starts
    afresh (it finds each revert once) instead of failing."""
    repo, head = _repo_with_a_revert(tmp_path)
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        for key in ("scan_tips:default", f"scan_tips:agent:{project}_agent_login:default"):
            c.execute(MARK, (key, value))
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    human = open_team_vault(team_url, local=repo.root)
    try:
        assert agent.lessons.scan() == []
        (les,) = human.lessons.scan()
        assert les.revert_commit is not None and les.revert_commit["sha"] == head
        assert [x.id for x in human.lessons.pending()] == [les.id]
    finally:
        agent.close()
        human.close()
