"""Index upkeep: keep the LanceDB retrieval index in step with the system of record.

Every write that changes a recall candidate queues its id in the store's outbox, in the same transaction
(SQLite: triggers on ``gate_docs`` fill ``index_outbox``). :meth:`VaultIndex.sync` applies the queue to the index
before every search, under a vault-wide file lock, so a crash between the commit and the index update is
repaired on the next use. ``rebuild`` and ``check(repair=True)`` work under the same lock. The index is a
cache: deleting it changes no answer.

With recall's semantic channel on, the same drain keeps the channel's vectors (:meth:`VaultIndex.use_semantic`):
one table per embedder fingerprint beside ``records`` (:mod:`synapse_nb.store.index.dense`), each record's
document being its text then `` | replying to: `` and the first :data:`PREV_CHARS` characters of the record
before it in its thread; a person's record skips the agents' unverified records there, which never move a
person's vector (review 21). A changed record queues its followers too: their context moved. A missing table, or
one of another fingerprint, is built from the store on the next sync.

Each semantic table has its own queue (review 21; :mod:`synapse_nb.store.index.queue`): the drain applies the
outbox to ``records``, adds the ids to the queue file ``<table>.queue`` of every semantic table in the folder, and
only then forgets them in the outbox; the process that has the table's embedder loaded applies its queue in steps
of about a second of embedding, rewriting the queue after each step. So a process without the channel (the CLI, a
hook before its recall, a delete's scrub) never drops what a semantic table has not taken, and a killed process
loses at most one step. A queue holding ``"*"`` (a build in progress, or too many ids) is worked out by comparing
every row's digest with the store. Under a deadline (the agent hooks' time limit) the queue is applied only while
time is left; recall then answers from BM25 and the vectors already there, and a later sync goes on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb._util import digest
from synapse_nb.errors import PermissionDeniedError, StoreError, ValidationError
from synapse_nb.locks import held
from synapse_nb.own_files import own_folder
from synapse_nb.store.index import DriftReport, Hit, IndexRow, RetrievalIndex, broken, scrub
from synapse_nb.store.index.audit import audit, merged
from synapse_nb.store.index.follower import Follower
from synapse_nb.store.index.held import held as kept_text
from synapse_nb.store.index.maintenance import own_index
from synapse_nb.store.index.queue import Queues, Steps, deadline
from synapse_nb.store.index.scrub import RECALL_LOCK_WAIT, Owed
from synapse_nb.store.index.threads import neighbours

if TYPE_CHECKING:
    from synapse_nb.store.base import Candidate, VaultStore
    from synapse_nb.store.embedders import Embedder
    from synapse_nb.store.index.dense import DenseIndex, DenseRow

__all__ = ["PREV_CHARS", "REPLY", "Follower", "VaultIndex"]

#: Outbox entries applied per round.
BATCH = 5000
#: Joins a record's text and the previous record's in its semantic document.
REPLY = " | replying to: "
#: Most characters of the previous record's text a semantic document ends with (the record's own text leads its
#: vector). The longest previous turn of LoCoMo is 537 characters: its documents, and figures, are unchanged.
PREV_CHARS = 600
#: Seconds a sync spends on agents' unverified records once people's are embedded (review 24): the rest wait for the
#: next sync, so no agent's backlog holds a person's recall.
AGENT_EMBED_S = 2.0
_EVERY = 2**62  # "every pending entry" for Outbox.pending


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
    require_human : refuses an action unless a person does it (``Context.require_human``): :meth:`rebuild` and
        ``check(repair=True)`` ask it (review 28).
    """

    def __init__(self, store: VaultStore, folder: Path, *, mind: str, now: Callable[[], str],
                 require_human: Callable[[str], None] | None = None) -> None:
        self._store = store
        self._require_human = require_human
        self._folder = folder
        self._mind = mind
        self._now = now
        self._idx: RetrievalIndex | None = None
        self._dense: DenseIndex | None = None
        self._queues = Queues(self.path)
        self._owed = Owed(self.path)
        #: what the last deletion's scrub (:meth:`forget`, :meth:`forget_later`) left in the index folder: None when
        #: it ran (or there was nothing to scrub), else :func:`~synapse_nb.store.index.scrub.owed_note` (review 34)
        self.scrub_behind: str | None = None
        self._steps: Steps | None = None  # keeps the embedding rate measured by the last catch-up
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
        """Release the open LanceDB tables (they are opened again on next use)."""
        if self._idx is not None:
            self._idx.close()
            self._idx = None
        if self._dense is not None:
            self._dense.close()

    def use_semantic(self, embedder: Embedder) -> DenseIndex:
        """Keep the semantic channel's vectors of ``embedder`` in this index from now on (built on the next
        :meth:`sync` when missing); returns its table."""
        from synapse_nb.store.index.dense import DenseIndex, table_name

        with self._thread_lock:
            if self._dense is None or self._dense.name != table_name(embedder):
                if self._dense is not None:
                    self._dense.close()
                self._dense = DenseIndex(self.path, embedder)
                self._dense.readonly = self._store.readonly
                self._steps = None  # another model, another rate
            return self._dense

    @property
    def dense(self) -> DenseIndex | None:
        """The semantic table kept up to date (None until :meth:`use_semantic`)."""
        return self._dense

    def _dense_rows(self, cands: Sequence[Candidate],
                    whole: dict[str, dict[str, str]] | None = None) -> list[DenseRow]:
        """The semantic documents of these candidates: text, then :data:`REPLY` and the first :data:`PREV_CHARS`
        characters of the previous record's text (:func:`~synapse_nb.store.index.threads.neighbours`)."""
        from synapse_nb.store.index.dense import DenseRow

        prev, _, agents = neighbours(self._store.recall, cands, whole)
        texts = {c.id: c.text for c in cands}
        need = sorted(set(prev.values()) - set(texts))
        if need:
            texts.update((c.id, c.text) for c in self._store.outbox.docs(need))
        out = []
        for c in cands:
            p = prev.get(c.id)
            doc = c.text if p is None or p not in texts else c.text + REPLY + texts[p][:PREV_CHARS]
            out.append(DenseRow(c.id, c.kind, c.mind, doc, digest([doc, c.expires_at]), c.expires_at,
                                p if p in texts else None, c.id in agents))
        return out

    def _dense_plan(self, dense: DenseIndex, ids: Sequence[str]) -> tuple[list[DenseRow], list[str]]:
        """(the rows to write, the ids to delete) for changed records: their rows, with the records whose document
        holds one of them (the rows whose previous record changed or went, the records now right after one)."""
        cands = self._store.outbox.docs(ids)
        gone = sorted(set(ids) - {c.id for c in cands})
        _, after, _ = neighbours(self._store.recall, cands, None)
        held = dense.followers(ids)
        more = sorted((after | held) - set(ids))
        cands = cands + (self._store.outbox.docs(more) if more else [])
        return (self._dense_rows(cands) if cands else []), gone

    def _build_dense(self, dense: DenseIndex, *, whole: bool = True) -> None:
        """Build ``dense`` from the store (the other semantic tables go, with their queues). Its queue says "compare
        everything" until the build ends, so a build cut short is finished by the next sync, never left half full.
        Not ``whole``: the table starts empty and its queue fills it in steps (:meth:`_catch_up`)."""
        if self._store.readonly:
            dense.rebuild(self._all_dense_rows())
            return
        self._queues.write(dense.name, None)
        dense.rebuild(self._all_dense_rows() if whole else ())
        for name in self._queues.names():
            if name != dense.name or whole:
                self._queues.write(name, set())

    def _drift(self, dense: DenseIndex) -> set[str]:
        """The ids whose row in ``dense`` is missing, stale or extra."""
        rep = dense.check({r.id: r.digest for r in self._all_dense_rows()})
        return {*rep.missing, *rep.stale, *rep.extra}

    def _catch_up(self, dense: DenseIndex, also: Sequence[str] = ()) -> bool:
        """Apply ``dense``'s queue (and the ids ``also``) in steps (:class:`~synapse_nb.store.index.queue.Steps`),
        the queue rewritten after each; stop at the process's deadline (``queue.DEADLINE_ENV``). True when the table
        took its whole queue."""
        queues = self._queues
        queued = queues.read(dense.name)
        everything = queued is None  # kept as it is until done: the rows written are the progress
        if queued is None:
            queued = self._drift(dense)
        keep = not self._store.readonly and not everything
        left = sorted(queued | set(also))
        rate = self._steps.rate if self._steps is not None else None
        steps = self._steps = Steps(deadline(), rate)
        # people's records first, then agents' unverified ones for AGENT_EMBED_S from the start of their phase
        # (review 24: the queue went in id order, so 40 agent checkpoints came before a person's decision in every
        # hook, and a person's recall waited 27 s for an agent's backlog; review 67: counted from the call's start, a
        # cold process's planning used it up and no agent row was ever embedded); the rest wait for the next call
        later: list[str] = []
        for phase in ("people", "agents"):
            if phase == "agents":
                left, agents_by = sorted(later), time.time() + AGENT_EMBED_S
                dl = deadline()
                steps = self._steps = Steps(agents_by if dl is None else min(dl, agents_by), steps.rate)
            while left:
                rows, gone = self._dense_plan(dense, left[:BATCH])
                rest = left[BATCH:]
                if gone:
                    dense.delete(gone)
                if phase == "people":
                    later.extend(r.id for r in rows if r.agent)
                    rows = [r for r in rows if not r.agent]
                waiting = set(later) if phase == "people" else set()  # (the agents' phase: ``rest`` holds them)
                while rows:
                    n = steps.take(rows)
                    if n == 0:  # the deadline: recall answers from the vectors already there
                        queues.applied(dense.name, {r.id for r in rows} | set(rest) | waiting)
                        if keep:
                            queues.write(dense.name, {r.id for r in rows} | set(rest) | waiting)
                        return False
                    start = time.monotonic()
                    dense.upsert(rows[:n])
                    steps.took(rows[:n], time.monotonic() - start)
                    rows = rows[n:]
                    if (rows or rest or waiting) and keep:
                        queues.write(dense.name, {r.id for r in rows} | set(rest) | waiting)
                left = rest
        queues.applied(dense.name, set())
        if not self._store.readonly:
            queues.write(dense.name, set())
            if everything:  # the sketch's projection is made again from the whole table (from 50,000 rows)
                (self.path / f"{dense.name}.proj").unlink(missing_ok=True)
                dense.close()
        return True

    def _apply_now(self, dense: DenseIndex, ids: Sequence[str]) -> bool:
        """Apply changed records to ``dense`` before the outbox forgets them, as one step, when that is what its
        queue would do: no queue waiting, no deadline, and the rows' embedding fits a step at the rate measured
        (the common case, a few writes between two recalls: no queue file written). False: nothing done."""
        if deadline() is not None or self._queues.file(dense.name).exists():
            return False
        rows, gone = self._dense_plan(dense, ids)
        steps = self._steps = Steps(None, self._steps.rate if self._steps is not None else None)
        if steps.take(rows) < len(rows):
            return False
        if gone:
            dense.delete(gone)
        if rows:
            start = time.monotonic()
            dense.upsert(rows)
            steps.took(rows, time.monotonic() - start)
        return True

    def _all_dense_rows(self) -> Iterator[DenseRow]:
        whole: dict[str, dict[str, str]] = {}
        chunk: list[Candidate] = []
        for c in self._store.outbox.all_docs():
            chunk.append(c)
            if len(chunk) >= BATCH:
                yield from self._dense_rows(chunk, whole)
                chunk = []
        if chunk:
            yield from self._dense_rows(chunk, whole)

    def _rows_for(self, ids: Iterable[str]) -> list[IndexRow]:
        return [index_row(c) for c in self._store.outbox.docs(list(ids))]

    def _all_rows(self) -> Iterator[IndexRow]:
        """Every index row, streamed (a 1M-record vault is never held in memory at once)."""
        return (index_row(c) for c in self._store.outbox.all_docs())

    def _expected(self) -> dict[str, str]:
        return {r.id: r.digest for r in self._all_rows()}

    @contextlib.contextmanager
    def _mutating(self, wait: float | None = None) -> Iterator[bool]:
        """Hold the vault-wide index lock: one process at a time reads the outbox and writes the index.

        Without it, two syncs (or a rebuild and a sync) interleave read-outbox / read-rows / write-index
        and an older snapshot can overwrite a newer one with the outbox already emptied. With ``wait``, gives up
        after that many seconds (yields False: nothing may be written then).
        """
        if not self._thread_lock.acquire(timeout=-1 if wait is None else wait):
            yield False
            return
        try:
            if self._store.readonly:
                yield True
                return
            self._folder.mkdir(exist_ok=True)  # never its parents
            with held(self._folder / "index.lock", wait, mode=0o644) as fd:  # never a FIFO's hang (review 79)
                yield fd is not None
        finally:
            self._thread_lock.release()

    def _idle(self) -> bool:
        dense = self._dense
        own_index(self.path)  # a symlink or a closed folder: IndexError_ (BM25 alone), never "unexpected"
        return (not self._store.outbox.has_pending() and self.raw.exists()
                and (dense is None or (dense.exists() and not self._queues.file(dense.name).exists()))
                and not self._scrubs_feed(False))  # a team machine runs a person's owed scrub

    def sync(self) -> int:
        """Apply pending changes from the outbox to the index; returns how many records were applied."""
        if self._idle():
            return 0  # nothing pending: no lock needed
        with self._mutating():
            return self._sync_locked()

    def sync_within(self, wait: float = RECALL_LOCK_WAIT) -> bool:
        """:meth:`sync`, waiting at most ``wait`` seconds for the index lock (review 28: a person's recall waited
        seconds behind an agent's rebuilds and deletions). False: another process held the lock all that time and
        nothing was applied; the index answers as it stands (see :mod:`synapse_nb.store.index.scrub`)."""
        if self._idle():
            return True
        with self._mutating(wait) as held:
            if held:
                self._sync_locked()
            elif self._dense is not None:  # what its queue holds now is read from its file (:meth:`waiting`)
                self._queues.applied(self._dense.name, None)
            return held

    def waiting(self) -> frozenset[str] | None:
        """The ids the semantic table's queue holds (None: not known, "compare everything"), as the last sync left
        them: recall leaves agents' rows out of the channel while one of them waits (review 67)."""
        return self._queues.left(self._dense.name, readonly=self._store.readonly) if self._dense else frozenset()

    def _sync_locked(self) -> int:
        store = self._store
        if not self.raw.exists():
            self._rebuild_locked(semantic=False)
        dense = self._dense
        if dense is not None and not dense.exists():  # under a deadline, built in steps by the catch-up below
            self._build_dense(dense, whole=deadline() is None)
        applied, deleted = 0, False
        while True:
            pending = store.outbox.pending(BATCH)
            if not pending:
                break
            ids = [rid for rid, _ in pending]
            rows = self._rows_for(ids)
            gone = sorted(set(ids) - {r.id for r in rows})
            if gone and self._scrubs_feed(None):  # owed before it is applied: a sync killed meanwhile leaves it owed
                self._owed.mark(person=not scrub.by_agent(store, gone))
                deleted = True
            if rows:
                self.raw.upsert(rows)
            if gone:
                self.raw.delete(gone)  # LanceDB's soft delete: the text stays in the files until the scrub below
            if store.readonly:  # nothing is forgotten: the semantic table applies the outbox as it is, every time
                if dense is not None:
                    self._catch_up(dense, also=ids)
                return applied + len(ids)
            now = dense is not None and self._apply_now(dense, ids)
            self._queues.hold(ids.copy, skip=dense.name if now and dense is not None else None)
            store.outbox.ack(pending)
            applied += len(ids)
        if dense is not None:
            self._catch_up(dense)
        if self._scrubs_feed(deleted):  # another machine's deletion: scrubbed here (review 91)
            self._scrub_locked([])
        return applied

    def _scrubs_feed(self, deleted: bool | None) -> bool:
        """Whether this sync scrubs (None: marks owed) the deletions it applies: a team vault's, whose change feed
        brings other machines' deletions, which no deleting call scrubbed here (review 91), when
        :func:`~synapse_nb.store.index.scrub.at_sync` says so. A local vault's deletions are its deleting calls' to
        scrub (owed: a person's next open, deletion or repair; a recall stays fast)."""
        if self._store.readonly or not getattr(self._store.outbox, "shared", False):
            return False
        return deleted is None or scrub.at_sync(self._owed, deleted)

    def forget(self, ids: Sequence[str], *, wait: float = scrub.PERSON_LOCK_WAIT) -> int:
        """Leave no trace of deleted records in the index folder, in the deleting call (issue 30): a person's
        deletion, purge or prune, and the scrub an agent's deletions left owed (:meth:`forget_later`).

        LanceDB only marks a deleted row deleted: its text stays in the fragment's data file, and every earlier
        version of a table keeps its own files, until they are rewritten and cleaned up (rewriting fragments with
        deletions needs the ``pylance`` package, which the index does not depend on). So: the records table is
        rebuilt from the store, every other table (the semantic tables, per embedder) is rewritten with the rows of
        records still in the store (``ids`` and every deletion its queue has not applied yet go), and every older
        version of every table is dropped. A whole-index rewrite: deletions in a vault with a large index cost
        seconds. Returns how many tables were rewritten; nothing without an index (or through a symlink).

        Marked owed before it waits for the lock, for at most ``scrub.PERSON_LOCK_WAIT`` (review 32): held longer
        by another process, or this one killed meanwhile, the rewrite stays owed (with a warning) for the next
        deletion, purge or prune or a person's ``index check --repair`` or ``index rebuild``; :attr:`scrub_behind`
        says which (review 34: a purge said "scrubbed" either way). The outbox's acknowledgement is a write to the
        vault's database: another process holding its write lock fails it, not the rewrite (the outbox is applied
        again later); an error that stops the rewrite leaves the marker owed and :attr:`scrub_behind` saying so,
        never settled for what was not done (review 35)."""
        self.scrub_behind = None
        if not own_folder(self.path) or not self.path.is_dir() or self._store.readonly:  # review 81
            return 0
        own_index(self.path)  # a closed folder: StoreError, the deletion's note names it (review 81)
        self._owed.mark()  # cleared by settle() below, once the rewrite ran
        with self._mutating(wait) as held:  # at most ``wait`` s (a person's open: review 89)
            if not held:
                scrub.warn_owed(self.path, wait)
                self.scrub_behind = scrub.owed_note(self.path, wait)
                return 0
            return self._scrub_locked(ids)

    def _scrub_locked(self, ids: Sequence[str], drop: Mapping[str, Iterable[str]] | None = None) -> int:
        """:meth:`forget`'s rewrite, under the index lock; ``drop``: per semantic table, the ids of rows to leave out
        and queue (:mod:`~synapse_nb.store.index.audit`: the next recall with the channel embeds them again)."""
        owed = self._owed.size()
        self.close()  # handles opened on old versions would keep their files
        try:
            self._rebuild_locked(semantic=False, ack=False)  # the semantic tables take the queued changes
        except StoreError as exc:
            self.scrub_behind = (f"the index rewrite stopped ({exc}): the index folder {self.path} still holds "
                                 "the deleted text until the owed rewrite runs (the next deletion, purge or "
                                 "prune, or `synapse-nb index check --repair`)")
            return 0
        rewritten = 1 + scrub.rewrite(self.path, self.raw._table_dir().stem, ids, drop or {}, self._queues)
        self._owed.settle(owed)
        return rewritten

    def forget_later(self, ids: Sequence[str]) -> int:
        """An agent's deletion of ``ids`` (review 28): the whole-index scrub (:meth:`forget`) is left owed, unless
        the oldest owed one is :data:`~synapse_nb.store.index.scrub.AGENT_SCRUB_EVERY` old, when it runs now. The
        records are gone from the store already (recall never answers them) and the next sync marks their index
        rows deleted; their text stays in the index folder's files until the scrub. Returns what :meth:`forget`
        does (0 when left owed, :attr:`scrub_behind` saying so)."""
        self.scrub_behind = None
        if not own_folder(self.path) or not self.path.is_dir() or self._store.readonly:  # review 81
            return 0
        self._owed.mark()  # appended: the first line, the oldest owed deletion, decides
        if self._owed.due():
            return self.forget(ids)
        self.scrub_behind = f"the index folder {self.path} holds the deleted text until the owed rewrite runs"
        return 0

    @property
    def scrub_owed_since(self) -> float | None:
        """When the oldest deletion whose whole-index scrub is owed happened (seconds since the epoch), or None."""
        return self._owed.since()

    def rebuild(self, *, progress: bool = False) -> int:
        """Drop the index and rebuild it from the store; returns the number of rows written. A person's maintenance
        (review 28): refused for the agent actor and in an agent's environment. A semantic table of a model this
        process has not loaded is removed (review 56: :func:`~synapse_nb.store.index.broken.drop_every`); the next
        recall with the channel builds it from SQLite, re-embedding the vault."""
        self._person_only("rebuild the retrieval index")
        return self._rebuild(progress=progress, every=True)

    def _rebuild(self, *, progress: bool = False, every: bool) -> int:
        """:meth:`rebuild`; not ``every`` (a repair that found no records table): only the semantic tables that
        cannot be read go (a readable one is kept: rebuilding it would re-embed the vault)."""
        with self._mutating(scrub.UPKEEP_LOCK_WAIT) as held:
            if not held:
                raise scrub.lock_busy(self.path, "rebuild the retrieval index")
            own_index(self.path)  # a closed folder: one line naming it (review 81)
            if every and self._dense is None:  # the loaded model's table is rebuilt below, every other one removed
                broken.drop_every(self.path)
            elif not every:
                broken.drop(self.path, self._dense)
                broken.drop_projections(self.path)
            scrub.drop_rank_files(self._store.recall.rank_cache_dir(), vault=self._folder)
            n = self._rebuild_locked(progress=progress)
        self._scrub_owed()
        return n

    def _scrub_owed(self) -> None:
        """A person's upkeep runs the whole-index scrub a deletion left owed (review 32: the warning names it)."""
        if self._owed.since() is not None:
            self.forget([])

    def _person_only(self, action: str) -> None:
        """Refused but for a person; then a symlink or a file at the index or cache folder is removed (review 81)."""
        try:
            if self._require_human is not None:
                self._require_human(action)
        except PermissionDeniedError as exc:
            raise PermissionDeniedError(
                f"{exc}. Rebuilding or repairing the index is a person's maintenance: recall still answers from the "
                f"vault's records (BM25 over its SQLite file) while the index is stale or broken; tell a person to "
                f"run `synapse-nb index rebuild` (or `synapse-nb index check --repair`) in their own terminal"
            ) from None
        if not self._store.readonly:
            scrub.sweep(self._folder)

    def _rebuild_locked(self, *, progress: bool = False, semantic: bool = True, ack: bool = True) -> int:
        """Rebuild ``records`` (and with ``semantic`` the loaded semantic table) from the store, then forget the
        outbox up to where the rebuild read it: what a semantic table not rebuilt here has not taken goes to its
        queue first (review 21: a delete in a process without the channel acknowledged it all). Without ``ack`` (a
        scrub) an acknowledgement the vault's write lock refused is left for later: the outbox is applied again."""
        store = self._store
        mark = store.outbox.high_water()
        n = self.raw.rebuild(self._all_rows(), total=store.recall.count(), progress=progress)
        if semantic and self._dense is not None:
            self._build_dense(self._dense)
        if not store.readonly:
            self._queues.hold(lambda: [rid for rid, seq in store.outbox.pending(_EVERY) if seq <= mark],
                              skip=self._dense.name if semantic and self._dense is not None else None)
            try:
                store.outbox.ack_through(mark)
            except StoreError:
                if ack:
                    raise
        return n

    def check(self, *, repair: bool = False) -> DriftReport:
        """Compare the index with the store (rows missing, stale or extra); with ``repair``, fix the drift.

        An index never built (a new vault: it is built on first use, or by :meth:`rebuild`) is not drift:
        the report has ``built=False`` and is ``ok``; with ``repair`` the index is built now. ``broken`` names the
        semantic tables that cannot be read; ``repair`` removes them (:mod:`~synapse_nb.store.index.broken`).
        """
        if repair:
            self._person_only("repair the retrieval index")
        own_index(self.path)  # a closed folder: one line naming it (review 81)
        if not self.raw.exists():
            bad = tuple(broken.unreadable(self.path))
            if repair:
                self._rebuild(every=False)  # removes them, keeps the readable ones
            return DriftReport(built=False, broken=bad)
        if repair:
            with self._mutating(scrub.UPKEEP_LOCK_WAIT) as held:
                if not held:
                    raise scrub.lock_busy(self.path, "repair the retrieval index")
                tables, unread = audit(self.path, self._all_dense_rows())  # each semantic table read once
                if self._dense is not None and self._dense.name in unread:
                    self._dense.close()
                bad, self.scrub_behind = broken.remove(self.path, unread), None
                broken.drop_projections(self.path)  # made again from the table on the next search (review 58)
                scrub.drop_rank_files(self._store.recall.rank_cache_dir(), vault=self._folder)
                gone = kept_text(self.path, expected := self._expected())  # before the rewrite drops them
                report = replace(self.raw.repair(self._rows_for, expected), held=gone)
                # always the whole-index rewrite (review 56: an agent deleted scrub.owed, the marker, and a person's
                # repair left a purged text in the index folder); it drops the semantic rows found stale or extra
                self._scrub_locked([], {n: {*r.stale, *r.extra, *r.missing} for n, r in tables.items()})
            if self.scrub_behind is not None:
                raise StoreError(f"cannot repair the retrieval index: {self.scrub_behind}")
            return merged(report, bad, tables)
        tables, unread = audit(self.path, self._all_dense_rows())
        report = self.raw.check(expected := self._expected())  # older versions too (review 91)
        return merged(replace(report, held=kept_text(self.path, expected)), tuple(sorted(unread)), tables)

    def search(self, query: str, *, k: int = 200, kinds: Sequence[str] | None = None,
               mode: Any = "hybrid") -> list[Hit]:
        """Candidate hits for ``query`` in this mind (after applying the outbox)."""
        self.sync()
        return self.raw.search(query, mind=self._mind, kinds=kinds, now=self._now(), k=k, mode=mode)

    def follow(self, *, timeout: float = 30.0) -> Follower:
        """Keep this index current in the background, without polling: a daemon thread syncs, then waits on the
        store's change wake-up (a team vault: ``LISTEN`` for the ``NOTIFY`` every committing write sends) or
        ``timeout`` seconds, and syncs again. Every sync still reads the change feed with the snapshot rule, so
        a missed wake-up costs at most ``timeout``. Stop it with ``follower.stop()`` (or use it as a context
        manager). A team machine that follows keeps its offline copy fresh.

        >>> with v.index.follow() as f:      # doctest: +SKIP
        ...     ...                          # other machines' writes reach this index within milliseconds
        """
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0.05 <= timeout <= 3600:
            raise ValidationError(f"timeout must be a number of seconds from 0.05 to 3600, got {timeout!r}")
        return Follower(self.sync, self._store.outbox, float(timeout))
