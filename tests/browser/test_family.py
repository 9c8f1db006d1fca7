"""The three widgets as one family, measured in the page at 1280 px in both themes: they fit the output area, the
content column is readable, text has contrast, and no key pressed in a widget reaches the notebook."""

from __future__ import annotations

from typing import Any

import pytest
from _notebook import Notebook
from _ui import contrast, layout, notebook_state, set_theme, shot, wait_text

pytestmark = pytest.mark.browser

WIDGETS = {"memory_browser": ".synapse-memory-browser", "lesson_review": ".synapse-lesson-review",
           "gate_explorer": ".synapse-gate-explorer"}
#: The column that carries the text, per widget: at least 40% of the table.
TEXT_COLUMN = {"memory_browser": "content", "lesson_review": "lesson"}


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_every_widget_fits_the_output_and_reads_well(ui: Notebook, theme: str) -> None:
    page = ui.page
    set_theme(page, theme)
    assert page.viewport_size["width"] == 1280
    for name, selector in WIDGETS.items():
        root = page.locator(selector)
        root.scroll_into_view_if_needed()
        m = layout(root)
        # nothing wider than the output area: no horizontal scrollbar anywhere, no column cut off
        assert m["outScroll"] <= m["outWidth"] + 1 and m["rootScroll"] <= m["rootWidth"] + 1, (name, m)
        assert not m["overflowing"], (name, m)
        assert m["table"] <= m["wrap"] + 1 and m["wrapScroll"] <= m["wrap"] + 1, (name, m)
        if name in TEXT_COLUMN:
            share = m["cols"][TEXT_COLUMN[name]] / m["table"]
            assert share >= 0.40, f"{name}: the {TEXT_COLUMN[name]} column is {share:.0%} of the table ({m})"
        # the family: same header, table and detail pane
        for part in (".synapse-header", ".synapse-table-wrap", ".synapse-detail"):
            assert root.locator(part).count() >= 1, (name, part)
        # text in the theme's colours, WCAG AA (4.5:1) on both themes: header, table cell, detail pane
        for part in (".synapse-title", ".synapse-table td, .synapse-table-empty", ".synapse-detail .widget-html"):
            ratio = contrast(root.locator(part).first)
            assert ratio >= 4.5, f"{name} {part} on the {theme} theme: contrast {ratio:.2f}"
        docs = {"dark": f"{name}_dark"}.get(theme)
        shot(root, f"{name}_{theme}", docs=docs)


def _keys_stay(page: Any, target: Any, keys: list[str]) -> dict[str, Any]:
    """Press each key with ``target`` focused; the notebook's cells, active cell and focus must not change."""
    target.focus()
    before = notebook_state(page)
    assert before["focusInWidget"], before
    for key in keys:
        page.keyboard.press(key)
        now = notebook_state(page)
        assert now["cells"] == before["cells"], f"{key!r} changed the notebook's cells: {before} -> {now}"
        assert now["active"] == before["active"], f"{key!r} moved the notebook's active cell: {before} -> {now}"
        assert now["focusInWidget"], f"{key!r} sent the focus out of the widget to {now['focusTag']}"
    return notebook_state(page)


def test_keys_pressed_in_a_widget_never_reach_the_notebook(ui: Notebook) -> None:
    page = ui.page
    box = page.locator(".synapse-memory-browser")
    rows = box.locator(".synapse-table tbody tr")
    rows.nth(0).click()
    wait_text(box.locator(".synapse-detail"), "confidence")
    # b inserts a cell, a too, x cuts one, d d deletes one, m turns it to markdown, arrows move between cells,
    # Enter edits, Escape leaves edit mode: none of them may act on the notebook from inside the widget
    first = rows.nth(0).get_attribute("data-id")
    state = _keys_stay(page, rows.nth(0), ["b", "a", "x", "d", "d", "m", "z", "ArrowDown"])
    second = rows.nth(1).get_attribute("data-id")
    # ArrowDown moved the selection to the next row (and the detail with it), the focus with it
    wait_text(box.locator(".synapse-table tr[aria-selected='true']"), ".")
    assert state["focusId"] == second and rows.nth(1).get_attribute("aria-selected") == "true"
    state = _keys_stay(page, rows.nth(1), ["ArrowUp", "Enter", " ", "End", "Home"])
    assert state["focusId"] == first  # Enter / Space kept the focus on the row (it used to jump to the notebook)
    # a slider's arrow keys move the slider, not the notebook's cell selection
    gate = page.locator(".synapse-gate-explorer")
    handle = gate.locator(".widget-slider:has(label:text-is('top-k')) .noUi-handle")
    readout = gate.locator(".widget-slider:has(label:text-is('top-k')) .widget-readout")
    was = readout.inner_text()
    _keys_stay(page, handle, ["ArrowRight", "ArrowLeft", "ArrowDown", "ArrowUp"])
    assert readout.inner_text() == was
    # the lesson review's buttons and its diff button: Enter and Space act on them, and stay in the widget
    review = page.locator(".synapse-lesson-review")
    toggle = review.locator(".synapse-detail button:has-text('reverted change')")
    _keys_stay(page, toggle, ["Enter"])
    wait_text(review.locator(".synapse-detail .synapse-diff").first, r"diff --git")
    _keys_stay(page, toggle, [" "])
    review.locator(".synapse-detail .synapse-diff").first.wait_for(state="hidden")
