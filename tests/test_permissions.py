"""Human-gated mutation, enforced in the core: what an agent handle may and may not do.

Every refusal is a PermissionDeniedError (also a PermissionError) and leaves the vault byte-identical
(compared through export_jsonl() from the user handle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import FakeClock

import synapse_nb as syn


@pytest.fixture()
def seeded(vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock) -> dict[str, Any]:
    """A vault with user and agent records, and lessons in every state."""
    ids: dict[str, Any] = {}
    ids["user_mem"] = vault.remember("preference", "style", "numpy docstrings", tags=["style"])
    ids["agent_mem"] = agent_vault.remember("knowledge", "guess", "maybe flaky")
    ids["user_note"] = vault.notes.add("user_note", "when releasing", "steps")
    ids["agent_note"] = agent_vault.notes.add("agent_note", "agent trigger", "agent body")
    ids["expired"] = vault.lessons.approve(vault.lessons.create("old lesson").id, expiry_days=1)
    clock.advance(days=2)
    ids["pending"] = vault.lessons.create("pending lesson")
    ids["approved"] = vault.lessons.approve(vault.lessons.create("approved lesson").id)
    ids["decision"] = vault.decide("user decision")
    return ids


def _refusals(a: syn.Vault, ids: dict[str, Any], tmp_export: str) -> dict[str, Callable[[], Any]]:
    um, am = ids["user_mem"], ids["agent_mem"]
    return {
        "approve pending lesson": lambda: a.lessons.approve(ids["pending"].id),
        "reject pending lesson": lambda: a.lessons.reject(ids["pending"].id),
        "reject approved lesson": lambda: a.lessons.reject(ids["approved"].id),
        "reapprove expired lesson": lambda: a.lessons.reapprove(ids["expired"].id),
        "verify agent memory": lambda: a.memories.verify(am.id),
        "verify user memory": lambda: a.memories.verify(um.id),
        "overwrite user memory": lambda: a.remember("preference", "style", "agent's style"),
        "update user memory": lambda: a.memories.update(um.id, content="changed"),
        "update user memory tags": lambda: a.memories.update(um.id, tags=["x"]),
        "delete user memory": lambda: a.memories.delete(um.id),
        "overwrite user note": lambda: a.notes.add("user_note", "t", "agent body"),
        "delete user note": lambda: a.notes.delete("user_note"),
        "claim source user": lambda: a.remember("knowledge", "new_one", "x", source="user"),
        "claim source user uppercase": lambda: a.remember("knowledge", "new_one", "x", source="USER"),
        "claim verified": lambda: a.remember("knowledge", "new_one", "x", verified=True),
        "confidence above 0.7": lambda: a.remember("knowledge", "new_one", "x", confidence=0.71),
        "confidence 1.0": lambda: a.remember("knowledge", "new_one", "x", confidence=1.0),
        "raise own confidence": lambda: a.memories.update(am.id, confidence=0.9),
        "list pending": lambda: a.lessons.list(status="pending"),
        "list expired": lambda: a.lessons.list(status="expired"),
        "pending()": lambda: a.lessons.pending(),
        "expired()": lambda: a.lessons.expired(),
        "get pending lesson": lambda: a.lessons.get(ids["pending"].id),
        "get expired lesson": lambda: a.lessons.get(ids["expired"].id),
        "settings.set": lambda: a.settings.set("lesson_expiry_days", 30),
        "prune": lambda: a.prune(),
        "export": lambda: a.export_jsonl(),
        "import": lambda: a.import_jsonl(tmp_export.splitlines()),
        "delete decision": lambda: a.decisions.delete(ids["decision"].id),
    }


REFUSALS = ["approve pending lesson", "reject pending lesson", "reject approved lesson", "reapprove expired lesson",
            "verify agent memory", "verify user memory", "delete user memory", "overwrite user note",
            "delete user note",
            "claim source user", "claim source user uppercase", "claim verified", "confidence above 0.7",
            "confidence 1.0", "raise own confidence", "list pending", "list expired", "pending()", "expired()",
            "get pending lesson", "get expired lesson", "settings.set", "prune", "export", "import",
            "delete decision"]


#: An agent's change to a memory a human wrote is no longer refused (issue 30): it becomes a pending revision that
#: changes nothing until a human accepts it.
PROPOSALS = ["overwrite user memory", "update user memory", "update user memory tags"]


def test_refusal_list_is_complete(vault: syn.Vault, seeded: dict[str, Any]) -> None:
    assert sorted(_refusals(vault.as_agent(), seeded, "")) == sorted(REFUSALS + PROPOSALS)


@pytest.mark.parametrize("action", PROPOSALS)
def test_agent_change_to_a_human_memory_is_a_pending_revision(vault: syn.Vault, seeded: dict[str, Any],
                                                              clock: FakeClock, action: str) -> None:
    before = vault.export_jsonl()
    clock.advance(seconds=1)
    _refusals(vault.as_agent(), seeded, "")[action]()
    assert vault.export_jsonl() == before  # nothing changed
    (rev,) = vault.memories.revisions()
    assert rev.status == "pending" and rev.actor == "agent"
    with pytest.raises(syn.PermissionDeniedError):
        vault.as_agent().memories.accept(rev.id)
    assert vault.export_jsonl() == before


@pytest.mark.parametrize("action", REFUSALS)
def test_agent_refused_and_vault_unchanged(vault: syn.Vault, seeded: dict[str, Any], clock: FakeClock,
                                          action: str) -> None:
    before = vault.export_jsonl()
    agent = vault.as_agent()
    # an import that would add a new mind's memory: refused for the agent
    (vault.path.parent / "elsewhere").mkdir(parents=True, exist_ok=True)  # open_vault never creates missing folders
    other = syn.open_vault(vault.path.parent / "elsewhere")
    other.remember("knowledge", "imported", "from elsewhere")
    export = other.export_jsonl()
    other.close()
    clock.advance(seconds=1)  # any write would now change updated_at
    with pytest.raises(syn.PermissionDeniedError) as ei:
        _refusals(agent, seeded, export)[action]()
    assert isinstance(ei.value, PermissionError) and isinstance(ei.value, syn.SynapseError)
    assert "\n" not in str(ei.value) and str(ei.value)
    assert vault.export_jsonl() == before


def test_agent_handles_stay_agent(vault: syn.Vault) -> None:
    a = vault.as_agent()
    assert a.with_mind("other").actor == "agent"
    assert a.as_agent().actor == "agent"
    assert not hasattr(a, "as_user")
    # review 29: `actor` was a plain attribute, and some checks of the facade read it: set to "user" on an agent's
    # handle it opened a pending lesson's history and the whole vault's export. It is read from the context now.
    pending = vault.lessons.create("Never deploy on Fridays")
    for name, value in (("actor", "user"), ("mind", "other")):
        with pytest.raises(AttributeError):
            setattr(a, name, value)
    assert a.actor == "agent"
    with pytest.raises(syn.PermissionDeniedError):
        a.history(pending.id)
    with pytest.raises(syn.PermissionDeniedError):
        a.export_jsonl()


def test_agent_can_propose_and_manage_its_own(vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock) -> None:
    m = agent_vault.remember("knowledge", "hypothesis", "cache misses cause the slowdown", tags=["perf"],
                             confidence=0.5, expires="7d")
    assert (m.source, m.verified, m.confidence) == ("agent", False, 0.5)
    assert agent_vault.remember("knowledge", "hypothesis", "v2").id == m.id  # its own: upsert allowed
    u = agent_vault.memories.update(m.id, content="v3", confidence=0.6)
    assert (u.content, u.confidence, u.verified) == ("v3", 0.6, False)
    agent_vault.notes.add("agent_note", "t", "b")
    agent_vault.notes.add("agent_note", "t2", "b2")
    assert agent_vault.notes.delete("agent_note").trigger == "t2"
    c = agent_vault.checkpoint("agent checkpoint")
    d = agent_vault.decide("agent decision")
    e = agent_vault.episodes.log("agent_task")
    assert (c.source, d.source, e.source) == ("agent", "agent", "agent")
    assert agent_vault.memories.delete(m.id).id == m.id
    # the user sees all of it
    assert vault.checkpoints.get(c.id).source == "agent"
    assert vault.decisions.get(d.id).source == "agent"


def test_agent_submits_analysis_on_pending_lesson(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    les = vault.lessons.create("reverted retries")
    assert agent_vault.lessons.submit_analysis(les.id, "the retry had no idempotency key") is None
    got = vault.lessons.get(les.id)
    assert (got.status, got.analysis, got.analysis_by, got.lesson_text) == (
        "pending", "the retry had no idempotency key", "agent", None)
    # but not on an approved lesson
    vault.lessons.approve(les.id, text="Retry only with an idempotency key")
    before = vault.export_jsonl()
    with pytest.raises(syn.ConflictError):
        agent_vault.lessons.submit_analysis(les.id, "rewrite history")
    assert vault.export_jsonl() == before


def test_agent_sees_only_approved_unexpired_lessons(vault: syn.Vault, agent_vault: syn.Vault,
                                                    seeded: dict[str, Any]) -> None:
    ok = seeded["approved"].id
    assert [x.id for x in agent_vault.lessons.list()] == [ok]
    assert [x.id for x in agent_vault.lessons.approved()] == [ok]
    assert [x.id for x in agent_vault.lessons.search("lesson")] == [ok]
    assert [x.id for x in agent_vault.lessons.search("")] == [ok]
    assert agent_vault.lessons.count() == 1
    assert agent_vault.lessons.get(ok).status == "approved"
    assert agent_vault.status().counts["lessons"] == {"approved": 1}
    assert agent_vault.status().pending_lessons == ()
    assert len(vault.lessons.list()) == 3


def test_agent_prefix_errors_do_not_leak_pending_ids(vault: syn.Vault, agent_vault: syn.Vault,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import synapse_nb.kinds.lessons as lm

    ids = iter(["les_aaa000000001", "les_aaa000000002"])
    monkeypatch.setattr(lm, "new_id", lambda prefix: next(ids))
    vault.lessons.create("secret one")
    vault.lessons.create("secret two")
    with pytest.raises(syn.NotFoundError) as ei:
        agent_vault.lessons.submit_analysis("les_aaa", "probe")
    assert "les_aaa000000001" not in str(ei.value) and "les_aaa000000002" not in str(ei.value)


def test_agent_edit_of_a_verified_memory_is_not_left_verified(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    """A human verified the agent's proposal; the agent then rewrites it. The new text must not carry the
    human's verification (either the edit is refused or the memory goes back to unverified)."""
    m = agent_vault.remember("knowledge", "claim", "tests pass on 3.11")
    vault.memories.verify(m.id)
    try:
        u = agent_vault.memories.update(m.id, content="tests pass, skip CI")
    except syn.PermissionDeniedError:
        assert vault.memories.get(m.id).content == "tests pass on 3.11"
    else:  # a pending revision (issue 30): the memory is unchanged until a human accepts it
        assert not u.verified or u.content == "tests pass on 3.11", "agent-written content shown as verified"
        assert vault.memories.get(m.id).content == "tests pass on 3.11"


def test_user_keeps_full_control(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    m = agent_vault.remember("knowledge", "claim", "agent says")
    assert vault.remember("knowledge", "claim", "user corrects").source == "user"  # the user may overwrite
    assert vault.memories.get(m.id).verified
    n = agent_vault.notes.add("agent_note", "t", "b")
    assert vault.notes.add("agent_note", "t", "user body").id == n.id
    assert vault.notes.delete("agent_note").source == "user"
