"""The lines a restored checkpoint's text gives the checkpoints around it: those saved after it on its branch
(:func:`since_text`, under :meth:`~synapse_nb.models.Checkpoint.restore_text`) and one other (:func:`checkpoint_line`:
a person's own that an agent's checkpoint took the place of, ``Checkpoints.resume``). Each line starts with the
checkpoint's own mark; its fields are quoted data (one line, banner and label look-alikes neutralised)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from synapse_nb._util import shown_id, when
from synapse_nb.provenance import FILE_NAMES, file_names, inline, mark, neutralise

__all__ = ["Shown", "checkpoint_line", "since_text"]


class Shown(Protocol):
    """What a checkpoint's line reads of a :class:`~synapse_nb.models.Checkpoint` (a protocol, so that this module
    imports nothing of ``models``, which imports it: the house keeps no circle)."""

    @property
    def id(self) -> str: ...
    @property
    def created_at(self) -> str: ...
    @property
    def doing(self) -> str: ...
    @property
    def next_step(self) -> str | None: ...
    @property
    def blockers(self) -> str | None: ...
    @property
    def changed_files(self) -> tuple[str, ...]: ...
    @property
    def source(self) -> str: ...
    @property
    def automatic(self) -> bool: ...


def checkpoint_line(c: Shown, width: int) -> str:
    """One checkpoint on one line: ``- [mark] id (when[, automatic]): doing; next: ...; blockers: ...; files ...``,
    each field cut to ``width`` characters (at most 10 files named)."""
    parts = [inline(c.doing, width)]
    parts += [f"next: {inline(c.next_step, width)}"] if c.next_step else []
    parts += [f"blockers: {inline(c.blockers, width)}"] if c.blockers else []
    parts += [f"files ({FILE_NAMES}): {file_names(c.changed_files[:10], width)}"] if c.changed_files else []
    how = ", automatic" if c.automatic else ""
    return f"- {mark(c)} {shown_id(c.id)} ({when(c.created_at)}{how}): {neutralise('; '.join(parts))}"


def since_text(since: Sequence[Shown], later: int, width: int, agents: int = 0) -> str:
    """What :meth:`~synapse_nb.models.Checkpoint.restore_text` says of the ``later`` checkpoints saved after the one
    it restores: a line saying how many (``agents`` of them agents', counted apart), then one line each for
    ``since`` (``Checkpoints.since``: people's first, then agents', each newest first), and how many are not shown.

    Review 87: 50 automatic checkpoints of an agent's listed newest first left a person's own, saved before them,
    out of the three shown, and nothing said whose the 48 not shown were.

    >>> from synapse_nb.models import Checkpoint
    >>> mine = Checkpoint(id="ckp_1", mind="m", created_at="2026-12-01T10:00:00.000000Z", updated_at="", doing="a",
    ...                   origin="watch")
    >>> print(since_text([mine], 51, 300, agents=50))
    Since then on this branch: 51 later checkpoints, 50 of them agents' (what happened after it; people's first, \
each newest first):
    - [user] ckp_1 (2026-12-01 10:00 UTC, automatic): a
    (… 50 more not shown, 50 of them agents')
    """
    many = f"{later} later checkpoint{'' if later == 1 else 's'}" + (f", {agents} of them agents'" if agents else "")
    order = "people's first, each newest first" if agents else "newest first"
    lines = [f"Since then on this branch: {many} (what happened after it; {order}):"]
    lines += [checkpoint_line(c, width) for c in since]
    if later > len(since):
        unshown = agents - sum(c.source == "agent" for c in since)
        theirs = f", {unshown} of them agents'" if unshown > 0 else ""
        lines.append(f"(… {later - len(since)} {'more' if agents else 'older'} not shown{theirs})")
    return "\n".join(lines)
