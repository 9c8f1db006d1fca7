"""Embeddings kept on disk between runs: an embedder wrapper for evaluations of the router's semantic features.

A slow embedder (``e5-small`` embeds some 20-50 short texts a second on one core) makes every evaluation of a
large set pay again for vectors it already computed. :class:`CachedEmbedder` wraps any embedder
(:class:`synapse_nb.store.embedders.Embedder`) and keeps its vectors in one ``.npz`` file per embedder
fingerprint, keyed by the SHA-256 of ``query`` flag and text: the bits given back are the ones the embedder
returned (same dtype), so a cached run scores exactly as an uncached one. Vectors are computed in chunks and the
file is rewritten (atomically) after each chunk, so an interrupted run keeps what it computed.

Examples
--------
>>> import numpy as np, tempfile
>>> class Toy:
...     name, version, dimension, fingerprint = "toy", "1", 2, "toy v1"
...     calls = 0
...     def embed(self, texts, *, query=False):
...         Toy.calls += len(texts)
...         return np.array([[len(t), 1.0] for t in texts])
>>> folder = tempfile.mkdtemp()
>>> CachedEmbedder(Toy(), folder).embed(["ab", "c"]).tolist()
[[2.0, 1.0], [1.0, 1.0]]
>>> CachedEmbedder(Toy(), folder).embed(["c", "ab", "new"]).tolist(), Toy.calls
([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]], 3)
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CachedEmbedder", "default_cache_dir"]


def default_cache_dir() -> Path:
    """``$SYNAPSE_EMBED_CACHE``, else ``$XDG_CACHE_HOME/synapse_nb/embeddings`` (``~/.cache/...``)."""
    env = os.environ.get("SYNAPSE_EMBED_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "synapse_nb" / "embeddings"


def _key(text: str, query: bool) -> str:
    return hashlib.sha256(f"{int(query)}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


class CachedEmbedder:
    """``embedder`` with its vectors kept in ``folder`` (default :func:`default_cache_dir`).

    It has the embedder's ``name``, ``version``, ``dimension``, ``fingerprint`` and ``match_cosine``, so anything
    that takes an embedder takes it. ``progress(done, total)`` is called after each chunk computed.
    """

    def __init__(self, embedder: Any, folder: str | os.PathLike[str] | None = None, *, chunk: int = 512,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.inner = embedder
        self.name: str = embedder.name
        self.version: str = getattr(embedder, "version", "unknown")
        self.dimension: int = embedder.dimension
        self.fingerprint: str = embedder.fingerprint
        self.match_cosine: float | None = getattr(embedder, "match_cosine", None)
        self.chunk = max(1, int(chunk))
        self.progress = progress
        digest = hashlib.sha256(self.fingerprint.encode()).hexdigest()[:16]
        self.path = Path(folder if folder is not None else default_cache_dir()) / f"{self.name}-{digest}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dtype: np.dtype[Any] | None = None
        if self.path.is_file():
            with np.load(self.path) as z:
                keys, vecs = z["keys"], z["vectors"]
            self._dtype = vecs.dtype
            self._vectors = {str(k): vecs[i] for i, k in enumerate(keys)}

    def __len__(self) -> int:
        return len(self._vectors)

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._vectors)
        vecs = np.stack([self._vectors[k] for k in keys]) if keys else np.zeros((0, self.dimension))
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".npz.part")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=np.array(keys), vectors=vecs)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """The vectors of ``texts``: cached ones read back, the others computed (in chunks) and kept."""
        keys = [_key(t, query) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._vectors}.items())
        for lo in range(0, len(missing), self.chunk):
            part = missing[lo : lo + self.chunk]
            vecs = np.asarray(self.inner.embed([t for _, t in part], query=query))
            if self._dtype is None:
                self._dtype = vecs.dtype
            for (k, _), v in zip(part, vecs, strict=True):
                self._vectors[k] = np.array(v, dtype=self._dtype)
            self._save()
            if self.progress is not None:
                self.progress(min(lo + self.chunk, len(missing)), len(missing))
        if not texts:
            return np.zeros((0, self.dimension), dtype=self._dtype or np.float64)
        return np.stack([self._vectors[k] for k in keys])
