"""What the index folder's older table versions still hold of records the system of record no longer has (review 91).

LanceDB keeps every version of a table until it is cleaned up: a deletion applied by a sync is a soft delete, so the
deleted row's text stays in the data files the older versions name, and ``lancedb``'s ``checkout(version)`` reads it
back. ``index check`` compared the latest version only and said "index ok" on a team machine holding another
machine's purged text. :func:`held` reads the ``id`` column of every older version of every table (no text, no
vector) and names the ids the store no longer holds: the whole-index scrub
(:func:`synapse_nb.store.index.scrub.rewrite`) is what removes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from synapse_nb.store.index.maintenance import connect, sound_table

__all__ = ["held"]


def held(path: Path, kept: Iterable[str]) -> tuple[str, ...]:
    """The ids not in ``kept`` (every record the store holds) whose rows an older version of a table in the index
    folder ``path`` still holds, sorted; a row the latest version holds is left out (that is drift: ``extra``). A
    table that cannot be read is skipped (``index check`` reports it as broken)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pa.array(sorted(set(kept)), type=pa.string())
    db = connect(path)
    out: set[str] = set()
    for name in sorted(db.list_tables().tables):
        try:
            sound_table(path / f"{name}.lance")  # a FIFO there: never waited on (review 81)
            tbl = db.open_table(name)
            versions = sorted(int(v["version"]) for v in tbl.list_versions())
            live = _ids(tbl)
            old: set[str] = set()
            for version in versions[:-1]:
                tbl.checkout(version)
                ids = _ids(tbl)
                old.update(ids.filter(pc.invert(pc.is_in(ids, value_set=keep))).to_pylist())
            out |= old - set(live.to_pylist())
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001, S112 - an unreadable table is the audit's to report, not this
            continue
    return tuple(sorted(out))


def _ids(tbl: Any) -> Any:
    """The ``id`` column of the table's checked-out version (an Arrow array)."""
    return tbl.search().select(["id"]).limit(None).to_arrow().column("id")
