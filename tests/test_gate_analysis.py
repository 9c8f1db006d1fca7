"""The gate's sklearn-free analyzers must give exactly what scikit-learn's CountVectorizer gives."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer
from sklearn.feature_extraction.text import strip_accents_unicode as sk_strip

from synapse_nb.text import ENGLISH_STOP_WORDS as OURS
from synapse_nb.text import (
    build_analyzers,
    char_vectorizer_kwargs,
    make_tokenizer,
    normalise,
    strip_accents_unicode,
    word_vectorizer_kwargs,
)


def _identity(text):  # the analyzers are compared on text already normalised
    return text


TEXTS = [
    "", "a", "the", "Run the alembic migrations before deploying the API!", "x y",
    "Crème brûlée naïve façade — ÉCOLE", "project_status v1.5 deployed; tests: 42 passed",
    "日本語のテキスト と English mixed", "   spaced    out\t\ttext \n newlines  ",
    "supercalifragilisticexpialidocious " * 3, "I, me, my, myself: and we are the ones",
]


def test_stop_words_equal_sklearn():
    assert frozenset(OURS) == frozenset(ENGLISH_STOP_WORDS)


@pytest.mark.parametrize("text", TEXTS)
def test_strip_accents_equal_sklearn(text):
    assert strip_accents_unicode(text) == sk_strip(text)


@pytest.mark.parametrize("word_range,char_range,stops", [((1, 2), (3, 5), "english"), ((1, 1), (2, 5), None),
                                                          ((2, 3), (1, 3), "english"), ((1, 3), (4, 4), None)])
def test_analyzers_equal_sklearn(word_range, char_range, stops):
    word, char = build_analyzers(word_ngram_range=word_range, char_ngram_range=char_range, stop_words=stops,
                                 max_token_chars=64)
    wkw = word_vectorizer_kwargs(ngram_range=word_range, stop_words=stops, max_chars=1, max_token_chars=64)
    wkw["preprocessor"] = _identity
    ckw = char_vectorizer_kwargs(ngram_range=char_range, max_chars=1, max_token_chars=64)
    ckw["preprocessor"] = _identity
    sk_word = CountVectorizer(**wkw).build_analyzer()
    sk_char = CountVectorizer(**ckw).build_analyzer()
    tok = make_tokenizer(64)
    for text in TEXTS:
        norm = normalise(text, 10_000)
        assert word(norm) == sk_word(norm), text
        joined = " ".join(tok(norm))
        assert char(joined) == sk_char(joined), text


def test_recall_path_does_not_import_sklearn():
    code = ("import sys, synapse_nb as syn, tempfile; v = syn.open_vault(tempfile.mkdtemp()); "
            "v.remember('project', 'status', 'deployed the api'); v.recall('api status'); "
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
