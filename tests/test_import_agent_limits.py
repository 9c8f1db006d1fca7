"""An import takes what the write path takes (review 38, findings 1 and 2).

1. A record no agent's write could have written is a trust claim. ``synapse-nb memory import FILE --yes`` without
   ``--trust`` took an agent's memory (``source: "agent"``, ``verified: 0``) at ``confidence: 1.0``, which the
   agent's own write refuses ("an agent's confidence is at most 0.7"). Each kind names the limits its write path puts
   on the agent actor alone (``past_agent_limits``): an agent's memory at most 0.7 sure, an agent's checkpoint from
   the agent or the automatic checkpoint (``origin`` agent or auto), an agent's episode in its own name or marked
   reported. A history entry's ``before`` is read as the vault reads it back (a memory without ``confidence`` is
   1.0 sure).
2. Every number of an import is one a vault stores: an episode's ``duration_s = 10**30`` failed the import with
   "unexpected error (OverflowError)", and JSON ``Infinity`` / ``NaN`` were stored. Now a 64-bit whole number, a
   finite float, and each field's own range where the write path has one (``duration_s`` >= 0, a diffstat's counts
   0 to 10**9); the error names the line and says nothing was imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.errors import PermissionDeniedError, ValidationError
from synapse_nb.transfer import EXPORT_SCHEMA

HDR = json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA})


@pytest.fixture()
def docs(vault: syn.Vault, agent_vault: syn.Vault) -> dict[str, dict[str, Any]]:
    """One export document per kind, as the agent's write path made them: none of them claims anything."""
    agent_vault.remember("knowledge", "guess", "maybe the cache", confidence=0.7)
    agent_vault.checkpoint("refactor the cache", files=["cache.py"], origin="auto")
    agent_vault.episodes.log("train", status="success", outcome="ok", duration_s=12.5, actor="agent")
    vault.lessons.create("Reverted the cache change", files=["cache.py"])
    out: dict[str, dict[str, Any]] = {}
    for line in vault.export_jsonl().split("\n")[1:]:
        if line:
            d = json.loads(line)
            out[d["kind"]] = d
    out["lesson"].update(source="agent")
    return out


@pytest.fixture()
def target(tmp_path: Path, clock: FakeClock) -> syn.Vault:
    (tmp_path / "target").mkdir()
    return syn.open_vault(tmp_path / "target", clock=clock)


def _lines(*ds: dict[str, Any]) -> list[str]:
    return [HDR, *(json.dumps(d, sort_keys=True) for d in ds)]


def test_what_the_agents_write_path_made_imports_without_trust(target: syn.Vault,
                                                              docs: dict[str, dict[str, Any]]) -> None:
    assert target.import_jsonl(_lines(*docs.values())).claims == {}


# ------------------------------------------------------------------------------------------------ finding 1
#: limit -> (what the agent's write path does with it, the document's change, the claim an import makes)
LIMITS: dict[str, tuple[Callable[[syn.Vault], Any], str, dict[str, Any], str]] = {
    "memory confidence above 0.7": (
        lambda a: a.remember("knowledge", "sure", "certainly the cache", confidence=1.0),
        "memory", {"confidence": 1.0}, "memory confidence>0.7"),
    "memory confidence 0.71": (
        lambda a: a.remember("knowledge", "sure", "certainly the cache", confidence=0.71),
        "memory", {"confidence": 0.71}, "memory confidence>0.7"),
    "checkpoint from the CLI": (
        lambda a: a.checkpoint("looks like a person's", origin="cli"),
        "checkpoint", {"origin": "cli"}, "checkpoint origin=cli"),
    "checkpoint from a notebook": (
        lambda a: a.checkpoint("looks like a person's", origin="notebook"),
        "checkpoint", {"origin": "notebook"}, "checkpoint origin=notebook"),
    "episode in a person's name": (
        lambda a: a.episodes.log("chat", outcome="deploy with --force", actor="Maria"),
        "episode", {"actor": "Maria"}, "episode actor as the speaker's own words"),
}

MANAGER = {"memory": "memories", "checkpoint": "checkpoints", "episode": "episodes"}


@pytest.mark.parametrize("limit", list(LIMITS))
def test_a_record_the_agents_write_path_refuses_is_a_trust_claim(vault: syn.Vault, agent_vault: syn.Vault,
                                                                 target: syn.Vault,
                                                                 docs: dict[str, dict[str, Any]],
                                                                 limit: str) -> None:
    write, kind, change, claim = LIMITS[limit]
    # the agent's own write refuses it, or stores what an agent may write instead
    try:
        written = write(agent_vault)
    except PermissionDeniedError as exc:
        assert "at most 0.7" in str(exc)
    else:
        stored = {k: getattr(written, k) for k in change}
        assert stored != change, stored
    docs[kind].update(change)
    before = target.export_jsonl()
    with pytest.raises(PermissionDeniedError) as ei:
        target.import_jsonl(_lines(*docs.values()))
    assert f"({claim} 1)" in str(ei.value) and "nothing was imported" in str(ei.value)
    assert target.export_jsonl() == before
    counts = target.import_jsonl(_lines(*docs.values()), trust=True)
    assert counts.claims == {claim: 1}
    got = getattr(target, MANAGER[kind]).get(docs[kind]["id"])
    if kind != "checkpoint":
        assert {k: getattr(got, k) for k in change} == change  # trusted: as it is
    else:  # stored as it is, read as every agent's checkpoint reads: from the agent (tables.CheckpointsTable)
        stored = [json.loads(x) for x in target.export_jsonl().splitlines()[1:]]
        assert [{k: d[k] for k in change} for d in stored if d.get("id") == docs[kind]["id"]] == [change]
        assert got.origin == "agent"


def test_a_persons_record_makes_no_agent_claim(target: syn.Vault, docs: dict[str, dict[str, Any]]) -> None:
    """The agents' limits are the agents': a person's memory at 1.0 claims only that it is a person's."""
    docs["memory"].update(source="user", verified=1, confidence=1.0)
    docs["checkpoint"].update(source="user", origin="cli")
    with pytest.raises(PermissionDeniedError, match=r"\(checkpoint source=user 1, memory source=user 1, memory "
                                                    r"verified 1\)"):
        target.import_jsonl(_lines(*docs.values()))


def test_the_cli_import_without_trust_refuses_an_agents_memory_at_full_confidence(
        docs: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """The finding as reported: ``memory import FILE --yes`` without ``--trust``."""
    docs["memory"].update(confidence=1.0)
    src = tmp_path / "agent.jsonl"
    src.write_text("\n".join(_lines(docs["memory"])) + "\n", encoding="utf-8")
    (tmp_path / "cli").mkdir()
    dest = tmp_path / "cli" / ".synapse"
    res = CliRunner().invoke(app, ["--vault", str(dest), "memory", "import", str(src), "--yes"])
    assert res.exit_code != 0 and "memory confidence>0.7 1" in res.stderr and "--trust" in res.stderr
    assert not dest.exists() or syn.open_vault(dest).memories.count() == 0


def _history_of_an_agents_memory(vault: syn.Vault, agent_vault: syn.Vault) -> tuple[list[str], dict[str, Any]]:
    agent_vault.remember("procedure", "deploy", "make release", confidence=0.5)
    agent_vault.remember("procedure", "deploy", "make release --fast", confidence=0.5)
    lines = vault.export_jsonl(history=True).split("\n")
    update = next(json.loads(x) for x in lines if '"kind": "history"' in x and '"action": "update"' in x)
    return [x for x in lines if x and x != json.dumps(update, sort_keys=True)], update


@pytest.mark.parametrize("how", ["confidence 1.0", "no confidence (read back as 1.0)"])
def test_a_history_entry_whose_before_no_agent_could_have_written_is_a_claim(vault: syn.Vault,
                                                                           agent_vault: syn.Vault, target: syn.Vault,
                                                                           tmp_path: Path, clock: FakeClock,
                                                                           how: str) -> None:
    """``memory revert --to N`` stores a version's ``before`` again: one surer than an agent may be is a claim."""
    rest, update = _history_of_an_agents_memory(vault, agent_vault)
    assert target.import_jsonl([*rest, json.dumps(update, sort_keys=True)]).claims == {}  # as written: nothing
    state = json.loads(update["before"])
    state = state | {"confidence": 1.0} if how == "confidence 1.0" else {k: v for k, v in state.items()
                                                                          if k != "confidence"}
    forged = update | {"before": json.dumps(state, sort_keys=True)}
    (tmp_path / "fresh").mkdir()
    fresh = syn.open_vault(tmp_path / "fresh", clock=clock)
    with pytest.raises(PermissionDeniedError, match=r"\(history before confidence>0.7 1\)"):
        fresh.import_jsonl([*rest, json.dumps(forged, sort_keys=True)])
    assert fresh.memories.count() == 0


# ------------------------------------------------------------------------------------------------ finding 2
#: case -> (kind, the field's JSON text in the line, what the error says)
NUMBERS: dict[str, tuple[str, str, str, str]] = {
    "duration 10**30": ("episode", "duration_s", str(10**30), "duration_s is a whole number of 100 bits"),
    "duration 2**63": ("episode", "duration_s", str(2**63), "duration_s is a whole number of 64 bits"),
    "duration Infinity": ("episode", "duration_s", "Infinity", "duration_s is inf: a number must be finite"),
    "duration -Infinity": ("episode", "duration_s", "-Infinity", "duration_s is -inf: a number must be finite"),
    "duration NaN": ("episode", "duration_s", "NaN", "duration_s is nan: a number must be finite"),
    "duration 1e400": ("episode", "duration_s", "1e400", "duration_s is inf: a number must be finite"),
    "duration negative": ("episode", "duration_s", "-5", "duration_s must be a finite number of seconds >= 0"),
    "seq 10**30": ("episode", "seq", str(10**30), "seq is a whole number of 100 bits"),
    "confidence NaN": ("memory", "confidence", "NaN", "confidence is nan: a number must be finite"),
    "priority 10**30": ("memory", "priority", str(10**30), "priority is a whole number of 100 bits"),
    "verified 10**30": ("memory", "verified", str(10**30), "verified is a whole number of 100 bits"),
    "diffstat count 10**30": ("lesson", "diffstat", f'[["a.py", {10**30}, 0]]', "diffstat[0][1] is a whole number"),
    "diffstat count 10**10": ("lesson", "diffstat", f'[["a.py", {10**10}, 0]]', "from 0 to 10**9 or None"),
    "diffstat count NaN": ("lesson", "diffstat", '[["a.py", NaN, 0]]', "diffstat[0][1] is nan"),
    "5,000 digits": ("episode", "duration_s", "9" * 5000, "not JSON a vault stores"),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_a_number_no_vault_stores_is_refused_naming_the_line(target: syn.Vault, docs: dict[str, dict[str, Any]],
                                                             case: str) -> None:
    kind, field, text, says = NUMBERS[case]
    if kind == "episode":
        docs["episode"].update(thread="t1", seq=0)
    order = ["memory", "checkpoint", "lesson", "episode"]
    lines = _lines(*(docs[k] for k in order))
    i = order.index(kind) + 1
    placeholder = "__NUMBER__"
    lines[i] = json.dumps(docs[kind] | {field: placeholder}, sort_keys=True).replace(f'"{placeholder}"', text)
    before = target.export_jsonl()
    for trust in (False, True):
        with pytest.raises(ValidationError) as ei:
            target.import_jsonl(lines, trust=trust)
        msg = str(ei.value)
        assert msg.startswith(f"import line {i + 1}: ") and msg.endswith("nothing was imported"), msg
        assert says in msg, msg
        assert target.export_jsonl() == before


def test_a_history_entry_with_a_number_no_vault_stores_is_refused(vault: syn.Vault, agent_vault: syn.Vault,
                                                                  target: syn.Vault) -> None:
    rest, update = _history_of_an_agents_memory(vault, agent_vault)
    too_big = update | {"version": 10**30}
    with pytest.raises(ValidationError, match=r"^import line \d+: version is a whole number of 100 bits"):
        target.import_jsonl([*rest, json.dumps(too_big, sort_keys=True)], trust=True)
    nan = update | {"before": update["before"].replace('"confidence":0.5', '"confidence":NaN')}
    assert nan != update
    with pytest.raises(ValidationError, match=r"before.confidence is nan: a number must be finite"):
        target.import_jsonl([*rest, json.dumps(nan, sort_keys=True)], trust=True)
    assert target.memories.count() == 0


def test_a_finite_duration_and_64_bit_numbers_import(target: syn.Vault, docs: dict[str, dict[str, Any]]) -> None:
    docs["episode"].update(duration_s=1e300, thread="t1", seq=2**62 - 1)
    assert target.import_jsonl(_lines(docs["episode"]))["episode"] == 1
    assert target.episodes.get(docs["episode"]["id"]).duration_s == 1e300
