"""MemoryBrowser in a real JupyterLab: search, filter, select, verify, delete, sort and page through 10,003
memories, like a person; what the clicks changed is read from another process."""

from __future__ import annotations

import time

import pytest
from _notebook import Notebook
from _ui import (
    in_view,
    probe,
    run_new_cell,
    set_theme,
    shot,
    wait_count,
    wait_enabled,
    wait_in_view,
    wait_text,
)

import synapse_nb as syn

pytestmark = pytest.mark.browser


def _shown_option(select: object) -> str:
    """The text a person sees in a <select>: the selected option's label, "" when nothing is selected."""
    return str(select.evaluate("e => e.selectedIndex < 0 ? '' : e.options[e.selectedIndex].text"))  # type: ignore[attr-defined]


def test_filter_dropdowns_show_any(ui: Notebook) -> None:
    """The '(any)' bug: ipywidgets 8 drew a dropdown whose value was None as blank."""
    box = ui.page.locator(".synapse-memory-browser")
    table = box.locator(".synapse-table")
    for label in ("Category", "Priority", "Verified", "Source"):
        select = box.locator(f".widget-dropdown:has(label:text-is('{label}')) select")
        assert _shown_option(select) == "(any)", f"{label} shows {_shown_option(select)!r} instead of '(any)'"
    category = box.locator(".widget-dropdown:has(label:text-is('Category')) select")
    category.select_option(label="preference")
    summary = box.locator(".synapse-pager .widget-html")
    wait_text(summary, r"^1 memory")
    wait_count(table.locator("tbody tr"), 1)  # the rows arrive apart from the summary line
    assert _shown_option(category) == "preference"
    category.select_option(label="(any)")
    wait_text(summary, r"of 10,00\d memories")
    assert _shown_option(category) == "(any)"


def test_agent_rows_are_marked_and_the_detail_is_in_view(ui: Notebook) -> None:
    page = ui.page
    set_theme(page, "light")
    box = page.locator(".synapse-memory-browser")
    table = box.locator(".synapse-table")
    summary = box.locator(".synapse-pager .widget-html")
    wait_text(summary, r"1–25 of 10,00\d memories · page 1 of 40\d")
    wait_count(table.locator("tbody tr"), 25)  # one page in the DOM
    ttl = table.locator(f"tr[data-id='{ui.memory_ids['ttl']}']")
    badge = ttl.locator("td[data-key='by'] .synapse-badge")
    assert "synapse-agent" in (badge.get_attribute("class") or "") and badge.inner_text().startswith("agent")
    user_badge = table.locator(f"tr[data-id='{ui.memory_ids['mig']}'] td[data-key='by'] .synapse-badge")
    assert "synapse-agent" not in (user_badge.get_attribute("class") or "")
    # headers say they sort
    assert table.locator("th.synapse-sortable .synapse-sort-arrow").count() >= 5
    # a row far down the table: after the click the detail pane is in the notebook's visible area
    row = table.locator("tbody tr").nth(20)
    row.scroll_into_view_if_needed()
    row.click()
    detail = box.locator(".synapse-detail")
    wait_text(detail, "generated fact")
    wait_in_view(detail)
    assert in_view(row)
    # the selection is not the hover: a different background
    other = table.locator("tbody tr").nth(19)
    other.hover()
    colours = page.evaluate("""() => [...document.querySelectorAll('.synapse-memory-browser tbody tr')].slice(19, 21)
        .map(r => getComputedStyle(r.cells[1]).backgroundColor)""")
    assert colours[0] != colours[1], colours
    ttl.scroll_into_view_if_needed()
    ttl.click()
    wait_text(detail, "an agent wrote this memory")
    shot(box, "memory_browser", docs="memory_browser")


def test_memory_browser_search_select_verify_delete_sort_page(ui: Notebook) -> None:
    box = ui.page.locator(".synapse-memory-browser")
    table = box.locator(".synapse-table")
    summary = box.locator(".synapse-pager .widget-html")
    detail = box.locator(".synapse-detail")
    message = detail.locator(".synapse-message")
    total = int(probe(ui.memories)["count"])

    # search (Enter sends the text box), click the row, verify: the outcome shows under the buttons
    search = box.locator(".widget-text:has(label:text-is('Search')) input")
    search.fill("cache entries")
    search.press("Enter")
    wait_text(summary, r"^1 memory")
    row = table.locator(f"tr[data-id='{ui.memory_ids['ttl']}']")
    row.click()
    wait_text(detail, "then the API is asked again")  # the whole content
    assert row.get_attribute("aria-selected") == "true"
    verify = detail.locator(".synapse-actions button:has-text('Verify')")
    wait_enabled(verify)
    verify.click()
    wait_text(message, f"verified {ui.memory_ids['ttl']}")
    assert probe(ui.memories, ui.memory_ids["ttl"])["memories"][ui.memory_ids["ttl"]]["verified"] is True
    wait_text(row.locator("td[data-key='by']"), "agent · verified")
    assert verify.is_disabled()  # already verified

    # a new search clears the old outcome: no status line lingers beside "no memories match"
    search.fill("nothing has these words zzyzx")
    search.press("Enter")
    wait_text(box.locator(".synapse-table-empty"), "no memories match")
    assert message.count() == 0 or message.inner_text().strip() == ""

    # filter by tag, then delete with confirmation
    search.fill("")
    search.press("Enter")
    # as a person does, read the cleared search's answer before typing a tag: typed while the kernel still sent the
    # 10,003 memories' first page, the tag's Enter was twice not acted on until the box lost focus (full-suite runs)
    wait_text(summary, rf"of {total:,} memories")
    tag = box.locator(".widget-text:has(label:text-is('Tag')) input")
    tag.fill("deploy")
    tag.press("Enter")
    wait_text(summary, r"^1 memory")
    table.locator(f"tr[data-id='{ui.memory_ids['freeze']}']").click()
    delete = detail.locator(".synapse-actions button:has-text('Delete')")
    wait_enabled(delete)
    delete.click()
    confirm = detail.locator(".synapse-confirm")
    wait_text(confirm, "context/release_freeze .* history keeps it")
    shot(box, "memory_browser_confirm_delete", docs="memory_browser_confirm_delete")
    assert probe(ui.memories, ui.memory_ids["freeze"])["memories"][ui.memory_ids["freeze"]] is not None
    confirm.locator("button:has-text('Cancel')").click()
    confirm.wait_for(state="hidden")
    assert probe(ui.memories)["count"] == total
    delete.click()
    confirm.locator("button:has-text('Delete')").click()
    wait_text(message, f"deleted {ui.memory_ids['freeze']}")
    state = probe(ui.memories, ui.memory_ids["freeze"])
    assert state["memories"][ui.memory_ids["freeze"]] is None and state["count"] == total - 1
    total -= 1

    # sort by a column header (click again to reverse)
    tag.fill("")
    tag.press("Enter")
    wait_text(summary, f"of {total:,} memories")
    header = table.locator("th[data-key='what']")
    first_cell = table.locator("tbody tr td[data-key='what']").first
    header.click()
    wait_text(first_cell, r"^knowledge/fact_00000$")  # category, then key, ascending
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    wait_text(first_cell, r"^procedure/run_migrations$")  # reversed
    assert header.get_attribute("aria-sort") == "descending"

    # page through: Next, then sorting again starts at page 1 of the new order
    t0 = time.monotonic()
    box.locator("button:has-text('Next')").click()
    wait_text(summary, f"26–50 of {total:,} memories · page 2 of 401")
    print(f"\nnext page of a {total:,}-memory vault shown in {1000 * (time.monotonic() - t0):.0f} ms")
    wait_count(table.locator("tbody tr"), 25)
    priority = table.locator("th[data-key='priority']")
    priority.click()  # ▼ first: the most important first, and back to page 1
    wait_text(summary, r"page 1 of 401")
    assert priority.get_attribute("aria-sort") == "descending"
    wait_text(table.locator("tbody tr td[data-key='priority']").first, r"^high$")
    page_box = box.locator(".widget-inline-hbox:has(label:text-is('page')) input")
    page_box.fill("401")
    page_box.press("Enter")
    wait_text(summary, f"10,001–{total:,} of {total:,} memories · page 401 of 401")
    assert box.locator("button:has-text('Next')").is_disabled()


def test_the_browser_follows_a_write_in_another_cell(ui: Notebook) -> None:
    page = ui.page
    box = page.locator(".synapse-memory-browser")
    summary = box.locator(".synapse-pager .widget-html")
    total = int(probe(ui.memories)["count"])
    wait_text(summary, f"of {total:,} memories")
    # another cell writes to the vault through its own handle (as %remember does): no click on Refresh needed
    run_new_cell(page, "syn.open_vault(MEMORIES).remember('context', 'sprint_goal', 'ship the importer this week')")
    wait_text(summary, f"of {total + 1:,} memories")
    assert probe(ui.memories)["count"] == total + 1
    # and Refresh is there, visible, for a change the notebook did not see (another process)
    refresh = box.locator(".synapse-header button:has-text('Refresh')")
    assert refresh.is_visible()
    v_count = probe(ui.memories)["count"]
    v = syn.open_vault(ui.memories)
    v.memories.delete(v.memories.get_by_key("context", "sprint_goal").id)
    v.close()
    refresh.click()
    wait_text(summary, f"of {v_count - 1:,} memories")
