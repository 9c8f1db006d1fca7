"""Recall engine v2's ranking reads on a local vault: what recall needs to compute FTS5's ``bm25()`` itself.

``rank_fts`` (schema v3) is the FTS5 index of ``gate_docs`` (``body``, ``context``; ``porter unicode61
remove_diacritics 2``). FTS5 evaluates ``bm25()`` for every row an OR query matches (about half the vault for
three everyday words), so recall reads the inputs instead and caches them per data version:

- :meth:`RankingQueries.postings`: a word's stem exactly as FTS5's porter tokenizer makes it (a private in-memory
  FTS5 table tokenizes it; cached), then its instances from a TEMP ``fts5vocab(main, rank_fts, instance)`` table,
  counted per document and column (what ``bm25()``'s ``xInst`` loop adds up) over the whole vault, so the number
  of documents is ``bm25()``'s ``xQueryPhrase`` count. Documents are named by rowid (``RankRow.doc``): recall
  keeps the mind's. A record holds each word at most 32 times (schema v12, :mod:`synapse_nb.store.rankwords`), so
  a read costs at most 32 instances a record holding the word, whatever its text repeats (review 75).
  A TEMP table lives on this connection only and changes nothing in the file, so a read-only
  vault reads it too.
- :meth:`RankingQueries.rank_totals`: N and the total token count from FTS5's own averages record
  (``rank_fts_data`` row 1: varints N, then one total per column), which is what ``bm25()`` reads; with
  ``agents=True`` the same of the agents' unverified records' index (schema v13, ``agent_rank_fts_data``), and a
  word's postings carry how many of those hold its stem (``agent_rank_vocab``): recall weighs by people's, the rest.
- :meth:`RankingQueries.rank_rows`: ``length`` from ``rank_fts_docsize`` (one varint per column), what
  ``bm25()``'s ``xColumnSize(-1)`` reads.
- :meth:`RankingQueries.rank_state` / :meth:`~RankingQueries.rank_changes`: schema v5's ``rank_log`` (every change
  to a ``gate_docs`` row, logged by triggers in the writer's transaction), which every process reads alike: recall
  keys its on-disk structure arrays by it (:mod:`synapse_nb.recall.rankfile`) and patches them with the ids it names.
- :meth:`RankingQueries.rank_digest` / :meth:`~RankingQueries.keep_rank_digest`: schema v10's ``rank_files``, the
  SHA-256 of each mind's file (:mod:`synapse_nb.store.sqlite.rankfile_schema`): a file without it is no file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from synapse_nb.models import RANKED_KINDS
from synapse_nb.own_files import own_folder
from synapse_nb.store.records import HEAD_CHARS, RankRow, RankState, TermPostings
from synapse_nb.store.sql import decode as dec
from synapse_nb.store.sql.authors import agents_case, agents_ids
from synapse_nb.store.sql.connection import Repository
from synapse_nb.store.sql.dialect import chunks, marks
from synapse_nb.store.sqlite.db import Database
from synapse_nb.store.sqlite.rankfile_schema import GET_RANK_DIGEST, SET_RANK_DIGEST

__all__ = ["RankingQueries", "fts5_stems", "varints"]

_TOKENIZE = "porter unicode61 remove_diacritics 2"
#: Most words whose stems are kept (the cache is emptied when full).
MAX_STEMS = 50_000

_COLS = ("SELECT d.kind, d.rid, d.thread, d.seq, d.actor, instr(d.body, '?') > 0, z.sz, d.gid, CASE WHEN "
         f"d.thread IS NULL OR instr(d.body, '?') > 0 THEN NULL ELSE substr(d.body, 1, {HEAD_CHARS}) END, "
         "{agent} FROM gate_docs d LEFT JOIN rank_fts_docsize z ON z.id = d.gid WHERE d.mind = ?")
_RANK_COLS = _COLS.format(agent=agents_case("d.kind", "d.rid"))  # RankRow.agent, by key
# a whole mind: the agents' records by one scan of each kind's table (a lookup per row cost 25% more)
RANK_ROWS = _COLS.format(agent="0") + " ORDER BY d.rid"
RANK_AGENTS = agents_ids()
# memories with an expiry, through the partial index that holds only them (left to choose, SQLite scans the mind's
# memories): a second statement costs less than joining every ranking document to its record
RANK_EXPIRY = ("SELECT id, expires_at FROM memories INDEXED BY memories_expiry WHERE expires_at IS NOT NULL "
               "AND +mind = ?")
RANK_AVERAGES = "SELECT block FROM rank_fts_data WHERE id = 1"
AGENT_AVERAGES = "SELECT block FROM agent_rank_fts_data WHERE id = 1"  # schema v13 (agent_rank_schema.py)
_VOCAB = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.synapse_rank_vocab USING fts5vocab(main, rank_fts, instance)"
# every instance as doc * 2 + (1 in the body), in one comma-separated text: at 10k records a word in 1,800 of them
# (2,150 instances) reads in ~0.6 ms so, ~2.8 ms as one row per instance (a Python tuple each); grouping them per
# document in SQL costs more than either
RANK_STATE = ("SELECT (SELECT value FROM meta WHERE key = 'vault_uid'), (SELECT gen FROM rank_log ORDER BY gen DESC "
              "LIMIT 1), (SELECT rid FROM rank_log ORDER BY gen DESC LIMIT 1), (SELECT min(gen) FROM rank_log)")
RANK_CHANGES = "SELECT DISTINCT rid FROM rank_log WHERE gen > ? AND gen <= ? ORDER BY rid"
RANK_LOGGED = "SELECT rid FROM rank_log WHERE gen = ?"
#: The folder, beside the database, of recall's on-disk caches.
CACHE_DIR = "cache"
# ... and how many agents' unverified documents hold the term (schema v13), in the same statement
RANK_INSTANCES = ("SELECT group_concat(doc * 2 + (col = 'body')), (SELECT doc FROM agent_rank_vocab WHERE term = ?1) "
                  "FROM temp.synapse_rank_vocab WHERE term = ?1")


def varints(blob: bytes | None) -> list[int]:
    """SQLite varints (FTS5's docsize and averages records), in order.

    >>> varints(bytes([3, 0x81, 0x00, 5]))
    [3, 128, 5]
    """
    out: list[int] = []
    if not blob:
        return out
    v, n = 0, 0
    for byte in blob:
        if n == 8:  # the ninth byte carries 8 bits
            out.append((v << 8) | byte)
            v, n = 0, 0
            continue
        v = (v << 7) | (byte & 0x7F)
        n += 1
        if byte < 0x80:
            out.append(v)
            v, n = 0, 0
    return out


def _length(blob: bytes | None) -> int:
    if not blob:
        return 0
    return sum(blob) if max(blob) < 0x80 else sum(varints(blob))  # one byte per column below 128 tokens


_stem_lock = threading.Lock()
_stem_conn: sqlite3.Connection | None = None
_stems: dict[str, tuple[str, ...]] = {}


def fts5_stems(words: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each word's terms as FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer makes them (cached).

    >>> fts5_stems(["running", "lakes"])
    {'running': ('run',), 'lakes': ('lake',)}
    """
    global _stem_conn
    with _stem_lock:
        missing = [w for w in dict.fromkeys(words) if w not in _stems]
        if missing:
            if _stem_conn is None:
                c = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
                c.execute(f"CREATE VIRTUAL TABLE p USING fts5(x, tokenize='{_TOKENIZE}')")
                c.execute("CREATE VIRTUAL TABLE pv USING fts5vocab(p, instance)")
                _stem_conn = c
            c = _stem_conn
            if len(_stems) + len(missing) > MAX_STEMS:
                _stems.clear()
            c.execute("BEGIN")
            try:
                c.executemany("INSERT INTO p(rowid, x) VALUES (?, ?)", list(enumerate(missing, 1)))
                got: dict[int, list[str]] = {}
                for doc, term in c.execute("SELECT doc, term FROM pv ORDER BY doc, offset"):
                    got.setdefault(doc, []).append(term)
            finally:
                c.execute("ROLLBACK")
            for i, w in enumerate(missing, 1):
                _stems[w] = tuple(got.get(i, ()))
        return {w: _stems[w] for w in words}


class RankingQueries(Repository[Database]):
    """``rank_rows``, ``postings`` and ``rank_totals`` of :class:`~synapse_nb.store.base.RecallQueries` (mixed in)."""

    bm25_style = "fts5"
    remote = False

    def rank_rows(self, mind: str, ids: Sequence[str] | None = None,
                  threads: Sequence[str] | None = None) -> list[RankRow]:
        with self._db.snapshot():  # one state for both statements
            expiry: dict[str, str] = {}
            rows: Sequence[Sequence[Any]]
            if ids is None and threads is None:
                rows = self._db.query(RANK_ROWS, (mind,))
                expiry.update((r[0], r[1]) for r in self._db.query(RANK_EXPIRY, (mind,)))
                agents = {r[0] for r in self._db.query(RANK_AGENTS, (mind,) * len(RANKED_KINDS))}
                if agents:
                    rows = [(*r[:9], r[1] in agents) for r in rows]
            else:
                rows = []
                for chunk in chunks(sorted(set(ids or ())), 400):
                    ids_in = marks(len(chunk))
                    rows += self._db.query(
                        _RANK_COLS + f" AND (d.rid IN ({ids_in}) OR d.thread IN (SELECT thread FROM gate_docs WHERE "
                        f"rid IN ({ids_in}) AND thread IS NOT NULL))", (mind, *chunk, *chunk))
                for chunk in chunks(sorted(set(threads or ())), 400):
                    rows += self._db.query(_RANK_COLS + f" AND d.thread IN ({marks(len(chunk))})",
                                           (mind, *chunk))
                rows = sorted({r[1]: r for r in rows}.values(), key=lambda r: r[1])
                mems = [r[1] for r in rows if r[0] == "memory"]
                for chunk in chunks(mems, 400):
                    expiry.update((r[0], r[1]) for r in self._db.query(
                        f"SELECT id, expires_at FROM memories WHERE id IN ({marks(len(chunk))}) "
                        "AND expires_at IS NOT NULL", tuple(chunk)))
        return [RankRow(r[0], r[1], r[2], dec.seq(r[3]), r[4], bool(r[5]), _length(r[6]), r[7],
                        expiry.get(r[1]) if r[0] == "memory" else None, r[8], bool(r[9])) for r in rows]

    def rank_state(self) -> RankState | None:
        row = self._db.query_one(RANK_STATE)
        if row is None or row[0] is None:
            return None
        return RankState(str(row[0]), int(row[1] or 0), str(row[2] or ""), int(row[3] or 0))

    def rank_changes(self, since: int, state: RankState) -> list[str] | None:
        if since > state.gen or (since < state.gen and since < state.first - 1):
            return None  # from another history, or older than the log
        if since == state.gen:
            return []
        return [r[0] for r in self._db.query(RANK_CHANGES, (since, state.gen))]

    def rank_logged(self, gen: int) -> str | None:
        row = self._db.query_one(RANK_LOGGED, (gen,))
        return None if row is None else str(row[0])

    def rank_cache_dir(self) -> Path | None:
        folder = Path(self._db.path).parent / CACHE_DIR  # read-only too: its files are read, never written
        return folder if own_folder(folder) else None  # a symlink there: no rank file (review 81)

    def rank_digest(self, mind: str) -> tuple[str, ...]:
        row = self._db.query_one(GET_RANK_DIGEST, (mind,))
        return () if row is None else tuple(str(d) for d in row if d is not None)

    def keep_rank_digest(self, mind: str, gen: int, digest: str) -> bool:
        return self._db.write_if_free(SET_RANK_DIGEST, (mind, gen, digest))

    def rank_totals(self, *, agents: bool = False) -> tuple[int, int]:
        row = self._db.query_one(AGENT_AVERAGES if agents else RANK_AVERAGES)
        v = varints(row[0]) if row is not None else []
        return (v[0], sum(v[1:])) if v else (0, 0)

    def postings(self, mind: str, words: Sequence[str]) -> dict[str, TermPostings]:
        """By ``RankRow.doc`` (the rowid), over the whole vault: the vault's document count comes with them, and
        the agents' unverified documents' (``agent_rank_vocab``, in the same statement)."""
        import numpy as np  # loaded with the gate; recall is the only caller

        stems = fts5_stems(words)
        out: dict[str, TermPostings] = {}
        if not getattr(self, "_vocab_ready", False):  # once per connection (TEMP tables are the connection's)
            self._db.query(_VOCAB)
            self._vocab_ready = True
        empty = np.zeros(0, np.int64)
        for w in dict.fromkeys(words):
            terms = stems[w]
            if len(terms) != 1:
                out[w] = TermPostings(None, (), empty, empty, 0, empty)
                continue
            row = self._db.query_one(RANK_INSTANCES, (terms[0],))
            a = np.fromstring(row[0], np.int64, sep=",") if row is not None and row[0] else empty.copy()
            a.sort()
            docs, start = np.unique(a >> 1, return_index=True)
            if len(docs) == 0:
                out[w] = TermPostings(terms[0], (), empty, empty, 0, empty)
                continue
            body = np.add.reduceat(a & 1, start)
            total = np.diff(np.append(start, len(a)))
            agents = int(row[1] or 0) if row is not None else 0
            out[w] = TermPostings(terms[0], (), body, total - body, len(docs), docs, agents)
        return out
