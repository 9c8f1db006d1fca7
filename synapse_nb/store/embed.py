"""Text embedders for the retrieval index.

An embedder turns texts into L2-normalised float32 vectors. The built-in
:class:`HashingEmbedder` needs no download and no fitting: the same text gives
the same vector in every process, whatever ``PYTHONHASHSEED``. Its ``name``
(with its parameters) is stored in the index; an index built by another
embedder must be rebuilt.

It does not import scikit-learn: the index path of recall embeds every query, and scikit-learn's
import costs seconds on a cold start. Its feature hashing is a NumPy port of scikit-learn's
``HashingVectorizer`` (MurmurHash3, the same analyzers from :mod:`synapse_nb.text`), pinned bit for bit
by ``tests/test_text.py``. scipy and sentence-transformers load on first use.

Examples
--------
>>> from synapse_nb.store.embed import load_embedder
>>> emb = load_embedder("hashing")
>>> emb.name, emb.dim
('hashing-v1-w12-c35-d256', 256)
>>> vecs = emb.embed(["run the migrations", "deploy on friday"])
>>> vecs.shape, str(vecs.dtype)
((2, 256), 'float32')
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from synapse_nb.errors import NotFoundError, ValidationError
from synapse_nb.text import char_wb_ngrams, sklearn_tokens, word_ngrams

__all__ = ["Embedder", "HashingEmbedder", "SentenceTransformerEmbedder", "load_embedder"]

_SPEC_HELP = "accepted: 'hashing', 'hashing:<dim>' or 'sentence-transformers:<local path>'"


@runtime_checkable
class Embedder(Protocol):
    """What the retrieval index needs from an embedder.

    Attributes
    ----------
    name : str
        Identifies the embedder and its parameters; stored in the index metadata.
        A different name or dim forces a rebuild.
    dim : int
        Length of every vector.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 vectors of shape ``(len(texts), dim)`` with L2-normalised rows."""
        ...


class HashingEmbedder:
    """Deterministic embedder: hashed word and character n-grams, then a fixed seeded projection.

    Word 1-2-grams and character 3-5-grams (within word boundaries) are hashed as
    scikit-learn's ``HashingVectorizer`` hashes them (MurmurHash3 with seed 0, signed
    features; :func:`hash_features`) into ``n_features`` columns each, then multiplied by a sparse random
    projection to ``dim`` columns. The projection is generated from ``seed`` with
    NumPy's PCG64, ``density`` non-zero +/-1 entries per input feature (a sparse
    Johnson-Lindenstrauss transform), so it is identical in every process. Nothing
    is fitted and nothing is downloaded.

    Rows whose text has no features (empty text) map to a fixed unit vector so
    cosine distances stay finite.

    Parameters
    ----------
    dim : int, default 256
        Output dimension.
    n_features : int, default 2**18
        Hashing space for each of the word and character features.
    seed : int, default 20261130
        Seed of the projection.
    density : int, default 4
        Non-zero entries per input feature in the projection.

    Examples
    --------
    >>> emb = HashingEmbedder(dim=64)
    >>> a, b, c = emb.embed(["deploy the api", "deploying the api", "cats sleep a lot"])
    >>> bool(a @ b > a @ c)
    True
    >>> round(float(a @ a), 5)
    1.0
    """

    def __init__(
        self, dim: int = 256, *, n_features: int = 2**18, seed: int = 20261130, density: int = 4
    ) -> None:
        if not isinstance(dim, int) or not 8 <= dim <= 4096:
            raise ValidationError(f"embedder dim must be an int in 8..4096, got {dim!r}")
        if not isinstance(n_features, int) or n_features < 2**10:
            raise ValidationError(f"n_features must be an int >= 1024, got {n_features!r}")
        if not isinstance(density, int) or not 1 <= density <= 16:
            raise ValidationError(f"density must be an int in 1..16, got {density!r}")
        self.dim = dim
        self.n_features = n_features
        self.seed = seed
        self.density = density
        suffix = "" if (n_features, seed, density) == (2**18, 20261130, 4) else f"-f{n_features}-s{seed}-p{density}"
        self.name = f"hashing-v1-w12-c35-d{dim}{suffix}"
        self._word: Any = None
        self._char: Any = None
        self._proj: Any = None

    def __repr__(self) -> str:
        return f"HashingEmbedder(name={self.name!r})"

    def _ensure(self) -> None:
        if self._proj is not None:
            return
        import scipy.sparse as sp  # loaded on first embed: `import synapse_nb.store.embed` stays light

        rng = np.random.Generator(np.random.PCG64(self.seed))
        rows = 2 * self.n_features
        cols = rng.integers(0, self.dim, size=(rows, self.density), dtype=np.int64)
        signs = rng.integers(0, 2, size=(rows, self.density), dtype=np.int8).astype(np.float32) * 2.0 - 1.0
        indptr = np.arange(0, rows * self.density + 1, self.density, dtype=np.int64)
        proj = sp.csr_matrix((signs.ravel(), cols.ravel(), indptr), shape=(rows, self.dim))
        proj.sum_duplicates()
        self._proj = proj

    def _word_features(self, texts: list[str]) -> Any:
        """Word 1-2-gram counts, L2-normalised: ``HashingVectorizer(analyzer="word", ngram_range=(1, 2))``."""
        feats = [word_ngrams(sklearn_tokens(t.lower()), (1, 2)) for t in texts]
        return _l2_normalize_rows(hash_features(feats, self.n_features))

    def _char_features(self, texts: list[str]) -> Any:
        """``char_wb`` 3-5-gram counts, L2-normalised: ``HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5))``.

        ``char_wb`` n-grams never cross a whitespace-separated word, so a text's counts are the sum of its
        words' counts: each distinct word of the batch is analysed once (real text repeats words a lot,
        about 10x faster on 10k notes), then a sparse (texts x words) count matrix sums them.
        """
        import scipy.sparse as sp  # loaded on first embed

        vocab: dict[str, int] = {}
        indices: list[int] = []
        indptr = [0]
        for text in texts:
            for word in text.lower().split():
                indices.append(vocab.setdefault(word, len(vocab)))
            indptr.append(len(indices))
        words = list(vocab)  # insertion order: deterministic for the same batch
        counts = sp.csr_matrix(
            (np.ones(len(indices), dtype=np.float32), np.array(indices, dtype=np.int64),
             np.array(indptr, dtype=np.int64)),
            shape=(len(texts), len(words)),
        )
        counts.sum_duplicates()
        per_word = hash_features([char_wb_ngrams(w.lower(), (3, 5)) for w in words], self.n_features)
        return _l2_normalize_rows(counts @ per_word)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(n, dim)`` float32 array with unit-length rows.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        numpy.ndarray
        """
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of strings, got a single str; wrap it in a list")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._ensure()
        import scipy.sparse as sp  # loaded on first embed

        feats = sp.hstack([self._word_features(texts), self._char_features(texts)], format="csr")
        out = np.asarray((feats @ self._proj).todense(), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1)
        empty = norms == 0
        norms[empty] = 1.0
        out /= norms[:, None]
        out[empty, 0] = 1.0
        return np.ascontiguousarray(out, dtype=np.float32)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder (never downloaded).

    Parameters
    ----------
    path : str or Path
        Folder holding a saved sentence-transformers model.
    """

    def __init__(self, path: str | Path) -> None:
        p = Path(path).expanduser()
        if not p.is_dir():
            raise NotFoundError(
                f"sentence-transformers model folder {str(p)!r} does not exist; give a local folder "
                "(nothing is downloaded)"
            )
        try:  # an optional dependency, and heavy (torch): loaded by name, so the type checker need not have it
            model_class: Any = importlib.import_module("sentence_transformers").SentenceTransformer
        except ImportError:
            raise ValidationError(
                "embedder 'sentence-transformers:...' needs the sentence-transformers package, which is not installed; "
                "install it or use 'hashing'"
            ) from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self._model = model_class(str(p), device="cpu", local_files_only=True)
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.name = f"sentence-transformers:{p.name}-d{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(n, dim)`` float32 array with unit-length rows."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)


# ------------------------------------------------------------------------------------- feature hashing
_U32 = np.uint32
_C1, _C2 = _U32(0xCC9E2D51), _U32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def _fmix(h: np.ndarray) -> np.ndarray:
    h ^= h >> _U32(16)
    h *= _U32(0x85EBCA6B)
    h ^= h >> _U32(13)
    h *= _U32(0xC2B2AE35)
    h ^= h >> _U32(16)
    return h


def murmurhash3_32(keys: Sequence[bytes]) -> np.ndarray:
    """MurmurHash3 (x86, 32-bit, seed 0) of each byte string, as signed int32: scikit-learn's
    ``murmurhash3_32(key, seed=0)``, vectorised over the keys with NumPy.

    Keys are sorted by their number of 4-byte blocks, so block ``j`` is one NumPy step over the keys that
    have it: the work is the total length of the keys, whatever their mix of lengths.

    >>> murmurhash3_32([b"", b"foo", b"hello world"]).tolist()
    [0, -156908512, 1586663183]
    """
    return _murmur(b"".join(keys), np.fromiter(map(len, keys), dtype=np.int64, count=len(keys)))


def _murmur(data: bytes, lengths: np.ndarray) -> np.ndarray:
    """:func:`murmurhash3_32` of the keys laid end to end in ``data``, ``lengths[i]`` bytes each."""
    n = len(lengths)
    buf = np.frombuffer(data + b"\0\0\0\0", dtype=np.uint8)
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    nblocks = lengths // 4
    order = np.argsort(-nblocks, kind="stable")
    off, nb = offsets[order], nblocks[order]
    h = np.zeros(n, dtype=_U32)
    for j in range(int(nb[0]) if n else 0):
        m = int(np.searchsorted(-nb, -j, side="left"))  # keys with more than j blocks: a prefix
        p = off[:m] + 4 * j
        k = buf[p].astype(_U32) | (buf[p + 1].astype(_U32) << _U32(8)) | (buf[p + 2].astype(_U32) << _U32(16)) | (
            buf[p + 3].astype(_U32) << _U32(24))
        k *= _C1
        k = _rotl(k, 15)
        k *= _C2
        hm = h[:m] ^ k
        hm = _rotl(hm, 13)
        h[:m] = hm * _U32(5) + _U32(0xE6546B64)
    tail = (lengths[order] & 3).astype(np.int64)
    tp = off + 4 * nb
    k1 = np.zeros(n, dtype=_U32)
    for t in (3, 2, 1):
        has = tail >= t
        k1[has] ^= buf[tp[has] + (t - 1)].astype(_U32) << _U32(8 * (t - 1))
    has = tail > 0
    k1 = _rotl(k1 * _C1, 15) * _C2
    h[has] ^= k1[has]
    h ^= lengths[order].astype(_U32)
    h = _fmix(h)
    out = np.empty(n, dtype=np.int32)
    out[order] = h.view(np.int32)
    return out


def hash_features(docs: Sequence[Sequence[str]], n_features: int) -> Any:
    """Signed hashed counts of each document's features: scikit-learn's ``FeatureHasher(input_type="string",
    alternate_sign=True, dtype=float32)``, bit for bit (a ``scipy.sparse.csr_matrix``, duplicates summed,
    indices sorted).

    A feature's column is ``abs(h) % n_features`` of its :func:`murmurhash3_32` ``h`` (with scikit-learn's
    rule for ``h = -2**31``); it counts ``+1`` when ``h >= 0``, else ``-1``.
    """
    import scipy.sparse as sp  # loaded on first embed

    flat = [f for feats in docs for f in feats]
    joined = "".join(flat)
    if joined.isascii():  # one encode for the whole batch: a character is a byte
        h = _murmur(joined.encode("ascii"), np.fromiter(map(len, flat), dtype=np.int64, count=len(flat)))
    else:
        h = murmurhash3_32([f.encode("utf-8") for f in flat])
    h = h.astype(np.int64)
    indptr = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, docs), dtype=np.int64, count=len(docs)), out=indptr[1:])
    cols = np.where(h == -(2**31), (2**31 - 1 - (n_features - 1)) % n_features, np.abs(h) % n_features)
    values = np.where(h >= 0, 1.0, -1.0).astype(np.float32)
    idx_dtype = np.int32 if indptr[-1] <= np.iinfo(np.int32).max else np.int64
    out = sp.csr_matrix((values, cols.astype(idx_dtype), indptr.astype(idx_dtype)), shape=(len(docs), n_features))
    out.sum_duplicates()
    return out


def _l2_normalize_rows(x: Any) -> Any:
    """Scale each row of a CSR matrix to unit L2 norm in place (rows of zeros stay): scikit-learn's
    ``normalize(x, norm="l2")``, bit for bit (squares in the data's dtype, summed in float64 in stored order,
    each value divided in float64 and rounded back)."""
    if x.nnz == 0:
        return x
    per_row = np.diff(x.indptr)
    rows = np.repeat(np.arange(x.shape[0]), per_row)
    norms = np.sqrt(np.bincount(rows, weights=(x.data * x.data).astype(np.float64), minlength=x.shape[0]))
    norms[norms == 0.0] = 1.0  # x / 1.0 == x: rows of zeros stay as they are
    x.data[:] = (x.data.astype(np.float64) / np.repeat(norms, per_row)).astype(x.data.dtype)
    return x


def load_embedder(spec: str | None = None) -> Embedder:
    """Build an embedder from a short spec.

    Parameters
    ----------
    spec : str or None
        ``None`` or ``"hashing"`` (the default, 256 dims), ``"hashing:<dim>"``, or
        ``"sentence-transformers:<local path>"`` (loaded only from that folder).

    Returns
    -------
    Embedder

    Raises
    ------
    ValidationError
        Unknown spec, bad dim, or sentence-transformers not installed.
    NotFoundError
        The sentence-transformers folder does not exist.

    Examples
    --------
    >>> load_embedder(None).name
    'hashing-v1-w12-c35-d256'
    >>> load_embedder("hashing:128").dim
    128
    """
    if spec is None or spec.strip() in ("", "hashing"):
        return HashingEmbedder()
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if kind == "hashing":
        try:
            dim = int(arg)
        except ValueError:
            raise ValidationError(f"bad embedder spec {spec!r}: dim must be an integer; {_SPEC_HELP}") from None
        return HashingEmbedder(dim=dim)
    if kind == "sentence-transformers":
        if not arg:
            raise ValidationError(f"bad embedder spec {spec!r}: a local model path is required; {_SPEC_HELP}")
        return SentenceTransformerEmbedder(arg)
    raise ValidationError(f"unknown embedder spec {spec!r}; {_SPEC_HELP}")
