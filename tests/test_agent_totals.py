"""The agents' bounded totals (trust: "nothing caps what an agent floods in"): records agents hold per mind and in the
whole vault, and the megabytes of their text, on a local vault (schema v7 keeps the counts by triggers). The team
vault's server holds the same bounds: tests/team/test_team_agent_totals.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import downgrade

import synapse_nb as syn
from synapse_nb.errors import PermissionDeniedError, QuotaExceededError
from synapse_nb.settings import SETTINGS
from synapse_nb.store.sqlite.held_schema import HELD, held_bytes_sql
from synapse_nb.vault.locate import DB_NAME, VAULT_DIRNAME


def held(v: syn.Vault) -> tuple[int, int, int, int]:
    return v._store.meta.agent_held(v.mind)


def recount(path: Path) -> dict[str, tuple[int, int]]:
    """What agents hold, counted from every row (what the triggers' counts must equal)."""
    db = sqlite3.connect(path / VAULT_DIRNAME / DB_NAME)
    out: dict[str, tuple[int, int]] = {}
    for table in HELD:
        for mind, n, b in db.execute(f"SELECT t.mind, count(*), sum({held_bytes_sql(table, 't')}) FROM {table} t "
                                     f"WHERE {HELD[table].format(r='t')} GROUP BY t.mind"):
            old = out.get(mind, (0, 0))
            out[mind] = (old[0] + n, old[1] + b)
    db.close()
    return out


@pytest.fixture()
def user(tmp_path: Path) -> syn.Vault:
    return syn.open_vault(tmp_path)


def agent(tmp_path: Path, mind: str = "default") -> syn.Vault:
    return syn.open_vault(tmp_path, actor="agent", mind=mind)


def test_the_defaults_are_generous_and_settings_exist() -> None:
    assert SETTINGS["agent_records_per_mind"][0] == 20_000
    assert SETTINGS["agent_records_per_vault"][0] == 100_000
    assert SETTINGS["agent_megabytes_per_vault"][0] == 500
    assert SETTINGS["agent_memories_per_mind"][0] == 5000  # the older setting is kept, and still holds


def test_an_agent_past_the_vault_total_is_refused_every_kind_counts(user: syn.Vault, tmp_path: Path) -> None:
    user.settings.set("agent_records_per_vault", 4)
    a = agent(tmp_path)
    a.checkpoint("one")
    a.decide("two")
    a.notes.add("three", "when three", "body")
    a.remember("knowledge", "four", "the fourth")
    for write in (lambda: a.checkpoint("five"), lambda: a.decide("five"), lambda: a.remember("knowledge", "five", "x"),
                  lambda: a.notes.add("five", "when five", "body")):
        with pytest.raises(QuotaExceededError, match=r"4 records held in the whole vault is reached \(4 .*"
                                                     r"agent_records_per_vault.*settings set "
                                                     r"agent_records_per_vault N"):
            write()
    assert held(a)[2] == 4
    # a change that adds no record still passes (the note is the agent's own)
    a.notes.add("three", "when three", "a new body")


def test_another_mind_does_not_escape_the_vault_bound(user: syn.Vault, tmp_path: Path) -> None:
    """An agent chooses its mind: a bound per mind was as many times larger as the minds it invented."""
    user.settings.set("agent_records_per_vault", 3)
    a = agent(tmp_path)
    for i in range(3):
        a.checkpoint(f"step {i}")
    for mind in ("invented-1", "invented-2"):
        with pytest.raises(QuotaExceededError, match="agent_records_per_vault"):
            agent(tmp_path, mind).checkpoint("a fresh mind")
    assert held(agent(tmp_path, "invented-1")) == (0, 0, 3, held(a)[3])


def test_records_per_mind(user: syn.Vault, tmp_path: Path) -> None:
    user.settings.set("agent_records_per_mind", 2)
    a = agent(tmp_path)
    a.checkpoint("one")
    a.decide("two")
    with pytest.raises(QuotaExceededError,
                       match=r"2 records held in mind 'default' is reached.*agent_records_per_mind"):
        a.episodes.log("task_x", status="success")
    agent(tmp_path, "other").checkpoint("another mind holds its own")


def test_a_humans_writes_are_never_limited(user: syn.Vault, tmp_path: Path) -> None:
    user.settings.set("agent_records_per_vault", 1)
    user.settings.set("agent_megabytes_per_vault", 1)
    agent(tmp_path).checkpoint("the agent's one")
    for i in range(5):
        user.checkpoint(f"the human's {i}")
        user.remember("knowledge", f"h{i}", "x" * 30_000)
    assert held(user)[2] == 1  # a person's records are not what agents hold


def test_deleting_stale_agent_records_frees_room(user: syn.Vault, tmp_path: Path) -> None:
    user.settings.set("agent_records_per_vault", 2)
    a = agent(tmp_path)
    stale = a.remember("knowledge", "stale", "no longer true")
    note = a.notes.add("old", "when old", "old body")
    with pytest.raises(QuotaExceededError):
        a.decide("refused")
    a.memories.delete(stale.id)  # the agent deletes its own
    a.decide("now there is room")
    with pytest.raises(QuotaExceededError):
        a.checkpoint("refused again")
    user.notes.delete(note.name)  # a person deletes one
    a.checkpoint("room again")
    # a person verifying an agent's memory takes it on: it is no longer what agents hold
    user.settings.set("agent_records_per_vault", 3)
    mem = a.remember("knowledge", "kept", "a person checks this")
    with pytest.raises(QuotaExceededError):
        a.checkpoint("full")
    user.memories.verify(mem.id)
    a.checkpoint("verified memory freed room")


def test_the_megabytes_of_agents_text_are_bounded(user: syn.Vault, tmp_path: Path) -> None:
    user.settings.set("agent_megabytes_per_vault", 1)
    a = agent(tmp_path)
    written = 0
    with pytest.raises(QuotaExceededError, match=r"1 MB of text held in the whole vault is reached.*"
                                                 r"agent_megabytes_per_vault"):
        for i in range(100):
            a.notes.add(f"n{i}", "when", "x" * 30_000)
            written += 1
    assert 30 <= written <= 34
    assert held(a)[3] <= 1_000_000  # never past the bound: the write that would pass it is rolled back
    # growing an agent's own record past the bound is refused too; shrinking one frees room
    a.notes.add("fill", "when", "z" * (1_000_000 - held(a)[3] - 1_000))  # up to 1,000 bytes under the bound
    with pytest.raises(QuotaExceededError, match="agent_megabytes_per_vault"):
        a.notes.add("n0", "when", "y" * 32_000)
    a.notes.add("n0", "when", "short")
    a.notes.add("fits", "when", "x" * 20_000)


def test_the_counts_stay_exact(user: syn.Vault, tmp_path: Path) -> None:
    a = agent(tmp_path)
    b = agent(tmp_path, "second")
    m = a.remember("knowledge", "k1", "é" * 50)  # bytes, not characters
    a.remember("knowledge", "k1", "changed content")
    a.checkpoint("x", files=["a.py", "b.py"], next_step="n", blockers="b")
    b.decide("d", rationale="r", tags=["t"])
    b.notes.add("n", "t", "body")
    user.checkpoint("the human's")
    user.memories.verify(m.id)
    b.notes.delete("n")
    counted = recount(tmp_path)
    for v, mind in ((a, "default"), (b, "second")):
        mind_n, mind_b, all_n, all_b = held(v)
        assert (mind_n, mind_b) == counted.get(mind, (0, 0))
        assert (all_n, all_b) == (sum(n for n, _ in counted.values()), sum(b for _, b in counted.values()))


def test_a_v6_vault_is_counted_when_it_migrates(user: syn.Vault, tmp_path: Path) -> None:
    """A vault written before the totals: its agent records are counted by the migration."""
    a = agent(tmp_path)
    for i in range(3):
        a.checkpoint(f"before {i}")
    a.remember("knowledge", "before", "an agent memory")
    expected = held(a)
    a.close()
    user.close()
    db = sqlite3.connect(tmp_path / VAULT_DIRNAME / DB_NAME)
    downgrade(db, 6)
    db.close()
    again = agent(tmp_path)
    assert again._store.schema_version == 15
    assert held(again) == expected and expected[0] == 4


def test_settings_stay_a_humans_to_change(tmp_path: Path, user: syn.Vault) -> None:
    a = agent(tmp_path)
    for name in ("agent_records_per_mind", "agent_records_per_vault", "agent_megabytes_per_vault"):
        with pytest.raises(PermissionDeniedError):
            a.settings.set(name, 10**9 if name != "agent_megabytes_per_vault" else 10**6)


def test_a_person_prunes_the_agents_old_records_to_free_the_totals(tmp_path: Path) -> None:
    """Checkpoints and episodes had no delete for anyone: after a flood the only way back under the bound was
    `memory purge ID`, one record at a time. `memory prune --agent-records-older-than D` deletes the mind's agents'
    records no person took on, last changed longer ago, each deletion in history; people's records and verified
    memories stay."""
    from datetime import UTC, datetime, timedelta

    class Clock:
        t = datetime(2026, 3, 1, tzinfo=UTC)

        def __call__(self) -> datetime:
            self.t += timedelta(milliseconds=1)
            return self.t

    clock = Clock()
    user = syn.open_vault(tmp_path, clock=clock)
    user.settings.set("agent_records_per_vault", 5)
    a = syn.open_vault(tmp_path, actor="agent", clock=clock)
    old = [a.checkpoint("flood one").id, a.episodes.log("flood_two", outcome="x").id, a.decide("flood three").id,
           a.notes.add("flood_four", "when four", "body").id]
    kept_mem = a.remember("knowledge", "verified_later", "a fact a person verified")
    user.memories.verify(kept_mem.id)
    mine = user.decide("a person's decision")
    with pytest.raises(QuotaExceededError):
        for i in range(3):
            a.remember("knowledge", f"more_{i}", "y")
    clock.t += timedelta(days=20)
    fresh = a.checkpoint("recent work").id if held(user)[2] < 5 else None
    with pytest.raises(PermissionDeniedError):
        a.prune(agent_records_older_than="14d")
    rep = user.prune(agent_records_older_than="14d")
    assert set(old) <= set(rep.agent_records_deleted) and "old agent record" in str(rep)
    assert mine.id not in rep.agent_records_deleted and kept_mem.id not in rep.agent_records_deleted
    assert fresh is None or fresh not in rep.agent_records_deleted
    assert user.memories.get(kept_mem.id).verified and user.decisions.get(mine.id)
    assert [e.action for e in user.history(old[0])][-1] == "delete"
    a.checkpoint("room again")  # the totals have room
    assert recount(tmp_path)["default"][0] == held(user)[0]
    assert user.prune().agent_records_deleted == ()  # off unless asked
