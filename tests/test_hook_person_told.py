"""Review 95, F1: one file an agent writes in its own project turned the approved lessons off for every later session,
and the person was never told.

(B) ``echo garbage > .git/synapse-nb/vaults.json`` made the vault read as borrowed: SessionStart gave 0 approved
lessons and said "No approved lessons yet" (three were approved), every prompt gave none, ``systemMessage`` None.
(C) one line ``url = "postgresql://..."`` in ``.synapse/team.toml``: SessionStart printed only the fixed START_FAILED
line, every prompt nothing, ``systemMessage`` None. What explained it went to the agent's context or to stderr, which
Claude Code does not show a person for a hook that exits 0.

Now the person is told in Claude Code's ``systemMessage``, in fixed words (why as one of a few fixed classes, never
the vault's text nor what the agent wrote), naming ``synapse-nb memory status``; a prompt in the same state says it
too (once a session where its start told it), and "No approved lessons yet" is said only where none exist.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.agents.hooks import FAILED_WHY, PROMPT_FAILED_NOTICE, START_FAILED, START_FAILED_NOTICE
from synapse_nb.recall.start import none_approved
from tests.test_agent_hooks import claude, hook

WORDS = ("Never deploy billing on Fridays", "Page the on-call before touching the redis cache",
         "Run alembic upgrade head before deploying")
URL = 'url = "postgresql://x@127.0.0.1:21699/x"\n'


@pytest.fixture()
def repo(git_repo: Path) -> Path:
    """A vault of the person's own (recorded so in .git/synapse-nb/vaults.json) with three approved lessons."""
    with syn.open_vault(git_repo) as v:
        for i, text in enumerate(WORDS):
            v.lessons.approve(v.lessons.create(f"lesson {i}").id, text=text)
    return git_repo


def run(event: str, repo: Path, session: str = "s1") -> dict[str, Any]:
    res = hook(event, claude(event, repo, session, source="startup", prompt="never deploy billing on fridays?"),
               cwd=repo)
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout) if res.stdout.strip() else {}
    return out


def context(out: dict[str, Any]) -> str:
    return str(out.get("hookSpecificOutput", {}).get("additionalContext", ""))


def no_vault_text(notice: str, repo: Path) -> None:
    """The notice is fixed words: nothing of the vault, nothing an agent wrote, no path."""
    assert not any(w in notice for w in WORDS) and str(repo) not in notice and "postgresql" not in notice
    assert "synapse-nb memory status" in notice


def test_a_vault_read_as_borrowed_is_told_to_the_person(repo: Path) -> None:
    healthy = run("SessionStart", repo)
    assert all(w in context(healthy) for w in WORDS) and "systemMessage" not in healthy
    (repo / ".git" / "synapse-nb" / "vaults.json").write_text("garbage\n", encoding="utf-8")  # the agent's one write

    start = run("SessionStart", repo)
    notice = start["systemMessage"]
    assert notice.startswith("synapse-nb: 3 approved lessons of this vault are NOT given to the agent: this "
                             "checkout's record of its vaults") and "reads as borrowed" in notice
    no_vault_text(notice, repo)
    text = context(start)
    assert not any(w in text for w in WORDS)  # still not in force: a person decides (memory status says how)
    assert "No approved lessons yet" not in text
    assert ("No approved lesson is in force here: 3 approved lessons of this vault were not approved in this "
            "checkout (the borrowed vault's line above says why).") in text

    assert "systemMessage" not in run("UserPromptSubmit", repo)  # its start told the person: once a session
    other = run("UserPromptSubmit", repo, "s2")  # a session whose start did not run (or ran before the write)
    assert other["systemMessage"] == notice
    assert "systemMessage" not in run("UserPromptSubmit", repo, "s2")


def test_a_team_toml_no_person_confirmed_is_told_to_the_person(repo: Path) -> None:
    (repo / ".synapse" / "team.toml").write_text(URL, encoding="utf-8")  # the agent's one line
    start = run("SessionStart", repo)
    assert context(start) == START_FAILED
    assert start["systemMessage"] == START_FAILED_NOTICE.format(why=FAILED_WHY["team"])
    no_vault_text(start["systemMessage"], repo)
    for session in ("s1", "s1", "s2"):  # every prompt whose hook cannot read the memory says it
        prompt = run("UserPromptSubmit", repo, session)
        assert prompt == {"systemMessage": PROMPT_FAILED_NOTICE.format(why=FAILED_WHY["team"])}
    no_vault_text(PROMPT_FAILED_NOTICE, repo)


def test_no_approved_lessons_yet_only_where_none_exist(git_repo: Path) -> None:
    """A lesson approved for another branch exists: the start says so, not "yet" (nor anything of it)."""
    with syn.open_vault(git_repo) as v:
        assert none_approved(v.lessons) == "No approved lessons yet."
        v.lessons.approve(v.lessons.create("x", branch="release-2").id, text="Tag releases from main only")
        assert not v.lessons.in_force()
    text = context(run("SessionStart", git_repo))
    assert "No approved lesson is in force here: 1 approved lesson holds on other branches only." in text
    assert "yet" not in text.split("Memory:")[0] and "Tag releases" not in text
    assert "systemMessage" not in run("SessionStart", git_repo)  # a branch's scope is no fault to tell
