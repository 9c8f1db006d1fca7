"""GateExplorer: move the recall gate's bars with sliders and watch what is kept or dropped, and the recall text."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.errors import SynapseError
from synapse_nb.render import explanation_html, plural, pre_html
from synapse_nb.widgets._common import block, esc, live_vault, message_html

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.recall import Bars, Recall
    from synapse_nb.vault import ReadableVault

__all__ = ["GateExplorer", "explanation_html"]


class GateExplorer(widgets.VBox):
    """Explore the recall gate: a query, sliders for its bars, every candidate kept or dropped, the recall text.

    The sliders start at the bars a recall uses by default (``vault.default_bars()``: the saved
    defaults, else the built-in ones). Moving one re-runs the recall with those bars
    (``vault.recall(query, session=None, bars=...)``) and redraws the table and the text. "Save as my
    defaults" (user only) writes the bars to the vault's settings, so every later recall without bars —
    notebook, CLI or an agent over MCP — uses them; "Reset" puts the sliders back on the saved defaults.

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
    save_button, reset_button; summary : "2 kept, 3 dropped"; table : HTML of the candidates;
    text : HTML of the recall text; recall : the last :class:`synapse_nb.recall.Recall` (or ``None``);
    message : outcomes and errors.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> _ = v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    >>> g = GateExplorer(v)
    >>> g.query.value = "how do we run migrations"
    >>> [i.id for i in g.recall.items] == [v.memories.get_by_key("procedure", "run_migrations").id]
    True
    >>> g.top_k.value = 0                        # keep no hit of any kind
    >>> g.recall.items
    ()
    """

    def __init__(self, vault: ReadableVault, *, budget_tokens: int | None = None) -> None:
        self.vault = live_vault(vault, "GateExplorer")
        self.recall: Recall | None = None
        self._quiet = False
        start = self.vault.default_bars()
        if budget_tokens is not None:
            start = replace(start, budget_tokens=budget_tokens)
        self._base = start  # fields the sliders do not move (bonuses, index sizes) come from here
        self.query = widgets.Text(placeholder="type a query and press Enter", description="Query",
                                  continuous_update=False, layout=widgets.Layout(width="70%"))
        self.run_button = widgets.Button(description="Explain", icon="search", layout=widgets.Layout(width="auto"))
        style = {"description_width": "7em"}
        wide = widgets.Layout(width="28em")
        self.floor = widgets.FloatSlider(value=start.floor, min=0.0, max=1.0, step=0.01, description="floor",
                                         readout_format=".2f", continuous_update=False, style=style, layout=wide,
                                         tooltip="nothing new unless the support of the top ranked reaches it")
        self.margin = widgets.FloatSlider(value=start.margin, min=0.0, max=1.0, step=0.05, description="margin",
                                          readout_format=".2f", continuous_update=False, style=style, layout=wide,
                                          tooltip="a hit's rank score is at least this times the best one")
        self.top_k = widgets.IntSlider(value=start.top_k, min=0, max=max(20, start.top_k), description="top-k",
                                       continuous_update=False, style=style, layout=wide,
                                       tooltip="most hits per kind")
        self.budget = widgets.IntSlider(value=start.budget_tokens, min=0, max=max(4000, start.budget_tokens), step=50,
                                        description="budget", continuous_update=False, style=style, layout=wide,
                                        tooltip="most tokens for the hits")
        human = self.vault.actor == "user"
        self.save_button = widgets.Button(description="Save as my defaults", icon="save", disabled=not human,
                                          layout=widgets.Layout(width="auto"),
                                          tooltip=("every recall without bars (notebook, CLI, MCP) will use these"
                                                   if human else "only the user may change the vault's defaults"))
        self.reset_button = widgets.Button(description="Reset", icon="undo", layout=widgets.Layout(width="auto"),
                                           tooltip="back to the saved defaults")
        self.summary = widgets.HTML()
        self.table = widgets.HTML()
        self.text = widgets.HTML()
        self.message = widgets.HTML()
        self.query.observe(lambda _c: self.run(), names="value")
        self.run_button.on_click(lambda _b: self.run())
        for s in (self.floor, self.margin, self.top_k, self.budget):
            s.observe(self._moved, names="value")
        self.save_button.on_click(lambda _b: self.save_defaults())
        self.reset_button.on_click(lambda _b: self.reset())
        super().__init__(children=[
            widgets.HBox([self.query, self.run_button]),
            widgets.HBox([widgets.VBox([self.floor, self.margin]), widgets.VBox([self.top_k, self.budget])]),
            widgets.HBox([self.save_button, self.reset_button]),
            self.message, self.summary, self.table, self.text,
        ])
        self.add_class("synapse-gate-explorer")

    @property
    def bars(self) -> Bars:
        """The :class:`synapse_nb.recall.Bars` the sliders show."""
        out: Bars = replace(self._base, floor=round(float(self.floor.value), 4),
                            margin=round(float(self.margin.value), 4), top_k=int(self.top_k.value),
                            budget_tokens=int(self.budget.value))
        return out

    def _moved(self, _change: Any) -> None:
        if not self._quiet and self.query.value.strip():
            self.run()

    def run(self, query: str | None = None) -> Recall | None:
        """Recall ``query`` (default: the text box) with the sliders' bars; show the table and text; return the
        Recall."""
        if query is not None and query != self.query.value:
            self.query.value = query  # the observer runs the recall
            return self.recall
        q = self.query.value
        if not q.strip():
            self.message.value = message_html("type a query first", error=True)
            return None
        try:
            r = self.vault.recall(q, session=None, bars=self.bars)
        except SynapseError as exc:
            self.message.value = message_html(f"recall refused: {exc}", error=True)
            return None
        self.recall = r
        self.message.value = ""
        rows = r.explain()
        kept = sum(1 for x in rows if x.kept)
        self.summary.value = block(
            f"<b>{kept:,} kept, {len(rows) - kept:,} dropped</b> · {plural(len(r.lessons), 'approved lesson')} "
            f"in the banner · candidate path {esc(r.path)}")
        self.table.value = explanation_html(rows)
        self.text.value = block("<div><b>recall text</b></div>" + pre_html(r.text))
        out: Recall | None = r
        return out

    def save_defaults(self) -> Bars | None:
        """Save the sliders' bars as the vault's recall defaults (user only); returns the saved Bars."""
        try:
            saved = self.vault.save_default_bars(self.bars)
        except SynapseError as exc:
            self.message.value = message_html(f"not saved: {exc}", error=True)
            return None
        self._base = saved
        self.message.value = message_html(
            f"saved as the vault's recall defaults: floor {saved.floor:.2f}, margin {saved.margin:.2f}, "
            f"top-k {saved.top_k}, budget {saved.budget_tokens:,} tokens")
        out: Bars | None = saved
        return out

    def reset(self) -> Recall | None:
        """Put the sliders back on the vault's saved defaults and re-run; returns the Recall (or ``None``)."""
        try:
            bars = self.vault.default_bars()
        except SynapseError as exc:
            self.message.value = message_html(f"cannot read the defaults: {exc}", error=True)
            return None
        self._quiet = True
        try:
            self.floor.value, self.margin.value = bars.floor, bars.margin
            self.top_k.value, self.budget.value = bars.top_k, bars.budget_tokens
        finally:
            self._quiet = False
        self._base = bars
        return self.run() if self.query.value.strip() else None
