"""The semantic channel's vectors in the LanceDB index: one table per embedder fingerprint, searched exactly.

Beside the ``records`` table (:mod:`~synapse_nb.store.index.table`), the index folder holds one table
``semantic_<key>`` whose key hashes the embedder's :attr:`~synapse_nb.store.embedders.Embedder.fingerprint`, the
document recipe (:data:`DOC_FORMAT`) and the quantisation: a changed model is another table, built from SQLite
(the vault's outbox drain does it, :class:`~synapse_nb.store.indexer.VaultIndex`), and the old one is removed;
vectors of two models are never mixed. Each row holds a record's id, kind, mind, expiry, the digest of its
document and its integer-valued vector (:func:`~synapse_nb.store.embedders.quantize`).

Search (:meth:`DenseIndex.search`) returns the best ``k`` rows of a mind by cosine, best first, ties by id, over an
in-memory copy of the table (reloaded when the table's version moves, patched by this process's own writes); no
LanceDB query runs per search. The caller may add a reserve: when one of the ``k`` is a row its ``agent`` flag says
is an agent's, the best rows it says are a person's follow, read best first in slices four times deeper each
(review 21: recall's people reserve, the table knowing nothing of who wrote a row):

- below :data:`ANN_THRESHOLD` rows, exactly: a dot product of integer vectors whose sums stay under 2**24 is exact
  in float32 in any order (BLAS or not), and the cosine ``dot / sqrt(|a|^2 |b|^2)`` is computed in float64 from
  exact integers: the same bytes on every machine and thread count, before and after a rebuild;
- from there, the copy keeps its vectors as int8 and a sketch of each (:mod:`~synapse_nb.store.index.sketch`: a
  projection on the table's main directions, kept beside the table), whose best 2,000 live rows by an exact
  integer stage-one score are the candidates; their cosines are computed exactly as above. The candidate set is
  approximate (it depends on the projection, made once per table: a rebuild makes it again); the scores are exact.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb.errors import IndexError_, SynapseError
from synapse_nb.store.index.maintenance import connect, one_line, own_index, sound_table
from synapse_nb.store.index.rows import DriftReport, drift
from synapse_nb.store.index.search import sql_str

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from synapse_nb.store.embedders import Embedder

__all__ = ["ANN_THRESHOLD", "DOC_FORMAT", "DenseHit", "DenseIndex", "DenseRow", "table_name"]

#: The recipe of a record's document (its text, then " | replying to: " and the previous record of its thread) and
#: of the quantisation: part of the table name, so changing either builds a new table. prev2 (review 21): a
#: person's record skips an agent's unverified one, the previous text cut to 600 characters.
DOC_FORMAT = "doc1-prev2-q127"
#: From this many rows search goes through the sketch (candidates, then exact cosines) and the table gets scalar
#: indices on id, mind, expiry and prev (upserts' joins, followers). Below, exact search over the in-memory copy
#: (4 bytes a dimension a row): on 2 busy cores 2.7 ms at 49k rows, against 22-27 ms exact at 100k
#: (docs/benchmarks.md).
ANN_THRESHOLD = 50_000
#: The people reserve reads the rows best first in slices, each this many times deeper than the last.
DEEPER = 4
_PREFIX = "semantic_"
_BATCH = 4096
_CONFLICT_RETRIES = 8
_META_FORMAT, _META_FP, _META_DIM = b"synapse.semantic_format", b"synapse.fingerprint", b"synapse.dim"


def table_name(embedder: Embedder) -> str:
    """``semantic_`` + 16 hex digits of SHA-256 over the fingerprint, the dimension and :data:`DOC_FORMAT`."""
    key = f"{embedder.fingerprint}\n{embedder.dimension}\n{DOC_FORMAT}".encode()
    return _PREFIX + hashlib.sha256(key).hexdigest()[:16]


@dataclass(frozen=True)
class DenseRow:
    """A record's semantic document, as the vault hands it to the index (``digest``: of ``doc`` and expiry)."""

    id: str
    kind: str
    mind: str
    doc: str
    digest: str
    expires_at: str | None = None
    prev: str | None = None  # the record whose text the document ends with
    agent: bool = False  # an agent's unverified record (embedded after people's: the indexer's queue)


class DenseHit(NamedTuple):
    """A search result: record id, kind and its exact cosine with the query."""

    id: str
    kind: str
    cosine: float


def _where(tbl: Any, pred: str, columns: list[str]) -> Any:
    """The rows of ``tbl`` matching ``pred``, these columns, as Arrow."""
    return tbl.search().where(pred).select(columns).limit(None).to_arrow()


def _ranked(ids: Sequence[str], kinds: Sequence[str], cos: np.ndarray, k: int,
            live: np.ndarray | None = None) -> list[DenseHit]:
    """The best ``k`` of these rows (only ``live`` ones, when given) by (cosine desc, id asc)."""
    import numpy as np

    sel = np.arange(len(cos)) if live is None else np.flatnonzero(live)
    if len(sel) == 0:
        return []
    c = cos[sel]
    if len(sel) > k:  # keep everything tied with the k-th best, then order
        kth = np.partition(c, len(c) - k)[len(c) - k]
        keep = c >= kth
        sel, c = sel[keep], c[keep]
    order = sorted(zip((-c).tolist(), sel.tolist(), strict=True), key=lambda t: (t[0], ids[t[1]]))[:k]
    return [DenseHit(ids[j], kinds[j], -neg) for neg, j in order]


def cosines(vecs: np.ndarray, norm2: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Exact cosines of integer-valued float32 rows ``vecs`` (squared norms ``norm2``, float64) with ``q``: the
    dot products are exact integers (each under 2**24), the division float64; a zero vector has cosine 0."""
    import numpy as np

    qn = float(np.dot(q.astype(np.int64), q.astype(np.int64)))
    # einsum stays on this thread (BLAS gemv's threads fight LanceDB's runtime on 2 cores: decision 0004); the
    # sums are exact integers either way
    dots = np.einsum("ij,j->i", vecs, q).astype(np.float64)
    den = np.sqrt(norm2 * qn)
    out: np.ndarray = np.divide(dots, den, out=np.zeros(len(dots)), where=den > 0)
    return out


def _people_below(ids: Sequence[str], kinds: Sequence[str], rows: np.ndarray, c: np.ndarray, top: set[str],
                  people: int, agent: Callable[[list[str]], np.ndarray]) -> list[DenseHit]:
    """The best ``people`` of ``rows`` (indexes into ``ids`` and ``kinds``; ``c`` their cosines) outside ``top``
    (ids) that ``agent`` says are a person's (0), by (cosine desc, id asc).

    Read best first in slices, each every row at least as close as its last (ties kept), :data:`DEEPER` times
    deeper each time: once ``people`` of them are found, no row left unread is closer than the last found."""
    import numpy as np

    read = np.zeros(len(rows), bool)
    found: list[np.ndarray] = []  # indexes into rows
    n_found, m = 0, 2 * people
    while True:
        m = min(len(rows), m)
        if m < len(rows):
            kth = np.partition(c, len(c) - m)[len(c) - m]
            inside = np.flatnonzero(c >= kth)
        else:
            inside = np.arange(len(rows))
        new = inside[~read[inside]]
        read[inside] = True
        if len(new):
            rids = [ids[r] for r in rows[new].tolist()]
            mine = (agent(rids) == 0) & np.fromiter((r not in top for r in rids), bool, len(rids))
            found.append(new[mine])
            n_found += int(mine.sum())
        if n_found >= people or len(inside) == len(rows):
            break
        m = len(inside) * DEEPER
    sel = np.concatenate(found) if found else np.zeros(0, np.int64)
    return _ranked(_Rows(ids, rows[sel]), _Rows(kinds, rows[sel]), c[sel], people)


class _Rows(Sequence[str]):
    """``base[rows[j]]`` for each ``j``: the candidates' ids or kinds, read only for the few that are kept."""

    def __init__(self, base: Sequence[str], rows: np.ndarray) -> None:
        self._base, self._rows = base, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, j: Any) -> Any:
        return self._base[int(self._rows[j])]


@dataclass(frozen=True)
class _Copy:
    """A table's rows in memory, sorted by id: the vectors (float32 integers; int8 in a sketched copy), their
    squared norms, the prefilter columns, and from :data:`ANN_THRESHOLD` rows the sketch (``proj``, ``sk``,
    ``sk_norm``: :mod:`~synapse_nb.store.index.sketch`)."""

    ids: list[str]
    kinds: list[str]
    mind_codes: np.ndarray
    mind_names: np.ndarray
    exp_codes: np.ndarray  # a row's expiry as its rank among the distinct expiries (none: above them all)
    exp_values: np.ndarray
    vecs: np.ndarray
    norm2: np.ndarray
    proj: np.ndarray | None = None
    sk: np.ndarray | None = None
    sk_norm: np.ndarray | None = None
    live: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def sketched(self, proj: np.ndarray) -> _Copy:
        """This copy searched through a sketch of projection ``proj``, its vectors kept as int8."""
        import numpy as np

        from synapse_nb.store.index.sketch import sketch

        sk, sk_norm = sketch(self.vecs, proj)
        return _Copy(self.ids, self.kinds, self.mind_codes, self.mind_names, self.exp_codes, self.exp_values,
                     self.vecs.astype(np.int8), self.norm2, proj, sk, sk_norm)

    @classmethod
    def from_arrow(cls, res: Any, dim: int) -> _Copy:
        import numpy as np

        res = res.sort_by("id")
        flat = res["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vecs = np.ascontiguousarray(flat.reshape(-1, dim), dtype=np.float32)
        # exact integers (each square under 2**14, a row's sum under 2**53) without an int64 copy of the matrix
        norm2 = np.einsum("ij,ij->i", vecs, vecs, dtype=np.float64)
        mind_names, mind_codes = np.unique(np.array(res["mind"].to_pylist(), dtype=str), return_inverse=True)
        expires = res["expires_at"].to_pylist()
        exp_values = np.array(sorted({e for e in expires if e is not None}), dtype=str)
        rank = {e: i for i, e in enumerate(exp_values.tolist())}
        exp_codes = np.array([len(exp_values) if e is None else rank[e] for e in expires], dtype=np.int64)
        return cls(res["id"].to_pylist(), res["kind"].to_pylist(), mind_codes.astype(np.int32), mind_names,
                   exp_codes, exp_values, vecs, norm2)

    def expiries(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(each row's expiry as text, "" for none; whether it has none), of the ``rows`` mask (default: all)."""
        import numpy as np

        codes = self.exp_codes if rows is None else self.exp_codes[rows]
        none = codes == len(self.exp_values)
        if not len(self.exp_values):
            return np.full(len(codes), "", dtype=object), none
        return np.where(none, "", self.exp_values[np.minimum(codes, len(self.exp_values) - 1)]).astype(object), none

    def patched(self, gone: Sequence[str], table: Any | None) -> _Copy:
        """This copy with the rows of ``gone`` removed and the rows of the Arrow ``table`` (of :meth:`_schema`, ids
        sorted) put in: equal to a copy read afresh from the table after the same writes (tested)."""
        import numpy as np

        n = len(self.ids)
        drop = sorted({j for i in gone if (j := bisect_left(self.ids, i)) < n and self.ids[j] == i})
        keep = np.ones(n, bool)
        keep[drop] = False
        add = _Copy.from_arrow(table, self.vecs.shape[1]) if table is not None and table.num_rows else None
        minds = self.mind_names[self.mind_codes[keep]].astype(object)
        exps, exp_none = self.expiries(keep)
        ids, kinds = np.array(self.ids, dtype=object)[keep], np.array(self.kinds, dtype=object)[keep]
        vecs, norm2 = self.vecs[keep], self.norm2[keep]
        if add is not None:
            at = np.searchsorted(ids, np.array(add.ids, dtype=object))
            ids, kinds = np.insert(ids, at, add.ids), np.insert(kinds, at, add.kinds)
            minds = np.insert(minds, at, add.mind_names[add.mind_codes].astype(object))
            add_exp, add_none = add.expiries()
            exps, exp_none = np.insert(exps, at, add_exp), np.insert(exp_none, at, add_none)
            vecs, norm2 = np.insert(vecs, at, add.vecs, axis=0), np.insert(norm2, at, add.norm2)
        sk, sk_norm = self.sk, self.sk_norm
        if sk is not None and sk_norm is not None and self.proj is not None:  # the same projection: a sketch a row
            from synapse_nb.store.index.sketch import sketch

            sk, sk_norm = sk[:, keep], sk_norm[keep]
            if add is not None:
                add_sk, add_norm = sketch(add.vecs, self.proj)
                sk, sk_norm = np.insert(sk, at, add_sk, axis=1), np.insert(sk_norm, at, add_norm)
        mind_names, mind_codes = np.unique(np.asarray(minds, dtype=str), return_inverse=True)
        exps = np.asarray(exps, dtype=str)
        exp_values = np.unique(exps[~exp_none]) if (~exp_none).any() else np.array([], str)
        exp_codes = np.where(exp_none, len(exp_values), np.searchsorted(exp_values, exps))
        return _Copy(ids.tolist(), kinds.tolist(), mind_codes.astype(np.int32), mind_names,
                     exp_codes.astype(np.int64), exp_values, np.ascontiguousarray(vecs), norm2, self.proj,
                     None if sk is None else np.ascontiguousarray(sk), sk_norm)

    def search(self, q: np.ndarray, k: int, mind: str, now: str, also: Sequence[str] = (), people: int = 0,
               agent: Callable[[list[str]], np.ndarray] | None = None,
               leave_out: Sequence[str] = ()) -> tuple[list[DenseHit], dict[str, float]]:
        import numpy as np

        m = int(np.searchsorted(self.mind_names, mind))
        if m >= len(self.mind_names) or self.mind_names[m] != mind:
            return [], {}
        # "expires_at > now" is "code >= the number of distinct expiries <= now": kept per (mind, that number)
        key = (m, int(np.searchsorted(self.exp_values, now, side="right")))
        live = self.live.get(key)
        if live is None:
            live = (self.mind_codes == m) & (self.exp_codes >= key[1])
            self.live.clear()
            self.live[key] = live
        if leave_out:  # rows never found (their cosines with ``also`` are still given)
            n = len(self.ids)
            live = live.copy()
            live[[j for i in leave_out if (j := bisect_left(self.ids, i)) < n and self.ids[j] == i]] = False
        at = [j for i in also if (j := bisect_left(self.ids, i)) < len(self.ids) and self.ids[j] == i]
        if self.sk is None or self.sk_norm is None or self.proj is None:
            cos = cosines(self.vecs, self.norm2, q)
            hits = _ranked(self.ids, self.kinds, cos, k, live)
            if people > 0 and agent is not None and hits and (agent([h.id for h in hits]) == 1).any():
                rows = np.flatnonzero(live)
                hits += _people_below(self.ids, self.kinds, rows, cos[rows], {h.id for h in hits}, people, agent)
            return hits, {self.ids[j]: float(cos[j]) for j in at}
        from synapse_nb.store.index.sketch import CANDIDATES, candidates, sketch

        qs = sketch(q, self.proj)[0][:, 0]
        cand = candidates(self.sk, self.sk_norm, qs, live, CANDIDATES)
        rows = np.concatenate([cand, np.array(at, np.int64)])
        cos = cosines(self.vecs[rows].astype(np.float32), self.norm2[rows], q)
        extra = {self.ids[j]: float(c) for j, c in zip(at, cos[len(cand):].tolist(), strict=True)}
        hits = _ranked(_Rows(self.ids, cand), _Rows(self.kinds, cand), cos[:len(cand)], k)
        if people > 0 and agent is not None and hits and (agent([h.id for h in hits]) == 1).any():
            top, n, n_live, c = {h.id for h in hits}, CANDIDATES, int(live.sum()), cos[:len(cand)]
            while True:  # the sketch's candidates, DEEPER times more until they hold enough people's rows
                got = _people_below(self.ids, self.kinds, cand, c, top, people, agent)
                if len(got) >= people or len(cand) >= n_live:
                    break
                n *= DEEPER
                cand = candidates(self.sk, self.sk_norm, qs, live, n)
                c = cosines(self.vecs[cand].astype(np.float32), self.norm2[cand], q)
            hits += got
        return hits, extra


class DenseIndex:
    """The semantic table of one embedder in the index folder ``path`` (see the module docstring)."""

    def __init__(self, path: str | Path, embedder: Embedder, *, ann_threshold: int = ANN_THRESHOLD) -> None:
        self.path = Path(path)
        self.embedder = embedder
        self.name = table_name(embedder)
        self.ann_threshold = int(ann_threshold)
        self.readonly = False  # a read-only vault writes no projection file (it makes one in memory)
        self._db: Any = None
        self._tbl: Any = None
        self._copy: tuple[tuple[int, int, int], _Copy | None] | None = None

    def __repr__(self) -> str:
        return f"DenseIndex(path={str(self.path)!r}, table={self.name!r}, embedder={self.embedder.name!r})"

    def _dir(self) -> Path:
        return self.path / f"{self.name}.lance"

    def exists(self) -> bool:
        return self._dir().is_dir()

    def _connect(self) -> Any:
        if self._db is None:
            self._db = connect(self.path)
        return self._db

    def _run(self, what: str, fn: Callable[[], Any], *, write: bool = False) -> Any:
        """Run a lancedb call, retrying commit conflicts and translating failures to IndexError_."""
        attempt = 0
        while True:
            try:
                return fn()
            except SynapseError:
                raise
            except Exception as exc:
                msg = str(exc).lower()
                if write and attempt < _CONFLICT_RETRIES and ("conflict" in msg or "retryable" in msg):
                    attempt += 1
                    time.sleep(min(0.5, 0.01 * 2**attempt))
                    try:
                        self._tbl.checkout_latest()
                    except Exception:  # noqa: BLE001 - best effort, the retry reports the real error
                        self._tbl = None
                        self._open()
                    continue
                self._tbl = None
                raise IndexError_(f"semantic index {self.name} at {str(self.path)!r} failed to {what} "
                                  f"({one_line(exc)}); rebuild it from SQLite") from exc

    def _open(self) -> Any:
        if self._tbl is not None and self.exists():
            return self._tbl
        self._tbl, self._copy = None, None
        if not self.exists():
            raise IndexError_(f"no semantic index {self.name} at {str(self.path)!r}; rebuild it from SQLite")
        sound_table(self._dir())  # never a FIFO's hang in LanceDB's open (review 81)
        db = self._connect()
        tbl = self._run("open the table", lambda: db.open_table(self.name))
        meta = tbl.schema.metadata or {}
        want = (DOC_FORMAT, self.embedder.fingerprint, str(self.embedder.dimension))
        got = tuple(meta.get(k, b"?").decode() for k in (_META_FORMAT, _META_FP, _META_DIM))
        if got != want:
            raise IndexError_(f"semantic index {self.name} at {str(self.path)!r} was built for {got}, this needs "
                              f"{want}: rebuild it from SQLite")
        self._tbl = tbl
        return tbl

    def _schema(self) -> Any:
        import pyarrow as pa

        e = self.embedder
        return pa.schema([
            pa.field("id", pa.string(), nullable=False), pa.field("kind", pa.string(), nullable=False),
            pa.field("mind", pa.string(), nullable=False), pa.field("expires_at", pa.string(), nullable=True),
            pa.field("digest", pa.string(), nullable=False), pa.field("prev", pa.string(), nullable=True),
            pa.field("vector", pa.list_(pa.float32(), e.dimension), nullable=False),
        ], metadata={_META_FORMAT: DOC_FORMAT.encode(), _META_FP: e.fingerprint.encode(),
                     _META_DIM: str(e.dimension).encode()})

    def _arrow(self, rows: Sequence[DenseRow]) -> Any:
        import pyarrow as pa

        from synapse_nb.store.embedders import embed_quantized

        vecs = embed_quantized(self.embedder, [r.doc for r in rows])
        flat = pa.array(vecs.reshape(-1), type=pa.float32())
        cols = [pa.array([r.id for r in rows], pa.string()), pa.array([r.kind for r in rows], pa.string()),
                pa.array([r.mind for r in rows], pa.string()), pa.array([r.expires_at for r in rows], pa.string()),
                pa.array([r.digest for r in rows], pa.string()), pa.array([r.prev for r in rows], pa.string()),
                pa.FixedSizeListArray.from_arrays(flat, self.embedder.dimension)]
        return pa.Table.from_arrays(cols, schema=self._schema())

    # ------------------------------------------------------------------ writes
    def _add(self, tbl: Any, rows: Sequence[DenseRow]) -> None:
        tbl.add(self._arrow(rows))

    def _merge(self, data: Any) -> None:
        self._tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)

    def _delete(self, pred: str) -> None:
        self._tbl.delete(pred)

    def rebuild(self, rows: Iterable[DenseRow]) -> int:
        """Drop every semantic table of the folder (other fingerprints too) and build this one from ``rows``."""
        self.close()
        own_index(self.path)  # never what a symlink at the folder names (review 81)
        for old in self.path.glob(f"{_PREFIX}*.lance") if self.path.is_dir() else ():
            shutil.rmtree(old, ignore_errors=True)
        for old in self.path.glob(f"{_PREFIX}*.proj") if self.path.is_dir() else ():
            old.unlink(missing_ok=True)
        db = self._connect()
        tbl = self._run("create the table", lambda: db.create_table(self.name, schema=self._schema(),
                                                                    mode="create"))  # removed above
        written, batch = 0, []
        for r in rows:
            batch.append(r)
            if len(batch) >= 2 * _BATCH:
                self._run("write rows", functools.partial(self._add, tbl, batch), write=True)
                written, batch = written + len(batch), []
        if batch:
            self._run("write rows", lambda: tbl.add(self._arrow(batch)), write=True)
            written += len(batch)
        self._tbl = tbl
        self.optimize()
        return written

    def upsert(self, rows: Sequence[DenseRow]) -> None:
        """Insert or replace rows by id (later duplicates win)."""
        by_id = {r.id: r for r in rows}
        if not by_id:
            return
        tbl = self._open()
        batch = [by_id[i] for i in sorted(by_id)]
        mine = self._mine(tbl)
        for start in range(0, len(batch), _BATCH):
            data = self._arrow(batch[start:start + _BATCH])
            self._run("upsert rows", functools.partial(self._merge, data), write=True)
            if mine is not None:
                mine = (mine[0].patched([r.id for r in batch[start:start + _BATCH]], data), mine[1] + 1)
        self._kept(tbl, mine)
        try:
            small = int(self._tbl.stats()["fragment_stats"]["num_small_fragments"])
        except Exception:  # noqa: BLE001 - maintenance is best effort
            small = 0
        if small >= 64:
            self.optimize()

    def delete(self, ids: Sequence[str]) -> None:
        wanted = sorted(set(ids))
        if not wanted:
            return
        tbl = self._open()
        mine = self._mine(tbl)
        for start in range(0, len(wanted), 1000):
            pred = "id IN (" + ", ".join(sql_str(i) for i in wanted[start:start + 1000]) + ")"
            self._run("delete rows", functools.partial(self._delete, pred), write=True)
            if mine is not None:
                mine = (mine[0].patched(wanted[start:start + 1000], None), mine[1] + 1)
        self._kept(tbl, mine)

    def _mine(self, tbl: Any) -> tuple[_Copy, int] | None:
        """The in-memory copy and the table version, when the copy is the table's current state (a write of this
        process then patches it, rather than a reload of every row at the next search)."""
        if self._copy is None or self._copy[1] is None or self._copy[0] != self._key(tbl):
            return None
        return self._copy[1], int(self._run("read the table version", lambda: tbl.version))

    def _kept(self, tbl: Any, mine: tuple[_Copy, int] | None) -> None:
        """Keep the patched copy if the table moved by exactly this process's commits (else: read it afresh)."""
        if mine is None:
            return
        moved = int(self._run("read the table version", lambda: tbl.version)) == mine[1]
        self._copy = (self._key(tbl), mine[0]) if moved else None

    def optimize(self) -> None:
        """Compact, and from :attr:`ann_threshold` rows index the scalar columns (once: upserts join on id,
        followers are found by prev). No vector index: search reads the in-memory copy (module docstring)."""
        tbl = self._open()
        self._run("optimize", lambda: tbl.optimize(cleanup_older_than=timedelta(minutes=5)), write=True)
        n = int(self._run("count rows", tbl.count_rows))
        if n >= self.ann_threshold and not self._run("list indices", tbl.list_indices):
            from lancedb.index import BTree

            for col in ("id", "mind", "expires_at", "prev"):
                self._run(f"index {col}", functools.partial(tbl.create_index, col, config=BTree(), replace=True),
                          write=True)
        self._copy = None

    # ------------------------------------------------------------------ reads
    def _key(self, tbl: Any) -> tuple[int, int, int]:
        """(the manifests folder's mtime, the table folder's inode and ctime): every commit (this process's or
        another's) adds a manifest file; a rebuild makes a new folder. Asking LanceDB for the version costs a
        round trip through its runtime (~1-8 ms); a stat costs microseconds."""
        try:
            st = os.stat(self._dir())
            versions = os.stat(self._dir() / "_versions").st_mtime_ns
        except FileNotFoundError:
            versions = int(self._run("read the table version", lambda: tbl.version))
            try:
                st = os.stat(self._dir())
            except OSError as exc:
                raise IndexError_(f"no semantic index {self.name} at {str(self.path)!r}; rebuild it from "
                                  "SQLite") from exc
        return (versions, st.st_ino, st.st_ctime_ns)

    def search(self, query: np.ndarray, *, mind: str, now: str, k: int = 50, also: Sequence[str] = (),
               people: int = 0, agent: Callable[[list[str]], np.ndarray] | None = None,
               leave_out: Sequence[str] = ()) -> tuple[list[DenseHit], dict[str, float]]:
        """The ``k`` rows of ``mind`` not expired at ``now`` with the best exact cosine to the quantised query
        vector ``query`` (best first, ties by id), and the exact cosines of the rows ``also`` names (ids the table
        lacks are left out). A zero query vector finds nothing.

        ``people`` and ``agent`` (recall's people reserve, review 21): ``agent(ids)`` says whose each row is, 1 an
        agent's record no person verified, 0 a person's, -1 a row the caller does not rank. When one of the best
        ``k`` is an agent's, the best ``people`` people's rows below them follow, best first, ties by id: people's
        records are found as if agents' were not there, however many agent rows are closer. Without an agent's
        row among the best ``k``, the result is the same. The rows ``leave_out`` names are not found (recall's
        agents' rows while some wait to be embedded: review 67)."""
        import numpy as np

        q = np.ascontiguousarray(query, dtype=np.float32)
        if not q.any() or k < 1:
            return [], {}
        tbl = self._open()
        key = self._key(tbl)
        if self._copy is None or self._copy[0] != key or self._copy[1] is None:
            self._copy = (key, self._load(tbl))
        copy = self._copy[1]
        assert copy is not None
        return copy.search(q, k, mind, now, also, people, agent, leave_out)

    def _load(self, tbl: Any) -> _Copy:
        """Every row of the table in memory; from :attr:`ann_threshold` rows with its sketch."""
        from synapse_nb.store.index.sketch import projection

        copy = _Copy.from_arrow(self._run("load vectors", lambda: tbl.search().select(
            ["id", "kind", "mind", "expires_at", "vector"]).limit(None).to_arrow()), self.embedder.dimension)
        if len(copy.ids) < self.ann_threshold:
            return copy
        return copy.sketched(projection(self._proj_path(), copy.vecs, write=not self.readonly))

    def _proj_path(self) -> Path:
        """The sketch's projection of this table, beside it (removed with it on a rebuild)."""
        return self.path / f"{self.name}.proj"

    def followers(self, ids: Sequence[str]) -> set[str]:
        """Ids of the rows whose document ends with the text of one of ``ids``."""
        wanted = sorted(set(ids))
        if not wanted or not self.exists():
            return set()
        tbl = self._open()
        out: set[str] = set()
        for start in range(0, len(wanted), 1000):
            pred = "prev IN (" + ", ".join(sql_str(i) for i in wanted[start:start + 1000]) + ")"
            got = self._run("read followers", functools.partial(_where, tbl, pred, ["id"]))
            out.update(got["id"].to_pylist())
        return out

    def digests(self) -> dict[str, str]:
        """id -> digest of every row."""
        tbl = self._open()
        res = self._run("read ids", lambda: tbl.search().select(["id", "digest"]).limit(None).to_arrow())
        return dict(zip(res["id"].to_pylist(), res["digest"].to_pylist(), strict=True))

    def check(self, expected: Mapping[str, str]) -> DriftReport:
        """Drift between the table and SQLite's ``id -> document digest`` (a missing table: every id missing)."""
        if not self.exists():
            return DriftReport(missing=tuple(sorted(expected)))
        return drift(expected, self.digests())

    def count(self) -> int:
        return int(self._run("count rows", self._open().count_rows)) if self.exists() else 0

    def has_ann(self) -> bool:
        """Whether search is approximate (through the sketch): the table holds :attr:`ann_threshold` rows or more."""
        return self.count() >= self.ann_threshold

    def close(self) -> None:
        self._tbl, self._db, self._copy = None, None, None
