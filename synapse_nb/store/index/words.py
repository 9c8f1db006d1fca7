"""The vault's words and their vectors, for recall's expansion by meaning (issue 33; :mod:`synapse_nb.recall.meaning`).

Beside each semantic table (:mod:`~synapse_nb.store.index.dense`) the index folder holds one table ``words_<key>``,
``key`` hashing the embedder's fingerprint, its dimension and :data:`WORD_FORMAT`: one row per word the vault's
semantic documents hold (:func:`words_of`: letters a-z only, 3 to 64 of them, after the gate's folding) with the
embedder's vector of that word alone, quantised as the records' vectors are
(:func:`~synapse_nb.store.embedders.quantize`) and stored as int8.

A word's vector never changes for one fingerprint, so the table grows: each time the semantic table embeds
documents (a write, the outbox drain, a rebuild), the words of those documents not yet in the table are embedded
and appended (:meth:`WordTable.add_texts`). A person's deletion rewrites it with the live records' words only (the
index's scrub, :meth:`~synapse_nb.store.indexer.VaultIndex.forget`: a deleted record's words leave the folder); an
agent's leaves that rewrite owed, as it leaves its vectors. Recall only takes a word the live vault holds (its
``doc_freq``) and whose stem has postings in the mind, so what the table holds beyond the live words changes no
answer: a rebuilt table and a long-lived one rank alike. A rebuild of the semantic table drops it too
(:meth:`WordTable.drop`), like every table of another fingerprint.

Reads (:meth:`WordTable.matrix`) keep an in-memory copy (words in code-point order, integer-valued float32 vectors,
their squared norms), reloaded when the table's folder moves (a commit of any process adds a manifest), and
cosines are exact (:func:`~synapse_nb.store.embedders.cosines`): the same bytes on every machine.

Cost: one embedding call per new word (e5-small ~7 ms on one busy core; wordllama microseconds), on the index's
drain; 1 byte a dimension a word on disk, 4 in memory (10,000 words of e5-small: 15 MB). Under the agent hooks'
deadline the drain embeds a step's new words before its documents, and stops at the deadline like the documents
do (:meth:`WordTable.add_texts`' ``until``): the step is left queued, the words embedded so far are kept, and the
next run goes on. So a record of thousands of made-up words delays its own vector, never a hook past its limit,
and the table holds the words of every document the semantic table holds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb.errors import IndexError_, SynapseError
from synapse_nb.store.index.maintenance import connect, one_line
from synapse_nb.text import FTS_TOKEN_RE, normalise

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from synapse_nb.store.embedders import Embedder

__all__ = ["WORD_FORMAT", "WordMatrix", "WordTable", "is_word", "words_of"]

#: The recipe of a row (the word alone, embedded as a passage; quantised to int8): part of the table name.
WORD_FORMAT = "word1-passage-q127-i8"
_PREFIX = "words_"
_WORD = re.compile(r"[a-z]{3,64}")
#: Words embedded per call to the embedder (and appended per commit).
BATCH = 256
#: ... under a deadline (an agent hook's run): e5-small embeds about this many words in a quarter of a second.
DEADLINE_BATCH = 32
#: Most characters of a document read for its words (a record's text is capped well below this).
MAX_TEXT_CHARS = 200_000
_CONFLICT_RETRIES = 8


def is_word(token: str) -> bool:
    """Whether a folded token is a vocabulary word: 3 to 64 letters a-z.

    >>> is_word("hiking"), is_word("ok"), is_word("mp3"), is_word("café")
    (True, False, False, False)
    """
    return _WORD.fullmatch(token) is not None


def words_of(texts: Iterable[str]) -> set[str]:
    """The vocabulary words of ``texts`` (folded as the gate folds: lower case, accents stripped).

    >>> sorted(words_of(["Went HIKING with the gang, 2 km", "hiking again!"]))
    ['again', 'gang', 'hiking', 'the', 'went', 'with']
    """
    out: set[str] = set()
    for text in texts:
        out.update(t for t in FTS_TOKEN_RE.findall(normalise(text, MAX_TEXT_CHARS)) if is_word(t))
    return out


def table_name(embedder: Embedder) -> str:
    """``words_`` + 16 hex digits of SHA-256 over the fingerprint, the dimension and :data:`WORD_FORMAT`."""
    key = f"{embedder.fingerprint}\n{embedder.dimension}\n{WORD_FORMAT}".encode()
    return _PREFIX + hashlib.sha256(key).hexdigest()[:16]


class WordMatrix(NamedTuple):
    """The table in memory: words in code-point order, their vectors (integer-valued float32) and squared norms."""

    words: tuple[str, ...]
    at: dict[str, int]
    vecs: np.ndarray
    norm2: np.ndarray

    def cosines(self, q: np.ndarray) -> np.ndarray:
        """Exact cosines of every word with the integer-valued vector ``q``."""
        from synapse_nb.store.embedders import cosines

        return cosines(self.vecs, self.norm2, q)


class WordTable:
    """The words table of one embedder in the index folder ``path`` (see the module docstring)."""

    def __init__(self, path: str | Path, embedder: Embedder) -> None:
        self.path = Path(path)
        self.embedder = embedder
        self.name = table_name(embedder)
        self._lock = threading.Lock()
        self._db: Any = None
        self._known: set[str] | None = None  # the words the table holds (read once, then kept with our appends)
        self._copy: tuple[tuple[int, int, int], WordMatrix] | None = None

    def __repr__(self) -> str:
        return f"WordTable(path={str(self.path)!r}, table={self.name!r}, embedder={self.embedder.name!r})"

    def _dir(self) -> Path:
        return self.path / f"{self.name}.lance"

    def exists(self) -> bool:
        return self._dir().is_dir()

    def _fail(self, what: str, exc: BaseException) -> IndexError_:
        self._db, self._known, self._copy = None, None, None
        return IndexError_(f"word table {self.name} at {str(self.path)!r} failed to {what} ({one_line(exc)}); "
                           "rebuild the index from SQLite")

    def _schema(self) -> Any:
        import pyarrow as pa

        return pa.schema([pa.field("word", pa.string(), nullable=False),
                          pa.field("vector", pa.list_(pa.int8(), self.embedder.dimension), nullable=False)],
                         metadata={b"synapse.word_format": WORD_FORMAT.encode(),
                                   b"synapse.fingerprint": self.embedder.fingerprint.encode()})

    def _table(self, create: bool) -> Any:
        if self._db is None:
            self._db = connect(self.path)
        if self.exists():
            return self._db.open_table(self.name)
        if not create:
            return None
        for old in self.path.glob(f"{_PREFIX}*.lance"):  # another model's words: never mixed
            shutil.rmtree(old, ignore_errors=True)
        try:
            return self._db.create_table(self.name, schema=self._schema(), mode="create")
        except Exception:  # noqa: BLE001 - another process created it first: open theirs
            return self._db.open_table(self.name)

    def known(self) -> set[str]:
        """The words the table holds."""
        with self._lock:
            if self._known is not None:
                return self._known
        try:
            tbl = self._table(create=False)
            got = set() if tbl is None else set(tbl.search().select(["word"]).limit(None).to_arrow()["word"]
                                                 .to_pylist())
        except SynapseError:
            raise
        except Exception as exc:
            raise self._fail("read its words", exc) from exc
        with self._lock:
            self._known = got
        return got

    def add_texts(self, texts: Iterable[str], *, until: float | None = None) -> bool:
        """Embed and append the words of ``texts`` the table lacks, in code-point order. ``until``: a deadline
        (``time.time()``); the words are then embedded :data:`DEADLINE_BATCH` at a time and False is returned once
        it passed with words left (those appended are kept: the next call goes on from there). True: all in."""
        new = sorted(words_of(texts) - self.known())
        step = BATCH if until is None else DEADLINE_BATCH
        for start in range(0, len(new), step):
            if until is not None and time.time() >= until:
                return False
            self._append(new[start:start + step])
        return True

    def _append(self, words: list[str]) -> None:
        import pyarrow as pa

        from synapse_nb.store.embedders import embed_quantized

        vecs = embed_quantized(self.embedder, words).astype("int8")
        data = pa.Table.from_arrays(
            [pa.array(words, pa.string()),
             pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.int8()), self.embedder.dimension)],
            schema=self._schema())
        for attempt in range(_CONFLICT_RETRIES + 1):
            try:
                self._table(create=True).add(data)
                break
            except SynapseError:
                raise
            except Exception as exc:
                msg = str(exc).lower()
                if attempt < _CONFLICT_RETRIES and ("conflict" in msg or "retryable" in msg):
                    time.sleep(min(0.5, 0.01 * 2**attempt))
                    continue
                raise self._fail("append words", exc) from exc
        with self._lock:
            if self._known is not None:
                self._known.update(words)

    def _key(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._dir())
            return (os.stat(self._dir() / "_versions").st_mtime_ns, st.st_ino, st.st_ctime_ns)
        except FileNotFoundError:
            return None

    def matrix(self) -> WordMatrix | None:
        """The table in memory (None: no table yet), reloaded when it moved."""
        import numpy as np

        key = self._key()
        if key is None:
            return None
        with self._lock:
            if self._copy is not None and self._copy[0] == key:
                return self._copy[1]
        try:
            res = self._table(create=False).search().select(["word", "vector"]).limit(None).to_arrow()
        except SynapseError:
            raise
        except Exception as exc:
            raise self._fail("load its vectors", exc) from exc
        words = res["word"].to_pylist()
        flat = res["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vecs = np.asarray(flat, np.float32).reshape(len(words), self.embedder.dimension)
        # code-point order, one row per word (two processes may both have appended one: the same vector)
        first: dict[str, int] = {}
        for i, w in enumerate(words):
            first.setdefault(w, i)
        ws = tuple(sorted(first))
        vecs = vecs[np.array([first[w] for w in ws], np.int64)] if ws else vecs[:0]
        norm2 = np.einsum("ij,ij->i", vecs, vecs).astype(np.float64)
        got = WordMatrix(ws, {w: i for i, w in enumerate(ws)}, vecs, norm2)
        with self._lock:
            self._copy = (key, got)
            self._known = set(ws) | (self._known or set())
        return got

    def drop(self) -> None:
        """Remove every words table of the folder (a rebuild of the semantic table makes them again)."""
        self.close()
        for old in self.path.glob(f"{_PREFIX}*.lance") if self.path.is_dir() else ():
            shutil.rmtree(old, ignore_errors=True)

    def count(self) -> int:
        return len(self.known()) if self.exists() else 0

    def close(self) -> None:
        with self._lock:
            self._db, self._known, self._copy = None, None, None
