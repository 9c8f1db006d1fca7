"""Borrowed vaults: a vault that came with the repository, or that a symlink puts outside the project.

A clone of a repository that commits ``.synapse/synapse.db`` brings the committer's memory with it, approved
lessons included; a ``.synapse`` symlink can point a project's vault at any folder. Neither was approved by the
human working here, so such a vault is *borrowed* (decided once per :func:`synapse_nb.vault.open_vault`):

- ``"symlink"`` (:func:`symlinked`): the vault folder is reached through a symlink that resolves outside the
  project's root;
- ``"tracked"`` (:func:`identify`): the vault came with the repository. Decided by the vault's identity first (its
  random ``vault_uid`` in ``meta``): :class:`VaultRecords` (``<git-common-dir>/synapse-nb/vaults.json``, never
  tracked, shared by every worktree) records per checkout which vaults are this checkout's *own* (created here, or
  adopted by a person: :func:`adopt`) and which were *seen borrowed* (git tracked them when this checkout first
  opened them). A vault seen borrowed stays borrowed when git stops tracking it (``git rm --cached`` launders
  nothing); a vault of one's own is never borrowed because git tracks it (``git add -f`` hides none of its lessons;
  ``status()`` still warns that git tracks it). A vault with no record: git tracks its database (``git ls-files``),
  or the last commit holds it (``HEAD``) -> borrowed, recorded as seen borrowed; else a person's writable open
  records it as this checkout's own. An agent's open never records a vault as its own;
- ``"unrecorded"``: that record cannot be read (not the JSON this module writes): no vault counts as one's own.

Naming the vault folder itself (``SYNAPSE_HOME=/that/folder``, ``--vault /that/folder``) is a human's explicit
choice of that folder: it is then no symlink borrowing (unless the name is itself the project's symlink). A vault
that came with the repository stays borrowed however it is named. Team vaults (PostgreSQL) are never file-borrowed.

What it changes (the surfaces read :attr:`Borrowed.line` and :meth:`Borrowed.to_dict`):

- every recall text and MCP answer starts with :attr:`Borrowed.line`, and ``Recall.to_dict()["borrowed"]``
  carries it;
- its approved lessons are in force only once a human here re-approved them, one by one (:class:`LocalApprovals`,
  ``<git-common-dir>/synapse-nb/approvals.json``: lesson id, a digest of the approved text and branch, who and
  when, until when), or adopted the whole vault (``synapse-nb lessons adopt``, :meth:`synapse_nb.Vault.adopt`);
- through an outside symlink every write is refused (:attr:`Borrowed.refusal`), so nothing (no ``synapse.db``,
  no ``.gitignore``) is ever created outside the project.

Examples
--------
>>> b = Borrowed("tracked", ".synapse/synapse.db")
>>> b.line.startswith('BORROWED VAULT: ".synapse/synapse.db" came with the repository')
True
>>> "lessons adopt" in b.line and "git rm" not in b.line
True
>>> b.refusal is None
True
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from synapse_nb.errors import PermissionDeniedError, StoreError
from synapse_nb.gitscope.repo import RepoInfo, find_repo
from synapse_nb.gitscope.vaultdir import committed_in, repos_holding, symlink_exit, tracked_in
from synapse_nb.own_files import read_text, write_atomic
from synapse_nb.own_files import state as file_state
from synapse_nb.provenance import file_names, inline

if TYPE_CHECKING:
    from synapse_nb.models import Lesson

__all__ = ["APPROVALS_NAME", "ELSEWHERE_BY", "ELSEWHERE_SHORT", "RECORDS_NAME", "Adoption", "Borrowed",
           "LocalApprovals", "VaultRecords", "adopt", "identify", "lesson_digest", "symlinked"]

#: Where local approvals live, under the repository's git common dir.
APPROVALS_NAME = "synapse-nb/approvals.json"
#: Which vaults are this checkout's own and which came with the repository, under the git common dir.
RECORDS_NAME = "synapse-nb/vaults.json"
#: Who the wording of a lesson awaiting local approval is by, as every review surface says it (review 62: the widget
#: and ``lessons review`` said "you" and "a human", and pre-filled the person's box with the committer's wording).
ELSEWHERE_BY = "approved elsewhere, by whoever committed the vault, not by you"
#: The same in a table cell.
ELSEWHERE_SHORT = "elsewhere, not you"
_VERSION = 1
#: A records or approvals file larger than this is not read.
MAX_FILE_BYTES = 16 << 20
_ADOPT = "synapse-nb lessons adopt"
_log = logging.getLogger("synapse_nb.borrowed")


def lesson_digest(les: Lesson) -> str:
    """What a local approval approved of a lesson: its text and its branch scope (``sha256:`` hex).

    A lesson whose text or branch changed since (a ``git pull`` brought a new database) is not approved here.

    >>> from synapse_nb.models import Lesson
    >>> lesson_digest(Lesson(id="les_1", mind="m", created_at="", updated_at="", status="approved", summary="s",
    ...                      lesson_text="Use keys", branch="main"))[:15]
    'sha256:3ce2e065'
    """
    payload = json.dumps([les.text, les.branch], ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


class LocalApprovals:
    """The approvals a human gave here to lessons of a borrowed vault: one JSON file outside the vault.

    Read again only when the file changes (one ``stat`` per recall); written whole, atomically, under a lock.

    >>> import tempfile, pathlib
    >>> from synapse_nb.models import Lesson
    >>> la = LocalApprovals(pathlib.Path(tempfile.mkdtemp()) / "approvals.json")
    >>> les = Lesson(id="les_1", mind="m", created_at="", updated_at="", status="approved", summary="s",
    ...              lesson_text="Use keys", expires_at="2026-02-01T00:00:00.000000Z")
    >>> la.approved_here(les, "2026-01-02T00:00:00.000000Z")
    False
    >>> _ = la.record(les, at="2026-01-01T00:00:00.000000Z", expires_at="2026-01-08T00:00:00.000000Z", vault="x")
    >>> la.approved_here(les, "2026-01-02T00:00:00.000000Z"), la.approved_here(les, "2026-01-09T00:00:00.000000Z")
    (True, False)
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._key: tuple[int, int, int] | None = None
        self._entries: dict[str, dict[str, Any]] = {}

    def _stat_key(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def entries(self) -> dict[str, dict[str, Any]]:
        """Lesson id -> its local approval (digest, by, at, expires_at, vault); {} when there is no file.

        A file that is not the JSON this module writes counts as no approvals (nothing is in force because of it).
        """
        key = self._stat_key()
        with self._lock:
            if key == self._key and key is not None:
                return self._entries
            entries: dict[str, dict[str, Any]] = {}
            if key is not None:
                try:  # a regular file only: a symlink or a FIFO there is no approval, never a hang (review 79)
                    data = json.loads(read_text(self.path, cap=MAX_FILE_BYTES) or "")
                    raw = data.get("approvals", {}) if isinstance(data, dict) else {}
                    entries = {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, dict)}
                except (OSError, ValueError):
                    entries = {}
            self._key, self._entries = key, entries
            return entries

    def approved_here(self, les: Lesson, now: str) -> bool:
        """Whether a human here approved ``les`` as it reads now (same text and branch), and that approval still
        runs at ``now`` (fixed-width UTC text)."""
        entry = self.entries().get(les.id)
        if entry is None or entry.get("digest") != lesson_digest(les):
            return False
        until = entry.get("expires_at")
        return isinstance(until, str) and until > now

    def record(self, les: Lesson, *, at: str, expires_at: str, vault: str) -> dict[str, Any]:
        """Record that a human here approves ``les`` from ``at`` until ``expires_at``; returns the entry."""
        entry = {"digest": lesson_digest(les), "by": _who(), "at": at, "expires_at": expires_at, "vault": vault}

        def update() -> dict[str, Any]:
            self._key = None
            return {"version": _VERSION, "approvals": {**self.entries(), les.id: entry}}

        try:
            _rewrite(self.path, update)
        except OSError as exc:
            raise StoreError(f"cannot record the local approval in {self.path}: {exc.strerror or exc}; nothing "
                             "was approved") from exc
        return entry


def _rewrite(path: Path, update: Callable[[], dict[str, Any]]) -> None:
    """Write ``update()`` (called under the lock, so it reads the file as it is then) to ``path`` whole and
    atomically (a temporary file, then ``os.replace``), under an exclusive lock on ``path.lock``."""
    path.parent.mkdir(parents=True, exist_ok=True)  # inside the git dir, which exists
    with _locked(path.with_name(path.name + ".lock")):
        data = update()
        write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", mode=0o644)


State = Literal["own", "borrowed"]


class VaultRecords:
    """Which vaults are this checkout's own, and which came with the repository: one JSON file in the git common
    dir (never tracked; the same on every branch and in every worktree), keyed by each vault's id (``vault_uid``).

    ``{"version": 1, "vaults": {id: entry}, "paths": {path: entry}}``; an entry is ``{"state": "own" | "borrowed",
    "how": "created" | "opened" | "adopted" | "tracked", "path": the database, repository-relative, "by", "at"}``.
    ``"paths"`` holds only ``"borrowed"`` entries: a vault seen borrowed whose id could not be read (a read-only
    open of a vault that lacks one) is recorded by its path, and that record holds for the vault at that path until
    its id has one of its own. A file that is not what this class writes is an error (:meth:`load`): it never
    makes a vault count as one's own.

    >>> import tempfile, pathlib
    >>> r = VaultRecords(pathlib.Path(tempfile.mkdtemp()) / "vaults.json")
    >>> r.state("ab12", ".synapse/synapse.db") is None
    True
    >>> r.note("ab12", ".synapse/synapse.db", "borrowed", how="tracked")
    True
    >>> r.note("ab12", ".synapse/synapse.db", "own", how="opened")  # a record is never replaced by a note
    False
    >>> r.state("ab12", ".synapse/synapse.db")
    'borrowed'
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, dict[str, dict[str, Any]]]:
        """``{"vaults": ..., "paths": ...}`` (empty when there is no file). Raises :class:`StoreError` when the file
        cannot be read or is not the JSON this class writes."""
        text = read_text(self.path, cap=MAX_FILE_BYTES)  # never through a symlink, never a FIFO's hang (review 79)
        if text is None:
            what = file_state(self.path)
            if what == "missing":
                return {"vaults": {}, "paths": {}}
            raise StoreError(f"cannot read {self.path}: " + (
                "it is not a regular file (a symlink, a FIFO or a folder is in its place); remove it"
                if what == "damaged" else f"it is unreadable, not UTF-8 or over {MAX_FILE_BYTES} bytes"))
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise StoreError(f"{self.path} is not JSON ({exc})") from exc
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise StoreError(f"{self.path} is not a record of this checkout's vaults (version {_VERSION})")
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for part, states in (("vaults", ("own", "borrowed")), ("paths", ("borrowed",))):
            raw = data.get(part, {})
            if not isinstance(raw, dict) or not all(
                    isinstance(k, str) and isinstance(v, dict) and v.get("state") in states for k, v in raw.items()):
                raise StoreError(f"{self.path}: its {part!r} are not what synapse-nb writes")
            out[part] = raw
        return out

    def state(self, uid: str | None, path: str, *, by_path: bool = True) -> State | None:
        """What this checkout recorded of the vault of id ``uid`` (None: its id is unknown) at ``path``: by its id,
        else (no record of that id; ``by_path``) the path's record; None when neither. Raises :class:`StoreError`
        (see :meth:`load`)."""
        data = self.load()
        entry = data["vaults"].get(uid) if uid is not None else None
        if entry is None and by_path:
            entry = data["paths"].get(path)
        return entry["state"] if entry is not None else None

    def _entry(self, state: State, how: str, path: str) -> dict[str, Any]:
        return {"state": state, "how": how, "path": path, "by": _who(),
                "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}

    def note(self, uid: str | None, path: str, state: State, *, how: str) -> bool:
        """Record what an open found of a vault with no record yet (by its id; by its path when the id is unknown,
        ``"borrowed"`` only); a vault that has a record meanwhile keeps it. True when written. Never raises: the
        open goes on, decided as it was (a warning is logged)."""
        if uid is None and state != "borrowed":
            return False
        written = [False]

        def update() -> dict[str, Any]:
            data = self.load()
            # a vault seen borrowed is recorded by its path as well: checked out again without the id an open wrote
            # into it (a committed vault of an older version has none), it gets a new one (review 7)
            keys = ([("vaults", uid)] if uid is not None else []) + ([("paths", path)] if state == "borrowed" else [])
            for part, key in keys:
                if key not in data[part]:
                    data[part][key] = self._entry(state, how, path)
                    written[0] = True
            return {"version": _VERSION, **data}

        try:
            _rewrite(self.path, update)
        except (OSError, StoreError) as exc:
            _log.warning("could not record the vault %s as %s in %s: %s", path, state, self.path, exc)
        return written[0]

    def adopt(self, uid: str, path: str) -> Path | None:
        """Record the vault of id ``uid`` as this checkout's own, adopted (a person's :func:`adopt`). An unreadable
        file is set aside first (renamed, kept); returns where, or None."""
        aside: list[Path] = []

        def update() -> dict[str, Any]:
            try:
                data = self.load()
            except StoreError:
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
                moved = self.path.with_name(f"{self.path.name}.unreadable-{stamp}-{os.getpid()}")
                os.replace(self.path, moved)
                aside.append(moved)
                data = {"vaults": {}, "paths": {}}
            data["vaults"][uid] = self._entry("own", "adopted", path)
            data["paths"].pop(path, None)
            return {"version": _VERSION, **data}

        try:
            _rewrite(self.path, update)
        except OSError as exc:
            raise StoreError(f"cannot record the adoption in {self.path}: {exc.strerror or exc}; nothing was "
                             "adopted") from exc
        return aside[0] if aside else None


def _who() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name in this environment
        return "unknown"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` while the approvals file is rewritten (POSIX ``flock``; none elsewhere)."""
    try:
        from synapse_nb.locks import held
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with held(path, None, mode=0o644):  # a FIFO or a symlink in its place: made anew (review 79)
        yield


@dataclass(frozen=True)
class Borrowed:
    """Why a vault is borrowed, and where a human's local approvals of its lessons are kept.

    Attributes
    ----------
    reason : ``"tracked"`` (it came with the repository), ``"symlink"`` (reached through a symlink leaving the
        project) or ``"unrecorded"`` (this checkout's record of its vaults cannot be read).
    path : the vault's database, repository-relative (``".synapse/synapse.db"``), or the symlink.
    target : where the symlink points (``"symlink"`` only).
    approvals : the local approvals (None outside git: nothing can be approved here, the way out is
        ``SYNAPSE_HOME``).
    seen : ``"tracked"`` only: how it is known to have come with the repository: ``"index"`` (git tracks it now),
        ``"commit"`` (the last commit holds it), ``"recorded"`` (git tracked it when this checkout first opened it:
        :class:`VaultRecords`); ``"unrecorded"``: why the record cannot be read.
    records : this checkout's :class:`VaultRecords` (None outside git).
    """

    reason: Literal["tracked", "symlink", "unrecorded"]
    path: str
    target: str | None = None
    approvals: LocalApprovals | None = field(default=None, compare=False, repr=False)
    seen: str = "index"
    records: VaultRecords | None = field(default=None, compare=False, repr=False)

    @property
    def _path(self) -> str:
        """The vault's path as quoted data: a folder's name is anyone's choice (review 23: a symlink's target named
        with line breaks and a forged banner headed every answer unquoted)."""
        return file_names([self.path])

    @property
    def _target(self) -> str:
        return file_names([self.target])

    @property
    def why(self) -> str:
        if self.reason == "symlink":
            return f"{self._path} is a symlink to {self._target}, outside the project"
        if self.reason == "unrecorded":
            where = file_names([self.records.path if self.records is not None else RECORDS_NAME])
            return (f"this checkout's record of its vaults ({where}) cannot be read ({file_names([self.seen])}), so "
                    f"whether {self._path} is your own or came with the repository is not known")
        return (f"{self._path} came with the repository (git tracked it when this checkout first opened it; untracking "
                "it changes nothing), so its lessons were approved by whoever committed them, not here")

    @property
    def remedy(self) -> str:
        if self.reason != "symlink":
            return ("its approved lessons are not in force until a human here adopts the vault in their own "
                    f"terminal ({_ADOPT}: its approved lessons then count as approved here) or re-approves them one "
                    "by one (synapse-nb lessons list --status approved, then synapse-nb lessons approve ID)")
        return ("its approved lessons are not in force until a human here re-approves them (synapse-nb lessons "
                "approve ID), and writes are refused; to use that folder as your vault, name it: "
                f"SYNAPSE_HOME={self._target}")

    @property
    def line(self) -> str:
        """The one line that heads every recall and MCP answer of this vault."""
        return f"BORROWED VAULT: {self.why}; {self.remedy}"

    @property
    def refusal(self) -> str | None:
        """Why a write is refused (a symlink out of the project), or None: writes are allowed."""
        if self.reason != "symlink":
            return None
        return (f"refusing to write the vault through the symlink {self._path}: it points to {self._target}, "
                "outside the project, so this would write (and create files) there; if that folder is your vault, "
                f"name it explicitly: SYNAPSE_HOME={self._target} (CLI --vault {self._target})")

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "path": inline(self.path), "target": None if self.target is None else
                inline(self.target), "line": self.line}

    def refuse(self) -> None:
        """Raise the write refusal (:class:`PermissionDeniedError`) when writes are refused."""
        if self.refusal is not None:
            raise PermissionDeniedError(self.refusal)


def symlinked(vault_dir: Path, project_dir: Path, *, named: Path | None = None) -> Borrowed | None:
    """Whether the vault at ``vault_dir`` (for the project ``project_dir``) is borrowed through a symlink, and why
    (before anything is created: a write through it is refused).

    ``named``: the vault folder as a human named it (``SYNAPSE_HOME``, a path argument), absolute and not
    resolved. A named folder is borrowed through a symlink only when the name itself is a symlink inside a git
    work tree leading out of it (a committed ``.synapse`` link named as ``.synapse``); naming the real folder is an
    explicit choice. Unnamed, the vault is the project's ``.synapse/``, and a symlink on the way to it that resolves
    outside the project's root (its repository's main work tree; the project folder outside git) borrows it.
    """
    probe, root = vault_dir, None
    repo = find_repo(project_dir)
    if named is None:
        root = repo.main_work_tree if repo is not None else project_dir
    elif named.is_symlink():
        link_repo = find_repo(named.parent)
        repo, probe = link_repo, named
        root = link_repo.main_work_tree if link_repo is not None else None
    if root is not None:
        exit_ = symlink_exit(probe, root)
        if exit_ is not None:
            link, target = exit_
            shown = link.relative_to(root).as_posix() if link.is_relative_to(root) else str(link)
            approvals = LocalApprovals(repo.common_dir / APPROVALS_NAME) if repo is not None else None
            return Borrowed("symlink", shown, str(target), approvals=approvals)
    return None


def identify(vault_dir: Path, *, uid: str | None, db_name: str = "synapse.db", person: bool = False,
             created: bool = False) -> Borrowed | None:
    """Whether the vault at ``vault_dir`` (of id ``uid``: its ``vault_uid``; None when a read-only open found none)
    came with the repository: ``"tracked"``, or None for a vault of this checkout's own (see the module).

    By this checkout's record first (:class:`VaultRecords`): ``"own"`` -> None whatever git tracks; ``"borrowed"``
    -> borrowed whatever git tracks. No record: one ``git ls-files`` (then, when git does not track it, one
    ``git ls-tree HEAD``) says whether git tracks the database: then borrowed, and recorded as seen borrowed (by any
    actor: the safe direction). Otherwise it is this checkout's own, recorded so when ``person`` (a person's
    writable open: never an agent's) and the vault has an id. ``created``: this open created the vault (a new id;
    git is not asked). An unreadable record: ``"unrecorded"`` (borrowed).
    """
    holders = repos_holding(vault_dir) if vault_dir.is_dir() else []
    if not holders:
        return None
    # every repository that holds the vault decides: the project's too when the vault folder is a repository of its
    # own (`git init .synapse`), and the one whose root the vault folder is (a `synapse.db` at a work tree's root:
    # review 6 laundered a borrowed vault with each)
    found: list[tuple[RepoInfo, str, VaultRecords, State | None]] = []
    for repo, prefix in holders:
        rel = prefix + db_name
        records = VaultRecords(repo.common_dir / RECORDS_NAME)
        try:  # a vault this open created is new, whatever was at its path before
            found.append((repo, rel, records, records.state(uid, rel, by_path=not created)))
        except StoreError as exc:
            return Borrowed("unrecorded", rel, approvals=LocalApprovals(repo.common_dir / APPROVALS_NAME),
                            seen=str(exc), records=records)
    for repo, rel, records, state in found:
        if state == "borrowed":
            if uid is not None:  # recorded by its path while its id was unknown: now by its id as well
                records.note(uid, rel, "borrowed", how="tracked")
            return Borrowed("tracked", rel, approvals=LocalApprovals(repo.common_dir / APPROVALS_NAME),
                            seen="recorded", records=records)
    if any(state == "own" for *_, state in found):
        return None
    for repo, rel, records, _ in [] if created else found:
        prefix = rel[: len(rel) - len(db_name)]
        tracked, seen = tracked_in(repo, prefix, db_name), "index"
        if tracked is None:
            tracked, seen = committed_in(repo, prefix, db_name), "commit"
        if tracked is not None:
            for _, other_rel, other, _ in found:  # seen borrowed in every repository that holds it
                other.note(uid, other_rel, "borrowed", how="tracked")
            return Borrowed("tracked", tracked, approvals=LocalApprovals(repo.common_dir / APPROVALS_NAME),
                            seen=seen, records=records)
    # a vault folder holding a `.git` of its own proves nothing of where the vault came from: not recorded own
    if person and uid is not None and not os.path.lexists(vault_dir / ".git"):
        for _, rel, records, _ in found:
            records.note(uid, rel, "own", how="created" if created else "opened")
    return None


@dataclass(frozen=True)
class Adoption:
    """What :func:`adopt` did: the vault (``path``), why it was borrowed (``was``: its BORROWED line, None when it
    was not), where the records are (``records``), and where an unreadable record was set aside (``set_aside``)."""

    path: str
    was: str | None
    records: Path | None
    set_aside: Path | None = None


def adopt(vault_dir: Path, borrowed: Borrowed | None, *, uid: str | None, db_name: str = "synapse.db") -> Adoption:
    """Record the vault at ``vault_dir`` (of id ``uid``) as this checkout's own: its approved lessons are in force
    here, whoever approved them, and git tracking it never makes it borrowed again. The caller checked that a
    person does it (:meth:`synapse_nb.Vault.adopt`). A vault outside git, or already this checkout's own, needs
    nothing recorded (``records`` None, or ``was`` None). A symlink out of the project is refused: name the folder
    instead.
    """
    if borrowed is not None and borrowed.reason == "symlink":
        raise PermissionDeniedError(f"cannot adopt the vault through the symlink {borrowed.path}: it points to "
                                    f"{borrowed.target}, outside the project; if that folder is your vault, name it "
                                    f"explicitly: SYNAPSE_HOME={borrowed.target} (CLI --vault {borrowed.target})")
    holders = repos_holding(vault_dir)
    if not holders:
        return Adoption(str(vault_dir / db_name), None, None)
    if uid is None:
        raise StoreError(f"the vault {vault_dir} has no id and is open read-only; open it writable to adopt it "
                         "(without SYNAPSE_READONLY)")
    asides = []
    for repo, prefix in holders:  # innermost first: the outermost (the project's) record is the one reported
        records = VaultRecords(repo.common_dir / RECORDS_NAME)
        asides.append(records.adopt(uid, prefix + db_name))
        rel = prefix + db_name
    aside = next((x for x in asides if x is not None), None)
    return Adoption(rel, borrowed.line if borrowed is not None else None, records.path, aside)
