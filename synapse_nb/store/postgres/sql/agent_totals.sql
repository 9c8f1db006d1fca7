-- Migration 15: what agents hold is bounded, not only what they write an hour.
--
-- The quotas of migrations 12 and 13 bound rates (agent_writes_per_hour, per login) and a mind's agent memories:
-- at 600 writes an hour of the largest checkpoints and episodes (about 1.3 MB each, with their paths) an agent
-- login added most of a gigabyte an hour for ever, decisions, checkpoints, episodes and notes had no total, and the
-- memories' cap was per mind, a mind the agent names. Now the server also keeps what agents hold, and refuses an
-- agent role's statement that takes it past a human's bound:
--
--   agent_records_per_mind     records agents hold in one mind                            (default 20,000)
--   agent_records_per_vault    records agents hold in every mind of the project together  (default 100,000)
--   agent_megabytes_per_vault  megabytes (10^6 bytes) of their text in every mind         (default 500)
--
-- What agents hold: a record whose source is the agent that no human has taken on (an unverified memory, a pending
-- lesson, every checkpoint, decision, episode and note), the same rows and the same bytes (the UTF-8 bytes of the
-- fields its writer chose: _held_sql) as the SQLite vault's (store/sqlite/held_schema.py). The counts are kept in
-- agent_held (per mind) and agent_held_all (one row) by statement triggers on the six record tables, for every
-- writer (a person's delete or verify frees room), so a check reads two rows at any number of records. No role but
-- the owner writes them; the package reads them with agent_holdings(mind).
--
-- A statement of an agent role is refused (SQLSTATE 53400, which the package reads as QuotaExceededError, the
-- statement and so its transaction rolled back) when it grew a count and the count is now past its bound: a mind's
-- records, the project's records, the project's bytes. A deletion, or a change that does not grow what agents hold,
-- always passes. The package checks first and the same way (a write that would add a record when a count has
-- reached its bound), so a refusal comes in its words first. A person's statements are counted, never refused.

CREATE TABLE agent_held(
    mind text COLLATE "C" PRIMARY KEY,
    records bigint NOT NULL,
    bytes bigint NOT NULL
);
CREATE TABLE agent_held_all(
    id integer PRIMARY KEY CHECK (id = 1),
    records bigint NOT NULL,
    bytes bigint NOT NULL
);
REVOKE ALL ON agent_held, agent_held_all FROM PUBLIC;
GRANT SELECT ON agent_held, agent_held_all TO @S@_human;

-- Whether a row (x) is held by agents, and the bytes it counts, per table: SQL text for the trigger's statements
-- (a transition table's rows are typed record, not their table's type: no function of a row type can take them).
CREATE FUNCTION _held_sql(p_table text, OUT held text, OUT size text)
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT CASE p_table WHEN 'memories' THEN 'x.source = ''agent'' AND x.verified = 0'
                        WHEN 'lessons' THEN 'x.source = ''agent'' AND x.status = ''pending'''
                        ELSE 'x.source = ''agent''' END,
           (SELECT string_agg(format('coalesce(octet_length(x.%I), 0)', f), ' + ')
              FROM unnest(CASE p_table
                  WHEN 'memories' THEN ARRAY['category', 'key', 'content', 'tags']
                  WHEN 'checkpoints' THEN ARRAY['branch', 'commit_sha', 'doing', 'changed_files', 'next_step',
                                                'blockers', 'origin']
                  WHEN 'decisions' THEN ARRAY['decision', 'rationale', 'tags', 'branch', 'commit_sha']
                  WHEN 'lessons' THEN ARRAY['summary', 'branch', 'revert_sha', 'revert_commit', 'reverted_commits',
                                            'files_affected', 'diffstat', 'analysis', 'lesson_text']
                  WHEN 'episodes' THEN ARRAY['task_key', 'outcome', 'refs']
                  WHEN 'notes' THEN ARRAY['name', 'trigger', 'body'] END) f);
END;

-- The bounds the server holds agents to (settings.py's defaults when a human set none): a test checks them against
-- the package's.
CREATE FUNCTION agent_total_limits() RETURNS TABLE(records_per_mind bigint, records_per_vault bigint,
                                                  megabytes_per_vault bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT _setting_number('agent_records_per_mind', 20000), _setting_number('agent_records_per_vault', 100000),
           _setting_number('agent_megabytes_per_vault', 500);
END;

-- What agents hold in a mind (nothing said of a mind the caller cannot see) and in every mind: the package's check.
CREATE FUNCTION agent_holdings(p_mind text) RETURNS TABLE(mind_records bigint, mind_bytes bigint,
                                                         all_records bigint, all_bytes bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT coalesce((SELECT h.records FROM agent_held h WHERE h.mind = p_mind AND _mind_visible(p_mind)), 0),
           coalesce((SELECT h.bytes FROM agent_held h WHERE h.mind = p_mind AND _mind_visible(p_mind)), 0),
           a.records, a.bytes
      FROM agent_held_all a WHERE a.id = 1;
END;

-- The trigger: what a statement changed of what agents hold, per mind (the rows it inserted count, the rows it
-- deleted are taken off, an update does both), added to the counts; then, for an agent role's statement that grew
-- a count, the bounds. SECURITY DEFINER (the counts are the owner's to write); _caller_is_human() reads the role the
-- statement ran as (the role setting is the caller's here too, as in delete_record). The project's row first, then
-- the minds' in order: one lock order for every writer.
CREATE FUNCTION _agent_held_count() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_held_sql text;
    v_size_sql text;
    v_rows text;
    v_minds text[];
    v_n bigint[];
    v_b bigint[];
    v_dn bigint;
    v_db bigint;
    v_all_n bigint;
    v_all_b bigint;
    v_per_mind bigint;
    v_per_vault bigint;
    v_megabytes bigint;
    v_mind text;
    v_held bigint;
BEGIN
    SELECT h.held, h.size INTO v_held_sql, v_size_sql FROM _held_sql(TG_TABLE_NAME) h;
    -- each branch reads only the transition tables its trigger declares
    IF TG_OP = 'INSERT' THEN
        v_rows := format('SELECT x.mind::text AS mind, 1 AS n, %s AS b FROM nt x WHERE %s', v_size_sql, v_held_sql);
    ELSIF TG_OP = 'DELETE' THEN
        v_rows := format('SELECT x.mind::text AS mind, -1 AS n, -(%s) AS b FROM ot x WHERE %s', v_size_sql,
                         v_held_sql);
    ELSE
        v_rows := format('SELECT x.mind::text AS mind, 1 AS n, %1$s AS b FROM nt x WHERE %2$s UNION ALL '
                         'SELECT x.mind::text, -1, -(%1$s) FROM ot x WHERE %2$s', v_size_sql, v_held_sql);
    END IF;
    EXECUTE format('SELECT array_agg(d.mind ORDER BY d.mind), array_agg(d.n ORDER BY d.mind), '
                   'array_agg(d.b ORDER BY d.mind) FROM (SELECT u.mind, sum(u.n)::bigint AS n, sum(u.b)::bigint AS b '
                   'FROM (%s) u GROUP BY u.mind HAVING sum(u.n) <> 0 OR sum(u.b) <> 0) d', v_rows)
        INTO v_minds, v_n, v_b;
    IF v_minds IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT sum(n), sum(b) INTO v_dn, v_db FROM unnest(v_n, v_b) AS t(n, b);
    INSERT INTO agent_held_all AS h (id, records, bytes) VALUES (1, v_dn, v_db)
        ON CONFLICT (id) DO UPDATE SET records = h.records + excluded.records, bytes = h.bytes + excluded.bytes
        RETURNING h.records, h.bytes INTO v_all_n, v_all_b;
    INSERT INTO agent_held AS h (mind, records, bytes) SELECT * FROM unnest(v_minds, v_n, v_b)
        ON CONFLICT (mind) DO UPDATE SET records = h.records + excluded.records, bytes = h.bytes + excluded.bytes;
    IF _caller_is_human() THEN
        RETURN NULL;
    END IF;
    SELECT records_per_mind, records_per_vault, megabytes_per_vault INTO v_per_mind, v_per_vault, v_megabytes
      FROM agent_total_limits();
    FOR i IN 1 .. array_length(v_minds, 1) LOOP
        CONTINUE WHEN v_n[i] <= 0;
        v_mind := v_minds[i];
        SELECT h.records INTO v_held FROM agent_held h WHERE h.mind = v_mind;
        IF v_held > v_per_mind THEN
            RAISE EXCEPTION 'synapse: the agents'' quota of % records held in mind % is reached (% after this '
                            'statement)', v_per_mind, v_mind, v_held
                USING ERRCODE = 'configuration_limit_exceeded',
                      HINT = 'delete stale agent records, or a human can raise the setting agent_records_per_mind '
                             '(synapse-nb settings set agent_records_per_mind N)';
        END IF;
    END LOOP;
    IF v_dn > 0 AND v_all_n > v_per_vault THEN
        RAISE EXCEPTION 'synapse: the agents'' quota of % records held in the whole vault is reached (% after this '
                        'statement, every mind)', v_per_vault, v_all_n
            USING ERRCODE = 'configuration_limit_exceeded',
                  HINT = 'delete stale agent records, or a human can raise the setting agent_records_per_vault '
                         '(synapse-nb settings set agent_records_per_vault N)';
    END IF;
    IF v_db > 0 AND v_all_b > v_megabytes * 1000000 THEN
        RAISE EXCEPTION 'synapse: the agents'' quota of % MB of text held in the whole vault is reached (% bytes '
                        'after this statement, every mind)', v_megabytes, v_all_b
            USING ERRCODE = 'configuration_limit_exceeded',
                  HINT = 'delete stale agent records, or a human can raise the setting agent_megabytes_per_vault '
                         '(synapse-nb settings set agent_megabytes_per_vault N)';
    END IF;
    RETURN NULL;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_held_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_held_count()', t);
        EXECUTE format('CREATE TRIGGER %1$s_held_au AFTER UPDATE ON %1$I REFERENCING OLD TABLE AS ot NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_held_count()', t);
        EXECUTE format('CREATE TRIGGER %1$s_held_ad AFTER DELETE ON %1$I REFERENCING OLD TABLE AS ot '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_held_count()', t);
    END LOOP;
END $$;

-- The counts of the records already stored (the migration runs under the project's migration lock, in one
-- transaction with the triggers above).
DO $$
DECLARE t text; h record;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes'] LOOP
        SELECT * INTO h FROM _held_sql(t);
        EXECUTE format('INSERT INTO agent_held AS a (mind, records, bytes) SELECT x.mind, count(*), sum(%s) '
                       'FROM %I x WHERE %s GROUP BY x.mind ON CONFLICT (mind) DO UPDATE SET '
                       'records = a.records + excluded.records, bytes = a.bytes + excluded.bytes',
                       h.size, t, h.held);
    END LOOP;
END $$;
INSERT INTO agent_held_all(id, records, bytes)
    SELECT 1, coalesce(sum(records), 0), coalesce(sum(bytes), 0) FROM agent_held;

REVOKE EXECUTE ON FUNCTION _held_sql(text), agent_total_limits(), agent_holdings(text), _agent_held_count()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_total_limits(), agent_holdings(text) TO @S@_human, @S@_agent;
