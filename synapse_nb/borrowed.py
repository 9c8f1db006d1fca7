"""Borrowed vaults: a vault that came with the repository, or that a symlink puts outside the project.

A clone of a repository that commits ``.synapse/synapse.db`` brings the committer's memory with it, approved
lessons included; a ``.synapse`` symlink can point a project's vault at any folder. Neither was approved by the
human working here, so such a vault is *borrowed* (:func:`detect`, once per :func:`synapse_nb.vault.open_vault`):

- ``"tracked"``: git tracks the vault's database in the project (``git ls-files``);
- ``"symlink"``: the vault folder is reached through a symlink that resolves outside the project's root.

Naming the vault folder itself (``SYNAPSE_HOME=/that/folder``, ``--vault /that/folder``) is a human's explicit
choice of that folder: it is then no symlink borrowing (unless the name is itself the project's symlink). A vault
git tracks stays borrowed however it is named: its lessons were approved by whoever committed them. Team vaults
(PostgreSQL) are never file-borrowed.

What it changes (the surfaces read :attr:`Borrowed.line` and :meth:`Borrowed.to_dict`):

- every recall text and MCP answer starts with :attr:`Borrowed.line`, and ``Recall.to_dict()["borrowed"]``
  carries it;
- its approved lessons are in force only once a human here re-approved them: :class:`LocalApprovals` records
  those approvals in ``<git-common-dir>/synapse-nb/approvals.json`` (never tracked, the same on every branch and
  in every worktree): lesson id, a digest of the approved text and branch, who and when, until when;
- through an outside symlink every write is refused (:attr:`Borrowed.refusal`), so nothing (no ``synapse.db``,
  no ``.gitignore``) is ever created outside the project.

Examples
--------
>>> b = Borrowed("tracked", ".synapse/synapse.db")
>>> b.line.startswith("BORROWED VAULT: git tracks .synapse/synapse.db")
True
>>> b.refusal is None
True
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from synapse_nb.errors import PermissionDeniedError, StoreError
from synapse_nb.gitscope.repo import find_repo
from synapse_nb.gitscope.vaultdir import symlink_exit, tracked_path, untrack_command

if TYPE_CHECKING:
    from synapse_nb.models import Lesson

__all__ = ["APPROVALS_NAME", "Borrowed", "LocalApprovals", "detect", "lesson_digest"]

#: Where local approvals live, under the repository's git common dir.
APPROVALS_NAME = "synapse-nb/approvals.json"
_VERSION = 1


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
            st = self.path.stat()
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
                try:
                    data = json.loads(self.path.read_text(encoding="utf-8"))
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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # inside the git dir, which exists
            with _locked(self.path.with_name(self.path.name + ".lock")):
                self._key = None
                entries = dict(self.entries())
                entries[les.id] = entry
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps({"version": _VERSION, "approvals": entries}, ensure_ascii=False,
                                          indent=1, sort_keys=True) + "\n", encoding="utf-8")
                os.replace(tmp, self.path)
        except OSError as exc:
            raise StoreError(f"cannot record the local approval in {self.path}: {exc.strerror or exc}; nothing "
                             "was approved") from exc
        return entry


def _who() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name in this environment
        return "unknown"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` while the approvals file is rewritten (POSIX ``flock``; none elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class Borrowed:
    """Why a vault is borrowed, and where a human's local approvals of its lessons are kept.

    Attributes
    ----------
    reason : ``"tracked"`` (git tracks its database) or ``"symlink"`` (reached through a symlink leaving the
        project).
    path : the tracked database, repository-relative (``".synapse/synapse.db"``), or the symlink.
    target : where the symlink points (``"symlink"`` only).
    approvals : the local approvals (None outside git: nothing can be approved here, the way out is
        ``SYNAPSE_HOME``).
    """

    reason: Literal["tracked", "symlink"]
    path: str
    target: str | None = None
    approvals: LocalApprovals | None = field(default=None, compare=False, repr=False)

    @property
    def why(self) -> str:
        if self.reason == "tracked":
            return f"git tracks {self.path} (it came with the repository, not from your own approvals)"
        return f"{self.path} is a symlink to {self.target}, outside the project"

    @property
    def remedy(self) -> str:
        if self.reason == "tracked":
            folder = self.path.rsplit("/", 1)[0] + "/" if "/" in self.path else "."
            return ("its approved lessons are not in force until a human here re-approves them (synapse-nb lessons "
                    "list --status approved, then synapse-nb lessons approve ID), or take the vault out of git: "
                    f"{untrack_command(folder)}")
        return ("its approved lessons are not in force until a human here re-approves them (synapse-nb lessons "
                "approve ID), and writes are refused; to use that folder as your vault, name it: "
                f"SYNAPSE_HOME={self.target}")

    @property
    def line(self) -> str:
        """The one line that heads every recall and MCP answer of this vault."""
        return f"BORROWED VAULT: {self.why}; {self.remedy}"

    @property
    def refusal(self) -> str | None:
        """Why a write is refused (a symlink out of the project), or None: writes are allowed."""
        if self.reason != "symlink":
            return None
        return (f"refusing to write the vault through the symlink {self.path}: it points to {self.target}, outside "
                "the project, so this would write (and create files) there; if that folder is your vault, name it "
                f"explicitly: SYNAPSE_HOME={self.target} (CLI --vault {self.target})")

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "path": self.path, "target": self.target, "line": self.line}

    def refuse(self) -> None:
        """Raise the write refusal (:class:`PermissionDeniedError`) when writes are refused."""
        if self.refusal is not None:
            raise PermissionDeniedError(self.refusal)


def detect(vault_dir: Path, project_dir: Path, *, named: Path | None = None,
           db_name: str = "synapse.db") -> Borrowed | None:
    """Whether the vault at ``vault_dir`` (for the project ``project_dir``) is borrowed, and why.

    ``named``: the vault folder as a human named it (``SYNAPSE_HOME``, a path argument), absolute and not
    resolved. A named folder is borrowed through a symlink only when the name itself is a symlink inside a git
    work tree leading out of it (a committed ``.synapse`` link named as ``.synapse``); naming the real folder is an
    explicit choice. Unnamed, the vault is the project's ``.synapse/``, and a symlink on the way to it that resolves
    outside the project's root (its repository's main work tree; the project folder outside git) borrows it.
    Then one ``git ls-files`` says whether git tracks the database (a vault that came with a clone).
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
    vault_repo = find_repo(vault_dir) if vault_dir.is_dir() else None
    if vault_repo is None:
        return None
    tracked = tracked_path(vault_dir, db_name)
    if tracked is None:
        return None
    return Borrowed("tracked", tracked, approvals=LocalApprovals(vault_repo.common_dir / APPROVALS_NAME))
