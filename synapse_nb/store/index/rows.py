"""What the retrieval index stores: its rows, their Arrow schema, and the drift between it and SQLite.

Plain data and pure functions: nothing here opens the index. pyarrow and numpy load on first use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from synapse_nb.errors import IndexError_, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.store.embed import Embedder

__all__ = ["DriftReport", "Hit", "IndexRow", "SearchMode", "arrow_schema", "drift", "to_arrow", "validate_rows"]

SearchMode = Literal["hybrid", "vector", "fts"]

#: The LanceDB table's name, and the metadata an index carries so a mismatched one is rebuilt, not misread.
TABLE = "records"
FORMAT = "1"
META_FORMAT = b"synapse.index_format"
META_EMBEDDER = b"synapse.embedder"
META_DIM = b"synapse.dim"
#: Texts embedded per call: the sparse n-gram matrices of 32k texts would cost hundreds of MB.
EMBED_BATCH = 4096


@dataclass(frozen=True)
class IndexRow:
    """One searchable record, as the vault hands it to the index.

    Attributes
    ----------
    id, kind, mind, text : str
        Record id (``mem_...``), kind (``memory``, ``lesson``, ...), mind and the text to search.
    digest : str
        Content hash computed by the caller; :meth:`RetrievalIndex.check` compares it with SQLite's.
    updated_at : str
        ISO-8601 UTC timestamp.
    expires_at : str or None
        ISO-8601 UTC timestamp after which the row is not returned; ``None`` never expires.
    """

    id: str
    kind: str
    mind: str
    text: str
    digest: str
    updated_at: str
    expires_at: str | None = None


@dataclass(frozen=True)
class Hit:
    """A search result: record id, kind and score (higher is better; fused RRF score in hybrid mode)."""

    id: str
    kind: str
    score: float


@dataclass(frozen=True)
class DriftReport:
    """Differences between the index and SQLite's ``id -> digest`` map (each tuple sorted).

    Attributes
    ----------
    missing : tuple of str
        Ids in SQLite but not in the index.
    stale : tuple of str
        Ids whose digest differs (or that appear more than once in the index).
    extra : tuple of str
        Ids in the index but not in SQLite.
    built : bool
        False when there was no index on disk yet (a vault's index is built on first use, so that is not
        drift); see ``vault.index.check()``.
    broken : tuple of str
        The semantic tables whose rows cannot be read (``vault.index.check()``; with ``repair``, removed: the next
        recall with the channel builds them from SQLite).
    held : tuple of str
        Ids of records no longer in the system of record whose rows an older version of a table in the index folder
        still holds in its files (a deletion's text not scrubbed from this machine's index yet; review 91: a team
        machine's sync applied another machine's purge as LanceDB's soft delete, and the check said all was well).
        The next sync's scrub, or a person's ``index check --repair``, removes them.
    """

    missing: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    built: bool = True
    broken: tuple[str, ...] = ()
    held: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the index matches SQLite exactly (or was never built: nothing can disagree), every semantic
        table can be read and no older version holds a deleted record's row."""
        return not (self.missing or self.stale or self.extra or self.broken or self.held)


def drift(expected: Mapping[str, str], got: Mapping[str, str], duplicated: Iterable[str] = ()) -> DriftReport:
    """Compare SQLite's ``id -> digest`` map with the index's (``duplicated``: ids stored more than once).

    >>> drift({"a": "1", "b": "2"}, {"a": "9", "c": "3"})
    DriftReport(missing=('b',), stale=('a',), extra=('c',), built=True, broken=(), held=())
    """
    dup = frozenset(duplicated)
    missing = tuple(sorted(i for i in expected if i not in got))
    stale = tuple(sorted(i for i in expected if i in got and (got[i] != expected[i] or i in dup)))
    extra = tuple(sorted(i for i in got if i not in expected))
    return DriftReport(missing=missing, stale=stale, extra=extra)


def validate_rows(rows: Iterable[IndexRow]) -> list[IndexRow]:
    """The rows as a list, each checked to be an :class:`IndexRow` of strings with a non-empty id."""
    out: list[IndexRow] = []
    for r in rows:
        if not isinstance(r, IndexRow):
            raise ValidationError(f"index rows must be IndexRow instances, got {type(r).__name__}")
        for name in ("id", "kind", "mind", "text", "digest", "updated_at"):
            if not isinstance(getattr(r, name), str):
                raise ValidationError(
                    f"IndexRow.{name} must be a str, got {type(getattr(r, name)).__name__} for id {r.id!r}")
        if not r.id:
            raise ValidationError("IndexRow.id must be a non-empty string")
        if r.expires_at is not None and not isinstance(r.expires_at, str):
            raise ValidationError(f"IndexRow.expires_at must be an ISO-8601 str or None, got {r.expires_at!r}")
        out.append(r)
    return out


def arrow_schema(embedder: Embedder) -> Any:
    """The table's Arrow schema for ``embedder``, with the format and embedder recorded in its metadata."""
    import pyarrow as pa  # seconds to import: only once the index is used

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("mind", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("digest", pa.string(), nullable=False),
            pa.field("updated_at", pa.string(), nullable=False),
            pa.field("expires_at", pa.string(), nullable=True),
            pa.field("vector", pa.list_(pa.float32(), embedder.dim), nullable=False),
        ],
        metadata={META_FORMAT: FORMAT.encode(), META_EMBEDDER: embedder.name.encode(),
                  META_DIM: str(embedder.dim).encode()},
    )


def to_arrow(rows: Sequence[IndexRow], embedder: Embedder) -> Any:
    """The rows, embedded, as an Arrow table of :func:`arrow_schema`."""
    import numpy as np
    import pyarrow as pa  # seconds to import: only once the index is used

    texts = [r.text for r in rows]
    parts = [embedder.embed(texts[i : i + EMBED_BATCH]) for i in range(0, len(texts), EMBED_BATCH)]
    vecs = np.concatenate(parts) if parts else embedder.embed([])
    dim = embedder.dim
    if vecs.shape != (len(rows), dim):
        raise IndexError_(f"embedder {embedder.name!r} returned shape {vecs.shape}, expected {(len(rows), dim)}")
    flat = pa.array(vecs.reshape(-1), type=pa.float32())
    cols = [
        pa.array([r.id for r in rows], pa.string()),
        pa.array([r.kind for r in rows], pa.string()),
        pa.array([r.mind for r in rows], pa.string()),
        pa.array([r.text for r in rows], pa.string()),
        pa.array([r.digest for r in rows], pa.string()),
        pa.array([r.updated_at for r in rows], pa.string()),
        pa.array([r.expires_at for r in rows], pa.string()),
        pa.FixedSizeListArray.from_arrays(flat, dim),
    ]
    return pa.Table.from_arrays(cols, schema=arrow_schema(embedder))
