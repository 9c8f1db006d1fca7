-- synapse_nb team vault, migration 19: a registry of the sessions recall's delta keeps, and an agent's sessions
-- bounded (review 28).
--
-- session_seen holds a row per record a session was given. An agent's reads alone grew it without end: each recall
-- under one of its sessions (at most 256 new a mind an hour) added a row per record given, re-giving refreshed
-- seen_at so a person's prune never cleared them, and the room check of a new session (the package's MARK_SEEN)
-- counted the distinct sessions of every row of the hour inside the recall's statement: a person's recall paid for
-- every row agents had been given. The SQLite vault keeps the same (schema v9, store/sqlite/sessions_schema.py).
--
--   session_registry  one row per (mind, session): an agent's or not ('agent:', recall/delta.py), when it was first
--                     and last given something, its rows in session_seen. Statement triggers on session_seen keep
--                     it exact for every writer (SECURITY DEFINER: no role but the owner writes it), as migration 15
--                     keeps what agents hold; the room check reads it (one key, and the registry rows of the hour).
--   1,000 rows        an agent session holds at most (store/sql/queries.py AGENT_SESSION_ROWS): a new record given
--                     past it is not marked (a BEFORE row trigger skips it; a statement's rows past it, which that
--                     trigger cannot see, are deleted after it): the session is given it again, a lost mark, never
--                     a lost record. A record it holds is still updated.
--   256 / 512         agent sessions a mind / the project keeps (AGENT_SESSIONS_PER_MIND, _PER_VAULT): when a
--                     new one is admitted, those given something least recently give way whole; a statement that
--                     writes more than the bound keeps only its most recent ones (never more, after any statement).
--   prune             delete_sessions_before also drops an agent session first given something before the time.
--
-- People's sessions keep their rows and rules. An agent login's quota of session state rows (migrations 12, 13)
-- is unchanged: it counts the rows a statement inserted.

CREATE TABLE session_registry(
    mind text COLLATE "C" NOT NULL,
    session text COLLATE "C" NOT NULL,
    agent boolean NOT NULL,
    first_seen ts NOT NULL,
    last_seen ts NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (mind, session)
);
CREATE INDEX session_registry_last ON session_registry(mind, agent, last_seen);
CREATE INDEX session_registry_agents ON session_registry(last_seen) WHERE agent;
INSERT INTO session_registry(mind, session, agent, first_seen, last_seen, n)
    SELECT mind, session, starts_with(session, 'agent:'), min(seen_at), max(seen_at), count(*) FROM session_seen
     GROUP BY mind, session;
REVOKE ALL ON session_registry FROM PUBLIC;
GRANT SELECT ON session_registry TO @S@_human, @S@_agent;
-- a login sees the sessions of its minds (migration 8)
ALTER TABLE session_registry ENABLE ROW LEVEL SECURITY;
CREATE POLICY session_registry_rows ON session_registry USING (true) WITH CHECK (true);
CREATE POLICY session_registry_minds ON session_registry AS RESTRICTIVE
    USING ('*' = ANY((SELECT _minds())::text[]) OR mind = ANY((SELECT _minds())::text[]))
    WITH CHECK ('*' = ANY((SELECT _minds())::text[]) OR mind = ANY((SELECT _minds())::text[]));

-- A new row of an agent session that holds its bound already is not inserted (a row it holds is updated).
CREATE FUNCTION _session_rows_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF starts_with(NEW.session, 'agent:')
       AND (SELECT r.n FROM session_registry r WHERE r.mind = NEW.mind AND r.session = NEW.session) >= 1000
       AND NOT EXISTS (SELECT 1 FROM session_seen s WHERE s.mind = NEW.mind AND s.session = NEW.session
                                                       AND s.rid = NEW.rid) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER session_seen_rows BEFORE INSERT ON session_seen FOR EACH ROW EXECUTE FUNCTION _session_rows_guard();

-- What a statement changed of session_seen, counted in the registry (rows taken off first, then added, in key
-- order; a session left with none goes); after an insert, an agent session's rows past its bound and the agent
-- sessions past a mind's and the project's bounds go (each branch reads only the transition tables its trigger
-- declares).
CREATE FUNCTION _session_count() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_minds text[];
    v_mind text;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE session_registry r SET n = r.n - o.n
          FROM (SELECT x.mind, x.session, count(*) AS n FROM ot x GROUP BY 1, 2 ORDER BY 1, 2) o
         WHERE r.mind = o.mind AND r.session = o.session;
    END IF;
    IF TG_OP <> 'DELETE' THEN  -- an update counts its rows out and in again (a move to another session moves them)
        INSERT INTO session_registry AS r (mind, session, agent, first_seen, last_seen, n)
            SELECT x.mind, x.session, starts_with(x.session, 'agent:'), min(x.seen_at), max(x.seen_at), count(*)
              FROM nt x GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (mind, session) DO UPDATE SET n = r.n + excluded.n,
                first_seen = least(r.first_seen, excluded.first_seen),
                last_seen = greatest(r.last_seen, excluded.last_seen);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM session_registry r USING (SELECT DISTINCT x.mind, x.session FROM ot x) o
         WHERE r.mind = o.mind AND r.session = o.session AND r.n <= 0;
        RETURN NULL;
    END IF;
    -- a statement's rows past an agent session's bound (the row trigger read the count before the statement)
    DELETE FROM session_seen s USING (
        SELECT y.mind, y.session, y.rid FROM (
            SELECT x.mind, x.session, x.rid,
                   row_number() OVER (PARTITION BY x.mind, x.session ORDER BY x.rid DESC) AS k FROM nt x
             WHERE starts_with(x.session, 'agent:')) y
          JOIN session_registry r ON r.mind = y.mind AND r.session = y.session
         WHERE r.n > 1000 AND y.k <= r.n - 1000) z
     WHERE s.mind = z.mind AND s.session = z.session AND s.rid = z.rid;
    -- the agent sessions a mind and the project keep: the ones this statement wrote first (the most recently given
    -- of them, when they are more than the bound: one statement is held to it as one session at a time is), then
    -- the others by when they were last given something; the rest give way whole
    v_minds := ARRAY(SELECT DISTINCT x.mind FROM nt x WHERE starts_with(x.session, 'agent:') ORDER BY 1);
    FOREACH v_mind IN ARRAY v_minds LOOP
        DELETE FROM session_seen s WHERE s.mind = v_mind AND s.session IN (
            SELECT r.session FROM session_registry r
             WHERE r.mind = v_mind AND r.agent
             ORDER BY r.session IN (SELECT x.session FROM nt x WHERE x.mind = v_mind) DESC,
                      r.last_seen DESC, r.session DESC
            OFFSET 256);
    END LOOP;
    IF cardinality(v_minds) > 0 THEN
        DELETE FROM session_seen s USING (
            SELECT r.mind, r.session FROM session_registry r
             WHERE r.agent
             ORDER BY (r.mind, r.session) IN (SELECT x.mind, x.session FROM nt x) DESC,
                      r.last_seen DESC, r.mind DESC, r.session DESC
            OFFSET 512) o
         WHERE s.mind = o.mind AND s.session = o.session;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER session_seen_count_ai AFTER INSERT ON session_seen REFERENCING NEW TABLE AS nt
    FOR EACH STATEMENT EXECUTE FUNCTION _session_count();
CREATE TRIGGER session_seen_count_au AFTER UPDATE ON session_seen REFERENCING OLD TABLE AS ot NEW TABLE AS nt
    FOR EACH STATEMENT EXECUTE FUNCTION _session_count();
CREATE TRIGGER session_seen_count_ad AFTER DELETE ON session_seen REFERENCING OLD TABLE AS ot
    FOR EACH STATEMENT EXECUTE FUNCTION _session_count();

-- Per-session marks older than a time, and agent sessions first given something before it (Vault.prune; humans
-- only): an agent re-giving the same records kept their seen_at new, and so its sessions for ever.
CREATE OR REPLACE FUNCTION delete_sessions_before(p_mind text, p_before text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('prune session marks', 'a human prunes');
    END IF;
    RETURN QUERY DELETE FROM session_seen WHERE mind = p_mind AND _mind_visible(mind)
        AND (seen_at < p_before OR session IN (SELECT r.session FROM session_registry r
                                                WHERE r.mind = p_mind AND r.agent AND r.first_seen < p_before))
        RETURNING session::text;
END $$;

REVOKE EXECUTE ON FUNCTION _session_rows_guard(), _session_count() FROM PUBLIC;
