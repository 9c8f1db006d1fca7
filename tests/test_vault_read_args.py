"""Bad arguments to read APIs (limits, durations, names, tags): a ValidationError, never another exception."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import synapse_nb as syn


def _calls(v: syn.Vault) -> dict[str, Callable[[], Any]]:
    return {
        "memories.list(limit='x')": lambda: v.memories.list(limit="x"),
        "memories.list(limit=[1])": lambda: v.memories.list(limit=[1]),
        "memories.search(limit=10**400)": lambda: v.memories.search("v", limit=10**400),
        "episodes.history(limit='x')": lambda: v.episodes.history(limit="x"),
        "lessons.list(limit='x')": lambda: v.lessons.list(limit="x"),
        "checkpoints.list(limit='x')": lambda: v.checkpoints.list(limit="x"),
        "decisions.list(limit=object())": lambda: v.decisions.list(limit=object()),
        "memories.expiring(within='99999999d')": lambda: v.memories.expiring(within="99999999d"),
        "memories.expiring(within=10**400)": lambda: v.memories.expiring(within=10**400),
        "memories.expiring(within=None)": lambda: v.memories.expiring(within=None),
        "prune(sessions_older_than=10**400)": lambda: v.prune(sessions_older_than=10**400),
        "prune(sessions_older_than='99999999d')": lambda: v.prune(sessions_older_than="99999999d"),
        "memories.by_tag(None)": lambda: v.memories.by_tag(None),
        "memories.by_tag('')": lambda: v.memories.by_tag(""),
        "decisions.by_tag(None)": lambda: v.decisions.by_tag(None),
        "checkpoints.latest(branch=5)": lambda: v.checkpoints.latest(branch=5),
        "memories.get_by_key('project', None)": lambda: v.memories.get_by_key("project", None),
        "notes.expand(None)": lambda: v.notes.expand(None),
        "episodes.last(None)": lambda: v.episodes.last(None),
        "settings.get(None)": lambda: v.settings.get(None),
        "lessons.list(status=5)": lambda: v.lessons.list(status=5),
        "memories.search(None)": lambda: v.memories.search(None),
        "memories.search('x', category=5)": lambda: v.memories.search("x", category=5),
    }


CASES = sorted(_calls(None).keys())  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES)
def test_bad_read_arguments(vault: syn.Vault, case: str) -> None:
    vault.remember("project", "k", "v", tags=["t"])
    vault.decide("d", tags=["t"])
    before = vault.export_jsonl()
    with pytest.raises(syn.ValidationError):
        _calls(vault)[case]()
    assert vault.export_jsonl() == before


def test_approving_an_approved_lesson_is_a_conflict(vault: syn.Vault) -> None:
    """errors.py names "approve an approved lesson" as the ConflictError example; lessons.approve documents
    "approve a pending lesson, or re-approve an expired one"."""
    les = vault.lessons.approve(vault.lessons.create("x").id)
    with pytest.raises(syn.ConflictError):
        vault.lessons.approve(les.id)
    assert vault.lessons.get(les.id).expires_at == les.expires_at
