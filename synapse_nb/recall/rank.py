"""Ranking: BM25 from the store's ranking table, then the conversation's structure (recall engine v2).

1. **Query words** (:func:`rank_words`): the query folded as FTS5's ``unicode61 remove_diacritics 2`` folds it,
   :data:`RANK_STOP_WORDS` removed (74 words: Lucene's 33, question words, contraction fragments, auxiliaries,
   pronouns). Words found in more than ``max_df`` of the vault's records are not sent to BM25 (an OR over
   near-universal words scores most of the vault); they still drive the actor boost and the gate.
2. **BM25** (:mod:`synapse_nb.recall.bm25`): the mind's best ``depth`` documents, each scored on its own text
   (``body``) and, at a lower weight, the two records before it in its thread (``context``), computed from the
   store's postings exactly as the store's :meth:`~synapse_nb.store.base.RecallQueries.bm25` computes it.
3. **Structure** (:func:`structure`), vectorised over per-mind arrays
   (:class:`~synapse_nb.recall.threads.ThreadIndex`, cached per data version): ``s`` = score / best score, raised to
   ``power``; ``f = s + prev * q * s[prev1] + next * s[next1]`` (``dist2`` x the same two steps away; ``q`` =
   ``question_mult`` when the previous record is a question: an answer follows its question) ``+ thread * max(s in
   the thread)``; ``x question_self`` when the record is itself a question (it repeats the words asked about; its
   answer holds what was asked); ``x actor_mult`` when the query names the record's actor; ``+`` tag / key / file
   bonuses. Records without a thread keep plain BM25. With ``unit_flow`` (off by default), a *unit* (one speaker's
   consecutive messages in a thread, back-channel turns left out) follows the unit before it as a whole: its later
   records get the ``prev`` (x ``question_mult``) flow its head gets, from that unit's best hit (units of one record,
   as in LoCoMo as written, are unchanged). A back-channel message (:func:`~synapse_nb.recall.asks.back_channel`) is
   not ranked (score 0; an exact-match bonus still counts). With the semantic channel on, below the first
   ``tail_keep`` records the records of an actor the query names are x ``tail_actor``, never above the head (a
   question about one person whose answer is several of their turns); and when the question reads as asking for
   several facts about that one person (:func:`asks_several`), below the first ``hop_keep`` records a second dense
   list (the question without the name, that person's records: ``structure``'s ``hop``) reorders the rest.

Every parameter was chosen on LoCoMo conversations 0-6 only (docs/decisions/0008-recall-engine-v2.md).

Determinism: BM25 is float64 computed in the store's fixed order; the structure step is element-wise
float64 arithmetic plus exact maxima (no reduction whose order could vary; ``x ** 1.5`` is ``x * sqrt(x)``,
sqrt being correctly rounded where ``pow`` is not guaranteed to be); final scores are rounded to
:data:`SCORE_DECIMALS` before the tie-break on the record id. No BLAS product reaches a score.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from synapse_nb.text import FTS_TOKEN_RE, normalise

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.recall.threads import ThreadIndex

__all__ = ["RANK_STOP_WORDS", "SCORE_DECIMALS", "RankParams", "Ranked", "asks_several", "fts_words",
           "rank_words", "structure", "unique_sorted", "without_actor"]

#: Lucene's classic English stop set, question words, what unicode61 leaves of contractions ("Ann's" -> ann, s),
#: auxiliaries of questions and personal pronouns: 74 words. Content words scikit-learn's list deletes (about,
#: from, go, take, describe, find, first, last, together, name, move) stay searchable.
RANK_STOP_WORDS: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "how",
    "s", "t", "d", "ll", "m", "re", "ve",
    "do", "does", "did", "has", "have", "had", "can", "could", "would", "should",
    "i", "me", "my", "you", "your", "he", "him", "his", "she", "her", "we", "our", "us", "its", "them",
))
#: Final scores are rounded to this many decimals before ordering (a bit-stable tie-break by id).
SCORE_DECIMALS = 9
#: Most words of one query sent to BM25 (the first, in query order).
MAX_RANK_WORDS = 64
_MAX_QUERY_CHARS = 2000
#: ``max_df`` applies from this many records on: below it an OR over every word costs well under a millisecond,
#: and in a small vault a word in 20% of the records can be the one that matters.
MAX_DF_MIN_DOCS = 2000


@dataclass(frozen=True)
class RankParams:
    """Ranking parameters; the defaults were chosen on LoCoMo conversations 0-6 (coordinate descent).

    Attributes
    ----------
    w_body, w_context : BM25 column weights (the record's text, the two records before it in its thread).
    k1, b : BM25's term-frequency saturation and length normalisation (FTS5's fixed 1.2 and 0.75: with other
        values recall's BM25 no longer equals the store's ``bm25``, which stays the reference).
    depth : BM25 candidates per query.
    max_df : words in more than this share of the vault's records are left out of the BM25 query.
    max_postings : ... and words in more than this many records (FTS5 scores every matching row: this bounds a
        query's cost in vaults over 100,000 records; below that ``max_df`` is the stricter of the two).
    power : exponent on the normalised BM25 score (1.5 sharpens the top).
    prev, question_mult : x the previous record's score (x ``question_mult`` more when it is a question).
    next : x the next record's score.  dist2 : factor for the records two steps away.
    thread : x the best score in the record's thread.  actor_mult : x when the query names the record's actor.
    question_self : x on a record that is itself a question (its answer, which the answer-follows-a-question
        flow lifts, usually holds what the query asks for).
    semantic : weight of the optional dense channel (0: off, the default; :mod:`synapse_nb.recall.semantic`).
    chat_words : each query word also matches the forms chat gives it (abbreviations, one-edit slips, lengthened
        letters) that the vault holds (:mod:`synapse_nb.recall.expand`).
    unit_flow : each later record of a unit (one speaker's consecutive messages) also gets the flow from the unit
        before it that its head gets (``prev``, ``question_mult``), from that unit's best hit: an answer sent as
        several messages follows the question as a whole. Off: on chat-style LoCoMo it was chosen on 0-6 (R@10
        +.013) and lost on 7-9 (-.017); docs/recall.md, "Real chat".
    tail_keep, tail_actor : with the semantic channel on (``semantic > 0``), the first ``tail_keep`` records keep
        their order and lead; below them, the records of an actor the query names are x ``tail_actor`` (capped at
        the ``tail_keep``-th score): a question about one person whose answer is several of their turns (LoCoMo's
        multi-hop) gets more of them into the top 10 without moving the head, where a single fact is (and where
        the labelled turn is sometimes the other speaker's). Chosen with the channel on by the mean dev objective of
        LoCoMo 0-6 and its chat-style rewrite (7, 1.15: multi-hop R@10 +.013 / +.004, R@10 +.003 / +.001). With the
        channel off the same point moves dev R@10 by .000 / -.001, so the channel-off ranking is unchanged
        (docs/recall.md, "Multi-hop, a further pass").
    hop_keep, hop_weight : with the semantic channel on, for a question that asks for several facts about the one
        speaker it names (:func:`asks_several`), a second dense query, the question without that name, lists that
        speaker's records (:func:`~synapse_nb.recall.semantic.DenseChannel.speaker_list`); below the first
        ``hop_keep`` records, each is x (1 + ``hop_weight`` x its score over that list's range), ordered so and
        capped at the ``hop_keep``-th score. Chosen with the channel on by the same dev rule (5, 1: LoCoMo multi-hop
        R@10 .469 -> .495, chat-style .370 -> .384; docs/recall.md, "Multi-hop, a second dense query"). 0: off.
    """

    w_body: float = 1.0
    w_context: float = 0.2
    k1: float = 1.2
    b: float = 0.75
    depth: int = 100
    max_df: float = 0.2
    max_postings: int = 20_000
    power: float = 1.5
    prev: float = 0.15
    question_mult: float = 6.0
    next: float = 0.5
    dist2: float = 0.5
    thread: float = 0.3
    actor_mult: float = 1.3
    question_self: float = 0.75
    semantic: float = 0.0
    chat_words: bool = True
    unit_flow: bool = False
    tail_keep: int = 7
    tail_actor: float = 1.15
    hop_keep: int = 5
    hop_weight: float = 1.0


#: A question asking for several facts: "has/have" then a participle ("What books has Tim read?", "Which cities has
#: John been to?"), "how many", "both" (chosen on LoCoMo 0-6: 87 of its 192 multi-hop questions, 53 of the 1,153
#: others). Two linear searches: one pattern with ".*" between them backtracked (0.6 s for "has " * 2,000).
_HAS = re.compile(r"\b(?:has|have)\b", re.I)
_PARTICIPLE = re.compile(r"\b\w+(?:ed|en|ne|ad|een)\b", re.I)
_MANY = re.compile(r"\bhow many\b|\bboth\b", re.I)


def asks_several(query: str) -> bool:
    """Whether ``query`` reads as asking for several facts: "how many" or "both", or "has"/"have" then a
    participle.

    >>> asks_several("What books has Tim read?"), asks_several("When did Tim read it?")
    (True, False)
    """
    if _MANY.search(query):
        return True
    has = _HAS.search(query)
    return has is not None and _PARTICIPLE.search(query, has.end()) is not None


def without_actor(query: str, name: str) -> str:
    """``query`` without the words of ``name`` (and their possessive), spaces collapsed.

    >>> without_actor("What are Priya's deploy steps, Priya?", "Priya")
    'What are deploy steps, ?'
    """
    for tok in re.findall(r"\w+", name):
        query = re.sub(rf"\b{re.escape(tok)}(['\u2019]s)?\b", " ", query, flags=re.I)
    return " ".join(query.split())


def rank_words(query: str) -> list[str]:
    """The query's distinct non-stop words, folded like FTS5's unicode61 tokenizer, in query order.

    >>> rank_words("When did Priya move the billing service to Postgres? Priya!")
    ['priya', 'move', 'billing', 'service', 'postgres']
    """
    toks = FTS_TOKEN_RE.findall(normalise(query, _MAX_QUERY_CHARS))
    out = list(dict.fromkeys(t for t in toks if t not in RANK_STOP_WORDS and len(t) <= 64))
    return out[:MAX_RANK_WORDS]


def fts_words(words: Sequence[str], doc_freq: Mapping[str, int], n_docs: int, max_df: float,
              max_postings: int | None = None, vault: tuple[Mapping[str, int], int] | None = None) -> list[str]:
    """The words sent to BM25: those in at most ``max_df`` of the ``n_docs`` records and at most ``max_postings``
    records (if none is, the rarest; ties: query order). A speed knob only, so vaults under
    :data:`MAX_DF_MIN_DOCS` records send every word.

    ``vault``: every record's (``doc_freq``, ``n_docs``) when ``doc_freq`` and ``n_docs`` are people's records'
    (review 83): the share is people's, so an agent's records never take a word out, and ``max_postings`` (the
    cost of the postings read, which hold every record) counts every record, from :data:`MAX_DF_MIN_DOCS` of them.

    >>> fts_words(["ann", "lake"], {"ann": 900, "lake": 3}, 2000, 0.2)
    ['lake']
    >>> fts_words(["ann", "lake"], {"ann": 90, "lake": 3}, 100, 0.2)
    ['ann', 'lake']
    >>> fts_words(["ann", "lake"], {"ann": 90, "lake": 3}, 100, 0.2, vault=({"ann": 990, "lake": 3}, 3000))
    ['ann', 'lake']
    """
    every, n_every = vault if vault is not None else (doc_freq, n_docs)
    if max_df >= 1.0 or not words:
        return list(words)
    share = max_df * n_docs if n_docs >= MAX_DF_MIN_DOCS else None
    cost = max_postings if n_every >= MAX_DF_MIN_DOCS else None
    kept = [w for w in words if (share is None or doc_freq.get(w, 0) <= share)
            and (cost is None or every.get(w, 0) <= cost)]
    return kept or [min(words, key=lambda w: (doc_freq.get(w, 0), every.get(w, 0)))]


@dataclass(frozen=True)
class Ranked:
    """One query's ranking: positions (into the :class:`~synapse_nb.recall.threads.ThreadIndex`) best first,
    rounded scores, and each score's parts for ``explain()``: ``bm25`` (normalised, after ``power``),
    ``neighbours``, ``thread``, ``actor`` (the multiplier) and ``bonus``."""

    pos: np.ndarray
    score: np.ndarray
    parts: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pos)


def unique_sorted(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of an int64 array by sorting (numpy 2's hash-based unique is slower on a few thousand ints).

    >>> import numpy as np
    >>> unique_sorted(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    import numpy as np

    if len(a) == 0:
        return a
    a = np.sort(a)
    keep = np.empty(len(a), bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _lookup(keys: np.ndarray, values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """values[keys == q] for each q (0 where q is not a key or q < 0); ``keys`` ascending."""
    import numpy as np

    if len(keys) == 0:
        return np.zeros(len(q))
    i = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
    return np.where((keys[i] == q) & (q >= 0), values[i], 0.0)


def _group_max(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per element, max(0, the largest of ``values`` over the elements of its group): a maximum is exact, so this
    equals ``np.maximum.at`` into zeros over ``np.unique(groups, return_inverse=True)``, in fewer numpy calls."""
    import numpy as np

    n = len(groups)
    if n == 0:
        return np.zeros(0)
    o = np.argsort(groups, kind="stable")
    g = groups[o]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    best = np.maximum(np.maximum.reduceat(values[o], starts), 0.0)
    out = np.empty(n)
    out[o] = np.repeat(best, np.diff(np.append(starts, n)))
    return out


def _unit_flow(idx: ThreadIndex, u: np.ndarray, keys: np.ndarray, vals: np.ndarray, p: RankParams) -> np.ndarray:
    """Per record of ``u``: ``prev`` x the best score among the hits of the unit before its own (x
    ``question_mult`` when that unit's last record asks), for the records of a unit but its head (the head has
    that unit's last record as ``prev1`` already); 0 for the others. ``keys``/``vals``: the hits' positions
    (ascending) and scores."""
    import numpy as np

    out = np.zeros(len(u))
    later = np.flatnonzero(idx.head[u] != u)
    if len(later) == 0 or len(keys) == 0:
        return out
    before = idx.prev1[idx.head[u[later]]]  # the last record of the unit before (-1: none)
    later, before = later[before >= 0], before[before >= 0]
    if len(later) == 0:
        return out
    heads = idx.head[keys]  # each hit's unit, by its head: the best hit of each unit
    o = np.lexsort((-vals, heads))
    h, v = heads[o], vals[o]
    first = np.concatenate(([True], h[1:] != h[:-1]))
    best = _lookup(h[first], v[first], idx.head[before])
    q = np.where(idx.question[before], p.question_mult, 1.0)
    out[later] = p.prev * q * best
    return out


def _named_tail(order: np.ndarray, f: np.ndarray, mult: np.ndarray, named: np.ndarray, u: np.ndarray,
                p: RankParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``order`` with its first ``p.tail_keep`` rows kept and the rest ordered by their score x ``p.tail_actor``
    where ``named`` (ties by position), those scores capped at the last kept row's (never above the head); the new
    scores and actor multipliers."""
    import numpy as np

    head, tail = order[:p.tail_keep], order[p.tail_keep:]
    boosted = np.round(np.where(named[tail], f[tail] * p.tail_actor, f[tail]), SCORE_DECIMALS)
    o = np.lexsort((u[tail], -boosted))
    f, mult = f.copy(), mult.copy()
    f[tail[o]] = np.minimum(boosted[o], f[head[-1]])
    mult[tail] = np.where(named[tail], mult[tail] * p.tail_actor, mult[tail])
    return np.concatenate([head, tail[o]]), f, mult


def _hop_tail(order: np.ndarray, f: np.ndarray, u: np.ndarray, hop: tuple[np.ndarray, np.ndarray],
              p: RankParams) -> tuple[np.ndarray, np.ndarray]:
    """``order`` with its first ``p.hop_keep`` rows kept and the rest ordered by their score x (1 + ``p.hop_weight``
    x their score in ``hop``: positions ascending, scores), ties by position, those scores capped at the last kept
    row's; the new scores."""
    import numpy as np

    head, tail = order[:p.hop_keep], order[p.hop_keep:]
    i = np.minimum(np.searchsorted(hop[0], u[tail]), max(len(hop[0]) - 1, 0))
    s2 = np.where(hop[0][i] == u[tail], hop[1][i], 0.0) if len(hop[0]) else np.zeros(len(tail))
    boosted = np.round(f[tail] * (1.0 + p.hop_weight * s2), SCORE_DECIMALS)
    o = np.lexsort((u[tail], -boosted))
    f = f.copy()
    f[tail[o]] = np.minimum(boosted[o], f[head[-1]])
    return np.concatenate([head, tail[o]]), f


def structure(idx: ThreadIndex, pos: np.ndarray, bm25: np.ndarray, words: Sequence[str],
              params: RankParams = RankParams(),
              bonus: Mapping[int, float] | tuple[np.ndarray, np.ndarray] | None = None,
              hop: tuple[np.ndarray, np.ndarray] | None = None) -> Ranked:
    """The structure step over BM25 hits (positions ``pos``, scores ``bm25``) and their neighbours at distance
    <= 2; ``bonus`` adds per-position exact-match bonuses (positions not among the hits join with BM25 0), as a
    mapping or as (positions ascending, each once; their bonuses)."""
    import numpy as np

    p = params
    if isinstance(bonus, tuple):
        bk, bv = bonus
    else:
        bonus = bonus or {}
        bk = np.array(sorted(bonus), np.int64)  # bonus positions ascending, and their values
        bv = np.array([bonus[k] for k in bk.tolist()], np.float64)
    o = np.argsort(pos, kind="stable")
    keys = pos[o]  # the hits' positions ascending (each once)
    if len(bk):  # bonus positions that are not hits
        i = np.minimum(np.searchsorted(keys, bk), max(len(keys) - 1, 0))
        extra = bk[keys[i] != bk] if len(keys) else bk
    else:
        extra = bk
    if len(pos) == 0 and len(extra) == 0:
        return Ranked(np.zeros(0, np.int64), np.zeros(0), {})
    top = float(bm25.max()) if len(bm25) else 0.0
    s_c = bm25 / top if top > 0 else np.zeros(len(bm25))
    if p.power == 1.5:
        s_c = s_c * np.sqrt(s_c)  # sqrt is correctly rounded (IEEE 754); pow() is not guaranteed to be
    elif p.power != 1.0:
        s_c = s_c ** p.power
    vals = s_c[o]
    nb = np.concatenate([keys, idx.prev1[keys], idx.prev2[keys], idx.next1[keys], idx.next2[keys], extra])
    if p.unit_flow:  # the members of the unit after each hit's unit
        after = idx.next1[idx.tail[keys]]
        after = unique_sorted(after[after >= 0])
        if len(after) and bool((idx.tail[after] != after).any()):
            nb = np.concatenate([nb, idx.unit_members(after[idx.tail[after] != after])[0]])
    u = unique_sorted(nb[nb >= 0])
    m = len(u)
    # the record, its two neighbours each side (-1: none): looked up among the hits at once
    near = np.concatenate([u, idx.prev1[u], idx.prev2[u], idx.next1[u], idx.next2[u]])
    got = _lookup(keys, vals, near)
    s, s_p1, s_p2, s_n1, s_n2 = got[:m], got[m:2 * m], got[2 * m:3 * m], got[3 * m:4 * m], got[4 * m:]
    p1, p2 = near[m:2 * m], near[2 * m:3 * m]
    # x question_mult after a question, 1 after any other record, 0 with none (only the records needed: the
    # index may hold a million)
    q1 = np.where(p1 >= 0, np.where(idx.question[np.maximum(p1, 0)], p.question_mult, 1.0), 0.0)
    q2 = np.where(p2 >= 0, np.where(idx.question[np.maximum(p2, 0)], p.question_mult, 1.0), 0.0)
    neigh = (p.prev * q1 * s_p1 + p.prev * p.dist2 * q2 * s_p2 + p.next * s_n1 + p.next * p.dist2 * s_n2)
    if p.unit_flow:  # the later members of a unit follow the previous unit as its head does (one turn, many messages)
        neigh = neigh + _unit_flow(idx, u, keys, vals, p)
    t = idx.thread[u]
    t = np.where(t >= 0, t, -1 - u)  # no thread: its own thread of one
    thread_part = p.thread * _group_max(t, s)
    f = s + neigh + thread_part
    qmult = np.where(idx.question[u], p.question_self, 1.0) if p.question_self != 1.0 else np.ones(m)
    f = f * qmult
    mult = np.ones(m)
    named = idx.actors_named(words)
    is_named = np.zeros(len(idx.actor_names) + 1, bool)  # the last slot: no actor (code -1)
    is_named[named] = True
    if len(named) and p.actor_mult != 1.0:
        mult = np.where(is_named[idx.actor[u]], p.actor_mult, 1.0)
        f = f * mult
    f = np.where(idx.brief[u], 0.0, f)  # a back-channel message ("haha", "oh nice") says nothing to find
    b = _lookup(bk, bv, u) if len(bk) else np.zeros(m)
    f = np.round(f + b, SCORE_DECIMALS)
    keep = np.flatnonzero(f > 0)
    order = keep[np.lexsort((u[keep], -f[keep]))]  # best first; ties by position = by id
    if p.semantic and p.tail_actor != 1.0 and len(named) and len(order) > p.tail_keep > 0:
        order, f, mult = _named_tail(order, f, mult, is_named[idx.actor[u]], u, p)
    if hop is not None and p.semantic and p.hop_weight and len(order) > p.hop_keep > 0:
        order, f = _hop_tail(order, f, u, hop, p)
    parts = {"bm25": s[order], "neighbours": neigh[order], "thread": thread_part[order], "question": qmult[order],
             "actor": mult[order], "bonus": b[order]}
    return Ranked(u[order], f[order], parts)
