"""The minds a team vault lists (``Vault.minds``, what the CLI and magics name when a mind holds nothing: review 68
F6) are those the login may see: an agent login granted one mind never learns the names of the others."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

import synapse_nb as syn
from synapse_nb.vault.minds import other_minds


def _grant_only(pg_admin_url: str, project: str, logins: dict[str, str], *minds: str) -> None:
    """``team grant LOGIN --mind ...`` with '*' revoked: the agent login sees only ``minds``."""
    login = logins["agent"].split("//")[1].split("@")[0]
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"DELETE FROM {project}.mind_grants WHERE grantee = %s", (login,))
        for m in minds:
            c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, %s)", (login, m))


def test_an_agent_login_lists_only_the_minds_granted_to_it(
        human: syn.Vault, pg_admin_url: str, project: str, logins: dict[str, str],
        machine: Callable[..., syn.Vault]) -> None:
    human.remember("procedure", "deploy", "run the checks first")
    human.with_mind("hr").remember("knowledge", "salaries", "the salary review is in March")
    human.with_mind("sandbox").decide("Use SQLite WAL mode")
    human.with_mind("pending-only").lessons.create("never force-push main")  # an agent reads no pending lesson
    assert human.minds() == ("default", "hr", "pending-only", "sandbox")
    _grant_only(pg_admin_url, project, logins, "sandbox", "planner")
    agent = machine("a", logins["agent"], actor="agent", mind="planner")
    assert agent.minds() == ("sandbox",)
    assert other_minds(agent) == ("sandbox",)  # what the CLI names for a read in 'planner': never 'hr'
    agent.remember("knowledge", "sprint", "the sprint ends Friday")
    assert agent.minds() == ("planner", "sandbox")
    assert human.minds() == ("default", "hr", "pending-only", "planner", "sandbox")

