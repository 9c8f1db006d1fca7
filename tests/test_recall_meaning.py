"""Expansion by meaning (synapse_nb/recall/meaning.py): the vault's words and their vectors kept beside the semantic
table (synapse_nb/store/index/words.py), and the words close in meaning to a question's joining its BM25 sum."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_recall_semantic import GROUPS, OPEN, Fake

import synapse_nb as syn
from synapse_nb.errors import ValidationError
from synapse_nb.recall import semantic
from synapse_nb.recall.rank import RankParams
from synapse_nb.store import embedders
from synapse_nb.store.embedders import check_embedder, register_embedder, word_cosine
from synapse_nb.store.index.words import WordTable, words_of

ROOT = Path(__file__).resolve().parents[1]


class Words(Fake):
    """A deterministic embedder with a ``word_cosine``: a group's words (:data:`GROUPS`) share one meaning, every
    other word has its own (three hashed directions of 60: two such words are far apart); counts the texts of one
    word it embeds as documents."""

    word_cosine = 0.9
    dimension = 64

    def __init__(self, fingerprint: str = "words-1") -> None:
        super().__init__(fingerprint)
        self.single: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import hashlib

        if not query:
            self.single += [t for t in texts if t.strip() and " " not in t.strip()]
        out = np.zeros((len(texts), self.dimension))
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z]+", t.lower()):
                g = [j for j, words in enumerate(GROUPS) if w in words]
                if g:
                    out[i, g[0]] += 1.0
                    continue
                h = hashlib.sha256(w.encode()).digest()
                for k in range(3):
                    out[i, 4 + h[k] % 60] += 0.5
        return out


@pytest.fixture
def emb(monkeypatch: pytest.MonkeyPatch) -> Words:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    e = Words()
    register_embedder("words", lambda: e)
    register_embedder("plain", Fake)
    embedders.load_embedder("words")  # its contract check embeds a few probes: not counted
    e.single.clear()
    return e


def _on(v: syn.Vault, spec: str = "words") -> None:
    v.settings.set("recall_embedder", spec)
    v.settings.set("recall_semantic", 0.5)


TEXTS = {"car": "Ann bought a sedan last week", "pets": "Bob walks his puppy every morning",
         "tax": "Ann filed her salary papers", "trip": "Bob went to the seaside in May",
         "misc": "Ann likes green tea", "dog": "The hound next door barks all night"}
HOUND = "The hound next door barks all night"


def _seed(v: syn.Vault, texts: dict[str, str] = TEXTS) -> dict[str, str]:
    return {k: v.remember("project", f"k_{k}", t).id for k, t in texts.items()}


def _no_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    """The dense list left empty: what recall finds, BM25 (and the expansion) found."""
    monkeypatch.setattr(semantic.DenseChannel, "search", lambda self, *a, **k: ([], {}))


def _ids(v: syn.Vault, query: str) -> list[str]:
    return [r.id for r in v.recall(query, bars=OPEN, record=False).explain()]


def test_the_words_table_holds_every_word_of_the_vault_and_grows_with_it(vault: syn.Vault, emb: Words) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("ann", record=False)  # a word of the vault: nothing more embedded
    dense = vault.index.dense
    assert dense is not None and dense.words is not None
    docs = [r.doc for r in vault.index._all_dense_rows()]  # each record's text with its key
    assert words_of(TEXTS.values()) < dense.words.known() == words_of(docs)
    first, had = len(emb.single), set(dense.words.known())
    assert sorted(emb.single) == sorted(had), sorted(set(emb.single) ^ had)  # each word embedded once, alone
    vault.remember("project", "k_new", "Carol rents an automobile in May")
    vault.recall("ann", record=False)  # a word of the vault: nothing more embedded
    assert dense.words.known() - had == {"carol", "rents", "automobile", "new"}  # "may" was there
    assert len(emb.single) == first + 4
    m = dense.words.matrix()
    assert m is not None and list(m.words) == sorted(m.words) and len(m.words) == len(dense.words.known())
    j, k = m.at["sedan"], m.at["automobile"]
    assert m.cosines(m.vecs[j])[k] == pytest.approx(1.0)


def test_a_model_without_word_cosine_keeps_no_words(vault: syn.Vault, emb: Words) -> None:
    _seed(vault)
    _on(vault, "plain")
    vault.recall("which automobile", record=False)
    assert vault.index.dense is not None and vault.index.dense.words is None
    assert not list(vault.index.path.glob("words_*.lance"))


def test_a_record_sharing_no_word_with_the_question_is_found_through_a_word_close_in_meaning(
        vault: syn.Vault, emb: Words, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _seed(vault)
    _on(vault)
    _no_dense(monkeypatch)  # what is found, BM25 found
    vault.recall("warm up", record=False)
    rc = vault._recaller
    assert rc is not None
    assert _ids(vault, "any automobile")[:1] == [ids["car"]]  # "automobile" -> "sedan"
    assert _ids(vault, "Which automobile did Ann buy?")[0] == ids["car"]  # "ann" alone ties three records
    rc.params = replace(rc.params, expand=0.0)
    assert _ids(vault, "any automobile") == []  # no word of it is in the vault
    off = {r.id: r.score for r in vault.recall("Which automobile did Ann buy?", bars=OPEN, record=False).explain()}
    assert off[ids["car"]] <= max(off.values()) and len({round(x, 9) for x in off.values()}) < len(off) + 1


def test_the_expansion_weighs_each_word_by_its_cosine_and_keeps_the_best_of_a_stem(
        vault: syn.Vault, emb: Words, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("warm up", record=False)
    rc = vault._recaller
    assert rc is not None
    got: list[list[tuple[str | None, float]]] = []
    real = rc._expansion

    def spy(*a: object, **k: object) -> list:
        out = real(*a, **k)  # type: ignore[arg-type]  # the engine's own arguments, passed through
        got.append([(e.term.stem, e.weight) for e in out])
        return out

    monkeypatch.setattr(rc, "_expansion", spy)
    vault.recall("dog", bars=OPEN, record=False)
    assert got[-1] == [("hound", pytest.approx(0.2)), ("puppi", pytest.approx(0.2))]  # stems, in stem order
    rc.params = replace(rc.params, expand_words=1)
    vault.recall("dog", bars=OPEN, record=False)
    assert got[-1] == [("hound", pytest.approx(0.2))]  # the first by (cosine, word)
    emb.word_cosine = 1.01  # no word is that close: nothing joins
    with pytest.raises(ValidationError, match="word_cosine"):
        vault.recall("dog", bars=OPEN, record=False)
    emb.word_cosine = 0.9
    got.clear()
    vault.recall("what did they do with it", bars=OPEN, record=False)  # stop words look up nothing
    assert got in ([], [[]])


def test_a_deleted_records_words_leave_the_index_folder_and_change_no_answer(vault: syn.Vault, emb: Words) -> None:
    """A person's deletion rewrites the words table with the live records' words (real deletion: a deleted
    record's words leave the index folder). An agent's leaves the rewrite owed and the table keeps them meanwhile;
    a word the live vault no longer holds is never taken, so that table and a rebuilt one rank alike, to the
    byte."""
    ids = _seed(vault)
    _on(vault)
    vault.remember("project", "k_secret", "zebrafishy nests by the seaside")
    vault.recall("warm up", record=False)
    words = vault.index.dense.words  # type: ignore[union-attr]
    assert words is not None and "zebrafishy" in words.known()
    vault.memories.delete(vault.memories.get_by_key("project", "k_secret").id)
    assert "zebrafishy" not in words.known() and "seaside" in words.known()
    assert [str(p) for p in vault.index.path.rglob("*") if p.is_file() and b"zebrafishy" in p.read_bytes()] == []

    vault.memories.delete(ids["dog"])
    agent = vault.as_agent()
    dog = agent.remember("context", "dog", HOUND)
    vault.recall("warm up", record=False)
    agent.memories.delete(dog.id)  # owed: "hound" stays in the table, in no record
    assert vault.index.scrub_owed_since is not None
    rc = vault._recaller
    assert rc is not None
    rc.params = replace(rc.params, expand_words=1)
    before = [(r.id, float(r.score).hex()) for r in vault.recall("dog", bars=OPEN, record=False).explain()]
    assert "hound" in words.known()
    assert before and before[0][0] == ids["pets"]  # "puppy" taken in its place
    vault.index.dense.rebuild(vault.index._all_dense_rows())  # type: ignore[union-attr]
    assert "hound" not in words.known()
    after = [(r.id, float(r.score).hex()) for r in vault.recall("dog", bars=OPEN, record=False).explain()]
    assert after == before


def test_a_question_word_the_vault_lacks_is_embedded_once_per_process(vault: syn.Vault, emb: Words) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("warm up", record=False)
    n = len(emb.single)
    vault.recall("vehicle", bars=OPEN, record=False)
    vault.recall("vehicle", bars=OPEN, record=False)
    assert emb.single[n:].count("vehicle") == 1  # (its query vector is another call, query=True)


def test_word_cosine_is_checked_like_match_cosine() -> None:
    class Bad(Fake):
        word_cosine = 2

    with pytest.raises(ValidationError, match="word_cosine must be None or a number in"):
        check_embedder(Bad())
    assert word_cosine(Fake()) is None
    assert RankParams().expand > 0 and RankParams().expand_words > 0


def test_the_expansion_is_the_same_whatever_the_hash_seed(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / "tests")!r})
        import synapse_nb as syn
        from synapse_nb.store.embedders import register_embedder
        from test_recall_meaning import TEXTS, Words
        from test_recall_semantic import OPEN
        register_embedder("words", Words)
        v = syn.open_vault(sys.argv[1])
        v.settings.set("recall_embedder", "words")
        v.settings.set("recall_semantic", 0.5)
        for q in ("dog and automobile", "salary by the ocean", "a hound"):
            print([(r.id, float(r.score).hex()) for r in v.recall(q, bars=OPEN, record=False).explain()])
        v.close()
    """)
    v = syn.open_vault(tmp_path)
    for k, t in TEXTS.items():
        v.remember("project", f"k_{k}", t)
    v.close()
    outs = {subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                           check=True).stdout for seed in ("0", "1", "12345")}
    assert len(outs) == 1 and outs.pop().count("0x") >= 3


def test_the_words_table_is_separate_per_fingerprint(tmp_path: Path) -> None:
    a, b = WordTable(tmp_path, Words("one")), WordTable(tmp_path, Words("two"))
    assert a.name != b.name
    a.add_texts(["car puppy"])
    assert a.known() == {"car", "puppy"} and a.exists()
    b.add_texts(["beach"])  # another model's words: the first table goes
    assert not a._dir().exists() and b.known() == {"beach"}
    assert set(GROUPS[3]) >= {"beach"}


def test_under_a_deadline_a_record_of_many_new_words_waits_for_them_and_never_holds_a_hook(
        vault: syn.Vault, emb: Words, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's record of thousands of made-up words would cost e5 seconds of word embedding in one step: under
    the hooks' deadline the step's words are embedded first, stopping at the deadline (kept for the next run),
    and the record's vector waits until all its words are in. The table never lacks a word of a row it holds."""
    from synapse_nb.store.index import words as words_mod

    _seed(vault)
    _on(vault)
    vault.recall("warm up", record=False)
    made_up = " ".join("zq" + "".join(chr(97 + (i // 26 ** k) % 26) for k in range(3)) for i in range(200))
    new = vault.as_agent().remember("context", "junk", made_up)
    slow = emb.embed

    def embed(texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if len(texts) == words_mod.DEADLINE_BATCH:
            import time as t

            t.sleep(0.05)
        return slow(texts, query=query)

    monkeypatch.setattr(emb, "embed", embed)
    dense = vault.index.dense
    assert dense is not None and dense.words is not None
    runs = 0
    while new.id not in dense.digests():
        monkeypatch.setenv("SYNAPSE_EMBED_DEADLINE", str(__import__("time").time() + 0.12))
        vault.recall("zqaaa", bars=OPEN, record=False)  # BM25 answers meanwhile
        runs += 1
        assert runs < 40
        held = set(dense.digests())
        assert all(w in dense.words.known() for r in vault.index._all_dense_rows() if r.id in held
                   for w in words_of([r.doc]))
    assert runs > 1  # it took several runs, each ending near its deadline
    assert words_of([made_up]) <= dense.words.known()


def test_a_words_close_rows_are_kept_until_the_table_moves(vault: syn.Vault, emb: Words,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.store.index.words import WordMatrix

    _seed(vault)
    _on(vault)
    vault.recall("warm up", record=False)
    passes: list[int] = []
    real = WordMatrix.cosines
    monkeypatch.setattr(WordMatrix, "cosines", lambda self, q: passes.append(len(self.words)) or real(self, q))
    first = _ids(vault, "dog walks")
    assert len(passes) == 2
    assert _ids(vault, "dog walks") == first and len(passes) == 2  # kept
    vault.remember("project", "k_more", "A sedan parked by the ocean")  # a write with a new word: the table moves
    _ids(vault, "dog walks")
    assert len(passes) == 4 and passes[-1] == passes[0] + 3  # "more", "parked", "ocean"


def test_the_recall_and_the_cli_say_which_words_joined_by_meaning(vault: syn.Vault, emb: Words) -> None:
    import json

    from typer.testing import CliRunner

    from synapse_nb.cli import app

    _seed(vault)
    _on(vault)
    r = vault.recall("which automobile", bars=OPEN, record=False)
    assert r.expanded == (("car", "automobile", 0.2), ("sedan", "automobile", 0.2))  # "k_car": the key
    assert vault.recall("green tea", record=False).expanded == ()  # nothing close enough
    runner = CliRunner()
    res = runner.invoke(app, ["--vault", str(vault.project_dir), "recall", "query", "which automobile", "--explain"])
    assert res.exit_code == 0, res.output
    assert "expanded by meaning: car (~automobile, 0.200), sedan (~automobile, 0.200)" in res.stdout
    res = runner.invoke(app, ["--vault", str(vault.project_dir), "recall", "query", "which automobile", "--explain",
                              "--json"])
    assert json.loads(res.stdout)["expanded"][1] == {"word": "sedan", "of": "automobile", "weight": 0.2}
