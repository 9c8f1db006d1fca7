"""PostgreSQL's dialect: ``%s`` placeholders, one bound array per list of values, ``tsvector`` search, and the gate
terms every ranked record stores.

The shared statements (:mod:`synapse_nb.store.sql`) are written with ``?``; :meth:`PgDialect.render` turns them
into psycopg's form when values are bound (``?`` -> ``%s``, a literal ``%`` -> ``%%``) and leaves a statement sent
without values as written (psycopg reads no placeholder in it, so a ``%`` stays one ``%``). What else PostgreSQL
says its own way:

- a list of values is one bound array: ``expr = ANY(?)`` (one statement, whatever the number of values);
- full-text search reads each kind table's stored ``tsvector`` through its GIN index, best match first by
  ``ts_rank``: the server folds and splits a record's text as :func:`~synapse_nb.text.fts_fold` and
  :func:`~synapse_nb.text.fts_query_terms` do, whatever its locale, and stems each word with english's Snowball
  stemmer and no stop list, like FTS5's porter (migration 27, ``search_vector``); search text becomes the words of
  :func:`search_query`, which the server's ``search_query()`` folds, splits and stems alike (every word required);
- every write of a ranked kind stores ``terms text[]`` (:func:`gate_terms`: what ``gate_df``/``gate_stats``
  count) and ``rank_body`` (the ranking document's stems, ``stem_all`` of :func:`rank_tokens`: each word at most 32
  times, as a local vault's index holds it).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from synapse_nb.models import RANKED_KINDS, TABLES
from synapse_nb.store.rankwords import cap_words
from synapse_nb.store.sql.dialect import CHUNK, Derived, Dialect, TextSearch
from synapse_nb.store.sql.history import (
    DELETE_HISTORY_OF,
    DELETE_LINKS_OF,
    DELETE_REVISIONS_OF,
    NEXT_VERSION,
    PRUNE_HISTORY,
)
from synapse_nb.store.sql.queries import DELETE_FLAGS, PRUNE_SESSIONS
from synapse_nb.store.sql.tables import DELETE_EXPIRED_MEMORIES
from synapse_nb.text import FTS_TOKEN_RE, MAX_FTS_QUERY_TERMS, MAX_QUERY_WORD_CHARS, fts_query_terms, normalise

__all__ = ["GATE_KINDS", "POSTGRES", "PgDialect", "RECOUNT_MISMATCHES", "gate_terms", "gate_text", "rank_tokens",
           "search_query"]


#: Recount every frequency from the records' terms and compare with gate_df / gate_stats (no row: equal), the
#: agents' unverified records' too (migration 18: ``agents``, ``agent_docs``; migration 30: ``agent_dl``).
RECOUNT_MISMATCHES = """
WITH docs AS (""" + " UNION ALL ".join(
    f"SELECT terms, source = 'agent'{' AND verified = 0' if k == 'memory' else ''} AS agent, "
    f"cardinality(rank_body) + cardinality(rank_ctx) AS dl FROM {TABLES[k]}"
    for k in RANKED_KINDS) + """),
recount AS (SELECT t AS term, count(*) AS n, count(*) FILTER (WHERE agent) AS a FROM docs, unnest(terms) t
             GROUP BY t),
stored AS (SELECT term, n, agents AS a FROM gate_df WHERE n > 0 OR agents <> 0)
SELECT coalesce(r.term, s.term) AS term, r.n AS recount, s.n AS stored
  FROM recount r FULL JOIN stored s ON s.term = r.term
 WHERE r.n IS DISTINCT FROM s.n
UNION ALL
SELECT coalesce(r.term, s.term) || ' (agents)', r.a, s.a
  FROM recount r FULL JOIN stored s ON s.term = r.term
 WHERE coalesce(r.a, 0) <> coalesce(s.a, 0)
UNION ALL
SELECT '(n_docs)', (SELECT count(*) FROM docs), (SELECT n_docs FROM gate_stats)
 WHERE (SELECT count(*) FROM docs) <> (SELECT n_docs FROM gate_stats)
UNION ALL
SELECT '(agent_docs)', (SELECT count(*) FROM docs WHERE agent), (SELECT agent_docs FROM gate_stats)
 WHERE (SELECT count(*) FROM docs WHERE agent) <> (SELECT agent_docs FROM gate_stats)
UNION ALL
SELECT '(agent_dl)', (SELECT coalesce(sum(dl), 0) FROM docs WHERE agent), (SELECT agent_dl FROM gate_stats)
 WHERE (SELECT coalesce(sum(dl), 0) FROM docs WHERE agent) <> (SELECT agent_dl FROM gate_stats)
"""

T = TypeVar("T")

#: The kinds that carry gate terms and a ranking document (the registry's ranked kinds).
GATE_KINDS = RANKED_KINDS
#: The columns a ranked record stores beside its fields: its gate terms and its ranking document's stems.
GATE_COLUMNS = (Derived("terms", "?"), Derived("rank_body", "stem_all(?::text[])"))


#: The shared DELETE statements as PostgreSQL runs them: through functions (migration 7, ``sql/locks.sql``). No
#: person's or agent's role holds DELETE on a table, because table-level DELETE also allows ``LOCK TABLE`` in any
#: mode (readers would wait); each function checks the caller as the row guard does and returns one row per
#: deleted row, so the statement's row count is the number deleted.
DELETES = {
    **{f"DELETE FROM {t} WHERE id = ?": f"SELECT * FROM delete_record('{t}', ?)"
       for t in ("memories", "checkpoints", "decisions", "lessons", "episodes", "notes")},
    DELETE_EXPIRED_MEMORIES: "SELECT * FROM delete_expired_memories(?, ?)",
    PRUNE_SESSIONS: "SELECT * FROM delete_sessions_before(?, ?)",
    DELETE_FLAGS: "SELECT * FROM delete_flags(?)",
    DELETE_HISTORY_OF: "SELECT * FROM purge_history(?)",
    PRUNE_HISTORY: "SELECT * FROM prune_history(?, ?, ?)",
    DELETE_REVISIONS_OF: "SELECT * FROM delete_revisions_of(?)",
    DELETE_LINKS_OF: "SELECT * FROM delete_links_of(?, ?)",
    # a record's next version counts every entry, those the caller may not read too (an agent's analysis of a
    # pending lesson): the owner's rights, as migration 9's history_next_version()
    NEXT_VERSION: "SELECT history_next_version(?)",
}


def gate_terms(text: str) -> list[str]:
    """The gate terms of a record's gate text: every word as the recall gate analyses a query (lower-cased,
    accents stripped, split like FTS5's ``unicode61``), words over 64 characters left out, sorted, unique.

    These are what ``gate_df`` counts, so a query's word statistics equal SQLite's FTS5 vocabulary's.

    >>> gate_terms("Déploy the v1.2.3 e-mail hook_name, Déploy!")
    ['2', '3', 'deploy', 'e', 'hook', 'mail', 'name', 'the', 'v1']
    """
    return sorted({t for t in FTS_TOKEN_RE.findall(normalise(text, len(text) + 1)) if len(t) <= MAX_QUERY_WORD_CHARS})


def rank_tokens(text: str) -> list[str]:
    """The tokens of a ranking document's text, in order (stemmed by the server: ``stem_all``), each distinct one at
    most :data:`~synapse_nb.store.rankwords.MAX_WORD_REPEATS` times: the rule of a local vault's index (review 75).

    >>> rank_tokens("Deploys, deploys: Café")
    ['deploys', 'deploys', 'cafe']
    >>> len(rank_tokens("deploy " * 4700))
    32
    """
    return cap_words(FTS_TOKEN_RE.findall(normalise(text, len(text) + 1)))


def _words(value: Any) -> str:
    if isinstance(value, str):
        value = json.loads(value)
    return " ".join(str(x) for x in value or ())


def gate_text(kind: str, r: Mapping[str, Any]) -> str:
    """The text the gate scores for a record given as columns (the generated ``gate_text`` column, in Python)."""
    if kind == "memory":
        return f"{r['key'].replace('_', ' ')} {r['content']} {_words(r['tags'])}"
    if kind == "checkpoint":
        return f"{r['doing']} {r['next_step'] or ''} {r['blockers'] or ''} {_words(r['changed_files'])}"
    if kind == "decision":
        return f"{r['decision']} {r['rationale'] or ''} {_words(r['tags'])}"
    if kind == "episode":
        return f"{r['task_key'].replace('_', ' ')} {r['outcome'] or ''} {_words(r['refs'])}"
    if kind == "note":
        return f"{r['name'].replace('_', ' ')} {r['trigger']}"
    raise KeyError(kind)


def search_query(text: str) -> str | None:
    """The words of a search box's text for the server's ``search_query()`` (None: no word, list instead)."""
    words = fts_query_terms(text, MAX_FTS_QUERY_TERMS)
    return " ".join(words) if words else None


@functools.lru_cache(maxsize=4096)
def _with_values(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


class PgDialect(Dialect):
    name = "postgresql"
    logins = True

    def render(self, sql: str, *, bound: bool) -> str:
        """``?`` as ``%s`` and a literal ``%`` as ``%%`` when values are bound; else the statement as written.

        >>> POSTGRES.render("SELECT key FROM meta WHERE key LIKE 'setting:%' AND value = ?", bound=True)
        "SELECT key FROM meta WHERE key LIKE 'setting:%%' AND value = %s"
        >>> POSTGRES.render("SELECT key FROM meta WHERE key LIKE 'setting:%'", bound=False)
        "SELECT key FROM meta WHERE key LIKE 'setting:%'"
        """
        sql = DELETES.get(sql, sql)
        return _with_values(sql) if bound else sql

    def batches(self, values: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
        """One batch, whatever the number of values (bound as one array); nothing when empty."""
        if values:
            yield values

    def is_in(self, expr: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        return f"{expr} = ANY(?)", (list(values),)

    def search_query(self, text: str) -> str | None:
        return search_query(text)

    def search(self, table: str, *, text_first: bool = False) -> TextSearch:
        return TextSearch(f"{table} t, search_query(?) q", "numnode(q) > 0 AND t.search_tsv @@ q",
                          "ts_rank(t.search_tsv, q) DESC")

    def derived_columns(self, kind: str) -> tuple[Derived, ...]:
        return GATE_COLUMNS if kind in GATE_KINDS else ()

    def derived_values(self, kind: str, fields: Mapping[str, Any]) -> tuple[Any, ...]:
        if kind not in GATE_KINDS:
            return ()
        text = gate_text(kind, fields)
        return gate_terms(text), rank_tokens(text)


#: The dialect of every team vault.
POSTGRES = PgDialect()
