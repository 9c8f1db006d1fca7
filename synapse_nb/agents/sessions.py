"""What an agent hook remembers between its runs, per session: a small JSON file beside the database.

Each ``synapse-nb hook`` run is a fresh process, so the hooks keep their per-session counters in
``<vault>/agent-sessions.json`` (guarded by an exclusive ``flock`` on ``<vault>/agent-sessions.lock``, written to
a temporary file and moved into place, so a reader never sees half a file):

- ``edits``: file edits since the session's last automatic checkpoint, and ``files``, the files they touched;
- ``changed``: the files changed since the session's last episode (``Stop`` / ``SessionEnd`` log one);
- ``task``: the session's first prompt (shortened), what its checkpoints and episode say it worked on;
- ``lessons``: the approved lessons the hooks have already put in the session's context;
- ``compactions``: how many times the session's context was compacted (recall's delta starts afresh after each).

Why a file and not the vault's session tables: these are counters of the agent's harness, not memory. A write
to ``synapse.db`` on every edit would move the vault's data version, so every recall after an edit would start
cold, and it would take the database's write lock on every tool call. The file is a cache of the hooks' own: an
unreadable one is started afresh (a count lost, never a record), and only the newest :data:`MAX_SESSIONS`
sessions are kept. Its size is bounded whatever a harness sends (or an agent with a shell writes into it): a path
over :data:`~synapse_nb._util.MAX_PATH_CHARS` is not listed, each list holds at most :data:`MAX_FILES_KEPT` entries
and :data:`MAX_LIST_CHARS` characters, a session id over :data:`MAX_KEY_CHARS` is kept by its SHA-256, the oldest
sessions are left out of a write that would pass :data:`MAX_STATE_BYTES`, and a larger file (written by hand) is not
read (started afresh): one tool call listing 500 paths of 100,000 characters once made a 519 MB file that every
later hook read for seconds.

Examples
--------
>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> with session_state(folder, "s1") as st:
...     st.edits += 1
>>> with session_state(folder, "s1") as st:
...     st.edits
1
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from synapse_nb._util import MAX_PATH_CHARS, fmt_ts, utcnow, write_atomic

__all__ = ["LOCK_NAME", "MAX_SESSIONS", "STATE_NAME", "SessionState", "read_state", "session_state"]

STATE_NAME = "agent-sessions.json"
LOCK_NAME = "agent-sessions.lock"
#: Sessions kept in the file (the ones touched last).
MAX_SESSIONS = 64
#: Files remembered per list (a checkpoint or an episode lists at most these), and their characters in all.
MAX_FILES_KEPT = 200
MAX_LIST_CHARS = 32_768
#: A session key (mind and session id) longer than this is kept by its SHA-256; a task by its first characters.
MAX_KEY_CHARS = 256
MAX_TASK_CHARS = 1_000
#: A state file is written under this size (the oldest sessions left out) and a larger one is not read.
MAX_STATE_BYTES = 4 * 1024 * 1024
_VERSION = 1


@dataclass
class SessionState:
    """One session's counters (see the module docstring)."""

    edits: int = 0
    files: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    task: str | None = None
    lessons: list[str] = field(default_factory=list)
    checkpoints: int = 0
    episodes: int = 0
    updated: str = ""
    compactions: int = 0

    def delta_session(self, session: str) -> str:
        """The session recall's delta keeps what the hooks gave under: a new one after each compaction (the
        compacted context lost what it was given, so a person's decision must be given again: review 14)."""
        return session if not self.compactions else f"{session}#compacted-{self.compactions}"

    @classmethod
    def from_json(cls, raw: Any) -> SessionState:
        """A state read from the file; anything malformed in it starts afresh (it is a cache)."""
        if not isinstance(raw, dict):
            return cls()

        def strings(v: Any) -> list[str]:
            out: list[str] = []
            for s in v if isinstance(v, list) else ():
                if isinstance(s, str):
                    _add(out, s)
            return out

        def count(v: Any) -> int:
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

        task = raw.get("task")
        return cls(edits=count(raw.get("edits")), files=strings(raw.get("files")),
                   changed=strings(raw.get("changed")), task=task[:MAX_TASK_CHARS] if isinstance(task, str) else None,
                   lessons=strings(raw.get("lessons")), checkpoints=count(raw.get("checkpoints")),
                   episodes=count(raw.get("episodes")), updated=str(raw.get("updated") or ""),
                   compactions=count(raw.get("compactions")))

    def touch(self, path: str) -> None:
        """One edit of ``path``: counted, and listed once in ``files`` and ``changed``."""
        self.edits += 1
        for lst in (self.files, self.changed):
            _add(lst, path)


def _add(lst: list[str], item: str) -> None:
    """Append ``item`` once, within the list's bounds (a path too long to name a file is not listed)."""
    if (item and len(item) <= MAX_PATH_CHARS and item not in lst and len(lst) < MAX_FILES_KEPT
            and sum(map(len, lst)) + len(item) <= MAX_LIST_CHARS):
        lst.append(item)


def _key(session: str) -> str:
    if len(session) <= MAX_KEY_CHARS:
        return session
    return "sha256:" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return {}
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or raw.get("version") != _VERSION or not isinstance(raw.get("sessions"), dict):
        return {}
    sessions: dict[str, Any] = raw["sessions"]
    return sessions


def read_state(folder: str | Path, session: str) -> SessionState:
    """The session's state as it is now (no lock, nothing written): a fresh one when there is none."""
    return SessionState.from_json(_read(Path(folder) / STATE_NAME).get(_key(session)))


@contextlib.contextmanager
def session_state(folder: str | Path, session: str) -> Iterator[SessionState]:
    """Read, change and write back one session's state under the file's lock.

    The state is written when the block ends without an exception; concurrent hooks (parallel tool calls) take
    turns on the lock, so no edit is counted twice or lost.
    """
    folder, session = Path(folder), _key(session)
    with open(folder / LOCK_NAME, "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            sessions = _read(folder / STATE_NAME)
            state = SessionState.from_json(sessions.get(session))
            yield state
            state.updated = fmt_ts(utcnow())
            sessions[session] = asdict(SessionState.from_json(asdict(state)))  # within the lists' bounds
            _write(folder / STATE_NAME, {"version": _VERSION, "sessions": _newest(sessions, session)})
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _newest(sessions: dict[str, Any], current: str) -> dict[str, Any]:
    """The newest :data:`MAX_SESSIONS` sessions (``current`` always) whose JSON fits :data:`MAX_STATE_BYTES`."""
    older = sorted((s for s in sessions if s != current),
                   key=lambda s: str((sessions[s] or {}).get("updated", "")), reverse=True)
    order = [current, *older]
    kept: dict[str, Any] = {}
    size = 64
    for s in order[:MAX_SESSIONS]:
        size += len(json.dumps({s: sessions[s]}, ensure_ascii=False).encode("utf-8"))
        if size > MAX_STATE_BYTES and kept:
            break
        kept[s] = sessions[s]
    return kept


def _write(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, ensure_ascii=False, sort_keys=True))
