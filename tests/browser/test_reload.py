"""Last: the widgets survive a page reload (JupyterLab redraws them from the kernel's state), and their keys still
stay in them. Runs after the other modules, on the same page."""

from __future__ import annotations

import pytest
from _notebook import Notebook
from _ui import STEP_MS, notebook_state, wait_text

pytestmark = pytest.mark.browser


def test_widgets_survive_a_reload_and_still_keep_their_keys(ui: Notebook) -> None:
    page = ui.page
    # Ctrl+S typed in a widget still saves the notebook (only plain keys stay in the widget), then reload
    row = page.locator(".synapse-memory-browser .synapse-table tbody tr").first
    row.click()
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-current.jp-mod-dirty, .lm-TabBar-tab.jp-mod-dirty')",
                           timeout=STEP_MS)
    page.reload()
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=STEP_MS)
    for selector in (".synapse-memory-browser", ".synapse-lesson-review", ".synapse-gate-explorer"):
        page.locator(f"{selector} .synapse-table-wrap").wait_for(timeout=STEP_MS)
    box = page.locator(".synapse-memory-browser")
    wait_text(box.locator(".synapse-pager .widget-html"), r"memories · page")
    rows = box.locator(".synapse-table tbody tr")
    page.wait_for_function("() => document.querySelectorAll('.synapse-memory-browser tbody tr').length >= 2",
                           timeout=STEP_MS)  # whichever page it was on when saved
    row = rows.first
    row.click()
    before = notebook_state(page)
    for key in ("b", "ArrowDown", "Enter"):
        page.keyboard.press(key)
    after = notebook_state(page)
    assert after["cells"] == before["cells"] and after["active"] == before["active"] and after["focusInWidget"]
