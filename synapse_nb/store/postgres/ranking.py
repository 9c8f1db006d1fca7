"""Recall engine v2's ranking reads on a team vault: BM25 over each ranking document's body and context.

The SQLite backend ranks with FTS5's ``bm25()`` (porter tokenizer; columns body, context). Here the same formula runs
in one SQL statement over ``rank_docs`` (migration 3, ``sql/ranking.sql``): every gate record stores ``rank_body``
(its gate text's tokens from the package's analyser, stemmed by the server's Snowball English stemmer, repeats
kept) and ``rank_ctx`` (the stems of the previous two records of its thread); ``gate_stats`` holds N and the total
document length, folded at commit like the word statistics. Per query term ``t`` (stemmed the same way)::

    idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5)), 1e-6 when not positive      (n_t: documents of the vault holding t)
    tf     = w_body * tf_body + w_context * tf_context
    score  = sum_t idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)),  k1 = 1.2, b = 0.75

summed in term order (deterministic floating point), best first, ties by id. The stemmer differs from FTS5's
original Porter, so the two backends may rank a few documents differently; each is deterministic, and every machine
of a team reads the same numbers from one snapshot. That is ``bm25`` (every record); recall replays it from
``postings`` and ``rank_totals``, which also give the agents' unverified documents' part (migration 30), and weighs
by people's records (docs/recall.md).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from synapse_nb.store.postgres.db import PgDatabase
from synapse_nb.store.records import HEAD_CHARS, RankHit, RankRow, TermPostings
from synapse_nb.store.sql.authors import agents_case
from synapse_nb.store.sql.connection import Repository

__all__ = ["K1", "B", "RankingQueries"]

K1, B = 1.2, 0.75

_RANK_COLS = ("SELECT d.kind, d.id, d.thread, d.seq, d.actor, strpos(d.gate_text, chr(63)) > 0 AS q, "
              "cardinality(d.rank_body) + cardinality(d.rank_ctx) AS dl, m.expires_at, CASE WHEN d.thread IS NULL OR "
              f"strpos(d.gate_text, chr(63)) > 0 THEN NULL ELSE substr(d.gate_text, 1, {HEAD_CHARS}) END AS head, "
              f"{agents_case('d.kind', 'd.id')} AS agent FROM rank_docs d "
              "LEFT JOIN memories m ON d.kind = 'memory' AND m.id = d.id AND m.expires_at IS NOT NULL "
              "WHERE d.mind = ?")
RANK_ROWS = _RANK_COLS + " ORDER BY d.id"
RANK_ROWS_OF = (_RANK_COLS + " AND (d.id = ANY(?) OR d.thread = ANY(?) OR d.thread IN (SELECT e.thread "
                "FROM rank_docs e WHERE e.id = ANY(?) AND e.thread IS NOT NULL)) ORDER BY d.id")
# everyone's (N, total length), then the agents' unverified documents' (migration 30): recall weighs by people's
RANK_TOTALS = "SELECT n_docs, total_dl, agent_docs, agent_dl FROM gate_stats WHERE id = 1"
# per word: its stem (as RANK_BM25 stems it), the vault's documents holding it and the agents' unverified of them
# (rank_docs.agent, migration 30), then the mind's postings
RANK_STEMS = """
SELECT s.w, s.t, c.n, c.a
  FROM unnest(?::text[], stem_all(?::text[])) AS s(w, t)
  CROSS JOIN LATERAL (SELECT count(*) AS n, count(*) FILTER (WHERE d.agent) AS a FROM rank_docs d
                       WHERE d.rank_body @> ARRAY[s.t] OR d.rank_ctx @> ARRAY[s.t]) c
"""
RANK_POSTINGS = """
SELECT s.t, d.id, cardinality(array_positions(d.rank_body, s.t)), cardinality(array_positions(d.rank_ctx, s.t))
  FROM unnest(?::text[]) AS s(t)
  JOIN rank_docs d ON d.mind = ? AND (d.rank_body @> ARRAY[s.t] OR d.rank_ctx @> ARRAY[s.t])
"""
RANK_COUNT = ("SELECT (SELECT count(*) FROM rank_docs WHERE mind = ?) AS mine, "
              "(SELECT n_docs FROM gate_stats WHERE id = 1) AS everyone")
RANK_BM25 = """
WITH q AS MATERIALIZED (SELECT DISTINCT t FROM unnest(stem_all(?::text[])) AS t),
qa AS MATERIALIZED (SELECT coalesce(array_agg(t), '{}') AS a FROM q),
st AS MATERIALIZED (SELECT n_docs::float8 AS n, CASE WHEN n_docs > 0 THEN total_dl::float8 / n_docs ELSE 1 END AS avgdl
                      FROM gate_stats WHERE id = 1),
idf AS MATERIALIZED (
    SELECT q.t, greatest(ln((st.n - df.n + 0.5) / (df.n + 0.5)), 0) AS w
      FROM q CROSS JOIN st
      CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM rank_docs d
                           WHERE d.rank_body @> ARRAY[q.t] OR d.rank_ctx @> ARRAY[q.t]) df),
hit AS (
    SELECT d.id, cardinality(d.rank_body) + cardinality(d.rank_ctx) AS dl, d.rank_body, d.rank_ctx
      FROM rank_docs d WHERE d.mind = ? AND (d.rank_body && (SELECT a FROM qa) OR d.rank_ctx && (SELECT a FROM qa)))
SELECT h.id, s.score
  FROM hit h CROSS JOIN st
  CROSS JOIN LATERAL (
      SELECT sum(x.w * x.f * (%(k1)s + 1) / (x.f + %(k1)s * (1 - %(b)s + %(b)s * h.dl / st.avgdl))
                 ORDER BY x.t COLLATE "C") AS score
        FROM (SELECT idf.t, CASE WHEN idf.w > 0 THEN idf.w ELSE 1e-6 END AS w,
                     ? * cardinality(array_positions(h.rank_body, idf.t))
                     + ? * cardinality(array_positions(h.rank_ctx, idf.t)) AS f
                FROM idf) x
       WHERE x.f > 0) s
 WHERE s.score IS NOT NULL
 ORDER BY s.score DESC, h.id LIMIT ?
""".replace("%(k1)s", repr(K1)).replace("%(b)s", repr(B))


class RankingQueries(Repository[PgDatabase]):
    """``rank_rows``, ``bm25``, ``rank_count``, ``postings`` and ``rank_totals`` of
    :class:`~synapse_nb.store.base.RecallQueries` (mixed in). Recall replays ``bm25`` from the last two
    (``bm25_style = "sql"``: distinct stems in code-point order, ``tf = w_body * tf_body + w_context * tf_ctx``)."""

    bm25_style = "sql"
    remote = True

    def rank_state(self) -> None:
        """None: a team vault keeps no ``rank_log``; recall keys its structure arrays by the data version (the
        server's, the same on every machine) and keeps them in memory only."""

    def rank_changes(self, since: int, state: Any) -> None:
        """None: no log (see :meth:`rank_state`)."""

    def rank_logged(self, gen: int) -> None:
        """None: no log (see :meth:`rank_state`)."""

    def rank_cache_dir(self) -> None:
        """None: a team vault keeps its structure arrays in memory only."""

    def rank_digest(self, mind: str) -> tuple[str, ...]:
        """(): no file (see :meth:`rank_cache_dir`)."""
        return ()

    def keep_rank_digest(self, mind: str, gen: int, digest: str) -> bool:
        """False: no file (see :meth:`rank_cache_dir`)."""
        return False

    def rank_rows(self, mind: str, ids: Sequence[str] | None = None,
                  threads: Sequence[str] | None = None) -> builtins.list[Any]:
        if ids is None and threads is None:
            rows = self._db.query(RANK_ROWS, (mind,))
        else:
            rows = self._db.query(RANK_ROWS_OF, (mind, list(ids or ()), list(threads or ()), list(ids or ())))
        return [RankRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), int(r[6]), expires_at=r[7], head=r[8],
                        agent=bool(r[9]))
                for r in rows]

    def rank_totals(self, *, agents: bool = False) -> tuple[int, int]:
        """Everyone's and the agents' come in one read; inside a snapshot the other pair is kept for its version."""
        kept = self._db.snapshot_cache("rank_totals")
        if kept is not None and agents in kept:
            got: tuple[int, int] = kept[agents]
            return got
        row = self._db.query_one(RANK_TOTALS)
        n = [int(x or 0) for x in row] if row else [0, 0, 0, 0]
        if kept is not None:
            kept.update({False: (n[0], n[1]), True: (n[2], n[3])})
        return (n[2], n[3]) if agents else (n[0], n[1])

    def postings(self, mind: str, words: Sequence[str]) -> dict[str, Any]:
        words = list(dict.fromkeys(words))
        if not words:
            return {}
        stems = {r[0]: (r[1], int(r[2]), int(r[3])) for r in self._db.query(RANK_STEMS, (words, words))}
        tf: dict[str, dict[str, tuple[int, int]]] = {}
        for t, rid, tb, tc in self._db.query(RANK_POSTINGS, (sorted({t for t, _, _ in stems.values()}), mind)):
            tf.setdefault(t, {})[rid] = (int(tb or 0), int(tc or 0))
        out: dict[str, Any] = {}
        for w in words:
            t, n, a = stems[w]
            got = tf.get(t, {})
            ids = sorted(got)
            out[w] = TermPostings(t, tuple(ids), tuple(got[i][0] for i in ids), tuple(got[i][1] for i in ids), n,
                                  n_agents=a)
        return out

    def bm25(self, mind: str, words: Sequence[str], *, depth: int, w_body: float = 1.0,
             w_context: float = 0.2) -> builtins.list[Any]:
        if not words or depth <= 0:
            return []
        rows = self._db.query(RANK_BM25, (list(words), mind, float(w_body), float(w_context), int(depth)))
        return [RankHit(r[0], float(r[1])) for r in rows]

    def rank_count(self, mind: str) -> tuple[int, int]:
        row = self._db.query_one(RANK_COUNT, (mind,))
        return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)
