"""Watch a repository's git directory and report commits and growing change sets.

:class:`Watcher` observes the git directory with watchdog (``HEAD``, ``index``,
``packed-refs``, ``refs/``, ``logs/HEAD``) - never the work tree, so a large
work tree costs nothing. After a burst of events settles (``debounce`` seconds)
it checks:

- HEAD (read from files, no process): when branch or commit differ from the last
  check, ``on_commit(HeadState)`` runs (new commit, checkout, reset, rebase);
- the changed files (``git status --porcelain -z``, run without taking the index
  lock): each path that becomes changed counts once; every ``every_files`` newly
  changed paths, ``on_files_changed(sorted paths)`` runs with them. After a commit,
  committed paths stop counting as changed, so editing them again counts again.

Only one watcher per vault: :meth:`Watcher.start` takes an exclusive,
non-blocking ``flock`` on ``lock_path``; a second watcher raises ConflictError.
Callback errors are logged (logger ``synapse_nb.watch``) and never stop the watcher.

Examples
--------
>>> from synapse_nb.gitscope.watch import Watcher
>>> w = Watcher(".", on_commit=print, on_files_changed=print, lock_path="/tmp/w.lock")  # doctest: +SKIP
>>> w.run_forever()  # until Ctrl-C or SIGTERM  # doctest: +SKIP
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, Self

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from synapse_nb.errors import ConflictError, GitError, StoreError, ValidationError
from synapse_nb.gitscope.repo import HeadState, find_repo, head
from synapse_nb.gitscope.status import changed_paths
from synapse_nb.gitscope.vaultdir import ensure_gitignore
from synapse_nb.locks import take

__all__ = ["Watcher", "changed_paths"]  # changed_paths: from gitscope.status, kept importable here

logger = logging.getLogger("synapse_nb.watch")

_ROOT_NAMES = frozenset({"HEAD", "index", "packed-refs", "ORIG_HEAD", "FETCH_HEAD"})


class Watcher:
    """React to commits and to the change set growing, from git-directory events.

    Parameters
    ----------
    repo_path : str or Path
        A path inside the work tree to watch.
    on_commit : callable(HeadState)
        Called when HEAD's branch or commit changes.
    on_files_changed : callable(list of str)
        Called with the sorted newly changed paths each time ``every_files`` of them accumulate.
    every_files : int
        How many newly changed paths trigger ``on_files_changed`` (default 10). ``synapse-nb watch`` passes 1
        and lets :class:`synapse_nb.kinds.autocheckpoint.AutoCheckpoint` decide when a checkpoint is due.
    lock_path : str or Path, optional
        The single-instance lock file; default ``<main work tree>/.synapse/watch.lock``.
    debounce : float
        Seconds of quiet after the last git-dir event before checking (default 0.3).

    Raises
    ------
    GitError
        ``repo_path`` is not inside a git work tree.
    ValidationError
        ``every_files`` < 1, ``debounce`` < 0 or a callback is not callable.

    Examples
    --------
    >>> with Watcher(repo, on_commit=seen.append, on_files_changed=batches.append,  # doctest: +SKIP
    ...              lock_path=tmp / "watch.lock"):
    ...     make_a_commit()
    """

    def __init__(
        self,
        repo_path: str | Path,
        on_commit: Callable[[HeadState], None],
        on_files_changed: Callable[[list[str]], None],
        every_files: int = 10,
        *,
        lock_path: str | Path | None = None,
        debounce: float = 0.3,
    ) -> None:
        info = find_repo(repo_path)
        if info is None:
            raise GitError(f"{repo_path} is not inside a git work tree; the watcher needs a repository")
        if not callable(on_commit) or not callable(on_files_changed):
            raise ValidationError("on_commit and on_files_changed must be callables")
        if isinstance(every_files, bool) or not isinstance(every_files, int) or every_files < 1:
            raise ValidationError(f"every_files must be a positive integer, got {every_files!r}")
        if not isinstance(debounce, (int, float)) or debounce < 0:
            raise ValidationError(f"debounce must be a number of seconds >= 0, got {debounce!r}")
        self.repo = info
        self.on_commit = on_commit
        self.on_files_changed = on_files_changed
        self.every_files = every_files
        self.debounce = float(debounce)
        self.lock_path = Path(lock_path) if lock_path is not None else info.main_work_tree / ".synapse" / "watch.lock"
        self._lock_fd: int | None = None
        self._observer: Any = None
        self._timer: threading.Timer | None = None
        self._mutex = threading.RLock()
        self._state: HeadState | None = None
        self._known: set[str] = set()
        self._pending: list[str] = []
        self._stop_event = threading.Event()

    # -- lifecycle --------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._observer is not None

    def _acquire_lock(self) -> None:
        try:
            if not self.lock_path.parent.is_dir() and self.lock_path.parent.name == ".synapse":
                self.lock_path.parent.mkdir()  # in the work tree; never its parents
                ensure_gitignore(self.lock_path.parent)  # a folder made here stays out of git too
            # never through a symlink (it wrote the pid over the file it named), never a FIFO's hang (review 79)
            fd = take(self.lock_path, 0, mode=0o644)
        except OSError as exc:
            raise StoreError(f"cannot open the watcher lock {self.lock_path}: {exc.strerror or exc}") from exc
        if fd is None:
            raise ConflictError(
                f"another watcher already runs for this vault (lock {self.lock_path} is held); stop it first")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    def start(self) -> Self:
        """Take the lock, record the current HEAD and change set, and start observing.

        Raises
        ------
        ConflictError
            Another watcher holds the lock (in this or another process), or this one is already running.
        PermissionDeniedError
            The process runs in a coding agent's environment: watching is a person's, as ``synapse-nb watch`` is
            (review 45: an agent's Watcher on the vault's hook.lock stalled every person's post-commit scan, and on
            watch.lock kept the person's ``synapse-nb watch`` out).
        """
        from synapse_nb.context import require_human  # here: context imports gitscope

        require_human("start a git watcher (one runs a vault, and it is a person's: `synapse-nb watch`)")
        if self.running:
            raise ConflictError("this watcher is already running; call stop() first")
        from watchdog.observers import Observer  # here: picks and loads the platform's observer (inotify, ...)

        self._acquire_lock()
        try:
            with self._mutex:
                self._state = head(self.repo)
                self._known = set(changed_paths(self.repo))
                self._pending = []
            handler = _Handler(self)
            observer = Observer()
            observer.schedule(handler, str(self.repo.git_dir), recursive=False)
            for extra, recursive in (
                (self.repo.git_dir / "logs", False),
                (self.repo.common_dir / "refs", True),
                (self.repo.common_dir, False),
            ):
                if extra.is_dir() and (extra != self.repo.git_dir):
                    observer.schedule(handler, str(extra), recursive=recursive)
            observer.daemon = True
            observer.start()
            self._observer = observer
            self._stop_event.clear()
        except BaseException:
            self._release_lock()
            raise
        logger.info("watching %s (git dir %s), lock %s", self.repo.work_tree, self.repo.git_dir, self.lock_path)
        return self

    def stop(self) -> None:
        """Stop observing, cancel a pending check and release the lock (safe to call twice)."""
        with self._mutex:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
            logger.info("stopped watching %s", self.repo.work_tree)
        self._release_lock()
        self._stop_event.set()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run_forever(self, on_start: Callable[[], None] | None = None) -> None:
        """Start, then block until SIGINT or SIGTERM (or :meth:`stop` from another thread); stop cleanly.

        ``on_start`` is called once the watcher watches (its baseline read, its observer running): a change made
        after it returns is seen; one made before may be part of the baseline, or missed.
        """
        previous: dict[int, Any] = {}
        stop_requested = threading.Event()

        def _on_signal(signum: int, frame: FrameType | None) -> None:
            logger.info("signal %d received, stopping", signum)
            stop_requested.set()
            self._stop_event.set()

        try:
            if threading.current_thread() is threading.main_thread():  # handlers first: no unguarded window
                for sig in (signal.SIGINT, signal.SIGTERM):
                    previous[sig] = signal.signal(sig, _on_signal)
            self.start()
            if on_start is not None:
                on_start()
            if stop_requested.is_set():
                self._stop_event.set()
            while not self._stop_event.wait(0.5):
                pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.stop()

    # -- checking ---------------------------------------------------------------------------------------
    def _schedule(self) -> None:
        with self._mutex:
            if not self.running:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._timed_check)
            self._timer.daemon = True
            self._timer.start()

    def _timed_check(self) -> None:
        try:
            self.check()
        except Exception:
            logger.exception("check failed in %s", self.repo.work_tree)

    def check(self) -> None:
        """Compare HEAD and the change set with the last check and fire callbacks (what an event triggers).

        Safe to call directly (tests, or a caller polling on its own schedule).
        """
        with self._mutex:
            state = head(self.repo)
            moved = state != self._state
            self._state = state
            current = changed_paths(self.repo)
            if moved:
                self._known = set(current)  # committed paths no longer count as changed
            new = [p for p in current if p not in self._known]
            self._known.update(new)
            self._pending.extend(new)
            batches: list[list[str]] = []
            while len(self._pending) >= self.every_files:
                batch = sorted(self._pending[: self.every_files])
                self._pending = self._pending[self.every_files :]
                batches.append(batch)
        if moved:
            logger.info("HEAD moved: branch=%s commit=%s", state.branch, state.commit)
            self._call(self.on_commit, state)
        for batch in batches:
            logger.info("%d newly changed files", len(batch))
            self._call(self.on_files_changed, batch)

    def _call(self, func: Callable[[Any], None], arg: Any) -> None:
        try:
            func(arg)
        except Exception:
            logger.exception("callback %s failed", getattr(func, "__name__", func))


class _Handler(FileSystemEventHandler):
    """watchdog handler: keep events about HEAD, index, refs and logs/HEAD; ignore lock files and objects."""

    def __init__(self, watcher: Watcher) -> None:
        super().__init__()
        self.watcher = watcher
        self.git_dir = str(watcher.repo.git_dir)
        self.common_dir = str(watcher.repo.common_dir)

    def _relevant(self, path: str) -> bool:
        if not path or path.endswith(".lock"):
            return False
        name = os.path.basename(path)
        parent = os.path.dirname(path)
        if parent in (self.git_dir, self.common_dir):
            return name in _ROOT_NAMES
        if parent == os.path.join(self.git_dir, "logs"):
            return name == "HEAD"
        return path.startswith(os.path.join(self.common_dir, "refs") + os.sep)

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or "")]
        if any(self._relevant(p) for p in paths):
            self.watcher._schedule()
