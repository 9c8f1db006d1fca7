"""The semantic channel's prefilter above :data:`~synapse_nb.store.index.dense.ANN_THRESHOLD` rows: a projection of
the integer vectors on their main directions, searched with numpy, then exact cosines of the best candidates.

LanceDB keeps the vectors (the store, rebuilt from SQLite); a search reads none of its query machinery (its
HNSW query cost 8-18 ms at 100,000 rows on this project's machine, most of it Python around the index). Instead:

1. **The projection** ``P`` (``dim x`` :data:`RANK` integers): the leading eigenvectors of the table's second-moment
   matrix ``X^T X`` over a strided sample of at most :data:`SAMPLE` rows (every ``ceil(n / SAMPLE)``-th in id order;
   the sums are exact integers in float64), each signed so its largest component is positive, scaled so the largest
   magnitude is 127 and rounded: an integer matrix, kept in a file beside the table (:func:`projection`), so every
   process and every patched copy of one table uses the same one until the table is rebuilt.
2. **The sketch** of a row: ``v @ P`` (exact integers in float32: each sum is under 2**24), scaled so its largest
   component is 127 and rounded (float64 element-wise); a query is sketched the same way. Stage-one scores are
   ``sketch(q) . sketch(v) / |sketch(v)|``: exact integer dot products (under 2**24 for :data:`RANK` 48) divided in
   float64, so they are the same on every thread count and BLAS.
3. **The candidates**: the :data:`CANDIDATES` best live rows by stage-one score (ties by position), whose exact
   cosines (:func:`~synapse_nb.store.index.dense.cosines`) rank the result. On LoCoMo-sized and 100,000-row
   synthetic vaults with wordllama the 2,000 candidates held 99.8% of the exact top 50 (docs/benchmarks.md).

The candidate set is approximate (as an ANN index's is); every score returned is the exact cosine.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["CANDIDATES", "RANK", "SAMPLE", "candidates", "make_projection", "projection", "sketch", "usable"]

#: Dimensions of the sketch.
RANK = 48
#: Rows whose exact cosines are computed per query.
CANDIDATES = 2000
#: Most rows the projection is computed from.
SAMPLE = 20_000
_MAGIC = b"SYNPROJ1"
_HEAD = struct.Struct("<8sII")  # magic, dim, rank


def make_projection(vecs: np.ndarray) -> np.ndarray:
    """``P`` (float32 integers, ``dim x RANK``) of integer-valued rows ``vecs`` (in id order)."""
    import numpy as np

    n, dim = vecs.shape
    rank = min(RANK, dim)
    step = max(1, -(-n // SAMPLE))
    x = np.asarray(vecs[::step], dtype=np.float64)
    m = x.T @ x  # integer sums under 2**53: exact, whatever the order
    _, e = np.linalg.eigh(m)
    top = e[:, ::-1][:, :rank]
    sign = np.where(top[np.abs(top).argmax(0), np.arange(rank)] < 0, -1.0, 1.0)
    top = top * sign
    scale = 127.0 / float(np.abs(top).max())
    out: np.ndarray = np.round(top * scale).astype(np.float32)
    return out


def projection(path: Path | None, vecs: np.ndarray, *, write: bool = True) -> np.ndarray:
    """The projection kept at ``path`` for a table of these rows (made and written when missing, unreadable, not a
    regular file of at most its size (:func:`synapse_nb.own_files.read_bytes`) or not one :func:`make_projection` can
    make (:func:`usable`); ``write=False``: a read-only vault, made and kept in memory)."""
    import numpy as np

    dim = vecs.shape[1]
    rank = min(RANK, dim)
    if path is not None:
        from synapse_nb.own_files import read_bytes

        try:
            # the package's safe open, at most the file this table's projection makes: a FIFO there hung the search,
            # /dev/zero ate the memory (review 85); anything else is no projection, made again
            raw = read_bytes(path, cap=_HEAD.size + 4 * dim * rank)
            if raw is None:
                raise ValueError(f"{path} is not a projection file")
            magic, d, r = _HEAD.unpack_from(raw, 0)
            if magic == _MAGIC and (d, r) == (dim, rank) and len(raw) == _HEAD.size + 4 * d * r:
                kept = np.frombuffer(raw, "<f4", d * r, _HEAD.size).reshape(d, r).astype(np.float32)
                if usable(kept):
                    return kept
        except (OSError, struct.error, ValueError):
            pass
    p = make_projection(vecs)
    if path is not None and write:
        from synapse_nb.own_files import write_atomic

        try:
            write_atomic(path, [_HEAD.pack(_MAGIC, dim, rank), p.astype("<f4").tobytes()], mode=0o644)
        except OSError:  # a full or read-only disk: kept in memory
            pass
    return p


def usable(p: np.ndarray) -> bool:
    """Whether ``p`` (read from a file an agent's shell can write) is one :func:`make_projection` can make: finite
    integers in [-127, 127], the largest magnitude 127, no column of zeros, of full rank (its columns are orthogonal
    unit vectors scaled by at least 127, rounded: up to 1,024 dimensions the rounding's norm, under 0.5 x sqrt(dim x
    rank), cannot make them dependent). Review 58: a file of NaNs
    with the right header and size turned every sketch score into NaN and the dense channel found nothing, silently.

    >>> import numpy as np
    >>> usable(np.array([[127.0, 0.0], [3.0, -90.0]], np.float32)), usable(np.full((2, 2), np.nan, np.float32))
    (True, False)
    >>> usable(np.array([[127.0, 0.0], [3.0, 0.0]], np.float32)), usable(np.array([[127.0, 127.0], [1.0, 1.0]]))
    (False, False)
    """
    import numpy as np

    if p.ndim != 2 or not p.size or not np.isfinite(p).all():
        return False
    mag = np.abs(p)
    if float(mag.max()) != 127.0 or not (p == np.round(p)).all() or not mag.any(0).all():
        return False
    return bool(np.linalg.matrix_rank(p.astype(np.float64)) == min(p.shape))


def sketch(vecs: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the sketches of integer-valued rows ``vecs`` as float32 integers, one column a row (``RANK x n``: stage one
    then adds up :data:`RANK` contiguous rows, the fastest layout for numpy), their norms in float64; 1 for a zero
    sketch)."""
    import numpy as np

    s = np.asarray(vecs, dtype=np.float32) @ p  # exact integers (|sum| < 2**24)
    if s.ndim == 1:
        s = s[None, :]
    big = np.abs(s).max(1, keepdims=True).astype(np.float64)
    big[big == 0] = 1.0
    out = np.round(s.astype(np.float64) * (127.0 / big)).astype(np.float32)
    norm = np.sqrt(np.einsum("ij,ij->i", out.astype(np.int64), out.astype(np.int64)).astype(np.float64))
    norm[norm == 0] = 1.0
    return np.ascontiguousarray(out.T), norm


def candidates(sk: np.ndarray, norm: np.ndarray, q: np.ndarray, live: np.ndarray, n: int = CANDIDATES) -> np.ndarray:
    """Positions (ascending) of the ``n`` live rows with the best stage-one score for the query sketch ``q`` (a
    column of :func:`sketch`), the rows' sketches ``sk`` (``RANK x rows``); every row tied with the ``n``-th is
    kept."""
    import numpy as np

    # exact integer sums (under 2**24), divided element-wise; einsum stays on this thread (BLAS's gemv threads
    # fight the machine's other work: 10x slower on 2 busy cores)
    score = np.einsum("ji,j->i", sk, q).astype(np.float64) / norm
    score[~live] = -np.inf
    if int(live.sum()) <= n:
        return np.flatnonzero(live)
    kth = np.partition(score, len(score) - n)[len(score) - n]
    return np.flatnonzero((score >= kth) & live)


def remove(path: Path) -> None:
    """Forget the projection of a table that is rebuilt."""
    try:
        os.unlink(path)
    except OSError:
        pass
