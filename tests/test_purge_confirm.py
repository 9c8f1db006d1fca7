"""`memory purge` at a terminal shows what goes for good and asks (review 64).

Before, a purge at a terminal showed nothing and asked nothing (unlike `memory accept` and `memory resolve`), and its
report named neither the record's author nor its address: an agent's checkpoint calling a person's verified memory
its own "leaked token" got the person to purge it, history and all, with nothing left to see what was lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
import synapse_nb.cli.history as cli_history
from synapse_nb.cli import app

CONTENT = "deploy: make deploy, then tag the release"


@pytest.fixture()
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> syn.Vault:
    monkeypatch.setattr(cli_history, "require_human_here", lambda *args: None)  # a person at a terminal
    return syn.open_vault(tmp_path)


def _asked(monkeypatch: pytest.MonkeyPatch, answer: bool) -> list[dict[str, Any]]:
    asked: list[dict[str, Any]] = []

    def confirm(text: str, **kw: Any) -> bool:
        asked.append({"text": text, **kw})
        return answer
    monkeypatch.setattr(cli_history.typer, "confirm", confirm)
    return asked


def _purge(v: syn.Vault, *args: str) -> Any:
    return CliRunner().invoke(app, ["--vault", str(v.path.parent), "memory", "purge", *args])


def test_a_purge_at_a_terminal_shows_what_goes_and_a_no_keeps_it(person: syn.Vault,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    m = person.remember("project", "deploy_procedure", CONTENT)
    person.remember("project", "deploy_procedure", CONTENT + " (v2)")
    asked = _asked(monkeypatch, False)
    res = _purge(person, m.id)
    assert res.exit_code == 1 and "not purged" in res.stderr
    assert len(asked) == 1 and asked[0]["default"] is False
    shown = res.stderr
    assert f"memory project/deploy_procedure ({m.id})" in shown
    assert f"[user · verified] project/deploy_procedure: {CONTENT} (v2)" in shown
    assert "2 history entries, 0 revisions, 0 links" in shown
    assert person.memories.get(m.id).content == CONTENT + " (v2)" and len(person.history(m.id)) == 2


def test_a_yes_at_the_prompt_purges_and_the_report_names_the_mark_and_address(
        person: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    m = person.remember("project", "deploy_procedure", CONTENT)
    _asked(monkeypatch, True)
    res = _purge(person, m.id)
    assert res.exit_code == 0, res.output
    assert f"purged memory [user · verified] project/deploy_procedure ({m.id}): record deleted" in res.stdout
    assert not person.memories.list()


def test_yes_asks_nothing_and_the_json_report_names_the_mark_and_address(
        person: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    m = person.as_agent().remember("knowledge", "ci_runtime", "CI takes 12 minutes")
    asked = _asked(monkeypatch, False)
    res = _purge(person, m.id, "--yes", "--json")
    assert res.exit_code == 0 and asked == [] and res.stderr == ""
    got = json.loads(res.stdout)
    assert (got["mark"], got["address"], got["record_deleted"]) == ("[agent · unverified]", "knowledge/ci_runtime",
                                                                    True)


def test_a_deleted_record_shows_its_last_known_version_and_who_deleted_it(
        person: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    d = person.decide("Use SQLite as the system of record", rationale="one file")
    person.decisions.delete(d.id)
    asked = _asked(monkeypatch, False)
    res = _purge(person, d.id)
    assert res.exit_code == 1 and len(asked) == 1
    assert f"what is left of: decision {d.id}, deleted " in res.stderr and " UTC by user" in res.stderr
    assert "its last known version: [user] Use SQLite as the system of record" in res.stderr
    assert "2 history entries" in res.stderr
    assert len(person.history(d.id)) == 2
    report = person.purge(d.id)
    assert (report.mark, report.address, report.record_deleted) == ("[user]", "", False)
    assert str(report).startswith(f"purged decision [user] ({d.id}): record already gone")
