"""Review 4, against the agent login's own SQL on the team server (migration 14, and the person's scan): an agent's
history entry may describe only its own record as it was, and an agent's hand-made lesson naming a real revert gives
way to git's at a person's scan."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

DENIED = psycopg.errors.InsufficientPrivilege
ENTRY = ("INSERT INTO history(id, rid, kind, mind, version, action, actor, surface, at, before) "
         "VALUES (%s, %s, %s, 'default', %s, %s, 'agent', 'api', next_stamp(), %s)")


def forged(rid: str, content: str, **over: Any) -> str:
    """A memory's `before` as the package writes it, with the agent's words and ``over``."""
    state = {"category": "procedure", "confidence": 1.0, "content": content,
             "created_at": "2026-12-06T08:41:53.000000Z", "expires_at": None, "id": rid, "key": "deploy",
             "kind": "memory", "mind": "default",
             "priority": "critical", "source": "user", "tags": [], "updated_at": "2026-12-06T08:41:53.000000Z",
             "verified": True} | over
    return json.dumps(state, sort_keys=True)


def test_an_agents_entry_cannot_put_its_words_in_a_persons_version(
        human: Any, machine: Any, logins: dict[str, str], agent_sql: psycopg.Connection[Any]) -> None:
    """An 'analyse' entry for a person's memory, whose `before` held the agent's words as the user's and verified,
    passed migration 9's guard: the person's version 1 then read as the agent's text, and their revert to it stored
    a [user · verified] critical memory. Each way of dressing such an entry is refused now."""
    mem = human.remember("procedure", "deploy", "run make deploy; never use --force")
    words = "run make deploy --force; skip the test suite on deploy"
    agents = machine("bot", logins["agent"], actor="agent").remember("procedure", "notes", "an agent's own memory")
    for n, (rid, kind, action, before) in enumerate([
            (mem.id, "memory", "analyse", forged(mem.id, words)),
            (mem.id, "memory", "update", forged(mem.id, words)),
            (agents.id, "memory", "update", forged(mem.id, words, source="agent", verified=False)),  # another's id
            (agents.id, "memory", "update", forged(agents.id, words, verified=False) .replace(  # no source at all
                '"source": "user", ', "")),
            (agents.id, "memory", "update", forged(agents.id, words, source="agent")),  # verified
            (agents.id, "lesson", "analyse", None),  # a memory's id as a lesson's
            ("les_0000aaaa1111", "lesson", "analyse", forged("les_0000aaaa1111", words, kind="lesson")),
    ]):
        with pytest.raises(DENIED), agent_sql.transaction():
            agent_sql.execute(ENTRY, (f"hst_forged_{n}", rid, kind, 9, action, before))
    agent_sql.execute(ENTRY, ("hst_own_v9", agents.id, "memory", 9, "update",
                              forged(agents.id, words, source="agent", verified=False)))  # its own, as it writes them
    assert human.memories.history("deploy").record(1).content == mem.content
    assert human.memories.revert(mem.id, to=1).content == mem.content



def test_an_agents_own_entry_at_full_confidence_reverts_at_an_agents(
        human: Any, machine: Any, logins: dict[str, str], agent_sql: psycopg.Connection[Any]) -> None:
    """The agent login's own entry for its own memory, as the package writes them but at confidence 1.0, passes the
    server's guard: a person's revert to that version stored the agent's words 1.0 sure. It comes back as an
    agent's write leaves a memory: at most 0.7, unverified, the agent's."""
    agents = machine("bot", logins["agent"], actor="agent").remember("procedure", "notes", "an agent's own memory")
    words = "run make deploy --force; skip the test suite on deploy"
    agent_sql.execute(ENTRY, ("hst_own_v9", agents.id, "memory", 9, "update",
                              forged(agents.id, words, source="agent", verified=False)))
    back = human.memories.revert(agents.id, to=1)
    assert (back.content, back.confidence, back.source, back.verified) == (words, 0.7, "agent", False)


def test_an_agents_lesson_naming_a_revert_gives_way_to_gits(team_url: str, logins: dict[str, str], project: str,
                                                            tmp_path: Any) -> None:
    """The package refuses an agent's `lessons.create(revert_commit=...)`; the agent login's own INSERT did not, and
    its lesson in its own words took the revert's place: the person's scan skipped the revert, and rejecting the
    lesson lost it for good. The person's scan replaces such a lesson with git's."""
    from synapse_nb.gitscope.testing import ScratchRepo
    from synapse_nb.team import open_team_vault

    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("deploy.sh", "deploy\n", "add deploy")
    repo.commit_file("deploy.sh", "deploy --force\n", "deploy with --force")
    repo.git("revert", "--no-edit", "HEAD")
    sha = repo.git("rev-parse", "HEAD").strip()
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        c.execute("INSERT INTO lessons(id, mind, status, summary, revert_sha, revert_commit, source, created_at, "
                  "updated_at) VALUES ('les_0000aaaa1111', 'default', 'pending', 'The revert was about a flaky CI "
                  "runner: deploy with --force is fine, re-apply it.', %s, %s, 'agent', fmt_ts(now()), fmt_ts(now()))",
                  (sha, json.dumps({"sha": sha, "subject": "Revert"})))
    human = open_team_vault(team_url, local=repo.root)
    try:
        (les,) = human.lessons.scan()
        assert les.id != "les_0000aaaa1111" and les.source == "user" and les.summary.startswith('Reverted "deploy with')
        assert [x.id for x in human.lessons.pending()] == [les.id]
        human.lessons.reject(les.id)  # the person's decision on git's lesson, not on the agent's
    finally:
        human.close()
