"""Driving JupyterLab like a person: open a notebook, run every cell, take screenshots, and read the vault
from another process (the CLI, or a fresh Python) to see what the clicks really changed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Screenshots of every widget land here; CI keeps the folder (git-ignored).
ARTIFACTS = Path(__file__).parent / "artifacts"
#: Where docs/notebook.md's screenshots live: ``shot(..., docs="name")`` also writes docs/img/notebook_<name>.png
#: when ``SYNAPSE_DOCS_IMG=1`` (so the docs show what the code draws; see docs/notebook.md).
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
#: How long a widget may take to show the result of a click (the kernel answers over a websocket; a loaded
#: 2-core machine can be slow): every wait is on a condition, this is only its upper bound.
STEP_MS = 30_000


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


def open_and_run(page: Any, lab: Any, name: str, *, expected_error: str | None = None) -> None:
    """Open ``name`` in JupyterLab, wait for its kernel, run every cell (Run > Run All Cells) and wait for them.

    Any error output fails, except one starting with ``expected_error`` (the last cell may show a refusal)."""
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
    tracebacks = [t for t in errors.all_inner_texts() if ("Traceback" in t or "Error" in t)
                  and not (expected_error and t.strip().startswith(expected_error))]
    assert not tracebacks, "a cell failed:\n" + "\n".join(tracebacks)


def shot(locator: Any, name: str, *, docs: str | None = None) -> Path:
    """Screenshot of one element into tests/browser/artifacts/NAME.png (scrolled into view first); with ``docs``
    and ``SYNAPSE_DOCS_IMG=1`` also into docs/img/notebook_<docs>.png."""
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
    if docs and os.environ.get("SYNAPSE_DOCS_IMG") == "1":
        shutil.copyfile(path, DOCS_IMG / f"notebook_{docs}.png")
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


# -- waiting on what a person would see ------------------------------------------------------------------------------
def wait_text(locator: Any, pattern: str) -> None:
    """Wait until ``locator`` contains text matching the regular expression ``pattern``."""
    from playwright.sync_api import expect

    expect(locator).to_contain_text(re.compile(pattern), timeout=STEP_MS)


def wait_count(locator: Any, n: int) -> None:
    """Wait until ``locator`` matches exactly ``n`` elements (a table's rows arrive apart from its summary line)."""
    from playwright.sync_api import expect

    expect(locator).to_have_count(n, timeout=STEP_MS)


def wait_no_text(locator: Any, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).not_to_contain_text(text, timeout=STEP_MS)


def wait_enabled(button: Any) -> None:
    from playwright.sync_api import expect

    expect(button).to_be_enabled(timeout=STEP_MS)


def wait_until(page: Any, js: str, arg: Any = None) -> Any:
    """Wait until the JavaScript function ``js`` (called with ``arg``) returns something truthy; returns it."""
    return page.wait_for_function(js, arg=arg, timeout=STEP_MS).json_value()


def set_theme(page: Any, theme: str) -> None:
    """Switch JupyterLab to its light or dark theme from the Settings menu, as a person does (no-op when set)."""
    light = theme == "light"
    if page.evaluate("() => document.body.dataset.jpThemeLight") == ("true" if light else "false"):
        return
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.click(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(f".lm-Menu-itemLabel:text-is('{'JupyterLab Light' if light else 'JupyterLab Dark'}')")
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{str(light).lower()}'", timeout=STEP_MS)
    # the theme's stylesheet is applied when the page background has the theme's colour
    page.wait_for_function("""(light) => {
        const c = (getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor.match(/[\\d.]+/g)
                   || []).map(Number);
        const lum = (c[0] + c[1] + c[2]) / 3;
        return light ? lum > 200 : lum < 80;
    }""", arg=light, timeout=STEP_MS)


def run_new_cell(page: Any, code: str) -> None:
    """Add a cell at the end of the notebook, type ``code`` into it and run it (Shift+Enter), as a person does;
    waits until it ran."""
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    n = cells.count()
    cells.nth(n - 1).locator(".jp-InputPrompt").click()  # select the last cell (command mode)
    page.keyboard.press("b")  # a new cell below
    page.wait_for_function("(n) => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length === n + 1", arg=n,
                           timeout=STEP_MS)
    cell = cells.nth(n)
    cell.locator(".cm-content").click()
    page.keyboard.insert_text(code)
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("""(n) => {
        const p = document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')[n];
        return p && /\\[\\d+\\]/.test(p.textContent);
    }""", arg=n, timeout=STEP_MS)
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=STEP_MS)


#: WCAG contrast ratio between an element's text colour and the first opaque background behind it.
CONTRAST_JS = """e => {
    const rgb = s => {  // "rgb(r, g, b)", "rgba(...)", or "color(srgb r g b / a)" (color-mix) in 0..1
        const n = (s.match(/[\\d.]+/g) || []).map(Number);
        return s.startsWith('color(') ? n.map((v, i) => i < 3 ? v * 255 : v) : n;
    };
    const lum = ([r, g, b]) => {
        const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const fg = rgb(getComputedStyle(e).color);
    let n = e, bg = null;
    while (n && !bg) {
        const c = rgb(getComputedStyle(n).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) bg = c.slice(0, 3);
        n = n.parentElement;
    }
    bg = bg || [255, 255, 255];
    const a = fg.length >= 4 ? fg[3] : 1;  // a translucent text colour is blended over the background
    const mix = [0, 1, 2].map(i => fg[i] * a + bg[i] * (1 - a));
    const [l1, l2] = [lum(mix), lum(bg)].sort((x, y) => y - x);
    return (l1 + 0.05) / (l2 + 0.05);
}"""


def contrast(locator: Any) -> float:
    return float(locator.evaluate(CONTRAST_JS))


#: How a widget sits in its output area: overflow, the table's and its columns' widths, in CSS pixels.
LAYOUT_JS = """root => {
    const out = root.closest('.jp-OutputArea-output');
    const table = root.querySelector('.synapse-table');
    const wrap = root.querySelector('.synapse-table-wrap');
    const cols = {};
    if (table) for (const th of table.querySelectorAll('th')) cols[th.dataset.key] = th.getBoundingClientRect().width;
    const over = [...root.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right >
                                                            out.getBoundingClientRect().right + 1 &&
                                                            e.getBoundingClientRect().width > 0);
    return {outWidth: out.clientWidth, outScroll: out.scrollWidth, rootWidth: root.clientWidth,
            rootScroll: root.scrollWidth, table: table ? table.getBoundingClientRect().width : 0,
            wrap: wrap ? wrap.clientWidth : 0, wrapScroll: wrap ? wrap.scrollWidth : 0, cols,
            overflowing: over.slice(0, 5).map(e => e.className || e.tagName)};
}"""


def layout(locator: Any) -> dict[str, Any]:
    return dict(locator.evaluate(LAYOUT_JS))


#: Whether an element is inside the notebook's visible area (the panel JupyterLab scrolls), as a person sees it.
IN_VIEW_JS = """e => {
    const r = e.getBoundingClientRect();
    const s = e.closest('.jp-WindowedPanel-outer').getBoundingClientRect();
    return r.height > 0 && r.top >= s.top - 1 && r.bottom <= s.bottom + 1;
}"""


def in_view(locator: Any) -> bool:
    return bool(locator.evaluate(IN_VIEW_JS))


def wait_in_view(locator: Any) -> None:
    """Wait until the element is inside the notebook's visible area (a widget scrolls it there itself)."""
    locator.page.wait_for_function(f"e => ({IN_VIEW_JS})(e)", arg=locator.element_handle(), timeout=STEP_MS)


#: What the notebook itself knows: how many cells, which one is active, where the keyboard focus is.
NOTEBOOK_STATE_JS = """() => {
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    const a = document.activeElement;
    return {cells: cells.length, active: cells.findIndex(c => c.classList.contains('jp-mod-active')),
            focusInWidget: !!(a && a.closest('.synapse-widget')), focusTag: a ? a.tagName : null,
            focusId: a && a.dataset ? (a.dataset.id || null) : null};
}"""


def notebook_state(page: Any) -> dict[str, Any]:
    return dict(page.evaluate(NOTEBOOK_STATE_JS))
