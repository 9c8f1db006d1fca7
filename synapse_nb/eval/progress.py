"""Progress bars for long evaluations: tqdm on a terminal, nothing anywhere else.

``progress=None`` (the default of every long evaluation) shows a bar only when standard error is a
terminal, so notebooks, pipes, log files and ``--json`` output never get one; ``True`` forces it and
``False`` turns it off.

Examples
--------
>>> with progress_bar(3, "demo", enabled=False) as bar:
...     bar.update(3)
"""

from __future__ import annotations

import sys
from typing import Any, Self

__all__ = ["progress_bar", "wants_progress"]


def wants_progress(enabled: bool | None) -> bool:
    """Whether to draw a bar: ``enabled`` when given, else whether standard error is a terminal."""
    if enabled is not None:
        return bool(enabled)
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class _NoBar:
    """The bar's interface, doing nothing."""

    def update(self, n: int = 1) -> None:
        """Ignore progress."""

    def set_postfix_str(self, s: str = "") -> None:
        """Ignore a status."""

    def close(self) -> None:
        """Nothing to close."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def progress_bar(total: int, desc: str, *, enabled: bool | None = None, unit: str = "step") -> Any:
    """A ``tqdm`` bar on standard error (see :func:`wants_progress`), or a do-nothing stand-in."""
    if not wants_progress(enabled):
        return _NoBar()
    from tqdm import tqdm  # tqdm: only when a bar is drawn

    # mininterval=0: the steps are coarse (fits, batches, conversations), so every step redraws
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True, mininterval=0)
