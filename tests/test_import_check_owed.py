"""An import's duplicate check is owed until it ends: a process killed between the import's commit and its check's
last batch loses none of it (a twenty-second pass; the weakness review 92's fix left).

An import into minds that held records compares the records it brought with the minds' own after its commit, in
batches, each in a transaction of its own (test_import_check_after_commit.py). Killed between two batches, the rest
of the check was lost and nothing said it was owed: the imported records that contradict the person's never got
their pair, and neither a person's next open nor ``memory conflicts --check-all`` made it. Now the import's own
transaction records what its check is to compare (``synapse_nb.dupes_owed``), each batch moves that past what it
compared, and a person's next writable open, listing of conflicts or import finishes it.

The kill point (tests only): the subprocess wraps the duplicate check's ``find_links`` and kills itself with SIGKILL
on its second call, after the first batch's transaction committed; batches are made two records long there. Each
test fails without the change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb import dupes, dupes_owed

SUBJECTS = ["the billing service", "the orders queue", "the search cluster", "the audit log", "the mail relay",
            "the payments gateway"]

#: the import, in a process killed after its check's first batch (tests only: see the module docstring)
_IMPORT_THEN_DIE = r"""
import os, signal, sys
import synapse_nb as syn
from synapse_nb import dupes, transfer_links
real, calls = dupes.find_links, []
def dying(*a, **kw):
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*a, **kw)
for mod in (dupes, transfer_links):  # wherever the check reads them
    if hasattr(mod, "BATCH"):
        mod.BATCH = 2
    if getattr(mod, "find_links", None) is real:
        mod.find_links = dying
v = syn.open_vault(sys.argv[1])
v.import_jsonl(open(sys.argv[2], encoding="utf-8").read().split("\n"))
print("the check ended")
"""


def _vaults(tmp_path: Path, n: int = 6) -> tuple[Path, Path]:
    """A person's vault with a fact on each subject, and an agent's export contradicting each (other numbers)."""
    person, scratch = tmp_path / "person", tmp_path / "scratch"
    person.mkdir()
    scratch.mkdir()
    with syn.open_vault(person) as v:
        for i, s in enumerate(SUBJECTS[:n]):
            v.remember("knowledge", f"fact_{i}", f"{s} runs {i + 3} replicas in the production region eu-west")
        v.memories.conflicts(check_all=True)
    with syn.open_vault(scratch) as s:
        for i, subj in enumerate(SUBJECTS[:n]):
            s.as_agent().remember("knowledge", f"copy_{i}", f"{subj} runs {i + 30} replicas in the production "
                                                            "region eu-west")
        (tmp_path / "agent.jsonl").write_text(s.export_jsonl(), encoding="utf-8")
    return person, tmp_path / "agent.jsonl"


def _import_and_die(person: Path, file: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _IMPORT_THEN_DIE, str(person), str(file)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr[-2000:]


def _unpaired(v: syn.Vault) -> list[str]:
    """The imported copies not paired with the person's fact on their subject (each contradicts it); the file's own
    links pair some copies with each other."""
    keys = {m.id: m.key for m in v.memories.list()}
    paired = {frozenset((keys.get(x.a, ""), keys.get(x.b, ""))) for x in v._store.links.of_mind(v.mind)}
    return sorted(k for k in keys.values() if k.startswith("copy_")
                  and frozenset((k, k.replace("copy_", "fact_"))) not in paired)


def _left(path: Path) -> int:
    with syn.open_vault(path, readonly=True) as ro:  # a read-only open runs nothing
        return dupes_owed.owed_records(ro._store)


def test_a_check_killed_between_batches_is_finished_by_the_next_writable_open(tmp_path: Path) -> None:
    person, file = _vaults(tmp_path)
    _import_and_die(person, file)
    assert _left(person) == 4  # the first batch's two were compared; four are owed, and the vault says so
    with syn.open_vault(person, readonly=True) as ro:
        assert len(_unpaired(ro)) == 4
    with syn.open_vault(person) as v:  # a person's writable open finishes it
        assert _unpaired(v) == []
        assert dupes_owed.owed(v._store) == []


def test_a_listing_of_conflicts_counts_and_finishes_what_is_owed(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    person, file = _vaults(tmp_path)
    _import_and_die(person, file)
    ticks = iter(range(0, 10_000, 10))
    monkeypatch.setattr(dupes, "_clock", lambda: float(next(ticks)))  # every batch "takes" 10 s: one a call
    monkeypatch.setattr(dupes, "_FIRST_BATCH", 1)
    with syn.open_vault(person) as v:  # the open runs one small batch within its budget; the rest stays owed
        assert dupes_owed.owed_records(v._store) == 3 and len(_unpaired(v)) == 3
        listed = v.memories.conflicts()  # a person's listing: one more batch, and what still waits is counted
        assert listed.unchecked == dupes_owed.waiting(v._store) == 2 and len(_unpaired(v)) == 2
        v.memories.conflicts(check_all=True)
        assert _unpaired(v) == [] and dupes_owed.waiting(v._store) == 0


def test_the_next_import_finishes_what_an_earlier_one_left_owed(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    person, file = _vaults(tmp_path)
    _import_and_die(person, file)
    # (not at the open: the import's turn)
    monkeypatch.setattr("synapse_nb.vault.opening.owed_checks", lambda store: None, raising=False)
    with syn.open_vault(person) as v:
        assert dupes_owed.owed_records(v._store) == 4
        other = tmp_path / "other"
        other.mkdir()
        with syn.open_vault(other) as o:
            o.as_agent().remember("knowledge", "weather", "the weather service caches forecasts for an hour")
            counts = v.import_jsonl(o.export_jsonl().split("\n"))
        assert counts.checked is not None and counts.checked.records == 1  # its own, counted apart
        assert _unpaired(v) == [] and dupes_owed.owed(v._store) == []


def test_what_is_owed_is_written_in_the_imports_own_transaction(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused (a claim without --trust), the import leaves nothing owed; committed, its row is there before the
    check's first batch runs, and gone once the check ended."""
    person, file = _vaults(tmp_path)
    lines = file.read_text(encoding="utf-8").split("\n")
    with syn.open_vault(person) as v:
        forged = [x.replace('"source": "agent"', '"source": "user"') for x in lines]
        with pytest.raises(syn.PermissionDeniedError):
            v.import_jsonl(forged)
        assert dupes_owed.owed(v._store) == []
        seen: list[list[dupes_owed.Owed]] = []
        real = dupes.find_links

        def probed(*a: Any, **kw: Any) -> Any:
            seen.append(dupes_owed.owed(v._store))
            return real(*a, **kw)

        monkeypatch.setattr(dupes, "find_links", probed)
        monkeypatch.setattr(dupes, "BATCH", 4)
        counts = v.import_jsonl(lines)
        assert counts.checked is not None and counts.checked.checked == 6
        assert [[(e.checked, len(e.records)) for e in s] for s in seen] == [[(0, 6)], [(4, 6)]]  # each batch moved it
        assert dupes_owed.owed(v._store) == [] and _unpaired(v) == []
