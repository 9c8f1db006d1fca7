"""MemoryBrowser: search, filter, sort and page through memories; a human verifies or deletes the selected one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.errors import SynapseError, ValidationError
from synapse_nb.models import CATEGORIES, PRIORITIES, Memory
from synapse_nb.render import code, fmt_time, plural, pre_html, shorten
from synapse_nb.widgets._common import Confirm, block, esc, live_vault, message_html
from synapse_nb.widgets.table import RecordTable

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import ReadableVault

__all__ = ["ANY", "MemoryBrowser"]

#: The value of every filter dropdown's "(any)" choice. A real value, not ``None``: ipywidgets 8 shows a
#: dropdown whose value is ``None`` as blank ("nothing selected"), whatever the option's label.
ANY = "(any)"

_COLUMNS = [
    {"key": "id", "label": "id", "sort": "id", "nowrap": True},
    {"key": "what", "label": "category/key", "sort": "category"},
    {"key": "content", "label": "content", "sort": "content"},
    {"key": "tags", "label": "tags", "sort": ""},
    {"key": "priority", "label": "priority", "sort": "priority"},
    {"key": "verified", "label": "verified", "sort": "verified"},
    {"key": "source", "label": "source", "sort": "source"},
    {"key": "updated", "label": "updated", "sort": "updated", "nowrap": True},
    {"key": "expires", "label": "expires", "sort": "expires", "nowrap": True},
]


def _row(m: Memory) -> dict[str, Any]:
    return {"id": m.id, "muted": False, "cells": {
        "id": m.id, "what": f"{m.category}/{m.key}", "content": shorten(m.content, 160), "tags": ", ".join(m.tags),
        "priority": m.priority, "verified": "yes" if m.verified else "no", "source": m.source,
        "updated": fmt_time(m.updated_at), "expires": fmt_time(m.expires_at) or "-"}}


def memory_detail_html(m: Memory) -> str:
    """One memory in full: what, provenance, dates, then the whole content."""
    state = "verified" if m.verified else "unverified"
    facts = [f"<b>{esc(m.category)}/{esc(m.key)}</b> {code(m.id)}",
             f"{esc(m.priority)} priority · {state} · source {esc(m.source)} · confidence {m.confidence:.2f}",
             f"tags: {esc(', '.join(m.tags) or '-')} · created {fmt_time(m.created_at)} · updated "
             f"{fmt_time(m.updated_at)}" + (f" · expires {fmt_time(m.expires_at)}" if m.expires_at else "")]
    return block("".join(f"<div>{f}</div>" for f in facts) + pre_html(m.content, max_height="16em"))


class MemoryBrowser(widgets.VBox):
    """Search box, filters, a sortable table one page at a time, the selected memory in full, Verify / Delete.

    Every search, filter, sort and page change asks the vault for one page
    (``vault.memories.page``: filtering, counting, sorting and slicing happen in SQLite), so a vault of
    10,000 memories or many more stays as quick as a small one. Click a row to select it; click a
    column header to sort by it (again to reverse). Verify and Delete act on the selected memory and are
    for a human: on an agent vault they are disabled (the core would refuse anyway). Delete asks for a
    confirmation first.

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
    detail : HTML of the selected memory; verify_button, delete_button; confirm : the confirm step;
    message : last outcome.

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

    def __init__(self, vault: ReadableVault, *, page_size: int = 25) -> None:
        if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= 1000:
            raise ValidationError(f"page_size must be a whole number from 1 to 1000, got {page_size!r}")
        self.vault = live_vault(vault, "MemoryBrowser")
        self.page_size = page_size
        self.results: list[Memory] = []
        self.total = 0
        self.page = 1
        self._refreshing = False
        narrow = widgets.Layout(width="auto")
        self.query = widgets.Text(placeholder="search text, Enter to search (empty: everything)", description="Search",
                                  continuous_update=False, layout=widgets.Layout(width="60%"))
        self.search_button = widgets.Button(description="Search", icon="search", layout=narrow)
        self.category = widgets.Dropdown(options=[ANY, *CATEGORIES], value=ANY, description="Category")
        self.tag = widgets.Text(placeholder="tag, Enter to apply", description="Tag", continuous_update=False)
        self.priority = widgets.Dropdown(options=[ANY, *PRIORITIES], value=ANY, description="Priority")
        self.verified = widgets.Dropdown(options=[(ANY, ANY), ("verified", True), ("unverified", False)], value=ANY,
                                         description="Verified")
        self.source = widgets.Dropdown(options=[ANY, "user", "agent"], value=ANY, description="Source")
        self.table = RecordTable(columns=_COLUMNS, empty="no memories match")
        self.summary = widgets.HTML()
        self.prev_button = widgets.Button(description="Previous", icon="chevron-left", layout=narrow,
                                          tooltip="Previous page")
        self.next_button = widgets.Button(description="Next", icon="chevron-right", layout=narrow,
                                          tooltip="Next page")
        self.page_box = widgets.BoundedIntText(value=1, min=1, max=1, description="page",
                                               style={"description_width": "initial"},
                                               layout=widgets.Layout(width="10em"))
        self.detail = widgets.HTML()
        human = self.vault.actor == "user"
        self._human = human
        self.verify_button = widgets.Button(description="Verify", icon="check", button_style="success",
                                            disabled=True, tooltip="A human confirms the selected memory")
        self.delete_button = widgets.Button(description="Delete", icon="trash", button_style="danger",
                                            disabled=True, tooltip="Delete the selected memory (asks first)")
        self.confirm = Confirm()
        self.message = widgets.HTML()
        self.search_button.on_click(lambda _b: self.refresh())
        self.verify_button.on_click(lambda _b: self.verify_selected())
        self.delete_button.on_click(lambda _b: self.ask_delete())
        self.prev_button.on_click(lambda _b: self.go_to(self.page - 1))
        self.next_button.on_click(lambda _b: self.go_to(self.page + 1))
        self.page_box.observe(lambda c: self.go_to(c["new"]), names="value")
        for w in (self.query, self.category, self.tag, self.priority, self.verified, self.source):
            w.observe(lambda _c: self.refresh(page=1), names="value")
        self.table.observe(lambda _c: self.refresh(), names=["sort_by", "sort_desc"])
        self.table.observe(lambda _c: self._show_selected(), names="selected")
        super().__init__(children=[
            widgets.HBox([self.query, self.search_button]),
            widgets.HBox([self.category, self.tag]),
            widgets.HBox([self.priority, self.verified, self.source]),
            widgets.HBox([self.summary, self.prev_button, self.page_box, self.next_button],
                         layout=widgets.Layout(align_items="center")),
            self.table,
            self.detail,
            widgets.HBox([self.verify_button, self.delete_button]),
            self.confirm,
            self.message,
        ])
        self.add_class("synapse-memory-browser")
        self.refresh()

    # -- reading ----------------------------------------------------------------------------------------------
    def _filters(self) -> dict[str, Any]:
        def val(w: widgets.Dropdown) -> Any:
            return None if w.value == ANY else w.value

        return {"tag": self.tag.value.strip() or None, "category": val(self.category), "priority": val(self.priority),
                "verified": val(self.verified), "source": val(self.source)}

    def refresh(self, page: int | None = None) -> list[Memory]:
        """Re-read the current page (or ``page``) with the current search, filters and sort; returns its memories."""
        if self._refreshing:
            return self.results
        want = self.page if page is None else page
        try:
            found = self.vault.memories.page(
                self.query.value or "", **self._filters(), sort=self.table.sort_by or None,
                descending=self.table.sort_desc, offset=(max(want, 1) - 1) * self.page_size, limit=self.page_size)
            if not found.items and found.total and want > found.pages:  # the last page emptied: show the new last
                want = found.pages
                found = self.vault.memories.page(
                    self.query.value or "", **self._filters(), sort=self.table.sort_by or None,
                    descending=self.table.sort_desc, offset=(want - 1) * self.page_size, limit=self.page_size)
        except SynapseError as exc:
            self.message.value = message_html(f"search refused: {exc}", error=True)
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
        self.summary.value = block(f"<span style='margin-right:12px'>{shown} · page {self.page:,} of "
                                   f"{found.pages:,}</span>")
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
            self.message.value = message_html(f"{memory_id} is not on this page", error=True)
            return
        self.table.selected = memory_id

    def _show_selected(self) -> None:
        m = self.selected
        if self.confirm.pending:
            self.confirm.cancel()  # a new selection never inherits a question about another memory
        self.detail.value = memory_detail_html(m) if m else block(
            "<div style='font-style:italic'>click a row to see the memory in full, verify or delete it</div>")
        self.verify_button.disabled = not self._human or m is None or m.verified
        self.delete_button.disabled = not self._human or m is None
        if not self._human:
            self.verify_button.tooltip = self.delete_button.tooltip = "an agent vault may not verify or delete here"

    # -- acting -----------------------------------------------------------------------------------------------
    def verify_selected(self) -> Memory | None:
        """Verify the selected memory (human only); shows the outcome and re-reads the store."""
        m = self.selected
        if m is None:
            self.message.value = message_html("select a memory first (click its row)", error=True)
            return None
        try:
            mem = self.vault.memories.verify(m.id)
        except SynapseError as exc:
            self.message.value = message_html(f"not verified: {exc}", error=True)
            return None
        self.refresh()
        self.message.value = message_html(f"verified {mem.id} ({mem.category}/{mem.key})")
        out: Memory | None = mem
        return out

    def ask_delete(self) -> None:
        """First step of Delete: ask to confirm deleting the selected memory."""
        m = self.selected
        if m is None:
            self.message.value = message_html("select a memory first (click its row)", error=True)
            return
        self.message.value = ""
        self.confirm.ask(f"Delete {m.id} ({m.category}/{m.key})? This cannot be undone.", "Delete",
                         lambda: self.delete(m.id))

    def delete_selected(self) -> Memory | None:
        """Delete the selected memory without asking (the confirm step calls :meth:`delete`)."""
        m = self.selected
        if m is None:
            self.message.value = message_html("select a memory first (click its row)", error=True)
            return None
        return self.delete(m.id)

    def delete(self, memory_id: str) -> Memory | None:
        """Delete one memory; shows the outcome and re-reads the store."""
        try:
            mem = self.vault.memories.delete(memory_id)
        except SynapseError as exc:
            self.message.value = message_html(f"not deleted: {exc}", error=True)
            return None
        self.refresh()
        self.message.value = message_html(f"deleted {mem.id} ({mem.category}/{mem.key})")
        out: Memory | None = mem
        return out
