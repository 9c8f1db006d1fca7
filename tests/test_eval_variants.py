"""Gate variants: feature-restricted routers, index-backed routers, the table, and the seeded subsample."""

from __future__ import annotations

import os

import pytest

from synapse_nb.errors import ValidationError
from synapse_nb.eval.data import LabelledData, load_dataset
from synapse_nb.eval.variants import VARIANTS, FeatureRouter, IndexRouter, gate_variants, make_variant, subsample

TEXTS = ["book a flight to paris", "fly me to rome", "cheap flights to berlin",
         "what's the weather", "will it rain today", "is it sunny tomorrow",
         "tell me a joke", "sing a song"]
LABELS = ["travel", "travel", "travel", "weather", "weather", "weather", None, None]


@pytest.fixture(scope="module")
def small_clinc() -> LabelledData:
    """Five CLINC150 routes plus out-of-scope rows, every split (about 600 rows)."""
    data = load_dataset("clinc150")
    routes = set(sorted(data.routes)[:5])
    keep = [i for i, y in enumerate(data.labels) if y in routes or (y is None and i % 10 == 0)]
    assert data.row_splits is not None
    return LabelledData(texts=tuple(data.texts[i] for i in keep), labels=tuple(data.labels[i] for i in keep),
                        row_splits=tuple(data.row_splits[i] for i in keep), source=data.source, name="clinc150-5")


def test_variant_names_and_factory() -> None:
    assert len(VARIANTS) == 12 and VARIANTS[-3:] == ("bm25", "vector", "hybrid")
    r = make_variant("word-centroid")
    assert isinstance(r, FeatureRouter) and r.features == "word" and r.method == "centroid"
    with pytest.raises(ValidationError, match="unknown variant"):
        make_variant("word-svm")
    with pytest.raises(ValidationError):
        FeatureRouter("bytes")
    with pytest.raises(ValidationError):
        IndexRouter("dense")


def test_feature_routers_use_only_their_block() -> None:
    word = FeatureRouter("word", method="knn").fit(TEXTS, LABELS)
    char = FeatureRouter("char", method="knn").fit(TEXTS, LABELS)
    assert word._feat.blocks == ("word",) and word._feat.n_features == len(word._feat.word_vocab)
    assert char._feat.blocks == ("char",) and char._feat.n_features == len(char._feat.char_vocab)
    assert not char._feat.word_vocab and not word._feat.char_vocab
    # "flighs" (a typo) shares no word with the examples, but most of its character n-grams
    assert word.decision_scores(["flighs"]).max() == 0.0
    assert char.predict(["flighs"]) == ["travel"]


def test_index_router_routes_by_bm25_and_cleans_up() -> None:
    r = IndexRouter("bm25").fit(TEXTS, LABELS)
    folder = r._dir
    assert folder is not None and os.path.isdir(folder)
    assert r.routes_ == ["travel", "weather"]
    assert r.predict(["a flight to rome", "rain tomorrow"]) == ["travel", "weather"]
    assert r.decision_scores(["nothing matches zzz"]).tolist() == [[0.0, 0.0]]
    r.close()
    assert not os.path.exists(folder)


def test_subsample_is_stratified_seeded_and_keeps_other_splits() -> None:
    data = load_dataset("agent_vault")
    sub = subsample(data, "test", 40, seed=0)
    assert sub.split("train") == data.split("train") and sub.split("val") == data.split("val")
    texts, labels = sub.split("test")
    assert 20 <= len(texts) <= 60 and set(labels) == set(data.split("test")[1])  # every label keeps a row
    assert subsample(data, "test", 40, seed=0).split("test") == (texts, labels)
    assert subsample(data, "test", 10_000) is data
    with pytest.raises(ValidationError):
        subsample(data, "dev", 10)


def test_gate_variants_table_on_a_small_clinc_subset(small_clinc: LabelledData) -> None:
    names = ["word-linear", "char-centroid", "both-knn", "bm25"]
    table = gate_variants(small_clinc, variants=names, n_boot=50)
    assert table["variant"].to_list() == names
    assert table["n_test"].unique().to_list() == [small_clinc.split("test")[0].__len__()]
    for row in table.iter_rows(named=True):
        assert row["criterion"] == "balanced"
        for key in ("accuracy", "in_scope_accuracy", "oos_recall"):
            assert 0.0 <= row[f"{key}_lo"] <= row[key] <= row[f"{key}_hi"] <= 1.0
    assert table.filter(table["variant"] == "word-linear")["in_scope_accuracy"][0] > 0.8
    again = gate_variants(small_clinc, variants=names, n_boot=50)
    assert again.drop("queries_per_second").equals(table.drop("queries_per_second"))
    with pytest.raises(ValidationError, match="unknown variant"):
        gate_variants(small_clinc, variants=["nope"])
