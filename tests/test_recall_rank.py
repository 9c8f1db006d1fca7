"""The structure step of recall engine v2 (synapse_nb/recall/rank.py), on hand-made BM25 hits."""

from __future__ import annotations

import re

import numpy as np
import pytest

import synapse_nb as syn
from synapse_nb.recall import Bars
from synapse_nb.recall.rank import (
    RANK_STOP_WORDS,
    RankParams,
    asks_several,
    fts_words,
    rank_words,
    structure,
    without_actor,
)
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.store.records import RankRow

ROWS = [RankRow("episode", "e1", "s1", 0, "Ann", True),    # Ann: where did you go camping?
        RankRow("episode", "e2", "s1", 1, "Bob", False),   # Bob: up in the mountains
        RankRow("episode", "e3", "s1", 2, "Ann", False),
        RankRow("episode", "e4", "s2", 0, "Bob", False),
        RankRow("memory", "m1", None, None, None, False)]


def _ranked(hits: dict[str, float], words: list[str], params: RankParams | None = None, bonus=None):
    idx = ThreadIndex(ROWS)
    pos = np.array([idx.pos[i] for i in hits], np.int64)
    r = structure(idx, pos, np.array(list(hits.values()), np.float64), words, params or RankParams(), bonus)
    return idx, r, {idx.ids[p]: float(s) for p, s in zip(r.pos.tolist(), r.score.tolist(), strict=True)}


def test_the_answer_after_a_question_rises_with_it() -> None:
    idx, r, score = _ranked({"e1": 10.0, "e4": 6.0}, ["camping"])
    # e2 matched nothing, but it follows the question e1: 0.15 x 6 x 1.0 + thread 0.3
    assert score["e2"] == pytest.approx(0.15 * 6 + 0.3)
    # the question itself (1 + thread 0.3) x question_self 0.75: its answer ranks first
    assert score["e1"] == pytest.approx((1 + 0.3) * 0.75)
    assert list(score)[:2] == ["e2", "e1"] and score["e1"] > score["e4"]
    assert "m1" not in score  # not a hit, no neighbour: not ranked
    parts = dict(zip([idx.ids[p] for p in r.pos.tolist()], r.parts["neighbours"].tolist(), strict=True))
    assert parts["e2"] == pytest.approx(0.9)
    question = dict(zip([idx.ids[p] for p in r.pos.tolist()], r.parts["question"].tolist(), strict=True))
    assert question == {"e1": 0.75, "e2": 1.0, "e3": 1.0, "e4": 1.0}
    flat = RankParams(question_mult=1.0, question_self=1.0)
    _, _, plain = _ranked({"e1": 10.0, "e4": 6.0}, ["camping"], flat)
    assert plain["e2"] == pytest.approx(0.15 + 0.3) and plain["e1"] == pytest.approx(1.3)
    assert next(iter(plain)) == "e1"


def test_actor_named_in_the_query_is_boosted_and_bonuses_add() -> None:
    _, _, plain = _ranked({"e2": 5.0, "e3": 5.0}, ["mountains"])
    _, _, named = _ranked({"e2": 5.0, "e3": 5.0}, ["bob", "mountains"])
    assert named["e2"] == pytest.approx(plain["e2"] * 1.3) and named["e3"] == plain["e3"]
    _, _, with_bonus = _ranked({"e2": 5.0}, ["mountains"], bonus={ThreadIndex(ROWS).pos["m1"]: 0.35})
    assert with_bonus["m1"] == pytest.approx(0.35)  # an exact match alone joins the ranking with BM25 0


def test_with_the_semantic_channel_a_named_speakers_records_lead_the_tail_but_never_the_head() -> None:
    """RankParams.tail_keep / tail_actor: below the first ``tail_keep`` records, the turns of the speaker the
    question names are x ``tail_actor`` (capped at the last kept score); the head keeps its order and scores, the
    scores stay non-increasing, and with the channel off (or no speaker named) nothing moves."""
    rows = [RankRow("episode", f"r{i:02d}", None, None, "Bob" if i % 2 else "Ann", False) for i in range(12)]
    idx = ThreadIndex(rows)
    pos = np.arange(12, dtype=np.int64)
    bm25 = np.arange(12, 0, -1, dtype=np.float64)  # r00 best ... r11 worst

    def run(words: list[str], **kw: float) -> tuple[list[str], list[float], list[float]]:
        r = structure(idx, pos, bm25, words, RankParams(**{"actor_mult": 1.0, "tail_keep": 3, "tail_actor": 2.0, **kw}))
        return [idx.ids[j] for j in r.pos.tolist()], r.score.tolist(), r.parts["actor"].tolist()

    plain_ids, plain_scores, _ = run(["bob", "x"], semantic=0.0)
    assert plain_ids == [f"r{i:02d}" for i in range(12)]  # channel off: BM25's order
    ids, scores, actor = run(["bob", "x"], semantic=0.4)
    assert ids[:3] == plain_ids[:3] and scores[:3] == plain_scores[:3]  # the head is untouched
    bob = {i for i in plain_ids if int(i[1:]) % 2}
    boosted = {i: plain_scores[plain_ids.index(i)] * (2.0 if i in bob else 1.0) for i in plain_ids[3:]}
    assert ids[3:] == sorted(boosted, key=lambda i: (-boosted[i], i))  # r03, r05 (Bob) before r04 (Ann), ...
    assert ids[3:6] == ["r03", "r05", "r04"]
    assert scores == sorted(scores, reverse=True) and max(scores[3:]) <= scores[2]  # never above the head
    assert [a for i, a in zip(ids, actor, strict=True) if i in bob] == [1.0, 2.0, 2.0, 2.0, 2.0, 2.0]  # r01 in the head
    assert run(["x"], semantic=0.4)[0] == plain_ids  # nobody named: nothing moves
    assert run(["bob", "x"], semantic=0.4, tail_actor=1.0)[0] == plain_ids


def test_ties_fall_by_id_and_scores_are_rounded() -> None:
    _, _, score = _ranked({"e4": 3.0, "m1": 3.0}, ["x"])
    assert list(score) == ["e4", "m1"]
    assert all(round(s, 9) == s for s in score.values())
    assert len(structure(ThreadIndex([]), np.zeros(0, np.int64), np.zeros(0), [])) == 0


def test_query_words_and_the_speed_knob() -> None:
    assert rank_words("When did Priya's jobs go to the QUEUE? jobs!") == ["priya", "jobs", "go", "queue"]
    assert len(RANK_STOP_WORDS) == 74 and "about" not in RANK_STOP_WORDS and "first" not in RANK_STOP_WORDS
    assert fts_words(["ann", "lake"], {"ann": 900, "lake": 3}, 2000, 0.2) == ["lake"]
    assert fts_words(["ann"], {"ann": 900}, 2000, 0.2) == ["ann"]  # never empty: the rarest stays
    assert fts_words(["ann", "lake"], {"ann": 90}, 100, 0.2) == ["ann", "lake"]  # small vault: every word


def test_threads_through_the_vault(tmp_path) -> None:
    v = syn.open_vault(tmp_path)
    for actor, text in [("Ann", "Where did you go camping last month?"), ("Bob", "Up in the mountains."),
                        ("Ann", "Nice!"), ("Bob", "Then we drove home.")]:
        v.episodes.log("chat", outcome=text, thread="s1", actor=actor)
    v.remember("knowledge", "camping_gear", "the camping gear is in the garage")
    r = v.recall("where did Bob go camping?", bars=Bars(floor=0, margin=0, top_k=10))
    lines = [i.line for i in r.items]
    up = next(i for i, ln in enumerate(lines) if "mountains" in ln)
    home = next(i for i, ln in enumerate(lines) if "drove home" in ln)
    assert up < home  # the answer right after the question, above a later turn by the same speaker
    row = next(x for x in r.explain() if "mountains" in next(i.line for i in r.items if i.id == x.id))
    assert dict(row.parts)["neighbours"] > 0 and dict(row.parts)["actor"] == 1.3


def test_with_the_semantic_channel_a_second_list_reorders_the_tail_but_never_the_head() -> None:
    """RankParams.hop_keep / hop_weight: below the first ``hop_keep`` records, a record is x (1 + ``hop_weight`` x
    its score in the second dense list), ordered so and capped at the last kept score; the head keeps its order and
    scores; with the channel off, no list or ``hop_weight`` 0, nothing moves."""
    rows = [RankRow("episode", f"r{i:02d}", None, None, "Ann", False) for i in range(10)]
    idx = ThreadIndex(rows)
    pos = np.arange(10, dtype=np.int64)
    bm25 = np.arange(10, 0, -1, dtype=np.float64)  # r00 best ... r09 worst
    hop = (np.array([2, 8, 9], np.int64), np.array([0.0, 0.5, 1.0]))  # r09 first in the second list

    def run(h: tuple[np.ndarray, np.ndarray] | None, **kw: float) -> tuple[list[str], list[float]]:
        r = structure(idx, pos, bm25, ["x"], RankParams(**{"hop_keep": 3, "hop_weight": 3.0, **kw}), hop=h)
        return [idx.ids[j] for j in r.pos.tolist()], r.score.tolist()

    plain_ids, plain_scores = run(None, semantic=0.4)
    assert plain_ids == [f"r{i:02d}" for i in range(10)]
    ids, scores = run(hop, semantic=0.4)
    assert ids[:3] == plain_ids[:3] and scores[:3] == plain_scores[:3]  # the head is untouched
    boosted = {i: plain_scores[plain_ids.index(i)] * {"r08": 2.5, "r09": 4.0}.get(i, 1.0) for i in plain_ids[3:]}
    assert ids[3:] == sorted(boosted, key=lambda i: (-boosted[i], i))
    assert ids[3:] == ["r03", "r04", "r05", "r06", "r08", "r07", "r09"]  # r08 x 2.5 passes r07
    assert scores == sorted(scores, reverse=True) and max(scores[3:]) <= scores[2]  # never above the head
    assert run(hop, semantic=0.0)[0] == plain_ids  # channel off: nothing moves
    assert run(hop, semantic=0.4, hop_weight=0.0)[0] == plain_ids


def test_a_question_asking_for_several_facts_and_its_name_removed() -> None:
    assert asks_several("Which cities has John been to?") and asks_several("How many games has John won?")
    assert asks_several("Which city have both Jean and John visited?")
    assert not asks_several("When did Priya move the billing service to Postgres?")
    assert without_actor("What books has Tim read? Tim’s list", "Tim") == "What books has read? list"


def test_the_several_facts_test_reads_a_query_in_linear_time() -> None:
    """``has`` then ``.*`` then a participle backtracked: "has " * 2,000 took 0.6 s, and a query may hold a million
    characters (an agent's prompt, through the hooks' recall). The test reads it in two linear searches, and says
    what the one pattern said on a seeded corpus of its own words."""
    import random

    from tests.conftest import cpu_seconds

    # the one pattern the test was first written as
    ASKS_SEVERAL = re.compile(r"\b(has|have)\b.*\b\w+(ed|en|ne|ad|een)\b|\bhow many\b|\bboth\b", re.I)

    rng = random.Random(0)
    words = "what has have books read been gone done both how many tim the to seen ran it when did".split()
    for _ in range(5_000):
        q = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        assert asks_several(q) == bool(ASKS_SEVERAL.search(q)), q
    short, long = "has " * 1_000, "has " * 8_000
    ratio = cpu_seconds(asks_several, long) / max(cpu_seconds(asks_several, short), 1e-5)
    assert ratio < 24, f"{ratio:.1f}x the work for 8x the text"
