"""The gate and its bars: score every candidate, then keep what clears floor, margin, top-k and budget.

A score is :class:`synapse_nb.gate.CorpusScorer`'s (idf-weighted word coverage plus character similarity, from
the query, the candidate's text and the vault's word statistics) plus exact-match bonuses (tag, key or note
name, file), rounded to 9 decimals and capped at 1; expired memories score 0. Candidates are taken best first,
ties by id, and every decision is recorded for ``Recall.explain()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from synapse_nb._util import estimate_tokens, plural
from synapse_nb.models import TABLES, Record
from synapse_nb.recall.render import record_line
from synapse_nb.recall.types import KIND_ORDER, MAX_EXPLAIN, Bars, ExplainRow, RecallItem

if TYPE_CHECKING:
    from synapse_nb.gate.scorer import CorpusScorer
    from synapse_nb.recall.candidates import Pool
    from synapse_nb.store.base import Candidate

__all__ = ["WordStats", "gate", "new_scorer", "query_terms"]

#: (document frequency per query term, number of documents): the vault's word statistics for one query.
WordStats = tuple[dict[str, int], int]


def new_scorer() -> CorpusScorer:
    # numpy and scipy load with the gate, on the first recall that has candidates (import synapse_nb stays light)
    from synapse_nb.gate.scorer import CorpusScorer

    # room for every document of the exhaustive path (20k by default) plus index candidates
    return CorpusScorer(cache_size=50_000)


def query_terms(query: str) -> list[str]:
    """The words of ``query`` whose document frequencies the gate needs."""
    from synapse_nb.gate.scorer import query_terms as terms  # the gate's analyser (numpy loads with it)

    return list(terms(query))


def gate(query: str, pool: Pool, exact: dict[str, list[str]], stats: WordStats, bars: Bars, files: tuple[str, ...],
         now: str, scorer: CorpusScorer,
         materialize: Callable[[Candidate], Record | None]) -> tuple[list[ExplainRow], list[RecallItem]]:
    """(explanation rows, kept items) for a pool. ``materialize`` reads a kept candidate's record (None when it
    was deleted meanwhile); only candidates that clear the score bars are read."""
    import numpy as np  # loaded with the gate (see new_scorer)

    if not pool.cands:
        return [], []
    df, n_docs = stats
    batch = scorer.score_batch(query, pool.texts, doc_freq=df, n_docs=n_docs, doc_keys=pool.keys)
    scores = np.array(batch.scores, dtype=float)
    extra: dict[int, list[str]] = {}
    for rid, labels in exact.items():
        i = pool.pos.get(rid)
        if i is not None:
            scores[i] += sum(bars.tag_bonus if lab.startswith("#") else bars.key_bonus for lab in labels)
            extra[i] = list(labels)
    if files:
        for i, c in enumerate(pool.cands):
            hits = [f for f in files if f in c.text]
            if hits:
                scores[i] += bars.file_bonus
                extra.setdefault(i, []).extend(f"file:{f}" for f in hits)
    scores = np.minimum(np.round(scores, 9), 1.0)
    for i in pool.expiring:  # memories past their expiry are never candidates
        if pool.cands[i].expires_at <= now:  # type: ignore[operator]
            scores[i] = 0.0
    positive = np.flatnonzero(scores > 0)
    if not len(positive):
        return [], []
    # best first; ties by id (pools are in id order, and lexsort is stable)
    order = positive[np.lexsort((positive, -scores[positive]))]
    best = float(scores[order[0]])
    rows: list[ExplainRow] = []
    kept_idx: list[tuple[int, float, tuple[str, ...]]] = []
    per_kind: dict[str, int] = {}
    used_tokens = 0
    lines: dict[int, tuple[Record, str]] = {}
    for i in order:
        score = float(scores[i])
        if score < bars.floor or score < bars.margin * best:
            break  # sorted: everything after fails the same bar (explained below)
        c = pool.cands[i]
        if per_kind.get(c.kind, 0) >= bars.top_k:
            if len(rows) < MAX_EXPLAIN:
                matched = batch.matched(int(i)) + tuple(extra.get(int(i), ()))
                rows.append(ExplainRow(c.kind, c.id, score, matched, False, "top_k",
                                       f"{plural(bars.top_k, c.kind, TABLES[c.kind])} already kept"))
                continue
            if all(per_kind.get(k, 0) >= bars.top_k for k in KIND_ORDER):
                break
            continue
        matched = batch.matched(int(i)) + tuple(extra.get(int(i), ()))
        rec = materialize(c)
        if rec is None:  # deleted by another process since the candidates were read
            rows.append(ExplainRow(c.kind, c.id, score, (), False, "gone", "deleted meanwhile"))
            continue
        line = record_line(rec)
        cost = estimate_tokens(line)
        if used_tokens + cost > bars.budget_tokens:
            rows.append(ExplainRow(c.kind, c.id, score, matched, False, "budget",
                                   f"would exceed the budget of {bars.budget_tokens} tokens"))
            continue
        used_tokens += cost
        per_kind[c.kind] = per_kind.get(c.kind, 0) + 1
        kept_idx.append((int(i), score, matched))
        lines[int(i)] = (rec, line)
        rows.append(ExplainRow(c.kind, c.id, score, matched, True, "kept", "cleared every bar"))
    # explain the best of the rest (near the bars), at most MAX_EXPLAIN rows in all
    first_failing = int(np.searchsorted(-scores[order], -max(bars.floor, bars.margin * best), side="right"))
    first_failing = max(first_failing, 0)
    for i in order[first_failing:][: max(0, MAX_EXPLAIN - len(rows))]:
        score = float(scores[i])
        c = pool.cands[i]
        matched = batch.matched(int(i)) + tuple(extra.get(int(i), ()))
        if score < bars.floor:
            rows.append(ExplainRow(c.kind, c.id, score, matched, False, "floor", f"below the floor {bars.floor}"))
        else:
            rows.append(ExplainRow(c.kind, c.id, score, matched, False, "margin",
                                   f"below {bars.margin} x best ({best:.3f})"))
    kept = [RecallItem(kind=pool.cands[i].kind, id=pool.cands[i].id, score=score, matched=matched, bar="kept",
                       line=lines[i][1], record=lines[i][0]) for i, score, matched in kept_idx]
    return rows, kept
