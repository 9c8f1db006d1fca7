"""Review 68: the walk's bar for people's records (0.4 x the best person's match, as if agents' records were not
there) was derived from whatever person's record ranked best, a dense-only hit that matched nothing included: with
the semantic channel on and the only strong hit an agent's, every record the dense list held cleared it."""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

import synapse_nb as syn
from synapse_nb.store import embedders
from synapse_nb.store.embedders import register_embedder

HAS_WORDLLAMA = importlib.util.find_spec("wordllama") is not None
QUERY = "which GPUs do we have"


class Hashed:
    """A deterministic embedder: each word a hashed dimension, "gpus" and "accelerators" one meaning."""

    name, version, dimension, fingerprint = "hashed", "1", 16, "hashed-1"
    match_cosine: float | None = None

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        out = np.full((len(texts), self.dimension), 0.01)  # every record is somewhat close: all are dense hits
        for i, t in enumerate(texts):
            for w in t.lower().replace(",", " ").replace(".", " ").split():
                out[i, 0 if w in ("gpus", "accelerators") else 1 + zlib.crc32(w.encode()) % 15] += 1.0
        return out


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Hashed:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    emb = Hashed()
    register_embedder("hashed", lambda: emb)
    return emb


def _others(v: syn.Vault) -> list[str]:
    """A person's records on other topics (a best run, two decisions, a checkpoint, two episodes)."""
    ids = [v.remember("project", "best_run", "the best run so far is run 42 with loss 0.31").id,
           v.decisions.create("We use PostgreSQL for the team vault").id,
           v.decisions.create("Releases go out on Thursdays").id,
           v.checkpoints.create("refactored the parser, tests green").id]
    ids += [v.episodes.log(t, thread="t1", actor=a).id for t, a in (("lunch at noon tomorrow?", "Ann"),
                                                                      ("sure, the usual place", "Bob"))]
    return ids


def _on(v: syn.Vault, spec: str, weight: float) -> None:
    v.settings.set("recall_embedder", spec)
    v.settings.set("recall_semantic", weight)


def test_an_agents_only_hit_lets_no_unrelated_person_record_through(vault: syn.Vault, hashed: Hashed) -> None:
    """The agent's memory was the one strong hit; the people's records, dense hits only (0.00x, no query word),
    set their own bar at 0.4 x the best of them and were kept. A person's record that matches nothing now sets no
    bar and is never walked below the agents' one: the answer is the GPU memory alone, as with the channel off."""
    others = _others(vault)
    gpus = vault.as_agent().remember("project", "gpus", "we have 4 A100 GPUs").id
    assert [i.id for i in vault.recall(QUERY).items] == [gpus]  # the channel off
    _on(vault, "hashed", 0.1)
    got = vault.recall(QUERY)
    assert [i.id for i in got.items] == [gpus]
    rows = {r.id: r for r in got.explain()}
    assert {rid for rid in others if rid in rows} and not any(rows[rid].kept for rid in others if rid in rows)


def test_a_person_record_that_matches_is_still_walked_to_the_peoples_bar(vault: syn.Vault, hashed: Hashed) -> None:
    """The people's reserve still does its job: under agents' short records holding the question's word, a person's
    long record holding it (a query word), and one close in meaning (cosine at the model's match_cosine, no query
    word), are kept below the agents' bar; the unrelated ones are not."""
    others = _others(vault)
    words = vault.decisions.create("After a long discussion about budgets, hiring, the office move, the new "
                                   "coffee machine and the cluster, we keep the GPUs we have until spring").id
    meaning = vault.decisions.create("accelerators accelerators rented monthly").id
    agent = vault.as_agent()
    for i in range(3):
        agent.decisions.create(f"GPUs A100 n{i}")
    hashed.match_cosine = 0.5
    _on(vault, "hashed", 0.1)
    got = vault.recall(QUERY)
    kept = {i.id for i in got.items}
    assert {words, meaning} <= kept and not kept & set(others)
    best = max(r.score for r in got.explain())
    assert all(r.score < 0.4 * best for r in got.explain() if r.id in (words, meaning))  # below the agents' bar


@pytest.mark.skipif(not HAS_WORDLLAMA, reason="the semantic extra (wordllama) is not installed")
def test_the_reviewers_vault_with_wordllama(vault: syn.Vault) -> None:
    """Review 68 as reproduced: wordllama at recall_semantic 0.1, an agent's "we have 4 A100 GPUs" and a person's
    records on other topics; the answer held a best_run memory and a decision besides the GPU memory."""
    _others(vault)
    gpus = vault.as_agent().remember("project", "gpus", "we have 4 A100 GPUs").id
    _on(vault, "wordllama", 0.1)
    assert [i.id for i in vault.recall(QUERY).items] == [gpus]
