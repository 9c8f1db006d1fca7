-- Migration 4: the vault settings and the file flags move the data version (gate_stats.version).
--
-- Recall reads them (the saved default bars; "files missing at HEAD"), so a reader may keep them per data version
-- as it keeps records, word statistics and lessons: a warm team recall then reads neither (two round trips fewer)
-- and still never serves a stale value, because every transaction that changes one moves the version at commit
-- (the same deferred fold as a record write). Statements on meta and flags first take the project's write lock
-- (_gate_lock, as every statement on a recall table does), so they queue behind a running write instead of
-- deadlocking with one (a record delete also deletes its flags). meta's other keys (the stamp clock, lesson scan
-- positions) take the lock but move no version.

CREATE FUNCTION _gate_touch() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    PERFORM _gate_apply('{}', '{}', 0);  -- only the version moves
    RETURN NULL;
END $$;

CREATE TRIGGER flags_lock BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON flags
    FOR EACH STATEMENT EXECUTE FUNCTION _gate_lock();
CREATE TRIGGER flags_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON flags
    FOR EACH STATEMENT EXECUTE FUNCTION _gate_touch();

CREATE TRIGGER meta_lock BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON meta
    FOR EACH STATEMENT EXECUTE FUNCTION _gate_lock();
CREATE TRIGGER meta_setting_written AFTER INSERT OR UPDATE ON meta
    FOR EACH ROW WHEN (NEW.key LIKE 'setting:%') EXECUTE FUNCTION _gate_touch();
CREATE TRIGGER meta_setting_gone AFTER UPDATE OR DELETE ON meta
    FOR EACH ROW WHEN (OLD.key LIKE 'setting:%') EXECUTE FUNCTION _gate_touch();
CREATE TRIGGER meta_truncated AFTER TRUNCATE ON meta
    FOR EACH STATEMENT EXECUTE FUNCTION _gate_touch();
