"""Text normalisation and analyzers shared by the scorer and the router (private).

Everything here is a pure function of its input and the :class:`~synapse_nb.gate.scorer.GateConfig`;
nothing iterates a set or a dict of strings to build an order.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer, strip_accents_unicode

from synapse_nb.errors import ValidationError

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
    """Return (word analyzer, char analyzer) built by scikit-learn's ``CountVectorizer``.

    Both expect text already passed through :func:`normalise`; the char analyzer expects the
    tokens joined by single spaces.
    """
    wkw = word_vectorizer_kwargs(
        ngram_range=word_ngram_range, stop_words=stop_words, max_chars=1, max_token_chars=max_token_chars
    )
    wkw["preprocessor"] = _identity
    word = CountVectorizer(**wkw).build_analyzer()  # type: ignore[arg-type]
    ckw = char_vectorizer_kwargs(ngram_range=char_ngram_range, max_chars=1, max_token_chars=max_token_chars)
    ckw["preprocessor"] = _identity
    char = CountVectorizer(**ckw).build_analyzer()  # type: ignore[arg-type]
    return word, char


def _identity(text: str) -> str:
    return text
