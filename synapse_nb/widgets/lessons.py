"""LessonReview: the human gate for lessons learnt from reverted changes."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from synapse_nb.errors import SynapseError
from synapse_nb.models import Lesson
from synapse_nb.widgets._common import close_tree, esc, message_html, require_human, table_html

__all__ = ["LessonCard", "LessonReview"]


def _commit_line(c: dict[str, Any] | None) -> str:
    if not c:
        return ""
    sha = esc(str(c.get("sha", ""))[:12])
    return f"<code>{sha}</code> {esc(c.get('subject', ''))}"


def lesson_html(les: Lesson) -> str:
    """What was reverted (commit, subject, files, diff stat) and any proposed analysis, as HTML."""
    parts = [f"<b>{esc(les.summary)}</b> <code>{esc(les.id)}</code> "
             f"<small>[{esc(les.status)}{', branch ' + esc(les.branch) if les.branch else ''}]</small>"]
    if les.revert_commit:
        parts.append(f"<div>revert: {_commit_line(les.revert_commit)}</div>")
    for c in les.reverted_commits:
        parts.append(f"<div>reverted: {_commit_line(c)}</div>")
    if les.diffstat:
        rows = [[f"<code>{esc(p)}</code>", "-" if a is None else f"+{a}", "-" if d is None else f"&minus;{d}"]
                for p, a, d in les.diffstat]
        parts.append(table_html(["file", "added", "deleted"], rows))
    elif les.files_affected:
        parts.append("<div>files: " + ", ".join(f"<code>{esc(f)}</code>" for f in les.files_affected) + "</div>")
    if les.analysis:
        parts.append(f"<div><i>analysis proposed by {esc(les.analysis_by or 'someone')}:</i> {esc(les.analysis)}</div>")
    if les.lesson_text and les.status != "pending":
        parts.append(f"<div><i>lesson text:</i> {esc(les.lesson_text)}</div>")
    if les.expires_at:
        word = "expired" if les.status == "expired" else "in force until"
        parts.append(f"<div><small>{word} {esc(les.expires_at[:19])} UTC</small></div>")
    return "".join(parts)


class LessonCard(widgets.VBox):
    """One lesson: what was reverted, an editable lesson text, and the buttons for its state.

    Attributes
    ----------
    lesson : the Lesson as read when the card was drawn.
    text : Textarea with the lesson wording to approve (prefilled with the analysis, else the summary).
    approve_button, reject_button : for a pending lesson (``None`` otherwise).
    reapprove_button : for an expired lesson (``None`` otherwise).
    """

    def __init__(self, lesson: Lesson, review: LessonReview) -> None:
        self.lesson = lesson
        self.info = widgets.HTML(value=lesson_html(lesson))
        prefill = lesson.lesson_text if lesson.status == "expired" else None
        self.text = widgets.Textarea(value=prefill or lesson.analysis or lesson.summary,
                                     description="Lesson", layout=widgets.Layout(width="95%", height="4em"))
        self.approve_button: widgets.Button | None = None
        self.reject_button: widgets.Button | None = None
        self.reapprove_button: widgets.Button | None = None
        buttons: list[widgets.Widget] = []
        if lesson.status == "pending":
            self.approve_button = widgets.Button(description="Approve", button_style="success", icon="check",
                                                 tooltip="Approve with the text above: it heads every recall")
            self.reject_button = widgets.Button(description="Reject", button_style="danger", icon="times",
                                                tooltip="Reject: the lesson is deleted")
            self.approve_button.on_click(lambda _b: review.approve(lesson.id, self.text.value))
            self.reject_button.on_click(lambda _b: review.reject(lesson.id))
            buttons = [self.approve_button, self.reject_button]
        elif lesson.status == "expired":
            self.reapprove_button = widgets.Button(description="Re-approve", button_style="warning", icon="repeat",
                                                   tooltip="Put the lesson back in force for another period")
            self.reapprove_button.on_click(lambda _b: review.approve(lesson.id, self.text.value))
            buttons = [self.reapprove_button]
        children: list[widgets.Widget] = [self.info]
        if buttons:
            children += [self.text, widgets.HBox(buttons)]
        super().__init__(children=children, layout=widgets.Layout(border="1px solid #ddd", padding="6px",
                                                                   margin="4px 0"))


class LessonReview(widgets.VBox):
    """Review lessons from reverts: Approve / Reject pending ones, Re-approve expired ones.

    The store is the source of truth: every action goes through ``vault.lessons`` (approval is
    exactly ``vault.lessons.approve(id, text=...)``) and the list is re-read afterwards; Refresh
    re-reads it too, so a second widget on the same vault sees changes made elsewhere.

    Parameters
    ----------
    vault : a vault opened as the user (``actor="user"``); an agent vault is refused with
        :class:`~synapse_nb.errors.PermissionDeniedError`: widgets act as the human.

    Attributes
    ----------
    cards : dict lesson id -> :class:`LessonCard` for the pending and expired lessons on screen.
    message : HTML widget with the result of the last action (green) or why it was refused (red).
    refresh_button : re-reads the store.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> les = v.lessons.create("Reverted: retry loop in the uploader", files=["upload.py"])
    >>> w = LessonReview(v)
    >>> w.cards[les.id].reject_button.click()
    >>> les.id in w.cards, len(v.lessons.pending())
    (False, 0)
    """

    def __init__(self, vault: Any) -> None:
        require_human(vault, "LessonReview")
        self.vault = vault
        self.cards: dict[str, LessonCard] = {}
        self.header = widgets.HTML()
        self.message = widgets.HTML()
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh",
                                             tooltip="Re-read the lessons from the vault")
        self.refresh_button.on_click(lambda _b: self.refresh(clear_message=True))
        self.approved_html = widgets.HTML()
        self._top = widgets.HBox([self.header, self.refresh_button])
        self._pending_title = widgets.HTML("<b>Pending: approve with your wording, or reject</b>")
        self._no_pending = widgets.HTML("<i>no pending lessons</i>")
        self._expired_title = widgets.HTML("<b>Expired: re-approve to put back in force</b>")
        super().__init__()
        self.refresh()

    # -- actions (the buttons call these) -----------------------------------------------------------------
    def approve(self, lesson_id: str, text: str | None = None) -> Lesson | None:
        """Approve (or re-approve) a lesson with ``text``; shows the outcome and re-renders."""
        try:
            les = self.vault.lessons.approve(lesson_id, text=text)  # a blank text is refused, never replaced
        except SynapseError as exc:
            self._say(f"not approved: {exc}", error=True)
            return None
        self._say(f"approved {les.id}: in force until {(les.expires_at or '')[:19]} UTC")
        return les

    def reject(self, lesson_id: str) -> Lesson | None:
        """Reject (delete) a pending lesson; shows the outcome and re-renders."""
        try:
            les = self.vault.lessons.reject(lesson_id)
        except SynapseError as exc:
            self._say(f"not rejected: {exc}", error=True)
            return None
        self._say(f"rejected {les.id}: deleted")
        return les

    def _say(self, text: str, *, error: bool = False) -> None:
        self.refresh()
        self.message.value = message_html(text, error=error)

    # -- rendering ------------------------------------------------------------------------------------------
    def refresh(self, *, clear_message: bool = False) -> None:
        """Re-read pending, expired and approved lessons from the vault and redraw."""
        if clear_message:
            self.message.value = ""
        try:
            pending = list(self.vault.lessons.pending())
            expired = list(self.vault.lessons.expired())
            approved = list(self.vault.lessons.approved())
        except SynapseError as exc:
            self.message.value = message_html(f"cannot read lessons: {exc}", error=True)
            return
        old = self.cards
        self.cards = {les.id: LessonCard(les, self) for les in [*pending, *expired]}
        for card in old.values():
            close_tree(card)
        self.header.value = (f"<b>Lessons from reverts</b>: {len(pending)} pending, {len(expired)} expired, "
                             f"{len(approved)} approved and in force")
        rows = [[f"<code>{esc(a.id)}</code>", esc(a.lesson_text or a.summary), esc((a.expires_at or "")[:19])]
                for a in approved]
        self.approved_html.value = ("<b>Approved (head every recall)</b>"
                                    + table_html(["id", "lesson", "until (UTC)"], rows, empty="none approved"))
        children: list[widgets.Widget] = [self._top, self.message]
        if pending:
            children.append(self._pending_title)
            children += [self.cards[x.id] for x in pending]
        else:
            children.append(self._no_pending)
        if expired:
            children.append(self._expired_title)
            children += [self.cards[x.id] for x in expired]
        children.append(self.approved_html)
        self.children = tuple(children)

    @property
    def pending_ids(self) -> list[str]:
        """Ids of the pending lessons on screen, in display order."""
        return [i for i, c in self.cards.items() if c.lesson.status == "pending"]

    @property
    def expired_ids(self) -> list[str]:
        """Ids of the expired lessons on screen, in display order."""
        return [i for i, c in self.cards.items() if c.lesson.status == "expired"]
