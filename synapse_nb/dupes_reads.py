"""What the duplicate check (:mod:`synapse_nb.dupes`) reads of the store: a record's candidates by BM25
(:func:`near`), the candidates' texts (:func:`fetch`) and the word statistics a pair is weighed by (:class:`Stats`).

A check may be told to leave some records out of the candidates (:class:`Apart`): an import into a mind that held
records compares the records it brought with those the mind held before it, never with each other, since the file's
vault judged those pairs and the file carries its links (review 92: a 3,001-record export into a vault of 301
memories made 5,924 more contradictions between its own records, in 58 s). A record's query then holds the rarest of
its words that some other record holds (:meth:`Apart.query`; none: it is not read at all), and as those records still
rank in BM25, a record whose best hits are among them is read deeper once (:func:`near`), so its candidates are the
best the rest of the mind holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb.models import kind_of_id

if TYPE_CHECKING:
    from synapse_nb.models import Record
    from synapse_nb.store.base import VaultStore
    from synapse_nb.store.records import RankHit

__all__ = ["DEEPEST", "Apart", "Stats", "fetch", "near"]

#: The deepest a record's candidates are read when records left out fill its hits (:func:`near`).
DEEPEST = 512


def _words(text: str) -> list[str]:
    from synapse_nb.recall.rank import rank_words  # light (no numpy); recall's own analysis (dupes.words)

    return rank_words(text)


class Apart(NamedTuple):
    """Records a check leaves out of the candidates (``ids``), and in how many of them each word occurs
    (``held``)."""

    ids: frozenset[str]
    held: Counter[str]

    @classmethod
    def of(cls, records: Sequence[Record]) -> Apart:
        return cls(frozenset(r.id for r in records), Counter(w for r in records for w in set(_words(r.text))))

    def query(self, words: Sequence[str], df: Mapping[str, int], most: int) -> list[str]:
        """The ``most`` rarest of a record's ``words`` (``df``: in how many records of the vault each occurs) that a
        record outside these holds: other words find none of those."""
        return sorted((w for w in set(words) if df.get(w, 0) > self.held[w]), key=lambda w: (df.get(w, 0), w))[:most]


def near(store: VaultStore, rec: Record, query: Sequence[str], depth: int, kinds: Sequence[str],
         apart: AbstractSet[str]) -> list[RankHit]:
    """The mind's best ``depth`` BM25 hits for ``query`` but those in ``apart``, then ``rec`` itself and kinds not in
    ``kinds`` left out. When the records left out took more than half the places of the ``depth`` read, it is read
    once more, ``len(apart)`` deeper (where every one of them fits), at most :data:`DEEPEST`: a file whose own
    records outrank a held record for its words that many times over keeps it out of the candidates, as the records
    written before a write keep out those they outrank."""
    got = store.recall.bm25(rec.mind, query, depth=depth)
    kept = [h for h in got if h.id not in apart] if apart else got
    if len(got) == depth and 2 * len(kept) < depth:
        got = store.recall.bm25(rec.mind, query, depth=min(depth + len(apart), max(DEEPEST, depth)))
        kept = [h for h in got if h.id not in apart]
    return [h for h in kept[:depth] if h.id != rec.id and kind_of_id(h.id) in kinds]


class Stats:
    """The word statistics of one check, read in its snapshot: every gate record's (``df``, ``n_docs``) and people's
    (``people``, ``n_people``: the agents' unverified records left out), which weigh a pair of two people's records.
    ``split``: the two differ (some person's record is checked, and the vault holds agents' unverified records);
    else ``people`` is ``df`` and nothing more is read."""

    def __init__(self, store: VaultStore, people: bool) -> None:
        self._recall = store.recall
        self.n_docs = self._recall.count()
        self.n_people = self.n_docs - self._recall.count(agents=True) if people else self.n_docs
        self.split = people and self.n_people != self.n_docs
        self.df: dict[str, int] = {}
        self.people: dict[str, int] = {} if self.split else self.df

    def read(self, terms: Sequence[str]) -> None:
        """Add these words' document frequencies (people's too when they differ: everyone's less the agents', one
        round trip on a team vault)."""
        if not terms:
            return
        every = self._recall.doc_freq(terms)
        self.df.update(every)
        if self.split:
            agents = self._recall.doc_freq([t for t in terms if t in every], agents=True)
            self.people.update((t, n - agents.get(t, 0)) for t, n in every.items() if n > agents.get(t, 0))


def fetch(store: VaultStore, mind: str, ids: Sequence[str], cand: dict[str, Any], stats: Stats) -> None:
    """Add these records of ``mind`` to the candidates read (with their words' document frequencies)."""
    if not ids:
        return
    by_kind: dict[str, list[str]] = {}
    for i in sorted(ids):
        by_kind.setdefault(str(kind_of_id(i)), []).append(i)
    got = store.recall.fetch(mind, by_kind)
    cand.update((c.id, c) for c in got)
    stats.read(sorted({w for c in got for w in _words(c.text)} - set(stats.df)))
