"""Semantic memories: category + stable key (upserted), content, tags, priority, provenance, expiry."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from synapse_nb._util import (
    MAX_TEXT,
    check_choice,
    check_key,
    check_tags,
    check_text,
    fmt_ts,
    new_id,
    parse_duration,
    plural,
    resolve_expiry,
    shift,
    shorten,
)
from synapse_nb.errors import PermissionDeniedError, ValidationError
from synapse_nb.kinds._base import KindManager, dumps, loads
from synapse_nb.models import CATEGORIES, PRIORITIES, Memory, RecordList

__all__ = ["PAGE_SORTS", "Memories", "MemoryPage"]

_PRIO_RANK = {p: i for i, p in enumerate(PRIORITIES)}
#: Highest confidence an agent may give its own (unverified) memories.
AGENT_MAX_CONFIDENCE = 0.7

_UNSET: Any = object()

#: Orders :meth:`Memories.page` accepts: name -> ORDER BY (the id always breaks ties, so a page is stable).
PAGE_SORTS = {
    "priority": "t.priority {asc}, t.updated_at {desc}",
    "updated": "t.updated_at {asc}",
    "created": "t.created_at {asc}",
    "category": "t.category {asc}, t.key {asc}",
    "key": "t.key {asc}",
    "content": "t.content {asc}",
    "verified": "t.verified {asc}, t.updated_at {desc}",
    "source": "t.source {asc}, t.updated_at {desc}",
    "expires": "t.expires_at IS NULL {asc}, t.expires_at {asc}",  # never-expiring last (first reversed)
    "id": "t.id {asc}",
}
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
    return value


class Memories(KindManager[Memory]):
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

    table = "memories"
    record_cls = Memory
    order_by = "priority ASC, updated_at DESC, id DESC"

    def _from_row(self, r: sqlite3.Row) -> Memory:
        return Memory(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
            category=r["category"], key=r["key"], content=r["content"], tags=tuple(loads(r["tags"], [])),
            priority=PRIORITIES[r["priority"]], source=r["source"], verified=bool(r["verified"]),
            confidence=float(r["confidence"]), expires_at=r["expires_at"],
        )

    def _not_expired(self) -> tuple[str, tuple[str]]:
        return "($expires_at IS NULL OR $expires_at > ?)", (self._v._now_ts(),)

    # -- writes ---------------------------------------------------------------------------------------------
    def remember(self, category: str, key: str, content: str, *, tags: Any = None, priority: str | None = None,
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
            On update, ``None`` keeps the existing tags.
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
        prio = None if priority is None else _PRIO_RANK[check_choice(priority, "priority", PRIORITIES)]
        actor = self._v.actor
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
        now = self._v._now()
        exp = _UNSET if expires is None else resolve_expiry(expires, now, "expires")
        store = self._v._store
        with store.transaction() as c:
            ts = self._v._stamp(c)
            row = c.execute("SELECT * FROM memories WHERE mind = ? AND category = ? AND key = ?",
                            (self._v.mind, category, key)).fetchone()
            if row is None:
                mem = Memory(id=new_id("mem"), mind=self._v.mind, created_at=ts, updated_at=ts, category=category,
                             key=key, content=content, tags=tag_t or (), priority=PRIORITIES[2 if prio is None else prio],
                             source=src, verified=ver, confidence=conf, expires_at=None if exp is _UNSET else exp)
                c.execute(
                    "INSERT INTO memories(id, mind, category, key, content, tags, priority, source, verified, "
                    "confidence, expires_at, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (mem.id, mem.mind, category, key, content, dumps(list(mem.tags)), _PRIO_RANK[mem.priority], src,
                     int(ver), conf, mem.expires_at, ts, ts),
                )
            else:
                existing = self._from_row(row)
                self._require_owner(existing, "overwrite")
                mem = Memory(id=existing.id, mind=existing.mind, created_at=existing.created_at, updated_at=ts,
                             category=category, key=key, content=content,
                             tags=existing.tags if tag_t is None else tag_t,
                             priority=existing.priority if prio is None else PRIORITIES[prio], source=src,
                             verified=ver, confidence=conf,
                             expires_at=existing.expires_at if exp is _UNSET else exp)
                c.execute(
                    "UPDATE memories SET content = ?, tags = ?, priority = ?, source = ?, verified = ?, "
                    "confidence = ?, expires_at = ?, updated_at = ? WHERE id = ?",
                    (content, dumps(list(mem.tags)), _PRIO_RANK[mem.priority], src, int(ver), conf, mem.expires_at,
                     ts, mem.id),
                )
            self._v._touched("memory", mem.id)
        return mem

    def update(self, id: str, *, content: str | None = None, tags: Any = None, priority: str | None = None,
               confidence: float | None = None, expires: Any = _UNSET) -> Memory:
        """Change fields of a memory by id; fields left as ``None`` are kept. ``expires=None`` clears expiry.

        An agent may only update its own (source agent) memories, and its edit makes the memory
        unverified again (confidence at most 0.7) even if a human had verified it.
        """
        mem = self.get(id)
        self._require_owner(mem, "update")
        new_content = mem.content if content is None else check_text(content, "content")
        new_tags = mem.tags if tags is None else check_tags(tags)
        new_prio = mem.priority if priority is None else check_choice(priority, "priority", PRIORITIES)
        new_conf = mem.confidence if confidence is None else _check_confidence(confidence)
        new_verified = mem.verified
        if self._v.actor == "agent":
            if confidence is not None and new_conf > AGENT_MAX_CONFIDENCE:
                raise PermissionDeniedError(f"an agent's confidence is at most {AGENT_MAX_CONFIDENCE}, got {new_conf}")
            new_conf = min(new_conf, AGENT_MAX_CONFIDENCE)
            new_verified = False  # an agent's edit is a proposal, whatever a human had verified before
        now = self._v._now()
        new_exp = mem.expires_at if expires is _UNSET else resolve_expiry(expires, now, "expires")
        with self._v._store.transaction() as c:
            c.execute("UPDATE memories SET content = ?, tags = ?, priority = ?, confidence = ?, verified = ?, "
                      "expires_at = ?, updated_at = ? WHERE id = ?",
                      (new_content, dumps(list(new_tags)), _PRIO_RANK[new_prio], new_conf, int(new_verified), new_exp,
                       self._v._stamp(c), mem.id))
            self._v._touched("memory", mem.id)
        return self.get(mem.id)

    def verify(self, id: str, *, confidence: float | None = None) -> Memory:
        """Mark a memory verified by a human (user actor only). Optionally set its confidence."""
        self._require_user("verify a memory")
        mem = self.get(id)
        conf = mem.confidence if confidence is None else _check_confidence(confidence)
        with self._v._store.transaction() as c:
            c.execute("UPDATE memories SET verified = 1, confidence = ?, updated_at = ? WHERE id = ?",
                      (conf, self._v._stamp(c), mem.id))
            self._v._touched("memory", mem.id)
        return self.get(mem.id)

    def delete(self, id: str) -> Memory:
        """Delete a memory and return what it was. An agent may only delete its own memories."""
        mem = self.get(id)
        self._require_owner(mem, "delete")
        with self._v._store.transaction() as c:
            c.execute("DELETE FROM memories WHERE id = ?", (mem.id,))
            self._v._touched("memory", mem.id, deleted=True)
        return mem

    # -- reads ----------------------------------------------------------------------------------------------
    def get_by_key(self, category: str, key: str) -> Memory:
        """The memory stored under (category, key) in this mind."""
        category = check_choice(category, "category", CATEGORIES)
        key = check_key(key)
        rows = self._rows("category = ? AND key = ?", (category, key))
        if not rows:
            from synapse_nb.errors import NotFoundError

            raise NotFoundError(f"no memory {category}/{key} in mind {self._v.mind!r}")
        return self._from_row(rows[0])

    def list(self, *, category: str | None = None, include_expired: bool = False,
             limit: int | None = None) -> RecordList[Memory]:
        """Memories ordered by priority then recency; expired ones only when asked."""
        where, params = ("1", ())
        if not include_expired:
            w, p = self._not_expired()
            where, params = w, p
        if category is not None:
            where += " AND category = ?"
            params = (*params, check_choice(category, "category", CATEGORIES))
        return self._list(where, params, limit=limit)

    def search(self, q: str, *, tag: str | None = None, category: str | None = None,
               include_expired: bool = False, limit: int = 50) -> RecordList[Memory]:
        """Full-text search (FTS5, stemmed; any text is safe), best match first.

        An empty query (or one with no words) applies only the filters. ``tag`` is case-insensitive.

        >>> v.memories.search("deploy", tag="deploy")  # doctest: +SKIP
        """
        where, params = "1", ()
        if not include_expired:
            where, params = self._not_expired()
        if tag is not None:
            t = check_tags([tag])
            if not t:
                raise ValidationError("tag must not be empty")
            where += " AND $id IN (SELECT rid FROM tags WHERE tag = ? AND kind = 'memory')"
            params = (*params, t[0])
        if category is not None:
            where += " AND $category = ?"
            params = (*params, check_choice(category, "category", CATEGORIES))
        if not isinstance(q, str):
            raise ValidationError(f"a search query must be text, got {type(q).__name__}")
        from synapse_nb.kinds._base import fts_query

        if fts_query(q) is None:
            return self._list(where, params, limit=limit)
        return self._search(q, where=where, params=params, limit=limit)

    def count(self, *, category: str | None = None, include_expired: bool = True) -> int:
        """How many memories the mind holds (of one ``category``; without the expired ones if asked)."""
        where, params = "1", ()
        if not include_expired:
            where, params = self._not_expired()
        if category is not None:
            where += " AND $category = ?"
            params = (*params, check_choice(category, "category", CATEGORIES))
        row = self._v._store.query_one(f"SELECT count(*) FROM memories WHERE mind = ? AND ({where})".replace("$", ""),
                                       (self._v.mind, *params))
        return int(row[0]) if row else 0

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
        from synapse_nb.kinds._base import fts_query

        if not isinstance(q, str):
            raise ValidationError(f"a search query must be text, got {type(q).__name__}")
        if sort is not None and sort not in PAGE_SORTS:
            raise ValidationError(f"sort {sort!r} is not accepted; use one of: {', '.join(PAGE_SORTS)}")
        for name, n, lo, hi in (("offset", offset, 0, 10**12), ("limit", limit, 1, MAX_PAGE)):
            if isinstance(n, bool) or not isinstance(n, int) or not lo <= n <= hi:
                raise ValidationError(f"{name} must be a whole number from {lo} to {hi:,}, got {n!r}")
        if verified is not None and not isinstance(verified, bool):
            raise ValidationError(f"verified must be True, False or None, got {verified!r}")
        where = ["t.mind = ?"]
        params: list[Any] = [self._v.mind]
        if not include_expired:
            where.append("(t.expires_at IS NULL OR t.expires_at > ?)")
            params.append(self._v._now_ts())
        if tag is not None:
            t = check_tags([tag])
            if not t:
                raise ValidationError("tag must not be empty")
            where.append("t.id IN (SELECT rid FROM tags WHERE tag = ? AND kind = 'memory')")
            params.append(t[0])
        if category is not None:
            where.append("t.category = ?")
            params.append(check_choice(category, "category", CATEGORIES))
        if priority is not None:
            where.append("t.priority = ?")
            params.append(_PRIO_RANK[check_choice(priority, "priority", PRIORITIES)])
        if verified is not None:
            where.append("t.verified = ?")
            params.append(int(verified))
        if source is not None:
            where.append("t.source = ?")
            params.append(check_choice(source, "source", ("user", "agent")))
        match = fts_query(q)
        source_sql = "memories t"
        if match is not None:
            # CROSS JOIN keeps the FTS match as the outer loop (else SQLite may probe the FTS once per row)
            source_sql = "memories_fts f CROSS JOIN memories t ON t.rowid = f.rowid"
            where.insert(0, "memories_fts MATCH ?")
            params.insert(0, match)
        if sort is None:
            order = "f.rank, t.updated_at DESC" if match is not None else "t.priority ASC, t.updated_at DESC"
        else:
            asc, desc = ("DESC", "ASC") if descending else ("ASC", "DESC")
            order = PAGE_SORTS[sort].format(asc=asc, desc=desc)
        if sort != "id":
            order += ", t.id ASC"
        cond = " AND ".join(where)
        store = self._v._store
        total = int(store.query_one(f"SELECT count(*) FROM {source_sql} WHERE {cond}", tuple(params))[0])
        rows = store.query(f"SELECT t.* FROM {source_sql} WHERE {cond} ORDER BY {order} LIMIT ? OFFSET ?",
                           (*params, limit, offset))
        return MemoryPage(items=RecordList(self._from_row(r) for r in rows), total=total, offset=offset,
                          limit=limit)

    def by_tag(self, tag: str, *, include_expired: bool = False) -> RecordList[Memory]:
        """Memories carrying this tag (case-insensitive), by priority then recency."""
        check_text(tag, "tag", max_len=64, multiline=False)
        return self.search("", tag=tag, include_expired=include_expired, limit=1_000_000)

    def expiring(self, within: str | timedelta = "7d") -> RecordList[Memory]:
        """Memories that expire between now and ``within`` from now (e.g. "7d", "12h"), soonest first."""
        delta = parse_duration(within, "within")
        now = self._v._now()
        return self._list("expires_at IS NOT NULL AND expires_at > ? AND expires_at <= ?",
                          (fmt_ts(now), fmt_ts(shift(now, delta, "within"))), order="expires_at ASC, id ASC")

    def recall_text(self, *, limit: int | None = None) -> str:
        """The plain-text summary an LLM reads: counts, then entries by priority then recency.

        Expired memories are left out (they stay stored until ``prune()``); unverified ones are marked.
        """
        mems = self.list(limit=limit)
        n_ver = sum(1 for m in mems if m.verified)
        lines = [f"MEMORY ({plural(len(mems), 'entry', 'entries')}: {n_ver} verified, {len(mems) - n_ver} unverified)"]
        if not mems:
            lines.append("(no memories)")
        for m in mems:
            flag = "" if m.verified else " [unverified]"
            tags = f" #{' #'.join(m.tags)}" if m.tags else ""
            lines.append(f"- [{m.priority}] {m.category}/{m.key}: {shorten(m.content, 400)}{tags}{flag}")
        return "\n".join(lines)
