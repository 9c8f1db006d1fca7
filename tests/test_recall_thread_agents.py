"""Review 70: an agent's episodes placed in a person's thread move neither the person's neighbours nor its unit.

A person's record's links (``prev1/prev2/next1/next2``) and unit in :class:`ThreadIndex` are those of its thread with
the agents' unverified records left out; an agent's record may link to anyone (the semantic document's rule,
``store/indexer.py`` ``_neighbours``). Patched or built afresh, the arrays are the same.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

import synapse_nb as syn
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.store.records import RankRow

_LINKS = ("prev1", "prev2", "next1", "next2", "head", "tail")


def _by_id(idx: ThreadIndex, name: str) -> dict[str, str | None]:
    """An array of positions as id -> id (None: -1)."""
    arr = getattr(idx, name).tolist()
    return {rid: (idx.ids[j] if j >= 0 else None) for rid, j in zip(idx.ids, arr, strict=True)}


def _random_rows(rng: random.Random, n: int) -> list[RankRow]:
    out = []
    for i in range(n):
        thread = rng.choice(["a", "b", None])
        out.append(RankRow("episode", f"epi_{rng.getrandbits(48):012x}", thread, rng.randrange(6) if thread else None,
                           rng.choice(["Ann", "Bob", "agent", None]), rng.random() < 0.2, 3, i,
                           head=rng.choice(["ok", "haha", "so where", "fine then"]) if thread else None,
                           agent=rng.random() < 0.35))
    return out


def test_a_persons_links_and_unit_are_its_threads_people_alone_and_an_agents_are_anyones() -> None:
    """Random threads of people's and agents' records (seq ties, back-channel turns, one actor's runs): every person's
    record has the links and unit it has in an index of the people's records alone; every agent's record the links
    of the whole thread, and a unit of agents' records only."""
    rng = random.Random(70)
    for _ in range(40):
        rows = _random_rows(rng, rng.randrange(2, 40))
        idx = ThreadIndex(rows)
        people = ThreadIndex([r for r in rows if not r.agent])
        everyone = ThreadIndex([r._replace(agent=False) for r in rows])  # the whole thread, as before review 70
        agents = {r.id for r in rows if r.agent}
        for name in _LINKS:
            got, mine, all_ = _by_id(idx, name), _by_id(people, name), _by_id(everyone, name)
            for rid in idx.ids:
                if rid not in agents:
                    assert got[rid] == mine[rid], (name, rid)
                elif name in ("prev1", "prev2", "next1", "next2"):
                    assert got[rid] == all_[rid], (name, rid)
                else:  # an agent's unit: agents' records only, each member's unit the same
                    assert got[rid] in agents
        members, owner = idx.unit_members(idx.head)
        for m, o in zip(members.tolist(), owner.tolist(), strict=True):
            assert idx.agent[m] == idx.agent[o] and idx.head[m] == idx.head[o]


def test_patched_structure_arrays_equal_a_rebuild_with_agents_in_threads() -> None:
    """Rows removed, added and changed (a record an agent's, then a person's, moved in its thread): the patched index
    has every array a fresh build from the resulting rows has, links and units included."""
    rng = random.Random(71)
    rows = {r.id: r for r in _random_rows(rng, 60)}
    idx = ThreadIndex(list(rows.values()))
    for _ in range(120):
        gone = rng.sample(sorted(rows), rng.randrange(0, 3))
        fresh = [r._replace(agent=not r.agent, seq=rng.randrange(6) if r.thread else None)
                 for r in (rows[g] for g in gone if rng.random() < 0.6)]
        fresh += _random_rows(rng, rng.randrange(0, 3))
        for g in gone:
            del rows[g]
        rows.update((r.id, r) for r in fresh)
        idx = idx.patch(set(gone) | {r.id for r in fresh}, fresh)
        built = ThreadIndex(list(rows.values()))
        assert idx.ids == built.ids
        for name in (*_LINKS, "agent", "seq", "thread", "actor", "brief", "question"):
            assert np.array_equal(getattr(idx, name), getattr(built, name)), name


def _hiking(tmp_path: Path) -> tuple[syn.Vault, syn.Vault, str]:
    u = syn.open_vault(tmp_path)
    for i in range(30):
        u.episodes.log("chat", outcome=f"filler message number {i} about groceries and the weather {i}",
                       thread=f"f{i}", actor="Cy")
    u.episodes.log("chat", outcome="Where should we go hiking this weekend?", thread="chat1", actor="Ann")
    u.episodes.log("chat", outcome="Lake Tahoe north shore trail, leave at 7am", thread="chat1", actor="Bob")
    return u, u.as_agent(), "where should we go hiking this weekend?"


def test_an_agents_episodes_before_a_persons_answer_leave_it_in_recall(tmp_path: Path) -> None:
    """The reviewer's attack: an agent reads the answer's id and seq and logs "ok" episodes at that seq until two sort
    before it (seq ties are broken by id), making the question the answer's third record back. The answer is still
    recalled for the question, and its neighbours and ranking context are the people's."""
    u, agent, q = _hiking(tmp_path)
    assert "Lake Tahoe" in u.recall(q).text
    bob = max((e for e in agent.episodes.history("chat", limit=None) if e.thread == "chat1"), key=lambda e: e.seq)
    below = []
    while len(below) < 2:
        e = agent.episodes.log("chat", outcome="ok", thread="chat1", seq=bob.seq, actor="agent")
        if e.id < bob.id:
            below.append(e.id)
    assert "Lake Tahoe" in u.recall(q).text
    rows = u._store.recall.rank_rows(u.mind)
    idx = ThreadIndex(rows)
    ann = idx.ids[int(idx.prev1[idx.pos[bob.id]])]
    assert "hiking" in u._store.episodes.get(u._ctx.view(), ann).outcome  # the answer's neighbour: the question
    assert idx.next1[idx.pos[ann]] == idx.pos[bob.id]
    # the answer's context holds the question's words, none of the agent's
    assert _context_counts(u, rows, ["hiking", "ok"], bob.id) == {"hiking": 1, "ok": 0}


def _context_counts(v: syn.Vault, rows: list[RankRow], words: list[str], rid: str) -> dict[str, int]:
    """How often each word is in the ranking context of record ``rid`` (the store's postings)."""
    by_doc = {r.doc: r.id for r in rows}
    out = {}
    for w, p in v._store.recall.postings(v.mind, words).items():
        ids = [by_doc.get(d) for d in p.docs] if p.docs is not None else list(p.ids)
        out[w] = dict(zip(ids, (int(c) for c in p.tf_context), strict=True)).get(rid, 0)
    return out


def test_an_agent_flooding_a_persons_thread_keeps_the_answer_in_recall(tmp_path: Path) -> None:
    """Episodes at every seq of the thread, two and eight of them: the person's answer is recalled every time."""
    u, agent, q = _hiking(tmp_path)
    for i in range(8):
        agent.episodes.log("chat", outcome=f"pizza order {i}", thread="chat1", seq=i % 2, actor="agent")
        assert "Lake Tahoe" in u.recall(q).text, i
