-- Migration 11: the agents' hourly quota per login over every mind, the proposal guard of conflict links, and the
-- index that counts a mind's sessions of the last hour (recall records a new session's delta state only while the
-- mind has fewer than recall.delta.SESSIONS_PER_HOUR of them).
CREATE INDEX IF NOT EXISTS session_seen_at ON session_seen(mind, seen_at);

-- An agent chooses the mind it writes to, so a count per mind let it write the quota once in each of as many minds
-- as its login may write. A count over every mind would let one login (a low-trust bot confined to a sandbox mind)
-- use up the quota of every other agent of the team, so the count is per database login: each history entry and
-- each proposed revision records the login that wrote it (set by a trigger, whatever the statement says), and an
-- agent login's count is its own entries of the hour, in every mind.
ALTER TABLE history ADD COLUMN IF NOT EXISTS login text COLLATE "C";
ALTER TABLE revisions ADD COLUMN IF NOT EXISTS login text COLLATE "C";
CREATE FUNCTION _row_login() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    NEW.login := session_user;
    RETURN NEW;
END $$;
CREATE TRIGGER history_login BEFORE INSERT ON history FOR EACH ROW EXECUTE FUNCTION _row_login();
CREATE TRIGGER revisions_login BEFORE INSERT ON revisions FOR EACH ROW EXECUTE FUNCTION _row_login();
CREATE INDEX IF NOT EXISTS history_agent_at ON history(at) WHERE actor = 'agent';
CREATE INDEX IF NOT EXISTS revisions_agent ON revisions(created_at) WHERE actor = 'agent';
DROP INDEX IF EXISTS history_agent;  -- by (mind, at): the count per mind it served is gone
CREATE FUNCTION agent_writes_since(p_since text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT count(*) FROM history WHERE at >= p_since AND actor = 'agent' AND login = session_user)
         + (SELECT count(*) FROM revisions WHERE created_at >= p_since AND actor = 'agent' AND login = session_user);
REVOKE EXECUTE ON FUNCTION agent_writes_since(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_writes_since(text) TO @S@_human, @S@_agent;
-- The count of migration 10, kept for a client of that version still running (it checked the schema when it
-- opened): it now answers the login's count too.
CREATE OR REPLACE FUNCTION agent_writes_since(p_mind text, p_since text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN agent_writes_since(p_since);

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

-- The pending lessons agents created in a mind, counted for the agent role (which row-level security keeps from
-- reading pending lessons): an agent's new lesson waits for a human, and a mind holds at most so many of them
-- (kinds/lessons.py, AGENT_PENDING_LESSONS).
CREATE FUNCTION agent_pending_lessons(p_mind text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN CASE WHEN NOT _mind_visible(p_mind) THEN 0 ELSE
        (SELECT count(*) FROM lessons WHERE mind = p_mind AND status = 'pending' AND source = 'agent') END;
REVOKE EXECUTE ON FUNCTION agent_pending_lessons(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_pending_lessons(text) TO @S@_human, @S@_agent;
