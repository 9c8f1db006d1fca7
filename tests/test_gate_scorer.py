"""The recall scorer: determinism, bad inputs, matched terms, caching, path independence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fresh import outputs

from synapse_nb.errors import ValidationError
from synapse_nb.gate import CorpusScorer, GateConfig, Match, idf, query_terms

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    "Run database migrations with alembic upgrade head before deploying",
    "Deployment goes through make release on the main branch",
    "The team prefers tabs over spaces",
    "Migration scripts live in db/versions",
    "",
]
DF = {"migrations": 2, "run": 3, "deploy": 1, "database": 1}


def test_query_terms_sorted_deduplicated_without_stop_words():
    assert query_terms("How do we RUN the migrations? Migrations, run!") == ["migrations", "run"]
    assert query_terms("the of and is") == []
    assert query_terms("project_status café") == ["cafe", "project", "status"]  # split like FTS5 unicode61


def test_idf_never_below_one():
    assert idf(0, 0) == 1.0
    assert idf(100, 10) == 1.0  # df clamped to n_docs
    assert idf(-5, 10) == idf(0, 10) > idf(5, 10) > 1.0


def test_exact_match_scores_one_and_lists_terms_by_weight_then_name():
    s = CorpusScorer()
    m = s.score("run the database migrations", DOCS, doc_freq=DF, n_docs=10)
    assert m[0].score == pytest.approx(1.0)
    # database (df 1) weighs more than migrations (df 2) than run (df 3); bigrams weigh half
    assert m[0].matched[:3] == ("database", "migrations", "run")
    assert set(m[0].matched[3:]) == {"database migrations", "run database"}
    assert m[2] == Match(0.0, ())
    assert m[4] == Match(0.0, ())  # empty document
    assert all(0.0 <= x.score <= 1.0 for x in m)


def test_char_channel_gives_partial_credit_for_morphology_only():
    s = CorpusScorer()
    docs = ["we finished the migration", "deployment of the api", "tabs and spaces", "migrating stations nations"]
    m = s.score("migrations", docs, doc_freq={}, n_docs=4)
    assert 0.0 < m[0].score < 1.0
    assert m[0].matched == ("migrations~",)
    assert m[2].score == 0.0
    assert m[0].score > m[3].score  # n-grams scattered over several words do not add up
    d = s.score("deploy", docs, doc_freq={}, n_docs=4)
    assert d[1].score > 0.0 and d[0].score == 0.0


def test_rarer_terms_weigh_more():
    s = CorpusScorer()
    docs = ["alembic config", "python config"]
    m = s.score("alembic python", docs, doc_freq={"alembic": 1, "python": 50}, n_docs=100)
    assert m[0].score > m[1].score > 0.0


@pytest.mark.parametrize(
    "query",
    ["", "   ", "?!.,;:", "the and of", "\x00\x01\x02\xff\ufffe", "\ud800 lone surrogate", "a" * 5000],
)
def test_degenerate_queries_give_zero_scores_without_error(query):
    m = CorpusScorer().score(query, DOCS, doc_freq={}, n_docs=5)
    assert len(m) == len(DOCS)
    assert all(x == Match(0.0, ()) for x in m)


def test_megabyte_query_and_junk_are_capped_and_handled():
    s = CorpusScorer(GateConfig(max_query_chars=100))
    junk = "\x00\x07\x1b\x7f\x9f" * 40 + " migrations " * 100_000
    assert len(junk) > 1_000_000
    m = s.score(junk, DOCS, doc_freq={}, n_docs=5)
    # only the first 100 characters (control characters) are analysed: the term past the cap is not
    assert [x.score for x in m] == [0.0] * len(DOCS)
    big = CorpusScorer().score(" migrations " * 100_000, DOCS, doc_freq={}, n_docs=5)
    assert big[0].matched == ("migrations",)
    m2 = s.score("ünïcode 日本語", ["Ünicode 日本語 text"], doc_freq={}, n_docs=1)
    assert m2[0].score == pytest.approx(1.0)


def test_bad_arguments_raise_validation_error():
    s = CorpusScorer()
    with pytest.raises(ValidationError, match="n_docs"):
        s.score("x", ["x"], doc_freq={}, n_docs=-1)
    with pytest.raises(ValidationError, match="sequence of str"):
        s.score("x", "x", doc_freq={}, n_docs=1)
    with pytest.raises(ValidationError, match="doc_keys"):
        s.score("x", ["x", "y"], doc_freq={}, n_docs=1, doc_keys=["a"])
    with pytest.raises(ValidationError, match="decode bytes"):
        s.score(b"x", ["x"], doc_freq={}, n_docs=1)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="must be an int"):
        s.score("alpha", ["alpha"], doc_freq={"alpha": "3"}, n_docs=1)  # type: ignore[dict-item]
    with pytest.raises(ValidationError, match="char_weight"):
        GateConfig(char_weight=2.0)
    with pytest.raises(ValidationError, match="word_ngram_range"):
        GateConfig(word_ngram_range=(2, 1))
    assert s.score("x", [], doc_freq={}, n_docs=0) == []


def test_score_is_independent_of_batch_order_and_cache():
    s = CorpusScorer()
    q = "deploy the database migrations"
    alone = [s.score(q, [d], doc_freq=DF, n_docs=10)[0] for d in DOCS]
    together = s.score(q, DOCS, doc_freq=DF, n_docs=10)
    reversed_ = s.score(q, DOCS[::-1], doc_freq=DF, n_docs=10)[::-1]
    keys = [f"k{i}" for i in range(len(DOCS))]
    cached = s.score(q, DOCS, doc_freq=DF, n_docs=10, doc_keys=keys)
    cached_again = s.score(q, DOCS, doc_freq=DF, n_docs=10, doc_keys=keys)
    assert alone == together == reversed_ == cached == cached_again


def test_cache_reanalyses_a_key_whose_text_changed():
    s = CorpusScorer(cache_size=2)
    assert s.score("alpha", ["alpha"], doc_freq={}, n_docs=1, doc_keys=["k"])[0].score == pytest.approx(1.0)
    assert s.score("alpha", ["beta"], doc_freq={}, n_docs=1, doc_keys=["k"])[0].score == 0.0
    for i in range(5):  # LRU eviction keeps working
        s.score("alpha", [f"alpha {i}"], doc_freq={}, n_docs=1, doc_keys=[f"k{i}"])
    assert len(s._docs) == 2


_SCRIPT = """
import json, sys
from synapse_nb.gate import CorpusScorer
docs = json.loads(sys.argv[1])
m = CorpusScorer().score("deploy database migrations zeta", docs, doc_freq={"database": 1}, n_docs=9)
print(json.dumps([[x.score, list(x.matched)] for x in m]))
"""


def test_same_scores_under_different_hash_seeds():
    outs = outputs(["-c", _SCRIPT, json.dumps(DOCS)], ["1", "4242"], env={"PYTHONPATH": str(ROOT)})
    assert outs[0] == outs[1]
    assert json.loads(outs[0])[0][0] > 0.0
