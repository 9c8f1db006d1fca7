"""``%lessons``: the review widget for lessons learnt from reverted changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand

from synapse_nb.magics._base import FamilyMagics, usage_errors

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.widgets import LessonReview

__all__ = ["LessonsMagics"]


@magics_class
class LessonsMagics(FamilyMagics):
    """``%lessons``."""

    @no_var_expand
    @line_magic
    @usage_errors
    def lessons(self, line: str = "") -> LessonReview:
        """Review lessons from reverted changes: approve (with your wording, for a duration you choose first),
        reject, re-approve expired ones, withdraw an approval; its Scan button looks for new reverts in git.

        Returns the LessonReview widget (shown as the cell's output). Approving here is the same call as
        ``vault.lessons.approve(id, text=..., expiry_days=...)``; Scan is ``vault.lessons.scan()`` (showing the
        widget alone never reads git).

        Examples
        --------
        ::

            %lessons
            w = %lessons     # keep the widget, e.g. w.refresh()
        """
        if line.strip():
            raise UsageError(f"%lessons takes no arguments, got {line.strip()!r}")
        from synapse_nb.widgets import (
            LessonReview,  # here: ipywidgets and anywidget load only when a widget is asked for
        )

        return LessonReview(self.vault)
