-- Migration 6: write stamps come from the server's clock; no client moves them (issue 29, D3).
--
-- Until now next_stamp(p_now) stamped the caller's clock (or 1 µs past the last stamp), and the human and agent
-- roles could call it: `SELECT next_stamp('2999-01-01T00:00:00.000000Z')` as the agent, or one machine whose
-- clock ran a year fast, stamped every later write by anyone in that future. Now:
--
--   * next_stamp() takes no time: the stamp is max(clock_timestamp(), last stamp + 1 µs), read after the
--     project's write lock is held, so stamps are strictly increasing per project and follow commit order.
--   * A last stamp more than one minute ahead of the server's clock (or outside 1970..2100, or malformed) was
--     not made by this function (a client clock before this migration, a hand-written meta row): it is ignored,
--     never stepped past. Stamps then restart at the server's clock; a server clock that steps back by less
--     than a minute (NTP) still gives increasing stamps.
--   * next_stamp(ts) and submit_analysis(text, text, text), the functions that took a time, are dropped;
--     submit_analysis(text, text) stamps with next_stamp().
--   * The meta row 'clock' is written by next_stamp (the owner's rights) only: a human's or an agent's statement
--     on it is refused.
--
-- The vault's "now" (which memories have expired, which lessons are in force, approved_at, expires_at) is not
-- a stamp: it is the recall snapshot's now() on the server, or the clock a handle was opened with
-- (open_vault(..., clock=...), how tests pin time). Stamps (created_at, updated_at) always come from here.

CREATE FUNCTION next_stamp() RETURNS ts
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    INSERT INTO meta AS m (key, value) VALUES ('clock', fmt_ts(clock_timestamp()))
    ON CONFLICT (key) DO UPDATE
        SET value = CASE
            WHEN m.value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$'
                 AND m.value >= '1970-01-01T00:00:00.000000Z' AND m.value < '2100-01-01T00:00:00.000000Z'
            THEN CASE
                WHEN m.value::timestamptz <= clock_timestamp() + interval '1 minute'
                THEN greatest(excluded.value, fmt_ts(m.value::timestamptz + interval '1 microsecond'))
                ELSE excluded.value
            END
            ELSE excluded.value
        END
    RETURNING value;
END;

DROP FUNCTION submit_analysis(text, text, text);
DROP FUNCTION next_stamp(ts);

-- An agent's analysis of a pending lesson (Lessons.submit_analysis for actor "agent"), stamped by the server.
-- Raises: P0002 no such lesson; 55000 the lesson is not pending; 42501 a user's analysis is there.
CREATE FUNCTION submit_analysis(p_id text, p_text text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE
    v_ts ts := next_stamp();   -- the project lock first, as every write transaction takes it
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

-- The clock row is the stamp function's alone.
CREATE FUNCTION _clock_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF current_user <> '@S@_owner' AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'synapse: the write clock (meta key ''clock'') is the server''s; it may not be written'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'stamps come from the server''s clock (next_stamp()); no client sets them';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
CREATE TRIGGER meta_clock_guard_ins BEFORE INSERT ON meta
    FOR EACH ROW WHEN (NEW.key = 'clock') EXECUTE FUNCTION _clock_guard();
CREATE TRIGGER meta_clock_guard_upd BEFORE UPDATE ON meta
    FOR EACH ROW WHEN (OLD.key = 'clock' OR NEW.key = 'clock') EXECUTE FUNCTION _clock_guard();
CREATE TRIGGER meta_clock_guard_del BEFORE DELETE ON meta
    FOR EACH ROW WHEN (OLD.key = 'clock') EXECUTE FUNCTION _clock_guard();

REVOKE EXECUTE ON FUNCTION next_stamp(), submit_analysis(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION next_stamp() TO @S@_human, @S@_agent;
GRANT EXECUTE ON FUNCTION submit_analysis(text, text) TO @S@_agent;
