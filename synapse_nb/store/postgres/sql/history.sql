-- Migration 9: memory that keeps its history (issue 30). The same four tables as a local vault's schema v6
-- (synapse_nb/store/sqlite/history_schema.py), written by the same statements (synapse_nb/store/sql/history.py), so a
-- team vault holds the same rows, byte for byte:
--
--   history    one row per mutation of a record: actor, surface, digests before/after, the record before
--   revisions  an agent's proposed change to a memory a human wrote or verified, pending until a human decides
--   links      likely duplicates / contradictions found on write, open until a human decides
--   exports    the exports taken (a purge names those that still hold a record)
--
-- The human gate, as migrations 2 and 6-8 enforce it (the database refuses what the package's core refuses):
--   * history is append-only for everyone (a BEFORE UPDATE trigger; no UPDATE grant); its rows are removed only
--     by purge_history / prune_history, SECURITY DEFINER functions that refuse a caller who is not human;
--   * an agent appends history only as itself, only for its own records (never a user's), stamped with this
--     transaction's stamp (the clock row next_stamp() wrote), and only the actions an agent can take;
--   * an agent proposes revisions (status pending) and records links (status open); only people decide them
--     (column-level UPDATE grants on status and decided_at for people only) or delete them;
--   * exports are people's (an agent may not export); minds are isolated by row-level security (migration 8),
--     and an agent reads the history of lessons in force only (the lessons' own policies decide which).
--   * a record's deletion drops its open links and pending revisions (a trigger with the owner's rights).
--   * links move the data version (recall leaves out the hidden side of open duplicate links and keeps per
--     version what it read, as migration 4 does for settings and flags).

CREATE TABLE history(
    id text COLLATE "C" NOT NULL,
    rid text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL,
    mind text COLLATE "C" NOT NULL,
    version integer NOT NULL CHECK (version > 0),
    action text COLLATE "C" NOT NULL,
    actor actor_source NOT NULL,
    surface text COLLATE "C" NOT NULL,
    at ts NOT NULL,
    digest_before text COLLATE "C",
    digest_after text COLLATE "C",
    before text,
    UNIQUE (rid, version)
);
CREATE INDEX history_mind ON history(mind, at, id);
CREATE INDEX history_at ON history(at, id);

CREATE TABLE revisions(
    id text COLLATE "C" PRIMARY KEY,
    rid text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL,
    mind text COLLATE "C" NOT NULL,
    status text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
    fields text NOT NULL,
    base_digest text COLLATE "C" NOT NULL,
    actor actor_source NOT NULL,
    surface text COLLATE "C" NOT NULL,
    created_at ts NOT NULL,
    decided_at ts
);
CREATE INDEX revisions_mind ON revisions(mind, status, created_at, id);
CREATE INDEX revisions_rid ON revisions(rid);

CREATE TABLE links(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    a text COLLATE "C" NOT NULL,
    a_kind text COLLATE "C" NOT NULL,
    b text COLLATE "C" NOT NULL,
    b_kind text COLLATE "C" NOT NULL,
    relation text COLLATE "C" NOT NULL CHECK (relation IN ('duplicate', 'contradiction')),
    score double precision NOT NULL,
    hidden text COLLATE "C",
    status text COLLATE "C" NOT NULL CHECK (status IN ('open', 'kept', 'merged', 'superseded')),
    reason text NOT NULL,
    created_at ts NOT NULL,
    decided_at ts,
    UNIQUE (a, b)
);
CREATE INDEX links_mind ON links(mind, status, created_at, id);
CREATE INDEX links_b ON links(b);

-- the stamp up to which every write has been checked for duplicates (synapse_nb/dupes.py)
CREATE TABLE dup_checked(
    id integer PRIMARY KEY CHECK (id = 1),
    at text COLLATE "C" NOT NULL
);
INSERT INTO dup_checked(id, at) VALUES (1, '');

CREATE TABLE exports(
    id text COLLATE "C" PRIMARY KEY,
    taken_at ts NOT NULL,
    dest text,
    records integer NOT NULL,
    history integer NOT NULL
);

-- ---------------------------------------------------------------------------------------------------
-- append-only history, and what an agent may append
-- ---------------------------------------------------------------------------------------------------
CREATE FUNCTION _history_frozen() RETURNS trigger
    LANGUAGE plpgsql SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'synapse: history rows are append-only' USING ERRCODE = 'insufficient_privilege',
        HINT = 'a human purges a record (synapse-nb memory purge) or prunes old history (synapse-nb history prune)';
END $$;
CREATE TRIGGER history_append_only BEFORE UPDATE ON history FOR EACH ROW EXECUTE FUNCTION _history_frozen();

-- The source of a stored record of a kind (NULL: no such record), whatever the caller may read.
CREATE FUNCTION _record_source(p_kind text, p_id text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_table text; v_source text;
BEGIN
    v_table := CASE p_kind WHEN 'memory' THEN 'memories' WHEN 'checkpoint' THEN 'checkpoints'
                           WHEN 'decision' THEN 'decisions' WHEN 'lesson' THEN 'lessons'
                           WHEN 'episode' THEN 'episodes' WHEN 'note' THEN 'notes' END;
    IF v_table IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT source FROM %I WHERE id = $1', v_table) INTO v_source USING p_id;
    RETURN v_source;
END $$;

CREATE FUNCTION _history_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
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
    IF NEW.action <> 'analyse' AND (coalesce(_record_source(NEW.kind, NEW.rid), 'agent') <> 'agent'
                                    OR coalesce(NEW.before::jsonb ->> 'source', 'agent') <> 'agent') THEN
        PERFORM _deny(format('write history for the user''s %s %s', NEW.kind, NEW.rid),
                      'an agent''s change to a human''s memory is a revision a human accepts');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER history_guard BEFORE INSERT ON history FOR EACH ROW EXECUTE FUNCTION _history_guard();

CREATE FUNCTION _proposal_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'revisions' AND (NEW.status <> 'pending' OR NEW.decided_at IS NOT NULL
                                        OR NEW.actor <> 'agent') THEN
        PERFORM _deny('decide a revision', 'an agent proposes; a human accepts or rejects');
    END IF;
    IF TG_TABLE_NAME = 'links' AND (NEW.status <> 'open' OR NEW.decided_at IS NOT NULL) THEN
        PERFORM _deny('resolve a conflict', 'an agent''s writes are checked; a human decides each pair');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER revisions_guard BEFORE INSERT OR UPDATE ON revisions FOR EACH ROW EXECUTE FUNCTION _proposal_guard();
CREATE TRIGGER links_guard BEFORE INSERT OR UPDATE ON links FOR EACH ROW EXECUTE FUNCTION _proposal_guard();

-- ---------------------------------------------------------------------------------------------------
-- deletes, by function (migration 7: no role holds table-level DELETE), humans only
-- ---------------------------------------------------------------------------------------------------
CREATE FUNCTION purge_history(p_rid text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('purge history', 'a human purges a record');
    END IF;
    RETURN QUERY DELETE FROM history WHERE rid = p_rid AND _mind_visible(mind) RETURNING id::text;
END $$;

CREATE FUNCTION prune_history(p_mind text, p_before text, p_mind2 text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('prune history', 'a human prunes history, with a retention window');
    END IF;
    RETURN QUERY DELETE FROM history WHERE mind = p_mind AND _mind_visible(mind) AND at < p_before AND id NOT IN
        (SELECT h.id FROM history h WHERE h.mind = p_mind2 AND h.at = (SELECT max(g.at) FROM history g
                                                                       WHERE g.rid = h.rid))
        RETURNING id::text;
END $$;

CREATE FUNCTION delete_revisions_of(p_rid text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('delete revisions', 'a human purges a record');
    END IF;
    RETURN QUERY DELETE FROM revisions WHERE rid = p_rid AND _mind_visible(mind) RETURNING id::text;
END $$;

CREATE FUNCTION delete_links_of(p_a text, p_b text) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    IF NOT _caller_is_human() THEN
        PERFORM _deny('delete conflicts', 'a human purges a record');
    END IF;
    RETURN QUERY DELETE FROM links WHERE (a = p_a OR b = p_b) AND _mind_visible(mind) RETURNING id::text;
END $$;

-- A record's next history version, counting the entries the caller may not read (an agent analysing a pending
-- lesson it cannot see: HistoryQueries.next_version, routed here by PgDialect).
CREATE FUNCTION history_next_version(p_rid text) RETURNS integer
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT coalesce(max(h.version), 0) + 1 FROM history h WHERE h.rid = p_rid;
END;

-- A record's deletion drops its open links and its pending revisions (its history stays until a purge).
CREATE FUNCTION _drop_proposals() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    DELETE FROM links WHERE (a = OLD.id OR b = OLD.id) AND status = 'open';
    DELETE FROM revisions WHERE rid = OLD.id AND status = 'pending';
    RETURN NULL;
END $$;
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_drop_proposals AFTER DELETE ON %1$I '
                       'FOR EACH ROW EXECUTE FUNCTION _drop_proposals()', t);
    END LOOP;
END $$;

-- links change what recall shows: they move the data version (migration 4's touch)
CREATE TRIGGER links_lock BEFORE INSERT OR UPDATE OR DELETE ON links
    FOR EACH STATEMENT EXECUTE FUNCTION _gate_lock();
CREATE TRIGGER links_version AFTER INSERT OR UPDATE OR DELETE ON links
    FOR EACH STATEMENT EXECUTE FUNCTION _gate_touch();

-- ---------------------------------------------------------------------------------------------------
-- privileges and row-level security
-- ---------------------------------------------------------------------------------------------------
REVOKE ALL ON history, revisions, links, exports FROM PUBLIC;
GRANT SELECT, INSERT ON history, revisions, links TO @S@_human, @S@_agent;
GRANT UPDATE (status, decided_at) ON revisions, links TO @S@_human;
GRANT SELECT, INSERT ON exports TO @S@_human;
REVOKE ALL ON dup_checked FROM PUBLIC;
GRANT SELECT, UPDATE (at) ON dup_checked TO @S@_human, @S@_agent;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['history', 'revisions', 'links'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY %1$s_rows ON %1$I USING (true) WITH CHECK (true)', t);
        EXECUTE format('CREATE POLICY %1$s_minds ON %1$I AS RESTRICTIVE '
                       'USING (''*'' = ANY((SELECT _minds())::text[]) OR mind = ANY((SELECT _minds())::text[])) '
                       'WITH CHECK (''*'' = ANY((SELECT _minds())::text[]) OR mind = ANY((SELECT _minds())::text[]))', t);
    END LOOP;
END $$;
-- an agent reads the history of the lessons it may read (approved, in force) only
CREATE POLICY history_agent_lessons ON history AS RESTRICTIVE FOR SELECT TO @S@_agent
    USING (kind <> 'lesson' OR EXISTS (SELECT 1 FROM lessons l WHERE l.id = history.rid));

REVOKE EXECUTE ON FUNCTION _record_source(text, text), purge_history(text), prune_history(text, text, text),
    delete_revisions_of(text), delete_links_of(text, text), history_next_version(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _record_source(text, text), purge_history(text), prune_history(text, text, text),
    delete_revisions_of(text), delete_links_of(text, text), history_next_version(text) TO @S@_human, @S@_agent;
