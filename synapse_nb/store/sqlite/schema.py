"""The SQLite schema of a vault: tables, FTS5 indexes, triggers, the gate view, and forward migrations.

- One contentless FTS5 table per kind (porter stemming), kept in sync by triggers, so full-text search can
  never disagree with the rows. The triggers queue their FTS5 writes in ``fts_queue``; the connection applies the
  queue (:data:`FTS_FLUSH`) before a commit and before any statement that reads an FTS5 table (schema v4).
- ``gate_docs`` holds the text the recall gate scores per record (:data:`GATE_TEXT`); a ``gate_vocab`` FTS5 table
  of it (no stemming; contentless since v12, each word of a record at most 32 times: rankcap_schema.py), read
  through ``gate_vocab_row`` (fts5vocab), gives exact word document frequencies at no extra cost.
  ``gate_candidates`` is the view recall and the index read. Schema v8 adds the same statistics over agents'
  unverified records alone (``agent_vocab_fts``, ``agent_vocab_row``, ``agent_gids``; agent_vocab_schema.py), v13
  their ranking index's (``agent_rank_fts``; agent_rank_schema.py), so that people's are the difference.
- ``session_registry`` (schema v9, sessions_schema.py) keeps a row per session of recall's delta (``session_seen``)
  by triggers: the room check of a new session reads it, and it bounds what an agent's sessions hold.
- Tags live in a side table maintained by triggers from each row's JSON tags.
- Every change to ``gate_docs`` queues the record id in ``index_outbox`` (same transaction) for the retrieval
  index.
- Every change to a ``gate_docs`` row (insert, update, delete, a follower's context) appends its record id to
  ``rank_log`` (schema v5, same transaction): a durable generation of the ranking table that every process reads
  alike, and the ids changed since any recent generation (recall's structure-array cache, :data:`RANK_LOG_KEEP`).
- The version is ``PRAGMA user_version``; :data:`MIGRATIONS` ``[v]`` upgrades a vault from ``v`` to ``v + 1``.
"""

from __future__ import annotations

import functools

from synapse_nb.store.sqlite.agent_rank_schema import AGENT_RANK_FTS, V13_AGENT_RANK
from synapse_nb.store.sqlite.agent_vocab_schema import V8_AGENT_VOCAB
from synapse_nb.store.sqlite.context_schema import (
    CONTEXT_N,
    SEP_SQL,
    context_sql,
    followers,
    own_context,
    v11_context_triggers,
)
from synapse_nb.store.sqlite.ddl import split_sql
from synapse_nb.store.sqlite.held_schema import V7_AGENT_HELD
from synapse_nb.store.sqlite.history_schema import V6_HISTORY
from synapse_nb.store.sqlite.indices_schema import INDICES
from synapse_nb.store.sqlite.rankcap_schema import CAPPED_COLUMNS, V12_RANK_INDEXES
from synapse_nb.store.sqlite.rankfile_schema import V10_RANK_FILES
from synapse_nb.store.sqlite.sessions_schema import V9_SESSIONS, V14_LESSON_MARKS, V15_SESSION_CLASSES

__all__ = ["CONTEXT_N", "FTS_FLUSH", "FTS_MARKERS", "FTS_QUEUE_CLEAR", "FTS_QUEUE_TARGETS", "FTS_TABLES", "GATE_TEXT",
           "GET_VAULT_UID", "INDICES", "MIGRATIONS", "RANK_LOG_KEEP", "RAW_FLUSH", "SCHEMA_VERSION", "SET_VAULT_UID",
           "split_sql"]

SCHEMA_VERSION = 15

_FTS = {
    # table: (fts columns, expressions for them)
    "memories": (("key", "content", "tags"), ("replace({r}.key, '_', ' ')", "{r}.content", "{r}.tags")),
    "checkpoints": (("doing", "next_step", "blockers", "files"),
                    ("{r}.doing", "coalesce({r}.next_step, '')", "coalesce({r}.blockers, '')", "{r}.changed_files")),
    "decisions": (("decision", "rationale", "tags"), ("{r}.decision", "coalesce({r}.rationale, '')", "{r}.tags")),
    "lessons": (("summary", "analysis", "lesson_text", "files"),
                ("{r}.summary", "coalesce({r}.analysis, '')", "coalesce({r}.lesson_text, '')", "{r}.files_affected")),
    "episodes": (("task_key", "outcome", "refs"),
                 ("replace({r}.task_key, '_', ' ')", "coalesce({r}.outcome, '')", "{r}.refs")),
    "notes": (("name", "trigger", "body"), ("replace({r}.name, '_', ' ')", "{r}.trigger", "{r}.body")),
}

# The text the recall gate scores, per table (lessons are not gate candidates: approved ones are always shown).
GATE_TEXT = {
    "memories": "replace({r}.key, '_', ' ') || ' ' || {r}.content || ' ' || "
                "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.tags))",
    "checkpoints": "{r}.doing || ' ' || coalesce({r}.next_step, '') || ' ' || coalesce({r}.blockers, '') || ' ' || "
                   "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.changed_files))",
    "decisions": "{r}.decision || ' ' || coalesce({r}.rationale, '') || ' ' || "
                 "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.tags))",
    "episodes": "replace({r}.task_key, '_', ' ') || ' ' || coalesce({r}.outcome, '') || ' ' || "
                "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({r}.refs))",
    "notes": "replace({r}.name, '_', ' ') || ' ' || {r}.trigger",
}
_TABLE_KIND = {"memories": "memory", "checkpoints": "checkpoint", "decisions": "decision", "lessons": "lesson",
               "episodes": "episode", "notes": "note"}

_TABLES_V1 = """
CREATE TABLE meta(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE memories(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    category TEXT NOT NULL,
    key TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 3),
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    verified INTEGER NOT NULL CHECK (verified IN (0, 1)),
    confidence REAL NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    expires_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (mind, category, key)
);
CREATE INDEX memories_order ON memories(mind, priority, updated_at DESC);
CREATE INDEX memories_key ON memories(mind, key);
CREATE INDEX memories_expiry ON memories(expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE checkpoints(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    branch TEXT,
    commit_sha TEXT,
    doing TEXT NOT NULL,
    changed_files TEXT NOT NULL DEFAULT '[]',
    next_step TEXT,
    blockers TEXT,
    origin TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX checkpoints_latest ON checkpoints(mind, branch, created_at DESC);
CREATE TABLE decisions(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    decision TEXT NOT NULL,
    rationale TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    branch TEXT,
    commit_sha TEXT,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX decisions_recent ON decisions(mind, created_at DESC);
CREATE TABLE lessons(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'expired')),
    summary TEXT NOT NULL,
    branch TEXT,
    revert_sha TEXT,
    revert_commit TEXT,
    reverted_commits TEXT NOT NULL DEFAULT '[]',
    files_affected TEXT NOT NULL DEFAULT '[]',
    diffstat TEXT NOT NULL DEFAULT '[]',
    analysis TEXT,
    analysis_by TEXT CHECK (analysis_by IN ('user', 'agent')),
    lesson_text TEXT,
    approved_at TEXT,
    expires_at TEXT,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX lessons_revert ON lessons(mind, revert_sha) WHERE revert_sha IS NOT NULL;
CREATE INDEX lessons_status ON lessons(mind, status, approved_at DESC);
CREATE TABLE episodes(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    task_key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('success', 'failure', 'unknown')),
    outcome TEXT,
    refs TEXT NOT NULL DEFAULT '[]',
    duration_s REAL,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX episodes_task ON episodes(mind, task_key, created_at DESC);
CREATE TABLE notes(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    name TEXT NOT NULL,
    trigger TEXT NOT NULL,
    body TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('user', 'agent')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (mind, name)
);
CREATE TABLE tags(
    tag TEXT NOT NULL,
    mind TEXT NOT NULL,
    kind TEXT NOT NULL,
    rid TEXT NOT NULL,
    PRIMARY KEY (tag, mind, kind, rid)
) WITHOUT ROWID;
CREATE INDEX tags_rid ON tags(rid);
CREATE TABLE session_seen(
    mind TEXT NOT NULL,
    session TEXT NOT NULL,
    rid TEXT NOT NULL,
    digest TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (mind, session, rid)
) WITHOUT ROWID;
CREATE TABLE gate_docs(
    gid INTEGER PRIMARY KEY,
    rid TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL
);
CREATE VIRTUAL TABLE gate_vocab USING fts5(body, content='gate_docs', content_rowid='gid',
    tokenize="unicode61 remove_diacritics 2");
CREATE VIRTUAL TABLE gate_vocab_row USING fts5vocab(gate_vocab, 'row');
CREATE TABLE outbox_counter(n INTEGER NOT NULL);
INSERT INTO outbox_counter(n) VALUES (0);
CREATE TABLE index_outbox(
    rid TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER gate_docs_ai AFTER INSERT ON gate_docs BEGIN
    INSERT INTO gate_vocab(rowid, body) VALUES (new.gid, new.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (new.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_ad AFTER DELETE ON gate_docs BEGIN
    INSERT INTO gate_vocab(gate_vocab, rowid, body) VALUES ('delete', old.gid, old.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (old.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_au AFTER UPDATE ON gate_docs BEGIN
    INSERT INTO gate_vocab(gate_vocab, rowid, body) VALUES ('delete', old.gid, old.body);
    INSERT INTO gate_vocab(rowid, body) VALUES (new.gid, new.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (new.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE VIEW gate_candidates AS
    SELECT g.rid AS id, 'memory' AS kind, t.mind, g.body AS text, t.updated_at, t.expires_at
        FROM gate_docs g JOIN memories t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'decision', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN decisions t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'checkpoint', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN checkpoints t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'episode', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN episodes t ON t.id = g.rid
    UNION ALL SELECT g.rid, 'note', t.mind, g.body, t.updated_at, NULL
        FROM gate_docs g JOIN notes t ON t.id = g.rid;
"""


def _fts_ddl() -> str:
    parts: list[str] = []
    for table, (cols, exprs) in _FTS.items():
        fts = f"{table}_fts"
        parts.append(
            f"CREATE VIRTUAL TABLE {fts} USING fts5({', '.join(cols)}, content='', "
            f"tokenize=\"porter unicode61 remove_diacritics 2\");"
        )
        new_vals = ", ".join(e.format(r="new") for e in exprs)
        old_vals = ", ".join(e.format(r="old") for e in exprs)
        fts_del = f"INSERT INTO {fts}({fts}, rowid, {', '.join(cols)}) VALUES ('delete', old.rowid, {old_vals});"
        kind = _TABLE_KIND[table]
        gate = GATE_TEXT.get(table)
        gate_ins = (f"INSERT INTO gate_docs(rid, body) VALUES (new.id, {gate.format(r='new')});" if gate else "")
        gate_del = "DELETE FROM gate_docs WHERE rid = old.id;" if gate else ""
        gate_upd = (f"UPDATE gate_docs SET body = {gate.format(r='new')} WHERE rid = new.id;" if gate else "")
        tag_ins = (f"INSERT OR IGNORE INTO tags(tag, mind, kind, rid) SELECT value, new.mind, '{kind}', new.id "
                   f"FROM json_each(new.tags);" if "tags" in cols else "")
        tag_del = "DELETE FROM tags WHERE rid = old.id;" if "tags" in cols else ""
        parts.append(
            f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {fts}(rowid, {', '.join(cols)}) VALUES (new.rowid, {new_vals}); {gate_ins} {tag_ins} END;"
        )
        parts.append(
            f"CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN "
            f"{fts_del} {gate_del} {tag_del} "
            f"DELETE FROM session_seen WHERE rid = old.id; END;"
        )
        parts.append(
            f"CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN "
            f"{fts_del} "
            f"INSERT INTO {fts}(rowid, {', '.join(cols)}) VALUES (new.rowid, {new_vals}); {gate_upd} "
            f"{tag_del} {tag_ins} END;"
        )
    return "\n".join(parts)


_V2_FLAGS = """
CREATE TABLE flags(
    rid TEXT NOT NULL,
    mind TEXT NOT NULL,
    flag TEXT NOT NULL CHECK (flag IN ('dangling', 'stale')),
    detail TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (rid, flag)
) WITHOUT ROWID;
CREATE INDEX flags_mind ON flags(mind);
""" + "".join(
    f"CREATE TRIGGER {t}_ad_flags AFTER DELETE ON {t} BEGIN DELETE FROM flags WHERE rid = old.id; END;\n"
    for t in ("memories", "checkpoints", "decisions", "lessons", "episodes", "notes"))


# -- v3: the ranking table of recall engine v2 (docs/decisions/0008-recall-engine-v2.md) ---------------------------
# v3's rule: any records before it, joined by a space (v11, v12: context_schema.py)
_context_sql, _followers = functools.partial(context_sql, sep="' '"), followers


_SELF_CONTEXT = _context_sql("gate_docs.mind", "gate_docs.thread", "gate_docs.seq", "gate_docs.rid")


def _v3_kind_triggers() -> str:
    """The kind tables' insert/update triggers again, now writing mind, kind and structure into gate_docs (the
    insert computes the row's own context in the same statement: one FTS write per append)."""
    parts: list[str] = []
    for table, (cols, exprs) in _FTS.items():
        gate = GATE_TEXT.get(table)
        if gate is None:
            continue
        fts = f"{table}_fts"
        kind = _TABLE_KIND[table]
        new_vals = ", ".join(e.format(r="new") for e in exprs)
        old_vals = ", ".join(e.format(r="old") for e in exprs)
        fts_del = f"INSERT INTO {fts}({fts}, rowid, {', '.join(cols)}) VALUES ('delete', old.rowid, {old_vals});"
        structured = table == "episodes"
        th, sq, ac = ("new.thread", "new.seq", "new.actor") if structured else ("NULL", "NULL", "NULL")
        ctx = (f"CASE WHEN new.thread IS NULL THEN '' ELSE "
               f"{_context_sql('new.mind', 'new.thread', 'new.seq', 'new.id')} END") if structured else "''"
        tag_ins = (f"INSERT OR IGNORE INTO tags(tag, mind, kind, rid) SELECT value, new.mind, '{kind}', new.id "
                   f"FROM json_each(new.tags);" if "tags" in cols else "")
        tag_del = "DELETE FROM tags WHERE rid = old.id;" if "tags" in cols else ""
        gate_ins = (f"INSERT INTO gate_docs(rid, mind, kind, thread, seq, actor, body, context) "
                    f"SELECT new.id, new.mind, '{kind}', {th}, {sq}, {ac}, {gate.format(r='new')}, {ctx};")
        # the row's own context is set by the same UPDATE: a trigger on gate_docs changing the row again could
        # run before the FTS trigger of this update and hand FTS5 a 'delete' with values it never indexed
        gate_upd = (f"UPDATE gate_docs SET body = {gate.format(r='new')}, thread = {th}, seq = {sq}, actor = {ac}, "
                    f"context = {ctx} WHERE rid = new.id;")
        parts.append(f"DROP TRIGGER {table}_ai;")
        parts.append(f"DROP TRIGGER {table}_au;")
        parts.append(
            f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {fts}(rowid, {', '.join(cols)}) VALUES (new.rowid, {new_vals}); {gate_ins} {tag_ins} END;")
        parts.append(
            f"CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN {fts_del} "
            f"INSERT INTO {fts}(rowid, {', '.join(cols)}) VALUES (new.rowid, {new_vals}); {gate_upd} "
            f"{tag_del} {tag_ins} END;")
    return "\n".join(parts)


# The refresh of the followers' context when a threaded row comes, changes or goes (v3; recreated as is by v4).
_CTX_TRIGGERS = """CREATE TRIGGER gate_docs_ctx_ai AFTER INSERT ON gate_docs WHEN new.thread IS NOT NULL BEGIN
    UPDATE gate_docs SET context = """ + _SELF_CONTEXT + f""" WHERE gid IN ({_followers("new")});
END;
CREATE TRIGGER gate_docs_ctx_au AFTER UPDATE OF body, thread, seq ON gate_docs
    WHEN new.thread IS NOT NULL OR old.thread IS NOT NULL BEGIN
    UPDATE gate_docs SET context = {_SELF_CONTEXT}
    WHERE gid IN ({_followers("new")}) OR gid IN ({_followers("old")});
END;
CREATE TRIGGER gate_docs_ctx_ad AFTER DELETE ON gate_docs WHEN old.thread IS NOT NULL BEGIN
    UPDATE gate_docs SET context = {_SELF_CONTEXT} WHERE gid IN ({_followers("old")});
END;
"""

_V3_RANKING = """
ALTER TABLE episodes ADD COLUMN thread TEXT;
ALTER TABLE episodes ADD COLUMN seq INTEGER;
ALTER TABLE episodes ADD COLUMN actor TEXT;
CREATE INDEX episodes_thread ON episodes(mind, thread, seq) WHERE thread IS NOT NULL;
ALTER TABLE gate_docs ADD COLUMN mind TEXT NOT NULL DEFAULT '';
ALTER TABLE gate_docs ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE gate_docs ADD COLUMN thread TEXT;
ALTER TABLE gate_docs ADD COLUMN seq INTEGER;
ALTER TABLE gate_docs ADD COLUMN actor TEXT;
ALTER TABLE gate_docs ADD COLUMN context TEXT NOT NULL DEFAULT '';
""" + "".join(
    f"UPDATE gate_docs SET mind = (SELECT t.mind FROM {t} t WHERE t.id = gate_docs.rid), kind = '{_TABLE_KIND[t]}' "
    f"WHERE rid IN (SELECT id FROM {t});\n" for t in GATE_TEXT) + """
CREATE INDEX gate_docs_thread ON gate_docs(mind, thread, seq, rid) WHERE thread IS NOT NULL;
CREATE INDEX gate_docs_mind ON gate_docs(gid, mind, rid);
CREATE VIRTUAL TABLE rank_fts USING fts5(body, context, content='gate_docs', content_rowid='gid',
    tokenize="porter unicode61 remove_diacritics 2");
INSERT INTO rank_fts(rank_fts) VALUES ('rebuild');
DROP TRIGGER gate_docs_ai;
DROP TRIGGER gate_docs_ad;
DROP TRIGGER gate_docs_au;
CREATE TRIGGER gate_docs_ai AFTER INSERT ON gate_docs BEGIN
    INSERT INTO gate_vocab(rowid, body) VALUES (new.gid, new.body);
    INSERT INTO rank_fts(rowid, body, context) VALUES (new.gid, new.body, new.context);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (new.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_ad AFTER DELETE ON gate_docs BEGIN
    INSERT INTO gate_vocab(gate_vocab, rowid, body) VALUES ('delete', old.gid, old.body);
    INSERT INTO rank_fts(rank_fts, rowid, body, context) VALUES ('delete', old.gid, old.body, old.context);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (old.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_au AFTER UPDATE OF body ON gate_docs BEGIN
    INSERT INTO gate_vocab(gate_vocab, rowid, body) VALUES ('delete', old.gid, old.body);
    INSERT INTO gate_vocab(rowid, body) VALUES (new.gid, new.body);
    UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES (new.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER gate_docs_rank_au AFTER UPDATE OF body, context ON gate_docs BEGIN
    INSERT INTO rank_fts(rank_fts, rowid, body, context) VALUES ('delete', old.gid, old.body, old.context);
    INSERT INTO rank_fts(rowid, body, context) VALUES (new.gid, new.body, new.context);
END;
""" + _CTX_TRIGGERS + _v3_kind_triggers()

# -- v4: FTS5 writes are queued by the triggers and applied once per write transaction -----------------------------
# FTS5 flushes its pending in-memory index to disk at every statement savepoint (SQLite 3.40: xSavepoint syncs), and
# each INSERT/UPDATE/DELETE with triggers opens one for every FTS5 table the transaction has written. Written by the
# triggers, the three FTS5 indexes of a memory were flushed (and merged) once per row: most of an upsert's time.
# From v4 the triggers append their FTS5 writes, in order, to ``fts_queue`` (a plain table); the connection applies
# the queue with one INSERT ... SELECT per index before the commit and before any statement that reads an index
# (db.py), so every reader sees exactly what the per-row triggers gave, and the postings are the same.

#: Every FTS5 table and its columns: the targets of ``fts_queue``.
FTS_TABLES: dict[str, tuple[str, ...]] = {
    **{f"{t}_fts": cols for t, (cols, _) in _FTS.items()}, "gate_vocab": ("body",), "rank_fts": ("body", "context"),
    "agent_vocab_fts": ("body",), AGENT_RANK_FTS[0]: AGENT_RANK_FTS[1]}  # v8, v13

#: The statement that applies the queue to each FTS5 table (rows in queue order; ``cmd`` NULL indexes the values,
#: 'delete' removes them); :data:`FTS_QUEUE_CLEAR` empties the queue after them. From v12 the ranking index and the
#: word statistics take each value through the cap (rankcap_schema.py); ``RAW_FLUSH`` is v4 to v11's.
RAW_FLUSH, FTS_FLUSH = ({
    t: f"INSERT INTO {t}({t}, rowid, {', '.join(cols)}) SELECT cmd, id, "
       f"{', '.join(fn.get(t, ('',) * len(cols))[i] + f'(c{i})' for i in range(len(cols)))} FROM fts_queue "
       f"WHERE target = '{t}' ORDER BY n"
    for t, cols in FTS_TABLES.items()} for fn in ({}, CAPPED_COLUMNS))
FTS_QUEUE_TARGETS = "SELECT DISTINCT target FROM fts_queue"
#: A statement that reads an FTS5 index names it, or a vocab table over it: it contains one of these (every FTS5 table
#: ends in ``_fts`` or is ``gate_vocab``; an fts5vocab table's name must contain ``vocab``; a test checks it).
FTS_MARKERS = ("_fts", "vocab")
FTS_QUEUE_CLEAR = "DELETE FROM fts_queue"


def _queue(fts: str, rowid: str, vals: list[str], *, delete: bool = False) -> str:
    slots = ", ".join(f"c{i}" for i in range(len(vals)))
    cmd = "'delete'" if delete else "NULL"
    return f"INSERT INTO fts_queue(target, cmd, id, {slots}) VALUES ('{fts}', {cmd}, {rowid}, {', '.join(vals)});"


def _kind_triggers(tables: tuple[str, ...], own: bool = False, sep: str = SEP_SQL) -> list[str]:
    """The insert, update and delete triggers of the kind tables ``tables`` (v4's; ``own``: a threaded episode's own
    context by v11's rule, :func:`~synapse_nb.store.sqlite.context_schema.own_context`, its bodies joined by
    ``sep``)."""
    parts: list[str] = []
    for table in tables:
        cols, exprs = _FTS[table]
        fts = f"{table}_fts"
        kind = _TABLE_KIND[table]
        new_vals = [e.format(r="new") for e in exprs]
        old_vals = [e.format(r="old") for e in exprs]
        fts_ins = _queue(fts, "new.rowid", new_vals)
        fts_del = _queue(fts, "old.rowid", old_vals, delete=True)
        tag_ins = (f"INSERT OR IGNORE INTO tags(tag, mind, kind, rid) SELECT value, new.mind, '{kind}', new.id "
                   f"FROM json_each(new.tags);" if "tags" in cols else "")
        tag_del = "DELETE FROM tags WHERE rid = old.id;" if "tags" in cols else ""
        gate = GATE_TEXT.get(table)
        gate_ins = gate_upd = gate_del = ""
        if gate is not None:
            structured = table == "episodes"
            th, sq, ac = ("new.thread", "new.seq", "new.actor") if structured else ("NULL", "NULL", "NULL")
            ctx = own_context("new.mind", "new.thread", "new.seq", "new.id", f"'{kind}'", sep) if own else _context_sql(
                "new.mind", "new.thread", "new.seq", "new.id")
            ctx = f"CASE WHEN new.thread IS NULL THEN '' ELSE {ctx} END" if structured else "''"
            gate_ins = (f"INSERT INTO gate_docs(rid, mind, kind, thread, seq, actor, body, context) "
                        f"SELECT new.id, new.mind, '{kind}', {th}, {sq}, {ac}, {gate.format(r='new')}, {ctx};")
            gate_upd = (f"UPDATE gate_docs SET body = {gate.format(r='new')}, thread = {th}, seq = {sq}, "
                        f"actor = {ac}, context = {ctx} WHERE rid = new.id;")
            gate_del = "DELETE FROM gate_docs WHERE rid = old.id;"
        parts += [f"DROP TRIGGER {table}_ai;", f"DROP TRIGGER {table}_au;", f"DROP TRIGGER {table}_ad;",
                  f"CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN {fts_ins} {gate_ins} {tag_ins} END;",
                  (f"CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN {fts_del} {fts_ins} {gate_upd} "
                   f"{tag_del} {tag_ins} END;"),
                  (f"CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN {fts_del} {gate_del} {tag_del} "
                   f"DELETE FROM session_seen WHERE rid = old.id; END;")]
    return parts


def _v4_triggers() -> str:
    """Every trigger that wrote an FTS5 table, again, queueing the same writes in the same order (v3's statements
    otherwise; the gate_docs triggers are recreated in v3's order, which is the order they fire in)."""
    parts = _kind_triggers(tuple(_FTS))
    outbox = """UPDATE outbox_counter SET n = n + 1;
    INSERT INTO index_outbox(rid, seq) VALUES ({r}.rid, (SELECT n FROM outbox_counter))
        ON CONFLICT(rid) DO UPDATE SET seq = excluded.seq;"""
    vocab_new, vocab_old = ["new.body"], ["old.body"]
    rank_new, rank_old = ["new.body", "new.context"], ["old.body", "old.context"]
    parts += [f"DROP TRIGGER gate_docs_{t};" for t in ("ai", "ad", "au", "rank_au", "ctx_ai", "ctx_au", "ctx_ad")]
    parts += [
        (f"CREATE TRIGGER gate_docs_ai AFTER INSERT ON gate_docs BEGIN {_queue('gate_vocab', 'new.gid', vocab_new)} "
         f"{_queue('rank_fts', 'new.gid', rank_new)} {outbox.format(r='new')} END;"),
        (f"CREATE TRIGGER gate_docs_ad AFTER DELETE ON gate_docs BEGIN "
         f"{_queue('gate_vocab', 'old.gid', vocab_old, delete=True)} "
         f"{_queue('rank_fts', 'old.gid', rank_old, delete=True)} {outbox.format(r='old')} END;"),
        (f"CREATE TRIGGER gate_docs_au AFTER UPDATE OF body ON gate_docs BEGIN "
         f"{_queue('gate_vocab', 'old.gid', vocab_old, delete=True)} {_queue('gate_vocab', 'new.gid', vocab_new)} "
         f"{outbox.format(r='new')} END;"),
        (f"CREATE TRIGGER gate_docs_rank_au AFTER UPDATE OF body, context ON gate_docs BEGIN "
         f"{_queue('rank_fts', 'old.gid', rank_old, delete=True)} {_queue('rank_fts', 'new.gid', rank_new)} END;"),
        _CTX_TRIGGERS]
    return "\n".join(parts)


_V4_FTS_QUEUE = """
CREATE TABLE fts_queue(
    n INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    cmd TEXT,
    id INTEGER NOT NULL,
    c0, c1, c2, c3
);
""" + _v4_triggers()

# -- v5: a durable change log of the ranking table ------------------------------------------------------------------
#: ``rank_log`` keeps at least this many of its latest entries (older ones are pruned every 1,000 entries): a
#: cache older than the log's first entry is rebuilt, not patched.
RANK_LOG_KEEP = 20_000
# AUTOINCREMENT: a generation is never reused, even once the log is pruned to nothing. An UPDATE logs the row
# whether or not a value changed (a memory's update rewrites its gate_docs row: its expiry is read with it).
_V5_RANK_LOG = f"""
CREATE TABLE rank_log(
    gen INTEGER PRIMARY KEY AUTOINCREMENT,
    rid TEXT NOT NULL
);
CREATE TRIGGER gate_docs_log_ai AFTER INSERT ON gate_docs BEGIN INSERT INTO rank_log(rid) VALUES (new.rid); END;
CREATE TRIGGER gate_docs_log_ad AFTER DELETE ON gate_docs BEGIN INSERT INTO rank_log(rid) VALUES (old.rid); END;
CREATE TRIGGER gate_docs_log_au AFTER UPDATE ON gate_docs BEGIN
    INSERT INTO rank_log(rid) VALUES (new.rid);
    INSERT INTO rank_log(rid) SELECT old.rid WHERE old.rid <> new.rid;
END;
CREATE TRIGGER rank_log_prune AFTER INSERT ON rank_log WHEN new.gen % 1000 = 0 BEGIN
    DELETE FROM rank_log WHERE gen <= new.gen - {RANK_LOG_KEEP};
END;
INSERT INTO meta(key, value) VALUES ('vault_uid', lower(hex(randomblob(16))))
    ON CONFLICT(key) DO NOTHING;
"""
#: The vault's identity (schema v5: a random id, written once): recall's caches key on it, and
#: :mod:`synapse_nb.borrowed` records per checkout whether the vault of that id is this checkout's own or came with
#: the repository. A writable open gives one to a vault that lacks it (a row deleted by hand): :data:`SET_VAULT_UID`.
GET_VAULT_UID = "SELECT value FROM meta WHERE key = 'vault_uid'"
SET_VAULT_UID = ("INSERT INTO meta(key, value) VALUES ('vault_uid', lower(hex(randomblob(16)))) "
                 "ON CONFLICT(key) DO NOTHING")

# -- v11: a person's ranking context skips agents' unverified records (context_schema.py; review 70) ---------------
# The episodes' triggers and the followers' refresh again, then every context the rule changes, its FTS5 writes
# applied here (a migration runs before the connection applies the queue).
_V11_CONTEXT = "\n".join([*_kind_triggers(("episodes",), own=True, sep="' '"), v11_context_triggers("' '"),
                          *(f"{RAW_FLUSH[t]};" for t in FTS_TABLES if t != AGENT_RANK_FTS[0]), f"{FTS_QUEUE_CLEAR};"])
# -- v12: each word of a record reaches the ranking index and word statistics at most 32 times (rankcap_schema.py) --
# The context's joiner again, every context recomputed, the kind tables' queued writes applied, the three indexes
# refilled (the queue's writes to them are in what they are filled with), and every rank file rebuilt.
_V12_RANK_CAP = "\n".join([*_kind_triggers(("episodes",), own=True), v11_context_triggers(),
                           *(f"{RAW_FLUSH[t]};" for t in FTS_TABLES if t not in CAPPED_COLUMNS),
                           f"{FTS_QUEUE_CLEAR};", V12_RANK_INDEXES, "DELETE FROM rank_files;"])

#: Forward migrations: MIGRATIONS[v] upgrades a vault from version v to v + 1.
#: v1: every kind, FTS5, tags, gate vocabulary, index outbox. v2: ``flags`` (dangling / stale marks from verify).
#: v3: ``thread``/``seq``/``actor`` on episodes; ``gate_docs`` becomes the ranking table (mind, kind, structure,
#: ``context``) with its FTS5 index ``rank_fts`` (porter; columns body, context) kept exact by triggers.
#: v4: the triggers queue their FTS5 writes in ``fts_queue``; the connection applies them (:data:`FTS_FLUSH`).
#: v5: ``rank_log``, the durable change log of ``gate_docs`` (recall's on-disk cache is keyed by it), and the
#: vault's ``vault_uid`` in ``meta`` (a cache never mistakes another vault's file, or a restored copy, for its own).
#: v6: ``history``, ``revisions``, ``links``, ``exports`` (the vault's own changes: history_schema.py).
#: v7: ``agent_held``, ``agent_held_all``: the records agents hold and their bytes, per mind and in all, kept by
#: triggers (held_schema.py): the agents' bounded totals read two rows, not every record.
#: v8: ``agent_gids``, ``agent_vocab_fts``: the word statistics of agents' unverified records, kept by triggers
#: (agent_vocab_schema.py): the duplicate check weighs a pair of two people's records by people's records alone.
#: v9: ``session_registry``: a row per session recall's delta keeps, kept by triggers (sessions_schema.py): the
#: room check of a new session reads it, not every mark of the hour, and an agent's sessions are bounded.
#: v10: ``rank_files``: the SHA-256 of each rank file recall wrote (rankfile_schema.py): a file rewritten is no file.
#: v11: a person's record's ranking ``context`` holds the people's records before it alone (context_schema.py).
#: v12: ``rank_fts``, ``gate_vocab``, ``agent_vocab_fts`` contentless, each word of a record at most 32 times in them.
#: v13: ``agent_rank_fts``: the ranking statistics of agents' unverified records (agent_rank_schema.py; review 83).
#: v14: a lesson's session marks outlive its deletion: a rejected lesson is named to the sessions given it (s21).
#: v15: the agent hooks' sessions and other agent sessions each keep their own bounds; lesson marks bounded apart (r95).
MIGRATIONS: dict[int, str] = {
    0: _TABLES_V1 + _fts_ddl(),
    1: _V2_FLAGS,
    2: _V3_RANKING,
    3: _V4_FTS_QUEUE,
    4: _V5_RANK_LOG,
    5: V6_HISTORY,
    6: V7_AGENT_HELD,
    7: V8_AGENT_VOCAB,
    8: V9_SESSIONS,
    9: V10_RANK_FILES,
    10: _V11_CONTEXT,
    11: _V12_RANK_CAP,
    12: V13_AGENT_RANK,
    13: V14_LESSON_MARKS,
    14: V15_SESSION_CLASSES,
}
