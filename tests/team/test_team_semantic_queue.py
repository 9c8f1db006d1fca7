"""The semantic channel on a team vault: the change feed has one position per machine folder, saved once the
records table took a read; the semantic table's own queue keeps what it has not taken (review 21)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from synapse_nb.recall import Bars
from synapse_nb.store import embedders

OPEN = Bars(floor=0, margin=0, top_k=10, budget_tokens=10**9)


class Cars:
    """A tiny deterministic embedder: the car words share a dimension, other words are hashed."""

    name, version, dimension, fingerprint = "cars", "1", 16, "cars-1"
    CARS = ("car", "automobile", "vehicle", "sedan")

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension))
        for i, t in enumerate(texts):
            for w in t.lower().replace("?", " ").replace(".", " ").split():
                out[i, 0 if w in self.CARS else 1 + zlib.crc32(w.encode()) % 15] += 1.0 if w in self.CARS else 0.25
        return out


@pytest.mark.parametrize("how", ["search", "rebuild"])
def test_another_handle_without_the_channel_never_drops_the_semantic_tables_changes(
        team_url: str, machine: Any, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    embedders.register_embedder("cars", Cars)
    a = machine("a", team_url)
    a.settings.set("recall_embedder", "cars")
    a.settings.set("recall_semantic", 0.5)
    for k, t in (("tea", "Ann likes green tea"), ("office", "The office closes at six")):
        a.remember("project", f"k_{k}", t)
    a.recall("warm up")  # the channel's table is built on this machine
    new = a.remember("project", "k_car", "Carol rents a vehicle on Fridays")
    b = machine("a", team_url)  # the same machine folder, a handle that never loads the channel
    if how == "search":
        b.index.search("anything")  # applies the feed to records and saves the feed position
    else:
        b.index.rebuild()
    assert new.id in [i.id for i in a.recall("automobile", bars=OPEN).items[:2]]
    dense = a.index.dense
    assert dense is not None
    rep = dense.check({r.id: r.digest for r in a.index._all_dense_rows()})
    assert rep.ok, rep
