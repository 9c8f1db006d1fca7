"""The optional dense channel of recall: a static word-embedding model, added to BM25 as a weighted term.

Off by default (``RankParams.semantic == 0``; the vault setting ``recall_semantic``). Install it with
``pip install synapse_nb[semantic]``: `wordllama <https://github.com/dleemiller/WordLlama>`_ (MIT), whose wheel
carries its 16 MB of 256-dimensional token embeddings, so nothing is downloaded, ever.

How it ranks (:func:`semantic_term`): lexical first, always. The BM25 hits of the query (at most
``RankParams.depth``) are normalised by the best one, and each gains ``semantic`` x (its cosine with the
query / the best cosine among the hits), before the structure step. The channel re-weighs what BM25 found; it
does not add records BM25 did not find. That keeps a recall's cost bounded by ``depth`` whatever the vault's
size (a 1M-record vault embeds at most ``depth`` texts per query, most of them cached): a full dense scan
would read and embed every record of the mind.

Determinism (the same bytes whatever the thread count, CPU kernel or PYTHONHASHSEED): wordllama's own
``embed`` is not used. The text is tokenised by its tokenizer, the token rows are summed in float64 in token
order (an axis-0 reduction: no pairwise or BLAS reordering), normalised with an exactly rounded
:func:`math.fsum`, and quantised to integers (x 2**15). Cosines are integer dot products (exact; numpy's
integer matmul never goes through BLAS), divided by 2**30 (exact). Empty text (no tokens) has the zero
vector: cosine 0, never NaN. Each text is embedded alone: no batch padding, so a long record costs only
itself and a text's vector never depends on its batch.

Loading: strictly offline, ``WordLlama.load(cache_dir=<wordllama's own folder>, disable_download=True)``
(plain ``load()`` looks in ``~/.cache`` and then tries the network). wordllama calls
``logging.basicConfig`` when imported; the root logger's handlers and level are put back as they were.

Vectors live in a per-process cache (:class:`VectorCache`) keyed by record id and a digest of the text,
tagged with the model's :class:`Fingerprint` (name, version, SHA-256 of the weights file); it holds at most
:data:`MAX_CACHED_VECTORS` vectors (about 20 MB).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_nb.errors import SemanticUnavailableError

if TYPE_CHECKING:
    import numpy as np

    from synapse_nb.store.records import Candidate

__all__ = ["MAX_CACHED_VECTORS", "QUANT", "Fingerprint", "SemanticModel", "VectorCache", "load_model",
           "semantic_term"]

#: The wheel's model: configuration and dimension (the weights file ``weights/l2_supercat_256.safetensors``).
CONFIG, DIM = "l2_supercat", 256
#: Unit vectors are stored as round(x * QUANT) (int64); a cosine is dot / QUANT**2, exactly.
QUANT = 1 << 15
#: Most vectors the per-process cache holds (256 int64 each, 2 KB: ~20 MB); it is emptied when full.
MAX_CACHED_VECTORS = 10_000
#: Most characters of a text that are embedded (a longer record is embedded on its beginning).
MAX_CHARS = 20_000
INSTALL = "pip install 'synapse_nb[semantic]'"


@dataclass(frozen=True)
class Fingerprint:
    """What produced a vector: the embedder's name, its package version, the SHA-256 of its weights file."""

    name: str
    version: str
    weights_sha256: str


class SemanticModel:
    """wordllama's tokenizer and token embeddings, loaded offline; :meth:`vector` embeds one text."""

    def __init__(self) -> None:
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        try:
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError as e:
                raise SemanticUnavailableError(
                    f"the semantic recall channel needs the optional extra: {INSTALL} (then restart Python); "
                    f"or turn it off (setting recall_semantic = 0). Import failed: {e}") from None
        finally:  # wordllama calls logging.basicConfig(level=INFO) on import: undo it
            for h in list(root.handlers):
                if h not in handlers:
                    root.removeHandler(h)
            root.setLevel(level)
        folder = Path(wordllama.__file__).parent
        weights = folder / "weights" / f"{CONFIG}_{DIM}.safetensors"
        try:
            model = WordLlama.load(config=CONFIG, dim=DIM, cache_dir=folder, disable_download=True)
        except (FileNotFoundError, ValueError) as e:
            raise SemanticUnavailableError(
                f"wordllama is installed but its bundled model could not be loaded offline ({e}); reinstall it "
                f"with {INSTALL}") from None
        import numpy as np

        self.tokenizer = model.tokenizer
        self.embedding = np.ascontiguousarray(model.embedding, dtype=np.float32)
        digest = hashlib.sha256(weights.read_bytes()).hexdigest() if weights.is_file() else "unknown"
        version = str(getattr(wordllama, "__version__", "unknown"))
        self.fingerprint = Fingerprint(f"wordllama {CONFIG} {DIM}", version, digest)

    def vector(self, text: str) -> np.ndarray:
        """``text``'s unit mean-pooled embedding quantised to int64 (x :data:`QUANT`); zeros for blank text."""
        import numpy as np

        text = text[:MAX_CHARS]
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids if text.strip() else []
        if not ids:
            return np.zeros(DIM, np.int64)
        rows = self.embedding[np.clip(np.asarray(ids, np.int64), 0, len(self.embedding) - 1)]
        v = np.add.reduce(rows.astype(np.float64), axis=0)  # axis 0: row after row, in token order
        norm = math.sqrt(math.fsum((v * v).tolist()))
        if not norm > 0.0:
            return np.zeros(DIM, np.int64)
        out: np.ndarray = np.rint(v / norm * QUANT).astype(np.int64)
        return out


_model: SemanticModel | None = None
_model_lock = threading.Lock()


def load_model() -> SemanticModel:
    """The process's model (loaded once); :class:`SemanticUnavailableError` when the extra is missing."""
    global _model
    with _model_lock:
        if _model is None:
            _model = SemanticModel()
        return _model


class VectorCache:
    """Quantised vectors by (record id, text digest), for one model (its :attr:`fingerprint`)."""

    def __init__(self, model: SemanticModel, limit: int = MAX_CACHED_VECTORS) -> None:
        self.model = model
        self.fingerprint = model.fingerprint
        self.limit = limit
        self._lock = threading.Lock()
        self._vecs: dict[tuple[str, bytes], np.ndarray] = {}

    def get(self, rid: str, text: str) -> np.ndarray:
        key = (rid, hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest())
        with self._lock:
            v = self._vecs.get(key)
        if v is None:
            v = self.model.vector(text)
            with self._lock:
                if len(self._vecs) >= self.limit:
                    self._vecs.clear()
                self._vecs[key] = v
        return v

    def __len__(self) -> int:
        return len(self._vecs)


_cache: VectorCache | None = None


def _vectors() -> VectorCache:
    global _cache
    model = load_model()
    with _model_lock:
        if _cache is None or _cache.fingerprint != model.fingerprint:
            _cache = VectorCache(model)
        return _cache


def cosines(query: str, texts: Sequence[tuple[str, str]]) -> np.ndarray:
    """Cosine (exact, from the quantised vectors) of ``query`` with each ``(record id, text)``."""
    import numpy as np

    cache = _vectors()
    if not texts:
        return np.zeros(0)
    q = cache.model.vector(query)
    m = np.stack([cache.get(rid, text) for rid, text in texts])
    out: np.ndarray = (m @ q).astype(np.float64) / float(QUANT * QUANT)  # integer products: exact in any order
    return out


def semantic_term(query: str, ids: Sequence[str], bm25: np.ndarray, weight: float,
                  fetch: Callable[[Sequence[str]], Mapping[str, Candidate]]) -> np.ndarray:
    """BM25 scores ``bm25`` of the hits ``ids`` with the dense term added: ``bm25 / max(bm25) + weight x
    cos / max(cos)`` (negative cosines count 0). ``fetch`` gives the hits' candidate rows (their text);
    ``weight`` 0 returns ``bm25`` unchanged without loading anything."""
    import numpy as np

    if not weight or len(bm25) == 0:
        return bm25
    rows = fetch(ids)
    cos = cosines(query, [(i, rows[i].text if i in rows else "") for i in ids])
    cos = np.maximum(cos, 0.0)
    top, ctop = float(bm25.max()), float(cos.max())
    s = bm25 / top if top > 0 else np.zeros(len(bm25))
    if ctop > 0:
        s = s + weight * (cos / ctop)
    return s


def describe() -> dict[str, Any]:
    """The loaded model's fingerprint and cache size (loads the model)."""
    cache = _vectors()
    f = cache.fingerprint
    return {"name": f.name, "version": f.version, "weights_sha256": f.weights_sha256, "cached": len(cache)}
