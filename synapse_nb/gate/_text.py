"""Text normalisation and analyzers shared by the scorer and the router (private).

Everything here is a pure function of its input and the :class:`~synapse_nb.gate.scorer.GateConfig`;
nothing iterates a set or a dict of strings to build an order.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from synapse_nb.errors import ValidationError
from synapse_nb.gate._stopwords import ENGLISH_STOP_WORDS

_WHITESPACE_RE = re.compile(r"\s\s+")


def strip_accents_unicode(s: str) -> str:
    """Remove accents the way scikit-learn's ``strip_accents_unicode`` does (NFKD, drop combining marks)."""
    try:
        s.encode("ASCII", errors="strict")
        return s
    except UnicodeEncodeError:
        normalized = unicodedata.normalize("NFKD", s)
        return "".join(c for c in normalized if not unicodedata.combining(c))

# SQLite FTS5's unicode61 tokenizer treats every character that is not a letter or a number as a
# separator, underscore included: ``[^\W_]+`` is the same split (``\w`` minus ``_``), so the terms we
# ask the vault to look up are the terms its FTS5 vocabulary holds.
TOKEN_RE = re.compile(r"[^\W_]+")
_PARTIAL_TAIL_RE = re.compile(r"[^\W_]+$")
# C0/C1 control characters, DEL, and the Unicode "other" categories that carry no text.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff0-\uffff]+")


def normalise(text: str, max_chars: int) -> str:
    """Cap, clean, lower-case and strip accents from ``text``.

    Control characters and surrogates become spaces, so binary junk decoded as text does not
    glue words together or raise.
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be str, got {type(text).__name__}; decode bytes first")
    if len(text) > max_chars:
        cut = text[:max_chars]
        # never analyse half a word: drop a token the cap cut through
        text = _PARTIAL_TAIL_RE.sub("", cut) if TOKEN_RE.match(text, max_chars) else cut
    if not text.isascii():
        # lone surrogates (from surrogateescape-decoded bytes) cannot be normalised: drop them
        text = text.encode("utf-8", "replace").decode("utf-8")
        text = strip_accents_unicode(unicodedata.normalize("NFC", text))
    text = _CONTROL_RE.sub(" ", text)
    return text.lower()


def make_tokenizer(max_token_chars: int) -> Callable[[str], list[str]]:
    """Return a tokenizer that splits like FTS5 unicode61 and drops over-long tokens (junk)."""

    def tokenize(text: str) -> list[str]:
        return [t for t in TOKEN_RE.findall(text) if len(t) <= max_token_chars]

    return tokenize


@lru_cache(maxsize=8)
def stop_word_list(stop_words: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The stop words as a sorted tuple: ``"english"`` (scikit-learn's list), a tuple, or none."""
    if stop_words is None:
        return ()
    if stop_words == "english":
        return tuple(sorted(ENGLISH_STOP_WORDS))
    if isinstance(stop_words, tuple) and all(isinstance(w, str) for w in stop_words):
        return tuple(sorted({w.lower() for w in stop_words}))
    raise ValidationError(f"stop_words must be 'english', a tuple of words or None, got {stop_words!r}")


def word_vectorizer_kwargs(
    *,
    ngram_range: tuple[int, int],
    stop_words: str | tuple[str, ...] | None,
    max_chars: int,
    max_token_chars: int,
) -> dict[str, object]:
    """Keyword arguments for a scikit-learn word vectorizer that analyses text the gate's way."""
    return {
        "analyzer": "word",
        "preprocessor": _Normaliser(max_chars),
        "tokenizer": make_tokenizer(max_token_chars),
        "token_pattern": None,
        "lowercase": False,
        "stop_words": list(stop_word_list(stop_words)) or None,
        "ngram_range": tuple(ngram_range),
    }


def char_vectorizer_kwargs(*, ngram_range: tuple[int, int], max_chars: int, max_token_chars: int) -> dict[str, object]:
    """Keyword arguments for a scikit-learn ``char_wb`` vectorizer over the gate's tokens."""
    return {
        "analyzer": "char_wb",
        "preprocessor": _TokenJoiner(max_chars, max_token_chars),
        "lowercase": False,
        "ngram_range": tuple(ngram_range),
    }


class _Normaliser:
    """Picklable preprocessor: :func:`normalise` with a fixed cap."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def __call__(self, text: str) -> str:
        return normalise(text, self.max_chars)


class _TokenJoiner:
    """Picklable preprocessor for char n-grams: normalised tokens joined by single spaces.

    ``char_wb`` pads whitespace-separated words; joining tokens first keeps punctuation out of the
    grams (``"migrations,"`` gives the grams of ``"migrations"``).
    """

    def __init__(self, max_chars: int, max_token_chars: int) -> None:
        self.max_chars = max_chars
        self.max_token_chars = max_token_chars

    def __call__(self, text: str) -> str:
        return " ".join(make_tokenizer(self.max_token_chars)(normalise(text, self.max_chars)))


def build_analyzers(
    *,
    word_ngram_range: tuple[int, int],
    char_ngram_range: tuple[int, int],
    stop_words: str | tuple[str, ...] | None,
    max_token_chars: int,
) -> tuple[Callable[[str], list[str]], Callable[[str], list[str]]]:
    """Return (word analyzer, char analyzer): the analyzers scikit-learn's ``CountVectorizer`` builds
    from :func:`word_vectorizer_kwargs` / :func:`char_vectorizer_kwargs`, without importing it.

    The recall path must not pay scikit-learn's import (seconds on a cold start), so these are
    line-for-line ports of ``_word_ngrams`` and ``_char_wb_ngrams``; ``tests/test_gate_analysis.py``
    checks they give exactly what scikit-learn's ``build_analyzer()`` gives. Both expect text already
    passed through :func:`normalise`; the char analyzer expects the tokens joined by single spaces.
    """
    tokenize = make_tokenizer(max_token_chars)
    stops = frozenset(stop_word_list(stop_words))
    wmin, wmax = word_ngram_range
    cmin, cmax = char_ngram_range

    def word(text: str) -> list[str]:
        tokens = [w for w in tokenize(text) if w not in stops]
        if wmax == 1:
            return tokens
        original = tokens
        lo = wmin
        if wmin == 1:
            tokens = list(original)
            lo += 1
        else:
            tokens = []
        n_orig = len(original)
        for n in range(lo, min(wmax + 1, n_orig + 1)):
            for i in range(n_orig - n + 1):
                tokens.append(" ".join(original[i : i + n]))
        return tokens

    def char(text: str) -> list[str]:
        text = _WHITESPACE_RE.sub(" ", text)
        grams: list[str] = []
        for w in text.split():
            w = " " + w + " "
            w_len = len(w)
            for n in range(cmin, cmax + 1):
                offset = 0
                grams.append(w[offset : offset + n])
                while offset + n < w_len:
                    offset += 1
                    grams.append(w[offset : offset + n])
                if offset == 0:  # a short word (w_len < n) counts once
                    break
        return grams

    return word, char


def _identity(text: str) -> str:
    return text
