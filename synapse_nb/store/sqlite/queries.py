"""What a local vault reads its own way: recall's word statistics (FTS5's vocabulary), its candidates' rows, its
BM25 (FTS5's ``bm25()``), and the index outbox (``index_outbox``, filled by triggers).

Everything else is the shared SQL of :mod:`synapse_nb.store.sql`; ranking's inputs are
:mod:`synapse_nb.store.sqlite.ranking`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

from synapse_nb.models import RANKED_KINDS, TABLES
from synapse_nb.store.records import Candidate, RankHit
from synapse_nb.store.sql import CandidateDocs
from synapse_nb.store.sql import RecallQueries as SharedRecallQueries
from synapse_nb.store.sql.dialect import chunks, marks
from synapse_nb.store.sqlite.db import Database
from synapse_nb.store.sqlite.ranking import RankingQueries

__all__ = ["OutboxQueries", "RecallQueries"]

# -- recall: candidates and word statistics --------------------------------------------------------------------
COUNT_GATE_DOCS = "SELECT count(*) FROM gate_docs"
# The mind filter reads the covering index gate_docs_mind (gid, mind, rid), never the rows with their text.
RANK_BM25 = ("SELECT d.rid, -bm25(rank_fts, ?, ?) AS s FROM rank_fts "
             "JOIN gate_docs d INDEXED BY gate_docs_mind ON d.gid = rank_fts.rowid "
             "WHERE rank_fts MATCH ? AND d.mind = ? ORDER BY s DESC, d.rid LIMIT ?")
RANK_COUNT = "SELECT sum(mind = ?), count(*) FROM gate_docs"
# schema v8: the agents' unverified candidates (agent_gids) and their words (agent_vocab_fts, read through
# agent_vocab_row); people's are the rest
COUNT_AGENT_DOCS = "SELECT count(*) FROM agent_gids"


class RecallQueries(RankingQueries, SharedRecallQueries[Database]):
    """N from ``gate_docs``, document frequencies from the ``gate_vocab`` FTS5 vocabulary (exact, free), the agents'
    unverified records' from ``agent_gids`` and the ``agent_vocab_fts`` vocabulary (schema v8), BM25 from FTS5's
    ``bm25()`` over ``rank_fts``; the rest is shared."""

    def count(self, *, agents: bool = False) -> int:
        row = self._db.query_one(COUNT_AGENT_DOCS if agents else COUNT_GATE_DOCS)
        return int(row[0]) if row else 0

    def fetch(self, mind: str, ids_by_kind: Mapping[str, Iterable[str]]) -> list[Candidate]:
        out: list[Candidate] = []
        for kind in RANKED_KINDS:
            ids = sorted(set(ids_by_kind.get(kind, ())))
            exp = "t.expires_at" if kind == "memory" else "NULL"
            for chunk in chunks(ids):
                rows = self._db.query(
                    f"SELECT t.id, t.mind, t.updated_at, {exp} AS expires_at, g.body FROM {TABLES[kind]} t "
                    f"JOIN gate_docs g ON g.rid = t.id WHERE +t.mind = ? AND t.id IN ({marks(len(chunk))})",
                    (mind, *chunk))
                out += [Candidate(kind, r["id"], r["mind"], r["body"], r["updated_at"], r["expires_at"]) for r in rows]
        out.sort(key=lambda c: c.id)
        return out

    def doc_freq(self, terms: Sequence[str], *, agents: bool = False) -> dict[str, int]:
        if not terms:
            return {}
        rows = self._db.query(f"SELECT term, doc FROM {'agent_vocab_row' if agents else 'gate_vocab_row'} "
                              f"WHERE term IN ({marks(len(terms))})", tuple(terms))
        return {r["term"]: int(r["doc"]) for r in rows}

    # -- ranking (schema v3): gate_docs is the ranking table, rank_fts its FTS5 index (porter; body, context) --
    def bm25(self, mind: str, words: Sequence[str], *, depth: int, w_body: float = 1.0,
             w_context: float = 0.2) -> list[RankHit]:
        if not words or depth <= 0:
            return []
        # every word is a [^\W_]+ run (recall's analyser), so quoting is safe: FTS5 keywords are plain terms
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self._db.query(RANK_BM25, (w_body, w_context, match, mind, depth))
        return [RankHit(r[0], float(r[1])) for r in rows]

    def rank_count(self, mind: str) -> tuple[int, int]:
        row = self._db.query_one(RANK_COUNT, (mind,))
        return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)


# -- the index outbox -------------------------------------------------------------------------------------------
OUTBOX_ANY = "SELECT 1 FROM index_outbox LIMIT 1"
OUTBOX_PENDING = "SELECT rid, seq FROM index_outbox ORDER BY seq LIMIT ?"
OUTBOX_ACK = "DELETE FROM index_outbox WHERE rid = ? AND seq = ?"
OUTBOX_HIGH_WATER = "SELECT coalesce(max(seq), 0) FROM index_outbox"
OUTBOX_ACK_THROUGH = "DELETE FROM index_outbox WHERE seq <= ?"


class OutboxQueries(CandidateDocs[Database]):
    """The :class:`~synapse_nb.store.base.Outbox` of a local vault: ``index_outbox``, one row per change (the
    triggers queue the record id in the writing transaction); the candidates' reads are shared."""

    def has_pending(self) -> bool:
        return self._db.query_one(OUTBOX_ANY) is not None

    def wait(self, timeout: float) -> bool:
        """Poll :meth:`has_pending` every 50 ms until it is True or ``timeout`` seconds passed."""
        end = time.monotonic() + max(0.0, timeout)
        while not self.has_pending():
            if time.monotonic() >= end:
                return False
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
        return True

    def pending(self, limit: int) -> list[tuple[str, int]]:
        return [(r["rid"], int(r["seq"])) for r in self._db.query(OUTBOX_PENDING, (limit,))]

    def ack(self, entries: Sequence[tuple[str, int]]) -> None:
        self._db.executemany(OUTBOX_ACK, entries)

    def high_water(self) -> int:
        row = self._db.query_one(OUTBOX_HIGH_WATER)
        return int(row[0]) if row else 0

    def ack_through(self, seq: int) -> None:
        self._db.write(OUTBOX_ACK_THROUGH, (seq,))
