"""A team vault filled by `memory import` of an export with its history lists the conflicts the local vault lists
(review 84 F2, on PostgreSQL): the import moves the team vault's duplicate-check mark to the file's ``checked_at``,
so `memory conflicts --check-all` re-judges nothing the local vault had checked."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path
from typing import Any

import synapse_nb as syn


def _pairs(v: syn.Vault) -> list[tuple[object, ...]]:
    """Every pair once every waiting write is checked, by its fields but its random id."""
    return sorted(astuple(x)[1:] for x in v.memories.conflicts(status=None, check_all=True))


def test_an_imported_team_vault_lists_the_local_vaults_pairs(team_url: str, machine: Any, tmp_path: Path) -> None:
    (tmp_path / "laptop").mkdir()
    local = syn.open_vault(tmp_path / "laptop")
    for i in range(8):
        store, layer = ("sqlite", "postgres", "lancedb", "redis")[i % 4], ("cache", "queue", "index", "store")[i % 4]
        local.decide(f"Decision {i}: use {store} for the {layer} layer",
                     rationale=f"Because benchmark {i} showed it was faster and simpler to operate")
        local.remember("project", f"k{i}", f"the {layer} layer uses {store} now")
    text = local.export_jsonl(history=True)
    team = machine("a", team_url)
    team.import_jsonl(text.split("\n"), trust=True)
    assert team._store.links.checked_at() == local._store.links.checked_at()
    assert len(_pairs(local)) >= 8 and _pairs(team) == _pairs(local)
