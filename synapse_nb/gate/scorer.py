"""The deterministic relevance scorer used by recall.

A candidate's score is a pure function of ``(query, candidate text, doc_freq, n_docs, config)``:
it never depends on which other candidates are scored with it, on their order, on the cache, or on
``PYTHONHASHSEED``. So recall gives a candidate the same score whichever retrieval path found it.

How a score is made (see ``docs/gate.md``):

* **word channel** -- the query's word features (unigrams and bigrams after stop-word removal) each
  weigh ``idf``; a unigram's idf is ``ln((1 + n_docs) / (1 + df)) + 1`` with ``df`` from the caller
  (clamped to ``[0, n_docs]``, so the idf is always >= 1), a bigram weighs ``bigram_weight`` times the
  mean idf of its two words. The channel is the share of that weight the document contains.
* **char channel** -- each query unigram and each document word is split into ``char_wb`` n-grams;
  the similarity of two words is the Dice coefficient of their n-gram sets; a query term's
  *coverage* of a document is its best similarity to any (non-stop) word of the document (1 for a
  verbatim match). The channel is the idf-weighted mean of ``coverage ** char_power``, counting only
  similarities >= ``min_char_sim``. Comparing word to word (not query n-grams against all of a
  document's n-grams) stops a long document from collecting "mig", "ions" and "rat" from
  different words; the power keeps weak look-alikes small while "migrations"/"migration" or
  "deploy"/"deployment" keep most of their credit.
* ``score = (1 - char_weight) * word + char_weight * char``, in ``[0, 1]``.

Speed without changing a bit (``tests/test_gate_scorer_reference.py`` pins every score and matched term against
a straightforward reference): a document is analysed once into its non-stop words (one tokenisation: the word
analyser's unigrams are these words and its n-grams runs of them, looked up only when a query asks for them);
a word's n-grams and its similarity to a query term are kept per word (they never change), and a document keeps
its coverage of each term it was asked about. Sums are accumulated column by column in a fixed order (the sorted
query features, then the sorted query terms), n-gram overlaps are counted in integers, and no BLAS reduction
reaches a score, so a row never depends on the other rows, the cache or ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from synapse_nb.errors import ValidationError
from synapse_nb.text import build_analyzers, char_wb_gram_set, make_tokenizer, normalise, stop_word_list

__all__ = ["CorpusScorer", "GateConfig", "Match", "ScoreBatch", "idf", "query_terms"]


@dataclass(frozen=True)
class GateConfig:
    """Settings of the gate's text analysis and scoring; every field has a documented default.

    Parameters
    ----------
    word_ngram_range : tuple of int
        Word n-gram sizes (after stop-word removal). Default ``(1, 2)``: unigrams and bigrams.
    char_ngram_range : tuple of int
        ``char_wb`` n-gram sizes (words padded with a space). Default ``(3, 5)``.
    char_weight : float
        Weight of the char channel in the blend, in ``[0, 1]``. Default ``0.3``.
    stop_words : str, tuple of str or None
        A name from :data:`synapse_nb.text.STOP_LISTS` (``"english"``, scikit-learn's list, the
        default), a tuple of words, or ``None``.
    bigram_weight : float
        A query bigram weighs this times the mean idf of its words. Default ``0.5``.
    char_power : float
        Exponent applied to a term's char coverage (>= 1). Default ``2.0``.
    min_char_sim : float
        Word-to-word n-gram similarities below this count as 0. Default ``0.3``.
    fuzzy_explain : float
        A query unigram not found verbatim but whose char coverage reaches this is listed in
        :attr:`Match.matched` as ``"term~"``. Default ``0.5``.
    max_query_chars : int
        Only the first this-many characters of a query are analysed. Default ``2000``.
    max_doc_chars : int
        Only the first this-many characters of a document are analysed. Default ``20000``.
    max_token_chars : int
        Longer tokens (base64, hashes, junk) are dropped. Default ``64``.
    sublinear_tf : bool
        Used by the router's TF-IDF vectorizers (``1 + ln tf``). The recall scorer is binary (a term
        is in a document or not), so it ignores this. Default ``True``.

    Examples
    --------
    >>> GateConfig().word_ngram_range
    (1, 2)
    >>> GateConfig(char_weight=0.0).char_weight
    0.0
    """

    word_ngram_range: tuple[int, int] = (1, 2)
    char_ngram_range: tuple[int, int] = (3, 5)
    char_weight: float = 0.3
    stop_words: str | tuple[str, ...] | None = "english"
    bigram_weight: float = 0.5
    char_power: float = 2.0
    min_char_sim: float = 0.3
    fuzzy_explain: float = 0.5
    max_query_chars: int = 2000
    max_doc_chars: int = 20000
    max_token_chars: int = 64
    sublinear_tf: bool = True

    def __post_init__(self) -> None:
        for name in ("word_ngram_range", "char_ngram_range"):
            rng = getattr(self, name)
            if (
                not isinstance(rng, tuple)
                or len(rng) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in rng)
                or not 1 <= rng[0] <= rng[1]
            ):
                raise ValidationError(f"{name} must be a tuple (lo, hi) of ints with 1 <= lo <= hi, got {rng!r}")
        if not 0.0 <= float(self.char_weight) <= 1.0:
            raise ValidationError(f"char_weight must be in [0, 1], got {self.char_weight!r}")
        if not float(self.bigram_weight) >= 0.0:
            raise ValidationError(f"bigram_weight must be >= 0, got {self.bigram_weight!r}")
        if not float(self.char_power) >= 1.0:
            raise ValidationError(f"char_power must be >= 1, got {self.char_power!r}")
        if not 0.0 <= float(self.min_char_sim) <= 1.0:
            raise ValidationError(f"min_char_sim must be in [0, 1], got {self.min_char_sim!r}")
        if not 0.0 < float(self.fuzzy_explain) <= 1.0:
            raise ValidationError(f"fuzzy_explain must be in (0, 1], got {self.fuzzy_explain!r}")
        for name in ("max_query_chars", "max_doc_chars", "max_token_chars"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValidationError(f"{name} must be a positive int, got {v!r}")
        stop_word_list(self.stop_words)  # validates


@dataclass(frozen=True)
class Match:
    """How one document matches a query.

    Attributes
    ----------
    score : float
        Relevance in ``[0, 1]``; 0 means nothing of the query is in the document.
    matched : tuple of str
        Matched query terms (unigrams, ``"word word"`` bigrams, and ``"term~"`` for partial char
        matches), by weight descending then alphabetically.
    """

    score: float
    matched: tuple[str, ...] = field(default=())


_NO_MATCH = Match(0.0, ())


@dataclass(frozen=True)
class ScoreBatch:
    """Scores of a batch of documents, with matched terms computed on demand.

    Attributes
    ----------
    scores : numpy.ndarray
        One relevance in ``[0, 1]`` per document, in the order given.
    matched : callable
        ``matched(i)`` gives the matched terms of document ``i`` (as :attr:`Match.matched`).
    """

    scores: np.ndarray
    matched: Callable[[int], tuple[str, ...]]


def idf(df: int, n_docs: int) -> float:
    """Smoothed inverse document frequency, never below 1.

    ``df`` is clamped to ``[0, n_docs]``.

    >>> idf(0, 0)
    1.0
    >>> round(idf(1, 10), 4)
    2.7047
    """
    n = max(int(n_docs), 0)
    d = min(max(int(df), 0), n)
    return math.log((1 + n) / (1 + d)) + 1.0


def query_terms(text: str, config: GateConfig = GateConfig()) -> list[str]:
    """The query's word unigrams whose document frequencies the caller must look up.

    Lower-cased, accents stripped, split like SQLite FTS5's ``unicode61`` tokenizer (letters and
    digits; underscore and punctuation separate), stop words removed, sorted, deduplicated. Only the
    first ``config.max_query_chars`` characters are read.

    Examples
    --------
    >>> query_terms("How do we run the DB migrations? migrations!")
    ['db', 'migrations', 'run']
    >>> query_terms("the and of")
    []
    """
    stops = frozenset(stop_word_list(config.stop_words))
    tokens = make_tokenizer(config.max_token_chars)(normalise(text, config.max_query_chars))
    return sorted({t for t in tokens if t not in stops})


class _Doc:
    """One analysed document: its non-stop words in order and as a set (plain strings: no ids to assign)."""

    __slots__ = ("cov", "text", "toks", "words")

    def __init__(self, text: str, toks: tuple[str, ...]) -> None:
        self.text = text
        self.toks = toks  # the non-stop words in order: the word analyser's unigrams, its n-grams are runs of them
        self.words = frozenset(toks)
        # query term -> the document's char coverage of it (best similarity clearing the bar, else 0.0): a
        # pure function of (term, words, config), so it is kept with the document
        self.cov: dict[str, float] = {}

    def has_run(self, run: tuple[str, ...]) -> bool:
        """Whether the words of ``run`` follow each other somewhere in the document (a word n-gram, n >= 2);
        the caller has checked that every one of them is in :attr:`words`."""
        toks, first, m = self.toks, run[0], len(run)
        i = toks.index(first)
        while True:
            if toks[i : i + m] == run:
                return True
            try:
                i = toks.index(first, i + 1)
            except ValueError:
                return False


class _Batch:
    """A candidate list: its texts, their analyses, and (once it recurs) its columns per query feature and term:
    pure functions of the texts, kept so that a recurring list costs a lookup per column."""

    __slots__ = ("cov", "docs", "hits", "recurring", "texts")

    def __init__(self, texts: tuple[str, ...], docs: list[_Doc]) -> None:
        self.texts = texts
        self.docs = docs
        self.recurring = False  # seen again: worth keeping its columns
        self.hits: dict[str, np.ndarray] = {}  # word feature -> which documents have it
        self.cov: dict[str, np.ndarray] = {}  # query term -> each document's char coverage of it


class CorpusScorer:
    """Scores documents against a query with caller-supplied corpus statistics.

    Parameters
    ----------
    config : GateConfig
        Analysis and blend settings.
    cache_size : int
        How many analysed documents to keep (LRU) when :meth:`score` gets ``doc_keys``. 0 disables.

    Examples
    --------
    >>> s = CorpusScorer()
    >>> docs = ["Run migrations with alembic upgrade head", "Deploy with make release", "unrelated"]
    >>> ms = s.score("how do we run migrations?", docs, doc_freq={"migrations": 1, "run": 1}, n_docs=3)
    >>> [round(m.score, 3) for m in ms]
    [1.0, 0.0, 0.0]
    >>> ms[0].matched
    ('migrations', 'run', 'run migrations')
    >>> s.score("migration", docs, doc_freq={}, n_docs=3)[0].matched
    ('migration~',)
    """

    def __init__(self, config: GateConfig = GateConfig(), *, cache_size: int = 10_000) -> None:
        if not isinstance(config, GateConfig):
            raise ValidationError(f"config must be a GateConfig, got {type(config).__name__}")
        if not isinstance(cache_size, int) or cache_size < 0:
            raise ValidationError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self.config = config
        self.cache_size = cache_size
        self._word_an, self._char_an = build_analyzers(
            word_ngram_range=config.word_ngram_range, char_ngram_range=config.char_ngram_range,
            stop_words=config.stop_words, max_token_chars=config.max_token_chars)
        self._tokenize = make_tokenizer(config.max_token_chars)
        self._stops = frozenset(stop_word_list(config.stop_words))
        self._docs: OrderedDict[Hashable, _Doc] = OrderedDict()
        # a recurring candidate list (doc_keys -> _Batch): a warm large batch skips the per-document work
        self._batches: OrderedDict[tuple[Hashable, ...], _Batch] = OrderedDict()
        # word-level caches (bounded: dropped together when full; scores never depend on them)
        self._pool: dict[str, str] = {}  # one string object per distinct word of the cached documents (memory)
        self._grams: dict[str, tuple[str, ...]] = {}  # word -> its distinct char n-grams (~2 KB)
        # query term -> {word -> Dice similarity if it clears min_char_sim, else 0.0}, and the words > 0
        self._sims: dict[str, dict[str, float]] = {}
        self._near: dict[str, set[str]] = {}
        self._n_sims = 0
        self._max_grams = 100_000  # words whose n-grams are kept
        self._max_pool = 500_000  # distinct words pooled
        self._max_sims = 1_000_000  # (term, word) similarities kept

    # -- analysis ---------------------------------------------------------------------------
    def _analyse(self, text: str) -> _Doc:
        if not isinstance(text, str):
            raise ValidationError(f"every document must be str, got {type(text).__name__}")
        stops = self._stops
        # one tokenisation feeds both channels: the word analyser's features are these non-stop words and runs
        # of them (word_ngrams drops stop words first), looked up when a query asks for them
        toks = [t for t in self._tokenize(normalise(text, self.config.max_doc_chars)) if t not in stops]
        if len(self._pool) > self._max_pool:
            self._pool.clear()
        return _Doc(text, tuple(map(self._pool.setdefault, toks, toks)))

    def clear_cache(self) -> None:
        """Forget every analysed document (scores do not change, only speed)."""
        self._docs.clear()
        self._batches.clear()
        self._drop_word_caches()

    def _drop_word_caches(self) -> None:
        self._pool.clear()
        self._grams.clear()
        self._sims.clear()
        self._near.clear()
        self._n_sims = 0

    def _doc(self, key: Hashable | None, text: str) -> _Doc:
        if key is None or self.cache_size == 0:
            return self._analyse(text)
        d = self._docs.get(key)
        if d is not None and (d.text is text or d.text == text):
            self._docs.move_to_end(key)
            return d
        d = self._analyse(text)
        self._docs[key] = d
        if len(self._docs) > self.cache_size:
            self._docs.popitem(last=False)
        return d

    def _batch(self, docs: list[str], doc_keys: list[Hashable] | None) -> _Batch:
        batch_key = tuple(doc_keys) if doc_keys is not None and self.cache_size else None
        if batch_key is not None:
            hit = self._batches.get(batch_key)
            if hit is not None and hit.texts == tuple(docs):
                self._batches.move_to_end(batch_key)
                hit.recurring = True
                if len(hit.hits) + len(hit.cov) > 1024:
                    hit.hits.clear()
                    hit.cov.clear()
                return hit
        keys: Sequence[Hashable | None] = doc_keys if doc_keys is not None else [None] * len(docs)
        batch = _Batch(tuple(docs), [self._doc(k, t) for k, t in zip(keys, docs, strict=True)])
        if batch_key is not None:
            self._batches[batch_key] = batch
            if len(self._batches) > 4:
                self._batches.popitem(last=False)
        return batch

    def _cover(self, term: str, docs: list[_Doc]) -> None:
        """Set ``d.cov[term]`` for each of ``docs``: the best Dice similarity of ``term`` to a word of ``d``
        that clears ``min_char_sim`` (0.0 if none). A word's similarity to a term never changes: it is kept."""
        if self._n_sims > self._max_sims or len(self._grams) > self._max_grams:
            self._drop_word_caches()
        sims = self._sims.get(term)
        if sims is None:
            sims = self._sims[term] = {}
            self._near[term] = set()
        near = self._near[term]
        # a document holding the term itself covers it fully (2n / (n + n) is exactly 1.0, and no Dice
        # similarity exceeds 1): only the others' words need a similarity
        rest = []
        for d in docs:
            if term in d.words:
                if len(d.cov) >= 256:
                    d.cov.clear()
                d.cov[term] = 1.0
            else:
                rest.append(d)
        docs = rest
        new = set().union(*(d.words for d in docs)).difference(sims)
        if new:
            bar = max(self.config.min_char_sim, 1e-12)
            cng = self.config.char_ngram_range
            tg = char_wb_gram_set(term, cng)
            n_t = len(tg)
            grams = self._grams
            for w in new.difference(grams):
                grams[w] = tuple(char_wb_gram_set(w, cng))  # each n-gram once; only counted, so no order leaks
            shared = tg.intersection
            # exact integer count of shared n-grams, then Dice with the float operations of the numpy version
            # (int * 2.0, then / int); each word alone, so the set's order does not matter
            for w in new:
                g = grams[w]
                sim = 2.0 * len(shared(g)) / (n_t + len(g))
                if sim >= bar:
                    sims[w] = sim
                    near.add(w)
                else:
                    sims[w] = 0.0
            self._n_sims += len(new)
        for d in docs:  # the best of its words that clear the bar (usually none, or the term itself)
            if len(d.cov) >= 256:  # a document asked about many terms keeps the latest ones
                d.cov.clear()
            common = d.words & near
            d.cov[term] = max(map(sims.__getitem__, common)) if common else 0.0

    # -- scoring ----------------------------------------------------------------------------
    def score_batch(
        self,
        query: str,
        docs: Sequence[str],
        *,
        doc_freq: Mapping[str, int],
        n_docs: int,
        doc_keys: Sequence[Hashable] | None = None,
    ) -> ScoreBatch:
        """Score every document against ``query``; like :meth:`score` but as an array.

        The returned :class:`ScoreBatch` has ``scores`` (a float array, one per document) and computes
        matched terms only for the documents asked about, which keeps large candidate sets cheap.

        Score every document against ``query``.

        Parameters
        ----------
        query : str
            The query; only the first ``config.max_query_chars`` characters are analysed.
        docs : sequence of str
            Candidate texts; only the first ``config.max_doc_chars`` characters of each are analysed.
        doc_freq : mapping of str to int
            Document frequency of each term of :func:`query_terms` (missing terms count as 0).
        n_docs : int
            Number of documents the frequencies were counted over (>= 0).
        doc_keys : sequence of hashable, optional
            One stable key per document (e.g. ``"mem_ab12:updated_at"``). When given, analyses are
            cached under these keys; a key whose text changed is re-analysed.

        Returns
        -------
        list of Match
            One per document, in the order given. An empty, stop-word-only or punctuation-only
            query gives all-zero matches.

        Examples
        --------
        >>> CorpusScorer().score("", ["anything"], doc_freq={}, n_docs=1)
        [Match(score=0.0, matched=())]
        """
        if isinstance(docs, str):
            raise ValidationError("docs must be a sequence of str, not a single str")
        if not isinstance(n_docs, int) or isinstance(n_docs, bool) or n_docs < 0:
            raise ValidationError(f"n_docs must be an int >= 0, got {n_docs!r}")
        if not isinstance(doc_freq, Mapping):
            raise ValidationError(f"doc_freq must be a mapping of term to int, got {type(doc_freq).__name__}")
        docs = list(docs)
        if doc_keys is not None:
            doc_keys = list(doc_keys)
            if len(doc_keys) != len(docs):
                raise ValidationError(f"doc_keys has {len(doc_keys)} keys for {len(docs)} docs; give one key per doc")
        cfg = self.config
        norm_q = normalise(query, cfg.max_query_chars)
        terms = sorted({t for t in self._tokenize(norm_q) if t not in self._stops})
        if not docs or not terms:
            return ScoreBatch(np.zeros(len(docs)), lambda i: ())

        term_idf = {t: idf(_df(doc_freq, t), n_docs) for t in terms}
        # word features of the query, with weights; sorted by name for a fixed accumulation order
        wfeats: dict[str, float] = {}
        for f in self._word_an(norm_q):
            parts = f.split(" ")
            if len(parts) == 1:
                wfeats[f] = term_idf[f]
            else:
                wfeats[f] = cfg.bigram_weight * sum(term_idf[p] for p in parts) / len(parts)
        wnames = sorted(wfeats)
        wweights = np.array([wfeats[f] for f in wnames])

        batch = self._batch(docs, doc_keys)
        analysed = batch.docs
        n = len(docs)
        # word channel: which documents have each query feature ("a b" is the run ("a", "b"): words never hold
        # a space), then the weights summed column by column in the fixed order of wnames, so a row's sum never
        # depends on other rows
        word_hits = np.zeros((n, len(wnames)), dtype=bool)  # (n, k) presence
        wsets = [d.words for d in analysed]
        for j, f in enumerate(wnames):
            has: np.ndarray | list[bool] | None = batch.hits.get(f)
            if has is None:
                if " " not in f:
                    has = [f in w for w in wsets]
                else:
                    run = tuple(f.split(" "))
                    has = [w.issuperset(run) and d.has_run(run) for d, w in zip(analysed, wsets, strict=True)]
                if batch.recurring:
                    has = batch.hits[f] = np.array(has, dtype=bool)
            word_hits[:, j] = has
        word = np.zeros(n)
        for j in range(len(wnames)):
            word += word_hits[:, j] * wweights[j]
        word /= float(wweights.sum())

        # char channel: per query unigram, its best Dice similarity to a word of each document
        cov = np.zeros((n, len(terms)))
        for j, t in enumerate(terms):
            col: np.ndarray | list[float | None] | None = batch.cov.get(t)
            if col is None:
                got: list[float | None] = [d.cov.get(t) for d in analysed]
                if None in got:
                    self._cover(t, [d for d, c in zip(analysed, got, strict=True) if c is None])
                    got = [d.cov[t] for d in analysed]
                col = got
                if batch.recurring:
                    col = batch.cov[t] = np.array(got, dtype=np.float64)
            cov[:, j] = col
        tweights = np.array([term_idf[t] for t in terms])
        char = np.zeros(n)
        for j in range(len(terms)):
            char += (cov[:, j] ** cfg.char_power) * tweights[j]
        char /= float(tweights.sum())

        scores = np.clip((1.0 - cfg.char_weight) * word + cfg.char_weight * char, 0.0, 1.0)

        # explanation: exact features by weight desc then name, then fuzzy unigrams ("term~")
        order = sorted(range(len(wnames)), key=lambda j: (-wweights[j], wnames[j]))
        tpos = {t: j for j, t in enumerate(terms)}
        fuzzy = cov >= cfg.fuzzy_explain
        for t in terms:
            if t in wfeats:
                fuzzy[:, tpos[t]] &= ~word_hits[:, wnames.index(t)]
        forder = sorted(range(len(terms)), key=lambda j: (-tweights[j], terms[j]))

        # as Python lists once: indexing them is cheaper than numpy scalar access, row by row
        hits_l, fuzzy_l = word_hits.tolist(), fuzzy.tolist()

        def matched(i: int) -> tuple[str, ...]:
            if scores[i] <= 0.0:
                return ()
            row, frow = hits_l[i], fuzzy_l[i]
            return tuple([wnames[j] for j in order if row[j]] + [terms[j] + "~" for j in forder if frow[j]])

        return ScoreBatch(scores, matched)

    def score(
        self,
        query: str,
        docs: Sequence[str],
        *,
        doc_freq: Mapping[str, int],
        n_docs: int,
        doc_keys: Sequence[Hashable] | None = None,
    ) -> list[Match]:
        """Score every document against ``query``: one :class:`Match` per document, in order.

        Same parameters as :meth:`score_batch`; an empty, stop-word-only or punctuation-only query
        gives all-zero matches.

        Examples
        --------
        >>> CorpusScorer().score("", ["anything"], doc_freq={}, n_docs=1)
        [Match(score=0.0, matched=())]
        """
        batch = self.score_batch(query, docs, doc_freq=doc_freq, n_docs=n_docs, doc_keys=doc_keys)
        return [Match(float(sc), batch.matched(i)) if sc > 0.0 else _NO_MATCH
                for i, sc in enumerate(batch.scores)]


def _df(doc_freq: Mapping[str, int], term: str) -> int:
    v = doc_freq.get(term, 0)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValidationError(f"doc_freq[{term!r}] must be an int, got {v!r}")
    return int(v)
