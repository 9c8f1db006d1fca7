"""Review 65: the bounds of lesson scans.

F1: the agents' cap of pending lessons and a scan's total did not hold when agents' scans and a person's alternated
(a person's scan took the agent's lessons over, which then counted as the person's: 300 pending in one mind).
F2: an agent's scan saved a place (every ref tip it read) in every mind it named, counted by no local quota.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.kinds import lesson_scan
from synapse_nb.kinds import lessons as lessons_mod


@pytest.fixture()
def project(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """conftest's one-commit repository on ``main``, with no ``SYNAPSE_HOME`` to point elsewhere."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    return git_repo


def _reverts(project: Path, git: Any, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        (project / f"f{i}.py").write_text(f"x = {i}\n", encoding="utf-8")
        git(project, "add", f"f{i}.py")
        git(project, "commit", "-q", "-m", f"Add f{i}")
        git(project, "revert", "--no-edit", "HEAD")


def _agents_count(v: syn.Vault) -> int:
    return v._ctx.store.lessons.agent_pending(v.mind)


def test_alternating_agent_and_person_scans_fill_a_mind_only_to_both_caps(
        project: Path, git: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: each person's scan took the agent's scan's lessons over and emptied the agents' count, so the next
    agent scan made its cap again (caps 2 and 4 here: 2, 4, 6, 8 ... pending). Now the taken-over lessons count
    against the agents until a human decides them, and an agent's scan also stops at the total."""
    monkeypatch.setattr(lessons_mod, "AGENT_PENDING_LESSONS", 2)
    monkeypatch.setattr(lessons_mod, "SCAN_PENDING_LESSONS", 4)
    _reverts(project, git, 12)
    v = syn.open_vault(project)
    agent = v.as_agent()
    for _ in range(4):
        agent.lessons.scan()
        v.lessons.scan()
    pending = v.lessons.pending()
    assert len(pending) == 4
    assert sum(lesson_scan.first_found_by_agent(x) for x in pending) == 2  # the agent's scan's two, taken over
    assert _agents_count(v) == 2
    agent.lessons.scan()
    assert len(v.lessons.pending()) == 4


def test_a_lesson_taken_over_from_an_agent_counts_for_the_agents_until_a_human_decides_it(
        project: Path, git: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lessons_mod, "AGENT_PENDING_LESSONS", 2)
    _reverts(project, git, 4)
    v = syn.open_vault(project)
    agent = v.as_agent()
    agent.lessons.scan()
    assert _agents_count(v) == 2
    taken = v.lessons.scan()  # takes the agent's two over (git's words) and makes two of its own
    assert len(taken) == 4 and {x.source for x in taken} == {"user"}
    assert _agents_count(v) == 2  # before: 0
    with pytest.raises(syn.QuotaExceededError):
        agent.lessons.create("an agent's own lesson")
    first = [x for x in taken if lesson_scan.first_found_by_agent(x)]
    v.lessons.approve(first[0].id)  # a human's decision: it no longer waits
    v.lessons.reject(first[1].id)
    assert _agents_count(v) == 0
    agent.lessons.create("an agent's own lesson")
    assert _agents_count(v) == 1


def test_an_agents_scan_stops_at_the_scans_total(project: Path, git: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mind a person's scan filled to the total: an agent's scan (none of its own pending) makes no more."""
    monkeypatch.setattr(lessons_mod, "AGENT_PENDING_LESSONS", 2)
    monkeypatch.setattr(lessons_mod, "SCAN_PENDING_LESSONS", 3)
    _reverts(project, git, 5)
    v = syn.open_vault(project)
    assert len(v.lessons.scan()) == 3
    v.as_agent().lessons.scan()  # before: made two more (5 pending)
    assert len(v.lessons.pending()) == 3 and _agents_count(v) == 0


def test_an_agents_lesson_by_hand_stops_at_the_scans_total(project: Path, git: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound a team server holds an agent's own SQL to (PostgreSQL migration 25), in the package's words first:
    before, an agent's lesson by hand joined any number of pending ones."""
    monkeypatch.setattr(lessons_mod, "SCAN_PENDING_LESSONS", 3)
    _reverts(project, git, 3)
    v = syn.open_vault(project)
    assert len(v.lessons.scan()) == 3
    agent = v.as_agent()
    assert v._ctx.store.lessons.pending_total(v.mind) == 3
    with pytest.raises(syn.QuotaExceededError, match="agent write refused: 3 lessons wait for a human"):
        agent.lessons.create("an agent's own lesson")
    v.lessons.reject(v.lessons.pending()[0].id)
    assert agent.lessons.create("an agent's own lesson").source == "agent"


def _agent_places(v: syn.Vault) -> dict[str, tuple[str, ...]]:
    (db,) = Path(v.path).glob("*.db")
    with closing(sqlite3.connect(db)) as c:
        keys = [r[0] for r in c.execute("SELECT key FROM meta WHERE key LIKE 'scan_tips:agent:%' ORDER BY key")]
    return {k: v._ctx.store.meta.scan_tips(k[len("scan_tips:"):]) for k in keys}


def test_an_agents_scan_in_a_mind_it_holds_nothing_in_saves_no_place(project: Path, git: Any) -> None:
    """Before: one place per mind name the agent's scan was given (60 minds of 2,000 branches: 5.3 MB)."""
    git(project, "commit", "-q", "--allow-empty", "-m", "work")
    v = syn.open_vault(project)
    for m in ("m1", "m2", "m3"):
        assert v.with_mind(m).as_agent().lessons.scan() == []
    assert _agent_places(v) == {}
    agent = v.with_mind("m2").as_agent()
    agent.checkpoint("working on it")  # a record of its own in m2: its scans there keep a place
    git(project, "commit", "-q", "--allow-empty", "-m", "more work")
    agent.lessons.scan()
    head = git(project, "rev-parse", "HEAD").strip()
    assert _agent_places(v) == {"scan_tips:agent:m2": (head,)}


def test_an_agents_scan_that_makes_lessons_saves_its_place_and_finds_nothing_twice(project: Path, git: Any) -> None:
    _reverts(project, git, 2)
    v = syn.open_vault(project)
    agent = v.with_mind("fresh").as_agent()
    agent.lessons.scan()
    assert list(_agent_places(v)) == ["scan_tips:agent:fresh"]  # it holds its two pending lessons
    for les in v.with_mind("fresh").lessons.pending():
        v.with_mind("fresh").lessons.approve(les.id, accept_agent_text=True)
    agent.lessons.scan()  # from its place: nothing again
    assert len(v.with_mind("fresh").lessons.list()) == 2


def test_an_agents_place_past_the_bound_is_not_saved_and_no_revert_is_lost(
        project: Path, git: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lesson_scan, "AGENT_PLACE_BYTES", 100)  # two tips' JSON is 88 bytes, three's 132
    base = git(project, "rev-parse", "HEAD").strip()
    v = syn.open_vault(project)
    agent = v.as_agent()
    agent.checkpoint("mine")
    _reverts(project, git, 1)
    agent.lessons.scan()
    assert list(_agent_places(v).values()) == [(git(project, "rev-parse", "HEAD").strip(),)]
    for name in ("side1", "side2"):
        git(project, "branch", name, base)
    git(project, "checkout", "-q", "side1")
    _reverts(project, git, 1, start=10)
    git(project, "checkout", "-q", "main")
    agent.lessons.scan()
    assert [len(x) for x in _agent_places(v).values()] == [1]  # three tips: not saved
    assert len(v.lessons.pending()) == 2  # the side branch's revert was found all the same
    agent.lessons.scan()
    assert len(v.lessons.pending()) == 2
