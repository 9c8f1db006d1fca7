"""Schema v13 of a local vault: the ranking statistics of agents' unverified records, so that recall weighs a query's
words by people's records alone (review 83).

Recall's BM25 reads, per stem, how many ranking documents hold it, and their number and length (``rank_fts``: every
record of every mind). An agent's records of a person's words, in its own mind, made those words weigh almost nothing
and the person's rule left the next agent's recall. From v13 ``agent_rank_fts`` (contentless FTS5, ``rank_fts``'s
tokenizer and columns, each value capped as ``rank_fts``'s: rankcap_schema.py) indexes the ranking documents of the
``gate_docs`` rows ``agent_gids`` names (schema v8: an agent wrote the record and, a memory, no person verified it),
read through ``agent_rank_vocab`` (fts5vocab ``row``: per stem, how many of them hold it) and its averages record
(their number, and their tokens per column). People's statistics are ``rank_fts``'s less these
(:meth:`~synapse_nb.store.sqlite.ranking.RankingQueries.postings` ``n_agents``, ``rank_totals(agents=True)``).

v8's three triggers on ``gate_docs`` are recreated with the new index's writes in their bodies, so that both indexes
follow ``agent_gids`` in one order: a row enters when it is written as an agent's unverified record, leaves when a
person verifies it, takes it over or deletes it, and is indexed again when its body or its context (a thread's
records before it) changes. A write that changes neither and keeps the row's side queues nothing.

Cost: an agent's write queues one more FTS5 write (the ``fts_queue`` of v4); a person's, none.
"""

from __future__ import annotations

from synapse_nb.store.sql.authors import agents_case
from synapse_nb.store.sqlite.rankcap_schema import CAPPED_COLUMNS

__all__ = ["AGENT_RANK_FTS", "V13_AGENT_RANK"]

#: The v13 FTS5 table (a target of ``fts_queue``) and its columns.
AGENT_RANK_FTS = ("agent_rank_fts", ("body", "context"))


def _queue(target: str, rowid: str, values: tuple[str, ...], *, delete: bool = False, when: str = "") -> str:
    """Queue one write of ``target`` (applied with the others before the commit), if ``when`` holds."""
    cmd = "'delete'" if delete else "NULL"
    slots = ", ".join(f"c{i}" for i in range(len(values)))
    return (f"INSERT INTO fts_queue(target, cmd, id, {slots}) SELECT '{target}', {cmd}, {rowid}, {', '.join(values)}"
            + (f" WHERE {when}" if when else "") + ";")


def _v13() -> str:
    agent_new = agents_case("new.kind", "new.rid")
    held_old = "EXISTS (SELECT 1 FROM agent_gids WHERE gid = old.gid)"  # read before agent_gids changes below
    body_moved = "old.body IS NOT new.body"
    rank_moved = "(old.body IS NOT new.body OR old.context IS NOT new.context)"
    words, ctx = CAPPED_COLUMNS["rank_fts"]
    rank_cols = ", ".join(AGENT_RANK_FTS[1])
    return f"""
DROP TRIGGER gate_docs_agent_ai;
DROP TRIGGER gate_docs_agent_au;
DROP TRIGGER gate_docs_agent_ad;
CREATE VIRTUAL TABLE agent_rank_fts USING fts5({rank_cols}, content='',
    tokenize="porter unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE agent_rank_vocab USING fts5vocab(agent_rank_fts, 'row');
INSERT INTO agent_rank_fts(rowid, {rank_cols}) SELECT d.gid, {words}(d.body), {ctx}(d.context) FROM gate_docs d
    JOIN agent_gids a ON a.gid = d.gid ORDER BY d.gid;
CREATE TRIGGER gate_docs_agent_ai AFTER INSERT ON gate_docs WHEN {agent_new} BEGIN
    INSERT INTO agent_gids(gid) VALUES (new.gid);
    {_queue("agent_vocab_fts", "new.gid", ("new.body",))}
    {_queue("agent_rank_fts", "new.gid", ("new.body", "new.context"))}
END;
CREATE TRIGGER gate_docs_agent_au AFTER UPDATE OF body, context ON gate_docs BEGIN
    {_queue("agent_vocab_fts", "old.gid", ("old.body",), delete=True,
            when=f"{held_old} AND ({body_moved} OR NOT ({agent_new}))")}
    {_queue("agent_rank_fts", "old.gid", ("old.body", "old.context"), delete=True,
            when=f"{held_old} AND ({rank_moved} OR NOT ({agent_new}))")}
    {_queue("agent_vocab_fts", "new.gid", ("new.body",), when=f"({agent_new}) AND ({body_moved} OR NOT {held_old})")}
    {_queue("agent_rank_fts", "new.gid", ("new.body", "new.context"),
            when=f"({agent_new}) AND ({rank_moved} OR NOT {held_old})")}
    DELETE FROM agent_gids WHERE gid = old.gid AND NOT ({agent_new});
    INSERT OR IGNORE INTO agent_gids(gid) SELECT new.gid WHERE {agent_new};
END;
CREATE TRIGGER gate_docs_agent_ad AFTER DELETE ON gate_docs WHEN {held_old} BEGIN
    DELETE FROM agent_gids WHERE gid = old.gid;
    {_queue("agent_vocab_fts", "old.gid", ("old.body",), delete=True)}
    {_queue("agent_rank_fts", "old.gid", ("old.body", "old.context"), delete=True)}
END;
"""


#: v13: ``agent_rank_fts`` (with ``agent_rank_vocab``) filled with the agents' unverified records already stored, and
#: v8's triggers on ``gate_docs`` again, writing it too.
V13_AGENT_RANK = _v13()
