"""Review 68 F2: revisions and conflicts are named by a unique id prefix, as every record kind is (docs/cli.md:
"Ids are accepted in full or as any unique prefix"), through the one helper the kinds use; an ambiguous prefix
lists its matches, and another mind's id stays "not found"."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app


def _revisions(vault: syn.Vault, agent: syn.Vault, n: int) -> list[str]:
    for i in range(n):
        m = vault.remember("procedure", f"step_{i}", f"procedure number {i} runs make target{i}")
        agent.memories.update(m.id, content=f"procedure number {i} runs make other{i}")
    return [r.id for r in vault.memories.revisions()]


def _conflicts(vault: syn.Vault, agent: syn.Vault) -> list[str]:
    vault.remember("procedure", "deploy_procedure", "deploy: run make deploy then tag the release on main")
    agent.remember("knowledge", "deploy_steps", "to deploy run make deploy then tag the release on main")
    vault.remember("procedure", "backup_procedure", "backup: copy the database dump to the cold bucket nightly")
    agent.remember("knowledge", "backup_steps", "to backup copy the database dump to the cold bucket nightly")
    return [x.id for x in vault.memories.conflicts()]


def test_a_revision_is_accepted_and_rejected_by_a_unique_prefix(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    a, b = _revisions(vault, agent_vault, 2)
    assert vault.memories.revision(a[:10]).id == a
    assert vault.memories.accept(a[:12]).content.endswith("make other0")
    assert vault.memories.reject(b[:12]).status == "rejected"


def test_an_ambiguous_revision_prefix_lists_the_matches(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    a, b = _revisions(vault, agent_vault, 2)
    with pytest.raises(syn.AmbiguousIdError, match="matches several revisions") as err:
        vault.memories.accept("rev_")
    assert a in str(err.value) and b in str(err.value) and "give more characters" in str(err.value)
    assert [r.id for r in vault.memories.revisions()] == [a, b]  # nothing accepted


def test_a_conflict_is_resolved_by_a_unique_prefix_and_an_ambiguous_one_lists_them(
        vault: syn.Vault, agent_vault: syn.Vault) -> None:
    first, second = _conflicts(vault, agent_vault)
    with pytest.raises(syn.AmbiguousIdError, match="matches several conflicts") as err:
        vault.memories.resolve("lnk_", "keep")
    assert first in str(err.value) and second in str(err.value)
    assert vault.memories.resolve(first[:12], "keep").status == "kept"
    assert vault.memories.deletes(second[:12], "keep") is None


def test_another_minds_revision_and_conflict_are_not_found_in_full_or_by_prefix(
        vault: syn.Vault, agent_vault: syn.Vault, tmp_path: Path) -> None:
    (rev,) = _revisions(vault, agent_vault, 1)
    link = _conflicts(vault, agent_vault)[0]
    other = syn.open_vault(tmp_path / "project", mind="other")
    try:
        for name in (rev, rev[:10]):
            with pytest.raises(syn.NotFoundError, match=r"no revision with id or id prefix .* in mind 'other'"):
                other.memories.accept(name)
        for name in (link, link[:10]):
            with pytest.raises(syn.NotFoundError, match=r"no conflict with id or id prefix .* in mind 'other'"):
                other.memories.resolve(name, "keep")
    finally:
        other.close()


def test_the_cli_accepts_and_resolves_by_prefix(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    (rev,) = _revisions(vault, agent_vault, 1)
    link = _conflicts(vault, agent_vault)[0]
    path = str(vault.path.parent)
    res = CliRunner().invoke(app, ["--vault", path, "memory", "accept", rev[:8], "--yes"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["--vault", path, "memory", "resolve", link[:8], "keep", "--yes"])
    assert res.exit_code == 0 and f"{link}: kept" in res.stdout, res.output
