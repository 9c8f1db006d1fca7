"""Recall's own BM25 (recall/bm25.py) equals the store's FTS5 bm25() bit for bit on random vaults and queries,
FTS5's porter stems are read exactly, and recall's output does not depend on PYTHONHASHSEED."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fresh import outputs

import synapse_nb as syn
from synapse_nb.recall import bm25
from synapse_nb.recall.bm25 import Postings, bm25_top
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.store.sqlite.ranking import fts5_stems, varints

# stems that porter merges (run/running/runs, lake/lakes), words it leaves alone, an FTS5 keyword, a diacritic
WORDS = ["run", "running", "runs", "lake", "lakes", "trout", "farm", "farming", "north", "camp", "camping",
         "queue", "deploy", "deployed", "near", "or", "café", "cafe", "zebra", "x1", "2024"]


class _Ctx:
    def __init__(self, store: object, mind: str) -> None:
        self.store, self.mind = store, mind


def _vault(path: Path, seed: int) -> syn.Vault:
    rnd = random.Random(seed)
    path.mkdir()
    v = syn.open_vault(path)
    other = syn.open_vault(path, mind="other")
    with v.transaction():
        for i in range(rnd.randint(40, 90)):
            text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 30)))
            if rnd.random() < 0.6:
                v.episodes.log(f"t{i % 3}", outcome=text, thread=f"s{i % 4}", actor=rnd.choice(["Ann", "Bob"]))
            else:
                v.memories.remember("project", f"k{i}", text)
    other.memories.remember("project", "o", " ".join(rnd.choice(WORDS) for _ in range(12)))
    return v


@pytest.mark.parametrize("dense", [8, 0])  # 0: always the sparse union
def test_numpy_bm25_equals_fts5_bm25_on_random_vaults_and_queries(tmp_path: Path, dense: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25, "DENSE_FACTOR", dense)
    for seed in range(4):
        v = _vault(tmp_path / f"v{seed}", seed)
        store = v._store
        idx = ThreadIndex(store.recall.rank_rows(v.mind))
        cache = Postings(_Ctx(store, v.mind))  # type: ignore[arg-type]
        rnd = random.Random(100 + seed)
        for _ in range(40):
            words = list(dict.fromkeys(rnd.choice(WORDS) for _ in range(rnd.randint(1, 5))))
            wb, wc = rnd.choice([(1.0, 0.2), (1.0, 0.3), (0.7, 1.0), (1.0, 0.0)])
            depth = rnd.choice([3, 10, 100])
            terms, totals = cache.get(words, idx, store.data_version())
            pos, score = bm25_top([terms[w] for w in words], idx, totals, style="fts5", depth=depth, w_body=wb,
                                  w_context=wc, k1=1.2, b=0.75)
            want = store.recall.bm25(v.mind, words, depth=depth, w_body=wb, w_context=wc)
            got = [(idx.ids[j], s) for j, s in zip(pos.tolist(), score.tolist(), strict=True)]
            assert got == [tuple(h) for h in want], (seed, words, wb, wc)


def test_stems_are_fts5_porter_and_lengths_its_docsize(tmp_path: Path) -> None:
    assert fts5_stems(["running", "runs", "lakes", "café", "x1"]) == {
        "running": ("run",), "runs": ("run",), "lakes": ("lake",), "café": ("cafe",), "x1": ("x1",)}
    assert varints(bytes([0x81, 0x80, 0x00])) == [1 << 14]
    v = _vault(tmp_path / "v", 7)
    store = v._store
    db = store  # the SQLite store runs raw reads (query, query_one)
    for w in WORDS:
        post = store.recall.postings(v.mind, [w])[w]
        by_doc = {r.doc: r.id for r in store.recall.rank_rows(v.mind)}
        ids = {by_doc[int(d)] for d in post.docs if int(d) in by_doc}
        match = {r[0] for r in db.query(
            "SELECT d.rid FROM rank_fts JOIN gate_docs d ON d.gid = rank_fts.rowid WHERE rank_fts MATCH ? "
            "AND d.mind = ?", (f'"{w}"', v.mind))}
        assert ids == match, w
        vault_n = db.query_one("SELECT count(*) FROM rank_fts WHERE rank_fts MATCH ?", (f'"{w}"',))[0]
        assert post.n_vault == vault_n, w
    n, total = store.recall.rank_totals()
    assert n == db.query_one("SELECT count(*) FROM gate_docs")[0]
    rows = store.recall.rank_rows(v.mind)
    assert all(r.length > 0 for r in rows) and total >= sum(r.length for r in rows)


_SCRIPT = """
import json, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
out = []
for q in ["running near the lake", "trout farming north", "deploy the queue or camp", "zebra cafe 2024"]:
    r = v.recall(q)
    out.append([r.text, [(e.id, e.score) for e in r.explain()]])
print(json.dumps(out))
"""


def test_recall_is_the_same_whatever_the_hash_seed(tmp_path: Path) -> None:
    _vault(tmp_path / "v", 11).close()
    outs = set(outputs(["-c", _SCRIPT, str(tmp_path / "v")], ["0", "1", "12345"]))
    assert len(outs) == 1 and json.loads(outs.pop())


def test_a_word_fts5_splits_falls_back_to_the_stores_bm25(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A word the backend's tokenizer does not keep as one term is a phrase query: recall asks the store's bm25,
    and the answer is the one the numpy path gives when it can."""
    from synapse_nb.store.sqlite import ranking

    _vault(tmp_path / "a", 5).close()
    want = syn.open_vault(tmp_path / "a").recall("lake trout running")
    real = ranking.fts5_stems

    def split(words: list[str]) -> dict[str, tuple[str, ...]]:
        return {w: (("lake", "lake") if w == "lake" else t) for w, t in real(words).items()}

    monkeypatch.setattr(ranking, "fts5_stems", split)
    calls: list[object] = []
    v = syn.open_vault(tmp_path / "a")
    bm25_ref = v._store.recall.bm25
    monkeypatch.setattr(v._store.recall, "bm25", lambda *a, **k: calls.append(a) or bm25_ref(*a, **k))
    got = v.recall("lake trout running")
    assert calls and got.text == want.text and [e.score for e in got.explain()] == [e.score for e in want.explain()]
