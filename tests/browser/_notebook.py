"""The one notebook the browser suite drives: every widget and magic display, each widget on a vault of its own,
opened once per session at the width the issue measured (1280 px) and run cell by cell, like a person would.

The vaults look like a real project's: a git repository with reverts (lessons, an agent's analysis, memories an
agent wrote, a checkpoint), 10,000 generated memories beside a few real ones (the browser must stay quick by
showing one page), and a small vault for the gate.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _ui import STEP_MS, Console, attach_console, open_and_run

import synapse_nb as syn
from synapse_nb.gitscope.testing import ScratchRepo

#: The viewport: the width at which the issue found the table cut (the output area is ~850 px wide there).
VIEWPORT = {"width": 1280, "height": 900}
#: The last cell: an agent's handle refused by LessonReview (last, because Run All stops at an error).
REFUSED = "LessonReview(syn.open_vault(LESSONS).as_agent())"


@dataclass
class Notebook:
    page: Any
    console: Console
    lessons: Path
    lesson_ids: dict[str, str]
    repo: ScratchRepo
    memories: Path
    memory_ids: dict[str, str]
    gate: Path


def _lesson_vault(root: Path) -> tuple[Path, dict[str, str], ScratchRepo]:
    """A git repository with three reverted commits (three pending lessons, one with an agent's analysis), two
    memories (one an agent's, which recall ranks low for "migrations") and a checkpoint."""
    r = ScratchRepo.init(root)
    r.commit_file("cache.py", "CACHE = {}\n", "In-process cache")
    r.write("settings.py", "REDIS_URL = 'redis://localhost'\n")
    r.git("add", "settings.py")
    r.commit_file("cache.py", "import redis\nCACHE = redis.Redis()\n", "Use Redis for the cache")
    r.git("revert", "--no-edit", "HEAD")
    r.commit_file("upload.py", "while True:\n    retry()\n", "Retry uploads forever")
    r.git("revert", "--no-edit", "HEAD")
    r.commit_file("requirements.txt", "pandas==3.0\n", "Bump pandas to 3.0")
    r.git("revert", "--no-edit", "HEAD")
    v = syn.open_vault(root)
    found = {les.reverted_commits[0]["subject"]: les.id for les in v.lessons.scan()}
    ids = {"redis": found["Use Redis for the cache"], "retry": found["Retry uploads forever"],
           "pandas": found["Bump pandas to 3.0"]}
    v.as_agent().lessons.submit_analysis(ids["redis"], "Redis is not available in offline runs.")
    v.remember("procedure", "run_migrations", "alembic upgrade head, then run the migrations check", tags=["db"])
    v.as_agent().remember("knowledge", "ingest_bottleneck", "the nightly ingest of the event logs is slow: JSON "
                          "parsing dominates at 40 MB/s, the loader holds one connection per worker, the staging "
                          "database waits on its migrations, and the retry queue doubles the load after a timeout",
                          tags=["perf", "ingest"])
    v.close()
    return root, ids, r


def _memory_vault(root: Path) -> tuple[Path, dict[str, str]]:
    """10,000 generated memories plus a few known ones: the browser must stay quick by showing one page."""
    root.mkdir()
    v = syn.open_vault(root)
    with v.transaction():
        for i in range(10_000):
            v.remember("knowledge", f"fact_{i:05d}", f"generated fact {i} about service {i % 97}", tags=[f"t{i % 13}"])
    a = v.as_agent()
    ids = {
        "ttl": a.remember("preference", "cache_ttl", "cache entries live 5 minutes, then the API is asked again",
                          tags=["cache"]).id,
        "freeze": v.remember("context", "release_freeze", "no deploys on friday afternoons", tags=["deploy"]).id,
        "mig": v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"], priority="high").id,
    }
    v.close()
    return root, ids


def _gate_vault(root: Path) -> Path:
    root.mkdir()
    v = syn.open_vault(root)
    v.remember("procedure", "run_migrations", "alembic upgrade head before deploying", tags=["db"])
    v.remember("knowledge", "cache_ttl", "cache entries live 5 minutes", tags=["cache"])
    v.remember("context", "release_freeze", "no deploys on friday afternoons", tags=["deploy"])
    v.as_agent().remember("knowledge", "rollback_howto", "a rollback of a release switches the router back to blue")
    v.decide("Deploy with blue-green switching", rationale="Rollback is a router change", tags=["deploy"])
    v.close()
    return root


@pytest.fixture(scope="package")
def nb(lab: Any, browser: Any) -> Iterator[Notebook]:
    """The demo notebook, opened in JupyterLab at 1280 px with every cell run."""
    tmp = Path(tempfile.mkdtemp(prefix="synapse-demo-"))  # a neutral path: the status screenshot shows it
    lessons, lesson_ids, repo = _lesson_vault(tmp / "lessons")
    memories, memory_ids = _memory_vault(tmp / "memories")
    gate = _gate_vault(tmp / "gate")
    name = lab.notebook("synapse_ui.ipynb", [
        ("import synapse_nb as syn\nfrom synapse_nb.widgets import GateExplorer, LessonReview, MemoryBrowser\n"
         f"LESSONS, MEMORIES, GATE = {str(lessons)!r}, {str(memories)!r}, {str(gate)!r}"),
        "%load_ext synapse_nb\n%config SynapseMagics.vault_path = LESSONS",
        "%remember procedure deploy_steps run the migrations, then switch the router --tags deploy,db",
        "%memory status",
        "%recall how do we run migrations --all --explain",
        "%synapse",
        '%checkpoint create --doing "Moving the cache back in process" --files cache.py',
        "%checkpoint restore",
        "%lessons",
        "MemoryBrowser(syn.open_vault(MEMORIES))",
        "GateExplorer(syn.open_vault(GATE))",
        REFUSED,
    ])
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(STEP_MS)
    console = Console()
    attach_console(page, console)
    t0 = time.monotonic()
    open_and_run(page, lab, name, expected_error="PermissionDeniedError: LessonReview acts as the human reviewer")
    print(f"\nnotebook opened and run in {time.monotonic() - t0:.1f} s")
    try:
        yield Notebook(page, console, lessons, lesson_ids, repo, memories, memory_ids, gate)
    finally:
        context.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture()
def ui(nb: Notebook) -> Iterator[Notebook]:
    """The notebook; the test fails on any console error that appeared while it ran."""
    before = len(nb.console.errors)
    yield nb
    new = nb.console.errors[before:]
    assert not new, "browser console errors:\n" + "\n".join(new)
