"""The SQL layer both backends share (``synapse_nb/store/sql/``): one statement, rendered by each backend.

Statements are written once with ``?``; SQLite sends them as written, PostgreSQL renders ``%s`` (and doubles a
literal ``%``) only when values are bound: psycopg reads no placeholder in a statement sent without values, so there
a ``%`` must stay one ``%``. Checked on both real backends (the team one as a plain and as an agent handle, whose
first statement travels with ``SET ROLE``), and the dialects' other answers one by one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.models import Memory
from synapse_nb.store.postgres.dialect import POSTGRES
from synapse_nb.store.records import View
from synapse_nb.store.sql import ALWAYS, CHUNK, Dialect
from synapse_nb.store.sqlite import SqliteStore
from synapse_nb.store.sqlite.dialect import SQLITE

T0 = "2026-01-01T12:00:00.000000Z"


def _pg(folder: Path, request: pytest.FixtureRequest) -> Any:
    from synapse_nb.store.postgres import PgStore

    project = request.getfixturevalue("new_team_project")("sqllayer")
    return PgStore(request.getfixturevalue("pg_admin_url"), project, folder=folder)


OPENERS: dict[str, Callable[[Path, pytest.FixtureRequest], Any]] = {
    "sqlite": lambda folder, request: SqliteStore(folder / "synapse.db"),
    "postgres": _pg,
    "postgres-agent": lambda folder, request: _pg(folder, request).for_actor("agent"),
}


@pytest.fixture(params=sorted(OPENERS))
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    s = OPENERS[request.param](tmp_path, request)
    yield s
    s.close()


def test_a_literal_percent_reads_as_written_with_and_without_bound_values(db: Any) -> None:
    assert [tuple(r) for r in db.query("SELECT '100%' AS v, 'a%%b' AS w")] == [("100%", "a%%b")]
    assert db.query_one("SELECT '100%' || ? AS v", ("x",))["v"] == "100%x"
    assert db.query_one("SELECT 'a%%b' || ? || '%' AS v", ("?",))["v"] == "a%%b?%"  # a bound '?' is a value
    assert [r[0] for r in db.iter_query("SELECT '50%' AS v")] == ["50%"]


def test_every_dialect_renders_its_placeholder_only_where_values_are_bound() -> None:
    sql = "SELECT key FROM meta WHERE key LIKE 'setting:%' AND value = ?"
    assert SQLITE.render(sql, bound=True) == SQLITE.render(sql, bound=False) == sql
    assert POSTGRES.render(sql, bound=True) == "SELECT key FROM meta WHERE key LIKE 'setting:%%' AND value = %s"
    assert POSTGRES.render("SELECT '100%'", bound=False) == "SELECT '100%'"
    assert isinstance(SQLITE, Dialect) and isinstance(POSTGRES, Dialect) and ALWAYS == "TRUE"


def test_lists_of_values_bind_as_each_backend_binds_them() -> None:
    ids = [f"id{i}" for i in range(CHUNK + 3)]
    assert [len(b) for b in SQLITE.batches(ids)] == [CHUNK, 3] and [len(b) for b in SQLITE.batches(ids, 400)] == [
        400, CHUNK + 3 - 400]
    assert SQLITE.is_in("id", ["a", "b"]) == ("id IN (?,?)", ("a", "b"))
    assert [len(b) for b in POSTGRES.batches(ids)] == [CHUNK + 3]  # one array, one statement
    assert POSTGRES.is_in("id", ["a", "b"]) == ("id = ANY(?)", (["a", "b"],))
    assert list(SQLITE.batches([])) == [] == list(POSTGRES.batches([]))  # nothing to ask: no statement
    assert (SQLITE.unindexed("mind"), POSTGRES.unindexed("mind")) == ("+mind", "mind")
    assert (SQLITE.same("b", "?"), POSTGRES.same("b", "?")) == ("b IS ?", "b IS NOT DISTINCT FROM ?")


def test_search_text_becomes_one_bound_value_or_none() -> None:
    assert SQLITE.search_query('deploy "prod" OR x*') == '"deploy" "prod" "or" "x"'
    assert POSTGRES.search_query('deploy "prod" OR x*') == "deploy prod or x"
    assert SQLITE.search_query("?! --") is None and POSTGRES.search_query("?! --") is None
    s = SQLITE.search("memories", text_first=True)
    assert "CROSS JOIN" in s.source and s.condition == "memories_fts MATCH ?"
    assert "JOIN" in SQLITE.search("memories").source and "CROSS" not in SQLITE.search("memories").source


def test_derived_columns_are_the_team_vaults_gate_terms_of_ranked_kinds_only() -> None:
    assert SQLITE.derived_columns("memory") == () and SQLITE.derived_values("memory", {}) == ()
    assert [d.column for d in POSTGRES.derived_columns("memory")] == ["terms", "rank_body"]
    assert POSTGRES.derived_columns("lesson") == ()  # lessons are not ranked
    terms, tokens = POSTGRES.derived_values("note", {"name": "how_to", "trigger": "Déploy déploy"})
    assert terms == ["deploy", "how", "to"] and tokens == ["how", "to", "deploy", "deploy"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_broken_rule_is_the_packages_error_on_every_backend(backend: str, request: pytest.FixtureRequest,
                                                              tmp_path: Path) -> None:
    """Never ``sqlite3.IntegrityError`` or a psycopg error: a uniqueness rule is a ConflictError, a CHECK a
    ValidationError, and nothing of the transaction is written. (An agent's writes are the human gate's to refuse:
    tests/team/test_team_gate.py.)"""
    db = OPENERS[backend](tmp_path, request)
    try:
        m = Memory(id="mem_000000000001", mind="default", created_at=T0, updated_at=T0, category="knowledge",
                   key="k", content="c")
        db.memories.insert(m)
        with pytest.raises(ConflictError):
            db.memories.insert(dataclasses.replace(m, id="mem_000000000002"))  # same (mind, category, key)
        with pytest.raises(ValidationError), db.transaction():
            db.memories.insert(dataclasses.replace(m, id="mem_000000000003", key="k3", source="bogus"))
        assert [x.id for x in db.memories.list(View("default", T0))] == [m.id]
    finally:
        db.close()
