"""Recall on chat (issue 33, round 2): questions without a question mark, back-channel turns out of the links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fresh import outputs

from synapse_nb import open_vault
from synapse_nb.recall import Bars, rankfile
from synapse_nb.recall.asks import asks, back_channel
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.store.records import RankRow, RankState
from tests.conftest import cpu_seconds

OPEN = Bars(floor=0, margin=0, top_k=50, budget_tokens=10**9)


@pytest.mark.parametrize("text", [
    "did u see the game", "wat r u up 2 this wkend", "Ann: where did you get it", "omg, how did it go",
    "[2:09 pm on 8 May, 2023] Mel: are you coming tmrw", "drawing is fun. wut about u, mel", "is it raining?",
    "c-7 D5:1.1 [2 pm] Al: whats ur plan D5:1.1", "hey what kinda jobs r u thinking of",
])
def test_asks(text: str) -> None:
    assert asks(text)


@pytest.mark.parametrize("text", [
    "", None, "what a day", "How cool is that!", "I know what you did", "Ann: what a lovely picture.",
    "the game was great", "we did it", "Where we went was lovely.", "so that is what happened.",
])
def test_does_not_ask(text: str | None) -> None:
    assert not asks(text)


@pytest.mark.parametrize(("text", "brief"), [
    ("haha", True), ("hahahaha", True), ("Ann: yesss 😂", True), ("[2:30 pm] Mel: oh nice", True),
    ("lmao same", True), ("c1 D1:3.r Al: ok D1:3.r", True), ("ty!!", True),
    ("Yes, last Saturday!", False), ("really?", False), ("nice, the lake was cold", False), ("", False),
    ("at 5pm", False), ("Mel: ty, melanie!", False),
])
def test_back_channel(text: str, brief: bool) -> None:
    assert back_channel(text) is brief


def _rows(texts: list[str], actors: list[str]) -> list[RankRow]:
    return [RankRow("episode", f"e{i:02d}", "t", i, a, "?" in t, 5, i + 1, None, None if "?" in t else t, i % 3 == 1)
            for i, (t, a) in enumerate(zip(texts, actors, strict=True))]


def test_back_channel_turns_are_no_link_and_questions_need_no_mark() -> None:
    texts = ["Ann: where did u go", "Bob: haha", "Bob: the lake by the mill", "Ann: lol", "Ann: nice", "Ann: cool pic"]
    idx = ThreadIndex(_rows(texts, ["Ann", "Bob", "Bob", "Ann", "Ann", "Ann"]))
    assert idx.question.tolist() == [True, False, False, False, False, False]
    assert idx.brief.tolist() == [False, True, False, True, True, False]
    # the answer follows its question across the "haha"; the last message follows the answer across two back-channels
    assert idx.prev1.tolist() == [-1, -1, 0, -1, -1, 2]
    assert idx.next1.tolist() == [2, -1, 5, -1, -1, -1]
    assert idx.prev2.tolist() == [-1, -1, -1, -1, -1, 0]
    # a back-channel message is a unit of its own and joins none (it holds no word the gate could count)
    assert idx.head.tolist() == [0, 1, 2, 3, 4, 5] and idx.tail.tolist() == [0, 1, 2, 3, 4, 5]
    # ... nor cuts one: Ann's two messages around Bob's "haha" are one unit
    run = ThreadIndex(_rows(["Ann: i went to the lake", "Bob: haha", "Ann: with my sister"], ["Ann", "Bob", "Ann"]))
    assert run.head.tolist() == [0, 1, 0] and run.tail.tolist() == [2, 1, 2]


def test_flags_survive_patch_and_the_file(tmp_path: Path) -> None:
    texts = ["Ann: what time r we meeting", "Bob: haha", "Bob: at noon by the mill", "Ann: ok"]
    rows = _rows(texts, ["Ann", "Bob", "Bob", "Ann"])
    idx = ThreadIndex(rows[:2]).patch([], rows[2:])
    fresh = ThreadIndex(rows)
    for name in ("question", "brief", "prev1", "prev2", "next1", "next2", "head", "tail", "agent"):
        assert getattr(idx, name).tolist() == getattr(fresh, name).tolist(), name
    assert fresh.agent.tolist() == [False, True, False, False]
    f = tmp_path / "rank.bin"
    assert rankfile.save(f, RankState("uid", 3, "e03", 1), "default", fresh)
    got = rankfile.load(f, "uid", "default")
    assert got is not None
    for name in ("question", "brief", "prev1", "next1", "prev2", "next2", "agent"):
        assert getattr(got.threads, name).tolist() == getattr(fresh, name).tolist(), name


def _vault(folder: Path, lines: list[tuple[str, str]]):
    folder.mkdir()
    v = open_vault(folder / ".synapse")
    for i, (actor, text) in enumerate(lines):
        v.episodes.log(f"msg {i}", outcome=f"{actor}: {text}", thread="chat", actor=actor)
    return v


CHAT = [("Ann", "talked about the weather and bus number 1"), ("Ann", "wat kinda pie did u bake for the fair"),
        ("Bob", "haha"), ("Bob", "lemon meringue"), ("Ann", "yum"), ("Bob", "the pie contest at the fair was fun"),
        ("Ann", "talked about the weather and bus number 2"), ("Bob", "pie pie pie, fair fair")]


def test_the_answer_after_a_question_without_its_mark_rises(tmp_path: Path) -> None:
    v = _vault(tmp_path / "v", CHAT)
    try:
        got = v.recall("What kind of pie did Bob bake for the fair?", bars=OPEN)
        lines = [i.line for i in got.items]
        # "lemon meringue" shares no word with the question: the flow from its question (no "?", and across the
        # "haha") puts it first; without either flag the question itself or the "haha" comes first
        assert "lemon meringue" in lines[0]
        rows = {r.id: r for r in got.explain()}
        answer = next(i for i in got.items if "lemon meringue" in i.line)
        assert dict(rows[answer.id].parts)["neighbours"] > 0
        # the back-channel turn takes no flow (it is found only by its own words: the speaker's name)
        haha = [i for i in got.items if i.line.endswith("Bob: haha")]
        assert all(dict(rows[i.id].parts)["neighbours"] == 0 for i in haha)
        assert all(lines.index(answer.line) < lines.index(i.line) for i in haha)
    finally:
        v.close()


@pytest.mark.parametrize("seed", ["0", "11"])
def test_chat_flags_give_the_same_bytes_whatever_the_hash_seed(tmp_path: Path, seed: str) -> None:
    script = (
        "import datetime, json, sys\n"
        "from pathlib import Path\n"
        "from synapse_nb import open_vault\n"
        "from synapse_nb.recall import Bars\n"
        "Path(sys.argv[1]).mkdir()\n"
        # a fixed clock: the lines show each episode's time (two processes either side of a minute differed)
        "when = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)\n"
        "v = open_vault(Path(sys.argv[1]) / '.synapse', clock=lambda: when)\n"
        f"for i, (a, t) in enumerate({CHAT!r}):\n"
        "    v.episodes.log(f'm{i}', outcome=f'{a}: {t}', thread='c', actor=a)\n"
        "r = v.recall('what pie did Bob bake for the fair', bars=Bars(floor=0, margin=0, top_k=50, "
        "budget_tokens=10**9))\n"
        "print(json.dumps([[i.line for i in r.items], [[x.score, x.parts, x.coverage] for x in r.explain()]]))\n"
        "v.close()\n")
    outs = outputs(lambda hs: ["-c", script, str(tmp_path / f"h{hs}")], [seed, "123"])
    assert all(any("lemon meringue" in t for t in json.loads(out)[0]) for out in outs)
    assert len(set(outs)) == 1


# ------------------------------------------------------------------------------------------------ work per read
@pytest.mark.parametrize("unit", ["h", "ha", "hah", "eh", "ja", "xd", "a"])
def test_reading_a_laugh_that_does_not_end_as_one_costs_work_in_proportion_to_its_length(unit: str) -> None:
    """A back-channel check reads every threaded record's head: "hhh...h" then a letter that is no laughter used
    to be tried in exponentially many ways (20 letters took 25 s, and one agent episode held every recall of its
    mind). Twice the letters now cost about twice the work, not hundreds of times (the first pattern: ~500x)."""

    def read(text: str) -> None:
        for _ in range(50):
            back_channel(text)

    short, long = "ok " + (unit * 6)[:6] + "z", "ok " + (unit * 12)[:12] + "z"
    read(short)
    ratio = cpu_seconds(read, long, 3) / max(cpu_seconds(read, short, 3), 1e-5)
    assert ratio < 12, f"{unit!r}: {ratio:.1f}x the work for 2x the text"


def test_the_laugh_pattern_matches_what_the_first_one_matched() -> None:
    """The linear pattern reads the same words as laughter as the first one: every word of up to 7 letters over
    the pattern's own letters (and two that are not), and a seeded corpus of longer ones."""
    import itertools
    import random
    import re

    from synapse_nb.recall.asks import _LAUGH

    first = re.compile(r"^(?:[ha]h?|[he]h?|ja|ah|xd)+$")
    letters = "haejxdz"
    for n in range(8):
        for word in map("".join, itertools.product(letters, repeat=n)):
            assert bool(_LAUGH.match(word)) is bool(first.match(word)), word
    rng = random.Random(0)
    pieces = ["h", "a", "e", "ha", "he", "ah", "eh", "ja", "xd", "x", "d", "j", "o", "hh"]
    for _ in range(5_000):
        word = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        assert bool(_LAUGH.match(word)) is bool(first.match(word)), word
