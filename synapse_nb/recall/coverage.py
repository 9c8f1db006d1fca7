"""The gate's coverage, read off the ranking's own postings: no text is analysed per candidate.

A ranked record's *coverage* is the idf-weighted share of the query's words that its own text holds, each word
as the ranking indexes it (its porter stem, in the record's ``body`` column: the two records before it in its
thread, the ``context`` column, do not count). Its own text is its *unit's* (issue 33): the run of consecutive
records of one actor in its thread it belongs to (``ThreadIndex.head``/``tail``, at most
:data:`~synapse_nb.recall.threads.UNIT_MAX` records), since a person on a messaging app sends one thought as several
short messages ("guess what", "i got the job", "at the bakery!!"). A record alone in its unit (each turn of a
conversation whose speakers alternate, each record outside a thread) is read exactly as before.

Weights are the gate's smoothed idf, ``log((1 + N) / (1 + n)) + 1``, with ``N`` and ``n`` BM25's own: the rows of
the ranking index recall weighs by and those of them holding the stem, people's records of every mind (agents'
unverified records left out, review 83: :class:`~synapse_nb.recall.bm25.Totals`; every record in a vault with no
person's). A word that names one of the mind's actors (an episode's speaker) is held by that actor's records too
(and ``n`` is at least the number of them counted). A word none of those rows holds and no actor's name contains is
*unknown* (a name no person's record holds: one only agents' unverified records hold is unknown too); the unknown
share feeds the support (:func:`synapse_nb.recall.scoring.support`). So nothing an agent writes changes a person's
record's coverage, nor the unknown share: which floor applies is decided as if agents' unverified records were not
there (review 21), their words included.

Which words count: the query's ranking words (:func:`~synapse_nb.recall.rank.rank_words`), one per stem (the
first), except words in more than ``RankParams.max_postings`` records (too common to identify anything; their
postings are not read) and words FTS5's tokenizer splits into several terms (a phrase has no one stem). If that
leaves none, the words BM25 searched count.

Why not the routing gate's :class:`~synapse_nb.gate.CorpusScorer`: on LoCoMo conversations 0-6 this coverage
separates questions from off-topic ones better (benchmarks/recall_tune.py; docs/decisions/0008, third round) and
costs a few array lookups per query, where the scorer analysed every unseen candidate text (half of a recall's
time at 10,000 records).

Determinism: weights are Python floats from ``math.log``; each record's sum runs over the stems in code-point
order, in float64, then is rounded to :data:`~synapse_nb.recall.rank.SCORE_DECIMALS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from synapse_nb.gate.scorer import idf  # the gate's smoothed idf: one formula for the router and recall
from synapse_nb.recall.rank import SCORE_DECIMALS

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.recall.bm25 import Term
    from synapse_nb.recall.threads import ThreadIndex

__all__ = ["Cover", "cover_terms", "coverage"]


class Cover(NamedTuple):
    """What coverage reads for one query, per stem (code-point order): the query word shown for it, its weight,
    the positions whose own text holds it (ascending), the codes of the actors the word names (a record whose
    actor it names holds it too), and whether it is unknown (no record holds it and it names no actor); ``units``
    the index whose units a record's coverage is read over (None: each record alone)."""

    words: tuple[str, ...]
    weights: tuple[float, ...]
    body: tuple[np.ndarray, ...]
    actors: tuple[np.ndarray, ...]
    unknown: tuple[bool, ...]
    units: ThreadIndex | None = None

    @property
    def total(self) -> float:
        """The weights' sum."""
        return math.fsum(self.weights)

    @property
    def unknown_share(self) -> float:
        """The weighted share of the query's words that no record of the vault holds (0 without words)."""
        total = self.total
        if total <= 0:
            return 0.0
        return round(math.fsum(w for w, u in zip(self.weights, self.unknown, strict=True) if u) / total,
                     SCORE_DECIMALS)


def _body(t: Term) -> np.ndarray:
    """The term's positions whose body holds it (kept with the term)."""
    got = t.memo.get(("body",))
    if got is None:
        got = t.memo[("body",)] = t.pos[t.tf_body > 0]
    return got


def cover_terms(words: Sequence[str], terms: Mapping[str, Term], n_rows: int,
                idx: ThreadIndex | None = None, *, people: bool = False) -> Cover:
    """The :class:`Cover` of ``words`` (query order; each in ``terms``, the postings read for it, weighed among
    ``n_rows`` records); ``idx`` gives the mind's actors (none without it); ``people``: the records weighed by are
    people's (an actor's records counted are people's too)."""
    import numpy as np

    first: dict[str, str] = {}
    for w in words:
        stem = terms[w].stem
        if stem is not None and stem not in first:
            first[stem] = w
    stems = sorted(first)
    named = [idx.actors_named([first[s]]) if idx is not None else np.zeros(0, np.int64) for s in stems]
    # an actor's name weighs as a word held by every record the actor spoke, at least
    held = [max(terms[first[s]].n, idx.actor_records(a, people=people) if idx is not None else 0)
            for s, a in zip(stems, named, strict=True)]
    return Cover(tuple(first[s] for s in stems), tuple(idf(n, n_rows) for n in held),
                 tuple(_body(terms[first[s]]) for s in stems), tuple(named),
                 tuple(terms[first[s]].n <= 0 and not len(a) for s, a in zip(stems, named, strict=True)),
                 idx)


def coverage(cover: Cover, positions: np.ndarray, actor: np.ndarray | None = None) -> tuple[list[float],
                                                                                          list[tuple[str, ...]]]:
    """Each position's coverage (rounded) and the query words it holds (by weight, then word); ``actor`` is each
    position's actor code (-1: none)."""
    import numpy as np

    n = len(positions)
    total = cover.total
    if n == 0 or total <= 0:
        return [0.0] * n, [()] * n
    num = np.zeros(n)
    hits = []
    units = cover.units
    many = np.flatnonzero(units.head[positions] != units.tail[positions]) if units is not None else positions[:0]
    if units is not None and len(many):  # a record holds what any record of its unit holds (units of one: as before)
        members, owner = units.unit_members(units.head[positions[many]])
        owner = many[owner]
    for weight, body, named in zip(cover.weights, cover.body, cover.actors, strict=True):
        if len(body):
            i = np.minimum(np.searchsorted(body, positions), len(body) - 1)
            hit = body[i] == positions
            if len(many):
                j = np.minimum(np.searchsorted(body, members), len(body) - 1)
                hit = hit | (np.bincount(owner[body[j] == members], minlength=n) > 0)
        else:
            hit = np.zeros(n, bool)
        if len(named) and actor is not None:
            hit = hit | np.isin(actor, named)
        num = num + np.where(hit, weight, 0.0)
        hits.append(hit)
    cov = np.round(num / total, SCORE_DECIMALS).tolist()
    order = sorted(range(len(cover.words)), key=lambda k: (-cover.weights[k], cover.words[k]))
    matched = [tuple(cover.words[k] for k in order if hits[k][r]) for r in range(n)]
    return cov, matched
