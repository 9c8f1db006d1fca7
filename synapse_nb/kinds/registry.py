"""The manager of each record kind, by name: the second half of a kind's registration (the first is its line in
:data:`synapse_nb.models.KINDS`).

A new kind needs its record type and registry line in ``models.py``, its manager module in ``kinds/``, one entry
here, and its SQL in each store backend; every list of kinds elsewhere (tables, export order, recall's groups, the
CLI's and MCP's choices) is derived from the registry.

>>> from synapse_nb.models import KIND_NAMES
>>> tuple(MANAGERS) == KIND_NAMES
True
>>> MANAGERS["memory"].__name__
'Memories'
"""

from __future__ import annotations

from typing import Any

from synapse_nb.kinds._base import KindManager
from synapse_nb.kinds.checkpoints import Checkpoints
from synapse_nb.kinds.decisions import Decisions
from synapse_nb.kinds.episodes import Episodes
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.kinds.memories import Memories
from synapse_nb.kinds.notes import Notes
from synapse_nb.models import KINDS, Record

__all__ = ["MANAGERS"]

_BY_RECORD: dict[type[Record], type[KindManager[Any]]] = {
    m.record_cls: m for m in (Memories, Decisions, Checkpoints, Lessons, Episodes, Notes)}
#: Each kind's manager class, in registry order.
MANAGERS: dict[str, type[KindManager[Any]]] = {k.name: _BY_RECORD[k.record] for k in KINDS}
