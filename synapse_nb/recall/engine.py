"""The recall orchestration: one :meth:`Recaller.recall` per turn, in the order the package docstring gives."""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from synapse_nb._util import check_files
from synapse_nb.errors import IndexError_, QueryError, StoreError, ValidationError
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.models import Record
from synapse_nb.recall.candidates import Candidates, Pool, query_words
from synapse_nb.recall.delta import session_delta
from synapse_nb.recall.render import assemble, empty_reason
from synapse_nb.recall.scoring import WordStats, gate, new_scorer, query_terms
from synapse_nb.recall.stale import Staleness
from synapse_nb.recall.types import MAX_QUERY_CHARS, Bars, Recall

if TYPE_CHECKING:
    from synapse_nb.gate.scorer import CorpusScorer
    from synapse_nb.context import Context
    from synapse_nb.store.base import Candidate
    from synapse_nb.store.indexer import VaultIndex

__all__ = ["Recaller", "clean_query"]

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
PATHS = ("auto", "exhaustive", "index")


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
        raise ValidationError(f"path {path!r} is not accepted; use auto, exhaustive or index")
    return bars


class Recaller:
    """Recall bound to one context (one vault handle); its caches live here, per process.

    ``index`` gives the vault's retrieval index when the index path runs (it is opened on first use).
    """

    def __init__(self, ctx: Context, index: Callable[[], VaultIndex]) -> None:
        self._ctx = ctx
        self._index = index
        self._lock = threading.RLock()
        self._scorer: CorpusScorer | None = None
        self._candidates = Candidates(ctx)
        self._staleness = Staleness(ctx)

    @property
    def scorer(self) -> CorpusScorer:
        with self._lock:
            if self._scorer is None:
                self._scorer = new_scorer()
            return self._scorer

    # the candidate sources (methods of their own, so tests can interpose on them)
    def _all_candidates(self) -> Pool:
        return self._candidates.all()

    def _n_candidates(self) -> int:
        return self._candidates.count()

    def _word_stats(self, query: str) -> WordStats:
        return self._ctx.store.recall.doc_freq(query_terms(query)), self._n_candidates()

    def _materialize(self, c: Candidate) -> Record | None:
        return self._ctx.store.table(c.kind).get(self._ctx.view(), c.id)

    def recall(self, query: Any, *, session: str | None = None, branch: Any = None, files: Any = None,
               budget_tokens: int | None = None, bars: Bars | None = None, path: str = "auto") -> Recall:
        """See :meth:`synapse_nb.vault.Vault.recall`."""
        ctx = self._ctx
        query = clean_query(query)
        bars = _check_args(bars, budget_tokens, session, path)
        file_refs = check_files(files, "files")
        now = ctx.now_ts()
        branch_name = ctx.git.head()[0] if branch is None else str(branch)
        words = query_words(query)
        used = "none"
        hits: list[tuple[str, str]] | None = None
        if query.strip():
            used = path
            if used == "auto":
                used = "exhaustive" if self._n_candidates() <= bars.exhaustive_max else "index"
            if used == "index":  # before the snapshot: searching applies the index outbox (a write)
                try:
                    hits = [(h.kind, h.id) for h in self._index().search(query, k=bars.index_k)]
                except (IndexError_, StoreError, OSError) as exc:
                    used = self._index_unusable(exc, 4)
        # one consistent read of everything the gate weighs: lessons, candidates, matches, word statistics
        with ctx.store.snapshot():
            lessons = list(Lessons(ctx).in_force(branch_name))
            pool, exact, used = self._pool(query, words, bars, used, hits)
            stats = self._word_stats(query) if pool.cands else ({}, 0)
        rows, kept = gate(query, pool, exact, stats, bars, file_refs, now, self.scorer, self._materialize)
        delta = session_delta(ctx, session, kept, rows, lessons, now)
        kept = self._staleness.annotate(delta.items)
        reason, note = empty_reason(query, kept, delta.rows, bars)
        text = assemble(query, kept, lessons, delta.shown_before, note)
        return Recall(query=query, session=session, text=text, items=tuple(kept), lessons=tuple(lessons),
                      nothing_new=not kept, path=used, bars=bars, empty_reason=reason, _explain=tuple(delta.rows))

    def _pool(self, query: str, words: list[str], bars: Bars, used: str,
              hits: list[tuple[str, str]] | None) -> tuple[Pool, dict[str, list[str]], str]:
        """(candidates, exact tag/key matches by id, the path that ran) for a query."""
        if not query.strip():
            return Pool([]), {}, "none"
        if hits is not None:
            try:
                pool = self._candidates.from_hits(hits, words, bars.index_k)
                return pool, self._candidates.exact(words, rids=[c.id for c in pool.cands]), "index"
            except (IndexError_, StoreError, OSError) as exc:
                used = self._index_unusable(exc, 5)
        return self._all_candidates(), self._candidates.exact(words), used

    @staticmethod
    def _index_unusable(exc: Exception, stacklevel: int) -> str:
        """Warn (pointing at the caller of ``vault.recall``) and name the path that runs instead."""
        warnings.warn(f"synapse_nb: the retrieval index is unusable ({exc}); recall scored the vault directly. "
                      "Run `synapse-nb index rebuild` to restore it.", stacklevel=stacklevel)
        return "exhaustive (index unusable)"

