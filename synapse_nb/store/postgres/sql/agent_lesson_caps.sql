-- Migration 25: the two caps of pending lessons hold for agents on the server (review 65, the team vault's part).
--
-- A mind holds at most 50 pending lessons agents made (kinds.lessons.AGENT_PENDING_LESSONS) and a scan fills it to
-- at most 100 pending lessons in all (SCAN_PENDING_LESSONS). Two gaps were left here:
--
-- * A person's scan takes over an agent's scan's lesson written in git's words: its source becomes the person's and
--   its revert_commit says "first_by": "agent" (kinds/lesson_scan.py). The server counted source = 'agent' only
--   (agent_pending_lessons of migration 11, the check after an agent's insert in _agent_holds of migration 12), so
--   a person's scan emptied the agents' count with no human review, and an agent's next scan made 50 more.
-- * The agent role reads no pending lesson (row-level security), so the package's count of a mind's pending lessons
--   read 0 for an agent's scan, and nothing on the server bounded the total: alternating an agent's scans and a
--   person's, or an agent's own SQL, grew a mind past 100.
--
-- Now a pending lesson counts as the agents' when an agent made it or a person's scan took it over from one
-- (first_by), as on a local vault (store/sql/lesson_sql.py, LESSONS_AGENT_PENDING), until a human approves or rejects it;
-- pending_lessons(mind) gives any role a mind's total (a count only, of a mind it may see); and an agent role's
-- statement that inserts lessons is refused (SQLSTATE 53400, QuotaExceededError in the package, rolled back) when a
-- mind it wrote holds more than 50 agents' pending lessons or more than 100 pending lessons in all after it. The
-- package checks both first, counting the same rows, so its own writes meet its refusal, in its words, first.

-- The first_by key of a lesson's revert_commit, or NULL. The column is JSON text (schema.sql: an object or NULL,
-- checked), so the cast does not fail on a stored row; a value that is not JSON still reads as NULL (as the local
-- vault's json_valid does), never as an error that stops a count.
CREATE FUNCTION _first_by(p_commit text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_commit IS NULL OR strpos(p_commit, 'first') = 0 AND strpos(p_commit, '\u') = 0 THEN
        RETURN NULL;  -- no key first_by, written plainly or escaped: no parse (and no subtransaction)
    END IF;
    BEGIN
        RETURN CASE WHEN jsonb_typeof(p_commit::jsonb) = 'object' THEN p_commit::jsonb ->> 'first_by' END;
    EXCEPTION WHEN data_exception THEN
        RETURN NULL;
    END;
END $$;
REVOKE EXECUTE ON FUNCTION _first_by(text) FROM PUBLIC;

-- A mind's pending lessons agents made or a person's scan took over from an agent's (the package's agent_pending).
CREATE OR REPLACE FUNCTION agent_pending_lessons(p_mind text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN CASE WHEN NOT _mind_visible(p_mind) THEN 0 ELSE
        (SELECT count(*) FROM lessons WHERE mind = p_mind AND status = 'pending'
                                        AND (source = 'agent' OR _first_by(revert_commit) = 'agent')) END;

-- A mind's pending lessons in all, for every role (the agent role reads none of them): a count only, 0 for a mind
-- the caller cannot see. The package's pending_total, which bounds an agent's scan and lesson.
CREATE FUNCTION pending_lessons(p_mind text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
    RETURN CASE WHEN NOT _mind_visible(p_mind) THEN 0 ELSE
        (SELECT count(*) FROM lessons WHERE mind = p_mind AND status = 'pending') END;
REVOKE EXECUTE ON FUNCTION pending_lessons(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pending_lessons(text) TO @S@_human, @S@_agent;

-- Migration 12's check after an agent's insert, counting as above, and the total beside the agents' cap.
CREATE OR REPLACE FUNCTION _agent_holds(p_table text, p_minds text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_mind text;
    v_limit bigint;
    v_held bigint;
    v_total bigint;
BEGIN
    FOREACH v_mind IN ARRAY p_minds LOOP
        CONTINUE WHEN NOT _mind_visible(v_mind);  -- called directly, it says nothing of a mind the caller cannot see
        IF p_table = 'memories' THEN
            SELECT memories_per_mind INTO v_limit FROM agent_quota_limits();
            SELECT count(*) INTO v_held FROM memories WHERE mind = v_mind AND source = 'agent';
        ELSE
            SELECT pending_lessons_per_mind INTO v_limit FROM agent_quota_limits();
            SELECT count(*) FILTER (WHERE source = 'agent' OR _first_by(revert_commit) = 'agent'), count(*)
              INTO v_held, v_total FROM lessons WHERE mind = v_mind AND status = 'pending';
            IF v_total > 100 THEN  -- kinds.lessons.SCAN_PENDING_LESSONS
                RAISE EXCEPTION 'synapse: 100 pending lessons in mind % is the most an agent''s lesson joins (% '
                                'after this statement)', v_mind, v_total
                    USING ERRCODE = 'configuration_limit_exceeded',
                          HINT = 'a human reviews the waiting lessons first';
            END IF;
        END IF;
        IF v_held > v_limit THEN
            RAISE EXCEPTION 'synapse: the agents'' quota of % % in mind % is reached (% after this statement)',
                            v_limit, CASE p_table WHEN 'memories' THEN 'memories' ELSE 'pending lessons' END,
                            v_mind, v_held
                USING ERRCODE = 'configuration_limit_exceeded',
                      HINT = CASE p_table WHEN 'memories'
                                 THEN 'delete stale agent memories, or a human can raise agent_memories_per_mind'
                                 ELSE 'a human reviews the waiting lessons first' END;
        END IF;
    END LOOP;
END $$;
