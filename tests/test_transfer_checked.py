"""An exported and imported copy lists the conflicts the original lists, after any number of checks (review 84 F2).

An export with its history (``memory export --history``) carries the duplicate check's links, but the import left
every history entry it brought waiting for the check: the copy's next ``memory conflicts --check-all`` re-judged them
all, with the word statistics of the whole vault and another batching, and listed pairs the original never had
(review 84: 676 pairs in the original, 810 in the copy). Now the export's header says how far the vault's check had
read its history (``checked_at``), and the import moves the copy's mark there: what the original had checked is
checked, what it had not is checked by the copy's next listing as by the original's. The mark never passes what the
file brought, and a vault whose own writes wait for the check keeps its mark.
"""

from __future__ import annotations

import json
from dataclasses import astuple
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb._util import fmt_ts
from synapse_nb.cli import app
from synapse_nb.errors import ValidationError

STORES = ("sqlite", "postgres", "lancedb", "redis")
LAYERS = ("cache", "queue", "index", "store")


def _write(v: syn.Vault, i: int) -> None:
    """Decisions and memories that repeat one another's words: the check pairs many of them."""
    v.decide(f"Decision {i}: use {STORES[i % 4]} for the {LAYERS[i % 4]} layer",
             rationale=f"Because benchmark {i} showed it was faster and simpler to operate", tags=["arch"])
    v.remember("project", f"k{i % 7}_{i}", f"the {LAYERS[i % 3]} layer uses {STORES[i % 2]} now")


class _Ticking(FakeClock):
    """A clock one second later at every read: writes a second apart, as a session's."""

    def __call__(self) -> datetime:
        return self.advance(seconds=1)


def _vault(folder: Path, clock: FakeClock) -> syn.Vault:
    folder.mkdir(parents=True)
    return syn.open_vault(folder, clock=clock)


def _checked(v: syn.Vault) -> list[tuple[object, ...]]:
    """Every pair (any status) once every write waiting for the check is checked (``--check-all``): each link's
    fields but its id (random: two vaults' checks of one pair name it differently)."""
    return sorted(astuple(x)[1:] for x in v.memories.conflicts(status=None, check_all=True))


def test_a_copy_lists_the_conflicts_the_original_lists(tmp_path: Path) -> None:
    clock = _Ticking()
    original = _vault(tmp_path / "a", clock)
    for i in range(10):
        _write(original, i)
    text = original.export_jsonl(history=True)
    assert json.loads(text.split("\n")[0])["checked_at"] == original._store.links.checked_at()
    copy = _vault(tmp_path / "b", clock)
    copy.import_jsonl(text.split("\n"), trust=True)
    assert len(_checked(original)) >= 10 and _checked(copy) == _checked(original)
    assert copy.export_jsonl(history=True).split("\n")[0] == text.split("\n")[0]  # and its export says the same


def test_what_the_original_had_not_checked_the_copy_checks_alike(tmp_path: Path) -> None:
    """A person's bulk load waits for the check (review 75): the original's mark stays before it, and so does the
    copy's; both check it, and the writes after it, at their next listing, and find the same pairs."""
    clock = _Ticking()
    original = _vault(tmp_path / "a", clock)
    for i in range(6):
        _write(original, i)
    with original.transaction():  # more than dupes.SYNC_MAX records: left to the next listing
        for i in range(6, 26):
            _write(original, i)
    for i in range(26, 30):
        _write(original, i)
    mark = original._store.links.checked_at()
    text = original.export_jsonl(history=True)
    assert mark and json.loads(text.split("\n")[0])["checked_at"] == mark
    copy = _vault(tmp_path / "b", clock)
    copy.import_jsonl(text.split("\n"), trust=True)
    assert copy._store.links.checked_at() == mark
    assert _checked(copy) == _checked(original)


def test_the_mark_moves_only_over_what_the_file_brought(tmp_path: Path) -> None:
    """A header's mark later than anything the file brought stops at the latest of it (later writes are checked),
    and a vault whose own bulk load still waits keeps its mark (its load is checked, the file's entries again)."""
    clock = _Ticking()
    original = _vault(tmp_path / "a", clock)
    for i in range(10):
        _write(original, i)
    lines = original.export_jsonl(history=True).split("\n")
    header = json.loads(lines[0])
    header["checked_at"] = fmt_ts(clock.now + timedelta(hours=1))  # an edited file: within the clock's day
    copy = _vault(tmp_path / "b", FakeClock(clock.now))
    copy.import_jsonl([json.dumps(header), *lines[1:]], trust=True)
    assert _checked(copy) == _checked(original)
    with copy.transaction():  # written before the header's mark, after everything the file brought
        copy.remember("knowledge", "deploy", "deploy with make deploy then tag the release")
        for i in range(40):
            copy.remember("knowledge", f"filler_{i}", f"filler text number {i} about topic {i}")
        twin = copy.remember("knowledge", "deploy_twin", "deploy with make deploy then tag the release")
    assert any(twin.id in x[1:4:2] for x in _checked(copy))

    late = FakeClock(clock.now - timedelta(days=1))
    waiting = _vault(tmp_path / "c", late)
    with waiting.transaction():  # its own bulk load, stamped before everything the file brings
        first = waiting.remember("knowledge", "backup", "run the nightly backup at 2am with restic")
        for i in range(40):
            waiting.remember("knowledge", f"other_{i}", f"another note number {i} about subject {i}")
        second = waiting.remember("knowledge", "backup_twin", "run the nightly backup at 2am with restic")
    late.now = clock.now
    waiting.import_jsonl(lines, trust=True)
    assert {first.id, second.id} in [{x[1], x[3]} for x in _checked(waiting)]


def test_a_bad_mark_is_refused_with_what_is_accepted(tmp_path: Path) -> None:
    clock = _Ticking()
    original = _vault(tmp_path / "a", clock)
    _write(original, 0)
    lines = original.export_jsonl(history=True).split("\n")
    header = json.loads(lines[0]) | {"checked_at": "yesterday"}
    copy = _vault(tmp_path / "b", clock)
    with pytest.raises(ValidationError, match=r"import line 1: header: checked_at 'yesterday' is not an ISO 8601 "
                                              r"timestamp; nothing was imported"):
        copy.import_jsonl([json.dumps(header), *lines[1:]], trust=True)
    assert "checked_at" not in json.loads(original.export_jsonl().split("\n")[0])  # without history: no mark


def test_the_cli_copy_lists_the_same_pairs_after_check_all(tmp_path: Path) -> None:
    """The review's steps: export --history, import into a fresh folder, `memory conflicts --check-all` on both."""
    original = _vault(tmp_path / "a", _Ticking())
    for i in range(10):
        _write(original, i)
    original.close()
    runner = CliRunner()
    out = runner.invoke(app, ["--vault", str(tmp_path / "a"), "memory", "export", "--history",
                              str(tmp_path / "x.jsonl")])
    assert out.exit_code == 0, out.output
    (tmp_path / "b").mkdir()
    out = runner.invoke(app, ["--vault", str(tmp_path / "b"), "memory", "import", str(tmp_path / "x.jsonl"),
                              "--trust", "--yes"])
    assert out.exit_code == 0, out.output

    def pairs(folder: str) -> list[dict[str, object]]:  # by their fields: a new link's id is random
        got = runner.invoke(app, ["--vault", str(tmp_path / folder), "memory", "conflicts", "--status", "all",
                                  "--check-all", "--json"])
        assert got.exit_code == 0, got.output
        return sorted(({k: v for k, v in x.items() if k != "id"} for x in json.loads(got.stdout)), key=json.dumps)

    assert len(pairs("a")) >= 10 and pairs("b") == pairs("a")


_PERSON = [("procedure", "billing_region",
            "Billing deploys to eu-west-1, run the deploy from the eu-west-1 bastion"),
           ("procedure", "billing_deploy",
            "Deploy the billing api with a blue-green switch after the smoke tests pass")]
_AGENT = [("procedure", "billing_region_agent",
           "Billing deploys to us-east-1, run the deploy from the us-east-1 bastion"),
          ("procedure", "billing_deploy_copy", _PERSON[1][2])]


def _agent_export(folder: Path, clock: FakeClock, *, history: bool) -> list[str]:
    """An agent's scratch vault (its two records checked against each other only), exported."""
    scratch = _vault(folder, clock)
    agent = scratch.as_agent()
    for category, key, text in _AGENT:
        agent.remember(category, key, text)
    scratch.memories.conflicts(check_all=True)
    return scratch.export_jsonl(history=history).split("\n")


def _person(folder: Path, clock: FakeClock) -> syn.Vault:
    v = _vault(folder, clock)
    for category, key, text in _PERSON:
        v.remember(category, key, text)
    v.memories.conflicts(check_all=True)
    return v


def _by_key(v: syn.Vault, pairs: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Pairs as (key of a, key of b, relation, hidden key): comparable across vaults."""
    keys = {m.id: m.key for m in v.memories.list(limit=100)}
    return sorted((keys[str(x[1])], keys[str(x[3])], x[5], keys.get(str(x[7]))) for x in pairs)


@pytest.mark.parametrize("history", [True, False])
@pytest.mark.parametrize("agent_first", [False, True])
def test_an_import_into_a_mind_with_records_is_checked_against_them(tmp_path: Path, history: bool,
                                                                     agent_first: bool) -> None:
    """Review 87 F1: an agent's export (no --trust needed) into a person's vault. Its header's checked_at only says
    its own vault compared its two records with each other; the import moved the person's mark there, and the
    word-for-word copy of the person's memory came in unpaired and stood above it in recall. Without history, or
    with its entries stamped before the person's mark, its records were never checked either. Now they are paired
    as the agent's own writes into that vault would be, the copy hidden."""
    clock = _Ticking()
    if agent_first:
        lines = _agent_export(tmp_path / "scratch", clock, history=history)
        person = _person(tmp_path / "person", clock)
    else:
        person = _person(tmp_path / "person", clock)
        lines = _agent_export(tmp_path / "scratch", clock, history=history)
    person.import_jsonl(lines)
    direct = _person(tmp_path / "direct", clock)
    for category, key, text in _AGENT:
        direct.as_agent().remember(category, key, text)
    want = _by_key(direct, _checked(direct))
    assert ("billing_deploy_copy", "billing_deploy", "duplicate", "billing_deploy_copy") in want
    assert _by_key(person, _checked(person)) == want
    recalled = person.as_agent().recall("how do I deploy the billing api").text
    assert _PERSON[1][2] in recalled and "billing_deploy_copy" not in recalled


def test_a_copy_into_an_empty_mind_keeps_the_files_mark_beside_another_minds_records(tmp_path: Path) -> None:
    """The restore of review 84 needs only the minds the file writes into to be empty: another mind's records are
    never paired with them."""
    clock = _Ticking()
    copy = _vault(tmp_path / "b", clock)  # its other mind's record: before the original's
    copy.with_mind("elsewhere").remember("project", "other", "the cache layer uses redis now")
    copy.memories.conflicts(check_all=True)
    original = _vault(tmp_path / "a", clock)
    for i in range(10):
        _write(original, i)
    text = original.export_jsonl(history=True)
    copy.import_jsonl(text.split("\n"), trust=True)
    assert copy._store.links.checked_at() == original._store.links.checked_at()
    assert _checked(copy) == _checked(original)
