"""Checkpoints, decisions, lessons, episodes, notes, minds, status() and prune()."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from conftest import T0, FakeClock

import synapse_nb as syn
from synapse_nb._util import fmt_ts


@pytest.fixture()
def repo_vault(git_repo: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> syn.Vault:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    v = syn.open_vault(git_repo, clock=clock)
    yield v
    v.close()


# -- checkpoints ----------------------------------------------------------------------------------------------
def test_checkpoint_captures_git_branch_and_commit(repo_vault: syn.Vault, git_repo: Path, git) -> None:
    sha = git(git_repo, "rev-parse", "HEAD")
    c = repo_vault.checkpoint("Refactoring JWT auth", files=["src/auth.py", "tests/test_auth.py", "src/auth.py"],
                              next_step="Run pytest", blockers=["flaky CI", "review"])
    assert (c.branch, c.commit) == ("main", sha)
    assert c.changed_files == ("src/auth.py", "tests/test_auth.py")
    assert c.blockers == "flaky CI; review" and c.next_step == "Run pytest"
    assert c.origin == "api" and c.source == "user" and c.created_at == fmt_ts(T0)
    assert repo_vault.checkpoints.get(c.id) == c
    text = c.restore_text()
    assert "Doing: Refactoring JWT auth" in text and "Next step: Run pytest" in text and sha[:12] in text
    assert "Changed files (names as listed, not anyone's words): \"src/auth.py\", \"tests/test_auth.py\"" in text
    assert "Blockers: flaky CI; review" in text
    # a new commit is seen by the next checkpoint
    (git_repo / "b.txt").write_text("b")
    git(git_repo, "add", "b.txt")
    git(git_repo, "commit", "-qm", "b")
    assert repo_vault.checkpoint("after commit").commit == git(git_repo, "rev-parse", "HEAD") != sha


def test_latest_follows_the_current_branch(repo_vault: syn.Vault, git_repo: Path, git, clock: FakeClock) -> None:
    on_main = repo_vault.checkpoint("work on main")
    git(git_repo, "checkout", "-q", "-b", "feature/x")
    assert repo_vault.checkpoints.latest() is None  # nothing on this branch yet
    with pytest.raises(syn.NotFoundError, match="feature/x"):
        repo_vault.checkpoints.restore()
    clock.advance(minutes=1)
    on_feat = repo_vault.checkpoint("work on feature")
    assert on_feat.branch == "feature/x"
    assert repo_vault.checkpoints.latest().id == on_feat.id
    assert repo_vault.checkpoints.restore("latest").id == on_feat.id
    git(git_repo, "checkout", "-q", "main")
    assert repo_vault.checkpoints.latest().id == on_main.id
    clock.advance(minutes=1)
    newer = repo_vault.checkpoint("more on main")
    assert repo_vault.checkpoints.latest().id == newer.id
    assert repo_vault.checkpoints.latest(branch="feature/x").id == on_feat.id
    assert [c.id for c in repo_vault.checkpoints.list()] == [newer.id, on_feat.id, on_main.id]
    assert [c.id for c in repo_vault.checkpoints.list(branch="main")] == [newer.id, on_main.id]
    assert [c.id for c in repo_vault.checkpoints.list(branch="nope")] == []
    # detached HEAD: no branch
    git(git_repo, "checkout", "-q", "--detach")
    d = repo_vault.checkpoint("detached")
    assert d.branch is None and d.commit == git(git_repo, "rev-parse", "HEAD")
    assert repo_vault.checkpoints.latest().id == d.id


def test_same_instant_latest_is_last_written(repo_vault: syn.Vault) -> None:
    ids = [repo_vault.checkpoint(f"step {i}").id for i in range(5)]  # the fake clock does not move
    assert repo_vault.checkpoints.latest().id == ids[-1]
    assert [c.id for c in repo_vault.checkpoints.list()] == ids[::-1]


def test_checkpoint_outside_git(vault: syn.Vault) -> None:
    c = vault.checkpoint("no git here", files="a.py, b.py")
    assert (c.branch, c.commit) == (None, None)
    assert c.changed_files == ("a.py", "b.py")
    assert vault.checkpoints.latest().id == c.id
    assert vault.checkpoints.restore().id == c.id
    assert "branch -" in c.restore_text()


def test_checkpoint_restore_by_prefix_and_errors(vault: syn.Vault) -> None:
    c = vault.checkpoint("x")
    assert vault.checkpoints.restore(c.id[:7]).id == c.id
    with pytest.raises(syn.NotFoundError):
        vault.checkpoints.restore("ckp_ffffffffffff")
    for bad in [dict(doing=""), dict(doing=None), dict(doing="x", origin="mars"), dict(doing="x", files=3),
                dict(doing="x", next_step=5), dict(doing="x", blockers=[None]), dict(doing="x\x00")]:
        with pytest.raises(syn.ValidationError):
            vault.checkpoint(**bad)
    assert vault.checkpoints.count() == 1
    with pytest.raises(syn.ValidationError):
        vault.checkpoints.list(branch=3)


def test_checkpoint_origin(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    assert vault.checkpoint("x", origin="NOTEBOOK").origin == "notebook"
    a = agent_vault.checkpoint("agent work", origin="cli")  # an agent cannot pose as a human surface
    assert (a.origin, a.source) == ("agent", "agent")
    assert agent_vault.checkpoint("auto", origin="auto").origin == "auto"


# -- decisions ------------------------------------------------------------------------------------------------
def test_decisions(repo_vault: syn.Vault, git_repo: Path, git, clock: FakeClock) -> None:
    d1 = repo_vault.decide("Use SQLite WAL mode", rationale="Readers never block writers", tags=["Storage"])
    clock.advance(minutes=1)
    d2 = repo_vault.decide("Pin lancedb", tags=["deps", "storage"])
    assert (d1.branch, d1.commit) == ("main", git(git_repo, "rev-parse", "HEAD"))
    assert d1.tags == ("storage",) and d2.rationale is None
    assert [d.id for d in repo_vault.decisions.list()] == [d2.id, d1.id]
    assert [d.id for d in repo_vault.decisions.search("writers")] == [d1.id]  # rationale is searched
    assert [d.id for d in repo_vault.decisions.search("wal")] == [d1.id]
    assert [d.id for d in repo_vault.decisions.search("", tag="STORAGE")] == [d2.id, d1.id]
    assert [d.id for d in repo_vault.decisions.by_tag("deps")] == [d2.id]
    assert [d.id for d in repo_vault.decisions.search("lancedb", tag="storage")] == [d2.id]
    unique = next(n for n in range(6, len(d1.id) + 1) if d1.id[:n] != d2.id[:n])  # ids are random: 1/256 share 6
    assert repo_vault.decisions.get(d1.id[:unique]) == d1
    assert repo_vault.decisions.delete(d2.id).id == d2.id
    assert [d.id for d in repo_vault.decisions.list()] == [d1.id]
    assert list(repo_vault.decisions.by_tag("deps")) == []
    with pytest.raises(syn.ValidationError):
        repo_vault.decide("")
    with pytest.raises(syn.ValidationError):
        repo_vault.decide("x", rationale=3)  # type: ignore[arg-type]
    assert repo_vault.decisions.count() == 1


# -- lessons --------------------------------------------------------------------------------------------------
def test_lesson_lifecycle(vault: syn.Vault, clock: FakeClock) -> None:
    les = vault.lessons.create("Reverted 'retry payments': double charges", files=["src/pay.py"], branch="main",
                               revert_commit={"sha": "a" * 40, "subject": "Revert"},
                               reverted_commits=[{"sha": "b" * 40}], diffstat=[("src/pay.py", 3, 10)])
    assert les.status == "pending" and les.files_affected == ("src/pay.py",)
    assert les.diffstat == (("src/pay.py", 3, 10),) and les.revert_commit["sha"] == "a" * 40
    assert [x.id for x in vault.lessons.pending()] == [les.id]
    assert list(vault.lessons.approved()) == [] and list(vault.lessons.expired()) == []
    assert vault.status().pending_lessons == (les.id,)

    a = vault.lessons.approve(les.id[:9])
    assert a.status == "approved" and a.lesson_text == les.summary
    assert a.approved_at == fmt_ts(T0) and a.expires_at == fmt_ts(T0 + timedelta(days=7))
    assert [x.id for x in vault.lessons.approved()] == [les.id] and list(vault.lessons.pending()) == []

    clock.advance(days=7) # expires_at <= now: expired, computed at read time
    assert vault.lessons.get(les.id).status == "expired"
    assert [x.id for x in vault.lessons.expired()] == [les.id] and list(vault.lessons.approved()) == []
    assert vault.status().counts["lessons"] == {"pending": 0, "approved": 0, "expired": 1}

    r = vault.lessons.reapprove(les.id, text="Never retry a charge without an idempotency key")
    assert r.status == "approved" and r.lesson_text == "Never retry a charge without an idempotency key"
    assert r.expires_at == fmt_ts(clock() + timedelta(days=7))
    assert r.created_at == les.created_at


def test_lesson_analysis_becomes_text_on_approval(vault: syn.Vault, agent_vault: syn.Vault) -> None:
    les = vault.lessons.create("reverted X")
    assert agent_vault.lessons.submit_analysis(les.id, "X broke the cache key") is None
    got = vault.lessons.get(les.id)
    assert (got.analysis, got.analysis_by, got.status, got.lesson_text) == ("X broke the cache key", "agent",
                                                                            "pending", None)
    with pytest.raises(syn.ConflictError, match="accept_agent_text"):  # an agent's wording needs a human's choice
        vault.lessons.approve(les.id)
    approved = vault.lessons.approve(les.id, accept_agent_text=True)
    assert (approved.lesson_text, approved.wording_by) == ("X broke the cache key", "agent")
    # the user's analysis returns the lesson
    les2 = vault.lessons.create("reverted Y")
    assert vault.lessons.submit_analysis(les2.id, "mine").analysis_by == "user"
    with pytest.raises(syn.NotFoundError):
        vault.lessons.submit_analysis("les_000000000000", "x")
    with pytest.raises(syn.ValidationError):
        vault.lessons.submit_analysis(les2.id, "")


def test_reject_deletes(vault: syn.Vault) -> None:
    les = vault.lessons.create("reverted Z")
    assert vault.lessons.reject(les.id).id == les.id
    with pytest.raises(syn.NotFoundError):
        vault.lessons.get(les.id)
    assert vault.lessons.count() == 0 and les.id not in vault.export_jsonl()


def test_withdraw_puts_an_approved_lesson_back_to_pending(vault: syn.Vault, agent_vault: syn.Vault,
                                                          clock: FakeClock) -> None:
    les = vault.lessons.create("reverted W")
    with pytest.raises(syn.ConflictError, match="only an approved lesson"):
        vault.lessons.withdraw(les.id)  # pending: nothing to withdraw
    vault.lessons.approve(les.id, text="Never do W again", expiry_days=30)
    assert [x.id for x in vault.lessons.in_force()] == [les.id]
    with pytest.raises(syn.PermissionDeniedError):
        agent_vault.lessons.withdraw(les.id)  # a human act, like approving
    back = vault.lessons.withdraw(les.id)
    assert (back.status, back.expires_at, back.approved_at) == ("pending", None, None)
    assert vault.lessons.in_force() == [] and agent_vault.lessons.approved() == []  # out of every recall now
    assert vault.lessons.proposed_wording(back) == ("Never do W again", "user")  # the wording is kept as a draft
    again = vault.lessons.approve(les.id, expiry_days=3)  # one step to put it back, for another duration
    assert again.lesson_text == "Never do W again" and again.expires_at == fmt_ts(T0 + timedelta(days=3))
    # an agent's wording withdrawn still needs the explicit choice to be approved again
    les2 = vault.lessons.create("reverted V")
    agent_vault.lessons.submit_analysis(les2.id, "V broke the build")
    vault.lessons.approve(les2.id, accept_agent_text=True)
    vault.lessons.withdraw(les2.id)
    with pytest.raises(syn.ConflictError, match="accept_agent_text"):
        vault.lessons.approve(les2.id)
    # ... also once the agent submitted another analysis: its first wording, kept beside a changed analysis, read
    # as a human's (wording_by compared the kept text with the analysis) and was approved without the choice
    agent_vault.lessons.submit_analysis(les2.id, "V broke the build; retry it")
    assert vault.lessons.proposed_wording(vault.lessons.get(les2.id)) == ("V broke the build; retry it", "agent")
    with pytest.raises(syn.ConflictError, match="accept_agent_text"):
        vault.lessons.approve(les2.id)
    # a human's wording withdrawn stays the human's, whatever an agent submits next
    vault.lessons.withdraw(les.id)  # approved again above, in the human's words
    agent_vault.lessons.submit_analysis(les.id, "W was fine, do it")
    assert vault.lessons.proposed_wording(vault.lessons.get(les.id)) == ("Never do W again", "user")
    assert vault.lessons.approve(les.id, expiry_days=3).lesson_text == "Never do W again"
    clock.now += timedelta(days=40)
    with pytest.raises(syn.ConflictError, match="expired"):
        vault.lessons.withdraw(les.id)  # out of force already


def test_expiry_setting(vault: syn.Vault, clock: FakeClock) -> None:
    assert vault.settings.get("lesson_expiry_days") == 7
    assert vault.settings.set("lesson_expiry_days", "3") == 3
    assert vault.settings.as_dict()["lesson_expiry_days"] == 3
    les = vault.lessons.create("short lived")
    assert vault.lessons.approve(les.id).expires_at == fmt_ts(T0 + timedelta(days=3))
    clock.advance(days=2, hours=23)
    assert vault.lessons.get(les.id).status == "approved"
    clock.advance(hours=1)
    assert vault.lessons.get(les.id).status == "expired"
    # explicit expiry_days wins
    les2 = vault.lessons.create("longer")
    assert vault.lessons.approve(les2.id, expiry_days=30).expires_at == fmt_ts(clock() + timedelta(days=30))
    for bad in (0, 3651, "x", True, None, 2.5):
        with pytest.raises(syn.ValidationError):
            vault.settings.set("lesson_expiry_days", bad)
    les3 = vault.lessons.create("still pending")
    for bad in (0, -1, 3651, True, "7"):
        with pytest.raises(syn.ValidationError):
            vault.lessons.approve(les3.id, expiry_days=bad)  # type: ignore[arg-type]
    assert vault.lessons.get(les3.id).status == "pending"
    with pytest.raises(syn.ValidationError, match="lesson_expiry_days"):
        vault.settings.set("no_such_setting", 1)
    assert vault.settings.get("lesson_expiry_days") == 3


def test_prune_persists_expired_lessons_and_deletes_expired_memories(vault: syn.Vault, clock: FakeClock) -> None:
    les = vault.lessons.approve(vault.lessons.create("soon expired").id)
    pending = vault.lessons.create("still pending")
    mem = vault.remember("context", "temp", "x", expires="1d")
    keep = vault.remember("context", "keep", "y")
    other_mind = vault.with_mind("other")
    om = other_mind.remember("context", "temp", "x", expires="1d")
    assert vault.prune().to_dict() == {"memories_deleted": [], "lessons_expired": [], "sessions_cleared": 0,
                                       "agent_records_deleted": []}
    clock.advance(days=8)
    rep = vault.prune()
    assert rep.memories_deleted == (mem.id,) and rep.lessons_expired == (les.id,)
    assert "1 expired memory deleted, 1 lesson marked expired" in str(rep)
    row = vault._store.query_one("SELECT status FROM lessons WHERE id = ?", (les.id,))
    assert row["status"] == "expired"  # persisted, not only computed
    assert vault.lessons.get(pending.id).status == "pending"
    assert [m.id for m in vault.memories.list(include_expired=True)] == [keep.id]
    assert other_mind.memories.get(om.id).id == om.id  # prune stays in its mind
    assert vault.lessons.reapprove(les.id).status == "approved"
    assert vault.prune().lessons_expired == ()


def test_lesson_create_validation_and_idempotency(vault: syn.Vault) -> None:
    vault.lessons.create("a", revert_commit={"sha": "c" * 40})
    with pytest.raises(syn.ConflictError):
        vault.lessons.create("again", revert_commit={"sha": "c" * 40})
    for bad in [dict(summary=""), dict(summary="x", revert_commit={"no": "sha"}), dict(summary="x", files=5),
                dict(summary="x", reverted_commits=["sha"]), dict(summary="x", diffstat=[("a", "many", 1)]),
                dict(summary="x", diffstat=[("a", 1)]), dict(summary="x", branch="a\nb")]:
        with pytest.raises(syn.ValidationError):
            vault.lessons.create(**bad)
    assert vault.lessons.count() == 1
    with pytest.raises(syn.ValidationError):
        vault.lessons.list(status="rejected")


def test_lesson_create_refuses_malformed_git_metadata(vault: syn.Vault) -> None:
    """Whatever goes into revert_commit / reverted_commits / diffstat is a ValidationError, never a crash."""
    import datetime as dt

    before = vault.export_jsonl()
    for bad in [dict(revert_commit={"sha": "a", "date": dt.datetime(2026, 1, 1)}),
                dict(reverted_commits=[{"sha": object()}]),
                dict(revert_commit={"sha": "\ud800"}),
                dict(reverted_commits=[{"sha": "b", "subject": "\ud800"}]),
                dict(diffstat=[("a.py", float("inf"), 1)]),
                dict(diffstat=5),
                dict(revert_commit={"sha": ""})]:
        with pytest.raises(syn.ValidationError):
            vault.lessons.create("x", **bad)
    assert vault.export_jsonl() == before


# -- episodes -------------------------------------------------------------------------------------------------
def test_episodes_prior_run_is_a_warning_not_a_block(vault: syn.Vault, clock: FakeClock) -> None:
    e1 = vault.episodes.log("train_baseline", status="success", outcome="val acc 0.91", refs=["runs/1"],
                            duration_s=12)
    assert e1.prior is None and e1.warning is None and e1.duration_s == 12.0
    clock.advance(hours=1)
    e2 = vault.episodes.log("train_baseline", status="FAILURE", outcome="OOM")
    assert e2.status == "failure" and e2.prior.id == e1.id
    assert "already ran" in e2.warning and e1.id in e2.warning and "success" in e2.warning
    clock.advance(hours=1)
    e3 = vault.episodes.log("train_baseline")
    assert e3.prior.id == e2.id and e3.status == "unknown"
    assert vault.episodes.last("train_baseline").id == e3.id
    assert [e.id for e in vault.episodes.history("train_baseline")] == [e3.id, e2.id, e1.id]
    other = vault.episodes.log("eval_model")
    assert other.prior is None
    assert [e.id for e in vault.episodes.history()] == [other.id, e3.id, e2.id, e1.id]
    assert [e.id for e in vault.episodes.history(limit=2)] == [other.id, e3.id]
    assert vault.episodes.last("never_ran") is None
    assert "prior" not in e2.to_dict()
    assert [e.id for e in vault.episodes.search("OOM")] == [e2.id]


def test_episode_task_key_is_stripped_consistently(vault: syn.Vault) -> None:
    e = vault.episodes.log("  train  ")
    assert e.task_key == "train"
    assert vault.episodes.last("  train  ").id == e.id
    assert [x.id for x in vault.episodes.history("  train  ")] == [e.id]


def test_episode_validation(vault: syn.Vault) -> None:
    for bad in [dict(task_key=""), dict(task_key="a\nb"), dict(task_key="x", status="ok"),
                dict(task_key="x", duration_s=-1), dict(task_key="x", duration_s=float("nan")),
                dict(task_key="x", duration_s="3"), dict(task_key="x", refs=7), dict(task_key="x" * 201)]:
        with pytest.raises(syn.ValidationError):
            vault.episodes.log(**bad)
    assert vault.episodes.count() == 0


# -- notes ----------------------------------------------------------------------------------------------------
def test_notes(vault: syn.Vault, clock: FakeClock) -> None:
    n = vault.notes.add("release_checklist", "how to cut a release", "1. bump\n2. tag\n3. upload")
    assert vault.notes.expand("release_checklist") == "1. bump\n2. tag\n3. upload"
    assert vault.notes.get_by_name("release_checklist").trigger == "how to cut a release"
    clock.advance(minutes=1)
    n2 = vault.notes.add("release_checklist", "how to cut a release (v2)", "new body")
    assert n2.id == n.id and n2.body == "new body" and n2.created_at == n.created_at
    vault.notes.add("alpha_note", "first by name", "a")
    assert [x.name for x in vault.notes.list()] == ["alpha_note", "release_checklist"]
    assert [x.name for x in vault.notes.search("release")] == ["release_checklist"]
    assert vault.notes.delete("release_checklist").id == n.id
    with pytest.raises(syn.NotFoundError):
        vault.notes.expand("release_checklist")
    for bad in [("Bad Name", "t", "b"), ("ok", "", "b"), ("ok", "t", ""), ("ok", "t" * 601, "b"), ("ok", 1, "b")]:
        with pytest.raises(syn.ValidationError):
            vault.notes.add(*bad)
    assert vault.notes.count() == 1


# -- minds ----------------------------------------------------------------------------------------------------
def test_minds_are_isolated(vault: syn.Vault) -> None:
    a = vault
    b = vault.with_mind("research")
    m = a.remember("project", "shared_key", "mind a content", tags=["t"])
    mb = b.remember("project", "shared_key", "mind b content", tags=["t"])
    assert mb.id != m.id  # same (category, key) in another mind is another memory
    c = a.checkpoint("a work")
    d = a.decide("a decision", tags=["t"])
    les = a.lessons.approve(a.lessons.create("a lesson").id)
    e = a.episodes.log("task_a")
    n = a.notes.add("a_note", "trigger", "body")
    assert [x.id for x in b.memories.list()] == [mb.id]
    assert [x.id for x in b.memories.search("content")] == [mb.id]
    assert [x.id for x in b.memories.by_tag("t")] == [mb.id]
    assert b.checkpoints.latest() is None and list(b.checkpoints.list()) == []
    assert list(b.decisions.list()) == [] and list(b.decisions.by_tag("t")) == []
    assert list(b.lessons.list()) == [] and list(b.lessons.approved()) == []
    assert b.episodes.log("task_a").prior is None
    assert list(b.notes.list()) == []
    for mgr, rid in [(b.memories, m.id), (b.checkpoints, c.id), (b.decisions, d.id), (b.lessons, les.id),
                     (b.episodes, e.id), (b.notes, n.id)]:
        with pytest.raises(syn.NotFoundError):
            mgr.get(rid)
    with pytest.raises(syn.NotFoundError):
        b.memories.delete(m.id)
    with pytest.raises(syn.NotFoundError):
        b.lessons.approve(les.id)
    with pytest.raises(syn.NotFoundError):
        b.notes.expand("a_note")
    sb = b.status().counts
    assert sb["memories"]["total"] == 1 and sb["checkpoints"]["total"] == 0 and sb["notes"]["total"] == 0
    assert a.memories.get(m.id).content == "mind a content"


# -- status ---------------------------------------------------------------------------------------------------
def test_status_counts(vault: syn.Vault, agent_vault: syn.Vault, clock: FakeClock) -> None:
    vault.remember("project", "a", "x")
    vault.remember("project", "b", "x", expires="3d")
    agent_vault.remember("project", "c", "x")
    vault.checkpoint("c")
    vault.decide("d")
    vault.decide("d2")
    vault.episodes.log("e")
    vault.notes.add("n", "t", "b")
    p = vault.lessons.create("p")
    ap = vault.lessons.approve(vault.lessons.create("a").id)
    s = vault.status()
    assert s.counts == {
        "memories": {"total": 3, "verified": 2, "unverified": 1, "expired": 0},
        "checkpoints": {"total": 1}, "decisions": {"total": 2}, "episodes": {"total": 1}, "notes": {"total": 1},
        "lessons": {"pending": 1, "approved": 1, "expired": 0},
    }
    assert s.pending_lessons == (p.id,)
    assert len(s.expiring_memories) == 1 and s.expiring_lessons == ()
    clock.advance(days=5, hours=1)
    assert vault.status().expiring_lessons == (ap.id,)
    text = str(vault.status())
    assert "pending lessons awaiting a human" in text and p.id in text
    assert vault.status().to_dict()["counts"]["lessons"]["pending"] == 1
    sa = agent_vault.status()
    assert sa.counts["lessons"] == {"approved": 1} and sa.pending_lessons == ()
