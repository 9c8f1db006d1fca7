"""Whether a ranking document asks something, when chat dropped its question mark (issue 33).

The structure step lifts the record after a question (an answer follows its question) and lowers a record that is
itself a question (:mod:`synapse_nb.recall.rank`). The flag was a ``?`` in the gate text; people on a messaging
app drop most of them ("wat r u doing tmrw", "did u see it"). :func:`asks` also reads a clause that opens as a
question: an interrogative (what, when, where, who, why, how, which, and chat's wat / wut / wht) followed by an
auxiliary, "you" or a word that makes it ask ("what kind", "how about"; not "what a day", "when I was 10"), or an
auxiliary followed by a subject ("did u", "are you", "is it", "can we"), at the start of the text, after ``: ``,
``] ``, a sentence's end or a leading interjection ("omg did u ...", "hey, where r u"), with no ``.`` or ``!``
after it in a text that ends within the characters read: "How cool!" and "What do I know." are not questions,
and a sentence of LoCoMo as written that asks ends with its ``?`` anyway.

:func:`back_channel`: a message of nothing but laughter, acknowledgements and reactions ("haha", "yesss", "oh
nice"), which the structure step leaves out of the neighbour links (it neither scores through them nor stands
between a question and its answer).

Only the first :data:`HEAD_CHARS` characters of a text are read (the backends give them with the ranking rows of
records in a thread, :attr:`~synapse_nb.store.records.RankRow.head`; a message's opener stands at its start, after
a speaker's name or a time stamp).

>>> asks("did u see the game")
True
>>> asks("[9:41 am on 3 March, 2026] Priya: wat r u deploying 2day")
True
>>> asks("Priya: how fast is that!"), asks("what a day"), asks("I know what you did")
(False, False, False)
>>> asks("omg, where did u get it"), asks("is it raining?"), asks("")
(True, True, False)
>>> asks("c-7 D5:1.1 [2 pm] Al: wat r u doing D5:1.1")
True
"""

from __future__ import annotations

import re

from synapse_nb.store.records import HEAD_CHARS

__all__ = ["BACK_CHANNEL", "HEAD_CHARS", "asks", "back_channel"]

_WH = r"(?:what|whats|wat|wats|wut|wht|when|whn|where|wher|who|whos|why|how|hows|which)"
_AUX = (r"(?:did|didnt|do|dont|does|doesnt|are|arent|r|is|isnt|was|wasnt|were|can|cant|could|would|will|wont|"
        r"have|havent|has|should|shall|am|wanna)")
_SUBJ = r"(?:you|u|ya|yu|we|i|he|she|they|it|that|this|there|ur|your|anyone|anything|someone|ppl|people)"
#: After an interrogative: an auxiliary, "you", or a word that makes it ask ("what kind", "how about", "what else");
#: not "when I", "what we" (a clause of a statement: "when I was 10, ...").
_AFTER_WH = rf"(?:{_AUX}|you|u|ya|yu|ur|your|about|abt|else|kind|kinda|sort|type|time|happened|much|many|long|come)"
_INTERJ = r"(?:hey|hi|ok|okay|omg|btw|wait|oh|ooh|hmm|lol|haha|yo|um|so|sooo?)"
# a clause starts a text, or follows a speaker's "Name:", a time stamp's "]", a sentence's end or " | "
_OPEN = re.compile(
    rf"(?:^|[:\].!|]\s+)(?:{_INTERJ},?\s+)?(?:{_WH}(?:'s|s)?\s+{_AFTER_WH}\b|{_AUX}\s+{_SUBJ}\b)", re.IGNORECASE)
_END = re.compile(r"[.!](?=\s|$)")  # a sentence's end, not the dot inside "D5:11.1" or "e.g"


def asks(text: str | None) -> bool:
    """Whether ``text`` asks: it holds a ``?``, or a clause of it opens as a question with no ``.`` or ``!`` after
    it (the module docstring)."""
    if not text:
        return False
    head = text[:HEAD_CHARS]
    if "?" in head:
        return True
    if len(head) >= HEAD_CHARS:  # cut: a sentence's end may follow ("What we can do is ... us.")
        return False
    return any(not _END.search(head, m.end()) for m in _OPEN.finditer(head))


#: Words that carry no fact of a conversation: laughter, acknowledgements, reactions, thanks, greetings (compared
#: with letter repeats folded: "yesss", "okkk", "sooo" are "yes", "ok", "so").
BACK_CHANNEL: frozenset[str] = frozenset((
    "lol", "lmao", "lmfao", "rofl", "yeah", "yea", "ya", "yah", "yep", "yup", "yes", "no", "nah", "nope", "ok",
    "okay", "k", "kk", "sure", "right", "true", "same", "mhm", "hm", "hmm", "uh", "huh", "um", "nice", "cool", "wow",
    "omg", "damn", "aww", "aw", "yay", "woah", "whoa", "awesome", "great", "lovely", "sweet", "oh", "ah", "ooh", "ikr",
    "fr", "for", "real", "way", "thx", "ty", "thanks", "thank", "you", "u", "hi", "hey", "hello", "bye", "night",
    "gn", "xd", "xo", "xoxo", "so", "wait", "what", "really", "totally", "exactly", "indeed", "perfect", "agreed",
    "love", "it", "that", "this", "is", "too", "me", "i", "good", "sounds", "fun", "amazing", "cute", "gosh", "god",
))
#: Laughter: "haha", "hehe", "ahah", "jaja", "xd" and their runs. The words of the first version ("h", "hh", "a",
#: "ah", "e", "eh", "ja", "xd") are these pieces put together, and each position here has one way to go on: its
#: alternatives ("[ha]h?|[he]h?|ah") read "hhhh" in exponentially many ways, and one agent message of "hhh...hz"
#: (20 letters: 25 s) held every recall of its mind.
_LAUGH = re.compile(r"^(?:[hae]|ja|xd)+$")
_TOKEN = re.compile(r"\w+")
_STAMP = re.compile(r"\[[^\]]*\]")


def _fold(word: str) -> str:
    """``word`` with each run of one letter kept once ("yesss" -> "yes", "cool" -> "col")."""
    return re.sub(r"(.)\1+", r"\1", word)


_FOLDED = frozenset(_fold(w) for w in BACK_CHANNEL)


def back_channel(text: str | None) -> bool:
    """Whether ``text`` (a message, possibly after a ``[time stamp]`` and a ``Name: ``) says nothing but
    back-channel words and emoji: "haha", "yesss 😂", "oh nice", "ty!!" (and no ``?``: "really?" asks).

    >>> back_channel("Priya: hahaha"), back_channel("[2:30 pm] Mel: oh nice 😂"), back_channel("yesss!!")
    (True, True, True)
    >>> back_channel("Yes, last Saturday!"), back_channel("really?"), back_channel(""), back_channel("c1 D1:3.r Al: ok")
    (False, False, False, True)
    """
    if not text or "?" in text[:HEAD_CHARS]:
        return False
    head = _STAMP.sub(" ", text[:HEAD_CHARS])
    head = head.rsplit(": ", 1)[-1]
    # a chunk with a digit is a reference, a time or a number ("D1:3", "2pm", "msg-7"): set aside
    words = [w.lower() for chunk in head.split() if not any(c.isdigit() for c in chunk)
             for w in _TOKEN.findall(chunk)]
    return bool(words) and all(_fold(w) in _FOLDED or _LAUGH.match(w) for w in words)
