"""An import into minds that held records compares the records it brings with those the minds held, after its commit
(review 92 F1).

Review 87 made such an import run the duplicate check of every record it brought against the whole mind, inside the
import's write transaction: by then the mind held the file's other records too, so pairs the file's own vault had
judged (its links travel with it) were judged again and linked anew (a 3,001-record export with 6,179 links into a
vault of 301 memories: 5,924 more contradictions between the file's own records), and the check held the write lock
for 58 s, past the lock timeout, so a write beside it failed ("could not lock"). Now the records brought are compared
only with the records the minds held before the import, never with each other (a file of an older schema, with no
links, still has its records compared with each other), once the import has committed, in batches whose pairs are
stored in short transactions of their own; the import's report says how many were compared and how many pairs were
found. Each test here fails without the change.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb import dupes, dupes_reads
from synapse_nb.cli import app
from synapse_nb.models import Record
from synapse_nb.store.records import RankHit

#: values of one subject: each record contradicts the others (differing numbers)
REPLICAS = [f"the cache layer of the billing service runs {n} redis replicas in production" for n in range(3, 15)]
#: the person's memory an agent's file repeats word for word
PROCEDURE = "Deploy the billing api with a blue-green switch after the smoke tests pass"


def _source(folder: Path, clock: FakeClock) -> list[str]:
    """An agent's scratch vault: twelve values of one subject, checked one by one as they are written (its links: the
    pairs its check made of them), and a copy of the person's procedure; exported (no history)."""
    folder.mkdir()
    with syn.open_vault(folder, clock=clock) as scratch:
        agent = scratch.as_agent()
        for i, text in enumerate(REPLICAS):
            agent.remember("knowledge", f"replicas_{i}", text)
            clock.advance(seconds=1)
        agent.remember("procedure", "billing_deploy_copy", PROCEDURE)
        clock.advance(seconds=1)
        assert len(scratch.memories.conflicts(status=None, check_all=True)) >= 5
        return scratch.export_jsonl().split("\n")


def _person(folder: Path, clock: FakeClock) -> syn.Vault:
    """A person's vault holding records: the procedure, and notes on other subjects."""
    folder.mkdir()
    v = syn.open_vault(folder, clock=clock)
    v.remember("procedure", "billing_deploy", PROCEDURE)
    v.remember("knowledge", "orders_db", "the orders service stores its data in postgres")
    v.remember("project", "release_day", "we release on tuesdays after the planning meeting")
    v.memories.conflicts(check_all=True)
    clock.advance(seconds=1)
    return v


def _pairs(v: syn.Vault) -> set[frozenset[str]]:
    return {frozenset((x.a, x.b)) for x in v.memories.conflicts(status=None, check_all=True)}


def _file_pairs(lines: Sequence[str]) -> set[frozenset[str]]:
    docs = [json.loads(x) for x in lines if x.strip()]
    return {frozenset((d["a"], d["b"])) for d in docs if d.get("kind") == "link"}


def _ids(lines: Sequence[str]) -> set[str]:
    docs = [json.loads(x) for x in lines if x.strip()]
    return {d["id"] for d in docs if d.get("kind") == "memory"}


def test_the_files_own_records_are_not_paired_again(tmp_path: Path, clock: FakeClock) -> None:
    lines = _source(tmp_path / "scratch", clock)
    person = _person(tmp_path / "person", clock)
    before = _pairs(person)
    counts = person.import_jsonl(lines)
    brought = _ids(lines)
    pairs = _pairs(person) - before
    # between two of the file's records: exactly the pairs its vault made (its links)
    assert {p for p in pairs if p <= brought} == _file_pairs(lines)
    # and each record brought is compared with the person's: the copy of the procedure is paired with it
    proc = person.memories.get("billing_deploy", category="procedure")
    copy = person.memories.get("billing_deploy_copy", category="procedure")
    assert frozenset((proc.id, copy.id)) in pairs
    # the report says what the check did
    assert counts.checked is not None
    assert (counts.checked.records, counts.checked.checked, counts.checked.pairs) == (len(brought), len(brought), 1)
    assert counts.to_dict()["checked"] == {"records": len(brought), "checked": len(brought), "pairs": 1}
    recalled = person.as_agent().recall("how do I deploy the billing api").text
    assert PROCEDURE in recalled and "billing_deploy_copy" not in recalled  # the agent's copy is hidden


def test_the_check_runs_after_the_commit_in_batches(tmp_path: Path, clock: FakeClock,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch is checked with the write lock free (another connection can begin a write at once), and its pairs
    are stored in a transaction of its own."""
    lines = _source(tmp_path / "scratch", clock)
    person = _person(tmp_path / "person", clock)
    db = tmp_path / "person" / ".synapse" / "synapse.db"
    free: list[bool] = []
    sizes: list[int] = []
    real = dupes.find_links

    def probed(records: Sequence[Record], store: Any, **kw: Any) -> Any:
        other = sqlite3.connect(db, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # fails at once while the import's transaction holds the lock
            other.execute("ROLLBACK")
            free.append(True)
        except sqlite3.OperationalError:
            free.append(False)
        finally:
            other.close()
        sizes.append(len(records))
        return real(records, store, **kw)

    monkeypatch.setattr(dupes, "find_links", probed)
    monkeypatch.setattr(dupes, "BATCH", 5)
    counts = person.import_jsonl(lines)
    assert sizes == [5, 5, 3] and free == [True, True, True]
    assert counts.checked is not None and counts.checked.checked == 13 and not counts.checked.stopped


def test_the_cli_says_what_the_check_did(tmp_path: Path, clock: FakeClock) -> None:
    lines = _source(tmp_path / "scratch", clock)
    _person(tmp_path / "person", clock).close()
    (tmp_path / "agent.jsonl").write_text("\n".join(lines), encoding="utf-8")
    run = CliRunner()
    r = run.invoke(app, ["--vault", str(tmp_path / "person"), "--actor", "user", "memory", "import",
                         str(tmp_path / "agent.jsonl"), "--yes"])
    assert r.exit_code == 0, r.output
    assert ("duplicate check: the 13 records brought in, against those the vault held: 1 pair found (synapse-nb "
            "memory conflicts lists them)") in r.output.splitlines()


def test_a_file_without_links_has_its_records_compared_with_each_other(tmp_path: Path, clock: FakeClock) -> None:
    """An export of schema 3 carries no link lines: nothing says its vault judged its records' pairs."""
    lines = _source(tmp_path / "scratch", clock)
    old = [json.dumps(json.loads(lines[0]) | {"schema": 3})]
    old += [x for x in lines[1:] if x.strip() and json.loads(x)["kind"] != "link"]
    person = _person(tmp_path / "person", clock)
    before = _pairs(person)
    counts = person.import_jsonl(old)
    brought = _ids(lines)
    made = _pairs(person) - before
    assert len({p for p in made if p <= brought}) >= 5
    assert counts.checked is not None and counts.checked.pairs == len(made)  # the report counts them


def test_an_export_with_history_into_a_mind_with_records_is_not_judged_again_later(tmp_path: Path,
                                                                                   clock: FakeClock) -> None:
    """With its history, the file's entries come after the person's mark: once its records are compared with the
    person's, the mark moves to the file's (``checked_at``), so the person's next listing does not check them
    against each other either."""
    person = _person(tmp_path / "person", clock)
    folder = tmp_path / "scratch"
    folder.mkdir()
    with syn.open_vault(folder, clock=clock) as scratch:
        for i, text in enumerate(REPLICAS):
            scratch.as_agent().remember("knowledge", f"replicas_{i}", text)
            clock.advance(seconds=1)
        scratch.memories.conflicts(check_all=True)
        lines = scratch.export_jsonl(history=True).split("\n")
    before = _pairs(person)
    person.import_jsonl(lines)
    assert person._store.links.checked_at() == json.loads(lines[0])["checked_at"]
    assert {p for p in _pairs(person) - before if p <= _ids(lines)} == _file_pairs(lines)


class _Recall:
    """A store whose BM25 ranks the file's records first."""

    def __init__(self, hits: Callable[[int], list[RankHit]]) -> None:
        self.hits, self.depths = hits, []

    def bm25(self, mind: str, words: Sequence[str], *, depth: int) -> list[RankHit]:
        self.depths.append(depth)
        return self.hits(depth)


def test_records_left_out_that_fill_the_depth_are_read_past() -> None:
    """Forty of the file's copies outrank the person's memory for its words: the read goes deeper, and the person's
    memory is the candidate (not crowded out of the depth the check reads)."""
    copies = [RankHit(f"mem_{i:012x}", 10.0) for i in range(40)]
    held = [RankHit("mem_ffffffffffff", 5.0), RankHit("dec_ffffffffffff", 4.0)]
    recall = _Recall(lambda depth: (copies + held)[:depth])
    store: Any = type("S", (), {"recall": recall})()
    rec: Any = type("R", (), {"id": copies[0].id, "mind": "default"})()
    got = dupes_reads.near(store, rec, ["deploy"], 17, ("memory", "decision"), {h.id for h in copies})
    assert [h.id for h in got] == [h.id for h in held] and recall.depths == [17, 57]
    recall.depths.clear()  # nothing left out: one read, as the check of a write
    assert [h.id for h in dupes_reads.near(store, rec, ["deploy"], 17, ("memory",), set())] == \
        [h.id for h in copies[1:17]] and recall.depths == [17]
