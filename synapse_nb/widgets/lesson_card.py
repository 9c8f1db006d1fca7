"""One lesson in LessonReview's detail pane: what was reverted, the change itself, who wrote each text, the wording
to approve, how long it stays in force, and its buttons."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

import ipywidgets as widgets

from synapse_nb.borrowed import ELSEWHERE_BY, ELSEWHERE_SHORT
from synapse_nb.displays import mark_html
from synapse_nb.errors import SynapseError
from synapse_nb.gitscope import show_commit
from synapse_nb.models import Lesson
from synapse_nb.provenance import inline, label_text, listed_names
from synapse_nb.render import BORDER, MUTED, code, fmt_time, note_html, plural
from synapse_nb.widgets._common import Confirm, block, button, esc, table_html

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import Vault

__all__ = ["DIFF_TITLE", "DURATIONS", "MAX_DIFF_COMMITS", "LessonCard", "Review", "diff_html", "lesson_html",
           "lesson_title", "wording_by"]

class Review(Protocol):
    """What a card asks of the review that holds it (:class:`~synapse_nb.widgets.lessons.LessonReview`): the vault,
    which approved lessons await a local approval, and the actions its buttons take."""

    vault: Vault
    awaiting_ids: set[str]

    def approve(self, lesson_id: str, text: str | None = None, expiry_days: int | None = None) -> Lesson | None: ...

    def approve_agent_wording(self, lesson_id: str, expiry_days: int | None = None, *,
                              seen: str) -> Lesson | None: ...

    def approve_elsewhere_wording(self, lesson_id: str, expiry_days: int | None = None, *,
                                  seen: str) -> Lesson | None: ...

    def reject(self, lesson_id: str) -> Lesson | None: ...

    def withdraw(self, lesson_id: str) -> Lesson | None: ...


#: Label of the button that shows the reverted change.
DIFF_TITLE = "Show the reverted change (git show --stat and patch)"
#: Reverted commits shown in a card's diff section at most (a revert of many commits lists the rest).
MAX_DIFF_COMMITS = 3
#: The durations offered for an approval, in days (the vault's ``lesson_expiry_days`` is added when not here).
DURATIONS = (1, 3, 7, 14, 30, 90, 365)


def _commit_line(c: dict[str, Any] | None) -> str:
    if not c:
        return ""
    return f"{code(inline(c.get('sha', ''))[:12])} {esc(inline(c.get('subject', '')))}"


def lesson_title(les: Lesson) -> str:
    """What a lesson is about in a line: ``Reverted “Use Redis for the cache” on main`` (the reverted commits'
    subjects and the branch; the summary of a lesson made by hand)."""
    subjects = [inline(c.get("subject") or str(c.get("sha", ""))[:7], 80) for c in les.reverted_commits[:2]]
    if not subjects:
        return inline(les.summary, 160)
    more = f" and {len(les.reverted_commits) - 2} more" if len(les.reverted_commits) > 2 else ""
    return ("Reverted " + " and ".join(f"“{x}”" for x in subjects) + more
            + (f" on {inline(les.branch)}" if les.branch else ""))


def wording_by(les: Lesson, elsewhere: bool = False, *, short: bool = False) -> str:
    """Who wrote the wording a lesson heads recalls with (approved), or would be approved with (otherwise);
    ``elsewhere``: a borrowed vault's lesson awaiting local approval, whose wording nobody here approved
    (:data:`synapse_nb.borrowed.ELSEWHERE_BY`; ``short``: for a table cell)."""
    if elsewhere:
        return ELSEWHERE_SHORT if short else ELSEWHERE_BY
    if les.lesson_text is not None:
        by = les.wording_by or "user"
        return {"user": "you", "agent": "an agent", "git": "the revert scan"}.get(by, by)
    if les.analysis:
        return "you (analysis)" if les.analysis_by == "user" else "an agent (analysis)"
    return "an agent" if les.source == "agent" else "the revert scan"


def lesson_html(les: Lesson, backing: str | None = None, elsewhere: bool = False) -> str:
    """What was reverted (commit, subject, files, the reverted change's line counts), who created the lesson and what
    backs it (``backing``: :meth:`synapse_nb.kinds.lessons.Lessons.backing`), and who wrote each text, as HTML. An
    agent's text is quoted and marked as such; so is a wording approved elsewhere (``elsewhere``)."""
    state = esc(les.status) + (f", branch {esc(label_text(les.branch))}" if les.branch else ", every branch")
    parts = [f"<div><b>{esc(lesson_title(les))}</b> {mark_html(les)}</div>",
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
        # stored as the revert commit's counts (it deletes what the change added): shown as the reverted change's,
        # the same numbers as the diff below
        rows = [[code(inline(p, 300)), "-" if d is None else f"+{d}", "-" if a is None else f"&minus;{a}"]
                for p, a, d in les.diffstat]
        parts.append(f"<div style='color:{MUTED}'>lines the reverted change added and removed "
                     "(as in its diff):</div>")
        parts.append(table_html(["file", "added", "removed"], rows, align="lrr", wrap=[True, False, False]))
    elif les.files_affected:
        parts.append(f"<div>files: {esc(listed_names(les.files_affected))}</div>")
    if les.analysis:
        agent = les.analysis_by != "user"
        who = "an agent (no human has checked it)" if agent else "a human"
        cls = "synapse-quote synapse-agent synapse-analysis" if agent else "synapse-quote synapse-analysis"
        parts.append(f"<div class='{cls}'><i>analysis written by {who}:</i> {esc(inline(les.analysis))}</div>")
    if les.source == "agent" and not les.analysis and not les.lesson_text:  # the wording to approve: in full
        parts.append("<div class='synapse-quote synapse-agent synapse-summary'><i>summary written by an agent (no "
                     f"human has checked it):</i> {esc(inline(les.summary))}</div>")
    if les.lesson_text:
        agent = les.wording_by == "agent" or elsewhere
        cls = "synapse-quote synapse-agent" if agent else "synapse-quote"
        label = "lesson not in force here" if elsewhere else "lesson in force" if les.status == "approved" else \
            "lesson text"
        by = f"wording {wording_by(les, True)}" if elsewhere else f"wording by {wording_by(les)}"
        parts.append(f"<div class='{cls}'><i>{label} ({esc(by)}):</i> "
                     f"{esc(inline(les.lesson_text))}</div>")
    if les.expires_at:
        word = "expired" if les.status == "expired" else "approved elsewhere until" if elsewhere else "in force until"
        parts.append(f"<div><b>{word} {fmt_time(les.expires_at)}</b></div>")
    return block("".join(parts))


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
        parts.append(f"<div><b>{code(d.sha[:12])} {esc(inline(d.subject))}</b></div>"
                     f"<div class='synapse-diff' style='{box}'>{_patch_lines_html(d.stat)}"
                     f"<div>&nbsp;</div>{_patch_lines_html(d.patch)}{tail}</div>")
    if len(shas) > MAX_DIFF_COMMITS:
        parts.append(note_html(f"and {plural(len(shas) - MAX_DIFF_COMMITS, 'more reverted commit')}"))
    return block("".join(parts))


def _days(n: int) -> str:
    return plural(n, "day")


class LessonCard(widgets.VBox):
    """One lesson in the detail pane: what was reverted, the change itself (behind a button), the lesson text, the
    duration of an approval (chosen before approving, its end date shown), and its buttons.

    A pending lesson is approved only with text a human chose: the box starts empty and Approve stays disabled
    until you write the lesson. When the proposed wording is an agent's (its analysis, or the summary of a lesson
    an agent created), it is shown above, marked as an agent's, and a separate button, "Approve the agent's
    wording", approves it as it is: an explicit choice, never the default. Reject asks first. An approved lesson
    can be withdrawn (asks first): it stops heading recalls and is pending again.

    Attributes
    ----------
    lesson : the Lesson as read when the card was drawn.
    info : HTML of what was reverted; diff : ToggleButton that shows the reverted change (read from git the first
        time it is shown); diff_html : the HTML of the change (hidden until then).
    text : Textarea with the lesson wording to approve (``None`` for a lesson in force).
    duration : Dropdown of days an approval stays in force (the vault's ``lesson_expiry_days`` first);
        until : HTML saying when an approval made now would end.
    approve_button, reject_button : for a pending lesson (``None`` otherwise).
    approve_agent_button : "Approve the agent's wording", when the proposed wording is an agent's (else ``None``).
    approve_elsewhere_button : "Approve the wording approved elsewhere", for a borrowed vault's lesson awaiting local
        approval (its box starts empty: that wording is not the person's; else ``None``).
    reapprove_button : for an expired lesson, or one approved elsewhere (``None`` otherwise).
    withdraw_button : for an approved lesson in force (``None`` otherwise).
    confirm : the confirm step of Reject and Withdraw.
    """

    def __init__(self, lesson: Lesson, review: Review) -> None:
        self.lesson = lesson
        self._review = review
        vault = review.vault
        wording, by = vault.lessons.proposed_wording(lesson)
        try:
            backing = vault.lessons.backing(lesson)
        except SynapseError:
            backing = None
        elsewhere = lesson.status == "approved" and lesson.id in review.awaiting_ids
        self.info = widgets.HTML(value=lesson_html(lesson, backing, elsewhere))
        self.diff = widgets.ToggleButton(value=False, description=DIFF_TITLE, icon="code",
                                         tooltip="git show of the commit the revert undid",
                                         layout=widgets.Layout(width="auto"))
        self.diff_html = widgets.HTML(value=note_html("loading the change from git…"),
                                      layout=widgets.Layout(display="none"))
        self._diff_loaded = False
        self.diff.observe(self._toggle_diff, names="value")
        in_force = lesson.status == "approved" and not elsewhere
        self.text: widgets.Textarea | None = None
        self.approve_button: widgets.Button | None = None
        self.approve_agent_button: widgets.Button | None = None
        self.approve_elsewhere_button: widgets.Button | None = None
        self.reject_button: widgets.Button | None = None
        self.reapprove_button: widgets.Button | None = None
        self.withdraw_button: widgets.Button | None = None
        self.confirm = Confirm()
        default = vault.lessons.expiry_days
        days = sorted({*DURATIONS, default})
        self.duration = widgets.Dropdown(
            options=[(f"{_days(d)} (the vault's default)" if d == default else _days(d), d) for d in days],
            value=default, description="In force for", style={"description_width": "initial"},
            layout=widgets.Layout(width="auto"))
        self.until = widgets.HTML()
        buttons: list[widgets.Widget] = []
        children: list[widgets.Widget] = [self.info, self.diff, self.diff_html]
        if in_force:
            borrowed = vault.borrowed is not None
            self.withdraw_button = button(
                "Withdraw approval…", "undo", "a borrowed vault's approval is withdrawn in its own checkout" if borrowed
                else "It stops heading recalls now and is pending again (asks first)", style="warning",
                disabled=borrowed)
            self.withdraw_button.on_click(lambda _b: self.ask_withdraw())
            children += [widgets.HBox([self.withdraw_button]), self.confirm]
        else:
            # a wording approved elsewhere is not the person's: their box starts empty (review 62)
            prefill = lesson.lesson_text if lesson.lesson_text and by != "agent" and not elsewhere else ""
            self.text = widgets.Textarea(
                value=prefill, description="Lesson", layout=widgets.Layout(width="100%", height="4.5em"),
                placeholder="your wording: what should be done differently next time")
            if lesson.status == "pending":
                self.approve_button = button("Approve", "check", "", style="success")
                self.reject_button = button("Reject…", "times", "Reject: the lesson is deleted (asks first)",
                                            style="danger")
                self.approve_button.on_click(lambda _b: review.approve(lesson.id, self._text(), self.duration.value))
                self.reject_button.on_click(lambda _b: self.ask_reject())
                buttons = [self.approve_button, self.reject_button]
            else:  # expired, or a borrowed vault's lesson approved elsewhere: approve it (again) here
                word = "Re-approve" if lesson.status == "expired" else "Approve here"
                self.reapprove_button = button(word, "repeat", "", style="success")
                self.reapprove_button.on_click(lambda _b: review.approve(lesson.id, self._text(),
                                                                         self.duration.value))
                buttons = [self.reapprove_button]

            def as_shown(label: str, whose: str, approve: Callable[..., Any]) -> widgets.Button:
                """The button that approves the wording shown, not the person's own, bound to it (``seen``)."""
                b = button(label, "check-square-o", f"Approve {whose}, exactly as shown above: "
                           f"“{inline(wording, 200)}”", style="warning")
                b.on_click(lambda _b: approve(lesson.id, self.duration.value, seen=wording))
                buttons.insert(1, b)
                return b

            if elsewhere:
                self.approve_elsewhere_button = as_shown("Approve the wording approved elsewhere",
                                                         f"here the wording {ELSEWHERE_BY}",
                                                         review.approve_elsewhere_wording)
            elif by == "agent":
                self.approve_agent_button = as_shown("Approve the agent's wording", "the wording an agent wrote",
                                                     review.approve_agent_wording)
            self.text.observe(lambda _c: self._enable(), names="value")
            row = widgets.HBox(buttons)
            row.add_class("synapse-actions")
            children += [self.text, widgets.HBox([self.duration, self.until], layout=widgets.Layout(
                align_items="center", flex_flow="row wrap")), row, self.confirm]
        self.duration.observe(lambda _c: self._enable(), names="value")
        self._enable()
        super().__init__(children=children)
        self.add_class("synapse-lesson-card")

    def _text(self) -> str:
        return self.text.value if self.text is not None else ""

    def _enable(self) -> None:
        """Say how long an approval lasts before it is made, and keep Approve waiting for text."""
        days = int(self.duration.value)
        until = self._review.vault.now() + timedelta(days=days)
        stamp = fmt_time(until.strftime("%Y-%m-%dT%H:%M:%S.000000Z"))
        self.until.value = block(f"<span class='synapse-until'>approved now, it heads every recall until "
                                 f"<b>{esc(stamp)}</b></span>")
        empty = not self._text().strip()
        for b, verb in ((self.approve_button, "Approve"), (self.reapprove_button, None)):
            if b is None:
                continue
            word = verb or ("Re-approve" if self.lesson.status == "expired" else "Approve here")
            b.description = f"{word} for {_days(days)}"
            b.disabled = empty
            b.tooltip = ("write the lesson first: what should be done differently next time" if empty
                         else f"Approve with the text above: it heads every recall until {stamp}")
        if self.approve_agent_button is not None:
            self.approve_agent_button.description = f"Approve the agent's wording for {_days(days)}"
        if self.approve_elsewhere_button is not None:
            self.approve_elsewhere_button.description = f"Approve the wording approved elsewhere for {_days(days)}"

    def _toggle_diff(self, change: dict[str, Any]) -> None:
        shown = bool(change["new"])
        self.diff_html.layout.display = "block" if shown else "none"
        self.diff.description = DIFF_TITLE.replace("Show", "Hide") if shown else DIFF_TITLE
        if shown and not self._diff_loaded:
            self._diff_loaded = True
            self.diff_html.value = diff_html(self._review.vault, self.lesson)

    def ask_reject(self) -> None:
        """First step of Reject: ask to confirm, naming the lesson by what was reverted."""
        self.confirm.ask(f"Reject the lesson {lesson_title(self.lesson)}? It is deleted; this cannot be undone.",
                         "Reject", lambda: self._review.reject(self.lesson.id))

    def ask_withdraw(self) -> None:
        """First step of Withdraw: ask to confirm."""
        self.confirm.ask(f"Withdraw the approval of “{inline(self.lesson.text, 90)}”? It stops heading recalls now "
                         "and is pending again.", "Withdraw", lambda: self._review.withdraw(self.lesson.id),
                         style="warning")
