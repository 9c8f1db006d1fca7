"""Review 91 F2: a purge left the person's prompt in the agent hooks' side file, and the hooks wrote it back.

The hooks keep each session's first and latest prompt in ``<vault>/agent-sessions.json`` (``task``, ``prompt``) and
name them in the automatic checkpoints and episodes they write. A person typed a secret in a prompt; the hooks copied
it into an automatic checkpoint and an episode; the person purged both: the side file still held the secret, and the
session's next episode logged a new record with the purged text. Now a deletion or purge of a record whose text holds
a session's prompt clears that session's ``task`` and ``prompt``, and the purge's report says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import synapse_nb as syn
from synapse_nb.agents.sessions import STATE_NAME, read_state, session_state
from tests.test_agent_hooks import claude, hook

MARKER = "Xylozorbquent"
SECRET = f"the staging token is {MARKER}-secret-7731, use it to deploy"


def _run(repo: Path, event: str, **fields: object) -> None:
    res = hook(event, claude(event, repo, "sess1", **fields), cwd=repo)
    assert res.returncode == 0 and "gave up" not in res.stderr, res.stderr


def _files_holding(folder: Path, marker: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``marker`` (any case)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and marker.lower().encode() in p.read_bytes().lower())


def test_a_purge_clears_the_prompt_the_hooks_kept_and_the_next_episode_does_not_log_it(git_repo: Path) -> None:
    (git_repo / "a.py").write_text("x = 1\n", encoding="utf-8")
    syn.open_vault(git_repo).close()  # `synapse-nb init`
    _run(git_repo, "SessionStart", source="startup")
    _run(git_repo, "UserPromptSubmit", prompt=SECRET)
    _run(git_repo, "PostToolUse", tool_name="Edit", tool_input={"file_path": str(git_repo / "a.py")})
    _run(git_repo, "PreCompact", trigger="auto")  # an automatic checkpoint naming the prompt
    _run(git_repo, "Stop")  # an episode naming it
    folder = git_repo / ".synapse"
    assert MARKER in (read_state(folder, "default:sess1").task or "")
    with syn.open_vault(git_repo) as v:
        held = [c.id for c in v.checkpoints.list() if MARKER in c.text] + \
               [e.id for e in v.episodes.history() if MARKER in e.text]
        assert len(held) == 2, held
        reports = [v.purge(rid) for rid in held]
    state = json.loads((folder / STATE_NAME).read_text(encoding="utf-8"))["sessions"]["default:sess1"]
    assert state["task"] is None and state["prompt"] is None
    assert _files_holding(folder, MARKER) == []  # no file of the vault folder holds the purged text
    said = str(reports[0])
    assert reports[0].prompts_cleared == 1 and "agent hooks' prompts it held cleared: 1 session" in said, said
    assert reports[1].prompts_cleared == 0  # cleared by the first purge already

    # the same session goes on: one more edit, and the session ends with an episode
    _run(git_repo, "PostToolUse", tool_name="Edit", tool_input={"file_path": str(git_repo / "a.py")})
    _run(git_repo, "SessionEnd")
    with syn.open_vault(git_repo) as v:
        episodes = v.episodes.history()
        assert episodes and not any(MARKER in e.text for e in episodes)
    assert _files_holding(folder, MARKER) == []


def test_a_persons_deletion_clears_the_prompt_its_record_held_and_no_other(vault: syn.Vault) -> None:
    folder = Path(vault.path)
    with session_state(folder, "held") as st:
        st.task = st.prompt = SECRET
    with session_state(folder, "other") as st:
        st.task, st.prompt = "fix the billing cache", "ok go ahead"
    dec = vault.decide(f"Deploy with the token from the prompt: {SECRET}")  # a record the prompt went into
    vault.decisions.delete(dec.id)
    assert (read_state(folder, "held").task, read_state(folder, "held").prompt) == (None, None)
    assert read_state(folder, "other").task == "fix the billing cache"
    assert read_state(folder, "other").prompt == "ok go ahead"
