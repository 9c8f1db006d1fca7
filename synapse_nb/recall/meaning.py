"""Expansion by meaning (issue 33): the question's words also search the vault's words closest to them in meaning.

In real chat the message that answers a question often shares no word with it ("did she get the job?" / "i was
hired!!"): BM25 cannot find it, and the semantic channel's dense list only holds the records closest to the whole
question. With the channel on and an embedder that gives a ``word_cosine`` (e5-small: 0.88), each content word
of the question (``rank_words``: no stop words; 3-64 letters a-z; never the name of one of the mind's actors)
looks up the vault's words (:mod:`synapse_nb.store.index.words`) by the exact cosine of the two single words'
vectors, best first, ties by word; it takes the first ``RankParams.expand_words`` with cosine at least
``word_cosine`` that the live vault holds, whose stem has postings in the mind and is not a stem of the question's
words. Each joins the BM25 sum (:func:`~synapse_nb.recall.bm25.bm25_top`'s ``extra``) at ``RankParams.expand`` x
its cosine (a stem two question words take keeps the larger). So BM25 itself finds such a message, before the
structure step, the dense fusion and the gate, which run as before; the gate's coverage still counts the
question's own words only.

What the neighbours look like (e5-small, chat-style LoCoMo conversation 0): lgbtq -> lgbt, transgender, trans;
group -> folks, gang, people; paint -> art; camping -> campfire, hiking. Chosen on chat-style LoCoMo 0-6 only
(docs/recall.md, "Expansion by meaning").

Cost per recall: a question word the vault holds has its vector in the table; another is embedded once per process
(:data:`MAX_CACHED_WORDS` kept); one exact cosine pass over the vault's words per question word (kept until the
table moves: ~0.4 ms at 10,000 words, ~2.6 ms at 50,000 on one busy core); the postings of the candidates (cached
per data version like the question's).

Deterministic: exact integer cosines, ties by word, candidates filtered by the live vault (``doc_freq`` and the
mind's postings), weights float64, added after the question's own summands in stem order.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

from synapse_nb.store.index.words import is_word

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.recall.bm25 import Term
    from synapse_nb.recall.threads import ThreadIndex
    from synapse_nb.store.embedders import Embedder
    from synapse_nb.store.index.words import WordMatrix

__all__ = ["MAX_CACHED_WORDS", "Expanded", "WordMeaning"]

#: Vectors of question words the vault does not hold, kept per process.
MAX_CACHED_WORDS = 5000
#: Candidates read per step (each step reads their ``doc_freq`` and postings), as a multiple of ``expand_words``.
STEP = 4


class Expanded(NamedTuple):
    """A word of the vault that joins a question's BM25 sum: its postings, its weight, the word itself and the
    question word it is close to."""

    term: Term
    weight: float
    word: str
    of: str


class WordMeaning:
    """The expansion of one vault handle's recalls: the vectors of question words the vault lacks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._skip: tuple[ThreadIndex, frozenset[str]] | None = None
        # each question word's close rows, for one copy of the table (a reload after a write starts afresh)
        self._near_table: WordMatrix | None = None
        self._near_kept: OrderedDict[tuple[str, float], tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def skip(self, idx: ThreadIndex) -> frozenset[str]:
        """Words never taken: the stop words, and every word of the mind's actors' names (kept per index)."""
        memo = self._skip
        if memo is not None and memo[0] is idx:
            return memo[1]
        from synapse_nb.recall.rank import RANK_STOP_WORDS
        from synapse_nb.text import FTS_TOKEN_RE, normalise

        got = RANK_STOP_WORDS | frozenset(w for a in idx.actor_names for w in FTS_TOKEN_RE.findall(normalise(a, 200)))
        self._skip = (idx, got)
        return got

    def _vector(self, emb: Embedder, table: WordMatrix, word: str) -> np.ndarray:
        """The quantised vector of ``word`` alone: the table's row, or embedded (kept)."""
        j = table.at.get(word)
        if j is not None:
            row: np.ndarray = table.vecs[j]
            return row
        key = (emb.fingerprint, word)
        with self._lock:
            got = self._vectors.get(key)
        if got is None:
            from synapse_nb.store.embedders import embed_quantized

            got = embed_quantized(emb, [word])[0]
            with self._lock:
                self._vectors[key] = got
                while len(self._vectors) > MAX_CACHED_WORDS:
                    self._vectors.popitem(last=False)
        return got

    def _near(self, emb: Embedder, table: WordMatrix, word: str, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``table`` with cosine >= ``threshold`` to ``word``, best first, ties by word, and every
        row's cosine; kept while the table is the same copy (:data:`MAX_CACHED_WORDS` words)."""
        import numpy as np

        with self._lock:
            if self._near_table is not table:
                self._near_table, self._near_kept = table, OrderedDict()
            got = self._near_kept.get((word, threshold))
        if got is not None:
            return got
        cos = table.cosines(self._vector(emb, table, word))
        above = np.flatnonzero(cos >= threshold)
        got = (above[np.lexsort((above, -cos[above]))], cos)  # rows are in word order
        with self._lock:
            if self._near_table is table:
                self._near_kept[(word, threshold)] = got
                while len(self._near_kept) > MAX_CACHED_WORDS // 10:
                    self._near_kept.popitem(last=False)
        return got

    def extra(self, emb: Embedder, table: WordMatrix | None, words: Sequence[str], terms: dict[str, Term],
              skip: Collection[str], threshold: float, most: int, weight: float,
              doc_freq: Callable[[list[str]], dict[str, int]],
              postings: Callable[[list[str]], dict[str, Term]]) -> list[Expanded]:
        """The words that join the BM25 sum (their terms and weights), in stem order.

        ``words``: the question's words sent to BM25, ``terms`` their postings; ``skip``: words never taken (the
        mind's actors' names, stop words); ``doc_freq`` and ``postings`` read the live vault's (cached per data
        version by the caller)."""

        if table is None or not table.words or most <= 0 or weight <= 0:
            return []
        stems = {terms[w].stem for w in words if w in terms}
        best: dict[str, Expanded] = {}
        for w in words:
            if not is_word(w) or w in skip or w not in terms:
                continue
            order, cos = self._near(emb, table, w, threshold)
            taken, start = 0, 0
            while taken < most and start < len(order):
                chunk = [(table.words[j], float(cos[j])) for j in order[start:start + STEP * most].tolist()]
                start += STEP * most
                chunk = [(c, x) for c, x in chunk if c != w and c not in skip]
                df = doc_freq([c for c, _ in chunk])
                live = [(c, x) for c, x in chunk if df.get(c, 0) > 0]
                got = postings([c for c, _ in live])
                for c, x in live:
                    t = got[c]
                    if t.stem is None or t.stem in stems or not len(t.pos):
                        continue
                    taken += 1
                    if t.stem not in best or best[t.stem].weight < weight * x:
                        best[t.stem] = Expanded(t, weight * x, c, w)
                    if taken >= most:
                        break
        return [best[s] for s in sorted(best)]
