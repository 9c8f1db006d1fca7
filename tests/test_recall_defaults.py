"""Saved recall bars: the settings behind GateExplorer's "Save as my defaults", used by every recall without bars."""

from __future__ import annotations

import dataclasses

import pytest

import synapse_nb as syn
from synapse_nb.errors import PermissionDeniedError, ValidationError
from synapse_nb.recall import Bars
from synapse_nb.vault import BAR_SETTINGS, SETTINGS


def test_setting_defaults_equal_the_built_in_bars() -> None:
    built_in = Bars()
    for field, name in BAR_SETTINGS.items():
        assert SETTINGS[name][0] == getattr(built_in, field), name
    assert set(BAR_SETTINGS) <= {f.name for f in dataclasses.fields(Bars)}


def test_unsaved_vault_recalls_with_the_built_in_bars(vault: syn.Vault) -> None:
    assert vault.default_bars() == Bars()
    vault.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    assert vault.recall("how do we run migrations").bars == Bars()


def test_saved_bars_apply_to_every_recall_without_bars(vault: syn.Vault) -> None:
    vault.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    vault.remember("procedure", "check_migrations", "run migrations on a copy first", tags=["db"])
    saved = vault.save_default_bars(Bars(floor=0.25, margin=0.4, top_k=1, budget_tokens=800, tag_bonus=0.1))
    assert (saved.floor, saved.margin, saved.top_k, saved.budget_tokens) == (0.25, 0.4, 1, 800)
    assert saved.tag_bonus == Bars().tag_bonus  # only the four bars are saved
    r = vault.recall("how do we run migrations")
    assert r.bars == saved and len(r.items) == 1  # top_k 1: one memory kept (a saved top_k is 1 to 1000: review 78)
    assert len(vault.as_agent().recall("how do we run migrations").items) == 1  # agents get the user's bars
    assert vault.recall("how do we run migrations", budget_tokens=50).bars.budget_tokens == 50
    assert len(vault.recall("how do we run migrations", bars=Bars()).items) == 2


def test_only_the_user_saves_bars(vault: syn.Vault) -> None:
    with pytest.raises(PermissionDeniedError):
        vault.as_agent().save_default_bars(Bars(floor=0.1))
    with pytest.raises(PermissionDeniedError):
        vault.as_agent().settings.set_many({"recall_floor": 0.1})
    assert vault.default_bars() == Bars()


def test_settings_are_checked_and_set_all_or_nothing(vault: syn.Vault) -> None:
    for name, bad in (("recall_floor", 1.5), ("recall_floor", "high"), ("recall_margin", float("nan")),
                      ("recall_top_k", -1), ("recall_budget_tokens", 2.5)):
        with pytest.raises(ValidationError):
            vault.settings.set(name, bad)
    with pytest.raises(ValidationError, match="unknown setting"):
        vault.settings.set_many({"recall_floor": 0.2, "no_such": 1})
    with pytest.raises(ValidationError):
        vault.settings.set_many({"recall_floor": 0.2, "recall_top_k": "many"})
    assert vault.settings.get("recall_floor") == Bars().floor  # nothing written
    with pytest.raises(ValidationError):
        vault.save_default_bars({"floor": 0.2})
    assert vault.settings.set_many({"recall_floor": "0.2", "recall_top_k": 3}) == {"recall_floor": 0.2,
                                                                                   "recall_top_k": 3}
    assert vault.default_bars().floor == 0.2
