"""The LanceDB retrieval index: a rebuildable cache of SQLite rows for fast candidate search.

SQLite is the system of record. The vault keeps this index in ``<vault>/index/`` (by default
``.synapse/index/`` at the project's git root); it holds, for every searchable record, its id,
kind, mind, text, content digest, timestamps and an embedding. Deleting the folder loses nothing: :meth:`RetrievalIndex.rebuild`
recreates it from SQLite rows, and :meth:`RetrievalIndex.check` / :meth:`RetrievalIndex.repair`
find and fix drift against SQLite's ``id -> digest`` map.

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

Nothing heavy is imported at module import: lancedb, pyarrow and scikit-learn load on first use.

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

import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from synapse_nb.errors import IndexError_, QueryError, SynapseError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from synapse_nb.store.embed import Embedder

__all__ = ["DriftReport", "Embedder", "HashingEmbedder", "Hit", "IndexRow", "RetrievalIndex", "load_embedder"]

SearchMode = Literal["hybrid", "vector", "fts"]

_TABLE = "records"
_FORMAT = "1"
_META_FORMAT = b"synapse.index_format"
_META_EMBEDDER = b"synapse.embedder"
_META_DIM = b"synapse.dim"
_RRF_K = 60
_BATCH = 4096
_CONFLICT_RETRIES = 8
_SMALL_FRAGMENTS_BEFORE_OPTIMIZE = 64
_SCALAR_MIN = 5_000
_FTS_REBUILD_MAX = 200_000
_PARTITION_ROWS = 4096  # IVF_FLAT partition size: num_partitions = rows // 4096
_NPROBES = 16  # partitions scanned per query: about 64k vectors, whatever the table size
_TOKEN = re.compile(r"\w+", re.UNICODE)


def __getattr__(name: str) -> Any:  # re-export the embedders lazily (they import numpy)
    if name in ("Embedder", "HashingEmbedder", "load_embedder"):
        from synapse_nb.store import embed

        return getattr(embed, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        drift); see :meth:`synapse_nb.recall.VaultIndex.check`.
    """

    missing: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    built: bool = True

    @property
    def ok(self) -> bool:
        """True when the index matches SQLite exactly (or was never built: nothing can disagree)."""
        return not (self.missing or self.stale or self.extra)


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _is_conflict(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return "conflict" in msg or "retryable" in msg or "concurrent" in msg


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


class RetrievalIndex:
    """A LanceDB table of records with a vector column and a native full-text index.

    Opening is lazy: nothing touches the disk (or imports lancedb) until the first call.

    Parameters
    ----------
    path : str or Path
        Folder of the index, usually ``<vault>/.synapse/index``.
    embedder : Embedder, optional
        Defaults to :class:`~synapse_nb.store.embed.HashingEmbedder` (256 dims).
    ann_threshold : int, default 150000
        Row count from which :meth:`rebuild` / :meth:`optimize` build an IVF_FLAT vector index;
        below it vector search is exhaustive (exact).

    Raises
    ------
    IndexError_
        From any method when the index is missing (except :meth:`count`, :meth:`check`,
        :meth:`repair` and :meth:`rebuild`), corrupt, or built by a different embedder.

    Examples
    --------
    >>> import tempfile
    >>> idx = RetrievalIndex(tempfile.mkdtemp())
    >>> idx.exists(), idx.count()
    (False, 0)
    >>> idx.rebuild([])
    0
    >>> idx.upsert([IndexRow("dec_1", "decision", "default", "Use SQLite WAL mode", "x", "2026-01-01T00:00:00Z")])
    >>> idx.search("wal", mind="default", now="2026-01-02T00:00:00Z", mode="fts")[0].id
    'dec_1'
    """

    def __init__(self, path: str | Path, embedder: Embedder | None = None, *, ann_threshold: int = 150_000) -> None:
        self.path = Path(path)
        self._embedder = embedder
        self.ann_threshold = int(ann_threshold)
        self._db: Any = None
        self._tbl: Any = None

    def __repr__(self) -> str:
        return f"RetrievalIndex(path={str(self.path)!r}, embedder={self.embedder.name!r})"

    # ------------------------------------------------------------------ plumbing
    @property
    def embedder(self) -> Embedder:
        """The embedder used for rows and queries (the hashing embedder unless one was given)."""
        if self._embedder is None:
            from synapse_nb.store.embed import HashingEmbedder

            self._embedder = HashingEmbedder()
        return self._embedder

    def _schema(self) -> Any:
        import pyarrow as pa

        emb = self.embedder
        return pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("kind", pa.string(), nullable=False),
                pa.field("mind", pa.string(), nullable=False),
                pa.field("text", pa.string(), nullable=False),
                pa.field("digest", pa.string(), nullable=False),
                pa.field("updated_at", pa.string(), nullable=False),
                pa.field("expires_at", pa.string(), nullable=True),
                pa.field("vector", pa.list_(pa.float32(), emb.dim), nullable=False),
            ],
            metadata={_META_FORMAT: _FORMAT.encode(), _META_EMBEDDER: emb.name.encode(), _META_DIM: str(emb.dim).encode()},
        )

    def _table_dir(self) -> Path:
        return self.path / f"{_TABLE}.lance"

    def exists(self) -> bool:
        """Whether an index table exists on disk (it may still be corrupt or stale)."""
        return self._table_dir().is_dir()

    def _connect(self) -> Any:
        if self._db is None:
            os.environ.setdefault("LANCEDB_LOG", "error")
            from datetime import timedelta

            import lancedb

            try:
                self.path.mkdir(exist_ok=True)  # inside the vault folder; never its parents
                # interval 0: every read sees the latest commit of other processes
                self._db = lancedb.connect(str(self.path), read_consistency_interval=timedelta(0))
            except Exception as exc:
                raise IndexError_(f"cannot open retrieval index folder {str(self.path)!r} ({_one_line(exc)})") from exc
        return self._db

    def _open(self) -> Any:
        if self._tbl is not None and self.exists():
            return self._tbl
        self._tbl = None
        self._exact_cache = None
        self._ann_cache = None
        if not self.exists():
            raise IndexError_(f"no retrieval index at {str(self.path)!r}; rebuild it from SQLite")
        db = self._connect()
        try:
            tbl = db.open_table(_TABLE)
            meta = tbl.schema.metadata or {}
        except Exception as exc:
            raise IndexError_(
                f"retrieval index at {str(self.path)!r} is corrupt or unreadable ({_one_line(exc)}); rebuild it from SQLite"
            ) from exc
        emb = self.embedder
        got_name = meta.get(_META_EMBEDDER, b"?").decode()
        got_dim = meta.get(_META_DIM, b"?").decode()
        got_fmt = meta.get(_META_FORMAT, b"?").decode()
        if (got_fmt, got_name, got_dim) != (_FORMAT, emb.name, str(emb.dim)):
            raise IndexError_(
                f"retrieval index at {str(self.path)!r} was built with format {got_fmt}, embedder {got_name!r} "
                f"(dim {got_dim}); this needs format {_FORMAT}, {emb.name!r} (dim {emb.dim}): rebuild it from SQLite"
            )
        self._tbl = tbl
        return tbl

    def _run(self, what: str, fn: Callable[[], Any], *, write: bool = False) -> Any:
        """Run a lancedb call, retrying commit conflicts and translating failures to IndexError_."""
        attempt = 0
        while True:
            try:
                return fn()
            except SynapseError:
                raise
            except Exception as exc:
                if write and attempt < _CONFLICT_RETRIES and _is_conflict(exc):
                    attempt += 1
                    time.sleep(min(0.5, 0.01 * 2**attempt))
                    try:
                        self._tbl.checkout_latest()
                    except Exception:  # noqa: BLE001 - best effort, the retry reports the real error
                        self._tbl = None
                        self._open()
                    continue
                if isinstance(exc, (FileNotFoundError,)) or "not found" in str(exc).lower():
                    self._tbl = None
                raise IndexError_(
                    f"retrieval index at {str(self.path)!r} failed to {what} ({_one_line(exc)}); rebuild it from SQLite"
                ) from exc

    def _to_arrow(self, rows: Sequence[IndexRow]) -> Any:
        import pyarrow as pa

        import numpy as np

        texts = [r.text for r in rows]
        # embed in slices: the sparse n-gram matrices of 32k texts would cost hundreds of MB
        parts = [self.embedder.embed(texts[i : i + _BATCH]) for i in range(0, len(texts), _BATCH)]
        vecs = np.concatenate(parts) if parts else self.embedder.embed([])
        schema = self._schema()
        dim = self.embedder.dim
        if vecs.shape != (len(rows), dim):
            raise IndexError_(f"embedder {self.embedder.name!r} returned shape {vecs.shape}, expected {(len(rows), dim)}")
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
        return pa.Table.from_arrays(cols, schema=schema)

    @staticmethod
    def _validate_rows(rows: Iterable[IndexRow]) -> list[IndexRow]:
        out: list[IndexRow] = []
        for r in rows:
            if not isinstance(r, IndexRow):
                raise ValidationError(f"index rows must be IndexRow instances, got {type(r).__name__}")
            for name in ("id", "kind", "mind", "text", "digest", "updated_at"):
                if not isinstance(getattr(r, name), str):
                    raise ValidationError(f"IndexRow.{name} must be a str, got {type(getattr(r, name)).__name__} for id {r.id!r}")
            if not r.id:
                raise ValidationError("IndexRow.id must be a non-empty string")
            if r.expires_at is not None and not isinstance(r.expires_at, str):
                raise ValidationError(f"IndexRow.expires_at must be an ISO-8601 str or None, got {r.expires_at!r}")
            out.append(r)
        return out

    # ------------------------------------------------------------------ writes
    def upsert(self, rows: Sequence[IndexRow]) -> None:
        """Insert or replace rows by id (one ``merge_insert`` per call; later duplicates in ``rows`` win).

        Rows are searchable as soon as this returns. Commit conflicts with other processes are
        retried a bounded number of times. Once many small writes pile up, :meth:`optimize` runs.

        Parameters
        ----------
        rows : sequence of IndexRow

        Raises
        ------
        IndexError_
            The index is missing, corrupt or built by another embedder.
        """
        batch = self._validate_rows(rows)
        if not batch:
            return
        by_id = {r.id: r for r in batch}
        batch = [by_id[i] for i in sorted(by_id)]
        tbl = self._open()
        for start in range(0, len(batch), 4 * _BATCH):
            data = self._to_arrow(batch[start : start + 4 * _BATCH])
            self._run(
                "upsert rows",
                lambda data=data: self._tbl.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data),
                write=True,
            )
        self._maybe_optimize(tbl)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows by id; unknown ids are ignored.

        Parameters
        ----------
        ids : sequence of str
        """
        if isinstance(ids, str):
            raise ValidationError("delete() takes a sequence of ids, got a single str; wrap it in a list")
        wanted = sorted({str(i) for i in ids})
        if not wanted:
            return
        self._open()
        for start in range(0, len(wanted), 1000):
            chunk = wanted[start : start + 1000]
            pred = "id IN (" + ", ".join(_sql_str(i) for i in chunk) + ")"
            self._run("delete rows", lambda pred=pred: self._tbl.delete(pred), write=True)

    def _maybe_optimize(self, tbl: Any) -> None:
        try:
            stats = tbl.stats()
            small = int(stats["fragment_stats"]["num_small_fragments"])
        except Exception:  # noqa: BLE001 - maintenance is best effort
            return
        if small >= _SMALL_FRAGMENTS_BEFORE_OPTIMIZE:
            self.optimize()

    # ------------------------------------------------------------------ search
    def search(
        self,
        query: str,
        *,
        mind: str,
        kinds: Sequence[str] | None = None,
        now: str,
        k: int = 50,
        mode: SearchMode = "hybrid",
    ) -> list[Hit]:
        """Find up to ``k`` rows of ``mind`` (and ``kinds``) not expired at ``now`` that match ``query``.

        Parameters
        ----------
        query : str
            Free text. A query with no content words (empty, or stop words only) returns ``[]``.
        mind : str
            Only rows of this mind.
        kinds : sequence of str, optional
            Only rows of these kinds (``None``: every kind; empty: nothing).
        now : str
            ISO-8601 UTC timestamp; rows with ``expires_at <= now`` are left out.
        k : int, default 50
            Maximum number of hits.
        mode : {"hybrid", "vector", "fts"}
            ``vector``: cosine similarity; ``fts``: BM25; ``hybrid``: both fused by RRF (K=60).

        Returns
        -------
        list of Hit
            Sorted by score descending, then id ascending.

        Raises
        ------
        QueryError
            Bad ``mode``, ``k``, ``mind``, ``kinds`` or ``now``.
        IndexError_
            The index is missing, corrupt or built by another embedder.
        """
        if mode not in ("hybrid", "vector", "fts"):
            raise QueryError(f"search mode must be 'hybrid', 'vector' or 'fts', got {mode!r}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise QueryError(f"k must be a positive int, got {k!r}")
        if not isinstance(query, str):
            raise QueryError(f"query must be a str, got {type(query).__name__}")
        if not isinstance(mind, str) or not mind:
            raise QueryError(f"mind must be a non-empty str, got {mind!r}")
        if not isinstance(now, str) or not now:
            raise QueryError(f"now must be an ISO-8601 UTC str, got {now!r}")
        if isinstance(kinds, str):
            raise QueryError("kinds must be a sequence of kind names, got a single str; wrap it in a list")
        tbl = self._open()
        if kinds is not None and len(kinds) == 0:
            return []
        if not self._has_content(query):
            return []
        where = f"mind = {_sql_str(mind)} AND (expires_at IS NULL OR expires_at > {_sql_str(now)})"
        if kinds is not None:
            where += " AND kind IN (" + ", ".join(_sql_str(str(x)) for x in sorted(set(kinds))) + ")"
        if mode == "vector":
            return self._vector(tbl, query, where, k, mind, kinds, now)[:k]
        if mode == "fts":
            return self._fts(tbl, query, where, k)[:k]
        vec = self._vector(tbl, query, where, k, mind, kinds, now)
        fts = self._fts(tbl, query, where, k)
        return self._fuse([vec, fts])[:k]

    @staticmethod
    def _has_content(query: str) -> bool:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return any(t not in ENGLISH_STOP_WORDS for t in _TOKEN.findall(query.lower()))

    def _vector(
        self, tbl: Any, query: str, where: str, k: int, mind: str, kinds: Sequence[str] | None, now: str
    ) -> list[Hit]:
        qv = self.embedder.embed([query])[0]
        if not self._has_ann(tbl):
            return self._exact(tbl, qv, k, mind, kinds, now)

        def run() -> Any:
            return (
                tbl.search(qv, vector_column_name="vector")
                .distance_type("cosine")
                .where(where, prefilter=True)
                .select(["id", "kind", "_distance"])
                .limit(k)
                .nprobes(_NPROBES)
                .to_arrow()
            )

        res = self._run("run a vector search", run)
        hits = [
            Hit(i, kd, float(1.0 - d))
            for i, kd, d in zip(res["id"].to_pylist(), res["kind"].to_pylist(), res["_distance"].to_pylist(), strict=True)
        ]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits

    def _exact(self, tbl: Any, qv: np.ndarray, k: int, mind: str, kinds: Sequence[str] | None, now: str) -> list[Hit]:
        """Exhaustive cosine search over an in-memory copy of a small table (sorted by id).

        LanceDB's flat scan costs 6-9 ms at 10k rows; a NumPy matrix-vector product over the
        cached vectors costs well under 1 ms. The copy is reloaded when the table version moves
        (this or another process wrote). Rows are kept sorted by id, so the arithmetic, and
        therefore every score, is identical however the table was written.
        """
        import numpy as np

        ids, kind_codes, kind_names, mind_codes, mind_names, exp_codes, exp_values, vecs = self._load_exact(tbl)
        mcode = int(np.searchsorted(mind_names, mind))
        if mcode >= len(mind_names) or mind_names[mcode] != mind:
            return []
        # expiry codes are ranks among the distinct expires_at strings (null = above all):
        # "expires_at > now" is "code >= number of distinct values <= now"
        mask = (mind_codes == mcode) & (exp_codes >= int(np.searchsorted(exp_values, now, side="right")))
        if kinds is not None:
            wanted = [int(np.searchsorted(kind_names, x)) for x in sorted(set(kinds))]
            wanted = [c for c, x in zip(wanted, sorted(set(kinds)), strict=True) if c < len(kind_names) and kind_names[c] == x]
            mask &= np.isin(kind_codes, np.array(wanted, dtype=kind_codes.dtype))
        sel = np.flatnonzero(mask)
        if sel.size == 0:
            return []
        # einsum stays on this thread: BLAS gemv spreads 10k rows over threads that fight
        # LanceDB's runtime for 2 cores (p95 8 ms instead of 0.3 ms), and its sums are fixed-order
        scores = np.einsum("ij,j->i", vecs, qv.astype(np.float32, copy=False))[sel]
        if sel.size > k:
            # keep everything tied with the k-th best, then order by (score desc, id asc)
            kth = np.partition(scores, sel.size - k)[sel.size - k]
            keep = scores >= kth
            sel, scores = sel[keep], scores[keep]
        order = np.lexsort((sel, -scores))  # ids are sorted, so row position orders ids
        return [Hit(ids[sel[j]], str(kind_names[kind_codes[sel[j]]]), float(scores[j])) for j in order[:k]]

    def _load_exact(self, tbl: Any) -> tuple[Any, ...]:
        import numpy as np

        version = self._cache_key(tbl)
        if self._exact_cache is not None and self._exact_cache[0] == version:
            return self._exact_cache[1]
        res = self._run(
            "load vectors",
            lambda: tbl.search().select(["id", "kind", "mind", "expires_at", "vector"]).limit(None).to_arrow(),
        )
        res = res.sort_by("id")
        dim = self.embedder.dim
        vec_col = res["vector"].combine_chunks()
        vecs = np.ascontiguousarray(vec_col.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim), dtype=np.float32)
        kind_names, kind_codes = np.unique(np.array(res["kind"].to_pylist(), dtype=str), return_inverse=True)
        mind_names, mind_codes = np.unique(np.array(res["mind"].to_pylist(), dtype=str), return_inverse=True)
        expires = res["expires_at"].to_pylist()
        exp_values = np.array(sorted({e for e in expires if e is not None}), dtype=str)
        exp_rank = {e: i for i, e in enumerate(exp_values.tolist())}
        exp_codes = np.array([len(exp_values) if e is None else exp_rank[e] for e in expires], dtype=np.int64)
        data = (
            res["id"].to_pylist(),
            kind_codes.astype(np.int32),
            kind_names,
            mind_codes.astype(np.int32),
            mind_names,
            exp_codes,
            exp_values,
            vecs,
        )
        self._exact_cache = (version, data)
        return data

    def _fts(self, tbl: Any, query: str, where: str, k: int) -> list[Hit]:
        def run() -> Any:
            return (
                tbl.search(query, query_type="fts", fts_columns="text")
                .where(where, prefilter=True)
                .select(["id", "kind", "_score"])
                .limit(k)
                .to_arrow()
            )

        res = self._run("run a full-text search", run)
        hits = [
            Hit(i, kd, float(s))
            for i, kd, s in zip(res["id"].to_pylist(), res["kind"].to_pylist(), res["_score"].to_pylist(), strict=True)
        ]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits

    @staticmethod
    def _fuse(ranked_lists: Sequence[Sequence[Hit]]) -> list[Hit]:
        score: dict[str, float] = {}
        kind: dict[str, str] = {}
        for hits in ranked_lists:
            for rank, h in enumerate(hits, start=1):
                score[h.id] = score.get(h.id, 0.0) + 1.0 / (_RRF_K + rank)
                kind[h.id] = h.kind
        fused = [Hit(i, kind[i], score[i]) for i in sorted(score)]
        fused.sort(key=lambda h: (-h.score, h.id))
        return fused

    _ann_cache: tuple[tuple[int, int, int], bool] | None = None
    _exact_cache: tuple[tuple[int, int, int], tuple[Any, ...]] | None = None

    def _cache_key(self, tbl: Any) -> tuple[int, int, int]:
        """(table version, folder inode, folder ctime): versions restart when another process rebuilds."""
        version = self._run("read the table version", lambda: int(tbl.version))
        try:
            st = os.stat(self._table_dir())
        except OSError as exc:
            raise IndexError_(f"no retrieval index at {str(self.path)!r}; rebuild it from SQLite") from exc
        return (version, st.st_ino, st.st_ctime_ns)

    def _has_ann(self, tbl: Any) -> bool:
        version = self._cache_key(tbl)
        if self._ann_cache is not None and self._ann_cache[0] == version:
            return self._ann_cache[1]
        has = any(getattr(ix, "columns", None) == ["vector"] for ix in self._run("list indices", tbl.list_indices))
        self._ann_cache = (version, has)
        return has

    # ------------------------------------------------------------------ rebuild / maintenance
    def _reset(self) -> Any:
        """Delete whatever is on disk and create an empty table with this embedder's schema."""
        self.close()
        shutil.rmtree(self._table_dir(), ignore_errors=True)
        if self._table_dir().exists():
            raise IndexError_(f"cannot remove the old retrieval index at {str(self._table_dir())!r}; delete it by hand")
        db = self._connect()
        schema = self._schema()
        self._tbl = self._run("create the index table", lambda: db.create_table(_TABLE, schema=schema, mode="overwrite"))
        return self._tbl

    def rebuild(self, rows: Iterable[IndexRow], *, total: int | None = None, progress: bool = False) -> int:
        """Drop the index and recreate it from ``rows`` (typically every searchable SQLite row).

        Rows are embedded and written in batches of 4096; then the full-text index, scalar
        indices and (from ``ann_threshold`` rows) the IVF_FLAT vector index are built.

        Parameters
        ----------
        rows : iterable of IndexRow
            Consumed once; ids must be unique (later duplicates win within a batch only).
        total : int, optional
            Expected row count, for the progress bar.
        progress : bool, default False
            Show a tqdm progress bar.

        Returns
        -------
        int
            Number of rows written.
        """
        tbl = self._reset()
        it: Iterable[IndexRow] = rows
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, desc="indexing", unit="row")
        written = 0
        try:
            for chunk in self._chunks(it, 8 * _BATCH):
                data = self._to_arrow(chunk)
                self._run("write rows", lambda data=data: tbl.add(data), write=True)
                written += len(chunk)
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        self._build_indices(tbl, fresh=True)
        return written

    def _chunks(self, rows: Iterable[IndexRow], size: int) -> Iterator[list[IndexRow]]:
        buf: list[IndexRow] = []
        for r in rows:
            buf.append(r)
            if len(buf) >= size:
                yield self._validate_rows(buf)
                buf = []
        if buf:
            yield self._validate_rows(buf)

    def _build_indices(self, tbl: Any, *, fresh: bool) -> None:
        from lancedb.index import FTS, BTree, IvfFlat

        n = self._run("count rows", lambda: tbl.count_rows())
        names = {ix.name for ix in self._run("list indices", lambda: tbl.list_indices())}
        # scalar indices speed up merge_insert joins and mind prefilters on big tables only
        if n >= _SCALAR_MIN and (fresh or "id_idx" not in names):
            self._run("index ids", lambda: tbl.create_index("id", config=BTree(), replace=True), write=True)
        # without an index the expiry clause scans every row's string: 72 ms -> 24 ms per query at 1M rows
        for col in ("mind", "kind", "expires_at"):
            if n >= _SCALAR_MIN and (fresh or f"{col}_idx" not in names):
                self._run(f"index {col}", lambda col=col: tbl.create_index(col, config=BTree(), replace=True), write=True)
        # a fresh FTS index makes BM25 statistics match a full rebuild exactly; on big tables
        # (a rebuild takes seconds) optimize() keeps LanceDB's incremental merge instead
        if fresh or "text_idx" not in names or n < _FTS_REBUILD_MAX:
            self._run("build the full-text index", lambda: tbl.create_index("text", config=FTS(), replace=True), write=True)
        if n >= self.ann_threshold and (fresh or "vector_idx" not in names):
            cfg = IvfFlat(distance_type="cosine", num_partitions=max(1, n // _PARTITION_ROWS))
            self._run("build the vector index", lambda: tbl.create_index("vector", config=cfg, replace=True), write=True)
        self._ann_cache = None
        self._exact_cache = None

    def optimize(self) -> None:
        """Compact small fragments, fold new rows into the vector index and rebuild the full-text index.

        Called automatically by :meth:`upsert` once 64 small fragments pile up; call it after large
        batches. Versions older than five minutes are cleaned up.
        """
        from datetime import timedelta

        tbl = self._open()
        self._run("optimize", lambda: tbl.optimize(cleanup_older_than=timedelta(minutes=5)), write=True)
        self._build_indices(tbl, fresh=False)

    # ------------------------------------------------------------------ drift
    def _digests(self, tbl: Any) -> tuple[dict[str, str], set[str]]:
        res = self._run("read ids", lambda: tbl.search().select(["id", "digest"]).limit(None).to_arrow())
        got: dict[str, str] = {}
        dup: set[str] = set()
        for i, d in zip(res["id"].to_pylist(), res["digest"].to_pylist(), strict=True):
            if i in got:
                dup.add(i)
            got[i] = d
        return got, dup

    def check(self, expected: Mapping[str, str]) -> DriftReport:
        """Compare the index with SQLite's ``id -> digest`` map.

        A missing index reports every expected id as missing.

        Parameters
        ----------
        expected : mapping of str to str

        Returns
        -------
        DriftReport
        """
        if not self.exists():
            return DriftReport(missing=tuple(sorted(expected)))
        got, dup = self._digests(self._open())
        missing = tuple(sorted(i for i in expected if i not in got))
        stale = tuple(sorted(i for i in expected if i in got and (got[i] != expected[i] or i in dup)))
        extra = tuple(sorted(i for i in got if i not in expected))
        return DriftReport(missing=missing, stale=stale, extra=extra)

    def repair(
        self, rows_for_ids: Callable[[Sequence[str]], Iterable[IndexRow]], expected: Mapping[str, str]
    ) -> DriftReport:
        """Bring the index in line with SQLite and return the drift that was found.

        Extra and stale rows are deleted, then missing and stale rows re-fetched with
        ``rows_for_ids`` and inserted. A missing, corrupt or other-embedder index is
        recreated empty first (so every id is fetched: a full rebuild).

        Parameters
        ----------
        rows_for_ids : callable
            Given sorted ids, returns their current IndexRows from SQLite.
        expected : mapping of str to str
            SQLite's ``id -> digest``.

        Returns
        -------
        DriftReport
            The drift found before repairing.

        Raises
        ------
        IndexError_
            Drift remains afterwards (``rows_for_ids`` did not return matching rows).
        """
        try:
            if not self.exists():
                raise IndexError_("missing")
            report = self.check(expected)
        except IndexError_:
            self._reset()
            self._build_indices(self._tbl, fresh=True)
            report = DriftReport(missing=tuple(sorted(expected)))
        if report.ok:
            return report
        drop = sorted(set(report.extra) | set(report.stale))
        if drop:
            self.delete(drop)
        fetch = sorted(set(report.missing) | set(report.stale))
        if fetch:
            for start in range(0, len(fetch), 8 * _BATCH):
                self.upsert(list(rows_for_ids(fetch[start : start + 8 * _BATCH])))
        if len(fetch) > _BATCH:
            self.optimize()
        after = self.check(expected)
        if not after.ok:
            raise IndexError_(
                f"repair left drift (missing {len(after.missing)}, stale {len(after.stale)}, extra {len(after.extra)}): "
                "rows_for_ids must return the current rows of every id it is given"
            )
        return report

    def count(self) -> int:
        """Number of rows in the index (0 when no index exists)."""
        if not self.exists():
            return 0
        tbl = self._open()
        return int(self._run("count rows", lambda: tbl.count_rows()))

    def close(self) -> None:
        """Drop the open handles (the index stays on disk; it reopens on next use)."""
        self._tbl = None
        self._db = None
        self._ann_cache = None
        self._exact_cache = None
