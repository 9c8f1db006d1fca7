"""The chat-style rewrite of LoCoMo (synapse_nb/eval/chatstyle.py): every step, the evidence mapping, determinism."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fresh import outputs

from synapse_nb.errors import ValidationError
from synapse_nb.eval.chatstyle import (
    ABBREVIATIONS,
    BACKCHANNEL_TURNS,
    EMOJI,
    OPENERS,
    ChatStyle,
    chat_style,
    content_message,
    keyboard_typo,
    letter_repeat,
    split_turn,
)
from synapse_nb.eval.locomo import Conversation, Question, Turn, load_locomo
from synapse_nb.eval.retrieval import run_locomo_eval
from tests.conftest import cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT / "datasets" / "locomo" / "locomo10.json"
#: every step off: the transform keeps the text (one message per turn, no back-channel, no emoji)
OFF = ChatStyle(split=0, opener=0, abbrev=0, lowercase=0, punct_drop=0, apostrophe_drop=0, typo=0, repeat=0,
                emoji=0, backchannel=0, keep_captions=True)


def _conv(*texts: str, questions: tuple[Question, ...] = ()) -> Conversation:
    turns = tuple(Turn(f"D1:{i}", "Ann" if i % 2 else "Bob", t, 1, "1:56 pm on 8 May, 2023")
                  for i, t in enumerate(texts, start=1))
    return Conversation("c", "Ann", "Bob", turns, questions)


def test_all_steps_off_keeps_the_text_and_ids_follow_turns() -> None:
    conv = _conv("Hello Bob! How are you?", "Fine, thanks.")
    out = chat_style(conv, OFF)
    assert [(t.dia_id, t.text, t.speaker) for t in out.turns] == [
        ("D1:1.1", "Hello Bob! How are you?", "Ann"), ("D1:2.1", "Fine, thanks.", "Bob")]


def test_split_cuts_at_sentences_and_clauses_and_joins_short_pieces() -> None:
    always = ChatStyle(split=1.0)
    assert split_turn("I got it! We start Monday, and it pays well.", random.Random(0), always) == [
        "I got it!", "We start Monday,", "and it pays well."]
    # a one-word piece joins its neighbour; never more than max_messages
    assert split_turn("Wow. That is great news.", random.Random(0), always) == ["Wow. That is great news."]
    many = " ".join(f"Sentence number {i} here." for i in range(9))
    assert len(split_turn(many, random.Random(0), replace(always, max_messages=3))) == 3
    assert split_turn("One. Two words. Three words here.", random.Random(0), ChatStyle(split=0.0)) == [
        "One. Two words. Three words here."]


def test_messages_of_a_split_turn_have_their_own_later_times() -> None:
    conv = _conv("I went hiking on Sunday. It rained all day, but we loved it. Then we had pizza.")
    out = chat_style(conv, replace(OFF, split=1.0, gap_message=(60, 60)))
    assert [t.session_date for t in out.turns] == ["1:56 pm on 8 May, 2023", "1:57 pm on 8 May, 2023",
                                                   "1:58 pm on 8 May, 2023", "1:59 pm on 8 May, 2023"]
    assert all(t.speaker == "Ann" for t in out.turns)


def test_abbreviations_lowercase_punctuation_and_apostrophes() -> None:
    conv = _conv("By the way, are you coming tomorrow? I don't know yet!")
    out = chat_style(conv, replace(OFF, abbrev=1.0, lowercase=1.0, punct_drop=1.0, apostrophe_drop=1.0))
    text = out.turns[0].text
    assert text.startswith("btw ")
    assert any(f in text.split() for f in ABBREVIATIONS["tomorrow"])
    assert "idk" in text.split() and text == text.lower()
    assert not any(ch in text for ch in ",?!'")


def test_typos_and_letter_repeats() -> None:
    rng = random.Random(7)
    typos = {keyboard_typo("birthday", rng) for _ in range(200)}
    assert "birthday" not in typos and len(typos) > 20
    assert all(t[0] == "b" and abs(len(t) - 8) <= 1 for t in typos)  # one edit, never the first letter
    assert keyboard_typo("a", rng) == "a"
    assert letter_repeat("yes", random.Random(0)) == "yeeees" and letter_repeat("so", random.Random(2)) == "sooo"
    out = chat_style(_conv("wonderful beautiful holidays " * 20), replace(OFF, typo=1.0))
    assert all(w not in ("wonderful", "beautiful", "holidays") for w in out.turns[0].text.split())


def test_emoji_openers_and_backchannel_turns() -> None:
    conv = _conv(*[f"I bought a new guitar number {i} today." for i in range(30)])
    out = chat_style(conv, replace(OFF, emoji=1.0, opener=1.0, backchannel=1.0))
    firsts = [t for t in out.turns if t.dia_id.endswith(".1")]
    replies = [t for t in out.turns if t.dia_id.endswith(".r")]
    assert len(firsts) == 30 and len(replies) == 30
    assert all(t.text in OPENERS or t.text.rsplit(" ", 1)[-1] in EMOJI for t in firsts)
    assert all(r.text.rsplit(" ", 1)[-1] in EMOJI or r.text in BACKCHANNEL_TURNS for r in replies)
    # the back-channel turn is the other speaker's, after the turn
    for t in out.turns:
        if t.dia_id.endswith(".r"):
            turn = t.dia_id[:-2]
            spoke = next(x.speaker for x in out.turns if x.dia_id.startswith(turn + "."))
            assert t.speaker != spoke


def test_captions_dropped_unless_kept() -> None:
    conv = Conversation("c", "Ann", "Bob", (Turn("D1:1", "Ann", "Look at this.", 1, "1:56 pm on 8 May, 2023",
                                                 "a dog on a beach"),), ())
    assert chat_style(conv, replace(OFF, keep_captions=False)).turns[0].caption is None
    assert chat_style(conv, OFF).turns[0].caption == "a dog on a beach"


def test_content_messages() -> None:
    assert not content_message("omg guess what") and not content_message("haha yeah 😂")
    assert content_message("i got the job!!") and content_message("at the bakery")


def test_evidence_maps_to_the_content_messages_sharing_words_with_the_question() -> None:
    q = Question("Where did Ann get a job?", "the bakery", ("D1:1",), 4)
    q_other = Question("What will Ann do on Monday?", "start", ("D1:1",), 4)
    q_none = Question("Why is Ann happy?", "new work", ("D1:1",), 4)
    conv = _conv("Omg. I got the job at the bakery! I start on Monday.", questions=(q, q_other, q_none))
    out = chat_style(conv, replace(OFF, split=1.0, opener=1.0, backchannel=1.0))
    ids = [t.dia_id for t in out.turns]
    assert ids == ["D1:1.1", "D1:1.2", "D1:1.3", "D1:1.r"]  # opener, "Omg. I got ...", "I start ...", reply
    texts = {t.dia_id: t.text for t in out.turns}
    job = next(i for i, t in texts.items() if "bakery" in t)
    monday = next(i for i, t in texts.items() if "Monday" in t)
    assert out.questions[0].evidence == (job,)
    assert out.questions[1].evidence == (monday,)
    # no message shares a word: every content message of the turn (never the opener nor the back-channel)
    assert set(out.questions[2].evidence) == {job, monday}
    assert "D1:1.1" not in out.questions[2].evidence and "D1:1.r" not in out.questions[2].evidence


def test_a_speakers_name_alone_does_not_make_a_message_evidence() -> None:
    q = Question("Why did Ann move to Lisbon?", "for work", ("D1:1",), 4)
    conv = _conv("Thanks Ann. I moved to Lisbon for a new job.", questions=(q,))
    out = chat_style(conv, replace(OFF, split=1.0))
    assert [t.text for t in out.turns] == ["Thanks Ann.", "I moved to Lisbon for a new job."]
    assert out.questions[0].evidence == ("D1:1.2",)


def test_locomo_questions_keep_their_evidence() -> None:
    convs = load_locomo(LOCOMO)[:3]
    for conv in convs:
        out = chat_style(conv)
        ids = {t.dia_id for t in out.turns}
        assert [q.question for q in out.questions] == [q.question for q in conv.questions]
        for before, after in zip(conv.questions, out.questions, strict=True):
            assert bool(before.evidence) == bool(after.evidence)
            assert set(after.evidence) <= ids
            assert {e.rsplit(".", 1)[0] for e in after.evidence} == set(before.evidence)


def test_style_checks_its_parameters() -> None:
    with pytest.raises(ValidationError, match="probability"):
        ChatStyle(typo=1.5)
    with pytest.raises(ValidationError, match="seconds"):
        ChatStyle(gap_turn=(10, 5))


_DIGEST = """
import hashlib, json, sys
from dataclasses import asdict
from synapse_nb.eval.chatstyle import ChatStyle, chat_style
from synapse_nb.eval.locomo import load_locomo
convs = load_locomo(sys.argv[1])[:2]
out = [chat_style(c, ChatStyle(seed=int(sys.argv[2]))) for c in convs]
blob = json.dumps([[asdict(t) for t in c.turns] + [asdict(q) for q in c.questions] for c in out], sort_keys=True)
print(hashlib.sha256(blob.encode()).hexdigest())
"""


def test_byte_identical_for_a_seed_whatever_the_hash_seed() -> None:
    digests = {out.strip() for out in outputs(["-c", _DIGEST, str(LOCOMO), "0"], ["0", "1", "12345"])}
    assert len(digests) == 1
    other = subprocess.run([sys.executable, "-c", _DIGEST, str(LOCOMO), "1"], capture_output=True, text=True,
                           check=True)
    assert other.stdout.strip() not in digests  # another seed, another rewrite
    conv = load_locomo(LOCOMO)[0]
    assert chat_style(conv) == chat_style(conv)
    blob = json.dumps([t.text for t in chat_style(conv).turns])
    assert hashlib.sha256(blob.encode()).hexdigest() == hashlib.sha256(
        json.dumps([t.text for t in chat_style(conv, ChatStyle(seed=0)).turns]).encode()).hexdigest()


def test_one_turn_changed_leaves_the_other_turns_as_they_were() -> None:
    conv = load_locomo(LOCOMO)[1]
    changed = replace(conv, turns=(replace(conv.turns[0], text="Something else entirely, and more."),
                                   *conv.turns[1:]))
    a, b = chat_style(conv), chat_style(changed)
    first = conv.turns[0].dia_id + "."
    keep = [(t.dia_id, t.speaker, t.text) for t in a.turns if not t.dia_id.startswith(first)]
    assert [(t.dia_id, t.speaker, t.text) for t in b.turns if not t.dia_id.startswith(first)] == keep  # (times
    # follow the messages before them)


def test_eval_runs_the_chat_style(tmp_path: Path) -> None:
    raw = json.loads(LOCOMO.read_text(encoding="utf-8"))
    keep = [dict(s, qa=s["qa"][:8]) for s in raw if s["sample_id"] in ("conv-26", "conv-30")]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(keep), encoding="utf-8")
    out = run_locomo_eval(path, style="chat")
    assert out["config"]["style"] == "chat" and out["config"]["chat"]["seed"] == 0
    assert out["n_questions"] > 0 and 0.0 <= out["recall_at_10"] <= 1.0
    assert run_locomo_eval(path, style="chat") == out
    base = run_locomo_eval(path, style="chat", retriever="fts5")
    assert base["n_questions"] == out["n_questions"]
    with pytest.raises(ValidationError, match="style"):
        run_locomo_eval(path, style="shouting")


def test_reading_whitespace_runs_in_a_dataset_is_linear() -> None:
    """The clause splitter and LoCoMo's evidence parser read a long whitespace run once, not again from each of its
    positions (0.9 s and > 5 s at 32,768 characters before); same matches as the first patterns on a seeded corpus."""
    import random
    import re

    from synapse_nb.eval import chatstyle, locomo

    old_clause = re.compile(r"(?:[,;]\s+|\s+-\s+)(?=(?:and|but|so|because|cause|then|plus)\b)", re.IGNORECASE)
    old_evidence = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
    rng = random.Random(0)
    for _ in range(20_000):
        t = "".join(rng.choice([" ", "  ", "-", ",", ";", "and", "but", "x", "\t", "then"]) for _ in range(12))
        assert [m.span() for m in old_clause.finditer(t)] == [m.span() for m in chatstyle._CLAUSE.finditer(t)], t
        t = "".join(rng.choice(["D", " ", ":", "1", "23", "x", "\n", "D1:2", "D 3 : 4"]) for _ in range(12))
        assert old_evidence.findall(t) == locomo._EVIDENCE.findall(t), t

    for pattern, head in ((chatstyle._CLAUSE, ""), (locomo._EVIDENCE, "D")):
        def read(text: str, pattern: re.Pattern[str] = pattern) -> None:
            list(pattern.finditer(text))

        ratio = cpu_seconds(read, head + " " * 32_768 + "x") / max(cpu_seconds(read, head + " " * 4_096 + "x"), 1e-5)
        assert ratio < 24, f"{pattern.pattern}: {ratio:.1f}x the work for 8x the text"
