"""MemoryBrowser: search and filter memories; a human verifies or deletes the selected one."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from synapse_nb._util import plural, shorten
from synapse_nb.errors import SynapseError
from synapse_nb.models import CATEGORIES, PRIORITIES, Memory
from synapse_nb.widgets._common import esc, message_html, table_html

__all__ = ["MemoryBrowser"]

_ANY = "(any)"


def memory_rows(memories: list[Memory]) -> str:
    """The memories as an HTML table (id, category/key, content, tags, priority, verified, source, expires)."""
    rows = [[f"<code>{esc(m.id)}</code>", esc(f"{m.category}/{m.key}"), esc(shorten(m.content, 160)),
             esc(", ".join(m.tags)), esc(m.priority), "yes" if m.verified else "<b>no</b>", esc(m.source),
             esc((m.expires_at or "")[:19].replace("T", " "))] for m in memories]
    return table_html(["id", "category/key", "content", "tags", "priority", "verified", "source", "expires (UTC)"], rows,
                      empty="no memories match")


class MemoryBrowser(widgets.VBox):
    """Search box, filters (category, tag, priority, verified, source), a table, Verify / Delete.

    The table re-reads the vault on every search, filter change, action and :meth:`refresh`. Verify
    and Delete act on the memory chosen in ``selected`` and are for a human: on an agent vault they
    are disabled (the core would refuse anyway).

    Parameters
    ----------
    vault : the vault to browse.
    limit : most memories shown (default 200).

    Attributes
    ----------
    query, tag : Text boxes; category, priority, verified, source : Dropdowns (``None`` means any).
    table : HTML table of the matching memories; results : those memories (a list).
    selected : Dropdown of the ids on screen; verify_button, delete_button; message : last outcome.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> m = v.as_agent().remember("knowledge", "cache_ttl", "cache entries live 5 minutes")
    >>> b = MemoryBrowser(v)
    >>> b.verified.value = False                       # unverified only
    >>> [x.key for x in b.results]
    ['cache_ttl']
    >>> b.selected.value = m.id; b.verify_button.click()
    >>> v.memories.get(m.id).verified
    True
    """

    def __init__(self, vault: Any, *, limit: int = 200) -> None:
        self.vault = vault
        self.limit = limit
        self.results: list[Memory] = []
        self.query = widgets.Text(placeholder="search text (empty: everything)", description="Search",
                                  continuous_update=False)
        self.search_button = widgets.Button(description="Search", icon="search")
        self.category = widgets.Dropdown(options=[(_ANY, None)] + [(c, c) for c in CATEGORIES], value=None,
                                         description="Category")
        self.tag = widgets.Text(placeholder="tag", description="Tag", continuous_update=False)
        self.priority = widgets.Dropdown(options=[(_ANY, None)] + [(p, p) for p in PRIORITIES], value=None,
                                         description="Priority")
        self.verified = widgets.Dropdown(options=[(_ANY, None), ("verified", True), ("unverified", False)],
                                         value=None, description="Verified")
        self.source = widgets.Dropdown(options=[(_ANY, None), ("user", "user"), ("agent", "agent")], value=None,
                                       description="Source")
        self.table = widgets.HTML()
        self.selected = widgets.Dropdown(options=[], description="Memory")
        human = getattr(vault, "actor", None) == "user"
        self.verify_button = widgets.Button(description="Verify", icon="check", button_style="success",
                                            disabled=not human, tooltip="A human confirms this memory")
        self.delete_button = widgets.Button(description="Delete", icon="trash", button_style="danger",
                                            disabled=not human, tooltip="Delete this memory")
        self.message = widgets.HTML()
        self.search_button.on_click(lambda _b: self.refresh())
        self.verify_button.on_click(lambda _b: self.verify_selected())
        self.delete_button.on_click(lambda _b: self.delete_selected())
        for w in (self.query, self.category, self.tag, self.priority, self.verified, self.source):
            w.observe(lambda _c: self.refresh(), names="value")
        super().__init__(children=[
            widgets.HBox([self.query, self.search_button]),
            widgets.HBox([self.category, self.tag]),
            widgets.HBox([self.priority, self.verified, self.source]),
            self.table,
            widgets.HBox([self.selected, self.verify_button, self.delete_button]),
            self.message,
        ])
        self.refresh()

    def refresh(self) -> list[Memory]:
        """Re-run the search with the current filters; returns the memories shown."""
        try:
            found = self.vault.memories.search(self.query.value or "", tag=(self.tag.value.strip() or None),
                                               category=self.category.value, limit=max(self.limit * 5, 1000))
        except SynapseError as exc:
            self.message.value = message_html(f"search refused: {exc}", error=True)
            return self.results
        keep = [m for m in found
                if (self.priority.value is None or m.priority == self.priority.value)
                and (self.verified.value is None or m.verified == self.verified.value)
                and (self.source.value is None or m.source == self.source.value)][: self.limit]
        self.results = keep
        self.table.value = f"<small>{plural(len(keep), 'memory', 'memories')}</small>" + memory_rows(keep)
        previous = self.selected.value
        self.selected.options = [(f"{m.id}  {m.category}/{m.key}", m.id) for m in keep]
        ids = [m.id for m in keep]
        self.selected.value = previous if previous in ids else (ids[0] if ids else None)
        return keep

    def verify_selected(self) -> Memory | None:
        """Verify the selected memory (human only); shows the outcome and re-reads the store."""
        mid = self.selected.value
        if mid is None:
            self.message.value = message_html("select a memory first", error=True)
            return None
        try:
            mem = self.vault.memories.verify(mid)
        except SynapseError as exc:
            self.message.value = message_html(f"not verified: {exc}", error=True)
            return None
        self.refresh()
        self.message.value = message_html(f"verified {mem.id} ({mem.category}/{mem.key})")
        return mem

    def delete_selected(self) -> Memory | None:
        """Delete the selected memory; shows the outcome and re-reads the store."""
        mid = self.selected.value
        if mid is None:
            self.message.value = message_html("select a memory first", error=True)
            return None
        try:
            mem = self.vault.memories.delete(mid)
        except SynapseError as exc:
            self.message.value = message_html(f"not deleted: {exc}", error=True)
            return None
        self.refresh()
        self.message.value = message_html(f"deleted {mem.id} ({mem.category}/{mem.key})")
        return mem
