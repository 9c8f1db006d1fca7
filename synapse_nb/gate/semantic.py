"""Optional semantic features for the router: an embedder's vectors as one more block of a text's row.

The router never loads a model: it is given an object with the shape of recall's
:class:`synapse_nb.store.embedders.Embedder` (``name``, ``dimension``, ``fingerprint``,
``embed(texts, query=...)``), which :mod:`synapse_nb.eval` or the CLI load with
:func:`synapse_nb.store.embedders.load_embedder`. :func:`semantic_rows` turns its vectors into a sparse block
``weight * v / |v|``, appended to the TF-IDF rows the linear model, the centroids and kNN read, so every score is
still one sparse x dense product computed by scipy row by row in a fixed order (no BLAS): the same bits
whatever the batch, the thread count or ``PYTHONHASHSEED`` (decision 0008), provided the embedder's vectors are.
Norms are float64 sums in index order (``numpy.bincount``).

Pure: no I/O; the embedder is whatever the caller injects.

Examples
--------
>>> import numpy as np
>>> class Toy:
...     name, dimension, fingerprint = "toy", 2, "toy v1"
...     def embed(self, texts, *, query=False):
...         return np.array([[len(t), 1.0] for t in texts])
>>> semantic_rows(Toy(), ["abc", ""], 2.0).toarray().round(3).tolist()
[[1.897, 0.632], [0.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np
import scipy.sparse as sp

from synapse_nb.errors import ValidationError

__all__ = ["TextEmbedder", "check_text_embedder", "describe_embedder", "semantic_rows"]


@runtime_checkable
class TextEmbedder(Protocol):
    """What the router needs from an embedder (recall's :class:`~synapse_nb.store.embedders.Embedder` has it).

    ``embed(texts, query=True)`` returns a float array ``(len(texts), dimension)``; the same text must give the
    same bits alone or in any batch. ``fingerprint`` names the model and its settings.
    """

    name: str
    dimension: int
    fingerprint: str

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Any: ...


def check_text_embedder(obj: object) -> TextEmbedder:
    """``obj`` if it has an embedder's attributes (see :class:`TextEmbedder`), else a :class:`ValidationError`."""
    dim = getattr(obj, "dimension", None)
    named = isinstance(getattr(obj, "name", None), str) and isinstance(getattr(obj, "fingerprint", None), str)
    sized = isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1
    if not named or not sized or not callable(getattr(obj, "embed", None)):
        raise ValidationError(
            f"embedder must have name (str), fingerprint (str), dimension (int >= 1) and embed(texts, query=...), "
            f"like synapse_nb.store.embedders.load_embedder('wordllama'); got {type(obj).__name__}")
    return cast("TextEmbedder", obj)


def describe_embedder(embedder: TextEmbedder | None) -> str | None:
    """``"name (fingerprint)"`` for records of an evaluation, or ``None``."""
    return None if embedder is None else f"{embedder.name} ({embedder.fingerprint})"


def semantic_rows(embedder: TextEmbedder, texts: Sequence[str], weight: float) -> sp.csr_matrix:
    """``weight * v / |v|`` for each text's vector ``v`` (a zero vector stays zero), as a CSR matrix.

    Raises
    ------
    ValidationError
        The embedder returned another shape or a non-finite value.
    """
    n, d = len(texts), embedder.dimension
    if n == 0:
        return sp.csr_matrix((0, d), dtype=np.float64)
    V = np.asarray(embedder.embed(list(texts), query=True), dtype=np.float64)
    if V.shape != (n, d):
        raise ValidationError(f"embedder {embedder.name!r} returned shape {V.shape}, expected {(n, d)}")
    if not np.isfinite(V).all():
        raise ValidationError(f"embedder {embedder.name!r} returned a non-finite value")
    V = np.ascontiguousarray(V)
    sq = np.bincount(np.repeat(np.arange(n), d), weights=(V * V).ravel(), minlength=n)  # in index order
    norm = np.sqrt(sq)
    scale = np.divide(float(weight), norm, out=np.zeros(n), where=norm > 0)
    return sp.csr_matrix(V * scale[:, None])
