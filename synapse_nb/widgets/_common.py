"""Small helpers shared by the widgets: HTML escaping, messages, the human-only check."""

from __future__ import annotations

import html
from typing import Any

from synapse_nb.errors import PermissionDeniedError

OK_STYLE = "color:#1a7f37"
ERR_STYLE = "color:#b42318"


def esc(value: Any) -> str:
    """HTML-escape any value (``None`` becomes an empty string)."""
    return "" if value is None else html.escape(str(value))


def message_html(text: str, *, error: bool = False) -> str:
    """A one-line status message, green for done, red for refused."""
    if not text:
        return ""
    return f"<span style='{ERR_STYLE if error else OK_STYLE}'>{esc(text)}</span>"


def require_human(vault: Any, widget: str) -> None:
    """Refuse to build a human-review widget on an agent vault."""
    if getattr(vault, "actor", None) != "user":
        raise PermissionDeniedError(
            f"{widget} acts as the human reviewer; a vault opened with actor={vault.actor!r} may not drive it "
            "(open the vault with actor='user' in your own notebook)")


def table_html(header: list[str], rows: list[list[str]], *, empty: str = "nothing to show") -> str:
    """An HTML table; cells are already-escaped HTML."""
    if not rows:
        return f"<i>{esc(empty)}</i>"
    head = "".join(f"<th style='text-align:left;padding:2px 8px'>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left;padding:2px 8px;vertical-align:top'>{c}</td>" for c in row)
        + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def close_tree(widget: Any) -> None:
    """Close a widget and every widget under it (frees their comms when a view is redrawn)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()
