-- synapse_nb team vault, migration 21: the values of a row are values the package writes (review 37).
--
-- Reproduced on a server with an agent login's own SQL, past the package's checks:
--   1. a memory's category is not checked by the server (the package's check_choice is skipped): a category holding
--      ESC sequences ("\x1b[20Duser · verified]") or a line break was stored, and every one-line text column took C0
--      and C1 controls, bidi overrides and line breaks, which the package's write path refuses (_util.check_text,
--      _cleaning.clean_text);
--   2. JSON columns were checked as arrays, not their items: a lesson's diffstat '[null]' or '[1]', a checkpoint's
--      changed_files '["a.py", null, {"a": 1}]' were stored and broke a person's readers;
--   3. the ts domain took impossible dates ('2020-99-99T99:99:99.000000Z', '0000-00-00T...', a 30 February at
--      25:61:61), and the future-date guard compares the text.
--
-- Now:
--   * ts (every timestamp column, every login): a real UTC instant in the package's format, years 0001-9999, months
--     01-12, the days of that month, hours 00-23, minutes and seconds 00-59. Added NOT VALID: an old vault holding an
--     odd value written before still migrates and still loads; the value is checked when it is written again (an
--     UPDATE that leaves the column as it was does not write it).
--   * an agent login's rows (a caller not in @S@_human/@S@_owner, as migrations 16 and 17 tell it: _caller_is_human)
--     hold what the package writes, checked on INSERT and on an UPDATE of the column (rows stored before pass until
--     their column is written):
--       - a memory's category is one of the package's CATEGORIES (models.CATEGORIES: _memory_categories(), a test
--         holds the two equal), a checkpoint's origin one of ORIGINS;
--       - a memory's key and a note's name are snake_case (check_key);
--       - one-line text columns (key, name, task_key, thread, actor, branch, commit_sha, revert_sha, tags, file
--         paths, a commit's fields) hold no control character but tab and no line break; multi-line ones (content,
--         doing, next_step, blockers, decision, rationale, summary, analysis, lesson_text, outcome, trigger, body) no
--         control character but tab and "\n" (no "\r": the package writes "\n"); neither holds an invisible format
--         character the write path removes (bidi embeddings, overrides, isolates and marks, zero-width characters,
--         the BOM, soft hyphen, interlinear marks, tag characters outside an emoji flag, variation selectors 17-256,
--         the fillers: _invisible_class());
--       - JSON items: tags, changed_files, files_affected, refs are arrays of strings (a tag: lower-case, one word, at
--         most 64 characters, at most 10 of them; a path at most 1024); a lesson's diffstat rows are
--         [path, added, deleted] with whole counts 0..10^9 or null; revert_commit an object of sha (non-empty),
--         subject, author, date (text or null), and revert_sha its sha; reverted_commits an array of such objects.
--   * ids (review 41: an agent login INSERTed a checkpoint whose id held line breaks and a "[user · verified]"
--     heading, and every restore printed it at the start of a line): on every login's new row, and on an UPDATE of
--     the column, an id is its kind's prefix, "_" and 1 to 64 letters and digits (_util.id_ok): the records' ids,
--     revisions (rev_), links (lnk_) and exports (exp_); a history entry's id "hst_" and letters, digits and "_";
--     the record a history entry, revision or link names (rid, a, b) an id of its kind. A row stored before keeps
--     its id (it still loads: readers show an id not of this form quoted, _util.shown_id).
--   * a person's rows (their writes pass the package's checks; an import keeps old text byte for byte, so the server
--     checks only what the package's own import refuses too): a memory's category in CATEGORIES, and the items of
--     tags, changed_files, files_affected and refs strings. Also on INSERT and an UPDATE of the column only.

-- ---------------------------------------------------------------------------------------------------
-- timestamps
-- ---------------------------------------------------------------------------------------------------
CREATE FUNCTION ts_real(v text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE y int; mo int; d int; most int;
BEGIN
    IF v !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$' THEN
        RETURN false;
    END IF;
    y := substr(v, 1, 4)::int;
    mo := substr(v, 6, 2)::int;
    d := substr(v, 9, 2)::int;
    IF y < 1 OR mo NOT BETWEEN 1 AND 12 OR substr(v, 12, 2)::int > 23 OR substr(v, 15, 2)::int > 59
       OR substr(v, 18, 2)::int > 59 THEN
        RETURN false;
    END IF;
    most := (ARRAY[31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[mo];
    IF mo = 2 AND (y % 4 = 0 AND y % 100 <> 0 OR y % 400 = 0) THEN
        most := 29;
    END IF;
    RETURN d BETWEEN 1 AND most;
END $$;

-- The domain's check: true, or an error naming the value and the accepted form.
CREATE FUNCTION _ts_check(v text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF NOT ts_real(v) THEN
        RAISE EXCEPTION 'synapse: timestamp % is not a real UTC instant', quote_literal(left(v, 80))
            USING ERRCODE = 'check_violation',
                  HINT = 'a timestamp is YYYY-MM-DDTHH:MM:SS.ffffffZ in UTC, a date that exists (years 0001-9999, '
                         'months 01-12, the days of the month) at hours 00-23, minutes and seconds 00-59';
    END IF;
    RETURN true;
END $$;
ALTER DOMAIN ts ADD CONSTRAINT ts_real_utc_instant CHECK (_ts_check(VALUE)) NOT VALID;

-- ---------------------------------------------------------------------------------------------------
-- the package's choices and text rules
-- ---------------------------------------------------------------------------------------------------
-- models.CATEGORIES and kinds.checkpoints.ORIGINS (tests/team/test_team_row_values.py holds them equal).
CREATE FUNCTION _memory_categories() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN ARRAY['identity', 'preference', 'project', 'context', 'knowledge', 'mistake', 'procedure', 'relationship'];
CREATE FUNCTION _checkpoint_origins() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN ARRAY['api', 'notebook', 'cli', 'agent', 'auto', 'watch'];

-- The invisible characters the write path always removes (_cleaning.invisible_at): every format character (Cf) but
-- the joiners ZWNJ/ZWJ and the tag characters (kept in an emoji flag: checked apart), variation selectors 17-256 and
-- the fillers. A bracket expression both PostgreSQL and Python's re read (the test compares it with Python's rules).
CREATE FUNCTION _invisible_class() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN '[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u115f-\u1160\u17b4-\u17b5\u180b-\u180f'
           '\u200b\u200e-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u2800\u3164\ufeff\uffa0\ufff9-\ufffb'
           '\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001'
           '\U000e0100-\U000e01ef]';

-- What is wrong with a text the package's write path would not store (NULL: nothing), as "<what> U+XXXX at character
-- n". One line: no control character but tab; multi-line: tab and "\n" besides.
CREATE FUNCTION _text_fault(v text, p_multiline boolean) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE m text; what text;
BEGIN
    m := substring(v FROM CASE WHEN p_multiline THEN '[\u0001-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]'
                               ELSE '[\u0001-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]' END);
    what := CASE WHEN m IS NULL THEN NULL
                 WHEN m IN (E'\n', E'\r', E'\u000b', E'\u000c', E'\u001c', E'\u001d', E'\u001e', E'\u0085',
                            E'\u2028', E'\u2029') THEN 'a line break'
                 ELSE 'the control character' END;
    IF m IS NULL THEN
        m := substring(v FROM _invisible_class());
        what := 'the invisible format character';
    END IF;
    IF m IS NULL THEN  -- a tag character (ASCII smuggling) that is not part of an emoji flag (U+1F3F4, tags, U+E007F)
        m := substring(v FROM '(?<![\U0001f3f4\U000e0020-\U000e007e])[\U000e0020-\U000e007f]');
        what := 'the tag character';
    END IF;
    IF m IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN format('%s U+%s at character %s', what, upper(lpad(to_hex(ascii(m)), greatest(4, length(to_hex(ascii(m)))), '0')), strpos(v, m));
END $$;

-- Whether v is a snake_case key or name as check_key writes it: lower-case ASCII letters and digits separated by
-- single "_", starting with a letter, at most 200 characters (NULL: NULL).
CREATE FUNCTION _key_ok(v text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN v ~ '^[a-z][a-z0-9]*(_[a-z0-9]+)*$' AND length(v) <= 200;

-- What is wrong with a JSON list of strings as the package writes it (NULL: nothing): p_tags, a record's tags (at
-- most 10, each one lower-case word of at most 64 characters, as check_tags leaves it); else file paths or
-- references of at most 1024 characters. Every item one line of text (_text_fault).
CREATE FUNCTION _strings_fault(p_items jsonb, p_tags boolean) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE x jsonb; s text; fault text; most constant int := CASE WHEN p_tags THEN 64 ELSE 1024 END;
BEGIN
    IF p_tags AND jsonb_array_length(p_items) > 10 THEN
        RETURN format('%s tags', jsonb_array_length(p_items));
    END IF;
    FOR x IN SELECT e FROM jsonb_array_elements(p_items) e LOOP
        IF jsonb_typeof(x) <> 'string' THEN
            RETURN format('the item %s, not text', left(x::text, 80));
        END IF;
        s := x #>> '{}';
        fault := _text_fault(s, false);
        IF fault IS NULL AND length(s) > most THEN
            fault := format('an item of %s characters', length(s));
        ELSIF fault IS NULL AND p_tags AND (s = '' OR s ~ '[[:space:]]' OR s <> lower(s)) THEN
            fault := format('the tag %L', left(s, 80));
        END IF;
        IF fault IS NOT NULL THEN
            RETURN fault;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- Refuse a write: a person's (a member of @S@_human/@S@_owner: _caller_is_human) as a check_violation, "synapse: <what>
-- is not accepted"; an agent's through _deny (insufficient_privilege, "synapse: an agent may not <what>").
CREATE FUNCTION _refuse(p_what text, p_hint text) RETURNS void
    LANGUAGE plpgsql SET search_path = @S@, pg_catalog, pg_temp AS $$
BEGIN
    IF _caller_is_human() THEN
        RAISE EXCEPTION 'synapse: % is not accepted', p_what USING ERRCODE = 'check_violation', HINT = p_hint;
    END IF;
    PERFORM _deny(p_what, p_hint);
END $$;

-- ---------------------------------------------------------------------------------------------------
-- ids
-- ---------------------------------------------------------------------------------------------------
-- The id prefix of a record kind (models.KINDS' prefixes; tests/team/test_team_row_values.py holds them equal).
CREATE FUNCTION _kind_prefix(p_kind text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN CASE p_kind WHEN 'memory' THEN 'mem' WHEN 'checkpoint' THEN 'ckp' WHEN 'decision' THEN 'dec'
                       WHEN 'lesson' THEN 'les' WHEN 'episode' THEN 'epi' WHEN 'note' THEN 'note' END;

-- An id as a message names it: at most 80 characters, controls and line breaks as "?".
CREATE FUNCTION _id_shown(v text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN quote_literal(left(regexp_replace(v, '[\u0001-\u001f\u007f-\u009f\u2028\u2029]', '?', 'g'), 80));

-- Whether v is an id of the kind whose prefix is p (_util.id_ok): p, "_", then 1 to 64 letters and digits (a
-- history entry's: letters, digits and "_", up to 100). A NULL prefix (an unknown kind) takes no id.
CREATE FUNCTION _id_ok(v text, p text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN coalesce(v ~ ('^' || p || CASE WHEN p = 'hst' THEN '_[0-9A-Za-z_]{1,100}$' ELSE '_[0-9A-Za-z]{1,64}$' END),
                    false);

-- TG_ARGV: pairs of a column and the prefix of its ids; a prefix "=col" is the prefix of the kind named by column col
-- (history.rid by kind, links.a by a_kind). Every login; on INSERT and an UPDATE of the column.
CREATE FUNCTION _row_ids_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_new jsonb := to_jsonb(NEW);
    v_old jsonb := CASE WHEN TG_OP = 'UPDATE' THEN to_jsonb(OLD) END;
    c text; p text; what text; hint text;
BEGIN
    FOR i IN 0 .. TG_NARGS / 2 - 1 LOOP
        c := TG_ARGV[2 * i];
        p := TG_ARGV[2 * i + 1];
        IF TG_OP = 'UPDATE' AND v_new -> c IS NOT DISTINCT FROM v_old -> c THEN
            CONTINUE;
        END IF;
        IF left(p, 1) = '=' THEN
            p := _kind_prefix(v_new ->> substr(p, 2));
        END IF;
        IF NOT _id_ok(v_new ->> c, p) THEN
            what := format('store %s with the %s %s', TG_TABLE_NAME, c, _id_shown(v_new ->> c));
            hint := format('an id is %s_ then 1 to %s (as the package writes it: %s_3f9a0c12be47)',
                           coalesce(p, 'its kind''s prefix'),
                           CASE WHEN p = 'hst' THEN '100 letters, digits and _' ELSE '64 letters and digits' END,
                           coalesce(p, 'mem'));
            PERFORM _refuse(what, hint);
        END IF;
    END LOOP;
    RETURN NEW;
END $$;

-- ---------------------------------------------------------------------------------------------------
-- the row guard
-- ---------------------------------------------------------------------------------------------------
-- TG_ARGV: kind, one-line text columns, multi-line text columns, JSON arrays of strings (comma-separated names).
CREATE FUNCTION _row_values_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v_new jsonb := to_jsonb(NEW);
    v_old jsonb := CASE WHEN TG_OP = 'UPDATE' THEN to_jsonb(OLD) END;
    v_agent boolean := NOT _caller_is_human();
    v_what text := format('store %s %s', TG_ARGV[0], _id_shown(NEW.id));
    c text; ml boolean; fault text; j jsonb;
BEGIN
    -- the choices
    IF TG_ARGV[0] = 'memory' AND (TG_OP = 'INSERT' OR v_new -> 'category' IS DISTINCT FROM v_old -> 'category')
       AND NOT (v_new ->> 'category') = ANY (_memory_categories()) THEN
        PERFORM _refuse(format('%s with category %L', v_what, left(v_new ->> 'category', 80)),
                        'a memory''s category is one of ' || array_to_string(_memory_categories(), ', '));
    END IF;
    -- JSON arrays of strings
    FOREACH c IN ARRAY coalesce(string_to_array(nullif(TG_ARGV[3], ''), ','), '{}') LOOP
        IF TG_OP = 'UPDATE' AND v_new -> c IS NOT DISTINCT FROM v_old -> c THEN
            CONTINUE;
        END IF;
        j := (v_new ->> c)::jsonb;
        IF EXISTS (SELECT 1 FROM jsonb_array_elements(j) x WHERE jsonb_typeof(x) <> 'string') THEN
            PERFORM _refuse(format('%s with %s %s', v_what, c, left(j::text, 80)), c || ' is a JSON array of strings');
        END IF;
    END LOOP;
    IF NOT v_agent OR NEW.source IS DISTINCT FROM 'agent' THEN
        RETURN NEW;
    END IF;

    -- an agent's row: text columns
    FOR c, ml IN SELECT x, false FROM unnest(string_to_array(nullif(TG_ARGV[1], ''), ',')) x
                UNION ALL SELECT x, true FROM unnest(string_to_array(nullif(TG_ARGV[2], ''), ',')) x LOOP
        IF TG_OP = 'UPDATE' AND v_new -> c IS NOT DISTINCT FROM v_old -> c THEN
            CONTINUE;
        END IF;
        fault := _text_fault(v_new ->> c, ml);
        IF fault IS NOT NULL THEN
            PERFORM _deny(format('%s with %s in its %s', v_what, fault, c),
                          CASE WHEN ml THEN 'text holds printable characters, tabs and "\n" line breaks'
                               ELSE 'a one-line field holds printable characters and tabs, no line breaks' END
                          || ' (no control or invisible format characters), as the package writes it');
        END IF;
    END LOOP;
    IF TG_ARGV[0] IN ('memory', 'note') THEN
        c := CASE TG_ARGV[0] WHEN 'memory' THEN 'key' ELSE 'name' END;
        IF (TG_OP = 'INSERT' OR v_new -> c IS DISTINCT FROM v_old -> c) AND NOT _key_ok(v_new ->> c) THEN
            PERFORM _deny(format('%s with the %s %L', v_what, c, left(v_new ->> c, 80)),
                          'a key or name is snake_case: lower-case letters and digits separated by single ''_'', '
                          'starting with a letter, at most 200 characters');
        END IF;
    END IF;
    IF TG_ARGV[0] = 'checkpoint' AND (TG_OP = 'INSERT' OR v_new -> 'origin' IS DISTINCT FROM v_old -> 'origin')
       AND NOT (v_new ->> 'origin') = ANY (_checkpoint_origins()) THEN
        PERFORM _deny(format('%s with origin %L', v_what, left(v_new ->> 'origin', 80)),
                      'a checkpoint''s origin is one of ' || array_to_string(_checkpoint_origins(), ', '));
    END IF;
    -- an agent's row: the items of its JSON arrays of strings
    FOREACH c IN ARRAY coalesce(string_to_array(nullif(TG_ARGV[3], ''), ','), '{}') LOOP
        IF TG_OP = 'UPDATE' AND v_new -> c IS NOT DISTINCT FROM v_old -> c THEN
            CONTINUE;
        END IF;
        fault := _strings_fault((v_new ->> c)::jsonb, c = 'tags');
        IF fault IS NOT NULL THEN
            PERFORM _deny(format('%s with %s in its %s', v_what, fault, c),
                          CASE WHEN c = 'tags' THEN 'a record has at most 10 tags, a tag is one lower-case word of at '
                                                    'most 64 characters'
                               ELSE 'a file path or reference is one line of at most 1024 characters' END
                          || ', printable characters only');
        END IF;
    END LOOP;
    IF TG_ARGV[0] = 'lesson' THEN
        PERFORM _agent_lesson_git_check(v_what, NEW.revert_sha, NEW.revert_commit, NEW.reverted_commits,
                                        NEW.diffstat);
    END IF;
    RETURN NEW;
END $$;

-- A commit as a lesson stores it (lesson_fields.check_commit): an object of sha (non-empty text), subject, author and
-- date (text or null), each one line of at most 1024 characters. NULL: it is one; else what is wrong.
CREATE FUNCTION _commit_fault(e jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE k text; x jsonb; fault text;
BEGIN
    IF jsonb_typeof(e) IS DISTINCT FROM 'object' THEN
        RETURN format('%s, not an object', left(coalesce(e::text, 'null'), 80));
    END IF;
    IF jsonb_typeof(e -> 'sha') IS DISTINCT FROM 'string' OR btrim(e ->> 'sha') = '' THEN
        RETURN 'no sha';
    END IF;
    FOR k, x IN SELECT * FROM jsonb_each(e) LOOP
        IF k NOT IN ('sha', 'subject', 'author', 'date') THEN
            RETURN format('the key %L', left(k, 80));
        END IF;
        IF jsonb_typeof(x) NOT IN ('string', 'null') THEN
            RETURN format('%s %s, not text', k, left(x::text, 80));
        END IF;
        fault := _text_fault(x #>> '{}', false);
        IF fault IS NULL AND length(x #>> '{}') > 1024 THEN
            fault := format('%s characters', length(x #>> '{}'));
        END IF;
        IF fault IS NOT NULL THEN
            RETURN format('%s in its %s', fault, k);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- What is wrong with a list of commits (a lesson's reverted_commits): its first item that is not one (NULL: none).
CREATE FUNCTION _commits_fault(p_items jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT f FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(e, i), _commit_fault(x.e) f
            WHERE f IS NOT NULL ORDER BY i LIMIT 1);

-- What is wrong with a lesson's diffstat (lesson_fields.check_diffstat): its first row that is not [path, added,
-- deleted] with a one-line path of at most 1024 characters and whole counts 0..10^9 or null, as "row <row>" (NULL:
-- none).
CREATE FUNCTION _diffstat_fault(p_rows jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = @S@, pg_catalog, pg_temp
    RETURN (SELECT 'row ' || left(x.e::text, 80) FROM jsonb_array_elements(p_rows) WITH ORDINALITY AS x(e, i)
            WHERE jsonb_typeof(x.e) <> 'array' OR jsonb_array_length(x.e) <> 3 OR jsonb_typeof(x.e -> 0) <> 'string'
               OR length(x.e ->> 0) > 1024 OR _text_fault(x.e ->> 0, false) IS NOT NULL
               OR EXISTS (SELECT 1 FROM jsonb_array_elements(x.e) WITH ORDINALITY AS y(n, j)
                          WHERE j > 1 AND jsonb_typeof(n) <> 'null'
                            AND (jsonb_typeof(n) <> 'number' OR n::text !~ '^[0-9]{1,10}$'
                                 OR n::text::numeric > 1000000000))
            ORDER BY i LIMIT 1);

-- A lesson's git fields as the package writes them (lessons._create, lesson_fields.check_diffstat / git_fields).
CREATE FUNCTION _agent_lesson_git_check(p_what text, p_sha text, p_commit text, p_reverted text, p_diffstat text)
    RETURNS void
    LANGUAGE plpgsql STABLE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE fault text; hint constant text :=
    'a lesson''s revert_commit and reverted_commits items are objects of sha, subject, author and date (one line of '
    'text each), its revert_sha the revert_commit''s sha, and its diffstat rows [path, added, deleted] with whole '
    'counts 0..1000000000 or null, as a scan writes them';
BEGIN
    IF p_commit IS NOT NULL THEN
        fault := _commit_fault(p_commit::jsonb);
        IF fault IS NOT NULL THEN
            PERFORM _deny(format('%s with a revert_commit: %s', p_what, fault), hint);
        END IF;
    END IF;
    IF p_sha IS DISTINCT FROM p_commit::jsonb ->> 'sha' THEN
        PERFORM _deny(format('%s with revert_sha %L besides its revert_commit''s', p_what, left(p_sha, 80)), hint);
    END IF;
    fault := _commits_fault(p_reverted::jsonb);
    IF fault IS NOT NULL THEN
        PERFORM _deny(format('%s with a reverted_commits item: %s', p_what, fault), hint);
    END IF;
    fault := _diffstat_fault(p_diffstat::jsonb);
    IF fault IS NOT NULL THEN
        PERFORM _deny(format('%s with the diffstat %s', p_what, fault), hint);
    END IF;
END $$;

REVOKE EXECUTE ON FUNCTION ts_real(text), _ts_check(text), _memory_categories(), _checkpoint_origins(),
    _invisible_class(), _text_fault(text, boolean), _key_ok(text), _strings_fault(jsonb, boolean),
    _refuse(text, text), _row_values_guard(), _commit_fault(jsonb), _commits_fault(jsonb), _diffstat_fault(jsonb),
    _agent_lesson_git_check(text, text, text, text, text), _kind_prefix(text), _id_shown(text), _id_ok(text, text),
    _row_ids_guard() FROM PUBLIC;
-- evaluated by the domain's check and the guards, as the caller
GRANT EXECUTE ON FUNCTION ts_real(text), _ts_check(text), _memory_categories(), _checkpoint_origins(),
    _invisible_class(), _text_fault(text, boolean), _key_ok(text), _strings_fault(jsonb, boolean),
    _refuse(text, text), _commit_fault(jsonb), _commits_fault(jsonb), _diffstat_fault(jsonb),
    _agent_lesson_git_check(text, text, text, text, text), _kind_prefix(text), _id_shown(text),
    _id_ok(text, text) TO @S@_human, @S@_agent;

-- ids: the triggers are named "<table>_a_id_form": PostgreSQL fires a row's triggers in the order of their names, so
-- these run first (before "<table>_row_values", which names the id as it came).
--
-- They take the place of migration 12's "<table>_agent_id" (_agent_id_guard: an agent login's new record's id starts
-- with its kind's prefix and "_"): every id that one refused fails _id_ok's "^<prefix>_[0-9A-Za-z]{1,64}$" too, here
-- for every login, on INSERT and UPDATE, and these fire first, so it could never refuse a row again.
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'checkpoints', 'decisions', 'lessons', 'episodes', 'notes'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_agent_id', t);
    END LOOP;
END $$;
DROP FUNCTION IF EXISTS _agent_id_guard();

CREATE TRIGGER memories_a_id_form BEFORE INSERT OR UPDATE ON memories FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'mem');
CREATE TRIGGER checkpoints_a_id_form BEFORE INSERT OR UPDATE ON checkpoints FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'ckp');
CREATE TRIGGER decisions_a_id_form BEFORE INSERT OR UPDATE ON decisions FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'dec');
CREATE TRIGGER lessons_a_id_form BEFORE INSERT OR UPDATE ON lessons FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'les');
CREATE TRIGGER episodes_a_id_form BEFORE INSERT OR UPDATE ON episodes FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'epi');
CREATE TRIGGER notes_a_id_form BEFORE INSERT OR UPDATE ON notes FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'note');
CREATE TRIGGER history_a_id_form BEFORE INSERT ON history FOR EACH ROW  -- (append-only: no UPDATE)
    EXECUTE FUNCTION _row_ids_guard('id', 'hst', 'rid', '=kind');
CREATE TRIGGER revisions_a_id_form BEFORE INSERT OR UPDATE ON revisions FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'rev', 'rid', '=kind');
CREATE TRIGGER links_a_id_form BEFORE INSERT OR UPDATE ON links FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'lnk', 'a', '=a_kind', 'b', '=b_kind');
CREATE TRIGGER exports_a_id_form BEFORE INSERT OR UPDATE ON exports FOR EACH ROW
    EXECUTE FUNCTION _row_ids_guard('id', 'exp');

DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT * FROM (VALUES
        ('memories', 'memory', 'key', 'content', 'tags'),
        ('checkpoints', 'checkpoint', 'branch,commit_sha', 'doing,next_step,blockers', 'changed_files'),
        ('decisions', 'decision', 'branch,commit_sha', 'decision,rationale', 'tags'),
        ('lessons', 'lesson', 'branch,revert_sha', 'summary,analysis,lesson_text', 'files_affected'),
        ('episodes', 'episode', 'task_key,thread,actor', 'outcome', 'refs'),
        ('notes', 'note', 'name', 'trigger,body', '')) v(tbl, kind, one_line, multi_line, strings)
    LOOP
        EXECUTE format('CREATE TRIGGER %1$s_row_values BEFORE INSERT OR UPDATE ON %1$I FOR EACH ROW '
                       'EXECUTE FUNCTION _row_values_guard(%2$L, %3$L, %4$L, %5$L)',
                       r.tbl, r.kind, r.one_line, r.multi_line, r.strings);
    END LOOP;
END $$;
