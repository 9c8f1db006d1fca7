"""The router's features: word and ``char_wb`` TF-IDF rows, computed for a whole batch at once.

:class:`Featurizer` gives exactly ``normalize(hstack([word_tfidf, char_tfidf]))`` of two scikit-learn
``TfidfVectorizer`` s configured by :func:`synapse_nb.text.word_vectorizer_kwargs` and
:func:`~synapse_nb.text.char_vectorizer_kwargs` (``tests/test_gate_features.py`` checks it to 1e-12),
but faster: scikit-learn still learns the vocabularies (sorted) and the idf, while :meth:`Featurizer.counts`
replaces ``transform``. It analyses each *distinct token* once -- its unigram column and its ``char_wb``
n-gram columns are a pure function of the token and the fitted vocabulary, so they are cached (first come,
first kept, up to ``cache_size`` tokens) -- and builds the batch's sparse matrix with numpy. Per-query
character analysis in Python was the router's cost; a cache never changes a value.

:meth:`Featurizer.weigh` turns the term frequencies into rows of ``tf * idf ** idf_power``, each block
L2-normalised, then the concatenation: ``idf_power=1`` is TF-IDF (centroids, kNN); the linear model uses
a smaller power (see :class:`synapse_nb.gate.Router`).

Pure: no I/O; the analysis is :mod:`synapse_nb.text`'s.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from synapse_nb.errors import ValidationError
from synapse_nb.text import (
    build_analyzers,
    char_vectorizer_kwargs,
    fts_tokens,
    normalise,
    stop_word_list,
    word_vectorizer_kwargs,
)

__all__ = ["BLOCKS", "Featurizer"]

#: The feature blocks a :class:`Featurizer` can use, in column order.
BLOCKS: tuple[str, ...] = ("word", "char")


class Featurizer:
    """Word n-gram + ``char_wb`` n-gram TF-IDF rows for a batch of texts.

    Parameters
    ----------
    config
        A :class:`synapse_nb.gate.GateConfig` (``word_ngram_range``, ``char_ngram_range``, ``stop_words``,
        ``max_query_chars``, ``max_token_chars``, ``sublinear_tf``).
    blocks
        Which blocks to build, a subset of :data:`BLOCKS`. Default both.
    cache_size
        Distinct tokens whose columns are cached (a few hundred bytes each).

    Examples
    --------
    >>> from synapse_nb.gate import GateConfig
    >>> f = Featurizer(GateConfig(stop_words=None, char_ngram_range=(2, 5))).fit(["book a flight", "rain today"])
    >>> X = f.transform(["a flight today"])
    >>> X.shape[0], round(float(X.multiply(X).sum()), 6)
    (1, 1.0)
    """

    def __init__(self, config: Any, *, blocks: Sequence[str] = BLOCKS, cache_size: int = 50_000) -> None:
        blocks = tuple(blocks)
        if not blocks or any(b not in BLOCKS for b in blocks) or len(set(blocks)) != len(blocks):
            raise ValidationError(f"blocks must be a non-empty subset of {', '.join(BLOCKS)}, got {blocks!r}")
        if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 0:
            raise ValidationError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self.config = config
        self.blocks = tuple(b for b in BLOCKS if b in blocks)
        self.cache_size = cache_size

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, texts: list[str]) -> Featurizer:
        """Learn the vocabularies and idf (scikit-learn's ``TfidfVectorizer.fit``)."""
        from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: only when fitting

        cfg = self.config
        idf: list[np.ndarray] = []
        self.word_vocab: dict[str, int] = {}
        self.char_vocab: dict[str, int] = {}
        if "word" in self.blocks:
            word = TfidfVectorizer(
                **word_vectorizer_kwargs(
                    ngram_range=cfg.word_ngram_range, stop_words=cfg.stop_words,
                    max_chars=cfg.max_query_chars, max_token_chars=cfg.max_token_chars),
                sublinear_tf=cfg.sublinear_tf, dtype=np.float64)
            try:
                word.fit(texts)
            except ValueError:  # empty vocabulary
                raise ValidationError(
                    "no example has any word to learn from; give texts with letters or digits") from None
            self.word_vocab = dict(word.vocabulary_)
            idf.append(word.idf_)
        if "char" in self.blocks:
            char = TfidfVectorizer(
                **char_vectorizer_kwargs(
                    ngram_range=cfg.char_ngram_range, max_chars=cfg.max_query_chars,
                    max_token_chars=cfg.max_token_chars),
                sublinear_tf=cfg.sublinear_tf, dtype=np.float64)
            try:
                char.fit(texts)
            except ValueError:
                raise ValidationError(
                    "no example has any character n-gram to learn from; give texts with letters or digits") from None
            self.char_vocab = dict(char.vocabulary_)
            idf.append(char.idf_)
        self.n_word = len(self.word_vocab)
        self.idf = np.concatenate(idf).astype(np.float64)
        self._setup()
        return self

    def _setup(self) -> None:
        cfg = self.config
        self._stops = frozenset(stop_word_list(cfg.stop_words))
        _, self._char_grams = build_analyzers(
            word_ngram_range=cfg.word_ngram_range, char_ngram_range=cfg.char_ngram_range,
            stop_words=cfg.stop_words, max_token_chars=cfg.max_token_chars)
        self._cache: dict[str, array[int]] = {}
        self._unigrams = "word" in self.blocks and cfg.word_ngram_range[0] == 1
        self._idf_powers: dict[float, np.ndarray] = {}

    @property
    def n_features(self) -> int:
        """Columns of a row: the word vocabulary, then the char vocabulary."""
        return len(self.idf)

    def __getstate__(self) -> dict[str, Any]:
        # the char analyzer is a closure and the caches refill on use: none of them is pickled
        return {k: v for k, v in self.__dict__.items() if k not in ("_char_grams", "_cache", "_idf_powers", "_stops")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "idf" in state:
            self._setup()

    # -- transforming ---------------------------------------------------------------------------
    def _token_ids(self, token: str) -> array[int]:
        """Columns of one token: its word unigram (unless a stop word) and its char_wb n-grams."""
        ids = array("q")
        if len(token) > self.config.max_token_chars:  # junk: no feature, never cached
            return ids
        if self._unigrams and token not in self._stops:
            j = self.word_vocab.get(token)
            if j is not None:
                ids.append(j)
        if self.char_vocab:
            vocab, off = self.char_vocab, self.n_word
            ids.extend(off + vocab[g] for g in self._char_grams(token) if g in vocab)
        if len(self._cache) < self.cache_size:
            self._cache[token] = ids
        return ids

    def counts(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Term frequencies (sublinear when the config says so), one row per text, columns sorted."""
        cfg = self.config
        lo_n, hi_n = cfg.word_ngram_range
        lo = max(2, lo_n)
        multi = "word" in self.blocks and hi_n >= 2
        max_chars, max_tok = cfg.max_query_chars, cfg.max_token_chars
        wv, stops, cache, token_ids = self.word_vocab, self._stops, self._cache, self._token_ids
        cols = array("q")
        add, extend = cols.append, cols.extend
        lengths = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            start = len(cols)
            toks = fts_tokens(normalise(text, max_chars))
            for t in toks:
                ids = cache.get(t)
                extend(ids if ids is not None else token_ids(t))
            if multi:
                words = [t for t in toks if len(t) <= max_tok and t not in stops]
                for n in range(lo, hi_n + 1):
                    for k in range(len(words) - n + 1):
                        j = wv.get(" ".join(words[k : k + n]))
                        if j is not None:
                            add(j)
            lengths[i] = len(cols) - start
        n_rows = len(texts)
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        idx = np.frombuffer(cols, dtype=np.int64).copy() if len(cols) else np.zeros(0, dtype=np.int64)
        T = sp.csr_matrix((np.ones(len(idx), dtype=np.float64), idx, indptr), shape=(n_rows, self.n_features))
        T.sum_duplicates()  # counts; sorts each row's columns (word block first)
        if cfg.sublinear_tf:
            np.log(T.data, out=T.data)
            T.data += 1.0
        return T

    def weigh(self, T: sp.csr_matrix, *, idf_power: float = 1.0) -> sp.csr_matrix:
        """Rows of ``tf * idf ** idf_power``: each block to unit length, then the concatenation."""
        n = T.shape[0]
        if idf_power == 0.0:
            data = T.data.copy()
        else:
            weights = self._idf_powers.get(idf_power)
            if weights is None:
                weights = self._idf_powers[idf_power] = self.idf if idf_power == 1.0 else self.idf ** idf_power
            data = T.data * weights[T.indices]
        rows = np.repeat(np.arange(n), np.diff(T.indptr))
        is_word = T.indices < self.n_word
        sq = data * data
        w2 = np.bincount(rows[is_word], weights=sq[is_word], minlength=n)
        c2 = np.bincount(rows[~is_word], weights=sq[~is_word], minlength=n)
        wn, cn = np.sqrt(w2), np.sqrt(c2)
        wn[wn == 0] = 1.0
        cn[cn == 0] = 1.0
        total = np.sqrt((w2 > 0).astype(np.float64) + (c2 > 0))  # 0, 1 or 2 non-empty unit blocks
        total[total == 0] = 1.0
        data /= np.where(is_word, wn[rows], cn[rows]) * total[rows]
        return sp.csr_matrix((data, T.indices, T.indptr), shape=T.shape)

    def transform(self, texts: Sequence[str], *, idf_power: float = 1.0) -> sp.csr_matrix:
        """:meth:`counts` then :meth:`weigh`."""
        return self.weigh(self.counts(texts), idf_power=idf_power)
