"""A file's history imported outside a copy reads as the file's, not as the vault's own (review 92 F2). Both backends.

Review 91 dropped the ``import`` entry of every record whose history the file brought, ending in the record, so that
a copy's ``memory history`` reads as the original's. But it did so for any import: an agent's export, its times
backdated to 2024 and its surface changed to ``mcp``, imported by a person without ``--trust``, read "v1 2024-01-02
create [agent via mcp]" in ``memory history``, with no trace of the import (the file's ``at``, ``surface`` and
``actor`` are only checked against the future). Now only a copy (``--trust``, into minds that held no record) drops
it; any other import keeps its ``import`` entry after the file's entries, taking the record as the file's history left
it, and ``memory history`` shows the entries before it as the file's ("[from a file: ...]", ``"from_file": true``,
and a note). Each test here fails without the change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb._util import fmt_ts
from synapse_nb.cli import app
from synapse_nb.widgets.memory import history_html

BACKDATED = "2024-01-02T09:00:00.000000Z"


@pytest.fixture(params=["sqlite", "postgres"])
def person(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[syn.Vault]:
    """A person's vault on each backend, holding a memory (the team vault: a fresh project on the test server)."""
    folder = tmp_path / f"person_{request.param}"
    folder.mkdir()
    if request.param == "sqlite":
        v = syn.open_vault(folder, clock=clock)
    else:
        from synapse_nb.team import open_team_vault

        project = request.getfixturevalue("new_team_project")("hfile")
        v = open_team_vault(f"{request.getfixturevalue('pg_admin_url')}?project={project}", local=folder,
                            clock=clock)
    v.remember("project", "deploy", "Billing deploys to eu-west-1")
    clock.advance(minutes=1)
    yield v
    v.close()


def _crafted(folder: Path, clock: FakeClock) -> list[str]:
    """The review's file: an agent's export with history, every time backdated to 2024, its surface made ``mcp``."""
    folder.mkdir()
    with syn.open_vault(folder, clock=clock) as scratch:
        scratch.as_agent().remember("knowledge", "ci", "CI runs on every push")
        clock.advance(minutes=1)
        out = []
        for line in scratch.export_jsonl(history=True).split("\n"):
            doc = json.loads(line) if line else None
            if doc and doc.get("kind") in ("memory", "history"):
                doc |= {k: BACKDATED for k in ("created_at", "updated_at", "at") if k in doc}
                doc |= {"surface": "mcp"} if "surface" in doc else {}
            out.append(json.dumps(doc) if doc else line)
        return out


def test_a_files_history_imported_without_trust_reads_as_the_files(person: syn.Vault, tmp_path: Path,
                                                                    clock: FakeClock) -> None:
    counts = person.import_jsonl(_crafted(tmp_path / "scratch", clock))
    assert (counts["memory"], counts["history"], counts.claims) == (1, 1, {})
    ci = person.memories.get("ci", category="knowledge")
    h = person.memories.history("ci")
    assert [(e.version, e.action, e.actor, e.surface) for e in h] == [(1, "create", "agent", "mcp"),
                                                                     (2, "import", "user", "import")]
    assert h[0].at == BACKDATED and h[1].at > BACKDATED  # the import: when this vault took it in
    assert h.from_file() == {1}
    lines = str(h).splitlines()
    assert "[from a file: agent via mcp]" in lines[0]
    assert re.search(r" import +\[user( \S+)? via import\]", lines[1])  # a team vault names the person's login
    assert lines[-1] == ("note: v1 came from an imported file (v2 is the import): its time, actor and surface are "
                         "what the file says, not what this vault recorded")
    panel = history_html(h)  # the notebook's MemoryBrowser says it too
    assert panel.count("from a file: ") == 1 and "from a file: agent via mcp" in panel
    # the import took the record as that history left it (review 91: not as deleted)
    assert h.record(1) == h.record(2) == ci and h.known(1)
    assert person.memories.get(ci.id, as_of=fmt_ts(clock.now - timedelta(days=30))) == ci
    assert person.memories.revert(ci.id, to=1).content == "CI runs on every push"


def test_a_trusted_import_into_a_mind_with_records_keeps_the_import_entry(tmp_path: Path, clock: FakeClock) -> None:
    """``--trust`` into minds that held records is a merge, not a copy: the file's history is still the file's."""
    (tmp_path / "person").mkdir()
    with syn.open_vault(tmp_path / "person", clock=clock) as person:
        person.remember("project", "deploy", "Billing deploys to eu-west-1")
        person.import_jsonl(_crafted(tmp_path / "scratch", clock), trust=True)
        h = person.memories.history("ci")
        assert [e.action for e in h] == ["create", "import"] and h.from_file() == {1}
    (tmp_path / "empty").mkdir()  # a copy: as the original lists it (review 91)
    with syn.open_vault(tmp_path / "empty", clock=clock) as copy:
        copy.import_jsonl(_crafted(tmp_path / "scratch2", clock), trust=True)
        h = copy.memories.history("ci")
        assert [e.action for e in h] == ["create"] and h.from_file() == set() and h.note is None


def test_the_cli_shows_the_files_entries_as_the_files(tmp_path: Path, clock: FakeClock) -> None:
    (tmp_path / "person").mkdir()
    with syn.open_vault(tmp_path / "person", clock=clock) as person:
        person.remember("project", "deploy", "Billing deploys to eu-west-1")
    (tmp_path / "crafted.jsonl").write_text("\n".join(_crafted(tmp_path / "scratch", clock)), encoding="utf-8")
    run = CliRunner()
    base = ["--vault", str(tmp_path / "person"), "--actor", "user"]
    r = run.invoke(app, [*base, "memory", "import", str(tmp_path / "crafted.jsonl"), "--yes"])
    assert r.exit_code == 0, r.output
    r = run.invoke(app, [*base, "memory", "history", "ci"])
    assert r.exit_code == 0, r.output
    rows = [x for x in r.output.splitlines() if x.startswith("v")]
    assert rows[0].startswith("v1   2024-01-02 09:00:00  create    [from a file: agent via mcp]")
    assert " import    [user via import]" in rows[1]
    assert r.output.splitlines()[-1].startswith("note: v1 came from an imported file (v2 is the import)")
    r = run.invoke(app, [*base, "memory", "history", "ci", "--json"])
    assert r.exit_code == 0
    got = json.loads(r.stdout)
    assert [(e["action"], e.get("from_file")) for e in got] == [("create", True), ("import", None)]
    assert got[1]["before"]["content"] == "CI runs on every push" and "v1 came from an imported file" in r.stderr
