"""What an agent hook remembers between its runs, per session: a small JSON file beside the database.

Each ``synapse-nb hook`` run is a fresh process, so the hooks keep their per-session counters in
``<vault>/agent-sessions.json`` (guarded by an exclusive ``flock`` on ``<vault>/agent-sessions.lock``, written to
a temporary file and moved into place, so a reader never sees half a file):

- ``edits``: file edits since the session's last automatic checkpoint, and ``files``, the files they touched;
- ``changed``: the files changed since the session's last episode (``Stop`` / ``SessionEnd`` log one);
- ``task``: the session's first prompt (shortened), what its episode says it worked on, and ``prompt``, its latest
  (shortened): the session's automatic checkpoints name both as prompts, never as what it is doing (review 86: the
  first prompt, never updated, became the doing of a checkpoint that took the place of the agent's own);
- ``epoch`` (and ``epoch_at``): the session's delta epoch, a random token recall's delta keeps what the hooks gave
  under (:meth:`SessionState.delta_session`). A new one at every ``SessionStart`` (the banner is given in full; a
  ``/clear`` or a compaction dropped what the context held), at every compaction, when the state is missing (a
  state evicted from the file, or never written) and after :data:`EPOCH_SECONDS`: what the session is given then
  is given again, never withheld as given before it lost it (review 27: 64 made-up sessions evicted one's
  compaction count, and its recall went back to its pre-compaction key);
- ``compactions``: how many times the session's context was compacted;
- ``left``: the lessons the hooks' last banner named only (left out for room): the next answer gives them the room
  first (review 35: a long lesson was named only on every prompt while an agent wrote matching memories each turn);
- ``told``: what the person was last told of approved lessons that do not reach the agent (why, and how many: review
  95): a prompt tells the person again only when that changed since (the session's start always tells it).

Why a file and not the vault's session tables: these are counters of the agent's harness, not memory. A write to
``synapse.db`` on every edit would move the vault's data version, so every recall after an edit would start cold, and it
would take the database's write lock on every tool call. The file is a cache of the hooks' own, never a reason to
withhold context: an unreadable one (a directory, a FIFO, a symlink) is started afresh (a count lost, never a record,
never a hook that blocks or fails: review 27); past a lock held by an agent's ``flock`` for :data:`LOCK_WAIT_S` it is
read without the lock, its epoch kept, and only a new epoch written (review 31); and only the newest
:data:`MAX_SESSIONS` sessions are kept. Its size is bounded whatever a harness sends (or an agent with a shell writes
into it): a path over :data:`~synapse_nb._util.MAX_PATH_CHARS` is not listed, each list holds at most
:data:`MAX_FILES_KEPT` entries and :data:`MAX_LIST_CHARS` characters, a session id over :data:`MAX_KEY_CHARS` is kept by
its SHA-256, the oldest sessions are left out of a write that would pass :data:`MAX_STATE_BYTES`, and a larger file
(written by hand) is not read (started afresh): one tool call listing 500 paths of 100,000 characters once made a 519 MB
file that every later hook read for seconds.

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
import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from synapse_nb._util import MAX_PATH_CHARS, fmt_ts, utcnow
from synapse_nb.locks import held
from synapse_nb.own_files import read_bytes, write_atomic

__all__ = ["LOCK_NAME", "MAX_SESSIONS", "STATE_NAME", "SessionState", "clear_prompts", "read_state", "session_state"]

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
#: Seconds a hook waits for the file's lock before it goes on without the state (a count lost).
LOCK_WAIT_S = 1.0
#: Seconds a deletion waits for the file's lock to clear the prompts its record held (:func:`clear_prompts`).
CLEAR_LOCK_WAIT = 5.0
#: Characters of a session's prompt that, found in a deleted record's text, say the record holds the prompt (an
#: automatic checkpoint cuts a long one); a record's whole text this long or longer found in a prompt says so too.
PROMPT_MATCH_CHARS = 60
RECORD_MATCH_CHARS = 16
#: A session's delta epoch is renewed at least this often: what the session was given (or what another agent, who
#: can read its id here and run the hook in its name, marked as given) is withheld for at most this long.
EPOCH_SECONDS = 3600
#: A session id longer than this, or not printable, is named in recall's delta by its SHA-256.
_MAX_DELTA_ID = 150
_VERSION = 1


@dataclass
class SessionState:
    """One session's counters (see the module docstring)."""

    edits: int = 0
    files: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    task: str | None = None
    prompt: str | None = None
    checkpoints: int = 0
    episodes: int = 0
    updated: str = ""
    compactions: int = 0
    epoch: str = ""
    epoch_at: float = 0.0
    left: list[str] = field(default_factory=list)
    told: str = ""

    def new_epoch(self) -> None:
        """Start the delta afresh: what the session is given from now on is given again (see the module)."""
        self.epoch, self.epoch_at = secrets.token_hex(8), time.time()

    def delta_session(self, session: str) -> str:
        """The session recall's delta keeps what the hooks gave under: the session and its epoch, a new epoch when
        there is none or it is older than :data:`EPOCH_SECONDS` (the context lost what it was given, or it may
        have been marked in the session's name: reviews 14 and 27)."""
        if not self.epoch or not -60 <= time.time() - self.epoch_at < EPOCH_SECONDS:  # none, old, or dated ahead
            self.new_epoch()
        if len(session) > _MAX_DELTA_ID or not session.isprintable():
            session = "sha256:" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        return f"{session}#{self.epoch}"

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

        epoch, at, told = raw.get("epoch"), raw.get("epoch_at"), raw.get("told")
        task, prompt = raw.get("task"), raw.get("prompt")
        return cls(edits=count(raw.get("edits")), files=strings(raw.get("files")),
                   changed=strings(raw.get("changed")), task=task[:MAX_TASK_CHARS] if isinstance(task, str) else None,
                   prompt=prompt[:MAX_TASK_CHARS] if isinstance(prompt, str) else None,
                   checkpoints=count(raw.get("checkpoints")), episodes=count(raw.get("episodes")),
                   updated=str(raw.get("updated") or "")[:40], compactions=count(raw.get("compactions")),
                   epoch=epoch if isinstance(epoch, str) and epoch.isalnum() and len(epoch) <= 32 else "",
                   epoch_at=float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0,
                   left=strings(raw.get("left")), told=told[:64] if isinstance(told, str) else "")

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
    """The file's sessions; {} when it is missing, not a regular file (a directory, a FIFO that would block every
    hook, a symlink: never followed), too large or malformed (:func:`synapse_nb.own_files.read_bytes`)."""
    data = read_bytes(path, cap=MAX_STATE_BYTES)
    try:
        raw = json.loads(data.decode("utf-8")) if data is not None else None
    except ValueError:
        return {}
    if not isinstance(raw, dict) or raw.get("version") != _VERSION or not isinstance(raw.get("sessions"), dict):
        return {}
    sessions: dict[str, Any] = raw["sessions"]
    return sessions


def read_state(folder: str | Path, session: str) -> SessionState:
    """The session's state as it is now (no lock, nothing written): a fresh one when there is none."""
    return SessionState.from_json(_read(Path(folder) / STATE_NAME).get(_key(session)))


@contextlib.contextmanager
def session_state(folder: str | Path, session: str, *, wait: float = LOCK_WAIT_S) -> Iterator[SessionState]:
    """Read, change and write back one session's state under the file's lock.

    The state is written when the block ends without an exception; concurrent hooks (parallel tool calls) take
    turns on the lock, so no edit is counted twice or lost. When the lock is not had within ``wait`` seconds, the
    block gets the state as the file holds it (the file is replaced whole, never seen half-written), and only a
    new delta epoch is written back, without the lock: what else changed is a count lost, never a hook that waits
    out its time limit or fails (review 27: an agent's ``flock`` on the lock file, or a directory made in the file's
    place, silenced every hook). The epoch is kept: a fresh state at every run made every prompt a new epoch that
    printed the whole banner again, and a long banner cut the person's relevant memory from every prompt for as
    long as an agent held the lock (review 31). A state that cannot be read (a directory, a FIFO, a symlink, none)
    is started afresh: a new epoch, given again.
    """
    folder, session = Path(folder), _key(session)
    with contextlib.ExitStack() as stack:
        try:  # a directory or a symlink in the lock's place is made anew (locks.held); an unwritable folder: None
            fd = stack.enter_context(held(folder / LOCK_NAME, wait))
        except OSError:
            fd = None
        sessions = _read(folder / STATE_NAME)  # replaced whole (write_atomic): read whole, with or without the lock
        state = SessionState.from_json(sessions.get(session))
        epoch = state.epoch
        yield state
        if fd is None and state.epoch == epoch:
            return  # without the lock only a new epoch is written: what else changed is a count lost
        state.updated = fmt_ts(utcnow())
        sessions[session] = asdict(SessionState.from_json(asdict(state)))  # within the lists' bounds
        with contextlib.suppress(OSError):  # a directory in the file's place, a full disk: a count lost
            _write(folder / STATE_NAME, {"version": _VERSION, "sessions": _newest(sessions, session)})


def _held_in(prompt: object, texts: list[str]) -> bool:
    """Whether a session's ``prompt`` (its ``task`` or ``prompt``) is in one of a deleted record's ``texts``, or one
    of them (long enough to tell) is in it: the record was made from it (whitespace folded, as the hooks do)."""
    if not isinstance(prompt, str) or not prompt.strip():
        return False
    p = " ".join(prompt.split()).removesuffix("…").rstrip()
    head = p[:PROMPT_MATCH_CHARS]
    return any(head in t or (len(t) >= RECORD_MATCH_CHARS and t in p) for t in texts)


def clear_prompts(folder: str | Path, texts: list[str], *, wait: float = CLEAR_LOCK_WAIT) -> int | None:
    """A deletion or purge of a record whose text holds what a person typed (review 91: a secret in a prompt went
    into an automatic checkpoint and an episode, both were purged, and this file kept it, and the session's next
    episode logged it again): every session whose ``task`` or ``prompt`` is in one of ``texts`` (the deleted
    record's, :func:`_held_in`), or holds one of them, loses both (its next automatic checkpoint and episode name no
    prompt until the next one is typed). Returns how many sessions lost them; None when another process held the
    file's lock for ``wait`` seconds (nothing was cleared)."""
    folder = Path(folder)
    texts = [t for t in (" ".join(str(x).split()) for x in texts) if t]
    if not texts or not (folder / STATE_NAME).is_file():
        return 0
    try:
        with held(folder / LOCK_NAME, wait) as fd:
            if fd is None:
                return None
            sessions = _read(folder / STATE_NAME)
            cleared = 0
            for raw in sessions.values():
                if isinstance(raw, dict) and (_held_in(raw.get("task"), texts) or _held_in(raw.get("prompt"), texts)):
                    raw["task"] = raw["prompt"] = None
                    cleared += 1
            if cleared:
                _write(folder / STATE_NAME, {"version": _VERSION, "sessions": sessions})
    except OSError:  # a folder this user may not write, a full disk: not cleared, and said so
        return None
    return cleared


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
