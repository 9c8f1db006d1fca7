"""This machine's offline copy of a team vault, kept at most one operation behind (issue 29, D6).

The copy is the retrieval index in ``.synapse/index/`` with its feed position (``team-feed.json``): what
``open_vault(url, offline=True)``, ``synapse-nb recall`` and ``team search-local`` read when the server is away.
Before, only an index search, ``index rebuild`` or a follower advanced it, so a machine that only ever recalled
had no copy when the server died.

A :class:`CopyKeeper` belongs to a store handle (and its siblings). Every operation that reached the server pokes
it (:meth:`CopyKeeper.poke`: setting an event, nothing else); a daemon thread (at a lower CPU priority) then, once
the operation is over (and at most once a second while operations keep coming: :data:`MIN_INTERVAL_SECONDS`):

- does nothing when the data version the operation read (a recall's snapshot reads it anyway) is the one the copy
  was synced at and nothing was written since: the common case of repeated reads costs no round trip;
- else reads the data version (one statement) and, when it moved, applies the change feed since the copy's
  position (:meth:`~synapse_nb.store.indexer.VaultIndex.sync`: only what changed; the first time, the whole copy).

It works on a sibling handle of its own (same pool, its own round-trip count), so the answers and the round
trips of the caller's operations are unchanged. At exit (and on ``close``) pending work is finished, up to
:data:`FLUSH_SECONDS`, so a CLI command leaves the copy current too. Errors (the server went away meanwhile)
are logged and the next poke tries again: the copy is a cache.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from synapse_nb._util import fmt_ts, utcnow
from synapse_nb.store.postgres.pool import log

if TYPE_CHECKING:
    from synapse_nb.store.postgres import PgStore

__all__ = ["FLUSH_SECONDS", "MIN_INTERVAL_SECONDS", "SETTLE_SECONDS", "CopyKeeper"]

#: How long a poke waits for the rest of its operation (more pokes) before the keeper looks at the version.
SETTLE_SECONDS = 0.02
#: Syncs of one keeper are at least this far apart while operations keep coming (a burst of writes costs one sync a
#: second, not one per write: each applies a LanceDB write); closing the handle or exiting syncs at once.
MIN_INTERVAL_SECONDS = 1.0
#: How long closing a handle (or the interpreter exiting) waits for the copy's pending sync.
FLUSH_SECONDS = 10.0

_LIVE: weakref.WeakSet[CopyKeeper] = weakref.WeakSet()


class CopyKeeper:
    def __init__(self, store: PgStore) -> None:
        # loaded now: a module that registers a threading exit hook (concurrent.futures, which the LanceDB copy
        # uses) cannot be imported once the interpreter is exiting, when the last sync may still be running
        import concurrent.futures.thread  # noqa: F401

        self._owner = weakref.ref(store)
        self._store: PgStore | None = None  # the keeper's own sibling handle, made on first use
        self._index: Any = None
        self._poked = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._hurry = threading.Event()  # a flush: sync now, not after the interval
        self._last = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        #: the data version the copy was last synced at; the last version an operation read; written since?
        self.copy_version: int | None = None
        self.seen_version: int | None = None
        self.wrote = True
        self.syncs = 0
        _LIVE.add(self)

    def poke(self) -> None:
        """An operation reached the server: bring the copy up to it in the background."""
        if self._stopped:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="synapse-offline-copy", daemon=True)
                self._thread.start()
        self._idle.clear()
        self._poked.set()

    def saw(self, version: int) -> None:
        self.seen_version = version

    def written(self) -> None:
        self.wrote = True

    def flush(self, timeout: float = FLUSH_SECONDS) -> bool:
        """Sync what is pending now and wait for it (True), or ``timeout`` seconds (False)."""
        if self._thread is None:
            return True
        self._hurry.set()
        try:
            return self._idle.wait(timeout)
        finally:
            self._hurry.clear()

    def close(self) -> None:
        self.flush()
        self._stopped = True
        self._poked.set()
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- the thread --------------------------------------------------------------------------------------------
    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: this thread alone yields the CPU to the caller's
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        while True:
            self._poked.wait()
            if self._stopped:
                self._idle.set()
                return
            self._hurry.wait(max(SETTLE_SECONDS, self._last + MIN_INTERVAL_SECONDS - time.monotonic()))
            self._poked.clear()
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001 - a cache: the next poke tries again
                log.info("this machine's offline copy of the team vault was not brought up to date: %s", exc)
            self._last = time.monotonic()
            if not self._poked.is_set():
                self._idle.set()

    def _sync(self) -> None:
        if not self.wrote and self.seen_version is not None and self.seen_version == self.copy_version:
            return  # the operation read the version the copy is at, and nothing was written since
        owner = self._owner()
        if owner is None:
            return
        if self._store is None:
            from synapse_nb.store.indexer import VaultIndex  # the LanceDB copy loads only when first kept

            self._store = owner.sibling_for_copy()
            folder = owner.folder
            assert folder is not None
            self._index = VaultIndex(self._store, folder, mind="default", now=lambda: fmt_ts(utcnow()))
        self.wrote = False
        version = self._store.data_version()[0]
        if version == self.copy_version and self._index.raw.exists():
            return
        self._index.sync()
        self.copy_version = version
        self.syncs += 1


@atexit.register
def _flush_all() -> None:
    """At exit: finish what the live keepers were doing (a CLI command leaves its copy current)."""
    for keeper in list(_LIVE):
        keeper.flush()
