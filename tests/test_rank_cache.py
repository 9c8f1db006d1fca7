"""Recall's structure arrays on disk (recall/rankfile.py, schema v5's rank_log): a cache that never changes an answer.

Every test compares against the arrays built from the rows (no file), on a vault above ``rankfile.MIN_ROWS``
with threads, actors and questions, so the structure step reads every array the file holds.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.recall import rankfile
from synapse_nb.store.sqlite.queries import RecallQueries
from synapse_nb.store.sqlite.ranking import CACHE_DIR
from synapse_nb.transfer import EXPORT_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["deploy", "kafka", "latency", "retry", "cache", "redis", "billing", "invoice", "auth", "token", "migration",
         "schema", "pytest", "docker", "release", "index", "search", "notebook", "pandas", "worker", "queue", "alert",
         "timeout", "backup", "restore"]
FILLER = ["the", "we", "our", "this", "that", "when", "before", "after", "with", "for", "to", "of", "in", "and", "or",
          "but", "always", "never", "check", "keep"]
QUERIES = ["deploy kafka latency", "who asked about billing invoices?", "redis cache timeout retry",
           "speaker3 said what about backup", "release notes for the docker worker", "what is the weather in paris"]
N = 700


def _lines(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    ts = "2026-01-01T00:00:00.000000Z"
    out = [json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA})]

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) if rng.random() < 0.35 else rng.choice(FILLER) for _ in range(k))

    for i in range(n):
        common = {"mind": "default", "created_at": ts, "updated_at": ts, "source": "user"}
        if i % 3 == 0:
            doc = {**common, "kind": "episode", "id": f"epi_{i:012x}", "task_key": f"task_{i % 40}",
                   "status": "success",
                   "outcome": text(12) + ("?" if rng.random() < 0.3 else ""), "refs": [], "duration_s": None,
                   "thread": f"session_{i // 30}", "seq": (i // 3) % 10, "actor": f"speaker{rng.randrange(6)}"}
        else:
            doc = {**common, "kind": "memory", "id": f"mem_{i:012x}", "category": "knowledge", "key": f"k_{i}",
                   "content": text(rng.randint(8, 30)), "tags": [rng.choice(WORDS)], "priority": 2, "verified": 1,
                   "confidence": 1.0, "expires_at": "2030-01-01T00:00:00.000000Z" if i % 50 == 1 else None}
        out.append(json.dumps(doc, sort_keys=True))
    return out


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    v = syn.open_vault(p)
    v.import_jsonl(iter(_lines(N)), trust=True)  # user-made records, as written
    v.close()
    return p


def _files(project: Path) -> list[Path]:
    return sorted((project / ".synapse" / CACHE_DIR).glob("rank-*.bin"))


def _answers(project: Path, **kw: Any) -> list[Any]:
    """Every query's text, items and explain rows, from a new handle (a new process's caches)."""
    v = syn.open_vault(project, **kw)
    try:
        out = []
        for q in QUERIES:
            r = v.recall(q)
            out.append([r.text, [(i.kind, i.id, i.score) for i in r.items], r.explain().to_dicts()])
        return out
    finally:
        v.close()


def _reference(project: Path, tmp_path: Path) -> list[Any]:
    """The answers from arrays built from the rows: a copy of the vault without its cache folder."""
    import shutil

    ref = tmp_path / f"reference{len(list(tmp_path.glob('reference*')))}"
    shutil.copytree(project, ref, ignore=shutil.ignore_patterns(CACHE_DIR))
    v = syn.open_vault(ref, readonly=True)  # read-only: it writes no file of its own either
    try:
        return [[r.text, [(i.kind, i.id, i.score) for i in r.items], r.explain().to_dicts()]
                for r in (v.recall(q) for q in QUERIES)]
    finally:
        v.close()
        assert not (ref / ".synapse" / CACHE_DIR).exists()


def test_answers_are_identical_cold_warm_corrupted_truncated_and_deleted(project: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    want = _reference(project, tmp_path)
    assert _files(project) == []
    assert _answers(project) == want  # cold: built from the rows, then written
    (f,) = _files(project)
    written = f.read_bytes()
    assert written.startswith(rankfile.MAGIC)
    full_reads: list[str] = []
    rank_rows = RecallQueries.rank_rows

    def spy(self: Any, mind: str, ids: Any = None, threads: Any = None) -> Any:
        if ids is None and threads is None:
            full_reads.append(mind)
        return rank_rows(self, mind, ids=ids, threads=threads)
    monkeypatch.setattr(RecallQueries, "rank_rows", spy)
    assert _answers(project) == want  # warm: read from the file
    assert full_reads == [] and f.read_bytes() == written  # no row read, and a file that checked out stays
    monkeypatch.undo()
    blob = bytearray(written)
    for at in (len(blob) // 2, len(blob) - 1, 40):  # payload, last byte, header: each a file that fails its checksum
        bad = bytearray(blob)
        bad[at] ^= 0xFF
        f.write_bytes(bytes(bad))
        assert rankfile.load(f, _uid(project), "default") is None
        assert _answers(project) == want
        assert f.read_bytes() == written  # rebuilt: the same bytes again
    for cut in (0, 10, len(blob) // 3):
        f.write_bytes(written[:cut])
        assert _answers(project) == want and f.read_bytes() == written
    f.unlink()
    assert _answers(project) == want and f.read_bytes() == written


def _uid(project: Path) -> str:
    v = syn.open_vault(project)
    try:
        state = v._store.recall.rank_state()
        assert state is not None
        return state.uid
    finally:
        v.close()


def test_a_write_moves_the_generation_and_the_next_process_patches_the_file(project: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _answers(project)
    (f,) = _files(project)
    gen0 = rankfile.load(f, _uid(project), "default").gen  # type: ignore[union-attr]
    w = syn.open_vault(project)
    w.remember("knowledge", "kafka_new", "deploy kafka latency is tuned with linger.ms now")
    w.episodes.log("task_new", status="success", outcome="who retried the redis cache timeout?", thread="session_2",
                   seq=4, actor="speaker1")
    state = w._store.recall.rank_state()
    w.close()
    assert state is not None and state.gen > gen0
    reads: list[Any] = []
    real = syn.open_vault  # a new handle whose full-row reads are counted

    def counting(*a: Any, **kw: Any) -> syn.Vault:
        v = real(*a, **kw)
        rank_rows = v._store.recall.rank_rows

        def spy(mind: str, ids: Any = None, threads: Any = None) -> Any:
            reads.append((ids, threads))
            return rank_rows(mind, ids=ids, threads=threads)
        monkeypatch.setattr(v._store.recall, "rank_rows", spy)
        return v

    monkeypatch.setattr(syn, "open_vault", counting)
    got = _answers(project)
    monkeypatch.setattr(syn, "open_vault", real)
    assert reads and all(ids is not None for ids, _ in reads)  # patched with the logged ids, never every row
    assert any("mem_" in i for ids, _ in reads for i in ids) and ["session_2"] in [t for _, t in reads]
    assert got == _reference(project, tmp_path)
    assert "kafka_new" in got[0][0]


def test_a_file_of_another_format_vault_or_history_is_rebuilt(project: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    want = _reference(project, tmp_path)
    _answers(project)
    (f,) = _files(project)
    uid = _uid(project)
    assert rankfile.load(f, uid, "default") is not None
    assert rankfile.load(f, "another-vault", "default") is None and rankfile.load(f, uid, "another-mind") is None
    monkeypatch.setattr(rankfile, "FORMAT", rankfile.FORMAT + 1)  # a layout bump: old files are no files
    assert rankfile.load(f, uid, "default") is None
    assert _answers(project) == want
    assert rankfile.load(f, uid, "default") is not None  # written again in the new format
    monkeypatch.undo()
    assert _answers(project) == want  # and back
    # another history: the log no longer names, at the file's generation, the id the file was written after
    stored = rankfile.load(f, uid, "default")
    assert stored is not None and stored.gen > 0
    v = syn.open_vault(project)
    v.remember("knowledge", "moved_on", "the vault moved on")
    with v._store.transaction() as c:
        c.execute("UPDATE rank_log SET rid = 'someone_else' WHERE gen = ?", (stored.gen,))
    v.close()
    assert _answers(project) == _reference(project, tmp_path)
    assert rankfile.load(f, uid, "default").gen > stored.gen  # type: ignore[union-attr]


def test_a_log_that_no_longer_reaches_back_means_a_fresh_read(project: Path) -> None:
    v = syn.open_vault(project)
    try:
        recall = v._store.recall
        for i in range(3):
            v.remember("knowledge", f"note_{i}", f"deploy note {i}")
        state = recall.rank_state()
        assert state is not None and state.gen >= 3 and state.first == 1
        assert recall.rank_changes(state.gen, state) == []
        assert "mem_" in "".join(recall.rank_changes(0, state) or [])
        assert recall.rank_changes(state.gen + 1, state) is None  # from the future: another history
        with v._store.transaction() as c:
            c.execute("DELETE FROM rank_log WHERE gen <= 2")
        pruned = recall.rank_state()
        assert pruned is not None and pruned.first == 3
        assert recall.rank_changes(0, pruned) is None and recall.rank_changes(2, pruned) is not None
    finally:
        v.close()


def test_a_read_only_vault_writes_no_file_and_reads_one_that_is_there(project: Path, tmp_path: Path) -> None:
    want = _reference(project, tmp_path)
    assert _answers(project, readonly=True) == want and _files(project) == []
    env = {**os.environ, "SYNAPSE_READONLY": "1", "PYTHONPATH": str(ROOT)}
    env.pop("SYNAPSE_HOME", None)
    res = subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", str(project), "recall", QUERIES[0]],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip("\n") == want[0][0] and _files(project) == []
    _answers(project)  # a writable handle leaves the file
    (f,) = _files(project)
    before = f.stat().st_mtime_ns
    assert _answers(project, readonly=True) == want and f.stat().st_mtime_ns == before


def test_two_processes_share_the_file_and_see_each_others_writes(project: Path, tmp_path: Path) -> None:
    """A warm handle here, a writer in another process: the next recall here patches (the log names the ids)."""
    v = syn.open_vault(project)
    try:
        first = v.recall("billing invoice retries")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        code = ("import synapse_nb as syn, sys; v = syn.open_vault(sys.argv[1]); "
                "v.remember('knowledge', 'billing_retry_rule', 'billing invoice retries wait one hour'); v.close()")
        subprocess.run([sys.executable, "-c", code, str(project)], check=True, env=env, timeout=120)
        calls: list[Any] = []
        rank_rows = v._store.recall.rank_rows
        v._store.recall.rank_rows = lambda mind, ids=None, threads=None: (  # type: ignore[method-assign]
            calls.append(ids) or rank_rows(mind, ids=ids, threads=threads))
        after = v.recall("billing invoice retries")
        assert calls and all(ids is not None for ids in calls)
        assert "billing_retry_rule" in after.text and "billing_retry_rule" not in first.text
    finally:
        v.close()
    got = _answers(project)
    assert got == _reference(project, tmp_path)


def test_the_files_ids_are_looked_up_at_once_as_one_at_a_time(project: Path) -> None:
    """``Positions.many`` (the dense list's people reserve looks up thousands of ids a recall): one binary search
    in C over the file's id bytes gives what ``get`` gives for each, and -1 where it gives None."""
    from synapse_nb.recall.threads import Positions

    syn.open_vault(project).recall("deploy kafka")  # writes the file
    (f,) = _files(project)
    stored = rankfile.load(f, _uid(project), "default")
    assert stored is not None
    pos = stored.threads.pos
    assert isinstance(pos, rankfile._Positions)
    ids = list(stored.threads.ids)
    asked = ids[::7] + ids[:3] + ["", "mem_", "zzz", "mem_" + "f" * 40, "épi", "\ud800", "mem\x00", ids[0][:-1]]
    assert pos.many(asked).tolist() == [pos.get(i, -1) for i in asked] == Positions(ids).many(asked).tolist()
    assert pos.many(ids[::7]).tolist() == list(range(0, len(ids), 7)) and pos.many([]).tolist() == []
