"""RecordTable: a table whose rows are selected by a click and whose columns sort by a click on their header.

An `anywidget <https://anywidget.dev>`_ widget: a few lines of JavaScript draw the rows the Python side
sends (one page, never the whole vault) and send back two things only: the id of the clicked row
(``selected``) and the column to sort by (``sort_by``, ``sort_desc``). Sorting and paging happen in
Python (in SQLite), so the front end stays fast whatever the vault's size. Colours are JupyterLab's CSS
variables, so the table follows the light and the dark theme; rows are reachable with Tab and selected
with Enter or Space.

Headless (tests, scripts) it is a plain traitlets object: set ``table.selected = "mem_..."`` or
``table.sort_by = "key"`` and the observers run as if a user clicked.
"""

from __future__ import annotations

import anywidget
import traitlets

__all__ = ["RecordTable"]

_ESM = r"""
function render({ model, el }) {
  el.classList.add("synapse-table-wrap");
  const draw = () => {
    const columns = model.get("columns");
    const rows = model.get("rows");
    const selected = model.get("selected");
    const sortBy = model.get("sort_by");
    const desc = model.get("sort_desc");
    el.replaceChildren();
    if (!rows.length) {
      const note = document.createElement("div");
      note.className = "synapse-table-empty";
      note.textContent = model.get("empty");
      el.appendChild(note);
      return;
    }
    const table = document.createElement("table");
    table.className = "synapse-table";
    table.setAttribute("role", "grid");
    const head = table.createTHead().insertRow();
    for (const col of columns) {
      const th = document.createElement("th");
      th.dataset.key = col.key;
      th.style.textAlign = col.align === "r" ? "right" : "left";
      th.textContent = col.label;
      if (col.sort) {
        th.classList.add("synapse-sortable");
        th.tabIndex = 0;
        const active = sortBy === col.sort;
        th.setAttribute("aria-sort", active ? (desc ? "descending" : "ascending") : "none");
        th.title = "sort by " + col.label;
        if (active) {
          const arrow = document.createElement("span");
          arrow.className = "synapse-sort-arrow";
          arrow.textContent = desc ? " \u25BC" : " \u25B2";
          th.appendChild(arrow);
        }
        const sort = () => {
          if (model.get("sort_by") === col.sort) {
            model.set("sort_desc", !model.get("sort_desc"));
          } else {
            model.set("sort_by", col.sort);
            model.set("sort_desc", false);
          }
          model.save_changes();
        };
        th.addEventListener("click", sort);
        th.addEventListener("keydown", (e) => {
          if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
        });
      }
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const row of rows) {
      const tr = body.insertRow();
      tr.dataset.id = row.id;
      tr.tabIndex = 0;
      tr.className = "synapse-row" + (row.id === selected ? " synapse-selected" : "") +
        (row.muted ? " synapse-muted" : "");
      tr.setAttribute("aria-selected", row.id === selected ? "true" : "false");
      for (const col of columns) {
        const td = tr.insertCell();
        td.dataset.key = col.key;
        td.textContent = row.cells[col.key] ?? "";
        td.style.textAlign = col.align === "r" ? "right" : "left";
        if (col.nowrap) td.classList.add("synapse-nowrap");
      }
      const pick = () => { model.set("selected", row.id); model.save_changes(); };
      tr.addEventListener("click", pick);
      tr.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); }
      });
    }
    el.appendChild(table);
  };
  for (const name of ["columns", "rows", "selected", "sort_by", "sort_desc", "empty"]) {
    model.on("change:" + name, draw);
  }
  draw();
}
export default { render };
"""

_CSS = """
.synapse-table-wrap { max-width: 100%; overflow-x: auto; }
.synapse-table { border-collapse: collapse; margin: 4px 0; line-height: 1.4;
  color: var(--jp-ui-font-color1, #1f2328); font-size: var(--jp-ui-font-size1, 13px); }
.synapse-table th { background: var(--jp-layout-color2, #f6f8fa); font-weight: 600; white-space: nowrap;
  padding: 3px 8px; border-bottom: 1px solid var(--jp-border-color1, #d0d7de); user-select: none; }
.synapse-table th.synapse-sortable { cursor: pointer; }
.synapse-table th.synapse-sortable:hover { color: var(--jp-brand-color1, #0969da); }
.synapse-table td { padding: 3px 8px; vertical-align: top; border-bottom: 1px solid var(--jp-border-color2, #d0d7de);
  overflow-wrap: break-word; word-break: normal; max-width: 36em; }
.synapse-table td.synapse-nowrap { white-space: nowrap; }
.synapse-table tr.synapse-row { cursor: pointer; }
.synapse-table tr.synapse-row:hover td { background: var(--jp-layout-color2, #f6f8fa); }
.synapse-table tr.synapse-selected td { background: var(--jp-rendermime-table-row-hover-background, #ddf4ff); }
.synapse-table tr.synapse-selected td:first-child { box-shadow: inset 3px 0 0 var(--jp-brand-color1, #0969da); }
.synapse-table tr.synapse-muted td { color: var(--jp-ui-font-color2, #59636e); }
.synapse-table tr.synapse-row:focus { outline: 1px solid var(--jp-brand-color1, #0969da); outline-offset: -1px; }
.synapse-table-empty { color: var(--jp-ui-font-color2, #59636e); font-style: italic; margin: 4px 0; }
"""


class RecordTable(anywidget.AnyWidget):
    """A page of records as a table: click a row to select it, click a sortable header to sort by it.

    Attributes (all synced with the front end)
    ----------
    columns : list of ``{"key", "label", "sort", "align", "nowrap"}``; ``sort`` is the name the owner
        sorts by ("" for a column that does not sort), ``align`` "l" or "r".
    rows : list of ``{"id": str, "cells": {key: text}, "muted": bool}`` (plain text: never HTML).
    selected : the id of the selected row ("" for none); set by a click, Enter or Space.
    sort_by, sort_desc : the sort a header click asked for ("" for the owner's default order).
    empty : the note shown when there are no rows.

    Examples
    --------
    >>> t = RecordTable(columns=[{"key": "k", "label": "key", "sort": "key"}],
    ...                 rows=[{"id": "a", "cells": {"k": "alpha"}}])
    >>> t.selected = "a"          # what a click on the row does
    >>> t.row_ids
    ['a']
    """

    _esm = _ESM
    _css = _CSS
    columns = traitlets.List(traitlets.Dict()).tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    sort_by = traitlets.Unicode("").tag(sync=True)
    sort_desc = traitlets.Bool(False).tag(sync=True)
    empty = traitlets.Unicode("nothing to show").tag(sync=True)

    @property
    def row_ids(self) -> list[str]:
        """The ids of the rows on screen, in order."""
        return [r["id"] for r in self.rows]

    def cell(self, row_id: str, key: str) -> str:
        """The text of one cell (tests and scripts read the table through this)."""
        for r in self.rows:
            if r["id"] == row_id:
                return str(r["cells"].get(key, ""))
        raise KeyError(row_id)
