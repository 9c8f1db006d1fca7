"""Query expansion by meaning (issue 33, sixth round; measured, not shipped: docs/recall.md).

Each content word of a question also looks up the vault's own words closest to it in meaning (the cosine of an
embedder's vectors of the single words), and those words join the BM25 sum at a reduced weight, so BM25 itself can
find a record that shares no word with the question ("job" -> "hired", "interview").

For each query word sent to BM25 (``rank_words``: no stop words), the vault's vocabulary (the ``rank_words`` of
every record's body: letters only, at least 3 long, not a speaker's name) is ranked by cosine (float64, vocabulary
in code-point order, ties by word); the first ``m`` with cosine >= ``t`` whose porter stem is not a query word's
(nor one already taken) are added, each with weight ``w * cosine`` (a word several query words pick keeps its
largest). A record's score: the question's BM25 as recall computes it, plus each added word's BM25 summand times
its weight; then recall's structure step, gate and everything else as shipped (``Recaller._bm25`` patched here).

Run (from the repository root)::

    nice .venv/bin/python benchmarks/expand_meaning.py --embedder wordllama --style chat --subset dev \\
        --grid 0.6:3:0.25,0.7:3:0.25 [--cache /tmp/expand_cache/wordllama.pkl] [--cosines]

Prints one JSON line per point (``t:m:w``; ``off`` first): R@5, R@10, multi-hop R@10 over the split's questions
with evidence (the open bars of ``synapse-nb recall eval``), and the paired bootstrap of on - off (2,000 resamples,
seed 0). ``--cosines``: the distribution of each query word's best vault-word cosine (to place ``t``).
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.retrieval import HELD_OUT_CONVERSATIONS, TUNE_CONVERSATIONS, build_locomo_vault
from synapse_nb.recall import bm25 as bm25_mod
from synapse_nb.recall import engine
from synapse_nb.recall.rank import rank_words
from synapse_nb.store import embedders

sys.path.insert(0, str(Path(__file__).resolve().parent))
from semantic_locomo import paired, per_question, summary

ROOT = Path(__file__).resolve().parents[1]
WORD = re.compile(r"^[a-z]{3,}$")
#: the point in use: (threshold, m, weight) or None (recall as shipped)
POINT: tuple[float, int, float] | None = None


class Vectors:
    """Single-word vectors of one embedder, unit length in float64, kept in a file between runs."""

    def __init__(self, spec: str, path: Path | None) -> None:
        self.model = embedders.load_embedder(spec)
        self.path = path
        self.vecs: dict[str, np.ndarray] = pickle.loads(path.read_bytes()) if path and path.is_file() else {}

    def of(self, words: list[str]) -> np.ndarray:
        todo = [w for w in words if w not in self.vecs]
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            got = np.asarray(self.model.embed(chunk), np.float64)
            for w, v in zip(chunk, got, strict=True):
                n = float(np.linalg.norm(v))
                self.vecs[w] = v / n if n > 0 else v
        return np.stack([self.vecs[w] for w in words]) if words else np.zeros((0, 1))

    def save(self) -> None:
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self.vecs))


VECTORS: Vectors | None = None
VOCABS: dict[int, Any] = {}  # id(vault context) -> its Vocab


class Vocab:
    """One vault's words (sorted) and their vectors."""

    def __init__(self, folder: Path, names: set[str]) -> None:
        db = sqlite3.connect(folder / ".synapse" / "synapse.db")
        words: set[str] = set()
        for (body,) in db.execute("SELECT body FROM gate_docs"):
            words.update(w for w in rank_words(body) if WORD.match(w))
        db.close()
        self.names = names
        self.words = sorted(words - names)
        assert VECTORS is not None
        self.mat = VECTORS.of(self.words)
        self._terms: dict[str, Any] = {}

    def terms(self, ctx: Any, words: list[str], idx: Any) -> dict[str, Any]:
        """The words' postings (read once: the vault does not change during the run)."""
        todo = [w for w in words if w not in self._terms]
        if todo:
            got = ctx.store.recall.postings(ctx.mind, todo)
            self._terms.update((w, bm25_mod._term(got[w], idx)) for w in todo)
        return {w: self._terms[w] for w in words}


def neighbours(vocab: Vocab, word: str, t: float, m: int, cap: int = 60) -> list[tuple[str, float]]:
    """The vault's words closest to ``word`` with cosine >= t, best first (ties by word), at most ``cap``."""
    assert VECTORS is not None
    if not WORD.match(word) or word in vocab.names or not vocab.words:
        return []
    cos = vocab.mat @ VECTORS.of([word])[0]
    order = np.lexsort((np.arange(len(cos)), -cos))
    out = []
    for i in order[:cap]:
        if cos[i] < t:
            break
        out.append((vocab.words[i], float(cos[i])))
    return out


_orig_bm25 = engine.Recaller._bm25


def _bm25(self: Any, idx: Any, words: list[str], terms: dict, totals: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    vocab: Vocab | None = VOCABS.get(id(self._ctx))
    if POINT is None or vocab is None or not words or not all(terms[w].stem is not None for w in words):
        return _orig_bm25(self, idx, words, terms, totals)
    t, m, w = POINT
    p, style = self.params, self._ctx.store.recall.bm25_style
    stems = {terms[x].stem for x in words}
    cands = {x: neighbours(vocab, x, t, m) for x in words}
    allc = sorted({c for v in cands.values() for c, _ in v})
    got = vocab.terms(self._ctx, allc, idx)
    weight: dict[str, tuple[float, Any]] = {}
    for x in words:
        taken = 0
        for c, cos in cands[x]:
            if taken >= m:
                break
            ct = got[c]
            if ct.stem is None or ct.stem in stems or not len(ct.pos):
                continue
            taken += 1
            if ct.stem not in weight or weight[ct.stem][0] < w * cos:
                weight[ct.stem] = (w * cos, ct)
    if not weight:
        return _orig_bm25(self, idx, words, terms, totals)
    pos, sc = bm25_mod.bm25_top([terms[x] for x in words], idx, totals, style=style, depth=len(idx),
                                w_body=p.w_body, w_context=p.w_context, k1=p.k1, b=p.b)
    score = np.zeros(len(idx))
    hit = np.zeros(len(idx), bool)
    score[pos] += sc
    hit[pos] = True
    for stem in sorted(weight):
        wt, ct = weight[stem]
        c = bm25_mod._contribution(ct, totals, style, p.w_body, p.w_context, p.k1, p.b, idx.length)
        score[ct.pos] += wt * c
        hit[ct.pos] = True
    u = np.flatnonzero(hit)
    return bm25_mod._best(u, score[u], p.depth)


engine.Recaller._bm25 = _bm25  # type: ignore[method-assign]


def cosines(vaults: list[tuple[Any, Any, dict[str, str]]]) -> dict[str, Any]:
    """Percentiles of each query word's best and 3rd-best vault-word cosine (same stem excluded only by word)."""
    best, third = [], []
    for conv, v, _ in vaults:
        vocab = VOCABS[id(v._ctx)]
        for q in conv.questions:
            for x in rank_words(q.question):
                nb = [c for c in neighbours(vocab, x, -1.0, 9, cap=10) if c[0] != x]
                if len(nb) >= 3:
                    best.append(nb[0][1])
                    third.append(nb[2][1])
    pct = (10, 25, 50, 75, 90)
    return {"best": dict(zip(pct, np.round(np.percentile(best, pct), 3).tolist(), strict=True)),
            "third": dict(zip(pct, np.round(np.percentile(third, pct), 3).tolist(), strict=True))}


def main() -> None:
    global VECTORS, POINT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--style", default="chat", choices=["original", "chat"])
    ap.add_argument("--subset", default="dev", choices=["dev", "heldout"])
    ap.add_argument("--grid", default="0.6:3:0.25")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--semantic", type=float, default=0.0, help="the semantic channel's weight (0: off)")
    ap.add_argument("--channel-cache", default=None, help="semantic_locomo.py's --cache file for the channel")
    ap.add_argument("--cosines", action="store_true")
    ap.add_argument("--examples", type=int, default=0, help="print N query words' neighbours at the first point")
    args = ap.parse_args()
    VECTORS = Vectors(args.embedder, Path(args.cache) if args.cache else None)
    if args.semantic:
        from semantic_locomo import use_cache
        use_cache("e5-small", args.channel_cache)
    convs = load_locomo(str(ROOT / "datasets" / "locomo" / "locomo10.json"))
    if args.style == "chat":
        convs = chat_style_all(convs, ChatStyle())
    keep = TUNE_CONVERSATIONS if args.subset == "dev" else HELD_OUT_CONVERSATIONS
    convs = [c for c in convs if c.sample_id in keep]
    with tempfile.TemporaryDirectory() as tmp:
        vaults = []
        for n, conv in enumerate(convs):
            folder = Path(tmp) / str(n)
            v, ids = build_locomo_vault(conv, folder)
            if args.semantic:
                v.settings.set("recall_embedder", "e5-small")
            names = {w for t in conv.turns for w in rank_words(t.speaker)}
            VOCABS[id(v._ctx)] = Vocab(folder, names)
            vaults.append((conv, v, ids))
        VECTORS.save()
        if args.cosines:
            print(json.dumps({"embedder": args.embedder, "style": args.style, **cosines(vaults)}), flush=True)
        if args.examples:
            t, m, _ = (float(x) for x in args.grid.split(",")[0].split(":"))
            conv, v, _ = vaults[0]
            shown = 0
            for q in conv.questions:
                for x in rank_words(q.question):
                    if shown < args.examples:
                        shown += 1
                        print(x, "->", [(c, round(s, 3)) for c, s in
                                        neighbours(VOCABS[id(v._ctx)], x, t, int(m))[:int(m) + 2]], flush=True)
        POINT = None
        off = per_question(vaults, args.semantic)
        print(json.dumps({"embedder": args.embedder, "style": args.style, "subset": args.subset,
                          "semantic": args.semantic, "point": "off", **summary(off)}), flush=True)
        for spec in args.grid.split(","):
            t, m, w = spec.split(":")
            POINT = (float(t), int(m), float(w))
            on = per_question(vaults, args.semantic)
            print(json.dumps({"point": spec, **summary(on), "ci_r10": paired(off, on, "r10"),
                              "ci_r5": paired(off, on, "r5")}), flush=True)
        VECTORS.save()
        for _, v, _ in vaults:
            v.close()


if __name__ == "__main__":
    main()
