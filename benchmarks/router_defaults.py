"""Choose the router's defaults on validation data only: CLINC150's val split and agent_vault's val split.

Run from the repository root::

    .venv/bin/python benchmarks/router_defaults.py                     # every candidate (about 10 minutes)
    .venv/bin/python benchmarks/router_defaults.py --only clinc150 --candidates lexical,wordllama-1
    .venv/bin/python benchmarks/router_defaults.py --embedders wordllama,e5-small   # e5: vectors cached on disk

Each candidate router is fitted on ``train`` (agent_vault: with the hubs' triggers as descriptions and their
examples as rows, as ``synapse-nb gate eval`` does) and scored on ``val`` once. The **val, cross-calibrated**
figures: val is cut into 5 label-stratified folds; each fold is predicted with the threshold (and ``auto``
blend) chosen by the candidate's criterion on the other four; the pooled predictions are scored. ``balanced``
(mean of in-scope accuracy and out-of-scope recall) is the selection key: it does not depend on the share of
out-of-scope rows, which differs between val and whatever is routed later (CLINC150: 3 % of val, 18 % of test).
``NR in-scope`` is val's in-scope accuracy with no rejection: what a dataset without out-of-scope rows
measures. No test row is read.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.eval import load_dataset, routing_metrics
from synapse_nb.gate import Router
from synapse_nb.gate.folds import stratified_folds


def cross_calibrated(router: Router, xs: list[str], ys: list[str | None], criterion: str,
                     folds: int = 5, seed: int = 0) -> tuple[list[str | None], float]:
    """Predictions of each val fold at the threshold/blend chosen on the other folds; NR in-scope accuracy."""
    labels = ["\x00oos" if y is None else y for y in ys]
    parts = router._calibration_parts(xs)
    fold = stratified_folds(ys, folds, seed=seed)
    pred: list[str | None] = [None] * len(xs)
    for k in range(folds):
        rest, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        router._choose({b: s[rest] for b, s in parts.items()}, [labels[i] for i in rest], criterion, False,
                       seed, None)
        idx = router._decide(parts[router.blend_ if router.blend_ is not None else 0.0][held])
        for i, j in zip(held, idx, strict=True):
            pred[i] = None if j < 0 else router.routes_[j]
    router._choose(parts, labels, criterion, False, seed, None)
    best = parts[router.blend_ if router.blend_ is not None else 0.0].argmax(axis=1)
    inn = [i for i, y in enumerate(ys) if y is not None]
    nr = float(np.mean([router.routes_[best[i]] == ys[i] for i in inn]))
    return pred, nr


def candidates(embedders: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The candidates compared: today's lexical default and its neighbours, then each embedder at four weights."""
    out: dict[str, dict[str, Any]] = {"lexical": {}}
    for C in (1.0, 4.0):
        out[f"lexical C={C:g}"] = {"C": C}
    for p in (0.0, 1.0):
        out[f"lexical linear_idf={p:g}"] = {"linear_idf": p}
    for name, emb in embedders.items():
        for w in (0.25, 0.5, 1.0, 1.5, 2.0, 3.0):
            out[f"{name}-{w:g}"] = {"embedder": emb, "semantic_weight": w}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="clinc150,agent_vault", help="comma-separated datasets")
    ap.add_argument("--candidates", default="", help="comma-separated candidate names (default: all)")
    ap.add_argument("--embedders", default="wordllama", help="comma-separated embedder specs to try")
    args = ap.parse_args(argv)
    from synapse_nb.eval.embedding_cache import CachedEmbedder
    from synapse_nb.store.embedders import load_embedder

    embedders = {spec: CachedEmbedder(load_embedder(spec)) for spec in args.embedders.split(",") if spec}
    cands = candidates(embedders)
    if args.candidates:
        cands = {k: cands[k] for k in args.candidates.split(",")}
    print("dataset      candidate            criterion  val-cc bal  val-cc 151  in-scope  oos rec  NR in-scope  fit s")
    for ds in args.only.split(","):
        data = load_dataset(ds)
        xtr, ytr = data.split("train")
        desc: dict[str, str] = {}
        if data.route_descriptions or data.route_examples:
            desc = dict(data.route_descriptions)
            for route, examples in sorted(data.route_examples.items()):
                xtr, ytr = xtr + list(examples), ytr + [route] * len(examples)
        xva, yva = data.split("val")
        for name, kw in cands.items():
            t0 = time.perf_counter()
            router = Router(**kw).fit(xtr, ytr, descriptions=desc or None)
            t_fit = time.perf_counter() - t0
            for criterion in ("balanced", "accuracy"):
                pred, nr = cross_calibrated(router, xva, yva, criterion)
                m = routing_metrics(yva, pred)
                bal = (m.in_scope_accuracy + m.oos_recall) / 2  # type: ignore[operator]
                print(f"{ds:<12} {name:<20} {criterion:<10} {100 * bal:>10.1f} {100 * m.accuracy:>11.1f} "
                      f"{100 * m.in_scope_accuracy:>9.1f} {100 * m.oos_recall:>8.1f} {100 * nr:>12.1f} "  # type: ignore[operator]
                      f"{t_fit:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
