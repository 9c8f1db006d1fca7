"""Recall's structure arrays after a write: patched from the records the write changed, equal to a fresh read."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import synapse_nb as syn
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.store.records import RankRow


def _partition(idx: ThreadIndex) -> list[tuple[str, ...]]:
    """Which positions share a thread, by id (thread codes are numbering, not meaning)."""
    groups: dict[int, list[str]] = {}
    for rid, t in zip(idx.ids, idx.thread.tolist(), strict=True):
        if t >= 0:
            groups.setdefault(t, []).append(rid)
    return sorted(tuple(g) for g in groups.values())


def _rows(idx: ThreadIndex) -> list[RankRow]:
    """The index's rows back, by position (thread and actor by name: codes are numbering)."""
    return [RankRow(idx.kinds[i], rid, idx.thread_of(rid), int(idx.seq[i]), idx.actor_names[a] if a >= 0 else None,
                    bool(idx.question[i]), int(idx.length[i]), int(idx.doc[i]), idx.expiry.get(rid),
                    agent=bool(idx.agent[i]))
            for i, (rid, a) in enumerate(zip(idx.ids, idx.actor.tolist(), strict=True))]


def _same(patched: ThreadIndex, fresh: ThreadIndex) -> None:
    assert patched.ids == fresh.ids and patched.kinds == fresh.kinds and patched.pos == fresh.pos
    assert _rows(patched) == _rows(fresh)  # every field: thread, seq, actor, question, length, doc, expiry, agent
    assert patched.expiry == fresh.expiry and _partition(patched) == _partition(fresh)
    for name in ("question", "length", "doc", "actor", "seq", "prev1", "prev2", "next1", "next2", "agent"):
        assert np.array_equal(getattr(patched, name), getattr(fresh, name)), name
    assert patched.actor_names == fresh.actor_names  # actor codes are compared with the query's names


def _kept(v: syn.Vault) -> tuple[object, ThreadIndex]:
    c = v._recaller._candidates  # type: ignore[union-attr]
    return c._threads_key, c._threads


def test_structure_arrays_patched_after_writes_equal_a_fresh_read(tmp_path: Path) -> None:
    """Random writes of every ranked kind through the API (episodes in threads, out of order and deleted,
    memories upserted, expiring and forgotten, decisions, notes), settings, session marks and a write by another
    handle: after each, the first recall's structure arrays equal those read afresh, and it answers as a fresh
    handle does."""
    rng = random.Random(11)
    v = syn.open_vault(tmp_path)
    other = syn.open_vault(tmp_path)  # another connection: its writes cannot be patched in
    agent = syn.open_vault(tmp_path, actor="agent")  # an agent's records: a person's verify flips RankRow.agent
    v.settings.set("agent_writes_per_hour", 10_000)
    elsewhere = v.with_mind("elsewhere")
    s = v._store
    words = ["camping", "lake", "trout", "canary", "deploy", "retry", "budget", "garage", "mountain", "pelican"]
    episodes: list[str] = []
    memories: list[str] = []
    v.recall("warm up")
    patched = verified = 0
    for step in range(160):
        op = rng.random()
        text = " ".join(rng.sample(words, 3))
        if op < 0.35 or not episodes:
            thread = rng.choice(["s1", "s2", "s3", None, f"t{step % 11}"])
            e = v.episodes.log(f"k{step}", outcome=text + rng.choice(["", "?"]), thread=thread,
                               seq=rng.randrange(40) if thread and rng.random() < 0.4 else None,
                               actor=rng.choice(["Ann", "Bob", None, f"Guest {step % 9}"]))
            episodes.append(e.id)
        elif op < 0.45:
            s.episodes.delete(episodes.pop(rng.randrange(len(episodes))))
        elif op < 0.65:
            m = v.remember("knowledge", f"fact_{rng.randrange(12)}", text,
                           expires=rng.choice([None, "2d", "30d"]))
            memories.append(m.id)
        elif op < 0.7 and memories:
            mid = memories.pop(rng.randrange(len(memories)))
            if s.memories.get(v._ctx.view(), mid) is not None:
                v.memories.delete(mid)
        elif op < 0.78:
            v.decide(f"decision {step}: {text}")
        elif op < 0.84:
            v.notes.add(f"note_{rng.randrange(5)}", text, f"body {step}")
        elif op < 0.86:
            v.settings.set("recall_semantic", 0.0)  # moves the version, changes no record
        elif op < 0.88:
            elsewhere.remember("knowledge", f"fact_{step}", text)  # another mind, the same connection
        elif op < 0.91:
            v.recall(text, session="s")  # session marks: no version moves
        elif op < 0.94:
            agent_ids = [m.id for m in v.memories.list() if m.source == "agent" and not m.verified]
            if agent_ids and rng.random() < 0.5:
                v.memories.verify(rng.choice(agent_ids))  # this connection: patched, the row now a person's
                verified += 1
            else:
                agent.remember("knowledge", f"agent_{step}", text)
        else:
            other.episodes.log(f"o{step}", outcome=text, thread="s1")  # another connection: read afresh
        before = _kept(v)
        r = v.recall(text)
        key, idx = _kept(v)
        if key != before[0] and before[1] is not idx:
            patched += 1
        _same(idx, ThreadIndex(s.recall.rank_rows(v.mind)))
        if step % 20 == 0:
            assert r.text == syn.open_vault(tmp_path).recall(text).text, step
    assert patched > 100 and verified > 2  # most steps went through the patch, not the initial read


def test_a_write_the_connection_did_not_make_is_read_afresh(tmp_path: Path) -> None:
    """Only this connection's own commits are known: after another connection's write, and after more commits
    than the log keeps, the whole mind's rows are read again (and answer right)."""
    v = syn.open_vault(tmp_path)
    v.episodes.log("chat", outcome="where is the lake", thread="s1", actor="Ann")
    v.recall("lake")
    s = v._store
    old = s.data_version()
    v.episodes.log("chat", outcome="north of the trout farm", thread="s1", actor="Bob")
    assert [c[0] for c in s.changes_between(old, s.data_version()) or []] == ["episode"]
    other = syn.open_vault(tmp_path)
    other.episodes.log("chat", outcome="the lake is frozen", thread="s1", actor="Ann")
    assert s.changes_between(old, s.data_version()) is None
    assert "frozen" in v.recall("is the lake frozen").text
    rows = s.recall.rank_rows(v.mind)
    assert v._recaller._candidates._threads.ids == [r.id for r in rows]  # type: ignore[union-attr]
