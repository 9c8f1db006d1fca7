"""Schema v7 of a local vault: what agents hold, counted as they write (the bounded totals of the agent quotas).

``agent_held`` keeps, per mind, how many records agents hold and the bytes of their text; ``agent_held_all`` the
same over every mind (one row). Triggers on the six record tables keep both exact in the write's own transaction,
whoever writes (an agent's create, a person's delete or verify, an import), so the quota check of an agent's write
(:func:`synapse_nb.kinds._base.check_agent_quota`) reads two rows by key instead of counting a million: the cost of
a write is the same at any number of records. The team vault keeps the same counts on its server (PostgreSQL
migration 15, ``agent_totals.sql``).

What counts (:data:`HELD`): a record whose source is the agent and that no human has taken on: an unverified agent
memory (a verified one is the human's word), a pending agent lesson (an approved one was approved by a human), and
every agent checkpoint, decision, episode and note. Its bytes are the UTF-8 bytes of the fields its writer chose
(:data:`HELD_FIELDS`; ids, stamps and the copies that search and recall keep are not counted).
"""

from __future__ import annotations

__all__ = ["HELD", "HELD_FIELDS", "V7_AGENT_HELD", "held_bytes_sql"]

#: Per table: the condition under which a row is held by agents (``{r}``: the row).
HELD: dict[str, str] = {
    "memories": "{r}.source = 'agent' AND {r}.verified = 0",
    "checkpoints": "{r}.source = 'agent'",
    "decisions": "{r}.source = 'agent'",
    "lessons": "{r}.source = 'agent' AND {r}.status = 'pending'",
    "episodes": "{r}.source = 'agent'",
    "notes": "{r}.source = 'agent'",
}
#: Per table: the fields whose bytes a held row counts (the same on the team vault's server).
HELD_FIELDS: dict[str, tuple[str, ...]] = {
    "memories": ("category", "key", "content", "tags"),
    "checkpoints": ("branch", "commit_sha", "doing", "changed_files", "next_step", "blockers", "origin"),
    "decisions": ("decision", "rationale", "tags", "branch", "commit_sha"),
    "lessons": ("summary", "branch", "revert_sha", "revert_commit", "reverted_commits", "files_affected", "diffstat",
                "analysis", "lesson_text"),
    "episodes": ("task_key", "outcome", "refs"),
    "notes": ("name", "trigger", "body"),
}


def held_bytes_sql(table: str, r: str) -> str:
    """SQLite: the bytes of row ``r``'s counted fields (a TEXT value cast to BLOB is its UTF-8 bytes)."""
    return " + ".join(f"coalesce(length(CAST({r}.{f} AS BLOB)), 0)" for f in HELD_FIELDS[table])


def _add(sign: str, r: str, table: str) -> str:
    size = held_bytes_sql(table, r)
    return (f"INSERT INTO agent_held(mind, records, bytes) SELECT {r}.mind, {sign}1, {sign}({size}) "
            f"WHERE {HELD[table].format(r=r)} ON CONFLICT(mind) DO UPDATE SET records = records + excluded.records, "
            "bytes = bytes + excluded.bytes; "
            f"UPDATE agent_held_all SET records = records {sign} 1, bytes = bytes {sign} ({size}) "
            f"WHERE {HELD[table].format(r=r)};")


def _v7() -> str:
    parts = ["""
CREATE TABLE agent_held(
    mind TEXT PRIMARY KEY,
    records INTEGER NOT NULL,
    bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE agent_held_all(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    records INTEGER NOT NULL,
    bytes INTEGER NOT NULL
);"""]
    for table in HELD:
        held_new, held_old = HELD[table].format(r="new"), HELD[table].format(r="old")
        parts.append(f"CREATE TRIGGER {table}_held_ai AFTER INSERT ON {table} WHEN {held_new} BEGIN "
                     f"{_add('+', 'new', table)} END;")
        parts.append(f"CREATE TRIGGER {table}_held_ad AFTER DELETE ON {table} WHEN {held_old} BEGIN "
                     f"{_add('-', 'old', table)} END;")
        parts.append(f"CREATE TRIGGER {table}_held_au AFTER UPDATE ON {table} WHEN ({held_old}) OR ({held_new}) "
                     f"BEGIN {_add('-', 'old', table)} {_add('+', 'new', table)} END;")
    union = " UNION ALL ".join(f"SELECT t.mind AS mind, {held_bytes_sql(table, 't')} AS size FROM {table} t "
                               f"WHERE {HELD[table].format(r='t')}" for table in HELD)
    parts.append(f"INSERT INTO agent_held(mind, records, bytes) SELECT mind, count(*), sum(size) FROM ({union}) "
                 "GROUP BY mind;")
    parts.append("INSERT INTO agent_held_all(id, records, bytes) "
                 "SELECT 1, coalesce(sum(records), 0), coalesce(sum(bytes), 0) FROM agent_held;")
    return "\n".join(parts)


#: v7: ``agent_held`` and ``agent_held_all``, their triggers, and the counts of the records already stored.
V7_AGENT_HELD = _v7()
