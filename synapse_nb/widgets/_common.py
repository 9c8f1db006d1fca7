"""Small helpers shared by the widgets: the vault a widget drives, the human-only check, a confirm step, closing
views."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.errors import PermissionDeniedError
from synapse_nb.render import block, esc, message_html, table_html

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import ReadableVault, Vault

__all__ = ["Confirm", "block", "close_tree", "esc", "live_vault", "message_html", "require_human", "table_html"]


def live_vault(vault: ReadableVault, widget: str) -> Vault:
    """The vault a widget drives: the handle it is given (a widget opens none). A team vault's stale copy cannot
    drive one: its :class:`~synapse_nb.errors.OfflineError` says why, before anything is drawn."""
    if vault.offline:
        vault.refuse(f"show the {widget} widget")
    return vault


def require_human(vault: Vault, widget: str) -> None:
    """Refuse to build a human-review widget on an agent vault."""
    if vault.actor != "user":
        raise PermissionDeniedError(
            f"{widget} acts as the human reviewer; a vault opened with actor={vault.actor!r} may not drive it "
            "(open the vault with actor='user' in your own notebook)")


def close_tree(widget: Any) -> None:
    """Close a widget and every widget under it (frees their comms when a view is redrawn)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()


class Confirm(widgets.HBox):
    """The second step of a destructive click: a question, a confirm button and Cancel; hidden until asked.

    ``ask(question, label, action)`` shows it; the confirm button runs ``action()`` once and hides it;
    Cancel (or a new ``ask``/``cancel()``) hides it without acting.

    Attributes
    ----------
    question : HTML; yes_button, cancel_button : Buttons; pending : True while a question is shown.
    """

    def __init__(self) -> None:
        self.question = widgets.HTML()
        self.yes_button = widgets.Button(description="Yes", button_style="danger", icon="check")
        self.cancel_button = widgets.Button(description="Cancel", icon="times")
        self._action: Callable[[], Any] | None = None
        self.yes_button.on_click(lambda _b: self._confirm())
        self.cancel_button.on_click(lambda _b: self.cancel())
        super().__init__(children=[self.question, self.yes_button, self.cancel_button],
                         layout=widgets.Layout(display="none", align_items="center"))
        self.add_class("synapse-confirm")

    @property
    def pending(self) -> bool:
        return self._action is not None

    def ask(self, question: str, label: str, action: Callable[[], Any]) -> None:
        """Show ``question`` with a confirm button labelled ``label`` that runs ``action``."""
        self._action = action
        self.question.value = block(f"<b>{esc(question)}</b>")
        self.yes_button.description = label
        self.yes_button.tooltip = label
        self.layout.display = "flex"

    def cancel(self) -> None:
        """Hide the question; nothing happens."""
        self._action = None
        self.layout.display = "none"

    def _confirm(self) -> None:
        action, self._action = self._action, None
        self.layout.display = "none"
        if action is not None:
            action()
