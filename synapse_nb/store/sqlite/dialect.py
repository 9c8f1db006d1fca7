"""SQLite's dialect: ``?`` is its own placeholder, FTS5 searches the kind tables, ``+column`` steers the planner.

The shared statements (:mod:`synapse_nb.store.sql`) run as written; what SQLite says its own way:

- a list of values binds one ``?`` per value, in chunks of :data:`~synapse_nb.store.sql.dialect.CHUNK` (below
  SQLite's limit on parameters);
- a kind table holds exactly its record's columns, in the registry's order, so a record reads as ``*``;
- ``+mind`` keeps the planner off the indexes on ``mind`` where an id list is the selective condition;
- NULL-safe equality is ``IS``;
- full-text search joins the kind table's contentless FTS5 index (``<table>_fts``, porter stemming), best match
  first by FTS5's rank; search text becomes an FTS5 query of quoted words (:func:`fts_query`).
"""

from __future__ import annotations

from collections.abc import Sequence

from synapse_nb.store.sql.dialect import Dialect, TextSearch
from synapse_nb.text import MAX_FTS_QUERY_TERMS, fts_query_terms

__all__ = ["SQLITE", "SqliteDialect", "fts_query"]


def fts_query(text: str) -> str | None:
    """Turn arbitrary user text into a safe FTS5 query: every word quoted, all required.

    Operators, quotes, parentheses and column filters in the input are treated as plain text; ``None`` when the
    text holds no word at all.

    >>> fts_query('deploy "prod" OR NOT x*')
    '"deploy" "prod" "or" "not" "x"'
    """
    words = fts_query_terms(text, MAX_FTS_QUERY_TERMS)
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


class SqliteDialect(Dialect):
    name = "sqlite"

    def columns(self, fields: Sequence[str], alias: str = "") -> str:
        return f"{alias}.*" if alias else "*"

    def unindexed(self, column: str) -> str:
        return f"+{column}"

    def same(self, left: str, right: str) -> str:
        return f"{left} IS {right}"

    def search_query(self, text: str) -> str | None:
        return fts_query(text)

    def search(self, table: str, *, text_first: bool = False) -> TextSearch:
        # CROSS JOIN keeps the FTS match as the outer loop (else SQLite may probe the FTS index once per row)
        join = "CROSS JOIN" if text_first else "JOIN"
        return TextSearch(f"{table}_fts f {join} {table} t ON t.rowid = f.rowid", f"{table}_fts MATCH ?", "f.rank")


#: The dialect of every SQLite vault.
SQLITE = SqliteDialect()
