"""Retrieval metrics: recall@k, NDCG@k, MRR.

Routing metrics (in-scope accuracy, out-of-scope recall, bootstrap intervals) are defined once, in
:mod:`synapse_nb.gate.metrics`; ``synapse_nb.eval`` re-exports them.

Examples
--------
>>> recall_at_k(["d3", "d1", "d9"], {"d1", "d2"}, k=2)
0.5
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from synapse_nb.errors import ValidationError

__all__ = ["mrr", "ndcg_at_k", "recall_at_k"]


# ------------------------------------------------------------------------------------------- retrieval


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValidationError(f"k={k!r}; accepted: an integer >= 1")


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float | None:
    """Share of the relevant ids found in the first ``k`` ranked ids: ``|top-k ∩ relevant| / |relevant|``.

    Duplicates in ``ranked`` count once. ``None`` when ``relevant`` is empty (the question has no gold).

    Examples
    --------
    >>> recall_at_k(["a", "b", "c"], {"a", "c"}, k=2)
    0.5
    >>> recall_at_k(["a"], set(), k=5) is None
    True
    """
    _check_k(k)
    gold = set(relevant)
    if not gold:
        return None
    return len(set(ranked[:k]) & gold) / len(gold)


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float | None:
    """NDCG@k with binary gains: DCG = sum of ``1/log2(rank + 1)`` over relevant hits in the top ``k``,
    divided by the ideal DCG over ``min(|relevant|, k)`` hits. A repeated id only scores its first rank.
    ``None`` when ``relevant`` is empty.

    Examples
    --------
    >>> ndcg_at_k(["a", "b"], {"a"}, k=10)
    1.0
    >>> round(ndcg_at_k(["x", "a"], {"a"}, k=10), 4)
    0.6309
    """
    _check_k(k)
    gold = set(relevant)
    if not gold:
        return None
    seen: set[str] = set()
    dcg = 0.0
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in gold and doc not in seen:
            dcg += 1.0 / math.log2(rank + 1)
        seen.add(doc)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def mrr(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float | None:
    """Reciprocal rank of the first relevant id (within the first ``k`` when given), 0.0 if none is found.

    Average it over questions for the mean reciprocal rank. ``None`` when ``relevant`` is empty.

    Examples
    --------
    >>> mrr(["x", "y", "a"], {"a", "b"})
    0.3333333333333333
    >>> mrr(["x", "y", "a"], {"a"}, k=2)
    0.0
    """
    if k is not None:
        _check_k(k)
    gold = set(relevant)
    if not gold:
        return None
    for rank, doc in enumerate(ranked if k is None else ranked[:k], start=1):
        if doc in gold:
            return 1.0 / rank
    return 0.0
