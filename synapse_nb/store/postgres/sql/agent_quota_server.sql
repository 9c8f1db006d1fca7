-- Migration 12: the agent quotas held by the server itself.
--
-- The quotas of migrations 10 and 11 were counted by the package (kinds/_base.py, check_agent_quota) before each
-- write, so an agent that used its database login with raw SQL (psql, a patched client) could insert records past
-- every one of them: thousands of checkpoints an hour, any number of memories in a mind, pending lessons without
-- end. The human gate was the server's; the quotas were not. Now each is also checked by triggers, after every
-- statement an agent role runs (_caller_is_human() false: an agent login, or a person's login after SET ROLE
-- to the agent role, as an agent handle does), with the same settings and the same counts:
--
--   agent_writes_per_hour    records an agent login inserted, changed or deleted in the past hour (the six record
--                            tables; an analysis is a change of a lesson) plus the revisions it proposed: the
--                            package's count of history entries and revisions, one each per write. Its history
--                            entries are a second bucket with the same bound (an agent writes them only for its
--                            own writes, so raw rows there cannot go past it either).
--   agent_memories_per_mind  agent memories a mind holds, checked after an agent's insert into memories.
--   50 pending agent lessons a mind holds (kinds.lessons.AGENT_PENDING_LESSONS), after an agent's insert.
--
-- The package checks first and says so in its own words; the server's check is the bound for what the package
-- does not run. Both count the same rows, so a write the package lets through never meets the server's refusal:
-- the package refuses the write that would make the count N + 1 before it is made, the server the statement that
-- made it N + 1. The count is kept per login, bucket and minute (agent_write_log: at most 60 rows a login and bucket;
-- each check drops the login's minutes older than an hour), so a check costs the same at any quota. Counting whole
-- minutes, the server's hour is between 59 and 60 minutes long: it never counts more than the package does.
-- A refusal is SQLSTATE 53400 (configuration_limit_exceeded: a limit a human configured), which the package reads
-- as QuotaExceededError; the statement, and so the transaction, is rolled back.

CREATE TABLE IF NOT EXISTS agent_write_log(
    login text COLLATE "C" NOT NULL,
    bucket text COLLATE "C" NOT NULL CHECK (bucket IN ('records', 'history')),
    minute timestamptz NOT NULL,
    n bigint NOT NULL CHECK (n > 0),
    PRIMARY KEY (login, bucket, minute)
);
REVOKE ALL ON agent_write_log FROM PUBLIC;
GRANT SELECT ON agent_write_log TO @S@_human;

-- A setting as a number (settings are JSON text in meta; a human writes them), or the package's default.
CREATE FUNCTION _setting_number(p_name text, p_default bigint) RETURNS bigint
    LANGUAGE sql STABLE SET search_path = @S@, pg_catalog, pg_temp
    RETURN coalesce((SELECT (value::jsonb #>> '{}')::numeric::bigint FROM meta WHERE key = 'setting:' || p_name),
                    p_default);

-- The limits the server holds agents to (settings.py's defaults when a human set none): a test checks them
-- against the package's.
CREATE FUNCTION agent_quota_limits() RETURNS TABLE(writes_per_hour bigint, memories_per_mind bigint,
                                                  pending_lessons_per_mind bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT _setting_number('agent_writes_per_hour', 600), _setting_number('agent_memories_per_mind', 5000), 50;
END;

-- Record p_n rows an agent statement wrote in a bucket, and refuse the statement when the login's rows of the last
-- 60 minutes (this one and the 59 before) pass the hourly quota. Takes the project's write lock first (every write
-- path takes it first: see next_stamp), so two sessions of one login count one after the other.
CREATE FUNCTION _agent_wrote(p_bucket text, p_n bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_minute timestamptz := date_trunc('minute', clock_timestamp());
    v_new_minute boolean;
    v_limit bigint;
    v_total bigint;
BEGIN
    IF p_n <= 0 THEN
        RETURN;
    END IF;
    PERFORM 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    INSERT INTO agent_write_log AS l (login, bucket, minute, n) VALUES (session_user, p_bucket, v_minute, p_n)
        ON CONFLICT (login, bucket, minute) DO UPDATE SET n = l.n + excluded.n
        RETURNING xmax = 0 INTO v_new_minute;
    IF v_new_minute THEN  -- the login's first write of this minute: its minutes older than an hour go
        DELETE FROM agent_write_log WHERE login = session_user AND bucket = p_bucket
                                      AND minute <= v_minute - interval '1 hour';
    END IF;
    SELECT sum(n) INTO v_total FROM agent_write_log WHERE login = session_user AND bucket = p_bucket
                                                       AND minute > v_minute - interval '1 hour';
    v_limit := _setting_number('agent_writes_per_hour', 600);
    IF v_total > v_limit THEN
        RAISE EXCEPTION 'synapse: the agents'' quota of % writes per hour is reached (login %: % % in the last hour)',
                        v_limit, session_user, v_total,
                        CASE p_bucket WHEN 'records' THEN 'records written and proposals' ELSE 'history entries' END
            USING ERRCODE = 'configuration_limit_exceeded',
                  HINT = 'a human can raise the setting agent_writes_per_hour, or wait';
    END IF;
END $$;

-- A mind's agent memories and pending agent lessons after an agent's insert, against their quotas.
CREATE FUNCTION _agent_holds(p_table text, p_minds text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_mind text;
    v_limit bigint;
    v_held bigint;
BEGIN
    FOREACH v_mind IN ARRAY p_minds LOOP
        CONTINUE WHEN NOT _mind_visible(v_mind);  -- called directly, it says nothing of a mind the caller cannot see
        IF p_table = 'memories' THEN
            SELECT memories_per_mind INTO v_limit FROM agent_quota_limits();
            SELECT count(*) INTO v_held FROM memories WHERE mind = v_mind AND source = 'agent';
        ELSE
            SELECT pending_lessons_per_mind INTO v_limit FROM agent_quota_limits();
            SELECT count(*) INTO v_held FROM lessons WHERE mind = v_mind AND status = 'pending' AND source = 'agent';
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

-- The triggers: SECURITY INVOKER, so _caller_is_human() reads the role the statement ran as (inside a deletion
-- function too: the role setting is the caller's there).
CREATE FUNCTION _agent_rate_ins() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n bigint;
BEGIN
    IF _caller_is_human() THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO v_n FROM nt;
    PERFORM _agent_wrote(CASE TG_TABLE_NAME WHEN 'history' THEN 'history' ELSE 'records' END, v_n);
    IF TG_TABLE_NAME IN ('memories', 'lessons') THEN
        PERFORM _agent_holds(TG_TABLE_NAME, ARRAY(SELECT DISTINCT mind::text FROM nt ORDER BY 1));
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION _agent_rate_upd() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n bigint;
BEGIN
    IF _caller_is_human() THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO v_n FROM nt;
    PERFORM _agent_wrote('records', v_n);
    RETURN NULL;
END $$;
CREATE FUNCTION _agent_rate_del() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n bigint;
BEGIN
    IF _caller_is_human() THEN
        RETURN NULL;
    END IF;
    SELECT count(*) INTO v_n FROM ot;
    PERFORM _agent_wrote('records', v_n);
    RETURN NULL;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes', 'lessons'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate_ins()', t);
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_au AFTER UPDATE ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate_upd()', t);
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_ad AFTER DELETE ON %1$I REFERENCING OLD TABLE AS ot '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate_del()', t);
    END LOOP;
    -- proposals count with the records; an agent writes no update or delete of either table
    FOREACH t IN ARRAY ARRAY['revisions', 'history'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate_ins()', t);
    END LOOP;
END $$;

REVOKE EXECUTE ON FUNCTION _setting_number(text, bigint), agent_quota_limits(), _agent_wrote(text, bigint),
    _agent_holds(text, text[]), _agent_rate_ins(), _agent_rate_upd(), _agent_rate_del() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_quota_limits(), _agent_wrote(text, bigint), _agent_holds(text, text[])
    TO @S@_human, @S@_agent;
