"""What a record gives recall's ranking and word statistics: each distinct word at most :data:`MAX_WORD_REPEATS` times
(review 75).

FTS5 keeps a posting per *occurrence* of a word, and recall reads a word's postings over every mind (its document
count is the vault's): an agent that wrote 3,000 records of ``"deploy " * 4700`` in its own mind put 14 million
postings of ``deploy`` in the index, and a person's recall of a prompt holding "deploy" read all of them (0.1 s ->
15 s; the prompt hook gave up at 10 s and gave no context), as did the duplicate check of every write (its word
statistics, ``gate_vocab_row``). BM25's term frequency saturates (``k1 = 1.2``: a word 32 times scores 96% of a word
10,000 times, at the same length), so a ranking document keeps the first :data:`MAX_WORD_REPEATS` occurrences of
each distinct word and drops the rest: a record costs a read at most ``MAX_WORD_REPEATS`` x its distinct words.

The rule, the same on both backends (a vault gives the same ranking on SQLite and PostgreSQL):

- the words are the tokenizer's (FTS5's ``unicode61 remove_diacritics 2``: case-folded, accents stripped; the
  package's analyser on a team vault, :func:`synapse_nb.store.postgres.dialect.rank_tokens`, which gives the same
  words for ASCII text), counted before stemming;
- a record's words are capped once, its gate text as a whole (:func:`cap_words`); a ranking document's ``context``
  is the capped words of each of the records before it, joined (:data:`CONTEXT_SEP` parts, :func:`capped_context`),
  as a team vault joins their ``rank_body`` arrays;
- a text with no word over the cap is given as it is, so every ordinary record is indexed exactly as before (the
  LoCoMo answers and the golden recall are unchanged); one over it is given as its kept words joined by spaces,
  which the tokenizer reads back as the same words. Document counts (``gate_vocab``, the gate's and the duplicate
  check's statistics) do not change: every word keeps at least one occurrence.

On SQLite the cap is applied where the triggers' queued FTS5 writes are applied (``FTS_FLUSH``: the connection
registers :func:`capped_text` and :func:`capped_context` as SQL functions), never in a trigger, so a row written with
the ``sqlite3`` shell is still accepted (its index writes wait in ``fts_queue`` for the next synapse_nb write).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["CONTEXT_SEP", "MAX_WORD_REPEATS", "cap_words", "capped_context", "capped_text", "fts5_words"]

#: At most this many occurrences of one word of one record reach the ranking index. Part of the schema: the indexes
#: delete a value by giving it again, so a change needs a migration that fills them anew (SQLite v12's does).
MAX_WORD_REPEATS = 32
#: Between the records of a ranking context (a control character: a separator to every tokenizer).
CONTEXT_SEP = "\x1f"

_ASCII_SEPARATORS = bytes.maketrans(bytes(range(128)), bytes(
    c if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else 32 for c in range(128)))
_lock = threading.Lock()
_conn: sqlite3.Connection | None = None


def cap_words(words: Iterable[str], most: int = MAX_WORD_REPEATS) -> list[str]:
    """The words in order, each distinct one kept at its first ``most`` occurrences.

    >>> cap_words(["a", "b", "a", "a", "c", "a"], most=2)
    ['a', 'b', 'a', 'c']
    """
    words = list(words)
    return _capped(words, {w: 0 for w, n in Counter(words).items() if n > most}, most)


def _capped(words: list[str], over: dict[str, int], most: int) -> list[str]:
    """``words`` less the occurrences past the ``most``-th of the words in ``over`` (their counts so far: 0)."""
    if not over:
        return words
    out: list[str] = []
    for w in words:
        if w in over:
            if over[w] >= most:
                continue
            over[w] += 1
        out.append(w)
    return out


def fts5_words(text: str) -> list[str]:
    """The words of ``text`` as FTS5's ``unicode61 remove_diacritics 2`` tokenizer gives them, in order (ASCII
    text in Python, the same rule; any other through FTS5 itself).

    >>> fts5_words("Déploy the v1.2 hook_name")
    ['deploy', 'the', 'v1', '2', 'hook', 'name']
    """
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").lower().split()
    global _conn
    with _lock:
        if _conn is None:
            c = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            c.execute("CREATE VIRTUAL TABLE w USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
            c.execute("CREATE VIRTUAL TABLE wv USING fts5vocab(w, instance)")
            _conn = c
        _conn.execute("BEGIN")
        try:
            _conn.execute("INSERT INTO w(rowid, x) VALUES (1, ?)", (text,))
            return [r[0] for r in _conn.execute("SELECT term FROM wv ORDER BY offset")]
        finally:
            _conn.execute("ROLLBACK")


def capped_text(text: str | None, most: int = MAX_WORD_REPEATS) -> str | None:
    """``text`` as the ranking index takes it: as it is when no word occurs over ``most`` times, else its words
    with each kept at its first ``most`` occurrences, joined by spaces (the SQL function ``synapse_rank_words``).

    >>> capped_text("deploy it, deploy it, deploy", most=2)
    'deploy it deploy it'
    >>> capped_text("Deploy it, deploy it", most=2)
    'Deploy it, deploy it'
    """
    if text is None or len(text) <= 2 * most:  # at most `most` words: nothing over the cap
        return text
    words = fts5_words(text)
    if len(words) <= most:
        return text
    over = {w: 0 for w, n in Counter(words).items() if n > most}
    return " ".join(_capped(words, over, most)) if over else text


def capped_context(text: str | None, most: int = MAX_WORD_REPEATS) -> str | None:
    """A ranking context as the index takes it: each record's part (:data:`CONTEXT_SEP`) capped on its own, as
    :func:`capped_text` caps it (the SQL function ``synapse_rank_context``)."""
    if text is None or CONTEXT_SEP not in text:
        return capped_text(text, most)
    parts: Sequence[str] = text.split(CONTEXT_SEP)
    capped = [capped_text(p, most) or "" for p in parts]
    return text if capped == parts else CONTEXT_SEP.join(capped)
