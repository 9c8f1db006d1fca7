"""The gate with the semantic channel on: "nothing new" and off-topic rejection with and without the floor on meaning.

Run: ``nice .venv/bin/python benchmarks/semantic_gate.py --embedder e5-small --cache FILE [--style chat]
[--dev-only] [--grid 0.83,0.84,none] [--floor F]``. Builds LoCoMo's ten vaults (or their chat-style rewrite) with
the channel at its shipped point (``--weight``, default 0.4; ``--floor``: the gate's floor, default 0.22), then, for
every ``match_cosine`` of the grid (``none``: the gate on words alone, as before), asks each question with evidence
of its own vault and of the next vault of its selection (cyclically: dev 0-6, held out 7-9, all ten, as ``synapse-nb
recall eval --subset`` does) and prints per split, as JSON lines, what ``run_locomo_eval`` reports for the gate:
``nothing_new`` (questions with evidence answered "nothing new"), ``offtopic`` (questions of the next conversation
answered "nothing new": the rejection rate), ``delivered_R@5`` (the evidence among what a user receives, top 5), and
the dev objective ``(1 - nothing_new + offtopic) / 2``. A value is chosen on the dev lines only (``--dev-only``);
held-out lines are reported as they come. The model's ``match_cosine`` is what recall reads
(``synapse_nb.store.embedders``); the benchmark sets it on the loaded model between runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from semantic_locomo import _set_k, use_cache

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.metrics import recall_at_k
from synapse_nb.eval.retrieval import HELD_OUT_CONVERSATIONS, TUNE_CONVERSATIONS, build_locomo_vault
from synapse_nb.recall import semantic
from synapse_nb.store import embedders


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="e5-small")
    ap.add_argument("--weight", type=float, default=0.4)
    ap.add_argument("--grid", default="none,0.84", help="comma-separated match_cosine values; none: words alone")
    ap.add_argument("--cache", default=None, help="keep the embedder's vectors in this file between runs")
    ap.add_argument("--dev-only", action="store_true", help="print the dev lines only (a grid to choose on)")
    ap.add_argument("--style", default="original", choices=["original", "chat"])
    ap.add_argument("--floor", type=float, default=None, help="the gate's floor (setting recall_floor; default 0.22)")
    args = ap.parse_args()
    cache = use_cache(args.embedder, args.cache)
    _set_k(-1)
    semantic.DENSE_DEPTH = 50
    convs = load_locomo("datasets/locomo/locomo10.json")
    if args.style == "chat":
        convs = chat_style_all(convs, ChatStyle())
    splits = {"dev": [i for i, c in enumerate(convs) if c.sample_id in TUNE_CONVERSATIONS],
              "heldout": [i for i, c in enumerate(convs) if c.sample_id in HELD_OUT_CONVERSATIONS],
              "all": list(range(len(convs)))}
    if args.dev_only:
        del splits["heldout"], splits["all"]
    with tempfile.TemporaryDirectory() as tmp:
        vaults = []
        for n, conv in enumerate(convs):
            v, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            v.settings.set("recall_embedder", args.embedder)
            v.settings.set("recall_semantic", args.weight)
            if args.floor is not None:
                v.settings.set("recall_floor", args.floor)
            v.recall("warm up")
            vaults.append((v, ids))
        model = embedders.load_embedder(args.embedder)
        for value in args.grid.split(","):
            model.match_cosine = None if value == "none" else float(value)  # type: ignore[misc]
            own: dict[int, list[tuple[bool, float]]] = {}
            for n, conv in enumerate(convs):  # each question of its own vault: the same whatever the selection
                v, ids = vaults[n]
                rows = []
                for q in conv.questions:
                    if q.evidence:
                        r = v.recall(q.question)
                        got = [ids[i.id] for i in r.items if i.id in ids]
                        rows.append((r.nothing_new, recall_at_k(got, list(q.evidence), 5)))
                own[n] = rows
            for split, members in splits.items():
                nn, dr5, off = [], [], []
                for k, n in enumerate(members):
                    other = vaults[members[(k + 1) % len(members)]][0]
                    nn += [x[0] for x in own[n]]
                    dr5 += [x[1] for x in own[n]]
                    off += [other.recall(q.question).nothing_new for q in convs[n].questions if q.evidence]
                out: dict[str, Any] = {"split": split, "style": args.style, "match_cosine": value,
                                       "floor": args.floor if args.floor is not None else 0.22,
                                       "nothing_new": round(float(np.mean(nn)), 4),
                                       "offtopic": round(float(np.mean(off)), 4),
                                       "delivered_R@5": round(float(np.mean(dr5)), 4), "n": len(nn)}
                out["objective"] = round((1 - out["nothing_new"] + out["offtopic"]) / 2, 4)
                print(json.dumps(out), flush=True)
        for v, _ in vaults:
            v.index.close()
            v.close()
    if cache is not None:
        cache.save()


if __name__ == "__main__":
    main()
