-- synapse_nb team vault, migration 22: an agent login's revisions, history entries and conflict pairs hold what the
-- package writes (review 46).
--
-- Reproduced on a server with an agent login's own SQL, past the package's checks: migration 21 checked the values of
-- the record tables only, and the proposal guard (migration 9) a revision's status, decided_at and actor only; the
-- history guard (migration 14) a `before`'s id, kind, source and verified only. The agent stored
--   1. revisions whose `fields` were not JSON ('{not json') or not an object ('["content"]'): a person's
--      `memory revisions` failed; and a `surface` holding ESC sequences that erased the line on the person's terminal
--      and drew a forged [user · verified] one;
--   2. a history entry whose `before` held a key no record has ("note_to_reviewer": 1) or values of another type: the
--      person's `memory history` and every recall(as_of=...) of the mind failed.
-- (The package now reads all of these tolerantly: store/sql/change_rows.py, changes.py.)
--
-- Now, for an agent login (a caller not in @S@_human/@S@_owner: _caller_is_human), on INSERT:
--   * a revision is of a memory (kind 'memory') that exists in its mind, proposed through one of the package's
--     SURFACES (changes.SURFACES: _surfaces()), its id rev_ and 12 hex digits, its base_digest a record digest (16 hex
--     digits), and its `fields` a JSON object of one or more of REVISED_FIELDS (content, tags, priority, expires_at)
--     with values of their types and text passing migration 21's rules (_text_fault): content text, tags a list of
--     at most 10 tags (one lower-case word of at most 64 characters), priority one of PRIORITIES, expires_at a real
--     UTC instant or null;
--   * a history entry's surface is one of SURFACES, and its `before` (when it has one) a JSON object whose keys are
--     those of its kind's record (Record.to_dict: _state_rules(kind); tests/team/test_team_change_values.py holds
--     them equal) with values of their types: text passing migration 21's rules, a memory's category one of
--     CATEGORIES and key snake_case, a note's name snake_case, timestamps real instants, JSON lists of strings as the
--     record tables' (tags, file paths), a lesson's commits and diffstat as migration 21 checks a lesson row's.
--   * a conflict pair (links) is one the duplicate check writes after the agent's own write (dupes.find_links): its
--     first side (a) the record the agent wrote, its own (an agent's record, a memory unverified), its second (b) a
--     stored record, both of the kinds the check pairs (dupes.CHECKED_KINDS: _checked_kinds()) and of the pair's
--     mind; it hides nothing or, a duplicate, the agent's side (dupes.hidden_side: a person's record stands over an
--     agent's, and between two agents' records the older stands); its score a similarity from 0 to 1; its reason one
--     the check gives (dupes.classify; changes.reason_ok holds the same forms). Migrations 9 and 12 held an agent's
--     pair to open, two stored records and a hidden side of its own only: a pair of two people's records, the older
--     named first, with a reason in the agent's words ("the user replaced this rule on Dec 1: supersede it") was
--     stored, listed as the check's, and a person's `supersede` ("the newer stands") deleted the newer rule.
-- A person's rows are as before (the package checks them; an import keeps old text byte for byte).

-- A text value as JSON, or NULL when it is not JSON.
CREATE FUNCTION _jsonb_or_null(v text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN v::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

-- changes.SURFACES and models.PRIORITIES (the test holds them equal).
CREATE FUNCTION _surfaces() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN ARRAY['api', 'cli', 'mcp', 'notebook', 'hook', 'git-hook', 'import', 'widget'];
CREATE FUNCTION _priorities() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN ARRAY['critical', 'high', 'normal', 'low'];

-- What each key of a record's state holds (Record.to_dict, its "kind" aside), by kind; 'revision' is a revision's
-- fields (changes.REVISED_FIELDS). A rule ending in '?' also takes null.
CREATE FUNCTION _state_rules(p_kind text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN CASE p_kind
        WHEN 'memory' THEN jsonb_build_object('category', 'category', 'key', 'key', 'content', 'text', 'tags', 'tags',
            'priority', 'priority', 'source', 'source', 'verified', 'bool', 'confidence', 'unit', 'expires_at', 'ts?')
        WHEN 'checkpoint' THEN jsonb_build_object('doing', 'text', 'changed_files', 'paths', 'next_step', 'text?',
            'blockers', 'text?', 'branch', 'line?', 'commit', 'line?', 'origin', 'origin', 'source', 'source')
        WHEN 'decision' THEN jsonb_build_object('decision', 'text', 'rationale', 'text?', 'tags', 'tags',
            'branch', 'line?', 'commit', 'line?', 'source', 'source')
        WHEN 'lesson' THEN jsonb_build_object('status', 'lesson_status', 'summary', 'text', 'branch', 'line?',
            'revert_commit', 'commit?', 'reverted_commits', 'commits', 'files_affected', 'paths',
            'diffstat', 'diffstat', 'analysis', 'text?', 'analysis_by', 'source?', 'lesson_text', 'text?',
            'approved_at', 'ts?', 'expires_at', 'ts?', 'source', 'source')
        WHEN 'episode' THEN jsonb_build_object('task_key', 'line', 'status', 'episode_status', 'outcome', 'text?',
            'refs', 'paths', 'duration_s', 'duration_s?', 'source', 'source', 'thread', 'line?', 'seq', 'seq?',
            'actor', 'line?')
        WHEN 'note' THEN jsonb_build_object('name', 'key', 'trigger', 'text', 'body', 'text', 'source', 'source')
        WHEN 'revision' THEN jsonb_build_object('content', 'text', 'tags', 'tags', 'priority', 'priority',
            'expires_at', 'ts?')
    END || CASE WHEN p_kind = 'revision' THEN '{}'::jsonb ELSE
        jsonb_build_object('id', 'line', 'mind', 'line', 'created_at', 'ts', 'updated_at', 'ts') END;

-- What is wrong with a value under a rule (NULL: nothing).
CREATE FUNCTION _state_value_fault(p_rule text, v jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE r text := rtrim(p_rule, '?'); t text := jsonb_typeof(v); s text;
BEGIN
    IF t = 'null' THEN
        RETURN CASE WHEN p_rule LIKE '%?' THEN NULL ELSE 'null' END;
    END IF;
    IF r IN ('line', 'text', 'key', 'category', 'priority', 'origin', 'source', 'lesson_status', 'episode_status',
             'ts') THEN
        IF t <> 'string' THEN
            RETURN format('%s, not text', left(v::text, 80));
        END IF;
        s := v #>> '{}';
        RETURN CASE
            WHEN r IN ('line', 'text') THEN _text_fault(s, r = 'text')
            WHEN r = 'key' AND NOT _key_ok(s) THEN format('%L', left(s, 80))
            WHEN r = 'category' AND NOT s = ANY (_memory_categories()) THEN format('%L', left(s, 80))
            WHEN r = 'priority' AND NOT s = ANY (_priorities()) THEN format('%L', left(s, 80))
            WHEN r = 'origin' AND NOT s = ANY (_checkpoint_origins()) THEN format('%L', left(s, 80))
            WHEN r = 'source' AND s NOT IN ('user', 'agent') THEN format('%L', left(s, 80))
            WHEN r = 'lesson_status' AND s NOT IN ('pending', 'approved', 'expired') THEN format('%L', left(s, 80))
            WHEN r = 'episode_status' AND s NOT IN ('success', 'failure', 'unknown') THEN format('%L', left(s, 80))
            WHEN r = 'ts' AND NOT ts_real(s) THEN format('%L, not a time', left(s, 80))
        END;
    END IF;
    IF r = 'bool' THEN
        RETURN CASE WHEN t <> 'boolean' THEN format('%s, not true or false', left(v::text, 80)) END;
    END IF;
    IF r IN ('unit', 'duration_s', 'seq') THEN
        IF t <> 'number' OR (r = 'unit' AND v::text::numeric NOT BETWEEN 0 AND 1) THEN
            RETURN format('%s, not %s', left(v::text, 80), CASE r WHEN 'unit' THEN 'a number 0..1' ELSE 'a number' END);
        END IF;
        RETURN CASE WHEN r <> 'unit' THEN _episode_number_fault(r, v::text::numeric) END;  -- migration 21's rule
    END IF;
    IF r = 'commit' THEN
        RETURN _commit_fault(v);
    END IF;
    IF t <> 'array' THEN  -- tags, paths, commits, diffstat
        RETURN format('%s, not a list', left(v::text, 80));
    END IF;
    RETURN CASE r WHEN 'commits' THEN _commits_fault(v) WHEN 'diffstat' THEN 'the ' || _diffstat_fault(v)
                  ELSE _strings_fault(v, r = 'tags') END;
END $$;

-- What is wrong with a record's state (or a revision's fields: p_kind 'revision'): a key it does not hold, or a
-- value against its rule (NULL: nothing).
CREATE FUNCTION _state_fault(p_kind text, p_state jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE rules jsonb := _state_rules(p_kind); k text; v jsonb; fault text;
BEGIN
    IF jsonb_typeof(p_state) IS DISTINCT FROM 'object' THEN
        RETURN format('%s, not a JSON object', left(coalesce(p_state::text, 'text that is not JSON'), 80));
    END IF;
    IF rules IS NULL THEN
        RETURN format('the kind %L', left(p_kind, 80));
    END IF;
    FOR k, v IN SELECT * FROM jsonb_each(p_state) LOOP
        IF k = 'kind' AND p_kind <> 'revision' THEN
            CONTINUE;  -- the history guard holds it to the entry's kind
        END IF;
        IF NOT rules ? k THEN
            RETURN format('the key %L', left(k, 80));
        END IF;
        fault := _state_value_fault(rules ->> k, v);
        IF fault IS NOT NULL THEN
            RETURN format('%s in its %s', fault, k);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- The owner's-rights readers below, and migration 9's _record_source and 12's _record_is_agents (replaced here), answer
-- only for a record in a mind the caller's login may see (_mind_visible, as migration 15's lesson readers): called
-- directly, an agent login allowed only mind 'sandbox' learned that a person's memory id was in mind 'default', and
-- its source (review 53). Their callers, the revision, pair and history guards, hold a write to records of its own
-- mind, which the login may see.

-- Whether a memory of this id is stored in this mind, a mind the caller may see.
CREATE FUNCTION _memory_in_mind(p_id text, p_mind text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp
BEGIN ATOMIC
    SELECT EXISTS (SELECT 1 FROM memories m WHERE m.id = p_id AND m.mind = p_mind AND _mind_visible(m.mind));
END;

-- The source of a stored record of a kind in a mind the caller may see (NULL: no such record).
CREATE OR REPLACE FUNCTION _record_source(p_kind text, p_id text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_table text; v_source text;
BEGIN
    v_table := _kind_table(p_kind);
    IF v_table IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT source FROM %I WHERE id = $1 AND _mind_visible(mind)', v_table) INTO v_source USING p_id;
    RETURN v_source;
END $$;

-- Whether a record of this kind, in a mind the caller may see, is an agent's own (see migration 12).
CREATE OR REPLACE FUNCTION _record_is_agents(p_kind text, p_id text) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_agents boolean;
BEGIN
    IF p_kind = 'memory' THEN
        SELECT source = 'agent' AND verified = 0 INTO v_agents FROM memories WHERE id = p_id AND _mind_visible(mind);
    ELSE
        v_agents := _record_source(p_kind, p_id) = 'agent';
    END IF;
    RETURN coalesce(v_agents, false);
END $$;

-- An agent's history entry names a record of its own mind, or none stored (a deleted record's): with _record_source
-- blind to other minds, the history guard (migration 14) read a person's record of a mind the login may not see as
-- none, and `memory history` (by record id) would have listed the agent's entry under it. A trigger of the owner's
-- rights, so no function answers an agent login where a record is.
CREATE FUNCTION _agent_history_mind() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_table text; v_elsewhere boolean;
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    v_table := _kind_table(NEW.kind);
    IF v_table IS NOT NULL THEN
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE id = $1 AND mind <> $2)', v_table)
            INTO v_elsewhere USING NEW.rid, NEW.mind;
    END IF;
    IF v_elsewhere THEN
        PERFORM _deny(format('write history for %s %s in mind %L', left(NEW.kind, 40), _id_shown(NEW.rid),
                             left(NEW.mind, 80)),
                      'an agent''s history entry names a record of its own mind');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER history_agent_mind BEFORE INSERT ON history FOR EACH ROW EXECUTE FUNCTION _agent_history_mind();

CREATE FUNCTION _agent_revision_values() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_what text := format('propose revision %s', left(NEW.id, 80)); fault text; j jsonb;
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF NEW.id !~ '^rev_[0-9a-f]{12}$' OR NEW.base_digest !~ '^[0-9a-f]{16}$' THEN
        PERFORM _deny(format('%s with the base digest %L', v_what, left(NEW.base_digest, 80)),
                      'a revision''s id is rev_ and 12 hex digits, its base_digest the memory''s digest (16 hex digits)');
    END IF;
    IF NOT NEW.surface = ANY (_surfaces()) THEN
        PERFORM _deny(format('%s through the surface %L', v_what, left(NEW.surface, 80)),
                      'a surface is one of ' || array_to_string(_surfaces(), ', '));
    END IF;
    IF NEW.kind <> 'memory' OR NOT _memory_in_mind(NEW.rid, NEW.mind) THEN
        PERFORM _deny(format('%s for %s %L in mind %L', v_what, left(NEW.kind, 40), left(NEW.rid, 80),
                             left(NEW.mind, 80)),
                      'a revision proposes a change to a memory stored in its mind');
    END IF;
    j := _jsonb_or_null(NEW.fields);
    fault := CASE WHEN j = '{}'::jsonb THEN 'no value' ELSE _state_fault('revision', j) END;
    IF fault IS NOT NULL THEN
        PERFORM _deny(format('%s with fields holding %s', v_what, fault),
                      'a revision''s fields are a JSON object of content (text), tags (at most 10 lower-case words), '
                      'priority (' || array_to_string(_priorities(), ', ') || ') and expires_at (a UTC instant or '
                      'null), text without control or invisible format characters, as the package writes them');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER revisions_agent_values BEFORE INSERT ON revisions FOR EACH ROW
    EXECUTE FUNCTION _agent_revision_values();

CREATE FUNCTION _agent_history_values() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_what text := format('write history for %s %s', left(NEW.kind, 40), left(NEW.rid, 80)); fault text;
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF NOT NEW.surface = ANY (_surfaces()) THEN
        PERFORM _deny(format('%s through the surface %L', v_what, left(NEW.surface, 80)),
                      'a surface is one of ' || array_to_string(_surfaces(), ', '));
    END IF;
    IF NEW.before IS NOT NULL THEN
        fault := _state_fault(NEW.kind, _jsonb_or_null(NEW.before));
        IF fault IS NOT NULL THEN
            PERFORM _deny(format('%s with a before holding %s', v_what, fault),
                          'an agent''s entry holds its record as it was: the keys of that kind''s record, with '
                          'values of their types, as the package writes them');
        END IF;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER history_agent_values BEFORE INSERT ON history FOR EACH ROW EXECUTE FUNCTION _agent_history_values();

-- dupes.CHECKED_KINDS: the kinds the duplicate check pairs (recall's ranked kinds but checkpoints; the test holds
-- them equal).
CREATE FUNCTION _checked_kinds() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    RETURN ARRAY['memory', 'decision', 'episode', 'note'];

-- The mind of a stored record of a kind the check pairs (NULL: no such record in a mind the caller may see).
CREATE FUNCTION _checked_record_mind(p_kind text, p_id text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = @S@, pg_temp AS $$
DECLARE v_table text; v_mind text;
BEGIN
    v_table := CASE WHEN p_kind = ANY (_checked_kinds()) THEN _kind_table(p_kind) END;
    IF v_table IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format('SELECT mind FROM %I WHERE id = $1 AND _mind_visible(mind)', v_table) INTO v_mind USING p_id;
    RETURN v_mind;
END $$;

-- Whether a pair's reason is one the duplicate check gives (dupes.classify; changes.reason_ok): a fixed sentence, or
-- "same subject, differing numbers or dates (...)" / "... names (...)" listing 1 to 4 words of the two texts, each
-- 1 to 64 characters without a comma, bracket, space (str.isspace: _space_class) or control character.
CREATE FUNCTION _link_reason_ok(v text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE m text[]; w text; n int := 0;
BEGIN
    IF v IN ('same subject, negated on one side', 'the shorter one''s words are in the other, weighted by rarity',
             'same words, weighted by rarity') THEN
        RETURN true;
    END IF;
    m := regexp_match(v, '^same subject, differing (?:numbers or dates|names) \((.*)\)$');
    IF m IS NULL OR _text_fault(m[1], false) IS NOT NULL THEN
        RETURN false;
    END IF;
    FOREACH w IN ARRAY string_to_array(m[1], ', ') LOOP
        n := n + 1;
        IF n > 4 OR w !~ '^[^,()]{1,64}$' OR w ~ _space_class() THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN n >= 1;
END $$;

CREATE FUNCTION _agent_link_values() RETURNS trigger
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = @S@, pg_catalog, pg_temp AS $$
DECLARE v_what text := format('record the pair %s', _id_shown(NEW.id));
BEGIN
    IF _caller_is_human() THEN
        RETURN NEW;
    END IF;
    IF NOT (NEW.a_kind = ANY (_checked_kinds()) AND NEW.b_kind = ANY (_checked_kinds())) THEN
        PERFORM _deny(format('%s of the kinds %L and %L', v_what, left(NEW.a_kind, 40), left(NEW.b_kind, 40)),
                      'the duplicate check pairs records of the kinds ' || array_to_string(_checked_kinds(), ', '));
    END IF;
    IF NOT _record_is_agents(NEW.a_kind, NEW.a) THEN
        PERFORM _deny(format('%s whose first side %s is not its own', v_what, _id_shown(NEW.a)),
                      'an agent''s pair names first the record it wrote (its own; a memory no person verified), '
                      'then the older record the check found');
    END IF;
    IF _checked_record_mind(NEW.a_kind, NEW.a) IS DISTINCT FROM NEW.mind
       OR _checked_record_mind(NEW.b_kind, NEW.b) IS DISTINCT FROM NEW.mind THEN
        PERFORM _deny(format('%s in mind %L', v_what, left(NEW.mind, 80)),
                      'a pair names two records of its own mind');
    END IF;
    IF NEW.hidden IS NOT NULL AND (NEW.relation <> 'duplicate' OR NEW.hidden <> NEW.a) THEN
        PERFORM _deny(format('%s that would hide %s', v_what, _id_shown(NEW.hidden)),
                      'a contradiction hides nothing; a duplicate an agent records hides only its own side, the first');
    END IF;
    IF NOT (NEW.score >= 0 AND NEW.score <= 1) THEN  -- NaN is above every number in PostgreSQL
        PERFORM _deny(format('%s with the score %s', v_what, NEW.score),
                      'a pair''s score is a similarity from 0 to 1');
    END IF;
    IF NOT _link_reason_ok(NEW.reason) THEN
        PERFORM _deny(format('%s with the reason %s', v_what, _id_shown(NEW.reason)),
                      'a pair''s reason is one the duplicate check gives: "same subject, negated on one side", '
                      '"same subject, differing numbers or dates (WORDS)", "same subject, differing names (WORDS)" '
                      'or "the shorter one''s words are in the other, weighted by rarity"');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER links_agent_values BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION _agent_link_values();

REVOKE EXECUTE ON FUNCTION _jsonb_or_null(text), _surfaces(), _priorities(), _state_rules(text),
    _state_value_fault(text, jsonb), _state_fault(text, jsonb), _memory_in_mind(text, text),
    _agent_revision_values(), _agent_history_values(), _checked_kinds(), _checked_record_mind(text, text),
    _link_reason_ok(text), _agent_link_values(), _agent_history_mind() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION _jsonb_or_null(text), _surfaces(), _priorities(), _state_rules(text),
    _state_value_fault(text, jsonb), _state_fault(text, jsonb), _memory_in_mind(text, text), _checked_kinds(),
    _checked_record_mind(text, text), _link_reason_ok(text) TO @S@_human, @S@_agent;
