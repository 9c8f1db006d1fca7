"""Purging a record: every trace of it goes, and the exports taken earlier that still hold it are named.

``delete`` removes a record from the store, its index and caches but keeps its history (a human can see what was
there and revert it); a **purge** (human only) also removes its history entries, its revisions and its links. No
history entry records the purge itself: it would hold what the purge removes. The caller (``Vault.purge``) then
scrubs the index, FTS and ranking tables and caches in the same call.

Exports are recorded when taken (``exports``: when, where to, whether they held history), so a purge can say which
of them still hold the record: those taken while it existed, and those with history taken after it was deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from synapse_nb.changes import ExportMark
from synapse_nb.errors import NotFoundError, ValidationError
from synapse_nb.models import kind_of_id

if TYPE_CHECKING:
    from synapse_nb.context import Context

__all__ = ["PurgeReport", "purge"]


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

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["exports_holding"] = [m.to_dict() for m in self.exports_holding]
        return out

    def __str__(self) -> str:
        scrubbed = ("index, FTS and caches scrubbed" if self.index_owed is None and self.wal_behind is None else
                    "FTS and caches scrubbed, but not everywhere:")
        lines = [(f"purged {self.kind} {self.id}: record {'deleted' if self.record_deleted else 'already gone'}, "
                  f"{self.history_removed} history entries, {self.revisions_removed} revisions, "
                  f"{self.links_removed} links removed; {scrubbed}")]
        if self.index_owed is not None:
            lines.append(f"index NOT scrubbed (owed): {self.index_owed}")
        if self.wal_behind is not None:
            lines.append(f"WAL NOT truncated: {self.wal_behind}")
        if self.copy_behind is not None:
            lines.append(f"but {self.copy_behind}")
        if self.exports_holding:
            lines.append("exports taken earlier still hold it (delete or re-take them):")
            lines += [f"  {m.taken_at[:19].replace('T', ' ')} UTC  {m.dest or '(returned as text)'}"
                      for m in self.exports_holding]
        else:
            lines.append("no export taken earlier holds it")
        return "\n".join(lines)

    __repr__ = __str__

    def with_copy(self, store: Any, index: Any = None) -> PurgeReport:
        """This report, with what the scrubs in this purge left: in this machine's offline copy (review 33), in the
        vault's SQLite file and its WAL, and in the index folder (``index``: the handle's, if it has one; review
        34)."""
        return replace(self, copy_behind=getattr(store, "copy_behind", None),
                       wal_behind=getattr(store, "wal_behind", None),
                       index_owed=None if index is None else getattr(index, "scrub_behind", None))


def purge(ctx: Context) -> Callable[[str], PurgeReport]:
    """``purge(ctx)(record_id)``: remove the record (any kind) of the context's mind and all its history (human
    only); see the module docstring."""
    def run(record_id: str) -> PurgeReport:
        ctx.require_human("purge a record")
        rid = str(record_id).strip()
        kind = kind_of_id(rid)
        if kind is None:
            raise ValidationError(f"{rid!r} is not a record id (ids look like mem_3f9a0c12be47)")
        store = ctx.store
        entries = [e for e in store.history.of_record(rid) if e.mind == ctx.mind]
        current = store.table(kind).get(ctx.view(), rid)
        if current is None and not entries:
            raise NotFoundError(f"no {kind} {rid} (or history of it) in mind {ctx.mind!r}")
        born = min([e.at for e in entries] + ([current.created_at] if current is not None else []))
        died = None if current is not None else max(e.at for e in entries)
        holding = tuple(m for m in store.exports.all()
                        if m.taken_at >= born and (died is None or m.taken_at <= died or m.history > 0))
        with store.transaction():
            if current is not None:
                store.table(kind).delete(rid)
            n_hist = store.history.purge(rid)
            n_rev = store.revisions.purge(rid)
            n_link = store.links.purge(rid)
        return PurgeReport(id=rid, kind=kind, record_deleted=current is not None, history_removed=n_hist,
                           revisions_removed=n_rev, links_removed=n_link, exports_holding=holding)
    return run
