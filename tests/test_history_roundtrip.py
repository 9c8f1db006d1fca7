"""``memory export --history`` then ``memory import --trust`` into a fresh vault keeps every memory's history as the
original lists it (review 91 F4). Both backends as the copy.

The import wrote an ``import`` entry with no record before it for every record it brought, after the history the file
brought: the copy's history said the last version (a person's revert that restored the memory) "(deleted)", then
``import``; ``record(5)`` was None, ``memory revert --to 5`` was refused ("version 5 ... deleted it") and ``as_of``
reads between version 5 and the import found no memory. A record whose history the file brings, ending in the
record as the file brings it, now gets no ``import`` entry; any other imported record still gets one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.history import Versions
from synapse_nb.transfer import EXPORT_SCHEMA


@pytest.fixture(params=["sqlite", "postgres"])
def copy(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[syn.Vault]:
    """An empty vault to import into, on each backend (the team vault: a fresh project on the test server)."""
    folder = tmp_path / f"copy_{request.param}"
    folder.mkdir()
    if request.param == "sqlite":
        v = syn.open_vault(folder, clock=clock)
    else:
        from synapse_nb.team import open_team_vault

        project = request.getfixturevalue("new_team_project")("hrt")
        v = open_team_vault(f"{request.getfixturevalue('pg_admin_url')}?project={project}", local=folder,
                            clock=clock)
    yield v
    v.close()


def _open(folder: Path, clock: FakeClock) -> syn.Vault:
    folder.mkdir(exist_ok=True)
    return syn.open_vault(folder, clock=clock)


def _a_life(v: syn.Vault, clock: FakeClock) -> dict[str, str]:
    """A memory's life by a person and an agent: updates, an agent's revision accepted (and one rejected), a delete
    and a person's revert; an agent's own memory updated and deleted; one untouched memory."""
    a = v.as_agent()
    m = v.remember("project", "deploy", "deploy with make ship v1", tags=["ops"], priority="high")
    clock.advance(seconds=1)
    a.memories.update(m.id, content="deploy with make ship v2 (agent)")
    v.memories.accept(v.memories.revisions()[0].id)  # v2
    clock.advance(seconds=1)
    a.memories.update(m.id, content="deploy with make ship (agent, rejected)")
    v.memories.reject(v.memories.revisions()[0].id)
    clock.advance(seconds=1)
    v.memories.update(m.id, content="deploy with make ship v3 (person)", tags=["ops", "ci"], priority="low")  # v3
    clock.advance(seconds=1)
    v.memories.delete(m.id)  # v4
    clock.advance(seconds=1)
    v.memories.revert(m.id, to=2)  # v5: back, as version 2 left it
    clock.advance(seconds=1)
    am = a.remember("project", "agent_note", "agent note one")
    clock.advance(seconds=1)
    a.memories.update(am.id, content="agent note two")
    clock.advance(seconds=1)
    a.memories.delete(am.id)
    clock.advance(seconds=1)
    plain = v.remember("knowledge", "ci_runtime", "CI takes 9 minutes")
    clock.advance(seconds=1)
    return {"life": m.id, "agent": am.id, "plain": plain.id}


def _listing(h: Versions) -> list[tuple[str, object, bool]]:
    """What ``memory history`` shows: each entry's line, the record its version left, whether that is known."""
    return [(e.line(), h.record(e.version), h.known(e.version)) for e in h]


def test_history_reads_the_same_after_export_history_and_import(tmp_path: Path, clock: FakeClock,
                                                                copy: syn.Vault) -> None:
    src = _open(tmp_path / "src", clock)
    ids = _a_life(src, clock)
    dump = src.export_jsonl(history=True)
    assert json.loads(dump.splitlines()[0])["schema"] == EXPORT_SCHEMA
    between = clock()  # after the last change, before the import
    clock.advance(minutes=10)
    copy.import_jsonl(dump.splitlines(), trust=True)
    for rid in ids.values():
        assert _listing(copy.memories.history(rid)) == _listing(src.memories.history(rid)), rid
        assert str(copy.memories.history(rid)) == str(src.memories.history(rid))
    h = copy.memories.history(ids["life"])
    assert [e.action for e in h] == ["create", "accept", "update", "delete", "revert"]
    assert h.record(5) == src.memories.get(ids["life"]) == copy.memories.get(ids["life"])
    assert h.record(5).content == "deploy with make ship v2 (agent)"
    # as_of between version 5 and the import: the memory as version 5 left it
    v5_at = h[-1].at
    assert copy.memories.get(ids["life"], as_of=v5_at).content == "deploy with make ship v2 (agent)"
    assert copy.memories.get("deploy", as_of=between).id == ids["life"]
    assert copy.memories.get(ids["plain"], as_of=between).content == "CI takes 9 minutes"
    # a revert to version 5 in the copy is a revert, not refused as a version that deleted it
    clock.advance(seconds=1)
    copy.memories.revert(ids["life"], to=1)
    clock.advance(seconds=1)
    back = copy.memories.revert(ids["life"], to=5)
    assert back.content == "deploy with make ship v2 (agent)" and back.tags == ("ops",)
    src.close()


def test_the_cli_listing_is_byte_identical_after_the_round_trip(tmp_path: Path, clock: FakeClock) -> None:
    src = _open(tmp_path / "src", clock)
    ids = _a_life(src, clock)
    src.close()
    _open(tmp_path / "dst", clock).close()
    run = CliRunner()

    def sn(folder: str, *args: str) -> str:
        r = run.invoke(app, ["--vault", str(tmp_path / folder), "--actor", "user", *args])
        assert r.exit_code == 0, r.output
        return r.stdout

    sn("src", "memory", "export", str(tmp_path / "export.jsonl"), "--history")
    sn("dst", "memory", "import", str(tmp_path / "export.jsonl"), "--trust", "--yes")
    for rid in ids.values():
        assert sn("dst", "memory", "history", rid) == sn("src", "memory", "history", rid)
        assert sn("dst", "memory", "history", rid, "--json") == sn("src", "memory", "history", rid, "--json")
    assert "(deleted)" not in sn("dst", "memory", "history", ids["life"]).splitlines()[-1]


def test_a_record_whose_history_the_file_does_not_end_in_it_gets_its_import_entry(tmp_path: Path,
                                                                                  clock: FakeClock,
                                                                                  copy: syn.Vault) -> None:
    """Without its history, or with history that leaves another record than the file brings, the import says so."""
    src = _open(tmp_path / "src", clock)
    ids = _a_life(src, clock)
    plain_only = src.export_jsonl()  # no history lines
    lines = src.export_jsonl(history=True).splitlines()
    src.close()
    clock.advance(seconds=1)
    other = _open(tmp_path / "other", clock)
    other.import_jsonl(plain_only.splitlines(), trust=True)
    assert [(e.version, e.action, e.surface) for e in other.memories.history(ids["plain"])] == [(1, "import", "import")]
    other.close()
    # the record changed after the history the file holds (its last entry left another digest)
    docs = [json.loads(x) for x in lines]
    for d in docs:
        if d.get("kind") == "memory" and d["id"] == ids["life"]:
            d["content"] = "deploy with make ship v9 (edited in the file)"
    copy.import_jsonl([json.dumps(d) for d in docs], trust=True)
    h = copy.memories.history(ids["life"])
    assert [e.action for e in h] == ["create", "accept", "update", "delete", "revert", "import"]
    assert h.record(6).content == "deploy with make ship v9 (edited in the file)"
    assert [e.action for e in copy.memories.history(ids["plain"])] == ["create"]
