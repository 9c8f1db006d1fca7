"""Driving JupyterLab like a person: open a notebook, run every cell, take screenshots, and read the vault
from another process (the CLI, or a fresh Python) to see what the clicks really changed."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Screenshots of every widget land here; CI keeps the folder (git-ignored).
ARTIFACTS = Path(__file__).parent / "artifacts"


@dataclass
class Console:
    """Console errors and uncaught page errors seen in a page."""

    errors: list[str] = field(default_factory=list)


def attach_console(page: Any, console: Console) -> None:
    """Record every ``console.error`` and uncaught exception of ``page`` into ``console``."""
    page.on("console", lambda m: console.errors.append(f"console.{m.type}: {m.text} ({m.location})")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: console.errors.append(f"uncaught: {e}"))


#: A kernel start plus the first cells can be slow on a busy 2-core machine.
RUN_TIMEOUT_MS = 120_000


def open_and_run(page: Any, lab: Any, name: str) -> None:
    """Open ``name`` in JupyterLab, wait for its kernel, run every cell (Run > Run All Cells) and wait for them."""
    page.goto(f"{lab.url}/lab/tree/{name}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=RUN_TIMEOUT_MS)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click("li[data-command='runmenu:run-all']")
    n = page.locator(".jp-Notebook .jp-CodeCell").count()
    # every prompt shows its execution count ("[3]:"), none "[*]:", and the kernel is idle again
    page.wait_for_function(
        """(n) => {
            const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
            return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""", arg=n, timeout=RUN_TIMEOUT_MS)
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=RUN_TIMEOUT_MS)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, "a cell failed:\n" + "\n".join(tracebacks)


def shot(locator: Any, name: str) -> Path:
    """Screenshot of one element into tests/browser/artifacts/NAME.png (scrolled into view first)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page = locator.page
    size = page.viewport_size
    box = locator.bounding_box()
    # JupyterLab scrolls inside its own panel: a widget taller than the panel would be shot with the
    # menu bar over it, so the window grows to fit the widget first
    need = int(box["height"]) + 400 if box else size["height"]
    if need > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": need})
    try:
        locator.scroll_into_view_if_needed()
        locator.screenshot(path=str(path), animations="disabled")
    finally:
        if need > size["height"]:
            page.set_viewport_size(size)
    return path


def cli(project: Path, *args: str) -> Any:
    """Run ``synapse-nb --vault PROJECT ARGS --json`` in a separate process; returns the parsed JSON."""
    exe = Path(sys.executable).with_name("synapse-nb")
    proc = subprocess.run([str(exe), "--vault", str(project), *args, "--json"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, f"synapse-nb {' '.join(args)} failed: {proc.stderr}"
    return json.loads(proc.stdout)


_PROBE = """
import json, sys
import synapse_nb as syn
v = syn.open_vault(sys.argv[1])
ids = sys.argv[2:]
out = {"count": v.memories.count(), "settings": v.settings.as_dict(), "memories": {}}
for i in ids:
    try:
        m = v.memories.get(i)
        out["memories"][i] = {"verified": m.verified, "content": m.content}
    except syn.NotFoundError:
        out["memories"][i] = None
print(json.dumps(out))
"""


def probe(project: Path, *memory_ids: str) -> dict[str, Any]:
    """Read memories and settings with a fresh Python process (not the kernel, not this test process)."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(project), *memory_ids], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
