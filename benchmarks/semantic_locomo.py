"""LoCoMo: recall's semantic channel (dense candidates fused with BM25's), tuned on conversations 0-6 only.

Run: ``nice .venv/bin/python benchmarks/semantic_locomo.py --embedder e5-small [--grid K:W,K:W,...] [--pick K:W]``.
Builds the ten conversations' vaults once with the channel's table of that embedder, then, for each point of the
grid (RRF constant K, dense weight W), ranks every question of conversations 0-6 (the open bars of
``synapse-nb recall eval``) and prints dev R@5 / R@10 / multi-hop R@10. The point with the best dev
(R@5 + R@10) / 2 (or ``--pick``) is then measured on the held-out conversations 7-9 and on all ten, against the
channel off, with the paired bootstrap of on - off over questions (2,000 resamples, seed 0; 95% interval).
Held-out figures are reported as they come: nothing is chosen on them. ``--timing``: embedding rate and recall
p50 off / on over conversation 0's questions. JSON lines on stdout.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.metrics import recall_at_k
from synapse_nb.eval.retrieval import HELD_OUT_CONVERSATIONS, TUNE_CONVERSATIONS, _rank, build_locomo_vault
from synapse_nb.recall import semantic
from synapse_nb.store import embedders

GRID = "5:0.3,5:0.5,5:0.7,5:1.0,10:0.5,10:0.7,10:1.0,20:0.7,20:1.0,60:1.0"


def _set_k(k: int) -> None:
    """K > 0: weighted RRF with that constant; K = 0: the weighted sum over the union (``fuse_sum``); K = -1: the
    weighted sum with the dense list's own range (``fuse_top``)."""
    semantic.FUSION = "rrf" if k > 0 else "sum" if k == 0 else "top"
    semantic.RRF_K = k if k > 0 else semantic.RRF_K


class Cached:
    """An embedder's vectors kept in a file between runs (the same bytes: only the time is saved)."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner, self.path = inner, path
        self.name, self.version, self.dimension = inner.name, inner.version, inner.dimension
        self.fingerprint = inner.fingerprint
        self.match_cosine = getattr(inner, "match_cosine", None)
        self.vecs: dict[tuple[bool, str], bytes] = pickle.loads(path.read_bytes()) if path.is_file() else {}
        self.dtype = None

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        rows = []
        for t in texts:
            key = (query, t)
            if key not in self.vecs:
                v = np.asarray(self.inner.embed([t], query=query))[0]
                self.vecs[key] = v.astype(np.float64).tobytes()
            rows.append(np.frombuffer(self.vecs[key], np.float64))
        return np.stack(rows) if rows else np.zeros((0, self.dimension))

    def save(self) -> None:
        self.path.write_bytes(pickle.dumps(self.vecs))


def use_cache(spec: str, path: str | None) -> Cached | None:
    """With a file, ``spec``'s embedder loaded once and kept behind :class:`Cached` for every vault of this run.
    Loaded either way: a recall whose model cannot be loaded answers from its words alone, and this run would
    measure that (review 68); here it fails, naming the extra."""
    if not path:
        embedders.load_embedder(spec)
        return None
    cache = Cached(embedders.load_embedder(spec), Path(path))
    embedders._loaded[spec] = cache
    return cache


def per_question(vaults: list[tuple[Any, Any, dict[str, str]]], weight: float) -> list[dict[str, Any]]:
    out = []
    for conv, v, ids in vaults:
        v.settings.set("recall_semantic", weight)
        for qi, q in enumerate(conv.questions):
            if not q.evidence:
                continue
            ranked = _rank(v, q.question, "recall", ids)
            gold = list(q.evidence)
            out.append({"conv": conv.sample_id, "q": qi, "cat": q.category,
                        "r5": recall_at_k(ranked, gold, 5), "r10": recall_at_k(ranked, gold, 10)})
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    mh = [r["r10"] for r in rows if r["cat"] == 1]
    return {"R@5": round(float(np.mean([r["r5"] for r in rows])), 4),
            "R@10": round(float(np.mean([r["r10"] for r in rows])), 4),
            "multihop_R@10": round(float(np.mean(mh)), 4) if mh else float("nan"), "n": len(rows)}


def paired(off: list[dict[str, Any]], on: list[dict[str, Any]], m: str) -> list[float]:
    d = np.array([b[m] - a[m] for a, b in zip(off, on, strict=True)])
    rng = np.random.default_rng(0)
    boot = [float(d[rng.integers(0, len(d), len(d))].mean()) for _ in range(2000)]
    return [round(float(d.mean()), 4), round(float(np.percentile(boot, 2.5)), 4),
            round(float(np.percentile(boot, 97.5)), 4)]


def emit(**kw: Any) -> None:
    print(json.dumps(kw), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--grid", default=GRID, help="K:W[:D] points searched on dev (0-6) only (K 0: weighted sum over "
                    "the union, K -1: weighted sum over the dense list's range, K > 0: RRF; D: dense depth, 50)")
    ap.add_argument("--pick", default=None, help="skip the choice: measure this K:W[:D]")
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--cache", default=None, help="keep the embedder's vectors in this file between runs")
    ap.add_argument("--style", default="original", choices=["original", "chat"],
                    help="chat: the chat-style rewrite of the conversations (synapse_nb.eval.chatstyle)")
    args = ap.parse_args()
    cache = use_cache(args.embedder, args.cache)
    convs = load_locomo("datasets/locomo/locomo10.json")
    if args.style == "chat":
        convs = chat_style_all(convs, ChatStyle())
    with tempfile.TemporaryDirectory() as tmp:
        vaults = []
        t0, turns = time.perf_counter(), 0
        for n, conv in enumerate(convs if not args.timing else convs[:1]):
            v, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            v.settings.set("recall_embedder", args.embedder)
            v.settings.set("recall_semantic", 0.5)
            v.recall("warm up")  # builds the index and the channel's table
            vaults.append((conv, v, ids))
            turns += len(conv.turns)
        build = time.perf_counter() - t0
        emit(embedder=args.embedder, style=args.style, build_s=round(build, 1), turns=turns,
             turns_per_s=round(turns / build, 1))
        if cache is not None:
            cache.save()
        try:
            if args.timing:
                timing(vaults[0])
                return
            dev = [x for x in vaults if x[0].sample_id in TUNE_CONVERSATIONS]
            held = [x for x in vaults if x[0].sample_id in HELD_OUT_CONVERSATIONS]
            off_dev = per_question(dev, 0.0)
            emit(split="dev", point="off", **summary(off_dev))
            points = [(int(p.split(":")[0]), float(p.split(":")[1]), int([*p.split(":"), "50"][2]))
                      for p in (args.pick or args.grid).split(",")]
            scored = {}
            for k, w, depth in points:
                _set_k(k)
                semantic.DENSE_DEPTH = depth
                rows = per_question(dev, w)
                s = summary(rows)
                scored[(k, w, depth)] = (s["R@5"] + s["R@10"]) / 2
                emit(split="dev", point=f"{k}:{w}:{depth}", **s)
            k, w, depth = max(scored, key=lambda p: (scored[p], -p[1], p[2]))
            _set_k(k)
            semantic.DENSE_DEPTH = depth
            for name, sel in (("dev", dev), ("heldout", held), ("all", vaults)):
                off, on = per_question(sel, 0.0), per_question(sel, w)
                emit(split=name, point=f"{k}:{w}:{depth}", embedder=args.embedder, off=summary(off), on=summary(on),
                     ci_r10=paired(off, on, "r10"), ci_r5=paired(off, on, "r5"))
        finally:
            if cache is not None:  # the query vectors too
                cache.save()
            for _, v, _ in vaults:
                v.index.close()
                v.close()


def timing(x: tuple[Any, Any, dict[str, str]]) -> None:
    conv, v, _ = x
    qs = [q.question for q in conv.questions]
    times: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(3):
        for name, w in (("off", 0.0), ("on", 0.5)):
            v.settings.set("recall_semantic", w)
            v.recall(qs[0])
            for q in qs:
                v._recaller._dense._queries.clear()  # every query embedded afresh
                t = time.perf_counter()
                v.recall(q)
                times[name].append(time.perf_counter() - t)
    emit(p50_ms_off=round(statistics.median(times["off"]) * 1e3, 3),
         p50_ms_on=round(statistics.median(times["on"]) * 1e3, 3))


if __name__ == "__main__":
    main()
