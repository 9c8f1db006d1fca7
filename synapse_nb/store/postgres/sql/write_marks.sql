-- synapse_nb team vault, migration 23: a write whose commit was in doubt is believed committed only on its own
-- login's mark (review 57, finding 5).
--
-- A write made exactly once (kinds/_base.py exactly_once, PgStore.once) whose connection died at COMMIT and whose
-- outcome the server could not be asked leaves an entry in the machine's cache folder (in-doubt.json): the hash of
-- the call, the transaction id, the records it wrote. Its retry asked the server whether that transaction
-- committed and whether the records were there. Any committed transaction id answered yes: an agent that planted
-- an entry under the hash of the person's next call, with the id of its own committed transaction and the id of
-- the person's memory, had the person's `remember` print "updated" and write nothing.
--
--   write_marks  one row per such write, inserted by the write's own transaction in its COMMIT's round trip: a
--                random nonce (kept in the entry), the hash of the call, and, whatever the statement says, the
--                login (session_user) and the transaction (pg_current_xact_id()). A retry believes a commit only
--                when its own login sees the row of the entry's nonce, call and transaction: a row exists only if
--                that login's transaction committed; a login reads and deletes only its own rows.
--   a day        how long a login's marks are kept: each new mark of the login drops its marks older than that,
--                and a retry spends the mark it believed.
CREATE TABLE write_marks(
    nonce text COLLATE "C" PRIMARY KEY CHECK (nonce ~ '^[0-9a-f]{32}$'),
    op text COLLATE "C" NOT NULL CHECK (op ~ '^[0-9a-f]{64}$'),
    login text COLLATE "C" NOT NULL DEFAULT session_user,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX write_marks_login_at ON write_marks(login, at);
CREATE FUNCTION _write_mark_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM write_marks WHERE login = session_user AND at < now() - interval '1 day';
    NEW.login := session_user;  -- the login whose transaction wrote the row, never the statement's word
    NEW.xid := pg_current_xact_id();
    NEW.at := now();
    RETURN NEW;
END $$;
CREATE TRIGGER write_marks_row BEFORE INSERT ON write_marks FOR EACH ROW EXECUTE FUNCTION _write_mark_row();
REVOKE ALL ON write_marks FROM PUBLIC;
GRANT SELECT, INSERT, DELETE ON write_marks TO @S@_human, @S@_agent;
ALTER TABLE write_marks ENABLE ROW LEVEL SECURITY;
CREATE POLICY write_marks_own ON write_marks USING (login = session_user) WITH CHECK (login = session_user);
