"""LessonReview: the human gate for lessons learnt from reverted changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.errors import SynapseError
from synapse_nb.gitscope import show_commit
from synapse_nb.models import Lesson
from synapse_nb.provenance import inline
from synapse_nb.render import BORDER, MUTED, code, fmt_time, note_html, plural
from synapse_nb.widgets._common import (
    Confirm,
    block,
    close_tree,
    esc,
    live_vault,
    message_html,
    require_human,
    table_html,
)

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import ReadableVault, Vault

__all__ = ["DIFF_TITLE", "LessonCard", "LessonReview", "diff_html", "lesson_html"]

#: Title of the collapsed section holding the reverted change.
DIFF_TITLE = "Reverted change (git show --stat and patch)"
#: Reverted commits shown in a card's diff section at most (a revert of many commits lists the rest).
MAX_DIFF_COMMITS = 3


def _commit_line(c: dict[str, Any] | None) -> str:
    if not c:
        return ""
    return f"{code(str(c.get('sha', ''))[:12])} {esc(c.get('subject', ''))}"


def lesson_html(les: Lesson, backing: str | None = None) -> str:
    """What was reverted (commit, subject, files, diff stat), who created the lesson and what backs it
    (``backing``: :meth:`synapse_nb.kinds.lessons.Lessons.backing`), and who wrote each text, as HTML."""
    state = esc(les.status) + (f", branch {esc(les.branch)}" if les.branch else "")
    parts = [f"<div><b>{esc(inline(les.summary))}</b></div>",
             f"<div style='color:{MUTED}'>{code(les.id)} · {state} · found {fmt_time(les.created_at)}</div>"]
    if backing:
        warn = les.source == "agent" or "does not have" in backing or "reverts nothing" in backing
        weight = "font-weight:600" if warn else ""
        parts.append(f"<div class='synapse-lesson-origin' style='{weight}'>origin: {esc(backing)}</div>")
    if les.revert_commit:
        parts.append(f"<div>revert: {_commit_line(les.revert_commit)}</div>")
    for c in les.reverted_commits:
        parts.append(f"<div>reverted: {_commit_line(c)}</div>")
    if les.diffstat:
        rows = [[code(p), "-" if a is None else f"+{a}", "-" if d is None else f"&minus;{d}"]
                for p, a, d in les.diffstat]
        # these counts are the revert commit's (it deletes what the reverted change added); the collapsed diff
        # below shows the reverted change itself, so say whose numbers these are
        parts.append(f"<div style='color:{MUTED}'>lines the revert commit changed:</div>")
        parts.append(table_html(["file", "added", "deleted"], rows, align="lrr", wrap=[True, False, False]))
    elif les.files_affected:
        parts.append("<div>files: " + ", ".join(code(f) for f in les.files_affected) + "</div>")
    if les.analysis:
        who = "a human" if les.analysis_by == "user" else "an agent"
        parts.append(f"<div class='synapse-analysis'><i>analysis written by {who}:</i> {esc(les.analysis)}</div>")
    if les.lesson_text and les.status != "pending":
        parts.append(f"<div><i>lesson text ({esc(les.wording_by or 'user')}'s wording):</i> "
                     f"{esc(les.lesson_text)}</div>")
    if les.expires_at:
        word = "expired" if les.status == "expired" else "in force until"
        parts.append(f"<div style='color:{MUTED}'>{word} {fmt_time(les.expires_at)}</div>")
    return block("".join(parts))


def _wording(les: Lesson) -> str:
    """Who wrote an approved lesson's wording, for the approved table."""
    by = {"user": "a human", "agent": "an agent (approved as it was)", "git": "the revert scan"}.get(
        les.wording_by or "user", "a human")
    return by + ("; created by an agent" if les.source == "agent" else "")


_LINE_TINT = {"+": "rgba(46,160,67,0.18)", "-": "rgba(248,81,73,0.18)"}


def _patch_lines_html(text: str) -> str:
    out = []
    for line in text.splitlines():
        head = line[:1]
        if line.startswith(("+++", "---")) or head not in _LINE_TINT:
            style = f"color:{MUTED}" if line.startswith(("@@", "diff --git", "index ", "+++", "---")) else ""
        else:
            style = f"background:{_LINE_TINT[head]}"
        out.append(f"<div style='{style};white-space:pre-wrap;overflow-wrap:anywhere'>{esc(line) or '&nbsp;'}</div>")
    return "".join(out)


def diff_html(vault: Vault, les: Lesson) -> str:
    """The reverted change of a lesson as HTML: per reverted commit, its ``--stat`` and patch (capped).

    Reads git through :func:`synapse_nb.gitscope.show_commit`; outside git, or for a commit that is
    not in the repository, says so instead.
    """
    shas = [c["sha"] for c in les.reverted_commits if c.get("sha")] or (
        [les.revert_commit["sha"]] if les.revert_commit and les.revert_commit.get("sha") else [])
    if not shas:
        return note_html("this lesson names no commit, so there is no change to show")
    repo = vault.repo
    if repo is None:
        return note_html(f"{vault.project_dir} is not a git repository, so the change cannot be shown")
    parts = []
    for sha in shas[:MAX_DIFF_COMMITS]:
        try:
            d = show_commit(repo, sha)
        except SynapseError as exc:
            parts.append(note_html(f"commit {sha[:12]} cannot be shown: {exc}"))
            continue
        box = (f"padding:4px 8px;border:1px solid {BORDER};font-family:var(--jp-code-font-family, monospace);"
               "font-size:var(--jp-code-font-size, 12px);max-height:28em;overflow:auto")
        tail = (f"<div style='color:{MUTED};font-style:italic'>… {plural(d.omitted_lines, 'more line')} not shown "
                f"(run <code>git show {esc(d.sha[:12])}</code> to see the whole change)</div>" if d.truncated else "")
        parts.append(f"<div><b>{code(d.sha[:12])} {esc(d.subject)}</b></div>"
                     f"<div class='synapse-diff' style='{box}'>{_patch_lines_html(d.stat)}"
                     f"<div>&nbsp;</div>{_patch_lines_html(d.patch)}{tail}</div>")
    if len(shas) > MAX_DIFF_COMMITS:
        parts.append(note_html(f"and {plural(len(shas) - MAX_DIFF_COMMITS, 'more reverted commit')}"))
    return block("".join(parts))


class LessonCard(widgets.VBox):
    """One lesson: what was reverted, the change itself (collapsed), the lesson text and its buttons.

    A pending lesson is approved only with text a human chose: the box starts empty (the proposed wording shows
    as its placeholder) and Approve stays disabled until you write the lesson. When the proposed wording is an
    agent's (its analysis, or the summary of a lesson an agent created), a separate button, "Approve the agent's
    wording", approves it as it is: an explicit choice, never the default. Reject asks for a confirmation first.

    Attributes
    ----------
    lesson : the Lesson as read when the card was drawn.
    info : HTML of what was reverted; diff : Accordion (collapsed) whose section shows the reverted change,
        read from git the first time it is opened; diff_html : the HTML inside it.
    text : Textarea with the lesson wording to approve.
    approve_button, reject_button : for a pending lesson (``None`` otherwise).
    approve_agent_button : "Approve the agent's wording", when the proposed wording is an agent's (else ``None``).
    reapprove_button : for an expired lesson (``None`` otherwise).
    confirm : the confirm step of Reject.
    """

    def __init__(self, lesson: Lesson, review: LessonReview) -> None:
        self.lesson = lesson
        self._review = review
        wording, by = review.vault.lessons.proposed_wording(lesson)
        try:
            backing = review.vault.lessons.backing(lesson)
        except SynapseError:
            backing = None
        self.info = widgets.HTML(value=lesson_html(lesson, backing))
        self.diff_html = widgets.HTML(value=note_html("loading the change from git…"))
        self.diff = widgets.Accordion(children=[self.diff_html], titles=(DIFF_TITLE,), selected_index=None)
        self._diff_loaded = False
        self.diff.observe(self._open_diff, names="selected_index")
        # your wording: empty, except an expired (or borrowed, approved elsewhere) lesson's wording a human wrote
        prefill = lesson.lesson_text if lesson.status in ("expired", "approved") and by != "agent" else ""
        self.text = widgets.Textarea(value=prefill or "", placeholder=inline(wording, 300), description="Lesson",
                                     layout=widgets.Layout(width="95%", height="4.5em"))
        self.approve_button: widgets.Button | None = None
        self.approve_agent_button: widgets.Button | None = None
        self.reject_button: widgets.Button | None = None
        self.reapprove_button: widgets.Button | None = None
        self.confirm = Confirm()
        buttons: list[widgets.Widget] = []
        if lesson.status == "pending":
            self.approve_button = widgets.Button(description="Approve", button_style="success", icon="check",
                                                 tooltip="Approve with the text above: it heads every recall")
            self.reject_button = widgets.Button(description="Reject", button_style="danger", icon="times",
                                                tooltip="Reject: the lesson is deleted (asks first)")
            self.approve_button.on_click(lambda _b: review.approve(lesson.id, self.text.value))
            self.reject_button.on_click(lambda _b: self.ask_reject())
            buttons = [self.approve_button, self.reject_button]
        elif lesson.status == "expired":
            self.reapprove_button = widgets.Button(description="Re-approve", button_style="warning", icon="repeat",
                                                   tooltip="Put the lesson back in force for another period")
            self.reapprove_button.on_click(lambda _b: review.approve(lesson.id, self.text.value))
            buttons = [self.reapprove_button]
        elif lesson.status == "approved":  # a borrowed vault's lesson, approved elsewhere: approve it here
            self.reapprove_button = widgets.Button(description="Approve here", button_style="warning", icon="check",
                                                   tooltip="Put the lesson in force here (recorded in this checkout)")
            self.reapprove_button.on_click(lambda _b: review.approve(lesson.id, self.text.value))
            buttons = [self.reapprove_button]
        if buttons and by == "agent":
            self.approve_agent_button = widgets.Button(
                description="Approve the agent's wording", button_style="warning", icon="user-secret",
                layout=widgets.Layout(width="auto"),
                tooltip="Approve the wording an agent wrote, exactly as shown above (read it first)")
            self.approve_agent_button.on_click(lambda _b: review.approve_agent_wording(lesson.id))
            buttons.append(self.approve_agent_button)
        self.text.observe(lambda _c: self._enable(), names="value")
        self._enable()
        children: list[widgets.Widget] = [self.info, self.diff]
        if buttons:
            children += [self.text, widgets.HBox(buttons), self.confirm]
        super().__init__(children=children, layout=widgets.Layout(
            border=f"1px solid {BORDER}", padding="6px 8px", margin="6px 0"))
        self.add_class("synapse-lesson-card")

    def _enable(self) -> None:
        empty = not self.text.value.strip()
        for b, tip in ((self.approve_button, "Approve with the text above: it heads every recall"),
                       (self.reapprove_button, "Put the lesson back in force for another period")):
            if b is not None:
                b.disabled = empty
                b.tooltip = "write the lesson first: what should be done differently next time" if empty else tip

    def _open_diff(self, change: dict[str, Any]) -> None:
        if change["new"] is not None and not self._diff_loaded:
            self._diff_loaded = True
            self.diff_html.value = diff_html(self._review.vault, self.lesson)

    def ask_reject(self) -> None:
        """First step of Reject: ask to confirm."""
        self.confirm.ask(f"Reject {self.lesson.id}? The lesson is deleted; this cannot be undone.", "Reject",
                         lambda: self._review.reject(self.lesson.id))


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
    message : HTML widget with the result of the last action (green mark) or why it was refused (red).
    refresh_button : re-reads the store.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> les = v.lessons.create("Reverted: retry loop in the uploader", files=["upload.py"])
    >>> w = LessonReview(v)
    >>> card = w.cards[les.id]
    >>> card.approve_button.disabled            # no analysis: nothing to approve until you write it
    True
    >>> card.reject_button.click()              # asks first ...
    >>> card.confirm.yes_button.click()         # ... and deletes on confirmation
    >>> les.id in w.cards, len(v.lessons.pending())
    (False, 0)
    """

    def __init__(self, vault: ReadableVault) -> None:
        self.vault = live_vault(vault, "LessonReview")
        require_human(self.vault, "LessonReview")
        self.cards: dict[str, LessonCard] = {}
        self.header = widgets.HTML()
        self.message = widgets.HTML()
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh",
                                             tooltip="Re-read the lessons from the vault")
        self.refresh_button.on_click(lambda _b: self.refresh(clear_message=True))
        self.approved_html = widgets.HTML()
        self._top = widgets.HBox([self.header, self.refresh_button], layout=widgets.Layout(align_items="center"))
        self._pending_title = widgets.HTML(block("<b>Pending: approve with your wording, or reject</b>"))
        self._no_pending = widgets.HTML(note_html("no pending lessons"))
        self._expired_title = widgets.HTML(block("<b>Expired: re-approve to put back in force</b>"))
        super().__init__()
        self.add_class("synapse-lesson-review")
        self.refresh()

    # -- actions (the buttons call these) -----------------------------------------------------------------
    def approve(self, lesson_id: str, text: str | None = None) -> Lesson | None:
        """Approve (or re-approve) a lesson with ``text`` (required); shows the outcome and re-renders."""
        if not (text or "").strip():
            self.message.value = message_html(
                "not approved: write the lesson first (what should be done differently next time)", error=True)
            return None
        try:
            les = self.vault.lessons.approve(lesson_id, text=text)  # a blank text is refused, never replaced
        except SynapseError as exc:
            self._say(f"not approved: {exc}", error=True)
            return None
        self._say(f"approved {les.id}: in force until {fmt_time(les.expires_at)}")
        out: Lesson | None = les
        return out

    def approve_agent_wording(self, lesson_id: str) -> Lesson | None:
        """Approve (or re-approve) a lesson with the wording an agent proposed, as it is: the explicit choice the
        "Approve the agent's wording" button makes (``vault.lessons.approve(id, accept_agent_text=True)``)."""
        try:
            les = self.vault.lessons.approve(lesson_id, accept_agent_text=True)
        except SynapseError as exc:
            self._say(f"not approved: {exc}", error=True)
            return None
        self._say(f"approved {les.id} with the agent's wording: in force until {fmt_time(les.expires_at)}")
        out: Lesson | None = les
        return out

    def reject(self, lesson_id: str) -> Lesson | None:
        """Reject (delete) a pending lesson now; shows the outcome and re-renders (the Reject button asks first)."""
        try:
            les = self.vault.lessons.reject(lesson_id)
        except SynapseError as exc:
            self._say(f"not rejected: {exc}", error=True)
            return None
        self._say(f"rejected {les.id}: deleted")
        out: Lesson | None = les
        return out

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
            awaiting = list(self.vault.lessons.awaiting_local())  # a borrowed vault's lessons approved elsewhere
            approved = [x for x in self.vault.lessons.approved() if x.id not in {a.id for a in awaiting}]
        except SynapseError as exc:
            self.message.value = message_html(f"cannot read lessons: {exc}", error=True)
            return
        old = self.cards
        self.cards = {les.id: LessonCard(les, self) for les in [*pending, *awaiting, *expired]}
        for card in old.values():
            close_tree(card)
        self.header.value = block(f"<b>Lessons from reverts</b>: {len(pending):,} pending, {len(expired):,} expired, "
                                  f"{len(approved):,} approved and in force")
        rows = [[code(a.id), esc(a.lesson_text or a.summary), esc(_wording(a)), esc(fmt_time(a.expires_at))]
                for a in approved]
        self.approved_html.value = block(
            "<div><b>Approved (head every recall)</b></div>"
            + table_html(["id", "lesson", "wording by", "in force until"], rows, wrap=[False, True, False, False],
                         empty="none approved"))
        children: list[widgets.Widget] = [self._top, self.message]
        if pending:
            children.append(self._pending_title)
            children += [self.cards[x.id] for x in pending]
        else:
            children.append(self._no_pending)
        borrowed = self.vault.borrowed
        if awaiting and borrowed is not None:  # awaiting_local() is empty unless the vault is borrowed
            children.append(widgets.HTML(block(f"<b>Approved elsewhere, awaiting your approval</b>: "
                                               f"{esc(borrowed.line)}")))
            children += [self.cards[x.id] for x in awaiting]
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
