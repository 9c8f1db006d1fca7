"""The sketch's projection file beside a semantic table (synapse_nb/store/index/sketch.py), read from a folder an
agent's shell can write (review 58): one with the right header and size was used as it was, NaNs included, and at
``ann_threshold`` rows or more the dense channel then found nothing, silently; ``index check --repair`` kept it. Now
a projection that :func:`make_projection` cannot make is made again from the table, and a person's repair removes
every projection file (made again on the next search)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_recall_semantic import GROUPS, OPEN, Fake
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.store import embedders
from synapse_nb.store.embedders import register_embedder
from synapse_nb.store.index import sketch
from synapse_nb.store.index.dense import DenseIndex, DenseRow


def _bad(good: np.ndarray) -> dict[str, np.ndarray]:
    """Projections of the right shape that no table gives."""
    nan = np.full_like(good, np.nan)
    column = good.copy()
    column[:, 3] = 0
    same = np.repeat(good[:, :1], good.shape[1], axis=1)
    big = good * 2
    half = good.copy()
    half[0, 0] += 0.5
    return {"nan": nan, "inf": np.where(good > 0, np.inf, good), "zeros": np.zeros_like(good), "zero column": column,
            "one direction": same, "over 127": big, "not integers": half}


@pytest.mark.parametrize("what", ["nan", "inf", "zeros", "zero column", "one direction", "over 127", "not integers"])
def test_a_projection_no_table_gives_is_made_again(tmp_path: Path, what: str) -> None:
    rng = np.random.default_rng(1)
    words = [w for g in GROUPS for w in g] + [f"w{i}" for i in range(40)]
    rows = [DenseRow(f"r{i:04d}", "note", "m", " ".join(rng.choice(words, 6)), str(i)) for i in range(400)]
    index = DenseIndex(tmp_path / "ix", Fake(), ann_threshold=100)
    index.rebuild(rows)
    q = embedders.embed_quantized(Fake(), ["automobile dog money"], query=True)[0]
    want, _ = index.search(q, mind="m", now="2030", k=10)
    path = next((tmp_path / "ix").glob("semantic_*.proj"))
    raw = path.read_bytes()
    head = sketch._HEAD.size
    good = np.frombuffer(raw, "<f4", offset=head).reshape(Fake.dimension, -1)
    assert sketch.usable(good) and len(want) == 10
    path.write_bytes(raw[:head] + _bad(good)[what].astype("<f4").tobytes())  # the agent's shell
    again = DenseIndex(tmp_path / "ix", Fake(), ann_threshold=100)  # the next process reads the file
    with np.errstate(all="raise"):  # no NaN reaches a sketch (review 58: a RuntimeWarning was all that was said)
        got, _ = again.search(q, mind="m", now="2030", k=10)
    assert got == want
    assert path.read_bytes() == raw  # made again from the table (the same one) and written back


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    register_embedder("fake", Fake)


def _sketched(project: Path) -> syn.Vault:
    """The vault, its semantic table searched through the sketch from 2 rows (as at 50,000)."""
    v = syn.open_vault(project)
    v.recall("load the table")
    assert v.index.dense is not None and v.index.dense.has_ann()
    return v


def test_a_persons_repair_removes_every_projection(tmp_path: Path, fake: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DenseIndex.__init__, "__kwdefaults__", {"ann_threshold": 2})
    project = tmp_path / "project"
    project.mkdir()
    v = syn.open_vault(project)
    for k, t in {"car": "Ann bought a sedan last week", "pets": "Bob walks his puppy every morning",
                 "misc": "Ann likes green tea"}.items():
        v.remember("project", f"k_{k}", t)
    v.settings.set("recall_embedder", "fake")
    v.settings.set("recall_semantic", 0.5)
    v.recall("warm up")
    v.close()
    v = _sketched(project)
    assert "sedan" in v.recall("automobile purchase", bars=OPEN).items[0].line
    v.close()
    index = project / ".synapse" / "index"
    made = sorted(index.glob("semantic_*.proj"))
    assert len(made) == 1
    (index / "semantic_0000.proj").write_bytes(b"another table's")  # any projection file goes
    res = CliRunner().invoke(app, ["--vault", str(project), "index", "check", "--repair"])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    assert sorted(index.glob("*.proj")) == []
    v = _sketched(project)
    assert "sedan" in v.recall("automobile purchase", bars=OPEN).items[0].line  # made again by the search
    assert sorted(index.glob("semantic_*.proj")) == made
    v.close()


def test_a_fifo_in_the_projections_place_is_no_projection(tmp_path: Path) -> None:
    """Review 85 F4: the projection file was read with ``read_bytes()``, which waits on a FIFO for a writer (a search
    hung) and reads /dev/zero until memory runs out. Here a FIFO's writer offers a projection of the right header
    and size that no table gives (the table's, columns reversed): it is never read, the table's own projection is
    made and written in the FIFO's place."""
    import os
    import stat
    import threading

    rng = np.random.default_rng(2)
    vecs = rng.integers(-127, 128, size=(300, 16)).astype(np.float32)
    want = sketch.make_projection(vecs)
    forged = np.ascontiguousarray(want[:, ::-1])
    assert sketch.usable(forged) and not np.array_equal(forged, want)
    path = tmp_path / "semantic_t.proj"
    os.mkfifo(path)
    stop = threading.Event()

    def offer() -> None:  # a writer that waits for a reader, without ever blocking itself
        while not stop.is_set():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader yet (ENXIO), or the FIFO is gone
                stop.wait(0.005)
                continue
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, sketch._HEAD.pack(sketch._MAGIC, 16, 16) + forged.astype("<f4").tobytes())
            except OSError:  # the reader went away at once
                pass
            finally:
                os.close(fd)
            return

    writer = threading.Thread(target=offer, daemon=True)
    writer.start()
    try:
        got = sketch.projection(path, vecs)
    finally:
        stop.set()
        writer.join()
    assert np.array_equal(got, want)
    assert stat.S_ISREG(os.lstat(path).st_mode)  # the table's own, written in its place
    assert np.array_equal(sketch.projection(path, vecs), want)
