"""GateExplorer: type a query, see every candidate's score against the bars and the recall text."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from synapse_nb.errors import SynapseError
from synapse_nb.widgets._common import esc, message_html, table_html

__all__ = ["GateExplorer"]


def explanation_html(recall: Any) -> str:
    """The gate's table for one recall: kept or not, score, kind, id, the bar that decided, matched terms."""
    rows = []
    for r in recall.explain():
        style = "" if r.kept else " style='color:#888'"
        rows.append([f"<span{style}>{'kept' if r.kept else 'dropped'}</span>", f"{r.score:.3f}", esc(r.kind),
                     f"<code>{esc(r.id)}</code>", esc(r.bar), esc(", ".join(r.matched) or "-"), esc(r.reason)])
    bars = recall.bars
    head = (f"<small>bars: floor {bars.floor}, margin {bars.margin} x best, top {bars.top_k} per kind, "
            f"budget {bars.budget_tokens} tokens; path {esc(recall.path)}</small>")
    return head + table_html(["", "score", "kind", "id", "bar", "matched", "reason"], rows,
                             empty="no candidate scored above zero")


class GateExplorer(widgets.VBox):
    """Explore the recall gate: a query box, the per-candidate table from ``Recall.explain()``, the text.

    Runs ``vault.recall(query, session=None)`` (no session: each run shows everything that clears the
    bars, and running it never marks anything as seen for a notebook session).

    Parameters
    ----------
    vault : the vault to query (any actor: recall is what an agent would see for an agent vault).
    budget_tokens : token budget for the recall (default: the gate's default).

    Attributes
    ----------
    query : Text box (Enter runs); run_button; table : HTML of the candidates; text : HTML of the recall
    text; recall : the last :class:`synapse_nb.recall.Recall` (or ``None``); message : errors.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> _ = v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    >>> g = GateExplorer(v)
    >>> g.query.value = "how do we run migrations"
    >>> [i.id for i in g.recall.items] == [v.memories.get_by_key("procedure", "run_migrations").id]
    True
    """

    def __init__(self, vault: Any, *, budget_tokens: int | None = None) -> None:
        self.vault = vault
        self.budget_tokens = budget_tokens
        self.recall: Any = None
        self.query = widgets.Text(placeholder="type a query and press Enter", description="Query",
                                  continuous_update=False, layout=widgets.Layout(width="70%"))
        self.run_button = widgets.Button(description="Explain", icon="search")
        self.table = widgets.HTML()
        self.text = widgets.HTML()
        self.message = widgets.HTML()
        self.query.observe(lambda _c: self.run(), names="value")
        self.run_button.on_click(lambda _b: self.run())
        super().__init__(children=[widgets.HBox([self.query, self.run_button]), self.message, self.table,
                                   self.text])

    def run(self, query: str | None = None) -> Any:
        """Recall ``query`` (default: the text box) and show the table and the text; returns the Recall."""
        if query is not None and query != self.query.value:
            self.query.value = query  # the observer runs the recall
            return self.recall
        q = self.query.value
        if not q.strip():
            self.message.value = message_html("type a query first", error=True)
            return None
        kwargs: dict[str, Any] = {"session": None}
        if self.budget_tokens is not None:
            kwargs["budget_tokens"] = self.budget_tokens
        try:
            r = self.vault.recall(q, **kwargs)
        except SynapseError as exc:
            self.message.value = message_html(f"recall refused: {exc}", error=True)
            return None
        self.recall = r
        self.message.value = ""
        self.table.value = explanation_html(r)
        self.text.value = ("<b>recall text</b>" + f"<pre style='white-space:pre-wrap'>{esc(r.text)}</pre>")
        return r
