-- synapse_nb team vault, migration 29: no role can lock write_marks (review 85, finding 1).
--
-- Migration 7 left people and agents no table-level UPDATE, DELETE or TRUNCATE anywhere, because PostgreSQL lets a
-- role holding any of them take every LOCK mode on the table. Migration 23 granted DELETE on write_marks to both
-- (a login spends its own marks, and a new mark drops its login's marks older than a day, in a trigger that ran with
-- the caller's rights). So an agent login's own SQL,
--
--   BEGIN; SET LOCAL idle_in_transaction_session_timeout = 0; LOCK TABLE write_marks IN ACCESS EXCLUSIVE MODE;
--
-- left open, held every write made exactly once (it inserts its mark in its COMMIT's round trip) until lock_timeout:
-- the person read "the team vault server went away while committing", and pg_dump waited without limit.
--
-- In PostgreSQL 15, SELECT allows LOCK ... IN ACCESS SHARE MODE and INSERT (or UPDATE, DELETE, TRUNCATE) ROW
-- EXCLUSIVE MODE, neither of which blocks a reader or a row write; every stronger mode needs table-level UPDATE,
-- DELETE or TRUNCATE (16 lets INSERT take ROW SHARE too, and 17's MAINTAIN allows every mode). Column-level UPDATE
-- allows no LOCK at all. Now:
--
--   * people and agents keep SELECT and INSERT on write_marks and nothing more;
--   * a retry spends the mark it believed through spend_write_mark(nonce): its own login's mark only (session_user,
--     as the row-level policy and the mark's login say), with the owner's rights;
--   * a new mark drops its login's marks older than a day with the owner's rights (the trigger's function is
--     SECURITY DEFINER; the mark's login is still the session's login, whatever the statement says).

CREATE OR REPLACE FUNCTION _write_mark_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM write_marks WHERE login = session_user AND at < now() - interval '1 day';
    NEW.login := session_user;  -- the login whose transaction wrote the row, never the statement's word
    NEW.xid := pg_current_xact_id();
    NEW.at := now();
    RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION _write_mark_row() FROM PUBLIC;

-- Spend (delete) the caller's login's mark of this nonce; the number of marks deleted (0 or 1).
CREATE FUNCTION spend_write_mark(p_nonce text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_n integer;
BEGIN
    DELETE FROM write_marks WHERE nonce = p_nonce AND login = session_user;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END $$;
REVOKE EXECUTE ON FUNCTION spend_write_mark(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION spend_write_mark(text) TO @S@_human, @S@_agent;

-- The rights that allow a lock a person's write or read waits for: none for people and agents.
REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON write_marks FROM @S@_human, @S@_agent;
