"""LoCoMo: recall's optional semantic channel, tuned on conversations 0-6 only, then off vs on with paired CIs.

Run: ``nice .venv/bin/python benchmarks/semantic_locomo.py [--weights 0.1,0.2,0.3,0.4,0.5,0.7,1.0] [--weight W]``
(needs ``pip install 'synapse_nb[semantic]'``). Prints dev (0-6) R@5/R@10 for each weight of the search space,
then, for the chosen weight (``--weight``, else the best dev R@10), each split's R@5/R@10 off -> on and the paired
bootstrap of on - off over questions (2,000 resamples, seed 0; 95% percentile interval). Held-out figures are
reported as they come: nothing is chosen on them. About 5 minutes on 2 cores. ``--timing``: recall p50 off vs on
over conversation 0's questions, in one process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np

from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.retrieval import build_locomo_vault, locomo_questions

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


def timing(weight: float, rounds: int = 3) -> dict[str, float]:
    """Median recall time over conversation 0's questions, off and on, alternating in one process (the first
    pass with the channel on embeds the hits; later passes read the vector cache)."""
    conv = load_locomo("datasets/locomo/locomo10.json")[0]
    qs = [q.question for q in conv.questions]
    with tempfile.TemporaryDirectory() as tmp:
        v, _ = build_locomo_vault(conv, tmp)
        try:
            times: dict[str, list[float]] = {"off": [], "on_first": [], "on": []}
            for r in range(rounds + 1):
                for name, w in (("off", 0.0), ("on_first" if r == 0 else "on", weight)):
                    v.settings.set("recall_semantic", w)
                    for q in qs:
                        t = time.perf_counter()
                        v.recall(q)
                        times[name].append(time.perf_counter() - t)
        finally:
            v.close()
    med = {k: statistics.median(x) * 1000 for k, x in times.items()}
    return {"n_records": len(conv.turns), "p50_ms_off": round(med["off"], 3), "p50_ms_on": round(med["on"], 3),
            "p50_ms_on_first_pass": round(med["on_first"], 3), "ratio_on_off": round(med["on"] / med["off"], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.1,0.2,0.3,0.4,0.5,0.7,1.0", help="search space, on dev (0-6) only")
    ap.add_argument("--weight", type=float, default=None, help="skip the search: compare this weight")
    ap.add_argument("--timing", action="store_true", help="only time recall off vs on (conversation 0)")
    args = ap.parse_args()
    if args.timing:
        print(json.dumps(timing(args.weight or 0.3)))
        return
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
