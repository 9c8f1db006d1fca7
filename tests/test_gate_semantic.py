"""The router's optional semantic features: an injected embedder's vectors appended to the TF-IDF rows."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from fresh import outputs

from synapse_nb.errors import ValidationError
from synapse_nb.eval import evaluate_router, load_dataset
from synapse_nb.eval.embedding_cache import CachedEmbedder
from synapse_nb.gate import Router
from synapse_nb.gate.semantic import TextEmbedder, check_text_embedder, semantic_rows

REPO = Path(__file__).resolve().parents[1]
HAS_WORDLLAMA = importlib.util.find_spec("wordllama") is not None

#: words of the same meaning share a concept; texts are embedded as their concepts' counts
CONCEPTS = {"car": 0, "automobile": 0, "vehicle": 0, "sedan": 0, "rain": 1, "drizzle": 1, "shower": 1,
            "storm": 1, "song": 2, "tune": 2, "melody": 2, "track": 2}


class ConceptEmbedder:
    """A deterministic toy embedder that knows synonyms the TF-IDF features cannot."""

    name, version, dimension, fingerprint = "concepts", "1", 4, "concepts v1"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts, *, query=False):
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dimension))
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, CONCEPTS.get(word, 3)] += 1.0 if word in CONCEPTS else 0.05
        return out


TRAIN = [("wash my car", "car"), ("fix the car engine", "car"), ("car insurance quote", "car"),
         ("is rain coming", "weather"), ("rain tomorrow morning", "weather"), ("how much rain today", "weather"),
         ("play a song", "music"), ("next song please", "music"), ("a song for running", "music")]
X = [t for t, _ in TRAIN]
Y = [y for _, y in TRAIN]
#: no word of these is in the training rows: only the concepts route them
PARAPHRASES = ["automobile", "drizzle", "melody", "sedan", "storm", "tune"]
EXPECTED = ["car", "weather", "music", "car", "weather", "music"]


def test_semantic_features_route_what_no_ngram_can():
    lexical = Router(method="linear").fit(X, Y)
    semantic = Router(method="linear", embedder=ConceptEmbedder(), semantic_weight=2.0).fit(X, Y)
    assert semantic.predict(PARAPHRASES) == EXPECTED
    assert lexical.predict(PARAPHRASES) != EXPECTED
    for method in ("centroid", "knn", "auto"):
        assert Router(method=method, embedder=ConceptEmbedder(), semantic_weight=2.0).fit(X, Y).predict(
            PARAPHRASES) == EXPECTED, method


def test_semantic_scores_are_the_same_bytes_alone_and_in_any_batch():
    r = Router(embedder=ConceptEmbedder()).fit(X, Y)
    batch = r.decision_scores(PARAPHRASES + X)
    alone = np.vstack([r.decision_scores([t]) for t in PARAPHRASES + X])
    assert batch.tobytes() == alone.tobytes()
    assert r.decision_scores(list(reversed(X))).tobytes() == batch[len(PARAPHRASES):][::-1].tobytes()


def test_semantic_rows_are_weighted_unit_vectors_and_zero_rows_stay_zero():
    S = semantic_rows(ConceptEmbedder(), ["car rain", "", "tune"], 1.5).toarray()
    assert np.allclose(np.sqrt((S * S).sum(axis=1)), [1.5, 0.0, 1.5])
    assert np.allclose(S[0, :2], 1.5 / np.sqrt(2))
    assert semantic_rows(ConceptEmbedder(), [], 1.0).shape == (0, 4)


class BadShape(ConceptEmbedder):
    def embed(self, texts, *, query=False):
        return np.zeros((len(texts), 3))


class NotFinite(ConceptEmbedder):
    def embed(self, texts, *, query=False):
        return np.full((len(texts), 4), np.nan)


def test_embedder_errors_are_validation_errors_with_clear_messages():
    with pytest.raises(ValidationError, match="embedder must have name"):
        Router(embedder=object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="returned shape"):
        Router(embedder=BadShape()).fit(X, Y)
    with pytest.raises(ValidationError, match="non-finite"):
        Router(embedder=NotFinite()).fit(X, Y)
    with pytest.raises(ValidationError, match="semantic_weight"):
        Router(embedder=ConceptEmbedder(), semantic_weight=0)
    assert isinstance(check_text_embedder(ConceptEmbedder()), TextEmbedder)


def test_cross_fitting_and_the_evaluation_record_keep_the_embedder():
    emb = ConceptEmbedder()
    r = Router(embedder=emb).fit_calibrated([*X, "hello there", "what time is it", "tell me a joke"],
                                            [*Y, None, None, None], folds=3)
    assert r.embedder is emb and r.cv_folds_ == 3 and r.describe_embedder() == "concepts (concepts v1)"
    res = evaluate_router(Router(embedder=emb), load_dataset("agent_vault"), with_descriptions=True, n_boot=10)
    assert res.config["router_params"]["embedder"] == "concepts (concepts v1)"
    assert json.loads(json.dumps(res.to_dict()))["config"]["router_params"]["semantic_weight"] == 1.0


def test_cached_embedder_gives_back_the_same_bits_and_embeds_each_text_once(tmp_path: Path):
    inner = ConceptEmbedder()
    texts = X + PARAPHRASES + X
    direct = inner.embed(texts, query=True)
    inner.calls = 0
    cached = CachedEmbedder(inner, tmp_path, chunk=4)
    assert cached.embed(texts, query=True).tobytes() == direct.tobytes()
    assert inner.calls == len(set(texts))
    again = CachedEmbedder(inner, tmp_path)  # read back from the file
    assert len(again) == len(set(texts))
    assert again.embed(texts, query=True).tobytes() == direct.tobytes() and inner.calls == len(set(texts))
    a = Router(embedder=again).fit(X, Y).decision_scores(PARAPHRASES)
    b = Router(embedder=ConceptEmbedder()).fit(X, Y).decision_scores(PARAPHRASES)
    assert a.tobytes() == b.tobytes()


_SCRIPT = """
import hashlib, sys
from synapse_nb.eval import load_dataset
from synapse_nb.gate import Router
from synapse_nb.store.embedders import load_embedder
d = load_dataset("agent_vault")
x, y = d.split("train")
r = Router(embedder=load_embedder("wordllama"), semantic_weight=1.0).fit(x, y, descriptions=d.route_descriptions)
r.calibrate(*d.split("val"))
s = r.decision_scores(d.split("test")[0])
print(hashlib.sha256(s.tobytes()).hexdigest(), repr(r.threshold_), r.blend_)
"""


@pytest.mark.skipif(not HAS_WORDLLAMA, reason="the semantic extra (wordllama) is not installed")
def test_wordllama_router_is_byte_identical_whatever_the_hash_seed_and_thread_count():
    outs = {out.strip() for out in outputs(["-c", _SCRIPT], [("0", "1"), ("1", "2"), ("4242", "1")], cwd=REPO,
                                            timeout=300)}
    assert len(outs) == 1, outs
    digest = outs.pop().split()[0]
    assert len(digest) == 64 and digest != hashlib.sha256(b"").hexdigest()
