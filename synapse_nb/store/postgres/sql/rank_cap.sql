-- synapse_nb team vault, migration 28: a record's ranking words hold each distinct word at most 32 times (review 75).
--
-- A local vault's ranking index (SQLite schema v12) keeps the first 32 occurrences of each distinct word of a record
-- and drops the rest: FTS5 read a word's postings one per occurrence over every mind, and an agent's records of one
-- word repeated thousands of times made a person's recall take 15 s. The package now writes rank_body the same way
-- (store/postgres/dialect.py rank_tokens: the words capped before stemming), so both backends rank a vault alike.
-- The rows written before hold every occurrence; here they are capped: a row of ASCII text exactly as the package
-- does it (its words are its runs of ASCII letters and digits, lower-cased), any other by stem (a word's variants
-- that share a stem then share the 32, where the package gives each its own; the row's next write makes it exact).
-- Then the contexts of the threads those episodes are in (rank_refresh_thread: two capped bodies, joined), and the
-- total length follows by the statement triggers (_rank_delta).

CREATE FUNCTION _rank_cap(p_words text[], p_most integer) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN (SELECT coalesce(array_agg(w ORDER BY o), '{}')
              FROM (SELECT w, o, row_number() OVER (PARTITION BY w ORDER BY o) AS k
                      FROM unnest(p_words) WITH ORDINALITY AS u(w, o)) x
             WHERE k <= p_most);
REVOKE EXECUTE ON FUNCTION _rank_cap(text[], integer) FROM PUBLIC;

CREATE TEMP TABLE rank_capped(tbl text, id text, mind text, thread text) ON COMMIT DROP;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'episodes', 'notes'] LOOP
        EXECUTE format(
            'WITH over AS (SELECT id FROM %1$I r WHERE EXISTS (SELECT 1 FROM unnest(r.rank_body) w GROUP BY w '
            '                                                   HAVING count(*) > 32)), '
            'done AS (UPDATE %1$I r SET rank_body = CASE WHEN r.gate_text ~ ''^[\x01-\x7f]*$'' '
            '    THEN stem_all(_rank_cap(ARRAY(SELECT m[1] FROM regexp_matches(lower(r.gate_text), ''[a-z0-9]+'', ''g'') m), 32)) '
            '    ELSE _rank_cap(r.rank_body, 32) END '
            '  FROM over WHERE r.id = over.id RETURNING r.id, r.mind, %2$s) '
            'INSERT INTO rank_capped SELECT %1$L, * FROM done',
            t, CASE WHEN t = 'episodes' THEN 'r.thread' ELSE 'NULL::text' END);
    END LOOP;
END $$;

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT mind, thread FROM rank_capped WHERE thread IS NOT NULL ORDER BY 1, 2 LOOP
        PERFORM rank_refresh_thread(r.mind, r.thread);
    END LOOP;
END $$;
