"""Review 28: an agent held the vault-wide index lock for most of every hour, and a person's recall waited on it.

- ``index rebuild`` and ``index check --repair`` are a person's maintenance: refused for the agent actor and in an
  agent's environment (7.5 s each at 60,000 records, in a loop, with no quota);
- an agent's deletion of its own record leaves the whole-index rewrite owed (7 to 17 s each at 60,000 records): it
  runs at a person's next deletion or purge, or once the oldest owed one is an hour old; a person's deletion keeps
  issue 30's promise (no text left in the index folder, in the call);
- a recall waits a moment at most for the index lock, then answers from the index as it stands (BM25 reads the
  store, which has every write).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_recall_semantic import OPEN, Fake
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store import embedders, indexer
from synapse_nb.store.embedders import register_embedder

NEEDLE = b"zebrafish7731"


@pytest.fixture
def sem(vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> syn.Vault:
    """``vault`` with the semantic channel on (a fake embedder) and its table built."""
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    register_embedder("fake", Fake)
    for i in range(20):
        vault.remember("knowledge", f"filler_{i}", f"filler fact {i} about deploys and caches")
    vault.settings.set("recall_embedder", "fake")
    vault.settings.set("recall_semantic", 0.5)
    vault.recall("warm up")
    assert vault.index.dense is not None and vault.index.dense.exists()
    return vault


def _scan(folder: Path, needle: bytes = NEEDLE) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes())


@pytest.fixture
def rewrites(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids of every whole-index rewrite (``VaultIndex.forget``) made from now on."""
    calls: list[list[str]] = []
    real = indexer.VaultIndex.forget

    def counted(self: indexer.VaultIndex, ids: Any) -> int:
        calls.append(sorted(ids))
        return real(self, ids)

    monkeypatch.setattr(indexer.VaultIndex, "forget", counted)
    return calls


# ------------------------------------------------------------------------------------------- (1) a person's upkeep
def test_an_agent_may_not_rebuild_or_repair_the_index_and_is_told_who_may(vault: syn.Vault) -> None:
    m = vault.remember("knowledge", "k", "the deploy runs from the release branch")
    vault.index.sync()  # built
    agent = vault.as_agent()
    for attempt in (agent.index.rebuild, lambda: agent.index.check(repair=True)):
        with pytest.raises(syn.PermissionDeniedError, match=r"a person's maintenance.*BM25.*index rebuild"):
            attempt()
    assert agent.index.check().ok  # reading the drift is no upkeep
    agent.index.close()
    shutil.rmtree(agent.index.path)  # a broken index: recall still answers, from the store
    assert m.id in [i.id for i in agent.recall("deploy release branch", bars=OPEN).items]
    assert vault.index.rebuild() >= 1 and vault.index.check(repair=True).ok  # a person's


@pytest.mark.parametrize("args", [["index", "rebuild"], ["index", "check", "--repair"]])
def test_the_cli_refuses_index_upkeep_in_an_agents_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         args: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    syn.open_vault(project).remember("knowledge", "k", "v")
    runner = CliRunner()
    for env, extra in (({"CLAUDECODE": "1"}, []), ({}, ["--actor", "agent"])):
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        res = runner.invoke(app, ["--vault", str(project), *extra, *args])
        assert res.exit_code == 1, (res.stdout, res.stderr)
        assert "person" in res.stderr and "index rebuild" in res.stderr and "BM25" in res.stderr
        for name in env:
            monkeypatch.delenv(name)
    assert runner.invoke(app, ["--vault", str(project), *args]).exit_code == 0  # a person, in their terminal
