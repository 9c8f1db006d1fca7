-- synapse_nb team vault, migration 18: the word statistics of agents' unverified records, beside everyone's
-- (review 22).
--
-- The duplicate check (synapse_nb/dupes.py) weighs words by their document frequency. Between two people's records
-- the newer one of a duplicate pair leaves recall while the pair is open, and the frequencies counted every record:
-- thirty agent memories holding the words a person's new memory adds to an older one made those words weigh almost
-- nothing, and the person's new memory was hidden behind the old. A pair of two people's records is now weighed by
-- people's records alone: gate_df.agents and gate_stats.agent_docs count the agents' unverified gate records (an
-- agent wrote it and, a memory, no person verified it: _held_sql's condition, the one RankRow.agent reads), so that
-- people's are n - agents and n_docs - agent_docs. The SQLite vault keeps the same (schema v8,
-- store/sqlite/agent_vocab_schema.py).
--
-- Kept as gate_df is: each statement on a gate table queues its deltas in gate_pending (agent = true), and the
-- commit's fold (_gate_fold, the same lock order) adds them, whoever writes (a person's verify or delete takes a
-- record out, an agent's edit that clears verified puts it back).

ALTER TABLE gate_df ADD COLUMN agents bigint NOT NULL DEFAULT 0;
ALTER TABLE gate_stats ADD COLUMN agent_docs bigint NOT NULL DEFAULT 0;
ALTER TABLE gate_pending ADD COLUMN agent boolean NOT NULL DEFAULT false;

-- What a statement changed of the agents' unverified gate records: their terms' deltas and their number's.
CREATE FUNCTION _agent_df() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_held text;
    v_rows text;
    v_dn bigint;
BEGIN
    SELECT h.held INTO v_held FROM _held_sql(TG_TABLE_NAME) h;
    -- each branch reads only the transition tables its trigger declares
    IF TG_OP = 'INSERT' THEN
        v_rows := format('SELECT x.terms, 1 AS s FROM nt x WHERE %s', v_held);
    ELSIF TG_OP = 'DELETE' THEN
        v_rows := format('SELECT x.terms, -1 AS s FROM ot x WHERE %s', v_held);
    ELSE
        v_rows := format('SELECT x.terms, 1 AS s FROM nt x WHERE %1$s UNION ALL '
                         'SELECT x.terms, -1 FROM ot x WHERE %1$s', v_held);
    END IF;
    EXECUTE format('SELECT coalesce(sum(u.s), 0)::bigint FROM (%s) u', v_rows) INTO v_dn;
    EXECUTE format('INSERT INTO gate_pending(term, d, agent) SELECT t, sum(u.s)::bigint, true '
                   'FROM (%s) u, unnest(u.terms) AS t GROUP BY t HAVING sum(u.s) <> 0', v_rows);
    IF v_dn <> 0 THEN
        INSERT INTO gate_pending(term, d, agent) VALUES (NULL, v_dn, true);
    END IF;
    INSERT INTO gate_flush DEFAULT VALUES ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

-- The commit-time fold of migration 3, now also folding the agents' counts (same lock order: gate_stats, then the
-- gate_df rows in term order, each updated once).
CREATE OR REPLACE FUNCTION _gate_fold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_terms text[]; v_ns bigint[]; v_as bigint[]; v_dn bigint; v_da bigint; v_dl bigint; v_bad text;
BEGIN
    WITH gone AS (DELETE FROM gate_pending WHERE xid = NEW.xid RETURNING term, d, agent),
         agg AS (SELECT term, coalesce(sum(d) FILTER (WHERE NOT agent), 0)::bigint AS s,
                        coalesce(sum(d) FILTER (WHERE agent), 0)::bigint AS a
                   FROM gone WHERE term IS NOT NULL GROUP BY term),
         moved AS (SELECT * FROM agg WHERE s <> 0 OR a <> 0)
    SELECT (SELECT coalesce(sum(d), 0) FROM gone WHERE term IS NULL AND NOT agent),
           (SELECT coalesce(sum(d), 0) FROM gone WHERE term IS NULL AND agent),
           (SELECT coalesce(array_agg(term ORDER BY term), '{}') FROM moved),
           (SELECT coalesce(array_agg(s ORDER BY term), '{}') FROM moved),
           (SELECT coalesce(array_agg(a ORDER BY term), '{}') FROM moved)
      INTO v_dn, v_da, v_terms, v_ns, v_as;
    WITH gone AS (DELETE FROM rank_pending WHERE xid = NEW.xid RETURNING d)
    SELECT coalesce(sum(d), 0) INTO v_dl FROM gone;
    UPDATE gate_stats SET n_docs = n_docs + v_dn, agent_docs = agent_docs + v_da, total_dl = total_dl + v_dl,
                          version = version + 1 WHERE id = 1;
    IF cardinality(v_terms) > 0 THEN
        WITH u AS (
            INSERT INTO gate_df AS g (term, n, agents)
                SELECT d.t, d.n, d.a FROM unnest(v_terms, v_ns, v_as) AS d(t, n, a) ORDER BY d.t COLLATE "C"
            ON CONFLICT (term) DO UPDATE SET n = g.n + excluded.n, agents = g.agents + excluded.agents
            RETURNING g.term, g.n, g.agents)
        SELECT min(u.term) INTO v_bad FROM u WHERE u.n < 0 OR u.agents < 0 OR u.agents > u.n;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'synapse: gate_df for term % would go below 0 (the frequencies disagree with the '
                            'records; run the recount)', v_bad USING ERRCODE = 'data_corrupted';
        END IF;
    END IF;
    DELETE FROM gate_flush WHERE xid = NEW.xid;
    RETURN NULL;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_df_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_df()', t);
        EXECUTE format('CREATE TRIGGER %1$s_agent_df_au AFTER UPDATE ON %1$I REFERENCING OLD TABLE AS ot '
                       'NEW TABLE AS nt FOR EACH STATEMENT EXECUTE FUNCTION _agent_df()', t);
        EXECUTE format('CREATE TRIGGER %1$s_agent_df_ad AFTER DELETE ON %1$I REFERENCING OLD TABLE AS ot '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _agent_df()', t);
    END LOOP;
END $$;

-- The counts of the records already stored (the migration runs under the project's migration lock, in one
-- transaction with the triggers above).
DO $$
DECLARE t text; v_held text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes'] LOOP
        SELECT h.held INTO v_held FROM _held_sql(t) h;
        EXECUTE format('UPDATE gate_df g SET agents = g.agents + c.n FROM (SELECT term, count(*)::bigint AS n '
                       'FROM %I x, unnest(x.terms) AS term WHERE %s GROUP BY term) c WHERE g.term = c.term',
                       t, v_held);
        EXECUTE format('UPDATE gate_stats SET agent_docs = agent_docs + (SELECT count(*) FROM %I x WHERE %s) '
                       'WHERE id = 1', t, v_held);
    END LOOP;
END $$;

REVOKE EXECUTE ON FUNCTION _agent_df() FROM PUBLIC;
