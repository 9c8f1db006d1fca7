"""LoCoMo multi-hop with the semantic channel on: variants aimed at questions whose evidence is several turns.

Run: ``nice .venv/bin/python benchmarks/semantic_multihop.py --embedder e5-small --cache FILE [--style chat]
[--dev-only] [--weight W] [--variants ...]``. Builds the ten conversations' vaults once (the channel at its shipped
point: ``top`` fusion, weight 0.4, dense depth 50; ``--weight 0``: the channel off), then ranks every question
with evidence under each variant and prints, per split (dev 0-6, held out 7-9, all ten; ``--dev-only``: dev
alone, for a grid to choose on), R@5 / R@10 / multi-hop R@10 as JSON lines. A variant is chosen on the dev lines
only; held-out lines are reported as they come.

A variant is components joined by ``+`` (e.g. ``notail+actor:2``), each changing the shipped ranking:

* ``base``: recall as shipped.
* ``nohop``: without the second dense query in the tail (``RankParams.hop_weight`` 0: the ranking before it).
* ``notail``: without the speaker in the tail (``RankParams.tail_actor`` 1: the ranking before it).
* ``tail:K:M``: ``RankParams.tail_keep`` = K, ``tail_actor`` = M (shipped 7, 1.15).
* ``actor:M``: ``RankParams.actor_mult`` = M (shipped 1.3, chosen with the channel off): the turns of a speaker
  the question names, x M after the structure step. On LoCoMo 96-97% of the evidence of a question naming one
  speaker is that speaker's turns, against about 70% of recall's top 10 before the tail.
* ``pre:M``: the same multiplier on the named speaker's fused scores *before* the structure step (their neighbours
  get the flow of the boosted score), ``actor_mult`` kept after it.
* ``prf:N:A``: dense pseudo-relevance feedback (Rocchio): the query vector plus A x the mean unit vector of the
  fused list's best N records, quantised like a query, searched again; its list replaces the first one's.
* ``div:K:D``: session diversity below the first K ranked: a record is x D for each record of its session
  (thread) ranked above it, then the rest of the first 60 is ordered again (the first K kept).
* ``spk:N:W[:sum]``: a second dense list of the named speaker's records only (their best N among the dense 500),
  scored ``W x (cos - last) / (first - last)`` over its own range, taken as the max with the fused score (``sum``:
  added to it).
* ``nsd:K:M``: below the first K ranked, the named speaker's records from sessions none of the first K comes from
  are x M (capped at the K-th score), the rest of the first 60 ordered again.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import tempfile
from bisect import bisect_left
from pathlib import Path
from typing import Any

import numpy as np
from semantic_locomo import _set_k, summary, use_cache

import synapse_nb.recall.engine as engine
from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.metrics import recall_at_k
from synapse_nb.eval.retrieval import HELD_OUT_CONVERSATIONS, TUNE_CONVERSATIONS, _episode_id, _rank, build_locomo_vault
from synapse_nb.recall import rank, semantic

VARIANTS = ("base,notail,notail+actor:1.6,notail+actor:2,notail+actor:3,notail+pre:1.5,notail+pre:2,notail+prf:3:0.5,"
            "notail+prf:3:1,notail+prf:5:0.5")
_NOW: dict[str, Any] = {"pre": 1.0, "prf": None, "div": None, "spk": None, "nsd": None, "hop": None, "lex": None,
                        "gate": None, "sw": None, "dd": None, "gtail": None, "q": "", "nn": None, "tl": None,
                        "list2": []}
#: The conversation being ranked: record id -> "Speaker: text" (the second hops read it), and word -> records.
_TEXT: dict[str, str] = {}
_DF: dict[str, int] = {}
#: Cheap lexical tests that a question asks for several facts (``gate:NAME``), chosen on dev only.
_GATES = {
    "plural": re.compile(r"^\s*(what|which)\s+(\w+\s+of\s+)?\w+s\b|\bhow many\b|\bboth\b", re.I),
    "has": re.compile(r"\b(has|have)\b.*\b\w+(ed|en|ne|ad|een)\b|\bhow many\b|\bboth\b", re.I),
    "any": re.compile(r"^\s*(what|which)\s+(\w+\s+of\s+)?\w+s\b|\bhow many\b|\bboth\b|"
                      r"\b(has|have)\b.*\b\w+(ed|en|ne|ad|een)\b", re.I),
}
_fused = semantic.DenseChannel.fused


def _structure(idx: Any, pos: Any, sc: Any, words: Any, p: Any, bonus: Any = None, hop: Any = None) -> Any:
    if _NOW["pre"] != 1.0 and len(pos):
        named = idx.actors_named(words)
        if len(named):
            is_named = np.zeros(len(idx.actor_names) + 1, bool)
            is_named[named] = True
            sc = sc * np.where(is_named[idx.actor[pos]], _NOW["pre"], 1.0)
    if _NOW["gtail"] is not None and _gated(_NOW["q"]):
        p = dataclasses.replace(p, tail_keep=_NOW["gtail"][0], tail_actor=_NOW["gtail"][1])
    r = rank.structure(idx, pos, sc, words, p, bonus, hop)
    if _NOW["nsd"] is not None and len(r.pos) > _NOW["nsd"][0] and len(named := idx.actors_named(words)):
        k, m = _NOW["nsd"]
        is_named = np.zeros(len(idx.actor_names) + 1, bool)
        is_named[named] = True
        n = min(len(r.pos), 60)
        t = idx.thread[r.pos[:n]]
        fresh = is_named[idx.actor[r.pos[:n]]] & ~np.isin(t, t[:k])
        adj = np.where(fresh, r.score[:n] * m, r.score[:n])
        r = _reorder(r, k, n, np.minimum(adj, r.score[k - 1]))
    if _NOW["tl"] is not None and len(r.pos) > _NOW["tl"][0] and len(_NOW["list2"]) > 1 and _gated(_NOW["q"]):
        k, w, _ = _NOW["tl"]
        d = _NOW["list2"]
        first, last = d[0][1], d[-1][1]
        s2 = {j: (c - last) / (first - last) for j, c in d} if first > last else {}
        adj = np.round(r.score * (1.0 + w * np.array([s2.get(j, 0.0) for j in r.pos.tolist()])), rank.SCORE_DECIMALS)
        o = np.concatenate([np.arange(k), np.lexsort((r.pos[k:], -adj[k:])) + k])  # by the boosted score, then cap
        r = rank.Ranked(r.pos[o], np.minimum(adj[o], r.score[k - 1]), {a: b[o] for a, b in r.parts.items()})
    if _NOW["div"] is not None and len(r.pos) > _NOW["div"][0]:
        k, d = _NOW["div"]
        n = min(len(r.pos), 60)
        seen: dict[int, int] = {}
        before = np.zeros(n)
        for i, th in enumerate(idx.thread[r.pos[:n]].tolist()):
            before[i] = seen.get(th, 0)
            seen[th] = seen.get(th, 0) + 1
        r = _reorder(r, k, n, r.score[:n] * d ** before)
    return r


def _reorder(r: Any, k: int, n: int, adj: np.ndarray) -> Any:
    """``r`` with its records ``k..n`` ordered by ``adj`` (best first, ties by position), the first ``k`` kept."""
    o = np.lexsort((r.pos[k:n], -adj[k:n])) + k
    order = np.concatenate([np.arange(k), o, np.arange(n, len(r.pos))])
    return rank.Ranked(r.pos[order], r.score[order], {a: b[order] for a, b in r.parts.items()})


def _gated(query: str) -> bool:
    return _NOW["gate"] is None or bool(_GATES[_NOW["gate"]].search(query))


def _top(both: np.ndarray, score: np.ndarray, n: int) -> list[int]:
    """The fused list's best ``n`` positions (ties by position)."""
    return both[np.lexsort((both, -score))[:n]].tolist()


def _add(both: np.ndarray, score: np.ndarray, p2: np.ndarray, s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``score`` over ``both`` plus ``s2`` over ``p2``, on the union of positions."""
    union = np.unique(np.concatenate([both, p2]))
    out = np.zeros(len(union))
    out[np.searchsorted(union, both)] = score
    np.add.at(out, np.searchsorted(union, p2), s2)
    return union, out


def _hop_fused(self: Any, idx: Any, pos: Any, bm25: Any, query: str, mind: str, now: str, weight: float) -> Any:
    """``hop:W[:N]``: a second dense query, the question and the text of the fused list's best N records read
    together by the model, its list (over its own range) added at W. ``lex:K:T:W``: the T rarest words (by the
    conversation's document frequency, in at least 2 records) of the fused best K records not in the question,
    searched by BM25 alone, added at W x bm25 / best. ``sw:W``: the channel's weight W (shipped 0.4); ``dd:N``: dense
    depth N (shipped 50); ``nn:W[:only]``: a second dense query, the question without the one speaker it names,
    its list (``only``: that speaker's records of it) added at W over its own range; ``tl:K:W:SRC``: below the first K
    ranked, a record x (1 + W x its score over the range of a dense list SRC: ``d`` the question's,
    ``nn`` / ``nnonly`` the question without the speaker's name), ordered by that, then capped at the K-th score;
    ``gtail:K:M``: the speaker in the tail at K, M. Each only for questions ``gate:NAME`` passes (all without a
    gate)."""
    if not _gated(query):
        return _fused(self, idx, pos, bm25, query, mind, now, weight)
    depth = semantic.DENSE_DEPTH
    try:
        semantic.DENSE_DEPTH = _NOW["dd"] or depth
        both, score, best = _fused(self, idx, pos, bm25, query, mind, now, _NOW["sw"] or weight)
    finally:
        semantic.DENSE_DEPTH = depth
    if _NOW["hop"] is not None:
        w2, n = _NOW["hop"]
        text = " ".join([query] + [_TEXT.get(idx.ids[j], "") for j in _top(both, score, n)])
        hits, _ = self._index().dense.search(self.query_vector(text), mind=mind, now=now, k=semantic.DENSE_DEPTH)
        d = [(j, h.cosine) for h in hits if (j := idx.pos.get(h.id)) is not None]
        if len(d) > 1 and d[0][1] > d[-1][1]:
            c = np.array([x for _, x in d])
            both, score = _add(both, score, np.array([j for j, _ in d], np.int64),
                               w2 * (c - d[-1][1]) / (d[0][1] - d[-1][1]))
    if _NOW["nn"] is not None and len(named := idx.actors_named(rank.rank_words(query))) == 1:
        w4, only = _NOW["nn"]
        name = idx.actor_names[int(named[0])]
        bare = query
        for tok in re.findall(r"\w+", name):
            bare = re.sub(rf"\b{re.escape(tok)}(['’]s)?\b", " ", bare, flags=re.I)
        bare = " ".join(bare.split())
        hits, _ = self._index().dense.search(self.query_vector(bare), mind=mind, now=now, k=semantic.DENSE_DEPTH)
        d = [(j, h.cosine) for h in hits if (j := idx.pos.get(h.id)) is not None
             and (not only or idx.actor[j] == named[0])]
        if bare != query and len(d) > 1 and d[0][1] > d[-1][1]:
            c = np.array([x for _, x in d])
            both, score = _add(both, score, np.array([j for j, _ in d], np.int64),
                               w4 * (c - d[-1][1]) / (d[0][1] - d[-1][1]))
    if _NOW["lex"] is not None:
        k, t, w3 = _NOW["lex"]
        asked = set(rank.rank_words(query))
        cand: dict[str, float] = {}
        for j in _top(both, score, k):
            for w in rank.rank_words(_TEXT.get(idx.ids[j], "").split(": ", 1)[-1]):
                df = _DF.get(w, 0)
                if w not in asked and df >= 2 and not w.isdigit():
                    cand[w] = cand.get(w, 0.0) + math.log(len(_TEXT) / df)
        words = [w for w, _ in sorted(cand.items(), key=lambda x: (-x[1], x[0]))[:t]]
        hits2 = [h for h in self._store.recall.bm25(mind, words, depth=100) if h.id in idx.pos] if words else []
        if hits2 and hits2[0].score > 0:
            p2 = np.array([idx.pos[h.id] for h in hits2], np.int64)
            both, score = _add(both, score, p2, w3 * np.array([h.score for h in hits2]) / hits2[0].score)
    return both, score, best


def _nn_list(self: Any, idx: Any, query: str, mind: str, now: str, only: bool) -> list[tuple[int, float]]:
    """The dense list of the question without the one speaker it names (``only``: that speaker's records)."""
    named = idx.actors_named(rank.rank_words(query))
    if len(named) != 1:
        return []
    bare = query
    for tok in re.findall(r"\w+", idx.actor_names[int(named[0])]):
        bare = re.sub(rf"\b{re.escape(tok)}(['’]s)?\b", " ", bare, flags=re.I)
    bare = " ".join(bare.split())
    if bare == query:
        return []
    hits, _ = self._index().dense.search(self.query_vector(bare), mind=mind, now=now, k=semantic.DENSE_DEPTH)
    return [(j, h.cosine) for h in hits if (j := idx.pos.get(h.id)) is not None
            and (not only or idx.actor[j] == named[0])]


def _prf_fused(self: Any, idx: Any, pos: Any, bm25: Any, query: str, mind: str, now: str, weight: float) -> Any:
    _NOW["q"] = query
    if _NOW["tl"] is not None:
        both, score, best = _fused(self, idx, pos, bm25, query, mind, now, weight)
        src = _NOW["tl"][2]
        _NOW["list2"] = best if src == "d" else _nn_list(self, idx, query, mind, now, src == "nnonly")
        return both, score, best
    if any(_NOW[k] is not None for k in ("hop", "lex", "sw", "dd", "nn")):
        return _hop_fused(self, idx, pos, bm25, query, mind, now, weight)
    if _NOW["spk"] is not None:
        both, score, best = _fused(self, idx, pos, bm25, query, mind, now, weight)
        n, w2, mode = _NOW["spk"]
        named = idx.actors_named(rank.rank_words(query))
        is_named = np.zeros(len(idx.actor_names) + 1, bool)
        is_named[named] = True
        hits, _ = self._index().dense.search(self.query_vector(query), mind=mind, now=now, k=500)
        mine = [(j, h.cosine) for h in hits if (j := idx.pos.get(h.id)) is not None and is_named[idx.actor[j]]][:n]
        if len(mine) < 2 or mine[0][1] <= mine[-1][1]:
            return both, score, best
        p2 = np.array([j for j, _ in mine], np.int64)
        s2 = w2 * (np.array([c for _, c in mine]) - mine[-1][1]) / (mine[0][1] - mine[-1][1])
        union = np.unique(np.concatenate([both, p2]))
        out = np.zeros(len(union))
        out[np.searchsorted(union, both)] = score
        at = np.searchsorted(union, p2)
        out[at] = out[at] + s2 if mode == "sum" else np.maximum(out[at], s2)
        return union, out, best
    if _NOW["prf"] is None:
        return _fused(self, idx, pos, bm25, query, mind, now, weight)
    n, alpha = _NOW["prf"]
    dense = self._index().dense
    q = self.query_vector(query).astype(np.float64)
    hits, _ = dense.search(q.astype(np.float32), mind=mind, now=now, k=semantic.DENSE_DEPTH)
    best = next((h.cosine for h in hits if idx.pos.get(h.id) is not None), None)
    both, score = semantic.fuse_top(idx, pos, bm25, hits, weight)
    top = [idx.ids[j] for j in both[np.lexsort((both, -score))[:n]].tolist()]
    copy = dense._copy[1]
    v = copy.vecs[[bisect_left(copy.ids, i) for i in top]].astype(np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q2 = q / np.linalg.norm(q) + alpha * v.mean(axis=0)
    q2 = np.round(q2 / np.abs(q2).max() * 127)
    hits2, _ = dense.search(q2.astype(np.float32), mind=mind, now=now, k=semantic.DENSE_DEPTH)
    return (*semantic.fuse_top(idx, pos, bm25, hits2, weight), best)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="e5-small")
    ap.add_argument("--weight", type=float, default=0.4)
    ap.add_argument("--variants", default=VARIANTS)
    ap.add_argument("--cache", default=None, help="keep the embedder's vectors in this file between runs")
    ap.add_argument("--dev-only", action="store_true", help="print the dev lines only (a grid to choose on)")
    ap.add_argument("--style", default="original", choices=["original", "chat"],
                    help="chat: the chat-style rewrite of the conversations (synapse_nb.eval.chatstyle)")
    args = ap.parse_args()
    cache = use_cache(args.embedder, args.cache)
    engine.structure = _structure  # type: ignore[assignment]
    semantic.DenseChannel.fused = _prf_fused  # type: ignore[method-assign]
    _set_k(-1)
    semantic.DENSE_DEPTH = 50
    variants = args.variants.split(",")
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        convs = load_locomo("datasets/locomo/locomo10.json")
        for n, conv in enumerate(chat_style_all(convs, ChatStyle()) if args.style == "chat" else convs):
            v, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            _TEXT.clear()
            _DF.clear()
            for t in conv.turns:
                _TEXT[_episode_id(conv.sample_id, t.dia_id)] = f"{t.speaker}: {t.text}"
                for w in set(rank.rank_words(t.text)):
                    _DF[w] = _DF.get(w, 0) + 1
            v.settings.set("recall_embedder", args.embedder)
            v.settings.set("recall_semantic", args.weight)
            v.recall("warm up")
            shipped = v._recaller.params
            for name in variants:
                over: dict[str, Any] = {}
                _NOW.update(pre=1.0, prf=None, div=None, spk=None, nsd=None, hop=None, lex=None, gate=None, sw=None,
                            dd=None, gtail=None, q="", nn=None, tl=None,
                            list2=[])
                for part in name.split("+"):  # components: see the module docstring
                    kind, *nums = part.split(":")
                    if kind == "nohop":
                        over["hop_weight"] = 0.0
                    elif kind == "notail":
                        over["tail_actor"] = 1.0
                    elif kind == "tail":
                        over.update(tail_keep=int(nums[0]), tail_actor=float(nums[1]))
                    elif kind == "actor":
                        over["actor_mult"] = float(nums[0])
                    elif kind == "pre":
                        _NOW["pre"] = float(nums[0])
                    elif kind == "div":
                        _NOW["div"] = (int(nums[0]), float(nums[1]))
                    elif kind == "spk":
                        _NOW["spk"] = (int(nums[0]), float(nums[1]), nums[2] if len(nums) > 2 else "max")
                    elif kind == "nsd":
                        _NOW["nsd"] = (int(nums[0]), float(nums[1]))
                    elif kind == "hop":
                        _NOW["hop"] = (float(nums[0]), int(nums[1]) if len(nums) > 1 else 1)
                    elif kind == "lex":
                        _NOW["lex"] = (int(nums[0]), int(nums[1]), float(nums[2]))
                    elif kind == "sw":
                        _NOW["sw"] = float(nums[0])
                    elif kind == "dd":
                        _NOW["dd"] = int(nums[0])
                    elif kind == "tl":
                        _NOW["tl"] = (int(nums[0]), float(nums[1]), nums[2])
                    elif kind == "nn":
                        _NOW["nn"] = (float(nums[0]), len(nums) > 1 and nums[1] == "only")
                    elif kind == "gtail":
                        _NOW["gtail"] = (int(nums[0]), float(nums[1]))
                    elif kind == "gate":
                        _NOW["gate"] = nums[0]
                    elif kind == "prf":
                        _NOW["prf"] = (int(nums[0]), float(nums[1]))
                    elif kind != "base":
                        raise SystemExit(f"unknown variant {part!r}")
                v._recaller.params = dataclasses.replace(shipped, **over)
                for q in conv.questions:
                    if q.evidence:
                        ranked = _rank(v, q.question, "recall", ids)
                        rows[name].append({"conv": conv.sample_id, "cat": q.category,
                                           "r5": recall_at_k(ranked, list(q.evidence), 5),
                                           "r10": recall_at_k(ranked, list(q.evidence), 10)})
            v._recaller.params = shipped
            v.index.close()
            v.close()
    if cache is not None:
        cache.save()
    splits = (("dev", TUNE_CONVERSATIONS), ("heldout", HELD_OUT_CONVERSATIONS), ("all", None))
    for split, convs in splits[:1] if args.dev_only else splits:
        for name in variants:
            sel = [r for r in rows[name] if convs is None or r["conv"] in convs]
            print(json.dumps({"split": split, "variant": name, **summary(sel)}), flush=True)


if __name__ == "__main__":
    main()
