"""The widgets, headless: button.click() fires the handlers; assert on the store and the widget state.

What the front end receives is the widget state (``get_state()``), so the dropdown test asserts on the
synced ``index`` too: that is what a browser shows. tests/browser/ drives the same widgets in Chromium.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.errors import PermissionDeniedError
from synapse_nb.gitscope.testing import ScratchRepo
from synapse_nb.recall import Bars
from synapse_nb.widgets import ANY, GateExplorer, LessonReview, MemoryBrowser
from synapse_nb.widgets.lessons import DIFF_TITLE

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
    for part in (les.id, "Reverted: switch cache to Redis (1)", "1" * 12, "2" * 12, 'Revert &quot;Use Redis for the cache&quot; 1',
                 "cache.py", "+12", "&minus;3", "analysis written by an agent", "in-process cache"):
        assert part in html, part
    # the agent's analysis is never prefilled: the box is empty (the analysis is its placeholder), Approve waits for
    # a human's text, and taking the agent's words is a separate, explicit button
    assert card.text.value == "" and "in-process cache" in card.text.placeholder
    assert card.approve_button.disabled is True
    assert card.approve_agent_button is not None and card.approve_agent_button.description == \
        "Approve the agent's wording"
    assert "1 pending, 0 expired, 0 approved" in w.header.value
    assert w.pending_ids == [les.id] and card.reapprove_button is None


def test_approve_without_analysis_needs_real_text(v: syn.Vault) -> None:
    les = _lesson(v)
    w = LessonReview(v)
    card = w.cards[les.id]
    # no analysis: the machine summary is only a placeholder, never the value approved by one click
    assert card.text.value == "" and card.text.placeholder == les.summary
    assert card.approve_button.disabled is True
    card.text.value = "   \n "
    assert card.approve_button.disabled is True
    assert w.approve(les.id, "  ") is None and "write the lesson first" in w.message.value
    assert v.lessons.get(les.id).status == "pending"
    card.text.value = "Keep the cache in process: offline runs have no Redis."
    assert card.approve_button.disabled is False
    card.approve_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved" and stored.lesson_text == "Keep the cache in process: offline runs have no Redis."


def test_approve_click_uses_the_edited_text_and_rerenders(v: syn.Vault) -> None:
    les, other = _lesson(v, 1), _lesson(v, 2)
    w = LessonReview(v)
    card = w.cards[les.id]
    card.text.value = "Never make the cache depend on a network service."
    card.approve_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved" and stored.lesson_text == "Never make the cache depend on a network service."
    assert stored.expires_at == "2026-12-08T12:00:00.000000Z"  # the vault's 7-day default
    assert les.id not in w.cards and list(w.cards) == [other.id]
    assert f"approved {les.id}: in force until 2026-12-08 12:00 UTC" in w.message.value
    assert "Never make the cache depend" in w.approved_html.value
    # the widget's children are the re-rendered list (state is what the front end receives)
    assert w.cards[other.id] in w.children and card not in w.children
    assert card.comm is None  # the old card was closed, not leaked
    state = w.get_state()["children"]
    assert state[-1] == f"IPY_MODEL_{w.approved_html.model_id}" and len(state) == len(w.children)


def test_reject_asks_first_then_deletes(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    les = _lesson(v)
    w1 = LessonReview(v)
    w2 = LessonReview(syn.open_vault(tmp_path, clock=clock))  # another handle on the same folder
    card = w1.cards[les.id]
    assert not _visible(card.confirm)
    card.reject_button.click()
    # one click only asks
    assert v.lessons.get(les.id).status == "pending" and _visible(card.confirm)
    assert les.id in card.confirm.question.value and "cannot be undone" in card.confirm.question.value
    card.confirm.cancel_button.click()
    assert not _visible(card.confirm) and v.lessons.get(les.id).status == "pending"
    card.reject_button.click()
    card.confirm.yes_button.click()
    assert v.lessons.list() == [] and f"rejected {les.id}" in w1.message.value
    assert les.id in w2.cards  # stale until refreshed: the store is the source of truth
    w2.refresh_button.click()
    assert w2.cards == {} and "no pending lessons" in "".join(getattr(c, "value", "") for c in w2.children)


def test_stale_card_action_shows_the_refusal(v: syn.Vault) -> None:
    les = _lesson(v)
    v.as_agent().lessons.submit_analysis(les.id, "Redis is not available offline.")
    w = LessonReview(v)
    v.lessons.reject(les.id)  # deleted elsewhere
    w.cards[les.id].approve_agent_button.click()
    assert "not approved" in w.message.value and les.id in w.message.value
    assert w.cards == {}  # re-rendered from the store


def test_expired_lessons_can_be_reapproved(v: syn.Vault, clock: FakeClock) -> None:
    les = _lesson(v)
    v.lessons.approve(les.id, text="Keep the cache in process.")
    clock.now += timedelta(days=8)
    w = LessonReview(v)
    assert w.expired_ids == [les.id] and w.pending_ids == []
    card = w.cards[les.id]
    assert card.approve_button is None and card.text.value == "Keep the cache in process."
    assert "expired 2026-12-08 12:00 UTC" in card.info.value
    card.reapprove_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved" and stored.expires_at == "2026-12-16T12:00:00.000000Z"
    assert w.cards == {}


def test_agent_vault_may_not_drive_the_review(v: syn.Vault) -> None:
    with pytest.raises(PermissionDeniedError, match="human reviewer"):
        LessonReview(v.as_agent())


def test_empty_review_reads_as_sentences(v: syn.Vault) -> None:
    w = LessonReview(v)
    assert w.cards == {} and "0 pending" in w.header.value
    # title and note are separate blocks (they used to run together: "...recall)none approved")
    assert re.search(r"Approved \(head every recall\)</b></div><div[^>]*>none approved</div>", w.approved_html.value)


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
    assert card.diff.selected_index is None and card.diff.titles == (DIFF_TITLE,)
    assert "loading" in card.diff_html.value  # nothing read from git until a reviewer opens it
    card.diff.selected_index = 0
    html = card.diff_html.value
    assert "Use Redis for the cache" in html and "cache.py" in html and "1 file changed" in html
    assert "+import redis" in html and "-CACHE = {}" in html and "more line" not in html


def test_diff_is_capped(tmp_path: Path) -> None:
    _reverted_repo(tmp_path / "repo", lines=2000)
    v = syn.open_vault(tmp_path / "repo")
    (les,) = v.lessons.scan()
    card = LessonReview(v).cards[les.id]
    card.diff.selected_index = 0
    html = card.diff_html.value
    assert "+# filler 100" in html and "+# filler 1999" not in html
    assert re.search(r"… [\d,]+ more lines not shown", html) and len(html) < 200_000


def test_diff_outside_git_says_so(v: syn.Vault) -> None:
    les = _lesson(v)
    card = LessonReview(v).cards[les.id]
    card.diff.selected_index = 0
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
    assert "4 memories · page 1 of 1" in b.summary.value and b.table.cell(m["mig"].id, "content") == "alembic upgrade head"
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
    b.tag.value = "nothing-has-this"
    assert b.results == [] and b.table.rows == [] and b.table.empty == "no memories match"
    assert "0 memories" in b.summary.value and b.selected is None
    b.verify_button.click()  # disabled in the browser; headless it still refuses readably
    assert "select a memory first" in b.message.value


def test_click_a_row_to_select_then_verify(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    assert b.selected is None and b.verify_button.disabled and b.delete_button.disabled
    b.table.selected = m["ttl"].id  # what a click on the row sends
    assert b.selected.id == m["ttl"].id
    assert "cache entries live 5 minutes" in b.detail.value and "unverified" in b.detail.value
    assert not b.verify_button.disabled and not b.delete_button.disabled
    b.verify_button.click()
    assert v.memories.get(m["ttl"].id).verified and f"verified {m['ttl'].id}" in b.message.value
    assert b.table.cell(m["ttl"].id, "verified") == "yes" and b.verify_button.disabled  # already verified
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
    b.table.sort_by, b.table.sort_desc = "priority", False
    assert b.results[0].priority == "high" and b.results[-1].priority == "low"
    headers = {c["key"]: c["sort"] for c in b.table.columns}
    assert headers["what"] == "category" and headers["tags"] == ""  # tags do not sort


def test_paging_renders_one_page(v: syn.Vault) -> None:
    with v.transaction():
        for i in range(2_000):
            v.remember("knowledge", f"fact_{i:04d}", f"fact number {i} about the cache")
    b = MemoryBrowser(v, page_size=25)
    b.table.sort_by = "key"
    # only one page reaches the front end, whatever the vault's size
    assert len(b.table.rows) == 25 and len(json.dumps(b.table.get_state())) < 20_000
    assert b.total == 2_000 and "1–25 of 2,000 memories · page 1 of 80" in b.summary.value
    assert b.prev_button.disabled and not b.next_button.disabled
    b.next_button.click()
    assert b.page == 2 and b.results[0].key == "fact_0025" and "26–50 of 2,000" in b.summary.value
    b.page_box.value = 80  # typing a page number
    assert b.results[-1].key == "fact_1999" and b.next_button.disabled and len(b.results) == 25
    b.query.value = "number"  # a new search starts again at page 1
    assert b.page == 1 and b.total == 2_000
    b.table.selected = b.results[0].id
    b.next_button.click()
    assert b.selected is None  # the selection left the screen with its page


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
    shown = [b.table.cell(m.id, "updated"), b.table.cell(m.id, "expires"), LessonReview(v).approved_html.value,
             b.detail.value]
    for text in shown:
        assert _TIME.search(text), text
        assert not re.search(r"\d\d:\d\d:\d\d\.\d{6}", text) and "T12:" not in text, text


# -- GateExplorer ------------------------------------------------------------------------------------------------
def test_gate_explorer_shows_scores_bars_and_text(v: syn.Vault) -> None:
    m = _memories(v)
    g = GateExplorer(v)
    assert (g.floor.value, g.margin.value, g.top_k.value, g.budget.value) == (Bars().floor, 0.4, 5, 1200)
    g.query.value = "how do we run migrations"
    r = g.recall
    assert [i.id for i in r.items] == [m["mig"].id]
    assert m["mig"].id in g.table.value and "✔ yes" in g.table.value and "1 kept" in g.summary.value
    assert "alembic upgrade head" in g.text.value
    # no session: running it again shows the same recall (nothing marked as seen)
    again = g.run()
    assert again.text == r.text and not again.nothing_new


def test_sliders_rerun_the_recall(v: syn.Vault) -> None:
    m = _memories(v)
    g = GateExplorer(v)
    g.query.value = "how do we run migrations"
    best = g.recall.coverage  # the floor is on the query's support
    assert "coverage" in g.table.value and "bm25" in g.table.value
    g.floor.value = min(1.0, round(best + 0.01, 2))
    if best < 1.0:
        assert g.recall.items == () and "0 kept" in g.summary.value and "floor" in g.table.value
        assert "alembic upgrade head" not in g.text.value
    g.floor.value = 0.3
    g.top_k.value = 0
    assert g.recall.items == () and "top_k" in g.table.value and g.recall.bars.top_k == 0
    g.top_k.value = 5
    g.budget.value = 0
    assert g.recall.items == () and "budget" in g.table.value
    g.budget.value = 1200
    assert [i.id for i in g.recall.items] == [m["mig"].id]


def test_save_as_my_defaults_and_reset(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    _memories(v)
    g = GateExplorer(v)
    g.query.value = "deploys on friday"
    g.floor.value, g.margin.value, g.top_k.value, g.budget.value = 0.2, 0.35, 3, 600
    g.save_button.click()
    assert "recall defaults: floor 0.20, margin 0.35, top-k 3, budget 600 tokens" in g.message.value
    fresh = syn.open_vault(tmp_path, clock=clock)  # another handle: the defaults live in the vault
    assert fresh.settings.get("recall_floor") == 0.2 and fresh.settings.get("recall_top_k") == 3
    r = fresh.recall("deploys on friday")  # no bars given: the saved ones apply
    assert (r.bars.floor, r.bars.margin, r.bars.top_k, r.bars.budget_tokens) == (0.2, 0.35, 3, 600)
    assert fresh.recall("x", bars=Bars()).bars.floor == Bars().floor  # explicit bars still win
    g.floor.value = 0.9
    g.reset_button.click()
    assert g.floor.value == 0.2 and g.recall.bars.floor == 0.2
    assert GateExplorer(fresh).floor.value == 0.2  # a new explorer starts on the saved defaults


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
    assert "type a query first" in g.message.value and g.recall is None
    g.floor.value = 0.5  # moving a slider with no query does nothing
    assert g.recall is None
    g.run("something unrelated entirely")
    assert "APPROVED SYSTEM MEMORY" in g.text.value and "Keep the cache in process." in g.text.value
    assert "1 approved lesson in the banner" in g.summary.value
