"""What the magics print, in a real JupyterLab: one-line confirmations with the record one click away, tables that
fill the output and name records by title, settings that never wrap mid-word, one timestamp format."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _notebook import Notebook
from _ui import set_theme, shot, wait_text

pytestmark = pytest.mark.browser

_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _output(page: Any, source: str) -> Any:
    """The outputs of the cell whose code contains ``source``."""
    return page.locator(".jp-Notebook .jp-CodeCell").filter(has_text=source).first.locator(".jp-OutputArea")


def test_remember_confirms_in_one_line_with_the_record_one_click_away(ui: Notebook) -> None:
    page = ui.page
    set_theme(page, "light")
    out = _output(page, "%remember procedure deploy_steps")
    summary = out.locator("details.synapse-confirmation > summary")
    line = summary.inner_text()
    assert re.fullmatch(r"✔ remembered mem_[0-9a-f]{12} user · verified procedure/deploy_steps \(details\)", line), line
    assert summary.bounding_box()["height"] < 30  # one line, not a 12-16-row field dump
    table = out.locator("details.synapse-confirmation table")
    assert not table.is_visible()
    summary.click()  # one click: the memory in full, values for people
    wait_text(table, "deploy, db|db, deploy")
    assert "['" not in table.inner_text() and "True" not in table.inner_text()
    shot(out, "remember", docs="remember")
    summary.click()


def test_explain_names_records_and_fills_the_output(ui: Notebook) -> None:
    page = ui.page
    out = page.locator(".jp-OutputArea-output[data-mime-type='text/html']:has(th:text-is('reason'))")
    table = out.locator("table")
    # every candidate is named by its category/key (or title) beside its id: the agent's memory the margin
    # dropped reads knowledge/ingest_bottleneck, not only mem_ab0bd734965d
    dropped = table.locator("tr:has-text('knowledge/ingest_bottleneck')")
    assert re.search(r"knowledge/ingest_bottleneck\s+memory\s+mem_[0-9a-f]{12}", dropped.inner_text())
    assert "✘ no" in dropped.inner_text(), dropped.inner_text()
    rows = table.locator("tbody tr")
    assert all(rows.nth(i).locator("td").nth(4).locator("b").count() == 1 for i in range(rows.count()))
    first = table.locator("tbody tr").first
    align = {key: first.locator("td").nth(i).evaluate("e => getComputedStyle(e).textAlign")
             for i, key in enumerate(["kept", "rank", "rank parts", "coverage", "record", "bar", "reason", "matched"])}
    numbers = ("rank", "coverage")
    assert all(align[k] == "right" for k in numbers) and all(a == "left" for k, a in align.items()
                                                             if k not in numbers), align
    # a fixed width: the whole output, whatever the query (it changed width between runs); nothing cut
    widths = out.evaluate("e => { const t = e.querySelector('table'); return [t.parentElement.clientWidth, "
                          "t.getBoundingClientRect().width, e.scrollWidth, e.clientWidth]; }")
    assert abs(widths[0] - widths[1]) <= 2 and widths[2] <= widths[3] + 1, widths
    clipped = table.evaluate("t => [...t.querySelectorAll('th, td')].filter(h => h.scrollWidth > h.clientWidth + 1)"
                             ".map(h => h.textContent)")
    assert clipped == [], clipped  # no header, score or bar cut to "mar…"
    # the rank parts one per line: each part on one line, never broken inside
    parts = first.locator("td").nth(2)
    assert all(re.fullmatch(r"[a-z0-9]+\s\d\.\d{3}", p.strip()) for p in parts.inner_text().splitlines()), \
        parts.inner_text()
    shot(out, "recall_explain", docs="recall_explain")


def test_status_synapse_and_checkpoint_read_like_the_rest(ui: Notebook) -> None:
    page = ui.page
    status = page.locator(".jp-OutputArea-output[data-mime-type='text/html']:has-text('pending lessons awaiting')")
    assert status.locator("table").count() == 1 and status.locator("pre").count() == 0
    shot(status, "memory_status", docs="memory_status")
    # %synapse: one setting a line; no line of it wraps (it used to break mid-word)
    synapse = _output(page, "%synapse").locator("pre").first
    lines = synapse.evaluate("""e => [Math.round(e.getBoundingClientRect().height /
                                            parseFloat(getComputedStyle(e).lineHeight)),
                                 e.textContent.split('\\n').filter(l => l).length]""")
    assert lines[0] <= lines[1], f"{lines[0]} rendered lines for {lines[1]} lines of text: something wraps"
    assert re.search(r"^  lesson_expiry_days +7$", synapse.inner_text(), re.M)
    # one timestamp format: the checkpoint's restore text and the recall display read 2026-12-02 07:32 UTC
    restore = _output(page, "%checkpoint restore").inner_text()
    assert re.search(r"\(\d{4}-\d\d-\d\d \d\d:\d\d UTC, branch main", restore) and not _STAMP.search(restore), restore
    saved = _output(page, "%checkpoint create").inner_text()
    assert saved.startswith("✔ saved checkpoint ckp_") and len(saved.strip().splitlines()) == 1, saved
    recall = _output(page, "%recall how do we run migrations")
    assert recall.locator("details:has-text('the text an agent receives')").count() == 1
    assert not _STAMP.search(recall.inner_text())
