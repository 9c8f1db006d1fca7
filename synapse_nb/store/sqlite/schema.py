"""The SQLite schema of a vault: tables, FTS5 indexes, triggers, the gate view, and forward migrations.

- One contentless FTS5 table per kind (porter stemming), kept in sync by triggers, so full-text search can
  never disagree with the rows.
- ``gate_docs`` holds the text the recall gate scores per record (:data:`GATE_TEXT`); an external-content
  ``gate_vocab`` FTS5 table over it (no stemming), read through ``gate_vocab_row`` (fts5vocab), gives exact word
  document frequencies at no extra cost. ``gate_candidates`` is the view recall and the index read.
- Tags live in a side table maintained by triggers from each row's JSON tags.
- Every change to ``gate_docs`` queues the record id in ``index_outbox`` (same transaction) for the retrieval
  index.
- The version is ``PRAGMA user_version``; :data:`MIGRATIONS` ``[v]`` upgrades a vault from ``v`` to ``v + 1``.
"""

from __future__ import annotations

import sqlite3

__all__ = ["GATE_TEXT", "MIGRATIONS", "SCHEMA_VERSION", "split_sql"]

SCHEMA_VERSION = 2

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

#: Forward migrations: MIGRATIONS[v] upgrades a vault from version v to v + 1.
#: v1: every kind, FTS5, tags, gate vocabulary, index outbox. v2: ``flags`` (dangling / stale marks from verify).
MIGRATIONS: dict[int, str] = {
    0: _TABLES_V1 + _fts_ddl(),
    1: _V2_FLAGS,
}



def split_sql(script: str) -> list[str]:
    """Split a DDL script into statements, keeping trigger bodies (BEGIN ... END;) whole."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \n;"):
        out.append(buf.strip())
    return out

