"""Query words as chat writes them: each word's variants found in the vault, merged into one term (issue 33).

:mod:`synapse_nb.recall.chatwords` says which forms a word may take (chat abbreviations, one-edit slips,
lengthened letters); this module asks the vault which of them it holds (the store's ``doc_freq``: one statement per
word, kept per data version) and merges the postings of those it accepts with the word's own
(:func:`merge_terms`): positions united, counts added, document frequency the sum. BM25, the structure step and the
gate's coverage then see "birthday" in a message that says "bday" or "birthdya", with no change anywhere else.

A variant whose porter stem is the word's own (or another accepted variant's) adds nothing: the stem already
matched it. Words the backend splits into several terms (a phrase) are never expanded.

Cost: a word's first recall after a write looks up its candidates (about three per letter) in the ``doc_freq``
statement recall reads its words' frequencies with (no statement of its own) and reads the postings of the few
accepted with the words' own when it can; later recalls reuse both (kept per data version, at most
:data:`MAX_CACHED_WORDS` words).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from synapse_nb.recall.bm25 import Term, Totals
from synapse_nb.recall.chatwords import accept_typo, chat_forms, spelling_variants

if TYPE_CHECKING:
    from synapse_nb.recall.bm25 import Postings
    from synapse_nb.recall.threads import ThreadIndex

__all__ = ["MAX_CACHED_WORDS", "Variants", "merge_terms"]

#: Most query words whose accepted variants (and merged terms) are kept between recalls (emptied when full).
MAX_CACHED_WORDS = 20_000
FORM_SHARE = 3


def merge_terms(word: Term, others: Sequence[Term], n_rows: int | None = None) -> Term:
    """One term for ``word`` and its variants: positions united (ascending), per-position counts added in the
    order given, ``n`` the sum (at most ``n_rows``, the records it is weighed by: a record may hold both forms);
    the word's stem.

    >>> import numpy as np
    >>> a = Term("birthdai", np.array([1, 5]), np.array([1, 1]), np.array([0, 2]), 2, {})
    >>> b = Term("bdai", np.array([5, 9]), np.array([2, 1]), np.array([0, 0]), 2, {})
    >>> m = merge_terms(a, [b])
    >>> m.pos.tolist(), m.tf_body.tolist(), m.tf_context.tolist(), m.n
    ([1, 5, 9], [1, 3, 1], [0, 2, 0], 4)
    """
    import numpy as np

    parts = [word, *others]
    pos = np.unique(np.concatenate([t.pos for t in parts]))
    body, context = np.zeros(len(pos), np.int64), np.zeros(len(pos), np.int64)
    for t in parts:
        at = np.searchsorted(pos, t.pos)
        body[at] += t.tf_body  # positions are distinct within a term
        context[at] += t.tf_context
    n = sum(t.n for t in parts)
    return Term(word.stem, pos, body, context, n if n_rows is None else min(n, n_rows), {})


class Variants:
    """Each query word's accepted variants and merged term, for one context, kept per data version."""

    def __init__(self, postings: Postings) -> None:
        self._postings = postings
        self._lock = threading.Lock()
        self._key: object = None
        self._found: dict[str, tuple[str, ...]] = {}
        self._merged: dict[str, Term] = {}

    def _reset(self, version: object) -> None:
        if self._key != version:  # under self._lock
            self._key, self._found, self._merged = version, {}, {}

    def candidates(self, words: Sequence[str], version: object) -> list[str]:
        """The forms whose document frequencies :meth:`merge` needs for ``words`` (none for words already judged
        at this version): the caller reads them with its own ``doc_freq`` statement, so a team vault pays no
        round trip of its own for them."""
        with self._lock:
            self._reset(version)
            todo = [w for w in dict.fromkeys(words) if w not in self._found]
        return list(dict.fromkeys(x for w in todo for x in (*chat_forms(w), *spelling_variants(w))))

    def _accepted(self, words: Sequence[str], version: object, df: Mapping[str, int]) -> dict[str, tuple[str, ...]]:
        """Each word's variants the vault holds (``df``: the document frequencies of the words and of their
        :meth:`candidates`; absent: none) and that read as the word: its chat forms (when the vault writes the
        form at least 1/:data:`FORM_SHARE` as often as the word) and the spelling variants that pass
        :func:`~synapse_nb.recall.chatwords.accept_typo`."""
        with self._lock:
            self._reset(version)
            out = {w: self._found[w] for w in words if w in self._found}
        todo = [w for w in dict.fromkeys(words) if w not in out]
        for w in todo:
            forms = chat_forms(w)
            slips = [v for v in spelling_variants(w) if v not in forms]
            own = df.get(w, 0)
            out[w] = tuple([f for f in forms if df.get(f, 0) and FORM_SHARE * df.get(f, 0) >= own]
                           + [v for v in slips if accept_typo(df.get(v, 0), own)])
        with self._lock:
            if self._key == version and todo:
                if len(self._found) + len(todo) > MAX_CACHED_WORDS:
                    self._found, self._merged = {}, {}
                self._found.update((w, out[w]) for w in todo)
        return out

    def merge(self, words: Sequence[str], terms: Mapping[str, Term], idx: ThreadIndex, version: object,
              totals: Totals, df: Mapping[str, int]) -> dict[str, Term]:
        """``terms`` (each word's postings) with each of ``words`` that has accepted variants replaced by its merged
        term; the others as they are. ``totals``: what the terms are weighed by; ``df``: document frequencies of
        the words and their :meth:`candidates` among the same records."""
        want = [w for w in dict.fromkeys(words) if w in terms and terms[w].stem is not None]
        with self._lock:  # words known to have no variant at this version need nothing
            if self._key == version:
                want = [w for w in want if w in self._merged or self._found.get(w, True)]
            kept = {w: self._merged[w] for w in want if w in self._merged} if self._key == version else {}
        out = dict(terms)
        out.update(kept)
        want = [w for w in want if w not in kept]
        if not want:
            return out
        found = self._accepted(want, version, df)
        variants = list(dict.fromkeys(v for w in want for v in found[w]))
        if not variants:
            return out
        got, _ = self._postings.get(variants, idx, version)
        fresh: dict[str, Term] = {}
        for w in want:
            t = terms[w]
            stems = {t.stem}
            extra = []
            for v in found[w]:  # table order, then edit order: the first form of a stem counts
                vt = got[v]
                if vt.stem is None or vt.stem in stems or not len(vt.pos):
                    continue
                stems.add(vt.stem)
                extra.append(vt)
            if extra:
                fresh[w] = out[w] = merge_terms(t, extra, totals.rows)
        with self._lock:
            if self._key == version:
                self._merged.update(fresh)
        return out
