"""The rank file on disk is a cache an agent can rewrite with a checksum that matches (review 56): recall neither
hides a live record, nor gives an expired one, nor fails on what such a file holds."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import synapse_nb as syn
from synapse_nb.recall import rankfile
from synapse_nb.store.sqlite.ranking import CACHE_DIR
from synapse_nb.transfer import EXPORT_SCHEMA

HEAD = struct.Struct("<8sIIQI4x")
RULE, GONE = "mem_00000000rule", "mem_00000000gone"
Q = "how do we deploy production with migrations?"


def _lines() -> list[str]:
    ts = "2026-01-01T00:00:00.000000Z"
    out = [json.dumps({"format": "synapse_nb-export", "schema": EXPORT_SCHEMA})]
    common = {"mind": "default", "created_at": ts, "updated_at": ts, "source": "user", "category": "knowledge",
              "priority": 2, "verified": 1, "confidence": 1.0, "kind": "memory", "tags": []}
    for i in range(600):
        out.append(json.dumps({**common, "id": f"mem_{i:012x}", "key": f"k_{i}", "expires_at": None,
                               "content": f"note {i} about lunch and the office coffee machine number {i % 7}"}))
    out.append(json.dumps({**common, "id": RULE, "key": "prod_deploy", "expires_at": None, "category": "procedure",
                           "content": "To deploy production always run the database migrations first"}))
    out.append(json.dumps({**common, "id": GONE, "key": "deploy_freeze", "category": "context",
                           "expires_at": "2001-01-01T00:00:00.000000Z",
                           "content": "Deploy freeze lifted: production deploys skip the migrations review"}))
    return out


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    v = syn.open_vault(p)
    v.import_jsonl(iter(_lines()), trust=True)
    assert [i.id for i in v.recall(Q).items][:1] == [RULE]  # and the file is written
    v.close()
    return p


def _file(project: Path) -> Path:
    (f,) = sorted((project / ".synapse" / CACHE_DIR).glob("rank-*.bin"))
    return f


def _edit(f: Path, change: Any) -> None:
    """What an agent with a shell does (review 56's rankedit.py): parse, change, write back with a fresh CRC-32."""
    b = f.read_bytes()
    magic, fmt, hlen, _, _ = HEAD.unpack_from(b, 0)
    head = json.loads(b[HEAD.size:HEAD.size + hlen])
    start = HEAD.size + hlen
    arrays = {n: np.frombuffer(b, np.dtype(dt), cnt, start + off).copy()
              for n, (dt, cnt, off) in head["arrays"].items()}
    change(head, arrays)
    layout, off = {}, 0
    for n, a in arrays.items():
        layout[n] = [a.dtype.str, len(a), off]
        off += -(-a.nbytes // 64) * 64
    h = json.dumps({**head, "arrays": layout}, ensure_ascii=True, separators=(",", ":")).encode()
    h += b" " * (-(HEAD.size + len(h)) % 64)
    payload = bytearray(off)
    for n, a in arrays.items():
        payload[layout[n][2]:layout[n][2] + a.nbytes] = a.tobytes()
    f.write_bytes(HEAD.pack(magic, fmt, len(h), len(payload), zlib.crc32(payload, zlib.crc32(h))) + h + payload)


def _uid(f: Path) -> str:
    b = f.read_bytes()
    return str(json.loads(b[HEAD.size:HEAD.size + HEAD.unpack_from(b)[2]])["uid"])


def _recall(project: Path) -> list[str]:
    v = syn.open_vault(project)  # a new handle: a new process's caches, which read the file
    try:
        return [i.id for i in v.recall(Q).items]
    finally:
        v.close()


def test_a_past_expiry_added_to_the_file_does_not_hide_a_live_record(project: Path) -> None:
    f = _file(project)
    _edit(f, lambda h, a: h.update(expiry=[*h["expiry"], [RULE, "2001-01-01T00:00:00.000000Z"]]))
    assert rankfile.load(f, _uid(f), "default") is not None  # the checksum matches: the file is read
    assert RULE in _recall(project)


def test_an_expiry_removed_from_the_file_does_not_bring_an_expired_record_back(project: Path) -> None:
    assert GONE not in _recall(project)
    f = _file(project)
    _edit(f, lambda h, a: h.update(expiry=[e for e in h["expiry"] if e[0] != GONE]))
    assert GONE not in _recall(project)


@pytest.mark.parametrize("field", ["prev1", "next1", "head", "tail", "thread", "actor", "kind", "doc_order"])
def test_positions_and_codes_out_of_range_are_no_file_not_a_crash(project: Path, field: str) -> None:
    before = _recall(project)
    f = _file(project)

    def spoil(h: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        a[field][:] = 127 if a[field].dtype.itemsize == 1 else 2**31 - 1

    _edit(f, spoil)
    uid = _uid(f)
    assert rankfile.load(f, uid, "default") is None
    assert _recall(project) == before


def test_unsorted_ids_and_bad_flags_are_no_file(project: Path) -> None:
    f = _file(project)
    uid = _uid(f)
    assert rankfile.load(f, uid, "default") is not None
    _edit(f, lambda h, a: a["ids"].__setitem__(slice(0, 2), a["ids"][1::-1].copy()))
    assert rankfile.load(f, uid, "default") is None
    f.unlink()
    _recall(project)
    _edit(f, lambda h, a: a["agent"].view(np.uint8).__setitem__(0, 7))
    assert rankfile.load(f, uid, "default") is None


@pytest.mark.parametrize("how", ["rebuild", "repair"])
def test_a_persons_rebuild_and_repair_remove_the_rank_files(project: Path, how: str) -> None:
    f = _file(project)
    v = syn.open_vault(project)
    try:
        if how == "rebuild":
            v.index.rebuild()
        else:
            v.index.rebuild()
            _recall(project)  # the file is written again
            assert f.exists()
            v.index.check(repair=True)
    finally:
        v.close()
    assert not f.exists()


# -- review 58: rewrites that check out are refused by the digest the database keeps (schema v10's rank_files) ----

def _digest(project: Path) -> str | None:
    con = sqlite3.connect(project / ".synapse" / "synapse.db")
    try:
        row = con.execute("SELECT digest FROM rank_files WHERE mind = 'default'").fetchone()
        return None if row is None else str(row[0])
    finally:
        con.close()


def _full_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the reads of a whole mind's ranking rows (a build afresh, not a patch)."""
    from synapse_nb.store.sqlite.ranking import RankingQueries

    calls: list[str] = []
    rank_rows = RankingQueries.rank_rows

    def spy(self: Any, mind: str, ids: Any = None, threads: Any = None) -> Any:
        if ids is None and threads is None:
            calls.append(mind)
        return rank_rows(self, mind, ids=ids, threads=threads)
    monkeypatch.setattr(RankingQueries, "rank_rows", spy)
    return calls


def test_the_files_digest_is_kept_and_an_honest_file_is_used(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _file(project)
    assert _digest(project) == hashlib.sha256(f.read_bytes()).hexdigest()
    reads = _full_reads(monkeypatch)
    assert RULE in _recall(project) and reads == []  # warm from the file: no row read


def test_attack_a_a_length_rewritten_with_its_crc_is_no_file(project: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    f = _file(project)

    def bury(h: dict[str, Any], a: dict[str, np.ndarray]) -> None:
        a["length"][int(np.flatnonzero(a["ids"] == RULE.encode())[0])] = 1e7  # finite: passes _valid

    _edit(f, bury)
    assert rankfile.load(f, _uid(f), "default") is not None  # CRC and content check out
    reads = _full_reads(monkeypatch)
    assert _recall(project)[:1] == [RULE] and reads == ["default"]  # rebuilt from the rows
    assert _digest(project) == hashlib.sha256(f.read_bytes()).hexdigest()  # and written again, honest
    assert RULE in _recall(project) and reads == ["default"]


def test_attack_b_a_file_saved_at_the_stores_state_without_the_rule_is_no_file(project: Path) -> None:
    from synapse_nb.recall.threads import ThreadIndex

    f = _file(project)
    v = syn.open_vault(project)
    try:
        recall = v._store.recall
        state = recall.rank_state()
        assert state is not None
        rows = [r for r in recall.rank_rows("default") if r.id != RULE]
        assert rankfile.save(f, state, "default", ThreadIndex(rows)) is not None  # what the agent ran
    finally:
        v.close()
    assert rankfile.load(f, state.uid, "default") is not None
    assert RULE in _recall(project)
    # the person's later writes do not bring it back either (patches re-add only the changed ids)
    v = syn.open_vault(project)
    try:
        v.remember("knowledge", "wifi_note", "the office wifi password rotates monthly")
    finally:
        v.close()
    assert RULE in _recall(project)


def test_a_digest_that_could_not_be_kept_means_no_file_and_no_wait(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.store.sqlite import db

    # a busy timeout far longer than the recall's own work, however busy the machine (against the usual 10 s, a
    # bound of 5 s on an in-process recall of a new handle was the machine's as much as the lock's)
    monkeypatch.setattr(db, "BUSY_MS", 60_000)
    f = _file(project)
    f.unlink()
    old = _digest(project)
    lock = sqlite3.connect(project / ".synapse" / "synapse.db", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        t0 = time.monotonic()
        assert RULE in _recall(project)
        assert time.monotonic() - t0 < 30  # the busy timeout is 60 s: it was not waited for
        assert not f.exists() and [p.name for p in f.parent.iterdir()] == []  # no file, no temporary left
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert _digest(project) == old  # kept as it was (the file it names is gone: a build from the rows)
    _recall(project)  # the lock free: file and digest written
    assert f.exists() and _digest(project) == hashlib.sha256(f.read_bytes()).hexdigest()


def test_a_file_whose_digest_is_not_the_kept_one_is_rebuilt(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file renamed into place after its digest could not be kept (or any other) is not trusted."""
    f = _file(project)
    honest = f.read_bytes()
    con = sqlite3.connect(project / ".synapse" / "synapse.db")
    with con:
        con.execute("UPDATE rank_files SET digest = ? WHERE mind = 'default'", ("0" * 64,))
    con.close()
    reads = _full_reads(monkeypatch)
    assert RULE in _recall(project) and reads == ["default"]
    assert f.read_bytes() == honest and _digest(project) == hashlib.sha256(honest).hexdigest()


def test_a_read_only_vault_uses_a_file_only_with_its_digest(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _file(project)
    reads = _full_reads(monkeypatch)

    def ro() -> list[str]:
        v = syn.open_vault(project, readonly=True)
        try:
            return [i.id for i in v.recall(Q).items]
        finally:
            v.close()

    assert RULE in ro() and reads == []  # verified, used
    _edit(f, lambda h, a: a["length"].__setitem__(int(np.flatnonzero(a["ids"] == RULE.encode())[0]), 1e7))
    edited = f.read_bytes()
    assert RULE in ro() and reads == ["default"] and f.read_bytes() == edited  # refused, and nothing written


def test_a_v9_vaults_file_is_rebuilt_once_after_the_migration(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import downgrade

    con = sqlite3.connect(project / ".synapse" / "synapse.db")
    downgrade(con, 9)  # as the previous synapse_nb left it: a file and no digest table
    con.close()
    reads = _full_reads(monkeypatch)
    assert RULE in _recall(project) and reads == ["default"]  # migrated to v10; the file had no digest: rebuilt
    assert _digest(project) == hashlib.sha256(_file(project).read_bytes()).hexdigest()
    assert RULE in _recall(project) and reads == ["default"]  # then used


def test_keeping_a_digest_moves_no_data_version_of_its_own_process(project: Path) -> None:
    """The recall's caches are keyed by the store's data version: the digest write leaves this handle's as it was
    (another process sees SQLite's data_version move once, as after any commit)."""
    _file(project).unlink()
    v = syn.open_vault(project)
    try:
        store = v._store
        before = store.data_version()
        v.recall(Q)  # built from the rows, then the file and its digest written
        assert _file(project).exists() and _digest(project) is not None
        assert store.data_version() == before
        assert not store.recall.keep_rank_digest("default", 1, "x") or store.data_version() == before
    finally:
        v.close()


def test_a_reader_between_a_digests_write_and_its_files_rename_uses_the_file_before(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest of a new file is kept just before the file is renamed into place: a cold reader in between read the
    old file with the new digest and rebuilt from the rows (review 61: the slowest recall of a run under four
    writers, 753 ms). The digest before it stays usable (an honest file the package wrote, patched forward by the
    log); a file of neither digest is still no file."""
    f = _file(project)
    old = f.read_bytes()
    con = sqlite3.connect(project / ".synapse" / "synapse.db")
    try:  # the next file's digest kept, its rename not yet done
        con.execute("UPDATE rank_files SET prev = digest, digest = ? WHERE mind = 'default'", ("ab" * 32,))
        con.commit()
    finally:
        con.close()
    assert f.read_bytes() == old
    reads = _full_reads(monkeypatch)
    assert RULE in _recall(project) and reads == []  # the file before: used, no row read
    f.write_bytes(old[:-1] + bytes([old[-1] ^ 1]))  # neither digest
    assert RULE in _recall(project) and reads == ["default"]


def test_keeping_a_digest_keeps_the_one_before(project: Path) -> None:
    first = _digest(project)
    v = syn.open_vault(project)
    try:
        assert v._store.recall.keep_rank_digest("default", 99, "cd" * 32)
        assert v._store.recall.rank_digest("default") == ("cd" * 32, first)
    finally:
        v.close()
