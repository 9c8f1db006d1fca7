"""Review 75 F1: each distinct word of a record reaches the ranking index and the word statistics at most
MAX_WORD_REPEATS times (schema v12), so what a record costs a recall's postings read is bounded by its distinct words,
not by its occurrences; ordinary records are indexed, and ranked, exactly as before."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import downgrade

import synapse_nb as syn
from synapse_nb.store import sqlite as store
from synapse_nb.store.rankwords import CONTEXT_SEP, MAX_WORD_REPEATS, cap_words, capped_text, fts5_words

ATTACK = ("deploy " * 4700)[:32768]  # the finding's record: its text and its rationale
PROMPT = "how do we deploy billing?"


def _person_vault(path: Path) -> syn.Vault:
    v = syn.open_vault(path)
    v.settings.set("agent_writes_per_hour", 1_000_000)
    rnd = random.Random(1)
    words = "deploy billing staging release docker cache redis queue worker backup restore token proxy".split()
    with v.transaction():
        for i in range(40):
            v.remember("knowledge", f"fact_{i}", " ".join(rnd.choice(words) for _ in range(12)) + f" item{i}")
    v.remember("procedure", "deploy", "To deploy billing run make deploy-billing; NEVER pass --force on main",
               tags=["deploy"], priority="high")
    v.decide("Never deploy on Fridays", rationale="incidents")
    return v


def _attack(path: Path, n: int) -> None:
    a = syn.open_vault(path, actor="agent", mind="scratch")
    with a.transaction():
        for _ in range(n):
            a.decide(ATTACK, rationale=ATTACK)
    a.close()


def _instances(s: Any, term: str) -> dict[int, int]:
    """Postings of ``term`` per document, as recall reads them (fts5vocab instance over rank_fts)."""
    s.query("CREATE VIRTUAL TABLE IF NOT EXISTS temp.cap_vocab USING fts5vocab(main, rank_fts, instance)")
    return {r[0]: r[1] for r in s.query("SELECT doc, count(*) FROM temp.cap_vocab WHERE term = ? GROUP BY doc",
                                        (term,))}


def test_a_word_repeated_thousands_of_times_costs_the_index_a_bounded_number_of_postings(tmp_path: Path) -> None:
    v = _person_vault(tmp_path)
    _attack(tmp_path, 20)
    s = v._store
    agents = {r[0] for r in s.query("SELECT gid FROM gate_docs WHERE mind = 'scratch'")}
    per_doc = _instances(s, "deploi")  # porter's stem of deploy
    assert len(agents) == 20 and agents <= set(per_doc)
    assert max(per_doc[g] for g in agents) == MAX_WORD_REPEATS  # 9,362 occurrences each in its text
    # the word statistics: every record holding the word still counts once, its occurrences are bounded too
    docs = len(per_doc)
    assert tuple(s.query_one("SELECT doc, cnt FROM gate_vocab_row WHERE term = 'deploy'")) == (
        docs, sum(per_doc.values()))
    assert tuple(s.query_one("SELECT doc, cnt FROM agent_vocab_row WHERE term = 'deploy'")) == (
        20, 20 * MAX_WORD_REPEATS)
    assert s.recall.doc_freq(["deploy"]) == {"deploy": docs}
    # the length BM25 reads is the capped document's, and the person's records are indexed as they are
    rows = {r.doc: r for r in s.recall.rank_rows("scratch")}
    assert {rows[g].length for g in agents} == {len(cap_words(fts5_words(f"{ATTACK} {ATTACK}")))} == {34}  # + 'd d'
    mine = s.recall.rank_rows(v.mind)
    assert [r.length for r in mine if r.kind == "decision"] == [len(fts5_words("Never deploy on Fridays incidents"))]
    with s.transaction() as c:
        for t in ("gate_vocab", "rank_fts", "agent_vocab_fts"):
            c.execute(f"INSERT INTO {t}({t}, rank) VALUES ('integrity-check', 1)")
    assert s.integrity_check() == "ok"
    assert "NEVER pass --force" in v.recall(PROMPT).text


def test_an_agents_record_edited_and_deleted_leaves_no_posting_behind(tmp_path: Path) -> None:
    """A contentless index deletes what it indexed: the same capped value goes to the 'delete'."""
    v = _person_vault(tmp_path)
    a = v.as_agent()
    m = a.remember("knowledge", "spam", ATTACK)
    s = v._store
    gid = s.query_one("SELECT gid FROM gate_docs WHERE rid = ?", (m.id,))[0]
    assert _instances(s, "deploi")[gid] == MAX_WORD_REPEATS
    a.memories.update(m.id, content="zebra " * 3000)
    assert gid not in _instances(s, "deploi") and _instances(s, "zebra")[gid] == MAX_WORD_REPEATS
    a.memories.delete(m.id)
    assert gid not in _instances(s, "zebra")
    assert s.query_one("SELECT count(*) FROM agent_vocab_row WHERE term = 'zebra'")[0] == 0
    with s.transaction() as c:
        for t in ("gate_vocab", "rank_fts", "agent_vocab_fts"):
            c.execute(f"INSERT INTO {t}({t}, rank) VALUES ('integrity-check', 1)")


def test_a_context_caps_each_record_before_it_on_its_own(tmp_path: Path) -> None:
    """A threaded episode's context holds the two records before it: each capped alone (as a team vault joins their
    capped rank_body), and a body holding the joiner cannot split itself into more parts."""
    v = syn.open_vault(tmp_path)
    a = v.as_agent()
    a.episodes.log("one", outcome=ATTACK, thread="t")
    two = a.episodes.log("two", outcome="soon", thread="t")
    # the package refuses a control character in text; the sqlite3 shell writes one (its index writes wait in the
    # queue for the next write of the package)
    split = ("deploy " * 32 + CONTEXT_SEP) * 120  # 120 parts of 32, were the joiner kept
    with sqlite3.connect(tmp_path / ".synapse" / "synapse.db") as raw:
        raw.execute("UPDATE episodes SET outcome = ? WHERE id = ?", (split, two.id))
    raw.close()
    third = a.episodes.log("three", outcome="done", thread="t")
    s = v._store
    gid = s.query_one("SELECT gid FROM gate_docs WHERE rid = ?", (third.id,))[0]
    s.query("CREATE VIRTUAL TABLE IF NOT EXISTS temp.cap_vocab USING fts5vocab(main, rank_fts, instance)")
    by_col = dict(s.query("SELECT col, count(*) FROM temp.cap_vocab WHERE term = 'deploi' AND doc = ? GROUP BY col",
                          (gid,)))
    assert by_col == {"context": 2 * MAX_WORD_REPEATS}


def test_ordinary_text_is_indexed_as_it_is_and_a_capped_text_reads_back_as_its_capped_words() -> None:
    rnd = random.Random(5)
    alphabet = ["deploy", "Déploy", "café", "naïve", "東京", "x_y", "v1.2", "ÆSIR", "İstanbul", "ﬁsh", "٣٤", "a-b"]
    for _ in range(300):
        text = " ".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 120)))
        words = fts5_words(text)
        capped = capped_text(text)
        if max([words.count(w) for w in words] or [0]) <= MAX_WORD_REPEATS:
            assert capped == text
        else:
            assert capped is not None and fts5_words(capped) == cap_words(words)
    # the ASCII path gives FTS5's own words
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE w USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE wv USING fts5vocab(w, instance)")
    for i in range(200):
        text = "".join(rnd.choice("aZ9_ .,-'\t\n\x1f\x7f") for _ in range(rnd.randint(0, 60)))
        conn.execute("INSERT INTO w(rowid, x) VALUES (?, ?)", (i, text))
        got = [r[0] for r in conn.execute("SELECT term FROM wv WHERE doc = ? ORDER BY offset", (i,))]
        assert fts5_words(text) == got, text


def _answers(path: Path) -> list[str]:
    v = syn.open_vault(path)
    try:
        return [v.recall(q).text for q in (PROMPT, "billing redis worker", "what about fridays?", "queue token")]
    finally:
        v.close()


def test_a_v11_vault_is_capped_when_it_migrates_and_the_persons_answers_stay(tmp_path: Path) -> None:
    v = _person_vault(tmp_path)
    _attack(tmp_path, 5)
    before_cap = None
    v.close()
    conn = sqlite3.connect(tmp_path / ".synapse" / "synapse.db", isolation_level=None)
    downgrade(conn, 11)  # v11's indexes: every occurrence, as the finding's vault held them
    s = sqlite3.connect(tmp_path / ".synapse" / "synapse.db")
    s.execute("CREATE VIRTUAL TABLE temp.vi USING fts5vocab(main, rank_fts, instance)")
    before_cap = s.execute("SELECT count(*) FROM temp.vi WHERE term = 'deploi'").fetchone()[0]
    s.close()
    conn.close()
    assert before_cap > 5 * 9000
    answers = _answers(tmp_path)  # migrates
    again = store.SqliteStore(tmp_path / ".synapse" / "synapse.db")
    assert again.schema_version == store.SCHEMA_VERSION == 15
    assert max(_instances(again, "deploi").values()) == MAX_WORD_REPEATS
    assert again.integrity_check() == "ok"
    again.close()
    assert "NEVER pass --force" in answers[0]
    assert answers == _answers(tmp_path)


def test_the_cap_leaves_the_persons_answers_as_they_were(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same vault indexed with every occurrence (the cap's functions made the identity, as before v12) and
    capped: the person's rule is the answer to the finding's prompt and to its own question, as before. (An agent's
    records count in BM25's document count and average length, the vault's: between two of the person's records of
    near-equal score an answer may move with the lengths the agent's records now have, 32 words, not 9,362.)"""
    from synapse_nb.store.sqlite import rankcap_schema

    for name, path in (("capped", tmp_path / "capped"), ("every", tmp_path / "every")):
        path.mkdir()
        with monkeypatch.context() as m:
            if name == "every":
                m.setitem(rankcap_schema.RANK_FUNCTIONS, "synapse_rank_words", lambda t: t)
                m.setitem(rankcap_schema.RANK_FUNCTIONS, "synapse_rank_context", lambda t: t)
            _person_vault(path).close()
            _attack(path, 5)
            s = store.SqliteStore(path / ".synapse" / "synapse.db")
            n = sum(_instances(s, "deploi").values())
            assert (n < 5 * 9000) if name == "capped" else (n > 5 * 9000)
            s.close()
    capped, every = _answers(tmp_path / "capped"), _answers(tmp_path / "every")
    assert capped[0] == every[0] and capped[2] == every[2]
    assert "NEVER pass --force" in capped[0] and "Never deploy on Fridays" in capped[2]
