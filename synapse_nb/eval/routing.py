"""What ``synapse-nb gate eval PATH`` runs: build the router from the shared defaults and the options given, load
the data (and the embedder of the semantic features), evaluate.

The evaluation itself -- fit on train, calibrate on val, score test -- is :mod:`synapse_nb.eval.router_eval`;
its names are importable from here too (``from synapse_nb.eval.routing import evaluate_router``).

Examples
--------
>>> out = run_gate_eval("datasets/agent_vault")   # doctest: +SKIP
>>> out["criterion"]                              # doctest: +SKIP
'balanced'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from synapse_nb.eval.data import load_dataset
from synapse_nb.eval.router_eval import CRITERIA, RouterEvaluation, RouterLike, evaluate_router
from synapse_nb.gate.defaults import DEFAULTS

__all__ = ["CRITERIA", "RouterEvaluation", "RouterLike", "evaluate_router", "load_router_embedder", "run_gate_eval"]


def load_router_embedder(spec: Any, *, cache: bool | str | os.PathLike[str] | None = None) -> Any:
    """The embedder of the router's semantic features: ``spec`` as :func:`synapse_nb.store.embedders.load_embedder`
    takes it (``"wordllama"``, ``"e5-small"``, ``"import:mod:factory"``, ...), or an embedder object as is;
    ``None`` for none. ``cache``: keep its vectors on disk (:class:`~synapse_nb.eval.embedding_cache.CachedEmbedder`;
    ``True`` for the default folder, or a folder).
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        from synapse_nb.store.embedders import load_embedder  # loads the model (and its extra) only when asked

        spec = load_embedder(spec)
    if cache:
        from synapse_nb.eval.embedding_cache import CachedEmbedder

        spec = CachedEmbedder(spec, None if cache is True else cache)
    return spec


def run_gate_eval(
    path: str | os.PathLike[str],
    *,
    train_split: str = "train",
    val_split: str | None = "auto",
    test_split: str = "test",
    criterion: str = DEFAULTS.criterion,
    method: str | None = None,
    per_route: bool = DEFAULTS.per_route,
    with_descriptions: bool | None = None,
    text_col: str | None = None,
    label_col: str | None = None,
    split_col: str | None = None,
    delimiter: str | None = None,
    encoding: str = "utf-8",
    errors: str = "strict",
    holdout: float | None = None,
    seed: int = 0,
    cross_fit: int | None = None,
    router_options: Mapping[str, Any] | None = None,
    embedder: Any = DEFAULTS.embedder,
    embed_cache: bool | str | os.PathLike[str] | None = None,
    n_boot: int = 1000,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Evaluate ``synapse_nb.gate.Router`` on a labelled file or dataset; what ``synapse-nb gate eval PATH`` prints.

    Parameters
    ----------
    path
        A labelled file (CSV/TSV, JSON Lines, JSON records, Parquet), a folder of split files
        (``train.*``, ``val.*``/``valid*``/``dev.*``, ``test.*``), a dataset folder or a bundled dataset name.
    train_split, val_split, test_split
        Split names (see :func:`evaluate_router`; ``val_split="auto"`` finds or carves one, ``None`` skips
        calibration, an unknown name is an error listing the splits found).
    criterion
        ``"balanced"`` or ``"accuracy"``; default ``DEFAULTS.criterion`` (:data:`synapse_nb.gate.defaults.DEFAULTS`,
        shared with ``Router.calibrate``, the CLI and the notebooks' headline row).
    method
        ``Router(method=...)``: ``auto`` (default), ``linear``, ``centroid`` or ``knn``.
    per_route
        Calibrate per-route thresholds.
    with_descriptions
        Fit on route descriptions/examples; ``None`` (default): whenever the dataset has them (agent_vault's
        hubs), the setting of ``notebooks/gate_hub_routing.ipynb``.
    text_col, label_col, split_col, delimiter, encoding, errors
        How to read a file (:func:`synapse_nb.eval.load_labelled`).
    holdout, seed
        Hold-out share for data without splits (and for a validation split carved from train), and its seed.
    cross_fit
        Fit on train + val and choose thresholds on out-of-fold scores of this many folds.
    router_options
        Further ``Router`` arguments (``C``, ``linear_idf``, ``description_weight``, ``blend``,
        ``semantic_weight``); the others are ``DEFAULTS``'.
    embedder
        Semantic features: an embedder spec (``"wordllama"``, ``"e5-small"``, ``"import:mod:factory"``, ...) or
        object (:func:`load_router_embedder`); ``None`` (default): TF-IDF only.
    embed_cache
        Keep the embedder's vectors on disk between runs (``True``: ``$SYNAPSE_EMBED_CACHE`` or
        ``~/.cache/synapse_nb/embeddings``; or a folder). Never changes a figure.
    n_boot
        Bootstrap resamples for the intervals.
    progress
        A progress bar on standard error: ``None`` (default) only on a terminal.

    Returns
    -------
    dict
        :meth:`RouterEvaluation.to_dict`: ``in_scope_accuracy``, ``oos_recall``, ``oos_precision``,
        ``oos_f1`` (``None`` without out-of-scope test rows), ``accuracy``, ``criterion``, ``thresholds``,
        ``n_train``, ``n_test``, ``queries_per_second``, ``ci``, ``notes``, ``config``; fractions in [0, 1].

    Examples
    --------
    >>> out = run_gate_eval("datasets/agent_vault")   # doctest: +SKIP
    >>> sorted(out)[:3]                               # doctest: +SKIP
    ['accuracy', 'calibrated', 'ci']
    """
    from synapse_nb.gate import Router  # the router imports scikit-learn: only when one is built here

    options = {**DEFAULTS.router_kwargs(), **dict(router_options or {})}
    if method is not None:
        options["method"] = method
    router = Router(**options, embedder=load_router_embedder(embedder, cache=embed_cache))
    data = load_dataset(path, text_col=text_col, label_col=label_col, split_col=split_col, delimiter=delimiter,
                        encoding=encoding, errors=errors)
    if with_descriptions is None:
        with_descriptions = bool(data.route_descriptions or data.route_examples)
    result = evaluate_router(
        router,
        data,
        train=train_split,
        val=val_split,
        test=test_split,
        criterion=criterion,
        per_route=per_route,
        with_descriptions=with_descriptions,
        holdout=holdout,
        cross_fit=cross_fit,
        n_boot=n_boot,
        seed=seed,
        progress=progress,
    )
    return result.to_dict()
