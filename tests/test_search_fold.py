"""Search folds a word as SQLite FTS5's ``unicode61 remove_diacritics 2`` tokenizer folds what it indexes
(:func:`synapse_nb.text.fts_fold`): its case and its Latin accents, never the database's locale (review 74).

F3: a query was lower-cased by ``str.lower``, which makes "İ" an "i" and a combining dot (U+0307); the word
pattern split the word there, so ``memory search İZMİR`` asked FTS5 for "i", "zmi" and "r" and found nothing, while
FTS5 had indexed the memory's "İZMİR" as "izmir". A team vault's server folds a record's search text with the same
table (migration 27: ``tests/team/test_team_search_locale.py``).
"""

from __future__ import annotations

import collections
import importlib.util
import json
import random
import re
import sqlite3
import unicodedata
from pathlib import Path

import synapse_nb as syn
from synapse_nb.models import Memory
from synapse_nb.store.records import View
from synapse_nb.store.sqlite import SqliteStore
from synapse_nb.text import FTS_DIACRITICS, FTS_TOKEN_RE, fts_fold, fts_query_terms

ROOT = Path(__file__).resolve().parent.parent
#: What real text holds around the letters whose folding matters: accents composed and combining, the Turkish
#: dotted and dotless i, German sharp s, final and capital sigma, other scripts, digits, punctuation, spaces.
ALPHABET = [*"abcdeiz ABCIZ 0129 _-.,;:!?'\"()[]*#/\\@", "\t", "\n", "\xa0", "\u2003", "\u3000", "\u200b",
            "é", "É", "e\u0301", "E\u0301", "ñ", "Ü", "ö", "Ö", "ß", "ẞ", "İ", "ı", "i\u0307", "Σ", "ς", "σ", "Ά",
            "ΐ", "Ё", "ё", "Ł", "ø", "ǅ", "ſ", "µ", "日", "本", "한", "ا", "\u0663", "²", "Ⅻ", "ﬁ"]


def test_a_dotted_capital_i_in_a_query_finds_the_word(vault: syn.Vault) -> None:
    """Review 74 F3: "İZMİR" copied from a memory found nothing (the query's words were "i", "zmi", "r")."""
    mem = vault.remember("project", "office", "The İZMİR office owns the payments cluster")
    for query in ("İZMİR", "İzmir", "izmir", "IZMIR", "i\u0307zmi\u0307r"):
        assert [m.id for m in vault.memories.search(query)] == [mem.id], query
    assert fts_query_terms("İZMİR") == ["izmir"]


def test_a_texts_own_words_find_it_in_a_local_vault(tmp_path: Path) -> None:
    """Any memory is found by a search for its own words, whatever their case and accents: 400 texts drawn from
    ALPHABET (seeded). Before, every text holding "İ" or a combining accent after a letter ("e" + U+0301) was not
    (its query split the word there): 203 of these."""
    rng = random.Random(74)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 60))) for _ in range(400)]
    store = SqliteStore(tmp_path / "synapse.db")
    try:
        ids = {}
        for i, text in enumerate(texts):
            ids[text] = f"mem_{i:012x}"
            store.memories.insert(Memory(id=ids[text], mind="default", created_at="2026-01-01T12:00:00.000000Z",
                                         updated_at="2026-01-01T12:00:00.000000Z", category="project", key=f"k{i}",
                                         content=text))
        view = View("default", "2026-01-02T00:00:00.000000Z")
        lost = [t for t in texts if fts_query_terms(t)
                and ids[t] not in {m.id for m in store.memories.search(view, t, limit=500)}]
        assert lost == []
    finally:
        store.close()


def _fts5_terms(docs: dict[int, str]) -> dict[int, list[str]]:
    """The terms SQLite FTS5 (``unicode61 remove_diacritics 2``, as the vault's indexes) makes of each doc."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(b, tokenize='unicode61 remove_diacritics 2')")
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    con.executemany("INSERT INTO f(rowid, b) VALUES (?, ?)", docs.items())
    out: dict[int, list[str]] = collections.defaultdict(list)
    for doc, term in con.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        out[doc].append(term)
    con.close()
    return out


def test_fts_fold_folds_every_letter_and_mark_as_fts5() -> None:
    """Every letter, digit and mark of Unicode, between two letters: where FTS5 reads one word, fts_fold gives that
    word (case, accents, "İ", "ς", "ſ"); a mark FTS5 removes is one fts_fold drops, and every other mark separates
    words in both. The one difference allowed: a letter FTS5's Unicode 6.1 tables give no case (Cherokee, Georgian
    Mtavruli, Osage, Adlam...), which str.lower lower-cases."""
    chars = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF
             and unicodedata.category(chr(c))[0] in "LNM"]
    fts = _fts5_terms({ord(ch): f"a{ch}b" for ch in chars})
    uncased = []
    for ch in chars:
        terms, ours = fts[ord(ch)], FTS_TOKEN_RE.findall(fts_fold(f"a{ch}b"))
        if unicodedata.category(ch)[0] == "M":
            assert (terms == ["ab"]) == (fts_fold(ch) == "") == (ch in FTS_DIACRITICS), hex(ord(ch))
            # (a mark newer than FTS5's tables it takes as part of a word: the tokenizers differ there, not the fold)
            assert ours == terms or fts_fold(ch) == ch, hex(ord(ch))
        elif len(terms) == 1 and FTS_TOKEN_RE.fullmatch(ch) and terms != ours:
            assert terms == [f"a{ch}b"] and ours == [f"a{ch.lower()}b"] != terms, hex(ord(ch))
            uncased.append(ch)
    assert "Ꭰ" in uncased and "Ა" in uncased and not any(ord(ch) < 0x370 for ch in uncased)  # Ϳ (7.0) is the first
    assert (fts_fold("ÉCOLE Österreich İZMİR ΟΔΟΣ Łódź STRAẞE ǅ ſ µ ﬁ ё")
            == "ecole osterreich izmir οδοσ łodz straße ǆ s μ ﬁ ё")


def _generated(text: str) -> str:
    start = text.index("-- generated by tools/search_fold_sql.py")
    return text[start:text.index("-- end of generated\n", start) + len("-- end of generated\n")]


def test_the_team_servers_tables_are_the_packages() -> None:
    """Migration 27's tables (what the server folds and which characters make a word) are what
    tools/search_fold_sql.py makes of fts_fold and FTS_TOKEN_RE: under Unicode 14.0 (Python 3.11, the oldest the
    package runs on), the generated text itself; under a newer Unicode, every character the server folds is folded
    so by the package, and every character it takes as a word's is one to the package."""
    spec = importlib.util.spec_from_file_location("search_fold_sql", ROOT / "tools" / "search_fold_sql.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    migration = _generated((ROOT / "synapse_nb/store/postgres/sql/search_fold.sql").read_text(encoding="utf-8"))
    if unicodedata.unidata_version == "14.0.0":
        assert migration == tool.generate()
    literals = re.findall(r"RETURN \(?((?:'[^']*'\s*)+)", migration)
    assert len(literals) == 3
    folds, folded, words = ("".join(re.findall(r"'([^']*)'", lit)) for lit in literals)
    table = json.loads(folds)
    assert len(table) > 1600 and table["İ"] == "i" and table["\u0301"] == "" and table["Σ"] == "σ"
    assert all(fts_fold(ch) == to for ch, to in table.items())

    def chars(ranges: str) -> set[str]:
        out: set[str] = set()
        for a, b in re.findall(r"\\[uU]([0-9a-f]+)(?:-\\[uU]([0-9a-f]+))?", ranges):
            out.update(map(chr, range(int(a, 16), int(b or a, 16) + 1)))
        return out

    assert chars(folded) == set(table)
    assert all(FTS_TOKEN_RE.fullmatch(ch) for ch in chars(words)) and len(chars(words)) > 130_000
