"""The retrieval index's search arithmetic: prefilters, exact vector search in NumPy, and RRF fusion.

Pure functions over Arrow tables and NumPy arrays; :class:`~synapse_nb.store.index.RetrievalIndex`
runs the LanceDB queries and hands their results here. Every list of hits is sorted by score
(descending) then id (ascending), so equal inputs give equal outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synapse_nb.store.index.rows import Hit

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["RRF_K", "ExactVectors", "fuse", "hits", "sql_str", "where_clause"]

#: Reciprocal rank fusion constant (Cormack et al. 2009): a hit at rank r adds 1 / (60 + r).
RRF_K = 60


def sql_str(value: str) -> str:
    """A LanceDB (DataFusion) SQL string literal.

    >>> sql_str("it's")
    "'it''s'"
    """
    return "'" + value.replace("'", "''") + "'"


def where_clause(mind: str, kinds: Sequence[str] | None, now: str) -> str:
    """The prefilter: rows of ``mind`` (and ``kinds``) not expired at ``now``."""
    where = f"mind = {sql_str(mind)} AND (expires_at IS NULL OR expires_at > {sql_str(now)})"
    if kinds is not None:
        where += " AND kind IN (" + ", ".join(sql_str(str(x)) for x in sorted(set(kinds))) + ")"
    return where


def hits(res: Any, score_column: str, *, distance: bool = False) -> list[Hit]:
    """Hits from a LanceDB result table (``id``, ``kind`` and a score or cosine-distance column), sorted."""
    scores = res[score_column].to_pylist()
    out = [
        Hit(i, kd, float(1.0 - s) if distance else float(s))
        for i, kd, s in zip(res["id"].to_pylist(), res["kind"].to_pylist(), scores, strict=True)
    ]
    out.sort(key=lambda h: (-h.score, h.id))
    return out


def fuse(ranked_lists: Sequence[Sequence[Hit]]) -> list[Hit]:
    """Reciprocal rank fusion of ranked hit lists (K=60), sorted by fused score then id.

    >>> lists = [[Hit("a", "memory", 0.9)], [Hit("b", "note", 3.0), Hit("a", "memory", 1.0)]]
    >>> [(h.id, round(h.score, 4)) for h in fuse(lists)]
    [('a', 0.0325), ('b', 0.0164)]
    """
    score: dict[str, float] = {}
    kind: dict[str, str] = {}
    for ranked in ranked_lists:
        for rank, h in enumerate(ranked, start=1):
            score[h.id] = score.get(h.id, 0.0) + 1.0 / (RRF_K + rank)
            kind[h.id] = h.kind
    fused = [Hit(i, kind[i], score[i]) for i in sorted(score)]
    fused.sort(key=lambda h: (-h.score, h.id))
    return fused


@dataclass(frozen=True)
class ExactVectors:
    """An in-memory copy of a small table's vectors and filter columns, rows sorted by id.

    LanceDB's flat scan costs 6-9 ms at 10k rows; a NumPy matrix-vector product over this copy costs
    well under 1 ms. Rows are sorted by id, so the arithmetic, and therefore every score, is identical
    however the table was written. Kinds, minds and expiry times are coded as ranks among their
    distinct values (a null expiry ranks above all).
    """

    ids: list[str]
    kind_codes: np.ndarray
    kind_names: np.ndarray
    mind_codes: np.ndarray
    mind_names: np.ndarray
    exp_codes: np.ndarray
    exp_values: np.ndarray
    vecs: np.ndarray

    @classmethod
    def from_arrow(cls, res: Any, dim: int) -> ExactVectors:
        """Build the copy from an Arrow table with ``id``, ``kind``, ``mind``, ``expires_at`` and ``vector``."""
        import numpy as np

        res = res.sort_by("id")
        vec_col = res["vector"].combine_chunks()
        vecs = np.ascontiguousarray(vec_col.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim), dtype=np.float32)
        kind_names, kind_codes = np.unique(np.array(res["kind"].to_pylist(), dtype=str), return_inverse=True)
        mind_names, mind_codes = np.unique(np.array(res["mind"].to_pylist(), dtype=str), return_inverse=True)
        expires = res["expires_at"].to_pylist()
        exp_values = np.array(sorted({e for e in expires if e is not None}), dtype=str)
        exp_rank = {e: i for i, e in enumerate(exp_values.tolist())}
        exp_codes = np.array([len(exp_values) if e is None else exp_rank[e] for e in expires], dtype=np.int64)
        return cls(res["id"].to_pylist(), kind_codes.astype(np.int32), kind_names, mind_codes.astype(np.int32),
                   mind_names, exp_codes, exp_values, vecs)

    def search(self, qv: np.ndarray, k: int, mind: str, kinds: Sequence[str] | None, now: str) -> list[Hit]:
        """Exhaustive cosine search (vectors are unit length) with the same prefilter as :func:`where_clause`."""
        import numpy as np

        mcode = int(np.searchsorted(self.mind_names, mind))
        if mcode >= len(self.mind_names) or self.mind_names[mcode] != mind:
            return []
        # "expires_at > now" is "code >= number of distinct values <= now"
        mask = (self.mind_codes == mcode) & (self.exp_codes >= int(np.searchsorted(self.exp_values, now, side="right")))
        if kinds is not None:
            names = sorted(set(kinds))
            wanted = [int(np.searchsorted(self.kind_names, x)) for x in names]
            wanted = [c for c, x in zip(wanted, names, strict=True)
                      if c < len(self.kind_names) and self.kind_names[c] == x]
            mask &= np.isin(self.kind_codes, np.array(wanted, dtype=self.kind_codes.dtype))
        sel = np.flatnonzero(mask)
        if sel.size == 0:
            return []
        # einsum stays on this thread: BLAS gemv spreads 10k rows over threads that fight
        # LanceDB's runtime for 2 cores (p95 8 ms instead of 0.3 ms), and its sums are fixed-order
        scores = np.einsum("ij,j->i", self.vecs, qv.astype(np.float32, copy=False))[sel]
        if sel.size > k:
            # keep everything tied with the k-th best, then order by (score desc, id asc)
            kth = np.partition(scores, sel.size - k)[sel.size - k]
            keep = scores >= kth
            sel, scores = sel[keep], scores[keep]
        order = np.lexsort((sel, -scores))  # ids are sorted, so row position orders ids
        return [Hit(self.ids[sel[j]], str(self.kind_names[self.kind_codes[sel[j]]]), float(scores[j]))
                for j in order[:k]]
