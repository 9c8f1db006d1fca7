"""Purging a record: every trace of it goes, and the exports taken earlier that still hold it are named.

``delete`` removes a record from the store, its index and caches but keeps its history (a human can see what was
there and revert it); a **purge** (human only) also removes its history entries, its revisions and its links. No
history entry records the purge itself: it would hold what the purge removes. The caller (``Vault.purge``) then
scrubs the index, FTS and ranking tables and caches in the same call.

Exports are recorded when taken (``exports``: when, where to, whether they held history), so a purge can say which
of them still hold the record: those taken while it existed, and those with history taken after it was deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from synapse_nb._util import shown_id
from synapse_nb.changes import ExportMark
from synapse_nb.errors import NotFoundError, StoreError, SynapseError, ValidationError
from synapse_nb.models import Memory, kind_of_id
from synapse_nb.own_files import own_folder
from synapse_nb.provenance import mark

if TYPE_CHECKING:
    from pathlib import Path

    from synapse_nb.context import Context

__all__ = ["PurgeReport", "PurgeTarget", "forget_deleted_prompts", "forget_prompts", "owe_scrub", "purge",
           "purge_target", "run_owed", "scrub_deleted"]

#: The vault's rank caches (``<vault>/cache/rank-*``), removed by every scrub.
RANK_CACHE = "cache"
#: The agent hooks' file of per-session counters and prompts (:mod:`synapse_nb.agents.sessions`), as reports name it.
SESSIONS_FILE = "agent-sessions.json"


@dataclass(frozen=True)
class PurgeTarget:
    """What a purge of one record would remove, for a person to read before it does (review 64: a purge at a terminal
    showed nothing and asked nothing; an agent's checkpoint calling a person's memory its own leaked token got it
    purged). ``mark``, ``address`` and ``summary`` are the record's, or its last known version's when it is deleted
    already (``deleted_by`` / ``deleted_at`` then say who deleted it, when); "" when no entry holds that version."""

    id: str
    kind: str
    mark: str
    address: str
    summary: str
    exists: bool
    history: int
    revisions: int
    links: int
    deleted_by: str | None = None
    deleted_at: str | None = None

    def __str__(self) -> str:
        sid = shown_id(self.id)
        what = f"{self.kind} {self.address} ({sid})" if self.address else f"{self.kind} {sid}"
        if self.exists:
            lines = [f"purge removes for good: {what}", f"  {self.summary}"]
        else:
            when = (self.deleted_at or "")[:19].replace("T", " ")
            lines = [f"purge removes for good what is left of: {what}, deleted {when} UTC by {self.deleted_by}",
                     f"  its last known version: {self.summary or '(unknown: no history entry holds it)'}"]
        lines.append(f"  and its {self.history} history entries, {self.revisions} revisions, {self.links} links: "
                     "nothing is left to see it or revert it")
        return "\n".join(lines)


@dataclass(frozen=True)
class PurgeReport:
    """What a purge removed, and the exports taken earlier that still hold the record (oldest first)."""

    id: str
    kind: str
    record_deleted: bool
    history_removed: int
    revisions_removed: int
    links_removed: int
    exports_holding: tuple[ExportMark, ...] = ()
    #: a team vault's: why this machine's offline copy still holds the record, and how to remove it (None: it does not)
    copy_behind: str | None = None
    #: why the index folder still holds the record (its whole-index rewrite stayed owed: another process held the
    #: index lock), and how to run it (None: the index was scrubbed; review 34)
    index_owed: str | None = None
    #: why the vault's SQLite file and its WAL still hold the record (another process's open read kept the WAL from
    #: being truncated; None: they do not; review 34)
    wal_behind: str | None = None
    #: why the FTS indexes still hold the record's words: another process held the vault's write lock after the
    #: purge's commit, so their merge did not run (None: it ran; review 35)
    fts_behind: str | None = None
    #: the record's provenance mark (``[user · verified]``) and address (``category/key`` of a memory, else ""), or
    #: its last known version's (a record deleted earlier; "" when no entry held it): what went, by name (review 64)
    mark: str = ""
    address: str = ""
    #: how many agent sessions' prompts the hooks kept (``<vault>/agent-sessions.json``: a session's first and latest
    #: prompt, which its automatic checkpoints and episodes name) were cleared because the record's text held them
    #: (review 91: the file kept a purged secret and the session's next episode logged it again); and why they could
    #: not be (None: nothing was left)
    prompts_cleared: int = 0
    prompts_left: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["exports_holding"] = [m.to_dict() for m in self.exports_holding]
        return out

    def __str__(self) -> str:
        behind = (self.index_owed, self.wal_behind, self.fts_behind)
        scrubbed = ("index, FTS and caches scrubbed" if behind == (None, None, None) else
                    "caches scrubbed, but not everywhere:" if self.fts_behind is not None else
                    "FTS and caches scrubbed, but not everywhere:")
        gone = "deleted" if self.record_deleted else "already gone"
        what = " ".join(x for x in (self.kind, self.mark, self.address) if x)
        lines = [(f"purged {what} ({shown_id(self.id)}): record {gone}, "
                  f"{self.history_removed} history entries, {self.revisions_removed} revisions, "
                  f"{self.links_removed} links removed; {scrubbed}")]
        if self.index_owed is not None:
            lines.append(f"index NOT scrubbed (owed): {self.index_owed}")
        if self.fts_behind is not None:
            lines.append(f"FTS NOT merged: {self.fts_behind}")
        if self.wal_behind is not None:
            lines.append(f"WAL NOT truncated: {self.wal_behind}")
        if self.copy_behind is not None:
            lines.append(f"but {self.copy_behind}")
        if self.prompts_cleared:
            lines.append(f"the agent hooks' prompts it held cleared: {self.prompts_cleared} session(s) in "
                         f"{SESSIONS_FILE} name no prompt until the next one is typed")
        if self.prompts_left is not None:
            lines.append(f"agent hooks' prompts NOT cleared: {self.prompts_left}")
        if self.exports_holding:
            lines.append("exports taken earlier still hold it (delete or re-take them):")
            lines += [f"  {m.taken_at[:19].replace('T', ' ')} UTC  {m.dest or '(returned as text)'}"
                      for m in self.exports_holding]
        else:
            lines.append("no export taken earlier holds it")
        return "\n".join(lines)

    __repr__ = __str__

    def with_copy(self, store: Any, index: Any = None, left: tuple[str | None, str | None] = (None, None)
                  ) -> PurgeReport:
        """This report, with what the scrubs in this purge left: in this machine's offline copy (review 33), in the
        vault's SQLite file and its WAL, and in the index folder (``index``: the handle's, if it has one; review
        34); ``left``: what a locked vault kept the scrub from doing after the commit (:func:`scrub_deleted`;
        review 35)."""
        fts, index_left = left
        return replace(self, copy_behind=getattr(store, "copy_behind", None),
                       wal_behind=getattr(store, "wal_behind", None), fts_behind=fts or self.fts_behind,
                       index_owed=index_left or (None if index is None else getattr(index, "scrub_behind", None)))


def scrub_deleted(store: Any, folder: Path, index: Callable[[], Any], ids: Sequence[str], *,
                  person: bool = True) -> tuple[str | None, str | None]:
    """Leave none of the deleted text in the store's files or the caches; in the index folder too for a
    ``person``'s deletion (issue 30), while an agent's leaves the whole-index rewrite owed until a person's next
    deletion, purge or prune, or the hour is up (:mod:`synapse_nb.store.index.scrub`). ``index`` opens the handle's.

    Each step runs after the deletion's commit: another process holding the vault's write lock (an agent's ``BEGIN
    IMMEDIATE``) fails one step, not the next, nor the call (review 35: a purge committed, then failed "could not
    lock the vault" with no report, and running it again said "not found"). The index scrub was marked owed before
    the commit (:func:`owe_scrub`) and runs first, before the store's scrub, whose WAL truncate waits up to 2 s for
    another process's open read (review 89: killed in that wait, a purge left the text in the index folder with
    nothing owing its removal). Returns what stayed undone: the FTS merge's note and the index's (None: done)."""
    if store.readonly:
        return None, None
    fts = index_left = None
    from synapse_nb.store.index.scrub import drop_rank_files

    # a FIFO or a directory in a file's place too; a person's deletion removes any in the vault folder (review 79)
    drop_rank_files(folder / RANK_CACHE, vault=folder if person else None)
    if own_folder(folder / "index") and (folder / "index").is_dir():  # never through a symlink (review 81)
        try:
            (index().forget if person else index().forget_later)(list(ids))
        except StoreError as exc:
            index_left = (f"the index scrub stopped ({exc}): the index folder {folder / 'index'} still holds the "
                          "deleted text until the owed rewrite runs (`synapse-nb index check --repair`)")
    try:
        store.scrub()
    except StoreError as exc:
        fts = (f"another process held the vault's write lock ({exc}), so the vault's database {store.location} and "
               "its WAL still hold the deleted words until the next deletion or purge merges them")
    for note in (fts, index_left):
        if note is not None:
            logging.getLogger("synapse_nb.index").warning("the record is deleted, but %s", note)
    return fts, index_left


def forget_prompts(folder: Path, records: Sequence[Any]) -> tuple[int, str | None]:
    """Clear what the agent hooks keep of a person's prompts in the vault folder ``folder`` (``agent-sessions.json``)
    when a deleted or purged record's text holds them (:func:`synapse_nb.agents.sessions.clear_prompts`; review 91).
    Returns how many sessions lost their prompts, and why none could (another process held the file's lock)."""
    from synapse_nb.agents.sessions import LOCK_NAME, STATE_NAME, clear_prompts

    cleared = clear_prompts(folder, [r.text for r in records if r is not None])
    if cleared is not None:
        return cleared, None
    note = (f"another process held {folder / LOCK_NAME} (`fuser {folder / LOCK_NAME}` names it), so "
            f"{folder / STATE_NAME} may still hold the prompt the record's text came from; end that process and "
            "delete the file (the hooks start their counts afresh)")
    logging.getLogger("synapse_nb.index").warning("the record is deleted, but %s", note)
    return 0, note


def forget_deleted_prompts(ctx: Context, folder: Path, ids: Sequence[str]) -> None:
    """After a deletion's commit: :func:`forget_prompts` of the records it deleted, read from their deletion's
    history entry (a purge, which leaves none, does it itself). Nothing read when the hooks keep no file there."""
    from synapse_nb.agents.sessions import STATE_NAME

    if not (folder / STATE_NAME).is_file():
        return
    try:
        last = ctx.store.history.last_of(ids)  # one read, however many records the deletion took
        gone = [last[rid].previous if rid in last else None for rid in ids]
    except StoreError as exc:  # after the commit: never the deletion's failure (review 35)
        logging.getLogger("synapse_nb.index").warning(
            "the record is deleted, but the agent hooks' prompts its text held were not looked for (%s)", exc)
        return
    forget_prompts(folder, [g for g in gone if g is not None])


def owe_scrub(ctx: Context, folder: Path) -> Callable[[Sequence[tuple[str, str, bool]]], None]:
    """The store listener heard before each commit (``on_change(before=True)``) that marks the index scrub of the
    records a transaction deletes owed (``index/scrub.owed``, a person's deletion's line saying so) before their
    deletion commits (review 89): a process killed after the commit, before :func:`scrub_deleted` ran, leaves it
    owed, and a person's next open runs it (:func:`run_owed`). A marker that cannot be written (a full disk) does not
    stop the deletion: its own scrub still runs after the commit."""
    def owe(changes: Sequence[tuple[str, str, bool]]) -> None:
        gone = [rid for _, rid, deleted in changes if deleted]
        index = folder / "index"
        if gone and own_folder(index) and index.is_dir():  # never through a symlink (review 81)
            from synapse_nb import history
            from synapse_nb.store.index.scrub import Owed

            try:
                Owed(index).mark(person=not history.deleted_by_agent(ctx, gone))
            except OSError as exc:
                logging.getLogger("synapse_nb.index").warning(
                    "could not mark the index scrub of a deletion owed in %s (%s); it runs after the commit", index,
                    exc.strerror or exc)
    return owe


def run_owed(folder: Path, index: Callable[[], Any]) -> None:
    """At a person's writable open of the vault in ``folder``: run the index scrub a person's deletion left owed
    (:func:`owe_scrub`; its process killed after the commit, or kept from the index lock), waiting for the index lock
    a moment at most; still owed (the lock held), it says so and the next open, deletion or repair runs it. Never
    fails the open. ``index`` opens the handle's index."""
    from synapse_nb.store.index.scrub import RECALL_LOCK_WAIT, Owed

    path = folder / "index"
    if not own_folder(path) or not path.is_dir() or not Owed(path).person():
        return
    try:
        index().forget([], wait=RECALL_LOCK_WAIT)
    except SynapseError as exc:
        logging.getLogger("synapse_nb.index").warning(
            "the index scrub a person's deletion left owed did not run (%s): the index folder %s still holds the "
            "deleted text until it runs (`synapse-nb index check --repair`)", exc, path)


def purge_target(ctx: Context, record_id: str) -> PurgeTarget:
    """What a purge of ``record_id`` would remove (human only: it reads what an agent may not, a withdrawn lesson's
    text); a :class:`~synapse_nb.errors.NotFoundError` when there is nothing of it."""
    ctx.require_human("purge a record")
    rid, kind, current, entries = _found(ctx, record_id)
    last = _last(current, entries)
    n_rev = sum(1 for r in ctx.store.revisions.of_mind(ctx.mind) if r.rid == rid)
    return PurgeTarget(id=rid, kind=kind, mark=mark(last) if last is not None else "", address=_address(last),
                       summary=last.summary_line() if last is not None else "", exists=current is not None,
                       history=len(entries), revisions=n_rev, links=len(ctx.store.links.of_record(rid)),
                       deleted_by=None if current is not None else entries[-1].actor,
                       deleted_at=None if current is not None else entries[-1].at)


def _last(current: Any, entries: list[Any]) -> Any:
    """The record's last known version: itself, or (deleted already) the last one an entry holds (a deletion's
    ``before``); None when no entry holds one."""
    if current is not None:
        return current
    return next((e.previous for e in reversed(entries) if e.previous is not None), None)


def _address(rec: Any) -> str:
    """A memory's ``category/key`` (quoted, one line); "" for another kind (named by kind and id)."""
    return str(rec.address) if isinstance(rec, Memory) else ""


def _found(ctx: Context, record_id: str) -> tuple[str, str, Any, list[Any]]:
    """``(id, kind, the record or None, its history entries)`` of the context's mind, or why there is none."""
    rid = str(record_id).strip()
    kind = kind_of_id(rid)
    if kind is None:
        raise ValidationError(f"{rid!r} is not a record id (ids look like mem_3f9a0c12be47)")
    entries = [e for e in ctx.store.history.of_record(rid) if e.mind == ctx.mind]
    current = ctx.store.table(kind).get(ctx.view(), rid)
    if current is None and not entries:
        raise NotFoundError(f"no {kind} {rid} (or history of it) in mind {ctx.mind!r}")
    return rid, kind, current, entries


def purge(ctx: Context, scrub: Callable[[list[str]], object] | None = None,
          folder: Path | None = None) -> Callable[[str], PurgeReport]:
    """``purge(ctx)(record_id)``: remove the record (any kind) of the context's mind and all its history (human
    only); see the module docstring. ``scrub`` scrubs a record deleted earlier (its history only goes now);
    ``folder`` (the vault folder) has the agent hooks' prompts its text held cleared (:func:`forget_prompts`)."""
    def run(record_id: str) -> PurgeReport:
        ctx.require_human("purge a record")
        rid, kind, current, entries = _found(ctx, record_id)  # read once: the report names what it removed
        last = _last(current, entries)
        store = ctx.store
        born = min([e.at for e in entries] + ([current.created_at] if current is not None else []))
        died = None if current is not None else max(e.at for e in entries)
        holding = tuple(m for m in store.exports.all()
                        if m.taken_at >= born and (died is None or m.taken_at <= died or m.history > 0))
        committed: list[bool] = []
        after = None
        try:
            with store.transaction():
                store.after_commit(lambda: committed.append(True))
                # its revisions and links first: the record's delete trigger drops its pending revisions and open
                # links, and they went uncounted (review 38: a pending revision holding a copy of the text was
                # removed, and the report said "0 revisions")
                n_rev = store.revisions.purge(rid)
                n_link = store.links.purge(rid)
                if current is not None:
                    store.table(kind).delete(rid)
                n_hist = store.history.purge(rid)
        except StoreError as exc:  # after the commit (a scrub its listeners ran): the purge is done, say what is not
            if not committed:
                raise
            after = f"the scrub after the purge's commit failed ({exc}); the next deletion or purge runs it"
        report = PurgeReport(id=rid, kind=kind, record_deleted=current is not None, history_removed=n_hist,
                             revisions_removed=n_rev, links_removed=n_link, exports_holding=holding,
                             fts_behind=after, mark=mark(last) if last is not None else "",
                             address=_address(last))
        if current is None and scrub is not None:  # a deletion was scrubbed at its commit already
            scrub([rid])
        if folder is not None and last is not None:
            cleared, left = forget_prompts(folder, [last])
            report = replace(report, prompts_cleared=cleared, prompts_left=left)
        return report
    return run
