"""A development set that looks like real chat: a seeded, deterministic transform of LoCoMo (issue 33).

LoCoMo's turns are written by a language model: whole sentences, capitalised and punctuated, one thought per
turn. Friends on a messaging app write differently, and recall measured on LoCoMo alone says little about them.
:func:`chat_style` rewrites one :class:`~synapse_nb.eval.locomo.Conversation` the way such a chat looks; its
questions are kept as written (a person asks an agent in whole words) and their evidence is mapped to the new
message ids. Conversations 0-6 transformed are the chat-style development set, 7-9 its held-out part
(``synapse-nb recall eval datasets/locomo --style chat --subset dev|heldout``).

Steps, in order, each with its strength in :class:`ChatStyle` (the defaults are the documented set):

1. **Split** (``split``): a turn is cut at sentence ends (``. ! ?``) and at clause boundaries (``,``/``;``/`` - ``
   before and, but, so, because, cause, then, plus), each boundary with probability ``split`` (at most
   ``max_messages`` messages; a piece under ``min_words`` words joins its neighbour). Each message is its own
   turn of the same speaker with its own time (``gap_message`` seconds after the previous message of the turn;
   a turn starts ``gap_turn`` seconds after the previous turn's last message; the session's date is the first
   turn's time). A leading interjection message ("omg", "guess what", "ok so") is added with ``opener``.
2. **Abbreviations** (``abbrev``): each word or phrase of :data:`ABBREVIATIONS` is replaced with one of its
   chat forms ("you" -> "u", "tomorrow" -> "tmrw"/"tmr", "by the way" -> "btw") with probability ``abbrev``.
3. **Case** (``lowercase``): a message is lower-cased with probability ``lowercase``.
4. **Punctuation** (``punct_drop``, ``apostrophe_drop``): each mark is dropped with probability ``punct_drop``;
   each apostrophe inside a word ("don't" -> "dont") with ``apostrophe_drop``.
5. **Typos** (``typo``): a word of at least ``typo_min_len`` letters gets one error with probability ``typo``: a
   keyboard neighbour for one letter (QWERTY), two adjacent letters swapped, a letter dropped or a letter doubled.
6. **Letter repeats** (``repeat``): a word's last letter (or its last vowel) is repeated 2-4 more times with
   probability ``repeat`` ("so" -> "sooo", "yes" -> "yesss").
7. **Emoji** (``emoji``): an emoji or emoticon is appended to a message with probability ``emoji``.
8. **Back-channel turns** (``backchannel``): after a turn, the other speaker answers "haha", "yeah", "nice",
   "lol", ... with probability ``backchannel`` (a turn of its own, with its own time).

Image captions (LoCoMo's BLIP descriptions of shared photos) are dropped unless ``keep_captions``: a messaging
app shows the photo, not a description of it.

**Evidence mapping.** A question's evidence turn becomes the messages of that turn that carry content: a message
holding at least one word that is neither a stop word (:data:`~synapse_nb.text.ENGLISH_STOP_WORDS`) nor a
back-channel word (:data:`BACKCHANNEL_WORDS`) *and* sharing such a word (its first five letters, in the turn as
written; the speakers' names do not count) with the question or its answer; when none shares one, all the turn's
content messages; a turn without content messages maps to all of them. Interjection openers and back-channel
turns are never evidence. So a split turn asks for the message(s) that hold what was asked, as a person labelling
a real chat would point at them, and a filler piece ("omg") is not asked for.

**Determinism.** Every random choice comes from a :class:`random.Random` seeded per turn with an integer read
from SHA-256 of ``"<seed>/<sample_id>/<dia_id>"``; tables are tuples and dicts in insertion order; nothing
iterates over a set. The output is byte-identical for a given seed under any ``PYTHONHASHSEED`` (a test runs it
in subprocesses). Changing one turn changes no other turn's text (only the times of the messages after it).

Examples
--------
>>> from synapse_nb.eval.locomo import Conversation, Question, Turn, format_time, parse_time
>>> conv = Conversation("c", "Ann", "Bob", (
...     Turn("D1:1", "Ann", "Guess what? I got the job at the bakery, and I start tomorrow!", 1,
...          "1:56 pm on 8 May, 2023"),), (Question("Where does Ann work?", "bakery", ("D1:1",), 4),))
>>> out = chat_style(conv, ChatStyle(seed=0))
>>> [(t.dia_id, t.text) for t in out.turns]
[('D1:1.1', 'guess what?'), ('D1:1.2', 'i got da job at da bakery'), ('D1:1.3', '& i start tomorrow')]
>>> out.questions[0].evidence
('D1:1.2',)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import random
import re
from dataclasses import dataclass, fields, replace

from synapse_nb.errors import ValidationError
from synapse_nb.eval.locomo import Conversation, Question, Turn, format_time, parse_time
from synapse_nb.text import ENGLISH_STOP_WORDS, FTS_TOKEN_RE

__all__ = ["ABBREVIATIONS", "BACKCHANNEL_TURNS", "BACKCHANNEL_WORDS", "ChatStyle", "EMOJI", "OPENERS",
           "chat_style", "chat_style_all", "content_message", "keyboard_typo", "letter_repeat", "split_turn"]


@dataclass(frozen=True)
class ChatStyle:
    """The transform's seed and strengths (probabilities in [0, 1], seconds, counts); see the module docstring.

    The defaults are the documented chat-style set: chosen to look like a group of friends on a messaging app
    (most messages lower case without final punctuation, a typo every couple of dozen longer words, a
    back-channel answer after every fourth turn), not tuned on any recall figure.
    """

    seed: int = 0
    split: float = 0.7
    max_messages: int = 5
    min_words: int = 2
    opener: float = 0.1
    abbrev: float = 0.6
    lowercase: float = 0.85
    punct_drop: float = 0.7
    apostrophe_drop: float = 0.5
    typo: float = 0.05
    typo_min_len: int = 4
    repeat: float = 0.03
    emoji: float = 0.2
    backchannel: float = 0.25
    gap_turn: tuple[int, int] = (20, 240)
    gap_message: tuple[int, int] = (3, 25)
    keep_captions: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "float" and not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise ValidationError(f"ChatStyle.{f.name} must be a probability in [0, 1], got {v!r}")
        if self.max_messages < 1 or self.min_words < 1 or self.typo_min_len < 2:
            raise ValidationError("ChatStyle: max_messages and min_words must be >= 1, typo_min_len >= 2")
        for name in ("gap_turn", "gap_message"):
            lo, hi = getattr(self, name)
            if not 0 <= lo <= hi:
                raise ValidationError(f"ChatStyle.{name} must be (low, high) seconds with 0 <= low <= high")


#: Common chat abbreviations: a word or phrase (lower case, whole words) -> the chat forms one of which replaces it.
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "oh my god": ("omg",), "i don't know": ("idk",), "i do not know": ("idk",), "by the way": ("btw",),
    "to be honest": ("tbh",), "right now": ("rn",), "in my opinion": ("imo",), "as soon as possible": ("asap",),
    "laughing out loud": ("lol",), "not gonna lie": ("ngl",), "for real": ("fr",), "see you": ("cya",),
    "going to": ("gonna",), "want to": ("wanna",), "got to": ("gotta",), "kind of": ("kinda",),
    "you": ("u",), "your": ("ur",), "you're": ("ur", "youre"), "are": ("r",), "because": ("bc", "cuz", "bcs"),
    "tomorrow": ("tmrw", "tmr", "2moro"), "tonight": ("tonite", "2nite"), "today": ("2day",),
    "birthday": ("bday", "b-day"), "please": ("pls", "plz"), "thanks": ("thx", "ty"), "thank you": ("ty", "thx"),
    "people": ("ppl",), "really": ("rly", "rlly"), "probably": ("prob", "prolly"), "though": ("tho",),
    "through": ("thru",), "okay": ("ok", "k"), "about": ("abt",), "something": ("smth", "sth"),
    "someone": ("some1",), "everyone": ("every1", "evry1"), "before": ("b4",), "great": ("gr8",),
    "definitely": ("def", "defo"), "favorite": ("fav", "fave"), "favourite": ("fav", "fave"),
    "picture": ("pic",), "pictures": ("pics",), "photo": ("pic",), "photos": ("pics",), "message": ("msg",),
    "weekend": ("wknd",), "congratulations": ("congrats",), "information": ("info",), "minutes": ("mins",),
    "seriously": ("srsly",), "family": ("fam",), "brother": ("bro",), "sister": ("sis",), "years": ("yrs",),
    "year": ("yr",), "hours": ("hrs",), "vacation": ("vacay",), "apartment": ("apt",), "doctor": ("doc",),
    "amazing": ("amazin",), "nothing": ("nothin",), "going": ("goin",), "with": ("w",), "without": ("w/o",),
    "what": ("wat", "wut"), "that": ("dat",), "the": ("da",), "love": ("luv",), "and": ("n", "&"),
    "for": ("4",), "to": ("2",), "anyone": ("any1",), "everything": ("evrything",), "yeah": ("ya", "yea"),
    "yes": ("ya", "yep"), "no": ("nah", "nope"), "sorry": ("sry",), "instagram": ("insta", "ig"),
    "hilarious": ("lmao",), "between": ("btwn",), "message me": ("dm me",), "talk to you later": ("ttyl",),
}

#: Interjection messages that may open a turn (never evidence).
OPENERS: tuple[str, ...] = ("omg", "guess what", "ok so", "so", "hey", "lol", "wait", "ahh", "soo", "hiii")
#: Back-channel turns the other speaker may answer with (never evidence).
BACKCHANNEL_TURNS: tuple[str, ...] = (
    "haha", "hahaha", "lol", "yeah", "yea", "nice", "omg", "wow", "ok", "okk", "true", "same", "right?",
    "for real", "aww", "cool", "lmao", "yesss", "no way", "damn", "ikr", "oh nice", "ya", "mhm", "😂", "❤️",
)
#: Words that say nothing about the conversation's facts: back-channels, interjections, laughter, chat fillers.
BACKCHANNEL_WORDS: frozenset[str] = frozenset((
    "haha", "hahaha", "hah", "lol", "lmao", "rofl", "yeah", "yea", "ya", "yep", "yes", "yesss", "no", "nah",
    "nope", "nice", "omg", "wow", "ok", "okk", "okay", "k", "true", "same", "right", "real", "aww", "aw",
    "cool", "damn", "ikr", "oh", "mhm", "hmm", "um", "uh", "hey", "hi", "hiii", "hello", "guess", "wait", "ahh",
    "ah", "soo", "so", "way", "fr", "thx", "ty", "thanks", "sure", "yay", "woah", "whoa", "awesome", "great",
))
#: Emoji and emoticons a message may end with (FTS5's tokenizer sees no word in any of them).
EMOJI: tuple[str, ...] = ("😂", "😭", "❤️", "😍", "🙌", "👍", "🎉", "😊", "🥺", "🔥", "😅", ":)", ":(", "<3", ":D",
                          "xD", "!!")

#: QWERTY neighbours of each letter (a finger slips to the key beside the intended one).
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEAR: dict[str, str] = {}
for _r, _row in enumerate(_KEYBOARD_ROWS):
    for _c, _ch in enumerate(_row):
        near = [_row[j] for j in (_c - 1, _c + 1) if 0 <= j < len(_row)]
        for _dr in (-1, 1):
            if 0 <= _r + _dr < len(_KEYBOARD_ROWS):
                other = _KEYBOARD_ROWS[_r + _dr]
                near += [other[j] for j in (_c - 1, _c, _c + 1) if 0 <= j < len(other)]
        _NEAR[_ch] = "".join(near)
_VOWELS = "aeiou"

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CLAUSE = re.compile(r"(?:[,;]\s+|(?<!\s)\s+-\s+)(?=(?:and|but|so|because|cause|then|plus)\b)", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z][A-Za-z']*")
_PUNCT = re.compile(r"[.,!?;:\"()\-]")
_INNER_APOSTROPHE = re.compile(r"(?<=[A-Za-z])['’](?=[A-Za-z])")
_PHRASES = sorted(ABBREVIATIONS, key=lambda p: (-len(p.split()), p))  # longer phrases first
_ABBREV_RE = re.compile(r"(?<![A-Za-z'])(" + "|".join(re.escape(p) for p in _PHRASES) + r")(?![A-Za-z'])",
                        re.IGNORECASE)


def _rng(seed: int, sample_id: str, dia_id: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}/{sample_id}/{dia_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def split_turn(text: str, rng: random.Random, style: ChatStyle) -> list[str]:
    """Cut one turn's text into messages at sentence ends and clause boundaries (each with ``style.split``).

    >>> split_turn("I got it! We start Monday, and it pays well.", random.Random(0), ChatStyle(split=1.0))
    ['I got it!', 'We start Monday,', 'and it pays well.']
    """
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        parts, start = [], 0
        for m in _CLAUSE.finditer(sentence):
            parts.append(sentence[start:m.start()] + m.group(0).rstrip())
            start = m.end()
        parts.append(sentence[start:])
        pieces.extend(p.strip() for p in parts if p.strip())
    out: list[str] = []
    for piece in pieces:
        if out and (rng.random() >= style.split or len(_WORDS.findall(piece)) < style.min_words
                    or len(_WORDS.findall(out[-1])) < style.min_words):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    while len(out) > style.max_messages:  # join the shortest adjacent pair
        j = min(range(len(out) - 1), key=lambda i: (len(out[i]) + len(out[i + 1]), i))
        out[j:j + 2] = [f"{out[j]} {out[j + 1]}"]
    return out or [text]


def keyboard_typo(word: str, rng: random.Random) -> str:
    """One typing error in ``word``: a QWERTY neighbour, two adjacent letters swapped, a letter dropped or doubled.

    >>> keyboard_typo("birthday", random.Random(1))
    'birtdhay'
    """
    letters = [i for i, ch in enumerate(word) if ch.isalpha()]
    if len(letters) < 2:
        return word
    kind = rng.randrange(4)
    i = letters[rng.randrange(1, len(letters))]  # people rarely mistype the first letter
    if kind == 0 and word[i].lower() in _NEAR:
        return word[:i] + rng.choice(_NEAR[word[i].lower()]) + word[i + 1:]
    if kind == 1 and i >= 2 and i - 1 in letters and word[i - 1] != word[i]:
        return word[:i - 1] + word[i] + word[i - 1] + word[i + 1:]
    if kind == 2:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def letter_repeat(word: str, rng: random.Random) -> str:
    """``word`` with its last letter, or its last vowel, repeated 2-4 more times ("so" -> "sooo").

    >>> letter_repeat("yes", random.Random(0)), letter_repeat("so", random.Random(2))
    ('yeeees', 'sooo')
    """
    vowels = [i for i, ch in enumerate(word) if ch.lower() in _VOWELS]
    i = len(word) - 1 if not vowels or rng.random() < 0.5 else vowels[-1]
    return word[:i + 1] + word[i] * rng.randint(2, 4) + word[i + 1:]


def _abbreviate(text: str, rng: random.Random, p: float) -> str:
    def sub(m: re.Match[str]) -> str:
        forms = ABBREVIATIONS[m.group(1).lower().replace("’", "'")]
        return rng.choice(forms) if rng.random() < p else m.group(1)

    return _ABBREV_RE.sub(sub, text)


def _roughen(text: str, rng: random.Random, style: ChatStyle) -> str:
    """Steps 2-7 on one message."""
    text = _abbreviate(text, rng, style.abbrev)
    if rng.random() < style.lowercase:
        text = text.lower()
    text = _INNER_APOSTROPHE.sub(lambda m: "" if rng.random() < style.apostrophe_drop else m.group(0), text)
    text = _PUNCT.sub(lambda m: "" if rng.random() < style.punct_drop else m.group(0), text)

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        if len(w) >= style.typo_min_len and rng.random() < style.typo:
            w = keyboard_typo(w, rng)
        if rng.random() < style.repeat:
            w = letter_repeat(w, rng)
        return w

    text = " ".join(_WORDS.sub(word, text).split())
    if rng.random() < style.emoji:
        text = f"{text} {rng.choice(EMOJI)}"
    return text or rng.choice(BACKCHANNEL_TURNS)


def content_message(text: str) -> bool:
    """Whether a message carries content: a word that is neither a stop word nor a back-channel word.

    >>> content_message("omg guess what"), content_message("i got the job!!"), content_message("haha yeah")
    (False, True, False)
    """
    return any(w not in ENGLISH_STOP_WORDS and w not in BACKCHANNEL_WORDS for w in FTS_TOKEN_RE.findall(text.lower()))


def chat_style(conv: Conversation, style: ChatStyle = ChatStyle()) -> Conversation:
    """``conv`` rewritten as real chat (see the module docstring): new turns with ids ``D<s>:<t>.<k>`` (the
    ``k``-th message of turn ``D<s>:<t>``) and ``D<s>:<t>.r`` (a back-channel answer to it), and the questions with
    their evidence mapped to the new ids."""
    turns: list[Turn] = []
    evidence: dict[str, list[tuple[str, frozenset[str]]]] = {}
    clock: dict[int, _dt.datetime | None] = {}
    for turn in conv.turns:
        rng = _rng(style.seed, conv.sample_id, turn.dia_id)
        if turn.session not in clock:
            clock[turn.session] = parse_time(turn.session_date)
        else:
            clock[turn.session] = _advance(clock[turn.session], rng, style.gap_turn)
        pieces = split_turn(turn.text, rng, style)
        opener = rng.random() < style.opener
        messages = ([rng.choice(OPENERS)] if opener else []) + [_roughen(p, rng, style) for p in pieces]
        first_content = 1 if opener else 0
        ids = [f"{turn.dia_id}.{k}" for k in range(1, len(messages) + 1)]
        carrying = [(i, _keys(p)) for k, (i, m, p) in enumerate(zip(ids, messages, [""] * first_content + pieces,
                                                                     strict=True))
                    if k >= first_content and content_message(m)]
        evidence[turn.dia_id] = carrying or [(i, frozenset()) for i in ids[first_content:]]
        for k, (mid, text) in enumerate(zip(ids, messages, strict=True)):
            if k:
                clock[turn.session] = _advance(clock[turn.session], rng, style.gap_message)
            last = k == len(messages) - 1
            turns.append(Turn(mid, turn.speaker, text, turn.session, _when(clock[turn.session], turn),
                              turn.caption if (style.keep_captions and last) else None))
        if rng.random() < style.backchannel:
            other = conv.speaker_b if turn.speaker == conv.speaker_a else conv.speaker_a
            clock[turn.session] = _advance(clock[turn.session], rng, style.gap_message)
            turns.append(Turn(f"{turn.dia_id}.r", other or "other", rng.choice(BACKCHANNEL_TURNS), turn.session,
                              _when(clock[turn.session], turn)))
    names = _keys(f"{conv.speaker_a} {conv.speaker_b}")
    questions = tuple(_map_question(q, evidence, names) for q in conv.questions)
    return replace(conv, turns=tuple(turns), questions=questions)


def _advance(t: _dt.datetime | None, rng: random.Random, gap: tuple[int, int]) -> _dt.datetime | None:
    seconds = rng.randint(gap[0], gap[1])
    return None if t is None else t + _dt.timedelta(seconds=seconds)


def _when(t: _dt.datetime | None, turn: Turn) -> str:
    return turn.session_date if t is None else format_time(t)


def _keys(text: str) -> frozenset[str]:
    """The content words of a text, each cut to its first five letters (a crude stem: "painted" ~ "painting")."""
    return frozenset(w[:5] for w in FTS_TOKEN_RE.findall(text.lower())
                     if len(w) >= 3 and w not in ENGLISH_STOP_WORDS and w not in BACKCHANNEL_WORDS)


def _map_question(q: Question, evidence: dict[str, list[tuple[str, frozenset[str]]]],
                  names: frozenset[str] = frozenset()) -> Question:
    """Each evidence turn's content messages that share a content word with the question or its answer (as the
    turn was written; the speakers' names do not count: "thanks maria" answers no question about Maria), or all
    its content messages when none does."""
    asked = _keys(f"{q.question} {q.answer or ''}") - names
    mapped: list[str] = []
    for e in q.evidence:
        messages = evidence.get(e, [])
        mapped += [i for i, keys in messages if keys & asked] or [i for i, _ in messages]
    return replace(q, evidence=tuple(dict.fromkeys(mapped)))


def chat_style_all(convs: list[Conversation], style: ChatStyle = ChatStyle()) -> list[Conversation]:
    """:func:`chat_style` of each conversation (each turn's choices depend only on the seed and its own ids)."""
    return [chat_style(c, style) for c in convs]
