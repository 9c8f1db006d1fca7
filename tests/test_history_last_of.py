"""A deletion of many records reads their last history entries in one statement, not one per record (a carried
weakness of the twentieth pass). Both backends.

After the commit of a deletion, the store learns who deleted the records (an agent's deletion leaves the index
rewrite owed: ``history.deleted_by_agent``) and, when the agent hooks keep ``agent-sessions.json``, what each record
held (the prompts it came from are forgotten: ``purge.forget_deleted_prompts``). Both read each record's history
alone: a transaction deleting 100 memories ran 101 such reads for a person and 200 for an agent. Now each is one
read of "the last history entry of each of these ids" (``store.history.last_of``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock

import synapse_nb as syn
from synapse_nb import history
from synapse_nb.agents.sessions import STATE_NAME

N = 100


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _open(backend: str, request: pytest.FixtureRequest, folder: Path, clock: FakeClock, actor: str) -> syn.Vault:
    folder.mkdir(exist_ok=True)
    if backend == "sqlite":
        return syn.open_vault(folder, clock=clock, actor=actor)
    from synapse_nb.team import open_team_vault

    project = request.getfixturevalue("new_team_project")("lastof")
    return open_team_vault(f"{request.getfixturevalue('pg_admin_url')}?project={project}", local=folder,
                           clock=clock, actor=actor)


@contextlib.contextmanager
def _entry_reads(vault: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The statements reading whole history entries (not a next version's ``max``) that the vault's store sends
    while the ``with`` block runs (either backend: the store's own read methods)."""
    store: Any = vault._store
    seen: list[str] = []
    with monkeypatch.context() as m:
        for name in ("query", "query_one", "iter_query"):
            read = getattr(store, name)

            def counted(sql: str, *args: Any, _read: Any = read, **kw: Any) -> Any:
                if "FROM history" in sql and "digest_before" in sql:
                    seen.append(sql)
                return _read(sql, *args, **kw)

            m.setattr(store, name, counted)
        yield seen


# an agent's deletion on a team vault needs an agent login (tests/team): the SQLite case counts it
@pytest.mark.parametrize(("where", "actor"), [("sqlite", "user"), ("sqlite", "agent"), ("postgres", "user")])
def test_a_deletion_of_100_memories_reads_their_last_history_entries_once(
        where: str, actor: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    v = _open(where, request, tmp_path / "vault", clock, actor)
    try:
        with v.transaction():
            ids = [v.remember("knowledge", f"k_{i}", f"zqnote {i} about the deploy of service {i}").id
                   for i in range(N)]
        # the agent hooks' file, a session whose prompt memory 7 was made from: the deletion forgets it
        (v.path / STATE_NAME).write_text(json.dumps({"version": 1, "sessions": {"s1": {
            "task": "zqnote 7 about the deploy of service 7", "prompt": None}}}), encoding="utf-8")
        with _entry_reads(v, monkeypatch) as seen, v.transaction():
            for rid in ids:
                v.memories.delete(rid)
        # one read for who deleted them, one for what they held (was 101 for a person, 200 for an agent)
        assert len(seen) == 2, seen
        sessions = json.loads((v.path / STATE_NAME).read_text(encoding="utf-8"))["sessions"]
        assert sessions["s1"]["task"] is None  # the prompt memory 7 held is forgotten, as before
        with _entry_reads(v, monkeypatch) as seen:
            assert history.deleted_by_agent(v._ctx, ids) is (actor == "agent")
        assert len(seen) == 1
    finally:
        v.close()


def test_last_of_is_each_records_last_entry(backend: str, request: pytest.FixtureRequest, tmp_path: Path,
                                            clock: FakeClock) -> None:
    v = _open(backend, request, tmp_path / "vault", clock, "user")
    try:
        a = v.remember("knowledge", "a", "first words")
        v.remember("knowledge", "a", "second words")
        clock.advance(seconds=1)
        v.remember("knowledge", "a", "third words")
        b = v.remember("knowledge", "b", "kept words")
        c = v.remember("knowledge", "c", "deleted words")
        v.memories.delete(c.id)
        history_ = v._store.history
        last = history_.last_of([a.id, b.id, c.id, a.id, "mem_nosuchrecord"])
        assert set(last) == {a.id, b.id, c.id}  # an id without history is left out; a repeated one read once
        for rid in (a.id, b.id, c.id):
            assert last[rid] == history_.of_record(rid)[-1]
        assert last[a.id].version == 3 and last[c.id].action == "delete"
        assert last[c.id].previous is not None and last[c.id].previous.text.endswith("deleted words")
        assert history_.last_of([]) == {}
    finally:
        v.close()


def test_a_history_read_is_one_statement_built_once(backend: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                    clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """History's and revisions' reads name the logins (a team vault's) or NULL (a local vault's) in one spelling,
    built when the module is loaded: every read sends the very same statement (it was rebuilt by string replaces on
    each call, history's and revisions' spelled two ways)."""
    from synapse_nb.store.sql.history import HISTORY_OF, REVISIONS_OF_MIND

    v = _open(backend, request, tmp_path / "vault", clock, "user")
    try:
        m = v.remember("knowledge", "a", "some words")
        store: Any = v._store
        sent: list[str] = []
        with monkeypatch.context() as mp:
            query = store.query
            mp.setattr(store, "query", lambda sql, *a, **kw: (sent.append(sql), query(sql, *a, **kw))[1])
            for _ in range(2):
                store.history.of_record(m.id)
                store.revisions.of_mind("default")
        want = [HISTORY_OF.on(store.dialect), REVISIONS_OF_MIND.on(store.dialect)] * 2
        assert sent == want and all(s is w for s, w in zip(sent, want, strict=True))
        assert ("NULL AS login" in want[0]) is (backend == "sqlite") and "@" not in want[0] + want[1]
    finally:
        v.close()
