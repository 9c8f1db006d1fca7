"""What a person's write says of the version it replaced: on a team vault, another person's verified memory.

:class:`Replaced` is what ``Memory.replaced`` holds (a :class:`~synapse_nb.changes.HistoryEntry`: the entry of the
version replaced), read through a protocol so that ``models`` imports nothing of ``changes``, which imports it (the
house keeps no circle). ``Memories._noted`` decides when (``Versions.overwritten``); ``Memory.note`` is the one
sentence every surface shows (the CLI, the magics, the widgets; the API returns it).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Replaced"]


class Replaced(Protocol):
    """The version a person's write replaced: whose it was, which, and how to restore it."""

    @property
    def rid(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def login(self) -> str | None: ...
    @property
    def whose(self) -> str: ...
    def restore_hint(self) -> str: ...
    def replaced_note(self) -> str: ...
