"""A code-loading ``recall_embedder`` runs only when a person here, as this Unix user, set it for this vault.

Review 69.

A repository that commits its vault with ``recall_embedder import:evil:make``, downloaded as an archive (``git
archive``, GitHub's "Download ZIP") instead of cloned, is not borrowed (nothing marks a vault outside git as someone
else's), so the borrowed-vault refusal never ran: the first recall imported the repository's module. Now every vault's
code spec is loaded only when this user's record (:mod:`synapse_nb.embedder_trust`, outside every vault) holds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_borrowed_settings import _evil

import synapse_nb as syn
from synapse_nb.embedder_trust import trust_file
from synapse_nb.render import BORROWED_EMBEDDER_LINE
from synapse_nb.settings import EmbedderRefused, ModelNotHere
from synapse_nb.store import embedders
from synapse_nb.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setattr(embedders, "_loaded", {})  # each test loads its own module's embedder


@pytest.fixture()
def evil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """(spec, marker): ``import:<module>:make`` of a module on sys.path whose import writes ``marker``."""
    name = f"evil_{abs(hash(str(tmp_path))) % 10**8}"
    mods = tmp_path / "mods"
    mods.mkdir()
    marker = _evil(mods, name)  # the module test_borrowed_settings plants (a cloned repository's code)
    monkeypatch.syspath_prepend(str(mods))
    return f"import:{name}:make", marker


def _vault_with_stored_spec(folder: Path, spec: str) -> Path:
    """A vault outside git whose ``meta`` holds ``spec`` with the channel on, written as a copied or downloaded
    file carries it: straight into the database, never through ``Settings.set`` on this machine."""
    folder.mkdir(parents=True)
    v = syn.open_vault(folder)
    v.remember("project", "greeting", "hello world is what the service answers")
    v.close()
    store = SqliteStore(folder / ".synapse" / "synapse.db")
    with store.transaction():
        store.meta.set_settings({"recall_embedder": spec, "recall_semantic": 0.4})
    store.close()
    return folder


def test_a_downloaded_vaults_import_embedder_is_never_imported(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """Before: the archive's vault (not borrowed: outside git) imported its ``import:`` module on the first recall.
    Now: refused, the line says why and what to do; the person setting it in their own terminal loads it."""
    spec, marker = evil
    v = syn.open_vault(_vault_with_stored_spec(tmp_path / "dl", spec), create=False)
    assert v.borrowed is None  # nothing marks it as someone else's
    r = v.recall("hello world")
    assert not marker.exists()
    assert r.semantic_off == BORROWED_EMBEDDER_LINE and BORROWED_EMBEDDER_LINE in r.text and "hello world" in r.text
    assert spec not in r.text and "settings set recall_embedder SPEC" in BORROWED_EMBEDDER_LINE
    with pytest.raises(EmbedderRefused, match="no person set it for this vault"):
        v.settings.embedder_spec()
    assert not trust_file().exists()
    v.settings.set("recall_embedder", spec)  # the person's own choice, here
    assert v.recall("hello world").semantic_off is None and marker.exists()
    assert spec in trust_file().read_text(encoding="utf-8")
    v.close()


def test_a_copied_vault_is_not_the_one_its_spec_was_set_for(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """The person set the spec for their vault; a copy of its file elsewhere (same ``vault_uid``) loads nothing."""
    spec, marker = evil
    mine = tmp_path / "mine"
    mine.mkdir()
    v = syn.open_vault(mine)
    v.remember("project", "greeting", "hello world is what the service answers")
    v.settings.set_many({"recall_embedder": spec, "recall_semantic": 0.4})
    v.close()
    (tmp_path / "copy" / ".synapse").mkdir(parents=True)
    shutil.copy(mine / ".synapse" / "synapse.db", tmp_path / "copy" / ".synapse" / "synapse.db")
    c = syn.open_vault(tmp_path / "copy", create=False)
    assert c.recall("hello world").semantic_off == BORROWED_EMBEDDER_LINE and not marker.exists()
    c.close()
    v = syn.open_vault(mine, create=False)
    assert v.recall("hello world").semantic_off is None and marker.exists()
    v.close()


def _recall_in(folder: Path, env: dict[str, str]) -> str:
    code = ("import warnings; warnings.simplefilter('ignore'); import synapse_nb as syn; "
            "v = syn.open_vault(create=False); print(v.recall('hello world').semantic_off)")
    out = subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.strip()


def test_another_user_is_refused_what_this_one_set(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """The record is this Unix user's (their ~/.config): another HOME on the same vault loads nothing; this user's
    own process (a new one, reading the record from the same HOME) loads it."""
    spec, marker = evil
    project = tmp_path / "project"
    project.mkdir()
    v = syn.open_vault(project)
    v.remember("project", "greeting", "hello world is what the service answers")
    v.settings.set_many({"recall_embedder": spec, "recall_semantic": 0.4})
    v.close()
    mods = marker.parent  # the module beside its marker
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join([str(ROOT), str(mods)]),
            "SYNAPSE_TEAM_PINS": str(tmp_path / "pins.toml")}
    other = tmp_path / "other-home"
    other.mkdir()
    assert _recall_in(project, {**base, "HOME": str(other)}) == BORROWED_EMBEDDER_LINE
    assert not marker.exists()
    mine = {**base, "HOME": str(other), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    assert _recall_in(project, mine) == "None" and marker.exists()


def test_an_agent_cannot_record_it(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """Setting it is a person's act: an agent's handle is refused, and nothing is recorded or loaded."""
    spec, marker = evil
    v = syn.open_vault(_vault_with_stored_spec(tmp_path / "dl", spec), create=False)
    with pytest.raises(syn.PermissionDeniedError):
        v.as_agent().settings.set("recall_embedder", spec)
    from synapse_nb.embedder_trust import record

    with pytest.raises(syn.PermissionDeniedError):
        record(v.as_agent()._ctx, spec)
    assert not trust_file().exists() and v.recall("hello world").semantic_off == BORROWED_EMBEDDER_LINE
    assert not marker.exists()
    v.close()


def test_an_import_the_person_trusts_records_it(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """A setting line accepted with trust=True (CLI --trust) is the person's choice: its code spec is loaded."""
    spec, marker = evil
    (tmp_path / "src").mkdir()
    src = syn.open_vault(tmp_path / "src")
    src.remember("project", "greeting", "hello world is what the service answers")
    src.settings.set_many({"recall_embedder": spec, "recall_semantic": 0.4})
    text = src.export_jsonl()
    src.close()
    trust_file().unlink()  # recorded for the source vault only, and gone: the import alone must record it
    (tmp_path / "dst").mkdir()
    dst = syn.open_vault(tmp_path / "dst")
    dst.import_jsonl(text.splitlines(), trust=True)
    assert dst.recall("hello world").semantic_off is None and marker.exists()
    dst.close()


def test_a_downloaded_vaults_own_export_imported_back_approves_nothing(tmp_path: Path,
                                                                     evil: tuple[str, Path]) -> None:
    """Second reader of this fix: a setting line holding the value the vault already stores claimed nothing, so an
    import without trust of the downloaded vault's own export went through and recorded its code as the person's.
    A code spec no person set here is a claim even then, and only a trusted import records it."""
    from synapse_nb.embedder_trust import set_here

    spec, marker = evil
    v = syn.open_vault(_vault_with_stored_spec(tmp_path / "dl", spec), create=False)
    text = v.export_jsonl().splitlines()
    with pytest.raises(syn.PermissionDeniedError, match="setting recall_embedder"):
        v.import_jsonl(text)
    assert not set_here(v._store, spec)
    assert v.recall("hello world").semantic_off == BORROWED_EMBEDDER_LINE and not marker.exists()
    v.import_jsonl(text, trust=True)  # the person's explicit act
    assert set_here(v._store, spec)
    v.close()


def test_built_in_names_need_no_record(tmp_path: Path) -> None:
    """A built-in name (no ``:``) stored straight into a copied vault is honoured as before: nothing to record."""
    v = syn.open_vault(_vault_with_stored_spec(tmp_path / "dl", "e5-small"), create=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelNotHere)
        assert v.settings.embedder_spec() == "e5-small"
    assert not trust_file().exists()
    v.close()


def test_an_as_of_recall_loads_what_the_person_set(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """A past state, rebuilt in a temporary folder, is the same vault: the spec the person set is loaded there."""
    spec, marker = evil
    (tmp_path / "p").mkdir()
    v = syn.open_vault(tmp_path / "p")
    v.remember("project", "greeting", "hello world is what the service answers")
    v.settings.set_many({"recall_embedder": spec, "recall_semantic": 0.4})
    r = v.recall("hello world", as_of=v._ctx.now_ts())
    assert r.semantic_off is None and marker.exists()
    v.close()


def test_a_record_file_it_cannot_read_is_never_overwritten(tmp_path: Path, evil: tuple[str, Path]) -> None:
    """Second reader of this fix: an unreadable file (or a newer version's) was read as empty and rewritten with the
    one new entry, dropping every other vault's approval. The setting is refused, the file and the vault unchanged."""
    spec, _marker = evil
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    for text in ("{not json", '{"version": 99, "embedders": {"sha256:x": {}}}'):
        path.write_text(text, encoding="utf-8")
        (tmp_path / "v").mkdir(exist_ok=True)
        v = syn.open_vault(tmp_path / "v")
        with pytest.raises(syn.StoreError, match="move it aside"):
            v.settings.set("recall_embedder", spec)
        assert path.read_text(encoding="utf-8") == text and v.settings.get("recall_embedder") is None
        v.close()
