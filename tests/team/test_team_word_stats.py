"""The vault-wide word statistics (gate_df) leave no word an agent login can read (migration 24, review 64).

``gate_df(term, n, agents)`` counts, per analysed word, the records of every mind holding it: recall and the
duplicate check need the counts vault-wide. Any agent login read the whole table with its own SQL, so it listed the
words of minds never granted to it, and a row that reached n = 0 was kept: a person's ``memory purge`` of "the vault
passphrase is Zorblaxquintet" left ``zorblaxquintet`` there for every agent login, for good. Now a row that reaches
0 is deleted by the commit's fold, and an agent login reads the counts only through ``gate_df_of(terms)``: the counts
of the words it names, never the list of words.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from tests.team.conftest import url_as

SECRET = "zorblaxquintet"
#: every table and view of the project an agent login may read, with what its rows hold
READABLE = ("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'v', 'm', 'p') AND has_table_privilege(c.oid, 'SELECT') "
            "ORDER BY 1")


def holding(c: psycopg.Connection[Any], project: str, word: str) -> list[str]:
    """The tables and views this login reads whose rows, or whose planner statistics, hold ``word``."""
    found = []
    for (name,) in c.execute(READABLE, (project,)).fetchall():
        row = c.execute(f"SELECT count(*) FROM {project}.{name} t WHERE lower(t::text) LIKE %s",
                        (f"%{word}%",)).fetchone()
        if row is not None and row[0]:
            found.append(name)
    row = c.execute("SELECT string_agg(tablename || '.' || attname, ',') FROM pg_stats WHERE schemaname = %s AND "
                    "lower(concat(most_common_vals::text, histogram_bounds::text)) LIKE %s",
                    (project, f"%{word}%")).fetchone()
    if row is not None and row[0]:
        found.append(f"pg_stats:{row[0]}")
    return found


def analyze(admin_url: str, project: str) -> None:
    """Refresh the planner's statistics of every table of the project (pg_stats shows them to a login that may read
    the table: its commonest values are rows of it)."""
    with psycopg.connect(admin_url, autocommit=True) as c:
        for (name,) in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (project,)).fetchall():
            c.execute(f"ANALYZE {project}.{name}")


@pytest.fixture()
def boxed(pg_admin_url: str, project: str) -> str:
    """An agent login granted only the mind 'sandbox' (``team grant LOGIN --mind sandbox``): its URL."""
    name = f"{project}_boxed_bot"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {name} LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, 'sandbox')", (name,))
    return url_as(pg_admin_url, name)


def test_a_purged_records_words_are_left_nowhere_an_agent_login_reads(
        pg_admin_url: str, project: str, human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    ops = human.with_mind("ops")
    mem = ops.remember("knowledge", "vault_pass", "the vault passphrase is Zorblaxquintet")
    human.remember("knowledge", "other", "the vault opens on mondays")
    analyze(pg_admin_url, project)
    assert holding(agent_sql, project, SECRET) != []  # the record's own table, while it exists (granted '*')
    ops.purge(mem.id)
    analyze(pg_admin_url, project)
    assert holding(agent_sql, project, SECRET) == []
    assert agent_sql.execute("SELECT * FROM gate_df_of(%s)", ([SECRET, "vault", "passphrase"],)).fetchall() == [
        ("vault", 1, 0)]
    with psycopg.connect(pg_admin_url) as c:  # no row of n = 0 is kept, for anyone
        assert c.execute(f"SELECT count(*) FROM {project}.gate_df WHERE n = 0").fetchone() == (0,)
        assert c.execute(f"SELECT term FROM {project}.gate_df WHERE term LIKE 'zorblax%%'").fetchall() == []


def test_an_agent_login_lists_no_word_of_a_mind_it_may_not_see(
        pg_admin_url: str, project: str, human: Any, boxed: str) -> None:
    human.with_mind("ops").remember("knowledge", "vault_pass", "the vault passphrase is Zorblaxquintet")
    analyze(pg_admin_url, project)
    with psycopg.connect(boxed, autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        assert holding(c, project, SECRET) == []
        for table in ("gate_df", "gate_pending"):  # the words of every mind; a running transaction's words
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(f"SELECT term FROM {table}")
        # the counts stay vault-wide (recall ranks alike on every machine): a word it names is counted
        assert c.execute("SELECT * FROM gate_df_of(%s)", (["passphrase", "nothing"],)).fetchall() == [
            ("passphrase", 1, 0)]


def test_a_word_no_record_holds_any_more_has_no_row_and_comes_back_with_one(
        pg_admin_url: str, project: str, human: Any, machine: Any, logins: dict[str, str]) -> None:
    """Every way a word leaves its last record (an agent's edit and deletion, a person's deletion) deletes its row in
    the same commit; the word written again counts from 1; the counts equal a recount."""
    bot = machine("bot", logins["agent"], actor="agent")
    mine = bot.remember("project", "own", "the build needs quuxfrob")
    person = human.remember("knowledge", "theirs", "rotate the wibblekey monthly")

    def rows() -> dict[str, tuple[int, int]]:
        with psycopg.connect(pg_admin_url) as c:
            got = c.execute(f"SELECT term, n, agents FROM {project}.gate_df WHERE term IN ('quuxfrob', 'wibblekey')")
            return {t: (n, a) for t, n, a in got.fetchall()}

    assert rows() == {"quuxfrob": (1, 1), "wibblekey": (1, 0)}
    bot.remember("project", "own", "the build needs make")  # the agent's edit drops the word
    assert rows() == {"wibblekey": (1, 0)}
    bot.remember("project", "own", "the build needs quuxfrob again")
    assert rows() == {"quuxfrob": (1, 1), "wibblekey": (1, 0)}
    bot.memories.delete(mine.id)
    human.memories.delete(person.id)
    assert rows() == {}
    assert human._store.integrity_check() == "ok"


def test_a_vault_migrated_to_24_drops_the_rows_at_0_it_kept(pg_admin_url: str) -> None:
    """A project at 23 whose purges left rows at n = 0 keeps none of them after migration 24, and its agent role
    reads gate_df no longer."""
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"wst{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:23]) == (0, 23)
        c.execute(f"SET search_path = {project}")
        ts = c.execute("SELECT next_stamp()").fetchone()
        assert ts is not None
        c.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                  "created_at, updated_at, terms) VALUES ('mem_0123456789ab', 'default', 'knowledge', 'k', "
                  "'the passphrase is zorblaxquintet', 2, 'user', 1, 1.0, %s, %s, "
                  "'{is,passphrase,the,zorblaxquintet}')", (ts[0], ts[0]))
        c.execute("DELETE FROM memories WHERE id = 'mem_0123456789ab'")
        assert c.execute("SELECT count(*) FROM gate_df WHERE n = 0").fetchone() == (4,)  # kept at 23
        assert c.execute("SELECT has_table_privilege(%s, 'gate_df', 'SELECT')", (f"{project}_agent",)).fetchone() \
            == (True,)
        assert migrate(c, project, MIGRATIONS[:24]) == (23, 24)
        c.execute(f"SET search_path = {project}")
        assert c.execute("SELECT count(*) FROM gate_df").fetchone() == (0,)
        assert c.execute("SELECT has_table_privilege(%s, 'gate_df', 'SELECT')", (f"{project}_agent",)).fetchone() \
            == (False,)
        c.execute(f"DROP SCHEMA {project} CASCADE")
