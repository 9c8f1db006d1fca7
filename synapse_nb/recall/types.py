"""The public types of a recall: the bars a candidate must clear, the answer, its items and its explanation."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from synapse_nb._util import plural, shown_id
from synapse_nb.errors import ValidationError
from synapse_nb.models import KINDS, RANKED_KINDS, Lesson, Record
from synapse_nb.provenance import inline, md_fenced
from synapse_nb.render import explanation_html, shown_parts, whole_ids

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["EMPTY_REASONS", "EXPLAIN_COLUMNS", "KIND_ORDER", "MAX_EXPLAIN", "MAX_QUERY_CHARS", "RANK_PARTS", "Bars",
           "ExplainRow", "ExplainRows", "Recall", "RecallExplanation", "RecallItem"]

#: Kinds that are recall candidates, in the order their groups appear (the registry's ranked kinds).
KIND_ORDER = RANKED_KINDS
#: Most rows in ``Recall.explain()``.
MAX_EXPLAIN = 200
#: Longest query accepted, in characters (the gate analyses only the first 2,000).
MAX_QUERY_CHARS = 1_000_000


@dataclass(frozen=True)
class Bars:
    """What a recall includes. Every field has a documented default (chosen on LoCoMo conversations 0-6).

    Ranking decides the order (:mod:`synapse_nb.recall.rank`); the bars decide only what is included.

    Attributes
    ----------
    floor : float
        "Nothing new" unless the query's support reaches it: 0.8 x the best gate coverage (the idf-weighted
        share of the query's words a record's own text holds, in [0, 1]; :mod:`synapse_nb.recall.coverage`)
        among the top ``gate_depth`` ranked records + 0.2 x the second best - 0.25 x the share of the query's
        words that no record of the vault holds (:func:`synapse_nb.recall.scoring.support`). Default 0.22,
        chosen as the largest floor (two decimals, the GateExplorer's step) that answers "nothing new" to at
        most 4.5% of the questions that have evidence of LoCoMo conversations 0-6 rewritten as real chat
        (4.4%, :mod:`synapse_nb.eval.chatstyle`; issue 33); on those conversations as written, 3.6% (off-topic
        rejection 91%). It was 0.23 by the same rule on LoCoMo's own text.
        It is never applied per item.
    margin : float
        A record is included only while its rank score is at least ``margin`` times the best rank score.
        Default 0.4.
    top_k : int
        Most hits per kind. Default 5.
    budget_tokens : int
        Most tokens (estimated at 4 characters each) for the hits section. Default 1,200. Records already
        given to the session are skipped before top-k and budget: they never use a slot.
    tag_bonus : float
        Added to the rank score when a query word equals one of the record's tags. Default 0.25.
    key_bonus : float
        Added when the query names the record's key or note name. Default 0.35.
    file_bonus : float
        Added when the record refers to one of the ``files`` passed to recall. Default 0.3.
    max_bonus : float
        Most that one record's tag, key and file bonuses add up to. Default 0.35 (one key match): several exact
        matches name the same record, and a record stuffed with tags must not outrank one the query is about.
    gate_depth : int
        How many ranked records the floor looks at. Default 20.
    """

    floor: float = 0.22
    margin: float = 0.4
    top_k: int = 5
    budget_tokens: int = 1200
    tag_bonus: float = 0.25
    key_bonus: float = 0.35
    file_bonus: float = 0.3
    max_bonus: float = 0.35
    gate_depth: int = 20

    def __post_init__(self) -> None:
        for name in ("floor", "margin", "tag_bonus", "key_bonus", "file_bonus", "max_bonus"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= float(v) <= 1.0:
                raise ValidationError(f"Bars.{name} must be a number in [0, 1], got {v!r}")
        for name in ("top_k", "budget_tokens", "gate_depth"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValidationError(f"Bars.{name} must be a whole number >= 0, got {v!r}")
        if self.gate_depth < 1:
            raise ValidationError(f"Bars.gate_depth must be at least 1, got {self.gate_depth!r}")


@dataclass(frozen=True)
class RecallItem:
    """One recalled record: why it was kept (score, matched terms, the bar that decided) and its line."""

    kind: str
    id: str
    score: float
    matched: tuple[str, ...]
    bar: str
    line: str
    record: Record = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "score": round(self.score, 6), "matched": list(self.matched),
                "bar": self.bar, "line": self.line}


@dataclass(frozen=True)
class ExplainRow:
    """One row of :meth:`Recall.explain`: a candidate, its rank score and the parts it is made of, its gate
    coverage (None below the top ``Bars.gate_depth``), what matched, and the bar that decided.

    ``parts`` holds ``bm25`` (normalised), ``neighbours`` (flow from the records around it in its thread),
    ``thread`` (the thread's best), ``question`` (the multiplier on a record that is itself a question), ``actor``
    (the multiplier when the query names who said it) and ``bonus`` (tag / key / file matches).
    """

    kind: str
    id: str
    score: float
    matched: tuple[str, ...]
    kept: bool
    bar: str
    reason: str
    coverage: float | None = None
    parts: tuple[tuple[str, float], ...] = ()


class ExplainRows(Sequence[ExplainRow]):
    """A recall's explanation rows, built on first read: few recalls are ever explained, and building ~40 rows
    (their rounded rank parts) cost a recall more than deciding them. ``bars`` (the bar that decided each row)
    is known without building them. Equal to (and hashed as) the tuple of its rows; pickles as that tuple.
    """

    __slots__ = ("_build", "_rows", "bars")

    def __init__(self, bars: tuple[str, ...], build: Callable[[], tuple[ExplainRow, ...]]) -> None:
        self.bars = bars
        self._build: Callable[[], tuple[ExplainRow, ...]] | None = build
        self._rows: tuple[ExplainRow, ...] | None = None

    def rows(self) -> tuple[ExplainRow, ...]:
        if self._rows is None:
            assert self._build is not None
            rows = self._build()
            assert len(rows) == len(self.bars)
            self._rows, self._build = rows, None  # the builder's inputs are released once built
        return self._rows

    def __len__(self) -> int:
        return len(self.bars)

    @overload
    def __getitem__(self, i: int) -> ExplainRow: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[ExplainRow, ...]: ...

    def __getitem__(self, i: int | slice) -> ExplainRow | tuple[ExplainRow, ...]:
        return self.rows()[i]

    def __iter__(self) -> Iterator[ExplainRow]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ExplainRows):
            other = other.rows()
        return self.rows() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.rows())

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (self.rows(),)

    def __repr__(self) -> str:
        return repr(self.rows())


class RecallExplanation(list[ExplainRow]):
    """Every candidate near the bars, with its score and why it was kept or dropped."""

    def to_dicts(self) -> list[dict[str, Any]]:
        out = []
        for r in self:
            parts = dict(r.parts)
            out.append({"kind": r.kind, "id": r.id, "score": round(r.score, 4), "matched": ", ".join(r.matched),
                        "kept": r.kept, "bar": r.bar, "reason": r.reason,
                        "coverage": None if r.coverage is None else round(r.coverage, 4),
                        **{p: round(parts[p], 4) if p in parts else None for p in RANK_PARTS}})
        return out

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd  # heavy: loaded only when a DataFrame is asked for

        return pd.DataFrame(self.to_dicts(), columns=list(EXPLAIN_COLUMNS))

    def to_polars(self) -> pl.DataFrame:
        import polars as pl  # heavy: loaded only when a DataFrame is asked for

        schema = {"kind": pl.String, "id": pl.String, "score": pl.Float64, "matched": pl.String, "kept": pl.Boolean,
                  "bar": pl.String, "reason": pl.String, "coverage": pl.Float64}
        return pl.DataFrame(self.to_dicts(), schema=schema | dict.fromkeys(RANK_PARTS, pl.Float64))

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        if not self:
            return "(no candidate scored above zero)"
        lines = [(f"{'kept':<5} {'score':>6} {'cover':>5}  {'kind':<10} {'id':<18} {'bar':<7} "
                  "reason / matched / rank parts")]
        for r in self:
            cov = "-" if r.coverage is None else f"{r.coverage:.3f}"
            parts = " ".join(f"{k}={v:.3f}" for k, v in shown_parts(r.parts))
            lines.append(f"{'yes' if r.kept else 'no':<5} {r.score:6.3f} {cov:>5}  {r.kind:<10} {shown_id(r.id):<18} "
                         f"{r.bar:<7} {r.reason}; matched: {', '.join(r.matched) or '-'}"
                         + (f"; {parts}" if parts else ""))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return explanation_html(self)


#: The parts of a rank score, as ``Recall.explain()`` shows them.
RANK_PARTS = ("bm25", "neighbours", "thread", "question", "actor", "bonus")
#: Columns of ``Recall.explain().to_pandas()``.
EXPLAIN_COLUMNS = ("kind", "id", "score", "matched", "kept", "bar", "reason", "coverage", *RANK_PARTS)

#: Why a recall has no items (``Recall.empty_reason``), each a stable value.
EMPTY_REASONS = ("empty_query", "nothing_relevant", "already_given", "over_budget")


@dataclass(frozen=True)
class Recall:
    """The answer to one recall: plain text for an LLM, typed items, and the explanation.

    ``nothing_new`` is True when no item is returned; ``empty_reason`` then says why, one of
    :data:`EMPTY_REASONS` (``None`` when there are items):

    - ``"nothing_relevant"``: no candidate cleared the gate's bars (the text is ``nothing new for: "q"``);
    - ``"already_given"``: the relevant items were all given to this session before, unchanged;
    - ``"over_budget"``: relevant items did not fit ``budget_tokens`` (raise it);
    - ``"empty_query"``: the query had no text.

    ``version`` names the vault state the recall read: a whole number, as text, that belongs to the vault, so every
    handle, process and machine reading one state says the same, and every write that changes it makes it larger (a
    session's marks are no part of it). On a team vault it is the server's ``gate_stats.version``; on a local vault
    the ``state_version`` row of its ``meta`` table, one more at each commit that changed a row (review 84: it was the
    process's view of the file, ``2.0`` in a fresh CLI and ``88.0`` in a long-lived server for one vault). Two
    recalls with the same version, query, arguments, session state and "now" give the same bytes (on a team vault
    "now" is the server's clock of that read). :meth:`synapse_nb.Vault.version` is another token, a handle's own.
    """

    query: str
    session: str | None
    text: str
    items: tuple[RecallItem, ...]
    lessons: tuple[Lesson, ...]
    nothing_new: bool
    path: str
    bars: Bars
    empty_reason: str | None = None
    _explain: tuple[ExplainRow, ...] | ExplainRows = field(default=(), repr=False)
    #: the gate's support, compared with ``bars.floor``: best and second-best coverage among the top
    #: ``bars.gate_depth`` ranked records, less the query's unknown share (0.0 when nothing ranked)
    coverage: float = 0.0
    #: True when the support was under the floor and the gate passed on meaning instead (the semantic channel on:
    #: docs/recall.md, "The gate on meaning"); what was kept is then only what the model found close enough
    on_meaning: bool = False
    #: the vault state this recall read (see above); "" when built by hand
    version: str = ""
    #: why the vault is borrowed (:meth:`synapse_nb.borrowed.Borrowed.to_dict`: reason, path, target, line), None for
    #: a vault of one's own; its ``line`` is then the first line of ``text``
    borrowed: dict[str, Any] | None = None
    #: the ids of the lessons this session was shown before, unchanged (the text names them by id only)
    shown_before: frozenset[str] = frozenset()
    #: the lessons this session was given in full that are no longer in force as given (withdrawn, run out, approved
    #: again in other words, rejected, purged): (id, the wording it was given or None, why: one of
    #: recall.delta.GONE_WHY); ``text`` names them (review 87, s21: recall.delta.no_longer)
    no_longer: tuple[tuple[str, str | None, str], ...] = ()
    #: why this recall answered without the semantic channel it had on (its index could not be read: e.g. a table
    #: an agent's shell truncated), None when the channel answered or is off by setting; ``text`` then says so in
    #: its first line after a borrowed vault's (:data:`synapse_nb.render.SEMANTIC_OFF_LINE`)
    semantic_off: str | None = None
    #: the moment an ``as_of`` recall was rebuilt at (stored UTC text; None: a live answer); ``text`` then starts with
    #: :func:`synapse_nb.render.as_of_line` and its lessons stand under "LESSONS APPROVED AS OF", not the live banner
    as_of: str | None = None
    #: how many agents' records no person verified wait to be embedded in the semantic table (review 67): while
    #: any does, the channel read people's records only, so the answer does not depend on how many this machine
    #: embedded; ``text`` then says so in its first line after a borrowed vault's
    #: (:data:`synapse_nb.render.SEMANTIC_PEOPLE_LINE`). 0: the channel read every record, or is off
    agents_waiting: int = 0
    #: how many relevant records this recall left out as given to its session before, unchanged: with items, its
    #: heading then says they are more on the query, not given earlier in the session (review 93: a repeated recall
    #: gave the next ones under the same heading, read as the whole answer)
    given_before: int = 0
    _mark: Callable[[Collection[str] | None], None] | None = field(default=None, repr=False, compare=False)
    #: ``text`` as parts, one a line, each with the ids it gives whole (:func:`~synapse_nb.recall.assembly.
    #: assemble_parts`, after the lines put before it): what :meth:`given_in` reads
    _parts: tuple[tuple[str, tuple[str, ...]], ...] = field(default=(), repr=False, compare=False)

    def mark_given(self, ids: Collection[str] | None = None) -> None:
        """Record what this answer gives its session, after a recall made with ``record=False``: a caller that
        delivers the answer later (the agent hook prints it) marks it given only once it is delivered, so a run
        killed in between leaves nothing marked that the session never got (review 27). ``ids`` names the items and
        lessons the delivery held whole (a caller that cut the text marks only what its cut kept: review 31);
        None marks all. Once; else a no-op."""
        if self._mark is not None:
            self._mark(ids)

    def given_in(self, shown: str) -> set[str]:
        """The ids of the items and lessons ``shown`` gives whole: ``shown`` is this recall's ``text``, or a cut of
        it that keeps whole lines from the top (then what it says it left out, or more after the text); what a
        caller that cut the text passes to :meth:`mark_given` (review 71: the MCP recall marked what its cut
        dropped, and the session's next call said "already given")."""
        full, got = self.text.split("\n"), shown.split("\n")
        lines = next((i for i, (a, b) in enumerate(zip(full, got, strict=False)) if a != b), min(len(full), len(got)))
        return whole_ids(self._parts, lines)

    def explain(self) -> RecallExplanation:
        """A table of every candidate near the bars and why it was kept or dropped."""
        return RecallExplanation(self._explain)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "session": self.session, "text": self.text, "nothing_new": self.nothing_new,
                "empty_reason": self.empty_reason, "items": [i.to_dict() for i in self.items],
                "lessons": [les.id for les in self.lessons], "path": self.path, "coverage": round(self.coverage, 6),
                "floor_on_meaning": self.on_meaning, "version": self.version, "borrowed": self.borrowed,
                "semantic_off": self.semantic_off, "as_of": self.as_of, "agents_waiting": self.agents_waiting,
                "given_before": self.given_before}

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        state = f"nothing new ({self.empty_reason})" if self.nothing_new else plural(len(self.items), "item")
        return f"<Recall {inline(self.query, 80)!r}: {state}, {plural(len(self.lessons), 'lesson')}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """What a terminal IPython (or ``ipython script.ipy``) shows for ``%recall``: the text, as the CLI prints it
        (``repr()`` stays the short form for debugging)."""
        p.text(self.text)

    def _repr_markdown_(self) -> str:
        return md_fenced(self.text, "text")

    def _repr_html_(self) -> str:
        """What was found, for people (approved lessons, then the items with who wrote each); the exact text an
        agent receives is one click away (:func:`synapse_nb.displays.recall_html`)."""
        from synapse_nb.displays import recall_html  # loaded on first notebook display

        return recall_html(self, {k.name: k.title for k in KINDS})

