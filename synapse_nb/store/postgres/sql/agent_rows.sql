-- synapse_nb team vault, migration 16: an agent login's own rows hold no more than the package writes (review 16).
--
-- Migration 15 counted the fields the package writes, and the package dates, labels and sizes what it writes; an
-- agent login's own SQL chose the rest (each reproduced on a server):
--   * an episode's actor (4 MB each) and the ranking arrays (rank_body, rank_ctx, terms: the package fills them from
--     the text, an agent login with anything) were stored and never counted: 112 MB held, 231 bytes counted. The
--     bytes agents hold now count every column such a row carries that its writer chose: an episode's actor and
--     thread too, and the ranking arrays (so a team vault counts more bytes than a local vault for the same
--     records: its ranking copies live in the rows);
--   * records dated 2099 were never older than a prune's cut-off (`memory prune --agent-records-older-than`) and
--     headed every "latest" listing for ever: an agent's row is not dated after the server's clock (the latest
--     stamp next_stamp() handed out, or the server's time plus the minute next_stamp() allows);
--   * an episode stored as said by "Maria" read as Maria's own words: an agent's episode names another speaker only
--     as reported ("Maria (reported by agent)", as Episodes.log writes it), and its actor and thread are at most
--     200 characters (the package's MAX_SHORT).
--   * (review 17) an agent's history entry for a lesson describes it pending, in the agent's words; an agent's
--     ranking arrays hold no NULL and no more elements than its text can give; the duplicate check's catch-up mark
--     follows the write clock.
-- A person's rows, and the owner's upkeep of an agent's row that leaves these columns as they were, pass as before.

CREATE OR REPLACE FUNCTION _held_sql(p_table text, OUT held text, OUT size text)
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
                  WHEN 'episodes' THEN ARRAY['task_key', 'outcome', 'refs', 'thread', 'actor']
                  WHEN 'notes' THEN ARRAY['name', 'trigger', 'body'] END) f)
           || CASE WHEN p_table = 'lessons' THEN ''
                   ELSE (SELECT string_agg(format(' + coalesce(octet_length(array_to_string(x.%I, '' '')), 0)', f), '')
                           FROM unnest(ARRAY['rank_body', 'rank_ctx', 'terms']) f) END;
END;

-- The counts again, by the new measure (the migration runs under the project's migration lock).
DELETE FROM agent_held;
DELETE FROM agent_held_all;
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

CREATE FUNCTION _agent_row_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_latest text;
BEGIN
    IF _caller_is_human() OR NEW.source IS DISTINCT FROM 'agent' THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
        v_latest := greatest(coalesce((SELECT value FROM meta WHERE key = 'clock'), ''),
                             fmt_ts(clock_timestamp() + interval '1 minute'));
        IF NEW.created_at > v_latest OR NEW.updated_at > v_latest THEN
            PERFORM _deny(format('date %s %s after the server''s clock (%s)', TG_ARGV[0], NEW.id,
                                 greatest(NEW.created_at, NEW.updated_at)),
                          'a record carries the stamp of its write (next_stamp())');
        END IF;
    END IF;
    IF TG_ARGV[0] <> 'episode' THEN  -- (PL/pgSQL reads every field an expression names: episodes' apart)
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.actor IS DISTINCT FROM OLD.actor OR NEW.thread IS DISTINCT FROM OLD.thread THEN
        IF NEW.actor IS NOT NULL AND lower(NEW.actor) <> 'agent' AND right(NEW.actor, 20) <> ' (reported by agent)' THEN
            PERFORM _deny(format('store episode %s as said by %L', NEW.id, left(NEW.actor, 80)),
                          'an agent names another speaker only as reported: "Maria (reported by agent)"');
        END IF;
        IF length(NEW.actor) > 200 OR length(NEW.thread) > 200 THEN
            PERFORM _deny(format('store episode %s with an actor or thread over 200 characters', NEW.id),
                          'an actor and a thread are at most 200 characters');
        END IF;
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _agent_row_guard() FROM PUBLIC;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM (VALUES ('memories', 'memory'), ('checkpoints', 'checkpoint'), ('decisions', 'decision'),
                                   ('lessons', 'lesson'), ('episodes', 'episode'), ('notes', 'note')) v(tbl, kind)
    LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_row BEFORE INSERT OR UPDATE ON %1$I FOR EACH ROW '
                       'EXECUTE FUNCTION _agent_row_guard(%2$L)', r.tbl, r.kind);
    END LOOP;
END $$;

-- An agent's history entry for a lesson describes a pending lesson in the agent's words only: its own SQL wrote an
-- entry whose `before` was its lesson approved, with a wording, approved_at and expiry, and a person's as_of recall
-- rebuilt it under "CRITICAL: ADHERE" (review 17; the package also reads any agent entry's lesson as pending,
-- changes.HistoryEntry.previous).
CREATE FUNCTION _agent_lesson_history_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_before jsonb;
BEGIN
    IF _caller_is_human() OR NEW.kind <> 'lesson' OR NEW.before IS NULL THEN
        RETURN NEW;
    END IF;
    v_before := NEW.before::jsonb;
    IF coalesce(v_before ->> 'status', 'pending') <> 'pending' OR v_before ->> 'approved_at' IS NOT NULL
       OR v_before ->> 'expires_at' IS NOT NULL OR v_before ->> 'lesson_text' IS NOT NULL
       OR v_before ->> 'analysis_by' = 'user' THEN
        PERFORM _deny(format('write history for lesson %s as a decided one', NEW.rid),
                      'an agent''s entry describes its lesson as pending, in its own words');
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _agent_lesson_history_guard() FROM PUBLIC;
CREATE TRIGGER history_agent_lesson BEFORE INSERT ON history FOR EACH ROW
    EXECUTE FUNCTION _agent_lesson_history_guard();

-- An agent's ranking arrays hold what the package makes of the row's text: no NULL element (NULLs were not counted,
-- and 3 billion of them made every recall of a person's take 30 s: review 17), rank_body and terms at most four
-- elements a byte of the row's gate text (plus 64), rank_ctx empty but on a threaded episode (whose context the
-- thread's two records before it give: at most twice what one record may hold). After the row is written: the gate
-- text is a generated column.
CREATE FUNCTION _agent_rank_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_most bigint;
BEGIN
    IF _caller_is_human() OR NEW.source IS DISTINCT FROM 'agent' THEN
        RETURN NULL;
    END IF;
    IF array_position(NEW.rank_body, NULL) IS NOT NULL OR array_position(NEW.rank_ctx, NULL) IS NOT NULL
       OR array_position(NEW.terms, NULL) IS NOT NULL THEN
        PERFORM _deny(format('store ranking words of %s %s with a NULL among them', TG_ARGV[0], NEW.id),
                      'ranking words are the words of the record''s text');
    END IF;
    v_most := 4 * octet_length(coalesce(NEW.gate_text, '')) + 64;
    IF cardinality(NEW.rank_body) > v_most OR cardinality(NEW.terms) > v_most THEN
        PERFORM _deny(format('store %s ranking words for %s %s of %s bytes of text',
                             greatest(cardinality(NEW.rank_body), cardinality(NEW.terms)), TG_ARGV[0], NEW.id,
                             octet_length(coalesce(NEW.gate_text, ''))),
                      'ranking words are the words of the record''s text');
    END IF;
    v_most := 0;  -- (a CASE in an IF's condition ends it at its first THEN)
    IF TG_ARGV[0] = 'episode' THEN
        v_most := 2 * (4 * 4 * 32768 + 64);
    END IF;
    IF cardinality(NEW.rank_ctx) > v_most THEN
        PERFORM _deny(format('store a ranking context of %s words for %s %s', cardinality(NEW.rank_ctx),
                             TG_ARGV[0], NEW.id),
                      'a ranking context is the words of the two records before it in its thread');
    END IF;
    RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION _agent_rank_guard() FROM PUBLIC;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM (VALUES ('memories', 'memory'), ('checkpoints', 'checkpoint'), ('decisions', 'decision'),
                                   ('episodes', 'episode'), ('notes', 'note')) v(tbl, kind)
    LOOP
        EXECUTE format('CREATE TRIGGER %1$s_agent_rank AFTER INSERT OR UPDATE ON %1$I FOR EACH ROW '
                       'EXECUTE FUNCTION _agent_rank_guard(%2$L)', r.tbl, r.kind);
    END LOOP;
END $$;

-- The duplicate check's catch-up mark moves forward with the write clock only: an agent's UPDATE dup_checked SET
-- at = '9999-...' switched off the check of every later bulk write for good (review 17). A mark past the clock now
-- is set back to it.
CREATE FUNCTION _dup_checked_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.at > greatest(coalesce((SELECT value FROM meta WHERE key = 'clock'), ''),
                         fmt_ts(clock_timestamp() + interval '1 minute')) THEN
        RAISE EXCEPTION 'synapse: the duplicate check''s mark may not move past the write clock (%)', NEW.at
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'the mark follows the stamps of the writes it checked';
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _dup_checked_guard() FROM PUBLIC;
UPDATE dup_checked SET at = (SELECT value FROM meta WHERE key = 'clock')
 WHERE at > (SELECT value FROM meta WHERE key = 'clock');
CREATE TRIGGER dup_checked_guard BEFORE UPDATE ON dup_checked FOR EACH ROW EXECUTE FUNCTION _dup_checked_guard();
