"""Marks on kept items whose files moved on: possibly stale (changed since written) or missing at HEAD.

A memory or decision naming files changed by commits made after it was written is marked *possibly stale*,
naming the commits (one ``git log`` for all kept items, cached per HEAD); a record ``verify --fix`` found
naming missing files is marked with them.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING

from synapse_nb.models import KIND_BY_NAME, Decision, Memory
from synapse_nb.recall.types import RecallItem

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["Staleness"]

#: Most flag answers kept (emptied when full: keeps a long-lived process bounded).
MAX_FLAGS = 50_000


class Staleness:
    """Annotates kept items for one context; remembers git's answers per (HEAD, id, updated_at) and the stored
    file flags per data version (every write of a flag moves it: SQLite's ``data_version`` moves with any commit,
    a team vault's with a flag write since migration 4), so a warm recall reads no flag."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._cache: dict[tuple[str | None, str, str], tuple[str, ...]] = {}
        self._flags_version: object = None
        self._flags: dict[str, list[str] | None] = {}

    def annotate(self, kept: list[RecallItem], version: object = None) -> list[RecallItem]:
        """``kept`` with their marks; ``version``: the data version the recall read (None: flags read afresh)."""
        if not kept:
            return kept
        ctx = self._ctx
        flagged = self._dangling([k.id for k in kept], version)
        stale: dict[str, tuple[str, ...]] = {}
        if ctx.git.repo is not None:
            stale = self._stale(kept)
        if not flagged and not stale:
            return kept
        out = []
        for k in kept:
            line = k.line
            if k.id in stale:
                line += f" [possibly stale: its files changed in {', '.join(s[:7] for s in stale[k.id][:5])}]"
            if k.id in flagged:
                line += f" [files missing at HEAD: {', '.join(flagged[k.id])}]"
            out.append(replace(k, line=line))
        return out

    def _dangling(self, ids: list[str], version: object) -> dict[str, list[str]]:
        """The "files missing at HEAD" flags of ``ids``; those read at ``version`` before are not read again."""
        if version is None:
            return self._ctx.store.flags.dangling(ids)
        with self._lock:
            if self._flags_version != version or len(self._flags) > MAX_FLAGS:
                self._flags_version, self._flags = version, {}
            known = {i: self._flags[i] for i in ids if i in self._flags}
        todo = [i for i in ids if i not in known]
        if todo:
            found = self._ctx.store.flags.dangling(todo)
            known.update((i, found.get(i)) for i in todo)
            with self._lock:
                if self._flags_version == version:
                    self._flags.update((i, known[i]) for i in todo)
        return {i: v for i, v in known.items() if v is not None}

    def _stale(self, kept: list[RecallItem]) -> dict[str, tuple[str, ...]]:
        head = self._ctx.git.head()[1]
        stale: dict[str, tuple[str, ...]] = {}
        with self._lock:
            if self._cache and next(iter(self._cache))[0] != head:
                self._cache.clear()  # a new HEAD invalidates every entry: keeps a long-lived process bounded
            todo = []
            for k in kept:
                if not KIND_BY_NAME[k.kind].follows_files:
                    continue
                key = (head, k.id, k.record.updated_at)
                if key in self._cache:
                    if self._cache[key]:
                        stale[k.id] = self._cache[key]
                    continue
                rec = k.record
                if isinstance(rec, Memory):
                    text = rec.content
                elif isinstance(rec, Decision):
                    text = f"{rec.decision} {rec.rationale or ''}"
                else:  # another kind that names files: its searchable text
                    text = rec.text
                from synapse_nb.follow import paths_in_text  # git's modules load only when a record is checked

                todo.append((key, paths_in_text(text)))
            if todo:
                from synapse_nb.follow import stale_commits

                found = stale_commits(self._ctx, [(key[1], key[2], paths) for key, paths in todo])
                for key, _ in todo:
                    self._cache[key] = found.get(key[1], ())
                    if found.get(key[1]):
                        stale[key[1]] = found[key[1]]
        return stale
