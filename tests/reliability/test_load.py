"""Load: several processes mixing writes of every kind, recalls, searches, index syncs and CLI calls on one vault.

Bounded form (default run): 4 processes x 100 operations, two CLI round trips. The benchmark form
(``python benchmarks/reliability.py``) runs 8 x 2,000.
"""

from __future__ import annotations

from pathlib import Path

import harness as h

import synapse_nb as syn

WORKERS, OPS = 4, 100


def test_concurrent_processes_lose_nothing_and_no_error_reaches_a_caller(vault_dir: Path, tmp_path: Path) -> None:
    v = syn.open_vault(vault_dir)
    v.index.rebuild()  # the index exists before the load, as in a vault in use
    v.close()
    journals = [tmp_path / f"journal{i}" for i in range(WORKERS)]
    procs = [h.spawn("light", vault_dir, j, seed=i, n_ops=OPS, cli_ops=1 if i == 0 else 0)
             for i, j in enumerate(journals)]
    codes = [p.wait(timeout=300) for p in procs]
    assert codes == [0] * WORKERS, [Path(f"{j}.log").read_text()[-2000:] for j in journals]
    entries = [e for j in journals for e in h.read_journal(j)]
    assert sum(e["op"] == "done" for e in entries) == WORKERS
    assert sum(e["op"] == "ack" and bool(e.get("cli")) for e in entries) == 1  # the CLI took part
    # every promise except index agreement after a plain sync (core bug 11: concurrent syncs race)
    # and apart from core bug 12 (a record deleted by another process during a recall), counted in rep.known
    rep = h.verify_vault(vault_dir, journals, check_index=False)
    assert rep.errors == []
    assert rep.problems == []
    assert rep.integrity == "ok"
    assert rep.acked > WORKERS * OPS // 2 and rep.records >= rep.acked - sum(e["op"] == "ack_delete" for e in entries)
    v = syn.open_vault(vault_dir)
    try:
        v.index.check(repair=True)
        assert v.index.check().ok
        # a fresh handle on the loaded vault gives the same answers (no cache survives a handle)
        w = syn.open_vault(vault_dir)
        try:
            for q in ("fact number 7 load", "agent proposal", "use option 2"):
                # `version` too: the vault's own count of its commits, whichever handle reads it (review 84)
                assert v.recall(q).to_dict() == w.recall(q).to_dict()
        finally:
            w.close()
    finally:
        v.close()
