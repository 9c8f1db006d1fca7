"""The router's threshold chosen on a larger pool without training on val: train's out-of-fold scores plus val.

Run from the repository root: ``nice .venv/bin/python benchmarks/router_calibration_pool.py [--only clinc150]``.

The default router is fitted on ``train`` only. Its threshold and ``auto`` blend are chosen (criterion
``balanced``) on three pools: ``val`` (today), ``oof+val`` (val plus the out-of-fold scores of train, each fifth
scored by a router fitted on the other four fifths of train: no val row is trained on, unlike ``--cross-fit``)
and ``oof`` alone. Each is scored with the selection key of ``benchmarks/router_defaults.py``: val cut into 5
label-stratified folds, each predicted at the threshold chosen on the pool with the other four val folds. Then,
once, the test split with the threshold chosen on the whole pool (reported as it comes; nothing is chosen on it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.eval import load_dataset, routing_metrics
from synapse_nb.gate import Router
from synapse_nb.gate.folds import stratified_folds

OOS = "\x00oos"  # the calibration search's name for an out-of-scope label


def _labels(ys: list[str | None]) -> list[str]:
    return [OOS if y is None else y for y in ys]


def _figures(ys: list[str | None], pred: list[str | None]) -> str:
    m = routing_metrics(ys, pred)
    bal = (m.in_scope_accuracy + m.oos_recall) / 2  # type: ignore[operator]
    return f"balanced {100 * bal:5.1f}  151-class {100 * m.accuracy:5.1f}"


def _pool(name: str, rows: np.ndarray, val: dict[float, np.ndarray], lva: list[str], oof: dict[float, np.ndarray],
          ltr: list[str]) -> tuple[dict[float, np.ndarray], list[str]]:
    """The scores and labels a threshold is chosen on: val's ``rows``, train's out-of-fold scores, or both."""
    if name == "val":
        return {b: s[rows] for b, s in val.items()}, [lva[i] for i in rows]
    if name == "oof":
        return oof, ltr
    return {b: np.vstack([oof[b], val[b][rows]]) for b in val}, ltr + [lva[i] for i in rows]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="clinc150,agent_vault", help="comma-separated datasets")
    args = ap.parse_args(argv)
    for ds in args.only.split(","):
        data = load_dataset(ds)
        xtr, ytr = data.split("train")
        desc: dict[str, str] = {}
        if data.route_descriptions or data.route_examples:  # as `synapse-nb gate eval` fits agent_vault
            desc = dict(data.route_descriptions)
            for route, examples in sorted(data.route_examples.items()):
                xtr, ytr = xtr + list(examples), ytr + [route] * len(examples)
        xva, yva = data.split("val")
        xte, yte = data.split("test")
        router = Router().fit(xtr, ytr, descriptions=desc or None)
        routes = router.routes_
        fold = stratified_folds(ytr, 5, seed=0)
        oof: dict[float, np.ndarray] = {}
        for k in range(5):
            rest, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
            part = Router().fit([xtr[i] for i in rest], [ytr[i] for i in rest], descriptions=desc or None)
            cols = np.array([routes.index(r) for r in part.routes_])
            for blend, scores in part._calibration_parts([xtr[i] for i in held]).items():
                full = oof.setdefault(blend, np.full((len(xtr), len(routes)), -np.inf))
                full[np.ix_(held, cols)] = scores
        val = router._calibration_parts(xva)
        ltr, lva = _labels(ytr), _labels(yva)
        vfold = stratified_folds(yva, 5, seed=0)
        both = (val, lva, oof, ltr)
        for name in ("val", "oof+val", "oof"):
            pred: list[str | None] = [None] * len(xva)
            for k in range(5):
                rest, held = np.flatnonzero(vfold != k), np.flatnonzero(vfold == k)
                router._choose(*_pool(name, rest, *both), "balanced", False, 0, None)
                idx = router._decide(val[router.blend_ if router.blend_ is not None else 0.0][held])
                for i, j in zip(held, idx, strict=True):
                    pred[i] = None if j < 0 else routes[j]
            router._choose(*_pool(name, np.arange(len(xva)), *both), "balanced", False, 0, None)
            print(f"{ds:<12} {name:<8} val-cc {_figures(yva, pred)}  |  test {_figures(yte, router.predict(xte))}  "
                  f"(threshold {router.threshold_:.4f}, blend {router.blend_})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
