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
--         holds the two equal), a checkpoint's origin one of AGENT_ORIGINS (agent, auto: the package stores any
--         other an agent names as "agent");
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
-- models.AGENT_ORIGINS: the origins of an agent's checkpoint (the test holds them equal too).
CREATE FUNCTION _agent_checkpoint_origins() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN ARRAY['agent', 'auto'];

-- The invisible characters the write path always removes (_cleaning.invisible_at): every format character (Cf) but
-- the joiners ZWNJ/ZWJ and the tag characters (kept in an emoji flag: checked apart), variation selectors 17-256 and
-- the fillers. A bracket expression both PostgreSQL and Python's re read (the test compares it with Python's rules).
CREATE FUNCTION _invisible_class() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN '[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u115f-\u1160\u17b4-\u17b5\u180b-\u180f'
           '\u200b\u200e-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u2800\u3164\ufeff\uffa0\ufff9-\ufffb'
           '\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001'
           '\U000e0100-\U000e01ef]';

-- The characters str.lower changes (Python 3.11's Unicode 14, the oldest Python the package runs on; a newer one
-- lowers more, never fewer): a tag holding one is not one check_tags leaves. An explicit list, not lower(): lower()
-- follows the database's LC_CTYPE (ASCII only under "C", the C library's tables under a *.UTF-8 locale), so the same
-- tag was refused on one server and stored on another (tests/team/test_team_locale.py compares the list with Python).
CREATE FUNCTION _upper_class() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN '[\u0041-\u005a\u00c0-\u00d6\u00d8-\u00de\u0100\u0102\u0104\u0106\u0108\u010a\u010c\u010e\u0110\u0112'
           '\u0114\u0116\u0118\u011a\u011c\u011e\u0120\u0122\u0124\u0126\u0128\u012a\u012c\u012e\u0130\u0132\u0134'
           '\u0136\u0139\u013b\u013d\u013f\u0141\u0143\u0145\u0147\u014a\u014c\u014e\u0150\u0152\u0154\u0156\u0158'
           '\u015a\u015c\u015e\u0160\u0162\u0164\u0166\u0168\u016a\u016c\u016e\u0170\u0172\u0174\u0176\u0178\u0179'
           '\u017b\u017d\u0181\u0182\u0184\u0186\u0187\u0189-\u018b\u018e-\u0191\u0193\u0194\u0196-\u0198\u019c'
           '\u019d\u019f\u01a0\u01a2\u01a4\u01a6\u01a7\u01a9\u01ac\u01ae\u01af\u01b1-\u01b3\u01b5\u01b7\u01b8\u01bc'
           '\u01c4\u01c5\u01c7\u01c8\u01ca\u01cb\u01cd\u01cf\u01d1\u01d3\u01d5\u01d7\u01d9\u01db\u01de\u01e0\u01e2'
           '\u01e4\u01e6\u01e8\u01ea\u01ec\u01ee\u01f1\u01f2\u01f4\u01f6-\u01f8\u01fa\u01fc\u01fe\u0200\u0202\u0204'
           '\u0206\u0208\u020a\u020c\u020e\u0210\u0212\u0214\u0216\u0218\u021a\u021c\u021e\u0220\u0222\u0224\u0226'
           '\u0228\u022a\u022c\u022e\u0230\u0232\u023a\u023b\u023d\u023e\u0241\u0243-\u0246\u0248\u024a\u024c\u024e'
           '\u0370\u0372\u0376\u037f\u0386\u0388-\u038a\u038c\u038e\u038f\u0391-\u03a1\u03a3-\u03ab\u03cf\u03d8'
           '\u03da\u03dc\u03de\u03e0\u03e2\u03e4\u03e6\u03e8\u03ea\u03ec\u03ee\u03f4\u03f7\u03f9\u03fa\u03fd-\u042f'
           '\u0460\u0462\u0464\u0466\u0468\u046a\u046c\u046e\u0470\u0472\u0474\u0476\u0478\u047a\u047c\u047e\u0480'
           '\u048a\u048c\u048e\u0490\u0492\u0494\u0496\u0498\u049a\u049c\u049e\u04a0\u04a2\u04a4\u04a6\u04a8\u04aa'
           '\u04ac\u04ae\u04b0\u04b2\u04b4\u04b6\u04b8\u04ba\u04bc\u04be\u04c0\u04c1\u04c3\u04c5\u04c7\u04c9\u04cb'
           '\u04cd\u04d0\u04d2\u04d4\u04d6\u04d8\u04da\u04dc\u04de\u04e0\u04e2\u04e4\u04e6\u04e8\u04ea\u04ec\u04ee'
           '\u04f0\u04f2\u04f4\u04f6\u04f8\u04fa\u04fc\u04fe\u0500\u0502\u0504\u0506\u0508\u050a\u050c\u050e\u0510'
           '\u0512\u0514\u0516\u0518\u051a\u051c\u051e\u0520\u0522\u0524\u0526\u0528\u052a\u052c\u052e\u0531-\u0556'
           '\u10a0-\u10c5\u10c7\u10cd\u13a0-\u13f5\u1c90-\u1cba\u1cbd-\u1cbf\u1e00\u1e02\u1e04\u1e06\u1e08\u1e0a'
           '\u1e0c\u1e0e\u1e10\u1e12\u1e14\u1e16\u1e18\u1e1a\u1e1c\u1e1e\u1e20\u1e22\u1e24\u1e26\u1e28\u1e2a\u1e2c'
           '\u1e2e\u1e30\u1e32\u1e34\u1e36\u1e38\u1e3a\u1e3c\u1e3e\u1e40\u1e42\u1e44\u1e46\u1e48\u1e4a\u1e4c\u1e4e'
           '\u1e50\u1e52\u1e54\u1e56\u1e58\u1e5a\u1e5c\u1e5e\u1e60\u1e62\u1e64\u1e66\u1e68\u1e6a\u1e6c\u1e6e\u1e70'
           '\u1e72\u1e74\u1e76\u1e78\u1e7a\u1e7c\u1e7e\u1e80\u1e82\u1e84\u1e86\u1e88\u1e8a\u1e8c\u1e8e\u1e90\u1e92'
           '\u1e94\u1e9e\u1ea0\u1ea2\u1ea4\u1ea6\u1ea8\u1eaa\u1eac\u1eae\u1eb0\u1eb2\u1eb4\u1eb6\u1eb8\u1eba\u1ebc'
           '\u1ebe\u1ec0\u1ec2\u1ec4\u1ec6\u1ec8\u1eca\u1ecc\u1ece\u1ed0\u1ed2\u1ed4\u1ed6\u1ed8\u1eda\u1edc\u1ede'
           '\u1ee0\u1ee2\u1ee4\u1ee6\u1ee8\u1eea\u1eec\u1eee\u1ef0\u1ef2\u1ef4\u1ef6\u1ef8\u1efa\u1efc\u1efe'
           '\u1f08-\u1f0f\u1f18-\u1f1d\u1f28-\u1f2f\u1f38-\u1f3f\u1f48-\u1f4d\u1f59\u1f5b\u1f5d\u1f5f\u1f68-\u1f6f'
           '\u1f88-\u1f8f\u1f98-\u1f9f\u1fa8-\u1faf\u1fb8-\u1fbc\u1fc8-\u1fcc\u1fd8-\u1fdb\u1fe8-\u1fec\u1ff8-\u1ffc'
           '\u2126\u212a\u212b\u2132\u2160-\u216f\u2183\u24b6-\u24cf\u2c00-\u2c2f\u2c60\u2c62-\u2c64\u2c67\u2c69'
           '\u2c6b\u2c6d-\u2c70\u2c72\u2c75\u2c7e-\u2c80\u2c82\u2c84\u2c86\u2c88\u2c8a\u2c8c\u2c8e\u2c90\u2c92\u2c94'
           '\u2c96\u2c98\u2c9a\u2c9c\u2c9e\u2ca0\u2ca2\u2ca4\u2ca6\u2ca8\u2caa\u2cac\u2cae\u2cb0\u2cb2\u2cb4\u2cb6'
           '\u2cb8\u2cba\u2cbc\u2cbe\u2cc0\u2cc2\u2cc4\u2cc6\u2cc8\u2cca\u2ccc\u2cce\u2cd0\u2cd2\u2cd4\u2cd6\u2cd8'
           '\u2cda\u2cdc\u2cde\u2ce0\u2ce2\u2ceb\u2ced\u2cf2\ua640\ua642\ua644\ua646\ua648\ua64a\ua64c\ua64e\ua650'
           '\ua652\ua654\ua656\ua658\ua65a\ua65c\ua65e\ua660\ua662\ua664\ua666\ua668\ua66a\ua66c\ua680\ua682\ua684'
           '\ua686\ua688\ua68a\ua68c\ua68e\ua690\ua692\ua694\ua696\ua698\ua69a\ua722\ua724\ua726\ua728\ua72a\ua72c'
           '\ua72e\ua732\ua734\ua736\ua738\ua73a\ua73c\ua73e\ua740\ua742\ua744\ua746\ua748\ua74a\ua74c\ua74e\ua750'
           '\ua752\ua754\ua756\ua758\ua75a\ua75c\ua75e\ua760\ua762\ua764\ua766\ua768\ua76a\ua76c\ua76e\ua779\ua77b'
           '\ua77d\ua77e\ua780\ua782\ua784\ua786\ua78b\ua78d\ua790\ua792\ua796\ua798\ua79a\ua79c\ua79e\ua7a0\ua7a2'
           '\ua7a4\ua7a6\ua7a8\ua7aa-\ua7ae\ua7b0-\ua7b4\ua7b6\ua7b8\ua7ba\ua7bc\ua7be\ua7c0\ua7c2\ua7c4-\ua7c7'
           '\ua7c9\ua7d0\ua7d6\ua7d8\ua7f5\uff21-\uff3a\U00010400-\U00010427\U000104b0-\U000104d3'
           '\U00010570-\U0001057a\U0001057c-\U0001058a\U0001058c-\U00010592\U00010594\U00010595\U00010c80-\U00010cb2'
           '\U000118a0-\U000118bf\U00016e40-\U00016e5f\U0001e900-\U0001e921]';

-- The characters str.isspace takes, which [[:space:]] reads by LC_CTYPE (under "C" the ASCII ones alone; no locale
-- takes U+001C-U+001F, U+0085, U+00A0, U+2007 or U+202F): a tag holding one is not one word.
CREATE FUNCTION _space_class() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN '[\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]';

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
        ELSIF fault IS NULL AND p_tags AND (s = '' OR s ~ _space_class() OR s ~ _upper_class()) THEN
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

-- A record kind's table (NULL: no such kind): one mapping for the functions that look a record up by kind.
CREATE FUNCTION _kind_table(p_kind text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN CASE p_kind WHEN 'memory' THEN 'memories' WHEN 'checkpoint' THEN 'checkpoints'
                       WHEN 'decision' THEN 'decisions' WHEN 'lesson' THEN 'lessons' WHEN 'episode' THEN 'episodes'
                       WHEN 'note' THEN 'notes' END;

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
-- An episode's duration_s or seq as the package writes them (kinds/episodes.py, EpisodeTable.validate): a finite
-- number of seconds from 0, a whole number from 0 below 2^62; each may be NULL. NULL: it is one; else what is wrong.
-- Migration 22's rules of a history entry's episode are these.
CREATE FUNCTION _episode_number_fault(p_name text, v numeric) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN CASE
        WHEN v IS NULL THEN NULL
        WHEN p_name = 'duration_s' AND NOT (v >= 0 AND v <= 1.7976931348623157e308)  -- NaN is above every number
            THEN format('%s, not a finite number of seconds from 0', left(v::text, 80))
        WHEN p_name = 'seq' AND NOT (v >= 0 AND v < 4611686018427387904 AND v = trunc(v))
            THEN format('%s, not a whole number from 0', left(v::text, 80))
    END;

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
    -- an agent login's update moves a record's stamp forward (the package stamps each write with next_stamp()); one
    -- dated back sorted below what a person wrote since (review 53)
    IF v_agent AND TG_OP = 'UPDATE' AND NEW.updated_at < OLD.updated_at THEN
        PERFORM _deny(format('%s with updated_at %s, before its stamp %s', v_what, left(NEW.updated_at, 40),
                             OLD.updated_at),
                      'an update carries the stamp of its write (next_stamp()), never an earlier one');
    END IF;
    IF NOT v_agent OR NEW.source IS DISTINCT FROM 'agent' THEN
        RETURN NEW;
    END IF;

    -- an agent's episode: its numbers as the package writes them (PL/pgSQL plans NEW.duration_s for episodes only)
    IF TG_ARGV[0] = 'episode' AND (TG_OP = 'INSERT' OR v_new -> 'duration_s' IS DISTINCT FROM v_old -> 'duration_s'
                                   OR v_new -> 'seq' IS DISTINCT FROM v_old -> 'seq'
                                   OR v_new -> 'thread' IS DISTINCT FROM v_old -> 'thread') THEN
        FOREACH c IN ARRAY ARRAY['duration_s', 'seq'] LOOP
            fault := _episode_number_fault(c, CASE c WHEN 'duration_s' THEN NEW.duration_s::numeric
                                                     ELSE NEW.seq::numeric END);
            IF fault IS NOT NULL THEN
                PERFORM _deny(format('%s with %s in its %s', v_what, fault, c),
                              'an episode''s duration_s is a finite number of seconds from 0, its seq a whole number '
                              'from 0 (its order in its thread), each or none, as the package writes them');
            END IF;
        END LOOP;
        IF NEW.seq IS NOT NULL AND NEW.thread IS NULL THEN
            PERFORM _deny(format('%s with a seq and no thread', v_what),
                          'a seq orders an episode in its thread: an episode without a thread has none');
        END IF;
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
    -- an agent's checkpoint comes from the agent or the automatic checkpoint (models.AGENT_ORIGINS: the package
    -- stores any other origin an agent names as "agent"); one naming the CLI, a notebook or the watcher reads as a
    -- person's
    IF TG_ARGV[0] = 'checkpoint' AND (TG_OP = 'INSERT' OR v_new -> 'origin' IS DISTINCT FROM v_old -> 'origin')
       AND NOT (v_new ->> 'origin') = ANY (_agent_checkpoint_origins()) THEN
        PERFORM _deny(format('%s with origin %L', v_what, left(v_new ->> 'origin', 80)),
                      'an agent''s checkpoint''s origin is one of '
                      || array_to_string(_agent_checkpoint_origins(), ', ') || ' (as the package stores it)');
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
    _agent_checkpoint_origins(), _invisible_class(), _upper_class(), _space_class(), _text_fault(text, boolean),
    _key_ok(text), _strings_fault(jsonb, boolean), _refuse(text, text), _row_values_guard(), _commit_fault(jsonb),
    _commits_fault(jsonb), _diffstat_fault(jsonb),
    _agent_lesson_git_check(text, text, text, text, text), _kind_prefix(text), _kind_table(text), _id_shown(text),
    _id_ok(text, text), _row_ids_guard(), _episode_number_fault(text, numeric) FROM PUBLIC;
-- evaluated by the domain's check and the guards, as the caller
GRANT EXECUTE ON FUNCTION ts_real(text), _ts_check(text), _memory_categories(), _checkpoint_origins(),
    _agent_checkpoint_origins(), _invisible_class(), _upper_class(), _space_class(), _text_fault(text, boolean),
    _key_ok(text), _strings_fault(jsonb, boolean), _refuse(text, text), _commit_fault(jsonb), _commits_fault(jsonb),
    _diffstat_fault(jsonb), _agent_lesson_git_check(text, text, text, text, text), _kind_prefix(text),
    _kind_table(text),
    _id_shown(text), _id_ok(text, text), _episode_number_fault(text, numeric) TO @S@_human, @S@_agent;

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

-- ---------------------------------------------------------------------------------------------------
-- the agent quotas' settings
-- ---------------------------------------------------------------------------------------------------
-- Migration 12's _setting_number cast the stored text to a number: a setting a person stored by hand as "lots" (or
-- text that is not JSON, or 2.5) made every agent write fail with "invalid input syntax for type numeric", and 0 or
-- -5 held agents to nothing. Now it reads the value as settings.py does (_int_range): a JSON whole number, or a
-- string of one (ASCII digits, "_" between them, spaces around), from 1 to the setting's most; anything else reads as
-- the default, as the package's settings do (settings._read).
CREATE OR REPLACE FUNCTION _setting_number(p_name text, p_default bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE
    v text; j jsonb; s text; n numeric;
    most constant bigint := CASE p_name WHEN 'agent_records_per_vault' THEN 1000000000
                                        WHEN 'agent_memories_per_mind' THEN 100000000
                                        WHEN 'agent_records_per_mind' THEN 100000000 ELSE 10000000 END;
BEGIN
    SELECT m.value INTO v FROM meta m WHERE m.key = 'setting:' || p_name;
    IF v IS NULL THEN
        RETURN p_default;
    END IF;
    BEGIN
        j := v::jsonb;
    EXCEPTION WHEN others THEN
        RETURN p_default;
    END;
    s := CASE jsonb_typeof(j) WHEN 'number' THEN v WHEN 'string' THEN j #>> '{}' END;
    IF s IS NULL OR s !~ '^[ \t\n\r\f\v]*[-+]?[0-9]+(_[0-9]+)*[ \t\n\r\f\v]*$'
       OR (jsonb_typeof(j) = 'number' AND s ~ '[+_]') THEN
        RETURN p_default;
    END IF;
    n := replace(btrim(s, E' \t\n\r\f\u000b'), '_', '')::numeric;
    RETURN CASE WHEN n BETWEEN 1 AND most THEN n::bigint ELSE p_default END;
END $$;
