-- synapse_nb team vault, migration 36: the agent hooks' sessions keep their own bounds, and a session's lesson marks
-- are bounded apart from its records' (review 95).
--
-- Every agent session of a mind shared one room of new sessions an hour (the package's MARK_SEEN) and one bound of
-- 256 sessions a mind and 512 the project (migration 19's _session_count): an agent's throw-away recalls through the
-- Python API, MCP or the CLI (reads: no write quota) filled them, and the hooks' sessions ('agent:<login>:hook:<id>',
-- session_key) recorded nothing, or gave way whole: every prompt repeated the same context, and a lesson a person
-- rejected after the session start gave it was never named as no longer in force. Now:
--
--   _hook_session(s)  whether a stored key is one of the agent hooks' sessions (after the login as quote_ident
--                     writes it, so no session id an agent chooses for another surface reads as one)
--   the bounds        256 sessions a mind and 512 the project for the hooks' sessions, and the same for the other
--                     agent sessions, apart: no flood of one kind makes a session of the other give way (the
--                     package's room of new sessions an hour is counted apart the same way)
--   lesson marks      the package records them past the room of new sessions; here they are exempt from an agent
--                     session's 1,000 rows (which now count its records' rows alone) and bounded apart, at 200 a
--                     session (a new lesson row past it is not inserted)
--
-- The SQLite vault's schema v15 (store/sqlite/sessions_schema.py) keeps the same. What an agent login writes with
-- its own SQL is its login's either way: it can fill its own hook sessions' bounds (the server cannot tell the hook
-- from the login's other connections).

CREATE FUNCTION _hook_session(p_session text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
    RETURN p_session ~ '^agent:("([^"]|"")*"|[^":]*):hook:';
REVOKE EXECUTE ON FUNCTION _hook_session(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _hook_session(text) TO @S@_human, @S@_agent;

-- A new row of an agent session past its bound is not inserted (a row it holds is updated): a lesson's past the
-- session's 200 lesson rows, a record's past its 1,000 rows of records (the registry's count, as of the statement's
-- start: _session_count deletes a statement's rows past it).
CREATE OR REPLACE FUNCTION _session_rows_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n bigint;
BEGIN
    IF NOT starts_with(NEW.session, 'agent:') THEN
        RETURN NEW;
    END IF;
    IF starts_with(NEW.rid, 'les_') THEN
        v_n := 200 - (SELECT count(*) FROM session_seen s WHERE s.mind = NEW.mind AND s.session = NEW.session
                                                          AND s.rid >= 'les_' AND s.rid < 'les`');
    ELSE
        v_n := (SELECT r.n FROM session_registry r WHERE r.mind = NEW.mind AND r.session = NEW.session);
        IF v_n >= 1000 THEN  -- its records' rows: the lessons' do not count
            v_n := 1000 - v_n + (SELECT count(*) FROM session_seen s WHERE s.mind = NEW.mind
                                    AND s.session = NEW.session AND s.rid >= 'les_' AND s.rid < 'les`');
        ELSE
            v_n := 1;
        END IF;
    END IF;
    IF v_n <= 0 AND NOT EXISTS (SELECT 1 FROM session_seen s WHERE s.mind = NEW.mind AND s.session = NEW.session
                                                               AND s.rid = NEW.rid) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;

-- What a statement changed of session_seen, counted in the registry (as migration 19); after an insert, an agent
-- session's rows of records past its bound, and the agent sessions past a mind's and the project's bounds of their
-- kind (the hooks' or the others'), go.
CREATE OR REPLACE FUNCTION _session_count() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_minds text[];
    v_mind text;
    v_kinds boolean[];
    v_hook boolean;
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
    -- a statement's rows of records past an agent session's bound (the row trigger read the count before the
    -- statement); its lessons' rows are not counted in it
    WITH held AS (
        SELECT r.mind, r.session, r.n - (SELECT count(*) FROM session_seen l
                                           WHERE l.mind = r.mind AND l.session = r.session
                                             AND l.rid >= 'les_' AND l.rid < 'les`') AS n
          FROM session_registry r
         WHERE (r.mind, r.session) IN (SELECT x.mind, x.session FROM nt x WHERE starts_with(x.session, 'agent:')))
    DELETE FROM session_seen s USING (
        SELECT y.mind, y.session, y.rid FROM (
            SELECT x.mind, x.session, x.rid,
                   row_number() OVER (PARTITION BY x.mind, x.session ORDER BY x.rid DESC) AS k FROM nt x
             WHERE starts_with(x.session, 'agent:') AND NOT starts_with(x.rid, 'les_')) y
          JOIN held h ON h.mind = y.mind AND h.session = y.session
         WHERE h.n > 1000 AND y.k <= h.n - 1000) z
     WHERE s.mind = z.mind AND s.session = z.session AND s.rid = z.rid;
    -- the agent sessions of a kind a mind and the project keep: the ones this statement wrote first (the most
    -- recently given of them, when they are more than the bound), then the others of that kind by when they were
    -- last given something; the rest give way whole
    v_minds := ARRAY(SELECT DISTINCT x.mind FROM nt x WHERE starts_with(x.session, 'agent:') ORDER BY 1);
    FOREACH v_mind IN ARRAY v_minds LOOP
        v_kinds := ARRAY(SELECT DISTINCT _hook_session(x.session) FROM nt x
                          WHERE x.mind = v_mind AND starts_with(x.session, 'agent:') ORDER BY 1);
        FOREACH v_hook IN ARRAY v_kinds LOOP
            DELETE FROM session_seen s WHERE s.mind = v_mind AND s.session IN (
                SELECT r.session FROM session_registry r
                 WHERE r.mind = v_mind AND r.agent AND _hook_session(r.session) = v_hook
                 ORDER BY r.session IN (SELECT x.session FROM nt x WHERE x.mind = v_mind) DESC,
                          r.last_seen DESC, r.session DESC
                OFFSET 256);
        END LOOP;
    END LOOP;
    v_kinds := ARRAY(SELECT DISTINCT _hook_session(x.session) FROM nt x WHERE starts_with(x.session, 'agent:')
                      ORDER BY 1);
    FOREACH v_hook IN ARRAY v_kinds LOOP
        DELETE FROM session_seen s USING (
            SELECT r.mind, r.session FROM session_registry r
             WHERE r.agent AND _hook_session(r.session) = v_hook
             ORDER BY (r.mind, r.session) IN (SELECT x.mind, x.session FROM nt x) DESC,
                      r.last_seen DESC, r.mind DESC, r.session DESC
            OFFSET 512) o
         WHERE s.mind = o.mind AND s.session = o.session;
    END LOOP;
    RETURN NULL;
END $$;

REVOKE EXECUTE ON FUNCTION _session_rows_guard(), _session_count() FROM PUBLIC;
