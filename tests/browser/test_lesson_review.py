"""LessonReview in a real JupyterLab: provenance marked, the duration chosen and shown before approving, the
outcome where the reviewer is looking, withdraw, reject, Scan finding a new revert, an agent vault refused in one
line. What each click changed is read back with the ``synapse-nb`` CLI in another process."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _notebook import REFUSED, Notebook
from _ui import (
    STEP_MS,
    cli,
    in_view,
    notebook_state,
    set_theme,
    shot,
    wait_count,
    wait_enabled,
    wait_in_view,
    wait_text,
)

pytestmark = pytest.mark.browser


def _lessons_by_id(project: Path) -> dict[str, dict[str, Any]]:
    return {les["id"]: les for les in cli(project, "lessons", "list")}


def test_approve_with_a_chosen_duration_then_withdraw(ui: Notebook) -> None:
    page, ids = ui.page, ui.lesson_ids
    set_theme(page, "light")
    review = page.locator(".synapse-lesson-review")
    table = review.locator(".synapse-table")
    detail = review.locator(".synapse-detail")
    wait_text(review.locator(".synapse-header"), r"3 pending · 0 expired · 0 approved in force")

    table.locator(f"tr[data-id='{ids['redis']}']").click()
    wait_text(detail, "Use Redis for the cache")
    # the agent's analysis is shown as an agent's (marked), never put in the box; its own button approves it as is
    analysis = detail.locator(".synapse-analysis.synapse-agent")
    wait_text(analysis, "analysis written by an agent .*Redis is not available in offline runs")
    text = detail.locator("textarea")
    assert text.input_value() == ""
    wait_count(detail.locator("button:has-text('Approve the agent')"), 1)
    wait_count(table.locator(f"tr[data-id='{ids['redis']}'] .synapse-badge.synapse-agent"), 1)  # wording by
    # the reverted change behind a button a keyboard reaches; the line counts above it are the change's own
    toggle = detail.locator("button:has-text('reverted change')")
    toggle.focus()
    page.keyboard.press("Enter")
    diff = detail.locator(".synapse-diff").first
    wait_text(diff, r"\+import redis")
    assert "settings.py" in diff.inner_text() and "2 files changed" in diff.inner_text()
    assert "+2" in detail.locator("table").first.inner_text()  # cache.py: +2 −1, as in the diff
    shot(review, "lesson_review", docs="lesson_review")
    page.keyboard.press("Enter")  # hide it again
    diff.wait_for(state="hidden")

    # the duration is chosen, and its end shown, before Approve
    until = detail.locator(".synapse-until")
    wait_text(until, r"until 20\d\d-\d\d-\d\d \d\d:\d\d UTC")
    week = until.inner_text()
    chosen = datetime.now(UTC)  # the end shown below is worked out after this
    detail.locator(".widget-dropdown:has(label:text-is('In force for')) select").select_option(label="30 days")
    wait_text(detail.locator("button:has-text('Approve for')"), "Approve for 30 days")
    wait_text(until, r"until 20\d\d")
    assert until.inner_text() != week
    shown_until = until.inner_text().split("until ")[1].strip()
    approve = detail.locator("button:has-text('Approve for 30 days')")
    assert approve.is_disabled()  # Approve waits for your wording
    text.fill("Keep the cache in process: offline runs have no Redis.")
    wait_enabled(approve)
    approve.click()
    message = detail.locator(".synapse-message")
    wait_text(message, f"approved {ids['redis']}: in force until 20")
    approved = datetime.now(UTC)  # the end stored was worked out before this
    # feedback where the reviewer is looking: in view, under the lesson; the focus back on its row, not <body>
    wait_in_view(message)
    page.wait_for_function("(id) => document.activeElement && document.activeElement.dataset.id === id",
                           arg=ids["redis"], timeout=STEP_MS)
    assert notebook_state(page)["focusInWidget"]
    les = _lessons_by_id(ui.lessons)[ids["redis"]]
    assert les["status"] == "approved"
    assert les["lesson_text"] == "Keep the cache in process: offline runs have no Redis."
    # the end shown before approving, to the minute: later only by the time the reviewer took between choosing the
    # duration and approving (measured here: a fixed 2 minutes was a busy machine's as much as the code's), and a
    # minute may turn between the two
    shown = datetime.strptime(shown_until, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
    stored = datetime.strptime(les["expires_at"][:16], "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
    took = approved - chosen
    assert timedelta(0) <= stored - shown <= took + timedelta(minutes=1), (shown_until, les["expires_at"], took)
    assert shown - datetime.now(UTC) > timedelta(days=29)
    row = table.locator(f"tr[data-id='{ids['redis']}']")
    wait_text(row.locator("td[data-key='by']"), "you")  # who wrote the wording in force

    # withdraw (asks first): back to pending, out of every recall
    detail.locator("button:has-text('Withdraw approval')").click()
    confirm = detail.locator(".synapse-confirm")
    wait_text(confirm, "stops heading recalls")
    confirm.locator("button:has-text('Withdraw')").click()
    wait_text(message, f"withdrawn {ids['redis']}")
    assert _lessons_by_id(ui.lessons)[ids["redis"]]["status"] == "pending"
    wait_text(row.locator("td[data-key='status']"), "pending")
    assert in_view(message)


def test_reject_names_the_lesson_and_asks_first(ui: Notebook) -> None:
    page, ids = ui.page, ui.lesson_ids
    review = page.locator(".synapse-lesson-review")
    detail = review.locator(".synapse-detail")
    review.locator(f".synapse-table tr[data-id='{ids['pandas']}']").click()
    wait_text(detail, "Bump pandas to 3.0")
    detail.locator("button:has-text('Reject')").click()
    confirm = detail.locator(".synapse-confirm")
    wait_text(confirm, "Reject the lesson Reverted “Bump pandas to 3.0” on main\\?")
    shot(detail, "lesson_reject_confirm", docs="lesson_reject_confirm")
    confirm.locator("button:has-text('Cancel')").click()
    confirm.wait_for(state="hidden")
    assert _lessons_by_id(ui.lessons)[ids["pandas"]]["status"] == "pending"
    detail.locator(".synapse-actions button:has-text('Reject')").click()
    confirm.locator("button:has-text('Reject')").click()
    wait_text(detail.locator(".synapse-message"), f"rejected {ids['pandas']}")
    assert ids["pandas"] not in _lessons_by_id(ui.lessons)
    # the focus on the next lesson's row, not fallen to the page
    page.wait_for_function("() => document.activeElement && document.activeElement.matches('.synapse-lesson-review "
                           "tr.synapse-row')", timeout=STEP_MS)


def test_scan_finds_a_new_revert(ui: Notebook) -> None:
    page = ui.page
    review = page.locator(".synapse-lesson-review")
    before = set(_lessons_by_id(ui.lessons))
    # a revert made after the notebook opened: %lessons and Refresh alone never look at git
    ui.repo.commit_file("worker.py", "THREADS = 64\n", "Run the worker with 64 threads")
    ui.repo.git("revert", "--no-edit", "HEAD")
    review.locator(".synapse-header button:has-text('Scan git for reverts')").click()
    wait_text(review.locator(".synapse-header"), "1 new revert found")
    row = review.locator(".synapse-table tr:has-text('Run the worker with 64 threads')")
    wait_text(row, "pending")
    assert row.get_attribute("aria-selected") == "true"  # selected, its card open beside the table
    wait_text(review.locator(".synapse-detail .synapse-message"), "scanned git: 1 new pending lesson")
    new = set(_lessons_by_id(ui.lessons)) - before
    assert len(new) == 1 and row.get_attribute("data-id") in new
    review.locator(".synapse-header button:has-text('Scan git for reverts')").click()
    wait_text(review.locator(".synapse-header"), "no new reverts since the last scan")


def test_an_agent_vault_is_refused_in_one_line(ui: Notebook) -> None:
    cell = ui.page.locator(".jp-Notebook .jp-CodeCell").filter(has_text=REFUSED.split("(")[0]).last
    out = cell.locator(".jp-OutputArea-output").last
    text = out.inner_text().strip()
    assert text.startswith("PermissionDeniedError: LessonReview acts as the human reviewer"), text
    assert len(text.splitlines()) == 1 and "Traceback" not in text and "File " not in text, text
