"""This machine's offline copy of a team vault, kept current in normal use (issue 29, D6).

The copy is ``copy.db`` in the machine's cache folder of the login (``.synapse/team/<login>@<server>-<project>/``):
every candidate the login sees (its kind, id, mind, text and expiry) in a SQLite table with an FTS5 index, and its
feed position (``copy-feed.json``). One copy per login: what a login reads is its own (its minds), so a copy two
logins synced restarted from nothing at each switch and was stamped fresh by a login that missed other minds.
``open_vault(url, offline=True)``, ``synapse-nb recall`` and ``team search-local`` read it when the server is away
(:func:`search_copy`; the LanceDB index in ``index/``, which ``index rebuild`` and index searches keep, is read when
there is no ``copy.db``). Before, only an index search, ``index rebuild`` or a follower advanced a copy, so a
machine that only ever recalled had none when the server died. SQLite, not the LanceDB index: keeping LanceDB
current cost every CLI command 2 s at exit (importing lancedb alone takes 1.4 s) and a burst of writes 2.5x.

A :class:`CopyKeeper` belongs to a store handle (and its siblings). Every operation that reached the server pokes
it (:meth:`CopyKeeper.poke`: setting an event, nothing else); a daemon thread (at a lower CPU priority) then, once
the operations pause (:data:`QUIET_SECONDS`, at most :data:`MAX_LAG_SECONDS` after the first it has not applied):

- does nothing when the data version the operation read (a recall's snapshot reads it anyway) is the one the copy
  was synced at and nothing was written since: the common case of repeated reads costs no round trip;
- else reads the data version (one statement) and, when it moved, applies the change feed since the copy's
  position (only what changed) to ``copy.db``; with no position (the first time, or a lost one), and when there was
  no copy before the sync (a person deleted it, or it was set aside: its old position would bring only what changed
  since, review 85), the copy is replaced by every candidate there is, so a record deleted meanwhile (a purge) never
  stays in it; a deletion the feed brings (any machine's: a purge too) is scrubbed in the same sync (:func:`scrub`,
  owed in :data:`COPY_SCRUB` until done; review 91: the rows went, their words stayed in the FTS segments). A copy
  that is not the package's (:mod:`~synapse_nb.store.postgres.copyfile`: another schema,
  malformed, a statement past its deadline) is set aside with its feed position and rebuilt in the same sync.

It works on a sibling handle of its own (same pool, its own round-trip count), so the answers and the round
trips of the caller's operations are unchanged. At exit (and on ``close``) pending work is finished, up to
:data:`FLUSH_SECONDS`, so a CLI command leaves the copy current too. Errors (the server went away meanwhile)
are logged and the next poke tries again: the copy is a cache.

A sync takes ``copy.lock`` (one sync of a folder at a time) without blocking, for at most :data:`LOCK_SECONDS`:
any process of the same Unix user (an agent's too) can hold it forever, and a sync that waited for it held every
command at exit and left a purge's text in the copy while the purge said it was scrubbed (review 33). Not obtained,
the sync is skipped (the copy stays as it was; the next one catches up) and :attr:`CopyKeeper.behind` says why.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb._times import utc_iso
from synapse_nb.errors import StoreError
from synapse_nb.models import KIND_NAMES
from synapse_nb.store.postgres.cachedir import open_own, read_own_text, sweep
from synapse_nb.store.postgres.copyfile import (
    COPY_DB,
    COPY_FEED,
    CopyDamaged,
    damaged,
    drop_damaged,
    open_copy,
    set_copy_aside,
)
from synapse_nb.store.postgres.pool import log
from synapse_nb.text import fts_query_terms

if TYPE_CHECKING:
    from synapse_nb.store.postgres import PgStore
    from synapse_nb.store.records import Candidate

__all__ = ["COPY_DB", "COPY_FEED", "COPY_SCRUB", "FLUSH_SECONDS", "LOCK_SECONDS", "MAX_LAG_SECONDS", "QUIET_SECONDS",
           "SCRUB_BUSY_MS", "SETTLE_SECONDS", "CopyKeeper",
           "apply", "behind_note", "lock_held", "reader_note", "scrub", "scrub_owed", "search_copy_db",
           "synced_at"]

COPY_LOCK = "copy.lock"
#: Made before a sync applies a deletion from the change feed (another machine's purge too), removed once
#: :func:`scrub` left no deleted text in the copy's files: a sync killed between the two leaves the scrub owed, and
#: the next sync runs it (review 91: a sync deleted the rows and kept the text in the FTS segments and free pages).
COPY_SCRUB = "copy-scrub.owed"

#: How long a poke waits for the rest of its operation (more pokes) before the keeper looks at the version.
SETTLE_SECONDS = 0.02
#: A sync waits until operations have paused this long (a burst of writes costs one sync, not one per write: each
#: sync is a LanceDB write, which made a burst of writes 2-3x slower)...
QUIET_SECONDS = 0.5
#: ... but never longer than this after the first operation it has not applied (a sync in a burst of writes in each of
#: 8 processes cost about a quarter of the throughput at 5 s); closing the handle or exiting syncs at once.
MAX_LAG_SECONDS = 30.0
#: How long closing a handle (or the interpreter exiting) waits for the copy's pending sync.
FLUSH_SECONDS = 10.0
#: How long a sync tries for ``copy.lock`` before it skips (another process holds it: another sync, or anything else).
LOCK_SECONDS = 2.0
#: Milliseconds a scrub waits for another process's read of ``copy.db`` to end (review 34: it waited the 30 s busy
#: timeout, then its checkpoint answered busy and the deleted text stayed in the file, unsaid).
SCRUB_BUSY_MS = 2000
#: A person's open runs a scrub a sync left owed (:meth:`CopyKeeper.run_owed`) within the open's budget: it tries
#: ``copy.lock`` this long (a local vault's open waits as long for its index lock: ``scrub.RECALL_LOCK_WAIT``), and
#: another process's read of ``copy.db`` :data:`SCRUB_BUSY_MS`, as every scrub does.
OPEN_WAIT = 0.25

_LIVE: weakref.WeakSet[CopyKeeper] = weakref.WeakSet()


class CopyKeeper:
    def __init__(self, store: PgStore) -> None:
        self._owner = weakref.ref(store)
        self._store: PgStore | None = None  # the keeper's own sibling handle, made on first use
        self._index: Any = None
        self._poked = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._hurry = threading.Event()  # a flush: sync now, not after a pause
        self._last_poke = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        #: the data version the copy was last synced at; the last version an operation read; written since?
        self.copy_version: int | None = None
        self.seen_version: int | None = None
        self.wrote = True
        self.syncs = 0
        #: why the last sync left the copy behind the server (None: it did not)
        self.behind: str | None = None
        _LIVE.add(self)

    def poke(self) -> None:
        """An operation reached the server: bring the copy up to it in the background."""
        if self._stopped:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="synapse-offline-copy", daemon=True)
                self._thread.start()
        self._last_poke = time.monotonic()
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

    def run_owed(self, wait: float = OPEN_WAIT) -> str | None:
        """At a person's writable open of the team vault (as a local vault's open runs its owed index scrub:
        ``purge.run_owed``): a deletion's scrub a sync left owed (:data:`COPY_SCRUB`: the sync killed, or kept from
        finishing) runs now, in the opening call, after the change feed is applied (a deletion the killed sync had not
        applied yet is applied first), trying ``copy.lock`` ``wait`` s at most (the sync's own :data:`LOCK_SECONDS`).
        Returns None when nothing is owed any more, else what the warning it logs says (the next sync runs it). Never
        fails the open."""
        owner = self._owner()
        if owner is None or owner.folder is None or not scrub_owed(owner.folder):
            return None
        try:
            self._sync(wait)
        except Exception as exc:  # noqa: BLE001 - a cache: the next sync runs it
            self.behind = f"its sync failed: {exc}"
        if not scrub_owed(owner.folder):
            return None
        note = behind_note(owner.folder, self.behind or "another process's open read of it kept the scrub from "
                           "finishing")
        # said where a person reads it (stderr, as the index's owed rewrite is: purge.run_owed), not on the pool's log
        logging.getLogger("synapse_nb.copy").warning(
            "the scrub of a deletion this machine's offline copy owed did not finish at this open: %s", note)
        return note

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
            first = time.monotonic()
            time.sleep(SETTLE_SECONDS)
            while not self._hurry.is_set():  # wait for a pause in the operations, at most MAX_LAG_SECONDS
                quiet_for = time.monotonic() - self._last_poke
                if quiet_for >= QUIET_SECONDS or time.monotonic() - first >= MAX_LAG_SECONDS:
                    break
                self._hurry.wait(min(QUIET_SECONDS - quiet_for, MAX_LAG_SECONDS - (time.monotonic() - first)))
            self._poked.clear()
            try:
                self._sync()
            except Exception as exc:  # noqa: BLE001 - a cache: the next poke tries again
                self.behind = f"its sync failed: {exc}"
                log.info("this machine's offline copy of the team vault was not brought up to date: %s", exc)
            if not self._poked.is_set():
                self._idle.set()

    def _sync(self, wait: float | None = None) -> None:
        """Bring the copy up to the server; ``wait``: how long ``copy.lock`` is tried (default :data:`LOCK_SECONDS`)."""
        self.behind = None
        if not self.wrote and self.seen_version is not None and self.seen_version == self.copy_version:
            return  # the operation read the version the copy is at, and nothing was written since
        owner = self._owner()
        if owner is None or owner.folder is None:
            return
        if self._store is None:
            from synapse_nb.store.postgres.queries import FeedOutbox

            self._store = owner.sibling_for_copy()
            self._index = FeedOutbox(self._store, owner.folder, position=COPY_FEED, name="#copy")
        self.wrote = False
        version = self._store.data_version()[0]
        if version == self.copy_version and (owner.folder / COPY_DB).is_file() and not scrub_owed(owner.folder):
            return
        with _locked(owner.folder, wait) as got:  # one sync of a folder at a time: never a replace after a newer one
            if not got:  # held past LOCK_SECONDS: skip; the copy stays as it was and the next poke tries again
                self.wrote = True
                self.behind = f"another process holds {owner.folder / COPY_LOCK}"
                log.info("this machine's offline copy of the team vault was not synced: %s", self.behind)
                return
            for attempt in (1, 2):
                try:
                    self._fill(owner.folder)
                    break
                except (sqlite3.DatabaseError, CopyDamaged) as exc:
                    reason = damaged(exc)
                    if reason is None or attempt == 2:
                        raise
                    # not a copy to keep (review 85: a crafted file hung every read, a truncated one failed every
                    # sync, silently): set aside with its feed position, and rebuilt whole at once
                    aside = set_copy_aside(owner.folder, reason)
                    log.warning("this machine's offline copy of the team vault was damaged (%s): set aside as %s and "
                                "rebuilt from the server", reason, aside.name if aside else "nothing")
        self.copy_version = version
        self.syncs += 1

    def _fill(self, folder: Path) -> None:
        """Apply the change feed since the copy's position to it, under ``copy.lock``. With no position (the first
        sync, or a lost one), or no copy before this sync (none, one a person deleted or one set aside, whose feed
        position would otherwise bring only what changed since: review 85), the feed answers every candidate this
        login sees, and the copy becomes exactly that, so what was deleted meanwhile (a purge) leaves it too."""
        con, made = _writer(folder)  # made now: there was no copy (or one with no schema) before this sync
        con.close()
        if made:
            with contextlib.suppress(OSError):
                os.unlink(folder / COPY_FEED)  # the position of a copy that is gone: none
        replace = made or not self._index.position.get("cursor")
        while True:
            pending = self._index.pending(5000)  # from no position: every id at once (FeedOutbox ignores limit)
            if not pending and not replace:
                break
            ids = [rid for rid, _ in pending]
            docs = self._index.docs(ids) if ids else []
            gone = set(ids) - {d.id for d in docs}
            if replace and not made:  # every candidate there is: the copy's rows of any other id are deleted
                gone |= _copy_ids(folder) - set(ids)
            if (replace and not made) or gone:  # owed before the deletion commits
                os.close(open_own(folder / COPY_SCRUB))
            if gone:  # the login's index folder holds their text too: its rewrite owed (a twenty-second pass)
                self._owe_index(folder, sorted(gone))
            apply(folder, docs, ids, replace=replace)
            self._index.ack(pending)
            if not pending:
                break
            replace = False
        if scrub_owed(folder):  # a deletion from the feed, any machine's (review 91): no text left in the copy's files
            note = scrub(folder)
            if note is None:
                with contextlib.suppress(OSError):
                    os.unlink(folder / COPY_SCRUB)
            else:  # owed still: the next sync runs it again
                log.warning("this machine's offline copy applied a deletion from the change feed, but %s", note)

    def _owe_index(self, folder: Path, gone: Sequence[str]) -> None:
        """Mark the whole-index scrub of ``gone`` (deletions this sync applies: any machine's, a purge too) owed in
        the login's index folder (``index/scrub.owed``), as the index's own sync does when it applies them: a
        person's line unless the agent deleted them all (:func:`~synapse_nb.store.index.scrub.by_agent`), so a
        person's next open rewrites the index (:func:`synapse_nb.purge.run_owed`). Before (review 97, F3) only the
        index's sync marked it, and ``memory list``, ``recall``, ``memory search`` and ``index check`` do not sync
        the index: another machine's purge kept its text in this machine's index folder through every open. Nothing
        without an index folder (nothing holds the text), never through a symlink."""
        from synapse_nb.own_files import own_folder
        from synapse_nb.store.index.scrub import Owed, by_agent

        index = folder / "index"
        if not (own_folder(index) and index.is_dir()):
            return
        try:
            Owed(index).mark(person=self._store is None or not by_agent(self._store, gone))
        except OSError as exc:
            log.warning("could not mark the index scrub of a deletion this machine's offline copy applied owed in %s "
                        "(%s); the index's next sync marks it", index, exc.strerror or exc)


def _copy_ids(folder: Path) -> set[str]:
    """The ids the copy holds now (a sync that replaces it whole deletes those the server no longer has)."""
    con, _ = _writer(folder)
    try:
        return {str(r[0]) for r in con.execute("SELECT id FROM docs")}
    finally:
        con.close()


@contextlib.contextmanager
def _locked(folder: Path, wait: float | None = None) -> Iterator[bool]:
    """An exclusive lock on the folder's copy while one process syncs it (POSIX ``flock``; none elsewhere): True,
    or False when another process held it for ``wait`` seconds (default :data:`LOCK_SECONDS`; never longer)."""
    try:
        import fcntl

        from synapse_nb.locks import flock_within
    except ImportError:  # pragma: no cover - not POSIX
        yield True
        return
    with os.fdopen(open_own(folder / COPY_LOCK), "a+b") as fh:  # this user's regular file, checked once open
        if not flock_within(fh, LOCK_SECONDS if wait is None else wait):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def lock_held(folder: Path) -> bool:
    """Whether another process holds the folder's ``copy.lock`` now (its syncs are skipped while it does)."""
    if not (folder / COPY_LOCK).is_file():
        return False
    with _locked(folder, wait=0.0) as got:
        return not got


def behind_note(folder: Path, reason: str) -> str:
    """What a person reads when a deletion did not reach this machine's offline copy, and how to force it."""
    return (f"this machine's offline copy ({folder / COPY_DB}) was NOT scrubbed ({reason}): it still holds the "
            "record until its next sync (the next command once that is over); to remove it now, end the process "
            f"holding {folder / COPY_LOCK} (`fuser {folder / COPY_LOCK}` names it) or delete {COPY_DB}, "
            f"{COPY_DB}-wal, {COPY_DB}-shm and {COPY_FEED} in {folder} (the next command syncs the copy afresh)")


def _writer(folder: Path) -> tuple[sqlite3.Connection, bool]:
    """The copy, opened for a sync or a scrub, and whether it was made now (:func:`~synapse_nb.store.postgres.copyfile
    .open_copy`: this user's regular file, checked once open and after SQLite opened it by name, holding exactly the
    package's schema, with a deadline). The folder was claimed when the store's vault was opened
    (:func:`~synapse_nb.store.postgres.cachedir.claim_folder`: this user's 0700 folder, what another user put there
    set aside), so no other user can have put a ``-wal`` or ``-shm`` there since: it is not swept again per sync."""
    opened = open_copy(folder, write=True)
    if opened is None:  # pragma: no cover - a writer always gets a connection (or an error)
        raise CopyDamaged(f"{folder / COPY_DB} could not be opened")
    return opened


def scrub_owed(folder: Path) -> bool:
    """Whether a deletion the copy applied (or is applying) from the feed still owes its scrub (:data:`COPY_SCRUB`)."""
    return os.path.lexists(folder / COPY_SCRUB)


def apply(folder: Path, docs: Sequence[Candidate], ids: Sequence[str], *, replace: bool = False) -> None:
    """Write the current rows of ``ids`` into the copy (``docs``: those that still exist), in one transaction;
    ``replace``: ``ids`` are every candidate there is, and the copy's rows of any other id are deleted."""
    present = {d.id for d in docs}
    con, _ = _writer(folder)
    try:
        con.execute("BEGIN IMMEDIATE")
        if replace:
            keep = set(ids)
            for row in con.execute("SELECT rowid, text, id FROM docs").fetchall():
                if row[2] not in keep:
                    con.execute("INSERT INTO docs_fts(docs_fts, rowid, text) VALUES ('delete', ?, ?)", row[:2])
                    con.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
        for rid in ids:
            row = con.execute("SELECT rowid, text FROM docs WHERE id = ?", (rid,)).fetchone()
            if row is not None:
                con.execute("INSERT INTO docs_fts(docs_fts, rowid, text) VALUES ('delete', ?, ?)", row)
                con.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
        for d in docs:
            if d.id in present:
                cur = con.execute("INSERT INTO docs(id, kind, mind, text, updated_at, expires_at) VALUES (?,?,?,?,?,?)",
                                  (d.id, d.kind, d.mind, d.text, d.updated_at, d.expires_at))
                con.execute("INSERT INTO docs_fts(rowid, text) VALUES (?, ?)", (cur.lastrowid, d.text))
        con.execute("COMMIT")
    finally:
        con.close()


def reader_note(folder: Path) -> str:
    """What a person reads when another process's open read of ``copy.db`` kept a scrub from truncating its WAL."""
    db = folder / COPY_DB
    return (f"this machine's offline copy ({db}) was NOT scrubbed: another process has a read transaction open on "
            f"it (`fuser {db}` names it), so {COPY_DB} and {COPY_DB}-wal still hold the deleted text until that read "
            f"ends and the next deletion or purge scrubs the copy; to remove it now, end that process, or delete "
            f"{COPY_DB}, {COPY_DB}-wal, {COPY_DB}-shm and {COPY_FEED} in {folder} (the next command syncs it afresh)")


def scrub(folder: Path) -> str | None:
    """Leave no deleted text in ``copy.db``: merge its FTS5 index, rewrite the file (VACUUM drops freed pages) and
    truncate its WAL. Called after a deletion, once the copy has applied it. Returns None when done, else what
    :func:`reader_note` says: another process's read kept the WAL (its checkpoint answers "busy" as a row, not an
    error; review 34). A copy found damaged now, and every damaged one set aside before, still holds what it held:
    removed (:func:`~synapse_nb.store.postgres.copyfile.drop_damaged`; the next sync rebuilds the copy whole)."""
    drop_damaged(folder)
    if not (folder / COPY_DB).is_file():
        return None
    try:
        con, _ = _writer(folder)
        try:
            con.execute(f"PRAGMA busy_timeout = {int(SCRUB_BUSY_MS)}")
            con.execute("INSERT INTO docs_fts(docs_fts) VALUES ('optimize')")
            con.execute("VACUUM")
            busy, log_frames, done = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            con.close()
    except (sqlite3.DatabaseError, CopyDamaged) as exc:
        reason = damaged(exc)
        if reason is None:  # locked past the wait: the copy stays as it was
            return reader_note(folder)
        set_copy_aside(folder, reason)
        drop_damaged(folder)
        return None
    return reader_note(folder) if busy or log_frames != done else None


def synced_at(folder: Path, name: str = COPY_FEED) -> str | None:
    """When the copy last synced (UTC ISO, as :func:`synapse_nb._times.utc_iso` reads it), or None (no time
    recorded, or not one)."""
    try:
        value = json.loads(read_own_text(folder / name) or "").get("synced_at")  # another user's file: none
    except (OSError, ValueError, AttributeError):
        return None
    return utc_iso(value)


def search_copy_db(folder: Path, query: str, *, mind: str, now: str, k: int) -> list[tuple[str, str, str]]:
    """(kind, id, text) of the copy's best matches for ``query`` in ``mind`` (unexpired at ``now``), best first:
    any of the query's words (FTS5, BM25 order, ties by id); no word: the newest.

    The file is any process of this Unix user's to replace (review 85): one that is not a copy the package made
    (another schema, malformed, not a database, a read past its deadline) is set aside with its feed position and
    :class:`~synapse_nb.store.postgres.copyfile.CopyDamaged` raised saying where (the next sync rebuilds it whole);
    one another process holds locked past its wait is a :class:`~synapse_nb.errors.StoreError`."""
    words = fts_query_terms(query)
    sweep(folder, (COPY_DB, f"{COPY_DB}-wal", f"{COPY_DB}-shm"))  # never another user's copy (review 59)
    try:
        opened = open_copy(folder)
        if opened is None:
            return []
        con = opened[0]
        try:
            # only rows of a kind of the kinds registry: the package copies no other, and the file is editable by any
            # process of the person's Unix user (review 57: a kind holding a line break and a forged "[user ·
            # verified]" line, or terminal codes, was printed as it was); left out here, so they take none of the k
            # places
            kinds = ", ".join("?" * len(KIND_NAMES))
            alive = f"d.mind = ? AND (d.expires_at IS NULL OR d.expires_at > ?) AND d.kind IN ({kinds})"
            if words:
                rows = con.execute(
                    f"SELECT d.kind, d.id, d.text FROM docs_fts f JOIN docs d ON d.rowid = f.rowid "
                    f"WHERE docs_fts MATCH ? AND {alive} ORDER BY bm25(docs_fts), d.id LIMIT ?",
                    (" OR ".join(f'"{w}"' for w in dict.fromkeys(words)), mind, now, *KIND_NAMES, k)).fetchall()
            else:
                rows = con.execute(f"SELECT d.kind, d.id, d.text FROM docs d WHERE {alive} "
                                   "ORDER BY d.updated_at DESC, d.id LIMIT ?", (mind, now, *KIND_NAMES, k)).fetchall()
        finally:
            con.close()
    except (sqlite3.DatabaseError, CopyDamaged) as exc:
        reason = damaged(exc)
        if reason is None:
            raise StoreError(f"this machine's offline copy {folder / COPY_DB} is locked by another process ({exc}); "
                             f"try again (`fuser {folder / COPY_DB}` names it)") from exc
        raise CopyDamaged(reason, set_copy_aside(folder, reason)) from exc
    return [(str(a), str(b), str(c)) for a, b, c in rows]


@atexit.register
def _flush_all() -> None:
    """At exit: finish what the live keepers were doing (a CLI command leaves its copy current)."""
    for keeper in list(_LIVE):
        keeper.flush()
