"""The recall gate's frontier on LoCoMo as written and on its chat-style rewrite: "nothing new" against off-topic.

Run from the repository root (about 3 minutes on 2 cores)::

    nice .venv/bin/python benchmarks/gate_frontier.py

For every question with evidence of the ten conversations, asked of its own conversation's vault and of the next
one's (the off-topic stand-in of ``synapse-nb recall eval``: the next conversation of the selection, cyclically),
it reads what the gate's support is made of (the best and second-best coverage of the top 20, the unknown share:
``synapse_nb.recall.scoring.support``). Then it prints, from those numbers alone:

1. the floor's trade-off: for floors 0.18-0.24, the share of questions with evidence answered "nothing new" and
   the share of off-topic questions rejected, per style and split (dev 0-6, held out 7-9, all ten);
2. the support formula's frontier on dev (0-6) only: every (best weight, unknown penalty, floor) of a grid that
   rejects at least as many off-topic questions as today on both styles' dev, by chat-style dev "nothing new".

Nothing is chosen on held-out rows. The figures and what was kept: docs/recall.md, "Real chat (issue 33)".
"""

from __future__ import annotations

import itertools
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.retrieval import build_locomo_vault
from synapse_nb.recall.rank import SCORE_DECIMALS
from synapse_nb.recall.scoring import BEST_WEIGHT, UNKNOWN_PENALTY
from synapse_nb.recall.types import Bars
from synapse_nb.vault import Vault

FLOOR = Bars().floor  # today's floor
SPLITS = {"dev": list(range(7)), "held": [7, 8, 9], "all": list(range(10))}
_UNKNOWN = re.compile(r"unknown share of the query ([0-9.]+)")


def features(style: str) -> dict[tuple[str, bool], np.ndarray]:
    """(split, off-topic?) -> rows of (best coverage, second, unknown share, support) per question."""
    convs = load_locomo("datasets/locomo/locomo10.json")
    if style == "chat":
        convs = chat_style_all(convs, ChatStyle())
    bars = Bars(floor=1.0)  # every answer fails the floor: its reason names the unknown share

    def feat(v: Vault, q: str) -> tuple[float, float, float, float]:
        r = v.recall(q, bars=bars)
        rows = r.explain()
        cov = sorted((x.coverage for x in rows if x.coverage is not None), reverse=True) or [0.0]
        m = _UNKNOWN.search(rows[0].reason) if rows else None
        return cov[0], cov[1] if len(cov) > 1 else cov[0], float(m.group(1)) if m else 0.0, r.coverage

    out: dict[tuple[str, bool], list[tuple[float, float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        vaults = [build_locomo_vault(c, Path(tmp) / str(i))[0] for i, c in enumerate(convs)]
        try:
            mine = {n: [feat(vaults[n], q.question) for q in c.questions if q.evidence] for n, c in enumerate(convs)}
            for split, ns in SPLITS.items():
                out[(split, False)] = [f for n in ns for f in mine[n]]
                out[(split, True)] = [feat(vaults[ns[(k + 1) % len(ns)]], q.question)
                                      for k, n in enumerate(ns) for q in convs[n].questions if q.evidence]
        finally:
            for v in vaults:
                v.index.raw.close()
                v.close()
    return {k: np.array(v) for k, v in out.items()}


def below(f: np.ndarray, floor: float, best: float = BEST_WEIGHT, unknown: float = UNKNOWN_PENALTY) -> float:
    """Share of rows whose support is under floor: as recall computed it for today's weights (exact-match bonuses
    included), else recomputed with these weights (``synapse_nb.recall.scoring.support``'s formula)."""
    sup = f[:, 3] if (best, unknown) == (BEST_WEIGHT, UNKNOWN_PENALTY) else np.maximum(
        0.0, np.round(best * f[:, 0] + (1 - best) * f[:, 1] - unknown * f[:, 2], SCORE_DECIMALS))
    return float((sup < floor - 1e-12).mean())


def main() -> int:
    feats = {style: features(style) for style in ("original", "chat")}
    print("floor  " + "  ".join(f"{s[:4]}-{sp:<4} nothing-new / off-topic" for s in feats for sp in SPLITS))
    for floor in (0.18, 0.19, 0.20, 0.21, 0.22, 0.23, 0.24):
        print(f"{floor:.2f}   " + "  ".join(f"{below(feats[s][(sp, False)], floor):>18.4f} / "
                                           f"{below(feats[s][(sp, True)], floor):.3f}" for s in feats for sp in SPLITS))
    today = {s: below(feats[s][("dev", True)], FLOOR) for s in feats}
    found = []
    for best, unknown in itertools.product((0.6, 0.7, 0.8, 0.9, 1.0), (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)):
        for floor in np.round(np.arange(0.10, 0.40, 0.005), 3):
            off = {s: below(feats[s][("dev", True)], floor, best, unknown) for s in feats}
            if all(off[s] >= today[s] for s in feats):
                found.append((below(feats["chat"][("dev", False)], floor, best, unknown), best, unknown, float(floor),
                              off["original"], off["chat"]))
    chat_today = below(feats["chat"][("dev", False)], FLOOR)
    print(f"\nsupport formula on dev, off-topic kept on both styles (today: best {BEST_WEIGHT}, unknown "
          f"{UNKNOWN_PENALTY}, floor {FLOOR}; chat-style nothing new {chat_today:.4f}):")
    print("chat nothing-new  best  unknown  floor  off-topic LoCoMo / chat")
    for row in sorted(found)[:8]:
        print(f"{row[0]:>16.4f}  {row[1]:>4}  {row[2]:>7}  {row[3]:.3f}  {row[4]:.3f} / {row[5]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
