"""The store seam's contract (``synapse_nb/store/base.py``), checked against every backend.

Written once, for every implementation of :class:`~synapse_nb.store.base.VaultStore` (SQLite today; the PostgreSQL
team vault adds itself to ``BACKENDS``): transactions and nesting, snapshots, stamps, ordering, change
notification, typed records, the agent's view of lessons, and the export format.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import synapse_nb.store.base as base
from synapse_nb.errors import ConflictError, StoreError
from synapse_nb.models import Checkpoint, Lesson, Memory, Note
from synapse_nb.store.records import EXPORT_FIELDS, Candidate, MemoryFilter, View
from synapse_nb.store.sqlite import SqliteStore

T0 = "2026-01-01T12:00:00.000000Z"
T1 = "2026-01-02T12:00:00.000000Z"
T2 = "2026-01-03T12:00:00.000000Z"

_PG_PROJECTS: dict[Path, str] = {}


def _pg_store(folder: Path, request: pytest.FixtureRequest) -> Any:
    """A team vault store on the session's real PostgreSQL: one fresh project per test folder."""
    from synapse_nb.store.postgres import PgStore

    admin = request.getfixturevalue("pg_admin_url")
    if folder not in _PG_PROJECTS:
        _PG_PROJECTS[folder] = request.getfixturevalue("new_team_project")("contract")
    return PgStore(admin, _PG_PROJECTS[folder], folder=folder)


#: name -> open a store in a folder (called again for the same folder: a second connection to the same vault)
BACKENDS: dict[str, Callable[[Path, pytest.FixtureRequest], Any]] = {
    "sqlite": lambda folder, request: SqliteStore(folder / "synapse.db"),
    "postgres": _pg_store,
}


@pytest.fixture(params=sorted(BACKENDS))
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    opened: list[Any] = []

    def open_one() -> Any:
        s = BACKENDS[request.param](tmp_path, request)
        opened.append(s)
        return s

    yield open_one
    for s in opened:
        s.close()


@pytest.fixture()
def store(opener: Callable[[], Any]) -> Any:
    return opener()


def _mem(i: int, *, mind: str = "default", ts: str = T0, **kw: Any) -> Memory:
    return Memory(id=f"mem_{i:012x}", mind=mind, created_at=ts, updated_at=ts, category="knowledge", key=f"fact_{i}",
                  content=kw.pop("content", f"fact number {i} about deploys"), **kw)


def test_sqlite_store_has_every_member_of_the_protocol(store: Any) -> None:
    """Every method and attribute the protocols name exists on the backend, with the same parameters."""
    protocols: dict[str, type] = {"": base.VaultStore}
    for attr, member in vars(base.VaultStore).items():  # the tables are read-only properties typed by protocol
        if isinstance(member, property):
            proto = getattr(base, str(member.fget.__annotations__.get("return")), None)
            if isinstance(proto, type) and proto.__module__ == base.__name__:
                protocols[attr] = proto
    assert len(protocols) == 14, sorted(protocols)  # the store and its 13 tables and query groups
    missing = []
    for attr, proto in protocols.items():
        target = getattr(store, attr) if attr else store
        members = {}
        for cls in reversed(proto.__mro__):  # a table protocol's own members and those of KindTable
            if cls.__module__ == base.__name__:
                members.update(vars(cls))
        for name, member in members.items():
            if name.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            if not hasattr(target, name):
                missing.append(f"{attr or 'store'}.{name}")
                continue
            if callable(member) and not isinstance(member, property):
                want = [p for p in inspect.signature(member).parameters if p != "self"]
                have = list(inspect.signature(getattr(target, name)).parameters)
                if [p for p in want if p not in have]:
                    missing.append(f"{attr or 'store'}.{name}{tuple(want)} has {tuple(have)}")
    assert not missing, missing


def test_transactions_nest_commit_and_roll_back(store: Any) -> None:
    view = View("default", T0)
    calls: list[str] = []
    with store.transaction():
        store.memories.insert(_mem(1))
        store.after_commit(lambda: calls.append("committed"))
        with store.transaction():  # joins the outer one
            store.memories.insert(_mem(2))
            assert store.in_transaction
        assert calls == []
    assert calls == ["committed"] and not store.in_transaction
    with pytest.raises(RuntimeError), store.transaction():
        store.memories.insert(_mem(3))
        store.on_rollback(lambda: calls.append("rolled back"))
        store.after_commit(lambda: calls.append("never"))
        raise RuntimeError("boom")
    assert calls == ["committed", "rolled back"]
    assert [m.id for m in store.memories.list(view)] == [_mem(2).id, _mem(1).id]


def test_snapshot_reads_one_committed_state_and_refuses_writes(opener: Callable[[], Any]) -> None:
    a, b = opener(), opener()
    view = View("default", T0)
    a.memories.insert(_mem(1))
    with a.snapshot():
        assert a.memories.count(view) == 1
        b.memories.insert(_mem(2))  # another connection commits meanwhile
        assert a.memories.count(view) == 1
        assert [c.id for c in a.recall.candidates("default")] == [_mem(1).id]
        with pytest.raises(StoreError, match="snapshot"), a.transaction():
            pass
    assert a.memories.count(view) == 2
    with a.transaction(), a.snapshot():  # inside a write transaction a snapshot joins it
        a.memories.insert(_mem(3))
        assert a.memories.count(view) == 3


def test_stamps_strictly_increase_across_connections_and_after_an_import(opener: Callable[[], Any]) -> None:
    """SQLite stamps the caller's clock; a team vault the server's (no client moves it: issue 29, D3). Both step
    1 µs past the last stamp when their clock is not later."""
    from datetime import UTC, datetime

    from synapse_nb._util import fmt_ts

    a, b = opener(), opener()
    server = getattr(a, "dialect", None) is not None and a.dialect.name == "postgresql"
    before = fmt_ts(datetime.now(UTC))
    with a.transaction():
        stamps = [a.stamp(T0) for _ in range(3)]
    assert stamps == sorted(set(stamps))
    assert stamps[0] == T0 if not server else stamps[0] >= before  # the server's clock, not the caller's T0
    with b.transaction():
        later = b.stamp(T0)  # another connection, the clock behind: still after every earlier stamp
    assert later > stamps[-1]
    with pytest.raises(RuntimeError), a.transaction():
        rolled_back = a.stamp(T2)
        raise RuntimeError
    if not server:
        assert a.stamp(T1) == T1  # a rolled-back stamp is forgotten
    else:
        assert later < rolled_back < a.stamp(T1)  # the server's clock went on; the caller's T1 is not used
    a.transfer.advance_clock(T2)
    assert a.stamp(T1) > T2


def test_every_listing_ends_its_order_in_the_id(store: Any) -> None:
    """Records the caller stamped alike still list in one order (default orders end in the id)."""
    view = View("default", T0)
    for i in (3, 1, 2):
        store.memories.insert(_mem(i, content="same words here"))
    ids = [_mem(i).id for i in (3, 2, 1)]
    assert [m.id for m in store.memories.list(view)] == ids
    assert [m.id for m in store.memories.search(view, "same words", limit=10)] == sorted(ids)
    items, total = store.memories.page(view, "", where=MemoryFilter(), sort="key", descending=False, offset=0,
                                       limit=2)
    assert total == 3 and [m.key for m in items] == ["fact_1", "fact_2"]
    assert [c.id for c in store.recall.candidates("default")] == sorted(ids)


def test_listeners_hear_committed_changes_once_sorted(store: Any) -> None:
    heard: list[list[tuple[str, str, bool]]] = []
    store.on_change(heard.append)
    with store.transaction():
        store.memories.insert(_mem(2))
        store.memories.insert(_mem(1))
        store.memories.update(_mem(2).id, updated_at=T1, content="changed")
    assert heard == [[("memory", _mem(1).id, False), ("memory", _mem(2).id, False)]]
    with pytest.raises(RuntimeError), store.transaction():
        store.memories.delete(_mem(1).id)
        raise RuntimeError
    assert len(heard) == 1
    store.memories.delete(_mem(1).id)
    assert heard[-1] == [("memory", _mem(1).id, True)]


def test_records_in_and_out_are_typed(store: Any) -> None:
    view = View("default", T0)
    m = _mem(1, tags=("deploy", "prod"), priority="high", verified=False, confidence=0.5, expires_at=T2)
    store.memories.insert(m)
    assert store.memories.get(view, m.id) == m
    assert store.memories.by_key("default", "knowledge", "fact_1") == m
    c = Checkpoint(id="ckp_000000000001", mind="default", created_at=T0, updated_at=T0, doing="refactor",
                   changed_files=("a.py",), branch="main", commit="f" * 40)
    store.checkpoints.insert(c)
    assert store.checkpoints.latest(view, "main") == c and store.checkpoints.latest(view, None) is None
    n = Note(id="note_000000000001", mind="default", created_at=T0, updated_at=T0, name="how_to", trigger="t",
             body="b")
    store.notes.insert(n)
    assert store.notes.by_name(view, "how_to") == n
    cands = store.recall.candidates("default")
    assert all(isinstance(x, Candidate) for x in cands) and {x.kind for x in cands} == {"memory", "checkpoint", "note"}
    assert store.table("memory").get(view, m.id) == m
    assert store.memories.get(View("other", T0), m.id) is None  # another mind reads nothing
    assert store.memories.mind_of(m.id) == "default" and store.memories.ids_from("default", "mem_", limit=5) == [m.id]


def test_get_many_reads_what_get_reads_in_one_statement(store: Any) -> None:
    """``get_many`` answers as :meth:`get` of each id would (same records, same view rules), keyed and ordered by
    id, whatever the number of ids or their order and repeats; what ``get`` would not return is absent."""
    view = View("default", T0)
    mems = [_mem(i, tags=("deploy",) if i % 2 else (), expires_at=T1 if i % 3 == 0 else None) for i in range(1, 8)]
    for m in mems:
        store.memories.insert(m)
    store.memories.insert(_mem(99, mind="other"))
    les = Lesson(id="les_000000000001", mind="default", created_at=T0, updated_at=T0, status="pending", summary="p")
    store.lessons.insert(les)
    ids = [m.id for m in reversed(mems)] + [mems[0].id, _mem(99).id, "mem_gone", ""]
    got = store.memories.get_many(view, ids)
    assert list(got) == sorted(m.id for m in mems) and got == {i: store.memories.get(view, i) for i in sorted(got)}
    assert store.memories.get_many(view, []) == {} and store.memories.get_many(View("other", T0), ids) == {
        _mem(99).id: store.memories.get(View("other", T0), _mem(99).id)}
    # the view's rules hold: the agent's view of lessons reads no pending lesson, the user's reads it
    assert store.lessons.get_many(View("default", T0, in_force_only=True), [les.id]) == {}
    assert store.table("lesson").get_many(view, [les.id]) == {les.id: store.lessons.get(view, les.id)}
    many = [_mem(i) for i in range(100, 1300)]  # more ids than one statement binds on SQLite
    with store.transaction():
        for m in many:
            store.memories.insert(m)
    assert list(store.memories.get_many(view, [m.id for m in many])) == [m.id for m in many]


def test_lessons_read_with_their_status_at_now_and_the_agents_view(store: Any) -> None:
    les = Lesson(id="les_000000000001", mind="default", created_at=T0, updated_at=T0, status="approved",
                 summary="s", approved_at=T0, expires_at=T1)
    pending = Lesson(id="les_000000000002", mind="default", created_at=T0, updated_at=T0, status="pending",
                     summary="p")
    store.lessons.insert(les)
    store.lessons.insert(pending)
    assert store.lessons.get(View("default", T0), les.id).status == "approved"
    assert store.lessons.get(View("default", T2), les.id).status == "expired"
    agent_now = View("default", T0, in_force_only=True)
    assert [x.id for x in store.lessons.list(agent_now)] == [les.id]
    assert store.lessons.get(agent_now, pending.id) is None
    assert store.lessons.list(View("default", T2, in_force_only=True)) == []
    assert [x.id for x in store.lessons.list(View("default", T2), status="expired")] == [les.id]
    assert store.lessons.status_counts("default", T2) == {"expired": 1, "pending": 1}
    # how many ran out in [after, now], as the SessionStart hook's notice counts them (stored expired or not yet)
    assert store.lessons.run_out("default", "", T0) == 0 and store.lessons.run_out("default", "", T2) == 1
    assert store.lessons.run_out("default", T2, T2) == 0 and store.lessons.run_out("other", "", T2) == 0
    store.lessons.expire("default", T2, T2)
    assert store.lessons.run_out("default", T1, T2) == 1


def test_export_documents_have_the_documented_fields_and_import_refuses_conflicts(store: Any) -> None:
    store.memories.insert(_mem(1, tags=("a",)))
    (doc,) = list(store.transfer.rows("memory"))
    assert sorted(doc) == sorted(EXPORT_FIELDS["memory"]) and doc["tags"] == ["a"]
    assert store.transfer.insert("memory", doc) is False  # identical: skipped
    with pytest.raises(ConflictError):
        store.transfer.insert("memory", doc | {"content": "other"})
    assert store.transfer.to_record("memory", doc) == _mem(1, tags=("a",))


def test_a_store_is_safe_to_share_between_threads(store: Any) -> None:
    view = View("default", T0)
    errors: list[BaseException] = []

    def write(start: int) -> None:
        try:
            for i in range(start, start + 20):
                with store.transaction():
                    store.memories.insert(_mem(i, ts=store.stamp(T0)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(k * 100,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and store.memories.count(view) == 80
    stamps = sorted(m.created_at for m in store.memories.list(view))
    assert len(set(stamps)) == 80  # strictly increasing: no two alike


# -- ranking (schema v3): what recall engine v2 asks of every backend ----------------------------------------
def _epi(i: int, outcome: str, *, mind: str = "default", thread: str | None = None, seq: int | None = None,
         actor: str | None = None) -> Any:
    from synapse_nb.models import Episode

    return Episode(id=f"epi_{i:012x}", mind=mind, created_at=T0, updated_at=T0, task_key="t", outcome=outcome,
                   thread=thread, seq=seq, actor=actor)


def _fts5_bm25(docs: dict[str, tuple[str, str]], words: list[str], w_body: float, w_context: float) -> dict[str, float]:
    """SQLite FTS5's bm25() (positive), as store/base.py states it, for words the porter stemmer leaves alone."""
    import math
    import re

    tok = {rid: (re.findall(r"[^\W_]+", b.lower()), re.findall(r"[^\W_]+", c.lower())) for rid, (b, c) in docs.items()}
    n = len(tok)
    avgdl = sum(len(b) + len(c) for b, c in tok.values()) / n
    out: dict[str, float] = {}
    for rid, (b, c) in tok.items():
        score, dl, hit = 0.0, len(b) + len(c), False
        for w in words:
            n_hit = sum(1 for bb, cc in tok.values() if w in bb or w in cc)
            idf = math.log((n - n_hit + 0.5) / (n_hit + 0.5))
            idf = idf if idf > 0 else 1e-6
            tf = w_body * b.count(w) + w_context * c.count(w)
            hit = hit or tf > 0
            score += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
        if hit:
            out[rid] = score
    return out


def test_ranking_documents_bm25_and_structure(store: Any) -> None:
    """BM25 exactly as FTS5 computes it (vault-wide N and average length), best first, ties by id, one mind;
    context = the two records before it in its thread; rank_rows in id order; next_seq."""
    talk = ["where is the lake", "the lake is north of the trout farm", "any trout there", "two trout today",
            "nothing about fish"]
    for i, text in enumerate(talk):
        store.episodes.insert(_epi(i, text, thread="s1", seq=i, actor="ann" if i % 2 == 0 else "bob"))
    store.episodes.insert(_epi(10, "lake lake lake", mind="other"))
    store.episodes.insert(_epi(11, "trout farm", thread="s2", seq=0))
    store.episodes.insert(_epi(12, "trout farm", thread="s2", seq=1))  # same text: a tie, broken by id
    bodies = {f"epi_{i:012x}": f"t {t} " for i, t in enumerate(talk)}
    order = [f"epi_{i:012x}" for i in range(len(talk))]
    docs = {rid: (body, " ".join(bodies[p] for p in order[max(0, k - 2):k]).strip()) for k, (rid, body) in
            enumerate(bodies.items())}
    docs |= {"epi_00000000000a": ("t lake lake lake ", ""), "epi_00000000000b": ("t trout farm ", ""),
             "epi_00000000000c": ("t trout farm ", "t trout farm")}
    want = _fts5_bm25(docs, ["lake", "trout"], 1.0, 0.2)
    hits = store.recall.bm25("default", ["lake", "trout"], depth=50)
    assert "epi_00000000000a" not in {h.id for h in hits}  # another mind
    assert [(-h.score, h.id) for h in hits] == sorted((-h.score, h.id) for h in hits)
    for h in hits:
        assert h.score == pytest.approx(want[h.id], rel=1e-9), h.id
    assert len(hits) == sum(1 for rid in want if rid != "epi_00000000000a")
    assert [h.id for h in store.recall.bm25("default", ["lake", "trout"], depth=2)] == [h.id for h in hits[:2]]
    assert store.recall.bm25("default", [], depth=5) == []
    rows = store.recall.rank_rows("default")
    assert [r.id for r in rows] == sorted(r.id for r in rows) and len(rows) == 7
    first = rows[0]
    assert (first.thread, first.seq, first.actor, first.question) == ("s1", 0, "ann", False)
    assert store.recall.rank_count("default") == (7, 8)
    assert store.episodes.next_seq("default", "s1") == 5 and store.episodes.next_seq("default", "new") == 0


def test_rank_rows_carry_each_memorys_expiry(store: Any) -> None:
    """RankRow.expires_at: a memory's expiry (expired or not; recall masks at its own "now"), None for a memory
    without one and for other kinds; only the mind's rows."""
    store.memories.insert(_mem(1, expires_at="2000-01-01T00:00:00.000000Z"))
    store.memories.insert(_mem(2, expires_at="2999-01-01T00:00:00.000000Z"))
    store.memories.insert(_mem(3))
    store.memories.insert(_mem(4, mind="other", expires_at="2999-01-01T00:00:00.000000Z"))
    store.episodes.insert(_epi(5, "a turn"))
    rows = {r.id: r for r in store.recall.rank_rows("default")}
    assert {i: r.expires_at for i, r in rows.items()} == {
        "mem_000000000001": "2000-01-01T00:00:00.000000Z", "mem_000000000002": "2999-01-01T00:00:00.000000Z",
        "mem_000000000003": None, "epi_000000000005": None}
    store.memories.update("mem_000000000002", updated_at=T1, expires_at=None)
    assert {r.id: r.expires_at for r in store.recall.rank_rows("default")}["mem_000000000002"] is None


def test_rank_rows_say_which_records_are_agents_unverified(store: Any) -> None:
    """RankRow.agent: an agent's record no person verified (recall finds and judges people's records as if those
    were not there), in the full read and a read of some ids alike; a person's verify clears it."""
    from dataclasses import replace

    from synapse_nb.models import Decision

    store.memories.insert(_mem(1, source="agent", verified=False))
    store.memories.insert(_mem(2, source="agent", verified=True))
    store.memories.insert(_mem(3))
    store.memories.insert(_mem(4, mind="other", source="agent", verified=False))
    store.episodes.insert(replace(_epi(5, "a turn", thread="s1", seq=0), source="agent"))
    store.episodes.insert(_epi(6, "a reply", thread="s1", seq=1))
    store.decisions.insert(Decision(id="dec_000000000007", mind="default", created_at=T0, updated_at=T0,
                                    decision="use helm", source="agent"))
    full = {r.id: r.agent for r in store.recall.rank_rows("default")}
    assert full == {"mem_000000000001": True, "mem_000000000002": False, "mem_000000000003": False,
                    "epi_000000000005": True, "epi_000000000006": False, "dec_000000000007": True}
    some = store.recall.rank_rows("default", ids=["mem_000000000001", "dec_000000000007", "epi_000000000006"])
    assert {r.id: r.agent for r in some} == {k: full[k] for k in ("mem_000000000001", "dec_000000000007",
                                                                   "epi_000000000005", "epi_000000000006")}
    store.memories.update("mem_000000000001", updated_at=T1, verified=True)
    assert not {r.id: r.agent for r in store.recall.rank_rows("default")}["mem_000000000001"]


def test_rank_rows_of_some_ids_and_threads(store: Any) -> None:
    """rank_rows(mind, ids=, threads=): the rows of those ids, of every record in their threads, and of those
    threads, exactly as the full read gives them; another mind's are not. changes_between answers a list or
    None (SQLite knows its own commits; a shared store defers to its change feed)."""
    for i, (thread, text) in enumerate([("s1", "a"), ("s1", "b"), ("s2", "c"), ("s2", "d"), (None, "e"),
                                        ("s3", "f")]):
        store.episodes.insert(_epi(i, text, thread=thread, seq=i))
    store.episodes.insert(_epi(9, "g", mind="other", thread="s1", seq=0))
    store.memories.insert(_mem(20, expires_at="2999-01-01T00:00:00.000000Z"))
    full = {r.id: r for r in store.recall.rank_rows("default")}
    got = store.recall.rank_rows("default", ids=["epi_000000000000", "mem_000000000014", "epi_000000000004"],
                                 threads=["s3"])
    assert [r.id for r in got] == ["epi_000000000000", "epi_000000000001", "epi_000000000004", "epi_000000000005",
                                   "mem_000000000014"]
    assert all(r == full[r.id] for r in got)
    assert store.recall.rank_rows("default", ids=[], threads=[]) == []
    v = store.data_version()
    assert store.changes_between(v, v) in ([], None)


def _mind_postings(p: Any, rows: list[Any]) -> tuple[list[str], list[int], list[int], int]:
    """(ids, tf_body, tf_context, n_vault) of the mind's documents, in id order, whether the backend names them by
    id or by RankRow.doc."""
    if p.docs is not None:
        by_doc = {r.doc: r.id for r in rows}
        got = sorted((by_doc[d], int(b), int(c)) for d, b, c in zip(p.docs, p.tf_body, p.tf_context, strict=True)
                     if d in by_doc)
    else:
        got = sorted(zip(p.ids, p.tf_body, p.tf_context, strict=True))
    return [g[0] for g in got], [g[1] for g in got], [g[2] for g in got], p.n_vault


def test_ranking_postings_replay_the_stores_bm25_exactly(store: Any) -> None:
    """postings + rank_totals + RankRow.length: recall's numpy BM25 gives the store's bm25 bit for bit (same
    scores, same order), whatever the column weights; a word two query words share counts as the backend does."""
    from synapse_nb.recall.bm25 import Term, bm25_top
    from synapse_nb.recall.threads import ThreadIndex

    talk = ["where is the lake", "the lake is north of the trout farm", "any trout there", "two trout today",
            "nothing about fish", "lake trout lake trout lake", "farm farm farm trout"]
    for i, text in enumerate(talk):
        store.episodes.insert(_epi(i, text, thread="s1", seq=i))
    store.episodes.insert(_epi(20, "lake lake lake farm", mind="other"))
    rows = store.recall.rank_rows("default")
    idx = ThreadIndex(rows)
    assert [r.length for r in rows] == [1 + len(t.split()) + sum(1 + len(p.split()) for p in talk[max(0, i - 2):i])
                                        for i, t in enumerate(talk)]  # "t" (the task key) + the outcome; context
    n, total = store.recall.rank_totals()
    assert n == 8 and total == sum(r.length for r in rows) + 5
    got = {w: _mind_postings(p, rows) for w, p in store.recall.postings("default", ["trout", "nosuchword"]).items()}
    assert got["nosuchword"] == ([], [], [], 0)
    ids, tf_body, tf_context, n_vault = got["trout"]
    assert ids == [f"epi_{i:012x}" for i in range(1, 7)] and n_vault == 6
    assert tf_body == [t.split().count("trout") for t in talk[1:]]
    assert tf_context == [" ".join(talk[max(0, i - 2):i]).split().count("trout") for i in range(1, 7)]
    farm = _mind_postings(store.recall.postings("default", ["farm"])["farm"], rows)
    assert len(farm[0]) == 4 and farm[3] == 5  # n_vault counts the other mind's record too
    for words in (["lake"], ["lake", "trout"], ["trout", "lake", "farm"], ["farm", "nosuchword"], ["fish"]):
        post = {w: _mind_postings(p, rows) for w, p in store.recall.postings("default", words).items()}
        stems = store.recall.postings("default", words)
        terms = [Term(stems[w].stem, np.array([idx.pos[i] for i in post[w][0]], np.int64),
                      np.array(post[w][1], np.int64), np.array(post[w][2], np.int64), post[w][3], {})
                 for w in words]
        for wb, wc in ((1.0, 0.2), (1.0, 1.0), (0.7, 0.3)):
            want = store.recall.bm25("default", words, depth=50, w_body=wb, w_context=wc)
            pos, score = bm25_top(terms, idx, (n, total), style=store.recall.bm25_style, depth=50, w_body=wb,
                                  w_context=wc, k1=1.2, b=0.75)
            got = [(idx.ids[j], s) for j, s in zip(pos.tolist(), score.tolist(), strict=True)]
            assert got == [tuple(h) for h in want]


def test_a_persons_context_leaves_agents_episodes_out(store: Any) -> None:
    """Review 70: a person's episode's ranking context is the two people's episodes before it in its thread (an
    agent's unverified one left out: an agent, who may give its episode any thread and seq, never puts its words in a
    person's context nor pushes the person's question out of it); an agent's is the two episodes of anyone before it.
    Kept so through inserts and deletes anywhere in the thread: each time what a rebuild gives."""
    from dataclasses import replace

    words = ["alpha", "bravo", "delta", "kilo", "lima", "oscar", "papa", "tango", "zulu", "hotel"]
    live: dict[str, tuple[str, int, bool]] = {}  # id -> (its word, seq, an agent's)

    def check(step: int) -> None:
        rows = store.recall.rank_rows("default")
        got = {w: dict(zip(*_mind_postings(p, rows)[::2], strict=True))
               for w, p in store.recall.postings("default", words).items()}
        order = sorted(live, key=lambda r: (live[r][1], r))
        for i, rid in enumerate(order):
            before = order[:i] if live[rid][2] else [o for o in order[:i] if not live[o][2]]
            want = {live[o][0] for o in before[-2:]}
            assert {w for w in words if got[w].get(rid, 0)} == want, (step, rid)

    def put(i: int, seq: int, agent: bool) -> None:
        e = replace(_epi(i, words[i], thread="s1", seq=seq), source="agent" if agent else "user")
        store.episodes.insert(e)
        live[e.id] = (words[i], seq, agent)

    put(0, 0, False)  # the person's question
    put(1, 1, False)  # the person's answer
    put(2, 1, True)  # the agent's episodes at the answer's seq, ids sorting before and after it
    put(3, 0, True)
    put(4, 2, False)
    check(0)
    assert store.recall.bm25("default", ["kilo"], depth=10) and "epi_000000000001" not in {
        h.id for h in store.recall.bm25("default", ["delta", "kilo"], depth=10)}  # the agent's words: not the answer's
    for step, (i, seq, agent) in enumerate([(5, 1, True), (6, 0, False), (7, 2, True), (8, 1, False), (9, 0, True)]):
        put(i, seq, agent)
        check(step + 1)
    for step, rid in enumerate(("epi_000000000003", "epi_000000000000", "epi_000000000008", "epi_000000000002")):
        store.episodes.delete(rid)
        del live[rid]
        check(10 + step)


# -- every table and query group, read and written alike by every backend ---------------------------------------
def _dec(i: int, text: str, *, tags: tuple[str, ...] = (), ts: str = T0) -> Any:
    from synapse_nb.models import Decision

    return Decision(id=f"dec_{i:012x}", mind="default", created_at=ts, updated_at=ts, decision=text, tags=tags,
                    rationale=f"because {i}")


def _les(i: int, status: str, *, ts: str = T0, **kw: Any) -> Lesson:
    return Lesson(id=f"les_{i:012x}", mind="default", created_at=ts, updated_at=ts, status=status,
                  summary=kw.pop("summary", f"lesson {i}"), **kw)


def test_memory_filters_counts_pages_stats_and_expiry(store: Any) -> None:
    view = View("default", T1)
    mems = [_mem(1, content="deploy the api", tags=("deploy", "api"), priority="critical", ts=T0),
            _mem(2, content="deploy the web", tags=("deploy",), priority="low", verified=False, ts=T1,
                 source="agent"),
            _mem(3, content="the cache expired", expires_at=T0, ts=T0),  # expired at T1
            _mem(4, content="the cache lives", expires_at=T2, priority="high", ts=T1),
            _mem(5, mind="other", content="deploy elsewhere", tags=("deploy",))]
    for m in mems:
        store.memories.insert(m)
    ids = lambda ms: [m.id for m in ms]  # noqa: E731 - a local shorthand
    assert ids(store.memories.list(view)) == [_mem(i).id for i in (1, 4, 3, 2)]  # priority, newest, id desc
    assert ids(store.memories.list(view, where=MemoryFilter(unexpired=True))) == [_mem(i).id for i in (1, 4, 2)]
    assert ids(store.memories.list(view, where=MemoryFilter(tag="deploy"))) == [_mem(1).id, _mem(2).id]
    assert ids(store.memories.list(view, where=MemoryFilter(priority="high", verified=True))) == [_mem(4).id]
    assert ids(store.memories.list(view, where=MemoryFilter(source="agent", category="knowledge"))) == [_mem(2).id]
    assert ids(store.memories.list(view, limit=1)) == [_mem(1).id]
    assert store.memories.count(view, where=MemoryFilter(unexpired=True, tag="deploy")) == 2
    assert store.memories.count(view) == 4 and store.memories.count(View("other", T1)) == 1
    assert ids(store.memories.search(view, "deploy", where=MemoryFilter(verified=False), limit=5)) == [_mem(2).id]
    assert ids(store.memories.search(view, "cache", limit=5)) == [_mem(4).id, _mem(3).id]  # equal rank: newest
    assert ids(store.memories.search(view, "?!", limit=2)) == [_mem(1).id, _mem(4).id]  # no word: the listing
    assert store.memories.by_key("default", "knowledge", "fact_2") == mems[1]
    assert store.memories.by_key("default", "knowledge", "fact_5") is None
    # pages: every sort, both directions, ids break ties, offsets slice one order; the total ignores the slice
    for sort in (None, "priority", "updated", "created", "category", "key", "content", "verified", "source",
                 "expires", "id"):
        for desc in (False, True):
            full, total = store.memories.page(view, "", where=MemoryFilter(), sort=sort, descending=desc,
                                              offset=0, limit=10)
            assert total == 4 and sorted(ids(full)) == sorted(_mem(i).id for i in (1, 2, 3, 4))
            pages = [store.memories.page(view, "", where=MemoryFilter(), sort=sort, descending=desc, offset=o,
                                         limit=3)[0] for o in (0, 3)]
            assert ids(pages[0] + pages[1]) == ids(full), (sort, desc)
    by = lambda sort, desc=False, text="": ids(store.memories.page(  # noqa: E731
        view, text, where=MemoryFilter(), sort=sort, descending=desc, offset=0, limit=10)[0])
    assert by("key") == [_mem(i).id for i in (1, 2, 3, 4)] and by("key", True) == [_mem(i).id for i in (4, 3, 2, 1)]
    assert by("expires") == [_mem(i).id for i in (3, 4, 1, 2)]  # never-expiring last
    assert by("expires", True) == [_mem(i).id for i in (1, 2, 4, 3)]
    assert by("priority") == [_mem(i).id for i in (1, 4, 3, 2)] and by("verified")[0] == _mem(2).id
    assert sorted(by(None, text="deploy")) == [_mem(1).id, _mem(2).id]  # best match first: each backend's ranking
    assert by("id", True, "deploy") == [_mem(2).id, _mem(1).id] and by("key", False, "api") == [_mem(1).id]
    got, total = store.memories.page(view, "deploy", where=MemoryFilter(priority="low"), sort=None, descending=False,
                                     offset=0, limit=10)
    assert (ids(got), total) == ([_mem(2).id], 1)
    assert store.memories.stats("default", T1) == (4, 3, 1) and store.memories.stats("nobody", T1) == (0, 0, 0)
    assert ids(store.memories.expiring("default", T0, T2)) == [_mem(4).id]
    store.memories.update(_mem(2).id, updated_at=T2, tags=["api"], priority="high", verified=True)
    assert store.memories.get(view, _mem(2).id) == dataclasses.replace(mems[1], tags=("api",), priority="high",
                                                                       verified=True, updated_at=T2)
    assert ids(store.memories.list(view, where=MemoryFilter(tag="api"))) == [_mem(1).id, _mem(2).id]
    with pytest.raises(TypeError, match="no updatable field"):
        store.memories.update(_mem(1).id, updated_at=T2, key="renamed")
    assert store.memories.delete_expired("default", T1) == (_mem(3).id,)
    assert store.memories.delete_expired("default", T1) == () and store.memories.count(view) == 3


def test_a_search_reads_peoples_records_first_at_any_limit(store: Any) -> None:
    """Review 71: a search ranked every record together, so agents' records saying the words more often ("deploy
    deploy deploy 7") took every place at any limit, and a person's verified memory was in no answer of the MCP
    ``search`` tool nor the CLI's. People's records (a person's, a memory a person verified, a lesson a person
    approved) are read first, each part best match first; agents' take what the limit leaves."""
    from synapse_nb.models import Decision, Episode

    view = View("default", T2)
    person_text = "deploy with make deploy after make test and read the release notes first"
    fields: dict[str, Callable[[int, str], dict[str, Any]]] = {
        "memory": lambda i, t: {"category": "procedure", "key": f"k{i}", "content": t, "verified": not i},
        "decision": lambda i, t: {"decision": t},
        "checkpoint": lambda i, t: {"doing": t, "origin": "agent" if i else "user"},
        "episode": lambda i, t: {"task_key": f"task_{i}", "status": "success", "outcome": t},
        "note": lambda i, t: {"name": f"note_{i}", "trigger": "when x", "body": t},
        "lesson": lambda i, t: {"status": "pending", "summary": t},
    }
    classes = {"memory": Memory, "decision": Decision, "checkpoint": Checkpoint, "episode": Episode, "note": Note,
               "lesson": Lesson}
    prefixes = {"memory": "mem", "decision": "dec", "checkpoint": "ckp", "episode": "epi", "note": "note",
                "lesson": "les"}

    def rec(kind: str, i: int, text: str, source: str) -> Any:
        return classes[kind](id=f"{prefixes[kind]}_{i:012x}", mind="default", created_at=T1, updated_at=T1,
                             source=source, **fields[kind](i, text))

    for kind in fields:
        person = rec(kind, 0, person_text, "user")
        agents = [rec(kind, i, f"deploy deploy deploy {i}", "agent") for i in range(1, 6)]
        table = store.table(kind)
        for r in (*agents, person):
            table.insert(r)
        got = [r.id for r in table.search(view, "deploy", limit=3)]
        assert got[0] == person.id and len(got) == 3 and set(got[1:]) <= {a.id for a in agents}, (kind, got)
        assert [r.id for r in table.search(view, "deploy", limit=1)] == [person.id], kind
        assert [r.id for r in table.search(view, "", limit=1)] == [person.id], kind  # no word: the listing's too
        assert len(table.search(view, "deploy", limit=10)) == 6, kind  # the agents' all, within the limit
    # a memory a person verified and a lesson a person approved stand as theirs, though an agent wrote them
    store.memories.insert(Memory(id="mem_0000000000aa", mind="default", created_at=T0, updated_at=T0,
                                 category="procedure", key="verified", content="deploy", source="agent",
                                 verified=True))
    assert {m.id for m in store.memories.search(view, "deploy", limit=2)} == {"mem_000000000000", "mem_0000000000aa"}
    store.lessons.insert(_les(0xaa, "approved", summary="deploy", source="agent", approved_at=T0, expires_at=T2))
    assert {x.id for x in store.lessons.search(view, "deploy", limit=2)} == {"les_000000000000", "les_0000000000aa"}


def test_checkpoints_decisions_episodes_and_notes_read_alike(store: Any) -> None:
    from synapse_nb.models import Episode

    view = View("default", T2)
    cks = [Checkpoint(id=f"ckp_{i:012x}", mind="default", created_at=ts, updated_at=ts, doing=f"step {i}",
                      branch=b, changed_files=(f"f{i}.py",)) for i, (b, ts) in
           enumerate([("main", T0), (None, T1), ("main", T1), ("dev", T2)], 1)]
    for c in cks:
        store.checkpoints.insert(c)
    assert [c.id for c in store.checkpoints.list(view)] == [cks[i].id for i in (3, 2, 1, 0)]
    assert [c.id for c in store.checkpoints.list(view, branch="main")] == [cks[2].id, cks[0].id]
    assert store.checkpoints.latest(view, None) == cks[1] and store.checkpoints.latest(view, "dev") == cks[3]
    assert store.checkpoints.latest(view, "gone") is None
    # the newest saved on purpose, and what was saved after it on its branch (review 86)
    autos = [Checkpoint(id=f"ckp_{i:012x}", mind="default", created_at=T2, updated_at=T2, doing=f"auto {i}",
                        branch=None, origin=origin, source=source) for i, (origin, source) in
             enumerate([("auto", "agent"), ("watch", "user"), ("watch", "agent")], 5)]
    for c in autos:
        store.checkpoints.insert(c)
    assert store.checkpoints.latest(view, None).id == autos[2].id
    assert store.checkpoints.latest(view, None, automatic=False).id == autos[2].id  # an agent's "watch" is its own
    assert store.checkpoints.latest(view, None, automatic=False, person=True) == cks[1]  # a person's (review 87)
    store.checkpoints.delete(autos[2].id)
    assert store.checkpoints.latest(view, None, automatic=False) == cks[1]  # "auto" and a person's "watch": not
    assert store.checkpoints.latest(view, "dev", automatic=False) == cks[3]
    assert store.checkpoints.since(view, cks[1], limit=1) == ([autos[1]], 2, 1)
    assert store.checkpoints.since(view, cks[1], limit=None) == ([autos[1], autos[0]], 2, 1)
    assert store.checkpoints.since(view, cks[0], limit=5) == ([cks[2]], 1, 0) and store.checkpoints.since(
        view, cks[3], limit=5) == ([], 0, 0)
    # people's first, each newest first, the agents' counted apart: a newer agent's never pushes a person's out
    flood = dataclasses.replace(autos[0], id="ckp_000000000009", doing="auto 9")
    store.checkpoints.insert(flood)
    assert store.checkpoints.since(view, cks[1], limit=1) == ([autos[1]], 3, 2)
    assert store.checkpoints.since(view, cks[1], limit=None) == ([autos[1], flood, autos[0]], 3, 2)
    store.checkpoints.delete(flood.id)
    store.checkpoints.update(cks[0].id, updated_at=T2, changed_files=["g.py", "h.py"])
    assert store.checkpoints.get(view, cks[0].id).changed_files == ("g.py", "h.py")
    decs = [_dec(1, "use postgres for teams", tags=("db",)), _dec(2, "use sqlite locally", tags=("db", "local")),
            _dec(3, "name things plainly", ts=T1)]
    for d in decs:
        store.decisions.insert(d)
    assert [d.id for d in store.decisions.search(view, "use", limit=5)] == [decs[0].id, decs[1].id]
    assert [d.id for d in store.decisions.search(view, "use", tag="local", limit=5)] == [decs[1].id]
    assert [d.id for d in store.decisions.search(view, "", tag="db", limit=5)] == [decs[1].id, decs[0].id]
    assert [d.id for d in store.decisions.list(view)] == [decs[2].id, decs[1].id, decs[0].id]
    epis = [Episode(id=f"epi_{i:012x}", mind="default", created_at=ts, updated_at=ts, task_key=k, status="success",
                    outcome=f"did {i}", refs=(f"r{i}",), duration_s=1.5) for i, (k, ts) in
            enumerate([("build", T0), ("test", T0), ("build", T1)], 1)]
    for e in epis:
        store.episodes.insert(e)
    assert store.episodes.last(view, "build") == epis[2] and store.episodes.last(view, "nothing") is None
    assert [e.id for e in store.episodes.history(view, "build", limit=None)] == [epis[2].id, epis[0].id]
    assert [e.id for e in store.episodes.history(view, None, limit=2)] == [epis[2].id, epis[1].id]
    notes = [Note(id=f"note_{i:012x}", mind="default", created_at=T0, updated_at=T0, name=n, trigger="when x",
                  body="do y") for i, n in enumerate(["zeta", "alpha", "mid"], 1)]
    for n in notes:
        store.notes.insert(n)
    assert [n.name for n in store.notes.list(view)] == ["alpha", "mid", "zeta"]
    store.notes.update(notes[0].id, updated_at=T1, trigger="when z", body="do w")
    assert (store.notes.by_name(view, "zeta").trigger, store.notes.by_name(view, "zeta").body) == ("when z", "do w")
    assert [n.name for n in store.notes.search(view, "when z", limit=5)] == ["zeta"]
    assert store.notes.by_name(View("other", T0), "zeta") is None
    for table, rec in (("checkpoint", cks[3]), ("decision", decs[2]), ("episode", epis[1]), ("note", notes[2])):
        store.table(table).delete(rec.id)
        assert store.table(table).get(view, rec.id) is None and store.table(table).mind_of(rec.id) is None


def test_lesson_reviews_expiry_and_reverts(store: Any) -> None:
    view = View("default", T1)
    rc = {"sha": "a" * 40, "subject": "Revert x"}
    lessons = [_les(1, "approved", approved_at=T0, expires_at=T2, revert_commit=rc, files_affected=("a.py",),
                    diffstat=(("a.py", 1, 2),), reverted_commits=({"sha": "b" * 40},)),
               _les(2, "approved", approved_at="2026-01-01T13:00:00.000000Z", expires_at=T1),  # runs out at T1
               _les(3, "pending", analysis="why", analysis_by="agent")]
    for x in lessons:
        store.lessons.insert(x)
    assert store.lessons.get(View("default", T0), lessons[0].id) == lessons[0]
    assert [x.id for x in store.lessons.list(View("default", T0), status="approved")] == [lessons[1].id,
                                                                                           lessons[0].id]
    assert [x.id for x in store.lessons.list(view, status="approved")] == [lessons[0].id]
    assert [x.id for x in store.lessons.list(view, status="expired")] == [lessons[1].id]
    assert store.lessons.has_revert("default", "a" * 40) and not store.lessons.has_revert("other", "a" * 40)
    assert store.lessons.analysis_state(lessons[2].id) == ("pending", "agent")
    assert store.lessons.analysis_state("les_nothing") is None
    assert store.lessons.expiring("default", T0, T1) == (lessons[1].id,)
    assert store.lessons.expiring("default", T0, T2) == (lessons[1].id, lessons[0].id)
    assert store.lessons.status_counts("default", T1) == {"approved": 1, "expired": 1, "pending": 1}
    assert store.lessons.expire("default", T1, T1) == (lessons[1].id,)
    assert store.lessons.analysis_state(lessons[1].id) == ("expired", None)
    store.lessons.update(lessons[2].id, updated_at=T1, status="approved", approved_at=T1, expires_at=T2,
                         lesson_text="do not")
    got = store.lessons.get(view, lessons[2].id)
    assert (got.status, got.lesson_text, got.updated_at) == ("approved", "do not", T1)
    assert store.lessons.ids_from("default", "les_", limit=2) == [lessons[0].id, lessons[1].id]
    assert store.lessons.mind_of(lessons[0].id) == "default"


def test_settings_scan_tips_and_agent_counts(store: Any) -> None:
    assert store.meta.settings() == {} and store.meta.scan_tips("default") == ()
    store.meta.set_settings({"depth": 5, "words": ["a", "b"], "50%_off": {"x": None}})
    assert store.meta.settings() == {"50%_off": {"x": None}, "depth": 5, "words": ["a", "b"]}
    assert store.meta.settings(["depth", "nothing"]) == {"depth": 5}
    store.meta.set_settings({"depth": 6})
    assert store.meta.settings(["depth"]) == {"depth": 6}
    tip1, tip2 = "1" * 40, "2" * 64  # git's SHA-1 and SHA-256 commit ids
    store.meta.set_scan_tips("default", [tip2, tip1])
    assert store.meta.scan_tips("default") == (tip1, tip2) and store.meta.scan_tips("other") == ()
    store.meta.set_scan_tips("agent:default", [tip1])  # an agent's place (a team vault's: its login's), apart
    assert store.meta.scan_tips("agent:default") == (tip1,) and store.meta.scan_tips("default") == (tip1, tip2)
    for bad in ("7", '["HEAD"]', f'["{tip1}", 7]', "not json"):  # no place: the scan starts afresh (review 30)
        store.write("UPDATE meta SET value = ? WHERE key = 'scan_tips:default'", (bad,))
        assert store.meta.scan_tips("default") == ()
    store.memories.insert(_mem(1, source="agent", ts=T0))
    store.memories.insert(_mem(2, source="agent", ts=T1))
    store.memories.insert(_mem(3, ts=T1))
    store.notes.insert(Note(id="note_000000000001", mind="default", created_at=T1, updated_at=T1, name="n",
                            trigger="t", body="b", source="agent"))
    store.lessons.insert(_les(1, "pending", ts=T1, source="agent"))
    # a write is counted by the history entry it leaves (each one: a record rewritten, or created and deleted, counts
    # every time), not by the records standing now
    assert store.meta.agent_writes(T0) == 0
    def by_agent(i: int, version: int, at: str, action: str = "update") -> Any:
        return dataclasses.replace(_entry(i, "mem_000000000009", at=at, version=version, action=action), actor="agent")

    store.history.append([by_agent(1, 1, T0, "create"), by_agent(2, 2, T1), by_agent(3, 3, T1, "delete"),
                          _entry(4, "mem_000000000003", at=T1, version=1, action="create")])  # the user's
    assert store.meta.agent_writes(T1) == 2 and store.meta.agent_writes(T0) == 3
    # every mind counts: an agent chooses its mind, and the quota is the vault's
    store.history.append([dataclasses.replace(by_agent(5, 1, T1, "create"), rid="mem_000000000010", mind="other")])
    assert store.meta.agent_writes(T1) == 3 and store.meta.agent_memories("default") == 2


def test_session_marks_flags_and_file_references(store: Any) -> None:
    store.sessions.mark("default", "s1", [("a", "d1"), ("b", "d2"), ("a", "d3")], T0)
    store.sessions.mark("default", "s2", [("a", "x")], T1)
    assert store.sessions.seen("default", "s1", ["a", "b", "c"]) == {"a": "d3", "b": "d2"}
    assert store.sessions.seen("default", "s1", []) == {} and store.sessions.seen("other", "s1", ["a"]) == {}
    assert store.sessions.seen("default", "s1", [f"id{i}" for i in range(1200)] + ["b"]) == {"b": "d2"}
    # the lessons a session was given, whatever their ids (review 87: the banner names those no longer in force)
    store.sessions.mark("default", "s3", [("les_2", "g"), ("mem_1", "m"), ("les_1", "gone"), ("lesson", "x")], T1)
    assert store.sessions.seen("default", "s3", [], lessons=True) == {"les_1": "gone", "les_2": "g"}
    assert store.sessions.seen("default", "s3", ["mem_1", "les_9"], lessons=True) == {"les_1": "gone", "les_2": "g",
                                                                                     "mem_1": "m"}
    assert store.sessions.seen("default", "s3", ["mem_1"]) == {"mem_1": "m"}  # without the flag: the ids only
    assert store.sessions.seen("default", "s1", [], lessons=True) == {} == store.sessions.seen("other", "s3", [],
                                                                                              lessons=True)
    assert store.sessions.prune("default", T1) == 2
    assert store.sessions.seen("default", "s1", ["a", "b"]) == {} and store.sessions.seen("default", "s2", ["a"])
    store.flags.replace("default", {"r2": ["b.py", "a.py"]}, {"r1": ["c" * 40]}, T0)
    assert store.flags.of_mind("default") == {"r1": {"stale": ["c" * 40]}, "r2": {"dangling": ["a.py", "b.py"]}}
    assert store.flags.dangling(["r1", "r2", "r3"]) == {"r2": ["a.py", "b.py"]}
    store.flags.replace("default", {}, {}, T1)
    assert store.flags.of_mind("default") == {} and store.flags.dangling(["r2"]) == {}
    store.memories.insert(_mem(1, content="see src/a.py"))
    store.decisions.insert(_dec(1, "keep b.py"))
    store.lessons.insert(_les(1, "pending", files_affected=("c.py",)))
    store.checkpoints.insert(Checkpoint(id="ckp_000000000001", mind="default", created_at=T0, updated_at=T0,
                                        doing="x", changed_files=("d.py",)))
    assert [(r.kind, r.id, r.files, r.text) for r in store.refs.sources("default")] == [
        ("lesson", "les_000000000001", ("c.py",), ""), ("checkpoint", "ckp_000000000001", ("d.py",), ""),
        ("decision", "dec_000000000001", (), "keep b.py because 1"), ("memory", _mem(1).id, (), "see src/a.py")]


def test_recall_candidates_statistics_and_matches(store: Any) -> None:
    store.memories.insert(_mem(1, content="alpha beta", tags=("deploy", "api")))
    store.memories.insert(_mem(2, content="beta gamma", tags=("deploy",), expires_at=T2))
    store.memories.insert(_mem(3, mind="other", content="alpha", tags=("deploy",)))
    store.notes.insert(Note(id="note_000000000001", mind="default", created_at=T0, updated_at=T0, name="fact_1",
                            trigger="alpha", body="b"))
    store.decisions.insert(_dec(1, "gamma", tags=("api",)))
    store.lessons.insert(_les(1, "pending", summary="alpha"))  # lessons are not candidates
    assert store.recall.count() == 5
    got = store.recall.fetch("default", {"memory": [_mem(2).id, _mem(1).id, _mem(3).id, "mem_gone"],
                                         "decision": ["dec_000000000001"], "lesson": ["les_000000000001"]})
    assert [(c.kind, c.id, c.expires_at) for c in got] == [("decision", "dec_000000000001", None),
                                                           ("memory", _mem(1).id, None), ("memory", _mem(2).id, T2)]
    assert got[1].text == store.recall.candidates("default")[1].text and "alpha beta" in got[1].text
    assert store.recall.fetch("default", {}) == []
    assert store.recall.doc_freq(["alpha", "beta", "gamma", "deploy", "nothing"]) == {
        "alpha": 3, "beta": 2, "gamma": 2, "deploy": 3}
    assert store.recall.doc_freq([]) == {}
    assert store.recall.tag_counts("default", ["deploy", "api", "none"]) == {"api": 2, "deploy": 2}
    assert store.recall.tag_matches("default", ["api"]) == [("dec_000000000001", "api", 1), (_mem(1).id, "api", 2)]
    assert store.recall.tag_counts("default", []) == {} and store.recall.tag_matches("default", []) == []
    assert store.recall.key_matches("default", ["fact_1", "fact_3", "none"]) == [(_mem(1).id, "fact_1"),
                                                                                ("note_000000000001", "fact_1")]
    assert store.recall.key_matches("default", []) == []
    docs = store.outbox.docs(["dec_000000000001", _mem(3).id, "mem_gone"])
    assert sorted((d.kind, d.id, d.mind) for d in docs) == [("decision", "dec_000000000001", "default"),
                                                           ("memory", _mem(3).id, "other")]
    assert [d.id for d in store.outbox.all_docs()] == sorted(
        [_mem(1).id, _mem(2).id, _mem(3).id, "note_000000000001", "dec_000000000001"])


def test_the_agents_unverified_records_statistics_are_kept_apart(store: Any) -> None:
    """``count`` and ``doc_freq`` with ``agents=True``: the candidates of every mind that are the agents' unverified
    ones (an agent wrote it and, a memory, no person verified it), kept exact as records are written, verified,
    edited back to unverified and deleted; people's are the rest (review 22: the duplicate check weighs two people's
    records by people's, so that what agents write changes nothing of such a pair)."""
    from dataclasses import replace

    from synapse_nb.models import Decision

    words = ["alpha", "beta", "gamma", "delta", "epsilon", "nothing"]

    def people() -> tuple[int, dict[str, int], dict[str, int]]:
        """(people's candidates, everyone's document frequencies, people's)."""
        every, agents = store.recall.doc_freq(words), store.recall.doc_freq(words, agents=True)
        assert set(agents) <= set(every) and all(0 < n <= every[w] for w, n in agents.items())
        return (store.recall.count() - store.recall.count(agents=True), every,
                {w: n - agents.get(w, 0) for w, n in every.items() if n > agents.get(w, 0)})

    store.memories.insert(_mem(1, content="alpha beta", source="agent", verified=False))
    store.memories.insert(_mem(2, content="alpha gamma", source="agent", verified=True))
    store.memories.insert(_mem(3, content="alpha beta"))
    store.memories.insert(_mem(4, mind="other", content="beta", source="agent", verified=False))
    store.decisions.insert(Decision(id="dec_000000000001", mind="default", created_at=T0, updated_at=T0,
                                    decision="beta delta", source="agent"))
    store.episodes.insert(replace(_epi(1, "delta alpha"), source="agent"))
    store.notes.insert(Note(id="note_000000000001", mind="default", created_at=T0, updated_at=T0, name="n",
                            trigger="alpha", body="b"))
    store.lessons.insert(_les(1, "pending", summary="alpha", source="agent"))  # lessons are not candidates
    every = {"alpha": 5, "beta": 4, "gamma": 1, "delta": 2}
    assert store.recall.count() == 7 and store.recall.count(agents=True) == 4
    assert store.recall.doc_freq(words, agents=True) == {"alpha": 2, "beta": 3, "delta": 2}
    assert people() == (3, every, {"alpha": 3, "beta": 1, "gamma": 1})
    assert store.recall.doc_freq([], agents=True) == {}
    store.memories.update(_mem(1).id, updated_at=T1, verified=True)  # a person takes it on
    assert people() == (4, every, {"alpha": 4, "beta": 2, "gamma": 1})
    store.memories.update(_mem(2).id, updated_at=T1, verified=False, content="gamma epsilon")  # an agent's edit
    assert people() == (3, {"alpha": 4, "beta": 4, "gamma": 1, "delta": 2, "epsilon": 1}, {"alpha": 3, "beta": 2})
    store.memories.update(_mem(3).id, updated_at=T1, content="delta")  # a person's edit
    store.decisions.delete("dec_000000000001")
    store.memories.delete(_mem(4).id)
    assert people() == (3, {"alpha": 3, "beta": 1, "gamma": 1, "delta": 2, "epsilon": 1}, {"alpha": 2, "beta": 1,
                                                                                            "delta": 1})
    with store.snapshot():  # a team vault reads both counts with the snapshot's version, and the agents' words with
        assert store.recall.count() == 5 and store.recall.count(agents=True) == 2  # everyone's (one round trip)
        assert store.recall.doc_freq(words) and store.recall.doc_freq(words, agents=True) == {
            "alpha": 1, "delta": 1, "gamma": 1, "epsilon": 1}
    assert store.integrity_check() == "ok"


def test_every_kind_exports_and_imports_as_it_was(store: Any) -> None:
    from synapse_nb.models import Episode

    view = View("default", T0)
    recs = [_mem(1, tags=("a", "b"), expires_at=T2, confidence=0.25),
            _dec(1, "d", tags=("x",)),
            Checkpoint(id="ckp_000000000001", mind="default", created_at=T0, updated_at=T0, doing="d",
                       changed_files=("a.py",), next_step="n", blockers="b", branch="main", commit="c" * 40),
            _les(1, "approved", approved_at=T0, expires_at=T2, revert_commit={"sha": "a" * 40, "n": 1},
                 reverted_commits=({"sha": "b" * 40},), files_affected=("a.py",), diffstat=(("a.py", 3, 4),),
                 analysis="an", analysis_by="user", lesson_text="lt", branch="main"),
            Episode(id="epi_000000000001", mind="default", created_at=T0, updated_at=T0, task_key="k",
                    status="failure", outcome="o", refs=("r",), duration_s=2.5, thread="t", seq=3, actor="ann"),
            Note(id="note_000000000001", mind="default", created_at=T0, updated_at=T0, name="n", trigger="t",
                 body="b")]
    for r in recs:
        store.table(r.kind).insert(r)
    freq = store.recall.doc_freq(["a", "d", "k", "n"])
    docs = {r.kind: list(store.transfer.rows(r.kind)) for r in recs}
    for r in recs:
        (doc,) = docs[r.kind]
        assert sorted(doc) == sorted(EXPORT_FIELDS[r.kind]) and store.transfer.to_record(r.kind, doc) == r
        store.table(r.kind).delete(r.id)
    assert store.recall.count() == 0
    for r in recs:
        assert store.transfer.insert(r.kind, docs[r.kind][0]) is True
        assert store.transfer.insert(r.kind, docs[r.kind][0]) is False
        assert store.table(r.kind).get(view, r.id) == r and list(store.transfer.rows(r.kind)) == docs[r.kind]
    assert store.recall.doc_freq(["a", "d", "k", "n"]) == freq and store.recall.count() == 5


# -- history, revisions, links, exports (schema v6 / team migration 9, issue 30) ------------------------------------
def _entry(i: int, rid: str, *, at: str, version: int, before: str | None = None, action: str = "update") -> Any:
    from synapse_nb.changes import HistoryEntry

    return HistoryEntry(id=f"hst_{i:012x}", rid=rid, kind="memory", mind="default", version=version, action=action,
                        actor="user", surface="api", at=at, digest_before=None if before is None else "d0",
                        digest_after="d1", before=before)


def test_history_rows_come_back_byte_for_byte_in_stamp_then_id_order(store: Any) -> None:
    m = _mem(1)
    before = '{"content":"é \\u2028 line","kind":"memory"}'
    with store.transaction():
        store.memories.insert(m)
        store.history.append([_entry(3, m.id, at=T1, version=2, before=before),
                              _entry(2, m.id, at=T0, version=1, action="create"),
                              _entry(1, m.id, at=T1, version=3, before=before)])
    got = store.history.of_record(m.id)
    assert [e.id for e in got] == ["hst_000000000002", "hst_000000000001", "hst_000000000003"]  # (at, id)
    assert got[2].before == before and got[0].before is None
    assert [e.id for e in store.history.of_mind("default", limit=2)] == ["hst_000000000003", "hst_000000000001"]
    assert [e.id for e in store.history.after("default", T0)] == ["hst_000000000001", "hst_000000000003"]
    assert store.history.next_version(m.id) == 4 and store.history.next_version("mem_none") == 1
    assert list(store.history.all()) == got
    assert store.history.insert_entry(got[0]) is False  # append-only: the first copy stands


def test_history_prune_keeps_each_records_newest_and_purge_removes_all(store: Any) -> None:
    with store.transaction():
        store.history.append([_entry(1, "mem_a", at=T0, version=1, action="create"),
                              _entry(2, "mem_a", at=T1, version=2, before="{}"),
                              _entry(3, "mem_b", at=T0, version=1, action="create")])
    with store.transaction():
        assert store.history.prune("default", T2) == 1  # mem_a's first; each record's newest stays
    assert [e.id for e in store.history.all()] == ["hst_000000000003", "hst_000000000002"]
    with store.transaction():
        assert store.history.purge("mem_a") == 1
    assert [e.rid for e in store.history.all()] == ["mem_b"]


def test_history_removals_are_the_entries_that_left_no_record_of_one_kind_and_mind(store: Any) -> None:
    """What finds a deleted memory by the key it held (review 91: ``memory history KEY`` names them)."""
    from dataclasses import replace

    gone = replace(_entry(4, "mem_a", at=T1, version=2, before='{"key":"k"}', action="delete"), digest_after=None)
    with store.transaction():
        store.history.append([
            _entry(1, "mem_a", at=T0, version=1, action="create"),
            replace(_entry(2, "mem_b", at=T0, version=1, action="create"), digest_after=None),  # no before
            _entry(3, "mem_b", at=T1, version=2, before='{"key":"k"}'),  # leaves a record
            gone,
            replace(gone, id="hst_000000000005", rid="mem_c", at=T0),
            replace(gone, id="hst_000000000006", rid="mem_d", mind="other"),
            replace(gone, id="hst_000000000007", rid="note_e", kind="note"),
        ])
    assert [e.id for e in store.history.removals("default", "memory")] == ["hst_000000000005", "hst_000000000004"]
    # a team vault's server stamps the login that wrote it (review 90); a local vault has none
    assert replace(store.history.removals("default", "memory")[1], login=None) == gone
    assert [e.rid for e in store.history.removals("other", "memory")] == ["mem_d"]
    assert [e.rid for e in store.history.removals("default", "note")] == ["note_e"]
    assert store.history.removals("nobody", "memory") == []


def test_revisions_and_links_are_decided_once_and_a_deletion_drops_the_open_ones(store: Any) -> None:
    from dataclasses import replace

    from synapse_nb.changes import ExportMark, Link, Revision

    a, b, c = _mem(1), _mem(2), _mem(3)
    rev = Revision(id="rev_000000000001", rid=a.id, kind="memory", mind="default", status="pending",
                   fields='{"content": "x"}', base_digest="d", actor="agent", surface="mcp", created_at=T0)

    def link(i: int, x: str, y: str, hidden: str | None) -> Link:
        return Link(id=f"lnk_{i:012x}", mind="default", a=x, a_kind="memory", b=y, b_kind="memory",
                    relation="duplicate", score=0.75, hidden=hidden, status="open", reason="r", created_at=T0)

    with store.transaction():
        for m in (a, b, c):
            store.memories.insert(m)
        store.revisions.insert(rev)
        store.links.insert([link(1, a.id, b.id, a.id), link(2, c.id, b.id, c.id)])
        store.links.insert([link(3, a.id, b.id, b.id)])  # the pair is linked already: left as it is
    # a team vault's server stamps the login that wrote it (review 90); a local vault has none
    rev = replace(rev, login=store.revisions.get(rev.id).login)
    assert rev.login is None or (rev.login and store.dialect.name == "postgresql")
    assert store.revisions.of_mind("default", "pending") == [rev] == store.revisions.pending_of(rev.rid)
    with store.transaction():
        assert store.revisions.decide(rev.id, "rejected", T1) is True
        assert store.revisions.decide(rev.id, "accepted", T1) is False
        assert store.links.decide("lnk_000000000002", "kept", T1) is True
    assert store.revisions.get(rev.id).status == "rejected" and store.revisions.pending_of(rev.rid) == []
    assert store.links.hidden("default") == {a.id: b.id}
    assert [x.id for x in store.links.of_record(b.id)] == ["lnk_000000000001", "lnk_000000000002"]
    # an export reads them all, by id; an import asks whether two records are linked, named in either order
    assert [x.id for x in store.links.all()] == ["lnk_000000000001", "lnk_000000000002"]
    assert store.links.of_pair(b.id, a.id) == store.links.get("lnk_000000000001") and store.links.of_pair(a.id, c.id) \
        is None
    with store.transaction():
        store.memories.delete(b.id)
    assert [x.id for x in store.links.of_mind("default")] == ["lnk_000000000002"]  # the decided one stays
    mark = ExportMark(id="exp_000000000001", taken_at=T1, dest="/tmp/x.jsonl", records=3, history=0)
    with store.transaction():
        store.exports.record(mark)
    assert store.exports.all() == [mark]


def test_episodes_last_of_one_author(store: Any) -> None:
    """``episodes.last(view, key, source="user")``: a person's latest run of the key, whatever agents logged after
    it (review 70: the 'already ran' warning names it when the latest run is an agent's)."""
    from synapse_nb.models import Episode

    view = View("default", T0)

    def run(i: int, source: str, key: str = "migrate") -> Episode:
        e = Episode(id=f"epi_{i:012x}", mind="default", created_at=T0, updated_at=T0, task_key=key, source=source,
                    status="failure" if source == "user" else "success")
        store.episodes.insert(e)
        return e

    mine = run(1, "user")
    run(2, "agent")
    theirs = run(3, "agent")
    run(4, "user", key="other")
    assert store.episodes.last(view, "migrate").id == theirs.id
    assert store.episodes.last(view, "migrate", source="user").id == mine.id
    assert store.episodes.last(view, "migrate", source="agent").id == theirs.id
    assert store.episodes.last(view, "never", source="user") is None
    assert store.episodes.last(View("other", T0), "migrate", source="user") is None
