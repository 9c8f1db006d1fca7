-- Migration 35: an agent login writes no history for a record a person decided, and its sessions' marks hold what
-- the package writes (review 97).
--
-- F1. A memory a person verified keeps source 'agent' (verify sets verified = 1), and migration 14's _history_guard
-- read only the source: the agent login's own SQL appended an 'update' entry to such a memory, its `before` the
-- agent's words, stamped with next_stamp(). A version reads as the next entry's `before`, so the person's verified
-- version (`memory history`) read as the agent's text, `memory revert --to` it stored the agent's words, and the
-- next person's write over the memory no longer said it replaced the verifier's version. An approved (or expired)
-- lesson keeps source 'agent' too. Now no entry of an agent login names a memory a person verified or a lesson a
-- person decided (status not 'pending'): the test _verified_guard and _record_is_agents use for a memory, a pending
-- status for a lesson (an agent analyses only pending lessons). An accepted revision leaves its memory verified: the
-- same test. Other kinds have no decision that keeps source 'agent'. A trigger of the owner's rights (it reads a
-- pending lesson, which the agent role may not), answering only for a record of the entry's mind that the login may
-- see (_mind_visible), beside migration 14's, which stays as it is.
CREATE FUNCTION _agent_history_decided() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_decided boolean;
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF NEW.kind = 'memory' THEN
        SELECT verified <> 0 INTO v_decided FROM memories
         WHERE id = NEW.rid AND mind = NEW.mind AND _mind_visible(mind);
    ELSIF NEW.kind = 'lesson' THEN
        SELECT status <> 'pending' INTO v_decided FROM lessons
         WHERE id = NEW.rid AND mind = NEW.mind AND _mind_visible(mind);
    END IF;
    IF coalesce(v_decided, false) THEN
        PERFORM _deny(format('write history for %s %s, which a person %s', NEW.kind, _id_shown(NEW.rid),
                             CASE NEW.kind WHEN 'memory' THEN 'verified' ELSE 'decided' END),
                      'a verified memory and an approved lesson are a person''s: an agent''s change to a verified '
                      'memory is a revision a person accepts, and an agent analyses only pending lessons');
    END IF;
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _agent_history_decided() FROM PUBLIC;
CREATE TRIGGER history_agent_decided BEFORE INSERT ON history FOR EACH ROW EXECUTE FUNCTION _agent_history_decided();

-- F2. Migration 12's _session_guard let an agent login write any digest of up to 64 bytes on its own sessions'
-- rows, 'purged' too: only purge_history() writes it (migration 33), and recall tells a session whose mark reads
-- 'purged' that a person deleted the lesson it was given, "do not follow it". The agent login's own SQL set it on the
-- mark of the one approved lesson in force, and every session of its login it named was told, in a person's name,
-- to stop following it. The package writes on an agent's session a record's digest (16 hex digits,
-- _util.digest) or 'gone' (recall.delta.GONE: the session was told a lesson is no longer in force); an update that
-- keeps the row's digest (a purge's 'purged') is not a new one. Anything else is refused an agent.
CREATE OR REPLACE FUNCTION _session_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    -- this login's own agent session, dated no later than an hour from now, of the package's sizes and digests:
    -- anyone's statement may write it (the cheap case first)
    IF starts_with(NEW.session, 'agent:' || quote_ident(session_user) || ':') AND octet_length(NEW.session) <= 512
       AND octet_length(NEW.rid) <= 64
       AND (NEW.digest ~ '^[0-9a-f]{16}$' OR NEW.digest = 'gone'
            OR (TG_OP = 'UPDATE' AND NEW.digest = OLD.digest))
       AND NEW.seen_at::timestamptz <= clock_timestamp() + interval '1 hour' THEN
        RETURN NEW;
    END IF;
    IF NOT is_human() THEN
        PERFORM _deny(format('record what session %L was given (%s, the digest %L)', left(NEW.session, 80),
                             NEW.seen_at, left(NEW.digest, 80)),
                      'an agent records only its own sessions (agent:<login>:<id>), dated now, with ids of at most '
                      '64 bytes and a record''s digest (16 hex digits) or ''gone''');
    END IF;
    RETURN NEW;
END $$;
