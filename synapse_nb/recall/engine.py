"""The recall orchestration: one :meth:`Recaller.recall` per turn, in the order the package docstring gives."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb._util import check_files
from synapse_nb.errors import QueryError, SnapshotMoved, ValidationError
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.models import Record
from synapse_nb.recall.bm25 import Postings, Term, bm25_top
from synapse_nb.recall.candidates import Candidates, query_words
from synapse_nb.recall.coverage import Cover, cover_terms
from synapse_nb.recall.delta import record_given, seen_digests
from synapse_nb.recall.rank import RankParams, Ranked, fts_words, rank_words, structure
from synapse_nb.recall.render import assemble, empty_reason
from synapse_nb.recall.scoring import gate
from synapse_nb.recall.stale import Staleness
from synapse_nb.recall.types import MAX_QUERY_CHARS, Bars, Recall
from synapse_nb.text import FTS_TOKEN_RE

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.context import Context
    from synapse_nb.recall.rank import ThreadIndex
    from synapse_nb.store.indexer import VaultIndex
    from synapse_nb.store.records import Candidate

__all__ = ["Recaller", "clean_query"]

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: ``path`` values: "auto" and "rank" run the ranking; "exhaustive" and "index" (recall v1's two candidate
#: paths) are still accepted and run the same ranking, so old calls keep working.
PATHS = ("auto", "rank", "exhaustive", "index")
#: Most ranked records the walk may read (top-k per kind x kinds, plus what the delta and budget skip).
MAX_WALK = 200
#: A tag carried by more records than this identifies nothing: no bonus (its word is ranked anyway).
MAX_TAG_RECORDS = 200
#: Most records the walk's cache holds (it is emptied when full, and whenever the vault changes).
MAX_CACHED_RECORDS = 20_000


def clean_query(query: Any) -> str:
    """A query as recall reads it: text, at most :data:`MAX_QUERY_CHARS`, control characters as spaces."""
    if not isinstance(query, str):
        raise QueryError(f"a recall query must be text (str), got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
    query = query.encode("utf-8", "replace").decode("utf-8")
    return _CTRL.sub(" ", query)


def _check_args(bars: Any, budget_tokens: Any, session: Any, path: Any) -> Bars:
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
    if path not in PATHS:
        raise ValidationError(f"path {path!r} is not accepted; use auto or rank (exhaustive and index are "
                              "accepted as their old names)")
    return bars


class _Ranking(NamedTuple):
    ranked: Ranked
    cands: list[Candidate | None]
    exact: dict[str, list[str]]
    cover: Cover
    actor: np.ndarray


class Recaller:
    """Recall bound to one context (one vault handle); its caches live here, per process.

    ``index`` gives the vault's retrieval index (kept for the surfaces that search it; recall ranks with the
    store's BM25 and the structure step).
    """

    def __init__(self, ctx: Context, index: Callable[[], VaultIndex], params: RankParams | None = None,
                 defaults: Callable[[], tuple[Bars, float]] | None = None) -> None:
        self._ctx = ctx
        self._defaults = defaults  # the saved default bars, read inside the snapshot (no round trip of their own)
        self._index = index
        self._lock = threading.RLock()
        self._candidates = Candidates(ctx)
        self._postings = Postings(ctx)
        self._staleness = Staleness(ctx)
        self.params = params or RankParams()
        # records the walk read, per mind, by (kind, id, updated_at): a record reads the same until it is written,
        # and every write moves its updated_at, so they outlive a write elsewhere (on a team vault, a round trip each)
        self._records_key: object = None
        self._records: dict[tuple[str, str, str], Record] = {}

    def _materialize(self, c: Candidate, now: str | None = None) -> Record | None:
        view = self._ctx.view() if now is None else self._ctx.at(now).view()
        # a record with no expiry reads the same at any "now" until the vault changes (lessons, whose status
        # depends on "now", are never walked)
        cacheable = c.expires_at is None and c.kind != "lesson"
        if cacheable:
            with self._lock:
                rec = self._records.get((c.kind, c.id, c.updated_at))
            if rec is not None:
                return rec
        rec = self._ctx.store.table(c.kind).get(view, c.id)
        if cacheable and rec is not None and rec.updated_at == c.updated_at:
            with self._lock:
                if len(self._records) >= MAX_CACHED_RECORDS:
                    self._records.clear()
                self._records[(c.kind, c.id, c.updated_at)] = rec
        return rec

    def _records_for(self, key: object) -> None:
        """Keep the walk's record cache only while the mind is unchanged."""
        with self._lock:
            if self._records_key != key:
                self._records_key, self._records = key, {}

    def recall(self, query: Any, *, session: str | None = None, branch: Any = None, files: Any = None,
               budget_tokens: int | None = None, bars: Bars | None = None, path: str = "auto") -> Recall:
        """See :meth:`synapse_nb.vault.Vault.recall`."""
        ctx = self._ctx
        query = clean_query(query)
        given, bars = bars, _check_args(bars, budget_tokens, session, path)
        file_refs = check_files(files, "files")
        branch_name = ctx.git.head()[0] if branch is None else str(branch)
        used = "rank" if query.strip() else "none"
        # one consistent read of everything the ranking weighs: lessons, documents, matches, word statistics.
        # Lazy: a team vault reads the version first and opens its transaction only for what the caches keyed by
        # that version lack; if the vault moved in between, the read starts again in an ordinary snapshot.
        for lazy in (True, False):
            try:
                with ctx.store.snapshot(lazy=lazy):
                    if self._defaults is not None:  # the saved bars and semantic weight, one read inside the snapshot
                        saved, semantic = self._defaults()
                        if given is None:
                            bars = _check_args(saved, budget_tokens, session, path)
                        if semantic != self.params.semantic:
                            self.params = replace(self.params, semantic=semantic)
                    version = ctx.store.data_version()  # once: every cache of this recall is keyed by it
                    now = ctx.read_now()  # a team vault's server clock: one state, one "now", on every machine
                    lessons = list(Lessons(ctx.at(now)).in_force(branch_name))
                    ranking = self._rank(query, file_refs, bars, now, version) if query.strip() else None
                break
            except SnapshotMoved:
                if not lazy:
                    raise
        walk = [c.id for c in ranking.cands if c is not None] if ranking else []
        # the session's marks are no part of the vault's state (they move no version): read after the snapshot
        seen = seen_digests(ctx, session, walk + [x.id for x in lessons])
        if ranking is None:
            rows, kept, coverage = [], [], 0.0
        else:
            self._records_for(ctx.mind)
            g = gate(ranking.ranked, ranking.cands, ranking.exact, ranking.cover, ranking.actor, bars,
                     functools.partial(self._materialize, now=now), seen)
            rows, kept, coverage = g.rows, g.kept, g.coverage
        shown_before = record_given(ctx, session, kept, lessons, seen, now)
        kept = self._staleness.annotate(kept, version)
        reason, note = empty_reason(query, kept, rows, bars)
        text = assemble(query, kept, lessons, shown_before, note)
        return Recall(query=query, session=session, text=text, items=tuple(kept), lessons=tuple(lessons),
                      nothing_new=not kept, path=used, bars=bars, empty_reason=reason, _explain=tuple(rows),
                      coverage=coverage, version=".".join(map(str, version)))

    def _rank(self, query: str, files: tuple[str, ...], bars: Bars, now: str, version: object) -> _Ranking:
        """BM25 hits plus exact-match bonuses, through the structure step; the candidate rows of the walk."""
        import numpy as np  # loaded with the gate

        ctx, p = self._ctx, self.params
        store = ctx.store
        idx = self._candidates.threads(version)
        words = rank_words(query)
        file_words = [w.lower() for f in files for w in FTS_TOKEN_RE.findall(f)]
        df = self._candidates.doc_freq(sorted(set(words) | set(file_words)), version)
        n_docs = self._candidates.count(version)
        send = fts_words(words, df, n_docs, p.max_df, p.max_postings)
        # the gate's coverage counts the query's words but the most common (recall/coverage.py)
        cover = [w for w in words if df.get(w, 0) <= p.max_postings] or [w for w in send if w in words]
        send += [w for w in dict.fromkeys(file_words) if w not in send]
        terms, totals = self._postings.get(list(dict.fromkeys(send + cover)), idx, version) if send else ({}, (0, 0))
        pos, sc = self._bm25(idx, send, terms, totals)
        exact = self._candidates.exact(query_words(query), version, max_per_tag=MAX_TAG_RECORDS)
        pos_of = idx.pos
        rows: dict[str, Candidate] = {}
        if files:  # the file bonus reads the texts of every hit
            rows = self._candidates.fetch([(idx.kinds[pos_of[i]], i) for i in dict.fromkeys(
                [idx.ids[j] for j in pos.tolist()] + [i for i in exact if i in pos_of])], version)
        bonus: dict[int, float] = {}
        tag_b, key_b = bars.tag_bonus, bars.key_bonus
        for rid, labels in exact.items():
            j = pos_of.get(rid)
            if j is not None:  # most records match one label: sum([x]) is 0 + x, which is x
                bonus[j] = ((tag_b if labels[0][0] == "#" else key_b) if len(labels) == 1 else
                            sum(tag_b if lab.startswith("#") else key_b for lab in labels))
        for rid, c in rows.items():
            hit_files = [f for f in files if f in c.text]
            if hit_files:
                bonus[pos_of[rid]] = bonus.get(pos_of[rid], 0.0) + bars.file_bonus
                exact.setdefault(rid, []).extend(f"file:{f}" for f in hit_files)
        if p.semantic:  # the optional dense channel, off by default: recall/semantic.py
            from synapse_nb.recall.semantic import semantic_term

            sc = semantic_term(query, [idx.ids[j] for j in pos.tolist()], sc, p.semantic,
                               lambda ids: self._candidates.fetch([(idx.kinds[pos_of[i]], i) for i in ids], version))
        ranked = structure(idx, pos, sc, words, p, bonus)
        # the walk reads what clears the margin, plus a few rows below it for the explanation
        text = ranked.score - ranked.parts["bonus"] if len(ranked) else ranked.score
        n = int(np.count_nonzero(ranked.score >= bars.margin * text.max())) if len(ranked) else 0
        n = min(MAX_WALK, max(n + 20, bars.gate_depth))
        ranked = Ranked(ranked.pos[:n], ranked.score[:n], {k: v[:n] for k, v in ranked.parts.items()})
        ids = [idx.ids[j] for j in ranked.pos.tolist()]
        missing = [(idx.kinds[pos_of[i]], i) for i in ids if i not in rows]
        if missing:
            rows.update(self._candidates.fetch(missing, version))
        # memories expired at "now" are ranked (the store's ranking knows no time) but never given
        cands = [c if c is not None and not _expired(c, now) else None for c in (rows.get(i) for i in ids)]
        return _Ranking(ranked, cands, exact, cover_terms(cover, terms, totals[0], idx), idx.actor)

    def _bm25(self, idx: ThreadIndex, words: list[str], terms: dict[str, Term],
              totals: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """The mind's best ``depth`` documents for ``words`` and their BM25 (positions into ``idx``), computed here
        from cached postings (``terms``, read at this recall's version) exactly as the store's ``bm25`` computes
        it (recall/bm25.py)."""
        import numpy as np

        store, p = self._ctx.store, self.params
        if not words or p.depth <= 0:
            return np.zeros(0, np.int64), np.zeros(0)
        if all(terms[w].stem is not None for w in words):
            return bm25_top([terms[w] for w in words], idx, totals, style=store.recall.bm25_style, depth=p.depth,
                            w_body=p.w_body, w_context=p.w_context, k1=p.k1, b=p.b)
        # a word the backend's tokenizer splits in several terms is a phrase query: the store's own bm25
        hits = [h for h in store.recall.bm25(self._ctx.mind, words, depth=p.depth, w_body=p.w_body,
                                            w_context=p.w_context) if h.id in idx.pos]
        return (np.array([idx.pos[h.id] for h in hits], np.int64), np.array([h.score for h in hits], np.float64))


def _expired(c: Candidate, now: str) -> bool:
    return c.expires_at is not None and c.expires_at <= now
