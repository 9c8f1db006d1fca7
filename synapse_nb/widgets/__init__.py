"""ipywidgets for the human side of the vault: review lessons, browse memories, explore the gate.

Every widget is itself a displayable ``ipywidgets.VBox`` built on a vault handle and acts as the
human user: the store is the source of truth (each action writes through the vault API and the
widget re-reads the store), so two widgets on the same vault agree after a refresh.

- :class:`LessonReview` — approve (with your own wording), reject (after a confirmation), re-approve
  lessons from reverts; each shows the reverted change (``git show --stat`` and patch, collapsed).
- :class:`MemoryBrowser` — search, filter, sort and page through memories; click a row to select it,
  verify it or delete it (after a confirmation).
- :class:`GateExplorer` — move the gate's bars with sliders and watch every candidate kept or dropped
  and the recall text change; save the bars as the vault's defaults.
- :class:`RecordTable` — the clickable, sortable table the browser is built on (an anywidget).

Colours come from JupyterLab's CSS variables, so the widgets read well on the light and the dark theme.

Examples
--------
>>> import synapse_nb as syn, tempfile
>>> from synapse_nb.widgets import LessonReview
>>> v = syn.open_vault(tempfile.mkdtemp())
>>> les = v.lessons.create("Reverted: switch the cache to Redis", files=["cache.py"])
>>> w = LessonReview(v)
>>> card = w.cards[les.id]
>>> card.approve_button.disabled          # approving needs your wording (or an agent's analysis)
True
>>> card.text.value = "Keep the in-process cache; Redis broke offline runs."
>>> card.approve_button.click()
>>> v.lessons.get(les.id).status
'approved'
"""

from __future__ import annotations

from synapse_nb.widgets.gate import GateExplorer
from synapse_nb.widgets.lesson_card import LessonCard
from synapse_nb.widgets.lessons import LessonReview
from synapse_nb.widgets.memory import ANY, MemoryBrowser
from synapse_nb.widgets.table import RecordTable

__all__ = ["ANY", "GateExplorer", "LessonCard", "LessonReview", "MemoryBrowser", "RecordTable"]
