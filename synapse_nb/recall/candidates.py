"""Recall candidates: which records the gate scores, and the exact tag / key matches among them.

Two paths give the same scores wherever both can run (a candidate's score depends only on the query, its text
and the vault's word statistics):

- **exhaustive**: every candidate of the mind, read once and cached until the vault changes (keyed by the
  store's data version), for vaults of at most ``Bars.exhaustive_max`` candidates;
- **index**: the retrieval index's hits for the query plus records whose key or a rare tag the query names.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from synapse_nb.models import kind_of_id
from synapse_nb.store.records import Candidate
from synapse_nb.text import query_words

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["Candidates", "Pool", "query_words"]

class Pool:
    """Candidates in id order, with the lists the scorer needs built once (cached pools are reused)."""

    def __init__(self, cands: list[Candidate]) -> None:
        self.cands = cands
        self.texts = [c.text for c in cands]
        self.keys = [f"{c.id}:{c.updated_at}" for c in cands]
        self.pos = {c.id: i for i, c in enumerate(cands)}
        self.expiring = [i for i, c in enumerate(cands) if c.expires_at is not None]


class Candidates:
    """Candidate rows and exact matches for one context (its caches live as long as the vault handle)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._lock = threading.RLock()
        self._count_key: object = None
        self._count = 0
        self._pool_key: object = None
        self._pool = Pool([])

    # The store is never called while self._lock is held: a recall holds the store's lock for its snapshot and
    # then takes this one, so the other order would deadlock two threads sharing a vault handle.
    def count(self) -> int:
        """Gate candidates in the vault (all minds), cached until the vault changes."""
        store = self._ctx.store
        key = store.data_version()
        with self._lock:
            if self._count_key == key:
                return self._count
        n = store.recall.count()
        with self._lock:
            self._count, self._count_key = n, key
        return n

    def all(self) -> Pool:
        """Every candidate of the mind (expired ones included: masked at scoring), cached per data version."""
        store, mind = self._ctx.store, self._ctx.mind
        key = (store.data_version(), mind)
        with self._lock:
            if self._pool_key == key:
                return self._pool
        pool = Pool(store.recall.candidates(mind))
        with self._lock:
            self._pool, self._pool_key = pool, key
        return pool

    def fetch(self, ids_by_kind: Mapping[str, Iterable[str]]) -> Pool:
        return Pool(self._ctx.store.recall.fetch(self._ctx.mind, ids_by_kind))

    def from_hits(self, hits: Sequence[tuple[str, str]], words: list[str], k: int) -> Pool:
        """The pool of the index path: ``hits`` as (kind, id), plus at most ``k`` records whose key or a rare tag
        the query names (those matching the most query tags/keys first, then by id)."""
        ids: dict[str, list[str]] = {}
        for kind, rid in hits:
            ids.setdefault(kind, []).append(rid)
        exact = self.exact(words, max_per_tag=k)
        for rid in sorted(exact, key=lambda rid: (-len(exact[rid]), rid))[:k]:
            ids.setdefault(kind_of_id(rid) or "", []).append(rid)
        return self.fetch(ids)

    def exact(self, words: list[str], *, rids: list[str] | None = None,
              max_per_tag: int | None = None) -> dict[str, list[str]]:
        """id -> exact matches ("#tag", "key:name") for records whose tag, key or note name the query names.

        ``rids`` restricts the answer to those records; ``max_per_tag`` leaves out tags carried by more
        records than that (a tag on thousands of records identifies nothing; its word is in the indexed
        text anyway).
        """
        out: dict[str, list[str]] = {}
        if not words:
            return out
        queries, mind = self._ctx.store.recall, self._ctx.mind
        tag_words = words
        if max_per_tag is not None:
            tag_words = [t for t, n in sorted(queries.tag_counts(mind, words).items()) if n <= max_per_tag]
        if rids is not None:
            matches = queries.tag_matches(mind, words, rids)
        else:
            matches = queries.tag_matches(mind, tag_words) if tag_words else []
        for rid, tag in matches:
            out.setdefault(rid, []).append(f"#{tag}")
        wanted = set(rids or ())
        keys = sorted({"_".join(words[i:j]) for i in range(len(words))
                       for j in range(i + 1, min(len(words), i + 6) + 1)})
        for rid, name in queries.key_matches(mind, keys):
            if rids is None or rid in wanted:
                out.setdefault(rid, []).append(f"key:{name}")
        return out
