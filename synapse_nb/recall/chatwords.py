"""Spelling- and abbreviation-tolerant query words (issue 33): what a word may look like in real chat.

People on a messaging app write "tmrw" for tomorrow, "bday" for birthday, "sooo" for so, and mistype ("birthdya").
A question asked in whole words then shares no term with the message that answers it. For each query word recall
looks up, in the vault's own vocabulary (the store's ``doc_freq``, cached per data version), the forms chat gives it:

- :data:`CHAT_FORMS`: common chat abbreviations and spellings of English words (general usage, both ways: a query
  that says "bday" also finds "birthday");
- :func:`spelling_variants`: the slips that seldom spell another word: two adjacent letters swapped, a letter
  doubled, a double letter made single (words of at least :data:`MIN_EDIT_LEN` letters), and the lengthened forms
  ("loveee", "sooo": the last letter or a vowel repeated).

A spelling variant counts only when it looks like a slip of that word, not another word: it is rare in the vault
(in at most :data:`MAX_TYPO_DF` records) and the word itself is at least :data:`TYPO_RATIO` times as common (or
absent). An abbreviation from the table counts whenever the vault holds it. The engine then treats the word and its
variants as one term (:mod:`synapse_nb.recall.engine`): postings merged, so BM25, the structure step and the gate's
coverage see one word however it was typed.

Pure and deterministic: candidates come in a fixed order (no set iteration), the table is a dict literal.

>>> chat_forms("tomorrow")[:3]
('tmrw', 'tmr', 'tmrow')
>>> chat_forms("bday")
('birthday',)
>>> "birtdhay" in spelling_variants("birthday"), "loveee" in spelling_variants("love")
(True, True)
>>> "tomorow" in spelling_variants("tomorrow"), "move" in spelling_variants("movie")
(True, False)
>>> accept_typo(1, 40), accept_typo(9, 40), accept_typo(1, 2)
(True, False, False)
"""

from __future__ import annotations

__all__ = ["CHAT_FORMS", "MAX_TYPO_DF", "MIN_EDIT_LEN", "TYPO_RATIO", "accept_typo", "chat_forms",
           "spelling_variants"]

#: Words get spelling variants from this many letters on (shorter words have too many real neighbours).
MIN_EDIT_LEN = 5
#: A spelling variant in more records than this is a word of its own, not a slip.
MAX_TYPO_DF = 3
#: ... and the word it stands for must be at least this many times as common (or in no record at all).
TYPO_RATIO = 3
_VOWELS = "aeiouy"

#: Common chat forms of English words (lower case, one token each): written from general usage of texting and
#: messaging slang, not from any data set.
CHAT_FORMS: dict[str, tuple[str, ...]] = {
    "tomorrow": ("tmrw", "tmr", "tmrow", "tmw", "2moro", "2morrow", "2mrw", "tomoz"),
    "tonight": ("tonite", "2nite", "2night"),
    "today": ("2day", "tday"),
    "birthday": ("bday", "bdays", "birfday", "bdae"),
    "birthdays": ("bdays",),
    "because": ("bc", "bcs", "bcuz", "cuz", "coz", "cos", "becuz", "bcoz"),
    "please": ("pls", "plz", "plss", "plox"),
    "thanks": ("thx", "thnx", "thanx", "tnx", "ty", "tysm"),
    "people": ("ppl", "peeps"),
    "really": ("rly", "rlly", "realy", "rlyy"),
    "probably": ("probs", "prolly", "prbly"),
    "though": ("tho",),
    "through": ("thru",),
    "okay": ("ok", "kk", "okk", "oki", "okie"),
    "about": ("abt",),
    "something": ("smth", "sth", "somethin", "smthng"),
    "someone": ("some1", "sum1"),
    "everyone": ("every1", "evry1", "evryone"),
    "anyone": ("any1",),
    "everything": ("evrything", "everythin"),
    "nothing": ("nothin", "nuthin"),
    "before": ("b4", "bfr"),
    "great": ("gr8", "grt"),
    "later": ("l8r", "ltr"),
    "definitely": ("defo", "deffo", "defs", "definitly", "definately"),
    "favorite": ("fav", "fave", "favourite"),
    "favourite": ("fav", "fave", "favorite"),
    "picture": ("pic", "pix"),
    "pictures": ("pics", "pix"),
    "photo": ("pic", "foto"),
    "photos": ("pics", "fotos"),
    "message": ("msg",),
    "messages": ("msgs",),
    "weekend": ("wknd", "wkend"),
    "congratulations": ("congrats", "congratz", "grats"),
    "information": ("info",),
    "minutes": ("mins",),
    "seconds": ("secs",),
    "seriously": ("srsly", "srs"),
    "family": ("fam", "fambam"),
    "brother": ("bro", "bruh"),
    "sister": ("sis",),
    "years": ("yrs",),
    "year": ("yr",),
    "hours": ("hrs",),
    "weeks": ("wks",),
    "week": ("wk",),
    "vacation": ("vacay", "vaca"),
    "apartment": ("apt",),
    "amazing": ("amazin", "amaze"),
    "going": ("goin",),
    "love": ("luv", "lub"),
    "sorry": ("sry", "soz"),
    "instagram": ("insta",),
    "facebook": ("fb",),
    "between": ("btwn",),
    "boyfriend": ("bf",),
    "girlfriend": ("gf",),
    "friend": ("frend", "fren"),
    "friends": ("frens", "friendz"),
    "whatever": ("whatevs", "wtv", "watever"),
    "obviously": ("obvi", "obvs"),
    "totally": ("totes",),
    "awesome": ("awsome", "awsm"),
    "beautiful": ("beautful", "butiful"),
    "college": ("uni",),
    "university": ("uni",),
    "restaurant": ("resto",),
    "television": ("tv",),
    "video": ("vid",),
    "videos": ("vids",),
    "christmas": ("xmas",),
    "practice": ("practise", "prac"),
    "presentation": ("pres", "prez"),
    "appointment": ("appt",),
    "anniversary": ("anniv",),
    "delicious": ("delish",),
    "ridiculous": ("ridic",),
    "guys": ("guyz",),
    "know": ("kno", "knw"),
    "think": ("thnk", "thk"),
    "thought": ("thot",),
    "night": ("nite",),
    "enough": ("enuf",),
    "just": ("jus", "jst"),
}


def _reverse() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for word, forms in CHAT_FORMS.items():
        if " " in word:
            continue
        for f in forms:
            if f != word and f.isalnum():
                out.setdefault(f, []).append(word)
    return {f: tuple(dict.fromkeys(ws)) for f, ws in out.items()}


_FROM_FORM = _reverse()


def chat_forms(word: str) -> tuple[str, ...]:
    """The chat forms of ``word`` (one token each, table order), or the whole words a chat form stands for."""
    forms = tuple(f for f in CHAT_FORMS.get(word, ()) if f.isalnum() and f != word)
    return tuple(dict.fromkeys(forms + _FROM_FORM.get(word, ())))


def spelling_variants(word: str) -> list[str]:
    """Slips of ``word`` that seldom spell another word, in a fixed order without repeats ([] for words with
    characters outside a-z): from :data:`MIN_EDIT_LEN` letters on, two adjacent letters swapped ("birtdhay"), a
    letter doubled ("birthdday") and a double letter single ("tomorow"); from 3 letters on, the last letter or a
    vowel lengthened ("loveee", "sooo"). A letter dropped or replaced is left out: in clean text those mostly spell
    other words (playing/paying, movie/move, cream/dream, share/shape)."""
    if len(word) < 3 or not word.isascii() or not word.isalpha():
        return []
    n = len(word)
    at = [n - 1] + [i for i in range(n - 1) if word[i] in _VOWELS]
    lengthened = [word[:i + 1] + word[i] * k + word[i + 1:] for i in at for k in (2, 3, 4)]
    if n < MIN_EDIT_LEN:
        return [v for v in dict.fromkeys(lengthened) if v != word]
    out = [word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(n - 1) if word[i] != word[i + 1]]
    out += [word[:i + 1] + word[i] + word[i + 1:] for i in range(n)]  # doubled
    out += [word[:i] + word[i + 1:] for i in range(n - 1) if word[i] == word[i + 1]]  # a double made single
    return [v for v in dict.fromkeys(out + lengthened) if v != word]


def accept_typo(df_variant: int, df_word: int) -> bool:
    """Whether a spelling variant held by ``df_variant`` records reads as a slip of a word held by ``df_word``: rare
    (at most :data:`MAX_TYPO_DF`) and the word at least :data:`TYPO_RATIO` times as common, or absent."""
    return 0 < df_variant <= MAX_TYPO_DF and (df_word == 0 or df_word >= TYPO_RATIO * df_variant)
