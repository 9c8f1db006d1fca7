"""The duplicate check an import owes, recorded with the import so that no process's end loses it (a twenty-second
pass).

An import into minds that held records compares the records it brought in as new with those the minds held before
it (:meth:`synapse_nb.transfer_links.FileLinks.check_brought`, review 87/92): once its transaction has committed, in
batches of :data:`~synapse_nb.dupes.BATCH` records, each batch's pairs stored in a transaction of its own. A process
killed (or stopped by a full disk, a lock held past its timeout) between the commit and the last batch lost the rest
of that check, and nothing said it was owed: the imported records that duplicate or contradict the person's never got
their pair, so ``memory conflicts`` never listed them and recall never left an agent's copy out. The history could
not say it either: an import's entries are no write the check reads (:data:`~synapse_nb.dupes.CHECKED_ACTIONS`), and
the file's own entries may be older than the check's mark.

Now the check is **owed** the way a purge's index scrub is (:func:`synapse_nb.purge.owe_scrub`): the import's own
transaction records what its check is to compare, in the vault itself (the ``meta`` row ``dupes:owed``, a JSON
object with an entry per import, on a team vault as on a local one: no schema change; :class:`Owed`): the import's
stamp, the duplicate-check mark to move once every record is compared, whether the file carried its links, and the
records (id and mind, by id). Each batch's transaction stores its pairs and moves the import's entry past the records
it compared (the last one removes the entry), so what is owed is always exactly what is still to compare. The row is
read locked in those transactions (a team vault's other writers wait for it: nothing another process settled
meanwhile is written back). What a process left owed is finished by (:func:`run_owed`):

- a person's next writable open of the vault, for :data:`~synapse_nb.dupes.READ_SECONDS` at most (batches growing
  from a few records: an open stays quick; the rest stays owed);
- a person's next listing of conflicts (``memory conflicts``, the review widget: :func:`check_pending`, before the
  writes that wait; ``--check-all`` finishes it), which also counts what is still owed (:func:`waiting`);
- the next import's check, before its own.

Only a person's handle runs it (a team vault's agent login may write no ``meta`` row but its scan positions, and the
pairs of two people's records are a person's to make). The row holds ids and minds, never a record's text.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from synapse_nb import dupes
from synapse_nb.dupes_reads import Apart
from synapse_nb.errors import PermissionDeniedError, StoreError
from synapse_nb.models import kind_of_id
from synapse_nb.store.records import View

if TYPE_CHECKING:
    from synapse_nb.models import Record
    from synapse_nb.store.base import VaultStore

__all__ = ["Owed", "check_pending", "owe", "owed", "owed_records", "run", "run_at_open", "run_owed", "waiting"]

log = logging.getLogger("synapse_nb.dupes")


@dataclass(frozen=True)
class Owed:
    """One import's duplicate check, as far as it is still owed: ``records`` (id, mind) in the order they are compared
    (by id), ``checked`` of them compared already; ``at`` the import's stamp (each record is compared as written
    then); ``mark``, where the duplicate check's mark moves once all are ("": it stays); ``carried``: the file carried
    its vault's links, so its records are never compared with each other."""

    name: str
    at: str
    mark: str
    carried: bool
    records: tuple[tuple[str, str], ...]
    checked: int = 0

    @property
    def left(self) -> int:
        return len(self.records) - self.checked

    def to_dict(self) -> dict[str, object]:
        return {"at": self.at, "mark": self.mark, "carried": self.carried, "checked": self.checked,
                "records": [list(r) for r in self.records]}

    @classmethod
    def parse(cls, name: str, doc: object) -> Owed | None:
        """An entry read back; None when it is not one this module writes."""
        if not isinstance(doc, dict):
            return None
        try:
            records = tuple((str(i), str(m)) for i, m in doc["records"])
            out = cls(name, str(doc["at"]), str(doc["mark"]), bool(doc["carried"]), records, int(doc["checked"]))
        except (ValueError, TypeError, KeyError):
            return None
        return out if 0 <= out.checked <= len(records) else None


def _entries(store: VaultStore, *, lock: bool = False) -> dict[str, object]:
    text = store.links.owed(lock=lock)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        log.warning("the vault's owed duplicate checks (meta key dupes:owed) are not what synapse_nb writes; they "
                    "are read as none")
        return {}
    return doc


def _write(store: VaultStore, entries: dict[str, object]) -> None:
    store.links.set_owed(json.dumps(entries, sort_keys=True, separators=(",", ":")))


class Progress(Protocol):
    """What a caller counts of a check (:class:`synapse_nb.transfer_links.BroughtCheck`)."""

    checked: int
    pairs: int


@dataclass
class _Count:
    checked: int = 0
    pairs: int = 0


def owe(store: VaultStore, records: Sequence[Record], at: str, carried: bool, mark: str) -> Owed:
    """In the import's transaction: record that its check of ``records`` (already sorted by id, each as written at
    ``at``) is owed, and return it (run it once the transaction has committed: :func:`run`)."""
    entry = Owed(f"{at}:{secrets.token_hex(6)}", at, mark, carried, tuple((r.id, r.mind) for r in records))
    entries = _entries(store, lock=True)
    entries[entry.name] = entry.to_dict()
    _write(store, entries)
    return entry


def _settle(store: VaultStore, entry: Owed, checked: int) -> None:
    """In a batch's transaction: ``entry`` compared up to ``checked`` (all: it goes). An entry another process
    settled meanwhile (gone, or further on) is left as it is."""
    entries = _entries(store, lock=True)
    now = Owed.parse(entry.name, entries.get(entry.name))
    if now is None or (now.checked >= checked and checked < len(entry.records)):
        return
    if checked >= len(entry.records):
        del entries[entry.name]
    else:
        entries[entry.name] = replace(now, checked=checked).to_dict()
    _write(store, entries)


def owed(store: VaultStore) -> list[Owed]:
    """The checks imports still owe, oldest first (an entry this module did not write is left out, and said)."""
    out = []
    for name, doc in sorted(_entries(store).items()):
        entry = Owed.parse(name, doc)
        if entry is None:
            log.warning("the vault's owed duplicate check %r is not one synapse_nb writes; it is left as it is", name)
            continue
        out.append(entry)
    return out


def owed_records(store: VaultStore) -> int:
    """How many records imports still owe the duplicate check (counted with what waits: ``dupes.waiting``)."""
    return sum(e.left for e in owed(store))


def _read(store: VaultStore, entry: Owed, wanted: Sequence[tuple[str, str]]) -> dict[str, Record]:
    """The records ``wanted`` of ``entry`` as stored now, each as written at the import's stamp (one deleted since is
    not read: there is nothing of it to pair)."""
    by: dict[tuple[str, str], list[str]] = {}
    for rid, mind in wanted:
        kind = kind_of_id(rid)
        if kind is not None and kind in dupes.CHECKED_KINDS:
            by.setdefault((mind, str(kind)), []).append(rid)
    out: dict[str, Record] = {}
    for (mind, kind), rids in sorted(by.items()):
        for rid, rec in store.table(kind).get_many(View(mind, dupes._ALL_TIME), rids).items():
            out[rid] = replace(rec, updated_at=entry.at)
    return out


def run(store: VaultStore, entry: Owed, records: Sequence[Record] | None = None, *, seconds: float | None = None,
        limit: int | None = None, progress: Progress | None = None) -> bool:
    """Compare what is left of ``entry`` (``records``: the import's own, as it wrote them; else read from the store),
    each batch's pairs and the row's new state in one transaction; with ``seconds``, batches growing from a few
    records and none started once ``seconds`` have passed; with ``limit``, that many records at most. Returns whether
    the check is done (the row removed, the mark moved). Raises what a batch's transaction raised (the row stays as
    the batch before left it)."""
    known = {r.id: r for r in records} if records is not None else None
    wanted = entry.records if entry.carried else entry.records[entry.checked:]
    recs = known if known is not None else _read(store, entry, wanted)
    every = Apart.of([recs[i] for i, _ in entry.records if i in recs]) if entry.carried else None
    size = dupes.BATCH if seconds is None else dupes._FIRST_BATCH
    began, start, total = dupes._clock(), entry.checked, len(entry.records)
    while True:
        if start > entry.checked and seconds is not None and dupes._clock() - began >= seconds:
            return False
        end = min(total, start + (size if limit is None else max(1, min(size, limit - (start - entry.checked)))))
        batch = [recs[i] for i, _ in entry.records[start:end] if i in recs]
        # a file without links: its records pair with those of the batches before (later ones pair with these)
        apart = every if every is not None else Apart.of([recs[i] for i, _ in entry.records[end:] if i in recs])
        found = dupes.find_links(batch, store, at=entry.at, apart=apart) if batch else []
        with store.transaction():
            store.links.insert(found)
            if end >= total and entry.mark:  # every record compared: the mark moves, as a copy's
                store.links.advance(entry.mark)
            _settle(store, entry, end)  # the last batch: nothing is owed
        if progress is not None:
            progress.checked += len(batch)
            progress.pairs += len(found)
        if end >= total:
            return True
        start = end
        if limit is not None and start - entry.checked >= limit:
            return False
        size = min(dupes.BATCH, 2 * size)


def run_owed(store: VaultStore, *, seconds: float | None = None, limit: int | None = None,
             skip: str | None = None) -> int:
    """Finish the checks imports left owed (but ``skip``), oldest first, within ``seconds`` and ``limit`` records (None:
    all of them). Returns how many records were compared. Raises what a batch's transaction raised."""
    count = _Count()
    began = dupes._clock()
    for entry in owed(store):
        if entry.name == skip:
            continue
        took = None if seconds is None else max(0.0, seconds - (dupes._clock() - began))
        if (took is not None and took <= 0 and count.checked) or (limit is not None and count.checked >= limit):
            break
        run(store, entry, seconds=took, limit=None if limit is None else limit - count.checked, progress=count)
    return count.checked


def check_pending(store: VaultStore, limit: int | None = None, seconds: float | None = None) -> int:
    """:func:`synapse_nb.dupes.check_pending` (what writes left waiting) after what imports left owed (first, within
    the same ``limit``, each record counted as an entry, and ``seconds``): a person's listing of conflicts. Returns
    how many entries were read."""
    began = dupes._clock()
    done = run_owed(store, seconds=seconds, limit=limit)
    if done and ((limit is not None and done >= limit) or (seconds is not None and dupes._clock() - began >= seconds)):
        return done
    rest = None if seconds is None else max(0.0, seconds - (dupes._clock() - began))
    return done + dupes.check_pending(store, None if limit is None else limit - done, rest)


def waiting(store: VaultStore) -> int:
    """:func:`synapse_nb.dupes.waiting` (history entries the check has still to read) and the records imports still
    owe it."""
    return dupes.waiting(store) + owed_records(store)


def run_at_open(store: VaultStore) -> None:
    """At a person's writable open: the checks imports left owed, for :data:`~synapse_nb.dupes.READ_SECONDS` at most
    (the rest stays owed: the next open, ``memory conflicts`` or import runs it). Never fails the open."""
    try:
        if not owed(store):
            return
        run_owed(store, seconds=dupes.READ_SECONDS)
    except (PermissionDeniedError, StoreError) as exc:
        log.warning("the duplicate check an import left owed did not run (%s); `synapse-nb memory conflicts "
                    "--check-all` runs it", exc)
