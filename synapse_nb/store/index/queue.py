"""Each semantic table's own queue, and how much of it a process embeds (review 21).

The vault's outbox is one queue for the whole index: the drain (:class:`~synapse_nb.store.indexer.VaultIndex`)
applies it to ``records`` and then forgets it. A process that has not loaded the channel's embedder (the CLI, a
hook before its recall, a delete's scrub) cannot apply it to a semantic table, so before the outbox forgets
anything the drain adds the ids to the queue file ``<table>.queue`` beside every semantic table
(:meth:`Queues.hold`); the process that has the embedder loaded applies that queue and rewrites it as it goes.

A queue file is JSON: a sorted list of record ids (never text), or ``"*"``: compare every row's digest with the
store (a build in progress, an unreadable file, more than :data:`MAX_QUEUED` ids). Written to a temporary file,
flushed to disk, then renamed over the old one. Read only when it is a regular file (:mod:`synapse_nb.own_files`): a
FIFO, a symlink or a directory in its place is read as "compare everything" (review 79: a FIFO hung every recall).

:class:`Steps` sizes the steps a queue is applied in (each step embeds, commits and rewrites the queue, so a killed
process loses at most one) and stops them at the process's deadline (:data:`DEADLINE_ENV`), which the agent hooks
set: they are killed at their time limit, and recall then answers from BM25 and the vectors already there.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from synapse_nb.own_files import own_folder, read_text, remove, state, write_atomic

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.store.index.dense import DenseRow

__all__ = ["ALL", "DEADLINE_ENV", "MAX_QUEUED", "STEP_S", "Queues", "Steps", "deadline"]

#: Environment variable: the time (seconds since the epoch) after which this process starts no more embedding of
#: a semantic table's queue (set by the agent hooks for their run: ``agents/hooks.py``).
DEADLINE_ENV = "SYNAPSE_EMBED_DEADLINE"
#: Seconds of embedding a step aims at (each step commits, and rewrites the queue).
STEP_S = 1.0
#: A queue of more ids is kept as "compare everything" (each rewrite of the file stays a few milliseconds).
MAX_QUEUED = 10_000
#: A queue file larger than this is no file ("compare everything"): :data:`MAX_QUEUED` ids are far smaller.
MAX_QUEUE_BYTES = 4 << 20
#: The queue that says "compare every row with the store".
ALL = "*"


def deadline() -> float | None:
    """This process's deadline for embedding (:data:`DEADLINE_ENV`), or None."""
    try:
        return float(os.environ[DEADLINE_ENV])
    except (KeyError, ValueError):
        return None


class Queues:
    """The semantic tables' queue files in the index folder ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._left: dict[str, frozenset[str]] = {}  # what this process's last catch-up left in each queue

    def applied(self, name: str, ids: set[str] | None) -> None:
        """Keep what this process's catch-up of table ``name`` left in its queue (None: not known; :meth:`left`
        reads the file then)."""
        if ids is None:
            self._left.pop(name, None)
        else:
            self._left[name] = frozenset(ids)

    def left(self, name: str, *, readonly: bool = False) -> frozenset[str] | None:
        """The ids table ``name`` has not applied (None: "compare everything", not known): as this process's last
        catch-up left them (:meth:`applied`: the queue is not read again per recall), else as the queue file says;
        none when there is no queue file (another process applied it since), but in a ``readonly`` vault, whose
        catch-up writes no file."""
        got = self._left.get(name)
        if not readonly and not self.file(name).exists():
            return frozenset()
        if got is not None:
            return got
        ids = self.read(name)
        return None if ids is None else frozenset(ids)

    def tables(self) -> list[str]:
        """The names of the semantic tables in the folder."""
        from synapse_nb.store.index.dense import _PREFIX

        if not self.path.is_dir() or not own_folder(self.path):  # never through a symlink (review 81)
            return []
        return sorted(p.name.removesuffix(".lance") for p in self.path.glob(f"{_PREFIX}*.lance"))

    def file(self, name: str) -> Path:
        return self.path / f"{name}.queue"

    def names(self) -> list[str]:
        """The tables that have a queue file (their table may be gone)."""
        return (sorted(p.name.removesuffix(".queue") for p in self.path.glob("*.queue"))
                if self.path.is_dir() and own_folder(self.path) else [])

    def read(self, name: str) -> set[str] | None:
        """The ids table ``name`` has not applied (None: compare every row with the store)."""
        path = self.file(name)
        text = read_text(path, cap=MAX_QUEUE_BYTES)  # never a FIFO's hang, nor a symlink's target (review 79)
        if text is None:
            return set() if state(path) == "missing" else None  # unreadable: compare everything
        try:
            got = json.loads(text)
        except ValueError:
            return None
        return {str(i) for i in got} if isinstance(got, list) else None

    def write(self, name: str, ids: set[str] | None) -> None:
        """Replace table ``name``'s queue (None: compare everything; empty: no queue); nothing through a symlink at
        the folder (review 81)."""
        path = self.file(name)
        if not own_folder(self.path):
            return
        if ids is not None and not ids:
            if not remove(path):  # whatever is in its place (review 79), else the file
                path.unlink(missing_ok=True)
            return
        remove(path)  # a directory in its place would refuse the rename
        write_atomic(path, json.dumps(ALL if ids is None or len(ids) > MAX_QUEUED else sorted(ids)), mode=0o644,
                     fsync=True)  # a fresh temporary file, renamed over whatever is at the path (review 79)

    def hold(self, ids: Callable[[], Iterable[str]], *, skip: str | None = None) -> None:
        """Add the ids (read only when a table needs them) to the queue of every semantic table in the folder but
        ``skip``: called before the outbox forgets them."""
        names = [n for n in self.tables() if n != skip]
        got = set(ids()) if names else set()
        for name in names if got else ():
            queued = self.read(name)
            self.write(name, None if queued is None else queued | got)


class Steps:
    """How many of the next rows a step embeds: about :data:`STEP_S` seconds at the rate measured so far (a row
    weighs its document's characters, up to 4,096, plus 100), at least one row; under a deadline none once the
    time left is shorter than the next row's estimate (one row while no rate is known)."""

    def __init__(self, deadline: float | None, rate: float | None = None) -> None:
        self.deadline = deadline
        self.rate = rate  # seconds per unit

    @staticmethod
    def _units(row: DenseRow) -> int:
        return min(len(row.doc), 4096) + 100

    def take(self, rows: Sequence[DenseRow]) -> int:
        left = None if self.deadline is None else self.deadline - time.time()
        if left is not None and left <= 0:
            return 0
        if self.rate is None:
            return min(1, len(rows))
        budget = STEP_S if left is None else min(STEP_S, left)
        n, cost = 0, 0.0
        for r in rows[:4096]:
            cost += self._units(r) * self.rate
            if n and cost > budget:
                break
            if not n and left is not None and cost > left:
                return 0  # the next row would end past the deadline
            n += 1
        return n

    def took(self, rows: Sequence[DenseRow], seconds: float) -> None:
        self.rate = max(seconds, 1e-6) / sum(self._units(r) for r in rows)
