-- synapse_nb team vault, migration 1: the SQLite schema (v2, synapse_nb/store/sqlite/schema.py) ported to PostgreSQL 15.
--
-- One PostgreSQL schema per project (repository): @S@ is replaced by the schema name (validated as
-- ^[a-z][a-z0-9_]{0,39}$ by migrate.py, which also runs this under pg_advisory_xact_lock as @S@_owner).
-- Minds are a column, as in SQLite.
--
-- What changed from SQLite, and why:
--   * timestamps stay fixed-width UTC text ('2026-11-30T12:00:00.000000Z'; domain ts, CHECKed), JSON
--     columns stay JSON text (CHECKed as JSON arrays/objects), verified stays 0/1: export/import and the
--     kinds' row -> record code keep working byte for byte.
--   * every text column that is sorted or compared is COLLATE "C": ORDER BY id / term gives the same order
--     as Python's sorted() on every server, whatever the database's default collation.
--   * FTS5 per kind -> a stored tsvector (english config ~ FTS5 porter) + GIN, for search().
--   * gate_docs/gate_vocab (FTS5 vocabulary) -> `terms text[]` per record (the gate's analysed terms,
--     computed in Python by synapse_nb's own analyser; never tsvector's tokeniser) + gate_df(term, n) and
--     gate_stats(n_docs, version), kept by statement-level triggers with transition tables.
--   * index_outbox/outbox_counter (a position counter) -> change_log read with the snapshot rule.
--   * derived tables (gate_df, gate_stats, tags, change_log) are written only by SECURITY DEFINER
--     trigger functions owned by @S@_owner: neither the human nor the agent role can write them.

-- ---------------------------------------------------------------------------------------------------
-- types and helpers
-- ---------------------------------------------------------------------------------------------------
CREATE DOMAIN ts AS text COLLATE "C"
    CHECK (VALUE ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$');
CREATE DOMAIN actor_source AS text COLLATE "C" CHECK (VALUE IN ('user', 'agent'));
CREATE DOMAIN json_array AS text CHECK (jsonb_typeof(VALUE::jsonb) = 'array');

-- The vault's timestamp format for a server time.
CREATE FUNCTION fmt_ts(t timestamptz) RETURNS ts
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, @S@, pg_temp
    RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');

-- Words of a JSON array joined by spaces, in array order (SQLite: group_concat over json_each).
CREATE FUNCTION json_words(j text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN (SELECT coalesce(string_agg(e, ' ' ORDER BY o), '')
              FROM jsonb_array_elements_text(j::jsonb) WITH ORDINALITY AS x(e, o));

-- terms must be what synapse_nb's analyser produces: sorted (code point order), unique, non-empty,
-- at most 64 characters (GateConfig.max_token_chars), no NULLs, one dimension.
CREATE FUNCTION terms_ok(t text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN coalesce(array_ndims(t), 1) = 1
       AND t = ARRAY(SELECT DISTINCT x COLLATE "C" FROM unnest(t) x ORDER BY 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(t) x WHERE x IS NULL OR x = '' OR length(x) > 64);

-- ---------------------------------------------------------------------------------------------------
-- tables (schema v2, one for one)
-- ---------------------------------------------------------------------------------------------------
CREATE TABLE meta(
    key text COLLATE "C" PRIMARY KEY,
    value text COLLATE "C" NOT NULL
);

CREATE TABLE memories(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    category text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    content text NOT NULL,
    tags json_array NOT NULL DEFAULT '[]',
    priority integer NOT NULL CHECK (priority BETWEEN 0 AND 3),
    source actor_source NOT NULL,
    verified smallint NOT NULL CHECK (verified IN (0, 1)),
    confidence double precision NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
    expires_at ts,
    created_at ts NOT NULL,
    updated_at ts NOT NULL,
    terms text[] COLLATE "C" NOT NULL CHECK (terms_ok(terms)),
    gate_text text GENERATED ALWAYS AS (
        replace(key, '_', ' ') || ' ' || content || ' ' || json_words(tags)) STORED,
    search_tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, replace(key, '_', ' ') || ' ' || content || ' ' || tags)) STORED,
    UNIQUE (mind, category, key)
);
CREATE INDEX memories_order ON memories(mind, priority, updated_at DESC);
CREATE INDEX memories_key ON memories(mind, key);
CREATE INDEX memories_expiry ON memories(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_terms ON memories USING gin (terms);
CREATE INDEX memories_search ON memories USING gin (search_tsv);

CREATE TABLE checkpoints(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    branch text COLLATE "C",
    commit_sha text COLLATE "C",
    doing text NOT NULL,
    changed_files json_array NOT NULL DEFAULT '[]',
    next_step text,
    blockers text,
    origin text COLLATE "C" NOT NULL,
    source actor_source NOT NULL,
    created_at ts NOT NULL,
    updated_at ts NOT NULL,
    terms text[] COLLATE "C" NOT NULL CHECK (terms_ok(terms)),
    gate_text text GENERATED ALWAYS AS (
        doing || ' ' || coalesce(next_step, '') || ' ' || coalesce(blockers, '') || ' '
        || json_words(changed_files)) STORED,
    search_tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, doing || ' ' || coalesce(next_step, '') || ' '
                    || coalesce(blockers, '') || ' ' || changed_files)) STORED
);
CREATE INDEX checkpoints_latest ON checkpoints(mind, branch, created_at DESC);
CREATE INDEX checkpoints_terms ON checkpoints USING gin (terms);
CREATE INDEX checkpoints_search ON checkpoints USING gin (search_tsv);

CREATE TABLE decisions(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    decision text NOT NULL,
    rationale text,
    tags json_array NOT NULL DEFAULT '[]',
    branch text COLLATE "C",
    commit_sha text COLLATE "C",
    source actor_source NOT NULL,
    created_at ts NOT NULL,
    updated_at ts NOT NULL,
    terms text[] COLLATE "C" NOT NULL CHECK (terms_ok(terms)),
    gate_text text GENERATED ALWAYS AS (
        decision || ' ' || coalesce(rationale, '') || ' ' || json_words(tags)) STORED,
    search_tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, decision || ' ' || coalesce(rationale, '') || ' ' || tags)) STORED
);
CREATE INDEX decisions_recent ON decisions(mind, created_at DESC);
CREATE INDEX decisions_terms ON decisions USING gin (terms);
CREATE INDEX decisions_search ON decisions USING gin (search_tsv);

CREATE TABLE lessons(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    status text COLLATE "C" NOT NULL CHECK (status IN ('pending', 'approved', 'expired')),
    summary text NOT NULL,
    branch text COLLATE "C",
    revert_sha text COLLATE "C",
    revert_commit text CHECK (revert_commit IS NULL OR jsonb_typeof(revert_commit::jsonb) = 'object'),
    reverted_commits json_array NOT NULL DEFAULT '[]',
    files_affected json_array NOT NULL DEFAULT '[]',
    diffstat json_array NOT NULL DEFAULT '[]',
    analysis text,
    analysis_by actor_source,
    lesson_text text,
    approved_at ts,
    expires_at ts,
    source actor_source NOT NULL,
    created_at ts NOT NULL,
    updated_at ts NOT NULL,
    search_tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, summary || ' ' || coalesce(analysis, '') || ' '
                    || coalesce(lesson_text, '') || ' ' || files_affected)) STORED
);
CREATE UNIQUE INDEX lessons_revert ON lessons(mind, revert_sha) WHERE revert_sha IS NOT NULL;
CREATE INDEX lessons_status ON lessons(mind, status, approved_at DESC);
CREATE INDEX lessons_search ON lessons USING gin (search_tsv);

CREATE TABLE episodes(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    task_key text COLLATE "C" NOT NULL,
    status text COLLATE "C" NOT NULL CHECK (status IN ('success', 'failure', 'unknown')),
    outcome text,
    refs json_array NOT NULL DEFAULT '[]',
    duration_s double precision,
    source actor_source NOT NULL,
    created_at ts NOT NULL,
    updated_at ts NOT NULL,
    terms text[] COLLATE "C" NOT NULL CHECK (terms_ok(terms)),
    gate_text text GENERATED ALWAYS AS (
        replace(task_key, '_', ' ') || ' ' || coalesce(outcome, '') || ' ' || json_words(refs)) STORED,
    search_tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, replace(task_key, '_', ' ') || ' ' || coalesce(outcome, '') || ' '
                    || refs)) STORED
);
CREATE INDEX episodes_task ON episodes(mind, task_key, created_at DESC);
CREATE INDEX episodes_terms ON episodes USING gin (terms);
CREATE INDEX episodes_search ON episodes USING gin (search_tsv);

CREATE TABLE notes(
    id text COLLATE "C" PRIMARY KEY,
    mind text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    trigger text NOT NULL,
    body text NOT NULL,
    source actor_source NOT NULL,
    created_at ts NOT NULL,
    updated_at ts NOT NULL,
    terms text[] COLLATE "C" NOT NULL CHECK (terms_ok(terms)),
    gate_text text GENERATED ALWAYS AS (replace(name, '_', ' ') || ' ' || trigger) STORED,
    search_tsv tsvector GENERATED ALWAYS AS (
        to_tsvector('english'::regconfig, replace(name, '_', ' ') || ' ' || trigger || ' ' || body)) STORED,
    UNIQUE (mind, name)
);
CREATE INDEX notes_terms ON notes USING gin (terms);
CREATE INDEX notes_search ON notes USING gin (search_tsv);

CREATE TABLE tags(
    tag text COLLATE "C" NOT NULL,
    mind text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL,
    rid text COLLATE "C" NOT NULL,
    PRIMARY KEY (tag, mind, kind, rid)
);
CREATE INDEX tags_rid ON tags(rid);

CREATE TABLE session_seen(
    mind text COLLATE "C" NOT NULL,
    session text COLLATE "C" NOT NULL,
    rid text COLLATE "C" NOT NULL,
    digest text COLLATE "C" NOT NULL,
    seen_at ts NOT NULL,
    PRIMARY KEY (mind, session, rid)
);
CREATE INDEX session_seen_rid ON session_seen(rid);

CREATE TABLE flags(
    rid text COLLATE "C" NOT NULL,
    mind text COLLATE "C" NOT NULL,
    flag text COLLATE "C" NOT NULL CHECK (flag IN ('dangling', 'stale')),
    detail text NOT NULL,
    updated_at ts NOT NULL,
    PRIMARY KEY (rid, flag)
);
CREATE INDEX flags_mind ON flags(mind);

-- ---------------------------------------------------------------------------------------------------
-- the gate's document frequencies (shared by every machine: determinism across machines)
-- ---------------------------------------------------------------------------------------------------
-- gate_df.n = number of gate records (all minds, like SQLite's gate_vocab) whose terms hold the term.
-- Rows may reach n = 0 (kept: deleting them would only add lock traffic); readers treat 0 as absent.
-- No CHECK (n >= 0): INSERT ... ON CONFLICT checks constraints on the *proposed* row before it finds the
-- conflict, so a negative delta (a term leaving a record) would fail although it only ever updates an
-- existing row. _gate_fold checks the resulting rows instead (RETURNING).
CREATE TABLE gate_df(
    term text COLLATE "C" PRIMARY KEY,
    n bigint NOT NULL
);
-- One row. n_docs = number of gate records; version += 1 with every transaction that changes what recall
-- reads (gate records or lessons). Every statement on those tables locks this row first (_gate_lock).
CREATE TABLE gate_stats(
    id smallint PRIMARY KEY CHECK (id = 1),
    n_docs bigint NOT NULL CHECK (n_docs >= 0),
    version bigint NOT NULL
);
INSERT INTO gate_stats(id, n_docs, version) VALUES (1, 0, 0);
-- Deltas of the running transactions, folded into gate_df/gate_stats once per transaction, at commit
-- (_gate_fold). Updating the one gate_stats row (and the hot gate_df rows) in every statement made a
-- transaction of n statements O(n^2): each update walks the row's chain of versions made by the same
-- transaction (measured: 431 rows/s at 500 single-row inserts in one transaction, 58 rows/s at 10,000).
-- term NULL carries the n_docs delta. UNLOGGED: rows never outlive their transaction.
CREATE UNLOGGED TABLE gate_pending(
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    term text COLLATE "C",
    d bigint NOT NULL
);
CREATE INDEX gate_pending_xid ON gate_pending(xid);
-- One row per writing transaction; its INSERT queues the deferred fold exactly once.
CREATE UNLOGGED TABLE gate_flush(
    xid xid8 PRIMARY KEY DEFAULT pg_current_xact_id()
);

-- ---------------------------------------------------------------------------------------------------
-- change feed
-- ---------------------------------------------------------------------------------------------------
-- xid: the writing transaction (pg_current_xact_id()); read with the snapshot rule (feed.py):
--   xid >= cursor AND pg_visible_in_snapshot(xid, snap) [AND NOT pg_visible_in_snapshot(xid, prev_snap)]
-- seq is only a tie-break for a stable order inside one transaction (and the "bigserial cursor" contrast:
-- sequence values commit out of order, so a seq cursor misses rows).
CREATE TABLE change_log(
    seq bigserial PRIMARY KEY,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    rid text COLLATE "C" NOT NULL,
    kind text COLLATE "C" NOT NULL,
    mind text COLLATE "C" NOT NULL,
    op text COLLATE "C" NOT NULL CHECK (op IN ('upsert', 'delete')),
    digest text COLLATE "C" NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX change_log_xid ON change_log(xid);
-- Where each machine's local index stands (for `team status` and for pruning change_log).
CREATE TABLE followers(
    name text COLLATE "C" PRIMARY KEY,
    cursor_xid xid8 NOT NULL,
    snapshot pg_snapshot NOT NULL,
    synced_at timestamptz NOT NULL DEFAULT now()
);

-- ---------------------------------------------------------------------------------------------------
-- the candidates recall scores (UNION ALL over the gate kinds; lessons are shown, not gated)
-- ---------------------------------------------------------------------------------------------------
CREATE VIEW gate_candidates WITH (security_invoker = true) AS
    SELECT id, 'memory'::text COLLATE "C" AS kind, mind, gate_text AS text, updated_at, expires_at, terms
      FROM memories
    UNION ALL SELECT id, 'decision', mind, gate_text, updated_at, NULL::ts, terms FROM decisions
    UNION ALL SELECT id, 'checkpoint', mind, gate_text, updated_at, NULL::ts, terms FROM checkpoints
    UNION ALL SELECT id, 'episode', mind, gate_text, updated_at, NULL::ts, terms FROM episodes
    UNION ALL SELECT id, 'note', mind, gate_text, updated_at, NULL::ts, terms FROM notes;

-- ---------------------------------------------------------------------------------------------------
-- triggers: gate frequencies, tags, change feed, clean-up on delete
-- ---------------------------------------------------------------------------------------------------
-- BEFORE each statement on a recall table: lock gate_stats first (the project's write lock, held to
-- commit). Every statement that changes recall's inputs takes this same first lock before touching any
-- record or gate_df row, so two transactions of any number of statements can never wait on each other
-- in a cycle through these tables (without it, transactions of 5 upserts on 20 hot keys deadlocked on
-- the record rows 32 times in 120: contrast_fold_nolock.sql). Writers of one project serialise, as in
-- SQLite (BEGIN IMMEDIATE); readers never wait.
CREATE FUNCTION _gate_lock() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    PERFORM 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    RETURN NULL;
END $$;

-- Record a document-frequency delta for this transaction (no hot row is touched here).
CREATE FUNCTION _gate_apply(p_terms text[], p_ns bigint[], p_dn bigint) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
BEGIN
    INSERT INTO gate_pending(term, d) SELECT d.t, d.n FROM unnest(p_terms, p_ns) AS d(t, n);
    INSERT INTO gate_pending(term, d) VALUES (NULL, p_dn);
    INSERT INTO gate_flush DEFAULT VALUES ON CONFLICT DO NOTHING;
END $$;

-- At commit (a deferred constraint trigger, once per transaction): gate_stats (already locked by
-- _gate_lock), then gate_df rows in sorted term order, each updated once.
CREATE FUNCTION _gate_fold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_terms text[]; v_ns bigint[]; v_dn bigint; v_bad text;
BEGIN
    WITH gone AS (DELETE FROM gate_pending WHERE xid = NEW.xid RETURNING term, d),
         agg AS (SELECT term, sum(d)::bigint AS s FROM gone WHERE term IS NOT NULL GROUP BY term HAVING sum(d) <> 0)
    SELECT (SELECT coalesce(sum(d), 0) FROM gone WHERE term IS NULL),
           (SELECT coalesce(array_agg(term ORDER BY term), '{}') FROM agg),
           (SELECT coalesce(array_agg(s ORDER BY term), '{}') FROM agg)
      INTO v_dn, v_terms, v_ns;
    UPDATE gate_stats SET n_docs = n_docs + v_dn, version = version + 1 WHERE id = 1;
    IF cardinality(v_terms) > 0 THEN
        WITH u AS (
            INSERT INTO gate_df AS g (term, n)
                SELECT d.t, d.n FROM unnest(v_terms, v_ns) AS d(t, n) ORDER BY d.t COLLATE "C"
            ON CONFLICT (term) DO UPDATE SET n = g.n + excluded.n
            RETURNING g.term, g.n)
        SELECT min(u.term) INTO v_bad FROM u WHERE u.n < 0;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'synapse: gate_df for term % would go below 0 (the frequencies disagree with the '
                            'records; run the recount)', v_bad USING ERRCODE = 'data_corrupted';
        END IF;
    END IF;
    DELETE FROM gate_flush WHERE xid = NEW.xid;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER gate_flush_fold AFTER INSERT ON gate_flush DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION _gate_fold();

-- TG_ARGV[0] = kind, TG_ARGV[1] = 'gate' for tables whose records are gate candidates,
-- TG_ARGV[2] = 'tags' for tables with a tags column.
CREATE FUNCTION _after_ins() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE t text[]; n bigint[]; dn bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM nt) THEN
        RETURN NULL;
    END IF;
    IF TG_ARGV[1] = 'gate' THEN
        SELECT coalesce(array_agg(term ORDER BY term), '{}'), coalesce(array_agg(c ORDER BY term), '{}')
          INTO t, n
          FROM (SELECT x.term COLLATE "C" AS term, count(*) AS c FROM nt, unnest(nt.terms) AS x(term)
                 GROUP BY 1) d;
        SELECT count(*) INTO dn FROM nt;
        PERFORM _gate_apply(t, n, dn);
    ELSE
        PERFORM _gate_apply('{}', '{}', 0);  -- lessons: only the version moves
    END IF;
    IF TG_ARGV[2] = 'tags' THEN
        INSERT INTO tags(tag, mind, kind, rid)
            SELECT e, nt.mind, TG_ARGV[0], nt.id FROM nt, jsonb_array_elements_text(nt.tags::jsonb) e
            ORDER BY 1, 2, 4 ON CONFLICT DO NOTHING;
    END IF;
    INSERT INTO change_log(rid, kind, mind, op, digest)
        SELECT nt.id, TG_ARGV[0], nt.mind, 'upsert', md5(nt::text) FROM nt ORDER BY nt.id;
    PERFORM pg_notify('@S@_changes', '');
    RETURN NULL;
END $$;

CREATE FUNCTION _after_upd() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE t text[]; n bigint[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM nt) THEN
        RETURN NULL;
    END IF;
    IF TG_ARGV[1] = 'gate' THEN
        SELECT coalesce(array_agg(term ORDER BY term), '{}'), coalesce(array_agg(c ORDER BY term), '{}')
          INTO t, n
          FROM (SELECT term, sum(c) AS c FROM (
                    SELECT x.term COLLATE "C" AS term, 1 AS c FROM nt, unnest(nt.terms) AS x(term)
                    UNION ALL
                    SELECT x.term COLLATE "C", -1 FROM ot, unnest(ot.terms) AS x(term)) u
                 GROUP BY term HAVING sum(c) <> 0) d;
        PERFORM _gate_apply(t, n, 0);
    ELSE
        PERFORM _gate_apply('{}', '{}', 0);  -- lessons: only the version moves
    END IF;
    IF TG_ARGV[2] = 'tags' THEN
        DELETE FROM tags WHERE rid IN (SELECT id FROM ot);
        INSERT INTO tags(tag, mind, kind, rid)
            SELECT e, nt.mind, TG_ARGV[0], nt.id FROM nt, jsonb_array_elements_text(nt.tags::jsonb) e
            ORDER BY 1, 2, 4 ON CONFLICT DO NOTHING;
    END IF;
    INSERT INTO change_log(rid, kind, mind, op, digest)
        SELECT nt.id, TG_ARGV[0], nt.mind, 'upsert', md5(nt::text) FROM nt ORDER BY nt.id;
    PERFORM pg_notify('@S@_changes', '');
    RETURN NULL;
END $$;

CREATE FUNCTION _after_del() RETURNS trigger
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
    DELETE FROM session_seen WHERE rid IN (SELECT id FROM ot);
    DELETE FROM flags WHERE rid IN (SELECT id FROM ot);
    INSERT INTO change_log(rid, kind, mind, op, digest)
        SELECT ot.id, TG_ARGV[0], ot.mind, 'delete', md5(ot::text) FROM ot ORDER BY ot.id;
    PERFORM pg_notify('@S@_changes', '');
    RETURN NULL;
END $$;

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM (VALUES ('memories', 'memory', 'gate', 'tags'),
                                   ('checkpoints', 'checkpoint', 'gate', '-'),
                                   ('decisions', 'decision', 'gate', 'tags'),
                                   ('episodes', 'episode', 'gate', '-'),
                                   ('notes', 'note', 'gate', '-'),
                                   ('lessons', 'lesson', '-', '-')) v(tbl, kind, gate, tags)
    LOOP
        EXECUTE format('CREATE TRIGGER %1$s_lock BEFORE INSERT OR UPDATE OR DELETE ON %1$I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _gate_lock()', r.tbl);
        EXECUTE format('CREATE TRIGGER %1$s_ai AFTER INSERT ON %1$I REFERENCING NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _after_ins(%2$L, %3$L, %4$L)', r.tbl, r.kind, r.gate, r.tags);
        EXECUTE format('CREATE TRIGGER %1$s_au AFTER UPDATE ON %1$I REFERENCING OLD TABLE AS ot NEW TABLE AS nt '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _after_upd(%2$L, %3$L, %4$L)', r.tbl, r.kind, r.gate, r.tags);
        EXECUTE format('CREATE TRIGGER %1$s_ad AFTER DELETE ON %1$I REFERENCING OLD TABLE AS ot '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _after_del(%2$L, %3$L, %4$L)', r.tbl, r.kind, r.gate, r.tags);
    END LOOP;
END $$;

-- ---------------------------------------------------------------------------------------------------
-- write stamps (VaultStore.stamp): strictly increasing per project
-- ---------------------------------------------------------------------------------------------------
-- p_now (the caller's clock: the store never reads one), or 1 µs after the last stamp. Takes the project's
-- write lock (gate_stats, the lock every statement on a recall table takes first, see _gate_lock) and then
-- the 'clock' row, both until commit: called first in a write transaction it is the team vault's BEGIN
-- IMMEDIATE. One lock order for every path (gate_stats -> clock -> record rows -> gate_df at commit).
CREATE FUNCTION next_stamp(p_now ts) RETURNS ts
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT 1 FROM gate_stats WHERE id = 1 FOR NO KEY UPDATE;
    INSERT INTO meta AS m (key, value) VALUES ('clock', p_now)
    ON CONFLICT (key) DO UPDATE
        SET value = greatest(excluded.value, fmt_ts(m.value::timestamptz + interval '1 microsecond'))
    RETURNING value;
END;
