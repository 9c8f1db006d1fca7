"""Every change of every record, kept: the history entries the write path appends, and the reads over them
(a record's versions, a record or a whole mind as it was at a time), pruning and purging (humans only).

The kind managers, import, prune and ``verify --fix`` call :func:`record` inside the transaction of the change, so a
change and its history entry commit (or roll back) together. An entry holds the record as it was before the change;
the record after it is the next entry's ``before`` (or the record as stored now), so reading a version costs no
second copy of every write.

>>> import synapse_nb as syn, tempfile
>>> v = syn.open_vault(tempfile.mkdtemp())
>>> m = v.remember("project", "status", "v1 deployed"); _ = v.remember("project", "status", "v2 deployed")
>>> [(e.version, e.action, e.actor) for e in v.history(m.id)]
[(1, 'create', 'user'), (2, 'update', 'user')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from synapse_nb._util import check_limit, fmt_ts, parse_duration, parse_ts, shift
from synapse_nb.changes import HistoryEntry, state_json
from synapse_nb.errors import NotFoundError, ValidationError
from synapse_nb.models import KIND_BY_NAME, Lesson, Record, kind_of_id

if TYPE_CHECKING:
    from datetime import timedelta

    from synapse_nb.context import Context

__all__ = ["REPLACING", "Versions", "as_of_ts", "deleted_by_agent", "entries", "mind_as_of", "prune", "recent",
           "record", "record_many", "state_at"]


def record(ctx: Context, action: str, before: Record | None, after: Record | None, *, at: str,
           rid: str | None = None, kind: str | None = None) -> HistoryEntry:
    """Append one history entry for a change of one record (inside the change's transaction). A change whose
    record the actor may not read (an agent's analysis of a pending lesson) names it by ``rid`` and ``kind``: its
    entry holds no content and no digest."""
    if before is None and after is None:
        if rid is None or kind is None:
            raise ValueError("a history entry names a record")
        version = ctx.store.history.next_version(rid)
        e = HistoryEntry(id=entry_id(rid, version), rid=rid, kind=kind, mind=ctx.mind, version=version,
                         action=action, actor=ctx.actor, surface=ctx.surface, at=at, digest_before=None,
                         digest_after=None)
        ctx.store.history.append([e])
        return e
    return record_many(ctx, action, [(before, after)], at=at)[0]


def record_many(ctx: Context, action: str, changes: Sequence[tuple[Record | None, Record | None]], *,
                at: str) -> list[HistoryEntry]:
    """:func:`record` for several records changed alike (prune, an import), in one statement."""
    out: list[HistoryEntry] = []
    history = ctx.store.history
    for before, after in changes:
        rec = after if after is not None else before
        if rec is None:
            continue
        if before is None and action == "create":
            version = 1
        else:
            version = history.next_version(rec.id)
        out.append(HistoryEntry(
            id=entry_id(rec.id, version), rid=rec.id, kind=rec.kind, mind=rec.mind, version=version, action=action,
            actor=ctx.actor, surface="import" if action == "import" else ctx.surface, at=at,
            digest_before=None if before is None else before.digest,
            digest_after=None if after is None else after.digest, before=state_json(before)))
    history.append(out)
    return out


def entry_id(rid: str, version: int) -> str:
    """A history entry's id: its record and version (unique per vault; the same wherever the entry travels).

    >>> entry_id("mem_3f9a0c12be47", 2)
    'hst_mem_3f9a0c12be47_v2'
    """
    return f"hst_{rid}_v{version}"


def _knows(e: HistoryEntry) -> bool:
    """Whether an entry tells what its record was before it (an agent's analysis of a lesson it may not read
    does not; nor does one whose ``before`` describes no record of it, written with SQL: review 46)."""
    if e.before is not None:
        return not e.unreadable
    return e.action in ("create", "import")


def as_of_ts(value: object, name: str = "as_of") -> str:
    """A point in time for a read: an aware ``datetime`` or ISO 8601 text, as the store's fixed-width UTC text."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError(f"{name} must be timezone-aware (UTC), got a naive datetime")
        return fmt_ts(value)
    if isinstance(value, str):
        try:
            return fmt_ts(parse_ts(value))
        except (ValueError, ValidationError):
            raise ValidationError(f"{name} must be an ISO 8601 time such as 2026-12-01T10:00:00Z, got "
                                  f"{value!r}") from None
    raise ValidationError(f"{name} must be a datetime or ISO 8601 text, got {type(value).__name__}")


#: The actions by which a person's write replaces what a memory held (:meth:`Versions.overwritten`).
REPLACING = ("update", "revert", "accept")


class Versions(list[HistoryEntry]):
    """A record's history entries, oldest first, with each version's record (:meth:`record`)."""

    current: Record | None = None
    #: What a reader should know besides the versions (None: nothing): a memory named by key says which other
    #: memories, deleted ones too, held that key before it, by id (review 91).
    note: str | None = None

    def record(self, version: int) -> Record | None:
        """The record as version ``version`` left it (None: that version deleted it, or it is not known:
        :meth:`known`)."""
        i = self._index(version)
        return self[i + 1].previous if i + 1 < len(self) else self.current

    def known(self, version: int) -> bool:
        """Whether what version ``version`` left is known: the next entry's ``before`` is readable (one written
        with SQL that describes no record of it is not: review 46)."""
        i = self._index(version)
        return i + 1 >= len(self) or not self[i + 1].unreadable

    def from_file(self) -> frozenset[int]:
        """The versions an imported file supplied (review 92): those before an ``import`` entry that took the
        record as the file's history left it (its ``before`` is set: :func:`synapse_nb.transfer_entries.
        owed_import_entries`; a ``--trust`` copy into empty minds writes none, its history being the original's).
        Their time, actor and surface are what the file says, not what this vault saw."""
        last = max((i for i, e in enumerate(self) if e.action == "import" and e.before is not None), default=0)
        return frozenset(e.version for e in self[:last])

    def overwritten(self) -> HistoryEntry | None:
        """On a team vault, the entry of another person's login whose verified version the newest entry (a person's
        update, revert or acceptance of an agent's revision: each writes new content over it) replaced, else None: the
        person who typed it and the version to revert to (review 90; a local vault records no logins). A person's
        write over another's stays a write, not a revision: people are peers (docs/team.md, "Who changed what").

        The version replaced is the last person's entry before the newest, whatever agents' entries came between: an
        agent's change to a verified memory is a revision a person accepts, so an agent's entry after a person's
        (one its login's SQL appended before migration 35 refused it, review 97) changed nothing of what the person
        left, and reading only the entry before the newest hid whose version was replaced."""
        if len(self) < 2 or self[-1].action not in REPLACING or self[-1].actor != "user":
            return None
        last = self[-1]
        prev = next((e for e in reversed(self[:-1]) if e.actor == "user"), None)
        before = last.previous
        if prev is None or not (last.login and prev.login and prev.login != last.login):
            return None
        return prev if before is not None and getattr(before, "verified", False) else None

    def _index(self, version: int) -> int:
        for i, e in enumerate(self):
            if e.version == version:
                return i
        raise NotFoundError(f"no version {version} in this history (versions: "
                            f"{', '.join(str(e.version) for e in self) or 'none'})")

    def __str__(self) -> str:
        if not self:
            return "(no history)"
        filed = self.from_file()
        return "\n".join([e.line(from_file=e.version in filed) for e in self]
                         + ([f"note: {self.note}"] if self.note else []))


def entries(ctx: Context, rid: str) -> Versions:
    """The history of one record of the context's mind, oldest first (a deleted record's too)."""
    got = [e for e in ctx.store.history.of_record(rid) if e.mind == ctx.mind]
    if not got:
        raise NotFoundError(f"no history for {rid!r} in mind {ctx.mind!r}")
    out = Versions(got)
    kind = got[-1].kind
    out.current = ctx.store.table(kind).get(ctx.view(), rid)
    filed = sorted(out.from_file())
    if filed:  # review 92: an agent's export, backdated and its surface changed, read as this vault's own history
        what = "its time, actor and surface are" if len(filed) == 1 else "their times, actors and surfaces are"
        out.note = (f"{_versions(filed)} came from an imported file (v{out[len(filed)].version} is the import): "
                    f"{what} what the file says, not what this vault recorded")
    return out


def _versions(vs: list[int]) -> str:
    """``v1``, ``v1 and v2``, ``v1 to v3``."""
    return f"v{vs[0]}" if len(vs) == 1 else f"v{vs[0]} {'and' if len(vs) == 2 else 'to'} v{vs[-1]}"


def state_at(ctx: Context, rid: str, at: str) -> Record | None:
    """The record with id ``rid`` as it was at ``at`` (None: it did not exist then, or was deleted)."""
    later = [e for e in ctx.store.history.of_record(rid) if e.at > at and e.mind == ctx.mind and _knows(e)]
    if later:
        return later[0].previous
    kind = kind_of_id(rid)
    if kind is None:
        return None
    rec = ctx.store.table(kind).get(ctx.view(), rid)
    return rec if rec is not None and rec.created_at <= at else None


def mind_as_of(ctx: Context, at: str) -> list[Record]:
    """Every record of the context's mind as it was at ``at`` (every kind), by kind then id: the records stored now
    rewound through the entries stamped after ``at``, and the records deleted since brought back. The agent reads as
    it reads now: of lessons, only those it may read today (approved and in force now; withdrawn, rejected, expired,
    pending or deleted ones never come back to it)."""
    store, view = ctx.store, ctx.view()
    first_after: dict[str, HistoryEntry] = {}
    for e in store.history.after(ctx.mind, at):
        if _knows(e):
            first_after.setdefault(e.rid, e)
    out: dict[str, Record] = {}
    for kind in KIND_BY_NAME:
        for rec in store.table(kind).list(view):
            if rec.id not in first_after and rec.created_at <= at:
                out[rec.id] = rec
    for rid, e in first_after.items():
        prev = e.previous
        if prev is not None:
            out[rid] = prev
    for rid, r in out.items():  # read today, a lesson whose time ran out since reads "expired": it was in force then
        if isinstance(r, Lesson) and r.status == "expired" and r.expires_at is not None and r.expires_at > at:
            out[rid] = replace(r, status="approved")
    if ctx.actor == "agent":  # the agent's read rule, as now (review 64: a lesson the person withdrew came back)
        readable = {x.id for x in store.table("lesson").list(ctx.view(in_force_only=True))}
        out = {rid: r for rid, r in out.items() if r.kind != "lesson" or rid in readable}
    return sorted(out.values(), key=lambda r: (r.kind, r.id))


def prune(ctx: Context, older_than: str | timedelta) -> int:
    """Remove the mind's history entries older than ``older_than`` (a duration such as "180d"), keeping each
    record's newest entry (human only). Returns how many were removed."""
    ctx.require_human("prune history")
    age = parse_duration(older_than, "older_than")
    before = fmt_ts(shift(ctx.now(), -age, "older_than"))
    with ctx.store.transaction():
        return ctx.store.history.prune(ctx.mind, before)


def recent(ctx: Context, limit: int | None = 50) -> list[HistoryEntry]:
    """The mind's latest entries, newest first."""
    n = check_limit(limit) or 1_000_000
    return ctx.store.history.of_mind(ctx.mind, limit=n)


def deleted_by_agent(ctx: Context, ids: Sequence[str]) -> bool:
    """Whether each of these records' last history entry (its deletion, committed with it) names the agent: an
    agent's deletion leaves the index's rewrite owed (a purge leaves no entry: a person's). One read of the store
    for them all (``history.last_of``), however many records the deletion took."""
    last = ctx.store.history.last_of(ids)
    return all(rid in last and last[rid].actor == "agent" for rid in ids)
