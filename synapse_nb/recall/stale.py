"""Marks on recall's lines whose files moved on: possibly stale (changed since written) or missing at HEAD.

A memory or decision naming files changed by commits made after it was written is marked *possibly stale*,
naming the commits (one ``git log`` for the records the walk reads first, cached per HEAD); a record
``verify --fix`` found naming missing files is marked with them, as quoted names. A mark is part of the line the
gate counts against the budget (:class:`Marks`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from synapse_nb.models import KIND_BY_NAME, Decision, Memory, Record
from synapse_nb.provenance import FILE_NAMES, file_names

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["FLAG_NAMES_CHARS", "Marks", "Staleness"]

#: Most flag answers kept (emptied when full: keeps a long-lived process bounded).
MAX_FLAGS = 50_000
#: Most characters of the file names a "files missing at HEAD" mark lists (whole names; the rest are counted).
FLAG_NAMES_CHARS = 300


class Staleness:
    """The marks of recall's lines for one context (:meth:`marks`); remembers git's answers per (HEAD, id,
    updated_at) and the stored file flags per data version (every write of a flag moves it: SQLite's
    ``data_version`` moves with any commit, a team vault's with a flag write since migration 4), so a warm recall
    reads no flag."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._cache: dict[tuple[str | None, str, str], tuple[str, ...]] = {}
        self._flags_version: object = None
        self._flags: dict[str, list[str] | None] = {}

    def marks(self, version: object = None) -> Marks:
        """The marks of one recall's lines at ``version`` (the data version the recall read; None: flags read
        afresh): HEAD is read once, on the first record that needs it."""
        return Marks(self, version)

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

    def _stale(self, recs: Sequence[tuple[str, str, Record]], head: str | None) -> dict[str, tuple[str, ...]]:
        """{id: shas} of ``recs`` (kind, id, record) whose named files changed in commits after ``head``'s
        record was written: git's answers kept per (HEAD, id, updated_at), those not kept found in one ``git log``."""
        stale: dict[str, tuple[str, ...]] = {}
        with self._lock:
            if self._cache and next(iter(self._cache))[0] != head:
                self._cache.clear()  # a new HEAD invalidates every entry: keeps a long-lived process bounded
            todo = []
            for kind, rid, rec in recs:
                if not KIND_BY_NAME[kind].follows_files:
                    continue
                key = (head, rid, rec.updated_at)
                if key in self._cache:
                    if self._cache[key]:
                        stale[rid] = self._cache[key]
                    continue
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


class Marks:
    """The marks one recall puts at the end of its lines (:meth:`Staleness.marks`): what :meth:`tail` gives is part
    of the line the gate counts against the budget (review 71: appended after the gate, 500 long names made one
    line of 100,000 characters against a budget of 1,200 tokens, and the cuts that followed dropped a person's
    checkpoint). :meth:`prefetch` reads the marks of the records the walk will read first in one flag read and one
    ``git log``; a record it did not read is read alone."""

    def __init__(self, staleness: Staleness, version: object) -> None:
        self._of = staleness
        self._version = version
        self._head: tuple[str | None] | None = None  # read on the first record that needs it

    def _head_sha(self) -> str | None:
        if self._head is None:
            self._head = (self._of._ctx.git.head()[1],)
        return self._head[0]

    def prefetch(self, recs: Sequence[tuple[str, str, Record]]) -> None:
        """Read the marks of ``recs`` (kind, id, record) together."""
        if not recs:
            return
        self._of._dangling([rid for _, rid, _ in recs], self._version)
        if self._of._ctx.git.repo is not None:
            self._of._stale(recs, self._head_sha())

    def tail(self, kind: str, rid: str, rec: Record) -> str:
        """What record ``rid``'s line ends with: " [possibly stale: …]" naming at most 5 commits, and
        " [files missing at HEAD (names as listed, not anyone's words): …]" naming the files ``verify --fix``
        found missing as :func:`~synapse_nb.provenance.file_names` lists them (quoted, at most
        :data:`FLAG_NAMES_CHARS`, the rest counted), or "" (review 71: the names were joined raw, and a file an
        agent named put a forged approval label and banner on a person's checkpoint line)."""
        out = ""
        if self._of._ctx.git.repo is not None:
            shas = self._of._stale([(kind, rid, rec)], self._head_sha()).get(rid)
            if shas:
                out += f" [possibly stale: its files changed in {', '.join(s[:7] for s in shas[:5])}]"
        missing = self._of._dangling([rid], self._version).get(rid)
        if missing:
            out += f" [files missing at HEAD ({FILE_NAMES}): {file_names(missing, FLAG_NAMES_CHARS)}]"
        return out
