"""Recall's optional semantic channel: dense candidates from the LanceDB index, fused with BM25's before the
structure step.

Off by default (``RankParams.semantic == 0``; the vault setting ``recall_semantic``, CLI ``--semantic``). The model
is the setting ``recall_embedder`` (:mod:`synapse_nb.store.embedders`: ``wordllama``, ``e5-small`` or your own);
nothing is downloaded, ever.

Per recall (:class:`DenseChannel`):

1. The vault's retrieval index keeps one vector per record (:mod:`synapse_nb.store.index.dense`), its document
   being its text and the record before it in its thread, maintained by the index's outbox drain; recall applies
   the drain before its snapshot (:meth:`DenseChannel.prepare`) and, inside it, restarts once when writes are
   still queued (:class:`Unsynced`), so a record is found the moment it is written.
2. The query is embedded (``query=True``) and quantised; the index returns the mind's best :data:`DENSE_DEPTH`
   records by exact cosine (ties by id). When an agent's record no person verified is among them
   (``ThreadIndex.agent``), the best :data:`DENSE_DEPTH` people's records below them follow (the people reserve,
   review 21, as BM25's candidates have one: ``bm25_top``'s ``people``): however many agent records sit closer
   in meaning, a person's record stays a candidate. While an agent's unverified record waits in the table's queue
   (a sync embeds agents' rows for ``AGENT_EMBED_S`` only), no agent's unverified row is read at all
   (:meth:`DenseChannel.agents_waiting`, review 67): the answer does not depend on how much of the backlog the
   machine embedded, and says so (``Recall.agents_waiting``, :data:`~synapse_nb.render.SEMANTIC_PEOPLE_LINE`).
3. :func:`fuse_top`: a weighted sum over the union of BM25's hits (``depth`` of them) and the dense ones,
   ``(1 - weight) x bm25 / best bm25 + weight x (cos - last + step) / (first - last + step)``, ``first`` and
   ``last`` the best and the last cosine of the dense list and ``step`` its range over :data:`DENSE_DEPTH` (a
   record outside a list scores 0 in it; the list's last one ``1 / (DENSE_DEPTH + 1)``, a list of one or of
   equal cosines 1 each). Records BM25 did not find join with their dense part only. The structure step then runs
   on the fused scores as it runs on BM25's (normalised by the best, ``power``, neighbours, ...).

The weight is the setting ``recall_semantic``: 0.4 for ``e5-small``, 0.1 for ``wordllama``, each chosen on LoCoMo
conversations 0-6 only, as was the fusion itself against weighted reciprocal rank fusion (:func:`fuse`) and a
weighted sum normalised by the union's mean cosine (:func:`fuse_sum`), kept for ``benchmarks/semantic_locomo.py``
(:data:`FUSION`).

Determinism: the dense list comes from exact integer cosines ordered by (cosine desc, id asc); the fused scores are
float64 element-wise arithmetic on BM25's float64 scores and those cosines (docs/recall.md, "Semantic channel").
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import SemanticUnavailableError

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.errors import IndexError_
    from synapse_nb.recall.threads import ThreadIndex
    from synapse_nb.store.base import VaultStore
    from synapse_nb.store.embedders import Embedder
    from synapse_nb.store.index.dense import DenseHit
    from synapse_nb.store.indexer import VaultIndex

__all__ = ["DENSE_DEPTH", "FUSION", "RRF_K", "DenseChannel", "Fallback", "Unsynced", "describe", "fuse",
           "fuse_sum", "fuse_top"]

#: Dense candidates per query (the lexical side keeps ``RankParams.depth``).
DENSE_DEPTH = 50
#: How the two lists are fused: "top" (:func:`fuse_top`, chosen on conversations 0-6), or, as measured against
#: it, "rrf" (:func:`fuse`) and "sum" (:func:`fuse_sum`).
FUSION = "top"
#: The rank constant of "rrf".
RRF_K = 5
#: Query vectors kept per process (a hook asks the same turn of several vaults; an evaluation asks each twice).
MAX_CACHED_QUERIES = 1000


class Unsynced(Exception):
    """Writes are queued that the semantic table has not applied: sync outside the snapshot, then read again."""


class Fallback:
    """One recall's use of the channel: on until its index raises :class:`~synapse_nb.errors.IndexError_` (a
    semantic table truncated by a shell, a full disk, a killed write), then off for the rest of that recall, which
    answers from BM25 alone as with ``recall_semantic`` 0, with one warning (logger ``synapse_nb.recall``; the CLI
    prints it on stderr) naming the table and the person's remedy; the answer says it too (``reason``:
    ``Recall.semantic_off``, and :data:`~synapse_nb.render.SEMANTIC_OFF_LINE` in its text). The index is a
    cache: recall never fails for it.
    A model that cannot be loaded in this process (:class:`~synapse_nb.errors.SemanticUnavailableError`: its extra
    not installed here, an unknown name, a factory failing) turns it off the same way (:meth:`no_model`; review 68:
    every recall failed, and an agent hook answered nothing); its reason starts with
    :data:`~synapse_nb.render.MODEL_OFF`, and the text's line is :data:`~synapse_nb.render.SEMANTIC_NO_MODEL_LINE`.
    An evaluation loads its model first, so it fails instead (``synapse_nb.eval.retrieval``)."""

    def __init__(self) -> None:
        self.on = True
        self.reason: str | None = None  # what failed first (Recall.semantic_off)

    def refused(self, line: str) -> None:
        """Off for this recall, not for a failure: the vault's ``recall_embedder`` is not loaded (a borrowed vault's
        spec naming code or files: :meth:`synapse_nb.settings.Settings.embedder_spec`); ``line`` (the package's
        own words) is the reason and the answer's line; the channel is off, as when it failed (no model is loaded,
        not even the default)."""
        if self.on:
            self.reason = line
        self.on = False

    def no_model(self, exc: SemanticUnavailableError) -> None:
        """The channel's model could not be loaded: BM25 alone for this recall, said once (see the class)."""
        from synapse_nb.render import MODEL_OFF

        if self.on:
            said = str(exc).strip().splitlines()
            self.reason = MODEL_OFF + (said[0][:500] if said else type(exc).__name__)
            logging.getLogger("synapse_nb.recall").warning(
                "recall answered from BM25 alone (the vault's records), without the semantic channel: %s", exc)
        self.on = False

    def failed(self, exc: IndexError_) -> None:
        if self.on:
            said = str(exc).strip().splitlines()
            self.reason = said[0][:500] if said else type(exc).__name__
            logging.getLogger("synapse_nb.recall").warning(
                "recall answered from BM25 alone (the vault's records), without the semantic channel: %s. A person's "
                "`synapse-nb index rebuild` (or `synapse-nb index check --repair`) removes a semantic table that "
                "cannot be read; the next recall with the channel builds it again from SQLite", exc)
        self.on = False


def fuse(idx: ThreadIndex, pos: np.ndarray, bm25: np.ndarray, hits: list[DenseHit], weight: float,
         k: int = RRF_K) -> tuple[np.ndarray, np.ndarray]:
    """BM25's hits (positions ``pos`` into ``idx``, scores ``bm25``) fused with the dense ``hits`` by weighted
    reciprocal rank: positions (ascending) and fused scores. Dense hits outside ``idx`` are dropped.

    >>> import numpy as np
    >>> from synapse_nb.recall.threads import ThreadIndex
    >>> from synapse_nb.store.index.dense import DenseHit
    >>> from synapse_nb.store.records import RankRow
    >>> ix = ThreadIndex([RankRow("note", i, None, None, None, False) for i in "abc"])
    >>> p, s = fuse(ix, np.array([0, 1]), np.array([2.0, 3.0]), [DenseHit("c", "note", .9), DenseHit("a", "note", .5)],
    ...             0.5, k=5)
    >>> p.tolist(), [round(x, 4) for x in s.tolist()]
    ([0, 1, 2], [0.2143, 0.1667, 0.0833])
    """
    import numpy as np

    at = idx.pos
    order = np.lexsort((pos, -bm25))  # best first, ties by position (= by id)
    lex = pos[order]
    dense = [at[h.id] for h in hits if h.id in at]  # already by (cosine desc, id asc)
    both = np.unique(np.concatenate([lex, np.array(dense, np.int64)]))
    score = np.zeros(len(both))
    score[np.searchsorted(both, lex)] += 1.0 / (k + np.arange(1, len(lex) + 1, dtype=np.float64))
    if dense:
        score[np.searchsorted(both, np.array(dense, np.int64))] += weight / (
            k + np.arange(1, len(dense) + 1, dtype=np.float64))
    return both, score


def fuse_sum(idx: ThreadIndex, pos: np.ndarray, bm25: np.ndarray, hits: list[DenseHit],
             cos_of: dict[str, float], weight: float) -> tuple[np.ndarray, np.ndarray]:
    """BM25's hits fused with the dense ``hits`` by a weighted sum over their union: ``(1 - weight) x bm25 / best
    + weight x max(0, (cos - mean) / (best cos - mean))``, the mean and best over the union (``cos_of`` gives the
    cosines of BM25's hits). Positions ascending, and the fused scores."""
    import numpy as np

    at = idx.pos
    dense = {at[h.id]: h.cosine for h in hits if h.id in at}
    both = np.unique(np.concatenate([pos, np.array(sorted(dense), np.int64)]))
    lex = np.zeros(len(both))
    top = float(bm25.max()) if len(bm25) else 0.0
    if top > 0:
        lex[np.searchsorted(both, pos)] = bm25 / top
    ids = idx.ids
    cos = np.array([dense[j] if j in dense else cos_of.get(ids[j], 0.0) for j in both.tolist()])
    if len(cos) == 0:
        return both, lex
    mean, best = float(np.mean(cos)), float(cos.max())
    sem = np.maximum(0.0, (cos - mean) / (best - mean)) if best > mean else np.zeros(len(cos))
    return both, (1.0 - weight) * lex + weight * sem


def _positions(idx: ThreadIndex, hits: list[DenseHit]) -> list[tuple[int, float]]:
    """The dense ``hits`` of records of ``idx`` as (position, cosine), in their order (one lookup for them all)."""
    at = idx.pos.many([h.id for h in hits]).tolist()
    return [(j, h.cosine) for j, h in zip(at, hits, strict=True) if j >= 0]


def fuse_top(idx: ThreadIndex, pos: np.ndarray, bm25: np.ndarray, hits: list[DenseHit],
             weight: float) -> tuple[np.ndarray, np.ndarray]:
    """BM25's hits fused with the dense ``hits`` by a weighted sum: ``(1 - weight) x bm25 / best + weight x
    (cos - last + step) / (first - last + step)``, ``first`` and ``last`` the best and the last cosine of the dense
    list and ``step`` its range over :data:`DENSE_DEPTH` (a record outside the list scores 0 there; the last one
    scores ``1 / (DENSE_DEPTH + 1)``, a list of one, or of equal cosines, 1 each: review 21, the last of the list
    scored 0 and a vault whose one record close in meaning was its only hit answered "nothing new"). Positions
    ascending, and the fused scores.

    >>> import numpy as np
    >>> from synapse_nb.recall.threads import ThreadIndex
    >>> from synapse_nb.store.index.dense import DenseHit
    >>> from synapse_nb.store.records import RankRow
    >>> ix = ThreadIndex([RankRow("note", i, None, None, None, False) for i in "abc"])
    >>> hits = [DenseHit("c", "note", .9), DenseHit("a", "note", .7), DenseHit("b", "note", .5)]
    >>> p, s = fuse_top(ix, np.array([0, 1]), np.array([2.0, 4.0]), hits, 0.4)
    >>> p.tolist(), [round(x, 4) for x in s.tolist()]
    ([0, 1, 2], [0.5039, 0.6078, 0.4])
    >>> fuse_top(ix, np.zeros(0, np.int64), np.zeros(0), hits[:1], 0.4)[1].tolist()  # one hit: the best
    [0.4]
    """
    import numpy as np

    dense = _positions(idx, hits)
    both = np.unique(np.concatenate([pos, np.array([p for p, _ in dense], np.int64)]))
    score = np.zeros(len(both))
    top = float(bm25.max()) if len(bm25) else 0.0
    if top > 0:
        score[np.searchsorted(both, pos)] = (1.0 - weight) * (bm25 / top)
    if dense:
        first, last = dense[0][1], dense[-1][1]
        if first > last:  # a step of the list's range below its last: the last is in the list, not scored 0
            step = (first - last) / DENSE_DEPTH
            part = (np.array([c for _, c in dense]) - last + step) / (first - last + step)
        else:  # one hit, or all as close: each is the best
            part = np.ones(len(dense))
        score[np.searchsorted(both, np.array([p for p, _ in dense], np.int64))] += weight * part
    return both, score


class DenseChannel:
    """The semantic channel of one vault handle: its embedder, the index table it reads and the query cache."""

    def __init__(self, store: VaultStore, index: Callable[[], VaultIndex]) -> None:
        self._store = store
        self._index = index
        self._lock = threading.Lock()
        self._spec: str | None = None
        self._embedder: Embedder | None = None
        self._queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    def embedder(self, spec: str | None) -> Embedder:
        """The embedder of ``spec`` (the setting ``recall_embedder``), loaded once per process; the index keeps
        its vectors from now on. :class:`~synapse_nb.errors.SemanticUnavailableError` when it cannot be loaded
        (whatever the loader raised: recall falls back on it, :meth:`Fallback.no_model`)."""
        from synapse_nb.store.embedders import DEFAULT, load_embedder

        with self._lock:
            if self._embedder is not None and spec == self._spec:
                return self._embedder
        try:
            emb = load_embedder(spec)
        except SemanticUnavailableError:
            raise
        except Exception as e:  # an unknown name, a factory failing or refused by check_embedder: not loaded here
            raise SemanticUnavailableError(
                f"the embedder {spec or DEFAULT!r} (setting recall_embedder) could not be loaded: "
                f"{type(e).__name__}: {e}") from e
        self._index().use_semantic(emb)
        with self._lock:
            self._spec, self._embedder = spec, emb
        return emb

    def prepare(self, spec: str | None) -> bool:
        """Apply the outbox to the index (outside any snapshot): the semantic table is built when missing. False:
        another process held the index lock past :data:`~synapse_nb.store.index.scrub.RECALL_LOCK_WAIT` (review 28),
        and the recall answers from the index as it stands."""
        self.embedder(spec)
        return self._index().sync_within()

    def sync(self) -> bool:
        """:meth:`prepare` with the embedder already loaded (nothing when none is: the snapshot will say)."""
        return self._index().sync_within() if self._embedder is not None else True

    def check_synced(self, spec: str | None, *, busy: bool = False) -> None:
        """Inside the recall's snapshot: :class:`Unsynced` when another embedder is named, writes are queued or the
        table is missing (nothing is loaded or written here). ``busy``: the index lock was busy, queued writes are
        not waited for."""
        from synapse_nb.store.index.dense import table_name

        emb = self._embedder
        if emb is None or spec != self._spec:
            raise Unsynced
        dense = self._index().dense
        if dense is None or dense.name != table_name(emb) or not dense.exists():
            raise Unsynced
        # a read-only vault's drain applies the queue without emptying it: waiting for it would embed every time
        if not busy and not self._store.readonly and self._store.outbox.has_pending():
            raise Unsynced

    def query_vector(self, query: str) -> np.ndarray:
        """The quantised vector of ``query`` (kept for the last :data:`MAX_CACHED_QUERIES` queries)."""
        from synapse_nb.store.embedders import embed_quantized

        emb = self._embedder
        assert emb is not None, "call embedder() first"
        key = (emb.fingerprint, query)
        with self._lock:
            got = self._queries.get(key)
        if got is None:
            got = embed_quantized(emb, [query], query=True)[0]
            with self._lock:
                self._queries[key] = got
                while len(self._queries) > MAX_CACHED_QUERIES:
                    self._queries.popitem(last=False)
        return got

    def agents_waiting(self, idx: ThreadIndex) -> int:
        """How many agents' records no person verified (``ThreadIndex.agent``) of ``idx`` wait in the semantic
        table's queue, not embedded yet (the queue as the last sync left it: :meth:`VaultIndex.waiting`; not known,
        0). While one does, :meth:`search` with ``people_only`` leaves every agent's unverified row out (review 67:
        a sync embeds agents' rows for ``AGENT_EMBED_S`` only, so the share of them found varied with the machine's
        speed, and so did the answer)."""
        left = self._index().waiting()
        if not left:
            return 0
        j = idx.pos.many(sorted(left))
        return int(idx.agent[j[j >= 0]].sum())

    def search(self, query: str, mind: str, now: str, k: int | None = None, also: Sequence[str] = (),
               idx: ThreadIndex | None = None, people_only: bool = False) -> tuple[list[DenseHit], dict[str, float]]:
        """The mind's best ``k`` (default :data:`DENSE_DEPTH`) records for ``query`` by exact cosine (best first,
        ties by id), and the cosines of the records ``also`` names.

        With ``idx`` (the ranking's rows), the people reserve (review 21): when an agent's record no person
        verified (``ThreadIndex.agent``) is among them, the best ``k`` people's records of ``idx`` below them
        follow (:meth:`~synapse_nb.store.index.dense.DenseIndex.search`'s ``people``), as BM25's candidates do
        (``bm25_top``'s ``people``): a flood of agent records close in meaning never leaves a person's record out
        of the dense list. ``people_only`` (with ``idx``): no agent's unverified record is found at all."""
        dense = self._index().dense
        if dense is None:
            raise Unsynced
        if not dense.exists():  # not built yet, its build waiting for a busy lock: BM25 answers alone this time
            return [], {}
        k = k or DENSE_DEPTH
        if idx is None:
            return dense.search(self.query_vector(query), mind=mind, now=now, k=k, also=also)
        at, flag = idx.pos, idx.agent
        if people_only:
            import numpy as np

            ids = idx.ids
            return dense.search(self.query_vector(query), mind=mind, now=now, k=k, also=also,
                                leave_out=[ids[j] for j in np.flatnonzero(flag).tolist()])

        def agent(ids: list[str]) -> np.ndarray:  # 1 an agent's unverified record, 0 a person's, -1 not ranked
            import numpy as np

            j = at.many(ids)
            return np.where(j < 0, -1, flag[np.maximum(j, 0)].astype(np.int8))

        return dense.search(self.query_vector(query), mind=mind, now=now, k=k, also=also, people=k, agent=agent)


    def speaker_list(self, idx: ThreadIndex, query: str, actor: int, mind: str, now: str,
                     people_only: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """The second dense query of a question asking for several facts about one speaker (``RankParams.hop_*``):
        the question without the speaker's name, its best :data:`DENSE_DEPTH` records (with the people reserve,
        :meth:`search`) cut to that speaker's
        (actor code ``actor``): their positions (ascending) and ``(cos - last) / (first - last)`` over the cut
        list's own range (0 when flat). None when the name is not in the question's text or fewer than two of the
        speaker's records are found."""
        import numpy as np

        from synapse_nb.recall.rank import without_actor

        bare = without_actor(query, idx.actor_names[actor])
        if bare == query:
            return None
        hits, _ = self.search(bare, mind, now, idx=idx, people_only=people_only)
        act = idx.actor
        d = [(j, c) for j, c in _positions(idx, hits) if act[j] == actor]
        if len(d) < 2:
            return None
        first, last = d[0][1], d[-1][1]
        cos = np.array([c for _, c in d])
        s = (cos - last) / (first - last) if first > last else np.zeros(len(d))
        p = np.array([j for j, _ in d], np.int64)
        o = np.argsort(p, kind="stable")
        return p[o], s[o]

    def fused(self, idx: ThreadIndex, pos: np.ndarray, bm25: np.ndarray, query: str, mind: str, now: str,
              weight: float, people_only: bool = False) -> tuple[np.ndarray, np.ndarray, list[tuple[int, float]]]:
        """BM25's hits (positions into ``idx``, scores) joined by the dense ones (with the people reserve, or
        ``people_only``: :meth:`search`): positions, fused scores, and the dense list as (position, cosine) of the
        records of ``idx``, best first (the gate reads it against the model's ``match_cosine``)."""
        also = [idx.ids[j] for j in pos.tolist()] if FUSION == "sum" else ()
        hits, cos_of = self.search(query, mind, now, also=also, idx=idx, people_only=people_only)
        dense = _positions(idx, hits)
        if FUSION == "top":
            return (*fuse_top(idx, pos, bm25, hits, weight), dense)
        if FUSION == "sum":
            return (*fuse_sum(idx, pos, bm25, hits, cos_of, weight), dense)
        return (*fuse(idx, pos, bm25, hits, weight, RRF_K), dense)


def describe(channel: DenseChannel) -> dict[str, Any]:
    """The loaded embedder's name, version, dimension and fingerprint, and how many query vectors are kept."""
    emb = channel._embedder
    if emb is None:
        return {"loaded": False}
    return {"loaded": True, "name": emb.name, "version": emb.version, "dimension": emb.dimension,
            "fingerprint": emb.fingerprint, "cached_queries": len(channel._queries)}
