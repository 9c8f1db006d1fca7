"""Automatic checkpoints: one rule for the notebook (cells) and ``synapse-nb watch`` (changed files).

An :class:`AutoCheckpoint` counts units of work in ONE unit and says when a checkpoint is due:

- ``unit="cell"`` (the notebook's ``%checkpoint auto on``): an executed cell counts when it ran without
  error and, inside git, git reports changed files (outside git every successful cell counts); the
  checkpoint lists the files git reports changed at that moment;
- ``unit="file"`` (``synapse-nb watch``): each newly changed file counts once; the checkpoint lists the
  files counted since the previous one.

Every ``every`` units it is due; :meth:`AutoCheckpoint.save` then writes it through the public
:meth:`~synapse_nb.kinds.checkpoints.Checkpoints.create` and the count starts again. How many units make
a checkpoint is the vault setting of that unit (``auto_checkpoint_cells`` / ``auto_checkpoint_files``),
which falls back to ``auto_checkpoint_every`` when not set (the one setting that counted both before).

The counter holds no vault: it outlives a vault handle (the notebook reopens the vault when its
``vault_path`` or ``mind`` changes) and is testable on its own.

Examples
--------
>>> auto = AutoCheckpoint(every=2, enabled=True)
>>> [auto.observe(success=True, changed=["a.py"]) for _ in range(3)]
[False, True, False]
>>> files = AutoCheckpoint(every=3, enabled=True, unit="file")
>>> files.observe_files(["a.py", "b.py"]), files.observe_files(["c.py"])
(False, True)
>>> files.take()
('auto checkpoint: 3 more changed files', ['a.py', 'b.py', 'c.py'])
>>> AutoCheckpoint.every_from({"auto_checkpoint_cells": None, "auto_checkpoint_every": 4}.get, "cell")
4
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from synapse_nb._cleaning import code_point, invisibles_shown
from synapse_nb._util import MAX_FILES, MAX_PATH_CHARS, plural
from synapse_nb.errors import ValidationError
from synapse_nb.kinds.lesson_fields import git_line

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.kinds.checkpoints import Checkpoints
    from synapse_nb.models import Checkpoint

__all__ = ["MAX_EVERY", "SETTING_OF_UNIT", "AutoCheckpoint", "shown_path"]

#: The vault setting that says how many units of each kind make one automatic checkpoint.
SETTING_OF_UNIT = {"cell": "auto_checkpoint_cells", "file": "auto_checkpoint_files"}
#: The setting each of them falls back to when not set (it counted both, before they were split).
FALLBACK_SETTING = "auto_checkpoint_every"
#: Largest count accepted.
MAX_EVERY = 100_000

Unit = Literal["cell", "file"]
#: shown as their code points besides git_line's controls: a lone surrogate, and a tab (one line shows it as a space)
_UNSHOWN = re.compile("[\ud800-\udfff\t]")


def shown_path(path: str) -> str:
    r"""A file name git reports, as an automatic checkpoint lists it: each control character, tab, line break,
    invisible character (a bidi control, a zero-width space: :func:`~synapse_nb._cleaning.invisibles_shown`, the rule
    every reader shows them by) and undecodable byte (a lone surrogate, from ``surrogateescape``) shown as its code
    point, and a name longer than :data:`~synapse_nb._util.MAX_PATH_CHARS` cut at its start (its end kept), as a
    scanned lesson stores git's text (:func:`~synapse_nb.kinds.lesson_fields.git_line`). The write path would
    otherwise drop the invisible ones (``a<U+202E>yp.exe`` stored as ``ayp.exe``, a name no file has) and one line
    shows a tab as a space.

    Review 41: one ordinary file named ``notes\x1b[8m.md`` in the work tree made the write refuse every automatic
    checkpoint, each cell saying only "control character U+001B". Shown, the file is still listed, and the person
    sees what its name holds; left out, the checkpoint would hide that the file changed.

    >>> shown_path("notes\x1b[8m.md"), shown_path("a\udcffb.py"), shown_path("src/ok.py")
    ('notes<U+001B>[8m.md', 'a<U+DCFF>b.py', 'src/ok.py')
    >>> shown_path("a\u202eyp.exe"), shown_path("a\tb.py")  # not "aexe.py" reversed, nor "a b.py"
    ('a<U+202E>yp.exe', 'a<U+0009>b.py')
    """
    return git_line(invisibles_shown(_UNSHOWN.sub(lambda m: code_point(m.group()), path)), MAX_PATH_CHARS,
                    left=True)


@dataclass
class AutoCheckpoint:
    """Counts units of work (executed cells, or newly changed files) and says when a checkpoint is due.

    Parameters
    ----------
    every : int
        Units per automatic checkpoint (1 to 100000).
    enabled : bool
        A disabled counter counts nothing (the notebook's ``%checkpoint auto off``).
    unit : "cell" or "file"
        What one unit is.

    Attributes
    ----------
    count : int
        Units counted since the last checkpoint.
    cells_seen : int
        Cells observed while enabled, counted or not (``unit="cell"``).
    files : list of str
        The files the next checkpoint lists.
    """

    every: int = 10
    enabled: bool = False
    unit: Unit = "cell"
    count: int = 0
    cells_seen: int = 0
    files: list[str] = field(default_factory=list)
    _due: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.unit not in SETTING_OF_UNIT:
            raise ValidationError(f"unit must be 'cell' or 'file', got {self.unit!r}")
        self.set_every(self.every)

    def set_every(self, n: int) -> None:
        """Change how many units make a checkpoint (1 to 100000)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_EVERY:
            raise ValidationError(f"--every must be a whole number of {self.unit}s from 1 to {MAX_EVERY}, got {n!r}")
        self.every = n

    @staticmethod
    def every_from(setting: Callable[[str], Any], unit: Unit) -> int:
        """Units per checkpoint from the vault settings: the unit's own setting, else ``auto_checkpoint_every``.

        ``setting`` reads one setting by name, e.g. ``vault.settings.get``.
        """
        if unit not in SETTING_OF_UNIT:
            raise ValidationError(f"unit must be 'cell' or 'file', got {unit!r}")
        value = setting(SETTING_OF_UNIT[unit])
        return int(setting(FALLBACK_SETTING) if value is None else value)

    # -- counting ---------------------------------------------------------------------------------------------
    def _add(self, n: int) -> bool:
        self.count += n
        if self.count >= self.every:
            self._due, self.count = self.count, 0
            return True
        return False

    def observe(self, *, success: bool, changed: list[str] | None) -> bool:
        """Record one executed cell (``unit="cell"``); True when a checkpoint is due now.

        ``changed`` is git's list of changed files, or ``None`` outside git.
        """
        if not self.enabled:
            return False
        self.cells_seen += 1
        if not success or (changed is not None and not changed):
            return False
        self.files = list(changed or [])
        return self._add(1)

    def observe_files(self, paths: Iterable[str]) -> bool:
        """Record newly changed files (``unit="file"``), each counted once; True when a checkpoint is due now."""
        if not self.enabled:
            return False
        seen = set(self.files)
        new = [p for p in dict.fromkeys(paths) if p not in seen]
        self.files.extend(new)
        return self._add(len(new)) if new else False

    # -- the checkpoint -----------------------------------------------------------------------------------------
    def take(self) -> tuple[str, list[str]]:
        """What the due checkpoint says and lists (its ``doing`` and files); the files start again empty.

        Every name is listed as :func:`shown_path` gives it, so no file name git reports can make the write refuse
        the checkpoint; past :data:`~synapse_nb._util.MAX_FILES` names the rest are counted in ``doing``.
        """
        n = self._due or self.every
        if self.unit == "cell":
            doing = f"auto checkpoint after {plural(n, 'cell')} that changed something"
        else:
            doing = f"auto checkpoint: {plural(n, 'more changed file')}"
        files = sorted(dict.fromkeys(shown_path(f) for f in self.files))
        if len(files) > MAX_FILES:  # a checkpoint lists at most MAX_FILES: cut, and say so, never refuse the whole
            doing += f"; {plural(len(files) - MAX_FILES, 'more changed file')} not listed (at most {MAX_FILES} are)"
        files, self.files, self._due = files[:MAX_FILES], [], 0
        return doing, files

    def save(self, checkpoints: Checkpoints, *, origin: str = "auto") -> Checkpoint:
        """Write the due checkpoint with ``checkpoints.create`` (origin ``auto``, or ``watch`` for the watcher)."""
        doing, files = self.take()
        return checkpoints.create(doing, files=files, origin=origin)

    def describe(self) -> str:
        """One line for people: off, or on with the rule and the count so far."""
        if not self.enabled:
            return "auto checkpoints: off"
        if self.unit == "cell":
            rule = "cell that changes" if self.every == 1 else f"{self.every} cells that change"
            rule += " something"
        else:
            rule = plural(self.every, "newly changed file")
        return f"auto checkpoints: on, every {rule} ({self.count} counted since the last one)"
