"""GateExplorer: move the recall gate's bars with sliders and watch what is kept or dropped, and why."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.displays import explain_title, is_agent, record_html, record_title
from synapse_nb.errors import SynapseError
from synapse_nb.provenance import mark
from synapse_nb.render import (
    MUTED,
    code,
    explanation_html,
    plural,
    pre_html,
    shown_id,  # (review 41: an id as a reader shows it)
    shown_parts,
)
from synapse_nb.widgets._common import Confirm, FamilyWidget, block, button, esc, live_vault, note_html
from synapse_nb.widgets.table import RecordTable

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.models import Record
    from synapse_nb.recall import Bars, ExplainRow, Recall
    from synapse_nb.vault import ReadableVault

__all__ = ["BAR_HELP", "COLUMNS", "GateExplorer", "explanation_html"]

#: What each bar does, in words shown under its slider (not only in a tooltip).
BAR_HELP = {
    "floor": "say nothing new unless the best matches cover at least this share of the question",
    "margin": "keep a hit only if its rank score is at least this share of the best one",
    "top_k": "keep at most this many hits of each kind (memories, decisions, ...)",
    "budget": "keep hits until their text reaches this many tokens",
}

#: The candidates table: every record near the bars, in rank order, kept or dropped.
COLUMNS = [
    {"key": "kept", "label": "kept", "width": 11, "narrow": 12, "nowrap": True},
    {"key": "rank", "label": "rank", "align": "r", "width": 7, "narrow": 8, "help": "rank score: how well it matches"},
    {"key": "coverage", "label": "coverage", "align": "r", "width": 10, "narrow": 11,
     "help": "share of the question's words it covers (the top ones only)"},
    {"key": "record", "label": "record", "width": 32, "narrow": 37, "clip": True, "lines": 3, "sub": "id",
     "subline": True, "mark": True, "breaks": True, "help": "the record's title, kind and id (an agent's marked)"},
    {"key": "bar", "label": "bar", "width": 8, "narrow": 9, "help": "the bar that decided"},
    {"key": "reason", "label": "reason", "width": 18, "narrow": 23, "clip": True},
    {"key": "matched", "label": "matched", "width": 14, "narrow": 0, "clip": True,
     "help": "the question's words it matched"},
]
#: Below this width (pixels) the table leaves "matched" out (the detail pane says it).
WIDE = 1000

_HINT = ("Type a question in the Query box and press Enter: every record near the bars appears here, kept or "
         "dropped, with the bar that decided. Then move the sliders.")


class GateExplorer(FamilyWidget):
    """Explore the recall gate: a query, sliders for its bars (each explained under it), every candidate kept or
    dropped in the family's table, the selected candidate in full beside it, and the recall text.

    The sliders start at the bars a recall uses by default (``vault.default_bars()``: the saved
    defaults, else the built-in ones); a slider that differs from the saved value is highlighted and the note under
    them says which. Moving one re-runs the recall with those bars (``vault.recall(query, session=None,
    bars=...)``) and redraws the table and the text. "Save as my defaults…" (user only) asks first, saying that
    every later recall without bars — notebook, CLI and agents over MCP — will use them, then writes them to the
    vault's settings; "Reset" puts the sliders back on the saved defaults and says so.

    Recalls run without a session: each run shows everything that clears the bars, and exploring never
    marks anything as seen for a notebook session.

    Parameters
    ----------
    vault : the vault to query (any actor: recall is what an agent would see for an agent vault; only
        the user may save defaults).
    budget_tokens : starting token budget (default: the saved default).

    Attributes
    ----------
    query : Text box (Enter runs); run_button; floor, margin : FloatSliders; top_k, budget : IntSliders;
    save_button, reset_button; save_confirm : the confirm step of Save; bars_note : how the sliders differ from the
    saved defaults; summary : "2 kept, 3 dropped"; table : the candidates (RecordTable); table_html : the same
    table as static HTML (what ``%recall --explain`` shows); detail_html : the selected candidate;
    text : HTML of the recall text; recall : the last :class:`synapse_nb.recall.Recall` (or ``None``);
    message : outcomes and errors, under the bars' buttons.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> _ = v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    >>> g = GateExplorer(v)
    >>> g.query.value = "how do we run migrations"
    >>> [i.id for i in g.recall.items] == [v.memories.get_by_key("procedure", "run_migrations").id]
    True
    >>> g.budget.value = 0                       # no tokens for any hit
    >>> g.recall.items
    ()
    """

    terminal = "synapse-nb recall QUERY --explain"

    def __init__(self, vault: ReadableVault, *, budget_tokens: int | None = None) -> None:
        super().__init__(live_vault(vault, "GateExplorer"), "Recall gate explorer")
        self.recall: Recall | None = None
        self.records: dict[str, Record] = {}
        self._quiet = False
        saved = self.vault.default_bars()
        start = saved if budget_tokens is None else replace(saved, budget_tokens=budget_tokens)
        self._base = start  # fields the sliders do not move (bonuses, index sizes) come from here
        self._saved = saved
        self.query = widgets.Text(placeholder="a question, then Enter (e.g. how do we deploy?)", description="Query",
                                  continuous_update=False, style={"description_width": "4.6em"})
        self.query.add_class("synapse-wide")
        self.run_button = button("Explain", "search", "Recall this question with the bars below")
        style = {"description_width": "4.6em"}
        self.floor = widgets.FloatSlider(value=start.floor, min=0.0, max=1.0, step=0.01, description="floor",
                                         readout_format=".2f", continuous_update=False, style=style,
                                         tooltip=BAR_HELP["floor"])
        self.margin = widgets.FloatSlider(value=start.margin, min=0.0, max=1.0, step=0.05, description="margin",
                                          readout_format=".2f", continuous_update=False, style=style,
                                          tooltip=BAR_HELP["margin"])
        self.top_k = widgets.IntSlider(value=start.top_k, min=1, max=max(20, start.top_k), description="top-k",
                                       continuous_update=False, style=style, tooltip=BAR_HELP["top_k"])
        self.budget = widgets.IntSlider(value=start.budget_tokens, min=0, max=max(4000, start.budget_tokens), step=50,
                                        description="budget", continuous_update=False, style=style,
                                        tooltip=BAR_HELP["budget"])
        human = self.vault.actor == "user"
        self.save_button = button("Save as my defaults…", "save",
                                  "asks first: every recall without bars (this notebook, the CLI, agents over MCP) "
                                  "will use these" if human else "only the user may change the vault's defaults",
                                  disabled=not human)
        self.reset_button = button("Reset", "undo", "Put the sliders back on the saved defaults")
        self.save_confirm = Confirm()
        self.bars_note = widgets.HTML()
        self.summary = widgets.HTML()
        self.table = RecordTable(columns=COLUMNS, empty=_HINT, label="recall candidates", wide=WIDE)
        self.table_html = widgets.HTML()
        self.detail_html = widgets.HTML()
        self.text = widgets.HTML()
        self.query.observe(lambda _c: self.run(), names="value")
        self.run_button.on_click(lambda _b: self.run())
        for s in (self.floor, self.margin, self.top_k, self.budget):
            s.observe(self._moved, names="value")
        self.save_button.on_click(lambda _b: self.ask_save())
        self.reset_button.on_click(lambda _b: self.reset())
        self.table.observe(lambda _c: self._show_selected(), names="selected")
        bars = widgets.Box([self._slider(s, key) for s, key in ((self.floor, "floor"), (self.margin, "margin"),
                                                              (self.top_k, "top_k"), (self.budget, "budget"))])
        bars.add_class("synapse-bars")
        actions = widgets.HBox([self.save_button, self.reset_button, self.bars_note])
        actions.add_class("synapse-actions")
        self.detail.children = (self.detail_html,)
        self.frame(filters=[self.query, self.run_button], before=[bars, actions, self.save_confirm, self.message],
                   main=[self.summary, self.table], after=[self.text])
        self.add_class("synapse-gate-explorer")
        self.set_header("type a question to see what recall keeps and drops")
        self._show_selected()
        self._note_changes()

    @staticmethod
    def _slider(slider: widgets.Widget, key: str) -> widgets.VBox:
        help_line = widgets.HTML(esc(BAR_HELP[key]))
        help_line.add_class("synapse-help")
        return widgets.VBox([slider, help_line])

    @property
    def bars(self) -> Bars:
        """The :class:`synapse_nb.recall.Bars` the sliders show."""
        out: Bars = replace(self._base, floor=round(float(self.floor.value), 4),
                            margin=round(float(self.margin.value), 4), top_k=int(self.top_k.value),
                            budget_tokens=int(self.budget.value))
        return out

    def _note_changes(self) -> None:
        """Highlight the sliders that differ from the saved defaults and say how."""
        saved = self._saved
        pairs = ((self.floor, "floor", saved.floor, ".2f"), (self.margin, "margin", saved.margin, ".2f"),
                 (self.top_k, "top-k", saved.top_k, "d"), (self.budget, "budget", saved.budget_tokens, ","))
        diffs = []
        for slider, name, was, fmt in pairs:
            changed = abs(float(slider.value) - float(was)) > 1e-9
            (slider.add_class if changed else slider.remove_class)("synapse-changed")
            if changed:
                diffs.append(f"{name} {format(slider.value, fmt)} (saved {format(was, fmt)})")
        self.bars_note.value = block(
            f"<span style='color:{MUTED}'>" + (esc("differs from your saved defaults: " + ", ".join(diffs))
                                                if diffs else "the saved defaults") + "</span>")

    def _moved(self, _change: Any) -> None:
        self._note_changes()
        if not self._quiet and self.query.value.strip():
            self.run()

    def refresh(self) -> Recall | None:
        """Re-read the saved defaults and re-run the query (the vault changed, or Refresh)."""
        try:
            self._saved = self.vault.default_bars()
        except SynapseError as exc:
            self.say(f"cannot read the defaults: {exc}", error=True)
        self._note_changes()
        return self.run() if self.query.value.strip() else None

    def _rows(self, rows: list[ExplainRow]) -> list[dict[str, Any]]:
        out = []
        for r in rows:
            rec = self.records.get(r.id)
            out.append({"id": r.id, "muted": not r.kept, "agent": rec is not None and is_agent(rec),
                        "mark": mark(rec).strip("[]") if rec is not None else "", "cells": {
                "kept": "✔ kept" if r.kept else "✘ dropped", "rank": f"{r.score:.3f}",
                "coverage": "-" if r.coverage is None else f"{r.coverage:.3f}",
                "record": record_title(rec, 120) if rec is not None else shown_id(r.id),
                "id": f"{r.kind} · {shown_id(r.id)}", "bar": r.bar, "reason": r.reason,
                "matched": ", ".join(r.matched) or "-"}})
        return out

    def run(self, query: str | None = None) -> Recall | None:
        """Recall ``query`` (default: the text box) with the sliders' bars; show the table and text; return the
        Recall."""
        if query is not None and query != self.query.value:
            self.query.value = query  # the observer runs the recall
            return self.recall
        q = self.query.value
        if not q.strip():
            self.say("type a question in the Query box first", error=True)
            return None
        try:
            r = self.vault.recall(q, session=None, bars=self.bars)
        except SynapseError as exc:
            self.say(f"recall refused: {exc}", error=True)
            return None
        self.recall = r
        self.message.value = ""
        rows = list(r.explain())
        self.records = {}
        for row in rows:
            try:
                self.records[row.id] = self.vault.manager(row.kind).get(row.id)
            except SynapseError:
                continue
        kept = sum(1 for x in rows if x.kept)
        counts = (f"{kept:,} kept, {len(rows) - kept:,} dropped · "
                  f"{plural(len(r.lessons), 'approved lesson')} in the banner")
        self.set_header(counts)
        self.summary.value = block(f"<span style='color:{MUTED}'>candidates for {code(q[:80])}, best first: click "
                                   "one to see its record and why it was kept or dropped</span>")
        self.table.empty = "no record matches any word of the question"
        self.table.rows = self._rows(rows)
        self.table_html.value = explanation_html(rows, {i: explain_title(x) for i, x in self.records.items()})
        if self.table.selected not in self.table.row_ids:
            self.table.selected = self.table.row_ids[0] if rows else ""
        self._show_selected()
        lines = plural(len(r.text.splitlines()), "line")
        self.text.value = block(f"<details open><summary style='cursor:pointer'><b>the recall text</b> "
                                f"<span style='color:{MUTED}'>(what an agent receives, {lines})</span></summary>"
                                f"{pre_html(r.text)}</details>")
        out: Recall | None = r
        return out

    def _show_selected(self) -> None:
        rid = self.table.selected
        row = next((x for x in (self.recall.explain() if self.recall else ()) if x.id == rid), None)
        if row is None:
            self.detail_html.value = block(
                "<div><b>The bars</b></div>" + "".join(f"<div><b>{esc(k.replace('_', '-'))}</b>: {esc(v)}</div>"
                                                       for k, v in BAR_HELP.items())
                + note_html("click a candidate to see its record and why it was kept or dropped"))
            return
        parts = ", ".join(f"{k} {v:.3f}" for k, v in shown_parts(row.parts)) or "-"
        verdict = "kept" if row.kept else f"dropped by the {row.bar} bar"
        why = (f"<div><b>{esc(verdict)}</b>: {esc(row.reason)}</div>"
               f"<div style='color:{MUTED}'>rank {row.score:.3f} ({esc(parts)}) · coverage "
               f"{'-' if row.coverage is None else f'{row.coverage:.3f}'} · matched "
               f"{esc(', '.join(row.matched) or '-')}</div>")
        rec = self.records.get(row.id)
        body = record_html(rec) if rec is not None else note_html(f"{shown_id(row.id)} is gone from the vault")
        self.detail_html.value = block(why) + body

    def ask_save(self) -> None:
        """First step of Save: say who the defaults apply to, and ask."""
        b = self.bars
        self.save_confirm.ask(
            f"Save floor {b.floor:.2f}, margin {b.margin:.2f}, top-k {b.top_k}, budget {b.budget_tokens:,} as the "
            "vault's defaults? Every recall given no bars will use them: this notebook, synapse-nb recall and "
            "agents over MCP.", "Save", self.save_defaults, style="warning")

    def save_defaults(self) -> Bars | None:
        """Save the sliders' bars as the vault's recall defaults (user only); returns the saved Bars (the Save
        button asks first: :meth:`ask_save`)."""
        try:
            saved = self.act(lambda: self.vault.save_default_bars(self.bars))
        except SynapseError as exc:
            self.say(f"not saved: {exc}", error=True)
            return None
        self._base = self._saved = saved
        self._note_changes()
        self.say(f"saved as the vault's recall defaults: floor {saved.floor:.2f}, margin {saved.margin:.2f}, "
                 f"top-k {saved.top_k}, budget {saved.budget_tokens:,} tokens; every recall without bars (notebook, "
                 "CLI, agents over MCP) now uses them")
        out: Bars | None = saved
        return out

    def reset(self) -> Recall | None:
        """Put the sliders back on the vault's saved defaults, say so and re-run; returns the Recall (or ``None``)."""
        try:
            bars = self.vault.default_bars()
        except SynapseError as exc:
            self.say(f"cannot read the defaults: {exc}", error=True)
            return None
        self._quiet = True
        try:
            self.floor.value, self.margin.value = bars.floor, bars.margin
            self.top_k.value, self.budget.value = bars.top_k, bars.budget_tokens
        finally:
            self._quiet = False
        self._base = self._saved = bars
        self._note_changes()
        r = self.run() if self.query.value.strip() else None
        self.say(f"sliders back on the saved defaults: floor {bars.floor:.2f}, margin {bars.margin:.2f}, "
                 f"top-k {bars.top_k}, budget {bars.budget_tokens:,} tokens")
        return r
