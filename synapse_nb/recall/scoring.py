"""The gate (inclusion only) and the walk: "nothing new" per query, then margin, session delta, top-k, budget.

- **"Nothing new"** is decided once per query, on the query's *support* (:func:`support`), which must reach
  ``Bars.floor``. Each of the top ``Bars.gate_depth`` ranked records gets a coverage score
  (:mod:`synapse_nb.recall.coverage`: the idf-weighted share of the query's words its own text holds, read off the
  ranking's postings) plus its exact-match bonuses (tag, key, file), capped at 1; support =
  :data:`BEST_WEIGHT` x the best coverage + :data:`SECOND_WEIGHT` x the second best (a second record that also
  covers the query corroborates the first) - :data:`UNKNOWN_PENALTY` x the unknown share (the idf-weighted share
  of the query's words that *no* record of the vault contains: a question about someone or something the vault
  never saw). An exact match among them is enough on its own: support is at least its bonus (tag 0.25, key
  0.35, file 0.3 by default, all above the default floor). With the semantic channel on and a model that has a
  ``match_cosine`` (:class:`~synapse_nb.store.embedders.Embedder`), a support under the floor also passes when
  a record's own cosine reaches it (*the floor on meaning*; the walk then reads only such records). Which floor
  applies is decided as if agents' unverified records were not there: with one of them among the top, on the
  support of the top ``Bars.gate_depth`` people's records (review 21: five agent records holding a question's
  words lifted the support and turned the floor on meaning off). Coverage is never used per item and never orders
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
from typing import TYPE_CHECKING, NamedTuple

from synapse_nb._util import estimate_tokens, plural, shown_id
from synapse_nb.models import TABLES, Memory, Record
from synapse_nb.provenance import agents_unverified, human_record
from synapse_nb.recall.assembly import record_line
from synapse_nb.recall.coverage import coverage
from synapse_nb.recall.rank import SCORE_DECIMALS, Ranked
from synapse_nb.recall.types import MAX_EXPLAIN, Bars, ExplainRow, ExplainRows, RecallItem

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.recall.candidates import WalkRow
    from synapse_nb.recall.coverage import Cover

__all__ = ["BEST_WEIGHT", "SECOND_WEIGHT", "UNKNOWN_PENALTY", "Gated", "Meaning", "gate", "support",
           "yields_place"]

_PARTS = ("bm25", "neighbours", "thread", "question", "actor", "bonus")
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

    >>> support([0.5, 0.2, 0.1], 0.0)  # 0.8 * 0.5 + 0.2 * 0.2
    0.44
    >>> support([0.5], 0.5)  # 0.8 * 0.5 + 0.2 * 0.5 - 0.25 * 0.5
    0.375
    >>> support([0.0, 0.0], 1.0)
    0.0
    """
    if not coverages:
        return 0.0
    top = sorted(coverages, reverse=True)
    second = top[1] if len(top) > 1 else top[0]
    return max(0.0, round(BEST_WEIGHT * top[0] + SECOND_WEIGHT * second - UNKNOWN_PENALTY * unknown, SCORE_DECIMALS))


class Meaning(NamedTuple):
    """What the semantic channel found for one query, for the gate: the model's ``match_cosine`` (``at``) and the
    ranking positions of the records whose own cosine reaches it (never empty)."""

    at: float
    positions: frozenset[int]


@dataclass(frozen=True)
class Gated:
    """The gate's answer: explanation rows (built when first read), kept items, the support the floor was
    compared with (:func:`support`), whether it reached the floor, and whether it passed on meaning instead."""

    rows: ExplainRows
    kept: list[RecallItem]
    coverage: float
    passed: bool
    on_meaning: bool = False


class _Decision(NamedTuple):
    """One explanation row as the walk decides it: rank position, kept, the bar, the reason."""

    j: int
    kept: bool
    bar: str
    reason: str


def _explain_rows(decisions: Sequence[_Decision], cands: Sequence[WalkRow | None], ranked: Ranked,
                  matched: Callable[[int], tuple[str, ...]], cov: Mapping[int, float]) -> ExplainRows:
    """The rows of ``decisions``, built on first read (:class:`~synapse_nb.recall.types.ExplainRows`)."""

    def build() -> tuple[ExplainRow, ...]:
        # as Python floats once (tolist() gives the same values float() would, one call instead of one per row)
        parts = {k: ranked.parts[k].tolist() for k in _PARTS if k in ranked.parts}
        scores = ranked.score.tolist()
        rows = []
        for j, kept, bar, reason in decisions:
            c = cands[j]
            assert c is not None
            rows.append(ExplainRow(c.kind, c.id, scores[j], matched(j), kept, bar, reason, cov.get(j),
                                   tuple((k, round(v[j], 6)) for k, v in parts.items())))
        return tuple(rows)

    return ExplainRows(tuple(d.bar for d in decisions), build)


#: The places of a kind's top_k a person's record may take from agents' records that hold more of the query, when it
#: holds at least the floor's share of it itself (agents' records keep the rest).
PEOPLE_PLACES = 2


def yields_place(rec: Record) -> bool:
    """Whether a kept record gives its place in its kind's ``top_k`` to a person's record of its kind ranked below
    it (:func:`~synapse_nb.provenance.human_record`): one an agent wrote that no person verified."""
    return agents_unverified(rec)


def _room(yielding: list[tuple[int, int, int, int]], need: int) -> list[int] | None:
    """Which kept agent records (indexes into ``yielding``, last first: the lowest ranked) free ``need`` tokens of the
    budget for a person's record, whatever their kind; None when all of them together do not (review 13: agents'
    checkpoints and memories padded with dots used up the budget, and a person's decision on the question was
    refused for room)."""
    out, freed = [], 0
    for at in range(len(yielding) - 1, -1, -1):
        if freed >= need:
            break
        out.append(at)
        freed += yielding[at][3]
    return out if freed >= need else None


def _give_room(entries: list[tuple[int, int, int, int]], yielding: list[tuple[int, int, int, int]],
               kept: list[RecallItem | None], decisions: list[_Decision], rec: Record, kind: str) -> int:
    """Drop the kept agent records ``entries`` (of ``yielding``) for a person's ``rec`` of ``kind``: out of the kept
    items and ``yielding``, their rows saying why. Returns the tokens freed."""
    freed = 0
    for entry in entries:
        yielding.remove(entry)
        kept[entry[1]] = None
        freed += entry[3]
        decisions[entry[2]] = decisions[entry[2]]._replace(
            kept=False, bar=_people_bar(rec), reason=f"gave its room in the budget to a person's {kind} (an agent's "
            "record never pushes a person's out)")
    return freed


def _people_bar(rec: Record) -> str:
    """The bar an agent's row gave way at: to a verified memory, or to another person's record."""
    return "verified" if isinstance(rec, Memory) and rec.verified else "person"


def _people_first(yielding: list[tuple[int, int, int, int]], kept: list[RecallItem | None],
                  decisions: list[_Decision], ranked: Ranked, cands: Sequence[WalkRow | None], cover: Cover,
                  actor: np.ndarray, bonus: np.ndarray | None, seen: Mapping[str, str], used: int, bars: Bars,
                  materialize: Callable[[WalkRow], Record | None],
                  prefetch: Callable[[list[WalkRow]], object] | None,
                  line_of: Callable[[WalkRow, Record], str] | None, matched: Callable[[int], tuple[str, ...]],
                  cov: dict[int, float], meaning: frozenset[int] | None = None, on_meaning: bool = False) -> int:
    """People's records take the places of kept agent records of their kind that are no more relevant to the
    query: a person's record (:func:`human_record`: a memory a person verified, a decision, note, checkpoint or
    episode a person wrote) ranked anywhere in the walk (under the margin too: a flood of short agent records
    raises the bar) whose coverage (+ bonus) is at least an agent record's of its kind replaces the lowest ranked
    such one. Coverage is the query's idf-weighted share a record holds, whatever its length: "as relevant" by words
    means it holds the query's words the agent record holds, so a record that holds none of them does not qualify
    by words. ``meaning``: the positions the semantic channel found close in meaning (the model's
    ``match_cosine``), whichever floor passed (review 21: a person's record found by meaning alone never qualified
    once agents' words had lifted the support). A person's record close in meaning qualifies too, as one holding
    the floor's share of the query does. When the floor passed on meaning (``on_meaning``: the walk read only the
    records close in meaning), only those qualify, and one is as relevant as any kept agent record, all close in
    meaning. Returns the tokens used."""
    import numpy as np

    def kind(j: int) -> str:
        c = cands[j]
        assert c is not None
        return c.kind

    kinds = {kind(j) for j, _, _, _ in yielding}
    decided = {d.j for d in decisions if d.kept or d.bar == "delta"}
    rest = [j for j, c in enumerate(cands) if c is not None and c.kind in kinds and j not in decided]
    if not rest:
        return used
    extra = sorted({j for j in rest if j not in cov} | {j for j, _, _, _ in yielding if j not in cov})
    if extra:
        pos = ranked.pos[np.array(extra, np.int64)]
        covs, _ = coverage(cover, pos, actor[pos])
        add = bonus[extra].tolist() if bonus is not None else [0.0] * len(extra)
        cov.update((j, min(1.0, round(float(s) + b, SCORE_DECIMALS))) for j, s, b in zip(extra, covs, add,
                                                                                           strict=True))
    # a person's record qualifies by holding as much of the query as an agent record of its kind, or by holding at
    # least the floor's share of it: then it may take one of PEOPLE_PLACES places whatever the agents' records hold
    # (agent records stuffed with a question's likely words outscored a person's decision on every natural question)
    lowest = min(min(cov[j] for j, _, _, _ in yielding), bars.floor)
    close = meaning or frozenset()

    def near(j: int) -> bool:  # close in meaning to the query
        return int(ranked.pos[j]) in close

    if on_meaning:
        rest = [j for j in rest if near(j)]
    else:
        rest = [j for j in rest if (cov[j] >= lowest and cov[j] > 0) or near(j)]
    reserved: dict[str, int] = {}  # places taken by the floor's rule, per kind
    if prefetch is not None and rest:
        prefetch([c for j in rest if (c := cands[j]) is not None])
    for j in rest:
        if not yielding:
            break
        c = cands[j]
        assert c is not None
        rec = materialize(c)
        if rec is None or not human_record(rec) or (c.id in seen and seen[c.id] == rec.digest):
            continue
        # the lowest ranked agent record of its kind this one is at least as relevant as gives way; failing that, a
        # person's record that holds the floor's share of the query takes the lowest ranked one's place, up to
        # PEOPLE_PLACES of the kind
        at = next((i for i in range(len(yielding) - 1, -1, -1)
                   if kind(yielding[i][0]) == c.kind and (on_meaning or cov[yielding[i][0]] <= cov[j])), None)
        by_floor = False
        if at is None and (cov[j] >= bars.floor or near(j)) and reserved.get(c.kind, 0) < PEOPLE_PLACES:
            at = next((i for i in range(len(yielding) - 1, -1, -1) if kind(yielding[i][0]) == c.kind), None)
            by_floor = at is not None
        if at is None:
            continue
        line = record_line(rec) if line_of is None else line_of(c, rec)
        cost = estimate_tokens(line)
        _, y_kept, y_dec, freed = yielding[at]
        more: list[tuple[int, int, int, int]] = []
        if used - freed + cost > bars.budget_tokens:  # other kinds' kept agent records give their room too (review 15)
            others = yielding[:at] + yielding[at + 1:]
            room = _room(others, used - freed + cost - bars.budget_tokens)
            if room is None:
                decisions.append(_Decision(j, False, "budget",
                                           f"would exceed the budget of {bars.budget_tokens} tokens"))
                continue
            more = [others[i] for i in room]
        del yielding[at]
        used -= _give_room(more, yielding, kept, decisions, rec, c.kind)
        if by_floor:
            reserved[c.kind] = reserved.get(c.kind, 0) + 1
        used += cost - freed
        kept[y_kept] = None
        decisions[y_dec] = decisions[y_dec]._replace(
            kept=False, bar=_people_bar(rec), reason=f"gave its place to a person's {c.kind} as relevant (an agent's "
            "record never pushes a person's out)")
        held = "holding the floor's share of the query" if cov[j] >= bars.floor else "close in meaning to the query"
        why = (f"a person's {c.kind} {held} takes a kept agent one's place (at most {PEOPLE_PLACES} of a kind)"
               if by_floor else f"a person's {c.kind} as relevant as a kept agent one takes its place")
        row = _Decision(j, True, "kept", why + (" (the floor on meaning: both are close in meaning)" if on_meaning
                                                else ""))
        at_row = next((i for i, d in enumerate(decisions) if d.j == j), None)  # its "margin" or "top_k" row
        if at_row is None:
            decisions.append(row)
        else:
            decisions[at_row] = row
        kept.append(RecallItem(kind=c.kind, id=c.id, score=float(ranked.score[j]), matched=matched(j), bar="kept",
                               line=line, record=rec))
    return used


def gate(ranked: Ranked, cands: Sequence[WalkRow | None], exact: Mapping[str, list[str]], cover: Cover,
         actor: np.ndarray, bars: Bars, materialize: Callable[[WalkRow], Record | None],
         seen: Mapping[str, str], prefetch: Callable[[list[WalkRow]], object] | None = None,
         line_of: Callable[[WalkRow, Record], str] | None = None, *,
         match: Meaning | None = None, agent: np.ndarray | None = None,
         hidden: Mapping[str, str] | None = None) -> Gated:
    """Gate one ranked query. ``cands[j]`` is the candidate at rank ``j`` (None: gone or masked, skipped);
    ``actor`` the actor code of every position of the mind (:class:`~synapse_nb.recall.threads.ThreadIndex`);
    ``seen`` maps ids the session was given to the digest it got (empty without a session).

    ``agent`` (per position of the mind: an agent's record no person verified, ``ThreadIndex.agent``): a person's
    record is held to the margin relative to the best person's record, as if agents' records were not there (a
    flood of short agent records holding a question's words raises the bar for agents' records only), and which
    floor applies is decided on the support of the top people's records (agents' words never turn the floor on
    meaning off). Without an agent's record at the top, the walk is the same.

    ``prefetch``, if given, is called once with the candidates the walk reads whatever the records hold (the
    first ``Bars.top_k`` of each kind above the margin, once the floor is passed) before the first is read,
    so that a store can read them in one statement per kind. ``line_of(candidate, record)`` gives a record's
    line (default: :func:`~synapse_nb.recall.assembly.record_line` of the record).

    ``match`` (the semantic channel on, its model with a ``match_cosine``): the records whose own cosine reaches
    it. A support under the floor passes when there is one (the model found a record close in meaning to a
    question whose words the records do not hold); the walk then reads only those records, its margin relative to
    the best of them, and the kept rows say so. Whichever floor passed, a person's record close in meaning may take
    a kept agent record's place (:func:`_people_first`).

    ``hidden``: the ids open duplicate pairs hide (``materialize`` gives None for them), each to the record shown in
    its place, so their rows say so (bar ``duplicate``) instead of "deleted meanwhile"."""
    order = [j for j, c in enumerate(cands) if c is not None]
    if not order:
        return Gated(ExplainRows((), tuple), [], 0.0, False)
    top = order[: bars.gate_depth]
    positions = ranked.pos[top]
    covs, words_of = coverage(cover, positions, actor[positions])
    # exact matches (tag, key, file) count towards coverage as they did in recall v1: a record about a file
    # being worked on is relevant on that alone
    bonus = ranked.parts.get("bonus")
    bonus_at = bonus[top].tolist() if bonus is not None else [0.0] * len(top)  # the same floats float() gives
    cov = {j: min(1.0, round(float(s) + b, SCORE_DECIMALS)) for j, s, b in zip(top, covs, bonus_at, strict=True)}
    top_at = {j: i for i, j in enumerate(top)}

    def matched(j: int) -> tuple[str, ...]:
        i = top_at.get(j)
        c = cands[j]
        assert c is not None
        return (words_of[i] if i is not None else ()) + tuple(exact.get(c.id, ()))

    def cover_more(js: Sequence[int]) -> None:  # the coverage (+ bonus) and words of records past the top
        more = [j for j in js if j not in cov]
        if not more:
            return
        pos_more = ranked.pos[more]
        covs_more, words_more = coverage(cover, pos_more, actor[pos_more])
        bonus_more = bonus[more].tolist() if bonus is not None else [0.0] * len(more)
        for j, share, w, b in zip(more, covs_more, words_more, bonus_more, strict=True):
            cov[j] = min(1.0, round(float(share) + b, SCORE_DECIMALS))
            top_at[j] = len(words_of)
            words_of.append(w)

    best_cov = max(cov.values())
    unknown = cover.unknown_share
    sup = support(list(cov.values()), unknown)
    if bonus is not None:  # an exact match is relevant on its own: unknown words do not outweigh it
        sup = max(sup, min(1.0, round(max(bonus_at), SCORE_DECIMALS)))
    scores = ranked.score.tolist()
    is_agent: list[bool] = agent[ranked.pos].tolist() if agent is not None else [False] * len(scores)
    # which floor applies is decided as if agents' unverified records were not there (review 21: five agent records
    # holding a question's words lifted the support over the floor, and the gate no longer read meaning): the
    # support of the top people's records, unless none of the top is an agent's (then the same); read only when it
    # can decide something (the floor on meaning is there to pass, or the floor failed)
    sup_p, agents_lift = sup, False
    if (match is not None or sup < bars.floor) and any(is_agent[j] for j in top):
        top_p = [j for j in order if not is_agent[j]][: bars.gate_depth]
        cover_more(top_p)
        sup_p = support([cov[j] for j in top_p], unknown) if top_p else 0.0
        if bonus is not None and top_p:
            sup_p = max(sup_p, min(1.0, round(float(bonus[top_p].max()), SCORE_DECIMALS)))
        agents_lift = sup_p < bars.floor <= sup
    decisions: list[_Decision] = []
    kept_reason = "cleared every bar"
    on_meaning = match if sup_p < bars.floor else None  # the floor passes on meaning instead of words
    sup = sup_p if on_meaning is not None else max(sup, sup_p)
    if on_meaning is not None:
        kept_reason += (f" (the floor on meaning: support {sup:.3f} < floor {bars.floor}"
                        + (" without agents' unverified records" if agents_lift else "")
                        + f", and its cosine reaches the model's {on_meaning.at})")
    elif sup < bars.floor:
        reason = (f"support {sup:.3f} < floor {bars.floor} (best coverage of the top {len(top)} {best_cov:.3f}, "
                  f"unknown share of the query {unknown:.3f})")
        decisions = [_Decision(j, False, "floor", reason) for j in top]
        return Gated(_explain_rows(decisions, cands, ranked, matched, cov), [], sup, False)
    # the margin is relative to the best match without exact-match bonuses: a tag, key or file match lifts a
    # record over the bar but never raises the bar for the others
    text_score = ranked.score - bonus if bonus is not None else ranked.score
    if on_meaning is not None:  # only the records close in meaning justified passing: the walk reads those alone
        close = on_meaning.positions
        off = [j for j in order if int(ranked.pos[j]) not in close]
        why = f"the floor passed on meaning only, and this record's cosine is under the model's {on_meaning.at}"
        decisions += [_Decision(j, False, "floor", why) for j in off[:20]]
        order = [j for j in order if int(ranked.pos[j]) in close]
        if not order:
            return Gated(_explain_rows(decisions, cands, ranked, matched, cov), [], sup, False)
    best = round(float(text_score[order].max()), SCORE_DECIMALS)  # a maximum is exact: max() over them, at once
    kept: list[RecallItem | None] = []  # None: a record that gave its place away
    per_kind: dict[str, int] = {}
    used = 0
    bar = bars.margin * best
    low, why_low = bar, ""  # a person's record's bar: relative to the best person's record (below the best match)
    people = [j for j in order if not is_agent[j]]
    blank: set[int] = set()  # people's records under the agents' bar that match nothing: never walked below it
    if people and len(people) < len(order):
        # only a person's record that matches the query sets that bar or is walked down to it: one holding a query
        # word (coverage or an exact match) or close in meaning (cosine at the model's match_cosine). Review 68: a
        # dense-only hit scored 0.007, and the people's bar (0.4 x 0.007) let every record the dense list held in
        under = [j for j in people if scores[j] < bar]
        cover_more(under)
        close = match.positions if match is not None else frozenset()
        blank = {j for j in under if cov[j] <= 0 and int(ranked.pos[j]) not in close}
        people = [j for j in people if j not in blank]
    if people and len(people) < len(order):
        best_p = round(float(text_score[people].max()), SCORE_DECIMALS)
        if best_p < best:
            low = bars.margin * best_p
            why_low = f", and a person's record below {bars.margin} x the best person's match ({best_p:.3f})"
    # order is by score: the walk's records above the margin (a person's record above the people's)
    above = [j for j in order if scores[j] >= (low if not is_agent[j] and j not in blank else bar)]
    # per kind, the walk reads the first top_k records above the margin whatever they hold: a kind is full only
    # once top_k of its records were kept, and the walk ends early only when every kind is full
    first: dict[str, list[WalkRow]] = {}
    for j in above:
        c = cands[j]
        assert c is not None
        got = first.setdefault(c.kind, [])
        if len(got) < bars.top_k:
            got.append(c)
    present = set(first)  # the kinds above the margin
    if prefetch is not None and above:
        prefetch([c for kind in sorted(first) for c in first[kind]])
    top_k_rows = 0
    top_k = bars.top_k
    open_kinds = len(present) if top_k > 0 else 0  # kinds above the margin not yet full
    full_reason: dict[str, str] = {}
    # the kept records that give way to a person's record of their kind (agents' records no person verified):
    # (rank, position in kept, position in decisions, tokens), best ranked first
    yielding: list[tuple[int, int, int, int]] = []
    for n, j in enumerate(order):
        c = cands[j]
        assert c is not None
        score = scores[j]
        if score < low:
            why = f"below {bars.margin} x best match ({best:.3f}){why_low}"
            for k in order[n: n + max(0, min(20, MAX_EXPLAIN - len(decisions)))]:
                decisions.append(_Decision(k, False, "margin", why))
            break
        if score < bar and (is_agent[j] or j in blank):  # only people's records are walked down to their own margin,
            if len(decisions) < MAX_EXPLAIN:  # and only those that match the query
                decisions.append(_Decision(j, False, "margin", f"below {bars.margin} x best match ({best:.3f})" + (
                    ", and this person's record holds no query word and is not close in meaning" if j in blank
                    else "")))
            continue
        if per_kind.get(c.kind, 0) >= top_k:
            if top_k_rows < MAX_TOP_K_ROWS and len(decisions) < MAX_EXPLAIN:
                top_k_rows += 1
                if c.kind not in full_reason:
                    full_reason[c.kind] = f"{plural(top_k, c.kind, TABLES[c.kind])} already kept"
                why = full_reason[c.kind]
                decisions.append(_Decision(j, False, "top_k", why))
            elif not open_kinds:
                break  # every kind above the margin is full, and enough of the rest is explained
            continue
        rec = materialize(c)
        if rec is None:  # hidden behind its duplicate, or deleted by another process since it was ranked
            shown = (hidden or {}).get(c.id)
            decisions.append(_Decision(j, False, "gone", "deleted meanwhile") if shown is None else
                             _Decision(j, False, "duplicate", f"hidden as a duplicate of {shown_id(shown)}"))
            continue
        if c.id in seen and seen[c.id] == rec.digest:
            decisions.append(_Decision(j, False, "delta", "already given to this session, unchanged"))
            continue
        line = record_line(rec) if line_of is None else line_of(c, rec)
        cost = estimate_tokens(line)
        if used + cost > bars.budget_tokens:
            room = _room(yielding, used + cost - bars.budget_tokens) if human_record(rec) else None
            if room is None:
                decisions.append(_Decision(j, False, "budget",
                                           f"would exceed the budget of {bars.budget_tokens} tokens"))
                continue
            # agents' kept records of any kind, lowest ranked first, give the person's their room
            used -= _give_room([yielding[at] for at in room], yielding, kept, decisions, rec, c.kind)
        used += cost
        per_kind[c.kind] = k_kept = per_kind.get(c.kind, 0) + 1
        if k_kept == top_k and c.kind in present:
            open_kinds -= 1
        if yields_place(rec):
            yielding.append((j, len(kept), len(decisions), cost))
        decisions.append(_Decision(j, True, "kept", kept_reason))
        kept.append(RecallItem(kind=c.kind, id=c.id, score=score, matched=matched(j), bar="kept", line=line,
                               record=rec))
    if yielding:
        used = _people_first(yielding, kept, decisions, ranked, cands, cover, actor, bonus, seen, used, bars,
                             materialize, prefetch, line_of, matched, cov,
                             match.positions if match is not None else None, on_meaning is not None)
    items = [k for k in kept if k is not None]
    return Gated(_explain_rows(decisions, cands, ranked, matched, cov), items, sup, True, on_meaning is not None)
