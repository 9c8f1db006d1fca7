-- Migration 8: minds isolated by the database (issue 29).
--
-- A mind is a column. Until now every role read every mind with plain SQL; the package's mind= was a filter the
-- client chose. Now a login sees (and writes) only the minds granted to it or to a role it is a member of
-- (mind_grants; '*' = every mind), enforced by row-level security on every table that holds a mind:
--
--   * @S@_human and @S@_owner are granted '*' here: people see every mind, as before, until an administrator
--     narrows it (`synapse-nb team grant ... --revoke`);
--   * @S@_agent is granted nothing: an agent login sees the minds granted to it (`synapse-nb team grant URL LOGIN
--     --mind NAME`; `team init --agent LOGIN` grants '*' unless --mind is given). Agent logins that exist when
--     this migration runs keep '*' (an upgrade cuts no one off).
--   * The login decides (session_user), not SET ROLE: a person's agent handle sees what the person sees.
--   * Policies are RESTRICTIVE (ANDed with the lessons' policies of migration 2); the set of minds is read once
--     per statement (an InitPlan), not per row.
--   * The SECURITY DEFINER functions that read lessons for any caller (ids, state, revert scan, analysis) and the
--     delete functions of migration 7 check the mind too.
-- Not isolated: the vault-wide word statistics (gate_df, gate_stats: counts per term, no text), settings (meta)
-- and the feed positions of machines (followers).

CREATE TABLE mind_grants(
    grantee name NOT NULL,
    mind text COLLATE "C" NOT NULL CHECK (mind = '*' OR mind ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (grantee, mind)
);
INSERT INTO mind_grants(grantee, mind) VALUES ('@S@_human', '*'), ('@S@_owner', '*');
INSERT INTO mind_grants(grantee, mind)
    SELECT r.rolname, '*' FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
     WHERE m.roleid = '@S@_agent'::regrole AND r.rolname <> '@S@_human'
    ON CONFLICT DO NOTHING;

-- The minds the session's login may see ('*': all).
CREATE FUNCTION _minds() RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT coalesce(array_agg(DISTINCT g.mind), '{}')
              FROM mind_grants g JOIN pg_roles r ON r.rolname = g.grantee
             WHERE pg_has_role(session_user, r.oid, 'MEMBER'));

CREATE OR REPLACE FUNCTION _mind_visible(p_mind text) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT '*' = ANY(m) OR p_mind = ANY(m) FROM _minds() m);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes', 'tags',
                             'session_seen', 'flags', 'change_log'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        IF t <> 'lessons' THEN  -- lessons have their permissive policies (migration 2)
            EXECUTE format('CREATE POLICY %1$s_rows ON %1$I USING (true) WITH CHECK (true)', t);
        END IF;
        EXECUTE format('CREATE POLICY %1$s_minds ON %1$I AS RESTRICTIVE '
                       'USING (''*'' = ANY((SELECT _minds())::text[]) OR mind = ANY((SELECT _minds())::text[])) '
                       'WITH CHECK (''*'' = ANY((SELECT _minds())::text[]) OR mind = ANY((SELECT _minds())::text[]))', t);
    END LOOP;
END $$;

-- The owner's-rights readers of lessons answer only for the caller's minds.
CREATE OR REPLACE FUNCTION lesson_state(p_id text) RETURNS TABLE(status text, analysis_by text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT l.status, l.analysis_by FROM lessons l WHERE l.id = p_id AND _mind_visible(l.mind);
END;
CREATE OR REPLACE FUNCTION lesson_mind(p_id text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT l.mind FROM lessons l WHERE l.id = p_id AND _mind_visible(l.mind);
END;
CREATE OR REPLACE FUNCTION lesson_ids(p_mind text, p_prefix text, p_limit integer) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT l.id FROM lessons l WHERE l.id >= p_prefix AND l.id < p_prefix || chr(1114111) AND l.mind = p_mind
       AND _mind_visible(l.mind)
     ORDER BY l.id LIMIT p_limit;
END;
CREATE OR REPLACE FUNCTION revert_known(p_mind text, p_sha text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT EXISTS (SELECT 1 FROM lessons l WHERE l.mind = p_mind AND l.revert_sha = p_sha AND _mind_visible(l.mind));
END;
CREATE OR REPLACE FUNCTION submit_analysis(p_id text, p_text text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE
    v_ts ts := next_stamp();   -- the project lock first, as every write transaction takes it
    v_status text;
    v_by text;
BEGIN
    IF p_text IS NULL OR btrim(p_text) = '' THEN
        RAISE EXCEPTION 'synapse: an analysis must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT status, analysis_by INTO v_status, v_by FROM lessons WHERE id = p_id AND _mind_visible(mind) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'synapse: no lesson %', p_id USING ERRCODE = 'no_data_found';
    END IF;
    IF v_status <> 'pending' THEN
        RAISE EXCEPTION 'synapse: lesson % is %; an agent may only analyse pending lessons', p_id, v_status
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF v_by = 'user' THEN
        RAISE EXCEPTION 'synapse: lesson % already has an analysis written by the user; an agent may not replace it',
            p_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    UPDATE lessons SET analysis = p_text, analysis_by = 'agent', updated_at = v_ts WHERE id = p_id;
END $$;

REVOKE ALL ON mind_grants FROM PUBLIC;
GRANT SELECT ON mind_grants TO @S@_human;
REVOKE EXECUTE ON FUNCTION _minds() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _minds() TO @S@_human, @S@_agent;
