"""What the team vault's server holds against an agent login's own SQL on the positions the package keeps
(migration 13): each machine's feed position (`followers`, what `team status` shows) and an agent's lesson scan
positions (`meta` `scan_tips:agent:<mind>`). Before it an agent login inserted and rewrote any number of feed position
rows, a person's and another login's included, and rewrote its scan positions (each up to 1 MB) without the rewrite
being counted."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from synapse_nb.errors import PermissionDeniedError
from tests.team.conftest import url_as

TS = "2026-01-01T00:00:00.000000Z"
TOO_MANY = psycopg.errors.ConfigurationLimitExceeded
DENIED = psycopg.errors.InsufficientPrivilege
#: a feed position as the package reports it: the cursor is the snapshot's xmin, the snapshot the server's current one
POSITIONS = ("INSERT INTO followers(name, cursor_xid, snapshot) SELECT %s || i, "
             "pg_snapshot_xmin(pg_current_snapshot()), pg_current_snapshot() FROM generate_series(1, %s) i")


def admin_rows(team_url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(team_url.split("?")[0]) as admin:
        return admin.execute(sql, params).fetchall()


def buckets(team_url: str, project: str, login: str) -> dict[str, int]:
    """The agent login's counts of the last hour, per bucket (what the server holds it to)."""
    return {b: int(n) for b, n in admin_rows(
        team_url, f"SELECT bucket, sum(n) FROM {project}.agent_write_log WHERE login = %s AND isfinite(minute) "
                  "GROUP BY bucket", (login,))}


def test_an_agent_cannot_rewrite_a_persons_or_another_logins_feed_position(
        human: Any, machine: Any, logins: dict[str, str], project: str, pg_admin_url: str, team_url: str,
        agent_sql: psycopg.Connection[Any]) -> None:
    """`team status` shows where each machine's index stands. The agent role held UPDATE on every column of
    `followers`, so the agent login's own SQL rewrote a person's row (a machine shown as synced that was not, or as
    lagging for ever) and another agent login's. A row now records the login that wrote it (the server's
    `session_user`, never the statement's), and an agent role updates only its own login's rows."""
    human.remember("knowledge", "zebras", "the first fact about zebras")
    assert human.index.search("zebras")  # the index syncs: this machine reports its position
    other = f"{project}_other_bot"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"CREATE ROLE {other} LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (other,))
    bot = machine("other", logins["agent"].replace(f"{project}_agent_login", other), actor="agent")
    assert bot.index.search("zebras")
    human.close()  # their offline copies' last reports are in
    bot.close()
    table = f"SELECT name, cursor_xid::text, snapshot::text, synced_at FROM {project}.followers ORDER BY name"
    before = admin_rows(team_url, table)
    theirs = [r[0] for r in before]
    assert any("machine_h" in n for n in theirs) and any("machine_other" in n for n in theirs), before
    for name in theirs:
        for sql in ("UPDATE followers SET synced_at = '2099-01-01' WHERE name = %s",
                    "UPDATE followers SET cursor_xid = '3', snapshot = '3:3:' WHERE name = %s"):
            with pytest.raises(DENIED, match="feed position"):
                agent_sql.execute(sql, (name,))
    with pytest.raises(DENIED):  # no role deletes a machine's row (migration 7 took the agent's DELETE)
        agent_sql.execute("DELETE FROM followers")
    assert admin_rows(team_url, table) == before


def test_an_agents_feed_positions_count_against_the_hourly_quota(
        human: Any, project: str, team_url: str, agent_sql: psycopg.Connection[Any]) -> None:
    """Unbounded before: one statement of the agent login inserted a million feed position rows, and rewrote them
    as often as it liked. Each row an agent role inserts or updates there now counts as session state (fifty times
    the hourly quota), and the statement that passes it is refused whole."""
    human.settings.set("agent_writes_per_hour", 2)  # 100 session state rows an hour
    agent_sql.execute(POSITIONS, ("flood-", 90))
    five = [f"flood-{i}" for i in range(1, 6)]
    agent_sql.execute("UPDATE followers SET synced_at = now() WHERE name = ANY(%s)", (five,))
    with pytest.raises(TOO_MANY, match="feed positions"):
        agent_sql.execute(POSITIONS, ("more-", 10))
    with pytest.raises(TOO_MANY, match="feed positions"):
        agent_sql.execute("UPDATE followers SET synced_at = now() WHERE name LIKE 'flood-%%'")
    with pytest.raises(TOO_MANY):
        agent_sql.execute(POSITIONS, ("many-", 20_000))
    assert admin_rows(team_url, f"SELECT count(*) FROM {project}.followers WHERE name LIKE 'flood-%%' "
                                "OR name LIKE 'm%%'") == [(90,)]
    assert buckets(team_url, project, f"{project}_agent_login")["sessions"] == 90 + 5


def test_an_agents_feed_position_is_a_real_one(human: Any, project: str, team_url: str,
                                               agent_sql: psycopg.Connection[Any]) -> None:
    """What the package reports is the server's snapshot (the cursor its xmin) and the server's time: an agent login
    stored a name of any size, a snapshot listing any number of transactions, one from the future, and any time."""
    insert = "INSERT INTO followers(name, cursor_xid, snapshot) "
    many = ("SELECT 'many', '3', ('3:' || x || ':' || (SELECT string_agg(i::text, ',') "
            "FROM generate_series(4, 20003) i))::pg_snapshot "
            "FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 20000 AS x) s")
    forged = [
        ("SELECT repeat('x', 5000), pg_snapshot_xmin(pg_current_snapshot()), pg_current_snapshot()", "name of 5000"),
        ("SELECT 'ahead', '1', pg_current_snapshot()", "cursor 1 is not"),
        ("VALUES ('future', '3', '3:100000000000:')", "from the future"),
        (many, "listing 20000 transactions"),
    ]
    for sql, what in forged:
        with pytest.raises(DENIED, match=what):
            agent_sql.execute(insert + sql)
    agent_sql.execute("INSERT INTO followers(name, cursor_xid, snapshot, synced_at, login) SELECT 'mine', "
                      "pg_snapshot_xmin(pg_current_snapshot()), pg_current_snapshot(), '2099-01-01', 'someone'")
    ((login, synced_at),) = admin_rows(team_url, f"SELECT login, synced_at < now() + interval '1 minute' "
                                                 f"FROM {project}.followers WHERE name = 'mine'")
    assert (login, synced_at) == (f"{project}_agent_login", True)  # the server's, not the statement's


def test_rewriting_an_agents_scan_positions_counts(human: Any, project: str, team_url: str,
                                                   agent_sql: psycopg.Connection[Any]) -> None:
    """Migration 12 counted the scan position keys an agent added, not its rewrites: the agent login rewrote its key
    (up to 1 MB) any number of times an hour. Every insert and update of its keys counts now."""
    human.settings.set("agent_writes_per_hour", 3)
    key = f"'scan_tips:agent:{project}_agent_login:default'"  # its own (migration 20)
    agent_sql.execute(f"INSERT INTO meta(key, value) VALUES ({key}, '[]')")
    agent_sql.execute(f"UPDATE meta SET value = %s WHERE key = {key}", ('["' + "a" * 40 + '"]',))
    agent_sql.execute(f"INSERT INTO meta(key, value) VALUES ({key}, '[]') "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
    for sql in (f"UPDATE meta SET value = '[]' WHERE key = {key}",
                (f"INSERT INTO meta(key, value) VALUES ({key}, '[]') "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value")):
        with pytest.raises(TOO_MANY, match="scan positions"):
            agent_sql.execute(sql)
    assert buckets(team_url, project, f"{project}_agent_login")["meta"] == 3


def test_the_packages_position_writes_count_as_the_server_counts_them(
        team_url: str, logins: dict[str, str], project: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's vault handle reports its machine's feed position after each index sync (and its offline copy's),
    and saves its scan positions after a scan: each report is one row the server counts, a person's login and an
    agent login syncing from one folder (an agent beside a person in one checkout) keep a row each, and a person's
    writes count nothing."""
    from synapse_nb.gitscope.testing import ScratchRepo
    from synapse_nb.store.postgres.queries import FeedOutbox, MetaQueries
    from synapse_nb.team import open_team_vault

    reports: list[str] = []
    tips: list[str] = []
    save = FeedOutbox._save

    def counting_save(self: FeedOutbox, cursor: str, snap: str) -> None:
        save(self, cursor, snap)
        if self._db.role == "agent":  # an agent handle (the agent login's, here) reported its position
            reports.append(self.name)

    set_tips = MetaQueries.set_scan_tips

    def counting_tips(self: MetaQueries, scope: str, value: Any) -> None:
        set_tips(self, scope, value)
        if scope.startswith("agent:"):
            tips.append(scope)

    monkeypatch.setattr(FeedOutbox, "_save", counting_save)
    monkeypatch.setattr(MetaQueries, "set_scan_tips", counting_tips)
    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("retry.py", "retry = 3\n", "Add retries")
    repo.git("revert", "--no-edit", "HEAD")
    human = open_team_vault(team_url, local=repo.root)
    agent = open_team_vault(logins["agent"], local=repo.root, actor="agent")  # one folder, two logins
    try:
        human.remember("knowledge", "zebras", "the first fact about zebras")
        assert human.index.search("zebras")
        agent.remember("knowledge", "quokkas", "a fact about quokkas")
        assert agent.index.search("quokkas") and agent.index.search("zebras")
        agent.lessons.scan()
        human.remember("knowledge", "pelicans", "the pelicans migrate in spring")
        assert agent.index.search("pelicans")
        agent.lessons.scan()  # nothing new in git: no rewrite
        repo.commit_file("cache.py", "cache = 1\n", "Add a cache")
        agent.lessons.scan()
        assert human.lessons.pending()  # the human's scan starts from its own place
    finally:
        agent.close()
        human.close()
    assert reports and len(tips) == 2, (reports, tips)
    login = f"{project}_agent_login"
    seen = admin_rows(team_url, f"SELECT count(*) FROM {project}.session_seen WHERE session LIKE 'agent:%%'")[0][0]
    counted = buckets(team_url, project, login)
    assert counted.get("sessions", 0) == len(reports) + seen and counted["meta"] == len(tips), (counted, reports)
    rows = admin_rows(team_url, f"SELECT name, login FROM {project}.followers ORDER BY login, name")
    mine, persons = {n for n, who in rows if who == login}, {n for n, who in rows if who != login}
    # one checkout, two logins: a cache folder (and so a machine name) each since review 30, each row its login's
    assert any(not n.endswith("#copy") for n in mine) and persons and not mine & persons, rows


def test_a_sync_whose_position_report_is_refused_still_answers(human: Any, machine: Any, logins: dict[str, str],
                                                                project: str, agent_sql: psycopg.Connection[Any]
                                                                ) -> None:
    """A feed position is what `team status` shows: an agent past its hour's session state rows still syncs its
    index and answers (the report waits for the next sync)."""
    human.settings.set("agent_writes_per_hour", 1)
    agent_sql.execute("INSERT INTO session_seen(mind, session, rid, digest, seen_at) SELECT 'default', %s, "
                      "'mem_' || i, repeat('d', 16), %s FROM generate_series(1, 50) i",
                      (f"agent:{project}_agent_login:flood", human._ctx.now_ts()))
    mem = human.remember("knowledge", "zebras", "the first fact about zebras")
    agent = machine("bot", logins["agent"], actor="agent")
    assert [h.id for h in agent.index.search("zebras")] == [mem.id]
    assert agent.recall("zebras").items


def test_a_vault_at_migration_12_with_data_upgrades_to_13(pg_admin_url: str, machine: Any) -> None:
    """Migration 13 keys a machine's feed position by its name and login: the rows of a project at 12 (no login
    recorded: whose they were is unknown) stay, owned by no login, so no agent may rewrite them; records, session
    rows and scan positions stay as they were, and agents are held to the new counts afterwards."""
    from synapse_nb.store.postgres.migrate import MIGRATIONS, migrate

    project = f"up{uuid.uuid4().hex[:8]}"
    url = f"{pg_admin_url}?project={project}"
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        assert migrate(c, project, MIGRATIONS[:12]) == (0, 12)
        c.execute(f"SET search_path = {project}")
        c.execute("INSERT INTO memories(id, mind, category, key, content, priority, source, verified, confidence, "
                  "created_at, updated_at, terms) VALUES ('mem_old0000000', 'default', 'procedure', 'deploy', "
                  "'deploys go through the blue green script', 1, 'user', 1, 1.0, %s, %s, '{blue,deploy,green}')",
                  (TS, TS))
        c.execute("INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES "
                  "('default', 'conv-1', 'mem_old0000000', 'd', %s)", (TS,))
        c.execute("INSERT INTO meta(key, value) VALUES ('scan_tips:agent:default', '[]')")
        c.execute("INSERT INTO followers(name, cursor_xid, snapshot) SELECT n, pg_snapshot_xmin(pg_current_snapshot()),"
                  " pg_current_snapshot() FROM unnest(ARRAY['laptop:/srv/a', 'ci:/build/b']) n")
        old = c.execute("SELECT name, cursor_xid::text, snapshot::text, synced_at FROM followers ORDER BY name"
                        ).fetchall()
        assert migrate(c, project) == (12, MIGRATIONS[-1].version)
        c.execute(f"SET search_path = {project}")
        assert c.execute("SELECT name, cursor_xid::text, snapshot::text, synced_at FROM followers ORDER BY name"
                         ).fetchall() == old
        assert c.execute("SELECT DISTINCT login FROM followers").fetchall() == [("",)]
        assert c.execute("SELECT count(*) FROM session_seen").fetchone() == (1,)
        # the scan place agents shared is gone (migration 20: any agent could write it; each keeps its own now)
        assert c.execute("SELECT value FROM meta WHERE key = 'scan_tips:agent:default'").fetchone() is None
        c.execute(f"CREATE ROLE {project}_bot LOGIN IN ROLE {project}_agent")
        c.execute(f"INSERT INTO {project}.mind_grants(grantee, mind) VALUES (%s, '*')", (f"{project}_bot",))
    human = machine("h", url)
    assert human.memories.get("mem_old0000000").verified
    bot_url = url_as(pg_admin_url, f"{project}_bot")
    with psycopg.connect(bot_url, autocommit=True) as bot:
        bot.execute(f"SET search_path = {project}")
        with pytest.raises(DENIED, match="feed position"):
            bot.execute("UPDATE followers SET synced_at = now() WHERE name = 'laptop:/srv/a'")
        bot.execute(f"INSERT INTO meta(key, value) VALUES ('scan_tips:agent:{project}_bot:default', '[]')")  # counted
    assert buckets(url, project, f"{project}_bot") == {"meta": 1}
    agent = machine("bot", f"{bot_url}?project={project}", actor="agent")
    assert agent.index.search("deploys") and agent.checkpoint("after the upgrade").source == "agent"
    with pytest.raises(PermissionDeniedError, match="the user"):
        agent.memories.delete("mem_old0000000")
    from synapse_nb.team import status

    machines = status(url, local=human.project_dir)["machines"]
    assert {m["name"] for m in machines} >= {"laptop:/srv/a", "ci:/build/b"}
    assert {m["login"] for m in machines} >= {"", f"{project}_bot"}, machines
