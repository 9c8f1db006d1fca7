"""The widgets, headless: button.click() fires the handlers; assert on the store and the widget state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import synapse_nb as syn
from synapse_nb.errors import PermissionDeniedError
from synapse_nb.widgets import GateExplorer, LessonReview, MemoryBrowser


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


# -- LessonReview -------------------------------------------------------------------------------------------------
def test_lesson_review_shows_what_was_reverted(v: syn.Vault) -> None:
    les = _lesson(v)
    v.as_agent().lessons.submit_analysis(les.id, "Redis is not available offline; keep the in-process cache.")
    w = LessonReview(v)
    card = w.cards[les.id]
    html = card.info.value
    for part in (les.id, "Reverted: switch cache to Redis (1)", "1" * 12, "2" * 12, 'Revert &quot;Use Redis for the cache&quot; 1',
                 "cache.py", "+12", "&minus;3", "analysis proposed by agent", "in-process cache"):
        assert part in html, part
    # the editable text is prefilled with the agent's analysis
    assert card.text.value == "Redis is not available offline; keep the in-process cache."
    assert "1 pending, 0 expired, 0 approved" in w.header.value
    assert w.pending_ids == [les.id] and card.reapprove_button is None


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
    assert f"approved {les.id}" in w.message.value
    assert "Never make the cache depend" in w.approved_html.value
    # the widget's children are the re-rendered list (state is what the front end receives)
    assert w.cards[other.id] in w.children and card not in w.children
    assert card.comm is None  # the old card was closed, not leaked
    state = w.get_state()["children"]
    assert state[-1] == f"IPY_MODEL_{w.approved_html.model_id}" and len(state) == len(w.children)


def test_reject_deletes_and_second_widget_sees_it_after_refresh(v: syn.Vault, tmp_path: Path,
                                                               clock: FakeClock) -> None:
    les = _lesson(v)
    w1 = LessonReview(v)
    w2 = LessonReview(syn.open_vault(tmp_path, clock=clock))  # another handle on the same folder
    w1.cards[les.id].reject_button.click()
    assert v.lessons.list() == [] and "rejected" in w1.message.value
    assert les.id in w2.cards  # stale until refreshed: the store is the source of truth
    w2.refresh_button.click()
    assert w2.cards == {} and "no pending lessons" in "".join(
        getattr(c, "value", "") for c in w2.children)
    # acting on the stale card is refused readably, not with a traceback
    w3 = LessonReview(v)
    assert w3.cards == {}


def test_stale_card_action_shows_the_refusal(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    les = _lesson(v)
    w = LessonReview(v)
    v.lessons.reject(les.id)  # deleted elsewhere
    w.cards[les.id].approve_button.click()
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
    card.reapprove_button.click()
    stored = v.lessons.get(les.id)
    assert stored.status == "approved" and stored.expires_at == "2026-12-16T12:00:00.000000Z"
    assert w.cards == {}


def test_agent_vault_may_not_drive_the_review(v: syn.Vault) -> None:
    with pytest.raises(PermissionDeniedError, match="human reviewer"):
        LessonReview(v.as_agent())


def test_empty_review(v: syn.Vault) -> None:
    w = LessonReview(v)
    assert w.cards == {} and "0 pending" in w.header.value and "none approved" in w.approved_html.value


# -- MemoryBrowser ------------------------------------------------------------------------------------------------
def _memories(v: syn.Vault) -> dict[str, syn.Memory]:
    a = v.as_agent()
    return {
        "mig": v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"], priority="high"),
        "freeze": v.remember("context", "release_freeze", "no deploys on friday", tags=["deploy"]),
        "ttl": a.remember("knowledge", "cache_ttl", "cache entries live 5 minutes", tags=["cache"]),
        "style": a.remember("preference", "code_style", "black with line length 100", priority="low"),
    }


def test_memory_browser_filters(v: syn.Vault) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    assert {x.id for x in b.results} == {x.id for x in m.values()}
    assert "4 memories" in b.table.value and "alembic upgrade head" in b.table.value
    b.query.value = "deploys"
    assert [x.id for x in b.results] == [m["freeze"].id]
    b.query.value = ""
    b.source.value = "agent"
    assert {x.id for x in b.results} == {m["ttl"].id, m["style"].id}
    b.priority.value = "low"
    assert [x.id for x in b.results] == [m["style"].id]
    b.priority.value = None
    b.source.value = None
    b.verified.value = True
    assert {x.id for x in b.results} == {m["mig"].id, m["freeze"].id}
    b.verified.value = None
    b.category.value = "knowledge"
    assert [x.id for x in b.results] == [m["ttl"].id]
    b.category.value = None
    b.tag.value = "DB"
    assert [x.id for x in b.results] == [m["mig"].id]
    assert b.selected.options == ((f"{m['mig'].id}  procedure/run_migrations", m["mig"].id),)
    b.tag.value = "nothing-has-this"
    assert b.results == [] and "no memories match" in b.table.value and b.selected.value is None
    b.verify_button.click()
    assert "select a memory first" in b.message.value


def test_memory_browser_verify_and_delete(v: syn.Vault, tmp_path: Path, clock: FakeClock) -> None:
    m = _memories(v)
    b = MemoryBrowser(v)
    b.selected.value = m["ttl"].id
    b.verify_button.click()
    assert v.memories.get(m["ttl"].id).verified and f"verified {m['ttl'].id}" in b.message.value
    b.selected.value = m["freeze"].id
    b.delete_button.click()
    assert v.memories.count() == 3 and m["freeze"].id not in [x.id for x in b.results]
    other = MemoryBrowser(syn.open_vault(tmp_path, clock=clock))
    assert m["freeze"].id not in [x.id for x in other.results]


def test_memory_browser_on_agent_vault_is_read_only(v: syn.Vault) -> None:
    _memories(v)
    b = MemoryBrowser(v.as_agent())
    assert b.verify_button.disabled and b.delete_button.disabled
    assert len(b.results) == 4


# -- GateExplorer ------------------------------------------------------------------------------------------------
def test_gate_explorer_shows_scores_bars_and_text(v: syn.Vault) -> None:
    m = _memories(v)
    g = GateExplorer(v)
    g.query.value = "how do we run migrations"
    r = g.recall
    assert [i.id for i in r.items] == [m["mig"].id]
    assert m["mig"].id in g.table.value and "kept" in g.table.value and "floor 0.3" in g.table.value
    assert "alembic upgrade head" in g.text.value
    # no session: running it again shows the same recall (nothing marked as seen)
    again = g.run()
    assert again.text == r.text and not again.nothing_new


def test_gate_explorer_empty_query_and_banner(v: syn.Vault) -> None:
    les = _lesson(v)
    v.lessons.approve(les.id, text="Keep the cache in process.")
    g = GateExplorer(v)
    g.run_button.click()
    assert "type a query first" in g.message.value and g.recall is None
    g.run("something unrelated entirely")
    assert "APPROVED SYSTEM MEMORY" in g.text.value and "Keep the cache in process." in g.text.value
