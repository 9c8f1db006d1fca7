"""GateExplorer in a real JupyterLab: a hint before the first query, the bars explained on the page, candidates
named by their record, sliders dragged with the mouse and marked when they differ from the saved defaults, Save
asking first (agents' recalls use the defaults too), Reset saying what it did."""

from __future__ import annotations

from typing import Any

import pytest
from _notebook import Notebook
from _ui import cli, probe, set_theme, shot, wait_no_text, wait_text

pytestmark = pytest.mark.browser


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


def test_gate_explorer_explains_itself_then_sliders_and_saved_defaults(ui: Notebook) -> None:
    page, gate = ui.page, ui.page.locator(".synapse-gate-explorer")
    set_theme(page, "light")
    header = gate.locator(".synapse-header")
    # before the first query: what to do, where the table will be, and what each bar does, on the page
    wait_text(gate.locator(".synapse-table-empty"), "Type a question in the Query box")
    for words in ("say nothing new unless", "keep a hit only if its rank score", "at most this many hits",
                  "until their text reaches"):
        assert gate.locator(f".synapse-help:has-text('{words}')").is_visible(), words
    query = gate.locator(".widget-text:has(label:text-is('Query')) input")
    query.fill("rollback of a release on friday")
    query.press("Enter")
    wait_text(header, r"[1-9] kept, \d+ dropped")
    assert "path" not in header.inner_text()  # no "candidate path rank" jargon
    table = gate.locator(".synapse-table")
    # candidates named by their record, beside kind and id; the agent's marked
    freeze = table.locator("tr:has-text('context/release_freeze')")
    wait_text(freeze, r"memory · mem_[0-9a-f]{12}")
    agent = table.locator("tr:has-text('knowledge/rollback_howto')")
    assert agent.locator(".synapse-badge.synapse-agent").inner_text().startswith("agent")
    agent.click()
    detail = gate.locator(".synapse-detail")
    wait_text(detail, "dropped by the|kept")
    wait_text(detail, "a rollback of a release switches the router")
    text = gate.locator(".widget-html:has-text('the recall text')")
    wait_text(text, "no deploys on friday")
    wrap = text.locator("pre").evaluate("e => [getComputedStyle(e).whiteSpace, getComputedStyle(e).wordBreak]")
    assert wrap == ["pre-wrap", "normal"], wrap  # long lines wrap between words, never mid-word
    shot(gate, "gate_explorer", docs="gate_explorer")

    # the floor up to 0.95: the hits drop, the table says why, the slider says it differs from the saved value
    note = gate.locator(".synapse-actions .widget-html")
    wait_text(note, "the saved defaults")
    floor = gate.locator(".widget-slider:has(label:text-is('floor'))")
    readout = floor.locator(".widget-readout")
    _drag(page, floor, 0.95)
    wait_text(readout, r"0\.9\d")
    wait_text(header, r"(?<!\d)0 kept")
    wait_text(table.locator("td[data-key='bar']").first, "floor")
    wait_no_text(text, "no deploys on friday")
    wait_text(note, r"differs from your saved defaults: floor 0\.9\d \(saved 0\.\d\d\)")
    assert "synapse-changed" in (floor.get_attribute("class") or "")
    # Reset says what it did
    gate.locator("button:has-text('Reset')").click()
    wait_text(gate.locator(".synapse-message"), "sliders back on the saved defaults")
    wait_text(note, "the saved defaults")
    # top-k 1 keeps one per kind
    top_k = gate.locator(".widget-slider:has(label:text-is('top-k'))")
    _drag(page, top_k, 0.0)  # the slider starts at 1 (recall_top_k takes 1-1000)
    wait_text(top_k.locator(".widget-readout"), r"^1$")
    wait_text(header, r"[1-5] kept")

    # save as my defaults: asks first, saying agents' recalls use them too; read back by another process
    shown = int(top_k.locator(".widget-readout").inner_text())
    gate.locator("button:has-text('Save as my defaults')").click()
    confirm = gate.locator(".synapse-confirm")
    wait_text(confirm, "agents over MCP")
    assert probe(ui.gate)["settings"]["recall_top_k"] != shown  # nothing saved by the first click
    shot(gate, "gate_explorer_save_confirm")
    confirm.locator("button:has-text('Save')").click()
    wait_text(gate.locator(".synapse-message"), "recall defaults.*agents over MCP")
    assert probe(ui.gate)["settings"]["recall_top_k"] == shown == 1
    r = cli(ui.gate, "recall", "rollback of a release on friday")
    kinds = [i["kind"] for i in r["items"]]
    assert kinds and len(kinds) == len(set(kinds))  # top-k 1: at most one hit per kind
    shot(gate, "gate_explorer_saved")
