"""s21: a SessionStart hook that fails still tells the agent, in one neutral line, that synapse-nb's session context
was not loaded and which MCP tools load it.

Claude Code reads a SessionStart hook's stdout as the session's context. A run that failed (a vault it could not
read, a lock held past its time limit, an exception) printed nothing there: the session started without the
approved lessons and the latest checkpoint, and the agent was never told. Now it prints
:data:`~synapse_nb.agents.hooks.START_FAILED` (no error text, nothing of the vault) and exits 0; every other event
still fails quietly, and no vault at all is still no failure.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.agents import handlers
from synapse_nb.agents.hooks import FAILED_WHY, START_FAILED, START_FAILED_NOTICE, respond
from tests.test_agent_hooks import claude, context_of, hook, person_told, quiet_failure

SECRET = "Never deploy the billing service on a Friday"


@pytest.fixture()
def repo(git_repo: Path) -> Path:
    with syn.open_vault(git_repo) as v:
        les = v.lessons.create("friday deploys")
        v.lessons.approve(les.id, text=SECRET)
    return git_repo


def start(repo: Path, **kw: Any) -> Any:
    return hook("SessionStart", claude("SessionStart", repo, source="startup"), cwd=repo, **kw)


def told(res: Any, why: str) -> str:
    """The failed start as it must be: exit 0, the neutral line as the whole context, the person told why in one of
    the fixed classes (Claude Code's systemMessage: review 95), one line on stderr."""
    assert context_of(res) == START_FAILED
    assert json.loads(res.stdout)["systemMessage"] == START_FAILED_NOTICE.format(why=FAILED_WHY[why])
    assert SECRET not in res.stdout and "Traceback" not in res.stdout + res.stderr
    [line] = res.stderr.strip().splitlines()
    return line


def test_a_damaged_vault_tells_the_agent_to_load_the_memory_itself(repo: Path) -> None:
    assert SECRET in context_of(start(repo))  # healthy: the banner
    assert "get_approved_memory" in START_FAILED and "restore_checkpoint" in START_FAILED  # the tools it names
    assert "recall" in START_FAILED and "\n" not in START_FAILED and len(START_FAILED) < 300
    db = repo / ".synapse" / "synapse.db"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    line = told(start(repo), "store")
    assert "not a database" in line and str(db) not in start(repo).stdout  # the error is the person's, on stderr
    text = hook("SessionStart", args=("--session", "s", "--format", "text"), cwd=repo)  # the generic form: text
    assert text.returncode == 0 and text.stdout == START_FAILED + "\n"
    person_told(hook("UserPromptSubmit", claude("UserPromptSubmit", repo, prompt="deploy"), cwd=repo), "store")
    elsewhere = repo.parent / "no_vault_here"  # no vault at all is no failure: nothing to load, nothing printed
    elsewhere.mkdir()
    assert "no vault" in quiet_failure(hook("SessionStart", claude("SessionStart", elsewhere, source="startup"),
                                            cwd=elsewhere, env={"SYNAPSE_HOME": ""}))


def test_a_lock_held_past_the_time_limit_tells_the_agent_too(repo: Path) -> None:
    """Another process holds the database whole (an exclusive locking mode stops readers too, as a WAL writer's
    lock does not): the run gives up at its limit and says, on stdout, what it could not give."""
    conn = sqlite3.connect(repo / ".synapse" / "synapse.db", isolation_level=None)
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("UPDATE meta SET value = value WHERE 0")
        res = start(repo, env={"SYNAPSE_AGENT_HOOK_TIMEOUT": "2"})
    finally:
        conn.rollback()
        conn.close()
    line = told(res, "timeout")
    assert "gave up after 2 s" in line and "the agent was told to load the memory through the MCP tools" in line
    assert SECRET in context_of(start(repo))  # the lock gone: the banner again


def test_an_exception_in_the_handler_tells_the_agent_without_its_text(repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: Any) -> Any:
        raise RuntimeError(f"internal state: {SECRET}")

    monkeypatch.setitem(handlers._HANDLERS, "session-start", boom)
    monkeypatch.setitem(handlers._HANDLERS, "prompt", boom)
    payload = json.dumps(claude("SessionStart", repo, source="startup"))
    out = respond(["SessionStart"], payload, vault=str(repo), env={})
    assert json.loads(out.stdout) == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                             "additionalContext": START_FAILED},
                                      "systemMessage": START_FAILED_NOTICE.format(why=FAILED_WHY["error"])}
    assert SECRET not in out.stdout and "RuntimeError" not in out.stdout
    assert out.stderr.startswith("synapse-nb hook: session-start: unexpected RuntimeError")
    other = respond(["prompt", "--text", "deploy"], "", vault=str(repo), env={})  # the text form: stderr only
    assert other.stdout == "" and "unexpected RuntimeError" in other.stderr


def test_unreadable_input_still_tells_the_agent_as_text(repo: Path) -> None:
    res = hook("SessionStart", cwd=repo, raw="{\"session_id\": ")
    assert res.returncode == 0 and res.stdout == START_FAILED + "\n" and "stdin" in res.stderr
