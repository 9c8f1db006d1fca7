"""Prototype: dense pseudo-relevance feedback (Rocchio on the query vector) for recall's semantic channel.

After the shipped fusion (fuse_top), the query vector is moved toward the mean unit vector of the fused list's
best M records (weight BETA), the dense list searched again and fused with BM25's hits as shipped. Dev only.
Run: ``nice .venv/bin/python benchmarks/dense_prf.py --style chat --cache FILE --grid M:BETA,...`` (``FILE``: the
e5 vectors ``benchmarks/semantic_locomo.py --cache`` keeps; ``--source dense``: the dense list's best M instead).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from bisect import bisect_left
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import semantic_locomo as sl

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.retrieval import HELD_OUT_CONVERSATIONS, TUNE_CONVERSATIONS, build_locomo_vault
from synapse_nb.recall import semantic

M, BETA, SOURCE = 0, 0.0, "fused"
orig_fused = semantic.DenseChannel.fused


def fused(self, idx, pos, bm25, query, mind, now, weight):
    both, score, dense = orig_fused(self, idx, pos, bm25, query, mind, now, weight)
    if M <= 0 or BETA <= 0 or not len(both):
        return both, score, dense
    d = self._index().dense
    copy = d._copy[1]
    if SOURCE == "fused":
        order = np.lexsort((both, -score))[:M]
        top_ids = [idx.ids[int(both[j])] for j in order]
    else:
        top_ids = [idx.ids[p] for p, _ in dense[:M]]
    rows = [j for i in top_ids if (j := bisect_left(copy.ids, i)) < len(copy.ids) and copy.ids[j] == i]
    if not rows:
        return both, score, dense
    v = copy.vecs[rows].astype(np.float64)
    v /= np.sqrt(np.maximum(copy.norm2[rows], 1e-12))[:, None]
    q = self.query_vector(query).astype(np.float64)
    q /= max(np.linalg.norm(q), 1e-12)
    q2 = q + BETA * v.mean(axis=0)
    q2 = np.round(q2 / np.abs(q2).max() * 127).astype(np.float32)
    hits, _ = copy.search(q2, semantic.DENSE_DEPTH, mind, now, (), semantic.DENSE_DEPTH, None)
    b2, s2 = semantic.fuse_top(idx, pos, bm25, hits, weight)
    return b2, s2, semantic._positions(idx, hits)


semantic.DenseChannel.fused = fused


def main() -> None:
    global M, BETA, SOURCE
    ap = argparse.ArgumentParser()
    ap.add_argument("--style", default="chat")
    ap.add_argument("--subset", default="dev")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--grid", default="0:0,3:0.5,5:0.5,3:1.0,5:1.0")
    ap.add_argument("--source", default="fused")
    args = ap.parse_args()
    SOURCE = args.source
    cache = sl.use_cache("e5-small", args.cache)
    convs = load_locomo("datasets/locomo/locomo10.json")
    if args.style == "chat":
        convs = chat_style_all(convs, ChatStyle())
    keep = TUNE_CONVERSATIONS if args.subset == "dev" else HELD_OUT_CONVERSATIONS
    convs = [c for c in convs if c.sample_id in keep]
    sl._set_k(-1)
    with tempfile.TemporaryDirectory() as tmp:
        vaults = []
        for n, conv in enumerate(convs):
            v, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            v.settings.set("recall_embedder", "e5-small")
            v.settings.set("recall_semantic", 0.4)
            v.recall("warm up")
            vaults.append((conv, v, ids))
        base = None
        for p in args.grid.split(","):
            M, BETA = int(p.split(":")[0]), float(p.split(":")[1])
            rows = sl.per_question(vaults, 0.4)
            s = sl.summary(rows)
            extra = {}
            if base is None:
                base = rows
            else:
                extra = {"ci_r10": sl.paired(base, rows, "r10"), "ci_r5": sl.paired(base, rows, "r5")}
            sl.emit(style=args.style, subset=args.subset, source=SOURCE, point=p, **s, **extra)
        if cache is not None:
            cache.save()
        for _, v, _ in vaults:
            v.index.close()
            v.close()


if __name__ == "__main__":
    main()
