"""A semantic table's rows compared with the store, column by column, without its model (review 56).

``index check`` compared the records table's digests only, and a semantic table's row keeps the digest it was
written with: an agent with a shell (lancedb) zeroed a table's vectors and backdated a row's ``expires_at`` keeping
every row's ``digest``, and a person's recall with the channel changed (10 items -> 5, a rule's score 1.55 -> 0.72)
while ``index check`` said "index ok". The CLI never loads the channel's model, so it cannot compare a row's vector
with a fresh one; it can read everything else. :func:`audit` reports, for every readable semantic table of the index
folder, the rows that differ from what the store says they are:

- **stale**: the row's digest, kind, mind, expiry or previous record (``prev``) differs from the store's document,
  or its vector is all zeros while its document is not blank (a model's vector of a non-blank text never is: the
  built-in models normalise theirs; a blank document's is zero);
- **extra**: a row of a record the store does not hold;
- **missing**: a record the store holds without a row, unless the table's queue already holds it (a build in steps,
  an agent's backlog: ``"*"`` counts every id as queued).

A person's ``index check --repair`` drops the stale and extra rows in the whole-index rewrite it runs and queues
their ids (:mod:`~synapse_nb.store.index.queue`): the next recall with the channel embeds them again. A vector
changed to any other non-zero value is not found here (only its model can tell): ``index rebuild`` removes every
semantic table, and the next recall with the channel embeds the vault again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.store.index.dense import _PREFIX
from synapse_nb.store.index.maintenance import connect, one_line, sound_table
from synapse_nb.store.index.queue import Queues
from synapse_nb.store.index.rows import DriftReport

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.store.index.dense import DenseRow

__all__ = ["audit", "merged"]

_COLUMNS = ["id", "kind", "mind", "expires_at", "digest", "prev", "vector"]


def audit(path: Path, expected: Iterable[DenseRow]) -> tuple[dict[str, DriftReport], dict[str, str]]:
    """Each semantic table of the index folder ``path`` read once: the readable ones with their drift from
    ``expected`` (every record's document, :meth:`~synapse_nb.store.indexer.VaultIndex._dense_rows`; tables without
    drift are left out), and the ones that cannot be read as ``DenseIndex`` reads them (any failure: truncated
    files, a column missing, vectors that are no list: :func:`~synapse_nb.store.index.broken.remove` takes them)
    with what failed. ``expected`` is read only when there is a table."""
    names = [n for n in Queues(path).tables() if n.startswith(_PREFIX)]
    if not names:
        return {}, {}
    want = {r.id: (r.digest, r.kind, r.mind, r.expires_at, r.prev, bool(r.doc.strip())) for r in expected}
    db = connect(path)
    queues = Queues(path)
    out: dict[str, DriftReport] = {}
    bad: dict[str, str] = {}
    for name in names:
        try:
            sound_table(path / f"{name}.lance")  # a FIFO there: unreadable, never waited on (review 81)
            res, zero = _read(db, name)
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure to read it is what is asked
            bad[name] = one_line(exc)
            continue
        got = zip(*(res[c].to_pylist() for c in _COLUMNS[:-1]), zero, strict=True)
        queued = queues.read(name)
        seen: set[str] = set()
        stale, extra = set(), set()
        for rid, kind, mind, exp, dig, prev, is_zero in got:
            w = want.get(rid)
            if w is None:
                extra.add(rid)
            elif rid in seen or (dig, kind, mind, exp, prev) != w[:5] or (is_zero and w[5]):
                stale.add(rid)
            seen.add(rid)
        missing = set() if queued is None else set(want) - seen
        pending = set() if queued is None else queued
        rep = DriftReport(missing=tuple(sorted(missing - pending)), stale=tuple(sorted(stale - pending)),
                          extra=tuple(sorted(extra - pending)))
        if not rep.ok:
            out[name] = rep
    return out, bad


def _read(db: Any, name: str) -> tuple[Any, list[bool]]:
    """Table ``name``'s columns as Arrow, and per row whether its vector is all zeros."""
    import numpy as np

    res = db.open_table(name).search().select(_COLUMNS).limit(None).to_arrow()
    vec = res["vector"].combine_chunks()
    dim = vec.type.list_size
    flat = np.asarray(vec.flatten().to_numpy(zero_copy_only=False))
    nonzero: Any = flat.reshape(-1, dim).any(axis=1)
    return res, ([not z for z in nonzero.tolist()] if len(res) else [])


def merged(report: DriftReport, bad: tuple[str, ...], tables: Mapping[str, DriftReport]) -> DriftReport:
    """The records table's ``report`` with the unreadable semantic tables ``bad`` and the drift of the readable ones
    (:func:`audit`): an id is missing, stale or extra when it is in one table."""
    def union(field: str) -> tuple[str, ...]:
        return tuple(sorted({*getattr(report, field), *(i for r in tables.values() for i in getattr(r, field))}))

    return replace(report, missing=union("missing"), stale=union("stale"), extra=union("extra"), broken=bad)
