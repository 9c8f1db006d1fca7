"""Shared machinery of the per-kind managers (``vault.memories``, ``vault.decisions``, ...).

A manager checks values and permissions, then calls its table in the store (``ctx.store.memories``, ...);
it never writes SQL. What an actor may read is decided here and handed to the store as a
:class:`~synapse_nb.store.base.View`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from synapse_nb import history
from synapse_nb._calls import checked_calls
from synapse_nb._util import check_limit, fmt_ts, plural
from synapse_nb.dupes import check_after_commit
from synapse_nb.errors import (
    AmbiguousIdError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    ValidationError,
)
from synapse_nb.models import TABLES, Record, RecordList
from synapse_nb.settings import Settings

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.store.base import KindTable, View

R = TypeVar("R", bound=Record)

_ID_CHARS = re.compile(r"^[A-Za-z0-9_]+$")
#: The history actions after which a written record gets the duplicate check.
WRITES = ("create", "update", "revert", "accept")


def check_id_text(id_or_prefix: object, kind: str, id_prefix: str) -> str:
    """``id_or_prefix`` stripped, when it can be an id or the start of one (:class:`ValidationError` when it is not
    text or is blank; :class:`NotFoundError` when it holds other characters than an id's or is too long)."""
    if not isinstance(id_or_prefix, str) or not id_or_prefix.strip():
        raise ValidationError(f"a {kind} id must be a non-empty string, got {id_or_prefix!r}")
    ident = id_or_prefix.strip()
    if not _ID_CHARS.match(ident) or len(ident) > 64:
        raise NotFoundError(f"no {kind} with id {ident!r} (ids look like '{id_prefix}_3f9a0c12be47')")
    return ident


def resolve_prefix(id_or_prefix: object, kind: str, many: str, id_prefix: str, mind: str,
                   mind_of: Callable[[str], str | None], ids_from: Callable[..., list[str]],
                   readable: Callable[[list[str]], list[str]] | None = None) -> str:
    """The full id for an id or any unique prefix of one, among the ids of ``mind`` (every record kind, revisions
    and conflicts: one rule, one set of messages).

    An exact id counts only in ``mind`` (another mind's id is "not found"); a prefix is looked up among the mind's
    ids (``ids_from(mind, prefix, limit=6)``), and one that matches several raises :class:`AmbiguousIdError`
    naming them (only those ``readable`` keeps: a message never shows an id the actor may not read). ``kind`` and
    ``many`` name the records in messages ("revision", "revisions"); ``id_prefix`` is their ids' ("rev").
    """
    ident = check_id_text(id_or_prefix, kind, id_prefix)
    if mind_of(ident) == mind:
        return ident
    ids = ids_from(mind, ident, limit=6)
    if not ids:
        raise NotFoundError(f"no {kind} with id or id prefix {ident!r} in mind {mind!r}")
    if len(ids) > 1:
        shown_ids = (readable or list)(ids[:5])
        shown = ", ".join(shown_ids) + (", ..." if len(shown_ids) < len(ids) else "")
        raise AmbiguousIdError(f"id prefix {ident!r} matches several {many}"
                               + (f" ({shown})" if shown_ids else "") + "; give more characters")
    return str(ids[0])


def check_search_limit(limit: Any) -> int:
    """A search limit: a whole number from 1 to 10**9 (a search always has one)."""
    if limit is None or check_limit(limit) is None:
        raise ValidationError(f"limit must be a whole number from 1 to 1,000,000,000, got {limit!r}")
    return int(limit)


def check_query(q: Any) -> str:
    if not isinstance(q, str):
        raise ValidationError(f"a search query must be text, got {type(q).__name__}")
    return q


F = TypeVar("F", bound=Callable[..., Any])


def exactly_once(method: F) -> F:
    """A write of one new record, made once however often its caller retries it (on this machine).

    A team vault's commit can be cut off with its outcome unknown (the connection died during COMMIT and the
    server could not be asked in time): the store raises :class:`~synapse_nb.errors.CommitUnknownError`, which says
    to make the same call again. That retry (same method, mind, actor and arguments) asks the server about the
    earlier attempt first (``store.once``): if it committed, the record it wrote is read back and returned, never
    written a second time under a new id. A store without ``once`` (SQLite: a local commit is never in doubt)
    just runs the call.
    """
    @functools.wraps(method)
    def wrapper(self: KindManager[Any], *args: Any, **kw: Any) -> Any:
        once = getattr(self._ctx.store, "once", None)
        if once is None:
            return method(self, *args, **kw)
        key = (method.__qualname__, self._ctx.mind, self._ctx.actor, repr(args), repr(sorted(kw.items())))
        fresh, out = once(key, lambda: method(self, *args, **kw))
        if fresh:
            return out
        written = [rid for kind, rid in out if kind == self.record_cls.kind]
        return self.get(written[0]) if written else method(self, *args, **kw)
    return cast(F, wrapper)  # functools.wraps keeps the signature: the wrapper takes and returns what method does


class KindManager(Generic[R]):
    """Operations common to every kind: get by id or unique prefix, list, count, full-text search.

    A misspelt keyword in a call of a manager's public method is a ValidationError naming what it takes (review 78).
    """

    record_cls: type[Record] = Record
    #: whether the agent actor may name records of this kind by a unique id prefix (lessons: no, so that probing
    #: prefixes cannot find records it was never shown)
    agent_prefixes: bool = True

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        checked_calls(cls)

    @staticmethod
    def check_record(record: Any) -> None:
        """What a valid stored record of this kind is (the write path builds only such records; an import refuses
        others). Every kind's manager defines its own; this base accepts nothing."""
        raise NotImplementedError("each kind's manager defines check_record")

    @staticmethod
    def past_agent_limits(fields: Mapping[str, Any]) -> list[str]:
        """What of a record no agent's write could have written, as claims (``"confidence>0.7"``): the limits its
        write path puts on the agent actor alone. ``fields``: the record's fields by name (an export document, or a
        record's ``to_dict()``); asked of records whose source is not ``"user"``. An import asks ``--trust`` for
        each (review 38: an agent's memory at confidence 1.0 came in without it). This base has none."""
        return []

    @property
    def _table(self) -> KindTable[R]:
        return self._ctx.store.table(self.record_cls.kind)

    def _view(self) -> View:
        """What the current actor may read, now."""
        return self._ctx.view()

    def resolve_id(self, id_or_prefix: str) -> str:
        """The full id for an id or any unique prefix of one (within this kind and mind).

        The same rule for every actor: the id or prefix is looked up among all the records of this kind
        in the mind, so a prefix that is unique for the user is unique for an agent too. Where
        :attr:`agent_prefixes` is False (lessons) an agent gives the full id: prefixes would let it find, by
        probing, records it was never shown. What the actor
        may then do with the record is checked by the caller (:meth:`get` refuses to show an agent a
        pending lesson; an agent may still submit an analysis to one). Messages list only ids the actor
        may read.
        """
        kind, table, mind = self.record_cls.kind, self._table, self._ctx.mind
        if not self.agent_prefixes and self._ctx.actor == "agent":
            ident = check_id_text(id_or_prefix, kind, self.record_cls.prefix)
            if table.mind_of(ident) == mind:
                return ident
            raise NotFoundError(f"no {kind} with id {ident!r} in mind {mind!r} (an agent names a {kind} by its "
                                "full id, as given to it)")

        def readable(ids: list[str]) -> list[str]:
            view = self._view()
            return [i for i in ids if not view.in_force_only or table.get(view, i) is not None]

        return resolve_prefix(id_or_prefix, kind, TABLES[kind], self.record_cls.prefix, mind, table.mind_of,
                              table.ids_from, readable)

    def get(self, id: str) -> R:
        """The record with this id (or unique id prefix)."""
        full = self.resolve_id(id)
        rec = self._table.get(self._view(), full)
        if rec is None:  # named by the caller's own words: an id the actor may not read is not spelled out
            raise PermissionDeniedError(f"{self.record_cls.kind} {id.strip()!r} is not readable by the "
                                        f"{self._ctx.actor} actor")
        return rec

    def list(self, *, limit: int | None = None) -> RecordList[R]:
        """All records of this kind in the mind, newest first."""
        return RecordList(self._table.list(self._view(), limit=check_limit(limit)))

    def count(self) -> int:
        return self._table.count(self._view())

    def search(self, q: str, *, limit: int = 50) -> RecordList[R]:
        """Full-text search (SQLite FTS5, stemmed); any text is safe. An empty query lists everything. People's
        records come first, then agents' in what ``limit`` leaves (review 71: agents' floods hid people's)."""
        limit = check_search_limit(limit)
        return RecordList(self._table.search(self._view(), check_query(q), limit=limit))

    # history and the duplicate check
    def _changed(self, action: str, before: Any, after: Any, at: str) -> None:
        """Append the change's history entry (call inside the change's transaction) and, for a record written, ask
        for the duplicate check once the transaction commits."""
        history.record(self._ctx, action, before, after, at=at)
        if action in ("create", "update"):  # after the write, in its transaction: what agents hold now
            check_agent_totals(self._ctx, new_record=action == "create")
        if after is not None and action in WRITES:
            check_after_commit(self._ctx, after)

    def _delete(self, rec: Any) -> None:
        """Delete a record with its history entry, in one transaction."""
        ctx = self._ctx
        with ctx.store.transaction():
            at = ctx.store.stamp(ctx.now_ts())
            self._table.delete(rec.id)
            self._changed("delete", rec, None, at)

    # permission helpers
    def _require_user(self, action: str) -> None:
        self._ctx.require_human(action)

    def _require_owner(self, record: Any, action: str) -> None:
        if self._ctx.actor == "agent" and getattr(record, "source", "agent") == "user":
            raise PermissionDeniedError(
                f"an agent may not {action} {record.kind} {record.id}: it was written by the user; "
                "propose a new record instead")

    def _begin_write(self, *, new_record: bool = False) -> str:
        """The write's stamp, then the agent quota (call inside the write's transaction): the stamp takes the vault's
        write lock (a team server's plain ``BEGIN`` takes none), so concurrent agents' counts see each other's
        writes; counted first, 30 agents writing at once at a quota of 5 all got through."""
        ts = self._ctx.store.stamp(self._ctx.now_ts())
        self._agent_quota(new_record=new_record)
        return ts

    def _agent_quota(self, *, new_memory: bool = False, new_record: bool = False) -> None:
        """Refuse an agent's write past a quota a human set; call inside the write's transaction. A no-op for
        the user actor (human writes are never limited). ``new_record``: the write adds a record (the bounded
        totals are checked before it, and again after it by :meth:`_changed`)."""
        check_agent_quota(self._ctx, new_memory=new_memory, new_record=new_record or new_memory)


#: The bounded totals: records agents may hold in a mind and in the whole vault, megabytes of their text in it.
TOTAL_SETTINGS = ("agent_records_per_mind", "agent_records_per_vault", "agent_megabytes_per_vault")
#: The quota settings: records agents may write or change per hour (every kind, every mind), memories agents
#: may hold per mind, and the bounded totals.
QUOTA_SETTINGS = ("agent_writes_per_hour", "agent_memories_per_mind", *TOTAL_SETTINGS)
#: A megabyte of agent_megabytes_per_vault.
MEGABYTE = 1_000_000


checked_calls(KindManager)  # its own public methods too (subclasses are checked by __init_subclass__)


def check_agent_quota(ctx: Context, *, new_memory: bool = False, new_record: bool = False) -> None:
    """Raise :class:`~synapse_nb.errors.QuotaExceededError` when the agent actor's write would pass a quota.

    ``agent_writes_per_hour`` counts the agents' writes in the past hour, from the history entries they left (every
    kind; each create, update, delete and analysis counts, so rewriting one record, or creating and deleting one,
    cannot dodge it), plus the revisions agents proposed to humans' memories, in every mind (an agent chooses its
    mind: counted per mind, the quota was as many times larger as the minds it wrote to; on a team vault, each
    agent database login's own writes, so one confined bot cannot use up the others');
    ``agent_memories_per_mind`` the mind's agent memories, checked when a write would add one (``new_memory``);
    the bounded totals (``agent_records_per_mind``, ``agent_records_per_vault``, ``agent_megabytes_per_vault``:
    :func:`check_agent_totals`) when a write would add a record (``new_record``), and again after every agent
    write. All are settings a human may raise (``vault.settings.set("agent_writes_per_hour", 2000)``).

    >>> import synapse_nb as syn, tempfile
    >>> d = tempfile.mkdtemp(); syn.open_vault(d).settings.set("agent_writes_per_hour", 1)  # doctest: +SKIP
    >>> a = syn.open_vault(d, actor="agent"); _ = a.checkpoint("one")  # doctest: +SKIP
    >>> a.checkpoint("two")  # doctest: +SKIP
    Traceback (most recent call last):
    QuotaExceededError: agent write refused: the agents' quota of 1 write per hour is reached ...
    """
    if ctx.actor != "agent":
        return
    store = ctx.store
    limits = Settings(ctx).get_many(QUOTA_SETTINGS)
    per_hour, per_mind = limits["agent_writes_per_hour"], limits["agent_memories_per_mind"]
    written = store.meta.agent_writes(fmt_ts(ctx.now() - timedelta(hours=1)))
    if written >= per_hour:
        raise QuotaExceededError(
            f"agent write refused: the agents' quota of {plural(per_hour, 'write')} per hour is reached "
            f"({written:,} creates, changes, deletes and proposals in the last hour, every mind); a human can raise "
            "the setting agent_writes_per_hour (synapse-nb settings set agent_writes_per_hour N, or "
            "vault.settings.set('agent_writes_per_hour', N)), or wait")
    if new_memory:
        held = store.meta.agent_memories(ctx.mind)
        if held >= per_mind:
            raise QuotaExceededError(
                f"agent write refused: the agents' quota of {per_mind:,} memories in mind {ctx.mind!r} is reached "
                f"({held:,} agent memories); delete stale ones, or a human can raise the setting "
                "agent_memories_per_mind (synapse-nb settings set agent_memories_per_mind N, or "
                "vault.settings.set('agent_memories_per_mind', N))")
    if new_record:
        check_agent_room(ctx, limits)


def check_agent_room(ctx: Context, limits: dict[str, Any] | None = None) -> None:
    """Before an agent's write adds a record: refuse it when a bounded total has been reached (the package's words
    for what :func:`check_agent_totals`, and a team vault's server, would refuse after the write)."""
    if ctx.actor != "agent":
        return
    limits = Settings(ctx).get_many(TOTAL_SETTINGS) if limits is None else limits
    _check_held(ctx, limits, ctx.store.meta.agent_held(ctx.mind), new_record=True, written=False)


def check_agent_totals(ctx: Context, *, new_record: bool) -> None:
    """After an agent's write, inside its transaction: refuse it (the transaction rolls back) if what agents hold
    is now past a bounded total: the records in the write's mind (``agent_records_per_mind``) or in every mind
    (``agent_records_per_vault``) when it added one, the bytes of their text in every mind
    (``agent_megabytes_per_vault``) after any create or change.

    The counts are kept by the vault itself as records are written (SQLite schema v7: triggers; a team vault's
    server, migration 15, which refuses the same statement by itself), so the check reads two rows at any number of
    records. Counted are the records agents hold that no human has taken on: unverified agent memories, pending
    agent lessons, and every agent checkpoint, decision, episode and note (store/sqlite/held_schema.py). An agent
    chooses its mind, so the vault's bounds count every mind: inventing minds does not multiply them.
    """
    if ctx.actor != "agent":
        return
    limits = Settings(ctx).get_many(TOTAL_SETTINGS)
    _check_held(ctx, limits, ctx.store.meta.agent_held(ctx.mind), new_record=new_record, written=True)


def _check_held(ctx: Context, limits: dict[str, Any], held: tuple[int, int, int, int], *, new_record: bool,
                written: bool) -> None:
    """Refuse past a bounded total: before a write (``written`` False) when a count has reached its bound, after it
    when the count is past it (what the team server refuses)."""
    mind_n, _mind_b, all_n, all_b = held
    per_mind, per_vault, megabytes = (int(limits[n]) for n in TOTAL_SETTINGS)

    def past(n: int, bound: int) -> bool:
        return n > bound if written else n >= bound

    what = "unverified memories, pending lessons, checkpoints, decisions, episodes and notes"
    remedy = ("; a human deletes the agents' old records (synapse-nb memory prune --agent-records-older-than 14d, "
              "per mind; one record: synapse-nb memory purge ID), or raises the setting {name} (synapse-nb "
              "settings set {name} N, or vault.settings.set('{name}', N))")
    if new_record and past(mind_n, per_mind):
        raise QuotaExceededError(
            f"agent write refused: the agents' quota of {plural(per_mind, 'record')} held in mind {ctx.mind!r} is "
            f"reached ({mind_n:,} {what} agents hold there)" + remedy.format(name="agent_records_per_mind"))
    if new_record and past(all_n, per_vault):
        raise QuotaExceededError(
            f"agent write refused: the agents' quota of {plural(per_vault, 'record')} held in the whole vault is "
            f"reached ({all_n:,} {what} agents hold in every mind)" + remedy.format(name="agent_records_per_vault"))
    if (new_record or written) and past(all_b, megabytes * MEGABYTE):
        raise QuotaExceededError(
            f"agent write refused: the agents' quota of {megabytes:,} MB of text held in the whole vault is "
            f"reached ({all_b / MEGABYTE:,.1f} MB in {all_n:,} records agents hold in every mind)"
            + remedy.format(name="agent_megabytes_per_vault"))
