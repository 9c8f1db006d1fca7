"""The notebook UI in a real JupyterLab and headless Chromium, driven like a person would.

One notebook (one kernel, one page load: the suite stays well under three minutes) holds every widget,
each on a vault of its own, plus the rich displays of ``%memory status`` and ``%recall --explain``. Each
test drives one widget by clicking, typing and dragging, and after each step reads the vault from a
separate process (the ``synapse-nb`` CLI, or a fresh Python) to check what the click really changed. Any
browser console error fails the test that was running. Screenshots go to tests/browser/artifacts/.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _ui import Console, attach_console, cli, open_and_run, probe, shot

import synapse_nb as syn
from synapse_nb.gitscope.testing import ScratchRepo

pytestmark = pytest.mark.browser

#: How long a widget may take to show the result of a click (the kernel answers over a websocket).
STEP_MS = 20_000


@dataclass
class Notebook:
    page: Any
    console: Console
    lessons: Path
    lesson_ids: dict[str, str]
    memories: Path
    memory_ids: dict[str, str]
    gate: Path


def _lesson_vault(root: Path) -> tuple[Path, dict[str, str]]:
    """A git repository with three reverted commits: three pending lessons, one with an agent's analysis."""
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
    v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    v.close()
    return root, ids


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
    v.decide("Deploy with blue-green switching", rationale="Rollback is a router change", tags=["deploy"])
    v.close()
    return root


@pytest.fixture(scope="module")
def nb(lab: Any, browser: Any) -> Iterator[Notebook]:
    """The demo notebook, opened in JupyterLab with every cell run."""
    tmp = Path(tempfile.mkdtemp(prefix="synapse-demo-"))  # a neutral path: the status screenshot shows it
    lessons, lesson_ids = _lesson_vault(tmp / "lessons")
    memories, memory_ids = _memory_vault(tmp / "memories")
    gate = _gate_vault(tmp / "gate")
    name = lab.notebook("synapse_ui.ipynb", [
        "import synapse_nb as syn\nfrom synapse_nb.widgets import GateExplorer, MemoryBrowser",
        f"%load_ext synapse_nb\n%config SynapseMagics.vault_path = {str(lessons)!r}",
        "%memory status",
        "%recall how do we run migrations --all --explain",
        "%lessons",
        f"MemoryBrowser(syn.open_vault({str(memories)!r}))",
        f"GateExplorer(syn.open_vault({str(gate)!r}))",
    ])
    context = browser.new_context(viewport={"width": 1600, "height": 1400}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(STEP_MS)
    console = Console()
    attach_console(page, console)
    t0 = time.monotonic()
    open_and_run(page, lab, name)
    print(f"\nnotebook opened and run in {time.monotonic() - t0:.1f} s")
    try:
        yield Notebook(page, console, lessons, lesson_ids, memories, memory_ids, gate)
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


def _shown_option(select: Any) -> str:
    """The text a person sees in a <select>: the selected option's label, "" when nothing is selected."""
    return str(select.evaluate("e => e.selectedIndex < 0 ? '' : e.options[e.selectedIndex].text"))


def _wait_text(locator: Any, pattern: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(re.compile(pattern), timeout=STEP_MS)


def _wait_no_text(locator: Any, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).not_to_contain_text(text, timeout=STEP_MS)


def _wait_until_enabled(button: Any) -> None:
    from playwright.sync_api import expect

    expect(button).to_be_enabled(timeout=STEP_MS)


# -- MemoryBrowser ------------------------------------------------------------------------------------------------
def test_filter_dropdowns_show_any(ui: Notebook) -> None:
    """The '(any)' bug: ipywidgets 8 drew a dropdown whose value was None as blank."""
    box = ui.page.locator(".synapse-memory-browser")
    table = box.locator(".synapse-table")
    for label in ("Category", "Priority", "Verified", "Source"):
        select = box.locator(f".widget-dropdown:has(label:text-is('{label}')) select")
        assert _shown_option(select) == "(any)", f"{label} shows {_shown_option(select)!r} instead of '(any)'"
    category = box.locator(".widget-dropdown:has(label:text-is('Category')) select")
    category.select_option(label="preference")
    summary = box.locator(".widget-hbox:has(button:has-text('Next')) .widget-html")
    _wait_text(summary, r"^1 memory")
    assert table.locator("tbody tr").count() == 1 and _shown_option(category) == "preference"
    category.select_option(label="(any)")
    _wait_text(summary, r"of 10,003 memories")
    assert _shown_option(category) == "(any)"


def test_memory_browser_search_select_verify_delete_sort_page(ui: Notebook) -> None:
    box = ui.page.locator(".synapse-memory-browser")
    table = box.locator(".synapse-table")
    summary = box.locator(".widget-hbox:has(button:has-text('Next')) .widget-html")
    message = box.locator(".synapse-message")
    # 10,003 memories, one page of 25 rows in the DOM
    _wait_text(summary, r"1–25 of 10,003 memories · page 1 of 401")
    assert table.locator("tbody tr").count() == 25
    shot(box, "memory_browser")

    # search (Enter sends the text box), click the row, verify
    search = box.locator(".widget-text:has(label:text-is('Search')) input")
    search.fill("cache entries")
    search.press("Enter")
    _wait_text(summary, r"^1 memory")
    row = table.locator(f"tr[data-id='{ui.memory_ids['ttl']}']")
    row.click()
    detail = box.locator(".widget-html:has-text('confidence')")
    _wait_text(detail, "then the API is asked again")  # the whole content, not the table's excerpt
    assert row.get_attribute("aria-selected") == "true"
    verify = box.locator("button:has-text('Verify')")
    verify.click()
    _wait_text(message, f"verified {ui.memory_ids['ttl']}")
    assert probe(ui.memories, ui.memory_ids["ttl"])["memories"][ui.memory_ids["ttl"]]["verified"] is True
    assert verify.is_disabled()  # already verified

    # filter by tag, then delete with confirmation
    search.fill("")
    search.press("Enter")
    tag = box.locator(".widget-text:has(label:text-is('Tag')) input")
    tag.fill("deploy")
    tag.press("Enter")
    _wait_text(summary, r"^1 memory")
    table.locator(f"tr[data-id='{ui.memory_ids['freeze']}']").click()
    delete = box.locator(".widget-hbox:has(button:has-text('Verify')) button:has-text('Delete')")
    _wait_until_enabled(delete)
    delete.click()
    confirm = box.locator(".synapse-confirm")
    _wait_text(confirm, "cannot be undone")
    shot(box, "memory_browser_confirm_delete")
    assert probe(ui.memories, ui.memory_ids["freeze"])["memories"][ui.memory_ids["freeze"]] is not None
    confirm.locator("button:has-text('Cancel')").click()
    confirm.wait_for(state="hidden")
    assert probe(ui.memories)["count"] == 10_003
    delete.click()
    confirm.locator("button:has-text('Delete')").click()
    _wait_text(message, f"deleted {ui.memory_ids['freeze']}")
    state = probe(ui.memories, ui.memory_ids["freeze"])
    assert state["memories"][ui.memory_ids["freeze"]] is None and state["count"] == 10_002

    # sort by a column header (click again to reverse)
    tag.fill("")
    tag.press("Enter")
    _wait_text(summary, r"of 10,002 memories")
    header = table.locator("th[data-key='what']")
    first_cell = table.locator("tbody tr td[data-key='what']").first
    header.click()
    _wait_text(first_cell, r"^knowledge/fact_00000$")  # category, then key, ascending
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    _wait_text(first_cell, r"^procedure/run_migrations$")  # reversed
    assert header.get_attribute("aria-sort") == "descending"

    # page through: Next, then type a page number
    t0 = time.monotonic()
    box.locator("button:has-text('Next')").click()
    _wait_text(summary, r"26–50 of 10,002 memories · page 2 of 401")
    print(f"\nnext page of a 10,002-memory vault shown in {1000 * (time.monotonic() - t0):.0f} ms")
    assert table.locator("tbody tr").count() == 25
    page_box = box.locator(".widget-inline-hbox:has(label:text-is('page')) input")
    page_box.fill("401")
    page_box.press("Enter")
    _wait_text(summary, r"10,001–10,002 of 10,002 memories · page 401 of 401")
    assert box.locator("button:has-text('Next')").is_disabled()


# -- LessonReview ------------------------------------------------------------------------------------------------
def _lessons_by_id(project: Path) -> dict[str, dict[str, Any]]:
    return {les["id"]: les for les in cli(project, "lessons", "list")}


def test_lesson_review_approve_edit_reject(ui: Notebook) -> None:
    review = ui.page.locator(".synapse-lesson-review")
    ids = ui.lesson_ids
    card = {k: review.locator(f".synapse-lesson-card:has-text('{ids[k]}')") for k in ids}
    message = review.locator(".synapse-message")
    _wait_text(review.locator(".widget-html").first, "3 pending, 0 expired, 0 approved")

    # the reverted change, collapsed until opened
    contents = card["redis"].locator(".jupyter-widget-Collapse-contents")
    assert "lm-mod-hidden" in (contents.get_attribute("class") or "")
    card["redis"].locator(".jupyter-widget-Collapse-header").click()
    _wait_text(contents, r"\+import redis")
    assert "settings.py" in contents.inner_text() and "2 files changed" in contents.inner_text()
    shot(review, "lesson_review")

    # no analysis: empty text, the summary as placeholder, Approve disabled until something is written
    retry_text = card["retry"].locator("textarea")
    retry_approve = card["retry"].locator("button:has-text('Approve')")
    assert retry_text.input_value() == "" and "Retry uploads forever" in (retry_text.get_attribute("placeholder") or "")
    assert retry_approve.is_disabled()
    retry_text.fill("Uploads retry at most three times, with backoff.")
    _wait_until_enabled(retry_approve)
    retry_approve.click()
    _wait_text(message, f"approved {ids['retry']}")
    les = _lessons_by_id(ui.lessons)
    assert les[ids["retry"]]["status"] == "approved"
    assert les[ids["retry"]]["lesson_text"] == "Uploads retry at most three times, with backoff."

    # the agent's analysis is never prefilled (it is the placeholder); taking its words is a separate button
    text = card["redis"].locator("textarea")
    assert text.input_value() == ""
    assert "Redis is not available in offline runs." in (text.get_attribute("placeholder") or "")
    assert card["redis"].locator("button:has-text('Approve the agent')").count() == 1
    text.fill("Keep the cache in process: offline runs have no Redis.")
    card["redis"].locator("button:has-text('Approve')").first.click()  # "Approve" comes before the agent's button
    _wait_text(message, f"approved {ids['redis']}")
    les = _lessons_by_id(ui.lessons)
    assert les[ids["redis"]]["lesson_text"] == "Keep the cache in process: offline runs have no Redis."

    # reject asks first: Cancel keeps the lesson, the confirmation deletes it
    card["pandas"].locator("button:has-text('Reject')").click()
    confirm = card["pandas"].locator(".synapse-confirm")
    _wait_text(confirm, f"Reject {ids['pandas']}\\?")
    shot(card["pandas"], "lesson_reject_confirm")
    assert _lessons_by_id(ui.lessons)[ids["pandas"]]["status"] == "pending"
    confirm.locator("button:has-text('Cancel')").click()
    confirm.wait_for(state="hidden")
    assert _lessons_by_id(ui.lessons)[ids["pandas"]]["status"] == "pending"
    card["pandas"].locator(".widget-hbox:has(button:has-text('Approve')) button:has-text('Reject')").click()
    confirm.locator("button:has-text('Reject')").click()
    _wait_text(message, f"rejected {ids['pandas']}")
    assert ids["pandas"] not in _lessons_by_id(ui.lessons)
    _wait_text(review, "0 pending, 0 expired, 2 approved")
    _wait_text(review, "Uploads retry at most three times")
    shot(review, "lesson_review_done")


# -- GateExplorer ------------------------------------------------------------------------------------------------
def _drag(page: Any, slider: Any, fraction: float) -> None:
    """Drag a slider's handle to ``fraction`` of its track with the mouse, as a person does."""
    track = slider.locator(".noUi-target")
    handle = slider.locator(".noUi-handle")
    track.scroll_into_view_if_needed()
    box, hbox = track.bounding_box(), handle.bounding_box()
    y = hbox["y"] + hbox["height"] / 2
    page.mouse.move(hbox["x"] + hbox["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * fraction, y, steps=8)
    page.mouse.up()


def test_gate_explorer_sliders_and_saved_defaults(ui: Notebook) -> None:
    page, gate = ui.page, ui.page.locator(".synapse-gate-explorer")
    query = gate.locator(".widget-text:has(label:text-is('Query')) input")
    query.fill("rollback of a release on friday")
    query.press("Enter")
    summary = gate.locator(".widget-html:has-text('candidate path')")
    _wait_text(summary, r"[1-9] kept")
    table = gate.locator(".widget-html:has(th:text-is('bar'))")
    text = gate.locator(".widget-html:has-text('recall text')")
    _wait_text(text, "no deploys on friday")
    wrap = text.locator("pre").evaluate("e => [getComputedStyle(e).whiteSpace, getComputedStyle(e).wordBreak]")
    assert wrap == ["pre-wrap", "normal"], wrap  # long lines wrap between words, never mid-word
    shot(gate, "gate_explorer")

    # the floor up to 0.95: the hits drop, the table says why, the recall text loses them
    floor = gate.locator(".widget-slider:has(label:text-is('floor'))")
    readout = floor.locator(".widget-readout")
    _drag(page, floor, 0.95)
    _wait_text(readout, r"0\.9\d")
    _wait_text(summary, r"^0 kept")
    _wait_text(table, "floor")  # the table is its own widget: its update may land after the summary's
    _wait_no_text(text, "no deploys on friday")
    # top-k to 0 keeps nothing either; back to a low floor and top-k 1 keeps one per kind
    _drag(page, floor, 0.0)
    _wait_text(readout, r"0\.00")
    top_k = gate.locator(".widget-slider:has(label:text-is('top-k'))")
    _drag(page, top_k, 0.0)
    _wait_text(top_k.locator(".widget-readout"), r"^0$")
    _wait_text(summary, r"^0 kept")
    _wait_text(table, "top_k")
    _drag(page, top_k, 0.05)
    _wait_text(top_k.locator(".widget-readout"), r"^1$")
    _wait_text(summary, r"^[1-5] kept")

    # save as my defaults: read back by another process, used by a recall there
    shown = float(readout.inner_text())
    gate.locator("button:has-text('Save as my defaults')").click()
    _wait_text(gate.locator(".synapse-message"), "recall defaults")
    settings = probe(ui.gate)["settings"]
    assert settings["recall_floor"] == shown and settings["recall_top_k"] == 1
    r = cli(ui.gate, "recall", "rollback of a release on friday")
    kinds = [i["kind"] for i in r["items"]]
    assert kinds and len(kinds) == len(set(kinds))  # top-k 1: at most one hit per kind
    shot(gate, "gate_explorer_saved")


# -- rich displays of the magics ---------------------------------------------------------------------------------
def test_magics_render_tables(ui: Notebook) -> None:
    page = ui.page
    status = page.locator(".jp-OutputArea-output[data-mime-type='text/html']:has-text('pending lessons awaiting')")
    assert status.locator("table").count() == 1 and status.locator("pre").count() == 0
    assert re.search(r"lessons\s+3\s+.*3 pending", status.locator("table").inner_text())
    shot(status, "memory_status")
    explain = page.locator(".jp-OutputArea-output[data-mime-type='text/html']:has(th:text-is('reason'))")
    first = explain.locator("tbody tr").first
    align = {key: first.locator("td").nth(i).evaluate("e => getComputedStyle(e).textAlign")
             for i, key in enumerate(["kept", "rank", "rank parts", "coverage", "kind", "id", "bar", "reason",
                                      "matched"])}
    numbers = ("rank", "coverage")
    assert all(align[k] == "right" for k in numbers) and all(a == "left" for k, a in align.items()
                                                             if k not in numbers), align
    shot(explain, "recall_explain")


# -- both themes ------------------------------------------------------------------------------------------------
_CONTRAST_JS = """e => {
    const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
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


def _contrast(locator: Any) -> float:
    """WCAG contrast ratio between an element's text colour and the first opaque background behind it."""
    return float(locator.evaluate(_CONTRAST_JS))


def test_both_themes_read_well(ui: Notebook) -> None:
    page = ui.page
    gate = page.locator(".synapse-gate-explorer")
    message = gate.locator(".synapse-message")
    if message.count() == 0:  # run on its own: make a status line to look at
        gate.locator("button:has-text('Save as my defaults')").click()
    _wait_text(message, "recall defaults")
    cell = page.locator(".synapse-table td[data-key='content']").first
    light = {"message": _contrast(message), "table": _contrast(cell)}
    page.click(".lm-MenuBar-itemLabel:text-is('Settings')")
    page.click(".lm-Menu-itemLabel:text-is('Theme')")
    page.click(".lm-Menu-itemLabel:text-is('JupyterLab Dark')")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=STEP_MS)
    page.wait_for_timeout(500)  # the theme's stylesheet applies
    dark = {"message": _contrast(message), "table": _contrast(cell)}
    shot(gate, "gate_explorer_dark")
    shot(page.locator(".synapse-memory-browser"), "memory_browser_dark")
    shot(page.locator(".synapse-lesson-review"), "lesson_review_dark")
    # WCAG AA for body text, on both themes (the green status text used to be dim on the dark one)
    assert min(light.values()) >= 4.5 and min(dark.values()) >= 4.5, (light, dark)
