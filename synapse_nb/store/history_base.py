"""The store seam for a vault's own changes (schema v6, team migration 9): what
:class:`~synapse_nb.store.base.VaultStore` offers as ``history``, ``revisions``, ``links`` and ``exports`` (both
backends: :mod:`synapse_nb.store.sql.history`).

Contract: history is append-only (no statement changes a row; only :meth:`HistoryTable.purge` and
:meth:`HistoryTable.prune`, human-only in the core and, on a team vault, in the database, remove rows); every listing
ends its order in the id, history's is (``at``, id); the core computes every value (ids, stamps, digests, the
canonical JSON of the record before): the store stores them byte for byte, so both backends hold the same rows.
Deleting a record (any kind) drops its links and its pending revisions in the same transaction; its history stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from synapse_nb.changes import ExportMark, HistoryEntry, Link, Revision

__all__ = ["ExportTable", "HistoryTable", "LinkTable", "RevisionTable"]


class HistoryTable(Protocol):
    def next_version(self, rid: str) -> int:
        """1 + the record's highest version (1 when it has none)."""
        ...

    def append(self, entries: Sequence[HistoryEntry]) -> None: ...

    def of_record(self, rid: str) -> list[HistoryEntry]:
        """The record's entries by (at, id)."""
        ...

    def last_of(self, rids: Sequence[str]) -> dict[str, HistoryEntry]:
        """The last entry (by at, id) of each of these records that has one (what its deletion left: the read after
        a deletion of many records, in one statement rather than one per record)."""
        ...

    def of_mind(self, mind: str, *, limit: int) -> list[HistoryEntry]:
        """The mind's latest entries, newest first (at desc, id desc)."""
        ...

    def after(self, mind: str, at: str) -> list[HistoryEntry]:
        """The mind's entries stamped after ``at``, by (rid, at, id)."""
        ...

    def removals(self, mind: str, kind: str) -> list[HistoryEntry]:
        """The mind's entries that removed a record of ``kind`` (a deletion, merge, prune...: no record after, one
        before), by (at, id): what each record deleted since was, for finding it by its key."""
        ...

    def all(self) -> Iterator[HistoryEntry]:
        """Every entry, all minds, by (at, id)."""
        ...

    def insert_entry(self, e: HistoryEntry) -> bool:
        """Store an imported entry as it is; False when its id is there already."""
        ...

    def purge(self, rid: str) -> int:
        """Remove every entry of a record; how many."""
        ...

    def prune(self, mind: str, before: str) -> int:
        """Remove the mind's entries stamped before ``before``, except each record's newest; how many."""
        ...


class RevisionTable(Protocol):
    def insert(self, rev: Revision) -> None: ...

    def get(self, id: str) -> Revision | None: ...

    def mind_of(self, id: str) -> str | None:
        """The mind holding this exact id (any mind), or None."""
        ...

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> list[str]:
        """Ids of the mind starting with ``prefix``, in id order, at most ``limit``."""
        ...

    def of_mind(self, mind: str, status: str | None = None) -> list[Revision]:
        """By (created_at, id)."""
        ...

    def pending_of(self, rid: str) -> list[Revision]:
        """The record's pending revisions, by (created_at, id)."""
        ...

    def decide(self, id: str, status: str, at: str) -> bool:
        """Set a pending revision's status; False when it was not pending."""
        ...

    def purge(self, rid: str) -> int: ...


class LinkTable(Protocol):
    def insert(self, links: Iterable[Link]) -> None:
        """Store new links; a pair (a, b) already linked is left as it is."""
        ...

    def get(self, id: str) -> Link | None: ...

    def mind_of(self, id: str) -> str | None:
        """The mind holding this exact id (any mind), or None."""
        ...

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> list[str]:
        """Ids of the mind starting with ``prefix``, in id order, at most ``limit``."""
        ...

    def of_mind(self, mind: str, status: str | None = None) -> list[Link]:
        """By (created_at, id)."""
        ...

    def of_record(self, rid: str) -> list[Link]: ...

    def all(self) -> Iterator[Link]:
        """Every link, all minds, by id (an export's link lines)."""
        ...

    def of_pair(self, a: str, b: str) -> Link | None:
        """The link of records ``a`` and ``b``, named in either order, or None."""
        ...

    def hidden(self, mind: str) -> Mapping[str, str]:
        """The ids open links hide from recall, each to the record an open link shows in its place."""
        ...

    def decide(self, id: str, status: str, at: str) -> bool: ...

    def purge(self, rid: str) -> int: ...

    def checked_at(self) -> str:
        """The stamp up to which every write has been checked for duplicates ('' before the first check)."""
        ...

    def advance(self, at: str) -> None:
        """Move :meth:`checked_at` forward to ``at`` (never back)."""
        ...

    def owed(self, *, lock: bool = False) -> str:
        """The duplicate checks imports still owe (:mod:`synapse_nb.dupes_owed`; JSON text, "" when none ever was);
        ``lock``: inside a write transaction, read once the row is locked (the latest value)."""
        ...

    def set_owed(self, value: str) -> None:
        """Replace what :meth:`owed` reads."""
        ...

    def unchecked(self, after: str, before: str | None, kinds: Sequence[str], actions: Sequence[str],
                  limit: int) -> list[tuple[str, str, str, str]]:
        """(at, rid, kind, mind) of the history entries of these kinds and actions stamped after ``after`` (and
        before ``before``), by (at, id), at most ``limit``."""
        ...

    def written_after(self, rids: Sequence[str], after: str, actions: Sequence[str]) -> set[str]:
        """Which of ``rids`` have a history entry of these actions stamped after ``after``."""
        ...

    def count_unchecked(self, after: str, kinds: Sequence[str], actions: Sequence[str]) -> int:
        """How many history entries of these kinds and actions are stamped after ``after``."""
        ...


class ExportTable(Protocol):
    def record(self, mark: ExportMark) -> None: ...

    def all(self) -> list[ExportMark]:
        """By (taken_at, id)."""
        ...
