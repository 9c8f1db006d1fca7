"""The rank file on disk is a cache an agent can rewrite with a checksum that matches (review 56): recall neither
hides a live record, nor gives an expired one, nor fails on what such a file holds."""

from __future__ import annotations

import json
import struct
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
