"""Schema v8 of a local vault: the word statistics of agents' unverified records, so that the duplicate check can
weigh a pair of two people's records by people's records alone (review 22).

``gate_vocab`` counts every gate candidate; ``agent_vocab_fts`` (contentless FTS5, the same ``unicode61
remove_diacritics 2`` tokenizer, read through ``agent_vocab_row``) indexes the gate text of the agents' unverified
ones (:func:`~synapse_nb.store.sql.authors.agents_case`: an agent wrote it and, a memory, no person verified it), and
``agent_gids`` names the ``gate_docs`` rows it holds. Triggers on ``gate_docs`` keep both exact in the write's own
transaction, whoever writes: a ``gate_docs`` row is written by its record's own triggers after the record, so they
read what the record is now (a person's verify rewrites the row and takes it out; an agent's edit that clears
``verified`` puts it back). A person's document frequency is then ``gate_vocab``'s less this one's, and their number
``gate_docs``'s less ``agent_gids``'s (``count`` and ``doc_freq`` with ``agents=True`` read these,
:class:`synapse_nb.store.sqlite.queries.RecallQueries`).

Cost: a person's write adds a key lookup or two to each ``gate_docs`` write; an agent's adds one more queued FTS5
write (the ``fts_queue`` of v4), like ``gate_vocab``'s.
"""

from __future__ import annotations

from synapse_nb.store.sql.authors import agents_case

__all__ = ["V8_AGENT_VOCAB"]


def _queue(rowid: str, body: str, *, delete: bool = False, when: str = "") -> str:
    """Queue one write of ``agent_vocab_fts`` (applied with the others before the commit), if ``when`` holds."""
    cmd = "'delete'" if delete else "NULL"
    return (f"INSERT INTO fts_queue(target, cmd, id, c0) SELECT 'agent_vocab_fts', {cmd}, {rowid}, {body}"
            + (f" WHERE {when}" if when else "") + ";")


def _v8() -> str:
    agent_new = agents_case("new.kind", "new.rid")
    held = "EXISTS (SELECT 1 FROM agent_gids WHERE gid = {g})"
    return f"""
CREATE TABLE agent_gids(gid INTEGER PRIMARY KEY);
CREATE VIRTUAL TABLE agent_vocab_fts USING fts5(body, content='', tokenize="unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE agent_vocab_row USING fts5vocab(agent_vocab_fts, 'row');
INSERT INTO agent_gids(gid) SELECT d.gid FROM gate_docs d WHERE {agents_case("d.kind", "d.rid")};
INSERT INTO agent_vocab_fts(rowid, body) SELECT d.gid, d.body FROM gate_docs d JOIN agent_gids a ON a.gid = d.gid;
CREATE TRIGGER gate_docs_agent_ai AFTER INSERT ON gate_docs WHEN {agent_new} BEGIN
    INSERT INTO agent_gids(gid) VALUES (new.gid);
    {_queue("new.gid", "new.body")}
END;
CREATE TRIGGER gate_docs_agent_au AFTER UPDATE OF body ON gate_docs BEGIN
    {_queue("old.gid", "old.body", delete=True, when=held.format(g="old.gid"))}
    DELETE FROM agent_gids WHERE gid = old.gid;
    INSERT INTO agent_gids(gid) SELECT new.gid WHERE {agent_new};
    {_queue("new.gid", "new.body", when=held.format(g="new.gid"))}
END;
CREATE TRIGGER gate_docs_agent_ad AFTER DELETE ON gate_docs WHEN {held.format(g="old.gid")} BEGIN
    DELETE FROM agent_gids WHERE gid = old.gid;
    {_queue("old.gid", "old.body", delete=True)}
END;
"""


#: v8: ``agent_gids`` and ``agent_vocab_fts`` (with ``agent_vocab_row``), their triggers on ``gate_docs``, and the
#: agents' unverified records already stored.
V8_AGENT_VOCAB = _v8()
