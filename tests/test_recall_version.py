"""A recall's ``version`` belongs to the vault, not to the process that read it (review 84 F3).

``Recall.to_dict()["version"]`` (``recall --json``, the MCP server's recall, a notebook's ``to_dict()``) and ``recall
--explain``'s "(read at vault version X)" were SQLite's ``PRAGMA data_version`` and the connection's commit counter:
a fresh CLI said ``2.0`` where a long-lived MCP server or kernel said ``88.0`` for the same final vault, so the
answers differed byte for byte between processes. Now a local vault counts its own commits (``state_version`` in
``meta``), as a team vault's ``gate_stats.version`` does: the same number for every handle and process reading one
state, larger after every write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import synapse_nb as syn

ROOT = Path(__file__).resolve().parents[1]
QUERY = "how do we deploy the release?"


def _cli(folder: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", str(folder), *args], capture_output=True,
                         env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode("utf-8")


def test_every_handle_and_process_reads_the_same_version(tmp_path: Path) -> None:
    long_lived = syn.open_vault(tmp_path)  # a kernel or an MCP server: it made every write of the vault
    for i in range(12):
        long_lived.remember("procedure", f"deploy_{i}", f"deploy step {i}: run make deploy then tag the release")
    long_lived.decide("we deploy on tuesdays", rationale="fewer people are away")
    mine = long_lived.recall(QUERY)
    fresh = syn.open_vault(tmp_path)
    theirs = fresh.recall(QUERY)
    assert mine.version == theirs.version and mine.version.isdigit() and int(mine.version) > 0
    assert mine.to_dict() == theirs.to_dict()
    as_json = json.loads(_cli(tmp_path, "recall", QUERY, "--json"))  # a process of its own
    assert as_json["version"] == mine.version and as_json["text"] == mine.text
    assert _cli(tmp_path, "recall", QUERY, "--explain").rstrip().endswith(f"(read at vault version {mine.version})")
    assert long_lived.recall(QUERY).version == mine.version  # reading moves nothing


def test_a_write_moves_it_a_sessions_marks_do_not(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    v.remember("procedure", "deploy", "deploy: run make deploy then tag the release")
    before = v.recall(QUERY).version
    given = v.recall(QUERY, session="s1")  # marks what it gave as given to s1: no part of the vault's state
    assert given.items and given.version == before and v.recall(QUERY).version == before
    other = syn.open_vault(tmp_path)
    other.remember("project", "release_day", "we tag the release on tuesdays")  # another handle's write
    after = v.recall(QUERY).version
    assert int(after) > int(before) and other.recall(QUERY).version == after
    v.settings.set("recall_floor", 0.2)  # a setting is vault state too
    assert int(v.recall(QUERY).version) > int(after) and other.recall(QUERY).version == v.recall(QUERY).version
