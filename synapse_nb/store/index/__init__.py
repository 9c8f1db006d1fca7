"""The LanceDB retrieval index: a rebuildable cache of SQLite rows for fast candidate search.

SQLite is the system of record. The vault keeps this index in ``<vault>/index/`` (by default
``.synapse/index/`` at the project's git root); it holds, for every searchable record, its id,
kind, mind, text, content digest, timestamps and an embedding. Deleting the folder loses nothing:
:meth:`RetrievalIndex.rebuild` recreates it from SQLite rows, and :meth:`RetrievalIndex.check` /
:meth:`RetrievalIndex.repair` find and fix drift against SQLite's ``id -> digest`` map.

Search is prefiltered by mind, kinds and expiry, and comes in three modes: ``"vector"``
(cosine similarity over the embedder's vectors), ``"fts"`` (LanceDB's native BM25 full-text
index) and ``"hybrid"`` (both, fused by reciprocal rank fusion with K=60). Results are
sorted by score (descending) then id (ascending), so equal inputs give equal outputs.

Freshness: LanceDB 0.40 searches rows written after an index was built with a flat scan
merged into the indexed results, so a row is found the moment :meth:`RetrievalIndex.upsert`
returns. BM25 statistics of a partly indexed table differ slightly from a freshly built
one; :meth:`RetrievalIndex.optimize` (run automatically once enough small writes pile up)
rebuilds the full-text index so scores match a :meth:`RetrievalIndex.rebuild` exactly.

Scale: below ``ann_threshold`` rows (default 150,000) vector search is exhaustive and exact
(a NumPy copy of the vectors, reloaded when the table version moves). From there an
IVF_FLAT index is built (partitions of about 4096 rows, 16 probed per query, distances exact
within them): it is approximate, so a vector hit near the cut-off may be missed (recall@10
about 0.8-0.97 at 100k on synthetic text, lower at 1M; see docs/decisions/0004), but the same
index files give the same answers every time. Rebuilding retrains k-means, which is seeded
by LanceDB, so partitions and thus ANN answers can differ across rebuilds at that scale.

Nothing heavy is imported at module import: lancedb and pyarrow load on first use, numpy when rows or
queries are embedded, and scikit-learn never (the hashing embedder ports the part of it it needs).

Layout, one job per module: :mod:`~synapse_nb.store.index.rows` (what is stored: rows, hits, drift, the
Arrow schema), :mod:`~synapse_nb.store.index.search` (prefilters, exact vector search, RRF fusion),
:mod:`~synapse_nb.store.index.maintenance` (which LanceDB indices to build, compaction, drift input) and
:mod:`~synapse_nb.store.index.table` (:class:`RetrievalIndex`, the LanceDB table itself).

Examples
--------
>>> import tempfile
>>> from synapse_nb.store.index import IndexRow, RetrievalIndex
>>> idx = RetrievalIndex(tempfile.mkdtemp())
>>> idx.rebuild([IndexRow("mem_1", "memory", "default", "run migrations with alembic upgrade head",
...                       "d1", "2026-01-01T00:00:00Z", None)])
1
>>> [h.id for h in idx.search("how do we run migrations", mind="default", now="2026-06-01T00:00:00Z")]
['mem_1']
>>> idx.check({"mem_1": "d1", "mem_2": "d2"}).missing
('mem_2',)
>>> idx.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synapse_nb.store.index.rows import DriftReport, Hit, IndexRow, SearchMode
from synapse_nb.store.index.table import RetrievalIndex

if TYPE_CHECKING:
    from synapse_nb.store.embed import Embedder, HashingEmbedder, load_embedder

__all__ = ["DriftReport", "Embedder", "HashingEmbedder", "Hit", "IndexRow", "RetrievalIndex", "SearchMode",
           "load_embedder"]

# Lazy exports (the package's one idiom: names for type checkers under TYPE_CHECKING, a plain
# ``from ... import`` inside ``__getattr__`` so the import-graph test sees the edge, the value cached).
_EMBED_NAMES = ("Embedder", "HashingEmbedder", "load_embedder")


def __getattr__(name: str) -> Any:
    if name in _EMBED_NAMES:
        from synapse_nb.store import embed  # imports numpy: only when an embedder is asked for

        value = getattr(embed, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
