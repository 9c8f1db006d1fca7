"""s21: every way a lesson leaves force is named to the session that was given it.

A lesson rejected after approval, or purged, took its session marks with it (the lesson's delete trigger dropped
them), so the next recall of a session that held it said nothing, and the agent went on following it. Now a
rejected lesson is named, once, by the wording the session was given (its history holds it); a purged one is said
to be deleted by a person, without its wording, and nothing of the purged text (nor its digest) is left in the
session's marks. The team vault's side: tests/team/test_team_sessions.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import synapse_nb as syn
from tests.conftest import downgrade
from tests.test_session_review87 import FRIDAY, STAGING, _two_lessons, prompt, start

REJECTED = (f'(no longer in force, do not follow: "{FRIDAY}" — shown earlier in this session, since rejected by a '
            "person)")
DELETED = ("(no longer in force: an approved lesson shown earlier in this session was deleted by a person, its "
           "wording with it; do not follow it)")
STILL = "(the other approved lesson shown earlier in this session is still in force)"


def _marks(repo: Path, rid: str) -> list[str]:
    con = sqlite3.connect(repo / ".synapse" / "synapse.db")
    try:
        return [r[0] for r in con.execute("SELECT digest FROM session_seen WHERE rid = ?", (rid,))]
    finally:
        con.close()


def test_a_lesson_rejected_after_approval_is_named_once_by_the_hook(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    first = start(git_repo)
    assert FRIDAY in first and STAGING in first
    with syn.open_vault(git_repo) as v:
        v.lessons.reject(friday)
    text = prompt(git_repo, "where is the billing database migration script?")
    assert REJECTED in text and STILL in text and "tools/migrate.py" in text
    assert "no longer in force" not in prompt(git_repo, "where does the billing database migration script live?")
    assert _marks(git_repo, friday) == ["gone"]  # told: the session's mark says so, and it is not named again


def test_a_purged_lesson_is_named_without_its_wording_and_nothing_of_it_is_kept(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    with syn.open_vault(git_repo) as v:
        given = v.lessons.get(friday).digest
    with syn.open_vault(git_repo, actor="agent") as agent, syn.open_vault(git_repo) as person:
        assert FRIDAY in agent.recall("migration script", session="m1").text
        person.purge(friday)
        assert _marks(git_repo, friday) == ["purged"]  # no digest of the purged text
        r = agent.recall("migration script", session="m1")
        assert r.no_longer == ((friday, None, "purged"),)
        assert r.text.splitlines()[:3] == ["APPROVED SYSTEM MEMORY — CRITICAL: ADHERE", DELETED, STILL]
        assert FRIDAY not in r.text and "Friday" not in r.text
        assert agent.recall("migration script", session="m1").text.startswith("nothing new for:")  # told once
    raw = (git_repo / ".synapse" / "synapse.db").read_bytes()
    assert FRIDAY.encode() not in raw and given.encode() not in raw  # the purge promise holds


def test_a_lesson_rejected_then_purged_before_the_next_recall_is_said_deleted(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    with syn.open_vault(git_repo, actor="agent") as agent, syn.open_vault(git_repo) as person:
        agent.recall("migration script", session="m1")
        person.lessons.reject(friday)
        person.purge(friday)  # what was left of it: its history, and the marks' digest
        r = agent.recall("migration script", session="m1")
        assert r.no_longer == ((friday, None, "purged"),) and DELETED in r.text.splitlines()


def test_a_rejected_lesson_the_session_was_told_of_is_not_named_again_after_a_purge(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    with syn.open_vault(git_repo, actor="agent") as agent, syn.open_vault(git_repo) as person:
        agent.recall("migration script", session="m1")
        person.lessons.reject(friday)
        assert REJECTED in agent.recall("migration script", session="m1").text.splitlines()
        person.purge(friday)
        assert _marks(git_repo, friday) == ["gone"]
        assert agent.recall("migration script", session="m1").no_longer == ()


def test_lessons_leaving_force_are_named_five_at_a_time_and_every_one_once(tmp_path: Path) -> None:
    person = syn.open_vault(tmp_path)
    ids = []
    for i in range(8):
        les = person.lessons.create(f"lesson {i}")
        person.lessons.approve(les.id, text=f"Rule number {i} of the billing service.")
        ids.append(les.id)
    agent = person.as_agent()
    shown = agent.recall("billing", session="s").text
    assert all(f"Rule number {i} " in shown for i in range(8))
    for rid in ids[:6]:
        person.lessons.reject(rid)
    for rid in ids[6:]:
        person.purge(rid)
    first = agent.recall("billing", session="s")
    lines = first.text.splitlines()
    assert sum("since rejected by a person" in x for x in lines) == 5
    assert ("(no longer in force: 2 approved lessons shown earlier in this session were deleted by a person, their "
            "wording with them; do not follow them)") in lines
    assert not any("cannot be read" in x for x in lines)  # the sixth's history is read by the next answer
    second = agent.recall("billing", session="s").text.splitlines()
    assert sum("since rejected by a person" in x for x in second) == 1 and not any("deleted" in x for x in second)
    assert agent.recall("billing", session="s").no_longer == ()
    person.close()


def test_a_vault_from_before_keeps_a_rejected_lessons_marks_once_migrated(git_repo: Path) -> None:
    friday = _two_lessons(git_repo)
    conn = sqlite3.connect(git_repo / ".synapse" / "synapse.db")
    downgrade(conn, 13)  # v13's lessons_ad, which took the marks with the lesson
    conn.close()
    with syn.open_vault(git_repo, actor="agent") as agent, syn.open_vault(git_repo) as person:
        assert person._store.schema_version == 15
        agent.recall("migration script", session="m1")
        person.lessons.reject(friday)
        assert REJECTED in agent.recall("migration script", session="m1").text.splitlines()
        assert person.lessons.search("migrations") == []  # the lesson's search text went with it, as before


def test_a_purged_mark_of_a_stored_lesson_is_not_believed(git_repo: Path) -> None:
    """Review 97: a session's mark is no record of what a person did. A 'purged' mark of a lesson in force (an
    agent's process can write the vault file: the person's Unix user) told the session a person had deleted the
    lesson, "do not follow it". The lesson's row is believed: one in force is given in full, and one stored out of
    force is named as no longer in force, not as a person's deletion."""
    friday = _two_lessons(git_repo)
    db = git_repo / ".synapse" / "synapse.db"

    def forge() -> None:
        con = sqlite3.connect(db)
        try:
            with con:
                con.execute("UPDATE session_seen SET digest = 'purged' WHERE rid = ?", (friday,))
        finally:
            con.close()

    with syn.open_vault(git_repo, actor="agent") as agent, syn.open_vault(git_repo) as person:
        given = person.lessons.get(friday).digest
        assert FRIDAY in agent.recall("migration script", session="m1").text
        forge()
        r = agent.recall("migration script", session="m1")
        assert r.no_longer == () and DELETED not in r.text and f"[all branches, approved] {FRIDAY}" in r.text
        assert _marks(git_repo, friday) == [given]  # given again: its digest is the mark
        forge()
        person.lessons.withdraw(friday)
        r = agent.recall("migration script", session="m1")
        assert r.no_longer == ((friday, None, "unknown"),) and DELETED not in r.text
        assert "(1 approved lesson shown earlier in this session is no longer in force" in r.text
