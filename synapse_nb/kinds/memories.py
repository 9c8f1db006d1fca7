"""Semantic memories: category + stable key (upserted), content, tags, priority, provenance, expiry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from synapse_nb._calls import Tags
from synapse_nb._util import (
    MAX_TEXT,
    check_choice,
    check_key,
    check_limit,
    check_stored_tags,
    check_tags,
    check_text,
    fmt_ts,
    new_id,
    parse_duration,
    plural,
    resolve_expiry,
    shift,
)
from synapse_nb.errors import ConflictError, NotFoundError, PermissionDeniedError, ValidationError
from synapse_nb.kinds._base import KindManager, check_query, check_search_limit, exactly_once
from synapse_nb.kinds.memory_history import MemoryHistory
from synapse_nb.models import AGENT_MAX_CONFIDENCE, CATEGORIES, PRIORITIES, Memory, RecordList, past_agent_limits
from synapse_nb.people import people_first
from synapse_nb.provenance import agents_unverified, inline, mark
from synapse_nb.store.records import PAGE_SORTS, MemoryFilter

if TYPE_CHECKING:
    from synapse_nb.store.base import MemoryTable

__all__ = ["AGENT_MAX_CONFIDENCE", "PAGE_SORTS", "Memories", "MemoryPage"]

_UNSET: Any = object()
#: Most memories one :meth:`Memories.page` call returns.
MAX_PAGE = 10_000


@dataclass(frozen=True)
class MemoryPage:
    """One page of a filtered, sorted memory listing, and how many memories match in all."""

    items: RecordList[Memory]
    total: int
    offset: int
    limit: int

    @property
    def page(self) -> int:
        """This page's number, from 1."""
        return self.offset // self.limit + 1

    @property
    def pages(self) -> int:
        """How many pages the matching memories fill (at least 1)."""
        return max(1, -(-self.total // self.limit))


def _check_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"confidence must be a number between 0 and 1, got {value!r}")
    try:
        value = float(value)
    except OverflowError:
        raise ValidationError("confidence must be between 0 and 1, got a number too large to represent") from None
    if not 0.0 <= value <= 1.0 or value != value:
        raise ValidationError(f"confidence must be between 0 and 1, got {value!r}")
    out: float = value
    return out


class Memories(MemoryHistory, KindManager[Memory]):
    """``vault.memories``: the semantic memory store.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> m = v.memories.remember("project", "project_status", "v1.5 deployed", tags=["Deploy"], priority="high")
    >>> v.memories.remember("project", "project_status", "v1.6 deployed").id == m.id   # same key: updated in place
    True
    >>> [x.key for x in v.memories.by_tag("DEPLOY")]
    ['project_status']
    """

    record_cls = Memory

    @property
    def _table(self) -> MemoryTable:
        return self._ctx.store.memories

    @staticmethod
    def check_record(m: Memory) -> None:
        """What a stored memory is: the write path builds only such records, and an import refuses others."""
        if m.category not in CATEGORIES:
            raise ValidationError(f"category {m.category!r} is not one of {', '.join(CATEGORIES)}")
        if check_key(m.key) != m.key:
            raise ValidationError(f"key {m.key!r} is not snake_case")
        check_text(m.content, "content", max_len=MAX_TEXT, stored=True)
        check_stored_tags(m.tags)
        if m.priority not in PRIORITIES:
            raise ValidationError(f"priority {m.priority!r} is not one of {', '.join(PRIORITIES)}")
        _check_confidence(m.confidence)

    @staticmethod
    def past_agent_limits(fields: Mapping[str, Any]) -> list[str]:
        """An agent's memory is at most :data:`AGENT_MAX_CONFIDENCE` sure (``remember``, ``update``; ``verified``
        is a claim of its own, whoever's memory it is).

        >>> Memories.past_agent_limits({"confidence": 1.0}), Memories.past_agent_limits({"confidence": 0.7})
        (['confidence>0.7'], [])
        """
        return [f"confidence>{AGENT_MAX_CONFIDENCE}"] if "confidence" in past_agent_limits("memory", fields) else []

    # -- writes ---------------------------------------------------------------------------------------------
    @exactly_once
    def remember(self, category: str, key: str, content: str, *, tags: Tags | None = None, priority: str | None = None,
                 source: str | None = None, verified: bool | None = None, confidence: float | None = None,
                 expires: str | datetime | timedelta | None = None) -> Memory:
        """Store a memory, or update it in place when (mind, category, key) exists (the id is kept).

        Parameters
        ----------
        category : one of identity, preference, project, context, knowledge, mistake, procedure, relationship
            (case-insensitive).
        key : snake_case, stable: remembering the same key again updates that memory.
        content : the text (at most 32,768 characters).
        tags : list of strings or "a,b": one word each, trimmed, a leading ``#`` dropped, lower-cased
            (``"#DB, deploy"`` gives ``("db", "deploy")``; see :func:`synapse_nb._util.check_tags`).
            On update, ``None`` keeps the existing tags (a person's write over an agent's unverified memory
            keeps none of its tags, priority or expiry: what the person did not give takes its default).
        priority : critical, high, normal (default) or low. On update, ``None`` keeps the existing one.
        source : "user" or "agent"; defaults to the vault's actor. An agent may only write "agent".
        verified : defaults to True for user writes, False for agent writes; an agent may not set True.
        confidence : in [0, 1]; defaults 1.0 (user) or 0.7 (agent, which may not exceed 0.7).
        expires : an ISO 8601 time or a duration such as "7d"; must be in the future.

        Examples
        --------
        >>> v.remember("procedure", "run_migrations", "alembic upgrade head", expires="30d")  # doctest: +SKIP
        """
        category = check_choice(category, "category", CATEGORIES)
        key = check_key(key)
        content = check_text(content, "content", max_len=MAX_TEXT)
        tag_t = None if tags is None else check_tags(tags)
        prio = None if priority is None else check_choice(priority, "priority", PRIORITIES)
        actor = self._ctx.actor
        src = actor if source is None else check_choice(source, "source", ("user", "agent"))
        if actor == "agent" and src == "user":
            raise PermissionDeniedError("an agent may not write source='user'; its memories are source='agent' "
                                        "proposals until a human verifies them")
        if verified is not None and not isinstance(verified, bool):
            raise ValidationError(f"verified must be True or False, got {verified!r}")
        if actor == "agent" and verified:
            raise PermissionDeniedError("an agent may not mark a memory verified; a human verifies it")
        ver = (src == "user") if verified is None else verified
        if confidence is None:
            conf = 1.0 if src == "user" else AGENT_MAX_CONFIDENCE
        else:
            conf = _check_confidence(confidence)
        if actor == "agent" and conf > AGENT_MAX_CONFIDENCE:
            raise PermissionDeniedError(f"an agent's confidence is at most {AGENT_MAX_CONFIDENCE}, got {conf}")
        ctx = self._ctx
        now = ctx.now()
        exp = _UNSET if expires is None else resolve_expiry(expires, now, "expires")
        table = self._table
        with ctx.store.transaction():
            ts = ctx.store.stamp(ctx.now_ts())
            existing = table.by_key(ctx.mind, category, key)
            self._agent_quota(new_memory=existing is None)
            if existing is None:
                mem = Memory(id=new_id("mem"), mind=ctx.mind, created_at=ts, updated_at=ts, category=category,
                             key=key, content=content, tags=tag_t or (), priority=prio or "normal",
                             source=src, verified=ver, confidence=conf, expires_at=None if exp is _UNSET else exp)
                table.insert(mem)
                self._changed("create", None, mem, ts)
            else:
                if agents_unverified(existing) and (src == "user" or ver):
                    # a person's words over an agent's key: what the person did not give is not taken from the
                    # agent's record (review 14: its tags, a "low" priority and a 2-hour expiry came under the
                    # person's mark, and the person's procedure expired unseen)
                    base = replace(existing, tags=(), priority="normal", expires_at=None)
                else:
                    base = existing
                mem = Memory(id=existing.id, mind=existing.mind, created_at=existing.created_at, updated_at=ts,
                             category=category, key=key, content=content,
                             tags=base.tags if tag_t is None else tag_t, priority=prio or base.priority,
                             source=src, verified=ver, confidence=conf,
                             expires_at=base.expires_at if exp is _UNSET else exp)
                if self.needs_revision(existing):  # an agent's change to a human's memory waits for a human
                    self._propose(existing, mem, ts)
                    return existing
                self._require_owner(existing, "overwrite")
                table.update(mem.id, updated_at=ts, content=content, tags=mem.tags, priority=mem.priority,
                             source=src, verified=ver, confidence=conf, expires_at=mem.expires_at)
                self._changed("update", existing, mem, ts)
        return self._noted(existing, mem)

    def update(self, id: str, *, content: str | None = None, tags: Tags | None = None, priority: str | None = None,
               confidence: float | None = None, expires: str | datetime | timedelta | None = _UNSET) -> Memory:
        """Change fields of a memory by id; fields left as ``None`` are kept. ``expires=None`` clears expiry.

        An agent's edit of its own unverified memory keeps it unverified (confidence at most 0.7); its edit of a
        memory a human wrote or verified is stored as a pending revision (:meth:`revisions`) that changes nothing
        until a human accepts it, and the memory is returned unchanged.
        """
        mem = self.get(id)
        if not self.needs_revision(mem):
            self._require_owner(mem, "update")
        new_content = mem.content if content is None else check_text(content, "content")
        new_tags = mem.tags if tags is None else check_tags(tags)
        new_prio = mem.priority if priority is None else check_choice(priority, "priority", PRIORITIES)
        new_conf = mem.confidence if confidence is None else _check_confidence(confidence)
        new_verified = mem.verified
        if self._ctx.actor == "agent":
            if confidence is not None and new_conf > AGENT_MAX_CONFIDENCE:
                raise PermissionDeniedError(f"an agent's confidence is at most {AGENT_MAX_CONFIDENCE}, got {new_conf}")
            new_conf = min(new_conf, AGENT_MAX_CONFIDENCE)
            new_verified = False  # an agent's edit is a proposal, whatever a human had verified before
        ctx = self._ctx
        now = ctx.now()
        new_exp = mem.expires_at if expires is _UNSET else resolve_expiry(expires, now, "expires")
        with ctx.store.transaction():
            ts = self._begin_write()
            after = replace(mem, updated_at=ts, content=new_content, tags=new_tags, priority=new_prio,
                            confidence=new_conf, verified=new_verified, expires_at=new_exp)
            if self.needs_revision(mem):
                self._propose(mem, after, ts)
                return mem
            self._table.update(mem.id, updated_at=ts, content=new_content, tags=new_tags, priority=new_prio,
                               confidence=new_conf, verified=new_verified, expires_at=new_exp)
            self._changed("update", mem, after, ts)
        return self._noted(mem, self.get(mem.id))

    def verify(self, id: str, *, confidence: float | None = None, seen: Memory | None = None) -> Memory:
        """Mark a memory verified by a human (user actor only). Optionally set its confidence.

        ``seen`` binds the verification to the memory as you read it: when its content, tags, priority, confidence
        or expiry changed since (an agent may edit its own unverified memory at any time), nothing is verified
        (:class:`ConflictError`). The surfaces that show a memory and then verify it (the MemoryBrowser's button,
        ``synapse-nb memory verify ID`` at a terminal) pass what they showed.

        >>> m = v.memories.get("mem_3f9a0c12be47")  # read it  # doctest: +SKIP
        >>> v.memories.verify(m.id, seen=m)  # doctest: +SKIP
        """
        self._require_user("verify a memory")
        if seen is not None and not isinstance(seen, Memory):
            raise ValidationError(f"seen must be the Memory you read, got {type(seen).__name__}")
        mem = self.get(id)
        self._check_seen(mem, seen)
        conf = mem.confidence if confidence is None else _check_confidence(confidence)
        with self._ctx.store.transaction():
            ts = self._ctx.store.stamp(self._ctx.now_ts())
            self._table.update(mem.id, updated_at=ts, verified=True, confidence=conf)
            after = self.get(mem.id)
            if seen is not None:  # checked after the write, which holds the row until commit (a team server's plain
                # BEGIN locks nothing at a read): an edit that landed since the read above rolls it back
                self._check_seen(replace(after, verified=mem.verified, confidence=mem.confidence), seen)
            self._changed("verify", mem, after, ts)
            self._stand(after, ts)
        return after

    def _stand(self, mem: Memory, ts: str) -> None:
        """A memory a human just verified is never left hidden: every open duplicate pair that hid it is decided
        "kept" (both recalled). Behind an agent's record it stands by the rule of pairs
        (:func:`~synapse_nb.provenance.human_record`); behind a person's record, the human just said it stands, and the
        pair's other side may be anything: an agent could pair its memory with a record of its own or, with its own
        SQL on a team vault, with any stored record of a person's, and have it stay out of recall after the human
        verified it."""
        store = self._ctx.store
        for link in store.links.of_record(mem.id):
            if link.status == "open" and link.hidden == mem.id:
                store.links.decide(link.id, "kept", ts)

    @staticmethod
    def _check_seen(mem: Memory, seen: Memory | None) -> None:
        if seen is not None and (seen.id != mem.id or seen.digest != mem.digest):
            what = "is another memory" if seen.id != mem.id else "changed after you read it"
            raise ConflictError(f"memory {mem.id} {what}; nothing was verified. It now reads: {mark(mem)} "
                                f"{mem.address}: {inline(mem.content, 300)}. Read it again, then verify it")

    def delete(self, id: str) -> Memory:
        """Delete a memory and return what it was. An agent may only delete its own memories, and not one a human
        verified (that one is the human's now: an agent proposes changes to it)."""
        mem = self.get(id)
        self._require_owner(mem, "delete")
        if self._ctx.actor == "agent" and mem.verified:
            raise PermissionDeniedError(f"an agent may not delete memory {mem.id}: a human verified it; propose a "
                                        "change instead (remember or update it: a human accepts or rejects)")
        self._delete(mem)
        return mem

    # -- reads ----------------------------------------------------------------------------------------------
    def get_by_key(self, category: str, key: str) -> Memory:
        """The memory stored under (category, key) in this mind."""
        category = check_choice(category, "category", CATEGORIES)
        key = check_key(key)
        mem = self._table.by_key(self._ctx.mind, category, key)
        if mem is None:
            raise NotFoundError(f"no memory {category}/{key} in mind {self._ctx.mind!r}")
        return mem

    def list(self, *, category: str | None = None, include_expired: bool = False,
             limit: int | None = None) -> RecordList[Memory]:
        """Memories ordered by priority then recency; expired ones only when asked."""
        where = MemoryFilter(unexpired=not include_expired,
                             category=None if category is None else check_choice(category, "category", CATEGORIES))
        return RecordList(self._table.list(self._view(), where=where, limit=check_limit(limit)))

    def search(self, q: str, *, tag: str | None = None, category: str | None = None,
               include_expired: bool = False, limit: int = 50) -> RecordList[Memory]:
        """Full-text search (FTS5, stemmed; any text is safe): people's memories (a person's, or verified) first,
        then agents' in what ``limit`` leaves, each best match first.

        An empty query (or one with no words) applies only the filters. ``tag`` is case-insensitive.

        >>> v.memories.search("deploy", tag="deploy")  # doctest: +SKIP
        """
        limit = check_search_limit(limit)
        where = MemoryFilter(unexpired=not include_expired, tag=None if tag is None else _one_tag(tag),
                             category=None if category is None else check_choice(category, "category", CATEGORIES))
        return RecordList(self._table.search(self._view(), check_query(q), where=where, limit=limit))

    def count(self, *, category: str | None = None, include_expired: bool = True) -> int:
        """How many memories the mind holds (of one ``category``; without the expired ones if asked)."""
        where = MemoryFilter(unexpired=not include_expired,
                             category=None if category is None else check_choice(category, "category", CATEGORIES))
        return self._table.count(self._view(), where=where)

    def page(self, q: str = "", *, tag: str | None = None, category: str | None = None,
             priority: str | None = None, verified: bool | None = None, source: str | None = None,
             sort: str | None = None, descending: bool = False, offset: int = 0, limit: int = 50,
             include_expired: bool = False) -> MemoryPage:
        """One page of the memories matching a search and filters, sorted by a column, with the total count.

        For browsing large vaults (the ``MemoryBrowser`` widget): filtering, counting, sorting and
        slicing all happen in SQLite, so a page of a vault of a million memories costs about what a
        page of a small one does.

        Parameters
        ----------
        q : full-text query (FTS5, stemmed); empty: every memory passing the filters.
        tag, category, priority, source : keep only memories with this tag (case-insensitive),
            category, priority ("critical", "high", "normal", "low") or source ("user", "agent").
        verified : True or False keeps only verified or unverified memories; None keeps both.
        sort : one of :data:`PAGE_SORTS` (priority, updated, created, category, key, content, verified,
            source, expires, id); default: best match first for a query, else priority then recency.
        descending : reverse the order of ``sort``.
        offset, limit : the slice to return (``limit`` from 1 to 10,000).

        Examples
        --------
        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> for i in range(25):
        ...     _ = v.remember("knowledge", f"fact_{i:02d}", f"fact number {i}")
        >>> p = v.memories.page(sort="key", offset=10, limit=10)
        >>> p.total, p.page, p.pages, [m.key for m in p.items][:2]
        (25, 2, 3, ['fact_10', 'fact_11'])
        """
        check_query(q)
        if sort is not None and sort not in PAGE_SORTS:
            raise ValidationError(f"sort {sort!r} is not accepted; use one of: {', '.join(PAGE_SORTS)}")
        for name, n, lo, hi in (("offset", offset, 0, 10**12), ("limit", limit, 1, MAX_PAGE)):
            if isinstance(n, bool) or not isinstance(n, int) or not lo <= n <= hi:
                raise ValidationError(f"{name} must be a whole number from {lo} to {hi:,}, got {n!r}")
        if verified is not None and not isinstance(verified, bool):
            raise ValidationError(f"verified must be True, False or None, got {verified!r}")
        where = MemoryFilter(
            unexpired=not include_expired, tag=None if tag is None else _one_tag(tag),
            category=None if category is None else check_choice(category, "category", CATEGORIES),
            priority=None if priority is None else check_choice(priority, "priority", PRIORITIES),
            verified=verified, source=None if source is None else check_choice(source, "source", ("user", "agent")))
        items, total = self._table.page(self._view(), q, where=where, sort=sort, descending=bool(descending),
                                        offset=offset, limit=limit)
        return MemoryPage(items=RecordList(items), total=total, offset=offset, limit=limit)

    def by_tag(self, tag: str, *, include_expired: bool = False) -> RecordList[Memory]:
        """Memories carrying this tag (case-insensitive), by priority then recency."""
        check_text(tag, "tag", max_len=64, multiline=False)
        return self.search("", tag=tag, include_expired=include_expired, limit=1_000_000)

    def expiring(self, within: str | timedelta = "7d") -> RecordList[Memory]:
        """Memories that expire between now and ``within`` from now (e.g. "7d", "12h"): people's first (a person's, a
        memory a person verified: :func:`~synapse_nb.people.people_first`), then agents', each side soonest first.

        Review 73: 250 agent memories expiring sooner put the person's at line 250 of ``%memory expiring``; the
        listings (``memory expiring -n N``, ``%memory expiring``) cut this order at their limit and say what is left.
        """
        delta = parse_duration(within, "within")
        now = self._ctx.now()
        soon = self._table.expiring(self._ctx.mind, fmt_ts(now), fmt_ts(shift(now, delta, "within")))
        return RecordList(people_first(soon))

    def recall_text(self, *, limit: int | None = None) -> str:
        """The plain-text summary an LLM reads: counts, then entries by priority then recency.

        Expired memories are left out (they stay stored until ``prune()``); unverified ones are marked.
        """
        from synapse_nb.recall.assembly import legend_for, record_line  # recall loads on first use (import stays light)

        mems = self.list(limit=limit)
        n_ver = sum(1 for m in mems if m.verified)
        lines = [f"MEMORY ({plural(len(mems), 'entry', 'entries')}: {n_ver} verified, {len(mems) - n_ver} unverified)"]
        if legend := legend_for(mems):
            lines.append(legend)
        if not mems:
            lines.append("(no memories)")
        lines += [record_line(m) for m in mems]
        return "\n".join(lines)


def _one_tag(tag: Any) -> str:
    t = check_tags([tag])
    if not t:
        raise ValidationError("tag must not be empty")
    return t[0]
