"""The router's batch featurizer equals scikit-learn's TF-IDF pipeline; folds are stratified and seeded."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from fresh import outputs
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from synapse_nb.errors import ValidationError
from synapse_nb.gate import Router
from synapse_nb.gate.features import Featurizer
from synapse_nb.gate.folds import stratified_folds, stratified_holdout
from synapse_nb.gate.router import ROUTER_CONFIG
from synapse_nb.text import char_vectorizer_kwargs, word_vectorizer_kwargs

TRAIN = ["book a flight to Paris", "will it rain today?", "play some jazz", "what's my balance",
         "transfer $50 to savings", "café crème near the gare", "Rain, rain, go away!", "flights flights flights"]
EDGE = ["", "!!!", "Ünïcödé àccents", "x" * 3000, "tab\there\x00ctrl", "\ud800 lone surrogate", "東京 の 天気",
        "emoji 🎉 party", "a" * 80 + " short", "flight", "rain rain rain rain"]


def _sklearn(texts: list[str], fit: list[str]) -> sp.csr_matrix:
    cfg = ROUTER_CONFIG
    word = TfidfVectorizer(**word_vectorizer_kwargs(ngram_range=cfg.word_ngram_range, stop_words=cfg.stop_words,
                                                    max_chars=cfg.max_query_chars, max_token_chars=cfg.max_token_chars),
                           sublinear_tf=True, dtype=np.float64).fit(fit)
    char = TfidfVectorizer(**char_vectorizer_kwargs(ngram_range=cfg.char_ngram_range, max_chars=cfg.max_query_chars,
                                                    max_token_chars=cfg.max_token_chars),
                           sublinear_tf=True, dtype=np.float64).fit(fit)
    W, C = word.transform(texts), char.transform(texts)
    return normalize(sp.hstack([W, C]).tocsr())


def test_featurizer_equals_scikit_learn_on_random_and_edge_strings() -> None:
    rng = np.random.default_rng(0)
    words = "book flight rain jazz balance transfer savings café paris today what's my a the to".split()
    rand = [" ".join(rng.choice(words, int(rng.integers(0, 9)))) for _ in range(200)]
    f = Featurizer(ROUTER_CONFIG).fit(TRAIN)
    for texts in (rand, EDGE, TRAIN):
        ours, ref = f.transform(texts), _sklearn(texts, TRAIN)
        assert ours.shape == ref.shape
        assert abs(ours - ref).max() < 1e-12 if ours.nnz else ref.nnz == 0


def test_cache_never_changes_a_value_and_pickles() -> None:
    texts = TRAIN + EDGE
    a = Featurizer(ROUTER_CONFIG).fit(TRAIN)
    b = Featurizer(ROUTER_CONFIG, cache_size=0).fit(TRAIN)
    a.transform(texts)  # warm
    assert (a.transform(texts) != b.transform(texts)).nnz == 0
    r = Router().fit(TRAIN, ["travel", "weather", "music", "bank", "bank", "travel", "weather", "travel"])
    again = pickle.loads(pickle.dumps(r))
    assert np.array_equal(again.decision_scores(texts), r.decision_scores(texts))
    with pytest.raises(ValidationError, match="blocks"):
        Featurizer(ROUTER_CONFIG, blocks=("bytes",))


def test_scores_are_the_same_whatever_the_hash_seed() -> None:

    code = ("from synapse_nb.eval import load_dataset; from synapse_nb.gate import Router; import hashlib;"
            "d = load_dataset('agent_vault'); r = Router().fit(*d.split('train'), descriptions=d.route_descriptions);"
            "r.calibrate(*d.split('val'), criterion='balanced');"
            "print(hashlib.sha256(r.decision_scores(d.split('test')[0]).tobytes()).hexdigest(),"
            " r.blend_, r.threshold_)")
    outs = set(outputs(["-c", code], ["0", "12345"]))
    assert len(outs) == 1 and len(next(iter(outs)).split()[0]) == 64  # identical scores, blend, threshold


def test_calibrate_picks_the_blend_on_the_data_given() -> None:
    from synapse_nb.eval import load_dataset

    d = load_dataset("agent_vault")
    r = Router().fit(*d.split("train"), descriptions=d.route_descriptions)
    r.calibrate(*d.split("val"), criterion="balanced")
    assert r.blend_ == 1.0  # few examples per hub, good descriptions: the described centroid
    with pytest.raises(ValidationError, match="non-blank"):
        Router().fit(["a b"], ["x"], descriptions={"x": "  "})
    with pytest.raises(ValidationError, match="out of scope"):
        Router().fit(["a b"], ["x"], descriptions={"oos": "junk"})


def test_stratified_folds_and_holdout_are_balanced_and_seeded() -> None:
    labels = ["a"] * 10 + ["b"] * 5 + [None] * 7
    f = stratified_folds(labels, 5, seed=1)
    assert np.array_equal(f, stratified_folds(labels, 5, seed=1))
    for lab in ("a", "b", None):
        counts = np.bincount(f[[i for i, y in enumerate(labels) if y == lab]], minlength=5)
        assert counts.max() - counts.min() <= 1
    m = stratified_holdout(labels, 0.2, seed=0)
    assert m.sum() == 2 + 1 + 1 and np.array_equal(m, stratified_holdout(labels, 0.2, seed=0))
    assert not stratified_holdout(["solo", "a", "a"], 0.5)[0]  # a single-row label is never held out
    with pytest.raises(ValidationError, match="strictly between 0 and 1"):
        stratified_holdout(labels, 1.5)
    with pytest.raises(ValidationError, match="n_folds"):
        stratified_folds(labels, 1)
