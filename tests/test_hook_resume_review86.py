"""Review 86: what a Claude Code session is given by the hooks, run as Claude Code runs them.

F1: the checkpoints the hooks write (before a compaction, after N edits) took the place of the agent's own as "the
latest": the next session resumed from "continue" or "ok go ahead", with no next step. Now the checkpoint a session
resumes from is the newest one saved on purpose, the automatic ones are listed under it ("Since then"), each with its
own mark, and they name the session's prompts as prompts. F3: every prompt with a hit repeated the banner's heading
and up to 400 characters of lesson ids the agent never saw; a "nothing new" answer did too. F5: an approved lesson
that ran out left without a word to the person, and the agent was told "No approved lessons yet." Smaller: the
hooks' banner numbered the lessons oldest first, every other banner newest first.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb._util import fmt_ts, utcnow
from synapse_nb.errors import ValidationError
from tests.test_agent_hooks import ROOT, claude, context_of, hook

DOING = "Adding a clear timeout error to login"
NEXT = "Write test_login_timeout in tests/test_auth.py"


def start(repo: Path, session: str, source: str = "startup") -> subprocess.CompletedProcess[str]:
    return hook("SessionStart", claude("SessionStart", repo, session, source=source), cwd=repo)


def prompt(repo: Path, session: str, text: str) -> str:
    res = hook("UserPromptSubmit", claude("UserPromptSubmit", repo, session, prompt=text), cwd=repo)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return context_of(res) if res.stdout else ""


def edit(repo: Path, session: str, path: str) -> None:
    res = hook("PostToolUse", claude("PostToolUse", repo, session, tool_name="Edit",
                                     tool_input={"file_path": str(repo / path)}), cwd=repo)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stderr


def cli(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_") and k != "CLAUDECODE"}
    env["PYTHONPATH"] = str(ROOT)
    res = subprocess.run([sys.executable, "-m", "synapse_nb", *args], cwd=repo, env=env, check=False,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


# ------------------------------------------------------------------------------------------------ F1
def test_the_agents_checkpoint_is_resumed_after_a_compaction_and_ten_edits(git_repo: Path) -> None:
    """The review's story: the agent's checkpoint, a session that resumes and is compacted after "continue", a
    session that makes 10 edits after "ok go ahead", then a new session and ``checkpoint restore``."""
    with syn.open_vault(git_repo, actor="agent") as agent:  # what the MCP tool create_checkpoint saves
        own = agent.checkpoint(DOING, files=["src/auth.py"], next_step=NEXT, origin="agent")
    start(git_repo, "A", "resume")
    prompt(git_repo, "A", "continue")
    res = hook("PreCompact", claude("PreCompact", git_repo, "A", trigger="auto"), cwd=git_repo)
    assert res.returncode == 0, res.stderr
    packed = context_of(start(git_repo, "A", "compact"))
    assert f"Doing: {DOING}" in packed and f"Next step: {NEXT}" in packed and "Doing: continue" not in packed
    prompt(git_repo, "B", "fix the billing cache")  # the session's first prompt: another task, hours earlier
    prompt(git_repo, "B", "ok go ahead")
    for _ in range(10):
        edit(git_repo, "B", "src/auth.py")
    text = context_of(start(git_repo, "C"))
    ckp = text[text.index("Latest checkpoint on this branch:"):]
    assert f"Checkpoint [agent · unverified] {own.id}" in ckp
    assert f"Doing: {DOING}" in ckp and f"Next step: {NEXT}" in ckp  # the agent's task and next step
    assert "Since then on this branch: 2 later checkpoints" in ckp  # and what happened after it
    lines = ckp.splitlines()
    auto, compacted = (x for x in lines if x.startswith("- [agent · unverified] ckp_"))
    assert "automatic): auto checkpoint after 10 file edits by the agent" in auto and '"src/auth.py"' in auto
    assert "the session's first prompt: fix the billing cache; its latest: ok go ahead" in auto  # prompts, said so
    assert "automatic): saved before the agent's context was compacted (auto); the session's prompt: continue" \
        in compacted
    assert not [x for x in lines if x.startswith("  Doing:") and DOING not in x]  # one doing: the agent's
    restored = cli(git_repo, "checkpoint", "restore")
    assert f"Doing: {DOING}" in restored and f"Next step: {NEXT}" in restored and auto in restored
    doc = json.loads(cli(git_repo, "checkpoint", "restore", "--json"))
    assert doc["id"] == own.id and doc["later"] == 2 and len(doc["since"]) == 2
    with syn.open_vault(git_repo) as v:
        assert v.checkpoints.latest() == own and v.checkpoints.latest(automatic=True).origin == "auto"
        assert all(c.automatic for c in v.checkpoints.since(own)[0])


def test_a_persons_checkpoint_stays_the_one_to_resume_from_and_keeps_its_mark(git_repo: Path) -> None:
    """The agent's automatic checkpoints never take the place of a person's, nor carry its words under a person's
    mark; the person's own carry never relabels an agent's words as theirs."""
    with syn.open_vault(git_repo) as v:
        mine = v.checkpoint("Migrating billing to v2", next_step="run the v2 smoke tests", origin="cli")
    prompt(git_repo, "S", "go on")
    for i in range(10):
        edit(git_repo, "S", f"src/b{i}.py")
    text = context_of(start(git_repo, "T"))
    assert f"Checkpoint [user] {mine.id}" in text and "Next step: run the v2 smoke tests" in text
    assert "- [agent · unverified] ckp_" in text and "(names as listed" in text
    assert "an agent's words no person checked" in text  # the legend: the lines under it are an agent's
    with syn.open_vault(git_repo, actor="agent") as agent:  # signal_low_context with nothing of its own
        carried = agent.checkpoints.carry_forward(fallback="context at 70%")
        assert carried.doing == "Migrating billing to v2" and carried.source == "agent" and carried.automatic
        assert agent.checkpoints.latest() == mine  # a carried copy is automatic: the person's stays
        told = agent.checkpoints.carry_forward("Writing the v2 smoke tests", fallback="context at 70%")
        assert told.origin == "agent" and told.next_step == "run the v2 smoke tests"  # the agent's own word
        assert agent.checkpoints.latest() == told
    with syn.open_vault(git_repo) as v:
        copy = v.checkpoints.carry_forward(fallback="saved by hand")
        assert copy.source == "user" and copy.doing == "saved by hand" and copy.next_step is None  # not the agent's
        assert v.checkpoints.latest() == told  # an automatic one of the person's: no place taken either


def test_since_lists_the_newest_and_counts_the_rest(git_repo: Path) -> None:
    with syn.open_vault(git_repo) as v:
        first = v.checkpoint("Step one", next_step="step two")
        autos = [v.checkpoint(f"{n} more changed files", files=[f"f{n}.py"], origin="watch") for n in range(5)]
        shown, later = v.checkpoints.since(first)
        assert later == 5 and [c.id for c in shown] == [c.id for c in autos[::-1][:3]]
        assert v.checkpoints.since(first, limit=None)[1] == 5 and v.checkpoints.since(autos[-1]) == ([], 0)
        text = first.restore_text(None, shown, later)
        *_, head, _, _, _, tail = text.splitlines()
        assert head == "Since then on this branch: 5 later checkpoints (what happened after it; newest first):"
        assert tail == "(… 2 older not shown)"
        with pytest.raises(ValidationError, match="checkpoint must be a Checkpoint"):
            v.checkpoints.since(first.id)  # type: ignore[arg-type]  # a mistake: an id, not the record
        with sqlite3.connect(v.path / "synapse.db") as db:  # an agent's row naming the watcher reads "agent": its
            db.execute("UPDATE checkpoints SET source = 'agent' WHERE id = ?", (autos[0].id,))  # own, not automatic
        assert v.checkpoints.latest().id == autos[0].id and v.checkpoints.latest().origin == "agent"


# ------------------------------------------------------------------------------------------------ F3
def _lessons(repo: Path, n: int) -> list[str]:
    with syn.open_vault(repo) as v:
        for i in range(n):
            les = v.lessons.create(f"Rule {i}", branch=None)
            v.lessons.approve(les.id, text=f"Rule {i}: never touch module m{i} without running its tests first")
        v.remember("procedure", "db_migrations", "Run alembic upgrade head")
        v.remember("procedure", "code_style", "Use black, line length 100")
        return [x.id for x in v.lessons.in_force()]


def test_a_prompt_counts_the_lessons_it_was_given_and_names_no_id(git_repo: Path) -> None:
    ids = _lessons(git_repo, 30)
    first = context_of(start(git_repo, "S"))
    assert all(f"Rule {i}:" in first for i in range(30))
    for q in ("how do we run database migrations?", "what code style do we use?"):
        text = prompt(git_repo, "S", q)
        assert "(the 30 approved lessons shown earlier in this session are still in force)" in text
        assert not [i for i in ids if i in text] and "les_" not in text and len(text) < 400
    with syn.open_vault(git_repo) as v:  # approved mid-session: given in full the first time, the others counted
        les = v.lessons.create("late rule", branch=None)
        v.lessons.approve(les.id, text="Rule late: tag every release")
    text = prompt(git_repo, "S", "zebra quartz")  # no hit: the new lesson alone, and the count
    assert "1. [all branches, approved] Rule late: tag every release" in text
    assert "(also still in force: the 30 approved lessons shown earlier in this session)" in text
    assert prompt(git_repo, "S", "zebra quartz") == ""  # nothing new: nothing at all


def test_a_nothing_new_recall_says_nothing_of_the_banner(git_repo: Path) -> None:
    _lessons(git_repo, 3)
    with syn.open_vault(git_repo, actor="agent") as agent:
        first = agent.recall("how do we run database migrations?", session="m1")
        assert first.text.startswith("APPROVED SYSTEM MEMORY") and first.items
        again = agent.recall("how do we run database migrations?", session="m1")
        assert again.empty_reason == "already_given"
        assert again.text.startswith("nothing new for:") and "APPROVED" not in again.text
        other = agent.recall("what code style do we use?", session="m1")  # a hit: the banner's count heads it
        assert other.text.splitlines()[:2] == [
            "APPROVED SYSTEM MEMORY — CRITICAL: ADHERE",
            "(the 3 approved lessons shown earlier in this session are still in force)"]
    with syn.open_vault(git_repo) as v:
        les = v.lessons.create("late rule", branch=None)
        v.lessons.approve(les.id, text="Rule late: tag every release")
    with syn.open_vault(git_repo, actor="agent") as agent:  # nothing new but a lesson: given in full
        late = agent.recall("how do we run database migrations?", session="m1")
        assert "Rule late: tag every release" in late.text and "also still in force: the 3 approved" in late.text


def test_every_banner_gives_the_lessons_most_recently_approved_first(git_repo: Path) -> None:
    ids = _lessons(git_repo, 4)
    with syn.open_vault(git_repo) as v:
        order = [x.text for x in v.lessons.in_force()]
        assert order == [f"Rule {i}: never touch module m{i} without running its tests first" for i in (3, 2, 1, 0)]
        pack = v.restore_pack()
        recalled = v.recall("how do we run database migrations?").text

    def numbered(text: str) -> list[str]:
        return re.findall(r"^\d+\. \[all branches, approved\] (.*)$", text, re.M)

    assert numbered(context_of(start(git_repo, "S"))) == order
    assert numbered(context_of(start(git_repo, "S", "compact"))) == order
    assert numbered(pack) == order == numbered(recalled) and len(ids) == 4


# ------------------------------------------------------------------------------------------------ F5
def _expire(repo: Path, ago: timedelta) -> None:
    with sqlite3.connect(repo / ".synapse" / "synapse.db") as db:
        db.execute("UPDATE lessons SET expires_at = ? WHERE status = 'approved'", (fmt_ts(utcnow() - ago),))


def test_a_lesson_that_ran_out_is_told_to_the_person_and_not_to_the_agent(git_repo: Path) -> None:
    with syn.open_vault(git_repo) as v:
        les = v.lessons.create("retry", branch=None)
        v.lessons.approve(les.id, text="Do not retry login on timeout: it locks accounts")
        assert v.lessons.expired_count() == 0
    assert "systemMessage" not in json.loads(start(git_repo, "a").stdout)
    _expire(git_repo, timedelta(days=1))  # 8 days after a 7-day approval
    out = json.loads(start(git_repo, "b").stdout)
    notice, text = out["systemMessage"], out["hookSpecificOutput"]["additionalContext"]
    assert notice == ("synapse-nb: 1 approved lesson ran out in the last 7 days, so it is no longer given to the "
                      "agent: approve it again in your own terminal with synapse-nb lessons approve ID (synapse-nb "
                      "lessons list --status expired lists it)")
    assert "No approved lessons.\n" in text and "yet" not in text.split("No checkpoint")[0]
    assert "approve" not in text.lower().replace("no approved lessons.", "") and "expire" not in text
    assert les.id not in notice and "retry" not in notice  # counts only: no id, no text
    with syn.open_vault(git_repo) as v:
        assert v.lessons.expired_count() == 1 and v.lessons.expired_count(timedelta(hours=1)) == 0
        with pytest.raises(ValidationError, match="within must be a timedelta"):
            v.lessons.expired_count(7)  # type: ignore[arg-type]  # a mistake: days, not a timedelta
    _expire(git_repo, timedelta(days=30))  # long ago: no notice, and still no "yet"
    out = json.loads(start(git_repo, "c").stdout)
    assert "systemMessage" not in out and "No approved lessons.\n" in out["hookSpecificOutput"]["additionalContext"]


def test_the_notice_says_both_what_waits_and_what_ran_out(git_repo: Path) -> None:
    with syn.open_vault(git_repo) as v:
        for i in range(2):
            v.lessons.approve(v.lessons.create(f"rule {i}", branch=None).id)
        v.lessons.create("a pending one")
    _expire(git_repo, timedelta(hours=2))
    notice = json.loads(start(git_repo, "a").stdout)["systemMessage"]
    assert notice.startswith("synapse-nb: 1 lesson written by hand waits for your review (synapse-nb lessons review, "
                             "in your own terminal); 2 approved lessons ran out in the last 7 days, so they are no "
                             "longer given to the agent: approve them again")
