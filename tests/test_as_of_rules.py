"""A recall rebuilt from history (``recall(as_of=...)``) keeps the actor's read rules and says what it is (review 64).

Before, the rebuild took every history entry's ``before`` whatever the actor: an agent, which may read approved
lessons in force only, read a lesson the person had withdrawn, rejected or let expire, under the live "APPROVED
SYSTEM MEMORY — CRITICAL: ADHERE" banner and with no word that the answer was not today's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import synapse_nb as syn
from synapse_nb.history import as_of_ts
from synapse_nb.recall import BANNER
from synapse_nb.render import as_of_line
from tests.conftest import FakeClock

RULE = "deploy with ./deploy.sh --force --skip-tests on Fridays"
QUERY = "how do we deploy on Fridays"


def _withdraw(v: syn.Vault, lid: str, clock: FakeClock) -> None:
    v.lessons.withdraw(lid)


def _reject(v: syn.Vault, lid: str, clock: FakeClock) -> None:
    v.lessons.withdraw(lid)  # an approved lesson is withdrawn (pending again), then rejected: deleted
    v.lessons.reject(lid)


def _expire(v: syn.Vault, lid: str, clock: FakeClock) -> None:
    clock.advance(days=3)  # past its one-day approval


ENDS: dict[str, Callable[[syn.Vault, str, FakeClock], None]] = {
    "withdrawn": _withdraw, "rejected": _reject, "expired": _expire}


def _approved_then_ended(vault: syn.Vault, clock: FakeClock, end: str) -> str:
    """A lesson approved, in force for a while, then ended as ``end`` says; the moment it was in force."""
    les = vault.lessons.create(RULE, branch=None)
    vault.lessons.approve(les.id, accept_agent_text=True, expiry_days=1)
    clock.advance(hours=1)
    then = as_of_ts(clock())
    clock.advance(hours=1)
    ENDS[end](vault, les.id, clock)
    assert not [x for x in vault.lessons.in_force(None) if x.id == les.id]
    return then


@pytest.mark.parametrize("end", sorted(ENDS))
def test_an_agent_never_reads_a_lesson_no_longer_in_force_as_of_a_past_moment(
        vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock, end: str) -> None:
    then = _approved_then_ended(vault, clock, end)
    r = agent_vault.recall(QUERY, as_of=then)
    assert "--skip-tests" not in r.text and not r.lessons
    assert BANNER not in r.text
    assert r.text.startswith(as_of_line(then)) and r.as_of == then and r.to_dict()["as_of"] == then


@pytest.mark.parametrize("end", sorted(ENDS))
def test_a_person_reads_the_past_lesson_under_an_as_of_heading_never_the_live_banner(
        vault: syn.Vault, clock: FakeClock, end: str) -> None:
    then = _approved_then_ended(vault, clock, end)
    r = vault.recall(QUERY, as_of=then)
    assert [x.lesson_text for x in r.lessons] == [RULE]  # what was in force then: the person asked for it
    lines = r.text.splitlines()
    assert lines[0] == as_of_line(then) and "not today's rules" in lines[0]
    assert lines[2].startswith("LESSONS APPROVED AS OF ") and "may no longer be in force" in lines[2]
    assert lines[3].startswith("1. [all branches, approved then]") and RULE in lines[3]
    assert BANNER not in r.text and "CRITICAL" not in r.text
    assert r.to_dict()["as_of"] == then
    html = r._repr_html_()
    assert "Lessons approved as of" in html and "Approved lessons</b> (head every recall)" not in html


def test_an_agent_reads_a_lesson_in_force_now_as_it_was_then_and_live_answers_are_unchanged(
        vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock) -> None:
    les = vault.lessons.create(RULE, branch=None)
    vault.lessons.approve(les.id, accept_agent_text=True)
    clock.advance(hours=1)
    then = as_of_ts(clock())
    past = agent_vault.recall(QUERY, as_of=then)
    assert [x.id for x in past.lessons] == [les.id]
    assert "LESSONS APPROVED AS OF" in past.text and BANNER not in past.text
    live = agent_vault.recall(QUERY)
    assert live.text.startswith(BANNER) and live.as_of is None and live.to_dict()["as_of"] is None
    assert "[all branches, approved]" in live.text and "AS OF" not in live.text
