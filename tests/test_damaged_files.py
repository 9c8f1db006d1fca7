"""A FIFO, or a symlink to a file outside, where the package keeps a derived or bookkeeping file (review 79).

Before: a FIFO at a semantic table's queue, at a rank file or at the scrub marker hung every recall, the agent hooks
(which then gave the agent no approved lesson, blaming "a locked or slow vault"), ``index check --repair`` and
``index rebuild`` while they held the index lock; a symlink at the scrub marker or the git hook's log had each
deletion and commit append its line to the file it named. Now each is "no file" to whoever reads it (the answer is
the undamaged one), nothing is written through a symlink, and a person's upkeep removes what is in the file's place.

Every step runs in its own process with a time limit, so a hang fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.errors import StoreError
from synapse_nb.own_files import state
from tests.test_agent_hooks import ROOT, claude, context_of
from tests.test_rank_cache import _lines

TOY = '''import hashlib
import numpy as np


class Toy:
    name, version, dimension = "toy", "1", 16
    fingerprint = "toy hash 16"

    def embed(self, texts, *, query=False):
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, hashlib.sha256(w.encode()).digest()[0] % 16] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
'''
QUERY = "how do we deploy safely"
LESSON = "Never deploy with --force: it skipped migrations and broke staging"
OUTSIDE = "the person's own notes\n"
LIMIT_S = 40  # a step that takes longer hung


def build(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, rows: int = 0) -> Path:
    """A vault with the semantic channel on (a tiny deterministic embedder), a person's approved lesson, a built
    index and a semantic table; with ``rows`` (at least ``rankfile.MIN_ROWS``) that many more, and a rank file."""
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "toyemb_r79.py").write_text(TOY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(mods))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(mods), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    with syn.open_vault(git_repo) as v:
        v.settings.set("recall_embedder", "import:toyemb_r79:Toy")
        v.settings.set("recall_semantic", 0.4)
        les = v.lessons.create("Reverted: deploy with --force skipped the migrations", branch=None)
        v.lessons.approve(les.id, text=LESSON)
        v.remember("procedure", "deploy", "Always run migrations before deploy; never pass --force to deploy")
        v.remember("knowledge", "dbport", "The staging database listens on port 6543")
        if rows:
            v.import_jsonl(iter(_lines(rows)), trust=True)
        v.recall(QUERY)  # the index, its semantic table and the rank file
    (tmp_path / "notes.md").write_text(OUTSIDE, encoding="utf-8")
    return git_repo


def _run(cmd: list[str], cwd: Path, *, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=LIMIT_S,
                              env={**os.environ, **env}, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(cmd[2:5])} hung (still running after {LIMIT_S} s)")


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "synapse_nb", "--vault", str(project), *args], project)


def recall(project: Path) -> str:
    res = cli(project, "recall", QUERY)
    assert res.returncode == 0, res.stderr
    return res.stdout


def hooks(project: Path, session: str) -> str:
    """SessionStart then UserPromptSubmit, as Claude Code runs them: their contexts."""
    out = []
    for event, fields in (("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": QUERY})):
        res = _run([sys.executable, "-m", "synapse_nb", "hook", event], project,
                   stdin=json.dumps(claude(event, project, session, **fields)))
        assert "gave up" not in res.stderr, res.stderr
        out.append(context_of(res) if res.stdout else "")
    return "\n".join(out)


def delete(project: Path, actor: str) -> None:
    code = (f"import synapse_nb as s\nv = s.open_vault({str(project)!r}, actor={actor!r})\n"
            f"m = v.remember('knowledge', 'tmp_{actor}', 'a temporary {actor} note to delete')\n"
            "v.memories.delete(m.id)\nprint(len(v.memories.search('temporary')))\n")
    res = _run([sys.executable, "-c", code], project)
    assert res.returncode == 0 and res.stdout.strip() == "0", res.stderr


def git_hook(project: Path) -> None:
    res = _run([sys.executable, "-m", "synapse_nb.gitscope.githook", "post-commit"], project,
               SYNAPSE_HOOK_TIMEOUT="20")
    assert res.returncode == 0, res.stderr
    log = project / ".synapse" / "hook.log"
    assert state(log) == "file" and "post-commit" in log.read_text(encoding="utf-8")


def _queue(project: Path) -> Path:
    (table,) = (project / ".synapse" / "index").glob("semantic_*.lance")
    return table.with_suffix(".queue")


def _rank(project: Path) -> Path:
    (file,) = (project / ".synapse" / "cache").glob("rank-*.bin")
    return file


TARGETS: dict[str, Callable[[Path], Path]] = {
    "queue": _queue,
    "rank": _rank,
    "scrub.owed": lambda p: p / ".synapse" / "index" / "scrub.owed",
    "index.lock": lambda p: p / ".synapse" / "index.lock",
    "agent-sessions.json": lambda p: p / ".synapse" / "agent-sessions.json",
    "agent-sessions.lock": lambda p: p / ".synapse" / "agent-sessions.lock",
    "hook.log": lambda p: p / ".synapse" / "hook.log",
    "hook.lock": lambda p: p / ".synapse" / "hook.lock",
}
#: What reads or writes each file, run with it damaged (each step is a process: the CI's time is kept modest).
STEPS = {
    "queue": ("recall", "repair"),
    "rank": ("hooks", "rebuild"),
    "scrub.owed": ("agent-delete", "person-delete"),
    "index.lock": ("recall",),
    "agent-sessions.json": ("hooks",),
    "agent-sessions.lock": ("hooks",),
    "hook.log": ("git-hook",),
    "hook.lock": ("git-hook",),
}


def plant(path: Path, how: str, outside: Path) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(outside)


@pytest.mark.parametrize("how", ["fifo", "symlink"])
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_damaged_derived_file_is_no_file_and_the_persons_upkeep_removes_it(
        git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, how: str) -> None:
    project = build(git_repo, tmp_path, monkeypatch, rows=600 if target == "rank" else 0)
    outside = tmp_path / "notes.md"
    steps = STEPS[target]
    undamaged = recall(project) if {"recall", "repair", "rebuild"} & set(steps) else ""
    given = hooks(project, "before") if "hooks" in steps else ""
    assert LESSON in given or "hooks" not in steps
    path = TARGETS[target](project)
    plant(path, how, outside)
    for step in steps:
        if step == "recall":
            assert recall(project) == undamaged
        elif step == "hooks":
            assert hooks(project, f"after-{how}") == given  # the approved lesson, and the prompt's hits
        elif step in ("repair", "rebuild"):
            res = cli(project, "index", *(("check", "--repair") if step == "repair" else ("rebuild",)))
            assert res.returncode == 0, res.stderr
            assert state(path) != "damaged"
            assert recall(project) == undamaged
        elif step.endswith("delete"):
            delete(project, step.split("-")[0].replace("person", "user"))
            if step == "person-delete":
                assert state(path) != "damaged"  # a person's deletion's scrub removes it
        else:
            git_hook(project)
        assert outside.read_text(encoding="utf-8") == OUTSIDE, step  # nothing written through the symlink


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("how", ["fifo", "symlink"])
def test_a_stray_file_beside_the_database_is_named_not_the_database(git_repo: Path, tmp_path: Path, suffix: str,
                                                                    how: str) -> None:
    """Before: "cannot open the vault database ...: unable to open database file; ... move it aside to start a new
    vault", for an intact synapse.db. Now the file in the way is named, and removing it is the remedy."""
    with syn.open_vault(git_repo) as v:
        v.remember("knowledge", "dbport", "The staging database listens on port 6543")
    project = git_repo
    (tmp_path / "notes.md").write_text(OUTSIDE, encoding="utf-8")
    side = project / ".synapse" / f"synapse.db{suffix}"
    plant(side, how, tmp_path / "notes.md")
    with pytest.raises(StoreError) as err:
        syn.open_vault(project)
    msg = str(err.value)
    assert str(side) in msg and "remove" in msg and "start a new vault" not in msg and "\n" not in msg
    side.unlink()
    with syn.open_vault(project) as v:
        assert len(v.memories.search("staging")) == 1
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == OUTSIDE
