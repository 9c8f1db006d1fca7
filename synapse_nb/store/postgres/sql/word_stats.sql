-- synapse_nb team vault, migration 24: the vault-wide word statistics leave no word an agent login can list
-- (review 64).
--
-- gate_df(term, n, agents) counts, per analysed word, the gate records of every mind that hold it: recall's ranking
-- and the duplicate check need those counts vault-wide (the same numbers on every machine). Two faults:
--
--   * a row that reached n = 0 was kept (migration 1: "deleting them would only add lock traffic"), so a person's
--     `memory purge` of "the vault passphrase is Zorblaxquintet" left the row 'zorblaxquintet' in gate_df for good,
--     while the purge said the FTS and ranking tables were scrubbed;
--   * every agent login read the whole table (migration 2 granted SELECT on every table), so it listed the words of
--     minds never granted to it (migration 8 isolated the records, not this table), and PostgreSQL's pg_stats showed
--     the commonest of them to any login that may read the table.
--
-- Now:
--   * the commit's fold deletes the rows it brings to 0, in the statement after its upsert: only rows this
--     transaction already holds locked, one index probe each, and none when no row reached 0; the rows at 0 a vault
--     holds are deleted here;
--   * an agent login no longer reads gate_df (nor gate_pending, whose rows are a running transaction's words); it
--     asks gate_df_of(terms): the counts of the words it names, never the list of words. The counts stay vault-wide
--     (an agent can learn that a word it already knows is in some record, and in how many: the admitted cost of
--     ranking alike on every machine); hashing the terms would not change that, and would let an offline
--     dictionary walk over the whole table. People keep their read (integrity_check's recount).

CREATE OR REPLACE FUNCTION _gate_fold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_terms text[]; v_ns bigint[]; v_as bigint[]; v_dn bigint; v_da bigint; v_dl bigint; v_bad text;
        v_zero text[];
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

DELETE FROM gate_df WHERE n = 0 AND agents = 0;

-- The counts of the words the caller names (absent: no record holds it), vault-wide, for any login.
CREATE FUNCTION gate_df_of(p_terms text[]) RETURNS TABLE(term text, n bigint, agents bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT g.term, g.n, g.agents FROM gate_df g WHERE g.term = ANY(p_terms) AND g.n > 0 ORDER BY g.term;
END;

REVOKE SELECT ON gate_df, gate_pending FROM @S@_agent;
REVOKE EXECUTE ON FUNCTION gate_df_of(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gate_df_of(text[]) TO @S@_human, @S@_agent;
