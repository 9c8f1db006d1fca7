"""The index follower: a background thread that keeps one :class:`~synapse_nb.store.indexer.VaultIndex` current
(:meth:`~synapse_nb.store.indexer.VaultIndex.follow`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from synapse_nb.errors import SynapseError

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.store.base import Outbox

__all__ = ["Follower"]

log = logging.getLogger("synapse_nb.index")


class Follower:
    """A background thread keeping one :class:`VaultIndex` current (see :meth:`VaultIndex.follow`).

    ``syncs`` counts the syncs made, ``applied`` the records applied, ``last_error`` the last failure (the
    thread keeps going: an unreachable server is retried after ``timeout``).
    """

    def __init__(self, sync: Callable[[], int], outbox: Outbox, timeout: float) -> None:
        self.timeout = timeout
        self.syncs = 0
        self.applied = 0
        self.last_error: str | None = None
        self._sync, self._outbox = sync, outbox  # the index's (its sync and its store's outbox), not the index:
        # indexer.py imports this module
        self._stop = threading.Event()
        self._synced = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="synapse-index-follower", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        outbox = self._outbox
        listening = False
        while not self._stop.is_set():
            try:
                if not listening:  # listen before the first sync: a commit in between still wakes it
                    outbox.wait(0)
                    listening = True
                applied = self._sync()
                with self._synced:
                    self.syncs += 1
                    self.applied += applied
                    self._synced.notify_all()
                end = self.timeout
                while end > 0 and not self._stop.is_set():  # in slices, so stop() is prompt
                    if outbox.wait(min(end, 1.0)):
                        break
                    end -= 1.0
            except SynapseError as exc:
                listening = False
                self.last_error = str(exc)
                log.warning("index follower: %s (retrying in %gs)", exc, self.timeout)
                self._stop.wait(self.timeout)

    def wait_synced(self, after: int, timeout: float) -> bool:
        """Block until more than ``after`` syncs were made (True) or ``timeout`` seconds passed (False)."""
        with self._synced:
            return self._synced.wait_for(lambda: self.syncs > after, timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop following (waits for the thread, at most about a second)."""
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

