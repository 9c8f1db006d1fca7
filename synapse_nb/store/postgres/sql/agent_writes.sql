-- Migration 10: indices for the agent quotas, read on every agent write (store/sql/queries.py): the hourly quota
-- counts the agents' history entries of the past hour (without history_agent, every entry of the hour was read, a
-- human's bulk import included); the per-mind quota counts the agents' memories (without memories_agent, every
-- memory of the mind).
CREATE INDEX IF NOT EXISTS history_agent ON history(mind, at) WHERE actor = 'agent';
CREATE INDEX IF NOT EXISTS memories_agent ON memories(mind) WHERE source = 'agent';
