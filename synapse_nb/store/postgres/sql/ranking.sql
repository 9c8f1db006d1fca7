-- synapse_nb team vault, migration 3: the ranking documents of recall engine v2 (BM25 over body + context).
--
-- The SQLite backend (schema v3) keeps them in FTS5 (porter; body, context). Here:
--   * episodes carry thread / seq / actor (NULL for records outside a thread);
--   * every gate record stores rank_body: its gate text's tokens (synapse_nb's analyser, repeats kept), stemmed by
--     PostgreSQL's Snowball English stemmer with no stop list (rank_stem) -- FTS5 uses the original Porter
--     stemmer, so the two backends rank a little differently, each deterministically;
--   * rank_ctx: the rank_body of the previous two records of the same (mind, thread) by (seq, id), kept by
--     rank_refresh_thread() whenever a threaded episode is written;
--   * gate_stats.total_dl: the sum over all ranking documents of cardinality(rank_body) + cardinality(rank_ctx),
--     folded at commit with the word statistics (rank_pending), so BM25's N and avgdl are two numbers away.

CREATE TEXT SEARCH DICTIONARY rank_stem (TEMPLATE = snowball, Language = english);

-- Stem a token list (repeats and order kept); a token the stemmer drops is kept as it is.
CREATE FUNCTION stem_all(tokens text[]) RETURNS text[]
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT coalesce(array_agg(coalesce((ts_lexize('@S@.rank_stem'::regdictionary, t))[1], t) ORDER BY o),
                            '{}')
              FROM unnest(tokens) WITH ORDINALITY AS u(t, o));

ALTER TABLE episodes ADD COLUMN thread text COLLATE "C", ADD COLUMN seq integer, ADD COLUMN actor text COLLATE "C";
CREATE INDEX episodes_thread ON episodes(mind, thread, seq, id) WHERE thread IS NOT NULL;

ALTER TABLE gate_stats ADD COLUMN total_dl bigint NOT NULL DEFAULT 0;
CREATE UNLOGGED TABLE rank_pending(
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    d bigint NOT NULL
);
CREATE INDEX rank_pending_xid ON rank_pending(xid);

-- Each statement's change of the total document length, folded at commit with the word statistics.
CREATE FUNCTION _rank_delta() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_d bigint := 0; v_x bigint;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT coalesce(sum(cardinality(nt.rank_body) + cardinality(nt.rank_ctx)), 0) INTO v_x FROM nt;
        v_d := v_d + v_x;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT coalesce(sum(cardinality(ot.rank_body) + cardinality(ot.rank_ctx)), 0) INTO v_x FROM ot;
        v_d := v_d - v_x;
    END IF;
    IF v_d <> 0 THEN
        INSERT INTO rank_pending(d) VALUES (v_d);
        INSERT INTO gate_flush DEFAULT VALUES ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

-- The commit-time fold of migration 1, now also folding the document length (same lock order).
CREATE OR REPLACE FUNCTION _gate_fold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_terms text[]; v_ns bigint[]; v_dn bigint; v_dl bigint; v_bad text;
BEGIN
    WITH gone AS (DELETE FROM gate_pending WHERE xid = NEW.xid RETURNING term, d),
         agg AS (SELECT term, sum(d)::bigint AS s FROM gone WHERE term IS NOT NULL GROUP BY term HAVING sum(d) <> 0)
    SELECT (SELECT coalesce(sum(d), 0) FROM gone WHERE term IS NULL),
           (SELECT coalesce(array_agg(term ORDER BY term), '{}') FROM agg),
           (SELECT coalesce(array_agg(s ORDER BY term), '{}') FROM agg)
      INTO v_dn, v_terms, v_ns;
    WITH gone AS (DELETE FROM rank_pending WHERE xid = NEW.xid RETURNING d)
    SELECT coalesce(sum(d), 0) INTO v_dl FROM gone;
    UPDATE gate_stats SET n_docs = n_docs + v_dn, total_dl = total_dl + v_dl, version = version + 1 WHERE id = 1;
    IF cardinality(v_terms) > 0 THEN
        WITH u AS (
            INSERT INTO gate_df AS g (term, n)
                SELECT d.t, d.n FROM unnest(v_terms, v_ns) AS d(t, n) ORDER BY d.t COLLATE "C"
            ON CONFLICT (term) DO UPDATE SET n = g.n + excluded.n
            RETURNING g.term, g.n)
        SELECT min(u.term) INTO v_bad FROM u WHERE u.n < 0;
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
        EXECUTE format('ALTER TABLE %I ADD COLUMN rank_body text[] COLLATE "C" NOT NULL DEFAULT ''{}'', '
                       'ADD COLUMN rank_ctx text[] COLLATE "C" NOT NULL DEFAULT ''{}''', t);
        EXECUTE format('CREATE INDEX %1$s_rank_body ON %1$I USING gin (rank_body)', t);
        EXECUTE format('CREATE INDEX %1$s_rank_ctx ON %1$I USING gin (rank_ctx)', t);
        EXECUTE format('CREATE TRIGGER %1$s_rank_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _rank_delta()', t);
        EXECUTE format('CREATE TRIGGER %1$s_rank_au AFTER UPDATE ON %1$I REFERENCING OLD TABLE AS ot NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _rank_delta()', t);
        EXECUTE format('CREATE TRIGGER %1$s_rank_ad AFTER DELETE ON %1$I REFERENCING OLD TABLE AS ot '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _rank_delta()', t);
    END LOOP;
END $$;

-- Recompute the context of every episode of a thread (the bodies of its previous two, by (seq, id)).
CREATE FUNCTION rank_refresh_thread(p_mind text, p_thread text) RETURNS void
    LANGUAGE sql SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    UPDATE episodes e SET rank_ctx = x.ctx
      FROM (SELECT i.id, coalesce(lag(i.rank_body, 2) OVER w, '{}') || coalesce(lag(i.rank_body, 1) OVER w, '{}') AS ctx
              FROM episodes i WHERE i.mind = p_mind AND i.thread = p_thread
            WINDOW w AS (ORDER BY i.seq, i.id)) x
     WHERE e.id = x.id AND e.rank_ctx IS DISTINCT FROM x.ctx;
END;

-- The ranking documents (gate candidates with their structure).
CREATE VIEW rank_docs WITH (security_invoker = true) AS
    SELECT id, 'memory'::text COLLATE "C" AS kind, mind, NULL::text AS thread, NULL::integer AS seq,
           NULL::text AS actor, gate_text, rank_body, rank_ctx FROM memories
    UNION ALL SELECT id, 'decision', mind, NULL, NULL, NULL, gate_text, rank_body, rank_ctx FROM decisions
    UNION ALL SELECT id, 'checkpoint', mind, NULL, NULL, NULL, gate_text, rank_body, rank_ctx FROM checkpoints
    UNION ALL SELECT id, 'episode', mind, thread, seq, actor, gate_text, rank_body, rank_ctx FROM episodes
    UNION ALL SELECT id, 'note', mind, NULL, NULL, NULL, gate_text, rank_body, rank_ctx FROM notes;

REVOKE ALL ON rank_docs, rank_pending FROM PUBLIC;
GRANT SELECT ON rank_docs TO @S@_human, @S@_agent;
REVOKE EXECUTE ON FUNCTION stem_all(text[]), _rank_delta(), rank_refresh_thread(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION stem_all(text[]), rank_refresh_thread(text, text) TO @S@_human, @S@_agent;
GRANT UPDATE (rank_body, rank_ctx) ON memories, notes TO @S@_agent;
GRANT INSERT, UPDATE, DELETE ON episodes TO @S@_human;
