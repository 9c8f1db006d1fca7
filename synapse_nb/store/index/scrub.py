"""Who waits for the index lock, and when a deletion's whole-index scrub runs (review 28).

**The lock.** One process at a time applies the outbox to the index, under ``.synapse/index.lock``
(:meth:`~synapse_nb.store.indexer.VaultIndex._mutating`). A recall waits for it at most :data:`RECALL_LOCK_WAIT`
(`locks.flock_within`): when another process holds it longer (a person's rebuild, a scrub, another process's
embedding), the recall answers from the index as it stands. BM25 reads the vault's SQLite file, the system of
record, so it sees every committed write; only the semantic channel's vectors may lack the writes queued since the
last sync (a deleted record is never answered: every candidate is a row of the store).

**The scrub.** LanceDB keeps a deleted row's text in its fragment and in every older version of the table, so
issue 30's promise (a deletion leaves no text in the index folder, in the deleting call) costs a whole-index
rewrite (:meth:`~synapse_nb.store.indexer.VaultIndex.forget`): seconds with a large index, under the lock. A
person's deletion (delete, prune, purge) keeps that promise. An agent's deletion of its own records
(:meth:`Owed.mark`) leaves the rewrite owed: the record is gone from the store at once, and the next sync marks its
index rows deleted; its text stays in the index folder's fragment and version files until the next whole-index
scrub, which runs at a person's next deletion, purge or prune, or at the first agent deletion once the oldest owed
one is :data:`AGENT_SCRUB_EVERY` old. An agent at its write quota so holds the lock for one rewrite an hour, not
one per deletion (7 to 17 s each at 60,000 records held the lock about 50 minutes of every hour).

**A person's scrub is owed too until it ran** (review 32). It is marked owed before it waits for the lock, and the
wait is bounded (:data:`PERSON_LOCK_WAIT`): another process (an agent's ``flock .synapse/index.lock sleep 60``)
held it, and the deletion, already committed, blocked without limit; killed, it left the deleted text in the index
folder with nothing owing its removal. Now the deletion returns, the scrub stays owed with a warning
(:func:`warn_owed`), and a person's next deletion, purge, prune, ``index check --repair`` or ``index rebuild`` runs
it (never a recall: it must stay fast).

**Saying so** (review 34). A purge whose rewrite stayed owed said "index, FTS and caches scrubbed": the purge's
report now reads :attr:`~synapse_nb.store.indexer.VaultIndex.scrub_behind` (set by every scrub, :func:`owed_note`)
and says "index NOT scrubbed (owed)". The remedy the warning names, ``index check --repair`` or ``index rebuild``,
waited for the lock without limit: it now waits :data:`UPKEEP_LOCK_WAIT` at most and raises :func:`lock_busy`,
which names the lock file and how to find its holder (``fuser``).

**Another machine's deletion** (review 91). A team vault's change feed brings other machines' deletions, which no
deleting call on this machine scrubbed: the sync applied them as LanceDB's soft delete and the text stayed in the
older versions for good (an agent's machine could never scrub: rebuild and repair are a person's). Such a sync marks
the scrub owed (:meth:`Owed.mark`, a person's line unless :func:`by_agent`) before it applies the deletion, and runs
it at its end when :func:`at_sync` says so, whoever's handle syncs: a scrub only removes deleted rows.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from synapse_nb.errors import BusyError, StoreError
from synapse_nb.own_files import (
    CONFIG,
    FOLDERS,
    damaged_in,
    open_regular,
    own_folder,
    read_bytes,
    remove,
    state,
    write_atomic,
)
from synapse_nb.store.index.maintenance import own_index

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.store.base import VaultStore
    from synapse_nb.store.index.queue import Queues

__all__ = ["AGENT_SCRUB_EVERY", "PERSON", "PERSON_LOCK_WAIT", "RECALL_LOCK_WAIT", "UPKEEP_LOCK_WAIT", "Owed",
           "at_sync", "by_agent", "drop_rank_files", "lock_busy", "owed_note", "rewrite", "sweep", "warn_owed"]

#: Seconds a recall's sync waits for the index lock before it answers from the index as it stands.
RECALL_LOCK_WAIT = 0.25
#: Seconds an agent's deletion may leave the whole-index scrub owed: the first agent deletion after the oldest owed
#: one is this old runs it (a person's deletion, purge or prune runs it at once).
AGENT_SCRUB_EVERY = 3600.0
#: A scrub marker larger than this is read as owed long ago (a line per deletion is 15 bytes).
MAX_OWED_BYTES = 16 << 20
#: How a marker line written by a person's deletion ends (``<time> p``): a person's next open runs its scrub.
PERSON = b" p\n"
#: Seconds a deletion's whole-index scrub waits for the index lock; held longer, the scrub stays owed (review 32).
PERSON_LOCK_WAIT = 10.0
#: Seconds a person's ``index check --repair`` or ``index rebuild`` waits for the index lock (review 34: it waited
#: without limit behind an agent's ``flock``; a whole-index rewrite at 60,000 records takes 7 to 17 s), then fails
#: with :func:`lock_busy`'s error.
UPKEEP_LOCK_WAIT = 20.0
#: Most deleted ids a sync looks up in the history to tell an agent's deletions from a person's: more, and it
#: scrubs at once, as for a person's (one round trip per id on a team vault).
BY_AGENT_MAX = 50


def _holder(index_dir: Path) -> str:
    lock = index_dir.parent / "index.lock"
    return f"another process held the index lock {lock} (`fuser {lock}` names it)"


def owed_note(index_dir: Path, wait: float = PERSON_LOCK_WAIT) -> str:
    """What a person reads when a deletion's whole-index rewrite stayed owed (a purge's report says it too) after
    waiting ``wait`` seconds for the index lock."""
    return (f"{_holder(index_dir)} for more than {wait:g} s: the index folder {index_dir} still holds "
            "the deleted text until the owed rewrite runs. A person runs it with `synapse-nb index check --repair` "
            "(or `index rebuild`) once that process ends, or it runs at the next deletion, purge or prune")


def warn_owed(index_dir: Path, wait: float = PERSON_LOCK_WAIT) -> None:
    """Say (a warning the CLI prints on stderr, a notebook under the cell) that a deletion's scrub could not run."""
    logging.getLogger("synapse_nb.index").warning(
        "the record is deleted (recall no longer answers it), but %s", owed_note(index_dir, wait))


def lock_busy(index_dir: Path, action: str) -> BusyError:
    """The error of a person's upkeep (``action``) that waited :data:`UPKEEP_LOCK_WAIT` for the index lock."""
    return BusyError(f"cannot {action}: {_holder(index_dir)} for more than {UPKEEP_LOCK_WAIT:g} s; end that "
                     "process (or wait for it to finish) and run this again")


def by_agent(store: VaultStore, ids: Sequence[str]) -> bool:
    """Whether every record of ``ids`` (deleted: a sync found no row of them) was deleted by the agent, by its last
    history entry, committed with the deletion (:func:`synapse_nb.history.deleted_by_agent`); False for a purge (no
    entry is left), for an entry the login may not read, and past :data:`BY_AGENT_MAX` ids."""
    if len(ids) > BY_AGENT_MAX:
        return False
    try:
        last = store.history.last_of(ids)  # one read for them all
        return all(rid in last and last[rid].actor == "agent" for rid in ids)
    except StoreError:
        return False


def at_sync(owed: Owed, deleted: bool) -> bool:
    """Whether a sync runs the whole-index scrub once it applied the change feed (review 91: a team machine's sync
    applied another machine's purge as LanceDB's soft delete, and its index folder kept the text for good): when a
    person's deletion's scrub is owed (the sync marked it, applying one; or its own process was killed or kept from
    the lock), or the sync applied a deletion and an agent's owed scrub is :data:`AGENT_SCRUB_EVERY` old. Never
    under a deadline (an agent hook's time limit: a whole-index rewrite takes seconds; the next sync without one
    runs it)."""
    from synapse_nb.store.index.queue import deadline

    return deadline() is None and (owed.person() or (deleted and owed.due()))


def rewrite(path: Path, records: str, gone: Iterable[str], drop: Mapping[str, Iterable[str]], queues: Queues) -> int:
    """The whole-index scrub's rewrite of the index folder ``path`` once table ``records`` was rebuilt from the store
    (under the index lock): every other table (the semantic tables) is rewritten with the rows of records still in
    the store, less ``gone`` and, per table, the ids ``drop`` names, which are added to its queue (the next recall
    with the channel embeds them again); a semantic table that cannot be read is removed; then every older version of
    every table is dropped. Returns how many semantic tables were rewritten."""
    import lancedb  # the index exists: its table is opened anyway
    import pyarrow as pa
    import pyarrow.compute as pc

    from synapse_nb.store.index import broken

    own_index(path)  # never what a symlink at the folder names (review 81)
    db = lancedb.connect(str(path))
    kept = db.open_table(records).search().select(["id"]).limit(None).to_arrow().column("id")
    gone, rewritten = set(gone), 0
    for name in sorted(db.list_tables().tables):
        if name == records:
            continue
        if (data := broken.read_or_remove(db, path, name)) is None:
            continue  # a semantic table that cannot be read: removed
        redo = set(drop.get(name, ()))
        if redo and (queued := queues.read(name)) is not None:
            queues.write(name, queued | redo)
        out = pa.array(sorted(gone | redo), type=pa.string())
        keep = pc.and_(pc.is_in(data.column("id"), value_set=kept),
                       pc.invert(pc.is_in(data.column("id"), value_set=out)))
        db.create_table(name, data=data.filter(keep), mode="overwrite")
        rewritten += 1
    for name in sorted(db.list_tables().tables):
        with warnings.catch_warnings():  # "every version but the latest goes": asked for, under the lock
            warnings.simplefilter("ignore", UserWarning)
            db.open_table(name).optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    return rewritten


class Owed:
    """The marker ``index/scrub.owed``: one line (seconds since the epoch) per deletion whose whole-index scrub is
    owed (an agent's, and a person's until its scrub ran); the first line says since when. Appended without the
    index lock (a line is one small ``O_APPEND`` write); removed by the scrub that covered it. It holds times only,
    never an id or a text. A line a person's deletion wrote before its commit ends with :data:`PERSON` (review 89:
    a purge killed after its commit left nothing owing its scrub): a person's next open runs it
    (:func:`synapse_nb.purge.run_owed`)."""

    def __init__(self, index_dir: Path) -> None:
        self.file = index_dir / "scrub.owed"

    def mark(self, *, person: bool = False) -> None:
        """Say that a deletion's scrub is owed (the index folder exists: a deletion without one owes nothing). Never
        through a symlink, never blocking on a FIFO (review 79: a symlink had each deletion append its line to the
        file it named); whatever is in the marker's place stays, and :meth:`since` reads it as owed long ago."""
        fd = open_regular(self.file, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        if fd is None:
            return
        try:
            os.write(fd, f"{time.time():.3f}{' p' if person else ''}\n".encode())
        finally:
            os.close(fd)

    def since(self) -> float | None:
        """When the oldest owed scrub was marked (None: none is owed; an unreadable marker, or anything but a
        regular file in its place, counts as very old: the scrub is owed now)."""
        if state(self.file) == "missing":
            return None
        data = read_bytes(self.file, cap=MAX_OWED_BYTES)
        try:
            return float(data.split(b"\n", 1)[0].split(b" ", 1)[0].decode("utf-8")) if data is not None else 0.0
        except (ValueError, UnicodeDecodeError):
            return 0.0

    def person(self) -> bool:
        """Whether a person's deletion's scrub is owed (a line :meth:`mark` ed ``person``): one its process did not
        run, killed after the commit or kept from the index lock (review 89)."""
        if state(self.file) != "file":
            return False
        data = read_bytes(self.file, cap=MAX_OWED_BYTES)
        return data is not None and PERSON in data

    def due(self, now: float | None = None) -> bool:
        """Whether an agent's deletion now runs the owed scrub (the oldest owed one is :data:`AGENT_SCRUB_EVERY`
        old)."""
        since = self.since()
        return since is not None and (time.time() if now is None else now) - since >= AGENT_SCRUB_EVERY

    def size(self) -> int:
        """The marker's length now (0: none, or not a regular file), read under the index lock before a scrub
        (:meth:`settle`)."""
        try:
            st = os.lstat(self.file)
        except OSError:
            return 0
        return st.st_size if stat.S_ISREG(st.st_mode) else 0

    def settle(self, size: int) -> None:
        """After a whole-index scrub that began when the marker was ``size`` bytes long: remove it, keeping the
        lines appended since (their deletions may have come after the scrub read the store). Anything but a regular
        file in its place is removed (it could hold no line: :meth:`mark` appends to a regular file only)."""
        if remove(self.file) or state(self.file) == "missing":
            return
        data = read_bytes(self.file, cap=MAX_OWED_BYTES)
        if data is not None and len(data) <= size:
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()
            return
        write_atomic(self.file, data[size:] if data is not None else b"0\n")  # too large to read: owed, once more


def drop_rank_files(folder: Path | None, *, vault: Path | None = None) -> None:
    """Remove recall's structure arrays on disk (``cache/rank-*``: ``synapse_nb.recall.rankfile``), as a deletion's
    scrub does, for a person's ``index rebuild`` and ``index check --repair``: they then fix whatever a file rewritten
    with a matching checksum held (review 56: both said ok and recall kept reading it). The next recall builds the
    arrays from the rows. With ``vault`` (a person's upkeep and deletion), also what is in the place of any file the
    package keeps in that vault folder (:func:`sweep`: first, so a symlink at ``cache`` is removed, never looked
    through). ``folder`` when it is not a real folder is left alone: what a symlink there names is not the
    package's (review 81: an agent's deletion unlinked a person's ``rank-2024.csv``)."""
    if vault is not None:
        sweep(vault)
    for f in sorted(folder.glob("rank-*")) if folder is not None and own_folder(folder) else ():
        with contextlib.suppress(OSError):
            if not remove(f):  # a FIFO, a symlink, a directory (review 79), else the file
                f.unlink()


def sweep(vault: Path) -> list[Path]:
    """Remove what is in the place of a file the package keeps in the vault folder ``vault`` (a FIFO, a socket, a
    symlink, a folder: :func:`synapse_nb.own_files.damaged_in`; review 79; a symlink or a file at ``index`` or
    ``cache``, which becomes an empty folder: review 81), SQLite's own files beside the database
    excepted (the vault opened: they are SQLite's now). A semantic table's queue is written again as "compare
    everything" (what it held is not known). Returns what was removed."""
    from synapse_nb.store.index.queue import ALL

    gone = []
    for p in damaged_in(vault):
        if p.parent == vault and p.name in CONFIG:
            continue  # a person's configuration: named, never removed (review 81)
        if p.parent == vault and p.name in FOLDERS:  # a symlink at index/ or cache/: itself, never what it names
            if own_folder(p, fix=True):
                gone.append(p)
        elif not p.name.startswith("synapse.db-") and remove(p):
            gone.append(p)
            if p.suffix == ".queue":
                with contextlib.suppress(OSError):
                    write_atomic(p, json.dumps(ALL), mode=0o644)
    if gone:
        logging.getLogger("synapse_nb.index").warning(
            "removed what was in the place of the vault's own files (not regular files; rebuilt when needed): %s",
            ", ".join(str(p) for p in gone))
    return gone
