"""LoCoMo: recall's optional semantic channel, tuned on conversations 0-6 only, then off vs on with paired CIs.

Run: ``nice .venv/bin/python benchmarks/semantic_locomo.py [--weights 0.1,0.2,0.3,0.4,0.5,0.7,1.0] [--weight W]``
(needs ``pip install 'synapse_nb[semantic]'``). Prints dev (0-6) R@5/R@10 for each weight of the search space,
then, for the chosen weight (``--weight``, else the best dev R@10), each split's R@5/R@10 off -> on and the paired
bootstrap of on - off over questions (2,000 resamples, seed 0; 95% percentile interval). Held-out figures are
reported as they come: nothing is chosen on them. About 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from synapse_nb.eval.retrieval import locomo_questions

METRICS = ("recall_at_5", "recall_at_10")


def per_question(subset: str, weight: float) -> dict[str, list[float | None]]:
    f = locomo_questions("datasets/locomo", subset, semantic=weight, progress=False)
    f = f.filter(f["level"] == "turn")
    return {m: f[m].to_list() for m in METRICS}


def mean(xs: list[float | None]) -> float:
    return float(np.mean([x for x in xs if x is not None]))


def paired(a: list[float | None], b: list[float | None]) -> list[float]:
    d = np.array([y - x for x, y in zip(a, b, strict=True) if x is not None and y is not None])
    rng = np.random.default_rng(0)
    boot = [float(d[rng.integers(0, len(d), len(d))].mean()) for _ in range(2000)]
    return [round(float(d.mean()), 4), round(float(np.percentile(boot, 2.5)), 4),
            round(float(np.percentile(boot, 97.5)), 4)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.1,0.2,0.3,0.4,0.5,0.7,1.0", help="search space, on dev (0-6) only")
    ap.add_argument("--weight", type=float, default=None, help="skip the search: compare this weight")
    args = ap.parse_args()
    weight = args.weight
    if weight is None:
        dev = {}
        for w in [float(x) for x in args.weights.split(",")]:
            q = per_question("dev", w)
            dev[w] = mean(q["recall_at_10"])
            print(json.dumps({"split": "dev", "weight": w, **{m: round(mean(q[m]), 4) for m in METRICS}}), flush=True)
        weight = max(dev, key=lambda w: (dev[w], -w))
    for subset in ("dev", "heldout", "all"):
        off, on = per_question(subset, 0.0), per_question(subset, weight)
        print(json.dumps({"split": subset, "weight": weight, **{
            m: {"off": round(mean(off[m]), 4), "on": round(mean(on[m]), 4), "on_minus_off_ci": paired(off[m], on[m])}
            for m in METRICS}}), flush=True)


if __name__ == "__main__":
    main()
