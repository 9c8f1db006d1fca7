"""The history side of ``vault.memories``: versions, reads as of a time, revert, pending revisions, conflicts.

A mixin of :class:`~synapse_nb.kinds.memories.Memories` (kept apart so that each module stays readable). Every
decision here is a human's: accepting or rejecting an agent's revision, reverting, resolving a duplicate or a
contradiction (``Context.require_human``; on a team vault the database roles refuse the agent too).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from synapse_nb import dupes, dupes_owed, history
from synapse_nb._util import (
    MAX_TAGS,
    check_choice,
    check_key,
    check_tags,
    check_text,
    fmt_ts,
    new_id,
    parse_ts,
    shown_id,
)
from synapse_nb.changes import LINK_STATUSES, REVISED_FIELDS, REVISION_STATUSES, Conflicts, Link, Revision
from synapse_nb.errors import AmbiguousIdError, ConflictError, NotFoundError, PermissionDeniedError, ValidationError
from synapse_nb.kinds._base import KindManager, resolve_prefix
from synapse_nb.models import CATEGORIES, PRIORITIES, Memory, Record, kind_of_id
from synapse_nb.provenance import agents_unverified, human_record

if TYPE_CHECKING:
    from datetime import datetime

    from synapse_nb.context import Context
    from synapse_nb.history import Versions
    from synapse_nb.replaced import Replaced
    from synapse_nb.store.base import MemoryTable

__all__ = ["RESOLUTIONS", "REVISED_FIELDS", "MemoryHistory"]

#: What a human may do with a link: merge (the hidden side goes), keep both, supersede (the older side goes).
RESOLUTIONS = {"merge": "merged", "keep": "kept", "supersede": "superseded"}


class MemoryHistory:
    """History, revisions and conflicts of a mind's memories (mixed into ``Memories``)."""

    _ctx: Context

    if TYPE_CHECKING:
        @property
        def _table(self) -> MemoryTable: ...

        def resolve_id(self, id_or_prefix: str) -> str: ...

        def _changed(self, action: str, before: Any, after: Any, at: str) -> None: ...

    def _stored(self, id: str) -> Memory:
        """The memory as stored now (``KindManager.get``: id or unique prefix, the actor's view)."""
        got: Memory = KindManager.get(self, id)  # type: ignore[arg-type]  # mixed into Memories, a KindManager
        return got

    # -- which memory ---------------------------------------------------------------------------------------
    def _find(self, key_or_id: str, category: str | None) -> str:
        """The id of a memory named by id (or unique prefix), or by key (``category`` when several share it); a
        memory deleted since is found by its history, by its full id or its key."""
        return self._locate(key_or_id, category)[0]

    def _locate(self, key_or_id: str, category: str | None) -> tuple[str, str | None]:
        """:meth:`_find`, and the key when the memory was named by one (None: by id)."""
        if not isinstance(key_or_id, str) or not key_or_id.strip():
            raise ValidationError(f"name a memory by id or key, got {key_or_id!r}")
        name = key_or_id.strip()
        ctx = self._ctx
        if category is None:
            try:
                return self.resolve_id(name), None
            except (NotFoundError, ValidationError):
                # a deleted memory's id: its history is what is left of it (review 91: `memory history ID` and
                # `memory revert ID` of a deleted memory said there was none, though the docs promise both)
                if kind_of_id(name) == "memory" and any(e.mind == ctx.mind for e in ctx.store.history.of_record(name)):
                    return name, None
        cat = None if category is None else check_choice(category, "category", CATEGORIES)
        key = check_key(name)
        if cat is not None:
            mem = self._table.by_key(ctx.mind, cat, key)
            if mem is not None:
                return mem.id, key
        ids = [i for i, _ in ctx.store.recall.key_matches(ctx.mind, [key]) if kind_of_id(i) == "memory"]
        if cat is None and len(ids) == 1:
            return ids[0], key
        if cat is None and len(ids) > 1:
            raise ValidationError(f"several memories have the key {key!r}; give category=")
        gone = self._ids_by_key(key, cat)
        if len(gone) == 1:
            return gone[0], key
        if gone:
            raise AmbiguousIdError(f"no memory holds {cat + '/' if cat else ''}{key} now, and {len(gone)} deleted "
                                   f"ones held it: {_listed(gone)}; name one by its id")
        raise NotFoundError(f"no memory {cat + '/' if cat else ''}{key} in mind {ctx.mind!r}")

    def _ids_by_key(self, key: str, category: str | None) -> list[str]:
        """Ids of memories deleted since (some may be back) that held this key (and category), by id."""
        return sorted(self._removed_by_key(key, category))

    def _removed_by_key(self, key: str, category: str | None, *, before: str | None = None) -> list[str]:
        """:meth:`_ids_by_key`, the latest removed first (``before``: removed before then): each removal's history
        entry holds what the memory was."""
        out: dict[str, None] = {}
        for e in reversed(self._ctx.store.history.removals(self._ctx.mind, "memory")):
            was = e.state  # None: one that describes no record of the entry (review 46)
            if (was is not None and was.get("key") == key.strip() and (before is None or e.at < before)
                    and (category is None or was.get("category") == category)):
                out.setdefault(e.rid)
        return list(out)

    def _held_before(self, versions: Versions, key: str) -> str | None:
        """What ``memory history KEY`` says of the other memories that held the key before the one it lists
        (``versions``, its history), or None: those of its own category (the key of another category is another
        address) removed before it came to hold the key, the last time it did (review 92: an agent's
        ``knowledge/deploy``, written and deleted after a person's ``project/deploy``, was said to have held the key
        before the person's)."""
        rid, since = versions[-1].rid, _held_since(versions)
        current = versions.current if isinstance(versions.current, Memory) else None
        category = current.category if current is not None else next(
            (s["category"] for e in reversed(versions) if isinstance(s := e.state, dict) and "category" in s), None)
        others = [i for i in self._removed_by_key(key, category, before=since) if i != rid]
        if not others:
            return None
        gone = [i for i in others if self._table.mind_of(i) != self._ctx.mind]
        what = (f"{len(others)} other memor{'y' if len(others) == 1 else 'ies'}"
                + (" (deleted)" if len(gone) == len(others) else f" ({len(gone)} deleted)" if gone else ""))
        return (f"{what} held the key {key!r} before this one: {_listed(others)}; see "
                f"{'it' if len(others) == 1 else 'each'} with `synapse-nb memory history {shown_id(others[0])}` "
                "(Python: vault.memories.history(id))")

    # -- versions and reads in time -------------------------------------------------------------------------
    def history(self, key_or_id: str, *, category: str | None = None) -> Versions:
        """Every version of a memory, oldest first: when, what (create, update, verify, delete, revert, accept),
        who (user / agent) and through which surface, the content digest before and after, and (``.record(n)``)
        the memory as version ``n`` left it. A deleted memory is named by its full id or its key; named by key, the
        result's ``note`` names the other memories that held the key before (deleted ones too), else None.

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> _ = v.remember("project", "status", "v1"); _ = v.remember("project", "status", "v2")
        >>> h = v.memories.history("status"); [e.action for e in h], h.record(1).content
        (['create', 'update'], 'v1')
        """
        rid, key = self._locate(key_or_id, category)
        out = history.entries(self._ctx, rid)
        if key is not None:  # named by key: another record may have held it (review 91: an agent deleted its memory
            # and wrote the key again, and the person's `memory history KEY` showed one clean version)
            out.note = "; ".join(n for n in (out.note, self._held_before(out, key)) if n) or None
        return out

    def overwritten(self, mem: Memory) -> Replaced | None:
        """After a person's update, revert or acceptance of ``mem`` on a team vault: the entry of another person's
        login whose verified version it replaced (their login, the version to revert to: ``Versions.overwritten``),
        else None. A local vault records no logins, so nothing is read there. The write itself returns it as the
        memory's ``replaced`` (and ``note``): :meth:`_noted`."""
        if mem.replaced is not None:
            return mem.replaced
        if not getattr(getattr(self._ctx.store, "dialect", None), "logins", False):
            return None
        return history.entries(self._ctx, mem.id).overwritten()

    def _noted(self, before: Memory | None, mem: Memory) -> Memory:
        """``mem`` as a person's write (``remember``, ``update``, ``revert``, ``accept``) returns it: on a team vault,
        with ``replaced`` (so ``note``) when the write replaced another person's verified version (``before``), so
        that every surface says whose version it was and how to restore it, from this one place (the CLI's
        ``remember`` alone said it before). Read only after such a write: nothing is read for an agent's write, a new
        memory or an unverified one."""
        if before is None or not before.verified or self._ctx.actor != "user":
            return mem
        prev = self.overwritten(mem)
        return mem if prev is None else replace(mem, replaced=prev)

    def get(self, id: str, *, category: str | None = None, as_of: datetime | str | None = None) -> Memory:
        """The memory with this id (or unique prefix), or this key (with ``category`` when several share it);
        ``as_of`` (a datetime or ISO 8601 text): as it was then, from its history."""
        if category is None and as_of is None:
            try:
                return self._stored(id)
            except NotFoundError as exc:
                try:
                    rid = self._find(id, None)
                except (NotFoundError, ValidationError):
                    raise exc from None
        else:
            rid = self._find(id, category)
        if as_of is None:
            return self._stored(rid)
        at = history.as_of_ts(as_of)
        rec = history.state_at(self._ctx, rid, at)
        if rec is None and not id.strip().startswith("mem_"):  # a key another memory held then (deleted since)
            for other in self._ids_by_key(id, category):
                rec = history.state_at(self._ctx, other, at) if other != rid else None
                if rec is not None:
                    break
        if rec is None or not isinstance(rec, Memory):
            raise NotFoundError(f"memory {id!r} did not exist at {at}")
        return rec

    def revert(self, id: str, *, to: int) -> Memory:
        """Restore version ``to`` of a memory as a new change (human only): its content, tags, priority,
        confidence, expiry, author (``source``) and verification come back as they were; a memory deleted since is
        stored again under its id.

        A version nobody verified comes back unverified: naming a version number is not reading its text, so an
        agent's wording never turns into a verified memory by a revert (verify it after reading it:
        :meth:`verify`, which binds to what was shown)."""
        ctx = self._ctx
        ctx.require_human("revert a memory")
        if isinstance(to, bool) or not isinstance(to, int) or to < 1:
            raise ValidationError(f"to must be a version number from 1, got {to!r}")
        rid = self._find(id, None)
        versions = history.entries(ctx, rid)
        old = versions.record(to)
        if not versions.known(to):
            raise ConflictError(f"what version {to} of {rid} held is unknown: the entry after it holds no record of "
                                "it (written outside synapse_nb); revert to another version")
        if not isinstance(old, Memory):
            raise ConflictError(f"version {to} of {rid} deleted it; revert to a version that holds the memory")
        current = versions.current if isinstance(versions.current, Memory) else None
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            if current is None:
                if self._table.by_key(ctx.mind, old.category, old.key) is not None:
                    raise ConflictError(f"another memory holds {old.address} now; delete it first")
                restored = replace(old, updated_at=ts)
                self._table.insert(restored)
            else:
                restored = replace(current, updated_at=ts, content=old.content, tags=old.tags, priority=old.priority,
                                   confidence=old.confidence, expires_at=old.expires_at, source=old.source,
                                   verified=old.verified)
                self._table.update(rid, updated_at=ts, content=old.content, tags=old.tags, priority=old.priority,
                                   confidence=old.confidence, expires_at=old.expires_at, source=old.source,
                                   verified=old.verified)
            self._changed("revert", current, restored, ts)
        return self._noted(current, restored)

    # -- revisions: an agent's change to a human's memory waits for a human -----------------------------------
    def needs_revision(self, mem: Memory) -> bool:
        """Whether this handle's change to ``mem`` waits for a human as a pending revision instead of being written:
        an agent changing a memory a human wrote or verified. ``remember`` and ``update`` then return ``mem``
        unchanged; a surface tells its caller so (the CLI, the MCP server)."""
        return self._ctx.actor == "agent" and (mem.source == "user" or mem.verified)

    def waiting_revision(self, mem: Memory) -> Revision | None:
        """The proposed change to ``mem`` waiting for a human against this version of it (at most one), or None:
        what an agent's ``remember`` or ``update`` of a human's memory stored, or found waiting already."""
        return next((r for r in self._ctx.store.revisions.pending_of(mem.id) if r.base_digest == mem.digest), None)

    def _propose(self, mem: Memory, after: Memory, ts: str) -> Revision | None:
        changed = {f: list(v) if isinstance(v := getattr(after, f), tuple) else v
                   for f in REVISED_FIELDS if getattr(after, f) != getattr(mem, f)}
        if not changed:
            return None
        ctx = self._ctx
        fields = json.dumps(changed, sort_keys=True, ensure_ascii=False)
        # one proposal per version of a memory waits for a human: the queue holds at most the memories, not the
        # writes (one made against a version a human has since changed no longer holds the place)
        waiting = self.waiting_revision(mem)
        if waiting is not None and waiting.fields == fields:
            return waiting  # the same proposal again (a retry after an unknown commit): it is waiting already
        if waiting is not None:
            raise ConflictError(
                f"memory {mem.id} already has a proposed change waiting for a human ({waiting.id}, proposed "
                f"{waiting.created_at}); nothing was written. A human accepts or rejects it first (synapse-nb "
                "memory revisions); propose again after that")
        rev = Revision(id=new_id("rev"), rid=mem.id, kind="memory", mind=mem.mind, status="pending",
                       fields=fields, base_digest=mem.digest,
                       actor=ctx.actor, surface=ctx.surface, created_at=ts)
        ctx.store.revisions.insert(rev)
        return rev

    def revisions(self, *, status: str | None = "pending") -> list[Revision]:
        """Revisions agents proposed to memories a human wrote or verified (``status``: pending, accepted,
        rejected; None: all), oldest first."""
        st = None if status is None else check_choice(status, "status", REVISION_STATUSES)
        return self._ctx.store.revisions.of_mind(self._ctx.mind, st)

    def _revision(self, rev_id: str) -> Revision:
        rev = self.revision(rev_id)
        if rev.status != "pending":
            raise ConflictError(f"revision {rev.id} is {rev.status} already")
        return rev

    def revision(self, revision_id: str) -> Revision:
        """One revision of this mind by id or unique id prefix, whatever its status (:class:`NotFoundError` when
        there is none, :class:`AmbiguousIdError` when the prefix names several)."""
        table, mind = self._ctx.store.revisions, self._ctx.mind
        rev = table.get(resolve_prefix(revision_id, "revision", "revisions", "rev", mind, table.mind_of,
                                       table.ids_from))
        if rev is None:  # purged since the id was resolved
            raise NotFoundError(f"no revision {revision_id!r} in mind {mind!r}")
        return rev

    def accept(self, revision_id: str, *, force: bool = False, seen: str | None = None) -> Memory:
        """Apply an agent's pending revision (human only): the memory takes the proposed values and stays verified;
        its history records the acceptance.

        A revision proposed against a version the memory has left since (someone changed it after the agent read
        it) is refused with a :class:`ConflictError`, so accepting never silently undoes a later change; look at the
        memory's history, then ``force=True`` applies it anyway, or :meth:`reject` it. ``seen`` (the revision's
        ``fields`` as they were shown) binds the acceptance to them: other values are refused."""
        ctx = self._ctx
        ctx.require_human("accept a revision")
        rev = self._revision(revision_id)
        if not rev.readable:  # written with SQL (review 46): no values a person could have read
            raise ConflictError(f"revision {rev.id} holds no values a revision proposes (its fields are not a memory's "
                                "content, tags, priority or expiry); nothing was accepted: reject it")
        if seen is not None and seen != rev.fields:
            raise ConflictError(f"revision {rev.id} proposes other values than those shown; nothing was accepted")
        mem: Memory = self._stored(rev.rid)
        if mem.kind != rev.kind or mem.mind != rev.mind:
            raise ConflictError(f"revision {rev.id} is not for a memory of mind {ctx.mind!r}; reject it")
        if mem.digest != rev.base_digest and not force:
            raise ConflictError(f"memory {mem.id} changed after revision {rev.id} was proposed ({rev.created_at}); "
                                "the proposal was made against an older version: read the memory's history, then "
                                "accept with force=True (CLI: --force) or reject it")
        values = _accepted_values(rev)
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            if values.get("expires_at") is not None and values["expires_at"] <= ts:
                # a write with a past expiry is refused; accepting one took the person's verified memory out of
                # recall at once, and the next prune deleted it (review 22)
                raise ConflictError(f"revision {rev.id} proposes an expiry that has passed ({values['expires_at']}): "
                                    "accepting it would take the memory out of recall now; reject it")
            after: Memory = replace(mem, updated_at=ts, verified=True, **values)
            self._table.update(mem.id, updated_at=ts, verified=True, **values)
            ctx.store.revisions.decide(rev.id, "accepted", ts)
            self._changed("accept", mem, after, ts)
        return self._noted(mem, after)

    def reject(self, revision_id: str) -> Revision:
        """Reject an agent's pending revision (human only): the memory stays as it is."""
        ctx = self._ctx
        ctx.require_human("reject a revision")
        rev = self._revision(revision_id)
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            ctx.store.revisions.decide(rev.id, "rejected", ts)
        return replace(rev, status="rejected", decided_at=ts)

    # -- duplicates and contradictions ------------------------------------------------------------------------
    def conflicts(self, *, status: str | None = "open", check_all: bool = False) -> Conflicts:
        """Pairs the duplicate check found in this mind (any kinds; ``status``: open, kept, merged, superseded;
        None: all): pairs of two people's records first, then those of a person's and an agent's, then those of two
        agents' unverified records (``agents`` counts them; the list's text and ``memory conflicts`` count them in a
        line unless asked: review 83), each group oldest first.

        In a person's view, the writes a person's bulk load left unchecked are checked first, at most
        ``dupes.READ_CHECKS`` of them and ``dupes.READ_SECONDS`` a call (``check_all``: every one, however long that
        takes); the list's ``unchecked`` counts those still waiting and its ``note`` says so (review 75: an agent's
        bulk writes left a person's listing 45 s of checks, and over 600 s with repetitive text; an agent's
        transaction is now checked at its own commit)."""
        st = None if status is None else check_choice(status, "status", LINK_STATUSES)
        # records a bulk write left unchecked are checked first, by a human: a pair of two humans' records hides the
        # newer one, which a team vault's server refuses from an agent (migration 12), and the pairs are theirs
        store, unchecked = self._ctx.store, 0
        if not store.readonly and self._ctx.actor != "agent":
            # (first what an import killed before its check ended left owed: dupes_owed, a twenty-second pass)
            if check_all:
                dupes_owed.check_pending(store)
            elif dupes_owed.check_pending(store, dupes.READ_CHECKS, dupes.READ_SECONDS):  # some checked: more may wait
                unchecked = dupes_owed.waiting(store)
        out = Conflicts.of(store.links.of_mind(self._ctx.mind, st), self._ctx.stored)  # people's pairs first
        out.unchecked = unchecked
        return out

    def resolve(self, link_id: str, action: str) -> Link:
        """Decide a pair (human only): ``merge`` (the hidden side, else the newer one, is deleted, but never a
        person's record for an agent's unverified one: then the agent's goes; a memory keeps
        the union of both memories' tags, at most ``MAX_TAGS``, but a person's record takes no tag from an agent's
        unverified one: tags are the agent's words, which no listing of the pair shows), ``keep`` (both stand and
        both are recalled) or ``supersede`` (the newer stands, the older is deleted; refused when that would delete
        a person's record for an agent's unverified one). Deletions are recorded in history (a revert brings a
        memory back)."""
        ctx = self._ctx
        ctx.require_human("resolve a conflict")
        act = check_choice(action, "action", tuple(RESOLUTIONS))
        link = self._link(link_id)
        if link.status != "open":
            raise ConflictError(f"conflict {link.id} is {link.status} already")
        a, b = self._sides(link)
        if act == "supersede" and a is not None and b is not None and human_record(b) and agents_unverified(a):
            raise ConflictError(
                f"superseding would delete {b.id}, a person's {b.kind}, for {a.id}, an agent's that no person "
                f"verified; nothing was changed. Merge (the agent's copy goes), keep both, or verify {a.id} "
                "first if it should stand")
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            ctx.store.links.decide(link.id, RESOLUTIONS[act], ts)  # first: a deletion drops open links only
            if act == "merge":
                gone, stays = _merged(link, a, b)
                if (isinstance(gone, Memory) and isinstance(stays, Memory) and set(gone.tags) - set(stays.tags)
                        and not (human_record(stays) and agents_unverified(gone))):
                    more = sorted(set(gone.tags) - set(stays.tags))[:max(0, MAX_TAGS - len(stays.tags))]
                    tags = tuple(sorted({*stays.tags, *more}))
                    ctx.store.memories.update(stays.id, updated_at=ts, tags=tags)
                    history.record(ctx, "merge", stays, replace(stays, updated_at=ts, tags=tags), at=ts)
                self._drop(gone, "merge", ts)
            elif act == "supersede":
                self._drop(b, "supersede", ts)
        return replace(link, status=RESOLUTIONS[act], decided_at=ts)

    def _link(self, link_id: str) -> Link:
        """A pair of this mind by id or unique id prefix (:class:`NotFoundError` when there is none,
        :class:`AmbiguousIdError` when the prefix names several)."""
        table, mind = self._ctx.store.links, self._ctx.mind
        link = table.get(resolve_prefix(link_id, "conflict", "conflicts", "lnk", mind, table.mind_of, table.ids_from))
        if link is None:  # purged since the id was resolved
            raise NotFoundError(f"no conflict {link_id!r} in mind {mind!r}")
        return link

    def _sides(self, link: Link) -> tuple[Record | None, Record | None]:
        view = self._ctx.view()
        return (self._ctx.store.table(link.a_kind).get(view, link.a),
                self._ctx.store.table(link.b_kind).get(view, link.b))

    def deletes(self, link_id: str, action: str) -> Record | None:
        """The record :meth:`resolve` with ``action`` would delete (None: keep, or none), for a person to read first:
        ``memory resolve`` at a terminal and the ChangeReview widget name it."""
        act = check_choice(action, "action", tuple(RESOLUTIONS))
        link = self._link(link_id)
        a, b = self._sides(link)
        if act == "merge":
            return _merged(link, a, b)[0]
        return b if act == "supersede" else None

    def _drop(self, rec: Record | None, action: str, ts: str) -> None:
        if rec is None:
            return
        ctx = self._ctx
        if ctx.actor != "user":
            raise PermissionDeniedError("an agent may not resolve a conflict")
        ctx.store.table(rec.kind).delete(rec.id)
        history.record(ctx, action, rec, None, at=ts)


def _held_since(versions: Versions) -> str:
    """When the memory came to hold its key the last time: its first entry this vault wrote (an imported file's
    entries say what the file says: ``Versions.from_file``), or the latest that brought it back after a removal (a
    revert of a deleted memory)."""
    filed = versions.from_file()
    own = [e for e in versions if e.version not in filed]
    since = own[0].at if own else versions[0].at
    for prev, e in itertools.pairwise(own):
        if prev.digest_after is None and e.digest_after is not None:
            since = e.at
    return since


#: How many ids a message about the memories that held a key names.
SHOWN_IDS = 5


def _listed(ids: list[str]) -> str:
    """Ids for a message, at most :data:`SHOWN_IDS` of them, then how many more."""
    more = len(ids) - SHOWN_IDS
    return ", ".join(shown_id(i) for i in ids[:SHOWN_IDS]) + (f" and {more} more" if more > 0 else "")


def _accepted_values(rev: Revision) -> dict[str, Any]:
    """A revision's values as a person's write stores them: each checked as ``memories.update`` checks it (review 46:
    values an agent's SQL wrote reached the person's verified memory unchecked)."""
    out: dict[str, Any] = {}
    for k, v in rev.proposed.items():
        if k == "content":
            out[k] = check_text(v, "content")
        elif k == "tags":
            out[k] = check_tags(v)
        elif k == "priority":
            out[k] = check_choice(v, "priority", PRIORITIES)
        elif k == "expires_at":
            out[k] = None if v is None else fmt_ts(parse_ts(v, "expires_at"))
    return out


def _merged(link: Link, a: Record | None, b: Record | None) -> tuple[Record | None, Record | None]:
    """(the side a merge deletes, the side that stays): the hidden side, else the newer (``a``); but never a person's
    record for an agent's unverified copy (review 14: the person's verified memory went, the agent's stayed)."""
    gone, stays = (a, b) if link.hidden in (None, link.a) else (b, a)
    if gone is not None and stays is not None and human_record(gone) and agents_unverified(stays):
        return stays, gone
    return gone, stays
