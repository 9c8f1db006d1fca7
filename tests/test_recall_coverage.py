"""The gate's coverage, read off the ranking's postings (synapse_nb/recall/coverage.py): what it counts, the
unknown share, actors' names, exact matches, and that it is the number the floor is compared with."""

from __future__ import annotations

import math

import pytest

import synapse_nb as syn
from synapse_nb.recall import Bars
from synapse_nb.recall.coverage import cover_terms, coverage, idf
from synapse_nb.recall.scoring import BEST_WEIGHT, SECOND_WEIGHT, UNKNOWN_PENALTY, support


@pytest.fixture()
def vault(tmp_path):
    v = syn.open_vault(tmp_path)
    yield v
    v.close()


def _weight(n: int, n_rows: int) -> float:
    return math.log((1 + n_rows) / (1 + n)) + 1.0


def test_coverage_is_the_idf_weighted_share_of_query_words_in_the_record_text(vault):
    vault.remember("knowledge", "a", "kayaking on the lake")
    vault.remember("knowledge", "b", "the lake froze")
    vault.remember("knowledge", "c", "black formats code")
    r = vault.recall("kayaking lake", bars=Bars(floor=0))
    rows = {row.id: row for row in r.explain()}
    n_rows = 3  # every record is one row of the ranking index
    w_kayak, w_lake = _weight(1, n_rows), _weight(2, n_rows)
    both = [row for row in rows.values() if set(row.matched) == {"kayaking", "lake"}]
    lake_only = [row for row in rows.values() if row.matched == ("lake",)]
    assert len(both) == 1 and len(lake_only) == 1
    assert both[0].coverage == 1.0
    assert lake_only[0].coverage == round(w_lake / (w_kayak + w_lake), 9)
    # matched words are listed by weight (the rarer first), and the support is what the floor is compared with
    assert both[0].matched == ("kayaking", "lake")
    assert r.coverage == support([1.0, lake_only[0].coverage], 0.0)
    assert r.coverage == round(BEST_WEIGHT * 1.0 + SECOND_WEIGHT * lake_only[0].coverage, 9)


def test_stemmed_words_match_and_a_word_counts_once_per_stem(vault):
    vault.remember("knowledge", "p", "Ann painted a sunrise")
    r = vault.recall("paint painting sunrise", bars=Bars(floor=0))
    row = next(x for x in r.explain() if x.coverage is not None)
    assert row.coverage == 1.0  # paint / painting / painted share one porter stem
    assert set(row.matched) == {"paint", "sunrise"}  # the first word of a stem stands for it


def test_words_the_vault_never_saw_cost_support_through_the_unknown_share(vault):
    vault.remember("knowledge", "lake_trip", "Ann went kayaking on the lake in June")
    vault.remember("knowledge", "lake_again", "the lake was cold in August")
    known = vault.recall("kayaking lake", bars=Bars(floor=0))
    stranger = vault.recall("zorblat kayaking lake", bars=Bars(floor=0))
    covs = sorted((x.coverage for x in stranger.explain() if x.coverage is not None), reverse=True)
    n_rows = 2
    w = {"zorblat": _weight(0, n_rows), "kayak": _weight(1, n_rows), "lake": _weight(2, n_rows)}
    share = round(w["zorblat"] / math.fsum(sorted(w.values())), 9)
    assert stranger.coverage == max(0.0, round(BEST_WEIGHT * covs[0] + SECOND_WEIGHT * covs[1]
                                               - UNKNOWN_PENALTY * share, 9))
    assert stranger.coverage < known.coverage
    assert f"unknown share of the query {share:.3f}" in vault.recall(
        "zorblat kayaking lake", bars=Bars(floor=1.0)).explain()[0].reason


def test_an_actor_named_in_the_query_is_known_and_held_by_their_records(vault):
    """A speaker's name is metadata, not text: "What did Bob catch?" must not count "bob" as never seen."""
    chat = [("Ann", "Did you catch any fish?"), ("Bob", "Two trout, we grilled them."),
            ("Ann", "I painted a sunrise."), ("Bob", "Nice colours.")]
    for actor, text in chat:
        vault.episodes.log("chat", outcome=text, thread="s1", actor=actor)
    r = vault.recall("What did Bob catch?")
    assert not r.nothing_new
    assert "Two trout" in r.text and "Did you catch any fish?" in r.text
    rows = [x for x in r.explain() if x.coverage is not None]
    bob_rows = [x for x in rows if "bob" in x.matched]
    assert len(bob_rows) == 2  # both of Bob's turns hold his name
    assert "unknown share of the query 0.000" in vault.recall("What did Bob catch?",
                                                             bars=Bars(floor=1.0)).explain()[0].reason
    # a name nobody in the vault has is unknown
    assert "unknown share of the query 0.000" not in vault.recall(
        "What did Zed catch?", bars=Bars(floor=1.0)).explain()[0].reason


def test_an_exact_match_passes_the_floor_on_its_own(vault):
    """A file the user is working on names the record: words the vault never saw do not outweigh it."""
    ckp = vault.checkpoint("Refactoring JWT auth middleware", files=["src/auth.py"])
    vault.remember("knowledge", "k", "unrelated fact about pandas")
    r = vault.recall("what touched this file", files=["src/auth.py"])
    assert [i.id for i in r.items] == [ckp.id]
    assert r.coverage == Bars().file_bonus  # every query word is unknown: the file match alone carries it
    assert vault.recall("what touched this file").nothing_new  # without the file, nothing new


def test_the_default_floor_separates_on_topic_from_off_topic(vault):
    vault.remember("procedure", "run_migrations", "Run alembic upgrade head inside the api container")
    vault.remember("preference", "code_style", "Use black with line length 100 and ruff for linting")
    assert not vault.recall("how do we run the alembic migrations?").nothing_new
    assert vault.recall("what is the weather in Paris tomorrow").nothing_new


def test_cover_and_coverage_directly():
    import numpy as np

    from synapse_nb.recall.bm25 import Term

    terms = {
        "lake": Term("lake", np.array([0, 2, 5]), np.array([1, 0, 2]), np.array([0, 1, 0]), 3, {}),
        "lakes": Term("lake", np.array([0, 2, 5]), np.array([1, 0, 2]), np.array([0, 1, 0]), 3, {}),
        "zorb": Term("zorb", np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), 0, {}),
        "x-y": Term(None, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), 0, {}),
    }
    cover = cover_terms(["lakes", "lake", "zorb", "x-y"], terms, 10)
    assert cover.words == ("lakes", "zorb")  # one per stem, the first; a phrase (no stem) does not count
    assert cover.weights == (idf(3, 10), idf(0, 10)) and cover.unknown == (False, True)
    assert cover.unknown_share == round(idf(0, 10) / math.fsum([idf(3, 10), idf(0, 10)]), 9)
    covs, matched = coverage(cover, np.array([2, 0, 5, 7]))
    share = round(idf(3, 10) / math.fsum([idf(3, 10), idf(0, 10)]), 9)
    # position 2 holds "lake" only in its context column: the record's own text does not
    assert covs == [0.0, share, share, 0.0]
    assert matched == [(), ("lakes",), ("lakes",), ()]
    assert coverage(cover_terms([], terms, 10), np.array([1, 2])) == ([0.0, 0.0], [(), ()])
