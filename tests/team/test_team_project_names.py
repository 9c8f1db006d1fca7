"""A project's name is its PostgreSQL schema, written unquoted in every migration: PostgreSQL's reserved words are
refused when the name is checked, before any migration runs (a project named ``full`` was accepted and its first
migration failed with a syntax error)."""

from __future__ import annotations

import psycopg
import pytest

from synapse_nb.errors import ValidationError
from synapse_nb.store.postgres.migrate import RESERVED, check_project


@pytest.mark.parametrize("name", ["full", "user", "select", "order", "system_user"])
def test_a_reserved_word_is_refused_with_what_is_accepted(name: str) -> None:
    with pytest.raises(ValidationError, match="reserved words"):
        check_project(name)
    assert check_project(f"{name}_team") == f"{name}_team"


def test_the_list_holds_every_word_the_server_reserves(pg_admin_url: str) -> None:
    with psycopg.connect(pg_admin_url, autocommit=True) as con:
        reserved = {w for (w,) in con.execute("SELECT word FROM pg_get_keywords() WHERE catcode IN ('R', 'T')")}
        assert reserved <= RESERVED
        con.execute("CREATE SCHEMA between_words")  # an unreserved key word is a schema name like any other
        con.execute("DROP SCHEMA between_words")
        with pytest.raises(psycopg.errors.SyntaxError):
            con.execute("CREATE SCHEMA full")


def test_the_refusal_suggests_names_made_from_the_one_given() -> None:
    with pytest.raises(ValidationError, match="'team_user' or 'userteam'"):
        check_project("user")
