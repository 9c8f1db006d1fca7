-- synapse_nb team vault, migration 30: the ranking statistics of agents' unverified records beside everyone's, so
-- that recall weighs a query's words by people's records alone (review 83).
--
-- Recall's BM25 reads N and the total document length (gate_stats.n_docs, total_dl) and, per stem, how many ranking
-- documents hold it (counted in rank_docs), over every record of every mind. An agent that wrote a person's words
-- into 300 records of its own mind made them weigh almost nothing, and the person's rule left the next agent's
-- recall. Recall now weighs by people's records (docs/recall.md, "Stuffing and floods"); the SQLite vault keeps the
-- same numbers (schema v13, store/sqlite/agent_rank_schema.py). Here:
--
--   * gate_stats.agent_dl: the total length of the agents' unverified ranking documents (_held_sql's condition, the
--     one RankRow.agent and gate_stats.agent_docs read), folded at commit with total_dl: _rank_delta queues the
--     agents' part of each statement's change in rank_pending (agent = true), whoever writes (a person's verify or
--     delete takes a record's length out, an agent's edit that clears verified puts it back);
--   * rank_docs.agent: whether a ranking document is an agent's unverified one, read from its own row, so a stem's
--     count and the agents' part of it are one scan (ranking.py RANK_STEMS).
-- People's numbers are the difference: n_docs - agent_docs, total_dl - agent_dl, n - n_agents.

ALTER TABLE gate_stats ADD COLUMN agent_dl bigint NOT NULL DEFAULT 0;
ALTER TABLE rank_pending ADD COLUMN agent boolean NOT NULL DEFAULT false;

-- Each statement's change of the total document length, and of the agents' unverified documents' part of it.
CREATE OR REPLACE FUNCTION _rank_delta() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_d bigint := 0; v_a bigint := 0; v_x bigint; v_y bigint; v_held text; v_sum text;
BEGIN
    SELECT h.held INTO v_held FROM _held_sql(TG_TABLE_NAME) h;
    v_sum := format('SELECT coalesce(sum(cardinality(x.rank_body) + cardinality(x.rank_ctx)), 0)::bigint, '
                    'coalesce(sum(cardinality(x.rank_body) + cardinality(x.rank_ctx)) FILTER (WHERE %s), 0)::bigint '
                    'FROM %%s x', v_held);
    -- each branch reads only the transition tables its trigger declares
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        EXECUTE format(v_sum, 'nt') INTO v_x, v_y;
        v_d := v_d + v_x;
        v_a := v_a + v_y;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        EXECUTE format(v_sum, 'ot') INTO v_x, v_y;
        v_d := v_d - v_x;
        v_a := v_a - v_y;
    END IF;
    IF v_d <> 0 THEN
        INSERT INTO rank_pending(d) VALUES (v_d);
    END IF;
    IF v_a <> 0 THEN
        INSERT INTO rank_pending(d, agent) VALUES (v_a, true);
    END IF;
    IF v_d <> 0 OR v_a <> 0 THEN
        INSERT INTO gate_flush DEFAULT VALUES ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

-- The commit-time fold of migration 24, now also folding the agents' part of the length (same lock order).
CREATE OR REPLACE FUNCTION _gate_fold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_terms text[]; v_ns bigint[]; v_as bigint[]; v_dn bigint; v_da bigint; v_dl bigint; v_adl bigint;
        v_bad text; v_zero text[];
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
    WITH gone AS (DELETE FROM rank_pending WHERE xid = NEW.xid RETURNING d, agent)
    SELECT coalesce(sum(d) FILTER (WHERE NOT agent), 0), coalesce(sum(d) FILTER (WHERE agent), 0)
      INTO v_dl, v_adl FROM gone;
    UPDATE gate_stats SET n_docs = n_docs + v_dn, agent_docs = agent_docs + v_da, total_dl = total_dl + v_dl,
                          agent_dl = agent_dl + v_adl, version = version + 1 WHERE id = 1;
    IF cardinality(v_terms) > 0 THEN
        WITH u AS (
            INSERT INTO gate_df AS g (term, n, agents)
                SELECT d.t, d.n, d.a FROM unnest(v_terms, v_ns, v_as) AS d(t, n, a) ORDER BY d.t COLLATE "C"
            ON CONFLICT (term) DO UPDATE SET n = g.n + excluded.n, agents = g.agents + excluded.agents
            RETURNING g.term, g.n, g.agents)
        SELECT min(u.term) FILTER (WHERE u.n < 0 OR u.agents < 0 OR u.agents > u.n),
               array_agg(u.term ORDER BY u.term) FILTER (WHERE u.n = 0 AND u.agents = 0)
          INTO v_bad, v_zero FROM u;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'synapse: gate_df for term % would go below 0 (the frequencies disagree with the '
                            'records; run the recount)', v_bad USING ERRCODE = 'data_corrupted';
        END IF;
        IF v_zero IS NOT NULL THEN  -- no record holds these words any more: no row keeps them
            DELETE FROM gate_df g WHERE g.term = ANY(v_zero) AND g.n = 0 AND g.agents = 0;
        END IF;
    END IF;
    DELETE FROM gate_flush WHERE xid = NEW.xid;
    RETURN NULL;
END $$;

-- The ranking documents, each with whether it is an agent's unverified one (_held_sql's condition, on its own row).
CREATE OR REPLACE VIEW rank_docs WITH (security_invoker = true) AS
    SELECT id, 'memory'::text COLLATE "C" AS kind, mind, NULL::text AS thread, NULL::integer AS seq,
           NULL::text AS actor, gate_text, rank_body, rank_ctx, source = 'agent' AND verified = 0 AS agent
      FROM memories
    UNION ALL SELECT id, 'decision', mind, NULL, NULL, NULL, gate_text, rank_body, rank_ctx, source = 'agent'
      FROM decisions
    UNION ALL SELECT id, 'checkpoint', mind, NULL, NULL, NULL, gate_text, rank_body, rank_ctx, source = 'agent'
      FROM checkpoints
    UNION ALL SELECT id, 'episode', mind, thread, seq, actor, gate_text, rank_body, rank_ctx, source = 'agent'
      FROM episodes
    UNION ALL SELECT id, 'note', mind, NULL, NULL, NULL, gate_text, rank_body, rank_ctx, source = 'agent' FROM notes;

-- The length of the agents' unverified records already stored (the migration runs under the project's migration
-- lock, in one transaction with the function above).
DO $$
DECLARE t text; v_held text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes'] LOOP
        SELECT h.held INTO v_held FROM _held_sql(t) h;
        EXECUTE format('UPDATE gate_stats SET agent_dl = agent_dl + (SELECT coalesce(sum(cardinality(x.rank_body) '
                       '+ cardinality(x.rank_ctx)), 0) FROM %I x WHERE %s) WHERE id = 1', t, v_held);
    END LOOP;
END $$;
