"""The widgets, headless: button.click() fires the handlers; assert on the store and the widget state.

What the front end receives is the widget state (``get_state()``), so the dropdown test asserts on the
synced ``index`` too: that is what a browser shows. tests/browser/ drives the same widgets in Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.errors import PermissionDeniedError
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.recall import Bars
from synapse_nb.widgets import ANY, GateExplorer, LessonReview, MemoryBrowser, RecordTable
from synapse_nb.widgets.gate import BAR_HELP
from synapse_nb.widgets.lesson_card import DIFF_TITLE

_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def v(tmp_path: Path, clock: FakeClock) -> syn.Vault:
    return syn.open_vault(tmp_path, clock=clock)


def _lesson(v: syn.Vault, n: int = 1, **kw: object) -> syn.Lesson:
    return v.lessons.create(
        f"Reverted: switch cache to Redis ({n})", files=["cache.py", "settings.py"], branch="main",
        revert_commit={"sha": str(n) * 40, "subject": f'Revert "Use Redis for the cache" {n}'},
        reverted_commits=[{"sha": str(n + 1) * 40, "subject": "Use Redis for the cache"}],
        diffstat=[("cache.py", 12, 3), ("settings.py", 1, 1)], **kw)


def _visible(w: object) -> bool:
    return w.layout.display != "none"  # type: ignore[attr-defined]


# -- LessonReview -------------------------------------------------------------------------------------------------
def test_lesson_review_shows_what_was_reverted(v: syn.Vault) -> None:
    les = _lesson(v)
    v.as_agent().lessons.submit_analysis(les.id, "Redis is not available offline; keep the in-process cache.")
    w = LessonReview(v)
    card = w.cards[les.id]
    html = card.info.value
    for part in (les.id, "Reverted “Use Redis for the cache” on main", "1" * 12, "2" * 12,
                 'Revert &quot;Use Redis for the cache&quot; 1',
                 "cache.py", "analysis written by an agent", "in-process cache"):
        assert part in html, part
    # the agent's analysis is quoted and marked as an agent's, never prefilled: the box is empty, Approve waits for a
    # human's text, and taking the agent's words is a separate, explicit button
    assert re.search(r"class='synapse-quote synapse-agent synapse-analysis'><i>analysis written by an agent", html)
    assert card.text.value == "" and "in-process cache" not in card.text.placeholder
    assert card.approve_button.disabled is True
    assert card.approve_agent_button is not None and card.approve_agent_button.description == \
        "Approve the agent's wording for 7 days"
    assert "1 pending, 0 expired, 0 approved" in w.header.value.replace(" ·", ",")
    assert w.pending_ids == [les.id] and card.reapprove_button is None
    # the table row says who wrote the wording it would be approved with, marked as an agent's
    assert w.table.rows[0]["agent"] is True and w.table.cell(les.id, "by") == "an agent (analysis)"
    assert w.table.selected == les.id and w.detail.children[0] is card  # the first pending lesson is open


def test_line_counts_are_the_reverted_change_s_as_in_its_diff(v: syn.Vault) -> None:
    # stored as the revert commit's counts (12 lines deleted, 3 added back): the card shows the change's (+3 -12)
    les = v.lessons.create("Reverted: x", diffstat=[("cache.py", 3, 12)])
    html = LessonReview(v).cards[les.id].info.value
    assert "lines the reverted change added and removed" in html
    assert re.search(r"cache.py</code></td><td[^>]*>\+12</td><td[^>]*>&minus;3</td>", html), html


def test_approve_without_analysis_needs_real_text(v: syn.Vault) -> None:
    les = _lesson(v)
    w = LessonReview(v)
    card = w.cards[les.id]
    # no analysis: what was reverted is shown above, never a value approved by one click
    assert card.text.value == "" and "Reverted “Use Redis for the cache” on main" in card.info.value
    assert card.approve_button.disabled is True
    card.text.value = "   \n "
    assert card.approve_button.disabled is True
    assert w.approve(les.id, "  ") is None and "write the lesson first" in w.message.value
    assert v.lessons.get(les.id).status == "pending"
    card.text.value = "Keep the cache in process: offline runs have no Redis."
    assert card.approve_button.disabled is False
    card.approve_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved"
    assert stored.lesson_text == "Keep the cache in process: offline runs have no Redis."


def test_duration_is_chosen_and_shown_before_approving(v: syn.Vault, clock: FakeClock) -> None:
    les = _lesson(v)
    w = LessonReview(v)
    card = w.cards[les.id]
    # before any click: the vault's default, and the date it would end
    assert card.duration.value == 7 and card.duration.label == "7 days (the vault's default)"
    assert "until <b>2026-12-08 12:00 UTC</b>" in card.until.value
    assert card.approve_button.description == "Approve for 7 days"
    card.duration.value = 30
    assert "until <b>2026-12-31 12:00 UTC</b>" in card.until.value and card.approve_button.description == \
        "Approve for 30 days"
    card.text.value = "Keep the cache in process."
    card.approve_button.click()
    assert v.lessons.get(les.id).expires_at == "2026-12-31T12:00:00.000000Z"
    assert "in force until 2026-12-31 12:00 UTC" in w.message.value


def test_approve_click_uses_the_edited_text_keeps_the_lesson_selected(v: syn.Vault) -> None:
    les, other = _lesson(v, 1), _lesson(v, 2)
    w = LessonReview(v)
    w.select(les.id)
    card = w.cards[les.id]
    card.text.value = "Never make the cache depend on a network service."
    token = w.table.focus_token
    card.approve_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved" and stored.lesson_text == "Never make the cache depend on a network service."
    assert stored.expires_at == "2026-12-08T12:00:00.000000Z"  # the vault's 7-day default
    # feedback where the user is looking: the lesson stays selected, the outcome right under its buttons
    assert w.table.selected == les.id and w.detail.children == (w.cards[les.id], w.message)
    assert f"approved {les.id}: in force until 2026-12-08 12:00 UTC" in w.message.value
    assert w.table.focus_token == token + 1  # the keyboard focus goes back to the lesson's row, not to the page
    assert w.table.cell(les.id, "status") == "approved" and w.table.cell(les.id, "by") == "you"
    assert w.table.cell(les.id, "lesson") == "Never make the cache depend on a network service."
    assert w.cards[les.id].withdraw_button is not None and w.pending_ids == [other.id]
    assert card.comm is None  # the old card was closed, not leaked
    assert w.cards[other.id].comm is not None  # the untouched card was kept


def test_withdraw_an_approval(v: syn.Vault) -> None:
    les = _lesson(v)
    v.lessons.approve(les.id, text="Keep the cache in process.")
    w = LessonReview(v)
    card = w.cards[les.id]
    assert card.text is None and card.approve_button is None and "in force until" in card.info.value
    card.withdraw_button.click()
    assert v.lessons.get(les.id).status == "approved" and "stops heading recalls" in card.confirm.question.value
    card.confirm.cancel_button.click()
    assert v.lessons.get(les.id).status == "approved"
    card.withdraw_button.click()
    card.confirm.yes_button.click()
    assert v.lessons.get(les.id).status == "pending" and v.lessons.in_force() == []
    assert f"withdrawn {les.id}" in w.message.value and w.table.selected == les.id
    again = w.cards[les.id]
    assert again.text.value == "Keep the cache in process." and again.approve_button.disabled is False


def test_reject_asks_first_naming_the_lesson_then_deletes(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    les, other = _lesson(v, 1), _lesson(v, 2)
    w1 = LessonReview(v)
    w2 = LessonReview(syn.open_vault(tmp_path, clock=clock))  # another handle on the same folder
    w1.select(les.id)
    card = w1.cards[les.id]
    assert not _visible(card.confirm)
    card.reject_button.click()
    # one click only asks, naming what was reverted (not the id)
    assert v.lessons.get(les.id).status == "pending" and _visible(card.confirm)
    assert "Reject the lesson Reverted “Use Redis for the cache” on main?" in card.confirm.question.value
    assert "cannot be undone" in card.confirm.question.value
    card.confirm.cancel_button.click()
    assert not _visible(card.confirm) and v.lessons.get(les.id).status == "pending"
    card.reject_button.click()
    card.confirm.yes_button.click()
    assert [x.id for x in v.lessons.list()] == [other.id] and f"rejected {les.id}" in w1.message.value
    assert w1.table.selected == other.id  # the next lesson, with the outcome under it
    assert les.id in w2.cards  # until it notices the vault changed (after the next cell, or Refresh)
    w2.refresh_button.click()
    assert les.id not in w2.cards


def test_refresh_follows_the_vault(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    w = LessonReview(v)
    assert w.cards == {}
    other = syn.open_vault(tmp_path, clock=clock)
    les = _lesson(other)  # another connection (a %lessons elsewhere, the CLI)
    assert les.id not in w.cards
    assert w.vault_changed() is True  # what runs after every notebook cell
    assert les.id in w.cards and w.vault_changed() is False  # nothing moved since
    w.cards[les.id].text.value = "half-typed wording"
    _lesson(other, 2)
    w.vault_changed()
    assert w.cards[les.id].text.value == "half-typed wording"  # an unchanged lesson keeps what was typed


def test_scan_finds_new_reverts(tmp_path: Path) -> None:
    r = _reverted_repo(tmp_path / "repo")
    v = syn.open_vault(tmp_path / "repo")
    w = LessonReview(v)
    assert w.cards == {} and w.scan_button.disabled is False
    w.scan_button.click()
    (les,) = v.lessons.pending()
    assert "1 new revert found" in w.scan_note.value and w.table.selected == les.id
    assert "scanned git: 1 new pending lesson" in w.message.value
    w.scan_button.click()
    assert "no new reverts" in w.scan_note.value and len(w.cards) == 1
    r.commit_file("upload.py", "retry()\n", "Retry uploads forever")
    r.git("revert", "--no-edit", "HEAD")
    w.scan_button.click()
    assert len(v.lessons.pending()) == 2 and "Retry uploads forever" in w.message.value


def test_scan_outside_git_is_disabled_and_says_why(v: syn.Vault) -> None:
    w = LessonReview(v)
    assert w.scan_button.disabled and "not a git repository" in w.scan_button.tooltip
    assert w.scan() == [] and "is not inside a git repository: no reverts to scan" in w.scan_note.value


def test_scan_before_a_first_commit_says_there_is_no_history(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, capture_output=True)
    w = LessonReview(syn.open_vault(tmp_path))
    w.scan_button.click()  # review 68: vault.lessons.scan() raised GitError here; it finds nothing, and says why
    assert "has no commits yet: no reverts to scan" in w.scan_note.value and "refused" not in w.message.value


def test_stale_card_action_shows_the_refusal(v: syn.Vault) -> None:
    les = _lesson(v)
    v.as_agent().lessons.submit_analysis(les.id, "Redis is not available offline.")
    w = LessonReview(v)
    card = w.cards[les.id]
    v.lessons.reject(les.id)  # deleted elsewhere, through the same connection: the change listener redraws it
    assert les.id not in w.cards and card.comm is None
    assert w.approve_agent_wording(les.id, seen="Redis is not available offline.") is None
    assert "not approved" in w.message.value and les.id in w.message.value


def test_expired_lessons_can_be_reapproved(v: syn.Vault, clock: FakeClock) -> None:
    les = _lesson(v)
    v.lessons.approve(les.id, text="Keep the cache in process.")
    clock.now += timedelta(days=8)
    w = LessonReview(v)
    assert w.expired_ids == [les.id] and w.pending_ids == []
    card = w.cards[les.id]
    assert card.approve_button is None and card.text.value == "Keep the cache in process."
    assert "expired 2026-12-08 12:00 UTC" in card.info.value
    assert card.reapprove_button.description == "Re-approve for 7 days"
    card.reapprove_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved" and stored.expires_at == "2026-12-16T12:00:00.000000Z"
    assert w.approved_ids == [les.id]


def test_agent_vault_may_not_drive_the_review(v: syn.Vault) -> None:
    with pytest.raises(PermissionDeniedError, match="human reviewer") as info:
        LessonReview(v.as_agent())
    # one line in a notebook, not a traceback
    assert info.value._render_traceback_() == [f"PermissionDeniedError: {info.value}"]
    assert "actor='agent'" in str(info.value)


def test_a_kernel_an_agent_started_may_not_drive_the_review_and_is_told_why(
        v: syn.Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """In an agent's environment a vault asked for as the user acts as the agent: the refusal names the
    environment rather than an actor the user did not ask for."""
    monkeypatch.setenv("CLAUDECODE", "1")
    agents = syn.open_vault(v.path)
    assert agents.actor == "agent"
    with pytest.raises(PermissionDeniedError, match=r"agent's environment \(CLAUDECODE=1 "):
        LessonReview(agents)
    agents.close()


def test_empty_review_reads_as_sentences(v: syn.Vault) -> None:
    w = LessonReview(v)
    assert w.cards == {} and "0 pending" in w.header.value
    assert "Scan looks for reverted commits in git" in w.table.empty
    assert "no lessons" in w.detail.children[0].value


def test_show_filter(v: syn.Vault) -> None:
    les, other = _lesson(v, 1), _lesson(v, 2)
    v.lessons.approve(other.id, text="Keep the cache in process.")
    w = LessonReview(v)
    assert w.table.row_ids == [les.id, other.id]  # pending first
    w.show.value = "approved"
    assert w.table.row_ids == [other.id] and w.table.selected == other.id
    w.show.value = "expired"
    assert w.table.rows == [] and w.table.empty == "no expired lessons"


# -- LessonReview: the reverted change ---------------------------------------------------------------------------
def _reverted_repo(root: Path, *, lines: int = 2) -> ScratchRepo:
    r = ScratchRepo.init(root)
    r.commit_file("cache.py", "CACHE = {}\n", "In-process cache")
    body = "import redis\nCACHE = redis.Redis()\n" + "".join(f"# filler {i}\n" for i in range(lines - 2))
    r.commit_file("cache.py", body, "Use Redis for the cache")
    r.git("revert", "--no-edit", "HEAD")
    return r


def test_diff_is_collapsed_and_read_from_git_when_opened(tmp_path: Path) -> None:
    _reverted_repo(tmp_path / "repo")
    v = syn.open_vault(tmp_path / "repo")
    (les,) = v.lessons.scan()
    w = LessonReview(v)
    card = w.cards[les.id]
    assert card.diff.value is False and card.diff.description == DIFF_TITLE  # a button: it takes keyboard focus
    assert not _visible(card.diff_html) and "loading" in card.diff_html.value  # nothing read from git yet
    card.diff.value = True
    assert _visible(card.diff_html) and card.diff.description.startswith("Hide")
    html = card.diff_html.value
    assert "Use Redis for the cache" in html and "cache.py" in html and "1 file changed" in html
    assert "+import redis" in html and "-CACHE = {}" in html and "more line" not in html


def test_diff_is_capped(tmp_path: Path) -> None:
    _reverted_repo(tmp_path / "repo", lines=2000)
    v = syn.open_vault(tmp_path / "repo")
    (les,) = v.lessons.scan()
    card = LessonReview(v).cards[les.id]
    card.diff.value = True
    html = card.diff_html.value
    assert "+# filler 100" in html and "+# filler 1999" not in html
    assert re.search(r"… [\d,]+ more lines not shown", html) and len(html) < 200_000


def test_diff_outside_git_says_so(v: syn.Vault) -> None:
    les = _lesson(v)
    card = LessonReview(v).cards[les.id]
    card.diff.value = True
    assert "not a git repository" in card.diff_html.value


# -- MemoryBrowser ------------------------------------------------------------------------------------------------
def _memories(v: syn.Vault) -> dict[str, syn.Memory]:
    a = v.as_agent()
    return {
        "mig": v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"], priority="high"),
        "freeze": v.remember("context", "release_freeze", "no deploys on friday", tags=["deploy"]),
        "ttl": a.remember("knowledge", "cache_ttl", "cache entries live 5 minutes", tags=["cache"]),
        "style": a.remember("preference", "code_style", "black with line length 100", priority="low"),
    }


def test_filter_dropdowns_show_any_and_return_to_it(v: syn.Vault) -> None:
    """ipywidgets 8 shows a dropdown whose value is None as blank: "(any)" must be a real, selected option."""
    b = MemoryBrowser(v)
    dropdowns = {"category": "knowledge", "priority": "low", "verified": True, "source": "agent"}
    for name, value in dropdowns.items():
        d = getattr(b, name)
        assert d.value == ANY and d.label == "(any)" and d.index == 0
        assert d.get_state()["index"] == 0  # what the browser receives: option 0 selected, not "nothing"
        d.value = value
        assert d.get_state()["index"] > 0
        d.value = ANY
        assert d.label == "(any)" and d.get_state()["index"] == 0


def test_memory_browser_filters(v: syn.Vault) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    assert {x.id for x in b.results} == {x.id for x in m.values()}
    assert "4 memories · page 1 of 1" in b.summary.value
    assert b.table.cell(m["mig"].id, "content") == "alembic upgrade head"
    assert "4 memories match" in b.header.value
    b.query.value = "deploys"
    assert [x.id for x in b.results] == [m["freeze"].id] and "1 memory ·" in b.summary.value
    b.query.value = ""
    b.source.value = "agent"
    assert {x.id for x in b.results} == {m["ttl"].id, m["style"].id}
    b.priority.value = "low"
    assert [x.id for x in b.results] == [m["style"].id]
    b.priority.value = ANY
    b.source.value = ANY
    b.verified.value = True
    assert {x.id for x in b.results} == {m["mig"].id, m["freeze"].id}
    b.verified.value = False
    assert {x.id for x in b.results} == {m["ttl"].id, m["style"].id}
    b.verified.value = ANY
    b.category.value = "knowledge"
    assert [x.id for x in b.results] == [m["ttl"].id]
    b.category.value = ANY
    b.tag.value = "DB"
    assert [x.id for x in b.results] == [m["mig"].id] and b.table.row_ids == [m["mig"].id]
    b.verify_button.click()  # disabled in the browser; headless it still refuses readably
    assert "select a memory first" in b.message.value
    b.tag.value = "nothing-has-this"
    assert b.results == [] and b.table.rows == [] and "no memories match" in b.table.empty
    assert "0 memories" in b.summary.value and b.selected is None
    assert b.message.value == ""  # the old status line does not linger beside "no memories match"


def test_rows_say_who_wrote_each_memory(v: syn.Vault) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    rows = {r["id"]: r for r in b.table.rows}
    assert rows[m["ttl"].id]["agent"] is True and rows[m["mig"].id]["agent"] is False
    assert b.table.cell(m["ttl"].id, "by") == "agent · unverified"
    assert b.table.cell(m["mig"].id, "by") == "user · verified"
    assert b.table.cell(m["mig"].id, "tags") == "#db"  # shown after the content, muted
    b.select(m["ttl"].id)
    assert "an agent wrote this memory" in b.detail_html.value and "synapse-quote synapse-agent" in b.detail_html.value
    columns = {c["key"]: c for c in b.table.columns}
    assert columns["content"]["width"] >= 40 and sum(c["width"] for c in b.table.columns) == 100


def test_click_a_row_to_select_then_verify(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    assert b.selected is None and b.verify_button.disabled and b.delete_button.disabled
    assert "click a row" in b.detail_html.value
    b.table.selected = m["ttl"].id  # what a click on the row sends
    assert b.selected.id == m["ttl"].id
    assert "cache entries live 5 minutes" in b.detail_html.value and "not verified" in b.detail_html.value
    assert not b.verify_button.disabled and not b.delete_button.disabled
    b.verify_button.click()
    assert v.memories.get(m["ttl"].id).verified and f"verified {m['ttl'].id}" in b.message.value
    assert b.table.cell(m["ttl"].id, "by") == "agent · verified" and b.verify_button.disabled  # already verified
    # the outcome sits in the detail pane, under the buttons that acted
    assert b.detail.children[-1] is b.message and b.verify_button in b.detail.children[1].children
    # seen from another handle
    other = MemoryBrowser(syn.open_vault(tmp_path, clock=clock))
    other.verified.value = False
    assert [x.id for x in other.results] == [m["style"].id]


def test_delete_asks_first(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    b.select(m["freeze"].id)
    b.delete_button.click()
    assert v.memories.count() == 4 and b.confirm.pending and _visible(b.confirm)
    assert m["freeze"].id in b.confirm.question.value and "context/release_freeze" in b.confirm.question.value
    b.confirm.cancel_button.click()
    assert v.memories.count() == 4 and not _visible(b.confirm)
    b.delete_button.click()
    b.select(m["mig"].id)  # choosing another row withdraws the question about the first
    assert not b.confirm.pending and not _visible(b.confirm)
    b.select(m["freeze"].id)
    b.delete_button.click()
    b.confirm.yes_button.click()
    assert v.memories.count() == 3 and m["freeze"].id not in b.table.row_ids
    assert f"deleted {m['freeze'].id}" in b.message.value and b.selected is None
    other = MemoryBrowser(syn.open_vault(tmp_path, clock=clock))
    assert m["freeze"].id not in [x.id for x in other.results]


def test_sort_by_column(v: syn.Vault) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    b.table.sort_by = "key"  # a click on the "category/key" ... here the key header
    assert [x.key for x in b.results] == sorted(x.key for x in m.values())
    b.table.sort_desc = True  # a second click reverses
    assert [x.key for x in b.results] == sorted((x.key for x in m.values()), reverse=True)
    # priority ▼ (descending: its first click) is the most important first; ▲ the least
    b.table.sort_by, b.table.sort_desc = "priority", True
    assert b.results[0].priority == "high" and b.results[-1].priority == "low"
    b.table.sort_desc = False
    assert b.results[0].priority == "low" and b.results[-1].priority == "high"
    headers = {c["key"]: c for c in b.table.columns}
    assert headers["what"]["sort"] == "category" and headers["priority"]["first"] == "desc"
    assert headers["updated"]["first"] == "desc"  # newest first on the first click


def test_paging_renders_one_page(v: syn.Vault) -> None:
    with v.transaction():
        for i in range(2_000):
            v.remember("knowledge", f"fact_{i:04d}", f"fact number {i} about the cache")
    b = MemoryBrowser(v, page_size=25)
    b.table.sort_by = "key"
    # only one page reaches the front end, whatever the vault's size
    state = b.table.get_state()
    assert len(b.table.rows) == 25 and len(json.dumps(state["rows"])) < 20_000 and state["rows"] == b.table.rows
    assert b.total == 2_000 and "1–25 of 2,000 memories · page 1 of 80" in b.summary.value
    assert b.prev_button.disabled and not b.next_button.disabled
    b.next_button.click()
    assert b.page == 2 and b.results[0].key == "fact_0025" and "26–50 of 2,000" in b.summary.value
    b.table.sort_desc = True  # sorting on page 2 starts again at page 1 of the new order
    assert b.page == 1 and b.results[0].key == "fact_1999"
    b.table.sort_desc = False
    b.page_box.value = 80  # typing a page number
    assert b.results[-1].key == "fact_1999" and b.next_button.disabled and len(b.results) == 25
    b.query.value = "number"  # a new search starts again at page 1
    assert b.page == 1 and b.total == 2_000
    b.table.selected = b.results[0].id
    b.next_button.click()
    assert b.selected is None  # the selection left the screen with its page


def test_memory_browser_refreshes_when_the_vault_changes(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    _memories(v)
    b = MemoryBrowser(v)
    other = syn.open_vault(tmp_path, clock=clock)  # a %remember in another cell opens its own handle
    other.remember("context", "sprint_goal", "ship the importer")
    assert b.total == 4  # not yet: another connection wrote
    assert b.vault_changed() is True and b.total == 5  # after the cell: what post_run_cell runs
    b.select(b.results[0].id)
    v.remember("context", "sprint_goal", "ship the importer this week")  # this connection: at once
    assert b.total == 5 and "ship the importer this week" in [x.content for x in b.results]
    assert b.selected is not None  # the selection survives a refresh
    other.memories.delete(other.memories.get_by_key("context", "sprint_goal").id)
    b.refresh_button.click()  # or by hand
    assert b.total == 4


def test_memory_browser_on_agent_vault_is_read_only(v: syn.Vault) -> None:
    m = _memories(v)
    b = MemoryBrowser(v.as_agent())
    b.select(m["ttl"].id)
    assert b.verify_button.disabled and b.delete_button.disabled
    assert len(b.results) == 4


def test_timestamps_read_the_same_everywhere(v: syn.Vault, clock: FakeClock) -> None:
    les = _lesson(v)
    v.lessons.approve(les.id, text="Keep the cache in process.")
    m = v.remember("context", "sprint_goal", "Ship the importer", expires="14d")
    b = MemoryBrowser(v)
    b.select(m.id)
    review = LessonReview(v)
    shown = [b.table.cell(m.id, "updated"), b.table.cell(m.id, "expires"), review.table.cell(les.id, "until"),
             review.cards[les.id].info.value, b.detail_html.value]
    for text in shown:
        assert _TIME.search(text), text
        assert not re.search(r"\d\d:\d\d:\d\d\.\d{6}", text) and "T12:" not in text, text


def test_every_member_is_one_family(v: syn.Vault) -> None:
    _memories(v)
    for w in (MemoryBrowser(v), LessonReview(v), GateExplorer(v)):
        classes = [c._dom_classes for c in w.children]
        assert "synapse-widget" in w._dom_classes
        assert classes[0] == ("synapse-header",) and any("synapse-body" in c for c in classes)
        assert w.refresh_button in w.children[0].children and w.message is not None
        body = next(c for c in w.children if "synapse-body" in c._dom_classes)
        assert w.table in body.children[0].children and isinstance(w.table, RecordTable)
        assert body.children[1] is w.detail and "synapse-detail" in w.detail._dom_classes


# -- GateExplorer ------------------------------------------------------------------------------------------------
def test_gate_explorer_table_titles_an_agents_record_after_its_mark(v: syn.Vault) -> None:
    """Review 11: the explorer's static table titled an agent's decision like a person's (review 10 had fixed
    `%recall --explain`, which the same table shows)."""
    agents = v.as_agent().decide("Per the user in chat: deploy production with --force")
    g = GateExplorer(v)
    g.query.value = "deploy production with force"
    assert agents.id in g.records and "<b>[agent · unverified] Per the user in chat" in g.table_html.value



def test_a_record_a_duplicate_pair_hides_says_so_not_deleted(v: syn.Vault) -> None:
    """explain() and the explorer said "deleted meanwhile" for a record an open duplicate pair hides (it is stored,
    waiting for a person behind the record shown): each says which record it is hidden behind."""
    mine = v.decide("the staging cluster runs postgres fifteen with streaming replicas")
    copy = v.as_agent().decide("the staging cluster runs postgres fifteen with streaming replicas")
    assert [lk.hidden for lk in v.memories.conflicts()] == [copy.id]
    row = next(r for r in v.recall("staging cluster postgres").explain() if r.id == copy.id)
    assert (row.kept, row.bar, row.reason) == (False, "duplicate", f"hidden as a duplicate of {mine.id}")
    g = GateExplorer(v)
    g.query.value = "staging cluster postgres"
    g.table.selected = copy.id
    assert f"hidden as a duplicate of {mine.id}" in g.detail_html.value
    assert "deleted meanwhile" not in g.detail_html.value + g.table_html.value


def test_gate_explorer_shows_scores_bars_and_text(v: syn.Vault) -> None:
    m = _memories(v)
    g = GateExplorer(v)
    assert (g.floor.value, g.margin.value, g.top_k.value, g.budget.value) == (Bars().floor, 0.4, 5, 1200)
    # before the first query: a hint where the table will be, the bars explained in words (not only tooltips)
    assert "Type a question" in g.table.empty and "type a question" in g.header.value
    assert all(text in g.detail_html.value for text in BAR_HELP.values())
    g.query.value = "how do we run migrations"
    r = g.recall
    assert [i.id for i in r.items] == [m["mig"].id]
    # each candidate named by its title beside its id
    assert g.table.cell(m["mig"].id, "record") == "procedure/run_migrations"
    assert g.table.cell(m["mig"].id, "id") == f"memory · {m['mig'].id}" and g.table.cell(m["mig"].id, "kept") == \
        "✔ kept"
    assert "<b>procedure/<wbr>run_migrations</b>" in g.table_html.value
    assert "1 kept" in g.header.value and "path" not in g.header.value + g.summary.value  # no jargon
    assert "alembic upgrade head" in g.text.value
    # the first candidate is selected: its record in full and why it was kept
    assert g.table.selected == m["mig"].id and "cleared every bar" in g.detail_html.value
    assert "alembic upgrade head" in g.detail_html.value
    # no session: running it again shows the same recall (nothing marked as seen)
    again = g.run()
    assert again.text == r.text and not again.nothing_new


def test_agent_candidates_are_marked(v: syn.Vault) -> None:
    m = _memories(v)
    g = GateExplorer(v)
    g.query.value = "cache entries live"
    rows = {r["id"]: r for r in g.table.rows}
    assert rows[m["ttl"].id]["agent"] is True
    g.table.selected = m["ttl"].id
    assert "agent · unverified" in g.detail_html.value


def test_sliders_rerun_the_recall(v: syn.Vault) -> None:
    m = _memories(v)
    g = GateExplorer(v)
    g.query.value = "how do we run migrations"
    best = g.recall.coverage  # the floor is on the query's support
    assert g.table.cell(m["mig"].id, "coverage") != "-" and "bm25" in g.detail_html.value
    g.floor.value = min(1.0, round(best + 0.01, 2))
    if best < 1.0:
        assert g.recall.items == () and "0 kept" in g.header.value and "floor" in g.table_html.value
        assert "alembic upgrade head" not in g.text.value
    g.floor.value = 0.3
    g.top_k.value = 0  # the slider stops at 1 (recall_top_k takes 1-1000)
    assert g.top_k.value == 1 and g.recall.bars.top_k == 1 and len(g.recall.items) <= 1
    g.top_k.value = 5
    g.budget.value = 0
    assert g.recall.items == () and "budget" in g.table_html.value
    g.budget.value = 1200
    assert [i.id for i in g.recall.items] == [m["mig"].id]


def test_sliders_say_how_they_differ_from_the_saved_defaults(v: syn.Vault) -> None:
    g = GateExplorer(v)
    assert "the saved defaults" in g.bars_note.value and "synapse-changed" not in g.floor._dom_classes
    g.floor.value = 0.5
    assert "synapse-changed" in g.floor._dom_classes and "synapse-changed" not in g.margin._dom_classes
    assert f"floor 0.50 (saved {Bars().floor:.2f})" in g.bars_note.value
    g.reset_button.click()
    assert "synapse-changed" not in g.floor._dom_classes and "sliders back on the saved defaults" in g.message.value


def test_save_as_my_defaults_asks_saying_agents_use_them_too(v: syn.Vault, tmp_path: Path,
                                                            clock: FakeClock) -> None:
    _memories(v)
    g = GateExplorer(v)
    g.query.value = "deploys on friday"
    g.floor.value, g.margin.value, g.top_k.value, g.budget.value = 0.2, 0.35, 3, 600
    g.save_button.click()
    assert v.settings.get("recall_floor") == Bars().floor  # one click only asks ...
    assert _visible(g.save_confirm) and "agents over MCP" in g.save_confirm.question.value
    g.save_confirm.yes_button.click()  # ... the confirmation saves
    assert "recall defaults: floor 0.20, margin 0.35, top-k 3, budget 600 tokens" in g.message.value
    assert "agents over MCP" in g.message.value and "synapse-changed" not in g.floor._dom_classes
    fresh = syn.open_vault(tmp_path, clock=clock)  # another handle: the defaults live in the vault
    assert fresh.settings.get("recall_floor") == 0.2 and fresh.settings.get("recall_top_k") == 3
    r = fresh.recall("deploys on friday")  # no bars given: the saved ones apply
    assert (r.bars.floor, r.bars.margin, r.bars.top_k, r.bars.budget_tokens) == (0.2, 0.35, 3, 600)
    assert fresh.recall("x", bars=Bars()).bars.floor == Bars().floor  # explicit bars still win
    g.floor.value = 0.9
    g.reset_button.click()
    assert g.floor.value == 0.2 and g.recall.bars.floor == 0.2
    assert GateExplorer(fresh).floor.value == 0.2  # a new explorer starts on the saved defaults


def test_gate_explorer_top_k_cannot_reach_zero(v: syn.Vault) -> None:
    """recall_top_k takes 1-1000 (a 0 emptied every recall: review 78); the slider stopped at 0 and saving refused."""
    _memories(v)
    g = GateExplorer(v)
    g.query.value = "deploys on friday"
    g.top_k.value = 0  # the slider's lowest place
    assert g.top_k.value == 1 and g.bars.top_k == 1 and g.recall is not None and g.recall.items
    g.save_button.click()
    g.save_confirm.yes_button.click()
    assert v.settings.get("recall_top_k") == 1 and "top-k 1" in g.message.value


def test_agent_may_explore_but_not_save_defaults(v: syn.Vault) -> None:
    g = GateExplorer(v.as_agent())
    assert g.save_button.disabled
    g.floor.value = 0.1
    assert g.save_defaults() is None and "not saved" in g.message.value and "agent" in g.message.value
    assert v.settings.get("recall_floor") == Bars().floor


def test_gate_explorer_empty_query_and_banner(v: syn.Vault) -> None:
    les = _lesson(v)
    v.lessons.approve(les.id, text="Keep the cache in process.")
    g = GateExplorer(v)
    g.run_button.click()
    assert "type a question in the Query box first" in g.message.value and g.recall is None
    g.floor.value = 0.5  # moving a slider with no query does nothing
    assert g.recall is None
    g.run("something unrelated entirely")
    assert "APPROVED SYSTEM MEMORY" in g.text.value and "Keep the cache in process." in g.text.value
    assert "1 approved lesson in the banner" in g.header.value


def test_gate_explorer_reruns_when_the_vault_changes(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    g = GateExplorer(v)
    g.query.value = "how do we run migrations"
    assert g.recall.items == ()
    syn.open_vault(tmp_path, clock=clock).remember("procedure", "run_migrations", "alembic upgrade head")
    assert g.vault_changed() is True and len(g.recall.items) == 1
