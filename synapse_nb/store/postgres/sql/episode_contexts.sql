-- synapse_nb team vault, migration 34: the ranking contexts an import left empty are filled (review 96).
--
-- A threaded episode's rank_ctx holds the words of the two episodes before it in its thread (rank_refresh_thread,
-- migrations 3 and 26), refreshed by the package after each write. An import (`memory import`, and `team join --from`,
-- which imports the local vault) wrote its rows without the refresh: every episode it copied kept rank_ctx = '{}',
-- BM25 read no context and a smaller total length, and recall on the team vault ranked otherwise than the local vault
-- it was joined from, until a later write to each thread refreshed it (a thread nobody wrote to again, never). The
-- package now refreshes every thread an import writes; here the threads of the projects joined before are refreshed:
-- each that holds an episode with an empty context after another one in its order (seq, id). The refresh rewrites only
-- the rows whose context differs, and the total length follows by the statement triggers (_rank_delta).

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT DISTINCT mind, thread
               FROM (SELECT mind, thread, rank_ctx,
                            row_number() OVER (PARTITION BY mind, thread ORDER BY seq, id) AS n
                       FROM episodes WHERE thread IS NOT NULL) x
              WHERE n > 1 AND rank_ctx = '{}'
              ORDER BY 1, 2
    LOOP
        PERFORM rank_refresh_thread(r.mind, r.thread);
    END LOOP;
END $$;
