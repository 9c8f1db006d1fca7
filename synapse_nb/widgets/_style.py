"""The one stylesheet of the widget family (MemoryBrowser, LessonReview, GateExplorer): header, filter bar, body
(table beside or under the detail pane), detail pane, status line and provenance badges.

Every colour is a JupyterLab CSS variable (with a fallback for other front ends), so the light and the dark theme
both read well. It reaches the page with the family's table (:class:`~synapse_nb.widgets.table.RecordTable`, an
anywidget whose stylesheet applies to the whole page), which every member shows.
"""

from __future__ import annotations

__all__ = ["FAMILY_CSS", "TABLE_CSS"]

_BRAND = "var(--jp-brand-color1, #0969da)"
_AGENT = "var(--jp-warn-color1, #b35900)"

#: The table: fits the output's width (fixed layout, shares in percent), one or two lines a row, scrolls inside
#: a box of bounded height with its header kept in view, selection unlike hover, agent rows marked.
TABLE_CSS = f"""
.synapse-table-wrap {{ max-width: 100%; max-height: var(--synapse-table-height, 24em); overflow: auto;
  border: 1px solid var(--jp-border-color2, #d0d7de); border-radius: 2px; }}
.synapse-table {{ border-collapse: separate; border-spacing: 0; width: 100%; table-layout: fixed; line-height: 1.35;
  color: var(--jp-ui-font-color1, #1f2328); font-size: var(--jp-ui-font-size1, 13px); }}
.synapse-table th {{ position: sticky; top: 0; z-index: 1; background: var(--jp-layout-color2, #f6f8fa);
  font-weight: 600; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; padding: 4px 8px;
  border-bottom: 1px solid var(--jp-border-color1, #d0d7de); user-select: none; text-align: left; }}
.synapse-table th.synapse-sortable {{ cursor: pointer; }}
.synapse-table th.synapse-sortable:hover, .synapse-table th.synapse-sortable:focus-visible {{ color: {_BRAND}; }}
.synapse-table th .synapse-sort-arrow {{ color: var(--jp-ui-font-color2, #59636e); margin-left: 3px;
  font-weight: normal; }}
.synapse-table th[aria-sort="ascending"] .synapse-sort-arrow,
.synapse-table th[aria-sort="descending"] .synapse-sort-arrow {{ color: {_BRAND}; font-weight: bold; }}
.synapse-table td {{ padding: 3px 8px; vertical-align: top; overflow: hidden;
  border-bottom: 1px solid var(--jp-border-color2, #d0d7de); overflow-wrap: anywhere; }}
.synapse-table td .synapse-clip {{ display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2;
  overflow: hidden; }}
.synapse-table td.synapse-nowrap {{ white-space: nowrap; text-overflow: ellipsis; }}
.synapse-table td .synapse-sub {{ color: var(--jp-ui-font-color2, #59636e); }}
.synapse-table tr.synapse-row {{ cursor: pointer; }}
.synapse-table tr.synapse-row:hover td {{ background: var(--jp-layout-color2, #f6f8fa); }}
.synapse-table tr.synapse-selected td, .synapse-table tr.synapse-selected:hover td {{
  background: color-mix(in srgb, {_BRAND} 20%, var(--jp-layout-color1, #ffffff)); }}
.synapse-table tr.synapse-selected td:first-child {{ box-shadow: inset 4px 0 0 {_BRAND}; }}
.synapse-table tr.synapse-muted td {{ color: var(--jp-ui-font-color2, #59636e); }}
.synapse-table tr.synapse-row:focus {{ outline: 2px solid {_BRAND}; outline-offset: -2px; }}
.synapse-table-empty {{ color: var(--jp-ui-font-color2, #59636e); font-style: italic; padding: 10px 8px; }}
.synapse-table .synapse-badge {{ white-space: normal; text-overflow: clip; }}
.synapse-badge {{ display: inline-block; padding: 0 5px; border: 1px solid var(--jp-border-color1, #d0d7de);
  border-radius: 3px; font-size: 0.92em; white-space: nowrap; max-width: 100%; overflow: hidden;
  text-overflow: ellipsis; vertical-align: top; }}
.synapse-badge.synapse-agent {{ border-color: {_AGENT}; background: color-mix(in srgb, {_AGENT} 16%, transparent);
  font-weight: 600; }}
"""

#: The family's frame: header, filter bar (an even grid), body (table and detail side by side when the output is
#: wide, the detail right under the table when not), detail pane and status line.
FAMILY_CSS = f"""
.synapse-widget {{ color: var(--jp-ui-font-color1, #1f2328); max-width: 100%; box-sizing: border-box;
  font-size: var(--jp-ui-font-size1, 13px); }}
.synapse-widget * {{ box-sizing: border-box; }}
.synapse-header {{ align-items: center; gap: 8px; flex-wrap: wrap; padding: 2px 0 6px 0;
  border-bottom: 2px solid var(--jp-border-color2, #d0d7de); margin-bottom: 6px; }}
.synapse-header .synapse-title {{ flex: 1 1 auto; min-width: 12em; }}
.synapse-header .widget-button {{ width: auto; }}
.synapse-filters {{ display: grid !important; grid-template-columns: repeat(auto-fill, minmax(15em, 1fr));
  gap: 4px 12px; align-items: center; margin-bottom: 6px; }}
.synapse-filters > .jupyter-widgets {{ width: auto !important; margin: 0 !important; min-width: 0; }}
.synapse-filters .synapse-wide {{ grid-column: span 2; }}
.synapse-filters > .widget-button {{ justify-self: start; width: auto !important; }}
.synapse-filters .widget-label {{ min-width: 0; }}
.synapse-body {{ display: flex !important; flex-wrap: wrap; gap: 8px 12px; align-items: flex-start; }}
.synapse-main {{ flex: 3 1 640px; min-width: 0; }}
.synapse-detail {{ flex: 2 1 340px; min-width: 0; padding: 6px 10px; border: 1px solid var(--jp-border-color2, #d0d7de);
  border-left: 3px solid {_BRAND}; border-radius: 2px; background: var(--jp-layout-color1, #ffffff); }}
.synapse-detail .widget-button {{ width: auto; }}
.synapse-detail .widget-html, .synapse-detail .widget-html-content {{ max-width: 100%; }}
.synapse-actions {{ flex-wrap: wrap; gap: 4px; align-items: center; }}
.synapse-pager {{ align-items: center; flex-wrap: wrap; gap: 4px; margin-top: 4px; }}
.synapse-pager .widget-button {{ width: auto; }}
.synapse-quote {{ border-left: 3px solid var(--jp-border-color1, #d0d7de); padding: 2px 8px; margin: 4px 0; }}
.synapse-quote.synapse-agent {{ border-left-color: {_AGENT}; background: color-mix(in srgb, {_AGENT} 8%,
  transparent); }}
.synapse-changed .widget-label, .synapse-changed .widget-readout {{ color: {_BRAND} !important; font-weight: bold; }}
.synapse-bars {{ display: grid !important; grid-template-columns: repeat(auto-fill, minmax(22em, 1fr));
  gap: 0 16px; }}
.synapse-bars > .jupyter-widgets {{ width: auto !important; margin: 0 !important; min-width: 0; }}
.synapse-bars .widget-slider {{ width: 100% !important; margin-left: 0 !important; margin-right: 0 !important; }}
.synapse-help {{ color: var(--jp-ui-font-color2, #59636e); font-size: 0.92em; line-height: 1.3; margin: 0 0 6px 0;
  padding-left: 4px; }}
.synapse-help .widget-html-content, .synapse-widget .widget-html-content {{ line-height: 1.4; }}
"""
