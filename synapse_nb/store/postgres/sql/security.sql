-- synapse_nb team vault, migration 2: the human gate, enforced by the database itself.
--
-- Roles (created by migrate.py's bootstrap, NOLOGIN groups; people and agents log in as their own roles
-- made members of one of them):
--   @S@_owner  owns the schema and every object in it; used only by `team init` (migrations).
--   @S@_human  people: everything the package lets the "user" actor do.
--   @S@_agent  agents: propose only (the package's "agent" actor), even with raw SQL.
--
-- Layers, and why each:
--   1. Ownership: neither human nor agent owns anything, so neither can ALTER/DROP a table, disable a
--      trigger, drop a policy or CREATE in the schema (session_replication_role, which would skip
--      triggers, is superuser-only).
--   2. GRANTs (table and column level): what a role may touch at all. The agent has no UPDATE/DELETE on
--      lessons (cannot approve, reject, expire), none on decisions/checkpoints/episodes/flags, and no
--      write on derived tables (gate_df, gate_stats, tags, change_log, followers, schema_version).
--   3. BEFORE ROW triggers (_guard, SECURITY INVOKER so current_user is the real caller) for the rules
--      that depend on row contents and on old -> new transitions: source='user', verified=1,
--      confidence > 0.7, touching a user's record, settings keys. They raise SQLSTATE 42501 with a
--      message saying what was refused and what is allowed, instead of RLS's silent "UPDATE 0".
--   4. Row-level security only where rows must be hidden: an agent reads approved, unexpired lessons
--      only (as the package's Lessons._visible does).
--   5. SECURITY DEFINER functions for the few agent writes that need more than its privileges:
--      submit_analysis (an analysis on a pending lesson it cannot even see) and next_stamp (the clock
--      row). Every function pins search_path = @S@, pg_temp (pg_temp last: a temp table named like ours
--      cannot hijack them).

-- ---------------------------------------------------------------------------------------------------
-- who is trusted: members of @S@_human or @S@_owner (superusers count as members of every role)
-- ---------------------------------------------------------------------------------------------------
CREATE FUNCTION is_human() RETURNS boolean
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
    RETURN pg_has_role(current_user, '@S@_human', 'MEMBER') OR pg_has_role(current_user, '@S@_owner', 'MEMBER');

CREATE FUNCTION _deny(what text, allowed text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'synapse: an agent may not %', what
        USING ERRCODE = 'insufficient_privilege', HINT = allowed;
END $$;

-- ---------------------------------------------------------------------------------------------------
-- row rules for non-human callers
-- ---------------------------------------------------------------------------------------------------
CREATE FUNCTION _guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    hint_src constant text := 'an agent writes source=''agent'' proposals; a human verifies them';
BEGIN
    IF is_human() THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    IF TG_TABLE_NAME = 'meta' THEN
        IF TG_OP <> 'DELETE' AND NEW.key NOT LIKE 'scan\_tips:%' THEN
            PERFORM _deny(format('write the vault setting or meta key %L', NEW.key),
                          'a human changes settings; an agent may only record lesson scan positions');
        END IF;
        IF TG_OP = 'UPDATE' AND OLD.key <> NEW.key THEN
            PERFORM _deny('rename a meta key', 'an agent may only record lesson scan positions');
        END IF;
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'session_seen' THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    -- every record kind: an agent never touches a user's record and never writes as the user
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.source = 'user' THEN
        PERFORM _deny(format('%s the user''s %s %s',
                             CASE TG_OP WHEN 'UPDATE' THEN 'overwrite' ELSE 'delete' END,
                             CASE TG_TABLE_NAME WHEN 'memories' THEN 'memory' ELSE rtrim(TG_TABLE_NAME, 's') END,
                             OLD.id),
                      'propose a new record instead');
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    IF NEW.source IS DISTINCT FROM 'agent' THEN
        PERFORM _deny(format('write source=%L', NEW.source), hint_src);
    END IF;
    IF TG_OP = 'UPDATE' AND (NEW.id <> OLD.id OR NEW.mind <> OLD.mind) THEN
        PERFORM _deny('move a record to another id or mind', 'write a new record');
    END IF;
    IF TG_TABLE_NAME = 'memories' THEN
        IF NEW.verified <> 0 THEN
            PERFORM _deny('mark a memory verified', 'a human verifies memories');
        END IF;
        IF NEW.confidence > 0.7 THEN
            PERFORM _deny(format('give a memory confidence %s', NEW.confidence),
                          'an agent''s confidence is at most 0.7');
        END IF;
    ELSIF TG_TABLE_NAME = 'lessons' THEN
        -- only INSERT reaches here (the agent has no UPDATE grant on lessons)
        IF NEW.status <> 'pending' OR NEW.approved_at IS NOT NULL OR NEW.expires_at IS NOT NULL
           OR NEW.lesson_text IS NOT NULL THEN
            PERFORM _deny('create an approved or expired lesson', 'an agent creates pending lessons; a human approves');
        END IF;
        IF NEW.analysis_by IS DISTINCT FROM 'agent' AND (NEW.analysis IS NOT NULL OR NEW.analysis_by IS NOT NULL) THEN
            PERFORM _deny('write an analysis as the user', 'an agent''s analysis has analysis_by=''agent''');
        END IF;
    END IF;
    RETURN NEW;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes', 'lessons', 'meta',
                             'session_seen']
    LOOP
        EXECUTE format('CREATE TRIGGER %1$s_guard BEFORE INSERT OR UPDATE OR DELETE ON %1$I '
                       'FOR EACH ROW EXECUTE FUNCTION _guard()', t);
    END LOOP;
END $$;

-- ---------------------------------------------------------------------------------------------------
-- agent writes that need the owner's rights
-- ---------------------------------------------------------------------------------------------------
-- An agent's analysis of a pending lesson (Lessons.submit_analysis for actor "agent"). Raises:
--   P0002 no such lesson; 55000 the lesson is not pending; 42501 a user's analysis is there.
CREATE FUNCTION submit_analysis(p_id text, p_text text, p_ts text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE
    v_ts ts := next_stamp(p_ts::ts);   -- the project lock first, as every write transaction takes it
    v_status text;
    v_by text;
BEGIN
    IF p_text IS NULL OR btrim(p_text) = '' THEN
        RAISE EXCEPTION 'synapse: an analysis must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT status, analysis_by INTO v_status, v_by FROM lessons WHERE id = p_id FOR UPDATE;
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

-- (stored status, analysis_by) of a lesson whatever the caller may read (LessonTable.analysis_state: an agent
-- reaches a pending lesson by id to analyse it, and learns only its status).
CREATE FUNCTION lesson_state(p_id text) RETURNS TABLE(status text, analysis_by text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT l.status, l.analysis_by FROM lessons l WHERE l.id = p_id;
END;

-- Ids of lessons whatever the caller may read (KindTable.mind_of / ids_from: an id or a prefix resolves the same
-- way for every actor; what the actor may then do with it is checked separately).
CREATE FUNCTION lesson_mind(p_id text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT l.mind FROM lessons l WHERE l.id = p_id;
END;
CREATE FUNCTION lesson_ids(p_mind text, p_prefix text, p_limit integer) RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT l.id FROM lessons l WHERE l.id >= p_prefix AND l.id < p_prefix || chr(1114111) AND l.mind = p_mind
     ORDER BY l.id LIMIT p_limit;
END;

-- Whether the mind has a lesson for this revert commit, pending ones included (git scans on any machine, by
-- any actor, make one lesson per revert: LessonTable.has_revert).
CREATE FUNCTION revert_known(p_mind text, p_sha text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT EXISTS (SELECT 1 FROM lessons l WHERE l.mind = p_mind AND l.revert_sha = p_sha);
END;

-- ---------------------------------------------------------------------------------------------------
-- privileges
-- ---------------------------------------------------------------------------------------------------
REVOKE ALL ON SCHEMA @S@ FROM PUBLIC;
GRANT USAGE ON SCHEMA @S@ TO @S@_human, @S@_agent;
REVOKE ALL ON ALL TABLES IN SCHEMA @S@ FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA @S@ FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA @S@ FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE @S@_owner IN SCHEMA @S@ REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- functions evaluated inside CHECKs, generated columns and the guard need EXECUTE by the caller
GRANT EXECUTE ON FUNCTION fmt_ts(timestamptz), json_words(text), terms_ok(text[]), is_human(), _deny(text, text),
    next_stamp(ts), lesson_state(text), revert_known(text, text), lesson_mind(text),
    lesson_ids(text, text, integer) TO @S@_human, @S@_agent;
GRANT EXECUTE ON FUNCTION submit_analysis(text, text, text) TO @S@_agent;

-- everyone reads everything (lessons are filtered for agents by RLS below)
GRANT SELECT ON ALL TABLES IN SCHEMA @S@ TO @S@_human, @S@_agent;

-- humans: the "user" actor's writes
GRANT INSERT, UPDATE, DELETE ON meta, memories, checkpoints, decisions, lessons, episodes, notes, session_seen,
    flags TO @S@_human;
GRANT INSERT, UPDATE, DELETE ON followers TO @S@_human, @S@_agent;

-- agents: proposals
GRANT INSERT ON memories, checkpoints, decisions, lessons, episodes, notes, session_seen, meta TO @S@_agent;
GRANT UPDATE (content, tags, priority, source, verified, confidence, expires_at, updated_at, terms)
    ON memories TO @S@_agent;
GRANT UPDATE (trigger, body, source, updated_at, terms) ON notes TO @S@_agent;
GRANT UPDATE (digest, seen_at) ON session_seen TO @S@_agent;
GRANT UPDATE (value) ON meta TO @S@_agent;
GRANT DELETE ON memories, notes, session_seen TO @S@_agent;

-- ---------------------------------------------------------------------------------------------------
-- row-level security: agents see approved, unexpired lessons only
-- ---------------------------------------------------------------------------------------------------
ALTER TABLE lessons ENABLE ROW LEVEL SECURITY;
CREATE POLICY lessons_human ON lessons TO @S@_human USING (true) WITH CHECK (true);
CREATE POLICY lessons_agent_read ON lessons FOR SELECT TO @S@_agent
    USING (status = 'approved' AND expires_at > fmt_ts(now()));
CREATE POLICY lessons_agent_insert ON lessons FOR INSERT TO @S@_agent WITH CHECK (true);
