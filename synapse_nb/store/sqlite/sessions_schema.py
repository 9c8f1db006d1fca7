"""Schema v9 of a local vault: a registry of the sessions recall's delta keeps (review 28).

``session_seen`` holds a row per record a session was given, and an agent's reads alone grew it without end: each
recall under one of its (at most :data:`~synapse_nb.recall.delta.SESSIONS_PER_HOUR` new an hour) sessions added a
row per record given, re-giving refreshed ``seen_at`` so ``memory prune`` never cleared them, and the room check of
a new session counted the distinct sessions of every row of the hour inside the recall's write (a person's recall
went from 2 ms to 100 ms after six minutes of an agent's reads on a 20,000-record vault).

``session_registry`` keeps one row per (mind, session): whether it is an agent's (``agent:``, recall.delta), when it
was first and last given something, and its rows in ``session_seen``. Triggers on ``session_seen`` keep it exact in
the write's own transaction, whoever writes (a record's deletion drops its rows, prune, a hand-made statement); the
room check reads it (:data:`~synapse_nb.store.sql.queries.SESSION_ROOM`). And an agent's sessions are bounded:

- a session holds at most :data:`~synapse_nb.store.sql.queries.AGENT_SESSION_ROWS` rows: past it a new record given
  is not marked (a ``BEFORE INSERT`` trigger ignores the row; a record it holds is still updated): the session is
  given it again, as a session past the hour's bound is, and what it holds stays;
- a mind holds at most :data:`~synapse_nb.store.sql.queries.AGENT_SESSIONS_PER_MIND` agent sessions and the vault
  :data:`~synapse_nb.store.sql.queries.AGENT_SESSIONS_PER_VAULT`: when a new one is admitted the ones given something
  least recently give way whole (its rows deleted, and so its registry row). These are row triggers: a statement
  of many new sessions admits them one at a time, so it too ends at the bounds (review 33 found the team vault's
  statement trigger let one such statement past them; tests/test_session_registry.py holds both);
- ``memory prune`` drops an agent session by its first day too (``PRUNE_SESSIONS``), so re-giving cannot keep it.

A person's sessions keep their rows and rules; the registry only makes their room check two index reads.

Schema v14 (s21): a lesson's marks outlive its deletion. A lesson rejected after approval took the marks of every
session it was given with it (``lessons_ad``), so no recall could tell that session the lesson it held was no longer
in force, and the agent went on following it. ``lessons_ad`` now keeps them (the record kinds' marks still go with
the record): recall names the lesson by the wording its history holds, once (its mark then reads ``gone``), and the
marks go with their session (prune, the bounds above). A purge leaves them reading ``purged``, never a digest of the
purged text (:data:`~synapse_nb.store.sql.history.PURGED_MARKS`).

Schema v15 (review 95): the agent hooks' sessions (``agent:hook:<id>``) and the other agent sessions each keep the
bounds above apart (a mind's and the vault's), as the room check counts them apart
(:data:`~synapse_nb.store.sql.queries.SESSION_ROOM`): an agent's throw-away recalls under new names filled the one
room and bound every agent session shared, and the hooks' sessions recorded nothing. A session's lesson marks, which
recall records past the room, are bounded apart too
(:data:`~synapse_nb.store.sql.queries.AGENT_SESSION_LESSONS`; its records' rows alone count against
:data:`~synapse_nb.store.sql.queries.AGENT_SESSION_ROWS`).
"""

from __future__ import annotations

from synapse_nb.store.sql.queries import (
    AGENT_SESSION_LESSONS,
    AGENT_SESSION_ROWS,
    AGENT_SESSIONS_PER_MIND,
    AGENT_SESSIONS_PER_VAULT,
)

__all__ = ["V9_BOUNDS", "V9_SESSIONS", "V14_LESSON_MARKS", "V15_SESSION_CLASSES"]

_AGENT = "substr({s}, 1, 6) = 'agent:'"
#: A session key of the agent hooks' (:data:`~synapse_nb.store.sql.queries.HOOK_SESSIONS`), and a lesson's mark.
_HOOK = "(substr({s}, 1, 11) = 'agent:hook:')"
_LESSON = "({r} >= 'les_' AND {r} < 'les`')"
_KEY = "mind = {r}.mind AND session = {r}.session"


def _count(r: str, sign: str) -> str:
    """Count one ``session_seen`` row (``r``: new or old) in or out of its session's registry row."""
    if sign == "+":
        return (f"INSERT INTO session_registry(mind, session, agent, first_seen, last_seen, n) VALUES ({r}.mind, "
                f"{r}.session, {_AGENT.format(s=r + '.session')}, {r}.seen_at, {r}.seen_at, 1) "
                "ON CONFLICT(mind, session) DO UPDATE SET n = n + 1, "
                "first_seen = min(first_seen, excluded.first_seen), last_seen = max(last_seen, excluded.last_seen);")
    return (f"UPDATE session_registry SET n = n - 1 WHERE {_KEY.format(r=r)};\n"
            f"    DELETE FROM session_registry WHERE {_KEY.format(r=r)} AND n <= 0;")


def _rows_guard(lessons: bool) -> str:
    """The trigger that bounds the rows an agent session holds: :data:`AGENT_SESSION_ROWS` (v9, every row), or (v15,
    ``lessons``) those rows for the records it was given and :data:`AGENT_SESSION_LESSONS` for the lessons, apart."""
    held = f"(SELECT n FROM session_registry WHERE {_KEY.format(r='new')})"
    bound = f"{held} >= {AGENT_SESSION_ROWS}"
    if lessons:  # a record's row counts the session's records' rows alone (the lessons' only past the first bound)
        have = f"(SELECT count(*) FROM session_seen WHERE {_KEY.format(r='new')} AND {_LESSON.format(r='rid')})"
        bound = (f"CASE WHEN {_LESSON.format(r='new.rid')} THEN {have} >= {AGENT_SESSION_LESSONS} "
                 f"ELSE {bound} AND {held} - {have} >= {AGENT_SESSION_ROWS} END")
    return f"""
CREATE TRIGGER session_seen_agent_rows BEFORE INSERT ON session_seen
    WHEN {_AGENT.format(s='new.session')} AND {bound}
     AND NOT EXISTS (SELECT 1 FROM session_seen WHERE {_KEY.format(r='new')} AND rid = new.rid) BEGIN
    SELECT RAISE(IGNORE);
END;
"""


def _retention(classes: bool) -> str:
    """The trigger that bounds the agent sessions a mind and the vault keep: every agent session together (v9), or
    (v15, ``classes``) the agent hooks' apart from the others'."""
    own = "NOT (mind = new.mind AND session = new.session)"
    same = f" AND {_HOOK.format(s='session')} = {_HOOK.format(s='new.session')}" if classes else ""
    return f"""
CREATE TRIGGER session_registry_agent_ai AFTER INSERT ON session_registry WHEN new.agent BEGIN
    DELETE FROM session_seen WHERE mind = new.mind AND session IN (
        SELECT session FROM session_registry WHERE mind = new.mind AND agent = 1 AND session <> new.session{same}
         ORDER BY last_seen DESC, session DESC LIMIT -1 OFFSET {AGENT_SESSIONS_PER_MIND - 1});
    DELETE FROM session_seen WHERE (mind, session) IN (
        SELECT mind, session FROM session_registry WHERE agent = 1 AND {own}{same}
         ORDER BY last_seen DESC, mind DESC, session DESC LIMIT -1 OFFSET {AGENT_SESSIONS_PER_VAULT - 1});
END;
"""


def _v9() -> str:
    return f"""
CREATE TABLE session_registry(
    mind TEXT NOT NULL,
    session TEXT NOT NULL,
    agent INTEGER NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (mind, session)
) WITHOUT ROWID;
CREATE INDEX session_registry_last ON session_registry(mind, agent, last_seen);
CREATE INDEX session_registry_agents ON session_registry(last_seen) WHERE agent = 1;
INSERT INTO session_registry(mind, session, agent, first_seen, last_seen, n)
    SELECT mind, session, {_AGENT.format(s='session')}, min(seen_at), max(seen_at), count(*) FROM session_seen
     GROUP BY mind, session;
{_rows_guard(False)}
CREATE TRIGGER session_seen_reg_ai AFTER INSERT ON session_seen BEGIN
    {_count("new", "+")}
END;
CREATE TRIGGER session_seen_reg_ad AFTER DELETE ON session_seen BEGIN
    {_count("old", "-")}
END;
CREATE TRIGGER session_seen_reg_au AFTER UPDATE ON session_seen
    WHEN new.mind = old.mind AND new.session = old.session BEGIN
    UPDATE session_registry SET last_seen = max(last_seen, new.seen_at) WHERE {_KEY.format(r='new')};
END;
CREATE TRIGGER session_seen_reg_moved AFTER UPDATE ON session_seen
    WHEN new.mind <> old.mind OR new.session <> old.session BEGIN
    {_count("old", "-")}
    {_count("new", "+")}
END;
{_retention(False)}"""


#: v9: ``session_registry``, its triggers on ``session_seen`` (counts, an agent session's row bound) and on itself
#: (the agent sessions a mind and the vault hold), filled from the rows already stored.
V9_SESSIONS = _v9()

#: v14: ``lessons_ad`` as v4 wrote it (schema._kind_triggers), without its ``DELETE FROM session_seen``.
V14_LESSON_MARKS = """
DROP TRIGGER lessons_ad;
CREATE TRIGGER lessons_ad AFTER DELETE ON lessons BEGIN INSERT INTO fts_queue(target, cmd, id, c0, c1, c2, c3) VALUES \
('lessons_fts', 'delete', old.rowid, old.summary, coalesce(old.analysis, ''), coalesce(old.lesson_text, ''), \
old.files_affected); END;
"""

#: v15 (review 95): the agent hooks' sessions (``agent:hook:<id>``, recall.delta) and the other agent sessions each
#: keep their own bounds (a mind's 256, the vault's 512), so no flood of another surface's sessions makes a hook
#: session give way; and a session's lesson marks are bounded apart from its records' (a session full of records
#: still records the lessons it is given: recall records them past the hour's room of new sessions too).
V15_SESSION_CLASSES = ("DROP TRIGGER session_seen_agent_rows;\nDROP TRIGGER session_registry_agent_ai;\n"
                       + _rows_guard(True) + _retention(True))
#: The two bounds as v9 made them (what v15 replaces; the tests' downgrade puts them back).
V9_BOUNDS = _rows_guard(False) + _retention(False)
