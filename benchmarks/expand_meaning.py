"""Expansion by meaning (issue 33; ``RankParams.expand``, :mod:`synapse_nb.recall.meaning`): recall as shipped, on
LoCoMo as written or its chat-style rewrite, with the expansion off and at the points of a grid.

Each point ``t:m:w`` runs the shipped code with the embedder's ``word_cosine`` set to ``t``, ``expand_words`` to
``m`` and ``expand`` to ``w``; ``off`` (printed first) is ``expand = 0``. The semantic channel is on at
``--semantic`` (the expansion only runs with it): e5-small 0.4 as shipped.

Run (from the repository root; the first run embeds every turn and every word, ~25 min for chat-style dev 0-6 on 2
busy cores; ``--cache`` keeps the vectors between runs, the same bytes)::

    nice .venv/bin/python benchmarks/expand_meaning.py --style chat --subset dev \\
        --grid 0.88:12:0.2,0.9:12:0.2 --cache /tmp/expand_cache/e5_channel.pkl

Prints one JSON line per point: R@5, R@10, multi-hop R@10 over the split's questions with evidence (the open bars
of ``synapse-nb recall eval``), the paired bootstrap of on - off (2,000 resamples, seed 0), the share of questions
with evidence that get "nothing new" at the shipped bars, and the median recall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from semantic_locomo import paired, per_question, summary, use_cache

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.retrieval import HELD_OUT_CONVERSATIONS, TUNE_CONVERSATIONS, build_locomo_vault
from synapse_nb.store import embedders

ROOT = Path(__file__).resolve().parents[1]


def set_point(vaults: list[tuple[Any, Any, dict[str, str]]], model: Any,
              point: tuple[float, int, float] | None) -> None:
    """Every vault's recall at ``point`` (None: expansion off)."""
    if point is not None:
        model.word_cosine = point[0]
    for _, v, _ in vaults:
        p = v._recaller.params
        v._recaller.params = replace(p, expand=0.0) if point is None else replace(p, expand_words=point[1],
                                                                                  expand=point[2])


def gate_rates(vaults: list[tuple[Any, Any, dict[str, str]]]) -> dict[str, float]:
    """Share of questions with evidence answered "nothing new" at the shipped bars, and the median recall ms."""
    empty, n, ms = 0, 0, []
    for conv, v, _ in vaults:
        for q in conv.questions:
            if not q.evidence:
                continue
            t0 = time.perf_counter()
            r = v.recall(q.question, record=False)
            ms.append((time.perf_counter() - t0) * 1000)
            n += 1
            empty += r.nothing_new
    return {"nothing_new": round(empty / max(n, 1), 4), "p50_ms": round(statistics.median(ms), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="e5-small")
    ap.add_argument("--semantic", type=float, default=0.4, help="the semantic channel's weight (> 0)")
    ap.add_argument("--style", default="chat", choices=["original", "chat"])
    ap.add_argument("--subset", default="dev", choices=["dev", "heldout"])
    ap.add_argument("--grid", default="0.88:12:0.2")
    ap.add_argument("--cache", default=None, help="a file keeping the embedder's vectors between runs")
    ap.add_argument("--gate", action="store_true", help="also the 'nothing new' share and the median time")
    args = ap.parse_args()
    cache = use_cache(args.embedder, args.cache)
    model = embedders.load_embedder(args.embedder)
    shipped = embedders.word_cosine(model)
    convs = load_locomo(str(ROOT / "datasets" / "locomo" / "locomo10.json"))
    if args.style == "chat":
        convs = chat_style_all(convs, ChatStyle())
    keep = TUNE_CONVERSATIONS if args.subset == "dev" else HELD_OUT_CONVERSATIONS
    convs = [c for c in convs if c.sample_id in keep]
    with tempfile.TemporaryDirectory() as tmp:
        vaults = []
        t0 = time.perf_counter()
        for n, conv in enumerate(convs):
            v, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            v.settings.set("recall_embedder", args.embedder)
            v.settings.set("recall_semantic", args.semantic)
            v.recall("warm up", record=False)  # builds the semantic and words tables
            vaults.append((conv, v, ids))
        if cache is not None:
            cache.save()
        built = round(time.perf_counter() - t0, 1)
        set_point(vaults, model, None)
        off = per_question(vaults, args.semantic)
        extra = gate_rates(vaults) if args.gate else {}
        print(json.dumps({"embedder": args.embedder, "style": args.style, "subset": args.subset,
                          "semantic": args.semantic, "built_s": built, "point": "off", **summary(off), **extra}),
              flush=True)
        for spec in args.grid.split(","):
            t, m, w = spec.split(":")
            set_point(vaults, model, (float(t), int(m), float(w)))
            on = per_question(vaults, args.semantic)
            extra = gate_rates(vaults) if args.gate else {}
            print(json.dumps({"point": spec, **summary(on), "ci_r10": paired(off, on, "r10"),
                              "ci_r5": paired(off, on, "r5"), **extra}), flush=True)
        model.word_cosine = shipped
        if cache is not None:
            cache.save()
        for _, v, _ in vaults:
            v.close()


if __name__ == "__main__":
    main()
