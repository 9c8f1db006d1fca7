"""Who pays for the duplicate check of a large write transaction, on a team vault (review 75 F3): an agent login's
transaction is checked at its own commit (its pairs pass the server's guards: each names the agent's own record
first and hides only it), and a person's listing checks a bounded part of a person's bulk load and says what waits.
The same dupes code and history statements as SQLite's (tests/test_dupes_backlog.py); bounds made small."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb import dupes
from tests.test_dupes_backlog import TEXT, _notes, _pair_of, _waiting


@pytest.fixture()
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dupes, "SYNC_MAX", 2)
    monkeypatch.setattr(dupes, "BATCH", 3, raising=False)
    monkeypatch.setattr(dupes, "READ_CHECKS", 3, raising=False)


def test_an_agent_logins_bulk_transaction_leaves_the_person_no_checks(human: syn.Vault, machine: Callable[..., Any],
                                                                      logins: dict[str, str], small: None) -> None:
    first = human.decide(TEXT)
    bot = machine("bot", logins["agent"], actor="agent")
    with bot.transaction():
        for note in _notes(6):
            bot.decide(note)
        copy = bot.decide(TEXT)
    assert _waiting(human) == 0
    pairs = human.memories.conflicts()
    assert _pair_of(pairs, copy.id) == [(copy.id, {first.id, copy.id})]
    assert pairs.unchecked == 0 and pairs.note is None


def test_a_persons_listing_checks_at_most_the_bound_and_says_what_waits(human: syn.Vault, small: None) -> None:
    with human.transaction():
        first = human.decide(TEXT)
        for note in _notes(8):
            human.decide(note)
        copy = human.decide(TEXT)
    assert _waiting(human) == 10
    pairs = human.memories.conflicts()
    assert _waiting(human) == 7
    assert pairs.unchecked == 7 and (pairs.note or "").startswith("7 writes waiting for the duplicate check")
    every = human.memories.conflicts(check_all=True)
    assert _waiting(human) == 0 and every.unchecked == 0 and every.note is None
    assert _pair_of(every, copy.id) == [(copy.id, {first.id, copy.id})]
