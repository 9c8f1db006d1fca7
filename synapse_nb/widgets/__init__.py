"""ipywidgets for the human side of the vault: review lessons, browse memories, explore the gate.

Every widget is itself a displayable ``ipywidgets.VBox`` built on a vault handle and acts as the
human user: the store is the source of truth (each action writes through the vault API and the
widget re-reads the store), so two widgets on the same vault agree after a refresh.

- :class:`LessonReview` — approve (with your own wording), reject, re-approve lessons from reverts.
- :class:`MemoryBrowser` — search and filter memories; verify or delete the selected one.
- :class:`GateExplorer` — type a query, see every candidate's score against the bars and the recall text.

Examples
--------
>>> import synapse_nb as syn, tempfile
>>> from synapse_nb.widgets import LessonReview
>>> v = syn.open_vault(tempfile.mkdtemp())
>>> les = v.lessons.create("Reverted: switch the cache to Redis", files=["cache.py"])
>>> w = LessonReview(v)
>>> card = w.cards[les.id]
>>> card.text.value = "Keep the in-process cache; Redis broke offline runs."
>>> card.approve_button.click()
>>> v.lessons.get(les.id).status
'approved'
"""

from __future__ import annotations

from synapse_nb.widgets.gate import GateExplorer
from synapse_nb.widgets.lessons import LessonCard, LessonReview
from synapse_nb.widgets.memory import MemoryBrowser

__all__ = ["GateExplorer", "LessonCard", "LessonReview", "MemoryBrowser"]
