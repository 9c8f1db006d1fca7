"""Review 56: an agent's shell rewrote the index folder and a person's upkeep did not undo it.

- Finding 5: through lancedb the agent zeroed a semantic table's vectors and backdated a row's ``expires_at``, keeping
  each row's ``digest``: the person's recall with the channel changed, ``index check`` said "index ok" (it compared
  the records table's digests only), ``index rebuild`` left the readable table as it was (the CLI never loads the
  model) and a purge copied the rows into the rewritten table. Now ``index rebuild`` removes every semantic table
  (the next recall with the channel embeds the vault again), and ``index check`` compares each semantic row's
  columns and zero vectors with the store (stale: ``--repair`` drops the rows and queues them to be embedded again).
- Finding 6: with the index lock held, a person's purge left its scrub owed; the agent deleted ``scrub.owed`` and
  ``index check --repair`` said "repaired" with the purged text still in the index folder. Now ``--repair`` always
  runs the whole-index scrub.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_index_trust import _held, _scan
from test_recall_semantic import OPEN, Fake
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store import embedders
from synapse_nb.store.embedders import register_embedder
from synapse_nb.store.index import scrub

TEXTS = {"car": "Ann bought a sedan last week", "pets": "Bob walks his puppy every morning",
         "trip": "Bob went to the seaside in May", "misc": "Ann likes green tea"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vault with the semantic channel on and its table built (each test opens it again: the CLI's process)."""
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    register_embedder("fake", Fake)
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    v = syn.open_vault(project)
    for k, t in TEXTS.items():
        v.remember("project", f"k_{k}", t)
    v.settings.set("recall_embedder", "fake")
    v.settings.set("recall_semantic", 0.5)
    assert _sedan_first(v)
    v.close()
    return project


def _sedan_first(v: syn.Vault) -> bool:
    """Whether "automobile purchase" (no word in common with any record) finds the sedan first: the dense channel."""
    got = v.recall("automobile purchase", bars=OPEN).items
    return bool(got) and "sedan" in got[0].line


def _table(project: Path) -> Any:
    import lancedb

    folder = project / ".synapse" / "index"
    names = [n for n in lancedb.connect(str(folder)).list_tables().tables if n.startswith("semantic_")]
    assert len(names) == 1, names
    return lancedb.connect(str(folder)).open_table(names[0])


def _rows(project: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in _table(project).to_arrow().to_pylist()}


def _sedan_id(project: Path) -> str:
    v = syn.open_vault(project)
    try:
        return next(i.id for i in v.recall("Ann sedan", bars=OPEN).items if "sedan" in i.line)
    finally:
        v.close()


TAMPER = {  # as the agent did: lancedb's update, each row's digest kept
    "zero-vectors": lambda sedan: {"where": None, "values": {"vector": [0.0] * Fake.dimension}},
    "backdated-expiry": lambda sedan: {"where": f"id = '{sedan}'", "values": {"expires_at": "2001-01-01T00:00:00Z"}},
    "other-mind": lambda sedan: {"where": f"id = '{sedan}'", "values": {"mind": "elsewhere"}},
}


def _tamper(project: Path, how: str) -> tuple[str, set[str]]:
    sedan = _sedan_id(project)
    before = _rows(project)
    spec = TAMPER[how](sedan)
    _table(project).update(**({"where": spec["where"]} if spec["where"] else {}), values=spec["values"])
    after = _rows(project)
    changed = {i for i in before if before[i] != after[i]}
    assert changed and all(after[i]["digest"] == before[i]["digest"] for i in before)
    return sedan, changed


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_index_check_reports_rows_rewritten_with_their_digest_kept(project: Path, how: str) -> None:
    _, changed = _tamper(project, how)
    v = syn.open_vault(project)  # the model not loaded: as the CLI
    rep = v.index.check()
    v.close()
    assert not rep.ok and set(rep.stale) == changed, rep
    res = CliRunner().invoke(app, ["--vault", str(project), "index", "check", "--json"])
    assert res.exit_code == 1 and set(json.loads(res.stdout)["stale"]) == changed, res.stdout


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_check_repair_drops_them_and_the_next_recall_embeds_them_again(project: Path, how: str) -> None:
    good = _rows(project)
    _, changed = _tamper(project, how)
    res = CliRunner().invoke(app, ["--vault", str(project), "index", "check", "--repair"])
    assert res.exit_code == 0 and "stale" in res.stdout and "(repaired)" in res.stdout, res.stdout
    assert changed.isdisjoint(_rows(project))  # dropped, and queued
    assert set(_rows(project)) == set(good) - changed  # the rest kept: no re-embedding of the vault
    v = syn.open_vault(project)
    assert _sedan_first(v)
    v.close()
    assert _rows(project) == good  # embedded again, as they were
    v = syn.open_vault(project)
    assert v.index.check().ok
    v.close()


def test_a_persons_rebuild_removes_a_readable_semantic_table_and_the_next_recall_builds_it(project: Path) -> None:
    good = _rows(project)
    _tamper(project, "zero-vectors")
    folder = project / ".synapse" / "index"
    res = CliRunner().invoke(app, ["--vault", str(project), "index", "rebuild"])
    assert res.exit_code == 0, res.stdout
    assert sorted(p.name for p in folder.glob("semantic_*")) == []  # with its .proj and .queue files
    v = syn.open_vault(project)
    assert _sedan_first(v)
    v.close()
    assert _rows(project) == good


def test_rebuild_and_repair_stay_a_persons(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tamper(project, "zero-vectors")
    tampered = _rows(project)
    monkeypatch.setenv("CLAUDECODE", "1")
    for args in (["index", "rebuild"], ["index", "check", "--repair"]):
        res = CliRunner().invoke(app, ["--vault", str(project), *args])
        assert res.exit_code == 1 and "person" in res.stderr, res.stderr
    assert _rows(project) == tampered


def test_check_repair_scrubs_a_purged_text_whose_owed_marker_an_agent_deleted(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 6: the person's purge met a held lock, its scrub stayed owed; the agent removed ``scrub.owed``."""
    v = syn.open_vault(project)
    m = v.remember("knowledge", "db_password", "the staging password is zebrafish7731")
    v.recall("staging password")  # the index (records and semantic table) takes it
    folder = v.index.path
    assert _scan(folder)
    monkeypatch.setattr(scrub, "PERSON_LOCK_WAIT", 0.2, raising=False)
    with _held(project / ".synapse"):
        v.purge(m.id)
    assert v.index.scrub_owed_since is not None and _scan(folder)
    os.unlink(folder / "scrub.owed")  # the agent's shell
    v.close()
    res = CliRunner().invoke(app, ["--vault", str(project), "index", "check", "--repair"])
    assert res.exit_code == 0, res.stdout
    assert _scan(folder) == []


def test_a_readable_table_of_another_shape_is_reported_broken_not_a_crash(project: Path) -> None:
    """A semantic table whose rows read but whose columns are not the ones recall reads (an older recipe's table
    without ``prev``, or one rewritten by hand) made ``index check`` end in a traceback (second reader, 58); now it
    is reported as a table that cannot be read, and ``--repair`` removes it (the next recall builds it again)."""
    tbl = _table(project)
    name = tbl.name
    data = tbl.to_arrow().drop_columns(["prev"])
    import lancedb

    lancedb.connect(str(project / ".synapse" / "index")).create_table(name, data=data, mode="overwrite")
    runner = CliRunner()
    res = runner.invoke(app, ["--vault", str(project), "index", "check", "--json"])
    assert res.exit_code == 1, res.output
    assert json.loads(res.stdout)["broken"] == [name]
    res = runner.invoke(app, ["--vault", str(project), "index", "check", "--repair"])
    assert res.exit_code == 0, res.output
    v = syn.open_vault(project)
    try:
        assert _sedan_first(v)  # built again from SQLite, with every column
        assert "prev" in _table(project).schema.names
    finally:
        v.close()


def test_a_repair_without_a_records_table_keeps_a_readable_semantic_table(project: Path) -> None:
    """``index check --repair`` with the records table gone rebuilt the index through ``rebuild``, which now removes
    every semantic table: the vault would be embedded again (with e5, minutes to hours) for a cheap repair."""
    import shutil

    before = _rows(project)
    folder = project / ".synapse" / "index"
    records = [p for p in folder.glob("*.lance") if not p.name.startswith("semantic_")]
    assert records
    for p in records:
        shutil.rmtree(p)
    res = CliRunner().invoke(app, ["--vault", str(project), "index", "check", "--repair"])
    assert res.exit_code == 0, res.output
    assert _rows(project).keys() == before.keys()  # the semantic table was kept
