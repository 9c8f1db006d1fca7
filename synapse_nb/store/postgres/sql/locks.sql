-- Migration 7: no client can lock a table (issue 29, D4).
--
-- PostgreSQL lets a role that holds table-level UPDATE, DELETE or TRUNCATE on a table take any LOCK on it:
-- the agent role, with DELETE on memories, could `LOCK TABLE memories` (ACCESS EXCLUSIVE) in a transaction left
-- open and make every reader wait. INSERT allows ROW EXCLUSIVE and SELECT ACCESS SHARE, which block no reader
-- and no row write. So:
--
--   * the human and agent roles keep no table-level UPDATE, DELETE, TRUNCATE, REFERENCES or TRIGGER anywhere;
--   * their updates are column-level grants (every stored column for humans, the same columns as before for
--     agents), which allow UPDATE statements but no LOCK beyond ROW EXCLUSIVE;
--   * their deletes go through the functions below (SECURITY DEFINER, search_path pinned), which check the
--     caller themselves: the owner's rights skip the row guard (_guard), so each function applies the same rules
--     (which tables an agent may delete from, never a user's record) to the caller, i.e. the role the session
--     set (SET ROLE: an agent handle) or else the login (session_user). The store routes its four DELETE
--     statements to them (PgDialect.render). Each returns one row per deleted row, so a statement's row count
--     is the number deleted, as a DELETE's.
--
-- Lock waits are bounded by the client (lock_timeout, idle_in_transaction_session_timeout on every connection of
-- the package, and ALTER ROLE ... SET on the logins `team init --human/--agent` and `team grant` add).

-- The role a statement runs as for the human gate: SET ROLE's (an agent handle on a person's login), else the login.
CREATE FUNCTION _caller() RETURNS name
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
    RETURN coalesce(nullif(current_setting('role'), 'none'), session_user)::name;

CREATE FUNCTION _caller_is_human() RETURNS boolean
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
    RETURN pg_has_role(_caller(), '@S@_human', 'MEMBER') OR pg_has_role(_caller(), '@S@_owner', 'MEMBER');

-- Delete one record of a kind table by id (KindTable.delete). An agent deletes only memories and notes, never
-- a user's record. Returns the deleted id (no row: there was none).
CREATE FUNCTION delete_record(p_table text, p_id text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_source text; v_human boolean := _caller_is_human();
BEGIN
    IF p_table NOT IN ('memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes') THEN
        RAISE EXCEPTION 'synapse: % is not a record table', p_table USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT v_human THEN
        IF p_table NOT IN ('memories', 'notes') THEN
            PERFORM _deny(format('delete from %s', p_table), 'an agent deletes only its own memories and notes');
        END IF;
        EXECUTE format('SELECT source FROM %I WHERE id = $1', p_table) INTO v_source USING p_id;
        IF v_source = 'user' THEN
            PERFORM _deny(format('delete the user''s %s %s',
                                 CASE p_table WHEN 'memories' THEN 'memory' ELSE rtrim(p_table, 's') END, p_id),
                          'propose a new record instead');
        END IF;
    END IF;
    RETURN QUERY EXECUTE format('DELETE FROM %I WHERE id = $1 AND _mind_visible(mind) RETURNING id::text', p_table)
        USING p_id;
END $$;

-- Expired memories of a mind (Vault.prune; humans only).
CREATE FUNCTION delete_expired_memories(p_mind text, p_now text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('prune the vault', 'a human prunes');
    END IF;
    RETURN QUERY DELETE FROM memories WHERE mind = p_mind AND _mind_visible(mind) AND expires_at IS NOT NULL
        AND expires_at <= p_now RETURNING id::text;
END $$;

-- Per-session marks older than a time (Vault.prune; humans only).
CREATE FUNCTION delete_sessions_before(p_mind text, p_before text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('prune session marks', 'a human prunes');
    END IF;
    RETURN QUERY DELETE FROM session_seen WHERE mind = p_mind AND _mind_visible(mind) AND seen_at < p_before
        RETURNING session::text;
END $$;

-- A mind's file flags, before they are written anew (FlagsQueries.replace; humans only, as the flags' writes).
CREATE FUNCTION delete_flags(p_mind text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('replace the file flags', 'a human runs verify --fix');
    END IF;
    RETURN QUERY DELETE FROM flags WHERE mind = p_mind AND _mind_visible(mind) RETURNING mind::text;
END $$;

-- Until migration 8 restricts minds, every mind is visible to every role that passed the checks above.
CREATE FUNCTION _mind_visible(p_mind text) RETURNS boolean
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
    RETURN true;

-- Table-level privileges that allow LOCK: none for people and agents.
REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA @S@ FROM @S@_human, @S@_agent;

-- Humans: UPDATE on every stored column of the tables they wrote before (column-level: no LOCK).
DO $$
DECLARE t text; cols text;
BEGIN
    FOREACH t IN ARRAY ARRAY['meta', 'memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes',
                             'session_seen', 'flags', 'followers'] LOOP
        SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
          FROM pg_attribute
         WHERE attrelid = format('@S@.%I', t)::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
        EXECUTE format('GRANT UPDATE (%s) ON %I TO @S@_human', cols, t);
    END LOOP;
    SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
      FROM pg_attribute WHERE attrelid = '@S@.followers'::regclass AND attnum > 0 AND NOT attisdropped;
    EXECUTE format('GRANT UPDATE (%s) ON followers TO @S@_agent', cols);
END $$;

-- Agents: the column-level updates of migrations 2 and 3, again (revoking a table privilege revoked them too).
GRANT UPDATE (content, tags, priority, source, verified, confidence, expires_at, updated_at, terms, rank_body,
              rank_ctx) ON memories TO @S@_agent;
GRANT UPDATE (trigger, body, source, updated_at, terms, rank_body, rank_ctx) ON notes TO @S@_agent;
GRANT UPDATE (digest, seen_at) ON session_seen TO @S@_agent;
GRANT UPDATE (value) ON meta TO @S@_agent;

REVOKE EXECUTE ON FUNCTION _caller(), _caller_is_human(), delete_record(text, text),
    delete_expired_memories(text, text), delete_sessions_before(text, text), delete_flags(text),
    _mind_visible(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _caller(), _caller_is_human(), _mind_visible(text), delete_record(text, text)
    TO @S@_human, @S@_agent;
GRANT EXECUTE ON FUNCTION delete_expired_memories(text, text), delete_sessions_before(text, text), delete_flags(text)
    TO @S@_human, @S@_agent;
