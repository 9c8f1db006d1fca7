"""The per-mind arrays recall's structure step reads: each ranked record's thread, neighbours, actor and unit.

:class:`ThreadIndex` is built once per data version from the store's :class:`~synapse_nb.store.records.RankRow`
rows (``recall/candidates.py`` caches it; ``recall/rankfile.py`` keeps it on disk) and patched in place of a
rebuild when a few records change; :class:`Positions` maps a record id to its position in it. The ranking itself
(BM25's candidates through the structure step) is :mod:`synapse_nb.recall.rank`.
"""

from __future__ import annotations

import itertools
import operator
from bisect import bisect_left
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from synapse_nb.provenance import REPORTED_ACTOR
from synapse_nb.text import FTS_TOKEN_RE, normalise

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.store.records import RankRow

    #: The index's columns as :func:`_columns` builds them: ids, kinds, question, length, doc, thread, seq, actor,
    #: back-channel, agent's.
    _Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                     np.ndarray, np.ndarray]

__all__ = ["UNIT_MAX", "Positions", "ThreadIndex"]

#: Most records of one unit (consecutive records of one actor in a thread: one thought sent as several short
#: messages); a longer run is cut in units of this many, so an agent that logs a whole thread alone does not make
#: it one unit.
UNIT_MAX = 6

_T = TypeVar("_T")
_ROW_ID = operator.attrgetter("id")
_NO_SEQ = {None: 0}


def _codes(names: Sequence[str], *none: object) -> dict[object, int]:
    """name -> its position in ``names``; each of ``none`` -> -1 (no thread, no actor)."""
    out: dict[object, int] = {n: j for j, n in enumerate(names)}
    out.update((x, -1) for x in none)
    return out


def _fields(rows: Sequence[RankRow]) -> list[list[Any]]:
    """The rows' fields as lists, in RankRow's order (kind, id, thread, seq, actor, question, length, doc,
    expires_at, head, agent): one map per field at C speed, no per-row attribute reads."""
    return [list(map(operator.itemgetter(k), rows)) for k in range(11)]


def _columns(fields: list[list[Any]], tcode: Mapping[object, int], acode: Mapping[object, int]) -> _Columns:
    """:func:`_fields` as the index's columns: ids and kinds (object arrays), question (a ``?``, or a message that
    opens as a question: :func:`~synapse_nb.recall.asks.asks`), length, doc, thread code, seq (None: 0), actor code,
    back-channel (:func:`~synapse_nb.recall.asks.back_channel`), an agent's unverified record."""
    import numpy as np

    from synapse_nb.recall.asks import asks, back_channel

    kinds, ids, threads, seqs, actors, questions, lengths, docs, _, heads, agents = fields
    ids_a, kinds_a = np.empty(len(ids), dtype=object), np.empty(len(ids), dtype=object)
    ids_a[:], kinds_a[:] = ids, kinds
    question = np.array(questions, dtype=bool)
    brief = np.zeros(len(ids), bool)
    for j in itertools.compress(range(len(heads)), heads):  # threaded records without a "?"
        question[j], brief[j] = asks(heads[j]), back_channel(heads[j])
    return (ids_a, kinds_a, question, np.array(lengths, np.float64), np.array(docs, np.int64),
            np.array(list(map(tcode.__getitem__, threads)), np.int64),
            np.array(list(map(_NO_SEQ.get, seqs, seqs)), np.int64),
            np.array(list(map(acode.__getitem__, actors)), np.int64), brief, np.array(agents, dtype=bool))


class Positions(Mapping[str, int]):
    """id -> its position in a sorted list of ids, found by binary search.

    A dict of a million ids costs ~0.35 s to build, and the positions of a patched index shift, so a dict would be
    built again after every write; a lookup here costs a few comparisons (recall looks up a few dozen ids).
    :meth:`bulk` builds the dict once for callers that look up thousands (a team vault's postings come by id).

    >>> p = Positions(["a", "c", "d"])
    >>> p["c"], p.get("b"), "d" in p, len(p)
    (1, None, True, 3)
    """

    __slots__ = ("_dict", "_ids")

    def __init__(self, ids: Sequence[str]) -> None:
        self._ids = ids  # sorted, distinct
        self._dict: dict[str, int] | None = None

    @overload
    def get(self, rid: str, /) -> int | None: ...
    @overload
    def get(self, rid: str, default: int, /) -> int: ...
    @overload
    def get(self, rid: str, default: _T, /) -> int | _T: ...
    def get(self, rid: object, default: object = None, /) -> object:
        """The position of ``rid`` (any key is accepted, as by ``dict.get``), else ``default``."""
        if not isinstance(rid, str):
            return default
        i = self._dict.get(rid) if self._dict is not None else self._find(rid)
        return default if i is None else i

    def _find(self, rid: str) -> int | None:
        """Binary search of the sorted ids."""
        ids = self._ids
        i = bisect_left(ids, rid)
        return i if i < len(ids) and ids[i] == rid else None

    def __getitem__(self, rid: str) -> int:
        i = self.get(rid)
        if i is None:
            raise KeyError(rid)
        return i

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and self.get(rid) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def bulk(self) -> dict[str, int]:
        """The same mapping as a dict (built on first call, then kept): for thousands of lookups at once."""
        if self._dict is None:
            self._dict = dict(zip(self._ids, range(len(self._ids)), strict=True))
        return self._dict

    def many(self, ids: Sequence[str]) -> np.ndarray:
        """The positions of ``ids`` at once (int64, -1 for an id not here): the dense list's people reserve looks up
        a few thousand ids a recall, where a whole-mind dict would cost more than the lookups.

        >>> Positions(["a", "c", "d"]).many(["d", "b", "a"]).tolist()
        [2, -1, 0]
        """
        import numpy as np

        return np.array([self.get(i, -1) for i in ids], np.int64)


class ThreadIndex:
    """Per-mind arrays for the structure step, built from the store's :class:`RankRow` s (cache per data version).

    Positions index the rows in id order (``pos``: id -> position, :class:`Positions`). ``prev1/prev2/next1/next2``
    hold neighbour positions (-1: none; a person's record's are people's records, as if agents' unverified ones were
    not in its thread, and its unit holds people's records alone: an agent's record may link to anyone, review 70),
    ``thread`` a thread code (-1: none), ``question`` whether the record
    holds a ``?``, ``actor`` an actor code, ``length`` the document's token count, ``expiry`` id -> expires_at of
    the memories that carry one, ``head``/``tail`` the first and last position of the record's *unit* (the run of
    consecutive records of one actor in its thread it belongs to, at most :data:`UNIT_MAX`, back-channel records
    left out; a record alone, a back-channel record, or one outside a thread, is its own unit): the gate's coverage
    reads a unit as one message, and the structure step lets a unit follow the unit before it as a whole; ``agent``
    whether a record is an agent's no person verified (recall finds and judges people's records as if those were
    not there).
    """

    def __init__(self, rows: Sequence[RankRow]) -> None:
        f = _fields(sorted(rows, key=_ROW_ID))
        ids, threads, actors, expiries = f[1], f[2], f[4], f[8]
        self.thread_names = sorted(set(threads) - {None})  # thread code -> its name
        actor_names = sorted(set(actors) - {None, ""})
        ids_a, kinds_a, question, length, doc, thread, seq, actor, brief, agent = _columns(
            f, _codes(self.thread_names, None), _codes(actor_names, None, ""))
        expiry = dict(itertools.compress(zip(ids, expiries, strict=True), expiries))
        self._finish(ids_a, kinds_a, question, length, doc, thread, seq, actor_names, actor, expiry, brief, agent,
                     ids, f[0])

    def _finish(self, ids: np.ndarray | None, kinds: np.ndarray | None, question: np.ndarray, length: np.ndarray,
                doc: np.ndarray, thread: np.ndarray, seq: np.ndarray, actor_names: list[str], actor: np.ndarray,
                expiry: dict[str, str], brief: np.ndarray, agent: np.ndarray,
                id_list: Sequence[str] | None = None,
                kind_list: Sequence[str] | None = None,
                pos: Positions | None = None, links: tuple[np.ndarray, ...] | None = None,
                doc_index: tuple[np.ndarray, np.ndarray] | None = None,
                units: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Set every array from the columns (positions in id order), and derive the neighbour links.

        A stored index (:mod:`synapse_nb.recall.rankfile`) gives ``ids``/``kinds`` as None with sequences that
        read its file (``id_list``, ``kind_list``, ``pos``), and the ``links``, ``doc_index`` and ``units`` it
        kept."""
        import numpy as np

        n = len(question)
        self._ids, self._kinds = ids, kinds  # object arrays of the same strings: patched at C speed (None: built
        # from the lists when a patch needs them)
        self.ids: Sequence[str] = cast("np.ndarray", ids).tolist() if id_list is None else id_list
        self.kinds: Sequence[str] = cast("np.ndarray", kinds).tolist() if kind_list is None else kind_list
        self.pos = Positions(self.ids) if pos is None else pos
        self.expiry: dict[str, str] = expiry
        self.question, self.length, self.doc, self.thread, self.seq = question, length, doc, thread, seq
        self.brief = brief
        self.agent = agent
        self.actor_names = actor_names
        # an actor an agent only reported ("Maria (reported by agent)") is never named by a query: no boost
        self.actor_words = [frozenset() if a.endswith(REPORTED_ACTOR)
                            else frozenset(FTS_TOKEN_RE.findall(normalise(a, 200))) for a in actor_names]
        self._word_actors: dict[str, list[int]] = {}  # a word -> the codes of the actors whose name holds it
        for j, toks in enumerate(self.actor_words):
            for tok in toks:
                self._word_actors.setdefault(tok, []).append(j)
        self.actor = actor
        self._actor_counts: tuple[np.ndarray, np.ndarray] | None = None
        self._doc_index = doc_index
        if links is not None and units is not None:
            self.prev1, self.prev2, self.next1, self.next2 = links
            self.head, self.tail = units
            return
        self.prev1, self.prev2, self.next1, self.next2 = (np.full(n, -1, np.int64) for _ in range(4))
        self.head, self.tail = np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
        threaded = np.flatnonzero(thread >= 0)
        if len(threaded):  # positions are in id order, so the last key breaks seq ties by id
            o = threaded[np.lexsort((threaded, seq[threaded], thread[threaded]))]
            t = thread[o]
            said = ~brief[o]  # back-channel turns are no link: the records around one are each other's neighbours
            lo, lt = o[said], t[said]
            ag = agent[lo]
            # an agent's record: linked over its whole thread; a person's: over the people's records of it alone,
            # so an agent, who may give its episode any thread and seq, never moves a person's neighbours or unit
            # (review 70; the semantic document's rule, store/indexer.py _neighbours)
            if ag.any():  # a person's record cuts an agent's unit
                self._link(lo, lt, ag)
                self._units(lo, lt, np.where(ag, actor[lo], -1), ag)
                lo, lt = lo[~ag], lt[~ag]
            self._link(lo, lt, None)
            self._units(lo, lt, actor[lo], None)  # a back-channel turn neither joins nor cuts a unit: its own

    def _link(self, o: np.ndarray, t: np.ndarray, only: np.ndarray | None) -> None:
        """``prev1/prev2/next1/next2`` of the threaded positions ``o`` in thread order (threads ``t``), each linked to
        the records one and two places away in its thread; with ``only`` (a mask over ``o``), only those set."""
        for d, back, fwd in ((1, self.prev1, self.next1), (2, self.prev2, self.next2)):
            same = t[d:] == t[:-d]
            b = same if only is None else same & only[d:]
            back[o[d:][b]] = o[:-d][b]
            f = same if only is None else same & only[:-d]
            fwd[o[:-d][f]] = o[d:][f]

    def _units(self, o: np.ndarray, t: np.ndarray, a: np.ndarray, only: np.ndarray | None) -> None:
        """``head``/``tail``: the first and last position of each record's unit (consecutive records of one known
        actor in a thread, cut every :data:`UNIT_MAX`), from the threaded positions in thread order ``o`` (threads
        ``t``, actor codes ``a``; back-channel turns left out: "haha" between two messages of Ann neither joins her
        unit nor cuts it); with ``only`` (a mask over ``o``), only those set (an actor code -1 joins no unit)."""
        import numpy as np

        cont = np.zeros(len(o), bool)
        cont[1:] = (t[1:] == t[:-1]) & (a[1:] == a[:-1]) & (a[1:] >= 0)
        starts = np.flatnonzero(~cont)
        run = np.cumsum(~cont) - 1
        new = ~cont | ((np.arange(len(o)) - starts[run]) % UNIT_MAX == 0)
        first = np.flatnonzero(new)
        unit = np.cumsum(new) - 1
        last = np.append(first[1:], len(o)) - 1
        head, tail = o[first[unit]], o[last[unit]]
        if only is None:
            self.head[o], self.tail[o] = head, tail
        else:
            self.head[o[only]], self.tail[o[only]] = head[only], tail[only]

    def unit_members(self, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(member positions, the index in ``heads`` of each one's unit) for units given by their heads: the
        head first, then along ``next1`` to the tail."""
        import numpy as np

        cur, owner = heads, np.arange(len(heads))
        out_m, out_o = [cur], [owner]
        for _ in range(UNIT_MAX - 1):
            go = (cur != self.tail[cur]) & (self.next1[cur] >= 0)
            if not go.any():
                break
            cur, owner = self.next1[cur[go]], owner[go]
            out_m.append(cur)
            out_o.append(owner)
        return np.concatenate(out_m), np.concatenate(out_o)

    def thread_of(self, rid: str) -> str | None:
        """The thread a record of the index is in (None: none, or not in the index)."""
        i = self.pos.get(rid)
        if i is None:
            return None
        t = int(self.thread[i])
        return self.thread_names[t] if t >= 0 else None

    def patch(self, gone: Collection[str], fresh: Sequence[RankRow]) -> ThreadIndex:
        """This index with the rows of ``gone`` removed and ``fresh`` added (every id of ``fresh`` among
        ``gone``): equal to an index built from the resulting rows, without a Python pass over the rows kept.
        Thread codes of new threads are appended (codes only group rows); actor codes follow the names' order,
        as a fresh build gives them, because they are compared with the query's names."""
        import numpy as np

        out = ThreadIndex.__new__(ThreadIndex)
        if self._ids is None or self._kinds is None:  # a stored index: its strings as object arrays, once
            self._ids, self._kinds = np.empty(len(self.ids), dtype=object), np.empty(len(self.ids), dtype=object)
            self._ids[:], self._kinds[:] = list(self.ids), list(self.kinds)
        keep = np.ones(len(self.ids), bool)
        keep[[self.pos[i] for i in gone if i in self.pos]] = False
        fresh = sorted(fresh, key=_ROW_ID)
        out.thread_names = names = self.thread_names + sorted({r.thread for r in fresh if r.thread is not None}
                                                              - set(self.thread_names))
        # actors: the names still spoken by a kept row or a fresh one, in name order (as a fresh build numbers them)
        actor_kept = self.actor[keep]
        spoken = {self.actor_names[j] for j in np.unique(actor_kept[actor_kept >= 0]).tolist()}
        actor_names = sorted(spoken | {r.actor for r in fresh if r.actor})
        acode = _codes(actor_names, None, "")
        remap = np.array([acode.get(a, -1) for a in self.actor_names] + [-1], np.int64)  # old code -> new (-1: -1)
        kept = (self._ids[keep], self._kinds[keep], self.question[keep], self.length[keep], self.doc[keep],
                self.thread[keep], self.seq[keep], remap[actor_kept], self.brief[keep], self.agent[keep])
        add = _columns(_fields(fresh), _codes(names, None), acode)
        at = np.searchsorted(kept[0], add[0])  # where each fresh id goes among the ids kept (both in id order)
        ids, kinds, question, length, doc, thread, seq, actor, brief, agent = (
            np.insert(k.astype(a.dtype, copy=False), at, a) for k, a in zip(kept, add, strict=True))
        expiry = {i: e for i, e in self.expiry.items() if i not in gone}
        expiry.update((r.id, r.expires_at) for r in fresh if r.expires_at is not None)
        out._finish(ids, kinds, question, length, doc, thread, seq, actor_names, actor, expiry, brief, agent)
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def doc_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions ordered by document number, the document numbers in that order): numbers to positions."""
        import numpy as np

        if self._doc_index is None:
            order = np.argsort(self.doc, kind="stable")
            self._doc_index = (order, self.doc[order])
        return self._doc_index

    def actor_records(self, codes: np.ndarray, *, people: bool = False) -> int:
        """How many of the mind's records the actors ``codes`` (distinct) spoke (``people``: people's records, the
        agents' unverified ones left out)."""
        import numpy as np

        if not len(codes):
            return 0
        if self._actor_counts is None:
            spoke = self.actor >= 0
            self._actor_counts = (np.bincount(self.actor[spoke], minlength=len(self.actor_names)),
                                  np.bincount(self.actor[spoke & ~self.agent], minlength=len(self.actor_names)))
        return int(self._actor_counts[int(people)][codes].sum())

    def actors_named(self, words: Sequence[str]) -> np.ndarray:
        """Codes of the actors whose name shares a word with the query words."""
        import numpy as np

        got = self._word_actors
        return np.array(sorted({j for w in set(words) if w in got for j in got[w]}), np.int64)
