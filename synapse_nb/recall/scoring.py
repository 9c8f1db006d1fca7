"""The gate (inclusion only) and the walk: "nothing new" per query, then margin, session delta, top-k, budget.

- **"Nothing new"** is decided once per query, on the query's *support* (:func:`support`), which must reach
  ``Bars.floor``. Each of the top ``Bars.gate_depth`` ranked records gets a coverage score
  (:mod:`synapse_nb.recall.coverage`: the idf-weighted share of the query's words its own text holds, read off the
  ranking's postings) plus its exact-match bonuses (tag, key, file), capped at 1; support =
  :data:`BEST_WEIGHT` x the best coverage + :data:`SECOND_WEIGHT` x the second best (a second record that also
  covers the query corroborates the first) - :data:`UNKNOWN_PENALTY` x the unknown share (the idf-weighted share
  of the query's words that *no* record of the vault contains: a question about someone or something the vault
  never saw). An exact match among them is enough on its own: support is at least its bonus (tag 0.25, key
  0.35, file 0.3 by default, all above the default floor). Coverage is never used per item and never orders
  anything: the rank does.
- Otherwise one walk in rank order: a record below ``Bars.margin`` x the best rank score without exact-match
  bonuses (a bonus lifts a record over the bar, never raises the bar for the others) ends the walk; a
  record already given to the session, unchanged, is skipped *without* using a slot or budget (the delta comes
  before top-k and budget); then at most ``Bars.top_k`` per kind and ``Bars.budget_tokens`` tokens (4 characters
  each) of lines. Every decision is recorded for ``Recall.explain()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from synapse_nb._util import estimate_tokens, plural
from synapse_nb.models import TABLES, Record
from synapse_nb.recall.rank import SCORE_DECIMALS, Ranked
from synapse_nb.recall.render import record_line
from synapse_nb.recall.types import MAX_EXPLAIN, Bars, ExplainRow, RecallItem

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.recall.coverage import Cover
    from synapse_nb.store.records import Candidate

__all__ = ["BEST_WEIGHT", "SECOND_WEIGHT", "UNKNOWN_PENALTY", "Gated", "gate", "support"]

_PARTS = ("bm25", "neighbours", "thread", "actor", "bonus")
#: Most "top_k" rows explained per recall (records past a full kind).
MAX_TOP_K_ROWS = 20
#: The gate's support: weights of the best and second-best coverage among the top ranked records, and the
#: penalty on the query's unknown share. Chosen on LoCoMo conversations 0-6 only (benchmarks/recall_tune.py
#: gate): at nothing_new <= 5% they answer "nothing new" to 92% of off-topic questions (88% for the best
#: coverage alone).
BEST_WEIGHT = 0.8
SECOND_WEIGHT = 0.2
UNKNOWN_PENALTY = 0.25


def support(coverages: Sequence[float], unknown: float) -> float:
    """The statistic the floor is compared with: best and second-best coverage, less the unknown share.

    A single record counts as its own second (a vault with one match is not penalised for being small). In
    [0, 1], so ``Bars(floor=0)`` always passes.

    >>> support([0.5, 0.2, 0.1], 0.0)
    0.41
    >>> support([0.5], 0.5)
    0.45
    >>> support([0.0, 0.0], 1.0)
    0.0
    """
    if not coverages:
        return 0.0
    top = sorted(coverages, reverse=True)
    second = top[1] if len(top) > 1 else top[0]
    return max(0.0, round(BEST_WEIGHT * top[0] + SECOND_WEIGHT * second - UNKNOWN_PENALTY * unknown, SCORE_DECIMALS))


@dataclass(frozen=True)
class Gated:
    """The gate's answer: explanation rows, kept items, the support the floor was compared with (:func:`support`)
    and whether it reached the floor."""

    rows: list[ExplainRow]
    kept: list[RecallItem]
    coverage: float
    passed: bool


def _parts(parts: Mapping[str, list[float]], j: int) -> tuple[tuple[str, float], ...]:
    return tuple((k, round(v[j], 6)) for k, v in parts.items())


def gate(ranked: Ranked, cands: Sequence[Candidate | None], exact: Mapping[str, list[str]], cover: Cover,
         actor: np.ndarray, bars: Bars, materialize: Callable[[Candidate], Record | None],
         seen: Mapping[str, str]) -> Gated:
    """Gate one ranked query. ``cands[j]`` is the candidate at rank ``j`` (None: gone or masked, skipped);
    ``actor`` the actor code of every position of the mind (:class:`~synapse_nb.recall.rank.ThreadIndex`);
    ``seen`` maps ids the session was given to the digest it got (empty without a session)."""
    order = [j for j, c in enumerate(cands) if c is not None]
    if not order:
        return Gated([], [], 0.0, False)
    from synapse_nb.recall.coverage import coverage

    top = order[: bars.gate_depth]
    positions = ranked.pos[top]
    covs, matched = coverage(cover, positions, actor[positions])
    # exact matches (tag, key, file) count towards coverage as they did in recall v1: a record about a file
    # being worked on is relevant on that alone
    bonus = ranked.parts.get("bonus")
    cov = {j: min(1.0, round(float(s) + (float(bonus[j]) if bonus is not None else 0.0), SCORE_DECIMALS))
           for j, s in zip(top, covs, strict=True)}
    matched_top = dict(zip(top, matched, strict=True))
    best_cov = max(cov.values())
    unknown = cover.unknown_share
    sup = support(list(cov.values()), unknown)
    if bonus is not None:  # an exact match is relevant on its own: unknown words do not outweigh it
        sup = max(sup, min(1.0, round(max(float(bonus[j]) for j in top), SCORE_DECIMALS)))
    # as Python floats once (tolist() gives the same values float() would, one call instead of one per row)
    parts = {k: ranked.parts[k].tolist() for k in _PARTS if k in ranked.parts}
    scores = ranked.score.tolist()

    def row(j: int, kept: bool, bar: str, reason: str) -> ExplainRow:
        c = cands[j]
        assert c is not None
        matched = matched_top.get(j, ()) + tuple(exact.get(c.id, ()))
        return ExplainRow(c.kind, c.id, scores[j], matched, kept, bar, reason, cov.get(j), _parts(parts, j))

    if sup < bars.floor:
        reason = (f"support {sup:.3f} < floor {bars.floor} (best coverage of the top {len(top)} {best_cov:.3f}, "
                  f"unknown share of the query {unknown:.3f})")
        return Gated([row(j, False, "floor", reason) for j in top], [], sup, False)
    # the margin is relative to the best match without exact-match bonuses: a tag, key or file match lifts a
    # record over the bar but never raises the bar for the others
    text_score = ranked.score - bonus if bonus is not None else ranked.score
    best = round(float(max(text_score[j] for j in order)), SCORE_DECIMALS)
    rows: list[ExplainRow] = []
    kept: list[RecallItem] = []
    per_kind: dict[str, int] = {}
    used = 0
    bar = bars.margin * best
    present = {c.kind for j, c in enumerate(cands) if c is not None and scores[j] >= bar}
    top_k_rows = 0
    for n, j in enumerate(order):
        c = cands[j]
        assert c is not None
        score = scores[j]
        if score < bars.margin * best:
            for k in order[n: n + max(0, min(20, MAX_EXPLAIN - len(rows)))]:
                rows.append(row(k, False, "margin", f"below {bars.margin} x best match ({best:.3f})"))
            break
        if per_kind.get(c.kind, 0) >= bars.top_k:
            if top_k_rows < MAX_TOP_K_ROWS and len(rows) < MAX_EXPLAIN:
                top_k_rows += 1
                rows.append(row(j, False, "top_k", f"{plural(bars.top_k, c.kind, TABLES[c.kind])} already kept"))
            elif all(per_kind.get(k, 0) >= bars.top_k for k in present):
                break  # every kind above the margin is full, and enough of the rest is explained
            continue
        rec = materialize(c)
        if rec is None:  # deleted by another process since it was ranked
            rows.append(row(j, False, "gone", "deleted meanwhile"))
            continue
        if c.id in seen and seen[c.id] == rec.digest:
            rows.append(row(j, False, "delta", "already given to this session, unchanged"))
            continue
        line = record_line(rec)
        cost = estimate_tokens(line)
        if used + cost > bars.budget_tokens:
            rows.append(row(j, False, "budget", f"would exceed the budget of {bars.budget_tokens} tokens"))
            continue
        used += cost
        per_kind[c.kind] = per_kind.get(c.kind, 0) + 1
        r = row(j, True, "kept", "cleared every bar")
        rows.append(r)
        kept.append(RecallItem(kind=c.kind, id=c.id, score=score, matched=r.matched, bar="kept", line=line,
                               record=rec))
    return Gated(rows, kept, sup, True)

