"""Tests for the LanceDB retrieval index and the hashing embedder."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fresh import outputs

from synapse_nb.errors import IndexError_, NotFoundError, QueryError, SynapseError, ValidationError
from synapse_nb.store.embed import HashingEmbedder, load_embedder
from synapse_nb.store.index import DriftReport, Hit, IndexRow, RetrievalIndex

NOW = "2026-06-01T00:00:00Z"
TEXTS = {
    "mem_a": ("memory", "run database migrations with alembic upgrade head before deploying"),
    "mem_b": ("memory", "the user prefers tabs over spaces in python files"),
    "dec_c": ("decision", "use sqlite wal mode so readers never block writers"),
    "les_d": ("lesson", "reverting the auth refactor broke jwt token refresh; test token expiry"),
    "mem_e": ("memory", "deploy to staging with make deploy-staging, then run smoke tests"),
    "note_f": ("note", "plotting conventions: matplotlib with seaborn style, figures 8x5"),
    "mem_g": ("memory", "kubernetes pods restart when the readiness probe fails three times"),
    "epi_h": ("episode", "nightly etl job loaded 1.2m rows into the warehouse in 14 minutes"),
}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_rows(mind: str = "default", texts: dict[str, tuple[str, str]] = TEXTS) -> list[IndexRow]:
    return [IndexRow(i, kind, mind, t, digest(t), "2026-01-01T00:00:00Z", None)
            for i, (kind, t) in sorted(texts.items())]


@pytest.fixture()
def idx(tmp_path: Path) -> RetrievalIndex:
    index = RetrievalIndex(tmp_path / "index")
    index.rebuild(make_rows())
    yield index
    index.close()


# ---------------------------------------------------------------- embedder
def test_hashing_embedder_shape_norm_and_similarity() -> None:
    emb = HashingEmbedder()
    vecs = emb.embed(["run the database migrations", "running database migration", "cats sleep all day", ""])
    assert vecs.shape == (4, 256) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2
    assert emb.embed([]).shape == (0, 256)


def test_hashing_embedder_identical_across_hash_seeds() -> None:
    code = (
        "import hashlib; from synapse_nb.store.embed import HashingEmbedder as H; "
        "print(hashlib.sha256(H().embed(['deploy the api', 'tabs over spaces']).tobytes()).hexdigest())"
    )
    outs = set(outputs(["-c", code], ["1", "12345"]))
    here = hashlib.sha256(HashingEmbedder().embed(["deploy the api", "tabs over spaces"]).tobytes()).hexdigest()
    assert outs == {here + "\n"}


def test_load_embedder_specs(tmp_path: Path) -> None:
    assert load_embedder(None).name == load_embedder("hashing").name == HashingEmbedder().name
    assert load_embedder("hashing:64").dim == 64
    with pytest.raises(ValidationError, match="accepted"):
        load_embedder("word2vec")
    with pytest.raises(ValidationError):
        load_embedder("hashing:lots")
    with pytest.raises(ValidationError):
        load_embedder("hashing:3")
    with pytest.raises(NotFoundError, match="nothing is downloaded"):
        load_embedder(f"sentence-transformers:{tmp_path / 'nope'}")
    # the folder exists but the package is not installed here: a clear SynapseError, no download
    with pytest.raises(SynapseError, match="sentence-transformers"):
        load_embedder(f"sentence-transformers:{tmp_path}")
    with pytest.raises(ValidationError):
        HashingEmbedder().embed("a single string")


def test_import_is_light() -> None:
    code = ("import sys, synapse_nb.store.index; "
            "print(sorted(m for m in ('lancedb', 'sklearn', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- search
@pytest.mark.parametrize("mode", ["hybrid", "vector", "fts"])
def test_search_finds_the_right_row(idx: RetrievalIndex, mode: str) -> None:
    hits = idx.search("how do we run the migrations with alembic", mind="default", now=NOW, mode=mode)
    assert hits[0] == Hit("mem_a", "memory", hits[0].score)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_search_orders_by_score_then_id_and_respects_k(idx: RetrievalIndex) -> None:
    hits = idx.search("deploy", mind="default", now=NOW, k=3)
    assert len(hits) <= 3
    keys = [(-h.score, h.id) for h in idx.search("deploy tests token", mind="default", now=NOW)]
    assert keys == sorted(keys)


def test_hybrid_is_rrf_of_vector_and_fts(idx: RetrievalIndex) -> None:
    q = "deploy staging smoke tests"
    vec = idx.search(q, mind="default", now=NOW, mode="vector")
    fts = idx.search(q, mind="default", now=NOW, mode="fts")
    expect: dict[str, float] = {}
    for hits in (vec, fts):
        for rank, h in enumerate(hits, start=1):
            expect[h.id] = expect.get(h.id, 0.0) + 1 / (60 + rank)
    hybrid = idx.search(q, mind="default", now=NOW, mode="hybrid")
    assert {h.id: h.score for h in hybrid} == pytest.approx(expect)
    assert hybrid[0].id == "mem_e"


@pytest.mark.parametrize("indexed", [False, True], ids=["scan", "btree+ivf"])
def test_prefilter_by_mind_kind_and_expiry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indexed: bool) -> None:
    if indexed:  # the scalar BTree indices and the IVF index big tables get must filter the same way
        monkeypatch.setattr("synapse_nb.store.index.maintenance._SCALAR_MIN", 1)
    index = RetrievalIndex(tmp_path / "ix", ann_threshold=1 if indexed else 150_000)
    rows = [
        *make_rows("default"),
        IndexRow("mem_x", "memory", "other", "alembic migrations for the other mind", "x", "2026-01-01T00:00:00Z"),
        IndexRow("mem_old", "memory", "default", "alembic migrations expired advice", "o", "2026-01-01T00:00:00Z",
                 "2026-03-01T00:00:00Z"),
        IndexRow("mem_soon", "memory", "default", "alembic migrations until the end of june", "s",
                 "2026-01-01T00:00:00Z", "2026-06-30T00:00:00Z"),
    ]
    index.rebuild(rows)
    names = {ix.name for ix in index._open().list_indices()}
    assert ({"mind_idx", "kind_idx", "expires_at_idx", "vector_idx"} <= names) is indexed
    for mode in ("hybrid", "vector", "fts"):
        ids = {h.id for h in index.search("alembic migrations", mind="default", now=NOW, mode=mode)}
        assert "mem_x" not in ids and "mem_old" not in ids and "mem_soon" in ids
        assert {h.id for h in index.search("alembic", mind="other", now=NOW, mode=mode)} == {"mem_x"}
        # expiry is strict: a row expiring exactly now is gone
        found = index.search("alembic", mind="default", now="2026-06-30T00:00:00Z", mode=mode)
        assert "mem_soon" not in {h.id for h in found}
        only = index.search("alembic wal token", mind="default", kinds=["decision", "lesson"], now=NOW, mode=mode)
        assert only and {h.kind for h in only} <= {"decision", "lesson"}
        assert index.search("alembic", mind="default", kinds=[], now=NOW, mode=mode) == []
        assert index.search("alembic", mind="nobody", now=NOW, mode=mode) == []


@pytest.mark.parametrize("query", ["", "   ", "the and of", "?!"])
def test_empty_or_stopword_query_returns_nothing(idx: RetrievalIndex, query: str) -> None:
    for mode in ("hybrid", "vector", "fts"):
        assert idx.search(query, mind="default", now=NOW, mode=mode) == []


def test_query_text_is_not_a_query_language(idx: RetrievalIndex) -> None:
    for q in ['alembic" OR 1=1 --', "mind:other (wal", "it's tabs' AND NOT spaces"]:
        assert isinstance(idx.search(q, mind="default", now=NOW), list)
    assert idx.search("o'brien's tabs", mind="d'efault", now=NOW) == []


def test_bad_search_arguments(idx: RetrievalIndex) -> None:
    with pytest.raises(QueryError):
        idx.search("x", mind="default", now=NOW, mode="semantic")  # type: ignore[arg-type]
    with pytest.raises(QueryError):
        idx.search("x", mind="default", now=NOW, k=0)
    with pytest.raises(QueryError):
        idx.search("x", mind="", now=NOW)
    with pytest.raises(QueryError):
        idx.search("x", mind="default", now=NOW, kinds="memory")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        idx.upsert([("mem_a", "memory")])  # type: ignore[list-item]


# ---------------------------------------------------------------- writes and freshness
def test_upsert_is_visible_immediately_to_fts_and_vector(idx: RetrievalIndex) -> None:
    before = idx.count()
    idx.upsert([IndexRow("mem_new", "memory", "default", "grafana dashboards live in the observability repo", "n",
                         "2026-02-01T00:00:00Z")])
    assert idx.count() == before + 1
    for mode in ("fts", "vector", "hybrid"):
        assert idx.search("where are the grafana dashboards", mind="default", now=NOW, mode=mode)[0].id == "mem_new"
    # another handle (another process, say) sees it too
    other = RetrievalIndex(idx.path)
    assert other.search("grafana", mind="default", now=NOW, mode="fts")[0].id == "mem_new"


def test_upsert_replaces_by_id_and_old_text_disappears(idx: RetrievalIndex) -> None:
    text = "prefer spaces now, four of them, black formats python"
    idx.upsert([IndexRow("mem_b", "memory", "default", text, digest(text), "2026-02-01T00:00:00Z")])
    idx.upsert([IndexRow("mem_b", "memory", "default", text, digest(text), "2026-02-02T00:00:00Z")])
    assert idx.count() == len(TEXTS)
    assert "mem_b" not in {h.id for h in idx.search("tabs", mind="default", now=NOW, mode="fts")}
    assert idx.search("black formatter", mind="default", now=NOW, mode="fts")[0].id == "mem_b"
    assert idx.check({i: digest(t) for i, (_, t) in TEXTS.items()}).stale == ("mem_b",)


def test_delete(idx: RetrievalIndex) -> None:
    idx.delete(["mem_a", "nope"])
    assert idx.count() == len(TEXTS) - 1
    for mode in ("fts", "vector", "hybrid"):
        assert "mem_a" not in {h.id for h in idx.search("alembic migrations", mind="default", now=NOW, mode=mode)}
    idx.delete([])
    assert idx.count() == len(TEXTS) - 1


def test_upsert_many_rows_in_one_call(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "ix")
    index.rebuild([])
    rows = [IndexRow(f"mem_{i:05d}", "memory", "default", f"item {i} about topic{i % 50}", str(i),
                     "2026-01-01T00:00:00Z")
            for i in range(3000)]
    index.upsert(rows)
    index.upsert(rows[:10])
    assert index.count() == 3000
    assert index.search("topic7", mind="default", now=NOW, mode="fts", k=100)[0].id.startswith("mem_")


def test_many_single_upserts_trigger_optimize_and_stay_searchable(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "ix")
    index.rebuild([])
    for i in range(70):
        index.upsert([IndexRow(f"mem_{i:03d}", "memory", "default", f"fact number {i} zebra{i}", str(i),
                               "2026-01-01T00:00:00Z")])
    tbl = index._open()
    assert tbl.stats()["fragment_stats"]["num_fragments"] < 70  # compacted along the way
    assert index.search("zebra69", mind="default", now=NOW, mode="fts")[0].id == "mem_069"
    assert index.search("zebra3", mind="default", now=NOW, mode="fts")[0].id == "mem_003"


# ---------------------------------------------------------------- determinism
def test_same_rows_same_results_before_and_after_rebuild(tmp_path: Path) -> None:
    rows = make_rows()
    incremental = RetrievalIndex(tmp_path / "inc")
    incremental.rebuild([])
    for r in reversed(rows):  # written one at a time, in another order
        incremental.upsert([r])
    incremental.optimize()
    built = RetrievalIndex(tmp_path / "built")
    built.rebuild(rows)
    queries = ["deploy", "alembic migrations", "token auth refactor", "python tabs", "warehouse etl rows"]
    for mode in ("hybrid", "vector", "fts"):
        for q in queries:
            a = incremental.search(q, mind="default", now=NOW, mode=mode)
            b = built.search(q, mind="default", now=NOW, mode=mode)
            assert a == b, (mode, q)
            built.rebuild(rows)  # rebuilding again changes nothing
            assert built.search(q, mind="default", now=NOW, mode=mode) == b


def test_rebuild_with_progress_and_generator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = RetrievalIndex(tmp_path / "ix")
    assert index.rebuild((r for r in make_rows()), total=len(TEXTS), progress=True) == len(TEXTS)
    assert index.count() == len(TEXTS)
    captured = capsys.readouterr()
    # tqdm.auto writes to stderr in a terminal, but after an IPython shell exists in this process (the magics tests)
    # it picks the notebook bar, whose text fallback goes to stdout: the bar must show up on one of them.
    assert "indexing" in captured.err + captured.out


def test_rebuild_with_ann_index_still_finds_rows(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "ix", ann_threshold=300)
    rows = [IndexRow(f"mem_{i:04d}", "memory", "default", f"note {i} about subject{i % 40} and thing{i % 7}", str(i),
                     "2026-01-01T00:00:00Z") for i in range(400)]
    rows.append(IndexRow("mem_zzz", "memory", "default", "alembic migrations run before every deploy", "z",
                         "2026-01-01T00:00:00Z"))
    index.rebuild(rows)
    assert index._has_ann(index._open())
    for mode in ("vector", "hybrid", "fts"):
        assert index.search("alembic migrations deploy", mind="default", now=NOW, mode=mode)[0].id == "mem_zzz"


# ---------------------------------------------------------------- drift
def test_check_and_repair(idx: RetrievalIndex) -> None:
    expected = {i: digest(t) for i, (_, t) in TEXTS.items()}
    assert idx.check(expected).ok
    expected["mem_new"] = digest("brand new")
    expected["mem_a"] = digest("changed text")
    del expected["note_f"]
    report = idx.check(expected)
    assert report == DriftReport(missing=("mem_new",), stale=("mem_a",), extra=("note_f",))
    assert not report.ok
    source = {**{r.id: r for r in make_rows()},
              "mem_new": IndexRow("mem_new", "memory", "default", "brand new", expected["mem_new"],
                                  "2026-01-01T00:00:00Z"),
              "mem_a": IndexRow("mem_a", "memory", "default", "changed text", expected["mem_a"],
                                "2026-01-01T00:00:00Z")}
    asked: list[list[str]] = []

    def rows_for_ids(ids: list[str]) -> list[IndexRow]:
        asked.append(list(ids))
        return [source[i] for i in ids]

    assert idx.repair(rows_for_ids, expected) == report
    assert asked == [["mem_a", "mem_new"]]
    assert idx.check(expected).ok
    assert idx.search("brand new", mind="default", now=NOW, mode="fts")[0].id == "mem_new"


def test_repair_reports_rows_the_source_did_not_give(idx: RetrievalIndex) -> None:
    expected = {i: digest(t) for i, (_, t) in TEXTS.items()} | {"mem_ghost": "g"}
    with pytest.raises(IndexError_, match="repair left drift"):
        idx.repair(lambda ids: [], expected)


# ---------------------------------------------------------------- robustness
def test_missing_index(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "never")
    assert not index.exists() and index.count() == 0
    with pytest.raises(IndexError_, match="rebuild"):
        index.search("x", mind="default", now=NOW)
    with pytest.raises(IndexError_):
        index.upsert(make_rows()[:1])
    expected = {r.id: r.digest for r in make_rows()}
    assert index.check(expected).missing == tuple(sorted(expected))


def test_deleted_index_folder_raises_then_repair_self_heals(idx: RetrievalIndex) -> None:
    idx.search("deploy", mind="default", now=NOW)
    shutil.rmtree(idx.path)
    with pytest.raises(IndexError_):
        idx.search("deploy", mind="default", now=NOW)
    rows = {r.id: r for r in make_rows()}
    report = idx.repair(lambda ids: [rows[i] for i in ids], {i: r.digest for i, r in rows.items()})
    assert report.missing == tuple(sorted(rows))
    assert idx.search("alembic", mind="default", now=NOW)[0].id == "mem_a"


@pytest.mark.parametrize("damage", ["versions", "data", "garbage_manifest"])
def test_corrupt_index_raises_index_error_and_repair_rebuilds(tmp_path: Path, damage: str) -> None:
    index = RetrievalIndex(tmp_path / "ix")
    index.rebuild(make_rows())
    index.close()
    table = tmp_path / "ix" / "records.lance"
    if damage == "versions":
        shutil.rmtree(table / "_versions")
    elif damage == "data":
        for f in (table / "data").iterdir():
            f.write_bytes(b"not a lance file")
    else:
        for f in (table / "_versions").iterdir():
            f.write_bytes(b"\x00garbage")
    fresh = RetrievalIndex(tmp_path / "ix")
    with pytest.raises(IndexError_) as err:
        fresh.search("alembic migrations", mind="default", now=NOW)
    assert "\n" not in str(err.value)
    rows = {r.id: r for r in make_rows()}
    fresh.repair(lambda ids: [rows[i] for i in ids], {i: r.digest for i, r in rows.items()})
    assert fresh.search("alembic migrations", mind="default", now=NOW)[0].id == "mem_a"


def test_other_embedder_forces_rebuild(idx: RetrievalIndex) -> None:
    other = RetrievalIndex(idx.path, HashingEmbedder(dim=64))
    with pytest.raises(IndexError_, match="embedder"):
        other.search("deploy", mind="default", now=NOW)
    assert other.rebuild(make_rows()) == len(TEXTS)
    assert other.search("alembic", mind="default", now=NOW)[0].id == "mem_a"
    with pytest.raises(IndexError_, match="embedder"):
        RetrievalIndex(idx.path).search("deploy", mind="default", now=NOW)


def _writer(path: str, start: int) -> None:
    index = RetrievalIndex(path)
    for i in range(start, start + 15):
        index.upsert([IndexRow(f"mem_{i:04d}", "memory", "default", f"parallel fact {i}", str(i),
                               "2026-01-01T00:00:00Z")])
    index.close()


def test_concurrent_writers_from_several_processes(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "ix")
    index.rebuild([])
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / "ix"), s)) for s in (0, 100)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    expected = {f"mem_{i:04d}": str(i) for s in (0, 100) for i in range(s, s + 15)}
    assert index.check(expected).ok
    assert index.count() == 30


def test_a_rebuild_by_another_handle_is_seen(idx: RetrievalIndex, tmp_path: Path) -> None:
    assert idx.search("alembic", mind="default", now=NOW, mode="vector")[0].id == "mem_a"
    other = RetrievalIndex(idx.path)
    other.rebuild([IndexRow("mem_z", "memory", "default", "alembic lives here now", "z", "2026-01-01T00:00:00Z")])
    for mode in ("vector", "fts", "hybrid"):
        assert [h.id for h in idx.search("alembic", mind="default", now=NOW, mode=mode)] == ["mem_z"]
