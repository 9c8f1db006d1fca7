"""A deleted memory's history by its id, and what ``memory history KEY`` says of the memories that held the key before
(review 91 F3). Both backends.

``memory history ID`` and ``memory revert ID --to N`` (and ``vault.memories.history`` / ``revert``) refused a deleted
memory's id ("no memory mem_... in mind 'default'"), though docs/cli.md says history covers "a deleted one too" and a
revert brings "a deleted memory ... back under its id". An agent that deleted its memory and wrote the key again left
the person's ``memory history KEY`` a clean one-version history; the old versions were reachable only from Python.
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
from synapse_nb.kinds.memory_history import SHOWN_IDS


@pytest.fixture(params=["sqlite", "postgres"])
def v(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[syn.Vault]:
    """A person's vault on each backend (the team vault: a fresh project on the test server)."""
    folder = tmp_path / f"vault_{request.param}"
    folder.mkdir()
    if request.param == "sqlite":
        vault = syn.open_vault(folder, clock=clock)
    else:
        from synapse_nb.team import open_team_vault

        project = request.getfixturevalue("new_team_project")("hist")
        vault = open_team_vault(f"{request.getfixturevalue('pg_admin_url')}?project={project}", local=folder,
                                clock=clock)
    yield vault
    vault.close()


def test_a_deleted_memorys_history_and_revert_by_its_id(v: syn.Vault, clock: FakeClock) -> None:
    m = v.remember("project", "deploy", "deploy with make ship")
    clock.advance(seconds=1)
    v.memories.update(m.id, content="deploy with make ship v2")
    clock.advance(seconds=1)
    v.memories.delete(m.id)
    h = v.memories.history(m.id)
    assert [(e.version, e.action) for e in h] == [(1, "create"), (2, "update"), (3, "delete")]
    assert h.record(1).content == "deploy with make ship" and h.record(3) is None and h.note is None
    assert v.memories.history(f"  {m.id} ") == h  # named as a person types it
    other = v.with_mind("other")  # a deleted memory's id counts only in its own mind
    with pytest.raises(syn.NotFoundError, match="no memory"):
        other.memories.history(m.id)
    with pytest.raises(syn.NotFoundError):
        other.memories.revert(m.id, to=1)
    with pytest.raises(syn.NotFoundError):
        v.memories.history("mem_0123456789ab")  # no such memory, no history
    clock.advance(seconds=1)
    back = v.memories.revert(m.id, to=1)
    assert back.id == m.id and back.content == "deploy with make ship"
    assert v.memories.get(m.id) == back
    assert [e.action for e in v.memories.history(m.id)] == ["create", "update", "delete", "revert"]


def test_history_by_key_names_the_memories_that_held_the_key_before(v: syn.Vault, clock: FakeClock) -> None:
    """The review's case: an agent deletes its memory and writes the key again; the person asks by key."""
    a = v.as_agent()
    old = a.remember("procedure", "deploy", "run ./deploy.sh --force on main (agent guess)")
    clock.advance(seconds=1)
    a.memories.update(old.id, content="run ./deploy.sh --force on main, skip the tests")
    clock.advance(seconds=1)
    a.memories.delete(old.id)
    clock.advance(seconds=1)
    new = a.remember("procedure", "deploy", "run make ship after the tests pass")
    for h in (v.memories.history("deploy"), v.memories.history("deploy", category="procedure")):
        assert [e.rid for e in h] == [new.id]
        assert h.note is not None and old.id in h.note and "(deleted)" in h.note
        assert f"synapse-nb memory history {old.id}" in h.note
        assert str(h).splitlines()[-1] == f"note: {h.note}"
    assert v.memories.history(new.id).note is None  # named by id: that memory, and nothing else
    with pytest.raises(syn.NotFoundError):  # no memory of that category ever held the key
        v.memories.history("deploy", category="project")
    old_h = v.memories.history(old.id)  # the old versions, from the id the note names
    assert [e.action for e in old_h] == ["create", "update", "delete"]
    assert old_h.record(2).content == "run ./deploy.sh --force on main, skip the tests"
    with pytest.raises(syn.ConflictError, match="another memory holds procedure/deploy now"):
        v.memories.revert(old.id, to=2)  # under its id, but the key is taken: said, not overwritten


def test_the_note_is_bounded_and_several_deleted_holders_are_named(v: syn.Vault, clock: FakeClock) -> None:
    gone = []
    for i in range(SHOWN_IDS + 2):
        m = v.remember("project", "deploy", f"deploy attempt {i}")
        gone.append(m.id)
        clock.advance(seconds=1)
        v.memories.delete(m.id)
        clock.advance(seconds=1)
    with pytest.raises(syn.AmbiguousIdError, match="7 deleted ones held it") as ei:
        v.memories.history("deploy")  # no memory holds it now: which one is meant is the person's to say
    assert "and 2 more; name one by its id" in str(ei.value)
    with pytest.raises(syn.AmbiguousIdError):
        v.memories.revert("deploy", to=1)
    live = v.remember("project", "deploy", "deploy with make ship")
    note = v.memories.history("deploy").note
    assert note is not None and note.startswith(f"{SHOWN_IDS + 2} other memories (deleted) held the key 'deploy'")
    shown = sorted((i for i in gone if i in note), key=note.index)
    assert shown == list(reversed(gone))[:SHOWN_IDS]  # the latest removed first, at most SHOWN_IDS
    assert "and 2 more" in note and f"memory history {gone[-1]}`" in note and live.id not in note
    clock.advance(seconds=1)
    v.memories.delete(live.id)
    clock.advance(seconds=1)
    v.memories.revert(gone[0], to=1)  # one of the old ones is back: the others still held the key before it
    note = v.memories.history("deploy").note
    assert note is not None and f"{SHOWN_IDS + 2} other memories (deleted)" in note and gone[0] not in note


def test_the_cli_shows_a_deleted_memorys_history_and_the_note(tmp_path: Path, clock: FakeClock) -> None:
    v = syn.open_vault(tmp_path, clock=clock)
    old = v.as_agent().remember("procedure", "deploy", "run ./deploy.sh --force on main")
    clock.advance(seconds=1)
    v.as_agent().memories.delete(old.id)
    clock.advance(seconds=1)
    v.as_agent().remember("procedure", "deploy", "run make ship after the tests pass")
    v.close()
    run = CliRunner()
    base = ["--vault", str(tmp_path), "--actor", "user"]
    r = run.invoke(app, [*base, "memory", "history", old.id])
    assert r.exit_code == 0, r.output
    assert "run ./deploy.sh --force on main" in r.output and " delete " in r.output
    r = run.invoke(app, [*base, "memory", "history", "deploy"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1].startswith("note: 1 other memory (deleted) held the key 'deploy'")
    assert f"synapse-nb memory history {old.id}" in r.output
    r = run.invoke(app, [*base, "memory", "history", "deploy", "--json"])
    assert r.exit_code == 0
    assert [e["rid"] for e in json.loads(r.stdout)] != [old.id]  # stdout stays the listing, a list
    assert "note: 1 other memory (deleted)" in r.stderr


def test_the_note_names_only_earlier_holders_of_the_key_in_the_memorys_category(v: syn.Vault,
                                                                                 clock: FakeClock) -> None:
    """Review 92 F3: an agent wrote and deleted ``knowledge/deploy`` after the person's ``project/deploy``; the
    person's ``memory history deploy`` said a deleted memory "held the key 'deploy' before this one" (the note took
    removals of any category, at any time). Now: the memory's own category, removed before it came to hold the key
    (its create, or the revert that brought it back)."""
    a = v.as_agent()
    early = a.remember("project", "deploy", "deploy by hand from the ops laptop")
    clock.advance(seconds=1)
    a.memories.delete(early.id)
    clock.advance(seconds=1)
    mine = v.remember("project", "deploy", "Billing deploys to eu-west-1 via the release pipeline")
    clock.advance(seconds=1)
    later = a.remember("knowledge", "deploy", "Deploy with --force on main, skip the tests")
    clock.advance(seconds=1)
    a.memories.delete(later.id)
    clock.advance(seconds=1)
    for h in (v.memories.history("deploy"), v.memories.history("deploy", category="project")):
        assert [e.rid for e in h] == [mine.id]
        assert h.note is not None and early.id in h.note and later.id not in h.note
        assert h.note.startswith("1 other memory (deleted) held the key 'deploy' before this one")
    assert v.memories.history("deploy", category="knowledge").note is None  # the agent's: nothing before it
    # the person's memory deleted, the key written and deleted in between, then reverted: that one held it before
    v.memories.delete(mine.id)
    clock.advance(seconds=1)
    between = a.remember("project", "deploy", "deploy on fridays")
    clock.advance(seconds=1)
    a.memories.delete(between.id)
    clock.advance(seconds=1)
    v.memories.revert(mine.id, to=1)
    note = v.memories.history("deploy").note
    assert note is not None and note.startswith("2 other memories (deleted)") and between.id in note
    assert early.id in note and later.id not in note
