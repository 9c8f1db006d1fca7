-- synapse_nb team vault, migration 33: a lesson's session marks outlive its deletion, and a purge leaves them
-- reading 'purged' (s21).
--
-- A lesson rejected after approval was deleted with the marks of every session it had been given (_after_del), so
-- no recall could tell such a session that the lesson it held was no longer in force, and the agent went on
-- following it. _after_del now keeps a lesson's marks (every other kind's still go with its record): recall names
-- the lesson once, by the wording its history holds (a person), or counted (the agent role reads no history), and
-- the session's mark then reads 'gone'; the marks go with their session (delete_sessions_before, the registry's
-- bounds). purge_history() leaves the marks of the purged record reading 'purged' (a mark that told its session
-- already, 'gone', stays), never a digest of the purged text: recall says a lesson shown earlier was deleted by a
-- person, without its wording. As the local vault's schema v14 and store.sql.history.PURGED_MARKS.
CREATE OR REPLACE FUNCTION _after_del() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE t text[]; n bigint[]; dn bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM ot) THEN
        RETURN NULL;
    END IF;
    IF TG_ARGV[1] = 'gate' THEN
        SELECT coalesce(array_agg(term ORDER BY term), '{}'), coalesce(array_agg(-c ORDER BY term), '{}')
          INTO t, n
          FROM (SELECT x.term COLLATE "C" AS term, count(*) AS c FROM ot, unnest(ot.terms) AS x(term)
                 GROUP BY 1) d;
        SELECT -count(*) INTO dn FROM ot;
        PERFORM _gate_apply(t, n, dn);
    ELSE
        PERFORM _gate_apply('{}', '{}', 0);  -- lessons: only the version moves
    END IF;
    IF TG_ARGV[2] = 'tags' THEN
        DELETE FROM tags WHERE rid IN (SELECT id FROM ot);
    END IF;
    IF TG_ARGV[0] <> 'lesson' THEN  -- a lesson's marks stay: recall names it to the sessions that were given it
        DELETE FROM session_seen WHERE rid IN (SELECT id FROM ot);
    END IF;
    DELETE FROM flags WHERE rid IN (SELECT id FROM ot);
    INSERT INTO change_log(rid, kind, mind, op, digest)
        SELECT ot.id, TG_ARGV[0], ot.mind, 'delete', md5(ot::text) FROM ot ORDER BY ot.id;
    PERFORM pg_notify('@S@_changes', '');
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION purge_history(p_rid text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('purge history', 'a human purges a record');
    END IF;
    UPDATE session_seen SET digest = 'purged' WHERE rid = p_rid AND digest <> 'gone' AND _mind_visible(mind);
    RETURN QUERY DELETE FROM history WHERE rid = p_rid AND _mind_visible(mind) RETURNING id::text;
END $$;
