"""Recall: per turn, only what is new and relevant across all memories, or "nothing new".

``vault.recall(query, session=..., branch=..., files=..., budget_tokens=...)``:

1. **Candidates** — memories (not expired), decisions, checkpoints, episodes and note triggers of the
   mind. Small vaults are scored exhaustively from SQLite; large ones take candidates from the
   LanceDB index (vector + full text, fused by RRF) plus exact tag/key matches. A candidate's score
   is a pure function of (query, its text, the vault's word statistics), so both paths give the same
   answer wherever both can run.
2. **The gate** — :class:`synapse_nb.gate.CorpusScorer` (idf-weighted TF-IDF coverage, word and
   character n-grams) plus exact matches on tags, keys and the given files. A hit must clear
   :class:`Bars`: an absolute floor, a margin to the best hit, a top-k per kind and a token budget.
3. **Delta** — with a ``session``, what that session already received unchanged is not repeated.
4. **Assembly** — the approved-lesson banner first (always), then hits grouped by kind, priority then
   recency, ``[unverified]`` marked, notes as their trigger only (``vault.notes.expand(name)``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from synapse_nb._util import digest, estimate_tokens, plural, shorten
from synapse_nb.errors import IndexError_, QueryError, StoreError, ValidationError
from synapse_nb.models import (
    PRIORITIES,
    TABLES,
    Checkpoint,
    Decision,
    Episode,
    Lesson,
    Memory,
    Note,
    Record,
    kind_of_id,
)

if TYPE_CHECKING:
    from synapse_nb.store.index import DriftReport, IndexRow
    from synapse_nb.vault import Vault

__all__ = ["BANNER", "EMPTY_REASONS", "Bars", "Recall", "RecallExplanation", "RecallItem", "VaultIndex", "banner_text"]

log = logging.getLogger("synapse_nb.recall")

#: The heading of the approved-lesson banner that starts every recall when lessons are in force.
BANNER = "APPROVED SYSTEM MEMORY — CRITICAL: ADHERE"
#: Kinds that are recall candidates, in the order their groups appear.
KIND_ORDER = ("memory", "decision", "checkpoint", "episode", "note")
_GROUP_TITLES = {"memory": "Memories", "decision": "Decisions", "checkpoint": "Checkpoints",
                 "episode": "Past runs", "note": "Notes (fetch the body with vault.notes.expand(name))"}
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_WORD = re.compile(r"\w+")
#: Longest query accepted, in characters (the gate analyses only the first 2,000).
MAX_QUERY_CHARS = 1_000_000


@dataclass(frozen=True)
class Bars:
    """What a candidate must clear to be recalled. Every field has a documented default.

    Attributes
    ----------
    floor : float
        Absolute minimum gate score in [0, 1]. Default 0.3: at least about a third of the query's
        information must be in the memory.
    margin : float
        Relative bar: a hit must score at least ``margin`` times the best hit. Default 0.5.
    top_k : int
        Most hits per kind. Default 5.
    budget_tokens : int
        Most tokens (estimated at 4 characters each) for the hits section. Default 1,200.
    tag_bonus : float
        Added to the score when a query word equals one of the record's tags. Default 0.25.
    key_bonus : float
        Added when the query names the record's key or note name. Default 0.35.
    file_bonus : float
        Added when the record refers to one of the ``files`` passed to recall. Default 0.3 (as much as
        the floor: a record about a file being worked on is relevant on that alone).
    exhaustive_max : int
        Vaults with at most this many candidates are scored exhaustively (from an in-process cache of
        SQLite); larger ones take candidates from the LanceDB index. Default 20,000 (below it, scoring
        everything is faster than asking the index).
    index_k : int
        Candidates fetched from the index per recall on the index path. Default 200.
    """

    floor: float = 0.3
    margin: float = 0.5
    top_k: int = 5
    budget_tokens: int = 1200
    tag_bonus: float = 0.25
    key_bonus: float = 0.35
    file_bonus: float = 0.3
    exhaustive_max: int = 20000
    index_k: int = 200

    def __post_init__(self) -> None:
        for name in ("floor", "margin", "tag_bonus", "key_bonus", "file_bonus"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= float(v) <= 1.0:
                raise ValidationError(f"Bars.{name} must be a number in [0, 1], got {v!r}")
        for name in ("top_k", "budget_tokens", "exhaustive_max", "index_k"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValidationError(f"Bars.{name} must be a whole number >= 0, got {v!r}")


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
class _Row:
    kind: str
    id: str
    score: float
    matched: tuple[str, ...]
    kept: bool
    bar: str
    reason: str


class RecallExplanation(list[_Row]):
    """Every candidate near the bars, with its score and why it was kept or dropped."""

    def to_dicts(self) -> list[dict[str, Any]]:
        return [{"kind": r.kind, "id": r.id, "score": round(r.score, 4), "matched": ", ".join(r.matched),
                 "kept": r.kept, "bar": r.bar, "reason": r.reason} for r in self]

    def to_pandas(self):  # -> pandas.DataFrame
        import pandas as pd

        return pd.DataFrame(self.to_dicts(), columns=["kind", "id", "score", "matched", "kept", "bar", "reason"])

    def to_polars(self):  # -> polars.DataFrame
        import polars as pl

        return pl.DataFrame(self.to_dicts(), schema={"kind": pl.String, "id": pl.String, "score": pl.Float64,
                                                      "matched": pl.String, "kept": pl.Boolean, "bar": pl.String,
                                                      "reason": pl.String})

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        if not self:
            return "(no candidate scored above zero)"
        lines = [f"{'kept':<5} {'score':>6}  {'kind':<10} {'id':<18} {'bar':<7} reason / matched"]
        for r in self:
            lines.append(f"{'yes' if r.kept else 'no':<5} {r.score:6.3f}  {r.kind:<10} {r.id:<18} {r.bar:<7} "
                         f"{r.reason}; matched: {', '.join(r.matched) or '-'}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from synapse_nb.render import explanation_html

        return explanation_html(self)


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
    _explain: tuple[_Row, ...] = field(default=(), repr=False)

    def explain(self) -> RecallExplanation:
        """A table of every candidate near the bars and why it was kept or dropped."""
        return RecallExplanation(self._explain)

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "session": self.session, "text": self.text, "nothing_new": self.nothing_new,
                "empty_reason": self.empty_reason, "items": [i.to_dict() for i in self.items],
                "lessons": [les.id for les in self.lessons], "path": self.path}

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        from synapse_nb.render import plural

        state = f"nothing new ({self.empty_reason})" if self.nothing_new else plural(len(self.items), "item")
        return f"<Recall {self.query!r}: {state}, {plural(len(self.lessons), 'lesson')}>"

    def _repr_markdown_(self) -> str:
        return "```text\n" + self.text + "\n```"

    def _repr_html_(self) -> str:
        from synapse_nb.render import block, code, plural, pre_html

        state = "nothing new" if self.nothing_new else plural(len(self.items), "item")
        return block(f"<div><b>recall</b> {code(shorten(self.query, 80))} ({state})</div>{pre_html(self.text)}")


@dataclass(frozen=True, slots=True)
class _Cand:
    kind: str
    id: str
    updated_at: str
    expires_at: str | None
    text: str


class _Pool:
    """Candidates in id order, with the lists the scorer needs built once (cached pools are reused)."""

    def __init__(self, cands: list[_Cand]) -> None:
        self.cands = cands
        self.texts = [c.text for c in cands]
        self.keys = [f"{c.id}:{c.updated_at}" for c in cands]
        self.pos = {c.id: i for i, c in enumerate(cands)}
        self.expiring = [i for i, c in enumerate(cands) if c.expires_at is not None]


#: Most rows in ``Recall.explain()``.
MAX_EXPLAIN = 200


# -- record loading ---------------------------------------------------------------------------------------
def _clean_query(query: Any) -> str:
    if not isinstance(query, str):
        raise QueryError(f"a recall query must be text (str), got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    query = query.encode("utf-8", "replace").decode("utf-8")
    return _CTRL.sub(" ", query)


def _line(rec: Record) -> str:
    if isinstance(rec, Memory):
        tags = f" #{' #'.join(rec.tags)}" if rec.tags else ""
        flag = "" if rec.verified else " [unverified]"
        return f"- [{rec.priority}] {rec.category}/{rec.key}: {shorten(rec.content, 600)}{tags}{flag}"
    if isinstance(rec, Decision):
        why = f" — {shorten(rec.rationale, 300)}" if rec.rationale else ""
        tags = f" #{' #'.join(rec.tags)}" if rec.tags else ""
        flag = " [unverified]" if rec.source == "agent" else ""
        return f"- {shorten(rec.decision, 300)}{why} ({rec.created_at[:10]}){tags}{flag}"
    if isinstance(rec, Checkpoint):
        parts = [f"- [{rec.branch or 'no branch'}@{(rec.commit or '-------')[:7]}] {shorten(rec.doing, 300)}"]
        if rec.next_step:
            parts.append(f"next: {shorten(rec.next_step, 200)}")
        if rec.blockers:
            parts.append(f"blockers: {shorten(rec.blockers, 200)}")
        if rec.changed_files:
            parts.append("files: " + ", ".join(rec.changed_files[:10]))
        return "; ".join(parts) + f" ({rec.created_at[:16].replace('T', ' ')})"
    if isinstance(rec, Episode):
        out = f": {shorten(rec.outcome, 300)}" if rec.outcome else ""
        return f"- {rec.task_key} [{rec.status}] ran {rec.created_at[:16].replace('T', ' ')}{out}"
    if isinstance(rec, Note):
        return f"- {rec.name}: {shorten(rec.trigger, 300)}"
    return f"- {rec.summary_line()}"


def banner_text(lessons: Sequence[Lesson]) -> str:
    """The approved-lesson banner that heads a recall, for these lessons ("" when there are none).

    >>> banner_text([])
    ''
    """
    if not lessons:
        return ""
    return "\n".join([BANNER, *(_lesson_block(i, les) for i, les in enumerate(lessons, 1))])


def _lesson_block(i: int, les: Lesson) -> str:
    label = f"[{les.branch or 'all branches'}, approved]"
    lines = [f"{i}. {label} {les.text.strip()}"]
    if les.files_affected:
        lines.append("   Files affected: " + ", ".join(les.files_affected[:20]))
    return "\n".join(lines)


class Recaller:
    """Recall machinery bound to one vault handle (caches live here, per process)."""

    def __init__(self, vault: Vault) -> None:
        self._v = vault
        self._lock = threading.RLock()
        self._scorer: Any = None
        self._cache_key: Any = None
        self._cache: _Pool = _Pool([])
        self._count_key: Any = None
        self._count = 0
        self._stale_cache: dict[tuple[Any, ...], tuple[str, ...]] = {}

    @property
    def scorer(self) -> Any:
        if self._scorer is None:
            from synapse_nb.gate.scorer import CorpusScorer

            # room for every document of the exhaustive path (20k by default) plus index candidates
            self._scorer = CorpusScorer(cache_size=50_000)
        return self._scorer

    # -- candidates ----------------------------------------------------------------------------------------
    def _n_candidates(self) -> int:
        """Number of gate documents in the vault (all minds), cached until the database changes."""
        store = self._v._store
        key = (store.data_version(), store.write_gen)
        with self._lock:
            if self._count_key != key:
                row = store.query_one("SELECT count(*) FROM gate_docs")
                self._count, self._count_key = (int(row[0]) if row else 0), key
            return self._count

    def _all_candidates(self) -> _Pool:
        """Every candidate of the mind (expired ones included: masked at scoring), cached per data version."""
        v = self._v
        key = (v._store.data_version(), v._store.write_gen, v.mind)
        with self._lock:
            if self._cache_key != key:
                rows = v._store.query("SELECT id, kind, text, updated_at, expires_at FROM gate_candidates "
                                      "WHERE mind = ? ORDER BY id", (v.mind,))
                self._cache = _Pool([_Cand(r["kind"], r["id"], r["updated_at"], r["expires_at"], r["text"])
                                     for r in rows])
                self._cache_key = key
            return self._cache

    def _fetch(self, ids_by_kind: dict[str, list[str]]) -> _Pool:
        v = self._v
        out: list[_Cand] = []
        for kind in KIND_ORDER:
            ids = sorted(set(ids_by_kind.get(kind, ())))
            exp = "t.expires_at" if kind == "memory" else "NULL"
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows = v._store.query(
                    f"SELECT t.id, t.updated_at, {exp} AS expires_at, g.body FROM {TABLES[kind]} t "
                    f"JOIN gate_docs g ON g.rid = t.id WHERE +t.mind = ? AND t.id IN ({','.join('?' * len(chunk))})",
                    (v.mind, *chunk))
                out += [_Cand(kind, r["id"], r["updated_at"], r["expires_at"], r["body"]) for r in rows]
        out.sort(key=lambda c: c.id)
        return _Pool(out)

    def _exact(self, words: list[str], *, rids: list[str] | None = None,
               max_per_tag: int | None = None) -> dict[str, list[str]]:
        """id -> exact matches ("#tag", "key:name") for records whose tag, key or note name the query names.

        ``rids`` restricts the answer to those records; ``max_per_tag`` leaves out tags carried by more
        records than that (a tag on thousands of records identifies nothing; its word is in the indexed
        text anyway).
        """
        v = self._v
        out: dict[str, list[str]] = {}
        if not words:
            return out
        ph = ",".join("?" * len(words))
        tag_words = words
        if max_per_tag is not None:
            tag_words = [r["tag"] for r in v._store.query(
                f"SELECT tag, count(*) AS n FROM tags WHERE tag IN ({ph}) AND mind = ? GROUP BY tag ORDER BY tag",
                (*words, v.mind)) if r["n"] <= max_per_tag]
        if rids is not None:
            for start in range(0, len(rids), 500):
                chunk = rids[start:start + 500]
                for r in v._store.query(
                        f"SELECT rid, tag FROM tags WHERE rid IN ({','.join('?' * len(chunk))}) AND tag IN ({ph}) "
                        f"AND mind = ? ORDER BY rid, tag", (*chunk, *words, v.mind)):
                    out.setdefault(r["rid"], []).append(f"#{r['tag']}")
        elif tag_words:
            tph = ",".join("?" * len(tag_words))
            for r in v._store.query(f"SELECT rid, tag FROM tags WHERE mind = ? AND tag IN ({tph}) ORDER BY rid, tag",
                                    (v.mind, *tag_words)):
                out.setdefault(r["rid"], []).append(f"#{r['tag']}")
        wanted = set(rids or ())
        keys = sorted({"_".join(words[i:j]) for i in range(len(words))
                       for j in range(i + 1, min(len(words), i + 6) + 1)})
        for start in range(0, len(keys), 400):
            chunk = keys[start:start + 400]
            kph = ",".join("?" * len(chunk))
            for table, col in (("memories", "key"), ("notes", "name")):
                for r in v._store.query(f"SELECT id, {col} AS name FROM {table} WHERE mind = ? AND {col} IN ({kph})",
                                        (v.mind, *chunk)):
                    if rids is None or r["id"] in wanted:
                        out.setdefault(r["id"], []).append(f"key:{r['name']}")
        return out

    def _index_candidates(self, query: str, words: list[str], k: int) -> _Pool:
        hits = self._v.index.search(query, k=k)
        ids: dict[str, list[str]] = {}
        for h in hits:
            ids.setdefault(h.kind, []).append(h.id)
        # records whose key or a rare tag the query names join the candidates too, at most k of them
        # (those matching the most query tags/keys first, then by id)
        exact = self._exact(words, max_per_tag=k)
        best_exact = sorted(exact, key=lambda rid: (-len(exact[rid]), rid))[:k]
        for rid in best_exact:
            ids.setdefault(kind_of_id(rid) or "", []).append(rid)
        return self._fetch(ids)

    # -- word statistics -----------------------------------------------------------------------------------
    def _doc_freq(self, query: str) -> tuple[dict[str, int], int]:
        from synapse_nb.gate.scorer import query_terms

        terms = query_terms(query)
        store = self._v._store
        n_docs = self._n_candidates()
        df: dict[str, int] = {}
        if terms:
            ph = ",".join("?" * len(terms))
            for r in store.query(f"SELECT term, doc FROM gate_vocab_row WHERE term IN ({ph})", tuple(terms)):
                df[r["term"]] = int(r["doc"])
        return df, n_docs

    # -- the whole recall ------------------------------------------------------------------------------------
    def recall(self, query: Any, *, session: str | None = None, branch: Any = None, files: Any = None,
               budget_tokens: int | None = None, bars: Bars | None = None, path: str = "auto") -> Recall:
        from synapse_nb._util import check_files

        v = self._v
        query = _clean_query(query)
        bars = bars or Bars()
        if not isinstance(bars, Bars):
            raise ValidationError(f"bars must be a synapse_nb.recall.Bars, got {type(bars).__name__}")
        if budget_tokens is not None:
            if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 0:
                raise ValidationError(f"budget_tokens must be a whole number >= 0, got {budget_tokens!r}")
            bars = replace(bars, budget_tokens=budget_tokens)
        if session is not None:
            # isprintable() is False for control characters and lone surrogates alike
            if not isinstance(session, str) or not session.strip() or len(session) > 200 or not session.isprintable():
                raise ValidationError("session must be a non-empty printable string of at most 200 characters")
        if path not in ("auto", "exhaustive", "index"):
            raise ValidationError(f"path {path!r} is not accepted; use auto, exhaustive or index")
        file_refs = check_files(files, "files")
        now = v._now_ts()
        lessons = list(v.lessons.in_force(v._git_head()[0] if branch is None else str(branch)))

        words = sorted({w for w in _WORD.findall(query[:2000].lower()) if len(w) <= 64})
        pool, exact, used = self._candidates(query, words, bars, path)
        rows, kept = self._gate(query, pool, exact, bars, file_refs, now)
        kept, rows = self._delta(session, kept, rows, now)
        kept = self._annotate(kept)
        reason, note = _empty_reason(query, kept, rows, bars)
        text = self._assemble(query, kept, lessons, session, now, note)
        return Recall(query=query, session=session, text=text, items=tuple(kept), lessons=tuple(lessons),
                      nothing_new=not kept, path=used, bars=bars, empty_reason=reason, _explain=tuple(rows))

    def _candidates(self, query: str, words: list[str], bars: Bars,
                    path: str) -> tuple[_Pool, dict[str, list[str]], str]:
        """(candidates, exact tag/key matches by id, the path that ran) for a query."""
        if not query.strip():
            return _Pool([]), {}, "none"
        if path == "auto":
            path = "exhaustive" if self._n_candidates() <= bars.exhaustive_max else "index"
        if path == "index":
            try:
                pool = self._index_candidates(query, words, bars.index_k)
                return pool, self._exact(words, rids=[c.id for c in pool.cands]), "index"
            except (IndexError_, StoreError, OSError) as exc:
                warnings.warn(f"synapse_nb: the retrieval index is unusable ({exc}); recall scored the vault "
                              "directly. Run `synapse-nb index rebuild` to restore it.", stacklevel=4)
                path = "exhaustive (index unusable)"
        return self._all_candidates(), self._exact(words), path

    def _gate(self, query: str, pool: _Pool, exact: dict[str, list[str]], bars: Bars, files: tuple[str, ...],
              now: str) -> tuple[list[_Row], list[RecallItem]]:
        import numpy as np

        if not pool.cands:
            return [], []
        df, n_docs = self._doc_freq(query)
        batch = self.scorer.score_batch(query, pool.texts, doc_freq=df, n_docs=n_docs, doc_keys=pool.keys)
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
            if pool.cands[i].expires_at <= now:
                scores[i] = 0.0
        positive = np.flatnonzero(scores > 0)
        if not len(positive):
            return [], []
        # best first; ties by id (pools are in id order, and lexsort is stable)
        order = positive[np.lexsort((positive, -scores[positive]))]
        best = float(scores[order[0]])
        rows: list[_Row] = []
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
                    rows.append(_Row(c.kind, c.id, score, matched, False, "top_k",
                                     f"{plural(bars.top_k, c.kind, TABLES[c.kind])} already kept"))
                    continue
                if all(per_kind.get(k, 0) >= bars.top_k for k in KIND_ORDER):
                    break
                continue
            matched = batch.matched(int(i)) + tuple(extra.get(int(i), ()))
            rec = self._materialize(c)
            if rec is None:  # deleted by another process since the candidates were read
                rows.append(_Row(c.kind, c.id, score, (), False, "gone", "deleted meanwhile"))
                continue
            line = _line(rec)
            cost = estimate_tokens(line)
            if used_tokens + cost > bars.budget_tokens:
                rows.append(_Row(c.kind, c.id, score, matched, False, "budget",
                                 f"would exceed the budget of {bars.budget_tokens} tokens"))
                continue
            used_tokens += cost
            per_kind[c.kind] = per_kind.get(c.kind, 0) + 1
            kept_idx.append((int(i), score, matched))
            lines[int(i)] = (rec, line)
            rows.append(_Row(c.kind, c.id, score, matched, True, "kept", "cleared every bar"))
        # explain the best of the rest (near the bars), at most MAX_EXPLAIN rows in all
        first_failing = int(np.searchsorted(-scores[order], -max(bars.floor, bars.margin * best), side="right"))
        first_failing = max(first_failing, 0)
        for i in order[first_failing:][: max(0, MAX_EXPLAIN - len(rows))]:
            score = float(scores[i])
            c = pool.cands[i]
            matched = batch.matched(int(i)) + tuple(extra.get(int(i), ()))
            if score < bars.floor:
                rows.append(_Row(c.kind, c.id, score, matched, False, "floor", f"below the floor {bars.floor}"))
            else:
                rows.append(_Row(c.kind, c.id, score, matched, False, "margin",
                                 f"below {bars.margin} x best ({best:.3f})"))
        kept = [RecallItem(kind=pool.cands[i].kind, id=pool.cands[i].id, score=score, matched=matched, bar="kept",
                           line=lines[i][1], record=lines[i][0]) for i, score, matched in kept_idx]
        return rows, kept

    def _materialize(self, c: _Cand) -> Record | None:
        manager = {"memory": self._v.memories, "decision": self._v.decisions, "checkpoint": self._v.checkpoints,
                   "episode": self._v.episodes, "note": self._v.notes}[c.kind]
        rows = manager._rows("$id = ?", (c.id,))
        return manager._from_row(rows[0]) if rows else None

    def _annotate(self, kept: list[RecallItem]) -> list[RecallItem]:
        """Mark kept items whose files changed since they were written, or were missing at the last verify."""
        if not kept:
            return kept
        from synapse_nb.follow import paths_in_text, stale_commits

        v = self._v
        flagged = {r["rid"]: r["detail"] for r in v._store.query(
            f"SELECT rid, detail FROM flags WHERE flag = 'dangling' AND rid IN ({','.join('?' * len(kept))})",
            tuple(k.id for k in kept))}
        stale: dict[str, tuple[str, ...]] = {}
        if v.repo is not None:
            head = v._git_head()[1]
            if self._stale_cache and next(iter(self._stale_cache))[0] != head:
                self._stale_cache.clear()  # a new HEAD invalidates every entry: keeps a long-lived process bounded
            todo = []
            for k in kept:
                if k.kind not in ("memory", "decision"):
                    continue
                key = (head, k.id, k.record.updated_at)
                if key in self._stale_cache:
                    if self._stale_cache[key]:
                        stale[k.id] = self._stale_cache[key]
                    continue
                rec = k.record
                text = rec.content if isinstance(rec, Memory) else f"{rec.decision} {rec.rationale or ''}"
                todo.append((key, paths_in_text(text)))
            if todo:
                found = stale_commits(v, [(key[1], key[2], paths) for key, paths in todo])
                for key, _ in todo:
                    self._stale_cache[key] = found.get(key[1], ())
                    if found.get(key[1]):
                        stale[key[1]] = found[key[1]]
        if not flagged and not stale:
            return kept
        out = []
        for k in kept:
            line = k.line
            if k.id in stale:
                line += f" [possibly stale: its files changed in {', '.join(s[:7] for s in stale[k.id][:5])}]"
            if k.id in flagged:
                line += f" [files missing at HEAD: {', '.join(json.loads(flagged[k.id]))}]"
            out.append(replace(k, line=line))
        return out

    def _delta(self, session: str | None, kept: list[RecallItem], rows: list[_Row],
               now: str) -> tuple[list[RecallItem], list[_Row]]:
        if session is None or not kept:
            return kept, rows
        store = self._v._store
        seen = {r["rid"]: r["digest"] for r in store.query(
            f"SELECT rid, digest FROM session_seen WHERE mind = ? AND session = ? AND rid IN "
            f"({','.join('?' * len(kept))})", (self._v.mind, session, *[k.id for k in kept]))}
        fresh = [k for k in kept if seen.get(k.id) != k.record.digest]
        dropped = {k.id for k in kept} - {k.id for k in fresh}
        rows = [replace(r, kept=False, bar="delta", reason="already given to this session, unchanged")
                if r.id in dropped else r for r in rows]
        self._mark_seen(session, [(k.id, k.record.digest) for k in fresh], now)
        return fresh, rows

    def _mark_seen(self, session: str, pairs: list[tuple[str, str]], now: str) -> None:
        if not pairs or self._v._store.readonly:
            return
        try:
            with self._v._store.transaction() as c:
                c.executemany("INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES (?,?,?,?,?) "
                              "ON CONFLICT(mind, session, rid) DO UPDATE SET digest = excluded.digest, "
                              "seen_at = excluded.seen_at", [(self._v.mind, session, r, d, now) for r, d in pairs])
        except StoreError as exc:  # delta state is a convenience: never fail a recall for it
            log.warning("could not record what session %s has seen: %s", session, exc)

    def _assemble(self, query: str, kept: list[RecallItem], lessons: list[Lesson], session: str | None,
                  now: str, note: str = "") -> str:
        parts: list[str] = []
        if lessons:
            shown_before: set[str] = set()
            if session is not None:
                seen = {r["rid"]: r["digest"] for r in self._v._store.query(
                    f"SELECT rid, digest FROM session_seen WHERE mind = ? AND session = ? AND rid IN "
                    f"({','.join('?' * len(lessons))})", (self._v.mind, session, *[x.id for x in lessons]))}
                shown_before = {x.id for x in lessons if seen.get(x.id) == x.digest}
            new = [x for x in lessons if x.id not in shown_before]
            block = banner_text(new) or BANNER
            if shown_before:
                ids = ", ".join(x.id for x in lessons if x.id in shown_before)
                block += f"\n(still in force, shown earlier in this session: {ids})"
            parts.append(block)
            if session is not None:
                self._mark_seen(session, [(x.id, x.digest) for x in new], now)
        q = shorten(query, 120)
        if not kept:
            parts.append(f'nothing new for: "{q}"{note}' if query.strip() else "nothing new (empty query)")
        else:
            block = [f'RELEVANT MEMORY for: "{q}"']
            for kind in KIND_ORDER:
                group = [k for k in kept if k.kind == kind]
                if not group:
                    continue
                group.sort(key=lambda k: k.id)
                group.sort(key=lambda k: k.record.updated_at, reverse=True)
                group.sort(key=lambda k: _priority(k.record))
                block.append(f"## {_GROUP_TITLES[kind]}")
                block.extend(k.line for k in group)
            parts.append("\n".join(block))
        return "\n\n".join(parts)


def _empty_reason(query: str, kept: list[RecallItem], rows: list[_Row], bars: Bars) -> tuple[str | None, str]:
    """Why nothing is returned (one of :data:`EMPTY_REASONS`, None when items are) and the note the text adds.

    Relevant items dropped by the budget come first (raising the budget would return them), then items
    already given to this session; otherwise nothing was relevant and the text stays the plain
    ``nothing new for: "q"``.
    """
    if kept:
        return None, ""
    if not query.strip():
        return "empty_query", ""
    over = sum(1 for r in rows if r.bar == "budget")
    given = sum(1 for r in rows if r.bar == "delta")
    if over:
        also = f"; {given} already given to this session" if given else ""
        return "over_budget", (f" ({plural(over, 'relevant item')} did not fit the budget of "
                               f"{plural(bars.budget_tokens, 'token')}{also})")
    if given:
        return "already_given", f" ({plural(given, 'relevant item')} already given to this session, unchanged)"
    return "nothing_relevant", ""


def _priority(rec: Record) -> int:
    return PRIORITIES.index(rec.priority) if isinstance(rec, Memory) else 2


class VaultIndex:
    """``vault.index``: the LanceDB retrieval index under ``.synapse/index/`` (a rebuildable cache).

    Writes enqueue changed ids in SQLite's ``index_outbox`` in the same transaction; the index applies
    the outbox before it answers (:meth:`sync`), so a crash between the SQLite commit and the index
    update is repaired on the next use.
    """

    def __init__(self, vault: Vault) -> None:
        self._v = vault
        self._idx: Any = None
        self._thread_lock = threading.RLock()

    @property
    def path(self) -> Any:
        return self._v.path / "index"

    @property
    def raw(self) -> Any:
        if self._idx is None:
            from synapse_nb.store.index import RetrievalIndex

            self._idx = RetrievalIndex(self.path)
        return self._idx

    @staticmethod
    def _row(r: Any) -> IndexRow:
        from synapse_nb.store.index import IndexRow

        return IndexRow(id=r["id"], kind=r["kind"], mind=r["mind"], text=r["text"],
                        digest=digest([r["text"], r["expires_at"]]), updated_at=r["updated_at"],
                        expires_at=r["expires_at"])

    def _rows_for(self, ids: list[str]) -> list[IndexRow]:
        store = self._v._store
        rows = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows += store.query(f"SELECT * FROM gate_candidates WHERE id IN ({','.join('?' * len(chunk))})",
                                tuple(chunk))
        return [self._row(r) for r in rows]

    def _all_rows(self) -> Iterator[IndexRow]:
        """Every index row, streamed (a 1M-record vault is never held in memory at once)."""
        return (self._row(r) for r in self._v._store.iter_query("SELECT * FROM gate_candidates ORDER BY id"))

    def _expected(self) -> dict[str, str]:
        return {r.id: r.digest for r in self._all_rows()}

    @contextlib.contextmanager
    def _mutating(self) -> Iterator[None]:
        """Hold the vault-wide index lock: one process at a time reads the outbox and writes the index.

        Without it, two syncs (or a rebuild and a sync) interleave read-outbox / read-rows / write-index
        and an older snapshot can overwrite a newer one with the outbox already emptied.
        """
        import fcntl

        with self._thread_lock:
            if self._v._store.readonly:
                yield
                return
            self._v.path.mkdir(exist_ok=True)  # never its parents
            with open(self._v.path / "index.lock", "a+") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    def sync(self) -> int:
        """Apply pending changes from the outbox to the index; returns how many records were applied."""
        if not self._v._store.query_one("SELECT 1 FROM index_outbox LIMIT 1") and self.raw.exists():
            return 0  # nothing pending: no lock needed
        with self._mutating():
            return self._sync_locked()

    def _sync_locked(self) -> int:
        store = self._v._store
        if not self.raw.exists():
            self._rebuild_locked()
            return 0
        applied = 0
        while True:
            pending = store.query("SELECT rid, seq FROM index_outbox ORDER BY seq LIMIT 5000")
            if not pending:
                return applied
            ids = [r["rid"] for r in pending]
            rows = self._rows_for(ids)
            present = {r.id for r in rows}
            gone = sorted(set(ids) - present)
            if rows:
                self.raw.upsert(rows)
            if gone:
                self.raw.delete(gone)
            if store.readonly:
                return applied + len(ids)
            with store.transaction() as c:
                c.executemany("DELETE FROM index_outbox WHERE rid = ? AND seq = ?",
                              [(r["rid"], r["seq"]) for r in pending])
            applied += len(ids)

    def rebuild(self, *, progress: bool = False) -> int:
        """Drop the index and rebuild it from SQLite; returns the number of rows written."""
        with self._mutating():
            return self._rebuild_locked(progress=progress)

    def _rebuild_locked(self, *, progress: bool = False) -> int:
        store = self._v._store
        mark = store.query_one("SELECT coalesce(max(seq), 0) FROM index_outbox")[0]
        total = int(store.query_one("SELECT count(*) FROM gate_docs")[0])
        n = self.raw.rebuild(self._all_rows(), total=total, progress=progress)
        if not store.readonly:
            with store.transaction() as c:
                c.execute("DELETE FROM index_outbox WHERE seq <= ?", (mark,))
        return n

    def check(self, *, repair: bool = False) -> DriftReport:
        """Compare the index with SQLite (rows missing, stale or extra); with ``repair``, fix the drift.

        An index never built (a new vault: it is built on first use, or by :meth:`rebuild`) is not drift:
        the report has ``built=False`` and is ``ok``; with ``repair`` the index is built now.
        """
        if not self.raw.exists():
            from synapse_nb.store.index import DriftReport

            if repair:
                self.rebuild()
            return DriftReport(built=False)
        if repair:
            with self._mutating():
                return self.raw.repair(lambda ids: self._rows_for(list(ids)), self._expected())
        return self.raw.check(self._expected())

    def search(self, query: str, *, k: int = 200, kinds: Any = None, mode: str = "hybrid") -> list[Any]:
        """Candidate hits for ``query`` in this mind (after applying the outbox)."""
        self.sync()
        return self.raw.search(query, mind=self._v.mind, kinds=kinds, now=self._v._now_ts(), k=k, mode=mode)

