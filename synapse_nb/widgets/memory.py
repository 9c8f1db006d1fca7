"""MemoryBrowser: search, filter, sort and page through memories; a human verifies or deletes the selected one,
reads its history (every version: who, through which surface, when) and reverts it to an earlier version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.displays import is_agent, mark_html
from synapse_nb.errors import SynapseError, ValidationError
from synapse_nb.models import CATEGORIES, PRIORITIES, Memory
from synapse_nb.provenance import inline, mark, salvage
from synapse_nb.render import (
    MUTED,
    code,
    fmt_time,
    plural,
    pre_html,
    shown_id,  # (review 41: an id as a reader shows it)
)
from synapse_nb.widgets._common import Confirm, FamilyWidget, block, button, esc, live_vault
from synapse_nb.widgets.table import RecordTable

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import ReadableVault

__all__ = ["ANY", "COLUMNS", "WIDE", "MemoryBrowser", "history_html", "memory_detail_html"]

#: The value of every filter dropdown's "(any)" choice. A real value, not ``None``: ipywidgets 8 shows a
#: dropdown whose value is ``None`` as blank ("nothing selected"), whatever the option's label.
ANY = "(any)"

#: The table's columns: widths are shares of the output's width; content gets the most (tags follow it, muted).
#: Priority and the dates sort descending on the first click (most important, newest first).
COLUMNS = [
    {"key": "what", "label": "category/key", "sort": "category", "width": 18, "narrow": 20, "clip": True,
     "breaks": True},
    {"key": "content", "label": "content", "sort": "content", "width": 40, "narrow": 40, "clip": True, "sub": "tags",
     "help": "the memory's text (whole in the detail pane); its tags follow it"},
    {"key": "by", "label": "by", "sort": "source", "width": 12, "narrow": 15, "badge": True,
     "help": "who wrote it and whether a human verified it"},
    {"key": "priority", "label": "priority", "sort": "priority", "width": 8, "narrow": 10, "first": "desc"},
    {"key": "updated", "label": "updated", "sort": "updated", "width": 11, "narrow": 0, "time": True,
     "first": "desc"},
    {"key": "expires", "label": "expires", "sort": "expires", "width": 11, "narrow": 15, "time": True},
]
#: Below this width (pixels) the table leaves "updated" out (the detail pane says it) to keep the rest readable.
WIDE = 1000
#: Priority in the table sorts by importance: descending (▼) puts critical first. The store's ascending order is
#: already critical first, so the widget asks it for the opposite of the arrow.
_INVERTED = {"priority"}


def _row(m: Memory) -> dict[str, Any]:
    title = f"{mark(m)} · {shown_id(m.id)} · {inline(m.content, 300)}"
    return {"id": m.id, "agent": is_agent(m), "title": title, "cells": {
        "what": f"{m.address}", "content": inline(m.content, 240),
        "tags": " ".join(f"#{t}" for t in m.tags), "by": mark(m).strip("[]"), "priority": m.priority,
        "updated": fmt_time(m.updated_at), "expires": fmt_time(m.expires_at) or "-"}}


def memory_detail_html(m: Memory) -> str:
    """One memory in full: what, who wrote it (marked), dates, then the whole content (an agent's text marked)."""
    state = "verified by a human" if m.verified else "not verified by a human"
    who = "an agent wrote this memory" if is_agent(m) else "you wrote this memory"
    quote = "synapse-quote synapse-agent" if is_agent(m) else "synapse-quote"
    facts = [f"<b>{esc(m.category)}/{esc(m.key)}</b> {mark_html(m)}",
             (f"<span style='color:{MUTED}'>{code(m.id)} · {esc(who)}, {state} · confidence {m.confidence:.2f}"
              "</span>"),
             f"{esc(m.priority)} priority · tags {esc(', '.join(m.tags) or '-')}",
             f"<span style='color:{MUTED}'>created {fmt_time(m.created_at)} · updated {fmt_time(m.updated_at)}"
             + (f" · expires {fmt_time(m.expires_at)}" if m.expires_at else " · never expires") + "</span>"]
    return block("".join(f"<div>{f}</div>" for f in facts)
                 + f"<div class='{quote}'>{pre_html(salvage(m.content), max_height='14em')}</div>")


def history_html(versions: Any) -> str:
    """The History panel: one row per version, oldest first (version, when, action, who via which surface, the
    content that version left, shortened and quoted); a version an imported file supplied says so ("from a file:
    agent via mcp": its time, actor and surface are the file's word; review 92)."""
    rows = []
    filed = versions.from_file()
    for e in versions:
        rec = versions.record(e.version)
        text = inline(getattr(rec, "content", ""), 90) if rec is not None else "(deleted)"
        who = ("from a file: " if e.version in filed else "") + f"{e.actor} via {e.surface}"
        style = " class='synapse-agent'" if e.actor == "agent" else ""
        rows.append(f"<tr{style}><td>v{e.version}</td><td>{fmt_time(e.at)}</td><td>{esc(e.action)}</td>"
                    f"<td>{esc(who)}</td><td title='{esc(e.digest_after or '-')}'>{esc(text)}</td></tr>")
    head = "<tr><th>v</th><th>when</th><th>what</th><th>who</th><th>content</th></tr>"
    return block(f"<div><b>History</b> <span style='color:{MUTED}'>({plural(len(rows), 'version')})</span></div>"
                 f"<table class='synapse-history'>{head}{''.join(rows)}</table>")


class MemoryBrowser(FamilyWidget):
    """Search box and filters in one bar, a sortable table one page at a time, the selected memory in full beside
    it (or right under it), Verify / Delete under the memory, and a status line under them.

    Every search, filter, sort and page change asks the vault for one page
    (``vault.memories.page``: filtering, counting, sorting and slicing happen in SQLite), so a vault of
    10,000 memories or many more stays as quick as a small one. Click a row (or move with the arrow keys) to
    select it; click a column header to sort by it (again to reverse; sorting starts again at page 1). Verify
    and Delete act on the selected memory and are for a human: on an agent vault they are disabled (the core
    would refuse anyway). Delete asks for a confirmation first. The browser refreshes itself when the vault
    changes (after every cell, e.g. a ``%remember``); Refresh does it by hand.

    Parameters
    ----------
    vault : the vault to browse.
    page_size : memories per page (default 25).

    Attributes
    ----------
    query, tag : Text boxes (Enter or leaving the box applies them).
    category, priority, verified, source : Dropdowns; :data:`ANY` (``"(any)"``) means no filter; the
        others hold the category, priority or source name, and True/False for verified.
    table : :class:`~synapse_nb.widgets.table.RecordTable`; ``table.selected`` is the selected id.
    results : the memories on this page; total : how many match; page : the current page (from 1).
    prev_button, next_button, page_box : paging; summary : "26–50 of 1,234 memories".
    detail_html : HTML of the selected memory; verify_button, delete_button; confirm : the confirm step;
    history_html : the selected memory's History panel (every version); revert_version : the version to go back
    to; revert_button : Revert (human only: restores that version as a new change); message : last outcome.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> m = v.as_agent().remember("knowledge", "cache_ttl", "cache entries live 5 minutes")
    >>> b = MemoryBrowser(v)
    >>> b.verified.value = False                       # unverified only
    >>> [x.key for x in b.results]
    ['cache_ttl']
    >>> b.select(m.id); b.verify_button.click()
    >>> v.memories.get(m.id).verified
    True
    """

    terminal = "synapse-nb memory list, memory history KEY"

    def __init__(self, vault: ReadableVault, *, page_size: int = 25) -> None:
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= 1000:
            raise ValidationError(f"page_size must be a whole number from 1 to 1000, got {page_size!r}")
        super().__init__(live_vault(vault, "MemoryBrowser"), "Memories")
        self.page_size = page_size
        self.results: list[Memory] = []
        self.total = 0
        self.page = 1
        self._refreshing = False
        label = {"description_width": "4.6em"}
        self.query = widgets.Text(placeholder="words to find, then Enter (empty: every memory)", description="Search",
                                  continuous_update=False, style=label)
        self.query.add_class("synapse-wide")
        self.category = widgets.Dropdown(options=[ANY, *CATEGORIES], value=ANY, description="Category", style=label)
        self.tag = widgets.Text(placeholder="a tag, then Enter", description="Tag", continuous_update=False,
                                style=label)
        self.priority = widgets.Dropdown(options=[ANY, *PRIORITIES], value=ANY, description="Priority", style=label)
        self.verified = widgets.Dropdown(options=[(ANY, ANY), ("verified", True), ("unverified", False)], value=ANY,
                                         description="Verified", style=label)
        self.source = widgets.Dropdown(options=[ANY, "user", "agent"], value=ANY, description="Source", style=label)
        self.table = RecordTable(columns=COLUMNS, empty="no memories match the search and filters",
                                 label="memories", wide=WIDE)
        self.summary = widgets.HTML()
        self.prev_button = button("Previous", "chevron-left", "Previous page")
        self.next_button = button("Next", "chevron-right", "Next page")
        self.page_box = widgets.BoundedIntText(value=1, min=1, max=1, description="page",
                                               style={"description_width": "initial"},
                                               layout=widgets.Layout(width="9em"))
        self.detail_html = widgets.HTML()
        human = self.vault.actor == "user"
        self._human = human
        self.verify_button = button("Verify", "check", "A human confirms the selected memory", style="success",
                                    disabled=True)
        self.delete_button = button("Delete", "trash", "Delete the selected memory (asks first)", style="danger",
                                    disabled=True)
        self.history_html = widgets.HTML()
        self.revert_version = widgets.Dropdown(options=[], description="version", style={"description_width": "4em"},
                                               layout=widgets.Layout(width="10em"))
        self.revert_button = button("Revert", "undo", "Restore the chosen version of the selected memory as a new "
                                    "change (a human only)", disabled=True)
        self.revert_button.on_click(lambda _b: self.revert_selected())
        self.confirm = Confirm()
        for w in (self.query, self.category, self.tag, self.priority, self.verified, self.source):
            w.observe(lambda _c: self._new_search(), names="value")
        self.verify_button.on_click(lambda _b: self.verify_selected())
        self.delete_button.on_click(lambda _b: self.ask_delete())
        self.prev_button.on_click(lambda _b: self.go_to(self.page - 1))
        self.next_button.on_click(lambda _b: self.go_to(self.page + 1))
        self.page_box.observe(lambda c: self.go_to(c["new"]), names="value")
        self.table.observe(lambda _c: self._sorted(), names=["sort_by", "sort_desc"])
        self.table.observe(lambda _c: self._show_selected(), names="selected")
        actions = widgets.HBox([self.verify_button, self.delete_button])
        actions.add_class("synapse-actions")
        undo = widgets.HBox([self.revert_version, self.revert_button])
        undo.add_class("synapse-actions")
        self.detail.children = (self.detail_html, actions, self.confirm, self.history_html, undo, self.message)
        pager = widgets.HBox([self.summary, self.prev_button, self.page_box, self.next_button])
        pager.add_class("synapse-pager")
        self.frame(filters=[self.query, self.category, self.tag, self.priority, self.verified, self.source],
                   main=[self.table, pager])
        self.add_class("synapse-memory-browser")
        self.refresh()

    # -- reading ----------------------------------------------------------------------------------------------
    def _filters(self) -> dict[str, Any]:
        def val(w: widgets.Dropdown) -> Any:
            return None if w.value == ANY else w.value

        return {"tag": self.tag.value.strip() or None, "category": val(self.category), "priority": val(self.priority),
                "verified": val(self.verified), "source": val(self.source)}

    def _new_search(self) -> None:
        self.message.value = ""  # an outcome about the last search never lingers beside the new one
        self.refresh(page=1)

    def _sorted(self) -> None:
        self.refresh(page=1)  # a new order starts at its first page

    def _page(self, want: int) -> Any:
        sort = self.table.sort_by or None
        desc = self.table.sort_desc != (sort in _INVERTED)
        return self.vault.memories.page(self.query.value or "", **self._filters(), sort=sort, descending=desc,
                                        offset=(max(want, 1) - 1) * self.page_size, limit=self.page_size)

    def refresh(self, page: int | None = None) -> list[Memory]:
        """Re-read the current page (or ``page``) with the current search, filters and sort; returns its memories."""
        if self._refreshing:
            return self.results
        want = self.page if page is None else page
        try:
            found = self._page(want)
            if not found.items and found.total and want > found.pages:  # the last page emptied: show the new last
                want = found.pages
                found = self._page(want)
        except SynapseError as exc:
            self.say(f"search refused: {exc}", error=True)
            return self.results
        self.results = list(found.items)
        self.total = found.total
        self.page = found.page if found.total else 1
        self._refreshing = True
        try:
            self.page_box.max = found.pages
            self.page_box.value = self.page
        finally:
            self._refreshing = False
        self.prev_button.disabled = self.page <= 1
        self.next_button.disabled = self.page >= found.pages
        first = found.offset + 1
        shown = (f"{first:,}–{found.offset + len(self.results):,} of {plural(found.total, 'memory')}"
                 if found.pages > 1 else plural(found.total, "memory"))
        self.summary.value = block(f"<span style='margin-right:8px'>{shown} · page {self.page:,} of "
                                   f"{found.pages:,}</span>")
        self.set_header(plural(found.total, "memory") + (" matches" if found.total == 1 else " match"))
        self.table.rows = [_row(m) for m in self.results]
        if self.table.selected not in self.table.row_ids:
            self.table.selected = ""  # the observer clears the detail
        self._show_selected()
        return self.results

    def go_to(self, page: int) -> list[Memory]:
        """Show page ``page`` (from 1; clamped to the pages there are)."""
        if self._refreshing:
            return self.results
        pages = max(1, -(-self.total // self.page_size))
        return self.refresh(page=min(max(int(page), 1), pages))

    @property
    def selected(self) -> Memory | None:
        """The selected memory (as on screen), or ``None``."""
        return next((m for m in self.results if m.id == self.table.selected), None)

    def select(self, memory_id: str) -> None:
        """Select a memory on the current page, as a click on its row does."""
        if memory_id not in self.table.row_ids:
            self.say(f"{memory_id} is not on this page", error=True)
            return
        self.table.selected = memory_id

    def _show_selected(self) -> None:
        m = self.selected
        if self.confirm.pending:
            self.confirm.cancel()  # a new selection never inherits a question about another memory
        self.detail_html.value = memory_detail_html(m) if m else block(
            f"<div style='color:{MUTED};font-style:italic'>click a row (or Tab to the table and use the arrow keys) "
            "to see the memory in full, verify or delete it</div>")
        self.verify_button.disabled = not self._human or m is None or m.verified
        self.delete_button.disabled = not self._human or m is None
        self._show_history(m)
        if not self._human:
            self.verify_button.tooltip = self.delete_button.tooltip = "an agent vault may not verify or delete here"
            self.revert_button.tooltip = "an agent vault may not revert"

    def _show_history(self, m: Memory | None) -> None:
        versions: Any = None
        if m is not None:
            try:
                versions = self.vault.memories.history(m.id)
            except SynapseError:
                versions = None
        self.history_html.value = history_html(versions) if versions else ""
        older = [e.version for e in versions or () if versions.record(e.version) is not None][:-1]
        self.revert_version.options = [(f"v{v}", v) for v in reversed(older)]
        self.revert_version.value = older[-1] if older else None  # the version before the current one
        self.revert_button.disabled = not self._human or not older

    def revert_selected(self) -> Memory | None:
        """Restore the chosen version of the selected memory as a new change (human only)."""
        m = self.selected
        if m is None or self.revert_version.value is None:
            self.say("select a memory and a version first", error=True)
            return None
        to = int(self.revert_version.value)
        try:
            mem = self.act(lambda: self.vault.memories.revert(m.id, to=to))
        except SynapseError as exc:
            self.say(f"not reverted: {exc}", error=True)
            return None
        self.refresh()
        # a team vault: another person's verified version it replaced, and how to restore it (Memory.note)
        self.say(f"reverted {shown_id(mem.id)} ({mem.address}) to version {to}" + (f"; {mem.note}" if mem.note else ""))
        out: Memory | None = mem
        return out

    # -- acting -----------------------------------------------------------------------------------------------
    def verify_selected(self) -> Memory | None:
        """Verify the selected memory (human only); shows the outcome under the buttons and re-reads the store."""
        m = self.selected
        if m is None:
            self.say("select a memory first (click its row)", error=True)
            return None
        try:
            mem = self.act(lambda: self.vault.memories.verify(m.id, seen=m))  # what the row shows, not a later edit
        except SynapseError as exc:
            self.say(f"not verified: {exc}", error=True)
            return None
        self.refresh()
        self.table.focus()
        self.say(f"verified {shown_id(mem.id)} ({mem.address}): a human confirmed it")
        out: Memory | None = mem
        return out

    def ask_delete(self) -> None:
        """First step of Delete: ask to confirm deleting the selected memory."""
        m = self.selected
        if m is None:
            self.say("select a memory first (click its row)", error=True)
            return
        self.message.value = ""
        self.confirm.ask(f"Delete {m.address} ({shown_id(m.id)})? Its history keeps it (`memory purge` removes every "
                         "trace).", "Delete",
                         lambda: self.delete(m.id))

    def delete_selected(self) -> Memory | None:
        """Delete the selected memory without asking (the confirm step calls :meth:`delete`)."""
        m = self.selected
        if m is None:
            self.say("select a memory first (click its row)", error=True)
            return None
        return self.delete(m.id)

    def delete(self, memory_id: str) -> Memory | None:
        """Delete one memory; shows the outcome and re-reads the store."""
        try:
            mem = self.act(lambda: self.vault.memories.delete(memory_id))
        except SynapseError as exc:
            self.say(f"not deleted: {exc}", error=True)
            return None
        self.refresh()
        self.table.focus()
        self.say(f"deleted {shown_id(mem.id)} ({mem.address})")
        out: Memory | None = mem
        return out

