-- Migration 10: the agent quotas, read on every agent write.
-- Indices: the hourly quota counts the agents' history entries of the past hour (without history_agent, every entry
-- of the hour was read, a human's bulk import included); the per-mind quota counts the agents' memories (without
-- memories_agent, every memory of the mind).
CREATE INDEX IF NOT EXISTS history_agent ON history(mind, at) WHERE actor = 'agent';
CREATE INDEX IF NOT EXISTS memories_agent ON memories(mind) WHERE source = 'agent';

-- The hourly count as a function of the schema: run as the agent role, a plain count does not see the history of
-- pending lessons (row-level security keeps them from agents), so an agent's analyses of them went uncounted. It
-- counts one visible mind (a mind the caller may not see counts 0) and returns nothing else.
CREATE OR REPLACE FUNCTION agent_writes_since(p_mind text, p_since text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN CASE WHEN NOT _mind_visible(p_mind) THEN 0 ELSE
        (SELECT count(*) FROM history WHERE mind = p_mind AND at >= p_since AND actor = 'agent')
        + (SELECT count(*) FROM revisions WHERE mind = p_mind AND created_at >= p_since AND actor = 'agent') END;
REVOKE EXECUTE ON FUNCTION agent_writes_since(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_writes_since(text, text) TO @S@_human, @S@_agent;
