-- Migration 11: the agents' hourly quota over every mind, and the proposal guard of conflict links.

-- An agent chooses the mind it writes to, so a count per mind let it write the quota once in each of as many minds
-- as its login may write. The count now covers all of them (a login granted '*': the whole project), from the
-- agents' history entries and proposed revisions by time.
CREATE INDEX IF NOT EXISTS history_agent_at ON history(at) WHERE actor = 'agent';
CREATE INDEX IF NOT EXISTS revisions_agent ON revisions(created_at) WHERE actor = 'agent';
DROP INDEX IF EXISTS history_agent;  -- by (mind, at): the count per mind it served is gone
DROP FUNCTION IF EXISTS agent_writes_since(text, text);
CREATE FUNCTION agent_writes_since(p_since text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT CASE WHEN '*' = ANY(m) THEN
                (SELECT count(*) FROM history WHERE at >= p_since AND actor = 'agent')
                + (SELECT count(*) FROM revisions WHERE created_at >= p_since AND actor = 'agent')
            ELSE
                (SELECT count(*) FROM history WHERE at >= p_since AND actor = 'agent' AND mind = ANY(m))
                + (SELECT count(*) FROM revisions WHERE created_at >= p_since AND actor = 'agent' AND mind = ANY(m))
            END FROM _minds() m);
REVOKE EXECUTE ON FUNCTION agent_writes_since(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_writes_since(text) TO @S@_human, @S@_agent;

-- The guard of revisions and conflict links read NEW.actor in one expression for both tables; links have no such
-- column, so PL/pgSQL failed to plan it for a link: an agent's write that found a near-duplicate committed, then
-- raised "record "new" has no field "actor"" from its duplicate check (an agent that retried stored a second copy).
-- Each table's test is now its own IF, planned only for that table.
CREATE OR REPLACE FUNCTION _proposal_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'revisions' THEN
        IF NEW.status <> 'pending' OR NEW.decided_at IS NOT NULL OR NEW.actor <> 'agent' THEN
            PERFORM _deny('decide a revision', 'an agent proposes; a human accepts or rejects');
        END IF;
    ELSIF TG_TABLE_NAME = 'links' THEN
        IF NEW.status <> 'open' OR NEW.decided_at IS NOT NULL THEN
            PERFORM _deny('resolve a conflict', 'an agent''s writes are checked; a human decides each pair');
        END IF;
    END IF;
    RETURN NEW;
END $$;
