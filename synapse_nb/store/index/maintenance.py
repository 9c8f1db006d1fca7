"""Upkeep of the retrieval index's LanceDB table: which indices to build, when to compact, drift input.

:class:`~synapse_nb.store.index.RetrievalIndex` calls these from ``rebuild``, ``optimize``,
``upsert`` and ``check``; the policy (thresholds and what each index buys) lives here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from synapse_nb.errors import IndexError_
from synapse_nb.store.index.rows import IndexRow, validate_rows

__all__ = ["build_indices", "chunks", "connect", "digests", "one_line", "own_index", "sound_table", "wants_optimize"]


def one_line(exc: BaseException) -> str:
    """An exception as one short line (its type and first line), for the index's error messages."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def connect(path: Path) -> Any:
    """A LanceDB connection to the index folder ``path`` (created inside the vault folder, never its parents), whose
    reads see the latest commit of other processes (consistency interval 0); :class:`IndexError_` if it cannot be
    opened. Imports lancedb (seconds): call it only once the index is used."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    own_index(path)
    try:
        path.mkdir(exist_ok=True)
        return lancedb.connect(str(path), read_consistency_interval=timedelta(0))
    except Exception as exc:
        raise IndexError_(f"cannot open retrieval index folder {str(path)!r} ({one_line(exc)})") from exc


def own_index(path: Path) -> None:
    """:class:`IndexError_` (recall answers from BM25 alone, saying so) unless the index folder ``path`` is a real
    folder or nothing yet (:func:`synapse_nb.own_files.own_folder`): nothing is read from, written to or deleted in
    the folder a symlink there names; nor a folder this user cannot list, enter or write (review 81)."""
    from synapse_nb.own_files import own_folder

    if not own_folder(path):
        raise IndexError_(f"the retrieval index folder {str(path)!r} is not a folder (a symlink or a file is in its "
                          "place): nothing is read or written through it; a person's `synapse-nb index check "
                          "--repair` makes it anew")
    try:  # a folder this user may not list or enter (chmod 000): one line naming it, never "unexpected" (review 81)
        if path.is_dir():
            os.scandir(path).close()
            if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
                raise PermissionError(13, "Permission denied")
    except OSError as exc:
        if _read_only_disk(path):  # no chmod gives a read-only mount back (review 89: the advice said chmod)
            raise IndexError_(f"the retrieval index folder {str(path)!r} is on a read-only file system: it cannot be "
                              "used from here (recall answers from the vault's SQLite file); remount the disk "
                              "read-write to use or repair it") from exc
        raise IndexError_(f"the retrieval index folder {str(path)!r} cannot be used ({exc.strerror or exc}): give "
                          f"it back to this user (`chmod u+rwx {path}`), or remove it (it is rebuilt from "
                          "SQLite)") from exc


def _read_only_disk(path: Path) -> bool:
    """Whether ``path`` is on a file system mounted read-only (``EROFS`` for every write)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows)
        return False


def sound_table(table_dir: Path) -> None:
    """:class:`IndexError_` naming what is in LanceDB table ``table_dir`` that is neither a regular file nor a folder
    (a FIFO, a socket, a symlink, a device: :func:`synapse_nb.own_files.irregular_in`), which LanceDB's open would
    wait on or follow (review 81): the table is then unreadable (recall answers from BM25 alone; a person's repair
    removes a semantic table, rebuilds the records table)."""
    from synapse_nb.own_files import irregular_in

    if (bad := irregular_in(table_dir)) is not None:
        raise IndexError_(f"the index table {str(table_dir)!r} cannot be read: {str(bad)!r} is not a regular file "
                          "or a folder it can list (a FIFO, a symlink, a device or a closed folder); a person's "
                          "`synapse-nb index check --repair` removes the table (rebuilt from SQLite)")


#: Upserts leave small fragments; from this many, ``upsert`` runs ``optimize`` (compaction).
_SMALL_FRAGMENTS_BEFORE_OPTIMIZE = 64
#: Scalar (BTree) indices on id, mind, kind and expires_at from this many rows: below it a scan is as fast.
_SCALAR_MIN = 5_000
#: Up to this many rows ``optimize`` rebuilds the full-text index (exact BM25 statistics); above, it merges.
_FTS_REBUILD_MAX = 200_000
_PARTITION_ROWS = 4096  # IVF_FLAT partition size: num_partitions = rows // 4096

Run = Callable[..., Any]


def build_indices(tbl: Any, run: Run, *, fresh: bool, ann_threshold: int) -> None:
    """Build the table's indices: scalar ones on big tables, the full-text one, and IVF_FLAT from
    ``ann_threshold`` rows. ``fresh``: after a rebuild (build everything), else after an optimize (build
    what is missing, and the full-text index again while the table is small). ``run(what, fn, write=)``
    runs each LanceDB call (retrying conflicts, translating errors)."""
    from lancedb.index import FTS, BTree, IvfFlat  # lancedb takes seconds to import: only with the index

    n = run("count rows", lambda: tbl.count_rows())
    names = {ix.name for ix in run("list indices", lambda: tbl.list_indices())}
    # scalar indices speed up merge_insert joins and mind prefilters on big tables only
    if n >= _SCALAR_MIN and (fresh or "id_idx" not in names):
        run("index ids", lambda: tbl.create_index("id", config=BTree(), replace=True), write=True)
    # without an index the expiry clause scans every row's string: 72 ms -> 24 ms per query at 1M rows
    for col in ("mind", "kind", "expires_at"):
        if n >= _SCALAR_MIN and (fresh or f"{col}_idx" not in names):
            run(f"index {col}", lambda col=col: tbl.create_index(col, config=BTree(), replace=True), write=True)
    # a fresh FTS index makes BM25 statistics match a full rebuild exactly; on big tables
    # (a rebuild takes seconds) optimize() keeps LanceDB's incremental merge instead
    if fresh or "text_idx" not in names or n < _FTS_REBUILD_MAX:
        run("build the full-text index", lambda: tbl.create_index("text", config=FTS(), replace=True), write=True)
    if n >= ann_threshold and (fresh or "vector_idx" not in names):
        cfg = IvfFlat(distance_type="cosine", num_partitions=max(1, n // _PARTITION_ROWS))
        run("build the vector index", lambda: tbl.create_index("vector", config=cfg, replace=True), write=True)


def wants_optimize(tbl: Any) -> bool:
    """Whether enough small fragments piled up to compact (False when LanceDB cannot tell: best effort)."""
    try:
        small = int(tbl.stats()["fragment_stats"]["num_small_fragments"])
    except Exception:  # noqa: BLE001 - maintenance is best effort
        return False
    return small >= _SMALL_FRAGMENTS_BEFORE_OPTIMIZE


def chunks(rows: Iterable[IndexRow], size: int) -> Iterator[list[IndexRow]]:
    """``rows`` in validated lists of ``size`` (the last one shorter), consumed lazily."""
    buf: list[IndexRow] = []
    for r in rows:
        buf.append(r)
        if len(buf) >= size:
            yield validate_rows(buf)
            buf = []
    if buf:
        yield validate_rows(buf)


def digests(res: Any) -> tuple[dict[str, str], set[str]]:
    """``id -> digest`` of an Arrow table of the index's ``id`` and ``digest`` columns, and the ids seen twice."""
    got: dict[str, str] = {}
    dup: set[str] = set()
    for i, d in zip(res["id"].to_pylist(), res["digest"].to_pylist(), strict=True):
        if i in got:
            dup.add(i)
        got[i] = d
    return got, dup
