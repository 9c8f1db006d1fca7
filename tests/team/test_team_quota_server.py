"""What the team vault's server holds against an agent login running its own SQL (migration 12): the hourly quota,
a mind's agent memories and pending agent lessons (the package's writes count the same rows, so a write the package
allows never meets the server's refusal, and the package's own words come first); conflict pairs that would hide a
human's record; rows of a person's session state."""

from __future__ import annotations

import warnings
from typing import Any

import psycopg
import pytest

from synapse_nb.errors import PermissionDeniedError, QuotaExceededError
from synapse_nb.kinds.lessons import AGENT_PENDING_LESSONS
from synapse_nb.settings import SETTINGS, SettingIgnored
from tests.team.conftest import url_as

TS = "2026-01-01T00:00:00.000000Z"
TOO_MANY = psycopg.errors.ConfigurationLimitExceeded


def checkpoint_rows(c: psycopg.Connection[Any], first: int, n: int, mind: str = "default") -> None:
    """One statement inserting ``n`` agent checkpoints."""
    c.execute("INSERT INTO checkpoints(id, mind, doing, origin, source, created_at, updated_at, terms) "
              "SELECT 'ckp_raw' || i, %s, 'raw step ' || i, 'agent', 'agent', %s, %s, '{raw}' "
              "FROM generate_series(%s::int, %s::int) i", (mind, TS, TS, first, first + n - 1))


def count(c: psycopg.Connection[Any], sql: str) -> int:
    row = c.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def test_the_server_holds_the_package_defaults(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    """The limits the server reads are the package's: its defaults when no human set one, the setting once set."""
    row = agent_sql.execute("SELECT * FROM agent_quota_limits()").fetchone()
    assert row == (SETTINGS["agent_writes_per_hour"][0], SETTINGS["agent_memories_per_mind"][0], AGENT_PENDING_LESSONS)
    human.settings.set("agent_writes_per_hour", 7)
    human.settings.set("agent_memories_per_mind", 9)
    assert agent_sql.execute("SELECT * FROM agent_quota_limits()").fetchone() == (7, 9, AGENT_PENDING_LESSONS)



@pytest.mark.parametrize(("stored", "read"), [
    ('"lots"', None), ("not json", None), ("2.5", None), ("true", None), ("0", None), ("-5", None),
    ('"0"', None), ("1e3", None), ("20000000", None), ("[7]", None), ('"7 per hour"', None),
    ("7", 7), ('"7"', 7), ('" 12 "', 12), ('"1_000"', 1000), ("10000000", 10_000_000)])
def test_a_setting_stored_by_hand_reads_as_the_package_reads_it(human: Any, machine: Any, logins: dict[str, str],
                                                                team_url: str, project: str, stored: str,
                                                                read: int | None) -> None:
    """A person's value the package does not accept (written with SQL, or by hand) made every agent write fail
    with the server's raw "invalid input syntax for type numeric" (and 0 or -5 held agents to nothing). The
    server reads a value as settings.py does: a whole number from 1 to the setting's most, else the default."""
    with psycopg.connect(team_url.split("?")[0], autocommit=True) as admin:
        admin.execute(f"INSERT INTO {project}.meta(key, value) VALUES ('setting:agent_writes_per_hour', %s) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (stored,))
    expected = SETTINGS["agent_writes_per_hour"][0] if read is None else read
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SettingIgnored)
        assert human.settings.get("agent_writes_per_hour") == expected  # the package's reading
        agent = machine("bot", logins["agent"], actor="agent")
        agent.remember("project", "note_one", "an agent's write goes through")
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:
        row = c.execute(f"SELECT writes_per_hour FROM {project}.agent_quota_limits()").fetchone()
    assert row == (expected,)

def test_raw_inserts_past_the_hourly_quota_are_refused(human: Any, agent_sql: psycopg.Connection[Any],
                                                       team_url: str, project: str) -> None:
    """Before migration 12 the quota was the package's count: the agent login's own INSERT wrote any number."""
    human.settings.set("agent_writes_per_hour", 5)
    checkpoint_rows(agent_sql, 0, 3)
    with pytest.raises(TOO_MANY, match="quota of 5 writes per hour"):
        checkpoint_rows(agent_sql, 10, 3)  # one statement of three: 6 > 5, refused whole
    checkpoint_rows(agent_sql, 20, 2)  # 5: the quota, taken
    for attempt in (lambda: checkpoint_rows(agent_sql, 30, 1),
                    lambda: agent_sql.execute("INSERT INTO decisions(id, mind, decision, tags, source, created_at, "
                                              "updated_at, terms) VALUES ('dec_raw', 'default', 'd', '[]', 'agent', "
                                              "%s, %s, '{d}')", (TS, TS))):
        with pytest.raises(TOO_MANY):
            attempt()
    assert count(agent_sql, "SELECT count(*) FROM checkpoints WHERE id LIKE 'ckp_raw%'") == 5
    assert human.checkpoints.latest() is not None  # a person's writes are not counted
    human.checkpoint("the human goes on")
    # a million rows in one statement: refused whole, nothing kept
    with pytest.raises(TOO_MANY):
        checkpoint_rows(agent_sql, 1000, 1_000)
    assert count(agent_sql, "SELECT count(*) FROM checkpoints WHERE id LIKE 'ckp_raw%'") == 5
    with psycopg.connect(team_url.split("?")[0]) as admin:
        logged = count(admin, f"SELECT sum(n) FROM {project}.agent_write_log WHERE isfinite(minute)")
    assert logged == 5  # the rows that went through; a refused statement's count is rolled back with it


def test_an_update_a_deletion_and_a_proposal_count_too(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    human.settings.set("agent_writes_per_hour", 4)
    agent_sql.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                      "created_at, updated_at, terms) SELECT 'mem_raw' || i, 'default', 'project', 'k' || i, 'c', 2, "
                      "'agent', 0, 0.5, %s, %s, '{c}' FROM generate_series(1, 2) i", (TS, TS))
    agent_sql.execute("UPDATE memories SET content = 'c2' WHERE id = 'mem_raw1'")
    agent_sql.execute("SELECT delete_record('memories', 'mem_none')")  # deletes nothing: counts nothing
    agent_sql.execute("UPDATE memories SET content = 'c3' WHERE id = 'mem_raw1'")
    with pytest.raises(TOO_MANY):
        agent_sql.execute("UPDATE memories SET content = 'c4' WHERE id = 'mem_raw1'")
    with pytest.raises(TOO_MANY):
        agent_sql.execute("SELECT delete_record('memories', 'mem_raw2')")
    with pytest.raises(TOO_MANY):
        agent_sql.execute("INSERT INTO revisions(id, rid, kind, mind, status, fields, base_digest, actor, surface, "
                          "created_at) VALUES ('rev_00000000a0a0', 'mem_raw1', 'memory', 'default', 'pending', "
                          "'{\"content\": \"c5\"}', '0123456789abcdef', 'agent', 'cli', %s)", (TS,))
    assert human.memories.get("mem_raw1").content == "c3" and human.memories.get("mem_raw2")


def test_raw_history_rows_are_bounded_too(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    """An agent writes history entries for its own writes; rows of its own past the quota are refused."""
    human.settings.set("agent_writes_per_hour", 4)
    insert = ("INSERT INTO history(id, rid, kind, mind, version, action, actor, surface, at) "
              "SELECT 'hst_raw' || i, 'ckp_x', 'checkpoint', 'default', i, 'create', 'agent', 'cli', next_stamp() "
              "FROM generate_series(%s::int, %s::int) i")
    agent_sql.execute(insert, (1, 4))
    with pytest.raises(TOO_MANY, match="history entries"):
        agent_sql.execute(insert, (5, 5))


def test_a_minds_agent_memories_and_pending_lessons_are_capped_by_the_server(
        human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    human.settings.set("agent_memories_per_mind", 3)
    memory = ("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
              "created_at, updated_at, terms) SELECT 'mem_raw' || i, %s, 'project', 'k' || i, 'c', 2, 'agent', 0, 0.5, "
              "%s, %s, '{c}' FROM generate_series(%s::int, %s::int) i")
    agent_sql.execute(memory, ("default", TS, TS, 1, 3))
    with pytest.raises(TOO_MANY, match="3 memories in mind default"):
        agent_sql.execute(memory, ("default", TS, TS, 4, 4))
    agent_sql.execute(memory, ("other", TS, TS, 5, 5))  # another mind holds its own
    lesson = ("INSERT INTO lessons(id, mind, status, summary, source, created_at, updated_at) "
              "SELECT 'les_raw' || i, 'default', 'pending', 'Reverted ' || i, 'agent', %s, %s "
              "FROM generate_series(%s::int, %s::int) i")
    agent_sql.execute(lesson, (TS, TS, 1, AGENT_PENDING_LESSONS))
    with pytest.raises(TOO_MANY, match="pending lessons in mind default"):
        agent_sql.execute(lesson, (TS, TS, AGENT_PENDING_LESSONS + 1, AGENT_PENDING_LESSONS + 1))
    assert len([x for x in human.lessons.list() if x.status == "pending"]) == AGENT_PENDING_LESSONS


def test_the_package_refuses_first_in_its_own_words(human: Any, machine: Any, logins: dict[str, str],
                                                    team_url: str, project: str) -> None:
    """Every kind of agent write the package makes counts the rows the server counts: at a quota of N the package's
    N writes all go through (none meets the server's refusal) and the next is the package's refusal."""
    mine = human.remember("preference", "code_style", "black, 120 columns")
    pending = human.lessons.create("Reverted the retry change")
    writes = [
        lambda a: a.checkpoint("step one", next_step="step two"),
        lambda a: a.decide("use helm charts for the deploy"),
        lambda a: a.episodes.log("ran the migration", status="success"),
        lambda a: a.notes.add("deploy", "how to deploy", "helm upgrade --install"),
        lambda a: a.remember("knowledge", "db", "postgres 15"),
        lambda a: a.memories.update(a.memories.search("postgres")[0].id, content="postgres 16"),
        lambda a: a.remember("preference", "code_style", "tabs"),  # a proposal to the human's memory
        lambda a: a.lessons.create("Reverted the cache change"),
        lambda a: a.lessons.submit_analysis(pending.id, "the retry hid timeouts"),
        lambda a: a.memories.delete(a.memories.search("postgres")[0].id),
    ]
    human.settings.set("agent_writes_per_hour", len(writes))
    agent = machine("bot", logins["agent"], actor="agent")
    for write in writes:
        write(agent)
    with pytest.raises(QuotaExceededError, match="every mind") as refused:
        agent.checkpoint("one too many")
    assert "team vault" not in str(refused.value)  # the package's words, not the server's
    with psycopg.connect(team_url.split("?")[0]) as admin:
        buckets = dict(admin.execute(f"SELECT bucket, sum(n) FROM {project}.agent_write_log WHERE login = %s "
                                     "AND isfinite(minute) GROUP BY bucket", (f"{project}_agent_login",)).fetchall())
    assert buckets["records"] == len(writes) and buckets["history"] <= len(writes), buckets  # one row per write
    assert human.memories.get(mine.id).content == "black, 120 columns"
    # beneath the kind managers (a patched client), the server's refusal is the package's error too
    store = agent._store
    with pytest.raises(QuotaExceededError, match="refused by the team vault"), store.transaction():
        store.checkpoints.insert(_raw_checkpoint(store))


def _raw_checkpoint(store: Any) -> Any:
    from synapse_nb.models import Checkpoint

    now = store.stamp(TS)
    return Checkpoint(id="ckp_beneath", mind="default", created_at=now, updated_at=now, doing="beneath the API",
                      origin="agent", source="agent")


LINK = ("INSERT INTO links(id, mind, a, a_kind, b, b_kind, relation, score, hidden, status, reason, created_at) "
        "VALUES (%s, 'default', %s, 'memory', %s, 'memory', 'duplicate', 1.0, %s, 'open', "
        "'same words, weighted by rarity', %s)")


def test_an_agents_link_cannot_hide_a_humans_record(human: Any, machine: Any, logins: dict[str, str],
                                                    agent_sql: psycopg.Connection[Any]) -> None:
    """An open duplicate link hides its `hidden` side from recall. Migration 11's guard checked only that an agent's
    link was open, so the agent login's own INSERT hid a human's verified memory from every recall."""
    rule = human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    mine = machine("bot", logins["agent"], actor="agent").remember("knowledge", "deploy_note", "deploys by hand are ok")
    assert any(r.id == rule.id for r in human.recall("how do deploys go").items)
    for i, hidden in enumerate((rule.id, "mem_elsewhere")):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="hide"):
            agent_sql.execute(LINK, (f"lnk_raw{i}", mine.id, rule.id, hidden, TS))
    agent_sql.execute(LINK, ("lnk_own", mine.id, rule.id, mine.id, TS))  # its own copy: what the package writes
    items = human.recall("how do deploys go").items
    assert any(r.id == rule.id for r in items) and not any(r.id == mine.id for r in items)


def test_raw_conflict_pairs_past_the_hourly_quota_are_refused_and_the_packages_pairs_wait(
        human: Any, machine: Any, logins: dict[str, str], agent_sql: psycopg.Connection[Any]) -> None:
    """Raw pairs filled the human's conflict queue without bound; now they count like records. A pair the package
    finds after an agent's write past that count is not lost: the write is stored without an error, and the human's
    next `conflicts()` finds the pair."""
    human.settings.set("agent_writes_per_hour", 4)
    agent = machine("bot", logins["agent"], actor="agent")
    first = agent.decide("the nightly backup job runs at two in the morning from the cron host")
    others = [human.decide(f"release train {i} leaves on a thursday") for i in range(5)]
    agent_sql.execute("INSERT INTO links(id, mind, a, a_kind, b, b_kind, relation, score, hidden, status, reason, "
                      "created_at) SELECT 'lnk_raw' || i, 'default', %s, 'decision', (%s::text[])[i], 'decision', "
                      "'contradiction', 1.0, NULL, 'open', 'same subject, negated on one side', %s "
                      "FROM generate_series(1, 4) i",
                      (first.id, [d.id for d in others[:4]], TS))
    with pytest.raises(TOO_MANY, match="conflict pairs"):
        agent_sql.execute("INSERT INTO links(id, mind, a, a_kind, b, b_kind, relation, score, hidden, status, "
                          "reason, created_at) VALUES ('lnk_raw9', 'default', %s, 'decision', %s, 'decision', "
                          "'contradiction', 1.0, NULL, 'open', 'same subject, negated on one side', %s)",
                          (first.id, others[4].id, TS))
    second = agent.decide("the nightly backup job runs at two in the morning from the cron host")  # no error
    assert {d.id for d in human.decisions.list()} >= {first.id, second.id}
    pairs = human.memories.conflicts()
    assert any({p.a, p.b} == {first.id, second.id} for p in pairs), pairs


def test_an_agent_cannot_write_a_persons_or_another_agents_session_state(
        human: Any, machine: Any, logins: dict[str, str], project: str, pg_admin_url: str,
        agent_sql: psycopg.Connection[Any]) -> None:
    """What a session was given is not given again: an agent's row for a person's session made the person's next
    recall leave that record out, and (found by a third review) one agent login's row did the same to another agent
    login's session. The package keeps an agent's sessions as `agent:<surface>:<id>`, per login on a team vault
    (`agent:<login>:<surface>:<id>`); the server refuses an agent any other session's row."""
    rule = human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    mark = "INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES ('default', %s, %s, %s, %s)"
    other = f"{project}_other_bot"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {other} LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (other,))
    for session in ("nb-0123456789ab", "agent:nb-0123456789ab", f"agent:{other}:nb-0123456789ab"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="session"):
            agent_sql.execute(mark, (session, rule.id, rule.digest, TS))
    # the package keeps an agent's sessions per surface too (`agent:<login>:<surface>:<id>`, review 27)
    agent_sql.execute(mark, (f"agent:{project}_agent_login:api:nb-0123456789ab", rule.id, rule.digest, TS))
    assert [i.id for i in human.recall("how do deploys go", session="nb-0123456789ab").items] == [rule.id]
    bot = machine("other", logins["agent"].replace(f"{project}_agent_login", other), actor="agent")
    assert [i.id for i in bot.recall("how do deploys go", session="nb-0123456789ab").items] == [rule.id]
    agent = machine("bot", logins["agent"], actor="agent")
    assert agent.recall("how do deploys go", session="nb-0123456789ab").nothing_new  # the agent's own row holds
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="session"):  # longer than the package's
        agent_sql.execute(mark, (f"agent:{project}_agent_login:big", "mem_" + "x" * 100, "d" * 1000, TS))


def test_an_agent_cannot_move_a_humans_lesson_scan_past_a_revert(team_url: str, logins: dict[str, str],
                                                                  project: str, tmp_path: Any) -> None:
    """A scan walks git history from where the last one stopped (meta `scan_tips:<mind>`), which the agent role could
    write: set to HEAD, the next scan skipped the revert before it, and no lesson was ever proposed. An agent's
    positions are its own key now (`scan_tips:agent:<login>:<mind>`); the human's scan never starts from them."""
    from synapse_nb.gitscope.testing import ScratchRepo
    from synapse_nb.team import open_team_vault

    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("retry.py", "retry = 3\n", "Add retries")
    repo.git("revert", "--no-edit", "HEAD")
    head = repo.git("rev-parse", "HEAD").strip()
    with psycopg.connect(logins["agent"].split("?")[0], autocommit=True) as c:
        c.execute(f"SET search_path = {project}")
        mark = "INSERT INTO meta(key, value) VALUES (%s, %s)"
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="scan_tips:default"):
            c.execute(mark, ("scan_tips:default", f'["{head}"]'))
        c.execute(mark, (f"scan_tips:agent:{project}_agent_login:default", f'["{head}"]'))  # its own: skips the
        # revert for its own scans (migration 20: a key of its login's)
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    human = open_team_vault(team_url, local=repo.root)
    try:
        assert agent.lessons.scan() == [] and human.lessons.pending() == []
        (les,) = human.lessons.scan()
        assert les.status == "pending" and les.revert_commit is not None and les.revert_commit["sha"] == head
    finally:
        agent.close()
        human.close()


def test_a_pair_must_name_two_real_records_to_hide_one(human: Any, machine: Any, logins: dict[str, str],
                                                       agent_sql: psycopg.Connection[Any]) -> None:
    """Found by review: the hidden side's owner was read through the kind the agent gave, so a made-up kind (or a
    pair of one record with itself) read as no human's and hid a verified memory."""
    rule = human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    human.memories.verify(rule.id)
    spoofs = [(rule.id, "nonsense", rule.id, "nonsense"), (rule.id, "note", "mem_other", "memory"),
              (rule.id, "memory", rule.id, "memory")]
    for i, (a, a_kind, b, b_kind) in enumerate(spoofs):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            agent_sql.execute("INSERT INTO links(id, mind, a, a_kind, b, b_kind, relation, score, hidden, status, "
                              "reason, created_at) VALUES (%s, 'default', %s, %s, %s, %s, 'duplicate', 1.0, %s, "
                              "'open', 'x', %s)", (f"lnk_spoof{i}", a, a_kind, b, b_kind, rule.id, TS))
    assert [i.id for i in human.recall("how do deploys go").items] == [rule.id]


def test_a_memory_a_human_verified_is_theirs_even_from_raw_sql(human: Any, machine: Any, logins: dict[str, str],
                                                               agent_sql: psycopg.Connection[Any]) -> None:
    """Found by review: the row guard checked only a memory's source, so the agent login's own UPDATE rewrote an
    agent memory a human had verified (and unverified it), and delete_record deleted one; the package made the first
    a revision and allowed the second."""
    agent = machine("bot", logins["agent"], actor="agent")
    mem = agent.remember("procedure", "deploy", "deploys go through the blue green script")
    human.memories.verify(mem.id)
    for sql in ("UPDATE memories SET content = 'deploy by hand', verified = 0 WHERE id = %s",
                "UPDATE memories SET priority = 3 WHERE id = %s",
                "SELECT delete_record('memories', %s)"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="verified"):
            agent_sql.execute(sql, (mem.id,))
    with pytest.raises(PermissionDeniedError, match="verified"):
        agent.memories.delete(mem.id)
    back = human.memories.get(mem.id)
    assert back.verified and back.content == "deploys go through the blue green script"


def test_a_snapshot_transaction_cannot_count_past_another_sessions_writes(
        human: Any, logins: dict[str, str], project: str, team_url: str,
        agent_sql: psycopg.Connection[Any]) -> None:
    """Found by review: the count was read with the transaction's snapshot, so a REPEATABLE READ transaction opened
    before another session of the login wrote its quota (in an earlier minute: the same minute's row clashed) wrote
    a second quota (revisions and history take no other lock that conflicts). Every count also updates one row of
    the login's, so the two cannot both pass."""
    human.settings.set("agent_writes_per_hour", 3)
    mem = human.remember("project", "k", "c")  # a revision proposes a change to a memory of its mind (migration 22)
    revision = ("INSERT INTO revisions(id, rid, kind, mind, status, fields, base_digest, actor, surface, created_at) "
                "SELECT 'rev_' || %s || lpad(i::text, 11, '0'), %s, 'memory', 'default', 'pending', "
                "'{\"content\": \"c2\"}', '0123456789abcdef', 'agent', 'cli', %s FROM generate_series(1, %s) i")
    with psycopg.connect(logins["agent"].split("?")[0]) as early:
        early.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        early.execute(f"SET LOCAL search_path = {project}")
        early.execute("SELECT count(*) FROM revisions").fetchone()  # the snapshot is taken here
        agent_sql.execute(revision, ("a", mem.id, TS, 3))
        with psycopg.connect(team_url.split("?")[0], autocommit=True) as admin:  # as if written a minute before
            admin.execute(f"UPDATE {project}.agent_write_log SET minute = minute - interval '1 minute' "
                          "WHERE isfinite(minute)")
        with pytest.raises((TOO_MANY, psycopg.errors.SerializationFailure)):
            early.execute(revision, ("b", mem.id, TS, 1))
    assert count(agent_sql, "SELECT count(*) FROM revisions") == 3


def test_a_threaded_episode_counts_once(human: Any, machine: Any, logins: dict[str, str]) -> None:
    """Found by review: an episode in a thread rewrites its thread's ranking contexts (rank_refresh_thread, the
    owner's function), which the server counted as the agent's changes: the fourth of four writes at a quota of six
    was refused by the server while the package counted three."""
    human.settings.set("agent_writes_per_hour", 5)
    agent = machine("bot", logins["agent"], actor="agent")
    for i in range(5):
        agent.episodes.log(f"step {i} of the conversation", status="success", thread="conv1")
    with pytest.raises(QuotaExceededError) as refused:
        agent.episodes.log("one more", status="success", thread="conv1")
    assert "team vault" not in str(refused.value)


def test_an_agent_session_dated_in_the_future_is_refused(human: Any, agent_sql: psycopg.Connection[Any],
                                                         project: str) -> None:
    """Found by review: rows dated in 2099 held the hour's room of new sessions for ever."""
    mark = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) "
            "VALUES ('default', %s, 'r', repeat('d', 16), %s)")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="2099"):
        agent_sql.execute(mark, (f"agent:{project}_agent_login:x1", "2099-01-01T00:00:00.000000Z"))
    agent_sql.execute(mark, (f"agent:{project}_agent_login:x1", TS))


def test_an_agents_record_cannot_take_another_kinds_id(human: Any, agent_sql: psycopg.Connection[Any]) -> None:
    """Found by a second review: ids are unique per table, so the agent login stored a note under a human's memory's
    id, then a pair with a_kind 'note' hid the memory (recall hides an id whatever its kind), and deleting the note
    dropped the memory's open pairs. An agent's record carries its kind's prefix, and a pair names stored records."""
    rule = human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    # (migration 21's id form refuses it first since review 41: a note's id is note_ and letters and digits)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"(?s)another kind|notes with the id .* is note_"):
        agent_sql.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at, terms) "
                          "VALUES (%s, 'default', 'n', 't', 'b', 'agent', %s, %s, '{t}')", (rule.id, TS, TS))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="two records"):  # a side that is not there
        agent_sql.execute(LINK, ("lnk_ghost", "mem_nowhere0001", "mem_nowhere0002", "mem_nowhere0002", TS))
    assert [i.id for i in human.recall("how do deploys go").items] == [rule.id]


def test_an_agents_session_rows_and_scan_positions_are_bounded(human: Any, machine: Any, logins: dict[str, str],
                                                               project: str,
                                                               agent_sql: psycopg.Connection[Any]) -> None:
    """Found by a second review: one statement of the agent login stored a million `agent:` session rows (a person's
    recall with a new session then read them all: 10x slower) and 50,000 scan position keys of 1 KB. Session rows
    count at fifty a write, new meta keys one a write; a key names a mind and holds at most 1 MB; a recall whose
    marks the server refuses still answers."""
    human.settings.set("agent_writes_per_hour", 4)
    rows = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) SELECT 'default', %s, "
            "'mem_' || i, repeat('d', 16), %s FROM generate_series(1, %s) i")
    now = human._ctx.now_ts()
    agent_sql.execute(rows, (f"agent:{project}_agent_login:flood", now, 200))
    with pytest.raises(TOO_MANY, match="session state rows"):
        agent_sql.execute(rows, (f"agent:{project}_agent_login:flood2", now, 1))
    key = "INSERT INTO meta(key, value) VALUES (%s, %s)"
    for bad in (("scan_tips:agent:" + "x" * 65, "[]"), ("scan_tips:agent:a b", "[]"),
                ("scan_tips:agent:m", "[" + "0" * 1_100_000 + "]")):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="meta key"):
            agent_sql.execute(key, bad)
    for i in range(4):
        agent_sql.execute(key, (f"scan_tips:agent:{project}_agent_login:m{i}", "[]"))
    with pytest.raises(TOO_MANY, match="lesson scan positions"):
        agent_sql.execute(key, (f"scan_tips:agent:{project}_agent_login:m9", "[]"))
    human.remember("procedure", "deploy", "deploys go through the blue green script, never by hand")
    agent = machine("bot", logins["agent"], actor="agent")
    assert agent.recall("how do deploys go", session="conv-1").items  # its marks refused: it answers all the same


def test_a_vault_at_migration_11_with_data_upgrades_to_12(pg_admin_url: str, machine: Any) -> None:
    """Migration 12 adds triggers, functions and a table, and checks no stored row: a project that holds records,
    an agent's session rows of the old key and scan positions upgrades, keeps them, and holds agents to the new
    rules afterwards."""
    import uuid

    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"up{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:11]) == (0, 11)
        c.execute(f"SET search_path = {project}")
        c.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                  "created_at, updated_at, terms) VALUES ('mem_old0000000', 'default', 'procedure', 'deploy', "
                  "'deploys go through the blue green script', 1, 'agent', 1, 0.7, %s, %s, '{blue,deploy,green}')",
                  (TS, TS))
        c.execute("INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES "
                  "('default', 'conv-1', 'mem_old0000000', 'd', %s)", (TS,))
        c.execute("INSERT INTO meta(key, value) VALUES ('scan_tips:default', '[]')")
        assert migrate(c, project, MIGRATIONS[:12]) == (11, 12)
        assert migrate(c, project) == (12, MIGRATIONS[-1].version)  # then to this code's (13: its own test)
        c.execute(f"CREATE ROLE {project}_bot LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (f"{project}_bot",))
    human = machine("h", f"{pg_admin_url}?project={project}")
    assert human.memories.get("mem_old0000000").verified
    agent = machine("bot", url_as(pg_admin_url, f"{project}_bot") + f"?project={project}", actor="agent")
    assert agent.checkpoint("after the upgrade").source == "agent"
    with pytest.raises(PermissionDeniedError, match="verified"):
        agent.memories.delete("mem_old0000000")


def test_a_persons_scan_takes_over_an_agents_scan_lesson_on_the_server(team_url: str, logins: dict[str, str],
                                                                        tmp_path: Any) -> None:
    """An agent that scanned first made a person's revert its lesson; the person's scan takes it over (git's words):
    the person's login may set the lesson's source on the server."""
    from synapse_nb.gitscope.testing import ScratchRepo
    from synapse_nb.team import open_team_vault

    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("retry.py", "retry = 3\n", "Add retries")
    repo.git("revert", "--no-edit", "HEAD")
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")
    human = open_team_vault(team_url, local=repo.root)
    try:
        assert agent.lessons.scan() == []
        (made,) = human.lessons.pending()
        assert made.source == "agent"
        (taken,) = human.lessons.scan()
        assert taken.id == made.id and taken.source == "user"
        assert human.lessons.approve(taken.id).status == "approved"
    finally:
        agent.close()
        human.close()
