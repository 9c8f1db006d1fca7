"""Text analysis, defined once: normalisation, tokenisers, stop lists and n-grams.

Every module that splits text into words uses this one: the gate (recall's scorer and the router),
recall (query words for exact tag/key matches), the kind managers (safe FTS5 queries) and the
retrieval index (its embedder and its "does this query hold a word?" check). Determinism depends
on them agreeing, so they share these functions and ``tests/test_text.py`` pins them: against
scikit-learn's analyzers where they mirror them, against today's regular expressions elsewhere.

Pure: no I/O, no import from the package but :mod:`synapse_nb.errors`, and no iteration over a set or
a dict of strings to build an order (same input, same output, whatever ``PYTHONHASHSEED``).

Two tokenisers, on purpose:

========================  =======================  ===================================================
function                  splits on                used for
========================  =======================  ===================================================
:func:`fts_tokens`        ``[^\\W_]+``              what SQLite FTS5's ``unicode61`` tokenizer indexes:
                          (underscore separates)   the gate's words, :func:`fts_query_terms`
:func:`word_tokens`       ``\\w+``                  names that contain ``_``: :func:`query_words` (recall
                          (underscore kept)        matches memory keys and note names such as
                                                   ``project_status``), :func:`has_content_words`
========================  =======================  ===================================================

Examples
--------
>>> fts_tokens("project_status: v1.5")
['project', 'status', 'v1', '5']
>>> word_tokens("project_status: v1.5")
['project_status', 'v1', '5']
>>> fts_query_terms('Deploy "prod" OR NOT x*')
['deploy', 'prod', 'or', 'not', 'x']
>>> query_words("Where is project_status? Where!")
['is', 'project_status', 'where']
>>> word_ngrams(["run", "db", "migrations"], (1, 2))
['run', 'db', 'migrations', 'run db', 'db migrations']
>>> char_wb_ngrams("db", (3, 4))
[' db', 'db ', ' db ']
>>> normalise("Crème  Brûlée\\x00!", 100)
'creme  brulee !'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

from synapse_nb.errors import ValidationError

__all__ = [
    "ENGLISH_STOP_WORDS",
    "FTS_DIACRITICS",
    "FTS_TOKEN_RE",
    "MAX_FTS_QUERY_TERMS",
    "MAX_QUERY_WORD_CHARS",
    "QUERY_WORDS_MAX_CHARS",
    "SKLEARN_TOKEN_RE",
    "STOP_LISTS",
    "WORD_TOKEN_RE",
    "Normaliser",
    "TokenJoiner",
    "build_analyzers",
    "char_vectorizer_kwargs",
    "char_wb_gram_set",
    "char_wb_ngrams",
    "fts_fold",
    "fts_query_terms",
    "fts_tokens",
    "has_content_words",
    "make_tokenizer",
    "normalise",
    "query_words",
    "sklearn_tokens",
    "stop_word_list",
    "strip_accents_unicode",
    "word_ngrams",
    "word_tokens",
    "word_vectorizer_kwargs",
]

# ---------------------------------------------------------------------------------------------- tokenisers
#: SQLite FTS5's ``unicode61`` split: every character that is not a letter or a digit separates words,
#: underscore included (``\w`` minus ``_``). The terms the gate looks up are the terms FTS5 indexes.
FTS_TOKEN_RE = re.compile(r"[^\W_]+")
#: Python's ``\w+``: letters, digits *and underscore*, so ``project_status`` stays one word.
WORD_TOKEN_RE = re.compile(r"\w+")
#: scikit-learn's default ``token_pattern``: two or more word characters (the hashing embedder's words).
SKLEARN_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
#: At most this many terms go into an FTS5 query (:func:`fts_query_terms`); the rest are ignored.
MAX_FTS_QUERY_TERMS = 32
#: :func:`query_words` reads only this many characters of a query...
QUERY_WORDS_MAX_CHARS = 2000
#: ...and drops longer words (hashes, base64: they name no tag or key).
MAX_QUERY_WORD_CHARS = 64

#: The word a cap cut through: a run of letters and digits that ends the text. It starts only where a run starts
#: (the look-behind): a search tries every start, and a run that does not end the text ("1111...1!" then the cut
#: word) was read again from each of its positions, 2 s for a 20,000-character document (quadratic). The match
#: that ends the text starts where its run starts anyway: the anchor changes no match, only the work.
_PARTIAL_TAIL_RE = re.compile(r"(?<![^\W_])[^\W_]+$")
_WHITESPACE_RE = re.compile(r"\s\s+")
# C0/C1 control characters, DEL, and the Unicode "other" categories that carry no text.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff0-\uffff]+")


def fts_tokens(text: str) -> list[str]:
    """Split ``text`` the way SQLite FTS5's ``unicode61`` tokenizer does: runs of letters and digits.

    Case is kept (lower-case first if you need to); underscore and punctuation separate words.

    >>> fts_tokens("DB_migrations, run!")
    ['DB', 'migrations', 'run']
    """
    return _fts_findall(text)


def word_tokens(text: str) -> list[str]:
    """Split ``text`` into ``\\w+`` runs: like :func:`fts_tokens` but underscore is part of a word.

    >>> word_tokens("DB_migrations, run!")
    ['DB_migrations', 'run']
    """
    return WORD_TOKEN_RE.findall(text)


def sklearn_tokens(text: str) -> list[str]:
    """Split ``text`` as scikit-learn's default ``token_pattern`` does: words of two or more ``\\w``.

    >>> sklearn_tokens("a DB_migration, v2 x")
    ['DB_migration', 'v2']
    """
    return SKLEARN_TOKEN_RE.findall(text)


def fts_query_terms(text: str, max_terms: int = MAX_FTS_QUERY_TERMS) -> list[str]:
    """The words of a search box's text, as FTS5 indexes them: lower-cased :func:`fts_tokens`, in order,
    repeats kept, at most ``max_terms`` (32) of them.

    Every term is letters and digits only, so quoting each one (``'"' + t + '"'``) gives an FTS5 query
    no user text can turn into an operator, a column filter or a syntax error.

    >>> fts_query_terms("NOT deploy* prod_db")
    ['not', 'deploy', 'prod', 'db']
    >>> fts_query_terms("İZMİR École")  # str.lower gives "i" + U+0307 for "İ": the mark is folded away, as FTS5 does
    ['izmir', 'ecole']
    """
    if not isinstance(text, str):
        raise ValidationError(f"a search query must be text, got {type(text).__name__}")
    return FTS_TOKEN_RE.findall(fts_fold(text))[:max_terms]


#: The combining marks FTS5's ``unicode61`` tokenizer removes (``remove_diacritics``): a word holding one is
#: indexed without it (``sqlite3Fts5UnicodeIsdiacritic``: these 25 of U+0300-U+0331; any other mark separates words).
FTS_DIACRITICS = frozenset(map(chr, (
    0x300, 0x301, 0x302, 0x303, 0x304, 0x306, 0x307, 0x308, 0x309, 0x30A, 0x30B, 0x30C, 0x30F, 0x311, 0x31B,
    0x323, 0x324, 0x325, 0x326, 0x327, 0x328, 0x32D, 0x32E, 0x330, 0x331)))
#: FTS5's case folding where it is not :meth:`str.lower` (Unicode's simple case folding of these letters).
_FTS_FOLDS = {"\u00b5": "\u03bc", "\u017f": "s", "\u03c2": "\u03c3", "\u03d0": "\u03b2", "\u03d1": "\u03b8",
              "\u03d5": "\u03c6", "\u03d6": "\u03c0", "\u03f0": "\u03ba", "\u03f1": "\u03c1", "\u03f5": "\u03b5",
              "\u1e9b": "s", "\u1fbe": "\u03b9"}
#: The letters whose marks FTS5 keeps although they decompose into an ASCII letter and marks it removes.
_FTS_KEPT = frozenset("\u01e0\u01e1")


def _fts_fold_char(ch: str) -> str:
    """One character as FTS5's ``unicode61 remove_diacritics 2`` folds it (see :func:`fts_fold`)."""
    out = []
    for c in _FTS_FOLDS.get(ch) or ch.lower():
        if c in FTS_DIACRITICS:
            continue
        if not c.isascii() and c not in _FTS_KEPT:
            parts = unicodedata.normalize("NFD", c)
            if len(parts) > 1 and parts[0].isascii() and all(m in FTS_DIACRITICS for m in parts[1:]):
                c = parts[0]
        out.append(c)
    return "".join(out)


class _FoldTable(dict[int, str]):
    """``str.translate``'s table for :func:`fts_fold`, filled as characters are met (the first 65,536 kept)."""

    def __missing__(self, code: int) -> str:
        folded = _fts_fold_char(chr(code))
        if len(self) < 65536:
            self[code] = folded
        return folded


_FOLD_TABLE = _FoldTable()


def fts_fold(text: str) -> str:
    """``text`` folded as SQLite FTS5's ``unicode61 remove_diacritics 2`` tokenizer folds what it indexes, one
    character at a time: lower-cased (``str.lower``, and FTS5's simple case folding of "ς", "ſ", "µ" and a few more),
    a Latin letter's accents removed ("É" -> "e", "İ" -> "i"; "ø", "ł", "ß" and other scripts' marks stay), and the
    combining accents FTS5 removes (:data:`FTS_DIACRITICS`) dropped. Search reads a query through it on both
    backends, and a team vault's server folds a record's search text with the same table (migration 27,
    ``search_fold``), so a word is found whatever its case or accents and whatever the server's locale.

    FTS5's tables are Unicode 6.1's: a letter given a case later (Cherokee, Georgian Mtavruli, Osage, Adlam) is
    lower-cased here and not by FTS5.

    >>> fts_fold("ÉCOLE Österreich İZMİR ΟΔΟΣ Łódź straße")
    'ecole osterreich izmir οδοσ łodz straße'
    """
    return text.lower() if text.isascii() else text.translate(_FOLD_TABLE)


def query_words(query: str) -> list[str]:
    """The distinct words of a recall query for exact tag and key matches, sorted.

    :func:`word_tokens` of the lower-cased first 2000 characters, words longer than 64 characters
    dropped. Underscore is kept inside words, because memory keys and note names contain it.

    >>> query_words("How do we deploy? deploy_notes")
    ['deploy', 'deploy_notes', 'do', 'how', 'we']
    """
    return sorted({w for w in WORD_TOKEN_RE.findall(query[:QUERY_WORDS_MAX_CHARS].lower())
                   if len(w) <= MAX_QUERY_WORD_CHARS})


def has_content_words(text: str, stop_words: frozenset[str] | None = None) -> bool:
    """Whether lower-cased ``text`` holds a :func:`word_tokens` word that is not a stop word.

    ``stop_words`` defaults to :data:`ENGLISH_STOP_WORDS`.

    >>> has_content_words("What is the"), has_content_words("the API")
    (False, True)
    """
    stops = ENGLISH_STOP_WORDS if stop_words is None else stop_words
    return any(t not in stops for t in WORD_TOKEN_RE.findall(text.lower()))


def make_tokenizer(max_token_chars: int) -> Callable[[str], list[str]]:
    """A tokenizer that splits like :func:`fts_tokens` and drops tokens over ``max_token_chars`` (junk).

    >>> make_tokenizer(4)("deploy the api")
    ['the', 'api']
    """

    def tokenize(text: str) -> list[str]:
        return [t for t in _fts_findall(text) if len(t) <= max_token_chars]

    return tokenize


# ASCII text: every byte that is not a letter or a digit becomes a space, then split -- the same tokens as
# FTS_TOKEN_RE (ASCII ``\w`` is ``[A-Za-z0-9_]``), about 4x faster than the regular expression
_ASCII_SEPARATORS = bytes.maketrans(bytes(range(128)), bytes(
    c if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else 32 for c in range(128)))


def _fts_findall(text: str) -> list[str]:
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    return FTS_TOKEN_RE.findall(text)


# ------------------------------------------------------------------------------------------- normalisation
def strip_accents_unicode(s: str) -> str:
    """Remove accents the way scikit-learn's ``strip_accents_unicode`` does (NFKD, drop combining marks).

    >>> strip_accents_unicode("façade")
    'facade'
    """
    try:
        s.encode("ASCII", errors="strict")
        return s
    except UnicodeEncodeError:
        normalized = unicodedata.normalize("NFKD", s)
        return "".join(c for c in normalized if not unicodedata.combining(c))


def normalise(text: str, max_chars: int) -> str:
    """Cap, clean, lower-case and strip accents from ``text`` (the gate's preprocessing).

    Only the first ``max_chars`` characters are kept, less a word the cap cut through. Control
    characters and lone surrogates become spaces, so binary junk decoded as text does not glue
    words together or raise.

    >>> normalise("Deploy the API", 9)
    'deploy '
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be str, got {type(text).__name__}; decode bytes first")
    if len(text) > max_chars:
        cut = text[:max_chars]
        # never analyse half a word: drop a token the cap cut through
        text = _PARTIAL_TAIL_RE.sub("", cut) if FTS_TOKEN_RE.match(text, max_chars) else cut
    if not text.isascii():
        # lone surrogates (from surrogateescape-decoded bytes) cannot be normalised: drop them
        text = text.encode("utf-8", "replace").decode("utf-8")
        text = strip_accents_unicode(unicodedata.normalize("NFC", text))
    text = _CONTROL_RE.sub(" ", text)
    return text.lower()


# ---------------------------------------------------------------------------------------------- stop lists
#: scikit-learn's English stop-word list (``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS``), copied
#: so that recall does not import scikit-learn (seconds on a cold start). Source: scikit-learn,
#: BSD-3-Clause, Copyright (c) 2007-2024 The scikit-learn developers; the list itself comes from the
#: Glasgow Information Retrieval Group. ``tests/test_text.py`` checks it still equals scikit-learn's.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset((
    "a", "about", "above", "across", "after", "afterwards", "again", "against", "all", "almost", "alone",
    "along", "already", "also", "although", "always", "am", "among", "amongst", "amoungst", "amount", "an",
    "and", "another", "any", "anyhow", "anyone", "anything", "anyway", "anywhere", "are", "around", "as",
    "at", "back", "be", "became", "because", "become", "becomes", "becoming", "been", "before", "beforehand",
    "behind", "being", "below", "beside", "besides", "between", "beyond", "bill", "both", "bottom", "but",
    "by", "call", "can", "cannot", "cant", "co", "con", "could", "couldnt", "cry", "de", "describe", "detail",
    "do", "done", "down", "due", "during", "each", "eg", "eight", "either", "eleven", "else", "elsewhere",
    "empty", "enough", "etc", "even", "ever", "every", "everyone", "everything", "everywhere", "except",
    "few", "fifteen", "fifty", "fill", "find", "fire", "first", "five", "for", "former", "formerly", "forty",
    "found", "four", "from", "front", "full", "further", "get", "give", "go", "had", "has", "hasnt", "have",
    "he", "hence", "her", "here", "hereafter", "hereby", "herein", "hereupon", "hers", "herself", "him",
    "himself", "his", "how", "however", "hundred", "i", "ie", "if", "in", "inc", "indeed", "interest", "into",
    "is", "it", "its", "itself", "keep", "last", "latter", "latterly", "least", "less", "ltd", "made", "many",
    "may", "me", "meanwhile", "might", "mill", "mine", "more", "moreover", "most", "mostly", "move", "much",
    "must", "my", "myself", "name", "namely", "neither", "never", "nevertheless", "next", "nine", "no",
    "nobody", "none", "noone", "nor", "not", "nothing", "now", "nowhere", "of", "off", "often", "on", "once",
    "one", "only", "onto", "or", "other", "others", "otherwise", "our", "ours", "ourselves", "out", "over",
    "own", "part", "per", "perhaps", "please", "put", "rather", "re", "same", "see", "seem", "seemed",
    "seeming", "seems", "serious", "several", "she", "should", "show", "side", "since", "sincere", "six",
    "sixty", "so", "some", "somehow", "someone", "something", "sometime", "sometimes", "somewhere", "still",
    "such", "system", "take", "ten", "than", "that", "the", "their", "them", "themselves", "then", "thence",
    "there", "thereafter", "thereby", "therefore", "therein", "thereupon", "these", "they", "thick", "thin",
    "third", "this", "those", "though", "three", "through", "throughout", "thru", "thus", "to", "together",
    "too", "top", "toward", "towards", "twelve", "twenty", "two", "un", "under", "until", "up", "upon", "us",
    "very", "via", "was", "we", "well", "were", "what", "whatever", "when", "whence", "whenever", "where",
    "whereafter", "whereas", "whereby", "wherein", "whereupon", "wherever", "whether", "which", "while",
    "whither", "who", "whoever", "whole", "whom", "whose", "why", "will", "with", "within", "without",
    "would", "yet", "you", "your", "yours", "yourself", "yourselves",
))

#: The named stop lists :func:`stop_word_list` (and ``GateConfig.stop_words``) accept. A new list is one
#: more entry here (a frozenset of lower-case words, with its source in a comment).
STOP_LISTS: Mapping[str, frozenset[str]] = MappingProxyType({
    "english": ENGLISH_STOP_WORDS,
})


def stop_word_list(stop_words: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The stop words as a sorted tuple: a name from :data:`STOP_LISTS`, a tuple of words, or none.

    >>> stop_word_list(("The", "a"))
    ('a', 'the')
    >>> len(stop_word_list("english")), stop_word_list(None)
    (318, ())
    """
    if stop_words is None or isinstance(stop_words, str) or (
            isinstance(stop_words, tuple) and all(isinstance(w, str) for w in stop_words)):
        return _stop_word_list(stop_words)
    raise _bad_stop_words(stop_words)


@lru_cache(maxsize=8)
def _stop_word_list(stop_words: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if stop_words is None:
        return ()
    if isinstance(stop_words, tuple):
        return tuple(sorted({w.lower() for w in stop_words}))
    if stop_words in STOP_LISTS:
        return tuple(sorted(STOP_LISTS[stop_words]))
    raise _bad_stop_words(stop_words)


def _bad_stop_words(stop_words: object) -> ValidationError:
    names = ", ".join(repr(n) for n in sorted(STOP_LISTS))
    return ValidationError(f"stop_words must be {names}, a tuple of words or None, got {stop_words!r}")


# ------------------------------------------------------------------------------------------------ n-grams
def word_ngrams(tokens: Sequence[str], ngram_range: tuple[int, int],
                stop_words: frozenset[str] | None = None) -> list[str]:
    """Word n-grams of ``tokens`` after dropping ``stop_words``: scikit-learn's ``_word_ngrams``, line for line.

    Unigrams first (in order), then bigrams, and so on, each joined by one space.

    >>> word_ngrams(["the", "db", "is", "down"], (2, 2), frozenset({"the", "is"}))
    ['db down']
    """
    if stop_words is not None:
        tokens = [w for w in tokens if w not in stop_words]
    min_n, max_n = ngram_range
    if max_n == 1:
        return list(tokens)
    original = tokens
    if min_n == 1:
        grams = list(original)
        min_n += 1
    else:
        grams = []
    n_orig = len(original)
    append = grams.append
    join = " ".join
    for n in range(min_n, min(max_n + 1, n_orig + 1)):
        for i in range(n_orig - n + 1):
            append(join(original[i : i + n]))
    return grams


def char_wb_ngrams(text: str, ngram_range: tuple[int, int]) -> list[str]:
    """Character n-grams inside whitespace-separated words, each word padded with one space:
    scikit-learn's ``_char_wb_ngrams``, line for line (a word shorter than ``n`` counts once).

    >>> char_wb_ngrams("api", (3, 3))
    [' ap', 'api', 'pi ']
    """
    text = _WHITESPACE_RE.sub(" ", text)
    min_n, max_n = ngram_range
    grams: list[str] = []
    append = grams.append
    for w in text.split():
        w = " " + w + " "
        w_len = len(w)
        for n in range(min_n, max_n + 1):
            offset = 0
            append(w[offset : offset + n])
            while offset + n < w_len:
                offset += 1
                append(w[offset : offset + n])
            if offset == 0:  # a short word (w_len < n) counts once
                break
    return grams


def char_wb_gram_set(token: str, ngram_range: tuple[int, int]) -> set[str]:
    """The distinct :func:`char_wb_ngrams` of one token (a word without whitespace), built directly as a new set.

    Equal to ``set(char_wb_ngrams(token, ngram_range))`` (``tests/test_text.py`` pins it): every substring
    of ``" " + token + " "`` of a length in the range, or the padded token alone when it is not longer than
    the smallest size.

    >>> sorted(char_wb_gram_set("api", (3, 3)))
    [' ap', 'api', 'pi ']
    >>> sorted(char_wb_gram_set("a", (3, 5)))
    [' a ']
    """
    w = " " + token + " "
    lo, hi = ngram_range
    n_w = len(w)
    if n_w <= lo:
        return {w}
    return {w[i : i + n] for n in range(lo, min(hi, n_w) + 1) for i in range(n_w - n + 1)}


def build_analyzers(
    *,
    word_ngram_range: tuple[int, int],
    char_ngram_range: tuple[int, int],
    stop_words: str | tuple[str, ...] | None,
    max_token_chars: int,
) -> tuple[Callable[[str], list[str]], Callable[[str], list[str]]]:
    """Return (word analyzer, char analyzer): what scikit-learn's ``build_analyzer()`` gives for
    :func:`word_vectorizer_kwargs` / :func:`char_vectorizer_kwargs`, without importing it.

    The recall path must not pay scikit-learn's import (seconds on a cold start): both analyzers expect
    text already passed through :func:`normalise`; the char analyzer expects the tokens joined by single
    spaces (as :class:`TokenJoiner` does).

    >>> word, char = build_analyzers(word_ngram_range=(1, 2), char_ngram_range=(3, 3),
    ...                              stop_words="english", max_token_chars=64)
    >>> word("run the db migrations")
    ['run', 'db', 'migrations', 'run db', 'db migrations']
    >>> char("db")
    [' db', 'db ']
    """
    tokenize = make_tokenizer(max_token_chars)
    stops = frozenset(stop_word_list(stop_words))

    def word(text: str) -> list[str]:
        return word_ngrams(tokenize(text), word_ngram_range, stops)

    def char(text: str) -> list[str]:
        return char_wb_ngrams(text, char_ngram_range)

    return word, char


# ------------------------------------------------------------------- the same analysis for scikit-learn
class Normaliser:
    """Picklable preprocessor for a scikit-learn vectorizer: :func:`normalise` with a fixed cap."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def __call__(self, text: str) -> str:
        return normalise(text, self.max_chars)


class TokenJoiner:
    """Picklable preprocessor for char n-grams: normalised tokens joined by single spaces.

    ``char_wb`` pads whitespace-separated words; joining tokens first keeps punctuation out of the
    grams (``"migrations,"`` gives the grams of ``"migrations"``).
    """

    def __init__(self, max_chars: int, max_token_chars: int) -> None:
        self.max_chars = max_chars
        self.max_token_chars = max_token_chars

    def __call__(self, text: str) -> str:
        return " ".join(make_tokenizer(self.max_token_chars)(normalise(text, self.max_chars)))


def word_vectorizer_kwargs(
    *,
    ngram_range: tuple[int, int],
    stop_words: str | tuple[str, ...] | None,
    max_chars: int,
    max_token_chars: int,
) -> dict[str, object]:
    """Keyword arguments for a scikit-learn word vectorizer that analyses text this module's way
    (the router's word features; :func:`word_ngrams` over :func:`make_tokenizer` gives the same terms)."""
    return {
        "analyzer": "word",
        "preprocessor": Normaliser(max_chars),
        "tokenizer": make_tokenizer(max_token_chars),
        "token_pattern": None,
        "lowercase": False,
        "stop_words": list(stop_word_list(stop_words)) or None,
        "ngram_range": tuple(ngram_range),
    }


def char_vectorizer_kwargs(*, ngram_range: tuple[int, int], max_chars: int, max_token_chars: int) -> dict[str, object]:
    """Keyword arguments for a scikit-learn ``char_wb`` vectorizer over this module's tokens
    (:func:`char_wb_ngrams` of the :class:`TokenJoiner` output gives the same grams)."""
    return {
        "analyzer": "char_wb",
        "preprocessor": TokenJoiner(max_chars, max_token_chars),
        "lowercase": False,
        "ngram_range": tuple(ngram_range),
    }
