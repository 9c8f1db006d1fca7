"""An import's history lines written into the vault, and the ``import`` entry each record the file brings gets
(:mod:`synapse_nb.transfer`'s import flow; the lines' format and checks: :mod:`synapse_nb.transfer_history`).

In a copy (``--trust``, into minds that held no record) a record whose history the file brought, ending in the record
as the file brings it, gets no ``import`` entry: its history already ends in it (review 91: the ``import`` entry said
the last version had deleted the record, so the copy's ``memory history`` differed from the original's and ``memory
revert --to`` that version was refused). Anywhere else the ``import`` entry follows the file's history, which
``memory history`` shows as the file's (review 92).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import ValidationError
from synapse_nb.transfer_claims import trust_claims
from synapse_nb.transfer_history import (
    HISTORY_KIND,
    STORED_HISTORY,
    UNBROUGHT_HISTORY,
    check_create_first,
    history_entry,
)

if TYPE_CHECKING:
    from synapse_nb.changes import HistoryEntry
    from synapse_nb.models import Record
    from synapse_nb.store.base import VaultStore

__all__ = ["import_history", "owed_import_entries"]


def import_history(store: VaultStore, hist: list[tuple[int, dict[str, Any]]], brought: set[str],
                   counts: dict[str, int], claim: Callable[[str, str, list[str]], None],
                   fail: Callable[[int, str], ValidationError]) -> tuple[str, set[str]]:
    """Write the file's history lines (after its records, in the import's transaction); returns the latest stamp
    written ("" for none) and the records whose entries were written.

    An entry whose version the vault holds is skipped (history is append-only: the first copy stands, also within
    the file). Each entry written makes its own claims (:func:`trust_claims`, passed to ``claim(record, text,
    made)``) and, unless its record is one of ``brought`` (the records the file brings in as new) with no history in
    the vault yet, a claim of where it goes (:data:`STORED_HISTORY`, :data:`UNBROUGHT_HISTORY`). A create must stay
    its record's first entry in the history the import leaves (:func:`check_create_first`), with or without trust;
    ``fail(lineno, message)`` is the error an import raises for a line.
    """
    entries = [(lineno, doc, history_entry(doc)) for lineno, doc in hist]
    held = {rid: store.history.of_record(rid)  # read before any entry is written, once a record
            for rid in dict.fromkeys(e.rid for _, _, e in entries)}
    after = {rid: list(es) for rid, es in held.items()}  # each record's history as the import leaves it
    versions = {rid: {x.version for x in es} for rid, es in held.items()}
    written: list[tuple[int, dict[str, Any], HistoryEntry]] = []
    for lineno, doc, e in entries:
        if e.version in versions[e.rid]:
            counts["skipped"] += 1
            continue
        versions[e.rid].add(e.version)
        after[e.rid].append(e)
        written.append((lineno, doc, e))
    latest = ""
    stored: dict[str, bool] = {}
    wrote: set[str] = set()
    for lineno, doc, e in written:
        try:
            check_create_first(e, after[e.rid])
        except ValidationError as exc:
            raise fail(lineno, str(exc)) from None
        if not store.history.insert_entry(e):
            counts["skipped"] += 1
            continue
        wrote.add(e.rid)
        counts[HISTORY_KIND] = counts.get(HISTORY_KIND, 0) + 1
        made = trust_claims(doc)
        if held[e.rid] or e.rid not in brought:
            if e.rid not in stored:
                stored[e.rid] = bool(held[e.rid]) or store.table(e.kind).mind_of(e.rid) is not None
            made.append(STORED_HISTORY if stored[e.rid] else UNBROUGHT_HISTORY)
        claim(f"history of {e.kind} {e.rid} v{e.version}", e.action, made)
        latest = max(latest, e.at)
    return latest, wrote


def owed_import_entries(store: VaultStore, imported: Sequence[tuple[None, Record]], wrote: set[str], *,
                        copy: bool) -> list[tuple[Record | None, Record]]:
    """The ``import`` history entries the imported records get, as ``(before, record)`` pairs: every record gets one
    but, in a ``copy`` (a ``--trust`` import into minds that held no record), those whose history the file brought
    (``wrote``: the records its history lines were written for) and whose last entry, in the history the import
    leaves, left the record as the file brings it (its mind, kind and digest).

    Such a copy's record's history already ends in it. An ``import`` entry after it said the last version had
    deleted the record (an entry's ``before`` is what the previous version left, and an import's is none), so in the
    copy ``record(n)`` of that version was None, ``memory revert --to n`` was refused and ``as_of`` reads between it
    and the import found no memory (review 91: export --history -> import of a memory a person had reverted);
    without it, ``memory history`` of the copy lists what the original lists.

    Outside a copy the file's history is what the file says (its times, actors and surfaces: an agent's export
    backdated, its surface changed, imported by a person, read "v1 2024-01-02 create [agent via mcp]" as this
    vault's own; review 92), so the ``import`` entry follows it, with the record as the file brings it for
    ``before``: that version reads as leaving it, and ``memory history`` shows the entries before as the file's
    (:meth:`synapse_nb.history.Versions.from_file`). A record without such history gets one with no ``before``: it
    was not here.
    """
    owed: list[tuple[Record | None, Record]] = []
    for _, rec in imported:
        if rec.id in wrote and not copy:
            owed.append((rec, rec))
            continue
        last = store.history.of_record(rec.id)[-1:] if rec.id in wrote else []
        if not (last and last[0].mind == rec.mind and last[0].kind == rec.kind and last[0].digest_after == rec.digest):
            owed.append((None, rec))
    return owed
