"""RecordTable: the family's table. Rows are selected by a click or the keyboard; columns sort by a click on their
header; it fits the output's width; keys pressed in a widget never reach the notebook.

An `anywidget <https://anywidget.dev>`_ widget: a few lines of JavaScript draw the rows the Python side sends
(one page, never the whole vault) and send back two things only: the id of the selected row (``selected``) and
the column to sort by (``sort_by``, ``sort_desc``). Sorting and paging happen in Python (in SQLite), so the
front end stays fast whatever the vault's size.

What a person gets:

- **Fits the output.** A fixed layout whose column widths are shares of the width (``width`` in percent), so the
  table is never wider than the output area; long text is cut to two lines (the detail pane shows it whole) and
  the table scrolls inside a box of bounded height with its header in view.
- **Sortable headers say so** (↕, then ▲ or ▼ on the active one; ``first: "desc"`` makes a column's first click
  descending, e.g. dates newest first, priority most important first).
- **Selection is not hover**: a tinted row with a bar on its left; the detail pane is scrolled into view.
- **Keyboard**: Tab reaches the selected row (one tab stop for the whole table); ArrowUp/ArrowDown, Home/End,
  PageUp/PageDown move the selection; Enter or Space selects; Enter or Space on a header sorts. The family's
  root stops key events there, so no key typed in a widget reaches JupyterLab's notebook shortcuts (``b`` no
  longer inserts a cell, ArrowDown no longer moves to the next cell); Ctrl/Cmd/Alt combinations (save, the command
  palette) still do. Focus stays on the row after a redraw instead of falling to the notebook.
- **Agent rows are marked**: ``row["agent"]`` outlines a ``badge`` column's text in the warning colour.

Headless (tests, scripts) it is a plain traitlets object: set ``table.selected = "mem_..."`` or
``table.sort_by = "key"`` and the observers run as if a user clicked.
"""

from __future__ import annotations

import anywidget
import traitlets

from synapse_nb.widgets._style import FAMILY_CSS, TABLE_CSS

__all__ = ["RecordTable"]

_ESM = r"""
function guard(el) {
  // The family's root: keys pressed anywhere in it stay in it (JupyterLab's notebook shortcuts never see them).
  const root = el.closest(".synapse-widget");
  if (!root) return false;
  if (!root.dataset.synapseGuard) {
    root.dataset.synapseGuard = "1";
    // a key typed in the widget (a letter, an arrow, Enter, Space, Shift with them) is the widget's: the notebook's
    // command-mode shortcuts never see it; Ctrl/Cmd/Alt combinations (save, the command palette) still reach
    // JupyterLab
    root.addEventListener("keydown", (e) => { if (!(e.ctrlKey || e.metaKey || e.altKey)) e.stopPropagation(); });
  }
  return true;
}

function render({ model, el }) {
  el.classList.add("synapse-table-wrap");
  el.setAttribute("role", "region");
  let frames = 0;
  const tryGuard = () => { if (!guard(el) && frames++ < 600) requestAnimationFrame(tryGuard); };
  tryGuard();
  let table = null;
  let hadFocus = false;
  let revealUntil = 0;
  let observer = null;

  const rowsOf = () => table ? [...table.tBodies[0].rows] : [];
  const reveal = () => {
    const root = el.closest(".synapse-widget");
    const detail = root && root.querySelector(".synapse-detail");
    if (!detail) return;
    detail.scrollIntoView({ block: "nearest", inline: "nearest" });
  };
  const watchDetail = () => {
    // the detail is redrawn by the kernel a moment later: keep it in view while its new content arrives
    revealUntil = performance.now() + 2500;
    requestAnimationFrame(reveal);
    const root = el.closest(".synapse-widget");
    const detail = root && root.querySelector(".synapse-detail");
    if (!detail || observer) return;
    observer = new MutationObserver(() => {
      if (performance.now() < revealUntil) requestAnimationFrame(reveal);
      else { observer.disconnect(); observer = null; }
    });
    observer.observe(detail, { childList: true, subtree: true, characterData: true });
  };
  const pick = (id, focus) => {
    if (model.get("selected") !== id) { model.set("selected", id); model.save_changes(); }
    mark();
    if (focus) focusRow(id);
    watchDetail();
  };
  const focusRow = (id) => {
    const rows = rowsOf();
    const tr = rows.find((r) => r.dataset.id === id) || rows[0];
    if (tr) { tr.focus({ preventScroll: true }); tr.scrollIntoView({ block: "nearest" }); }
  };
  const mark = () => {
    const selected = model.get("selected");
    const rows = rowsOf();
    const any = rows.some((r) => r.dataset.id === selected);
    rows.forEach((tr, i) => {
      const on = tr.dataset.id === selected;
      tr.classList.toggle("synapse-selected", on);
      tr.setAttribute("aria-selected", on ? "true" : "false");
      tr.tabIndex = on || (!any && i === 0) ? 0 : -1;  // one tab stop: the selected row (else the first)
    });
  };
  const move = (tr, e) => {
    const rows = rowsOf();
    const i = rows.indexOf(tr);
    const step = { ArrowDown: 1, ArrowUp: -1, PageDown: 10, PageUp: -10 }[e.key];
    let j = null;
    if (step !== undefined) j = Math.max(0, Math.min(rows.length - 1, i + step));
    else if (e.key === "Home") j = 0;
    else if (e.key === "End") j = rows.length - 1;
    if (j !== null) { e.preventDefault(); pick(rows[j].dataset.id, true); return; }
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(tr.dataset.id, true); }
  };
  const text = (box, value, breaks) => {
    // "procedure/run_migrations": a line may break after "/" or "_" rather than in the middle of a word
    if (!breaks) { box.append(value); return; }
    for (const part of value.split(/(?<=\/)/)) { box.append(part); box.appendChild(document.createElement("wbr")); }
  };
  const cell = (td, col, row) => {
    const value = row.cells[col.key] ?? "";
    if (col.badge) {
      const b = document.createElement("span");
      b.className = "synapse-badge" + (row.agent ? " synapse-agent" : "");
      b.textContent = value;
      td.appendChild(b);
      return;
    }
    if (col.time && / /.test(value)) {  // "2026-12-02 07:32 UTC": the date, then the time kept on one line
      const k = value.indexOf(" ");
      const time = document.createElement("span");
      time.style.whiteSpace = "nowrap";
      time.textContent = value.slice(k + 1);
      td.append(value.slice(0, k) + " ", time);
      return;
    }
    const box = col.clip ? document.createElement("div") : td;
    if (col.clip) {
      box.className = "synapse-clip";
      if (col.lines) box.style.webkitLineClamp = String(col.lines);
      td.appendChild(box);
    }
    if (col.mark && row.agent && row.mark) {  // who wrote it, said before what it says
      const b = document.createElement("span");
      b.className = "synapse-badge synapse-agent";
      b.textContent = row.mark;
      box.append(b, " ");
    }
    text(box, value, col.breaks);
    const sub = col.sub ? row.cells[col.sub] : "";
    if (sub) {
      const s = document.createElement("span");
      s.className = "synapse-sub";
      s.textContent = " " + sub;
      if (col.subline) box.appendChild(document.createElement("br"));
      box.appendChild(s);
    }
  };
  const compact = () => el.clientWidth > 0 && el.clientWidth < (model.get("wide") || 0);
  let wasCompact = null;
  const draw = () => {
    hadFocus = el.contains(document.activeElement);
    const focused = hadFocus && document.activeElement.dataset ? document.activeElement.dataset.id : null;
    wasCompact = compact();
    // on a narrow output the columns marked "narrow" take those shares (0: the column is left out)
    const columns = model.get("columns").filter((c) => !(wasCompact && c.narrow === 0));
    const rows = model.get("rows");
    const sortBy = model.get("sort_by");
    const desc = model.get("sort_desc");
    el.setAttribute("aria-label", model.get("label"));
    el.replaceChildren();
    table = null;
    if (!rows.length) {
      const note = document.createElement("div");
      note.className = "synapse-table-empty";
      note.textContent = model.get("empty");
      el.appendChild(note);
      return;
    }
    table = document.createElement("table");
    table.className = "synapse-table";
    table.setAttribute("role", "grid");
    table.setAttribute("aria-label", model.get("label"));
    const group = document.createElement("colgroup");
    for (const col of columns) {
      const c = document.createElement("col");
      const share = wasCompact && col.narrow ? col.narrow : col.width;
      if (share) c.style.width = share + "%";
      group.appendChild(c);
    }
    table.appendChild(group);
    const head = table.createTHead().insertRow();
    for (const col of columns) {
      const th = document.createElement("th");
      th.dataset.key = col.key;
      th.style.textAlign = col.align === "r" ? "right" : "left";
      th.textContent = col.label;
      th.title = col.help || col.label;
      if (col.sort) {
        th.classList.add("synapse-sortable");
        th.tabIndex = 0;
        const active = sortBy === col.sort;
        th.setAttribute("aria-sort", active ? (desc ? "descending" : "ascending") : "none");
        th.title = (col.help ? col.help + " · " : "") + "click to sort by " + col.label +
          (active ? " (click again to reverse)" : "");
        const arrow = document.createElement("span");
        arrow.className = "synapse-sort-arrow";
        arrow.setAttribute("aria-hidden", "true");
        arrow.textContent = active ? (desc ? "\u25BC" : "\u25B2") : "\u2195";
        th.appendChild(arrow);
        const sort = () => {
          if (model.get("sort_by") === col.sort) {
            model.set("sort_desc", !model.get("sort_desc"));
          } else {
            model.set("sort_by", col.sort);
            model.set("sort_desc", col.first === "desc");
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
      tr.className = "synapse-row" + (row.muted ? " synapse-muted" : "") + (row.agent ? " synapse-agent-row" : "");
      if (row.title) tr.title = row.title;
      for (const col of columns) {
        const td = tr.insertCell();
        td.dataset.key = col.key;
        td.style.textAlign = col.align === "r" ? "right" : "left";
        if (col.nowrap) td.classList.add("synapse-nowrap");
        cell(td, col, row);
      }
      tr.addEventListener("click", () => pick(row.id, true));
      tr.addEventListener("keydown", (e) => move(tr, e));
    }
    el.appendChild(table);
    mark();
    if (hadFocus) focusRow(focused || model.get("selected"));  // a redraw never drops the focus to the notebook
  };
  model.on("change:selected", mark);
  for (const name of ["columns", "rows", "sort_by", "sort_desc", "empty", "label", "wide"]) {
    model.on("change:" + name, draw);
  }
  model.on("change:focus_token", () => { focusRow(model.get("selected")); watchDetail(); });
  draw();
  const resize = new ResizeObserver(() => { if (wasCompact !== null && compact() !== wasCompact) draw(); });
  resize.observe(el);
  return () => { if (observer) observer.disconnect(); resize.disconnect(); };
}
export default { render };
"""


class RecordTable(anywidget.AnyWidget):
    """A page of records as a table: click a row to select it, click a sortable header to sort by it.

    Attributes (all synced with the front end)
    ----------
    columns : list of ``{"key", "label", "sort", "align", "width", ...}``: ``sort`` the name the owner sorts by
        ("" for a column that does not sort); ``first`` "desc" when its first click sorts descending; ``align`` "l"
        or "r"; ``width`` its share of the table in percent and ``narrow`` its share on a narrow output (0 leaves it
        out; see ``wide``); ``clip`` cut to ``lines`` lines (2); ``nowrap`` one line; ``badge`` drawn as a
        provenance badge; ``time`` a timestamp (the date, then the time on one line); ``sub`` the key of another
        cell shown muted after it (``subline``: on a line of its own); ``mark`` an agent row's provenance mark
        (``row["mark"]``) drawn before the text; ``breaks`` a line may break after a ``/``; ``help`` the header's
        tooltip.
    rows : list of ``{"id": str, "cells": {key: text}, "muted": bool, "agent": bool, "mark": str, "title": str}``
        (plain text: never HTML); ``agent`` marks a row an agent wrote, ``mark`` its provenance mark, ``title`` is
        its tooltip.
    selected : the id of the selected row ("" for none); set by a click, the arrow keys, Enter or Space.
    sort_by, sort_desc : the sort a header click asked for ("" for the owner's default order).
    empty : the note shown when there are no rows; label : what the table is, for screen readers.
    wide : below this width in pixels the table is narrow: each column with a ``narrow`` share takes it (``0``
        leaves the column out), so a narrow output keeps its columns readable instead of cutting them.
    focus_token : bumped by :meth:`focus` to move the keyboard focus to the selected row.

    Examples
    --------
    >>> t = RecordTable(columns=[{"key": "k", "label": "key", "sort": "key"}],
    ...                 rows=[{"id": "a", "cells": {"k": "alpha"}}])
    >>> t.selected = "a"          # what a click on the row does
    >>> t.row_ids
    ['a']
    """

    _esm = _ESM
    _css = TABLE_CSS + FAMILY_CSS
    columns = traitlets.List(traitlets.Dict()).tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    sort_by = traitlets.Unicode("").tag(sync=True)
    sort_desc = traitlets.Bool(False).tag(sync=True)
    empty = traitlets.Unicode("nothing to show").tag(sync=True)
    label = traitlets.Unicode("records").tag(sync=True)
    wide = traitlets.Int(0).tag(sync=True)
    focus_token = traitlets.Int(0).tag(sync=True)

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

    def focus(self) -> None:
        """Move the keyboard focus to the selected row (the first row when none is), e.g. after a button that
        acted on it was redrawn away, so the focus never falls to the page."""
        self.focus_token += 1
