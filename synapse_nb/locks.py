"""One way to take a lock file with a bounded wait (POSIX ``flock``): the index lock, the hook's lock and a team
vault's offline copy all wait this way, never without limit (an agent's ``flock`` of any of them held every person's
call behind it: reviews 32, 33, 45).

A lock file is opened by :func:`held` without following a symlink and without blocking (review 79: ``open(...,
"a+")`` of a FIFO at ``index.lock`` hung every process, of a symlink created the file it named); a lock file that
is not a regular file holds nothing, so whoever takes the lock removes it and makes it anew (the symlink, never its
target), and checks once locked that the file it holds is still the one at the path (a lock file removed meanwhile
is taken again): a damaged lock file never hangs past the caller's wait and never grants a lock another process
holds too."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["flock_within", "held", "take"]

_POLL_S = 0.01


def flock_within(fh: IO[Any] | int, wait: float | None) -> bool:
    """Take the exclusive lock of ``fh`` (a file or a descriptor): blocking when ``wait`` is None, else trying for
    ``wait`` seconds (False: another process held it all that time)."""
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


#: What opening a lock file raises while another process swaps things in its place (review 81: ~1,500 of 344,052
#: takes under a tight swap loop raised them).
_SWAPPED = frozenset({errno.EEXIST, errno.ELOOP, errno.EISDIR, errno.ENXIO})
#: How long a take without a deadline retries them before it raises.
_RACE_S = 2.0


def take(path: Path, wait: float | None, *, mode: int = 0o600) -> int | None:
    """The descriptor of the lock file ``path``, locked (the caller closes it to release the lock); None when
    another process held it for the whole ``wait`` seconds: :func:`held`, for a lock kept beyond one block (the
    watcher's)."""
    return _open_locked(path, None if wait is None else time.monotonic() + wait, mode)


def _open_locked(path: Path, end: float | None, mode: int) -> int | None:
    from synapse_nb.own_files import open_regular, remove, state

    last = time.monotonic() + _RACE_S if end is None else end
    while True:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, mode)
        if fd is None:
            try:
                if state(path) == "damaged":
                    if remove(path):
                        continue
                    raise OSError(errno.EEXIST, "not a regular file, and it could not be removed", str(path))
                # not something in the file's place (a folder this user may not write): the error os.open gives
                os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, mode))
            except OSError as exc:
                # another process swapping a FIFO, a symlink, a folder in and out (review 81): again until the
                # deadline, then busy; with no deadline (or a thing that stays) the error after _RACE_S
                if exc.errno not in _SWAPPED or time.monotonic() >= last:
                    if end is not None and exc.errno in _SWAPPED:
                        return None
                    raise
                time.sleep(_POLL_S)
            continue  # it opened after all (a race with another process): try again
        try:
            if not flock_within(fd, None if end is None else max(0.0, end - time.monotonic())):
                os.close(fd)
                return None
            if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed or replaced between our open and our lock: take the one there now


@contextlib.contextmanager
def held(path: Path, wait: float | None, *, mode: int = 0o600) -> Iterator[int | None]:
    """Hold the exclusive lock of the lock file ``path`` (made ``mode`` when missing): yields its descriptor, or
    None when another process held it for the whole ``wait`` seconds (None: wait as long as it takes). Whatever is
    in the lock file's place (a FIFO, a socket, a directory, a symlink) is removed and the file made anew; an error
    opening it (a folder this user may not write) is raised."""
    fd = take(path, wait, mode=mode)
    if fd is None:
        yield None
        return
    try:
        yield fd
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
