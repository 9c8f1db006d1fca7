"""An agent's lesson scan counts the lessons it made (review 90 F4), on a local vault; tests/team/test_team_review90.py
has the team vault's.

An agent may not read pending lessons, so ``lessons.scan()`` gives it an empty list, and ``synapse-nb lessons scan``
printed ``len(created)``: "0 new pending lessons" right after it created one. The count is the scan's now, and the
text says a person reviews them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.gitscope.testing import ScratchRepo

SAID = "1 new pending lesson, for a person to review (an agent cannot read pending lessons)"


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScratchRepo:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.delenv("CLAUDECODE", raising=False)
    r = ScratchRepo.init(tmp_path / "repo")
    r.commit_file("retry.py", "retry = 3\n", "Add retries")
    r.git("revert", "--no-edit", "HEAD")
    syn.open_vault(r.root).close()  # the person's vault
    monkeypatch.chdir(r.root)
    return r


def test_an_agents_cli_scan_says_how_many_lessons_it_made(repo: ScratchRepo,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    out = CliRunner().invoke(app, ["lessons", "scan"])
    assert out.exit_code == 0 and out.stdout == SAID + "\n", out.output
    repo.commit_file("pay.py", "pay = 1\n", "Add pay")
    repo.git("revert", "--no-edit", "HEAD")
    out = CliRunner().invoke(app, ["lessons", "scan", "--json"])  # the JSON stays the list it may read
    assert out.exit_code == 0 and json.loads(out.stdout) == [] and f"note: {SAID}" in out.stderr, out.output
    out = CliRunner().invoke(app, ["lessons", "scan"])
    assert out.exit_code == 0 and out.stdout == "0 new pending lessons\n", out.output
    monkeypatch.delenv("CLAUDECODE")
    with syn.open_vault(repo.root) as v:
        assert len(v.lessons.pending()) == 2


def test_the_api_scan_counts_an_agents_lessons_and_a_persons(repo: ScratchRepo) -> None:
    with syn.open_vault(repo.root, actor="agent") as bot:
        got = bot.lessons.scan()
        assert list(got) == [] and got.made == 1 and got.unread == 1 and got.said() == SAID
    repo.commit_file("pay.py", "pay = 1\n", "Add pay")
    repo.git("revert", "--no-edit", "HEAD")
    with syn.open_vault(repo.root) as v:
        got = v.lessons.scan()  # the agent's lesson, taken over as git's, and the new one: both the person's to read
        assert len(got) == 2 and got.made == 2 and got.unread == 0 and got.said() == "2 new pending lessons"
