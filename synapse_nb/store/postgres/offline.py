"""Reading this machine's copy of a team vault while the server cannot be reached (stale, read only).

The copy (``copy.db``, kept by every operation: :mod:`synapse_nb.store.postgres.copy`; or the retrieval index under
``index/``) holds every candidate's text as of the last feed sync (``copy-feed.json`` / ``team-feed.json``).
Offline, a machine may search that copy -- every answer marked stale with its
age -- but never write: a write would fork the team's memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from synapse_nb._times import age_seconds
from synapse_nb.errors import IndexError_
from synapse_nb.models import KIND_NAMES
from synapse_nb.provenance import inline
from synapse_nb.store.index import RetrievalIndex
from synapse_nb.store.postgres.copy import COPY_DB, search_copy_db
from synapse_nb.store.postgres.copy import synced_at as copy_synced_at
from synapse_nb.store.postgres.copyfile import CopyDamaged, health

__all__ = ["OfflineCopy", "search_copy"]


@dataclass(frozen=True)
class OfflineCopy:
    """Hits from the local index copy: (kind, id, text), best first; ``synced_at`` (UTC ISO) and ``age_s``."""

    hits: tuple[tuple[str, str, str], ...]
    synced_at: str | None
    age_s: float | None
    stale: bool = True
    #: why there is no copy to read, when the copy was damaged and set aside (review 85), else None
    damaged: str | None = None


def search_copy(folder: Path, query: str, *, mind: str, now: str, k: int = 10) -> OfflineCopy:
    """Search this machine's copy in ``folder`` (its cache folder of the team vault) for ``query`` in ``mind``: the
    copy every operation keeps (``copy.db``, :mod:`synapse_nb.store.postgres.copy`), else the LanceDB index."""
    if (folder / COPY_DB).is_file():
        at = copy_synced_at(folder)
        try:
            return OfflineCopy(tuple(search_copy_db(folder, query, mind=mind, now=now, k=k)), at, age_seconds(at))
        except CopyDamaged as exc:  # set aside with its feed position: no copy until the next sync rebuilds it
            aside = f"set aside as {exc.aside.name} (kept, never read)" if exc.aside else "left where it is"
            return OfflineCopy((), None, None, damaged=(
                f"this machine's copy was damaged ({inline(exc.reason, 160)}) and {aside}; the next sync with "
                "the server rebuilds it whole"))
    synced_at = copy_synced_at(folder, "team-feed.json")  # a time, or None: read tolerantly (review 57)
    idx = RetrievalIndex(folder / "index")
    if not idx.exists():
        said = health(folder)  # a copy set aside as damaged: said as such until the next sync rebuilds it
        if said is not None and said.startswith("being rebuilt"):
            return OfflineCopy((), None, None, damaged=f"this machine's copy is {said}")
        raise IndexError_(f"this machine has no index copy of the team vault in {folder}/index (it is made by "
                          "`synapse-nb index rebuild` or an index search while the server is reachable)")
    try:
        # the index's rows of a kind of the kinds registry only, as copy.db's (search_copy_db): the index is a
        # folder of files any process of the person's Unix user can rewrite
        hits = [h for h in idx.search(query, mind=mind, now=now, k=k) if h.kind in KIND_NAMES]
        texts: dict[str, str] = {}
        if hits:
            ids = ", ".join("'" + h.id.replace("'", "''") + "'" for h in hits)
            tbl = idx._open()
            got = tbl.search().where(f"id IN ({ids})").select(["id", "text"]).limit(None).to_arrow().to_pylist()
            texts = {r["id"]: r["text"] for r in got}
    finally:
        idx.close()
    return OfflineCopy(tuple((h.kind, h.id, texts.get(h.id, "")) for h in hits), synced_at, age_seconds(synced_at))
