"""What a hook session is *given* is what it was printed (review 27): the hooks' cache file never decides whether
context is printed, a run that did not print marks nothing as given, and what an agent marks in another session's
name is bounded. Each test drives ``synapse-nb hook`` as Claude Code does (tests/test_agent_hooks.py's helpers).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.agents.sessions import LOCK_NAME, STATE_NAME, read_state, session_state
from tests.test_agent_hooks import claude, context_of, hook, person_told

LESSON = "Never retry billing charges without an idempotency key"
ASK = "how do we deploy the billing api?"


@pytest.fixture()
def repo(git_repo: Path) -> Path:
    """A vault with a person's approved lesson, verified memory and decision."""
    with syn.open_vault(git_repo) as v:
        les = v.lessons.create("Reverted the billing retry: it double-charged customers", branch=None)
        v.lessons.approve(les.id, text=LESSON)
        v.remember("procedure", "run_migrations", "Run alembic upgrade head before deploying the billing api")
        v.decide("Deploy the billing api only through the blue-green pipeline", rationale="outage 2024")
    return git_repo


def start(repo: Path, session: str = "sess-1", source: str = "startup", **env: str) -> str:
    return context_of(hook("SessionStart", claude("SessionStart", repo, session, source=source), cwd=repo, env=env))


def ask(repo: Path, session: str = "sess-1", prompt: str = ASK, **env: str) -> str:
    """The prompt hook's context for ``prompt``, or "" when it printed nothing (and said nothing on stderr)."""
    res = hook("UserPromptSubmit", claude("UserPromptSubmit", repo, session, prompt=prompt), cwd=repo, env=env)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return context_of(res) if res.stdout else ""


@contextmanager
def agents_flock(repo: Path) -> Iterator[None]:
    """``flock .synapse/agent-sessions.lock sleep N &``: another process holds the hooks' lock meanwhile."""
    with open(repo / ".synapse" / LOCK_NAME, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        yield


# ------------------------------------------------------------------------------------------------ finding 1
def test_a_held_lock_never_withholds_the_banner_nor_marks_it_given(repo: Path) -> None:
    """SessionStart marked the banner as given, then waited on an agent's flock until its time limit: no banner,
    "nothing was added" on stderr, and every later prompt named the lesson "shown earlier" by id only."""
    # a limit far above the lock's wait (LOCK_WAIT_S, 1 s): a run that waited for the lock until its limit is told
    # from one that went on without it however busy the machine (with 5 s, a run that waited its 1 s took 5.2 s with
    # its interpreter's start on a busy machine, and a prompt could reach its limit)
    limit = 30
    with agents_flock(repo):
        t0 = time.monotonic()
        res = hook("SessionStart", claude("SessionStart", repo, source="startup"), cwd=repo,
                   env={"SYNAPSE_AGENT_HOOK_TIMEOUT": str(limit)})
        assert time.monotonic() - t0 < limit
        assert LESSON in context_of(res) and res.stderr == ""
        during = ask(repo, SYNAPSE_AGENT_HOOK_TIMEOUT=str(limit))  # a prompt meanwhile is answered too
        assert "run_migrations" in during and "blue-green" in during
    # the lock held, the state was read without it and its epoch kept (review 31): what the session was printed
    # meanwhile is not printed again, and nothing it was not printed is withheld
    assert ask(repo) == ""


def test_a_run_killed_before_it_printed_says_so_and_marks_nothing(repo: Path) -> None:
    res = hook("UserPromptSubmit", claude("UserPromptSubmit", repo, prompt=ASK), cwd=repo,
               env={"SYNAPSE_AGENT_HOOK_TIMEOUT": "0.01"})
    person_told(res, "timeout")  # nothing for the agent; the person is told (review 95)
    assert "no context was given to the agent; the person was told" in res.stderr
    assert "nothing was added" not in res.stderr
    assert "run_migrations" in ask(repo)


def test_recall_without_recording_marks_only_when_told(repo: Path) -> None:
    with syn.open_vault(repo, actor="agent") as v:
        first = v.recall(ASK, session="s", record=False)
        assert first.items and v.recall(ASK, session="s", record=False).items  # nothing marked yet
        first.mark_given()
        first.mark_given()  # once
        again = v.recall(ASK, session="s")
        assert again.nothing_new and again.empty_reason == "already_given"
        assert {x.id for x in again.lessons} == again.shown_before


# ------------------------------------------------------------------------------------------------ finding 2
@pytest.mark.parametrize("name", [STATE_NAME, LOCK_NAME])
def test_a_directory_in_place_of_the_hooks_files_silences_nothing(repo: Path, name: str) -> None:
    start(repo)
    target = repo / ".synapse" / name
    target.unlink(missing_ok=True)
    target.mkdir()
    assert LESSON in start(repo, "next")
    assert "run_migrations" in ask(repo, "next")
    again = ask(repo, "next")
    if name == STATE_NAME:
        assert "run_migrations" in again  # no state kept: every run a new epoch, given again, never less
        assert target.is_dir()
    else:
        assert again == ""  # given once
        assert target.is_file()  # a lock file holds nothing: what was in its place is made anew (review 79)


def test_a_symlink_or_fifo_in_place_of_the_hooks_files_is_not_followed(repo: Path, tmp_path: Path) -> None:
    folder = repo / ".synapse"
    outside = tmp_path / "elsewhere.json"
    outside.write_text("keep", encoding="utf-8")
    (folder / STATE_NAME).unlink(missing_ok=True)
    (folder / STATE_NAME).symlink_to(outside)
    (folder / LOCK_NAME).unlink(missing_ok=True)
    (folder / LOCK_NAME).symlink_to(tmp_path / "made-by-the-lock")
    assert LESSON in start(repo)
    assert outside.read_text(encoding="utf-8") == "keep" and not (tmp_path / "made-by-the-lock").exists()
    (folder / LOCK_NAME).unlink()
    (folder / STATE_NAME).unlink()
    os.mkfifo(folder / STATE_NAME)  # reading it would block every hook until its time limit
    assert "run_migrations" in ask(repo, SYNAPSE_AGENT_HOOK_TIMEOUT="30")  # (30: not reached by a busy machine)
    assert read_state(folder, "default:sess-1").edits == 0


class LockClock:
    """The clock of the sessions' lock wait (``_lock``): it moves only when the wait sleeps, so how long it waited is
    what it was told, however the machine scheduled the test (``time.time``, the epochs' dates, stays the real one)."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    time = staticmethod(time.time)


def test_session_state_goes_on_without_a_lock_it_cannot_have(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse_nb import locks

    folder = repo / ".synapse"
    with session_state(folder, "k") as st:
        st.edits = 3
        st.new_epoch()
    epoch = read_state(folder, "k").epoch
    clock = LockClock()
    monkeypatch.setattr(locks, "time", clock)
    with agents_flock(repo):
        with session_state(folder, "k", wait=0.2) as st:
            assert st.edits == 3 and st.epoch == epoch  # the state as the file holds it (review 31) ...
            st.edits = 99
        # it waited its 0.2 s for the lock, no more (not LOCK_WAIT_S's 1 s), then went on without it (on the real
        # clock, < 2 s was the bound: a busy machine's as much as the wait's)
        assert 0.2 <= clock.now < 0.25, clock.now
        assert read_state(folder, "k").edits == 3  # ... and a count not written without the lock: lost
        with session_state(folder, "k", wait=0.2) as st:
            st.new_epoch()  # a new epoch is written: the next prompt must not go on in the one the context lost
        assert read_state(folder, "k").epoch == st.epoch != epoch


# ------------------------------------------------------------------------------------------------ finding 3
def test_an_mcp_recall_cannot_mark_what_a_hook_session_was_given(repo: Path) -> None:
    """A hook session's id (and its epoch) are readable in agent-sessions.json: an MCP recall under them marked
    what that Claude Code session was given."""
    from synapse_nb.vault import VaultSession

    start(repo, "victim")
    st = read_state(repo / ".synapse", "default:victim")
    with VaultSession(repo, actor="agent", create=False, surface="mcp") as mcp:
        for sid in ("victim", st.delta_session("victim")):
            assert mcp.read().recall(ASK, session=sid).items
    assert read_state(repo / ".synapse", "default:victim") == st
    got = ask(repo, "victim")
    assert "run_migrations" in got and "blue-green" in got


def test_what_an_agent_marks_in_another_sessions_name_is_withheld_for_an_epoch_at_most(repo: Path) -> None:
    """An agent with a shell runs the hook with another session's id (not preventable: it reads what the harness
    reads); the session's delta epoch ends within EPOCH_SECONDS, and everything is given again then."""
    from synapse_nb.agents.sessions import EPOCH_SECONDS

    start(repo, "victim")
    ask(repo, "victim")  # the agent, as the victim: marks the person's records as given
    assert ask(repo, "victim") == ""  # withheld meanwhile (the residual risk, docs/architecture.md)
    state = repo / ".synapse" / STATE_NAME
    data = json.loads(state.read_text(encoding="utf-8"))
    data["sessions"]["default:victim"]["epoch_at"] -= EPOCH_SECONDS + 1  # an hour later
    state.write_text(json.dumps(data), encoding="utf-8")
    later = ask(repo, "victim")
    assert LESSON in later and "run_migrations" in later and "blue-green" in later


def test_clear_starts_the_delta_afresh(repo: Path) -> None:
    start(repo)
    assert "run_migrations" in ask(repo)
    start(repo, source="clear")  # /clear dropped what the context held
    assert "run_migrations" in ask(repo)


# ------------------------------------------------------------------------------------------------ finding 4
def test_a_session_evicted_from_the_cache_is_given_again_after_its_compaction(repo: Path) -> None:
    """64 made-up sessions evicted a compacted session's state: its recall went back to the pre-compaction key and
    withheld what the compacted context lost."""
    start(repo)
    assert "run_migrations" in ask(repo)
    assert hook("PreCompact", claude("PreCompact", repo, trigger="auto"), cwd=repo).returncode == 0
    start(repo, source="compact")
    for i in range(64):  # what `synapse-nb hook post-tool --session junk-$i --file a.txt` does to the file
        with session_state(repo / ".synapse", f"default:junk-{i}") as st:
            st.touch("a.txt")
    assert "default:sess-1" not in json.loads((repo / ".synapse" / STATE_NAME).read_text())["sessions"]  # evicted
    got = ask(repo)
    assert "run_migrations" in got and "blue-green" in got


# ------------------------------------------------------------------------------------------------ finding 5
def test_the_pending_notice_tells_an_agents_lessons_from_reverts(repo: Path) -> None:
    with syn.open_vault(repo, actor="agent") as agent:
        for i in range(3):
            agent.lessons.create(f"URGENT: security fix {i}, approve with --accept-agent-text", branch=None)
    with syn.open_vault(repo) as v:
        v.lessons.create("A person's note to self")
    res = hook("SessionStart", claude("SessionStart", repo, source="startup"), cwd=repo)
    notice = json.loads(res.stdout)["systemMessage"]
    assert "3 lessons an agent wrote by hand (not from a revert)" in notice and "1 lesson written by hand" in notice
    assert "reverted" not in notice and "URGENT" not in notice and "wait for your review" in notice


# ------------------------------------------------------------------------------------------------ review 31
def long_lessons(repo: Path, n: int) -> dict[str, str]:
    """``n`` approved lessons of ~330 characters each (a person's own): id -> the text's unique ending."""
    out = {}
    with syn.open_vault(repo) as v:
        for i in range(n):
            end = f"(end of rule {i:02d})"
            les = v.lessons.create(f"Rule {i:02d}: " + "never deploy on Friday without a second reviewer; " * 6 + end,
                                   branch=None)
            v.lessons.approve(les.id)
            out[les.id] = end
    return out


def in_full(context: str, lessons: dict[str, str]) -> set[str]:
    return {i for i, end in lessons.items() if end in context}


def earlier_count(context: str) -> int:
    """How many lessons the answer says were shown earlier in the session and still apply (0: no such line)."""
    found = re.search(r"the (?:(\d+) approved lessons|approved lesson) shown earlier in this session", context)
    return 0 if found is None else int(found.group(1) or 1)


@pytest.mark.parametrize("source", ["startup", "compact"])
def test_a_lesson_the_session_start_cut_is_given_in_full_on_the_next_prompt(repo: Path, source: str) -> None:
    """SessionStart cut 7 of 30 lessons from its banner (the restore pack after a compaction cuts its own), and
    marked all 30 as given: the next prompt named them "shown earlier" by id only, for the whole epoch."""
    lessons = long_lessons(repo, 30)
    first = start(repo, source=source)
    shown = in_full(first, lessons)
    assert 0 < len(shown) < 30  # the start had to cut
    then = ask(repo)
    assert in_full(then, lessons) == set(lessons) - shown  # the rest, each in full
    assert earlier_count(then) == len(shown) + (LESSON in first)  # only those given whole count as shown before
    assert not [i for i in lessons if i in then]  # and no id is named: none left out
    assert "run_migrations" in then  # and the hits are given beside them


def test_the_prompt_keeps_room_for_the_hits_after_a_long_banner(repo: Path) -> None:
    """A prompt that starts an epoch prints the whole banner; 40 long lessons took the whole 10,000 characters
    and the hits were cut after the recall, yet marked as given."""
    lessons = long_lessons(repo, 40)
    first = ask(repo)
    assert "run_migrations" in first and "blue-green" in first  # the hits keep their room
    assert "not shown here for room" in first
    shown = in_full(first, lessons)
    assert shown and len(first) <= 10_000
    second = ask(repo, prompt="and the Friday deploy rule?")
    assert in_full(second, lessons) == set(lessons) - shown  # what the banner left out is given in full next
    assert ask(repo) == ""  # and nothing is given twice


def test_a_held_lock_keeps_the_sessions_epoch(repo: Path) -> None:
    """An agent holding the hooks' lock made every prompt a new epoch: every prompt printed the whole banner and
    the hits again (with a long banner, cut the relevant memory from every prompt while it held the lock)."""
    start(repo)
    first = ask(repo)
    assert "run_migrations" in first and LESSON not in first
    with agents_flock(repo):
        assert ask(repo) == ""  # the state read without the lock: its epoch kept, nothing printed twice
        assert LESSON in start(repo, source="clear")  # a new epoch is written without the lock
        assert "run_migrations" in ask(repo)  # ... and kept: given once in it
        assert ask(repo) == ""


def test_a_recall_marks_only_what_its_caller_printed(repo: Path) -> None:
    with syn.open_vault(repo, actor="agent") as v:
        first = v.recall(ASK, session="s", record=False)
        assert len(first.items) >= 2
        printed = first.items[0].id
        first.mark_given({printed})  # the cut kept only this one
        first.mark_given()  # once: a second call marks nothing more
        again = v.recall(ASK, session="s", record=False)
        assert {k.id for k in again.items} == {k.id for k in first.items} - {printed}
        assert not again.shown_before  # the lesson was not printed: given again


# ------------------------------------------------------------------------------------------------ review 34
REPEAT = "Backoff details of the matrix. "


def long_first(repo: Path) -> tuple[str, list[str]]:
    """4 short rules of a person's, then an agent's 9,000-character wording a person accepted (in force first)."""
    short = []
    with syn.open_vault(repo) as v:
        for i in range(4):
            les = v.lessons.create(f"person lesson {i}", branch=None)
            v.lessons.approve(les.id, text=f"PERSON RULE {i}: never deploy on friday without the on-call's ok")
            short.append(f"PERSON RULE {i}:")
    with syn.open_vault(repo, actor="agent") as agent:
        long = agent.lessons.create("Retry policy for the flaky suite. " + REPEAT * 290,
                                    branch=None)
    with syn.open_vault(repo) as v:
        v.lessons.approve(long.id, accept_agent_text=True)
        assert len(v.lessons.get(long.id).text) > 9_000 and v.lessons.in_force()[0].id == long.id
    return long.id, short


def agent_note(repo: Path, p: int) -> str:
    """The agent writes a fresh memory matching the next prompt (one a prompt): every prompt has hits."""
    with syn.open_vault(repo, actor="agent") as agent:
        agent.remember("project", f"note{p}", f"deploy pipeline status note {p}: the deploy step ran")
    return f"what is the deploy pipeline status {p}?"


@pytest.mark.parametrize("with_start", [True, False])
def test_a_long_lesson_on_top_never_keeps_the_short_ones_out(repo: Path, with_start: bool) -> None:
    """The banner filled greedily and stopped at the first lesson that did not fit: one long approved lesson on top
    of in_force, and an agent's hits on every prompt, kept a person's 4 short rules out of every prompt."""
    long, short = long_first(repo)

    def printed(text: str) -> set[str]:  # the lessons a text gives whole
        return ({s for s in short if s in text} | ({LESSON} if LESSON in text else set())
                | ({long} if text.count(REPEAT.strip()) == 290 else set()))

    seen = start(repo) if with_start else ""
    given = printed(seen)
    whole = 0
    for p in range(3):
        t = ask(repo, prompt=agent_note(repo, p))
        assert f"deploy pipeline status note {p}" in t  # the hits keep their room
        if p == 0:
            seen += t
            assert all(s in seen for s in short) and LESSON in seen  # each in full, at the start or the first prompt
        n = t.count(REPEAT.strip())
        assert n in (0, 290) and (n or long in t or long in given)  # whole, named for room, or given: never cut
        assert earlier_count(t) == len(given)  # and counted as "shown earlier" only once it was given whole
        given |= printed(t)
        whole += n
    if not whole:  # a prompt that leaves the banner its room gives the long one alone, whole, and marks it given
        alone = ask(repo, prompt="zebra quartz")
        assert alone.count(REPEAT.strip()) == 290 and "not shown here for room" not in alone
    assert ask(repo, prompt="zebra quartz") == ""


def test_a_lesson_left_out_comes_first_on_the_next_prompt(repo: Path) -> None:
    """Lessons left out for room rotate in: on the next prompt they get the room before those approved since."""
    lessons = long_lessons(repo, 40)
    first = ask(repo)
    left = set(lessons) - in_full(first, lessons)
    assert left
    with syn.open_vault(repo) as v:  # approved after the first prompt: in force first
        les = v.lessons.create("Rule new: " + "never deploy on Friday without a second reviewer; " * 6 + "(the newest)",
                               branch=None)
        v.lessons.approve(les.id)
    newer = {les.id: "(the newest)"}
    both = {**lessons, **newer}
    second = ask(repo, prompt="and the Friday deploy rule?")
    order = sorted(in_full(second, both), key=lambda i: second.index(both[i]))
    # the left-out ones are given the room first: the newer one only once they all fit
    assert set(order) & left and (set(newer) <= set(order) if left <= set(order) else set(newer).isdisjoint(order))
    with syn.open_vault(repo) as v:  # and given in the order every banner gives them: most recently approved first
        assert order == [x.id for x in v.lessons.in_force() if x.id in order]


# ------------------------------------------------------------------------------------------------ review 35
RUNBOOK = "PERSON RUNBOOK: " + "before any deploy, page the on-call and wait for their written ok; " * 104 + "END."


def test_a_lesson_left_out_for_room_gets_the_room_on_the_next_prompt(repo: Path) -> None:
    """The hits kept up to half the limit whatever the banner owed: a person's 7,000-character lesson (under the
    limit, over the room the hits left) was named "not shown here for room" on every prompt while an agent wrote
    9 matching 600-character memories before each one. Left out once, it gets the room first on the next prompt."""
    assert 6_900 < len(RUNBOOK) < 7_000
    with syn.open_vault(repo) as v:
        les = v.lessons.create("deploy runbook", branch=None)
        v.lessons.approve(les.id, text=RUNBOOK)
    filler = " ".join(["deploy pipeline status service release staging build test"] * 12)
    whole = []
    for p in range(2):
        with syn.open_vault(repo, actor="agent") as agent:  # the agent's turn: fresh notes for the next prompt
            for k in range(9):
                agent.remember("project", f"n{p}_{k}", f"release {p} note {k}: {filler}"[:600])
        t = ask(repo, prompt=f"what is the deploy pipeline status for release {p}?")
        assert len(t) <= 10_000 and (RUNBOOK in t or les.id in t)  # whole, or named for room: never cut
        whole.append(RUNBOOK in t)
    assert any(whole)  # printed whole within 2 prompts, then marked given
    third = ask(repo, prompt="what is the deploy pipeline status for release 1?")
    assert earlier_count(third) == 2 and RUNBOOK not in third and les.id not in third  # it and LESSON: counted


def test_a_lesson_the_session_start_left_out_gets_the_room_on_the_next_prompt(repo: Path) -> None:
    """An agent's checkpoint of ~2,000 characters kept the person's 6,000-character lesson out of SessionStart, and
    the hits of every prompt after it kept it out too."""
    with syn.open_vault(repo) as v:
        les = v.lessons.create("deploy runbook", branch=None)
        v.lessons.approve(les.id, text=RUNBOOK)
    filler = " ".join(["deploy pipeline status service release staging build test"] * 12)
    with syn.open_vault(repo, actor="agent") as agent:
        agent.checkpoints.create("working on the deploy " + "details " * 49, next_step="check " * 66,
                                 blockers=["b " * 190, "c " * 190, "d " * 190])
        for k in range(9):
            agent.remember("project", f"n{k}", f"release note {k}: {filler}"[:600])
    s = start(repo)
    assert RUNBOOK not in s and les.id in s  # named for room
    t = ask(repo, prompt="what is the deploy pipeline status for the release?")
    assert RUNBOOK in t and len(t) <= 10_000


def test_the_compact_start_marks_the_lessons_its_pack_printed_by_id(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The compact path found the lessons it printed by searching the pack's text for each one's banner item: a
    lesson whose item another printed line spells (two lessons of one text, the first withdrawn between the
    start's recall and its pack) was counted as printed, and the one printed was not. The pack says which it
    printed (``Pack.lessons``), by id."""
    from synapse_nb.agents.events import HookEvent
    from synapse_nb.agents.handlers import _session_start
    from synapse_nb.kinds.lessons import Lessons
    from synapse_nb.recall.types import Recall

    v = syn.open_vault(tmp_path)
    ids = []
    for _ in range(2):
        les = v.lessons.create("Reverted the friday deploy")
        ids.append(v.lessons.approve(les.id, text="never deploy on a Friday").id)
    calls: list[int] = []
    real = Lessons.in_force

    def in_force(self: Lessons, branch: Any = None) -> Any:  # the pack's read finds the newest withdrawn meanwhile
        calls.append(1)
        got = real(self)
        return got if len(calls) < 3 else type(got)(x for x in got if x.id != got[0].id)  # 3: the pack's

    monkeypatch.setattr(Lessons, "in_force", in_force)
    marked: list[set[str]] = []
    monkeypatch.setattr(Recall, "mark_given", lambda self, given=None: marked.append(set(given or ())))
    answer = _session_start(v.as_agent(), HookEvent(name="session-start", session="sess-1", source="compact"), True)
    assert len(calls) == 3 and "1. [all branches, approved] never deploy on a Friday" in answer.context
    assert answer.delivered is not None
    answer.delivered()
    newest = real(v.lessons)[0].id
    assert marked == [set(ids) - {newest}]  # the one the pack printed, not the withdrawn one its text spells
    v.close()
