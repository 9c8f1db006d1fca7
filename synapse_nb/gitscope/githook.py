"""The git hook entry point: ``python -m synapse_nb.gitscope.githook post-commit``.

Runs after a commit (or a rewrite: amend, rebase) and records new reverts as
pending lessons through ``open_vault(...).lessons.scan()``. Rules:

- it never fails the git command: whatever happens, the exit status is 0;
- it never blocks for long: the hook script starts it detached by default (the commit
  does not wait), and the work runs in a thread with a hard limit
  (``SYNAPSE_HOOK_TIMEOUT`` seconds, default 2); past it the process exits anyway;
- concurrent runs (quick successive commits) take turns on ``<vault>/hook.lock``;
- it stays light: no third-party library is imported, and the vault only when there is one to scan
  (or ``$SYNAPSE_HOME`` must be resolved);
- it writes one line per run to ``<vault>/hook.log`` (rotated at 512 KiB), only
  when the vault folder exists; with no vault it does nothing at all.

The vault is the one ``$SYNAPSE_HOME`` names when set (a project folder or a vault folder, as for
``--vault``), else ``<main work tree>/.synapse``, opened through a :class:`~synapse_nb.vault.VaultSession` that
never creates one.

:mod:`synapse_nb.gitscope.githook_install` installs the hooks that run this module. Hooks installed
before this module was renamed run ``python -m synapse_nb.gitscope.hook``, which still works (a
small alias module) and notes in ``hook.log`` that ``synapse-nb hooks install`` refreshes them.

Examples
--------
>>> from synapse_nb.gitscope.githook import main
>>> main(["post-commit"])  # outside a repository: nothing to do, still 0  # doctest: +SKIP
0
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from synapse_nb.errors import SynapseError
from synapse_nb.gitscope.repo import find_repo
from synapse_nb.locks import held
from synapse_nb.own_files import open_regular, remove, state

if TYPE_CHECKING:
    from synapse_nb.gitscope.history import Snapshot

__all__ = ["COMMITTER_AGENT", "DEFAULT_TIMEOUT", "LEGACY_NOTE", "LOCK_NAME", "LOG_NAME", "SNAPSHOT", "main",
           "vault_dir"]

DEFAULT_TIMEOUT = 2.0
LOG_NAME = "hook.log"
LOCK_NAME = "hook.lock"
_LOG_MAX_BYTES = 512 * 1024
#: Added to the log line when an old hook script runs this through ``python -m synapse_nb.gitscope.hook``.
LEGACY_NOTE = "(old hook script: 'synapse-nb hooks install' refreshes it)"


def vault_dir(work_tree: Path) -> Path | None:
    """Where the hook's vault lives: the one ``$SYNAPSE_HOME`` names, or ``<main work tree>/.synapse``.

    None outside git, or when ``$SYNAPSE_HOME`` names no usable location (the hook then does nothing).
    """
    if os.environ.get("SYNAPSE_HOME", "").strip():
        from synapse_nb.vault import find_vault_dir  # here: the vault is imported only when the hook needs it

        try:
            return find_vault_dir()[0]
        except SynapseError:
            return None
    info = find_repo(work_tree)
    return None if info is None else info.main_work_tree / ".synapse"


#: Set by a detached hook's script to 1 when its own environment or a parent's, read while git and whoever ran it
#: still run, holds a coding agent's marker: the detached scan is handed to init once the hook's shell exits, out of
#: the committer's tree (and the committer's shell may exit at once). It only ever makes the scan the agent's.
COMMITTER_AGENT = "SYNAPSE_HOOK_AGENT"


def _committer_is_an_agent() -> bool:
    """Whether the hook's script found a coding agent's marker among the committer's processes."""
    return os.environ.get(COMMITTER_AGENT, "").strip() == "1"


#: Set to 1 by a hook's script that passes on stdin where HEAD and the refs were when git ran it
#: (:func:`synapse_nb.gitscope.history.parse_snapshot`): the scan reads history up to there only.
SNAPSHOT = "SYNAPSE_HOOK_SNAPSHOT"


def _snapshot(work_tree: Path) -> Snapshot | None:
    """Where HEAD and the refs were when the hook started: passed by the hook's script, read while git runs; else (an
    old script, or what it passed is no snapshot: its listing failed or was cut short, review 51) read now, before
    the wait for the lock and within the hook's time limit. A scan of this commit reads no commit made after it: a
    person's detached hook of an earlier commit that ran after an agent's commit scanned the agent's revert as the
    person's, and review showed no "first found in an agent's session" (found by review). None: not read (the scan
    reads everything, as a manual scan does; a failure to read the refs is then the scan's, logged)."""
    from synapse_nb.gitscope import history

    try:
        if os.environ.get(SNAPSHOT, "").strip() == "1" and not sys.stdin.isatty():
            # bytes, as snapshot() reads git's output: a ref name in no UTF-8 raised in the locale's text reader, and
            # the scan read everything (found by review)
            passed = history.parse_snapshot(history.decode(sys.stdin.buffer.read()))
            if passed is not None:
                return passed
        repo = find_repo(work_tree)
        return None if repo is None else history.snapshot(repo)
    except Exception:  # noqa: BLE001 - the scan then reads everything, as before
        return None


def _scan(work_tree: Path, at: Snapshot | None = None) -> str:
    """The one call the hook makes: scan for reverts into the vault, as the agent when an agent committed, up to
    where HEAD and the refs were when the hook started (``at``)."""
    from synapse_nb.vault import VaultSession  # here: the heavy part, only when there is a vault to scan

    actor = "agent" if _committer_is_an_agent() else "user"  # a user handle there is the agent anyway
    # no path: SYNAPSE_HOME, exactly as vault_dir() read it; a hook never creates a vault
    with VaultSession(None if os.environ.get("SYNAPSE_HOME", "").strip() else work_tree, create=False,
                      readonly=False, surface="git-hook", actor=actor) as session:
        from synapse_nb.kinds.lesson_scan import scan_said

        created = session.write().lessons.scan(at=at)
        note = f" (note: {created.note})" if created.note else ""  # a window cut, said (review 42)
        if session.write().actor == "agent":  # an agent reads no pending lesson, but is told how many it made
            return (f"scanned as the agent (an agent committed): {scan_said(created)}; synapse-nb lessons review{note}")
    return scan_said(created) + note


class LockBusy(Exception):
    """Another process held ``hook.lock`` for the whole wait (what it is is in the message)."""


def _holders(path: Path) -> str:
    """Who holds a flock on ``path``: the pids and commands /proc/locks names (Linux), else "another process"."""
    try:
        inode = path.stat().st_ino
        pids = sorted({int(f[4]) for f in (line.split() for line in Path("/proc/locks").read_text().splitlines())
                       if len(f) > 5 and f[1] == "FLOCK" and f[5].rsplit(":", 1)[-1] == str(inode)
                       and f[4].isdigit()})
    except (OSError, ValueError):
        return "another process"
    named = []
    for pid in pids[:3]:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            cmd = "?"
        named.append(f"pid {pid} ({cmd.strip()[:80]})")
    return ", ".join(named) or "another process"


@contextlib.contextmanager
def _exclusive(path: Path, wait: float = 1.5) -> Iterator[None]:
    """Hold an exclusive flock on ``path``, trying without blocking for ``wait`` seconds (inside the hook's limit);
    raise :class:`LockBusy` naming the holder past it (review 45: a process an agent started held the lock, and every
    person's hook waited on it until its own time ran out, logging only a timeout)."""
    with held(path, wait) as fd:  # a FIFO or a symlink in its place is made anew, never a hang (review 79)
        if fd is None:
            raise LockBusy(f"{path.name} is held by {_holders(path)}; this scan was skipped, the next commit's or "
                           "`synapse-nb lessons scan` reads the same commits")
        yield


def _log(directory: Path, line: str) -> None:
    """Append ``line`` to the hook's log: a regular file only, never through a symlink nor blocking on a FIFO (review
    79: each commit appended to the file a symlink named, a FIFO left one stuck hook process per commit); anything
    else in its place is removed and the log begun anew (it is the hook's own, nothing reads it but a person)."""
    log = directory / LOG_NAME
    with contextlib.suppress(OSError):
        if state(log) == "damaged":
            remove(log)
        elif state(log) == "file" and log.stat().st_size > _LOG_MAX_BYTES:
            os.replace(log, directory / f"{LOG_NAME}.1")
        fd = open_regular(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if fd is not None:
            try:
                os.write(fd, (line.replace("\n", " ") + "\n").encode("utf-8", "replace"))
            finally:
                os.close(fd)


def main(argv: list[str] | None = None, *, legacy: bool = False) -> int:
    """Run the hook named by ``argv[0]``; always returns 0.

    Parameters
    ----------
    argv : list of str, optional
        ``[hook_name, ...]`` (default ``sys.argv[1:]``).
    legacy : bool
        Run by a hook script installed before the rename: the log line says how to refresh it.
    """
    started = time.perf_counter()
    args = sys.argv[1:] if argv is None else argv
    hook_name = args[0] if args else "unknown"
    try:
        timeout = float(os.environ.get("SYNAPSE_HOOK_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        timeout = DEFAULT_TIMEOUT
    try:
        work_tree = Path.cwd()
        directory = vault_dir(work_tree)
    except BaseException:  # noqa: BLE001 - a hook must never fail
        return 0
    if directory is None or not directory.is_dir():
        return 0  # no vault here: the hook has nothing to do

    outcome: dict[str, str] = {}

    def work() -> None:
        try:
            # within the time limit (found by review: read before it, a slow read held the hook past it), and before
            # the lock: a scan waiting on another reads no commit made meanwhile
            at = _snapshot(work_tree)
            # one scan at a time per vault (background hooks overlap); a holder past 3/4 of the limit is named
            with _exclusive(directory / LOCK_NAME, wait=max(0.0, timeout * 0.75)):
                outcome["ok"] = _scan(work_tree, at)
        except BaseException as exc:  # noqa: BLE001 - logged, never raised
            outcome["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=work, name="synapse-hook", daemon=True)
    thread.start()
    thread.join(timeout)
    elapsed = (time.perf_counter() - started) * 1000
    stamp = datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if thread.is_alive():
        status = f"timeout: gave up after {timeout:g} s (the commit is not affected)"
    elif "error" in outcome:
        status = f"error: {outcome['error']}"
    else:
        status = f"ok: {outcome.get('ok', '')}"
    _log(directory, f"{stamp} {hook_name} {elapsed:.0f}ms {status}" + (f" {LEGACY_NOTE}" if legacy else ""))
    if thread.is_alive():
        sys.stdout.flush()
        os._exit(0)  # do not wait for the stuck scan; SQLite's journal keeps the vault consistent
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through real git hooks in tests
    try:
        main()
    except BaseException:  # noqa: BLE001, S110 - a hook never fails the git command
        pass
    sys.exit(0)
