"""An import into a team vault whose process is killed between its duplicate check's batches leaves the rest of the
check owed on the server, and a person's next open finishes it (a twenty-second pass; on PostgreSQL what
tests/test_import_check_owed.py shows of a local vault: the owed check is a ``meta`` row, written in the import's
transaction, as a person's login may write it).

The kill point (tests only): the subprocess wraps the duplicate check's ``find_links`` and kills itself with SIGKILL
on its second call, after the first batch's transaction committed; batches are two records long there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import synapse_nb as syn
from synapse_nb import dupes_owed

_IMPORT_THEN_DIE = r"""
import os, signal, sys
from pathlib import Path
from synapse_nb import dupes, transfer_links
from synapse_nb.team import open_team_vault
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
v = open_team_vault(sys.argv[1], local=Path(sys.argv[3]))
v.import_jsonl(open(sys.argv[2], encoding="utf-8").read().split("\n"))
print("the check ended")
"""
SUBJECTS = ["the billing service", "the orders queue", "the search cluster", "the audit log", "the mail relay",
            "the payments gateway"]


def test_a_killed_import_leaves_its_check_owed_on_the_server(logins: dict[str, str], tmp_path: Path,
                                                             machine: Callable[..., syn.Vault]) -> None:
    url = logins["human"]
    person = machine("a", url)
    for i, s in enumerate(SUBJECTS):
        person.remember("knowledge", f"fact_{i}", f"{s} runs {i + 3} replicas in the production region eu-west")
    person.memories.conflicts(check_all=True)
    (tmp_path / "scratch").mkdir()
    with syn.open_vault(tmp_path / "scratch") as s:
        for i, subj in enumerate(SUBJECTS):
            s.as_agent().remember("knowledge", f"copy_{i}", f"{subj} runs {i + 30} replicas in the production "
                                                            "region eu-west")
        (tmp_path / "agent.jsonl").write_text(s.export_jsonl(), encoding="utf-8")
    (tmp_path / "machine_b").mkdir()
    proc = subprocess.run([sys.executable, "-c", _IMPORT_THEN_DIE, url, str(tmp_path / "agent.jsonl"),
                           str(tmp_path / "machine_b")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr[-2000:]
    assert dupes_owed.owed_records(person._store) == 4  # the server holds what the check still owes

    def unpaired(v: syn.Vault) -> list[str]:
        keys = {m.id: m.key for m in v.memories.list()}
        pairs = {frozenset((keys.get(x.a, ""), keys.get(x.b, ""))) for x in v._store.links.of_mind(v.mind)}
        return sorted(k for k in keys.values() if k.startswith("copy_")
                      and frozenset((k, k.replace("copy_", "fact_"))) not in pairs)

    assert len(unpaired(person)) == 4
    again = machine("c", url)  # a person's next open (another machine's as well) finishes it
    assert unpaired(again) == [] and dupes_owed.owed(again._store) == []
