"""LessonReview: the human gate for lessons learnt from reverted changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.errors import SynapseError
from synapse_nb.kinds.lesson_approvers import Approval, approvals
from synapse_nb.models import Lesson
from synapse_nb.provenance import inline
from synapse_nb.render import (
    MUTED,
    fmt_time,
    plural,
    shown_id,  # (review 41: an id as a reader shows it)
)
from synapse_nb.widgets._common import FamilyWidget, block, button, close_tree, esc, live_vault, require_human
from synapse_nb.widgets.lesson_card import (
    DIFF_TITLE,
    LessonCard,
    diff_html,
    lesson_html,
    lesson_title,
    wording_by,
)
from synapse_nb.widgets.table import RecordTable

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import ReadableVault

__all__ = ["ANY_STATUS", "COLUMNS", "DIFF_TITLE", "LessonCard", "LessonReview", "diff_html", "lesson_html"]

#: The Show filter's "every lesson" choice.
ANY_STATUS = "(any)"
#: The Show filter: what each choice keeps.
_SHOW = [(ANY_STATUS, ANY_STATUS), ("pending", "pending"), ("awaiting approval here", "awaiting"),
         ("approved, in force", "approved"), ("expired", "expired")]
_SHOW_LABEL = [(value, label) for label, value in _SHOW]
#: Pending first (they wait for a human), then lessons approved elsewhere, expired ones, those in force.
_ORDER = {"pending": 0, "awaiting": 1, "expired": 2, "approved": 3}

#: The lessons table: what state, the lesson's wording (or what was reverted), who wrote that wording, who approved
#: it (s21: kinds.lesson_approvers; a team vault's login), dates.
COLUMNS = [
    {"key": "status", "label": "status", "width": 11, "narrow": 13},
    {"key": "lesson", "label": "lesson", "width": 38, "narrow": 50, "clip": True,
     "help": "the approved wording, else what was reverted"},
    {"key": "by", "label": "wording by", "width": 14, "narrow": 19, "badge": True,
     "help": "who wrote the wording it heads recalls with (or would be approved with)"},
    {"key": "approver", "label": "approved by", "width": 12, "narrow": 0, "clip": True,
     "help": "who approved it (a team vault's login; a local vault's \"a person\"), and when: the row's tooltip"},
    {"key": "found", "label": "found", "width": 12, "narrow": 0, "time": True},
    {"key": "until", "label": "in force until", "width": 13, "narrow": 18, "time": True},
]
#: Below this width (pixels) the table leaves "approved by" (the row's tooltip says it) and "found" out (the detail
#: pane says it).
WIDE = 1000


class LessonReview(FamilyWidget):
    """Review lessons from reverts: one table of every lesson (pending first), the selected one in full beside it:
    Approve (with your wording, for a duration you choose first) or Reject pending ones, Re-approve expired ones,
    Withdraw an approval; Scan looks for new reverts in git.

    The store is the source of truth: every action goes through ``vault.lessons`` (approval is exactly
    ``vault.lessons.approve(id, text=..., expiry_days=...)``; Scan is ``vault.lessons.scan()``) and the list is
    re-read afterwards. The review refreshes itself when the vault changes (after every notebook cell); Refresh
    does it by hand. The outcome of an action shows under the buttons that acted, and the lesson stays selected.

    Parameters
    ----------
    vault : a vault opened as the user (``actor="user"``); an agent vault is refused with
        :class:`~synapse_nb.errors.PermissionDeniedError` (one line in a notebook): widgets act as the human.

    Attributes
    ----------
    cards : dict lesson id -> :class:`LessonCard` for every lesson in the table.
    table : the lessons (:class:`~synapse_nb.widgets.table.RecordTable`); ``table.selected`` is the selected id.
    show : the Show filter (``"(any)"``, pending, awaiting, approved, expired).
    message : HTML of the outcome of the last action (green mark) or why it was refused (red), under the buttons.
    scan_button, scan_note : Scan and what it found; refresh_button : re-reads the store.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> les = v.lessons.create("Reverted: retry loop in the uploader", files=["upload.py"])
    >>> w = LessonReview(v)
    >>> card = w.cards[les.id]
    >>> card.approve_button.disabled            # nothing to approve until you write the lesson
    True
    >>> card.reject_button.click()              # asks first ...
    >>> card.confirm.yes_button.click()         # ... and deletes on confirmation
    >>> les.id in w.cards, len(v.lessons.pending())
    (False, 0)
    """

    terminal = "synapse-nb lessons review"

    def __init__(self, vault: ReadableVault) -> None:
        live = live_vault(vault, "LessonReview")
        require_human(live, "LessonReview")
        super().__init__(live, "Lessons from reverts")
        self.cards: dict[str, LessonCard] = {}
        self.lessons: dict[str, Lesson] = {}
        self.awaiting_ids: set[str] = set()
        #: who approved each approved lesson, and when (:func:`~synapse_nb.kinds.lesson_approvers.approvals`)
        self.approvals: dict[str, Approval] = {}
        self._keys: dict[str, tuple[str, str]] = {}
        git = self.vault.repo is not None
        self.scan_button = button("Scan git for reverts", "search",
                                  "Look for reverts made since the last scan: each new one becomes a pending lesson"
                                  if git else f"{self.vault.project_dir} is not a git repository: nothing to scan",
                                  disabled=not git)
        self.scan_note = widgets.HTML()
        self.scan_button.on_click(lambda _b: self.scan())
        self.show = widgets.Dropdown(options=_SHOW, value=ANY_STATUS, description="Show",
                                     style={"description_width": "4.6em"})
        self.show.observe(lambda _c: self._draw(), names="value")
        self.table = RecordTable(columns=COLUMNS, label="lessons", empty="no lessons yet", wide=WIDE)
        self.table.observe(lambda _c: self._show_selected(), names="selected")
        self.frame(buttons=[self.scan_note, self.scan_button], filters=[self.show], main=[self.table])
        self.add_class("synapse-lesson-review")
        self.refresh()

    # -- actions (the buttons call these) -----------------------------------------------------------------
    def approve(self, lesson_id: str, text: str | None = None, expiry_days: int | None = None) -> Lesson | None:
        """Approve (or re-approve) a lesson with ``text`` (required) for ``expiry_days`` (default: the vault's);
        shows the outcome under the lesson's buttons; the lesson stays selected."""
        if not (text or "").strip():
            self.say("not approved: write the lesson first (what should be done differently next time)", error=True)
            return None
        return self._approved(lesson_id, lambda: self.vault.lessons.approve(lesson_id, text=text,
                                                                            expiry_days=expiry_days),
                              "; it heads every recall from now (Withdraw takes it back)")

    def approve_agent_wording(self, lesson_id: str, expiry_days: int | None = None, *,
                              seen: str) -> Lesson | None:
        """Approve (or re-approve) a lesson with the wording an agent proposed, as it is: the explicit choice the
        "Approve the agent's wording" button makes (``vault.lessons.approve(id, accept_agent_text=True)``). The
        button passes the wording its card shows as ``seen``: if an agent replaced it since, nothing is approved
        and the card says so (refresh to read the new wording)."""
        return self._approved(lesson_id, lambda: self.vault.lessons.approve(
            lesson_id, accept_agent_text=True, expiry_days=expiry_days, seen=seen), how=" with the agent's wording")

    def approve_elsewhere_wording(self, lesson_id: str, expiry_days: int | None = None, *,
                                  seen: str) -> Lesson | None:
        """Approve here, as it is, the wording of a borrowed vault's lesson approved elsewhere (awaiting local
        approval): the explicit choice the "Approve the wording approved elsewhere" button makes, bound to the
        wording its card shows (``seen``), as the agent-wording button is. That wording is not the person's own:
        the card's text box starts empty (review 62)."""
        def go() -> Lesson:  # an agent's wording approved elsewhere: the button is the explicit choice for it too
            agent = self.vault.lessons.proposed_wording(self.vault.lessons.get(lesson_id))[1] == "agent"
            return self.vault.lessons.approve(lesson_id, expiry_days=expiry_days, seen=seen, accept_agent_text=agent)

        return self._approved(lesson_id, go, how=" here with the wording approved elsewhere", where=" here")

    def _approved(self, lesson_id: str, approve: Callable[[], Lesson], then: str = "", *, how: str = "",
                  where: str = "") -> Lesson | None:
        """Run one of the approvals above and say its outcome under the lesson's buttons (the lesson stays
        selected): what was approved ``how``, in force ``where`` until when, and ``then``; or why not."""
        try:
            les = self.act(approve)
        except SynapseError as exc:
            self._after(lesson_id, f"not approved: {exc}", error=True)
            return None
        self._after(les.id, f"approved {shown_id(les.id)}{how}: in force{where} until {fmt_time(les.expires_at)}"
                            f"{then}")
        out: Lesson | None = les  # act() is typed Any
        return out

    def reject(self, lesson_id: str) -> Lesson | None:
        """Reject (delete) a pending lesson now; the next lesson is selected and the outcome shown under it (the
        Reject button asks first)."""
        ids = self.table.row_ids
        i = ids.index(lesson_id) if lesson_id in ids else len(ids)
        after = [*ids[i + 1:], *reversed(ids[:i])]  # the next row, else the one before
        nxt = after[0] if after else ""
        try:
            les = self.act(lambda: self.vault.lessons.reject(lesson_id))
        except SynapseError as exc:
            self._after(lesson_id, f"not rejected: {exc}", error=True)
            return None
        self._after(nxt, f"rejected {shown_id(les.id)} ({lesson_title(les)}): deleted")
        out: Lesson | None = les
        return out

    def withdraw(self, lesson_id: str) -> Lesson | None:
        """Withdraw the approval of a lesson in force: it is pending again (the Withdraw button asks first)."""
        try:
            les = self.act(lambda: self.vault.lessons.withdraw(lesson_id))
        except SynapseError as exc:
            self._after(lesson_id, f"not withdrawn: {exc}", error=True)
            return None
        self._after(les.id, f"withdrawn {shown_id(les.id)}: it no longer heads recalls and is pending again")
        out: Lesson | None = les
        return out

    def scan(self) -> list[Lesson]:
        """Look for new reverts in git (``vault.lessons.scan()``): each becomes a pending lesson, the first one is
        selected; the header says what was found."""
        try:
            scanned = self.act(self.vault.lessons.scan)
        except SynapseError as exc:
            self.scan_note.value = block(f"<span style='color:{MUTED}'>scan failed</span>")
            self.say(f"scan refused: {exc}", error=True)
            return []
        found = list(scanned)
        if not found:  # the note says why when there was nothing to read (no commit yet: review 68)
            note = getattr(scanned, "note", None)
            said = esc(note) if note else "no new reverts since the last scan"
            if getattr(scanned, "unread", 0):  # an agent's kernel: lessons it may not read, counted (review 90)
                said = esc(scanned.said())
            self.scan_note.value = block(f"<span style='color:{MUTED}'>{said}</span>")
            self.refresh()
            return []
        self.scan_note.value = block(f"<b>{plural(len(found), 'new revert')} found</b>")
        if self.show.value not in (ANY_STATUS, "pending"):
            self.show.value = ANY_STATUS
        names = ", ".join(lesson_title(x) for x in found[:3])
        self._after(found[0].id, f"scanned git: {plural(len(found), 'new pending lesson')}: {names}")
        return found

    def _after(self, select: str, text: str, *, error: bool = False) -> None:
        """Re-read the store, select ``select`` (the lesson acted on, or the next one), move the keyboard focus to
        its row (the button that had it may be gone) and say ``text`` under its buttons."""
        self.refresh()
        if select in self.table.row_ids:
            self.table.selected = select
        self._show_selected()
        self.say(text, error=error)
        self.table.focus()

    # -- rendering ------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read every lesson from the vault and redraw (a card whose lesson did not change is kept as it is,
        with any wording typed into it)."""
        try:
            pending = list(self.vault.lessons.pending())
            expired = list(self.vault.lessons.expired())
            awaiting = list(self.vault.lessons.awaiting_local())  # a borrowed vault's lessons approved elsewhere
            approved = [x for x in self.vault.lessons.approved() if x.id not in {a.id for a in awaiting}]
            self.approvals = approvals(self.vault, [*awaiting, *expired, *approved])
        except SynapseError as exc:
            self.say(f"cannot read lessons: {exc}", error=True)
            return
        self.awaiting_ids = {x.id for x in awaiting}
        lessons = [*pending, *awaiting, *expired, *approved]
        old, self.cards = self.cards, {}
        keys: dict[str, tuple[str, str]] = {}
        for les in lessons:
            key = (les.updated_at, self._state(les))
            card = old.pop(les.id, None)
            if card is None or self._keys.get(les.id) != key:
                if card is not None:
                    close_tree(card)
                card = LessonCard(les, self)
            self.cards[les.id] = card
            keys[les.id] = key
        for card in old.values():
            close_tree(card)
        self._keys = keys
        self.lessons = {x.id: x for x in lessons}
        counts = [f"{len(pending):,} pending", f"{len(expired):,} expired", f"{len(approved):,} approved in force"]
        if awaiting:
            counts.insert(1, f"{len(awaiting):,} awaiting your approval here")
        self.set_header(" · ".join(counts))
        self._draw()

    def _state(self, les: Lesson) -> str:
        return "awaiting" if les.id in self.awaiting_ids else les.status

    def _draw(self) -> None:
        show = self.show.value
        shown = sorted((x for x in self.lessons.values() if show == ANY_STATUS or self._state(x) == show),
                       key=lambda x: (_ORDER.get(self._state(x), 9), x.created_at, x.id))
        self.table.empty = ("no lessons yet: Scan looks for reverted commits in git" if show == ANY_STATUS
                            else f"no {dict(_SHOW_LABEL)[show]} lessons")
        self.table.rows = [self._row(x) for x in shown]
        if self.table.selected not in self.table.row_ids:
            first_pending = next((x.id for x in shown if self._state(x) == "pending"), None)
            self.table.selected = first_pending or (shown[0].id if shown else "")
        self._show_selected()

    def _row(self, les: Lesson) -> dict[str, Any]:
        state = self._state(les)
        by = wording_by(les, les.id in self.awaiting_ids, short=True)
        text = les.lesson_text if les.lesson_text and state != "pending" else lesson_title(les)
        approval = self.approvals.get(les.id)
        said = f" · {approval.line()}" if approval is not None else ""
        return {"id": les.id, "agent": by.startswith("an agent"), "muted": state == "expired",
                "title": f"{shown_id(les.id)} · {inline(text, 300)}{said}", "cells": {
                    "status": {"awaiting": "awaiting you"}.get(state, state), "lesson": inline(text, 240), "by": by,
                    "approver": inline(approval.by, 63) if approval is not None else "-",
                    "found": fmt_time(les.created_at),
                    "until": fmt_time(les.expires_at) if state in ("approved", "expired", "awaiting") else "-"}}

    def _show_selected(self) -> None:
        card = self.cards.get(self.table.selected)
        for other in self.cards.values():  # a question about another lesson never lingers
            if other is not card and other.confirm.pending:
                other.confirm.cancel()
        if self.detail.children[:1] != ((card,) if card is not None else ()):
            self.message.value = ""
        if card is None:
            hint = widgets.HTML(block(f"<div style='color:{MUTED};font-style:italic'>"
                                      + esc("no lesson selected: click a row of the table"
                                            if self.lessons else "no lessons: Scan looks for reverts in git")
                                      + "</div>"))
            self.detail.children = (hint, self.message)
        else:
            self.detail.children = (card, self.message)

    def select(self, lesson_id: str) -> None:
        """Select a lesson, as a click on its row does."""
        self.table.selected = lesson_id

    @property
    def pending_ids(self) -> list[str]:
        """Ids of the pending lessons, in table order."""
        return [i for i in self.table.row_ids if self._state(self.lessons[i]) == "pending"]

    @property
    def expired_ids(self) -> list[str]:
        """Ids of the expired lessons, in table order."""
        return [i for i in self.table.row_ids if self._state(self.lessons[i]) == "expired"]

    @property
    def approved_ids(self) -> list[str]:
        """Ids of the approved lessons in force, in table order."""
        return [i for i in self.table.row_ids if self._state(self.lessons[i]) == "approved"]
