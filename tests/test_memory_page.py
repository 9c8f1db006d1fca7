"""vault.memories.page: filters, sorts, counts and slices in SQLite (what MemoryBrowser shows a page of)."""

from __future__ import annotations

import pytest

import synapse_nb as syn
from synapse_nb.errors import ValidationError
from synapse_nb.kinds.memories import PAGE_SORTS


@pytest.fixture()
def filled(vault: syn.Vault) -> syn.Vault:
    a = vault.as_agent()
    vault.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"], priority="high")
    vault.remember("context", "release_freeze", "no deploys on friday", tags=["deploy"])
    a.remember("knowledge", "cache_ttl", "cache entries live 5 minutes", tags=["cache"])
    a.remember("preference", "code_style", "black with line length 100", priority="low")
    vault.remember("context", "sprint_goal", "ship the importer", expires="3d")
    return vault


def test_default_order_and_counts(filled: syn.Vault) -> None:
    p = filled.memories.page()
    assert p.total == 5 and p.page == 1 and p.pages == 1
    assert [m.key for m in p.items] == [m.key for m in filled.memories.list()]  # same order as list()


def test_filters_match_search_and_python_filtering(filled: syn.Vault) -> None:
    every = filled.memories.list()
    cases = [dict(priority="low"), dict(verified=True), dict(verified=False), dict(source="agent"),
             dict(category="context"), dict(tag="DB"), dict(category="context", verified=True, source="user")]
    for kw in cases:
        want = {m.id for m in every
                if all((getattr(m, k) == val) if k != "tag" else (val.lower() in m.tags) for k, val in kw.items())}
        p = filled.memories.page(**kw)
        assert {m.id for m in p.items} == want and p.total == len(want), kw
    assert [m.key for m in filled.memories.page("deploys").items] == ["release_freeze"]
    assert filled.memories.page("deploys", source="agent").total == 0


def test_every_sort_is_total_and_reversible(filled: syn.Vault) -> None:
    for name in PAGE_SORTS:
        up = [m.id for m in filled.memories.page(sort=name).items]
        down = [m.id for m in filled.memories.page(sort=name, descending=True).items]
        assert sorted(up) == sorted(down) and len(up) == 5, name
    assert [m.key for m in filled.memories.page(sort="key").items] == sorted(
        ["run_migrations", "release_freeze", "cache_ttl", "code_style", "sprint_goal"])
    assert filled.memories.page(sort="expires").items[0].key == "sprint_goal"  # the only one that expires
    assert filled.memories.page(sort="expires", descending=True).items[-1].key == "sprint_goal"


def test_slices_cover_everything_once(vault: syn.Vault) -> None:
    with vault.transaction():
        for i in range(53):
            vault.remember("knowledge", f"fact_{i:02d}", f"fact {i % 7}")
    seen = []
    for page in range(1, 7):
        p = vault.memories.page(sort="content", offset=(page - 1) * 10, limit=10)
        assert p.page == page and p.pages == 6 and p.total == 53
        seen += [m.id for m in p.items]
    assert len(seen) == len(set(seen)) == 53
    assert vault.memories.page(offset=1000).items == []


def test_expired_memories_only_when_asked(filled: syn.Vault, clock) -> None:
    clock.advance(days=4)
    assert filled.memories.page().total == 4
    assert filled.memories.page(include_expired=True).total == 5


@pytest.mark.parametrize("kw", [dict(sort="tags"), dict(offset=-1), dict(limit=0), dict(limit=10_001),
                                dict(verified="yes"), dict(priority="urgent"), dict(source="bot"), dict(tag=" "),
                                dict(q=3), dict(offset=True)])
def test_bad_arguments_are_refused(filled: syn.Vault, kw: dict) -> None:
    with pytest.raises(ValidationError):
        filled.memories.page(**kw)
