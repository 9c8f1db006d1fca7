"""The indices of a local vault that no schema version depends on (created on a writable open when missing)."""

from __future__ import annotations

__all__ = ["INDICES"]

#: Indices no schema version depends on: a writable open creates the missing ones, so a vault stays readable by
#: every synapse_nb of its schema version (an index is invisible to a reader that does not use it). The agent
#: quotas' counts, read on every agent write: ``history_agent_at`` and ``revisions_agent`` (the agents' history
#: entries and proposed revisions by time, for the hourly quota over every mind: without them every entry of the
#: hour was read, a human's bulk import included; ``history_at`` orders every entry, these only the agents'. The
#: count per mind used ``history_agent`` by (mind, at): a vault that has it keeps it, since an older synapse_nb of
#: this version would build it again on each open), ``memories_agent``
#: (the agents' memories per mind: without it every memory of the mind was counted, 66 ms a write at 200,000) and
#: ``session_seen_at`` (a mind's marks by age, which ``memory prune`` clears; the hour's sessions are counted in
#: ``session_registry`` since v9)
#: and ``decisions_user`` (a person's latest decisions for the restore pack, past any number of agents' newer ones:
#: 33 ms at 100,000 agent decisions without it, 0.04 ms with it; benchmarks/restore_pack.py).
INDICES: dict[str, str] = {
    "history_agent_at": "CREATE INDEX IF NOT EXISTS history_agent_at ON history(at) WHERE actor = 'agent'",
    "revisions_agent": "CREATE INDEX IF NOT EXISTS revisions_agent ON revisions(created_at) WHERE actor = 'agent'",
    "memories_agent": "CREATE INDEX IF NOT EXISTS memories_agent ON memories(mind) WHERE source = 'agent'",
    "session_seen_at": "CREATE INDEX IF NOT EXISTS session_seen_at ON session_seen(mind, seen_at)",
    "decisions_user": "CREATE INDEX IF NOT EXISTS decisions_user ON decisions(mind, created_at DESC) "
                      "WHERE source = 'user'",
}
