-- synapse_nb team vault, migration 26: a person's ranking context holds the people's records before it alone
-- (review 70).
--
-- A threaded episode's rank_ctx is the words of the two episodes before it in its thread, by (seq, id)
-- (rank_refresh_thread, migration 3; BM25 reads it at w_context). An agent may give its episode any thread and seq:
-- two of its episodes placed just before a person's answer pushed the person's question out of the answer's context
-- and put the agent's words there (the answer then found for the agent's words, no longer for the question's).
-- Now a person's episode takes the two people's episodes before it (an agent's unverified one, source 'agent', as
-- recall's RankRow.agent says, is left out); an agent's still takes anyone's. The same rule as a local vault's
-- (SQLite schema v11), the semantic document's and recall's structure links.

CREATE OR REPLACE FUNCTION rank_refresh_thread(p_mind text, p_thread text) RETURNS void
    LANGUAGE sql SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    UPDATE episodes e SET rank_ctx = x.ctx
      FROM (SELECT i.id,
                   CASE WHEN i.source = 'agent'
                        THEN coalesce(lag(i.rank_body, 2) OVER w, '{}') || coalesce(lag(i.rank_body, 1) OVER w, '{}')
                        ELSE coalesce(lag(i.rank_body, 2) OVER p, '{}') || coalesce(lag(i.rank_body, 1) OVER p, '{}')
                   END AS ctx
              FROM episodes i WHERE i.mind = p_mind AND i.thread = p_thread
            WINDOW w AS (ORDER BY i.seq, i.id),
                   p AS (PARTITION BY i.source IS NOT DISTINCT FROM 'agent' ORDER BY i.seq, i.id)) x
     WHERE e.id = x.id AND e.rank_ctx IS DISTINCT FROM x.ctx;
END;

-- the contexts the rule changes: the threads an agent's episode is in
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT mind, thread FROM episodes WHERE thread IS NOT NULL AND source = 'agent' ORDER BY 1, 2
    LOOP
        PERFORM rank_refresh_thread(r.mind, r.thread);
    END LOOP;
END $$;
