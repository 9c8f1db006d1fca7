"""Index upkeep: keep the LanceDB retrieval index in step with the system of record.

Every write that changes a recall candidate queues its id in the store's outbox, in the same transaction
(SQLite: triggers on ``gate_docs`` fill ``index_outbox``). :meth:`VaultIndex.sync` applies the queue to the index
before every search, under a vault-wide file lock, so a crash between the commit and the index update is
repaired on the next use. ``rebuild`` and ``check(repair=True)`` work under the same lock. The index is a
cache: deleting it changes no answer.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb._util import digest
from synapse_nb.store.index import DriftReport, Hit, IndexRow, RetrievalIndex

if TYPE_CHECKING:
    from synapse_nb.store.base import Candidate, VaultStore

__all__ = ["VaultIndex"]

#: Outbox entries applied per round.
BATCH = 5000


def index_row(c: Candidate) -> IndexRow:
    """The index row of a candidate (its digest covers what the index stores and filters on)."""
    return IndexRow(id=c.id, kind=c.kind, mind=c.mind, text=c.text, digest=digest([c.text, c.expires_at]),
                    updated_at=c.updated_at, expires_at=c.expires_at)


class VaultIndex:
    """``vault.index``: the LanceDB retrieval index under ``.synapse/index/`` (a rebuildable cache).

    Writes enqueue changed ids in the store's outbox in the same transaction; the index applies the outbox
    before it answers (:meth:`sync`), so a crash between the commit and the index update is repaired on the
    next use.

    Parameters
    ----------
    store : the vault's system of record.
    folder : the vault folder (the index lives in ``folder/index``, its lock is ``folder/index.lock``).
    mind : the mind :meth:`search` looks in.
    now : returns "now" as fixed-width UTC text (expired memories are not returned).
    """

    def __init__(self, store: VaultStore, folder: Path, *, mind: str, now: Callable[[], str]) -> None:
        self._store = store
        self._folder = folder
        self._mind = mind
        self._now = now
        self._idx: RetrievalIndex | None = None
        self._thread_lock = threading.RLock()

    @property
    def path(self) -> Path:
        return self._folder / "index"

    @property
    def raw(self) -> RetrievalIndex:
        """The LanceDB table itself (opened on first use)."""
        if self._idx is None:
            self._idx = RetrievalIndex(self.path)
        return self._idx

    def close(self) -> None:
        """Release the open LanceDB table (it is opened again on next use)."""
        if self._idx is not None:
            self._idx.close()
            self._idx = None

    def _rows_for(self, ids: Iterable[str]) -> list[IndexRow]:
        return [index_row(c) for c in self._store.outbox.docs(list(ids))]

    def _all_rows(self) -> Iterator[IndexRow]:
        """Every index row, streamed (a 1M-record vault is never held in memory at once)."""
        return (index_row(c) for c in self._store.outbox.all_docs())

    def _expected(self) -> dict[str, str]:
        return {r.id: r.digest for r in self._all_rows()}

    @contextlib.contextmanager
    def _mutating(self) -> Iterator[None]:
        """Hold the vault-wide index lock: one process at a time reads the outbox and writes the index.

        Without it, two syncs (or a rebuild and a sync) interleave read-outbox / read-rows / write-index
        and an older snapshot can overwrite a newer one with the outbox already emptied.
        """
        with self._thread_lock:
            if self._store.readonly:
                yield
                return
            self._folder.mkdir(exist_ok=True)  # never its parents
            with open(self._folder / "index.lock", "a+") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    def sync(self) -> int:
        """Apply pending changes from the outbox to the index; returns how many records were applied."""
        if not self._store.outbox.has_pending() and self.raw.exists():
            return 0  # nothing pending: no lock needed
        with self._mutating():
            return self._sync_locked()

    def _sync_locked(self) -> int:
        store = self._store
        if not self.raw.exists():
            self._rebuild_locked()
            return 0
        applied = 0
        while True:
            pending = store.outbox.pending(BATCH)
            if not pending:
                return applied
            ids = [rid for rid, _ in pending]
            rows = self._rows_for(ids)
            present = {r.id for r in rows}
            gone = sorted(set(ids) - present)
            if rows:
                self.raw.upsert(rows)
            if gone:
                self.raw.delete(gone)
            if store.readonly:
                return applied + len(ids)
            store.outbox.ack(pending)
            applied += len(ids)

    def rebuild(self, *, progress: bool = False) -> int:
        """Drop the index and rebuild it from the store; returns the number of rows written."""
        with self._mutating():
            return self._rebuild_locked(progress=progress)

    def _rebuild_locked(self, *, progress: bool = False) -> int:
        store = self._store
        mark = store.outbox.high_water()
        n = self.raw.rebuild(self._all_rows(), total=store.recall.count(), progress=progress)
        if not store.readonly:
            store.outbox.ack_through(mark)
        return n

    def check(self, *, repair: bool = False) -> DriftReport:
        """Compare the index with the store (rows missing, stale or extra); with ``repair``, fix the drift.

        An index never built (a new vault: it is built on first use, or by :meth:`rebuild`) is not drift:
        the report has ``built=False`` and is ``ok``; with ``repair`` the index is built now.
        """
        if not self.raw.exists():
            if repair:
                self.rebuild()
            return DriftReport(built=False)
        if repair:
            with self._mutating():
                return self.raw.repair(self._rows_for, self._expected())
        return self.raw.check(self._expected())

    def search(self, query: str, *, k: int = 200, kinds: Sequence[str] | None = None,
               mode: Any = "hybrid") -> list[Hit]:
        """Candidate hits for ``query`` in this mind (after applying the outbox)."""
        self.sync()
        return self.raw.search(query, mind=self._mind, kinds=kinds, now=self._now(), k=k, mode=mode)
