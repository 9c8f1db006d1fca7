-- synapse_nb team vault, migration 31: a person's recall sessions are kept per login, as an agent's are (review 90).
--
-- session_key (migration 12) kept an agent's sessions per login ('agent:<login>:<id>') and a person's by the id
-- alone, so two people who named the same session ('daily', a notebook's id) shared its marks: alice's recall with
-- `--session daily` made bob's say "nothing new ... 1 relevant item already given to this session". A person's
-- session is now 'user:<login>:<id>', the login quoted as an identifier as an agent's is, so no login's prefix is
-- another's. The SQLite vault (one person) keeps its ids as they are. An agent's rows are unchanged, and the server
-- still refuses an agent any row but its own sessions' (_session_guard): a 'user:' key is never one. The marks
-- people's sessions made before are no one's now: each such session is given everything once more, and the rows go
-- with the next prune (delete_sessions_before).

CREATE OR REPLACE FUNCTION session_key(p_session text) RETURNS text
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
    RETURN CASE WHEN starts_with(p_session, 'agent:')
                THEN 'agent:' || quote_ident(session_user) || ':' || substr(p_session, 7)
                ELSE 'user:' || quote_ident(session_user) || ':' || p_session END;
REVOKE EXECUTE ON FUNCTION session_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION session_key(text) TO @S@_human, @S@_agent;
