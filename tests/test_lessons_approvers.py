"""s21: ``lessons list`` (text and ``--json``) and the lessons widget say who approved each approved lesson, and when.

The listing showed a lesson as approved, never by whom; a team vault's history entry carries the login of the person
who approved it (tests/team/test_team_attribution.py). A local vault records no logins: "a person". A borrowed
vault's lesson was approved by a person here once re-approved here, else by whoever committed the vault.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb._util import utcnow, when
from synapse_nb.cli import app
from synapse_nb.kinds.lesson_approvers import A_PERSON, A_PERSON_HERE, ELSEWHERE, Approval, approvals
from synapse_nb.widgets.lessons import LessonReview
from tests.test_borrowed import clone  # noqa: F401 - the fixture

RULE = "Never retry payments without an idempotency key"


def cli(project: Path, *args: str) -> Any:
    res = CliRunner().invoke(app, ["--vault", str(project), *args])
    assert res.exit_code == 0, (res.exit_code, res.stdout, res.stderr)
    return res


def _lessons(project: Path) -> tuple[str, str, str]:
    now = [utcnow() - timedelta(days=3)]
    with syn.open_vault(project, clock=lambda: now[0]) as v:
        old = v.lessons.create("Old rule")
        v.lessons.approve(old.id, text="Run the smoke tests before a release", expiry_days=1)  # it ran out since
        now[0] = utcnow()
        les = v.lessons.create("Reverted 'retry payments'")
        v.lessons.approve(les.id, text=RULE)
        pending = v.lessons.create("A draft nobody decided")
        return les.id, old.id, pending.id


def test_lessons_list_says_who_approved_each_lesson_and_when(tmp_path: Path) -> None:
    les, old, pending = _lessons(tmp_path)
    with syn.open_vault(tmp_path) as v:
        at = {x.id: x.approved_at for x in v.lessons.list()}
    lines = cli(tmp_path, "lessons", "list").stdout.splitlines()
    for rid in (les, old):
        i = next(n for n, line in enumerate(lines) if line.startswith(rid))
        assert lines[i + 1] == f"    approved by a person, {when(at[rid], seconds=True)}"
    i = next(n for n, line in enumerate(lines) if line.startswith(pending))
    assert i + 1 == len(lines) or not lines[i + 1].startswith("    approved by")
    rows = {r["id"]: r for r in json.loads(cli(tmp_path, "lessons", "list", "--json").stdout)}
    assert rows[les]["approval"] == {"by": "a person", "login": None, "at": at[les]}
    assert rows[old]["approval"] == {"by": "a person", "login": None, "at": at[old]}
    assert rows[pending]["approval"] is None
    # an agent lists the lessons in force: it is told a person approved them too
    agent = CliRunner().invoke(app, ["--vault", str(tmp_path), "--actor", "agent", "lessons", "list", "--json"])
    assert agent.exit_code == 0, agent.output
    assert [(r["id"], r["approval"]["by"]) for r in json.loads(agent.stdout)] == [(les, "a person")]


def test_the_lessons_widget_has_an_approved_by_column(tmp_path: Path) -> None:
    les, old, pending = _lessons(tmp_path)
    v = syn.open_vault(tmp_path)
    w = LessonReview(v)
    assert [c["key"] for c in w.table.columns].index("approver") == 3
    assert sum(c["width"] for c in w.table.columns) == 100 == sum(c["narrow"] for c in w.table.columns)
    assert w.table.cell(les, "approver") == "a person" and w.table.cell(old, "approver") == "a person"
    assert w.table.cell(pending, "approver") == "-"
    title = next(r["title"] for r in w.table.rows if r["id"] == les)
    assert title.endswith(f" · approved by a person, {when(v.lessons.get(les).approved_at, seconds=True)}")
    v.close()


def test_an_approval_no_history_entry_names_is_a_persons(tmp_path: Path) -> None:
    """A lesson imported approved (an export without history, trusted) has no approval entry: "a person", at the
    time it carries; a pending lesson has no approval."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with syn.open_vault(tmp_path / "a") as v:
        les = v.lessons.approve(v.lessons.create("x").id, text=RULE)
        text = v.export_jsonl()
    with syn.open_vault(tmp_path / "b") as other:
        other.import_jsonl(text.splitlines(), trust=True)
        assert [e.action for e in other.history(les.id)] == ["import"]
        assert approvals(other, other.lessons.list()) == {les.id: Approval(A_PERSON, les.approved_at or "")}
        assert approvals(other, [other.lessons.create("pending")]) == {}


def test_a_borrowed_vaults_lesson_says_it_was_approved_elsewhere_until_approved_here(
        clone: tuple[Path, str]) -> None:  # noqa: F811 - the fixture
    project, les_id = clone
    rows = json.loads(cli(project, "lessons", "list", "--json").stdout)
    assert [(r["id"], r["awaiting_local_approval"], r["approval"]["by"]) for r in rows] == [
        (les_id, True, ELSEWHERE)]
    assert "    approved by whoever committed the vault, " in cli(project, "lessons", "list").stdout
    cli(project, "lessons", "approve", les_id, "--yes")
    [row] = json.loads(cli(project, "lessons", "list", "--json").stdout)
    assert row["approval"]["by"] == A_PERSON_HERE and row["approval"]["at"] > rows[0]["approval"]["at"]
