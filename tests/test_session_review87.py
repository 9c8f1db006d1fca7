"""Review 87: what a session is told of the lessons it holds, and what it resumes from.

F3: a session given two approved lessons, one of which the person then withdrew (or re-approved in other words),
was told on its next prompt "the approved lesson shown earlier in this session is still in force": one, while it
held two, with no way to tell which. Now the banner names, by the wording the session was given, each lesson it
holds that is no longer in force as given, once (the hook and every recall with a session: one code path).

F4: an agent's deliberate checkpoint took the place of the person's as the one resumed from, and the person's was
neither shown nor counted; an agent's 50 automatic checkpoints pushed the person's own automatic one out of the
three listed "since". Now resume names the person's newest deliberate checkpoint under an agent's, and the list
since keeps people's first, the agents' counted apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import synapse_nb as syn
from synapse_nb._util import utcnow
from tests.test_agent_hooks import ROOT, claude, context_of, hook

FRIDAY = "Never run database migrations on a Friday."
STAGING = "Always run the billing tests against the staging database."
NOON = "Database migrations may run on Fridays before noon; never after noon."


def start(repo: Path, session: str = "S") -> str:
    return context_of(hook("SessionStart", claude("SessionStart", repo, session, source="startup"), cwd=repo))


def prompt(repo: Path, text: str, session: str = "S") -> str:
    res = hook("UserPromptSubmit", claude("UserPromptSubmit", repo, session, prompt=text), cwd=repo)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return context_of(res) if res.stdout else ""


def _two_lessons(repo: Path) -> str:
    with syn.open_vault(repo) as v:
        friday = v.lessons.create("Never run migrations on Friday")
        v.lessons.approve(friday.id, text=FRIDAY)
        staging = v.lessons.create("Use the staging db for tests")
        v.lessons.approve(staging.id, text=STAGING)
        v.remember("project", "billing_db", "The billing database migration script lives in tools/migrate.py")
        return friday.id


# ------------------------------------------------------------------------------------------------ F3
def test_a_withdrawn_lesson_is_named_once_as_no_longer_in_force(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    first = start(git_repo)
    assert FRIDAY in first and STAGING in first
    with syn.open_vault(git_repo) as v:
        v.lessons.withdraw(friday)
    text = prompt(git_repo, "where is the billing database migration script?")
    assert (f'(no longer in force, do not follow: "{FRIDAY}" — shown earlier in this session, since withdrawn or '
            "run out)") in text
    assert "(the other approved lesson shown earlier in this session is still in force)" in text
    assert "tools/migrate.py" in text and STAGING not in text
    again = prompt(git_repo, "where does the billing database migration script live?")  # told once
    assert "no longer in force" not in again
    assert prompt(git_repo, "zebra quartz") == ""  # nothing new: nothing at all
    with syn.open_vault(git_repo) as v:  # approved again as it read: given again in full, nothing named
        v.lessons.approve(friday)
    back = prompt(git_repo, "zebra quartz")
    assert f"1. [all branches, approved] {FRIDAY}" in back and "no longer in force" not in back


def test_a_lesson_approved_again_in_other_words_names_the_words_the_session_holds(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    start(git_repo)
    with syn.open_vault(git_repo) as v:
        v.lessons.withdraw(friday)
        v.lessons.approve(friday, text=NOON)
    text = prompt(git_repo, "zebra quartz")  # no hit: the new wording, and the old one named as no longer in force
    lines = text.splitlines()
    assert lines[1] == f"1. [all branches, approved] {NOON}"
    assert (f'(no longer in force, do not follow: "{FRIDAY}" — shown earlier in this session, since approved again '
            "in other words)") in lines
    assert lines[-1] == "(also still in force: the other approved lesson shown earlier in this session)"
    assert prompt(git_repo, "zebra quartz") == ""


def test_a_recall_with_a_session_names_a_lesson_run_out_and_one_withdrawn(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    now = [utcnow()]
    with syn.open_vault(git_repo, actor="agent", clock=lambda: now[0]) as agent, syn.open_vault(git_repo) as person:
        first = agent.recall("migration script", session="m1")
        assert FRIDAY in first.text and STAGING in first.text
        person.lessons.withdraw(friday)
        now[0] += timedelta(days=person.lessons.expiry_days + 1)  # the other runs out
        r = agent.recall("migration script", session="m1")  # nothing new of the hits: the banner says what left
        assert r.empty_reason == "already_given"
        staging = next(g[0] for g in r.no_longer if g[0] != friday)
        assert sorted(r.no_longer) == sorted([(friday, FRIDAY, "out"), (staging, STAGING, "out")])
        assert r.text.splitlines()[:4] == [
            "APPROVED SYSTEM MEMORY — CRITICAL: ADHERE",
            *(f'(no longer in force, do not follow: "{text}" — shown earlier in this session, since withdrawn or '
              "run out)" for _, text, _ in sorted(r.no_longer)),
            "(no approved lesson is in force now)"]
        assert agent.recall("migration script", session="m1").text.startswith("nothing new for:")  # told once
        assert person.recall("migration script", session="m1").no_longer == ()  # a person's session is apart


# ------------------------------------------------------------------------------------------------ F4
def test_resuming_from_an_agents_checkpoint_names_the_persons_own(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    p = v.checkpoint("Person: migrate billing to v2", next_step="run the migration dry-run first")
    agent = v.as_agent()
    ag = agent.checkpoint("Agent: refactor done", next_step="deploy to prod now")
    assert v.checkpoints.latest() == ag
    r = v.checkpoints.resume(ag)
    assert r.persons == p
    lines = r.text.splitlines()
    assert lines[-2] == ("The person's own latest checkpoint on this branch (saved on purpose; the one resumed from "
                         "above is an agent's):")
    assert lines[-1].startswith(f"- [user] {p.id} (") and lines[-1].endswith(
        "): Person: migrate billing to v2; next: run the migration dry-run first")
    assert v.checkpoints.resume(p).persons is None  # a person's resumed from: nothing added
    agent.checkpoint("x" * 2000, next_step="y" * 2000)  # bounded: fields cut
    mine = v.checkpoint("z" * 2000)
    again = v.checkpoints.resume(agent.checkpoint("Agent: again"))
    assert again.persons == mine and len(again.text.splitlines()[-1]) < 400


def test_the_restore_pack_names_the_persons_checkpoint_under_an_agents(tmp_path: Path) -> None:
    """The pack a compaction restores from (PreCompact, ``signal_low_context``) says what every resume says: the
    person's own checkpoint under an agent's, and the agents' later ones counted apart."""
    v = syn.open_vault(tmp_path)
    p = v.checkpoint("Person: migrate billing to v2", next_step="run the migration dry-run first")
    agent = v.as_agent()
    ag = agent.checkpoint("Agent: refactor done", next_step="deploy to prod now")
    for i in range(4):
        agent.checkpoint(f"auto {i}", origin="auto")
    pack = v.restore_pack()
    body = v.checkpoints.resume(ag, 400).body
    assert body in pack and "run the migration dry-run first" in pack and p.id in pack
    assert "The person's own latest checkpoint on this branch" in pack
    assert v.checkpoints.resume(ag).agents == 4 and "of them agents'" in pack


def test_a_persons_checkpoint_stays_listed_since_under_fifty_of_an_agents(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    agent = v.as_agent()
    ag = agent.checkpoint("Agent: refactor done", next_step="deploy to prod now")
    mine = v.checkpoint("Person 2nd: keep reading", origin="watch")
    for i in range(50):
        agent.checkpoint(f"auto {i}", origin="auto")
    r = v.checkpoints.resume(v.checkpoints.latest())
    assert v.checkpoints.latest() == ag and (r.later, r.agents) == (51, 50)
    assert r.since[0].id == mine.id and len(r.since) == 3
    text = r.text.splitlines()
    i = text.index("Since then on this branch: 51 later checkpoints, 50 of them agents' (what happened after it; "
                   "people's first, each newest first):")
    assert text[i + 1].startswith(f"- [user] {mine.id} (")
    assert text[i + 4] == "(… 48 more not shown, 48 of them agents')"


def test_every_restore_surface_names_the_persons_checkpoint(git_repo: Path) -> None:
    with syn.open_vault(git_repo) as v:
        p = v.checkpoint("Person: migrate billing to v2", next_step="run the migration dry-run first")
        v.as_agent().checkpoint("Agent: refactor done", next_step="deploy to prod now")
    assert f"- [user] {p.id} (" in start(git_repo, "T")  # the SessionStart hook
    env = {k: x for k, x in os.environ.items() if not k.startswith("SYNAPSE_") and k != "CLAUDECODE"}
    env["PYTHONPATH"] = str(ROOT)
    res = subprocess.run([sys.executable, "-m", "synapse_nb", "checkpoint", "restore"], cwd=git_repo, env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0 and f"- [user] {p.id} (" in res.stdout, res.stderr
    res = subprocess.run([sys.executable, "-m", "synapse_nb", "checkpoint", "restore", "--json"], cwd=git_repo,
                         env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert p.id in json.dumps(json.loads(res.stdout))
