"""The retrieval index's public search knobs (has_ann, exact search) and its pure helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapse_nb.errors import IndexError_
from synapse_nb.store.index import DriftReport, Hit, IndexRow, RetrievalIndex
from synapse_nb.store.index.rows import drift
from synapse_nb.store.index.search import fuse, where_clause

NOW = "2026-06-01T00:00:00Z"


def rows(n: int) -> list[IndexRow]:
    return [IndexRow(f"mem_{i:04d}", "memory" if i % 3 else "note", "default",
                     f"note {i} about subject{i % 40} and thing{i % 7} alembic" if i % 50 == 0 else
                     f"note {i} about subject{i % 40} and thing{i % 7}", str(i), "2026-01-01T00:00:00Z")
            for i in range(n)]


def brute_force(index: RetrievalIndex, data: list[IndexRow], query: str, k: int) -> list[str]:
    vecs = index.embedder.embed([r.text for r in data])
    q = index.embedder.embed([query])[0]
    scores = vecs @ q
    order = sorted(range(len(data)), key=lambda i: (-float(scores[i]), data[i].id))
    return [data[i].id for i in order[:k]]


def test_small_table_is_exact_and_says_so(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "ix")
    data = rows(120)
    index.rebuild(data)
    assert not index.has_ann()
    for q in ("subject3 thing4", "alembic note", "note 17"):
        plain = index.search(q, mind="default", now=NOW, k=10, mode="vector")
        assert plain == index.search(q, mind="default", now=NOW, k=10, mode="vector", exact=True)
        assert [h.id for h in plain] == brute_force(index, data, q, 10)


def test_exact_search_bypasses_the_ann_index(tmp_path: Path) -> None:
    index = RetrievalIndex(tmp_path / "ix", ann_threshold=300)
    data = rows(400)
    index.rebuild(data)
    assert index.has_ann()
    for q in ("subject3 thing4", "alembic note", "note 17 subject17"):
        exact = index.search(q, mind="default", now=NOW, k=10, mode="vector", exact=True)
        ids = [h.id for h in exact]
        truth = brute_force(index, data, q, 10)
        assert ids == truth  # LanceDB's flat scan, not the IVF partitions
        assert [(-h.score, h.id) for h in exact] == sorted((-h.score, h.id) for h in exact)
        hybrid = index.search(q, mind="default", now=NOW, k=10, mode="hybrid", exact=True)
        assert {h.id for h in hybrid} & set(ids)
    with pytest.raises(IndexError_, match="no retrieval index"):
        RetrievalIndex(tmp_path / "none").has_ann()


def test_drift_and_fusion_helpers() -> None:
    assert drift({"a": "1"}, {"a": "1"}) == DriftReport()
    assert drift({"a": "1", "b": "2"}, {"a": "1", "b": "2"}, duplicated=["b"]).stale == ("b",)
    report = drift({"a": "1", "b": "2", "d": "4"}, {"a": "x", "c": "3", "d": "4"})
    assert (report.missing, report.stale, report.extra, report.ok) == (("b",), ("a",), ("c",), False)
    fused = fuse([[Hit("b", "memory", 0.9), Hit("a", "memory", 0.5)], [Hit("a", "memory", 7.0), Hit("c", "note", 1.0)]])
    assert [h.id for h in fused] == ["a", "b", "c"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61) and fused[1].score == pytest.approx(1 / 61)
    assert fuse([[Hit("b", "memory", 1.0)], [Hit("a", "memory", 1.0)]])[0].id == "a"  # ties by id
    clause = where_clause("it's", ["note", "memory", "note"], NOW)
    assert clause == ("mind = 'it''s' AND (expires_at IS NULL OR expires_at > '2026-06-01T00:00:00Z') "
                      "AND kind IN ('memory', 'note')")
