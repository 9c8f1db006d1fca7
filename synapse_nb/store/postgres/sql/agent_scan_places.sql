-- synapse_nb team vault, migration 20: an agent login's lesson scan place is its own, and is a list of commits
-- (review 30, finding 3).
--
-- Migration 12 gave agents one scan place per mind, meta 'scan_tips:agent:<mind>', shared by every agent login, and
-- its guard (_meta_agent_guard) checked the key and the size, not the value. One agent login's own SQL writing the
-- value 7 there made every other agent's `lessons scan` fail (the package read tuple(json.loads(value))), and a list
-- holding HEAD would have made their scans skip every revert before it.
--
-- Now the package keeps an agent's place under 'scan_tips:agent:<login>:<mind>' (login: session_user, which the
-- statement names itself, so it is the server's; a person acting as an agent has the person's login), and an agent
-- role writes only
--   * its own login's key: 'scan_tips:agent:' || session_user || ':' then a mind name, and
--   * a value that is a JSON array of commit ids (40 or 64 lower-case hex digits: git's SHA-1 and SHA-256), at most
--     1 MB.
-- The shared places of before are removed: no version reads them, and any agent could have written them. Each
-- agent login's first scan afterwards looks at the newest scan_window commits again; a scan is idempotent (one
-- lesson per revert), so that costs time only. A person's place ('scan_tips:<mind>') is as before.

CREATE FUNCTION _scan_tips_ok(p_value text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE v jsonb;
BEGIN
    BEGIN
        v := p_value::jsonb;
    EXCEPTION WHEN others THEN
        RETURN false;
    END;
    RETURN jsonb_typeof(v) = 'array' AND NOT EXISTS (
        SELECT 1 FROM jsonb_array_elements(v) e
         WHERE jsonb_typeof(e) <> 'string' OR NOT (e #>> '{}') ~ '^[0-9a-f]{40}([0-9a-f]{24})?$');
END $$;
REVOKE EXECUTE ON FUNCTION _scan_tips_ok(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _scan_tips_ok(text) TO @S@_human, @S@_agent;

CREATE OR REPLACE FUNCTION _meta_agent_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_own constant text := 'scan_tips:agent:' || session_user || ':';
BEGIN
    -- is_human(), as _guard: a statement of the owner's functions passes (next_stamp writes the clock row)
    IF NOT starts_with(NEW.key, v_own) OR octet_length(NEW.value) > 1048576
       OR NOT substr(NEW.key, length(v_own) + 1) ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'
       OR NOT _scan_tips_ok(NEW.value) THEN
        IF NOT is_human() THEN
            PERFORM _deny(format('write the meta key %L (%s bytes)', left(NEW.key, 80), octet_length(NEW.value)),
                          'an agent records its own lesson scan positions (scan_tips:agent:<its login>:<mind>, a '
                          'JSON array of commit ids, at most 1 MB)');
        END IF;
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _meta_agent_guard() FROM PUBLIC;

DELETE FROM meta WHERE key ~ '^scan_tips:agent:[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
