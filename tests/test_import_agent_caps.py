"""An import without ``--trust`` counts the agents' records a file brings against the agents' caps (review 69 F2).

An import is a person's write, which no cap refuses: an agent-made file of 300 pending agent lessons, imported by a
person without ``--trust``, put 300 in the person's review queue (the agents' cap: 50 pending lessons agents made in
a mind, 100 in all), with no word from the import; a file of agent records passed ``agent_records_per_mind``,
``agent_records_per_vault``, ``agent_megabytes_per_vault`` and ``agent_memories_per_mind`` the same way. Now each
record an agent's own write would have been refused for, counted in file order with what the vault holds, is a
trust claim: refused whole without ``--trust`` (the error names the caps and the numbers), accepted and listed with
it. Both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.errors import PermissionDeniedError
from synapse_nb.transfer import EXPORT_SCHEMA
from synapse_nb.transfer_caps import LESSON_CAP, held_bytes

HDR = json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA})
TS = "2026-01-01T00:00:00.000000Z"


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[syn.Vault]:
    """An empty vault to import into, on each backend (the team vault is a fresh project on the test server)."""
    folder = tmp_path / f"target_{request.param}"
    folder.mkdir()
    if request.param == "sqlite":
        v = syn.open_vault(folder, clock=clock)
    else:
        from synapse_nb.team import open_team_vault

        project = request.getfixturevalue("new_team_project")("caps")
        v = open_team_vault(f"{request.getfixturevalue('pg_admin_url')}?project={project}", local=folder,
                            clock=clock)
    yield v
    v.close()


def _lesson(i: int, **kw: Any) -> dict[str, Any]:
    d = {"kind": "lesson", "id": f"les_c{i:011d}", "mind": "default", "status": "pending",
         "summary": f"lesson {i}: run the linter on m{i}", "branch": None, "revert_sha": None, "revert_commit": None,
         "reverted_commits": [], "files_affected": [f"m{i}.py"], "diffstat": [], "analysis": None,
         "analysis_by": None, "lesson_text": None, "approved_at": None, "expires_at": None, "source": "agent",
         "created_at": TS, "updated_at": TS}
    return d | kw


def _note(i: int, **kw: Any) -> dict[str, Any]:
    d = {"kind": "note", "id": f"note_c{i:011d}", "mind": "default", "name": f"n{i}", "trigger": "when it runs",
         "body": f"body {i}", "source": "agent", "created_at": TS, "updated_at": TS}
    return d | kw


def _memory(i: int, **kw: Any) -> dict[str, Any]:
    d = {"kind": "memory", "id": f"mem_c{i:011d}", "mind": "default", "category": "procedure", "key": f"k{i}",
         "content": f"note {i}", "tags": [], "priority": 2, "source": "agent", "verified": 0, "confidence": 0.5,
         "expires_at": None, "created_at": TS, "updated_at": TS}
    return d | kw


def _lines(docs: list[dict[str, Any]]) -> list[str]:
    return [HDR, *(json.dumps(d) for d in docs)]


def _refused(v: syn.Vault, docs: list[dict[str, Any]]) -> str:
    before = v.export_jsonl()
    with pytest.raises(PermissionDeniedError) as ei:
        v.import_jsonl(_lines(docs))
    assert v.export_jsonl() == before  # all or nothing
    msg = str(ei.value)
    assert "nothing was imported" in msg and "--trust" in msg and "\n" not in msg
    return msg


def test_the_agents_pending_lesson_cap_counts_what_the_mind_holds(target: syn.Vault) -> None:
    assert target.import_jsonl(_lines([_lesson(i) for i in range(10)])).claims == {}  # 10 held
    at_cap = [_lesson(i) for i in range(10, 50)]
    past = [_lesson(i) for i in range(50, 55)]
    msg = _refused(target, at_cap + past)
    assert f"{LESSON_CAP} 5" in msg
    assert ("mind 'default' would hold 55 pending lessons agents made (the agents' cap: 50) and 55 pending lessons in "
            "all (cap: 100)") in msg
    assert target.lessons.waiting_by(most=1000)["agent"] == 10
    counts = target.import_jsonl(_lines(at_cap + past), trust=True)  # a person's own: accepted, and listed
    assert counts["lesson"] == 45 and counts.claims == {LESSON_CAP: 5}
    assert [c["record"] for c in counts.claimed] == [f"lesson {d['id']}" for d in past]
    assert target.lessons.waiting_by(most=1000)["agent"] == 55


def test_a_file_up_to_the_cap_imports_without_trust(target: syn.Vault) -> None:
    counts = target.import_jsonl(_lines([_lesson(i) for i in range(50)]))
    assert counts["lesson"] == 50 and counts.claims == {}
    # identical records are skipped and count nothing; one more is past the cap
    msg = _refused(target, [_lesson(i) for i in range(51)])
    assert f"{LESSON_CAP} 1" in msg and "51 pending lessons agents made" in msg


def test_the_cap_of_all_pending_lessons_counts_a_persons(target: syn.Vault) -> None:
    target.import_jsonl(_lines([_lesson(i, source="user") for i in range(97)]), trust=True)
    msg = _refused(target, [_lesson(i) for i in range(100, 105)])
    assert f"{LESSON_CAP} 2" in msg and "5 pending lessons agents made" in msg and "102 pending lessons in all" in msg


def test_a_lesson_taken_over_from_an_agent_counts_as_the_agents(target: syn.Vault) -> None:
    """A person's scan marks a lesson it took over from an agent's scan ``first_by``: it counts until decided."""
    taken = [_lesson(i, source="user", revert_sha=f"{i:040x}",
                     revert_commit={"sha": f"{i:040x}", "subject": "Revert m", "author": None, "date": None,
                                    "first_by": "agent"}) for i in range(50)]
    counts = target.import_jsonl(_lines(taken), trust=True)
    assert counts["lesson"] == 50, counts
    assert f"{LESSON_CAP} 1" in _refused(target, [_lesson(99)])


def test_an_untrusted_import_passes_no_agent_record_quota(target: syn.Vault) -> None:
    target.settings.set("agent_records_per_mind", 3)
    target.settings.set("agent_records_per_vault", 5)
    target.settings.set("agent_memories_per_mind", 2)
    msg = _refused(target, [_note(i) for i in range(4)])
    assert "note past agent_records_per_mind 1" in msg
    assert "mind 'default' would hold 4 records agents hold (agent_records_per_mind: 3)" in msg
    docs = [_note(i, mind="a") for i in range(3)] + [_note(i, mind="b") for i in range(3, 6)]
    msg = _refused(target, docs)
    assert "note past agent_records_per_vault 1" in msg and "agent_records_per_mind" not in msg
    assert "the vault would hold 6 records agents hold (agent_records_per_vault: 5)" in msg
    msg = _refused(target, [_memory(0, mind="m"), _memory(1, mind="m", verified=1), _memory(2, mind="m")])
    assert "memory past agent_memories_per_mind 1" in msg and "(agent_memories_per_mind: 2)" in msg
    # what the file brings that agents do not hold counts nothing: a person's records, a decided lesson
    counts = target.import_jsonl(_lines([_note(i, source="user") for i in range(10)]), trust=True)
    assert counts.claims == {"note source=user": 10}
    counts = target.import_jsonl(_lines([_note(20 + i, mind=f"x{i}") for i in range(5)]))
    assert counts["note"] == 5 and counts.claims == {}


def test_the_megabytes_quota_counts_the_files_text(target: syn.Vault) -> None:
    target.settings.set("agent_megabytes_per_vault", 1)
    big = [_note(i, mind=f"m{i}", body=f"{i:05d}" + "é" * 16_000) for i in range(32)]  # ~32,020 bytes each
    assert target.import_jsonl(_lines(big[:31])).claims == {}  # 992,620 bytes
    msg = _refused(target, big[31:])
    assert "note past agent_megabytes_per_vault 1" in msg and "1.0 MB of the agents' text" in msg


def test_the_counted_bytes_are_the_vaults(vault: syn.Vault) -> None:
    """The file's bytes are counted as a local vault counts them (its agent_held), so the bound is the vault's. (A
    team vault's server counts an imported row's bytes about twice, a 28-byte memory as 54: its own count, which an
    import does not read for the bound, is left as it is here.)"""
    target = vault
    docs = [_note(0, body="naïve ☃ " * 40), _memory(1, tags=["b", "ä"]),
            _lesson(2, revert_sha="a" * 40, revert_commit={"sha": "a" * 40, "subject": "Revert ü", "author": None,
                                                          "date": None}, diffstat=[["m.py", 1, 2]])]
    target.import_jsonl(_lines(docs), trust=True)  # the lesson's revert is in words no scan wrote: a claim
    assert target._ctx.store.meta.agent_held("default")[1] == sum(held_bytes(d["kind"], d) for d in docs)


def test_cli_import_names_the_caps(tmp_path: Path) -> None:
    src = tmp_path / "agent.jsonl"
    src.write_text("\n".join(_lines([_lesson(i) for i in range(300)])) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["--vault", str(tmp_path / ".synapse"), "memory", "import", str(src), "--yes"])
    assert res.exit_code != 0
    assert f"{LESSON_CAP} 250" in res.stderr and "300 pending lessons agents made (the agents' cap: 50)" in res.stderr
    res = CliRunner().invoke(app, ["--vault", str(tmp_path / ".synapse"), "memory", "import", str(src), "--yes",
                                   "--trust"])
    assert res.exit_code == 0, res.stderr
    assert f"{LESSON_CAP} 250" in res.stdout
