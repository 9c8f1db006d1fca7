-- Migration 14: an agent's history entry describes only its own record, as the package writes it.
--
-- A history entry's `before` is what a record was before a change: `memory history` shows it as that version, and
-- `memory revert --to N` stores it again, verified if it says so. Migration 9's guard checked an agent entry's
-- record and `before` source unless the action was 'analyse', and read a missing source as the agent's. Review 4
-- wrote, with the agent login's own SQL, an 'analyse' entry for a person's memory whose `before` held the agent's
-- words as `"source": "user", "verified": true`: the person's version 1 then read as the agent's text, and the
-- person's revert to their own version stored it as a [user · verified] critical memory. Now, for an agent role:
--
--   * an entry's record id is of its kind (models.kind_of_id: 'mem_' for a memory, ...);
--   * 'analyse' is an agent's analysis of a pending lesson, which it may not read: kind 'lesson', no `before`;
--   * any other action is on the agent's own record (as before), and a `before` names that record (its id and
--     kind), says `"source": "agent"` in so many words (a record without a source reads as a person's) and is not
--     verified (only a person verifies, and an agent's change to a verified memory is a revision).
--
-- People's entries are as before.

CREATE OR REPLACE FUNCTION _history_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_before jsonb;
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF NEW.actor <> 'agent' THEN
        PERFORM _deny(format('write a history entry as %L', NEW.actor), 'an agent''s entries have actor=''agent''');
    END IF;
    IF NEW.action NOT IN ('create', 'update', 'delete', 'analyse') THEN
        PERFORM _deny(format('record the action %L', NEW.action), 'a human approves, verifies, reverts and accepts');
    END IF;
    IF NEW.at IS DISTINCT FROM (SELECT value FROM meta WHERE key = 'clock') THEN
        PERFORM _deny('write a history entry for another time', 'an entry carries the stamp of its change');
    END IF;
    IF NOT _id_of_kind(NEW.rid, NEW.kind) THEN
        PERFORM _deny(format('write history for %s as a %s', NEW.rid, NEW.kind),
                      'an entry''s record id is of its kind');
    END IF;
    IF NEW.action = 'analyse' THEN
        IF NEW.kind <> 'lesson' OR NEW.before IS NOT NULL THEN
            PERFORM _deny(format('write an analysis entry for %s %s with a record', NEW.kind, NEW.rid),
                          'an agent''s analysis entry names a pending lesson, and holds no record');
        END IF;
        RETURN NEW;
    END IF;
    IF coalesce(_record_source(NEW.kind, NEW.rid), 'agent') <> 'agent' THEN
        PERFORM _deny(format('write history for the user''s %s %s', NEW.kind, NEW.rid),
                      'an agent''s change to a human''s memory is a revision a human accepts');
    END IF;
    IF NEW.before IS NOT NULL THEN
        v_before := NEW.before::jsonb;
        IF v_before ->> 'id' IS DISTINCT FROM NEW.rid OR v_before ->> 'kind' IS DISTINCT FROM NEW.kind
           OR v_before ->> 'source' IS DISTINCT FROM 'agent'
           OR coalesce(v_before ->> 'verified', 'false') <> 'false' THEN
            PERFORM _deny(format('write history for %s %s that describes another record, a person''s or a verified '
                                 'one', NEW.kind, NEW.rid),
                          'an agent''s entry describes its own record as it was: its id and kind, '
                          '"source": "agent", not verified');
        END IF;
    END IF;
    RETURN NEW;
END $$;
