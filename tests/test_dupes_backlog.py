"""Who pays for the duplicate check of a large write transaction (review 75 F3, reproduced).

A transaction that wrote more than ``SYNC_MAX`` checked records left them to the next person's ``memory conflicts``
(or the review widget's first render), which checked the whole backlog: after an agent wrote 3,000 decisions of 32 KB
in one ``with a.transaction():``, the person's listing took 45 s, and over 600 s with repetitive text. Now an agent's
transaction is checked at its own commit, in batches, and a person's listing checks at most ``READ_CHECKS`` writes
(and starts no batch past ``READ_SECONDS``), says how many still wait, and ``--check-all`` checks them all. The
bounds are made small here; what is checked is counted, never timed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb import dupes
from synapse_nb.cli import app

TEXT = "the release checklist needs a signed changelog entry and a green nightly build"


def _notes(n: int) -> list[str]:
    return [f"release note {i}: bump the version of component {i} in the manifest" for i in range(n)]


@pytest.fixture()
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dupes, "SYNC_MAX", 2)
    monkeypatch.setattr(dupes, "BATCH", 3, raising=False)  # (raising=False: the tests fail, not error, without them)
    monkeypatch.setattr(dupes, "READ_CHECKS", 3, raising=False)


@pytest.fixture()
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The records each run of the check read, in order."""
    seen: list[int] = []
    real = dupes.find_links

    def counted(records: Any, store: Any, **kw: Any) -> Any:
        seen.append(len(records))
        return real(records, store, **kw)

    monkeypatch.setattr(dupes, "find_links", counted)
    yield seen


def _waiting(v: syn.Vault) -> int:
    """The writes still waiting for the check, read from history past the check's mark."""
    links = v._store.links
    return len(links.unchecked(links.checked_at(), None, dupes.CHECKED_KINDS, dupes.CHECKED_ACTIONS, 10_000))


def _pair_of(links: list[Any], rid: str) -> list[tuple[str | None, set[str]]]:
    return [(lk.hidden, {lk.a, lk.b}) for lk in links if rid in (lk.a, lk.b) and lk.relation == "duplicate"]


def test_an_agents_bulk_transaction_is_checked_at_its_commit_and_leaves_the_person_nothing(
        vault: syn.Vault, agent_vault: syn.Vault, small: None, checked: list[int]) -> None:
    first = vault.decide(TEXT)
    checked.clear()
    with agent_vault.transaction():
        for note in _notes(6):
            agent_vault.decide(note)
        copy = agent_vault.decide(TEXT)
    assert sum(checked) == 7 and max(checked) <= 3  # the agent's commit ran them, a batch at a time
    assert _waiting(vault) == 0
    checked.clear()
    pairs = vault.memories.conflicts()
    assert checked == [] and pairs.unchecked == 0 and pairs.note is None  # the person's listing checks nothing
    assert _pair_of(pairs, copy.id) == [(copy.id, {first.id, copy.id})]


def test_a_persons_listing_checks_at_most_the_bound_and_says_what_waits(vault: syn.Vault, small: None,
                                                                          checked: list[int]) -> None:
    with vault.transaction():  # a person's bulk load: left for later
        first = vault.decide(TEXT)
        for note in _notes(8):
            vault.decide(note)
        copy = vault.decide(TEXT)
    assert checked == []
    pairs = vault.memories.conflicts()
    assert sum(checked) == 3 and pairs.unchecked == 7
    assert pairs.note is not None and pairs.note.startswith("7 writes waiting for the duplicate check")
    assert "synapse-nb memory conflicts --check-all" in pairs.note
    checked.clear()
    again = vault.memories.conflicts()
    assert sum(checked) == 3 and again.unchecked == 4
    checked.clear()
    every = vault.memories.conflicts(check_all=True)
    assert sum(checked) == 4 and every.unchecked == 0 and every.note is None and _waiting(vault) == 0
    # the copy, checked batches after the record it repeats, is the side hidden, as when both are checked together
    # (a batch's record paired with a later write still waiting, and the older one was hidden)
    assert _pair_of(every, copy.id) == [(copy.id, {first.id, copy.id})]
    checked.clear()
    assert vault.memories.conflicts().note is None and checked == []  # nothing waits: nothing read


def test_a_listing_starts_no_batch_once_its_seconds_have_passed(vault: syn.Vault, small: None, checked: list[int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dupes, "READ_CHECKS", 100, raising=False)
    monkeypatch.setattr(dupes, "_FIRST_BATCH", 2, raising=False)
    ticks = iter(range(0, 10_000, 5))  # every reading of the clock five seconds after the last
    monkeypatch.setattr(dupes, "_clock", lambda: float(next(ticks)), raising=False)
    with vault.transaction():
        for note in _notes(10):
            vault.decide(note)
    got = vault.memories.conflicts()
    assert checked == [2] and got.unchecked == 8


def test_an_agents_listing_checks_nothing_and_says_nothing(vault: syn.Vault, agent_vault: syn.Vault, small: None,
                                                           checked: list[int]) -> None:
    with vault.transaction():
        for note in _notes(5):
            vault.decide(note)
    got = agent_vault.memories.conflicts()
    assert got == [] and checked == [] and _waiting(vault) == 5
    assert got.note is None


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "project"
    p.mkdir()
    return p


def test_memory_conflicts_says_what_waits_and_check_all_checks_it(project: Path, small: None) -> None:
    with syn.open_vault(project) as v, v.transaction():
        first = v.decide(TEXT)
        for note in _notes(8):
            v.decide(note)
        copy = v.decide(TEXT)
    runner = CliRunner()
    listed = runner.invoke(app, ["--vault", str(project), "memory", "conflicts"])
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines()[-1] == ("note: 7 writes waiting for the duplicate check (a listing checks "
                                              "some): synapse-nb memory conflicts --check-all")
    as_json = runner.invoke(app, ["--vault", str(project), "memory", "conflicts", "--json"])
    assert isinstance(json.loads(as_json.stdout), list)  # the JSON stays a list; the note is on stderr
    assert "note: 4 writes waiting" in as_json.stderr
    every = runner.invoke(app, ["--vault", str(project), "memory", "conflicts", "--check-all", "--json"])
    assert every.exit_code == 0 and "note:" not in every.output
    assert [x["hidden"] for x in json.loads(every.stdout) if x["relation"] == "duplicate"] == [copy.id]
    assert {x["a"] for x in json.loads(every.stdout) if x["relation"] == "duplicate"} == {copy.id}
    assert first.id in {x["b"] for x in json.loads(every.stdout)}
