"""BM25 computed in the engine, bit for bit what the store's ``bm25`` returns (recall engine v2, speed).

FTS5 evaluates ``bm25()`` for every row an OR query matches (about half a vault for three everyday words), which
costs more than the whole recall may. So recall reads each word's postings once per data version
(:meth:`~synapse_nb.store.base.RecallQueries.postings`, cached by :class:`Postings`) and replays the store's
formula with element-wise float64 numpy in the store's own operation order (:func:`bm25_top`), so every ranking
stays identical (tests/test_recall_bm25.py compares scores and order exactly against the store's ``bm25``).

For the ``"fts5"`` style (SQLite; sqlite3 ``fts5_aux.c``): ``N`` = rows of the whole index, ``avgdl`` = its total
tokens / ``N``; per query word ``i``, in query order (two words with one stem are two phrases, both counted):
``idf_i = log((N - n_i + 0.5) / (n_i + 0.5))`` (``1e-6`` when not positive), ``f_i`` = 0.0 plus ``w_body`` once per
occurrence in the body, then ``w_context`` once per occurrence in the context; ``score += idf_i * ((f_i * (k1 +
1)) / (f_i + k1 * (1 - b + b * D / avgdl)))``. The ``"sql"`` style (PostgreSQL's statement): distinct stems in
code-point order, ``f = w_body * tf_body + w_context * tf_context``, ``idf * f * (k1 + 1) / (...)``. ``log`` is
``math.log`` (the C library's, as SQLite's and PostgreSQL's), once per word; no reduction reaches a score.

**Weighed by people's records** (review 83). ``N``, ``avgdl`` and each ``n_i`` are read over the records recall
weighs by (:class:`Totals`): people's, every record of every mind but the agents' unverified ones (the store's counts
less their ``agents=True`` part), so no agent record changes any weight; every record's when the vault holds no
person's. Agents' records are scored with the same weights. A word only agents' unverified records hold (people's
``n`` 0) weighs ``ln((N + 0.5) / 0.5)``: a word no person's record holds, the most any word weighs among ``N``
people's records (finite: ``N`` is at least 1), as it would if the agents had not written it. On a vault of
people's records alone (or of agents' alone) this is the store's ``bm25`` exactly.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb.recall.rank import unique_sorted

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.context import Context
    from synapse_nb.recall.threads import ThreadIndex
    from synapse_nb.store.records import TermPostings

__all__ = ["MAX_CACHED_POSTINGS", "Postings", "Term", "Totals", "bm25_top", "weights_totals"]

#: Most postings held between recalls, all words together (the cache is emptied when full and whenever the vault
#: changes): about 24 bytes each, so at most ~100 MB.
MAX_CACHED_POSTINGS = 4_000_000
#: A query whose postings number at least 1/DENSE_FACTOR of the mind's documents sums into one slot per document;
#: a sparser one into the union of its postings (same additions, same order: the same bits either way).
DENSE_FACTOR = 8


class Term(NamedTuple):
    """One word's postings as positions into the mind's :class:`~synapse_nb.recall.threads.ThreadIndex`."""

    stem: str | None
    pos: np.ndarray  # int64, ascending
    tf_body: np.ndarray  # int64
    tf_context: np.ndarray  # int64
    n: int  # the documents holding it among the records recall weighs by (:class:`Totals`: people's)
    memo: dict[tuple[Any, ...], np.ndarray]  # f and summands per weights (filled on first use; dropped with the term)


class Totals(NamedTuple):
    """BM25's ``N`` and total token count over the records recall weighs by (people's: :func:`weights_totals`), and
    ``N`` over every record of the vault."""

    rows: int
    tokens: int
    vault_rows: int

    @property
    def people(self) -> bool:
        """Whether the weights leave agents' unverified records out (the vault holds some, and people's)."""
        return self.rows != self.vault_rows


def weights_totals(every: tuple[int, int], agents: tuple[int, int]) -> Totals:
    """The :class:`Totals` recall weighs by, from the store's (N, tokens) of every record and of the agents'
    unverified ones: people's, or every record's when the vault holds no person's (or they hold no word).

    >>> weights_totals((10, 80), (4, 20))
    Totals(rows=6, tokens=60, vault_rows=10)
    >>> weights_totals((4, 20), (4, 20))  # no person's record: every record's
    Totals(rows=4, tokens=20, vault_rows=4)
    """
    rows, tokens = every[0] - agents[0], every[1] - agents[1]
    if agents[0] <= 0 or rows <= 0 or tokens <= 0:
        return Totals(every[0], every[1], every[0])
    return Totals(rows, tokens, every[0])


def _term(p: TermPostings, idx: ThreadIndex, people: bool) -> Term:
    """The postings as positions into ``idx``: the mind's documents only, ascending; ``people``: weighed by people's
    records (``n`` leaves the agents' unverified documents out)."""
    import numpy as np

    if p.docs is not None:  # by the backend's document number (RankRow.doc)
        docs = np.asarray(p.docs, np.int64)
        order, by_doc = idx.doc_index()
        i = np.minimum(np.searchsorted(by_doc, docs), max(len(by_doc) - 1, 0))
        ok = by_doc[i] == docs if len(by_doc) else np.zeros(len(docs), bool)
        pos = order[i[ok]]
        tb, tc = np.asarray(p.tf_body, np.int64)[ok], np.asarray(p.tf_context, np.int64)[ok]
    else:  # by id
        pos_of = idx.pos.bulk()  # thousands of ids
        keep = [j for j, rid in enumerate(p.ids) if rid in pos_of]  # all, unless the store moved on mid-read
        pos = np.array([pos_of[p.ids[j]] for j in keep], np.int64)
        tb = np.array([p.tf_body[j] for j in keep], np.int64)
        tc = np.array([p.tf_context[j] for j in keep], np.int64)
    o = np.argsort(pos, kind="stable")
    n = max(0, int(p.n_vault) - int(p.n_agents)) if people else int(p.n_vault)
    return Term(p.stem, pos[o], tb[o], tc[o], n, {})


class Postings:
    """Per-word postings of one context's mind, cached per data version (bounded by :data:`MAX_CACHED_POSTINGS`)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._key: object = None
        self._terms: dict[str, Term] = {}
        self._held = 0
        self._totals: Totals | None = None

    def totals(self, version: object) -> Totals:
        """The :class:`Totals` recall weighs by at ``version`` (the store's, read once per version)."""
        store = self._ctx.store
        with self._lock:
            if self._key != (version, self._ctx.mind):
                self._key, self._terms, self._held, self._totals = (version, self._ctx.mind), {}, 0, None
            totals = self._totals
        if totals is None:
            totals = weights_totals(store.recall.rank_totals(), store.recall.rank_totals(agents=True))
            with self._lock:
                if self._key == (version, self._ctx.mind):
                    self._totals = totals
        return totals

    def get(self, words: Sequence[str], idx: ThreadIndex, version: object) -> tuple[dict[str, Term], Totals]:
        """Each word's :class:`Term`, and the :class:`Totals` it is weighed by, read at ``version``."""
        store, mind = self._ctx.store, self._ctx.mind
        totals = self.totals(version)
        with self._lock:
            terms = self._terms
            out = {w: terms[w] for w in words if w in terms}
        missing = [w for w in dict.fromkeys(words) if w not in out]
        if missing:
            got = store.recall.postings(mind, missing)
            out.update((w, _term(got[w], idx, totals.people)) for w in missing)
        with self._lock:
            if self._terms is terms:
                size = sum(len(out[w].pos) for w in missing)
                if self._held + size > MAX_CACHED_POSTINGS:
                    terms.clear()
                    self._held = 0
                terms.update((w, out[w]) for w in missing)
                self._held += size
        return out, totals


def _tf_fts5(t: Term, w_body: float, w_context: float) -> np.ndarray:
    """FTS5's f: 0.0, plus ``w_body`` once per body occurrence, then ``w_context`` once per context occurrence
    (kept with the term: it depends only on the postings and the weights)."""
    got = t.memo.get(("f", w_body, w_context))
    if got is None:
        got = t.memo[("f", w_body, w_context)] = _tf_fts5_compute(t, w_body, w_context)
    return got


def _tf_fts5_compute(t: Term, w_body: float, w_context: float) -> np.ndarray:
    import numpy as np

    f = np.zeros(len(t.pos))
    for tfs, w in ((t.tf_body, w_body), (t.tf_context, w_context)):
        top = int(tfs.max()) if len(tfs) else 0
        if top == 0:
            continue
        steps = np.zeros(top + 1)
        for k in range(1, top + 1):  # repeated addition from 0.0: exact as FTS5 sums it when f starts at 0
            steps[k] = steps[k - 1] + w
        if not f.any():
            f = steps[tfs]
            continue
        live = np.flatnonzero(tfs)
        g = f[live]
        left = tfs[live].copy()
        while len(live):
            g = g + w
            left -= 1
            done = left == 0
            f[live[done]] = g[done]
            live, g, left = live[~done], g[~done], left[~done]
    return f


def _contribution(t: Term, totals: tuple[int, ...], style: str, w_body: float, w_context: float, k1: float,
                  b: float, length: np.ndarray) -> np.ndarray:
    """The term's BM25 summand for each of its documents (kept with the term: the cache key carries everything
    it depends on, and the term itself is dropped when the vault changes). ``totals``: (N, total tokens) of the
    records weighed by (:class:`Totals`), ``t.n`` those of them holding it."""
    key = ("bm25", totals, style, w_body, w_context, k1, b)
    got = t.memo.get(key)
    if got is not None:
        return got
    n_rows, n_tokens = totals[0], totals[1]
    avgdl = float(n_tokens) / float(n_rows)
    idf = math.log((float(n_rows - t.n) + 0.5) / (float(t.n) + 0.5))
    if idf <= 0.0:
        idf = 1e-6
    d = length[t.pos]
    if style == "fts5":
        f = _tf_fts5(t, w_body, w_context)
        got = idf * ((f * (k1 + 1.0)) / (f + k1 * (1 - b + b * d / avgdl)))
    else:
        f = w_body * t.tf_body + w_context * t.tf_context
        got = idf * f * (k1 + 1.0) / (f + k1 * (1 - b + b * d / avgdl))
    t.memo[key] = got
    out: np.ndarray = got
    return out


def bm25_top(terms: Sequence[Term], idx: ThreadIndex, totals: tuple[int, ...], *, style: str, depth: int,
             w_body: float, w_context: float, k1: float, b: float,
             people: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the best ``depth`` documents and their scores (best first, ties by position = by id).

    ``terms`` are the query's words in query order (the ``"sql"`` style dedupes and sorts them by stem itself).
    Each document's score is 0.0 plus its summands in that order, as the store adds them.

    ``people``: when an agent's unverified record (``idx.agent``) is among the best ``depth``, the best ``people``
    of the people's records ranked below them follow (in the same order): people's records are found as if agents'
    were not there, however many short agent records hold the query's words. Without one, the result is the same.
    """
    import numpy as np

    n_rows = totals[0]
    terms = [t for t in terms if len(t.pos)]
    if not terms or depth <= 0 or n_rows <= 0:
        return np.zeros(0, np.int64), np.zeros(0)
    if style == "sql":
        by_stem = {t.stem: t for t in terms}
        terms = [by_stem[s] for s in sorted(by_stem, key=lambda s: "" if s is None else s)]
    elif style != "fts5":
        raise ValueError(f"unknown bm25 style {style!r}; fts5 or sql")
    parts = [_contribution(t, totals, style, w_body, w_context, k1, b, idx.length) for t in terms]
    if len(terms) == 1:
        u, score = terms[0].pos, parts[0] + 0.0
    elif sum(len(t.pos) for t in terms) * DENSE_FACTOR >= len(idx):  # dense: one slot per document of the mind
        score = np.zeros(len(idx))
        hit = np.zeros(len(idx), bool)
        for t, c in zip(terms, parts, strict=True):
            score[t.pos] += c  # positions are distinct within a term
            hit[t.pos] = True
        u = np.flatnonzero(hit)
        score = score[u]
    else:  # sparse: the union of the postings
        u = unique_sorted(np.concatenate([t.pos for t in terms]))
        score = np.zeros(len(u))
        for t, c in zip(terms, parts, strict=True):
            score[np.searchsorted(u, t.pos)] += c
    top, top_score = _best(u, score, depth)
    if people > 0 and len(u) > depth and idx.agent[top].any():
        mine = ~idx.agent[u]
        pu, ps = _best(u[mine], score[mine], people + depth)  # at most depth of them are in the top
        below = ~np.isin(pu, top)
        pu, ps = pu[below][:people], ps[below][:people]
        top, top_score = np.concatenate([top, pu]), np.concatenate([top_score, ps])
    return top, top_score


def _best(u: np.ndarray, score: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``n`` of positions ``u`` by ``score`` (best first, ties by position)."""
    import numpy as np

    if len(u) > n:
        cut = np.partition(-score, n - 1)[n - 1]  # the n-th best score: keep it and everything above
        keep = -score <= cut
        u, score = u[keep], score[keep]
    order = np.lexsort((u, -score))[:n]
    return u[order], score[order]
