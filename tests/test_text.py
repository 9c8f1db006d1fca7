"""synapse_nb.text is the one text analysis: pinned against scikit-learn where it mirrors it, and against
the expressions its callers used before it existed (so no golden output moves)."""

from __future__ import annotations

import doctest
import random
import re
import subprocess
import sys

import numpy as np
import pytest
from fresh import outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as SK_STOP_WORDS
from sklearn.feature_extraction.text import HashingVectorizer, TfidfVectorizer
from sklearn.feature_extraction.text import strip_accents_unicode as sk_strip_accents
from sklearn.preprocessing import normalize
from sklearn.utils.murmurhash import murmurhash3_32 as sk_murmurhash3_32

import synapse_nb.text as text
from synapse_nb.errors import ValidationError
from synapse_nb.store.embed import HashingEmbedder, hash_features, murmurhash3_32
from synapse_nb.text import (
    ENGLISH_STOP_WORDS,
    STOP_LISTS,
    build_analyzers,
    char_vectorizer_kwargs,
    char_wb_gram_set,
    char_wb_ngrams,
    fts_query_terms,
    fts_tokens,
    has_content_words,
    make_tokenizer,
    normalise,
    query_words,
    sklearn_tokens,
    stop_word_list,
    strip_accents_unicode,
    word_ngrams,
    word_tokens,
    word_vectorizer_kwargs,
)
from tests.conftest import cpu_seconds

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

# what real and hostile text holds: accents (composed and combining), underscores, punctuation, several
# kinds of whitespace, control characters, zero-width and bidi marks, CJK, ligatures, dotted/dotless i,
# letters whose lower case changes length, lone surrogates (from surrogateescape-decoded bytes)
ALPHABET = [
    *"abcdeiz ABCZ 0129 _-.,;:!?'\"()[]*#/\\@",
    "\t", "\n", "\r", "\x0b", "\x0c", "\xa0", "\u2003", "\u3000", "\x00", "\x07", "\x1f", "\x7f", "\x85",
    "\u200b", "\u200e", "\u2028", "\u202e", "\ufeff", "\uffff", "é", "e\u0301", "ñ", "Ü", "ß", "ﬁ", "İ", "ı",
    "Σ", "ς", "日", "本", "語", "한", "ا", "\u0663", "²", "Ⅻ", "\ud800", "\udcff", "🙂",
]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=120).map("".join) | st.text(max_size=80)
CRAFTED = [
    "", " ", "a", "the", "x y", "Run the alembic migrations before deploying the API!",
    "Crème brûlée naïve façade — ÉCOLE", "project_status v1.5 deployed; tests: 42 passed", "__init__ _ __",
    "日本語のテキスト と English mixed", "   spaced    out\t\ttext \n newlines  ", "snake_case_name CamelCase",
    "supercalifragilisticexpialidocious " * 3, "I, me, my, myself: and we are the ones",
    "x" * 63 + " " + "y" * 64 + " " + "z" * 65 + " " + "w" * 200, "a\x00b\x1fc\x7fd\u200be\ufefff",
    "İstanbul ΣΑΣ straße ﬁle", "e\u0301cole vs école", "bad \udcff bytes \ud800 here", "tab\tsep\u3000wide",
    "WHERE is project_status?" * 200, "'quoted' \"double\" OR NOT x* col:val (paren) ^boost",
]
GATE_SETTINGS = [  # (word range, char range, stop words, max chars, max token chars)
    ((1, 2), (3, 5), "english", 2000, 64),  # the gate's GateConfig() defaults
    ((1, 2), (2, 5), None, 2000, 64),  # the router's ROUTER_CONFIG
    ((2, 3), (1, 3), "english", 50, 8),  # caps that cut words and drop long tokens
    ((1, 3), (4, 4), ("The", "api", "ecole"), 300, 5),
]


def _sk(**kwargs: object):
    return TfidfVectorizer(**kwargs).build_analyzer()


# ------------------------------------------------------------------------------------------ stop lists
def test_stop_list_is_scikit_learns() -> None:
    assert frozenset(SK_STOP_WORDS) == ENGLISH_STOP_WORDS
    assert stop_word_list("english") == tuple(sorted(SK_STOP_WORDS))
    assert STOP_LISTS["english"] is ENGLISH_STOP_WORDS


def test_stop_lists_accept_names_tuples_none_and_nothing_else() -> None:
    assert stop_word_list(None) == ()
    assert stop_word_list(("B", "a", "b")) == ("a", "b")
    for bad in ("lucene", ["the"], ("the", 1), 3):
        with pytest.raises(ValidationError, match="'english', a tuple of words or None"):
            stop_word_list(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        STOP_LISTS["mine"] = frozenset()  # type: ignore[index]  # read-only: a new list is added in code


# ------------------------------------------------------------------- scikit-learn's analyzers, mirrored
@pytest.mark.parametrize("s", CRAFTED)
def test_strip_accents_equals_scikit_learn(s: str) -> None:
    assert strip_accents_unicode(s) == sk_strip_accents(s)


def _check_gate_analyzers(s: str) -> None:
    for wr, cr, stops, max_chars, max_tok in GATE_SETTINGS:
        word, char = build_analyzers(word_ngram_range=wr, char_ngram_range=cr, stop_words=stops,
                                     max_token_chars=max_tok)
        sk_word = _sk(**word_vectorizer_kwargs(ngram_range=wr, stop_words=stops, max_chars=max_chars,
                                               max_token_chars=max_tok))
        sk_char = _sk(**char_vectorizer_kwargs(ngram_range=cr, max_chars=max_chars, max_token_chars=max_tok))
        norm = normalise(s, max_chars)
        assert word(norm) == sk_word(s), (wr, stops, s)
        assert char(" ".join(make_tokenizer(max_tok)(norm))) == sk_char(s), (cr, s)


def _check_default_analyzers(s: str) -> None:
    """scikit-learn's own defaults (lower-case, two-letter tokens): the hashing embedder's analysis."""
    tokens = sklearn_tokens(s.lower())
    assert tokens == _sk(analyzer="word", ngram_range=(1, 1))(s)
    assert word_ngrams(tokens, (1, 2)) == _sk(analyzer="word", ngram_range=(1, 2))(s)
    assert word_ngrams(tokens, (2, 3), ENGLISH_STOP_WORDS) == _sk(analyzer="word", ngram_range=(2, 3),
                                                                   stop_words="english")(s)
    for rng in ((3, 5), (1, 2), (5, 5)):
        assert char_wb_ngrams(s.lower(), rng) == _sk(analyzer="char_wb", ngram_range=rng)(s)


@pytest.mark.parametrize("s", CRAFTED)
def test_analyzers_equal_scikit_learn_on_crafted_text(s: str) -> None:
    _check_gate_analyzers(s)
    _check_default_analyzers(s)


@SETTINGS
@given(TEXTS)
def test_analyzers_equal_scikit_learn_on_random_text(s: str) -> None:
    _check_gate_analyzers(s)
    _check_default_analyzers(s)


# --------------------------------------------------- the call sites' expressions, reproduced exactly
_FTS_BEFORE = re.compile(r"[^\W_]+", re.UNICODE)  # kinds/_base.py: _WORD.findall(text.lower())[:32]
_RECALL_BEFORE = re.compile(r"\w+")  # recall.py: _WORD.findall(query[:2000].lower()), len <= 64
_INDEX_BEFORE = re.compile(r"\w+", re.UNICODE)  # store/index.py: _TOKEN.findall(query.lower()) vs the stop list


def _check_call_sites(s: str) -> None:
    # folded as FTS5 folds what it indexes, no longer by str.lower alone (review 74: "İ" became "i" and U+0307,
    # which split the word); tests/test_search_fold.py holds the fold to FTS5's
    assert fts_query_terms(s) == _FTS_BEFORE.findall(text.fts_fold(s))[:32]
    assert query_words(s) == sorted({w for w in _RECALL_BEFORE.findall(s[:2000].lower()) if len(w) <= 64})
    assert has_content_words(s) == any(t not in SK_STOP_WORDS for t in _INDEX_BEFORE.findall(s.lower()))
    assert fts_tokens(s) == _FTS_BEFORE.findall(s) and word_tokens(s) == _RECALL_BEFORE.findall(s)


@pytest.mark.parametrize("s", CRAFTED)
def test_call_site_tokenisers_unchanged_on_crafted_text(s: str) -> None:
    _check_call_sites(s)


@SETTINGS
@given(TEXTS)
def test_call_site_tokenisers_unchanged_on_random_text(s: str) -> None:
    _check_call_sites(s)


def test_the_two_tokenisers_differ_on_underscore_only() -> None:
    s = "project_status: __init__ v1.5 _x_"
    assert fts_tokens(s) == ["project", "status", "init", "v1", "5", "x"]
    assert word_tokens(s) == ["project_status", "__init__", "v1", "5", "_x_"]
    assert fts_tokens(s.replace("_", " ")) == word_tokens(s.replace("_", " "))
    assert len(fts_query_terms("w " * 40)) == 32 and fts_query_terms("") == []
    assert query_words("x" * 64 + " " + "y" * 65) == ["x" * 64]
    with pytest.raises(ValidationError, match="must be text"):
        fts_query_terms(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- the hashing embedder
def _reference_embed(texts: list[str], dim: int = 256) -> np.ndarray:
    """The hashing embedder as it was built on scikit-learn's HashingVectorizer (index format 1)."""
    import scipy.sparse as sp

    common = dict(n_features=2**18, alternate_sign=True, norm="l2", lowercase=True, dtype=np.float32)
    word = HashingVectorizer(analyzer="word", ngram_range=(1, 2), **common)
    char = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5), **{**common, "norm": None})
    vocab: dict[str, int] = {}
    indices: list[int] = []
    indptr = [0]
    for t in texts:
        for w in t.lower().split():
            indices.append(vocab.setdefault(w, len(vocab)))
        indptr.append(len(indices))
    words = list(vocab)
    counts = sp.csr_matrix((np.ones(len(indices), dtype=np.float32), np.array(indices, dtype=np.int64),
                            np.array(indptr, dtype=np.int64)), shape=(len(texts), len(words)))
    counts.sum_duplicates()
    per_word = char.transform(words) if words else sp.csr_matrix((0, 2**18), dtype=np.float32)
    feats = sp.hstack([word.transform(texts), normalize(counts @ per_word, norm="l2", copy=False)], format="csr")
    emb = HashingEmbedder(dim)
    emb._ensure()
    out = np.asarray((feats @ emb._proj).todense(), dtype=np.float32)
    norms = np.linalg.norm(out, axis=1)
    empty = norms == 0
    norms[empty] = 1.0
    out /= norms[:, None]
    out[empty, 0] = 1.0
    return np.ascontiguousarray(out, dtype=np.float32)


def test_murmurhash_equals_scikit_learn() -> None:
    rng = random.Random(7)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", b"hello world", "é日本🙂".encode(), bytes(range(256)), b"x" * 1001]
    keys += [bytes(rng.randrange(256) for _ in range(rng.randrange(40))) for _ in range(3000)]
    assert murmurhash3_32(keys).tolist() == [sk_murmurhash3_32(k, seed=0) for k in keys]
    assert murmurhash3_32([]).shape == (0,)


def test_feature_hashing_equals_scikit_learn() -> None:
    docs = [["deploy", "the", "api", "deploy the"], [], ["é", "日本", "ab"] * 5, ["x" * 70]]
    ours = hash_features(docs, 2**18)
    ref = HashingVectorizer(analyzer=lambda d: d, n_features=2**18, norm=None, dtype=np.float32).transform(docs)
    assert (ours != ref).nnz == 0 and ours.has_canonical_format


@pytest.mark.parametrize("dim", [256, 64])
def test_hashing_embedder_is_bit_identical_to_the_scikit_learn_build(dim: int) -> None:
    rng = random.Random(dim)
    texts = [s for s in CRAFTED if "\ud800" not in s and "\udcff" not in s]  # UTF-8 cannot encode lone surrogates
    ok = [c for c in ALPHABET if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in c)]
    texts += ["".join(rng.choice(ok) for _ in range(rng.randrange(300))) for _ in range(300)]
    assert HashingEmbedder(dim).embed(texts).tobytes() == _reference_embed(texts, dim).tobytes()
    for t in texts[:40]:  # one at a time, as queries are embedded
        assert HashingEmbedder(dim).embed([t]).tobytes() == _reference_embed([t], dim).tobytes(), t


# ----------------------------------------------------------------------------------------- determinism
def test_same_bytes_whatever_the_hash_seed() -> None:
    code = (
        "import hashlib, synapse_nb.text as t\n"
        "s = 'Crème project_status: the DB migrations, run! ' * 3 + 'ÉCOLE ß İ 日本'\n"
        "w, c = t.build_analyzers(word_ngram_range=(1, 3), char_ngram_range=(2, 5), stop_words=('the', 'run'),"
        " max_token_chars=64)\n"
        "n = t.normalise(s, 2000)\n"
        "out = [w(n), c(n), t.query_words(s), t.fts_query_terms(s), t.stop_word_list('english'),"
        " t.stop_word_list(('b', 'a', 'c', 'B'))]\n"
        "print(hashlib.sha256(repr(out).encode()).hexdigest())\n"
    )
    outs = set(outputs(["-c", code], ["0", "1", "4242"]))
    assert len(outs) == 1


def test_text_module_examples_run() -> None:
    result = doctest.testmod(text, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 20 and result.failed == 0


def test_importing_text_and_the_gate_loads_no_scikit_learn() -> None:
    code = ("import sys, synapse_nb.text, synapse_nb.gate, synapse_nb.store.index, synapse_nb.store.embed; "
            "print(sorted(m for m in ('sklearn', 'lancedb', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_char_wb_gram_set_is_the_set_of_char_wb_ngrams_of_one_token() -> None:
    """The recall scorer builds one token's n-gram set directly; it must be exactly char_wb_ngrams' set."""
    tokens = ["a", "ab", "abc", "abcd", "abcdef", "aaaaaa", "abab", "migrations", "kafka1846", "strasse", "東京都",
              "данные", "x" * 64, "ﬁle", "0"]
    for tok in tokens:
        for rng in ((1, 1), (1, 3), (2, 4), (3, 3), (3, 5), (4, 6), (5, 9), (6, 6), (10, 12)):
            assert char_wb_gram_set(tok, rng) == set(char_wb_ngrams(tok, rng)), (tok, rng)


def test_tokenizer_fast_ascii_path_splits_exactly_like_the_fts_pattern() -> None:
    """make_tokenizer and fts_tokens split ASCII text without the regular expression: the pattern's tokens."""
    import random

    rng = random.Random(5)
    alphabet = [chr(c) for c in range(128)] + list("abcXYZ019_ -") * 8
    texts = ["", " ", "_", "a_b", "project_status: v1.5", "\x1c\x1dx\x1e\x1fy\x7f", "tab\tnew\nline\r\x0b\x0c"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 80))) for _ in range(3000)]
    texts += ["café and 東京_x", "naïve\u00a0space\u2003here"]  # not ASCII: the pattern itself
    tok = make_tokenizer(10_000)
    for t in texts:
        assert tok(t) == text.FTS_TOKEN_RE.findall(t) == fts_tokens(t), repr(t)
    assert make_tokenizer(3)("abcd ab_cde x") == ["ab", "cde", "x"]


# ------------------------------------------------------------------------------------------------ work per read
@pytest.mark.parametrize("unit", ["1", "a", "é", "字", "a1"])
def test_cutting_a_long_run_costs_work_in_proportion_to_its_length(unit: str) -> None:
    """normalise drops the word its cap cut through; the search for it read a run that does not end the text
    ("1111...1!" then the cut word) again from each position: 2 s for a document at the scorer's 20,000 characters
    (quadratic, ~64x for 8x). Eight times the text now costs about eight times the work."""

    def cut(n: int) -> None:
        normalise((unit * n)[: n - 2] + "!" + "b" * 10, n)

    cut(100)
    ratio = cpu_seconds(cut, 16_384) / max(cpu_seconds(cut, 2_048), 1e-5)
    assert ratio < 24, f"{unit!r}: {ratio:.1f}x the work for 8x the text"


def test_the_anchored_tail_pattern_cuts_what_the_first_one_cut() -> None:
    """The look-behind that keeps the cut linear changes no result: on a seeded corpus of texts of letters,
    digits, accents, underscores, spaces, punctuation and newlines, cut at every length, normalise gives the text
    the first pattern gave."""
    first = re.compile(r"[^\W_]+$")
    rng = random.Random(0)
    pieces = ["a", "bb", "1", "é", "字", "_", " ", "  ", "!", "-", "\n", "x1", "Zz", "\u200b", "ß"]
    checked = 0
    for _ in range(1_500):
        t = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
        for cap in range(len(t)):
            cut = t[:cap]
            assert text._PARTIAL_TAIL_RE.sub("", cut) == first.sub("", cut), (t, cap)
            checked += bool(first.search(cut))
    assert checked > 5_000  # the corpus does cut words
