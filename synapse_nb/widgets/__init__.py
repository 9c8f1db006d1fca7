"""ipywidgets for the human side of the vault: review lessons, browse memories, explore the gate.

Every widget is itself a displayable ``ipywidgets.VBox`` built on a vault handle and acts as the
human user: the store is the source of truth (each action writes through the vault API and the
widget re-reads the store). The three are one family (:class:`~synapse_nb.widgets._common.FamilyWidget`):
the same header (title, counts, Refresh), filter bar, table (:class:`RecordTable`) with the selected row's
detail pane beside it (or directly under it on a narrow output), and the outcome of an action under the
buttons that acted. Each refreshes itself when the vault changes (after every notebook cell, and after every
write through its connection), marks what an agent wrote, and keeps the keys pressed in it away from the
notebook's shortcuts.

- :class:`LessonReview` — every lesson in a table; the selected one beside it: approve (with your own wording,
  for a duration chosen first), reject (after a confirmation), re-approve, withdraw an approval, the reverted
  change (``git show --stat`` and patch) behind a button; Scan looks for new reverts (``v.lessons.scan()``).
- :class:`MemoryBrowser` — search, filter, sort and page through memories; click a row to see it in full,
  verify it or delete it (after a confirmation), read its History (every version: who, through which surface,
  when) and revert it to an earlier version.
- :class:`ChangeReview` — agents' pending revisions of your memories (accept, reject) and the duplicate or
  contradicting pairs found on write (merge, keep both, supersede).
- :class:`GateExplorer` — move the gate's bars with sliders (each explained on the page) and watch every
  candidate kept or dropped, named by its record, and the recall text change; save the bars as the vault's
  defaults (after a confirmation that says agents' recalls use them too).
- :class:`RecordTable` — the family's table (an anywidget): fits the output's width, sorts by its headers,
  selects by click or keyboard.

Colours come from JupyterLab's CSS variables, so the widgets read well on the light and the dark theme.

Examples
--------
>>> import synapse_nb as syn, tempfile
>>> from synapse_nb.widgets import LessonReview
>>> v = syn.open_vault(tempfile.mkdtemp())
>>> les = v.lessons.create("Reverted: switch the cache to Redis", files=["cache.py"])
>>> w = LessonReview(v)
>>> card = w.cards[les.id]
>>> card.approve_button.disabled          # approving needs your wording
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
from synapse_nb.widgets.review import ChangeReview
from synapse_nb.widgets.table import RecordTable

__all__ = ["ANY", "ChangeReview", "GateExplorer", "LessonCard", "LessonReview", "MemoryBrowser", "RecordTable"]
