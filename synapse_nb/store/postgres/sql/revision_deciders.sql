-- synapse_nb team vault, migration 32: who decided a revision (review 90, F1).
--
-- Migration 11 records the login that wrote each history entry and proposed each revision (history.login,
-- revisions.login, set by the server to session_user whatever the statement says); a revision's decision (status,
-- decided_at: column-level UPDATE, people only) recorded no one, so `memory revisions` could not say which person
-- accepted or rejected an agent's proposal. decided_login is now set the same way: by the server, to the session's
-- login, whenever a row's status changes (and on an insert of a decided row, which only people may make:
-- _proposal_guard), never from the statement; a row decided before this migration keeps NULL (not known).
ALTER TABLE revisions ADD COLUMN IF NOT EXISTS decided_login text COLLATE "C";
CREATE FUNCTION _revision_decider() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.decided_login := CASE WHEN NEW.status <> 'pending' THEN session_user END;
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        NEW.decided_login := session_user;
    ELSE
        NEW.decided_login := OLD.decided_login;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER revisions_decider BEFORE INSERT OR UPDATE ON revisions FOR EACH ROW
    EXECUTE FUNCTION _revision_decider();

-- An imported history entry (`memory import` of an export with --history) was stamped with the importing login, so
-- it read as a change that person made. Its row now says it was imported: file_login holds the login the file
-- named ('' when none), kept as data and never shown as who made the change (the reader shows no login for it).
-- Only a person imports; an agent login's own entry cannot set it (it would hide its login from the listings).
ALTER TABLE history ADD COLUMN IF NOT EXISTS file_login text COLLATE "C";
CREATE FUNCTION _history_file_login() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        NEW.file_login := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER history_file_login BEFORE INSERT ON history FOR EACH ROW EXECUTE FUNCTION _history_file_login();
