"""Schema v6 of a local vault: the vault's own changes (issue 30, docs/decisions/0013-memory-history.md).

- ``history``: one row per mutation of a record (append-only: an UPDATE is refused by a trigger), with the actor,
  the surface, the digests before and after and the record before the change (canonical JSON).
- ``revisions``: an agent's proposed change to a memory a human verified, pending until a human decides.
- ``links``: likely duplicates and contradictions found on write, open until a human decides; ``dup_checked``: the
  stamp up to which every write has been checked (a large write transaction's records are checked later, from
  history: no extra row per write).
- ``exports``: the exports taken (a purge names those that still hold a record).
- A record's deletion drops its open links and its pending revisions (its history stays until a purge).
- FTS5 keeps a deleted row's words in its segments until they are merged (SQLite 3.40 has no ``secure-delete``
  option): the call that deletes merges them and checkpoints the WAL (``Database.scrub``).
"""

from __future__ import annotations

from synapse_nb.models import TABLES

__all__ = ["V6_HISTORY"]

_KIND_TABLES = tuple(TABLES.values())

V6_HISTORY = """
CREATE TABLE history(
    id TEXT NOT NULL,
    rid TEXT NOT NULL,
    kind TEXT NOT NULL,
    mind TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version > 0),
    action TEXT NOT NULL,
    actor TEXT NOT NULL CHECK (actor IN ('user', 'agent')),
    surface TEXT NOT NULL,
    at TEXT NOT NULL,
    digest_before TEXT,
    digest_after TEXT,
    before TEXT,
    UNIQUE (rid, version)
);
CREATE INDEX history_mind ON history(mind, at, id);
CREATE INDEX history_at ON history(at, id);
CREATE TRIGGER history_append_only BEFORE UPDATE ON history BEGIN
    SELECT RAISE(ABORT, 'history rows are append-only');
END;
CREATE TABLE revisions(
    id TEXT PRIMARY KEY,
    rid TEXT NOT NULL,
    kind TEXT NOT NULL,
    mind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
    fields TEXT NOT NULL,
    base_digest TEXT NOT NULL,
    actor TEXT NOT NULL CHECK (actor IN ('user', 'agent')),
    surface TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decided_at TEXT
);
CREATE INDEX revisions_mind ON revisions(mind, status, created_at, id);
CREATE INDEX revisions_rid ON revisions(rid);
CREATE TABLE links(
    id TEXT PRIMARY KEY,
    mind TEXT NOT NULL,
    a TEXT NOT NULL,
    a_kind TEXT NOT NULL,
    b TEXT NOT NULL,
    b_kind TEXT NOT NULL,
    relation TEXT NOT NULL CHECK (relation IN ('duplicate', 'contradiction')),
    score REAL NOT NULL,
    hidden TEXT,
    status TEXT NOT NULL CHECK (status IN ('open', 'kept', 'merged', 'superseded')),
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decided_at TEXT,
    UNIQUE (a, b)
);
CREATE INDEX links_mind ON links(mind, status, created_at, id);
CREATE INDEX links_b ON links(b);
CREATE TABLE dup_checked(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
);
INSERT INTO dup_checked(id, at) VALUES (1, '');
CREATE TABLE exports(
    id TEXT PRIMARY KEY,
    taken_at TEXT NOT NULL,
    dest TEXT,
    records INTEGER NOT NULL,
    history INTEGER NOT NULL
);
""" + "".join(
    f"CREATE TRIGGER {t}_ad_links AFTER DELETE ON {t} BEGIN "
    f"DELETE FROM links WHERE (a = old.id OR b = old.id) AND status = 'open'; "
    f"DELETE FROM revisions WHERE rid = old.id AND status = 'pending'; END;\n" for t in _KIND_TABLES)
