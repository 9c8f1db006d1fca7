"""Export / import as JSON Lines: sorted and stable, round-trips byte for byte, refuses hostile files whole."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import FakeClock
from fresh import outputs

import synapse_nb as syn
from synapse_nb.store.sqlite import SCHEMA_VERSION
from synapse_nb.transfer import EXPORT_SCHEMA


@pytest.fixture()
def full(vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock) -> syn.Vault:
    """A vault with every kind, two minds, settings, unicode, expiry and lessons in every state."""
    vault.settings.set("lesson_expiry_days", 5)
    vault.remember("project", "status", "v1.5 deployed — ünïcödé 🚀\nsecond line", tags=["Deploy", "prod"],
                   priority="high", expires="30d")
    agent_vault.remember("knowledge", "guess", "maybe", confidence=0.3)
    vault.remember("context", "temp", "short lived", expires="1h")
    clock.advance(hours=2)
    vault.with_mind("research").remember("identity", "name", "Ada")
    vault.checkpoint("refactor", files=["a.py", "b.py"], next_step="test", blockers="none")
    vault.decide("Use WAL", rationale="readers never block", tags=["storage"])
    les = vault.lessons.create("reverted X", files=["x.py"], revert_commit={"sha": "f" * 40, "subject": "Revert X"},
                               reverted_commits=[{"sha": "e" * 40, "subject": "X"}], diffstat=[("x.py", 1, 2)])
    agent_vault.lessons.submit_analysis(les.id, "X broke it")
    vault.lessons.approve(vault.lessons.create("approved one").id)
    vault.lessons.create("pending one")
    vault.episodes.log("train", status="success", outcome="ok", refs=["runs/1"], duration_s=1.5)
    vault.notes.add("how_to", "trigger text", "body text\nwith lines")
    return vault


def test_export_is_sorted_and_stable(full: syn.Vault, tmp_path: Path) -> None:
    text = full.export_jsonl()
    assert text == full.export_jsonl()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert json.loads(lines[0]) == {"format": "synapse_nb-export", "schema": EXPORT_SCHEMA}
    assert EXPORT_SCHEMA == 4 < SCHEMA_VERSION  # v4: the duplicate check's links travel (review 74)
    docs = [json.loads(x) for x in lines[1:]]
    settings = [d for d in docs if d["kind"] == "setting"]
    assert settings == [{"kind": "setting", "name": "lesson_expiry_days", "value": 5}]
    records = [d for d in docs if d["kind"] != "setting"]
    assert [(d["kind"], d["id"]) for d in records] == sorted((d["kind"], d["id"]) for d in records)
    for line in lines[1:]:
        assert list(json.loads(line)) == sorted(json.loads(line))  # keys sorted
    kinds = {d["kind"] for d in records}
    assert kinds == {"memory", "checkpoint", "decision", "lesson", "episode", "note"}
    assert {d["mind"] for d in records} == {"default", "research"}
    assert "ünïcödé 🚀" in text  # not \u-escaped: readable in a diff
    mem = next(d for d in records if d.get("key") == "status")
    assert mem["tags"] == ["deploy", "prod"]  # JSON values, not JSON text
    # writing to a path and to a file object gives the same text
    full.export_jsonl(tmp_path / "out.jsonl")
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == text
    buf = io.StringIO()
    full.export_jsonl(buf)
    assert buf.getvalue() == text


def test_roundtrip_is_byte_identical(full: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    text = full.export_jsonl(tmp_path / "vault.jsonl")
    (tmp_path / "fresh").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "fresh", clock=clock) as fresh:
        counts = fresh.import_jsonl(tmp_path / "vault.jsonl", trust=True)
        assert counts == {"checkpoint": 1, "decision": 1, "episode": 1, "lesson": 3, "memory": 4, "note": 1,
                          "setting": 1, "skipped": 0}
        assert fresh.export_jsonl() == text
        # the imported vault behaves the same, not only exports the same
        assert fresh.memories.recall_text() == full.memories.recall_text()
        assert fresh.settings.get("lesson_expiry_days") == 5
        assert sorted(x.id for x in fresh.lessons.pending()) == sorted(x.id for x in full.lessons.pending())
        assert [x.id for x in fresh.memories.search("deployed")] == [x.id for x in full.memories.search("deployed")]
        assert [x.id for x in fresh.memories.by_tag("prod")] == [x.id for x in full.memories.by_tag("prod")]
        # re-import: idempotent
        again = fresh.import_jsonl(io.StringIO(text), trust=True)
        assert again["skipped"] == 11 and sum(v for k, v in again.items() if k not in ("skipped", "setting")) == 0
        assert fresh.export_jsonl() == text


def test_roundtrip_keeps_order_of_same_instant_records(vault: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    """Records written at the same instant list in write order (rowid); the imported vault must list them the same."""
    for i in range(6):
        vault.checkpoint(f"step {i}")
        vault.remember("knowledge", f"fact_{i}", "same instant")
    (tmp_path / "fresh").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "fresh", clock=clock) as fresh:
        fresh.import_jsonl(vault.export_jsonl().splitlines(), trust=True)
        assert [c.id for c in fresh.checkpoints.list()] == [c.id for c in vault.checkpoints.list()]
        assert fresh.checkpoints.latest().id == vault.checkpoints.latest().id
        assert fresh.memories.recall_text() == vault.memories.recall_text()


def test_import_accepts_lines_and_blank_lines(full: syn.Vault, tmp_path: Path) -> None:
    text = full.export_jsonl()
    (tmp_path / "fresh").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "fresh") as fresh:
        fresh.import_jsonl(["", *text.splitlines(), "   "], trust=True)
        assert fresh.export_jsonl() == text
    (tmp_path / "empty").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "empty") as e:
        assert e.import_jsonl([]) == {"checkpoint": 0, "decision": 0, "episode": 0, "lesson": 0, "memory": 0,
                                      "note": 0, "setting": 0, "skipped": 0}


def test_import_merges_into_a_non_empty_vault(full: syn.Vault, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "other") as other:
        mine = other.remember("knowledge", "mine", "local")
        other.import_jsonl(full.export_jsonl().splitlines(), trust=True)
        assert other.memories.get(mine.id).content == "local"
        assert other.memories.count() == 3 + 1  # default mind: 3 imported (one expired is still stored) + mine


def _records(full: syn.Vault) -> tuple[str, list[dict]]:
    lines = full.export_jsonl().splitlines()
    return lines[0], [json.loads(x) for x in lines[1:]]


def _hostile(full: syn.Vault) -> dict[str, list[str]]:
    hdr, docs = _records(full)
    mem = next(d for d in docs if d["kind"] == "memory")
    dump = json.dumps
    return {
        "duplicate id": [hdr, dump(mem), dump(mem | {"content": "dupe"})],
        "unknown kind": [hdr, dump(mem), dump(mem | {"kind": "secret", "id": "sec_1"})],
        "kind missing": [hdr, dump({k: v for k, v in mem.items() if k != "kind"})],
        "missing field": [hdr, dump({k: v for k, v in mem.items() if k != "content"})],
        "unknown field": [hdr, dump(mem | {"evil": 1})],
        "bad json": [hdr, dump(mem), '{"kind": "memory", "id": '],
        "not an object": [hdr, "[1, 2, 3]"],
        "missing header": [dump(mem)],
        "wrong format": ['{"format": "other", "schema": 1}', dump(mem)],
        "newer schema": ['{"format": "synapse_nb-export", "schema": 99}', dump(mem)],
        "unknown setting": [hdr, dump({"kind": "setting", "name": "root", "value": 1})],
        "bad setting": [hdr, dump({"kind": "setting", "name": "lesson_expiry_days", "value": -4})],
        "no id": [hdr, dump(mem | {"id": None})],
        "priority out of range": [hdr, dump(mem | {"id": "mem_new000000001", "priority": 9})],
        "bad source": [hdr, dump(mem | {"id": "mem_new000000002", "source": "root"})],
        "control chars": [hdr, dump(mem | {"id": "mem_new000000003", "content": "a\x00b"})],
        "nested object in text": [hdr, dump(mem | {"id": "mem_new000000004", "content": {"a": 1}})],
        "not a str line": [hdr, 5],  # type: ignore[list-item]
    }


@pytest.mark.parametrize("case", ["duplicate id", "unknown kind", "kind missing", "missing field", "unknown field",
                                  "bad json", "not an object", "missing header", "wrong format", "newer schema",
                                  "unknown setting", "bad setting", "no id", "priority out of range", "bad source",
                                  "control chars", "nested object in text", "not a str line"])
def test_hostile_files_refused_whole(full: syn.Vault, tmp_path: Path, case: str) -> None:
    lines = _hostile(full)[case]
    (tmp_path / "target").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "target") as target:
        target.remember("knowledge", "pre_existing", "stays")
        before = target.export_jsonl()
        with pytest.raises(syn.SynapseError) as ei:
            target.import_jsonl(lines, trust=True)
        assert isinstance(ei.value, syn.ValidationError | syn.ConflictError)
        assert "\n" not in str(ei.value)
        assert target.export_jsonl() == before


def test_id_colliding_with_different_content_refused(full: syn.Vault) -> None:
    hdr, docs = _records(full)
    before = full.export_jsonl()
    mem = next(d for d in docs if d["kind"] == "memory")
    new = {**mem, "id": "mem_brandnew0001", "key": "unique_new_key"}
    with pytest.raises(syn.ConflictError, match=mem["id"]):
        full.import_jsonl([hdr, json.dumps(new), json.dumps(mem | {"content": "tampered"})], trust=True)
    assert full.export_jsonl() == before
    # same (mind, category, key) under another id: also a conflict
    with pytest.raises(syn.ConflictError):
        full.import_jsonl([hdr, json.dumps(mem | {"id": "mem_other0000001"})], trust=True)
    assert full.export_jsonl() == before


def test_import_missing_or_binary_file(vault: syn.Vault, tmp_path: Path) -> None:
    with pytest.raises(syn.ValidationError, match="does not exist"):
        vault.import_jsonl(tmp_path / "nope.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(syn.ValidationError, match="UTF-8"):
        vault.import_jsonl(tmp_path / "bin.jsonl")


_BAD_VALUES = {
    "category": "nonsense",
    "key": "Not Snake Case",
    "mind": "has space",
    "tags": [1, 2],
    "created_at": "yesterday-ish",
    "content": "",
    "id": "dec_wrongprefix1",
}


@pytest.mark.parametrize("field", sorted(_BAD_VALUES))
def test_import_validates_memory_values(vault: syn.Vault, tmp_path: Path, field: str) -> None:
    """An import must not store a record the API itself would refuse (it would break reads later)."""
    (tmp_path / "src").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    with syn.open_vault(tmp_path / "src") as src:
        src.remember("project", "k", "v", tags=["a"])
        hdr, doc = src.export_jsonl().splitlines()[:2]
    bad = json.loads(doc) | {field: _BAD_VALUES[field]}
    before = vault.export_jsonl()
    with pytest.raises(syn.ValidationError):
        vault.import_jsonl([hdr, json.dumps(bad)], trust=True)
    assert vault.export_jsonl() == before


_READER = """
import json, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
v.import_jsonl(sys.argv[2], trust=True)
out = {
    "export": v.export_jsonl(),
    "list": [m.id for m in v.memories.list(include_expired=True)],
    "search": [m.id for m in v.memories.search("fact deploy", include_expired=True)],
    "by_tag": [m.id for m in v.memories.by_tag("common", include_expired=True)],
    "decisions": [d.id for d in v.decisions.search("use")],
    "status": v.status().to_dict()["counts"],
}
print(json.dumps(out, sort_keys=True))
"""


def test_same_vault_same_answers_whatever_the_hash_seed(full: syn.Vault, tmp_path: Path) -> None:
    """Determinism: the same export, imported under different PYTHONHASHSEEDs, answers byte for byte the same."""

    with full.transaction():
        for i in range(30):
            full.remember("knowledge", f"fact_{i}", f"deploy fact number {i % 4}", tags=["common", f"t{i % 3}"],
                          priority=syn.PRIORITIES[i % 4])
            full.decide(f"use option {i % 5}")
    src = tmp_path / "vault.jsonl"
    full.export_jsonl(src)
    script = tmp_path / "reader.py"
    script.write_text(_READER, encoding="utf-8")
    for seed in ("0", "1", "4242"):
        (tmp_path / f"v{seed}").mkdir()
    outs = outputs(lambda seed: [str(script), str(tmp_path / f"v{seed}"), str(src)], ["0", "1", "4242"],
                   env={"PYTHONPATH": str(Path(syn.__file__).parent.parent)}, drop_env=["SYNAPSE_HOME"], timeout=120)
    assert outs[0] == outs[1] == outs[2]
    assert json.loads(outs[0])["export"] == src.read_text(encoding="utf-8")


def test_an_imported_stamp_is_stored_in_the_vaults_form_whole(vault: syn.Vault, tmp_path: Path,
                                                               clock: FakeClock) -> None:
    """transfer kept its own stamp pattern, used with ``.match``: "...Z\\n" passed as already in the vault's form, was
    stored with its newline and read back as no time (1970). The whole text is checked now (``_util.ts_text``), and
    such a stamp is normalised like any other ISO 8601 form."""
    c = vault.checkpoint("before the move")
    header, *lines = vault.export_jsonl().splitlines()
    docs = [json.loads(x) for x in lines]
    doc = next(d for d in docs if d.get("id") == c.id)
    doc["created_at"] = doc["created_at"] + "\n"
    (tmp_path / "fresh").mkdir()
    with syn.open_vault(tmp_path / "fresh", clock=clock) as fresh:
        fresh.import_jsonl([header, *(json.dumps(d) for d in docs)], trust=True)
        assert fresh.checkpoints.get(c.id).created_at == c.created_at
