"""A ranking document's ``context`` in a local vault: the SQL that computes it, and schema v11 (review 70).

The context of a threaded record is the bodies of the :data:`CONTEXT_N` records before it in its thread, by (seq,
id), oldest first (BM25 reads it at a lower weight: ``w_context``). Schema v3 took any records; from v11 a person's
record (a person wrote it, or verified it) takes the people's records before it alone: an agent's unverified record
(:func:`~synapse_nb.store.sql.authors.agents_case`, recall's ``RankRow.agent``) is left out, as the semantic document
leaves it out (``store/indexer.py`` ``_neighbours``) and the structure step's links do
(:class:`~synapse_nb.recall.threads.ThreadIndex`). An agent may give its episode any thread and seq: two of them
placed before a person's answer had pushed the person's question out of the answer's context and put the agent's
words in it (the answer then found for the agent's words, and no longer for the question's). An agent's record
still takes anyone's records before it.

The triggers that keep contexts current (v3's, recreated by v4) refresh a changed row's *followers*: from v11 the
next :data:`CONTEXT_N` records of any author and the next :data:`CONTEXT_N` people's records (the rows whose context
may hold the changed row's body under either rule; a row whose context is unchanged is written with the same value).
"""

from __future__ import annotations

from synapse_nb.store.rankwords import CONTEXT_SEP
from synapse_nb.store.sql.authors import agents_case

__all__ = ["CONTEXT_N", "SEP_SQL", "context_sql", "followers", "own_context", "v11_context_triggers"]

#: How many previous records of a thread form a ranking document's ``context``.
CONTEXT_N = 2
#: The joiner of a context's bodies as SQL: from v12 :data:`~synapse_nb.store.rankwords.CONTEXT_SEP` (each body's
#: words are capped on their own: rankcap_schema.py); ``"' '"`` gave v3 to v11's contexts.
SEP_SQL = f"char({ord(CONTEXT_SEP)})"


def context_sql(mind: str, thread: str, seq: str, rid: str, n: int = CONTEXT_N, *, people: bool = False,
                sep: str = SEP_SQL) -> str:
    """The context of a row: the bodies of the previous ``n`` ranking documents of its (mind, thread) by
    (seq, rid), oldest first, joined by ``sep`` (a body's own ``sep`` made a space; '' when none); ``people``:
    people's documents only (an agent's unverified one skipped). One scalar subquery per slot keeps the order defined
    (group_concat has no ORDER BY before SQLite 3.44)."""
    only = f"AND NOT ({agents_case('q.kind', 'q.rid')}) " if people else ""
    body = "q.body" if sep == "' '" else f"replace(q.body, {sep}, ' ')"
    slots = [f"coalesce((SELECT {body} FROM gate_docs q WHERE q.mind = {mind} AND q.thread = {thread} "
             f"AND q.rid <> {rid} AND (q.seq < {seq} OR (q.seq = {seq} AND q.rid < {rid})) {only}"
             f"ORDER BY q.seq DESC, q.rid DESC "
             f"LIMIT 1 OFFSET {k}), '')" for k in reversed(range(n))]
    trim = "' '" if sep == "' '" else f"' ' || {sep}"
    return "trim(" + f" || {sep} || ".join(slots) + f", {trim})"


def own_context(mind: str, thread: str, seq: str, rid: str, kind: str, sep: str = SEP_SQL) -> str:
    """v11's context of a row of kind ``kind`` (SQL expressions all): anyone's records before it for an agent's
    unverified record, the people's records before it for a person's."""
    return (f"CASE WHEN {agents_case(kind, rid)} THEN {context_sql(mind, thread, seq, rid, sep=sep)} "
            f"ELSE {context_sql(mind, thread, seq, rid, people=True, sep=sep)} END")


def followers(r: str, n: int = CONTEXT_N, *, people: bool = False) -> str:
    """gids of the next ``n`` documents of the thread of row ``r`` (their context holds ``r``'s body); ``people``:
    the next ``n`` people's documents."""
    only = f"AND NOT ({agents_case('f.kind', 'f.rid')}) " if people else ""
    return (f"SELECT f.gid FROM gate_docs f WHERE f.mind = {r}.mind AND f.thread = {r}.thread AND f.rid <> {r}.rid "
            f"AND (f.seq > {r}.seq OR (f.seq = {r}.seq AND f.rid > {r}.rid)) {only}ORDER BY f.seq, f.rid LIMIT {n}")


def _either(r: str) -> str:
    """The rows whose context may hold row ``r``'s body, an agent's or a person's: ``gid IN (...)``."""
    return f"(gid IN ({followers(r)}) OR gid IN ({followers(r, people=True)}))"


def v11_context_triggers(sep: str = SEP_SQL) -> str:
    """The followers' refresh when a threaded row comes, changes or goes (v3's triggers, with v11's rule), and every
    threaded row's context recomputed where the rule (or the joiner ``sep``) changes it."""
    own = own_context("gate_docs.mind", "gate_docs.thread", "gate_docs.seq", "gate_docs.rid", "gate_docs.kind", sep)
    return f"""DROP TRIGGER gate_docs_ctx_ai;
DROP TRIGGER gate_docs_ctx_au;
DROP TRIGGER gate_docs_ctx_ad;
CREATE TRIGGER gate_docs_ctx_ai AFTER INSERT ON gate_docs WHEN new.thread IS NOT NULL BEGIN
    UPDATE gate_docs SET context = {own} WHERE {_either("new")};
END;
CREATE TRIGGER gate_docs_ctx_au AFTER UPDATE OF body, thread, seq ON gate_docs
    WHEN new.thread IS NOT NULL OR old.thread IS NOT NULL BEGIN
    UPDATE gate_docs SET context = {own} WHERE {_either("new")} OR {_either("old")};
END;
CREATE TRIGGER gate_docs_ctx_ad AFTER DELETE ON gate_docs WHEN old.thread IS NOT NULL BEGIN
    UPDATE gate_docs SET context = {own} WHERE {_either("old")};
END;
UPDATE gate_docs SET context = {own} WHERE thread IS NOT NULL AND context <> {own};
"""
