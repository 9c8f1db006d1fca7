-- Migration 13: the positions an agent keeps on the server are bounded and its own.
--
-- Migration 12 held the agent quotas against an agent login's own SQL, and left two writes out:
--
--   followers  each machine's feed position (what `team status` shows). The agent role held INSERT and UPDATE on
--              every column (migration 7 took DELETE from every role), and a row said nothing of who wrote it: the
--              agent login's own SQL inserted any number of rows (a million in one statement) and rewrote any
--              machine's, a person's included (a machine shown as synced that was not, or lagging for ever).
--   meta       an agent's lesson scan positions (scan_tips:agent:<mind>, up to 1 MB each): a new key counted, a
--              rewrite of it did not, so one key was rewritten any number of times an hour.
--
-- A machine's name is the client's (queries.FeedOutbox: '<hostname>:<cache folder>', '#copy' for its offline copy),
-- and the cache folder is per server and project, not per login: a person's CLI and an agent's MCP server in one
-- checkout, with two logins, report under one name. So a row is now keyed by its name and the login that wrote it
-- (login: the server's session_user, set by a trigger whatever the statement says), and
--
--   * an agent role (an agent login, or a person's login after SET ROLE, as an agent handle: its login is the
--     person's) updates only its login's rows; a person's row, another login's and a row from before this
--     migration (login '': whose it was is not known) are refused it;
--   * what an agent role writes is a position the server gave: the cursor is the snapshot's xmin, the snapshot
--     lists no more transactions than the server runs at once and is not ahead of the server's, the name is at
--     most 4096 bytes, synced_at is the server's now();
--   * each row an agent role inserts or updates counts as session state (fifty times agent_writes_per_hour): the
--     package reports a machine's position after each index sync that applied changes, as a recall records what
--     a session was given;
--   * each insert and update of an agent's scan position keys counts in the scan positions' own count
--     (agent_writes_per_hour); a statement of the owner's functions (next_stamp's clock row) is not the agent's.
--
-- People's rows and writes are as before (a person's statement is not counted); no role deletes a row.

ALTER TABLE followers ADD COLUMN IF NOT EXISTS login text COLLATE "C";
UPDATE followers SET login = '' WHERE login IS NULL;  -- written before this migration: no login known
ALTER TABLE followers ALTER COLUMN login SET DEFAULT session_user, ALTER COLUMN login SET NOT NULL;
ALTER TABLE followers DROP CONSTRAINT followers_pkey;
ALTER TABLE followers ADD PRIMARY KEY (name, login);
-- the agent's UPDATE grant (migration 7) named every column of the time; a row keeps its name (the package's upsert
-- sets the position only), and the new column is granted to no one
REVOKE UPDATE (name) ON followers FROM @S@_agent;

CREATE FUNCTION _follower_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_slots bigint;
    v_xips bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.login := session_user;  -- the login that wrote the row, whoever it is: never the statement's word
    END IF;
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.login IS DISTINCT FROM session_user THEN
        PERFORM _deny(format('rewrite the feed position of machine %L (%s)', left(OLD.name, 80),
                             CASE OLD.login WHEN '' THEN 'reported before migration 13'
                                            ELSE 'login ' || OLD.login END),
                      'an agent reports only its own login''s feed positions');
    END IF;
    NEW.login := session_user;
    NEW.synced_at := now();
    IF octet_length(NEW.name) > 4096 THEN
        PERFORM _deny(format('report a feed position under a name of %s bytes', octet_length(NEW.name)),
                      'a machine''s name is its host and cache folder, at most 4096 bytes');
    END IF;
    IF NEW.cursor_xid IS DISTINCT FROM pg_snapshot_xmin(NEW.snapshot) THEN
        PERFORM _deny(format('report a feed position whose cursor %s is not its snapshot''s xmin', NEW.cursor_xid),
                      'a feed position is a snapshot the server gave and its xmin');
    END IF;
    -- the server's transactions at once: its process slots (PostgreSQL's procarray) and prepared transactions
    v_slots := current_setting('max_connections')::bigint + current_setting('autovacuum_max_workers')::bigint
             + current_setting('max_worker_processes')::bigint + current_setting('max_wal_senders')::bigint
             + current_setting('max_prepared_transactions')::bigint + 1;
    SELECT count(*) INTO v_xips FROM pg_snapshot_xip(NEW.snapshot);
    IF v_xips > v_slots THEN
        PERFORM _deny(format('report a snapshot listing %s transactions (the server runs at most %s at once)',
                             v_xips, v_slots), 'a feed position is a snapshot the server gave');
    END IF;
    IF pg_snapshot_xmax(NEW.snapshot) > pg_snapshot_xmax(pg_current_snapshot()) THEN
        PERFORM _deny(format('report a snapshot from the future (xmax %s; the server''s is %s)',
                             pg_snapshot_xmax(NEW.snapshot), pg_snapshot_xmax(pg_current_snapshot())),
                      'a feed position is a snapshot the server gave');
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _follower_guard() FROM PUBLIC;
CREATE TRIGGER followers_guard BEFORE INSERT OR UPDATE ON followers FOR EACH ROW EXECUTE FUNCTION _follower_guard();

-- The count of migration 12, its words saying what each count holds now.
CREATE OR REPLACE FUNCTION _agent_wrote(p_bucket text, p_n bigint) RETURNS void
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
    IF p_bucket <> 'sessions' THEN  -- a recall's session marks and a feed position take no write lock
        PERFORM 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    END IF;
    -- every write of the login and bucket also updates one row of all time ('-infinity', never summed): two
    -- transactions of one login cannot both count without seeing each other (migration 12)
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
    v_limit := _setting_number('agent_writes_per_hour', 600) * CASE p_bucket WHEN 'sessions' THEN 50 ELSE 1 END;
    IF v_total > v_limit THEN
        RAISE EXCEPTION 'synapse: the agents'' quota of % writes per hour is reached (login %: % % in the last hour)',
                        v_limit, session_user, v_total,
                        CASE p_bucket WHEN 'records' THEN 'records written and proposals'
                                      WHEN 'history' THEN 'history entries' WHEN 'links' THEN 'conflict pairs'
                                      WHEN 'sessions' THEN 'session state rows and machines'' feed positions '
                                                           '(50 per write)'
                                      ELSE 'lesson scan positions written' END
            USING ERRCODE = 'configuration_limit_exceeded',
                  HINT = 'a human can raise the setting agent_writes_per_hour, or wait';
    END IF;
END $$;

-- The trigger function of migration 12: an update of meta counts with the scan positions (not with the records),
-- and feed positions with the session state.
CREATE OR REPLACE FUNCTION _agent_rate() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n bigint;
BEGIN
    IF _caller_is_human() THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'meta' AND is_human() THEN  -- a statement of the owner's functions: next_stamp's clock row
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN  -- each branch reads only the transition table its trigger declares
        SELECT count(*) INTO v_n FROM ot;
    ELSE
        SELECT count(*) INTO v_n FROM nt;
    END IF;
    PERFORM _agent_wrote(CASE WHEN TG_TABLE_NAME = 'meta' THEN 'meta'
                              WHEN TG_TABLE_NAME IN ('followers', 'session_seen') THEN 'sessions'
                              WHEN TG_OP <> 'INSERT' THEN 'records'
                              WHEN TG_TABLE_NAME IN ('history', 'links') THEN TG_TABLE_NAME
                              ELSE 'records' END, v_n);
    IF TG_OP = 'INSERT' AND TG_TABLE_NAME IN ('memories', 'lessons') THEN
        PERFORM _agent_holds(TG_TABLE_NAME, ARRAY(SELECT DISTINCT mind::text FROM nt ORDER BY 1));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER meta_agent_rate_au AFTER UPDATE ON meta REFERENCING NEW TABLE AS nt
    FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate();
CREATE TRIGGER followers_agent_rate_ai AFTER INSERT ON followers REFERENCING NEW TABLE AS nt
    FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate();
CREATE TRIGGER followers_agent_rate_au AFTER UPDATE ON followers REFERENCING NEW TABLE AS nt
    FOR EACH STATEMENT EXECUTE FUNCTION _agent_rate();
