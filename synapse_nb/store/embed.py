"""Text embedders for the retrieval index.

An embedder turns texts into L2-normalised float32 vectors. The built-in
:class:`HashingEmbedder` needs no download and no fitting: the same text gives
the same vector in every process, whatever ``PYTHONHASHSEED``. Its ``name``
(with its parameters) is stored in the index; an index built by another
embedder must be rebuilt.

Heavy imports (scikit-learn, scipy, sentence-transformers) happen on first
use, so ``import synapse_nb.store.embed`` stays cheap.

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

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from synapse_nb.errors import NotFoundError, ValidationError

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

    Word 1-2-grams and character 3-5-grams (within word boundaries) are hashed with
    scikit-learn's ``HashingVectorizer`` (MurmurHash3 with a fixed seed, signed
    features) into ``n_features`` columns each, then multiplied by a sparse random
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
        import scipy.sparse as sp
        from sklearn.feature_extraction.text import HashingVectorizer

        common: dict[str, Any] = dict(
            n_features=self.n_features, alternate_sign=True, norm="l2", lowercase=True, dtype=np.float32
        )
        self._word = HashingVectorizer(analyzer="word", ngram_range=(1, 2), **common)
        self._char = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5), **{**common, "norm": None})
        rng = np.random.Generator(np.random.PCG64(self.seed))
        rows = 2 * self.n_features
        cols = rng.integers(0, self.dim, size=(rows, self.density), dtype=np.int64)
        signs = rng.integers(0, 2, size=(rows, self.density), dtype=np.int8).astype(np.float32) * 2.0 - 1.0
        indptr = np.arange(0, rows * self.density + 1, self.density, dtype=np.int64)
        proj = sp.csr_matrix((signs.ravel(), cols.ravel(), indptr), shape=(rows, self.dim))
        proj.sum_duplicates()
        self._proj = proj

    def _char_features(self, texts: list[str]) -> Any:
        """``char_wb`` 3-5-gram counts, L2-normalised: the same matrix as ``HashingVectorizer(analyzer="char_wb")``.

        ``char_wb`` n-grams never cross a whitespace-separated word, so a text's counts are the sum of its
        words' counts: each distinct word of the batch is analysed once (real text repeats words a lot,
        about 10x faster on 10k notes), then a sparse (texts x words) count matrix sums them.
        """
        import scipy.sparse as sp
        from sklearn.preprocessing import normalize

        vocab: dict[str, int] = {}
        indices: list[int] = []
        indptr = [0]
        for text in texts:
            for word in text.lower().split():
                indices.append(vocab.setdefault(word, len(vocab)))
            indptr.append(len(indices))
        words = list(vocab)  # insertion order: deterministic for the same batch
        counts = sp.csr_matrix(
            (np.ones(len(indices), dtype=np.float32), np.array(indices, dtype=np.int64), np.array(indptr, dtype=np.int64)),
            shape=(len(texts), len(words)),
        )
        counts.sum_duplicates()
        per_word = self._char.transform(words) if words else sp.csr_matrix((0, self.n_features), dtype=np.float32)
        return normalize(counts @ per_word, norm="l2", copy=False)

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
        import scipy.sparse as sp

        feats = sp.hstack([self._word.transform(texts), self._char_features(texts)], format="csr")
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
                f"sentence-transformers model folder {str(p)!r} does not exist; give a local folder (nothing is downloaded)"
            )
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ValidationError(
                "embedder 'sentence-transformers:...' needs the sentence-transformers package, which is not installed; "
                "install it or use 'hashing'"
            ) from None
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self._model = SentenceTransformer(str(p), device="cpu", local_files_only=True)
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.name = f"sentence-transformers:{p.name}-d{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(n, dim)`` float32 array with unit-length rows."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)


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
