"""One way to take a lock file with a bounded wait (POSIX ``flock``): the index lock, the hook's lock and a team
vault's offline copy all wait this way, never without limit (an agent's ``flock`` of any of them held every person's
call behind it: reviews 32, 33, 45)."""

from __future__ import annotations

import fcntl
import time
from typing import IO, Any

__all__ = ["flock_within"]

_POLL_S = 0.01


def flock_within(fh: IO[Any], wait: float | None) -> bool:
    """Take ``fh``'s exclusive lock: blocking when ``wait`` is None, else trying for ``wait`` seconds (False: another
    process held it all that time)."""
    if wait is None:
        fcntl.flock(fh, fcntl.LOCK_EX)
        return True
    end = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= end:
                return False
            time.sleep(_POLL_S)
