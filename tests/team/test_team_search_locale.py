"""A team vault's search finds what a local vault's finds, whatever the server's locale (review 74 F2).

The stored search vector was ``to_tsvector('english', <text>)``: the server lower-cased a record's text by the
database's locale while the package lower-cased the query in Python. Under "C" (``team dev-server`` and these
tests' server) only ASCII was lower-cased: "ÉCOLE", "ΑΘΗΝΑ" and "İZMİR" were never found; "ecole" found no "École"
(FTS5 removes accents); "“quoted”" was one word (the parser reads a "C" database's non-ASCII punctuation as
letters); and "the" listed every record (english's stop list drops it; FTS5 has none). Under tr_TR "INIT" became
"ınıt". Migration 27 folds and splits the text with the package's table (``search_vector``), the same on every
server; these tests hold a team vault's answers to a local vault's on the session's "C" database and on one of each
UTF-8 locale the machine has, and the server's table to the package's, character by character.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

import synapse_nb as syn
from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate
from synapse_nb.text import FTS_TOKEN_RE, fts_fold
from tests.team.test_team_locale import on_database, utf8_locale

#: A memory's key -> its text; a decision and a lesson.
MEMORIES = {
    "school": "ÉCOLE rules: the Élan service owns the Ökonomie reports",
    "deploy_doc": "DEPLOY INSTRUCTIONS: run the INIT script in the DIST folder",
    "athens": "ΑΘΗΝΑ office: “quoted” words live in deploy.sh",
    "office": "The İZMİR office owns the payments cluster",
    "streets": "ΟΔΟΣ Łódź STRAẞE, with Ø",
    "long": "ledger " + "q" * 2100 + " " + "帳簿" * 350,  # words past tsvector's 2,047 bytes
}
DECISION = "Use the INIT container for İzmir and ÖSTERREICH"
LESSON = "Reverted the CAFÉ retry change: it hid the İSTANBUL timeouts"
#: A query -> the memories it finds (in a local vault, and now in a team vault on any server).
FINDS = {
    "école": {"school"}, "ECOLE": {"school"}, "ökonomie": {"school"}, "elan": {"school"},
    "instructions": {"deploy_doc"}, "init": {"deploy_doc"}, "Dist": {"deploy_doc"},
    "αθηνα": {"athens"}, "Αθηνα": {"athens"}, "quoted": {"athens"}, "sh": {"athens"},
    "deploy": {"deploy_doc", "athens"}, "İZMİR": {"office"}, "izmir": {"office"}, "IZMIR": {"office"},
    "οδος": {"streets"}, "ΟΔΟΣ": {"streets"}, "ŁÓDŹ": {"streets"}, "lodz": set(), "straße": {"streets"},
    "ø": {"streets"},
    "the": {"school", "deploy_doc", "office"}, "with": {"streets"}, "owns": {"school", "office"},
    "the office": {"office"}, "istanbul": set(),
    # a long word is found by itself, and a query holding one is not cut to its other words (second reader of
    # review 74: the server dropped a word of 2,048 bytes or more, so "ledger qqq…" found every "ledger")
    "q" * 2100: {"long"}, "帳簿" * 350: {"long"}, "ledger " + "q" * 2100: {"long"}, "q" * 2099: set(),
    "ledger " + "q" * 2099: set(), "ledger": {"long"},
}
#: A query -> whether it finds the decision; the lesson.
DECIDES = {"init": True, "österreich": True, "OSTERREICH": True, "izmir": True, "the": True, "ecole": False}
LEARNS = {"cafe": True, "Café": True, "istanbul": True, "İstanbul": True, "the": True, "ecole": False}


@pytest.fixture()
def databases(pg_admin_url: str, project: str, team_url: str) -> Iterator[dict[str, str]]:
    """The project's admin URL on the session's database ("C") and, if the machine has a UTF-8 locale, on a new
    database of that locale migrated alike: locale -> URL."""
    urls = {"C": team_url}
    loc = utf8_locale()
    db = f"srch_{uuid.uuid4().hex[:10]}"
    if loc is not None:
        with psycopg.connect(pg_admin_url, autocommit=True) as c:
            c.execute(f"CREATE DATABASE {db} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE '{loc}' LC_CTYPE '{loc}'")
        with psycopg.connect(on_database(pg_admin_url, db), autocommit=True) as c:
            migrate(c, project)
        urls[loc] = on_database(team_url, db)
    try:
        yield urls
    finally:
        if loc is not None:
            with psycopg.connect(pg_admin_url, autocommit=True) as c:
                c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def answers(v: syn.Vault) -> dict[str, object]:
    """What each query finds in ``v`` after the corpus is written to it."""
    for key, text in MEMORIES.items():
        v.remember("project", key, text)
    v.decide(DECISION)
    v.lessons.create(LESSON)
    return {**{f"memory search {q!r}": {m.key for m in v.memories.search(q)} for q in FINDS},
            **{f"decision search {q!r}": bool(v.decisions.search(q)) for q in DECIDES},
            **{f"lesson search {q!r}": bool(v.lessons.search(q)) for q in LEARNS}}


def test_a_team_vault_finds_what_a_local_vault_finds_whatever_the_servers_locale(
        vault: syn.Vault, databases: dict[str, str], machine: Callable[..., syn.Vault]) -> None:
    """The same records for every query, in a local vault and in a team vault on each database: case, accents,
    "İ", final sigma, curly quotes, "deploy.sh", stop words. Before, the "C" database found none of "école",
    "αθηνα", "izmir", "quoted", "ökonomie", and every memory for "the"."""
    expected = {**{f"memory search {q!r}": keys for q, keys in FINDS.items()},
                **{f"decision search {q!r}": hit for q, hit in DECIDES.items()},
                **{f"lesson search {q!r}": hit for q, hit in LEARNS.items()}}
    assert answers(vault) == expected
    for loc, url in databases.items():
        got = answers(machine(f"m_{loc}", url))
        assert {q: a for q, a in got.items() if a != expected[q]} == {}, loc


def test_the_servers_fold_and_words_are_the_packages(pg_admin_url: str, databases: dict[str, str]) -> None:
    """search_fold() folds every character as fts_fold does, search_terms() takes as a word's the characters
    FTS_TOKEN_RE does, and search_vector() stems them into the same vector, on each database alike: no locale enters
    (ASCII by the "C" collation's lower(), the rest by the package's table, words by explicit ranges, no text search
    parser: the default one drops "²" and "①" under a UTF-8 locale and keeps them under "C")."""
    chars = [chr(o) for o in range(1, 0x110000) if not 0xD800 <= o <= 0xDFFF and chr(o) != "|"]
    vectors: dict[str, list[object]] = {}
    for loc, url in databases.items():
        project = url.partition("project=")[2]
        with psycopg.connect(url.split("?")[0], autocommit=True) as c:
            c.execute(f"SET search_path = {project}")
            row = c.execute("SELECT search_fold(%s)", ("|".join(chars),)).fetchone()
            assert row is not None
            folded = row[0].split("|")
            assert len(folded) == len(chars)
            assert [ch for ch, f in zip(chars, folded, strict=True) if f != fts_fold(ch)] == [], loc
            rows = c.execute("SELECT s ~ ('^[' || _search_word_chars() || ']$') FROM unnest(%s::text[]) s",
                             (chars,)).fetchall()
            assert [ch for ch, r in zip(chars, rows, strict=True)
                    if r[0] != bool(FTS_TOKEN_RE.fullmatch(ch))] == [], loc
            text = "ÉCOLE “quoted” deploy.sh İZMİR e\u0301x ΟΔΟΣ The_End 42"
            row = c.execute("SELECT search_terms(%s)", (text,)).fetchone()
            assert row is not None and row[0] == " ".join(FTS_TOKEN_RE.findall(fts_fold(text))), loc
            # every word character in a word of its own, stemmed: the same vectors on every database
            words = [f"x{ch}s" for ch in chars if FTS_TOKEN_RE.fullmatch(ch)]
            vectors[loc] = [c.execute("SELECT search_vector(%s)::text", (" ".join(words[i:i + 5000]),)).fetchone()
                            for i in range(0, len(words), 5000)]
            row = c.execute("SELECT search_vector('x² ① Ⅻ straße running')::text").fetchone()
            assert row is not None and row[0] == "'run':5 'straße':4 'x²':1 'ⅻ':3 '①':2", loc
    assert all(v == vectors['C'] for v in vectors.values())


def test_a_project_migrated_to_27_finds_its_records_whatever_their_case_and_accents(pg_admin_url: str) -> None:
    """Migration 27 rebuilds every kind's search vector from the rows it finds: records written under migration 26
    (which the "C" database's english vector did not find by "ecole", "αθηνα" or "izmir") are found after it."""
    project = f"srch{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:26]) == (0, 26)
        c.execute(f"SET search_path = {project}")
        row = c.execute("SELECT next_stamp()").fetchone()
        assert row is not None
        ts = row[0]
        c.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                  "created_at, updated_at, terms) VALUES ('mem_000000000001', 'default', 'project', 'school', "
                  "'ÉCOLE rules', 2, 'user', 1, 1.0, %s, %s, '{ecole,rules,school}')", (ts, ts))
        c.execute("INSERT INTO decisions(id, mind, decision, source, created_at, updated_at, terms) VALUES "
                  "('dec_000000000001', 'default', 'ΑΘΗΝΑ office', 'user', %s, %s, '{office,αθηνα}')", (ts, ts))
        c.execute("INSERT INTO lessons(id, mind, status, summary, source, created_at, updated_at) VALUES "
                  "('les_000000000001', 'default', 'pending', 'İZMİR timeouts', 'user', %s, %s)", (ts, ts))

        def found(query: str) -> list[str]:
            return [r[0] for r in c.execute(
                f"SELECT id FROM memories WHERE search_tsv @@ {query} UNION ALL "
                f"SELECT id FROM decisions WHERE search_tsv @@ {query} UNION ALL "
                f"SELECT id FROM lessons WHERE search_tsv @@ {query} ORDER BY 1").fetchall()]

        for word in ("ecole", "αθηνα", "izmir"):  # what migration 26's search read
            assert found(f"plainto_tsquery('english', '{word}')") == [], word
        assert migrate(c, project, MIGRATIONS[:27]) == (26, 27)
        c.execute(f"SET search_path = {project}")
        assert found("search_query('ecole')") == ["mem_000000000001"]
        assert found("search_query('αθηνα')") == ["dec_000000000001"]
        assert found("search_query('izmir')") == ["les_000000000001"]
        indexes = {r[0] for r in c.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s "
                                           "AND indexname LIKE '%%_search'", (project,)).fetchall()}
        assert indexes == {f"{t}_search" for t in ("memories", "checkpoints", "decisions", "lessons", "episodes",
                                                     "notes")}
        c.execute(f"DROP SCHEMA {project} CASCADE")
