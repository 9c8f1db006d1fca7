"""The team vault end to end on a real PostgreSQL: the URL everywhere, team init / join / status, two machines
giving the same recall bytes, the change feed, frequencies equal to a recount, the schema version guard."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.errors import ConflictError, PermissionDeniedError, SchemaError
from synapse_nb.store.postgres import CODE_VERSION
from synapse_nb.team import init, join, status


def test_the_url_opens_a_team_vault_everywhere(team_url: str, machine: Any, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    v = machine("a", team_url)
    m = v.remember("knowledge", "deploy_day", "deploys run on fridays after the freeze", tags="ops")
    les = v.lessons.create("Reverted the retry change: it hid timeouts")
    v.lessons.approve(les.id, text="never retry on timeouts blindly")
    v.decide("use postgres for the team vault", rationale="trusted distributed engine")
    r = v.recall("when do deploys run?")
    assert "never retry on timeouts blindly" in r.text and "deploys run on fridays" in r.text
    assert v.status().counts["memories"]["total"] == 1
    # SYNAPSE_HOME and --vault take the same URL
    monkeypatch.chdir(tmp_path / "machine_a")
    monkeypatch.setenv("SYNAPSE_HOME", team_url)
    assert syn.open_vault().memories.get(m.id).content == m.content
    monkeypatch.delenv("SYNAPSE_HOME")
    out = CliRunner().invoke(app, ["--vault", team_url, "memory", "list"])
    assert out.exit_code == 0 and m.id in out.output, out.output
    out = CliRunner().invoke(app, ["--vault", team_url, "recall", "deploys fridays"])
    assert out.exit_code == 0 and "deploy_day" in out.output


def test_team_init_is_idempotent_and_safe_to_run_at_once(pg_admin_url: str, tmp_path: Path) -> None:
    url = f"{pg_admin_url}?project=initrace{threading.get_ident() % 1000}"
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(init(url, local=tmp_path))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    v = CODE_VERSION
    assert sorted((r["version_before"], r["version"]) for r in results) == [(0, v), (v, v), (v, v), (v, v)]
    out = CliRunner().invoke(app, ["team", "init", url, "--json"])
    assert out.exit_code == 0 and f'"version_before": {v}' in out.output


def test_a_schema_newer_than_the_code_is_refused(pg_admin_url: str, project: str, team_url: str,
                                                 tmp_path: Path) -> None:
    with psycopg.connect(pg_admin_url, autocommit=True) as c:
        c.execute(f"INSERT INTO {project}.schema_version(version, name) VALUES ({CODE_VERSION + 1}, 'the future')")
    with pytest.raises(SchemaError, match="newer than this synapse_nb knows"):
        syn.open_vault(team_url)
    with pytest.raises(SchemaError, match="nothing was changed"):
        init(team_url, local=tmp_path)
    out = CliRunner().invoke(app, ["--vault", team_url, "memory", "list"])
    assert out.exit_code == 1 and "newer" in out.output


def test_join_moves_a_local_vault_all_or_nothing_and_again_changes_nothing(team_url: str, machine: Any,
                                                                           tmp_path: Path) -> None:
    for name in ("laptop", "other", "m"):
        (tmp_path / name).mkdir()
    local = syn.open_vault(tmp_path / "laptop")
    local.remember("knowledge", "backups", "pg_dump every night")
    local.decide("ship on fridays")
    les = local.lessons.create("Reverted the cache change")
    local.lessons.approve(les.id)
    local.close()
    counts = join(team_url, tmp_path / "laptop", local=tmp_path / "m")
    assert counts["memory"] == 1 and counts["decision"] == 1 and counts["lesson"] == 1
    assert join(team_url, tmp_path / "laptop", local=tmp_path / "m")["skipped"] == 3
    team = machine("a", team_url)
    assert team.lessons.get(les.id).status == "approved"
    # a record the team vault holds differently refuses the whole join
    other = syn.open_vault(tmp_path / "other")
    other.remember("knowledge", "new_fact", "never imported")
    other.remember("knowledge", "backups", "a different answer")  # same (mind, category, key), other id
    other.close()
    with pytest.raises(ConflictError):
        join(team_url, tmp_path / "other", local=tmp_path / "m")
    assert [m.key for m in team.memories.list()] == ["backups"]
    out = CliRunner().invoke(app, ["team", "join", team_url, "--from", str(tmp_path / "laptop"), "--json"])
    assert out.exit_code == 0 and '"skipped": 3' in out.output


def test_two_machines_give_the_same_recall_bytes(team_url: str, machine: Any) -> None:
    a, b = machine("a", team_url), machine("b", team_url)
    topics = ["deploys", "migrations", "backups", "timeouts", "caching", "retries", "schemas", "indexes"]
    for i in range(40):
        w = a if i % 2 else b
        t = topics[i % len(topics)]
        w.remember("knowledge", f"{t}_{i}", f"{t} note {i}: how we handle {t} and {topics[(i * 3) % 8]} safely")
    les = a.lessons.create("Reverted the index change")
    b.lessons.approve(les.id)
    queries = [f"how do we handle {t}?" for t in topics] + [f"{x} and {y}" for x in topics[:3] for y in topics[3:]]
    ta = [a.recall(q).text for q in queries]
    tb = [b.recall(q).text for q in queries]
    assert ta == tb
    assert sum("handle" in t for t in ta) >= len(topics)
    assert a._store.integrity_check() == "ok"  # frequencies equal a recount


def test_the_change_feed_brings_another_machines_write_into_the_local_index(team_url: str, machine: Any) -> None:
    a, b = machine("a", team_url), machine("b", team_url)
    a.remember("knowledge", "first", "the first fact about zebras")
    assert [h.id for h in b.index.search("zebras")]  # built from the server on first use
    m = a.remember("knowledge", "second", "a second fact about quokkas")
    assert m.id in [h.id for h in b.index.search("quokkas")]  # applied from the feed before the search
    a.memories.delete(m.id)
    assert m.id not in [h.id for h in b.index.search("quokkas")]
    st = status(team_url, local=b.project_dir)
    assert st["online"] and st["schema_version"] == CODE_VERSION and st["index_behind"] == 0 and st["index_cursor"]
    assert any("machine_b" in x["name"] for x in st["machines"])
    out = CliRunner().invoke(app, ["team", "status", team_url, "--json"])
    assert out.exit_code == 0 and '"online": true' in out.output


def test_a_revert_makes_one_lesson_across_machines(team_url: str, machine: Any) -> None:
    a, b = machine("a", team_url), machine("b", team_url)
    commit = {"sha": "a" * 40, "subject": "Revert retry", "author": "x", "date": "2026-01-01"}
    a.lessons.create("Reverted retry", revert_commit=commit)
    with pytest.raises(ConflictError):
        b.lessons.create("Reverted retry", revert_commit=commit)  # another machine: the server knows
    with pytest.raises(PermissionDeniedError, match="without naming a revert"):  # an agent names none (scan does)
        machine("c", team_url, actor="agent").lessons.create("Reverted retry", revert_commit=commit)
    assert a.lessons.pending().__len__() == 1


def test_a_revert_scanned_on_two_machines_is_one_pending_lesson(team_url: str, tmp_path: Path) -> None:
    from synapse_nb.gitscope.testing import ScratchRepo
    from synapse_nb.team import open_team_vault

    a_repo = ScratchRepo.init(tmp_path / "a")
    a_repo.commit_file("retry.py", "retry = 3\n", "Add retries")
    a_repo.git("revert", "--no-edit", "HEAD")
    b_repo = ScratchRepo(tmp_path / "b")
    a_repo.git("clone", "-q", str(a_repo.root), str(b_repo.root))  # machine B: a clone holding the same revert
    a = open_team_vault(team_url, local=a_repo.root)
    b = open_team_vault(team_url, local=b_repo.root, actor="agent")  # e.g. B's git hook, as the agent
    try:
        assert len(a.lessons.scan()) == 1
        b.lessons.scan()
        assert len(a.lessons.pending()) == 1
    finally:
        a.close()
        b.close()


def test_a_following_machine_is_woken_by_the_commit_not_by_polling(team_url: str, machine: Any) -> None:
    import time

    import lancedb  # noqa: F401

    # the index's backend imported here, before the bounds below: the follower's first sync in a process that had
    # not imported it yet paid that import too (39 s on a busy machine for the local follower below)
    a, b = machine("a", team_url), machine("b", team_url)
    a.remember("knowledge", "first", "the first fact about zebras")
    with b.index.follow(timeout=120) as f:
        assert f.wait_synced(0, 60), f.last_error  # built from the server on its first sync
        idle = f.syncs
        time.sleep(1.5)
        assert f.syncs == idle, (f.syncs, f.last_error)  # nothing committed: it waits on LISTEN, it does not poll

        def in_b_copy(word: str) -> list[str]:  # b's index as it stands, without the sync a search makes
            return [h.id for h in b.index.raw.search(word, mind="default", now="9999", k=5)]

        m = a.remember("knowledge", "second", "a second fact about quokkas")
        t0 = time.monotonic()
        while m.id not in in_b_copy("quokkas") and time.monotonic() - t0 < 60:
            time.sleep(0.01)
        took = time.monotonic() - t0
        assert m.id in in_b_copy("quokkas") and took < 30, (took, f.syncs, f.last_error)  # woken: not the 120 s
        # the row is in the index a moment before the follower counts its sync: waited for on its own condition
        assert f.wait_synced(idle, 60) and f.applied >= 1, (f.syncs, f.last_error)
    assert not f.running


def test_a_local_vault_index_can_follow_too(tmp_path: Path) -> None:
    v = syn.open_vault(tmp_path)
    # a first sync here, outside the bounds below: in a process that has not imported the index's backend yet
    # (lancedb and its pydantic models: which depends on the tests this worker ran before) the follower's first sync
    # paid that import, 39 s on a busy machine, and wait_synced(0, 20) failed
    v.index.sync()
    with v.index.follow(timeout=0.5) as f:
        assert f.wait_synced(0, 20)
        n = f.syncs
        m = v.remember("knowledge", "k", "the pelicans migrate in spring")
        assert f.wait_synced(n, 5)
        assert m.id in [h.id for h in v.index.raw.search("pelicans", mind="default", now="9999", k=5)]
    v.close()
