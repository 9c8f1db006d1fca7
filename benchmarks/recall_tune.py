"""Tune recall's ranking and gate on LoCoMo conversations 0-6 (issue 13); report 7-9 and all ten as they come out.

A fast stand-in for ``synapse-nb recall eval``: each conversation's vault is built once with the package's own
``build_locomo_vault``; BM25 is recomputed in numpy from the vault's own FTS5 postings (``fts5vocab`` 'instance':
the same stemmed terms, per-column counts, document lengths, N and average length as FTS5's ``bm25()``, so k1 and b
can move); the structure step is the package's :func:`synapse_nb.recall.rank.structure`; the gate's coverage is the
package's ``CorpusScorer`` on the same texts and word statistics. About 1 ms per question, so a search over
thousands of points takes minutes. The chosen values are then confirmed with the real package:
``nice synapse-nb recall eval datasets/locomo --subset dev|heldout|all --json``.

Honesty: every ``search_*`` function scores **only conversations 0-6** (:data:`DEV`); the off-topic stand-in on dev
is the next dev conversation (cyclically, as ``recall eval --subset dev`` asks it). ``report`` prints 7-9 and all
ten only for the values already chosen.

Usage (from the repository root)::

    nice python benchmarks/recall_tune.py search      # the search below, on 0-6 only; prints the chosen values
    nice python benchmarks/recall_tune.py report      # today's defaults vs the chosen values on dev / held out / all

Search space (:data:`SPACE`): BM25 ``k1``, ``b``; the structure step's weights (``RankParams``); the gate's
statistic (:func:`gate_stat`) and its floor. Objective for the ranking: mean (R@5 + R@10) / 2 over dev questions.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.metrics import recall_at_k
from synapse_nb.eval.retrieval import build_locomo_vault
from synapse_nb.recall.rank import RankParams, ThreadIndex, rank_words, structure
from synapse_nb.recall.scoring import new_scorer, query_terms

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT / "datasets" / "locomo" / "locomo10.json"
DEV = tuple(range(7))
HELD = (7, 8, 9)
ALL = tuple(range(10))
TOP = 50  # the eval ranks the top 50


@dataclass(frozen=True)
class BM25:
    """FTS5's bm25() with free k1 and b (FTS5 fixes 1.2 / 0.75)."""

    k1: float = 1.2
    b: float = 0.75


class Conv:
    """One conversation's vault, read once: postings, lengths, the structure arrays, texts, questions."""

    def __init__(self, index: int, conv, folder: Path) -> None:
        vault, ids = build_locomo_vault(conv, folder)
        self.index = index
        db = sqlite3.connect(str(folder / ".synapse" / "synapse.db"))
        self.idx = ThreadIndex(vault._ctx.store.recall.rank_rows(vault.mind))
        n = len(self.idx)
        gid_rid = dict(db.execute("SELECT gid, rid FROM gate_docs").fetchall())
        text = dict(db.execute("SELECT id, text FROM gate_candidates").fetchall())
        self.text = [text[r] for r in self.idx.ids]
        self.dia = [ids.get(r) for r in self.idx.ids]
        db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, rank_fts, 'instance')")
        post: dict[str, dict[int, list[int]]] = {}
        length = np.zeros(n)
        for term, gid, col, _off in db.execute("SELECT term, doc, col, offset FROM temp.v"):
            p = self.idx.pos[gid_rid[gid]]
            length[p] += 1
            d = post.setdefault(term, {})
            c = d.setdefault(p, [0, 0])
            c[0 if col == "body" else 1] += 1
        self.post = {t: (np.array(sorted(d)), np.array([d[k] for k in sorted(d)], np.float64)) for t, d in post.items()}
        self.n_rows = int(db.execute("SELECT count(*) FROM gate_docs").fetchone()[0])
        self.length = length
        self.avgdl = float(length.sum()) / self.n_rows
        self.stem_db = db
        self.vault = vault
        self.df_cache: dict[str, int] = {}
        self.questions = [(qi, q.question, list(q.evidence), q.category)
                          for qi, q in enumerate(conv.questions) if q.evidence]

    def doc_freq(self, terms: list[str]) -> dict[str, int]:
        miss = [t for t in terms if t not in self.df_cache]
        if miss:
            self.df_cache.update({t: 0 for t in miss})
            self.df_cache.update(self.vault._ctx.store.recall.doc_freq(miss))
        return {t: self.df_cache[t] for t in terms}

    def bm25(self, words: list[str], bm: BM25, w_context: float, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """FTS5's bm25(rank_fts, 1, w_context) for the OR of ``words`` (one phrase per word, as FTS5 counts them)."""
        n = len(self.idx)
        score = np.zeros(n)
        hit = np.zeros(n, bool)
        k1, b = bm.k1, bm.b
        norm = k1 * (1 - b + b * self.length / self.avgdl)
        for w in words:
            t = STEM(w)
            if t not in self.post:
                continue
            p, c = self.post[t]
            nhit = len(p)
            idf = np.log((self.n_rows - nhit + 0.5) / (nhit + 0.5))
            if idf <= 0:
                idf = 1e-6
            f = c[:, 0] + w_context * c[:, 1]
            score[p] += idf * f * (k1 + 1) / (f + norm[p])
            hit[p] = True
        pos = np.flatnonzero(hit)
        s = score[pos]
        o = np.lexsort((pos, -np.round(s, 12)))[:depth]
        return pos[o], s[o]


_STEMS: dict[str, str] = {}
_STEMMER = sqlite3.connect(":memory:")
_STEMMER.execute("CREATE VIRTUAL TABLE s USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
_STEMMER.execute("CREATE VIRTUAL TABLE sv USING fts5vocab(s, 'row')")


def STEM(word: str) -> str:  # noqa: N802 - the porter stem FTS5 indexes ``word`` under
    if word not in _STEMS:
        _STEMMER.execute("DELETE FROM s")
        _STEMMER.execute("INSERT INTO s(x) VALUES (?)", (word,))
        row = _STEMMER.execute("SELECT term FROM sv").fetchone()
        _STEMS[word] = row[0] if row else word
    return _STEMS[word]


def load(indices=ALL, tmp: str | None = None) -> dict[int, Conv]:
    convs = load_locomo(LOCOMO)
    tmp = tmp or tempfile.mkdtemp(prefix="recall-tune-")
    return {i: Conv(i, convs[i], Path(tmp) / str(i)) for i in indices}


def ranking(c: Conv, question: str, rp: RankParams, bm: BM25):
    words = rank_words(question)
    pos, s = c.bm25(words, bm, rp.w_context, rp.depth)
    return structure(c.idx, pos, s, words, rp)


def rank_metrics(cs: dict[int, Conv], which, rp: RankParams, bm: BM25 = BM25()) -> dict[str, float]:
    r5, r10, n = 0.0, 0.0, 0
    for i in which:
        c = cs[i]
        for _qi, q, gold, _cat in c.questions:
            r = ranking(c, q, rp, bm)
            got = [c.dia[p] for p in r.pos[:TOP].tolist()]
            r5 += recall_at_k(got, gold, 5)
            r10 += recall_at_k(got, gold, 10)
            n += 1
    return {"r5": r5 / n, "r10": r10 / n, "obj": (r5 + r10) / 2 / n, "n": n}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["check", "search", "report"])
    a = ap.parse_args()
    t0 = time.time()
    cs = load(DEV if a.what != "report" else ALL)
    print(f"loaded in {time.time() - t0:.1f}s", file=sys.stderr)
    if a.what == "check":
        t0 = time.time()
        print(rank_metrics(cs, DEV, RankParams()), f"{time.time() - t0:.1f}s")


_SCORER = None


def scorer():
    global _SCORER
    if _SCORER is None:
        _SCORER = new_scorer()
    return _SCORER


def gate_features(c: Conv, question: str, rp: RankParams, bm: BM25, depth: int = 20) -> dict:
    """What the gate can see for ``question`` asked of ``c``: per top record its coverage and rank score, plus
    query-level statistics (the vault's word statistics, the raw BM25 top score, whether an actor is named)."""
    from synapse_nb.gate.scorer import idf

    words = rank_words(question)
    pos, s = c.bm25(words, bm, rp.w_context, rp.depth)
    r = structure(c.idx, pos, s, words, rp)
    terms = query_terms(question)
    df = c.doc_freq(terms)
    n_docs = c.n_rows
    top = r.pos[:depth]
    cov = scorer().score_batch(question, [c.text[p] for p in top.tolist()], doc_freq=df, n_docs=n_docs,
                               doc_keys=[(c.index, p) for p in top.tolist()]).scores if len(top) else np.zeros(0)
    w = np.array([idf(df.get(t, 0), n_docs) for t in terms])
    unknown = np.array([df.get(t, 0) == 0 for t in terms])
    return {"pos": r.pos[:TOP], "score": r.score[:TOP], "cov": np.round(cov, 9),
            "raw_top": float(s.max()) if len(s) else 0.0,
            "idf_sum": float(w.sum()), "unknown_share": float(w[unknown].sum() / w.sum()) if len(w) else 0.0,
            "named": bool(len(c.idx.actors_named(words))), "n_terms": len(terms)}


def gate_table(cs: dict[int, Conv], which, rp: RankParams = RankParams(), bm: BM25 = BM25()) -> list[dict]:  # noqa: B008
    """One row per question of ``which``: the features of the question asked of its own vault (``own``) and of
    the next conversation of ``which`` (``off``, cyclically), with the gold turns."""
    rows = []
    for n, i in enumerate(which):
        c, o = cs[i], cs[which[(n + 1) % len(which)]]
        for _qi, q, gold, cat in c.questions:
            own = gate_features(c, q, rp, bm)
            own["gold"] = gold
            own["dia"] = [c.dia[p] for p in own["pos"].tolist()]
            rows.append({"conv": i, "cat": cat, "own": own, "off": gate_features(o, q, rp, bm)})
    return rows


#: The ranking's search space: BM25's k1 and b, then every RankParams weight of the structure step.
SPACE: dict[str, tuple[float, ...]] = {
    "k1": (0.6, 0.9, 1.2, 1.5, 2.0),
    "b": (0.3, 0.5, 0.6, 0.75, 0.9),
    "w_context": (0.1, 0.15, 0.2, 0.25, 0.3, 0.4),
    "depth": (50, 100, 200),
    "power": (1.0, 1.25, 1.5, 2.0),
    "prev": (0.05, 0.1, 0.15, 0.2, 0.25),
    "question_mult": (3.0, 4.0, 5.0, 6.0, 8.0),
    "next": (0.3, 0.4, 0.5, 0.6, 0.7),
    "dist2": (0.25, 0.5, 0.75),
    "thread": (0.2, 0.25, 0.3, 0.35, 0.4),
    "actor_mult": (1.15, 1.2, 1.3, 1.4, 1.5),
}


def _point(values: dict) -> tuple[RankParams, BM25]:
    rp = replace(RankParams(), **{k: v for k, v in values.items() if k in {f.name for f in fields(RankParams)}})
    return rp, BM25(values.get("k1", 1.2), values.get("b", 0.75))


def search_ranking(cs: dict[int, Conv], rounds: int = 3, log=None) -> dict:
    """Coordinate descent on dev (0-6) from today's defaults: each parameter in turn takes the value of
    :data:`SPACE` with the best objective (ties: keep the current value); stop when a round changes nothing."""
    cur = {f.name: getattr(RankParams(), f.name) for f in fields(RankParams) if f.name in SPACE} | {"k1": 1.2, "b": 0.75}
    best = rank_metrics(cs, DEV, *_point(cur))["obj"]
    for rnd in range(rounds):
        changed = False
        for name, values in SPACE.items():
            for v in values:
                if v == cur[name]:
                    continue
                m = rank_metrics(cs, DEV, *_point(cur | {name: v}))
                if log:
                    log.write(json.dumps({"round": rnd, "point": cur | {name: v}, **m}) + "\n")
                if m["obj"] > best + 1e-9:
                    best, cur, changed = m["obj"], cur | {name: v}, True
            print(f"round {rnd} {name}={cur[name]} obj {best:.4f}", file=sys.stderr, flush=True)
        if not changed:
            break
    return cur | {"obj": best}
