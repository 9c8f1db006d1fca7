"""``synapse-nb demo``: a one-minute tour of the vault in a throwaway folder.

It walks through what a newcomer needs to see once: save a checkpoint, log a decision, remember
something and update it in place, turn a revert into a lesson that an agent analyses and a human
approves, and finally recall what an agent would be told. Each step prints the equivalent command.

Examples
--------
>>> from synapse_nb.demo import run_demo
>>> import io
>>> out = io.StringIO()
>>> summary = run_demo(file=out)
>>> "APPROVED SYSTEM MEMORY" in out.getvalue()
True
>>> sorted(summary)
['checkpoint', 'decision', 'lesson', 'memory', 'recall', 'vault']
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from synapse_nb.render import when
from synapse_nb.vault import open_vault

__all__ = ["run_demo"]


def run_demo(*, keep: bool = False, file: IO[str] | None = None) -> dict[str, Any]:
    """Run the tour in a temporary vault and print it; return the ids it created.

    Parameters
    ----------
    keep : keep the temporary folder (its path is printed) instead of deleting it.
    file : where to print (default: stdout).

    Returns
    -------
    dict
        ``vault`` (path), ``checkpoint``, ``decision``, ``memory``, ``lesson`` (ids) and ``recall`` (the text).
    """
    out = file if file is not None else sys.stdout
    color = file is None and out.isatty()

    def say(text: str = "") -> None:
        print(text, file=out)

    def step(n: int, title: str, cmd: str) -> None:
        head = f"{n}. {title}"
        say()
        say(f"\033[1m{head}\033[0m" if color else head)
        say(f"   $ {cmd}")

    def dim(text: str) -> str:
        return f"\033[2m{text}\033[0m" if color else text

    tmp = Path(tempfile.mkdtemp(prefix="synapse-demo-"))
    result: dict[str, Any] = {}
    try:
        project = tmp / "project"
        project.mkdir()
        v = open_vault(project)
        result["vault"] = str(v.path)
        say("synapse-nb demo: a one-minute tour in a throwaway vault")
        say(dim(f"   vault: {v.path}"))

        step(1, "Checkpoint: save where you are, so the next session (or agent) can resume",
             'synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py --next-step "Run pytest"')
        c = v.checkpoint("Refactoring JWT auth", files=["src/auth.py", "tests/test_auth.py"],
                         next_step="Run pytest tests/test_auth.py", origin="cli")
        say(f"   saved {c.id}")
        result["checkpoint"] = c.id

        step(2, "Decision: log a design choice with its rationale",
             'synapse-nb decision log "Use SQLite WAL mode" --rationale "Readers never block writers" --tags storage')
        d = v.decide("Use SQLite WAL mode for the vault", rationale="Readers never block writers",
                     tags=["storage", "sqlite"])
        say(f"   logged {d.id}")
        result["decision"] = d.id

        step(3, "Memory: remember a fact; the same category+key later updates it in place",
             'synapse-nb remember procedure run_migrations "alembic upgrade head" --tags db --priority high')
        m1 = v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db", "migrations"],
                        priority="high")
        m2 = v.remember("procedure", "run_migrations", "alembic upgrade head, then restart the API workers")
        same = "in place, same id" if m2.id == m1.id else f"as {m2.id}"
        say(f"   remembered {m1.id}, then updated it ({same})")
        say(dim(f"   {m2.summary_line()}"))
        versions = v.memories.history("run_migrations")
        first = getattr(versions.record(1), "content", "")
        say(f"   its history keeps every version ({len(versions)}: `synapse-nb memory history run_migrations`); "
            f"v1 said {first!r}")
        result["memory"] = m2.id

        step(4, "Lesson: a revert becomes a pending lesson; the agent proposes why, a human approves",
             "synapse-nb lessons scan && synapse-nb lessons review")
        les = v.lessons.create("Reverted 'retry payment calls on timeout': customers were charged twice",
                               files=["src/payments.py"])
        say(f"   pending {les.id}: {les.summary}")
        v.as_agent().lessons.submit_analysis(
            les.id, "Retrying a non-idempotent payment call double-charges; retry only with an idempotency key.")
        say("   the agent submitted an analysis (a proposal: it cannot approve)")
        # an agent's wording never becomes a rule by default: the human writes the lesson (or, explicitly, takes
        # the agent's words with accept_agent_text=True / --accept-agent-text)
        approved = v.lessons.approve(les.id, text="Retry payment calls only with an idempotency key.")
        say(f"   you read it and approved the lesson in your own words; in force until {when(approved.expires_at)}")
        result["lesson"] = approved.id

        query = "add retries to the payment client and run migrations"
        step(5, "Recall: what an agent is told at the start of a turn", f'synapse-nb recall "{query}"')
        r = v.recall(query)
        for line in r.text.splitlines():
            say(f"   {line}")
        result["recall"] = r.text
        v.close()

        say()
        say("Next: in your project, run `synapse-nb checkpoint create --doing \"...\"`, `synapse-nb hooks install`,")
        say("and register the MCP server for your agent (`synapse-nb mcp`, see docs/agents.md).")
        if keep:
            say(dim(f"kept the demo vault: {tmp}"))
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return result
