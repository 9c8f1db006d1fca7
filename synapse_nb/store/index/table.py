"""The LanceDB table behind :class:`RetrievalIndex`: opening it, writing rows, searching, rebuilding, repairing.

See :mod:`synapse_nb.store.index` for what the index is and how it scales. Nothing heavy is imported
at module import: lancedb and pyarrow load on first use, and the embedder never imports scikit-learn.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import IndexError_, QueryError, SynapseError, ValidationError
from synapse_nb.store.index.maintenance import (
    build_indices,
    chunks,
    connect,
    digests,
    one_line,
    own_index,
    sound_table,
    wants_optimize,
)
from synapse_nb.store.index.rows import (
    EMBED_BATCH,
    FORMAT,
    META_DIM,
    META_EMBEDDER,
    META_FORMAT,
    TABLE,
    DriftReport,
    Hit,
    IndexRow,
    SearchMode,
    arrow_schema,
    drift,
    to_arrow,
    validate_rows,
)
from synapse_nb.store.index.search import ExactVectors, fuse, hits, sql_str, where_clause
from synapse_nb.text import has_content_words

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from synapse_nb.store.embed import Embedder

__all__ = ["RetrievalIndex"]

_CONFLICT_RETRIES = 8
_NPROBES = 16  # partitions scanned per query: about 64k vectors, whatever the table size
_BATCH = EMBED_BATCH  # rows per merge_insert (times 4) and per rebuild write (times 8)


def _is_conflict(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return "conflict" in msg or "retryable" in msg or "concurrent" in msg


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
            from synapse_nb.store.embed import HashingEmbedder  # imports numpy: only when rows are embedded

            self._embedder = HashingEmbedder()
        return self._embedder

    def _table_dir(self) -> Path:
        return self.path / f"{TABLE}.lance"

    def exists(self) -> bool:
        """Whether an index table exists on disk (it may still be corrupt or stale)."""
        return self._table_dir().is_dir()

    def _connect(self) -> Any:
        if self._db is None:
            self._db = connect(self.path)
        return self._db

    def _open(self) -> Any:
        if self._tbl is not None and self.exists():
            return self._tbl
        self._tbl = None
        self._exact_cache = None
        self._ann_cache = None
        if not self.exists():
            raise IndexError_(f"no retrieval index at {str(self.path)!r}; rebuild it from SQLite")
        sound_table(self._table_dir())  # never a FIFO's hang in LanceDB's open (review 81)
        db = self._connect()
        try:
            tbl = db.open_table(TABLE)
            meta = tbl.schema.metadata or {}
        except Exception as exc:
            raise IndexError_(
                f"retrieval index at {str(self.path)!r} is corrupt or unreadable ({one_line(exc)}); "
                "rebuild it from SQLite"
            ) from exc
        emb = self.embedder
        got_name = meta.get(META_EMBEDDER, b"?").decode()
        got_dim = meta.get(META_DIM, b"?").decode()
        got_fmt = meta.get(META_FORMAT, b"?").decode()
        if (got_fmt, got_name, got_dim) != (FORMAT, emb.name, str(emb.dim)):
            raise IndexError_(
                f"retrieval index at {str(self.path)!r} was built with format {got_fmt}, embedder {got_name!r} "
                f"(dim {got_dim}); this needs format {FORMAT}, {emb.name!r} (dim {emb.dim}): rebuild it from SQLite"
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
                    f"retrieval index at {str(self.path)!r} failed to {what} ({one_line(exc)}); rebuild it from SQLite"
                ) from exc

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
        batch = validate_rows(rows)
        if not batch:
            return
        by_id = {r.id: r for r in batch}
        batch = [by_id[i] for i in sorted(by_id)]
        tbl = self._open()
        for start in range(0, len(batch), 4 * _BATCH):
            data = to_arrow(batch[start : start + 4 * _BATCH], self.embedder)

            def merge(data: Any = data) -> Any:  # self._tbl as it is at each attempt (a retry may reopen it)
                return self._tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
                    data)

            self._run("upsert rows", merge, write=True)
        if wants_optimize(tbl):
            self.optimize()

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
            pred = "id IN (" + ", ".join(sql_str(i) for i in chunk) + ")"

            def delete(pred: str = pred) -> Any:
                return self._tbl.delete(pred)

            self._run("delete rows", delete, write=True)

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
        exact: bool = False,
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
        exact : bool, default False
            Vector search scans every row even where an IVF_FLAT index exists (:meth:`has_ann`): the
            ground truth the approximate search is measured against. Slow on big tables.

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
        if not has_content_words(query):
            return []
        where = where_clause(mind, kinds, now)
        if mode == "vector":
            return self._vector(tbl, query, where, k, mind, kinds, now, exact=exact)[:k]
        if mode == "fts":
            return self._fts(tbl, query, where, k)[:k]
        vec = self._vector(tbl, query, where, k, mind, kinds, now, exact=exact)
        fts = self._fts(tbl, query, where, k)
        return fuse([vec, fts])[:k]

    def _vector(
        self, tbl: Any, query: str, where: str, k: int, mind: str, kinds: Sequence[str] | None, now: str,
        *, exact: bool = False,
    ) -> list[Hit]:
        qv = self.embedder.embed([query])[0]
        if not self._has_ann(tbl):
            return self._exact(tbl, qv, k, mind, kinds, now)

        def run() -> Any:
            q = (
                tbl.search(qv, vector_column_name="vector")
                .distance_type("cosine")
                .where(where, prefilter=True)
                .select(["id", "kind", "_distance"])
                .limit(k)
            )
            return (q.bypass_vector_index() if exact else q.nprobes(_NPROBES)).to_arrow()

        return hits(self._run("run a vector search", run), "_distance", distance=True)

    def _exact(self, tbl: Any, qv: np.ndarray, k: int, mind: str, kinds: Sequence[str] | None, now: str) -> list[Hit]:
        """Exhaustive cosine search over an in-memory copy of the table (:class:`ExactVectors`), reloaded
        when the table version moves (this or another process wrote)."""
        version = self._cache_key(tbl)
        if self._exact_cache is None or self._exact_cache[0] != version:
            res = self._run(
                "load vectors",
                lambda: tbl.search().select(["id", "kind", "mind", "expires_at", "vector"]).limit(None).to_arrow(),
            )
            self._exact_cache = (version, ExactVectors.from_arrow(res, self.embedder.dim))
        return self._exact_cache[1].search(qv, k, mind, kinds, now)

    def _fts(self, tbl: Any, query: str, where: str, k: int) -> list[Hit]:
        def run() -> Any:
            return (
                tbl.search(query, query_type="fts", fts_columns="text")
                .where(where, prefilter=True)
                .select(["id", "kind", "_score"])
                .limit(k)
                .to_arrow()
            )

        return hits(self._run("run a full-text search", run), "_score")

    _ann_cache: tuple[tuple[int, int, int], bool] | None = None
    _exact_cache: tuple[tuple[int, int, int], ExactVectors] | None = None

    def _cache_key(self, tbl: Any) -> tuple[int, int, int]:
        """(table version, folder inode, folder ctime): versions restart when another process rebuilds."""
        version = self._run("read the table version", lambda: int(tbl.version))
        try:
            st = os.stat(self._table_dir())
        except OSError as exc:
            raise IndexError_(f"no retrieval index at {str(self.path)!r}; rebuild it from SQLite") from exc
        return (version, st.st_ino, st.st_ctime_ns)

    def has_ann(self) -> bool:
        """Whether vector search is approximate: an IVF_FLAT index exists (the table reached ``ann_threshold``
        rows when it was last rebuilt or optimized). Below that, vector search is exhaustive and exact."""
        return self._has_ann(self._open())

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
        own_index(self.path)  # never what a symlink at the folder names (review 81)
        shutil.rmtree(self._table_dir(), ignore_errors=True)
        if self._table_dir().exists():
            raise IndexError_(f"cannot remove the old retrieval index at {str(self._table_dir())!r}; delete it by hand")
        db = self._connect()
        schema = arrow_schema(self.embedder)
        self._tbl = self._run("create the index table", lambda: db.create_table(TABLE, schema=schema, mode="create"))
        # "create", not "overwrite": the folder is gone, and lance warns on stderr when it overwrites nothing
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
            from tqdm.auto import tqdm  # only for a progress bar (it probes for notebook widgets)

            bar = tqdm(total=total, desc="indexing", unit="row")
        written = 0
        try:
            for chunk in chunks(it, 8 * _BATCH):
                data = to_arrow(chunk, self.embedder)

                def add(data: Any = data) -> Any:
                    return tbl.add(data)

                self._run("write rows", add, write=True)
                written += len(chunk)
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        self._build_indices(tbl, fresh=True)
        return written

    def _build_indices(self, tbl: Any, *, fresh: bool) -> None:
        build_indices(tbl, self._run, fresh=fresh, ann_threshold=self.ann_threshold)
        self._ann_cache = None
        self._exact_cache = None

    def optimize(self) -> None:
        """Compact small fragments, fold new rows into the vector index and rebuild the full-text index.

        Called automatically by :meth:`upsert` once 64 small fragments pile up; call it after large
        batches. Versions older than five minutes are cleaned up.
        """
        tbl = self._open()
        self._run("optimize", lambda: tbl.optimize(cleanup_older_than=timedelta(minutes=5)), write=True)
        self._build_indices(tbl, fresh=False)

    # ------------------------------------------------------------------ drift
    def _digests(self, tbl: Any) -> tuple[dict[str, str], set[str]]:
        return digests(self._run("read ids", lambda: tbl.search().select(["id", "digest"]).limit(None).to_arrow()))

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
        return drift(expected, got, dup)

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
                f"repair left drift (missing {len(after.missing)}, stale {len(after.stale)}, "
                f"extra {len(after.extra)}): "
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
