"""Schema v12 of a local vault: the ranking index and the word statistics hold each distinct word of a record at
most :data:`~synapse_nb.store.rankwords.MAX_WORD_REPEATS` times (review 75; the rule:
:mod:`synapse_nb.store.rankwords`).

FTS5 reads a word's postings one per occurrence (``fts5vocab`` ``instance`` for recall's postings, ``row`` for the
document frequencies of the gate and of the duplicate check), over every mind. An agent's 3,000 records of one word
repeated 4,700 times, in its own mind, made a person's recall of that word take 15 s. From v12:

- ``rank_fts``, ``gate_vocab`` and ``agent_vocab_fts`` are contentless (``content=''``) and index what
  :data:`CAPPED_FLUSH` gives them: each queued value passed through ``synapse_rank_words`` (a body) or
  ``synapse_rank_context`` (a context), SQL functions the connection registers (:data:`RANK_FUNCTIONS`). A value with
  no word over the cap is indexed as it is; the same function of the same stored value is given to a ``'delete'``, so
  a contentless index always deletes what it indexed. (External content, which ``rank_fts`` and ``gate_vocab`` had,
  would tell ``integrity-check`` that a capped record disagrees with ``gate_docs``.)
- a ranking context joins the bodies of the records before it with :data:`~synapse_nb.store.rankwords.CONTEXT_SEP`
  (context_schema.py), so each record's part is capped on its own, as a team vault joins their capped ``rank_body``.

The migration recreates the episodes' and the followers' triggers (the new joiner), recomputes every context,
applies what the kind tables' indexes have queued, and fills the three indexes again from ``gate_docs``.
"""

from __future__ import annotations

from collections.abc import Callable

from synapse_nb.store.rankwords import capped_context, capped_text

__all__ = ["CAPPED_COLUMNS", "RANK_FUNCTIONS", "V12_RANK_INDEXES"]

#: The SQL functions of the cap (deterministic; registered on every connection of a vault).
RANK_FUNCTIONS: dict[str, Callable[[str | None], str | None]] = {
    "synapse_rank_words": capped_text, "synapse_rank_context": capped_context}
#: The capped indexes, and what each of their queued columns goes through.
CAPPED_COLUMNS: dict[str, tuple[str, ...]] = {
    "gate_vocab": ("synapse_rank_words",),
    "rank_fts": ("synapse_rank_words", "synapse_rank_context"),
    "agent_vocab_fts": ("synapse_rank_words",),
    "agent_rank_fts": ("synapse_rank_words", "synapse_rank_context"),  # v13 (agent_rank_schema.py)
}

_WORDS, _CTX = CAPPED_COLUMNS["rank_fts"]
#: v12: the three indexes again, contentless, filled with the capped values of every row.
V12_RANK_INDEXES = f"""
DROP TABLE gate_vocab_row;
DROP TABLE gate_vocab;
CREATE VIRTUAL TABLE gate_vocab USING fts5(body, content='', tokenize="unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE gate_vocab_row USING fts5vocab(gate_vocab, 'row');
INSERT INTO gate_vocab(rowid, body) SELECT gid, {_WORDS}(body) FROM gate_docs ORDER BY gid;
DROP TABLE rank_fts;
CREATE VIRTUAL TABLE rank_fts USING fts5(body, context, content='',
    tokenize="porter unicode61 remove_diacritics 2");
INSERT INTO rank_fts(rowid, body, context) SELECT gid, {_WORDS}(body), {_CTX}(context) FROM gate_docs ORDER BY gid;
INSERT INTO agent_vocab_fts(agent_vocab_fts) VALUES ('delete-all');
INSERT INTO agent_vocab_fts(rowid, body) SELECT d.gid, {_WORDS}(d.body) FROM gate_docs d
    JOIN agent_gids a ON a.gid = d.gid ORDER BY d.gid;
"""
