"""What the widget family shares: the vault a widget drives, the human-only check, the frame (header, filter bar,
body with table and detail pane, status line), the confirm step, refreshing when the vault changes, closing views.

Every member (MemoryBrowser, LessonReview, GateExplorer) is a :class:`FamilyWidget`: the same header (title,
counts, Refresh), the same filter bar (an even grid), the same table (:class:`~synapse_nb.widgets.table.RecordTable`)
with the same detail pane beside it (or right under it on a narrow output), and the status line where the user is
looking: under the buttons that acted.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from synapse_nb.context import agent_environment
from synapse_nb.errors import OfflineError, PermissionDeniedError, SynapseError
from synapse_nb.render import block, esc, message_html, note_html, table_html

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.vault import ReadableVault, Vault

__all__ = ["Confirm", "FamilyWidget", "block", "close_tree", "esc", "live_vault", "message_html",
           "note_html", "one_line", "require_human", "table_html"]


def one_line(exc: SynapseError) -> SynapseError:
    """``exc``, printed by IPython as one line (its ``_render_traceback_``) instead of a traceback: a widget refusing
    its vault is an answer, not a crash. The error keeps its type (no new class: errors.py lists them all)."""
    line = f"{type(exc).__name__}: {exc}"
    exc.__dict__["_render_traceback_"] = lambda: [line]
    return exc


def live_vault(vault: ReadableVault, widget: str) -> Vault:
    """The vault a widget drives: the handle it is given (a widget opens none). A team vault's stale copy cannot
    drive one: its :class:`~synapse_nb.errors.OfflineError` says why, as one line, before anything is drawn."""
    if vault.offline:
        try:
            vault.refuse(f"show the {widget} widget")
        except OfflineError as exc:
            raise one_line(exc) from None
    return vault


def require_human(vault: Vault, widget: str) -> None:
    """Refuse to build a human-review widget on an agent vault (one line in a notebook, no traceback)."""
    if vault.actor != "user":
        env = agent_environment()
        why = (f"this kernel runs in an agent's environment ({env}), where a vault acts as the agent" if env else
               f"a vault opened with actor={vault.actor!r} may not drive it")
        raise one_line(PermissionDeniedError(
            f"{widget} acts as the human reviewer; {why} (open the vault with actor='user' in your own notebook, "
            "in a kernel no coding agent started)"))


def close_tree(widget: Any) -> None:
    """Close a widget and every widget under it (frees their comms when a view is redrawn)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()


def button(description: str, icon: str, tooltip: str, *, style: str = "", disabled: bool = False) -> widgets.Button:
    """A family button: sized to its label."""
    return widgets.Button(description=description, icon=icon, tooltip=tooltip, button_style=style, disabled=disabled,
                          layout=widgets.Layout(width="auto"))


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
        self.yes_button = button("Yes", "check", "", style="danger")
        self.cancel_button = button("Cancel", "times", "Keep it as it is")
        self._action: Callable[[], Any] | None = None
        self.yes_button.on_click(lambda _b: self._confirm())
        self.cancel_button.on_click(lambda _b: self.cancel())
        super().__init__(children=[self.question, self.yes_button, self.cancel_button],
                         layout=widgets.Layout(display="none", align_items="center", flex_flow="row wrap"))
        self.add_class("synapse-confirm")

    @property
    def pending(self) -> bool:
        return self._action is not None

    def ask(self, question: str, label: str, action: Callable[[], Any], *, style: str = "danger") -> None:
        """Show ``question`` with a confirm button labelled ``label`` that runs ``action``."""
        self._action = action
        self.question.value = block(f"<b>{esc(question)}</b>")
        self.yes_button.description = label
        self.yes_button.tooltip = label
        self.yes_button.button_style = style
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


# ---------------------------------------------------------------------------------------------------- the frame
def _shell() -> Any:
    """The running IPython shell, or None (headless scripts)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return get_ipython()


class _Watch:
    """Calls ``widget.vault_changed()`` when the vault moved: after each notebook cell (a ``%remember`` in another
    cell, another process) and after each write through the widget's own connection. Holds the widget weakly, so a
    widget nobody shows any more is not kept alive by its vault or the shell."""

    def __init__(self, widget: FamilyWidget) -> None:
        self._ref = weakref.ref(widget)
        self._shell = _shell()
        if self._shell is not None:
            self._shell.events.register("post_run_cell", self.after_cell)
        widget.vault.on_change(self.after_write)

    def _widget(self) -> FamilyWidget | None:
        w = self._ref()
        if w is None or w.closed:
            self.stop()
            return None
        return w

    def after_cell(self, *_args: Any) -> None:
        w = self._widget()
        if w is None:
            return
        try:
            w.vault_changed()
        except Exception as exc:  # noqa: BLE001 - a hook must never break the user's cell: stop watching instead
            self.stop()
            print(f"synapse_nb: {type(w).__name__} stopped following the vault: {exc}")

    def after_write(self, _changes: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # a background writer: the check after the next cell sees it (widgets are drawn from one thread)
        w = self._widget()
        if w is not None and not w.acting:  # the widget's own actions refresh it themselves
            w.vault_changed()

    def stop(self) -> None:
        if self._shell is not None:
            try:
                self._shell.events.unregister("post_run_cell", self.after_cell)
            except ValueError:
                pass
            self._shell = None


class FamilyWidget(widgets.VBox):
    """The frame every member shares: a header (title, counts, buttons, Refresh), a filter bar, a body holding the
    table (and what goes under it) beside the detail pane, each with the family's classes and styles.

    Subclasses build their parts, call :meth:`frame`, and implement :meth:`refresh`. The widget refreshes itself
    when the vault changes (:meth:`vault_changed`, checked after every notebook cell and after every write through
    its connection): a ``%remember`` in another cell shows up without a click; Refresh does it by hand.

    Attributes
    ----------
    vault : the vault it drives; header : the title HTML; refresh_button; message : the status line (the outcome of
    the last action, or why it was refused) in the detail pane, under the buttons; detail : the detail pane.
    """

    #: what a terminal, where no widget shows, uses instead (the widget's text/plain says so)
    terminal = "synapse-nb --help"

    def __init__(self, vault: Vault, title: str) -> None:
        self.vault = vault
        self.closed = False
        self.acting = False  # an action of the widget is writing: it refreshes itself afterwards
        self.title = title
        self.header = widgets.HTML()
        self.refresh_button = button("Refresh", "refresh", "Re-read the vault (it refreshes itself after every cell "
                                     "that changed it)")
        self.refresh_button.on_click(lambda _b: self.refresh_now())
        self.message = widgets.HTML()
        self.message.add_class("synapse-status")
        self.detail = widgets.VBox()
        self.detail.add_class("synapse-detail")
        self._seen = self._version()
        super().__init__()
        self.add_class("synapse-widget")
        self._watch = _Watch(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget for a front end that shows widgets; for a terminal IPython, what it is and what to use there
        (its text/plain was ``LessonReview(children=(HBox(...`` cut at 110 characters: review 68)."""
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict):
            data["text/plain"] = (f"{self.title}: a widget, shown by Jupyter (Lab, Notebook, VS Code), not by a "
                                  f"terminal; at a terminal use {self.terminal}")
        return data

    def frame(self, *, buttons: Sequence[widgets.Widget] = (), filters: Sequence[widgets.Widget] = (),
              before: Sequence[widgets.Widget] = (), main: Sequence[widgets.Widget] = (),
              after: Sequence[widgets.Widget] = ()) -> None:
        """Lay the widget out: header (title, ``buttons``, Refresh), filter bar, ``before``, body (``main`` beside
        the detail pane), then ``after``."""
        head = widgets.HBox([self.header, *buttons, self.refresh_button])
        head.add_class("synapse-header")
        self.header.add_class("synapse-title")
        children: list[widgets.Widget] = [head]
        if filters:
            bar = widgets.Box(list(filters))
            bar.add_class("synapse-filters")
            children.append(bar)
        children += before
        box = widgets.VBox(list(main))
        box.add_class("synapse-main")
        body = widgets.HBox([box, self.detail])
        body.add_class("synapse-body")
        children += [body, *after]
        self.children = tuple(children)

    def set_header(self, counts: str) -> None:
        self.header.value = block(f"<b style='font-size:1.1em'>{esc(self.title)}</b>"
                                  f"<span style='margin-left:10px'>{esc(counts)}</span>")

    def say(self, text: str, *, error: bool = False) -> None:
        """Show an outcome in the status line (under the buttons that acted)."""
        self.message.value = message_html(text, error=error)

    # -- refreshing ------------------------------------------------------------------------------------------
    def _version(self) -> str | None:
        try:
            return self.vault.version()
        except SynapseError:
            return None

    def refresh(self) -> object:  # pragma: no cover - every member implements it
        raise NotImplementedError

    def refresh_now(self) -> None:
        """Re-read the vault (the Refresh button)."""
        self.message.value = ""
        self._seen = self._version()
        self.refresh()

    def vault_changed(self) -> bool:
        """Refresh when the vault moved since the widget last read it; returns whether it did."""
        now = self._version()
        if now is None or now == self._seen:
            return False
        self._seen = now
        self.refresh()
        return True

    def act(self, action: Callable[[], Any]) -> Any:
        """Run one of the widget's own writes (its refresh follows, not the change listener's)."""
        self.acting = True
        try:
            return action()
        finally:
            self.acting = False
            self._seen = self._version()

    def close(self) -> None:
        """Close the widget and stop watching the vault."""
        self.closed = True
        watch = getattr(self, "_watch", None)  # absent when the constructor refused the vault
        if watch is not None:
            watch.stop()
        super().close()
