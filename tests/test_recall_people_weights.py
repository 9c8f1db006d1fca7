"""Review 83 (F1): recall weighs a query's words by people's records. An agent that wrote a person's rule's words into
300 records of its own mind made those words weigh almost nothing (the word statistics counted every record of every
mind), and the person's rule left the next agent's context; the same in the person's own mind. BM25's N, average
length and document frequencies, the gate's coverage weights and the share that leaves a common word out now count
people's records alone (every record's in a vault with no person's): schema v13 keeps the agents' unverified
records' ranking statistics beside everyone's (store/sqlite/agent_rank_schema.py; a team vault: migration 30)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.recall.bm25 import Postings, bm25_top
from synapse_nb.recall.threads import ThreadIndex
from synapse_nb.store import sqlite as store
from synapse_nb.store.rankwords import capped_context, capped_text
from synapse_nb.store.sql.authors import agents_case
from synapse_nb.store.sqlite.ranking import fts5_stems, varints
from tests.conftest import downgrade
from tests.test_agent_hooks import claude, context_of, hook

WORDS = ("deploy billing api database migration schema index cache queue worker retry timeout token auth login "
         "session cookie header payload request response latency metric alert dashboard rollback release branch "
         "merge review test fixture coverage build docker image service secret config flag feature user account "
         "invoice payment refund stripe webhook event stream kafka topic consumer producer batch cron backup").split()
RULE = "Never deploy the billing api on a Friday"
PROMPT = "can I deploy the billing api on friday right after the database migration finishes?"
FLOOD = "friday deploy billing api friday deploy billing api notes"


class _Ctx:
    def __init__(self, store: object, mind: str) -> None:
        self.store, self.mind = store, mind


def _persons_vault(path: Path) -> syn.Vault:
    """The review's vault, smaller: a person's 150 memories and 40 decisions of the project's words, the person's
    rule, and an agent's memory in the default mind holding the prompt's other words."""
    rnd = random.Random(1)
    v = syn.open_vault(path)

    def words(k: int) -> str:
        return " ".join(rnd.choice(WORDS) for _ in range(k))

    with v.transaction():
        for i in range(150):
            v.remember("project", f"fact_{i}", f"The {words(3)} uses {words(12)}.", tags=[rnd.choice(WORDS)])
        for _ in range(40):
            v.decide(f"Use {words(4)} for {words(3)}", rationale=words(20))
        v.decide(RULE, rationale="the Friday billing deploy outage; wait for Monday")
    v.settings.set("agent_writes_per_hour", 100_000)
    v.as_agent().remember("procedure", "after_migration",
                          "After the database migration finishes, go ahead and ship it straight away.")
    return v


def _flood(v: syn.Vault, n: int, mind: str) -> None:
    """``n`` agent records of the rule's words in ``mind`` (half memories, half decisions), as the review's."""
    agent = v.as_agent()
    agent = agent if mind == v.mind else agent.with_mind(mind)
    with agent.transaction():
        for i in range(n):
            if i % 2 == 0:
                agent.remember("context", f"fri_{i}", FLOOD)
            else:
                agent.decide(FLOOD, rationale="friday deploy billing api")


def test_an_agents_records_in_another_mind_leave_a_minds_recall_as_it_was(git_repo: Path) -> None:
    """The review's idf_hide.py in its agent's own mind: 150 records of the rule's words in ``scratch`` (300 in the
    review) took the person's rule out of the default mind's recall and the hook's context. Now the default mind's
    recall is what it was byte for byte, and the hook gives the rule."""
    v = _persons_vault(git_repo)
    before = v.recall(PROMPT)
    assert RULE in before.text
    _flood(v, 150, "scratch")
    after = v.recall(PROMPT)
    assert after.text == before.text
    assert [(r.id, r.score, r.coverage, r.bar) for r in after.explain()] == [
        (r.id, r.score, r.coverage, r.bar) for r in before.explain()]
    ask = claude("UserPromptSubmit", git_repo, session="fresh-1", prompt=PROMPT)
    assert RULE in context_of(hook("UserPromptSubmit", ask, cwd=git_repo))


def test_an_agents_records_in_the_same_mind_do_not_push_a_persons_rule_out(tmp_path: Path) -> None:
    """300 records of the rule's words in the person's own mind (the review: 300 in another mind, and 300 of a
    person's own also removed it): they outrank the rule, whose words now weigh what people's records make them
    weigh, and the rule stays in recall (people's records are found and judged as if agents' were not there)."""
    v = _persons_vault(tmp_path)
    rule = next(k for k in v.recall(PROMPT).items if RULE in k.line)
    _flood(v, 300, v.mind)
    after = v.recall(PROMPT)
    assert rule.id in {k.id for k in after.items} and RULE in after.text
    assert after.explain()[0].id != rule.id  # the agents' records rank above it


def test_a_persons_record_weighs_as_if_the_agents_records_were_not_there(tmp_path: Path) -> None:
    """The rule, exactly: recall's BM25 of each person's record in a vault with agents' unverified records (in its
    mind and another, threaded ones too, some verified since) equals the store's FTS5 ``bm25()`` of that record in
    the same vault with those records deleted."""
    rnd = random.Random(5)
    path = tmp_path / "v"
    path.mkdir()
    v = syn.open_vault(path)
    v.settings.set("agent_writes_per_hour", 100_000)
    agent, scratch = v.as_agent(), v.as_agent().with_mind("scratch")
    vocab = [*WORDS[:20], "friday", "zorblax"]

    def text(k: int) -> str:
        return " ".join(rnd.choice(vocab) for _ in range(k))

    verified = []
    for i in range(160):
        who = rnd.choice([v, v, agent, scratch])
        if rnd.random() < 0.4:
            who.episodes.log(f"t{i % 3}", outcome=text(rnd.randint(2, 12)), thread=f"s{i % 4}",
                             actor=rnd.choice(["Ann", "Bob"]) if who is v else None)
        else:
            m = who.remember("project", f"k{i}", text(rnd.randint(2, 16)))
            if who is agent and rnd.random() < 0.3:
                verified.append(m.id)
    for rid in verified:  # a person's verify: the record is weighed as people's from now on
        v.memories.verify(rid)
    store_ = v._store
    idx = ThreadIndex(store_.recall.rank_rows(v.mind))
    assert idx.agent.any() and (~idx.agent).any() and store_.recall.count(agents=True) > 0
    cache = Postings(_Ctx(store_, v.mind))  # type: ignore[arg-type]
    queries = [list(dict.fromkeys(rnd.choice(vocab) for _ in range(rnd.randint(1, 4)))) for _ in range(30)]
    mixed = {}
    for words in queries:
        terms, totals = cache.get(words, idx, store_.data_version())
        assert totals.people
        pos, score = bm25_top([terms[w] for w in words], idx, totals, style="fts5", depth=len(idx), w_body=1.0,
                              w_context=0.2, k1=1.2, b=0.75)
        mixed[tuple(words)] = {idx.ids[j]: s for j, s in zip(pos.tolist(), score.tolist(), strict=True)
                               if not idx.agent[j]}
    # the same vault with every agent's unverified record deleted (a person's contexts never held them)
    with store_.transaction() as c:
        for table, kind in (("memories", "memory"), ("episodes", "episode")):
            c.execute(f"DELETE FROM {table} WHERE id IN (SELECT rid FROM gate_docs d "
                      f"WHERE d.kind = '{kind}' AND {agents_case('d.kind', 'd.rid')})")
    assert store_.recall.count(agents=True) == 0
    for words in queries:
        alone = {h.id: h.score for h in store_.recall.bm25(v.mind, words, depth=1000)}
        assert mixed[tuple(words)] == alone, words


def test_a_word_only_agents_hold_weighs_as_one_no_person_holds(tmp_path: Path) -> None:
    """People's document frequency 0: BM25's idf is ln((N + 0.5) / 0.5) over people's N (finite, as for a word no
    record holds), whatever number of agents' records hold it; the coverage weighs it as unknown to people."""
    import math

    v = syn.open_vault(tmp_path)
    for i in range(5):
        v.remember("project", f"p{i}", f"deploy the billing api, step {i}")
    v.settings.set("agent_writes_per_hour", 100_000)
    agent = v.as_agent()
    with agent.transaction():
        for i in range(40):
            agent.remember("context", f"a{i}", "zorblax " * (1 + i % 3) + "deploy")
    store_ = v._store
    idx = ThreadIndex(store_.recall.rank_rows(v.mind))
    terms, totals = Postings(_Ctx(store_, v.mind)).get(["zorblax"], idx, store_.data_version())  # type: ignore[arg-type]
    assert (totals.rows, totals.vault_rows) == (5, 45) and terms["zorblax"].n == 0 and len(terms["zorblax"].pos) == 40
    pos, score = bm25_top([terms["zorblax"]], idx, totals, style="fts5", depth=100, w_body=1.0, w_context=0.2, k1=1.2,
                          b=0.75)
    idf = math.log(5.5 / 0.5)
    assert len(pos) == 40 and all(math.isfinite(s) and 0 < s < idf * 2.2 for s in score.tolist())
    r = v.recall("zorblax deploy")
    assert any("zorblax" in i.matched for i in r.items)  # the agents' records that hold it are found


def test_a_vault_of_agents_records_alone_ranks_by_every_record(tmp_path: Path) -> None:
    """No person's record: the statistics are every record's (there is no person's record to weigh), so recall ranks
    an agents' vault exactly as the store's bm25() does, rare words first."""
    v = syn.open_vault(tmp_path)
    v.settings.set("agent_writes_per_hour", 100_000)
    agent = v.as_agent()
    with agent.transaction():
        for i in range(30):
            agent.remember("context", f"c{i}", f"the deploy pipeline note {i} for the billing service")
        rare = agent.remember("context", "kafka_lag", "kafka consumer lag on the billing service")
    store_ = v._store
    assert store_.recall.count() == store_.recall.count(agents=True) == 31
    idx = ThreadIndex(store_.recall.rank_rows(v.mind))
    words = ["billing", "kafka", "deploy"]
    terms, totals = Postings(_Ctx(store_, v.mind)).get(words, idx, store_.data_version())  # type: ignore[arg-type]
    assert not totals.people and totals.rows == 31
    pos, score = bm25_top([terms[w] for w in words], idx, totals, style="fts5", depth=50, w_body=1.0, w_context=0.2,
                          k1=1.2, b=0.75)
    assert [(idx.ids[j], s) for j, s in zip(pos.tolist(), score.tolist(), strict=True)] == [
        tuple(h) for h in store_.recall.bm25(v.mind, words, depth=50)]
    assert idx.ids[int(pos[0])] == rare.id
    assert v.recall("kafka lag on billing").items[0].id == rare.id


def _people_recount(db: store.SqliteStore) -> tuple[tuple[int, int], dict[str, int]]:
    """People's ranking statistics counted again from ``gate_docs``: (N, total tokens) and each stem's documents."""
    db.query("CREATE VIRTUAL TABLE IF NOT EXISTS temp.people_rank USING fts5(body, context, "
             "tokenize='porter unicode61 remove_diacritics 2')")
    db.query("CREATE VIRTUAL TABLE IF NOT EXISTS temp.people_rank_vocab USING fts5vocab(temp, people_rank, 'row')")
    db.query("DELETE FROM temp.people_rank")
    rows = db.query(f"SELECT d.body, d.context FROM gate_docs d WHERE NOT ({agents_case('d.kind', 'd.rid')})")
    for body, ctx in rows:
        db.query("INSERT INTO temp.people_rank(body, context) VALUES (?, ?)", (capped_text(body), capped_context(ctx)))
    v = varints(db.query_one("SELECT block FROM temp.people_rank_data WHERE id = 1")[0])
    return (v[0], sum(v[1:])), {r[0]: int(r[1]) for r in db.query("SELECT term, doc FROM temp.people_rank_vocab")}


def _people_stats(db: store.SqliteStore, words: list[str]) -> tuple[tuple[int, int], dict[str, int]]:
    """The same through the store's reads: everyone's less the agents' (``rank_totals``, ``postings``)."""
    every, agents = db.recall.rank_totals(), db.recall.rank_totals(agents=True)
    post = db.recall.postings("default", words)
    return ((every[0] - agents[0], every[1] - agents[1]),
            {str(p.stem): p.n_vault - p.n_agents for p in post.values() if p.n_vault - p.n_agents > 0})


@pytest.mark.parametrize("seed", [1, 2])
def test_the_agents_ranking_statistics_are_exactly_their_unverified_records(tmp_path: Path, seed: int) -> None:
    """Schema v13: ``agent_rank_fts`` holds the ranking documents (body and context) of exactly the agents'
    unverified records, whatever a transaction does to them (written by either, threaded, verified, edited back to
    unverified, handed to a person, deleted), so people's statistics are a recount of people's documents; and a v12
    vault migrates with its agents' records counted."""
    rng = random.Random(seed)
    s = store.SqliteStore(tmp_path / "synapse.db")
    ts = "2026-01-01T00:00:00.000000Z"
    vocab = WORDS[:24]
    live: list[tuple[str, str]] = []
    for n in range(220):
        with s.transaction() as c:
            op = rng.random()
            src = rng.choice(["user", "agent", "agent"])
            text = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 9)))
            if op < 0.5 or not live:
                if rng.random() < 0.5:
                    rid = f"epi_{n:012x}"
                    c.execute("INSERT INTO episodes(id, mind, task_key, status, outcome, refs, source, created_at, "
                              "updated_at, thread, seq, actor) VALUES (?, ?, ?, 'success', ?, '[]', ?, ?, ?, ?, ?, ?)",
                              (rid, rng.choice(["default", "scratch"]), f"task_{n}", text, src, ts, ts,
                               f"th{rng.randint(0, 3)}", rng.randint(0, 30), "Ann"))
                    live.append(("episodes", rid))
                else:
                    rid = f"mem_{n:012x}"
                    c.execute("INSERT INTO memories(id, mind, category, key, content, tags, priority, source, "
                              "verified, confidence, created_at, updated_at) VALUES (?,?,'project',?,?,'[]',2,?,?,1.0,"
                              "?,?)", (rid, rng.choice(["default", "scratch"]), f"key_{n}", text, src,
                                       int(src == "user" or rng.random() < 0.3), ts, ts))
                    live.append(("memories", rid))
            elif op < 0.85:
                table, rid = rng.choice(live)
                col = "content" if table == "memories" else "outcome"
                if table == "memories" and rng.random() < 0.4:  # verified set or cleared, the text kept
                    c.execute("UPDATE memories SET verified = ? WHERE id = ?", (rng.randint(0, 1), rid))
                elif rng.random() < 0.3:  # the record changes hands
                    c.execute(f"UPDATE {table} SET source = ?, {col} = ? WHERE id = ?", (src, text, rid))
                elif table == "episodes" and rng.random() < 0.3:  # it moves in its thread: contexts change
                    c.execute("UPDATE episodes SET seq = ? WHERE id = ?", (rng.randint(0, 30), rid))
                else:
                    c.execute(f"UPDATE {table} SET {col} = ? WHERE id = ?", (text, rid))
            else:
                table, rid = live.pop(rng.randrange(len(live)))
                c.execute(f"DELETE FROM {table} WHERE id = ?", (rid,))
    totals, docs = _people_recount(s)
    stems = {x[0] for x in fts5_stems(vocab).values()}
    assert 0 < totals[0] < s.recall.rank_totals()[0] and s.recall.rank_totals(agents=True)[0] > 0
    assert _people_stats(s, vocab) == (totals, {t: k for t, k in docs.items() if t in stems})
    s.query("INSERT INTO agent_rank_fts(agent_rank_fts, rank) VALUES ('integrity-check', 1)")
    s.close()
    conn = sqlite3.connect(tmp_path / "synapse.db")
    downgrade(conn, 12)
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'agent_rank_fts'").fetchall()
    conn.close()
    again = store.SqliteStore(tmp_path / "synapse.db")
    assert again.schema_version == store.SCHEMA_VERSION == 15
    assert _people_stats(again, vocab) == (totals, {t: k for t, k in docs.items() if t in stems})
