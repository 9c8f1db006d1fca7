"""Recall on chat (issue 33): chat forms and slips of query words, units of one speaker's messages in the gate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fresh import outputs

from synapse_nb import open_vault
from synapse_nb.recall import Bars
from synapse_nb.recall.bm25 import Term
from synapse_nb.recall.chatwords import CHAT_FORMS, accept_typo, chat_forms, spelling_variants
from synapse_nb.recall.expand import merge_terms
from synapse_nb.recall.rank import RankParams
from synapse_nb.recall.threads import UNIT_MAX, ThreadIndex
from synapse_nb.store.records import RankRow

OPEN = Bars(floor=0, margin=0, top_k=50, budget_tokens=10**9)


def test_chat_forms_both_ways_one_token_each() -> None:
    assert "tmrw" in chat_forms("tomorrow") and "bday" in chat_forms("birthday")
    assert chat_forms("bday") == ("birthday",) and "tomorrow" in chat_forms("tmrw")
    assert chat_forms("lake") == ()
    for word, forms in CHAT_FORMS.items():
        assert word == word.lower() and all(f == f.lower() for f in forms)
        assert all(f.isalnum() for f in chat_forms(word))


def test_spelling_variants_are_slips_that_seldom_spell_another_word() -> None:
    v = spelling_variants("birthday")
    assert {"birtdhay", "ibrthday", "birthdday", "birthdayyy"} <= set(v)
    assert len(v) == len(set(v)) and "birthday" not in v
    assert "tomorow" in spelling_variants("tomorrow")
    # dropped and replaced letters are not slips here: in clean text they spell other words
    assert "move" not in spelling_variants("movie") and "paying" not in spelling_variants("playing")
    assert "dream" not in spelling_variants("cream")
    # short words: only lengthened forms; non-letters: none
    assert set(spelling_variants("love")) >= {"loveee", "looove"} and "lvoe" not in spelling_variants("love")
    assert spelling_variants("no") == [] and spelling_variants("v1.5") == [] and spelling_variants("café") == []
    assert spelling_variants("birthday") == spelling_variants("birthday")  # a fixed order


def test_accept_typo() -> None:
    assert accept_typo(1, 3) and accept_typo(2, 0) and accept_typo(3, 9)
    assert not accept_typo(0, 5)  # not in the vault
    assert not accept_typo(4, 100)  # too common to be a slip
    assert not accept_typo(2, 5)  # the word is not common enough beside it


def test_merge_terms_adds_counts_and_documents() -> None:
    a = Term("birthdai", np.array([1, 5]), np.array([1, 1]), np.array([0, 2]), 2, {})
    b = Term("bdai", np.array([5, 9]), np.array([2, 1]), np.array([0, 0]), 2, {})
    m = merge_terms(a, [b], n_rows=3)
    assert m.stem == "birthdai" and m.pos.tolist() == [1, 5, 9]
    assert m.tf_body.tolist() == [1, 3, 1] and m.tf_context.tolist() == [0, 2, 0] and m.n == 3


def _chat_vault(tmp_path: Path, lines: list[tuple[str, str]], name: str = "v"):
    (tmp_path / name).mkdir()
    v = open_vault(tmp_path / name / ".synapse")
    for i, (actor, text) in enumerate(lines):
        v.episodes.log(f"msg {i}", outcome=text, thread="chat", actor=actor)
    return v


def test_a_chat_form_and_a_slip_find_the_message(tmp_path: Path) -> None:
    filler = [("Ann", f"talked about the weather and the bus number {i}") for i in range(12)]
    v = _chat_vault(tmp_path, [*filler, ("Bob", "omg its my bday tmrw"), ("Ann", "the birthday cake recipe"),
                               ("Bob", "we went to the aquariumm with the kids")])
    try:
        got = v.recall("When is Bob's birthday?", bars=OPEN)
        top = [i.line for i in got.items[:2]]
        assert any("bday" in t for t in top)
        hit = v.recall("Where did Bob take the kids, the aquarium?", bars=OPEN)
        assert "aquariumm" in hit.items[0].line
    finally:
        v.close()


def test_chat_words_can_be_turned_off_and_change_nothing_without_variants(tmp_path: Path) -> None:
    from synapse_nb.kinds.lessons import Lessons
    from synapse_nb.recall.engine import Recaller

    v = _chat_vault(tmp_path, [("Ann", "the lake was cold"), ("Bob", "my bday is tmrw"), ("Ann", "nice")])
    try:
        ctx = v._ctx
        on = Recaller(ctx, lambda: v.index, RankParams(), lessons=lambda c, b: Lessons(c).in_force(b))
        off = Recaller(ctx, lambda: v.index, RankParams(chat_words=False),
                       lessons=lambda c, b: Lessons(c).in_force(b))
        plain = [(i.id, i.line, i.score) for i in on.recall("cold lake", bars=OPEN).items]
        assert plain == [(i.id, i.line, i.score) for i in off.recall("cold lake", bars=OPEN).items]
        assert any("bday" in i.line for i in on.recall("birthday", bars=OPEN).items)
        assert not any("bday" in i.line for i in off.recall("birthday", bars=OPEN).items)
    finally:
        v.close()


def _rows(actors: list[str | None], thread: str | None = "t") -> list[RankRow]:
    return [RankRow("episode", f"e{i:02d}", thread, i, a, False, 5, i + 1) for i, a in enumerate(actors)]


def test_units_are_runs_of_one_actor_cut_at_unit_max() -> None:
    idx = ThreadIndex(_rows(["ann", "ann", "bob", "ann", "ann", "ann", None, None]))
    assert idx.head.tolist() == [0, 0, 2, 3, 3, 3, 6, 7]
    assert idx.tail.tolist() == [1, 1, 2, 5, 5, 5, 6, 7]
    members, owner = idx.unit_members(np.array([3, 0, 7]))
    assert sorted(zip(owner.tolist(), members.tolist(), strict=True)) == [(0, 3), (0, 4), (0, 5), (1, 0), (1, 1),
                                                                           (2, 7)]
    long = ThreadIndex(_rows(["ann"] * (UNIT_MAX * 2 + 1)))
    assert long.head.tolist() == [0] * UNIT_MAX + [UNIT_MAX] * UNIT_MAX + [2 * UNIT_MAX]
    alone = ThreadIndex(_rows(["ann", "ann"], thread=None))  # outside a thread: each its own unit
    assert alone.head.tolist() == [0, 1] and alone.tail.tolist() == [0, 1]


def test_units_survive_patch_and_the_file(tmp_path: Path) -> None:
    from synapse_nb.recall import rankfile
    from synapse_nb.store.records import RankState

    rows = _rows(["ann", "ann", "bob", "bob", "ann"])
    idx = ThreadIndex(rows)
    new = RankRow("episode", "e02", "t", 2, "ann", False, 5, 3)  # bob's first message now ann's
    patched = idx.patch({"e02"}, [new])
    fresh = ThreadIndex([*rows[:2], new, *rows[3:]])
    assert patched.head.tolist() == fresh.head.tolist() == [0, 0, 0, 3, 4]
    assert patched.tail.tolist() == fresh.tail.tolist()
    path = tmp_path / "rank.bin"
    assert rankfile.save(path, RankState("uid", 3, "e04", 1), "default", idx)
    got = rankfile.load(path, "uid", "default")
    assert got is not None
    assert got.threads.head.tolist() == idx.head.tolist() and got.threads.tail.tolist() == idx.tail.tolist()


def test_the_gate_reads_a_unit_as_one_message(tmp_path: Path) -> None:
    """A question whose words are spread over one person's consecutive messages passes the gate; the same words
    spread over two people's messages do not count as one record's."""
    base = [("Ann", f"the weather report for day {i} was rainy") for i in range(10)]
    split = [*base, ("Bob", "guess what"), ("Bob", "i got the job"), ("Bob", "at the bakery downtown")]
    mixed = [*base, ("Bob", "guess what"), ("Ann", "i got the job"), ("Bob", "at the bakery downtown")]
    v1, v2 = _chat_vault(tmp_path, split, "a"), _chat_vault(tmp_path, mixed, "b")
    try:
        q = "which job at the bakery"
        c1, c2 = v1.recall(q).coverage, v2.recall(q).coverage
        assert c1 > c2
        assert not v1.recall(q).nothing_new
    finally:
        v1.close()
        v2.close()


@pytest.mark.parametrize("seed", ["0", "7"])
def test_recall_with_chat_words_is_the_same_bytes_whatever_the_hash_seed(tmp_path: Path, seed: str) -> None:
    script = (
        "import datetime, json, sys\n"
        "from pathlib import Path\n"
        "from synapse_nb import open_vault\n"
        "from synapse_nb.recall import Bars\n"
        "Path(sys.argv[1]).mkdir()\n"
        # a fixed clock: the lines show each episode's time (two processes either side of a minute differed)
        "when = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)\n"
        "v = open_vault(Path(sys.argv[1]) / '.synapse', clock=lambda: when)\n"
        "for i, (a, t) in enumerate([('Ann', 'my bday is tmrw'), ('Bob', 'the birthdya party'), ('Ann', 'sooo fun'),"
        " ('Bob', 'the birthday cake'), ('Ann', 'see u tomorow')]):\n"
        "    v.episodes.log(f'm{i}', outcome=t, thread='c', actor=a)\n"
        "r = v.recall('birthday party tomorrow so fun', bars=Bars(floor=0, margin=0, top_k=50, budget_tokens=10**9))\n"
        "print(json.dumps([[i.line for i in r.items], [[x.score, x.coverage] for x in r.explain()], r.coverage]))\n"
        "v.close()\n")
    outs = outputs(lambda hs: ["-c", script, str(tmp_path / f"h{hs}")], [seed, "123"])
    assert all("bday" in out and "birthdya" in out for out in outs)
    assert len(set(outs)) == 1


def test_the_later_messages_of_an_answer_follow_the_question_as_its_first_does() -> None:
    """Ann asks; Bob answers in three messages. Each of them gets the flow a one-message answer gets from the question
    (prev x question_mult x its score); with ``unit_flow`` off only the first does (the third nothing)."""
    from synapse_nb.recall.rank import structure

    rows = _rows(["ann", "bob", "bob", "bob", "ann"])
    rows[0] = RankRow("episode", "e00", "t", 0, "ann", True, 5, 1)  # a question
    idx = ThreadIndex(rows)
    pos, bm25 = np.array([0], np.int64), np.array([2.0])
    p = RankParams(unit_flow=True)
    assert not RankParams().unit_flow  # off by default (docs/recall.md: chosen on chat-style 0-6, lost on 7-9)
    r_on, r_off = structure(idx, pos, bm25, [], p), structure(idx, pos, bm25, [], RankParams(unit_flow=False))
    got_on = dict(zip(r_on.pos.tolist(), r_on.score.tolist(), strict=True))
    got_off = dict(zip(r_off.pos.tolist(), r_off.score.tolist(), strict=True))
    flow = p.prev * p.question_mult * 1.0  # the question's normalised score is 1
    assert got_on[1] == got_off[1] == pytest.approx(flow + p.thread)  # the head: as before
    assert got_on[2] == pytest.approx(got_off[2] + flow)
    assert 3 not in got_off and got_on[3] == pytest.approx(flow + p.thread)
    assert 4 not in got_on and 4 not in got_off  # three steps from the question, in a unit of its own
    i3 = r_on.pos.tolist().index(3)
    assert r_on.parts["neighbours"][i3] == pytest.approx(flow)


def test_unit_flow_changes_nothing_when_every_unit_is_one_message() -> None:
    from synapse_nb.recall.rank import structure

    rows = _rows(["ann", "bob", "ann", "bob", "ann", "bob"])
    rows[2] = RankRow("episode", "e02", "t", 2, "ann", True, 5, 3)
    idx = ThreadIndex(rows)
    pos, bm25 = np.array([2, 5, 0], np.int64), np.array([3.0, 1.0, 0.5])
    a = structure(idx, pos, bm25, [], RankParams(unit_flow=True))
    b = structure(idx, pos, bm25, [], RankParams(unit_flow=False))
    assert a.pos.tolist() == b.pos.tolist() and a.score.tolist() == b.score.tolist()


def test_an_answer_split_over_messages_is_found_after_the_question(tmp_path: Path) -> None:
    filler = [x for i in range(6) for x in (("Ann", f"the weather report for day {i} was rainy"),
                                            ("Bob", f"bus number {i} was late"))]
    v = _chat_vault(tmp_path, [*filler, ("Ann", "where did u go on saturday"), ("Bob", "omg we drove out early"),
                               ("Bob", "all the way to the old lighthouse"), ("Ann", "wow"),
                               *[("Ann", f"the saturday market {i} sold bread") for i in range(4)]])
    try:
        from synapse_nb.kinds.lessons import Lessons
        from synapse_nb.recall.engine import Recaller

        def rank(params: RankParams) -> int:
            r = Recaller(v._ctx, lambda: v.index, params, lessons=lambda c, b: Lessons(c).in_force(b))
            lines = [i.line for i in r.recall("Where did Bob go on Saturday?", bars=OPEN).items]
            return next(k for k, line in enumerate(lines) if "lighthouse" in line)

        assert rank(RankParams(unit_flow=True)) < 3 <= rank(RankParams(unit_flow=False))
    finally:
        v.close()


def test_a_back_channel_message_is_not_ranked(tmp_path: Path) -> None:
    """"haha" after the message that holds the words has them in its context column: it is still not ranked."""
    said = [("Ann", "we adopted a puppy from the shelter"), ("Bob", "hahaha"), ("Bob", "omg nice"),
            ("Bob", "what breed is the puppy"), ("Ann", "a beagle")]
    v = _chat_vault(tmp_path, [(a, f"{a}: {t}") for a, t in said])  # as a chat is logged: "Name: message"
    try:
        lines = [i.line for i in v.recall("Which puppy did Ann adopt from the shelter?", bars=OPEN).items]
        assert any("adopted a puppy" in line for line in lines) and any("beagle" in line for line in lines)
        assert not any(line.rstrip().endswith(("hahaha", "omg nice")) for line in lines), lines
    finally:
        v.close()
