"""ChangeReview: the human's side of issue 30: agents' pending revisions (accept or reject) and the duplicate or
contradicting pairs the vault found on write (merge, keep both, supersede)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.changes import ALL_PAIRS, PROPOSED_MARK, UNREADABLE
from synapse_nb.differences import LEGEND, FieldChange, changes
from synapse_nb.errors import SynapseError
from synapse_nb.models import kind_of_id
from synapse_nb.provenance import inline, mark
from synapse_nb.render import ERR, MUTED, from_now, plural, pre_html, shown_id
from synapse_nb.widgets._common import FamilyWidget, block, button, esc, live_vault, require_human

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.changes import Link, Revision
    from synapse_nb.vault import ReadableVault

__all__ = ["LISTED", "ChangeReview"]

#: The most conflicts the list offers, people's pairs first (the header counts the rest)
LISTED = 100


class ChangeReview(FamilyWidget):
    """Pending revisions and open conflicts, one list each; the selected one in full with its buttons.

    Every button is a human's decision (the core refuses an agent anyway): Accept applies an agent's revision to
    the memory (verified), Reject leaves the memory as it is; Merge deletes the duplicate (its tags join the other
    memory), Keep both ends the link (both are recalled again), Supersede deletes the older record. Deletions stay in
    history (``memory revert`` brings a memory back). A button decides the revision or conflict the pane shows; after
    a decision nothing is selected (the person picks the next one: a double click decides one), and a refresh keeps
    the selection or, when it is gone, selects nothing.

    Attributes
    ----------
    revisions, conflicts : the ``Select`` lists (values: ids); revision_html, conflict_html : the selected one;
    shown_revision, shown_conflict : what the panes show (the buttons decide those); accept_button, reject_button,
    merge_button, keep_button, supersede_button; message : the last outcome.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> m = v.remember("procedure", "deploy", "make deploy, then tag")
    >>> _ = v.as_agent().memories.update(m.id, content="make deploy-prod, then tag")
    >>> w = ChangeReview(v)
    >>> w.accept_button.click()
    >>> v.memories.get(m.id).content
    'make deploy-prod, then tag'
    """

    terminal = "synapse-nb memory revisions, memory conflicts"

    def __init__(self, vault: ReadableVault) -> None:
        v = live_vault(vault, "ChangeReview")
        require_human(v, "ChangeReview")
        super().__init__(v, "Changes to review")
        self.items_revisions: list[Revision] = []
        self.items_conflicts: list[Link] = []
        self.shown_revision: Revision | None = None  # the revision whose values the pane shows (Accept binds to it)
        self.shown_conflict: Link | None = None
        self._first = True  # the first reading selects the first of each list; later ones never select for you
        self.revisions = widgets.Select(options=[], rows=6, description="revisions",
                                        layout=widgets.Layout(width="auto"))
        self.conflicts = widgets.Select(options=[], rows=6, description="conflicts",
                                        layout=widgets.Layout(width="auto"))
        self.revision_html = widgets.HTML()
        self.conflict_html = widgets.HTML()
        self.accept_button = button("Accept", "check", "Apply the agent's revision (the memory stays verified)",
                                    style="success")
        self.reject_button = button("Reject", "times", "Leave the memory as it is", style="danger")
        self.merge_button = button("Merge", "compress", "Delete the duplicate; its tags join the other memory")
        self.keep_button = button("Keep both", "clone", "Both stand, and both are recalled")
        self.supersede_button = button("Supersede", "arrow-up", "The newer stands; the older is deleted")
        self.accept_button.on_click(lambda _b: self.decide_revision(True))
        self.reject_button.on_click(lambda _b: self.decide_revision(False))
        self.merge_button.on_click(lambda _b: self.resolve("merge"))
        self.keep_button.on_click(lambda _b: self.resolve("keep"))
        self.supersede_button.on_click(lambda _b: self.resolve("supersede"))
        self.revisions.observe(lambda _c: self._show(), names="value")
        self.conflicts.observe(lambda _c: self._show(), names="value")
        self.detail.children = (self.revision_html, widgets.HBox([self.accept_button, self.reject_button]),
                                self.conflict_html,
                                widgets.HBox([self.merge_button, self.keep_button, self.supersede_button]),
                                self.message)
        self.frame(main=[self.revisions, self.conflicts])
        self.add_class("synapse-change-review")
        self.refresh()

    def refresh(self) -> None:
        mem = self.vault.memories
        self.items_revisions = mem.revisions()
        got = mem.conflicts()  # checks at most dupes.READ_CHECKS writes a bulk load left (review 75)
        # people's pairs first, then agents' (marked), at most LISTED (review 83: 24,994 agents' pairs were options)
        self.items_conflicts = got[:LISTED]
        theirs = {x.id for x in got[len(got) - got.agents:]} if got.agents else set()
        _relist(self.revisions, [(f"{shown_id(r.rid)} · {PROPOSED_MARK} {_gist(r)}", r.id)
                                 for r in self.items_revisions], self._first)
        _relist(self.conflicts, [(f"{inline(x.relation, 13)} · {shown_id(x.a)} ~ {shown_id(x.b)} ({x.score:.2f})"
                                  + (" · agents'" if x.id in theirs else ""), x.id) for x in self.items_conflicts],
                self._first)
        self._first = False
        counts = [plural(len(self.items_revisions), "pending revision"), plural(len(got.people), "open conflict")]
        if got.agents:  # not a person's queue: counted apart, listed after people's
            counts.append(f"{got.agents:,} between agents' unverified records (marked agents', after people's)")
        if len(got) > LISTED:
            counts.append(f"the first {LISTED} listed ({ALL_PAIRS} --agents -n 0 lists all)")
        self.set_header(", ".join(counts) + (f"; {got.note}" if got.note else ""))
        self._show()

    def _record(self, rid: str) -> Any:
        kind = kind_of_id(rid)
        try:
            return None if kind is None else self.vault.manager(kind).get(rid)
        except SynapseError:
            return None

    def _record_text(self, rid: str) -> str:
        rec = self._record(rid)
        return shown_id(rid) if kind_of_id(rid) is None else "(gone)" if rec is None else str(rec.summary_line())

    def _record_title(self, rid: str) -> str:
        """A memory's mark, category/key and id, without its text (shown whole beside each proposed value)."""
        rec = self._record(rid)
        return f"{shown_id(rid)} (gone)" if rec is None else f"{mark(rec)} {rec.address} ({shown_id(rid)})"

    def _field_html(self, ch: FieldChange, value: Any) -> str:
        """One proposed field: the memory's value and the proposed one whole, side by side (each scrolled), then
        their diff and a warning when they differ only in what reads the same (review 26: the current value was
        its content cut to 100 characters, beside the whole proposed value on one line)."""
        box = "flex:1 1 0;min-width:0"
        warn = (f"<div role='alert' style='color:{ERR};font-weight:bold'>{esc(ch.warning)}</div>"
                if ch.warning else "")
        return (f"<div style='margin-top:6px'><b>{esc(ch.field)}</b>{self._soon(ch.field, value)}"
                f"<div style='display:flex;gap:8px'>"
                f"<div style='{box}'><span style='color:{MUTED}'>now</span>"
                f"{pre_html(chr(10).join(ch.now), max_height='12em')}</div>"
                f"<div class='synapse-agent' style='{box}'><span style='color:{MUTED}'>proposed {PROPOSED_MARK}</span>"
                f"{pre_html(chr(10).join(ch.proposed), max_height='12em')}</div></div>"
                f"<span style='color:{MUTED}'>- now / + proposed {PROPOSED_MARK}</span>"
                f"{pre_html(chr(10).join(ch.diff), max_height='16em')}{warn}</div>")

    def _show(self) -> None:
        rev = next((r for r in self.items_revisions if r.id == self.revisions.value), None)
        link = next((x for x in self.items_conflicts if x.id == self.conflicts.value), None)
        self.shown_revision = rev
        if rev is None:
            self.revision_html.value = block(f"<i style='color:{MUTED}'>no pending revision</i>")
        else:
            body = ("".join(self._field_html(ch, rev.proposed[ch.field])
                            for ch in changes(self._record(rev.rid), rev.proposed)) if rev.readable
                    else f"<div role='alert' style='color:{ERR}'>{esc(UNREADABLE)}</div>")  # review 46
            self.revision_html.value = block(
                f"<div><b>{esc(shown_id(rev.id))}</b> · proposed by {esc(inline(rev.actor, 8))} via "
                f"{esc(inline(rev.surface, 12))} for {esc(self._record_title(rev.rid))}</div>"
                f"<div style='color:{MUTED}'>{esc(LEGEND)}</div>" + body)
        self.reject_button.disabled = rev is None
        self.accept_button.disabled = rev is None or not rev.readable  # an unreadable one is only rejected
        self.shown_conflict = link
        if link is None:
            self.conflict_html.value = block(f"<i style='color:{MUTED}'>no open conflict</i>")
        else:
            hid = f" · recall hides {esc(shown_id(link.hidden))}" if link.hidden else ""
            goes = [(act, g) for act in ("merge", "supersede")
                    if (g := self.vault.memories.deletes(link.id, act)) is not None]
            deletes = "".join(f"<div style='color:{MUTED}'>{act.capitalize()} deletes {esc(shown_id(g.id))}</div>"
                              for act, g in goes)  # which side goes, named before the click
            self.conflict_html.value = block(
                f"<div><b>{esc(inline(link.relation, 13))}</b> ({link.score:.2f}): "
                f"{esc(inline(link.reason))}{hid}</div>"
                f"<div>newer: {esc(self._record_text(link.a))}</div><div>older: {esc(self._record_text(link.b))}</div>"
                + deletes)
        for b in (self.merge_button, self.keep_button, self.supersede_button):
            b.disabled = link is None

    def _soon(self, field: str, value: Any) -> str:
        """How far a proposed expiry is, beside it (review 24: a bare time hid that the person's verified memory
        would leave recall within the minute, and a prune then delete it)."""
        if field != "expires_at" or not isinstance(value, str):
            return ""
        return f" <b>({esc(from_now(value, self.vault.now()))})</b>"

    def decide_revision(self, accept: bool) -> Any:
        """Accept or reject the selected revision."""
        shown = self.shown_revision  # the one on screen, accepted only with the values shown
        if shown is None or shown.id != self.revisions.value:
            self.say("no revision selected", error=True)
            return None
        mem, rid = self.vault.memories, shown.id
        try:
            out = self.act(lambda: mem.accept(rid, seen=shown.fields) if accept else mem.reject(rid))
        except SynapseError as exc:
            self.say(f"not done: {exc}", error=True)
            return None
        self.revisions.value = None
        self.refresh()
        note = getattr(out, "note", None) if accept else None  # another person's verified version it replaced
        self.say(f"{'accepted' if accept else 'rejected'} {shown_id(rid)}" + (f"; {note}" if note else ""))
        return out

    def resolve(self, action: str) -> Any:
        """Decide the selected conflict: merge, keep or supersede."""
        shown = self.shown_conflict  # the one on screen
        if shown is None or shown.id != self.conflicts.value:
            self.say("no conflict selected", error=True)
            return None
        lid = shown.id
        try:
            out = self.act(lambda: self.vault.memories.resolve(lid, action))
        except SynapseError as exc:
            self.say(f"not done: {exc}", error=True)
            return None
        self.conflicts.value = None
        self.refresh()
        self.say(f"{shown_id(lid)}: {out.status}")
        return out


def _gist(r: Revision) -> str:
    """A revision in a list's line: its proposed content (else its values), or that it is unreadable."""
    return inline(r.proposed.get("content", str(r.proposed)), 60) if r.readable else UNREADABLE


def _relist(select: widgets.Select, options: list[tuple[str, str]], first: bool) -> None:
    """New options for ``select``, keeping the selected id while it is listed, else selecting nothing (the first
    option only on the widget's first reading). ipywidgets moves a selection to the first option when the options
    change: after Accept, a second click of a double click accepted the next revision, never shown (review 26)."""
    keep = select.value if select.value in {v for _, v in options} else None
    select.value = None  # with nothing selected, new options select nothing
    select.options = options
    select.value = options[0][1] if first and options else keep
