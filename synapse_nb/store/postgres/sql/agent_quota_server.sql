-- Migration 12: the agent quotas held by the server itself.
--
-- The quotas of migrations 10 and 11 were counted by the package (kinds/_base.py, check_agent_quota) before each
-- write, so an agent that used its database login with raw SQL (psql, a patched client) could insert records past
-- every one of them: thousands of checkpoints an hour, any number of memories in a mind, pending lessons without
-- end. The human gate was the server's; the quotas were not. Now each is also checked by triggers, after every
-- statement an agent role runs (_caller_is_human() false: an agent login, or a person's login after SET ROLE
-- to the agent role, as an agent handle does), with the same settings and the same counts:
--
--   agent_writes_per_hour    records an agent login inserted (the six record tables), changed (memories, notes; an
--                            analysis is a change of a lesson) or deleted in the past hour plus the revisions it
--                            proposed: the package's count of history entries and revisions, one each per write.
--                            Its history entries are a second bucket with the same bound (an agent writes them only
--                            for its own writes, so raw rows there cannot go past it either). The conflict pairs it
--                            inserted are a third (the package writes them after its commit and leaves the pairs a
--                            refusal kept out to the next human's `memory conflicts`).
--   agent_memories_per_mind  agent memories a mind holds, checked after an agent's insert into memories.
--   50 pending agent lessons a mind holds (kinds.lessons.AGENT_PENDING_LESSONS), after an agent's insert.
--
-- The package checks first and says so in its own words; the server's check is the bound for what the package
-- does not run. Both count the same rows, so a write the package lets through never meets the server's refusal:
-- the package refuses the write that would make the count N + 1 before it is made, the server the statement that
-- made it N + 1. The count is kept per login, bucket and minute (agent_write_log: at most 61 rows a login and bucket,
-- with the row of all time each count also updates; each check drops the login's minutes older than an hour), so a
-- check costs the same at any quota. Counting whole minutes, the server's hour is between 59 and 60 minutes long: it
-- never counts more than the package does. A refusal is SQLSTATE 53400 (configuration_limit_exceeded: a limit a
-- human configured), which the package reads as QuotaExceededError; the statement, and so the transaction, is
-- rolled back.
--
-- Also held here against an agent role's own SQL (each section below says what it closed): a conflict pair may hide
-- only the agent's own record (_agent_link_guard), an agent writes only its own sessions' delta state
-- (_session_guard) and its own lesson scan positions (_meta_agent_guard), and a memory a human verified is changed
-- or deleted only by a human (_verified_guard).

CREATE TABLE IF NOT EXISTS agent_write_log(
    login text COLLATE "C" NOT NULL,
    bucket text COLLATE "C" NOT NULL CHECK (bucket IN ('records', 'history', 'links', 'sessions', 'meta')),
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
-- 60 minutes (this one and the 59 before) pass the hourly quota (fifty times it for session state rows). Takes the
-- project's write lock first, as every write path does (see next_stamp), except for a recall's session marks, which
-- lock their rows before this runs; the login's row of all time serializes its counts in any case.
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
    IF p_bucket <> 'sessions' THEN  -- a recall's session marks take no write lock (and lock their rows first)
        PERFORM 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    END IF;
    -- every write of the login and bucket also updates one row of all time ('-infinity', never summed): two
    -- transactions of one login cannot both count without seeing each other. Under READ COMMITTED the second waits
    -- for the first and reads its rows; under REPEATABLE READ or SERIALIZABLE (a snapshot taken before the other
    -- committed would not see its rows) the second fails to serialize instead of writing past the quota.
    INSERT INTO agent_write_log AS l (login, bucket, minute, n) VALUES (session_user, p_bucket, '-infinity', p_n)
        ON CONFLICT (login, bucket, minute) DO UPDATE SET n = l.n + excluded.n;
    INSERT INTO agent_write_log AS l (login, bucket, minute, n) VALUES (session_user, p_bucket, v_minute, p_n)
        ON CONFLICT (login, bucket, minute) DO UPDATE SET n = l.n + excluded.n
        RETURNING xmax = 0 INTO v_new_minute;
    IF v_new_minute THEN  -- the login's first write of this minute: its minutes older than an hour go
        DELETE FROM agent_write_log WHERE login = session_user AND bucket = p_bucket
                                      AND minute <= v_minute - interval '1 hour' AND minute > '-infinity';
    END IF;
    SELECT sum(n) INTO v_total FROM agent_write_log WHERE login = session_user AND bucket = p_bucket
                                                       AND minute > v_minute - interval '1 hour';
    -- session state rows: what records given to sessions need (a recall gives a few; agents recall far more often
    -- than they write), fifty times the writes
    v_limit := _setting_number('agent_writes_per_hour', 600) * CASE p_bucket WHEN 'sessions' THEN 50 ELSE 1 END;
    IF v_total > v_limit THEN
        RAISE EXCEPTION 'synapse: the agents'' quota of % writes per hour is reached (login %: % % in the last hour)',
                        v_limit, session_user, v_total,
                        CASE p_bucket WHEN 'records' THEN 'records written and proposals'
                                      WHEN 'history' THEN 'history entries' WHEN 'links' THEN 'conflict pairs'
                                      WHEN 'sessions' THEN 'session state rows (50 per write)'
                                      ELSE 'lesson scan positions' END
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
CREATE FUNCTION _agent_rate() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n bigint;
BEGIN
    IF _caller_is_human() THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN  -- each branch reads only the transition table its trigger declares
        SELECT count(*) INTO v_n FROM ot;
    ELSE
        SELECT count(*) INTO v_n FROM nt;
    END IF;
    PERFORM _agent_wrote(CASE WHEN TG_OP <> 'INSERT' THEN 'records'
                              WHEN TG_TABLE_NAME IN ('history', 'links', 'meta') THEN TG_TABLE_NAME
                              WHEN TG_TABLE_NAME = 'session_seen' THEN 'sessions' ELSE 'records' END, v_n);
    IF TG_OP = 'INSERT' AND TG_TABLE_NAME IN ('memories', 'lessons') THEN
        PERFORM _agent_holds(TG_TABLE_NAME, ARRAY(SELECT DISTINCT mind::text FROM nt ORDER BY 1));
    END IF;
    RETURN NULL;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes', 'lessons'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate()', t);
    END LOOP;
    -- changes: what an agent may change (its memories and notes; a lesson's analysis, by submit_analysis). Not the
    -- tables the owner's functions change for it as upkeep (rank_refresh_thread rewrites a thread's episodes'
    -- contexts after an agent's episode: counted, one write made several)
    FOREACH t IN ARRAY ARRAY['memories', 'notes', 'lessons'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_au AFTER UPDATE ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate()', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['memories', 'notes'] LOOP  -- the only records an agent deletes (delete_record)
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_ad AFTER DELETE ON %1$I REFERENCING OLD TABLE AS ot '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate()', t);
    END LOOP;
    -- proposals count with the records; an agent writes no update or delete of these tables
    -- and what an agent adds beside its records: session state rows, lesson scan positions (new keys)
    FOREACH t IN ARRAY ARRAY['revisions', 'history', 'links', 'session_seen', 'meta'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_rate_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate()', t);
    END LOOP;
END $$;

REVOKE EXECUTE ON FUNCTION _setting_number(text, bigint), agent_quota_limits(), _agent_wrote(text, bigint),
    _agent_holds(text, text[]), _agent_rate() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_quota_limits(), _agent_wrote(text, bigint), _agent_holds(text, text[])
    TO @S@_human, @S@_agent;

-- Whether an id is one of a kind (the package's ids: the kind's prefix, "_", the rest; models.kind_of_id).
CREATE FUNCTION _id_of_kind(p_id text, p_kind text) RETURNS boolean
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
    RETURN starts_with(p_id, CASE p_kind WHEN 'memory' THEN 'mem_' WHEN 'checkpoint' THEN 'ckp_'
                                         WHEN 'decision' THEN 'dec_' WHEN 'lesson' THEN 'les_'
                                         WHEN 'episode' THEN 'epi_' WHEN 'note' THEN 'note_' END) IS TRUE;
REVOKE EXECUTE ON FUNCTION _id_of_kind(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _id_of_kind(text, text) TO @S@_human, @S@_agent;

-- An agent's record carries its kind's prefix: a record of one kind with another kind's id (a note named like a
-- human's memory) made a pair that hid the memory, or deleting the note dropped the memory's open pairs.
CREATE FUNCTION _agent_id_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF NOT _id_of_kind(NEW.id, TG_ARGV[0]) AND NOT _caller_is_human() THEN
        PERFORM _deny(format('store %s %s under another kind''s id', TG_ARGV[0], NEW.id),
                      'an agent''s records have their kind''s ids (mem_, ckp_, dec_, les_, epi_, note_)');
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _agent_id_guard() FROM PUBLIC;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM (VALUES ('memories', 'memory'), ('checkpoints', 'checkpoint'), ('decisions', 'decision'),
                                   ('lessons', 'lesson'), ('episodes', 'episode'), ('notes', 'note')) v(tbl, kind)
    LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_id BEFORE INSERT ON %1$I FOR EACH ROW '
                       'EXECUTE FUNCTION _agent_id_guard(%2$L)', r.tbl, r.kind);
    END LOOP;
END $$;

-- Whether a record of this kind exists and is an agent's own: its source is the agent, and a memory is unverified
-- (a record that does not exist, a kind that is not one, a user's record or a verified memory: false).
CREATE FUNCTION _record_is_agents(p_kind text, p_id text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_agents boolean;
BEGIN
    IF p_kind = 'memory' THEN
        SELECT source = 'agent' AND verified = 0 INTO v_agents FROM memories WHERE id = p_id;
    ELSE
        v_agents := _record_source(p_kind, p_id) = 'agent';
    END IF;
    RETURN coalesce(v_agents, false);
END $$;
REVOKE EXECUTE ON FUNCTION _record_is_agents(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _record_is_agents(text, text) TO @S@_human, @S@_agent;

-- A duplicate link hides one side from recall while it is open, and the guard of migration 11 checked only that an
-- agent's link was open: with its own SQL an agent inserted a link hiding a human's verified memory, which recall
-- then left out until a human decided the pair. The package hides a human's record only in favour of another human's
-- (dupes.hidden_side) and checks human writes only for a human now, so an agent's link names two records of real
-- kinds and may hide only one of them that is its own: an agent's record, and if a memory an unverified one. A
-- trigger of its own beside migration 11's _proposal_guard (open pairs only), which stays as it is.
CREATE FUNCTION _agent_link_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    -- recall hides the id whatever its kind, so the kinds are checked too (a made-up kind read as no human's), and
    -- both records must be there, each of the kind its id says (ids are unique per table only)
    IF NEW.a = NEW.b OR NOT _id_of_kind(NEW.a, NEW.a_kind) OR NOT _id_of_kind(NEW.b, NEW.b_kind)
       OR _record_source(NEW.a_kind, NEW.a) IS NULL OR _record_source(NEW.b_kind, NEW.b) IS NULL THEN
        PERFORM _deny('record a pair that is not two records', 'a pair names two stored records and their kinds');
    END IF;
    IF NEW.hidden IS NOT NULL AND (NEW.hidden NOT IN (NEW.a, NEW.b) OR NOT _record_is_agents(
            CASE NEW.hidden WHEN NEW.a THEN NEW.a_kind ELSE NEW.b_kind END, NEW.hidden)) THEN
        PERFORM _deny(format('hide %s from recall', NEW.hidden),
                      'a duplicate pair an agent records hides only its own unverified copy; a human''s stands');
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _agent_link_guard() FROM PUBLIC;
CREATE TRIGGER links_agent_guard BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION _agent_link_guard();

-- Per-session delta state: what a session was given is not given again. An agent that wrote rows for a person's
-- session (its id is in session_seen, which every role reads) made the person's next recall leave those records out
-- as not new. The package stores an agent's sessions as 'agent:<id>' (recall/delta.py, stored_session), and a team
-- vault keeps them per login (session_key: 'agent:<login>:<id>', the login quoted as an identifier, so no login's
-- prefix is another's): one agent login cannot mark another's sessions either. The server refuses an agent any other
-- session's row, one dated more than an hour ahead (it would hold the hour's room of new sessions), and ids or
-- digests longer than the package's (_agent_rate counts the rows an agent inserts; an update of one is not counted).
CREATE FUNCTION session_key(p_session text) RETURNS text
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
    RETURN CASE WHEN starts_with(p_session, 'agent:')
                THEN 'agent:' || quote_ident(session_user) || ':' || substr(p_session, 7) ELSE p_session END;
REVOKE EXECUTE ON FUNCTION session_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION session_key(text) TO @S@_human, @S@_agent;

CREATE FUNCTION _session_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    -- this login's own agent session, dated no later than an hour from now, of the package's sizes: anyone's
    -- statement may write it (the cheap case first)
    IF starts_with(NEW.session, 'agent:' || quote_ident(session_user) || ':') AND octet_length(NEW.session) <= 512
       AND octet_length(NEW.rid) <= 64 AND octet_length(NEW.digest) <= 64
       AND NEW.seen_at::timestamptz <= clock_timestamp() + interval '1 hour' THEN
        RETURN NEW;
    END IF;
    IF NOT is_human() THEN
        PERFORM _deny(format('record what session %L was given (%s)', left(NEW.session, 80), NEW.seen_at),
                      'an agent records only its own sessions (agent:<login>:<id>), dated now, with ids of at most '
                      '64 bytes');
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _session_guard() FROM PUBLIC;
CREATE TRIGGER session_seen_agent BEFORE INSERT OR UPDATE ON session_seen
    FOR EACH ROW EXECUTE FUNCTION _session_guard();

-- Lesson scan positions: a scan walks git history from where the last one stopped (meta 'scan_tips:<mind>'), and the
-- agent role could write that key: set past a revert, it made every later scan skip the revert, so no lesson was
-- ever proposed for it. The package keeps an agent's positions under 'scan_tips:agent:<mind>' (a human's scan never
-- starts from them); the server lets an agent write no other meta key.
CREATE FUNCTION _meta_agent_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    -- is_human(), as _guard: a statement of the owner's functions passes (next_stamp writes the clock row)
    IF NOT starts_with(NEW.key, 'scan_tips:agent:') OR octet_length(NEW.value) > 1048576
       OR NOT substr(NEW.key, 17) ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' THEN
        IF NOT is_human() THEN
            PERFORM _deny(format('write the meta key %L (%s bytes)', left(NEW.key, 80), octet_length(NEW.value)),
                          'an agent records its own lesson scan positions (scan_tips:agent:<mind>, at most 1 MB)');
        END IF;
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _meta_agent_guard() FROM PUBLIC;
CREATE TRIGGER meta_agent_guard BEFORE INSERT OR UPDATE ON meta FOR EACH ROW EXECUTE FUNCTION _meta_agent_guard();

-- A memory a human verified is the human's to change: an agent's change to it is a revision a human accepts
-- (kinds/memories.py), and an agent may not delete it. The guard of migration 2 checked only the memory's source, so
-- the agent login's own UPDATE rewrote a verified agent memory (and unverified it), and delete_record deleted one.
-- _caller_is_human(): the role the statement ran as, inside delete_record too.
CREATE FUNCTION _verified_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF OLD.verified = 1 AND (TG_OP = 'DELETE'
            OR ROW(NEW.content, NEW.tags, NEW.priority, NEW.confidence, NEW.expires_at, NEW.verified, NEW.source)
               IS DISTINCT FROM ROW(OLD.content, OLD.tags, OLD.priority, OLD.confidence, OLD.expires_at, OLD.verified,
                                    OLD.source))
       AND NOT _caller_is_human() THEN
        PERFORM _deny(format('%s memory %s, which a human verified', lower(TG_OP), OLD.id),
                      'propose the change (an agent''s remember or update of it is a revision a human accepts)');
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
REVOKE EXECUTE ON FUNCTION _verified_guard() FROM PUBLIC;
CREATE TRIGGER memories_verified_guard BEFORE UPDATE OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION _verified_guard();

-- A person's latest decisions for the restore pack (Vault.restore_pack reads each author's apart), found past any
-- number of agents' newer ones (the SQLite vault's index of the same name).
CREATE INDEX IF NOT EXISTS decisions_user ON decisions(mind, created_at DESC) WHERE source = 'user';
