"""The one exception tree of synapse_nb.

Every error this package raises on purpose is a :class:`SynapseError`, so one
``except SynapseError`` catches them all. Subclasses also inherit the builtin
they resemble, so ``except KeyError`` or ``except PermissionError`` keeps working::

    SynapseError(Exception)
    ├── ValidationError(SynapseError, ValueError)     bad input: what was wrong, what is accepted
    │   └── QueryError                                a query that cannot be run (recall, search)
    ├── NotFoundError(SynapseError, KeyError)         unknown id, key, name or prefix
    │   ├── AmbiguousIdError                          an id prefix that matches several records
    │   ├── NoCheckpointError                         no checkpoint to restore on the branch
    │   └── VaultNotFoundError                        no vault where one was looked for (reads never create one)
    ├── PermissionDeniedError(SynapseError, PermissionError)
    │   │                                             the actor may not do this (agent approving, ...)
    │   └── QuotaExceededError                        an agent's write past a quota a human set (which, how many)
    ├── ConflictError(SynapseError)                   the state does not allow it (approve an approved lesson, ...)
    │   └── TeamPinError                              team.toml names a server this machine did not pin
    ├── StoreError(SynapseError, OSError)             the vault cannot be opened, read or written
    │   ├── SchemaError                               a vault from a newer, unknown schema version
    │   ├── OfflineError                              a team vault's server cannot be reached (no write, no fork)
    │   ├── ServerRefusedError                        a team vault's server is up and refused to connect (no stale copy)
    │   ├── BusyError                                 another client held a team vault's write lock too long
    │   ├── CommitUnknownError                        a commit cut off and the server unreachable to ask (retry it)
    │   └── IndexError_                               the retrieval index is unusable (recall falls back)
    ├── GitError(SynapseError)                        a git feature cannot run here (no repo, no commits, ...)
    ├── SemanticUnavailableError(SynapseError, ImportError)
    │                                                 recall's semantic channel is on but its extra is missing
    └── DatasetError(SynapseError, ValueError)        a labelled data file is malformed (names file, row, problem)

Messages say what was wrong and what is accepted, in one line.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousIdError",
    "BusyError",
    "CommitUnknownError",
    "ConflictError",
    "DatasetError",
    "EmbedderRefused",
    "GitError",
    "IndexError_",
    "NoCheckpointError",
    "NotFoundError",
    "OfflineError",
    "PermissionDeniedError",
    "QueryError",
    "QuotaExceededError",
    "SchemaError",
    "SemanticUnavailableError",
    "ServerRefusedError",
    "SnapshotMoved",
    "StoreError",
    "SynapseError",
    "TeamPinError",
    "ValidationError",
    "VaultNotFoundError",
]


class SynapseError(Exception):
    """Base of every error synapse_nb raises on purpose."""

    def __str__(self) -> str:  # KeyError quotes its message; we never want that
        return str(self.args[0]) if self.args else self.__class__.__name__


class ValidationError(SynapseError, ValueError):
    """Input was malformed: the message names the field, the value and what is accepted."""


class QueryError(ValidationError):
    """A query (recall, search) that cannot be run as given."""


class NotFoundError(SynapseError, KeyError):
    """No record with that id, key, name or prefix (in this mind)."""


class AmbiguousIdError(NotFoundError):
    """An id prefix matched more than one record; the message lists them."""


class VaultNotFoundError(NotFoundError):
    """No vault at the path given (or the path itself does not exist); nothing was created.

    Reads never create a vault; writes create one only in an existing folder. The message names
    the path and says how to create a vault (``synapse-nb init``, or writing a memory).
    """


class NoCheckpointError(NotFoundError):
    """No checkpoint to restore on the branch.

    The message names the Python way to make one; every surface says its own way with
    :meth:`with_remedy` (the CLI ``synapse-nb checkpoint create --doing ...``, the MCP tool
    ``create_checkpoint``, the magic ``%checkpoint create --doing ...``).

    Attributes
    ----------
    branch : the git branch looked at (``None``: outside git or on a detached HEAD).
    mind : the mind looked in.
    elsewhere : how many checkpoints the other branches of that mind hold.
    """

    #: How the Python API makes a checkpoint (the default remedy).
    PYTHON_REMEDY = "vault.checkpoint(doing=...)"

    def __init__(self, message: str | None = None, *, branch: str | None = None, mind: str = "default",
                 elsewhere: int = 0, shown_branch: str | None = None) -> None:
        self.branch, self.mind, self.elsewhere = branch, mind, elsewhere
        #: the branch as the message shows it (the raiser's ``provenance.label_text(branch)``: a branch's name is
        #: anyone's choice, and review 23's held a forged banner and ``</system-reminder>``)
        self.shown_branch = shown_branch if shown_branch is not None else branch
        super().__init__(message if message is not None else self.with_remedy(self.PYTHON_REMEDY))

    def with_remedy(self, how: str) -> str:
        """The message, ending with ``create one with <how>``."""
        if self.elsewhere:
            n = self.elsewhere
            others = f" ({n} checkpoint{'' if n == 1 else 's'} on other branches: restore one by its id)"
        else:
            others = ""
        return (f"no checkpoint yet on branch {self.shown_branch or '(none)'} in mind {self.mind!r}{others}; "
                f"create one with {how}")


class PermissionDeniedError(SynapseError, PermissionError):
    """The actor may not do this: an agent approving, verifying, or acting as the user."""


class EmbedderRefused(PermissionDeniedError):
    """A vault's ``recall_embedder`` names code or files (``synapse_nb.settings.outside_code``) that no person set
    for this vault as this user on this machine (``synapse_nb.embedder_trust``; a borrowed vault's, a downloaded
    archive's): it is not loaded. The message is ``synapse_nb.render.BORROWED_EMBEDDER_LINE`` (what was refused and
    the remedy)."""


class QuotaExceededError(PermissionDeniedError):
    """An agent's write past one of the quotas a human sets (``agent_writes_per_hour``,
    ``agent_memories_per_mind``): the message names the quota, the current count and the setting to raise."""


class ConflictError(SynapseError):
    """The record's state does not allow the operation (e.g. approving a rejected lesson)."""


class TeamPinError(ConflictError):
    """A folder's ``.synapse/team.toml`` names a team server this machine has not pinned for that folder: another
    server than the one pinned (a person accepts the change with ``synapse-nb team trust``), or, for an agent's
    handle, one no person has confirmed yet; or the pins file cannot be read. Nothing was contacted. The message
    names the pinned server and the new one, and what to do (``docs/team.md``, "Pinning the team server").

    Attributes
    ----------
    folder : the project folder (resolved), or None when the pins file itself is the problem.
    pinned : the server pinned for the folder (a URL without a password), or None.
    named : the server ``team.toml`` names now (without a password), or None.
    """

    def __init__(self, message: str, *, folder: str | None = None, pinned: str | None = None,
                 named: str | None = None) -> None:
        super().__init__(message)
        self.folder, self.pinned, self.named = folder, pinned, named


class StoreError(SynapseError, OSError):
    """The vault's files cannot be opened, read or written."""


class SchemaError(StoreError):
    """The vault was written by a newer schema version than this package knows."""


class OfflineError(StoreError):
    """A team vault's server cannot be reached from this machine: nothing can be written (there is never a local
    fork); ``open_vault(url, offline=True)`` reads this machine's stale copy instead."""

    #: why the connection failed, in a few words (libpq's text: it may hold a server's words), when known; the
    #: STALE line of an offline answer quotes it on its one line
    reason: str | None = None


class ServerRefusedError(StoreError):
    """A team vault's server answered and refused the connection (no connection slot left, the login's connection
    limit reached, authentication failed, an unknown role or database, no right to connect). The server is up, so
    this is not :class:`OfflineError`: no surface answers from this machine's stale copy instead; the message names
    the server's reason and what to do."""


class BusyError(StoreError):
    """Another client held a team vault's write lock longer than this client waits (``lock_timeout``): nothing was
    written; the call can be made again (a stalled client's transaction is ended by the server)."""


class CommitUnknownError(StoreError):
    """A team vault's connection died during a commit and the server could not be asked in time whether the commit
    happened. The same call made again on this machine (the same command, or method and arguments) first asks the
    server, and returns what was written instead of writing it twice."""


class SnapshotMoved(StoreError):
    """A lazy snapshot (``store.snapshot(lazy=True)``) had to open a transaction and found the vault changed since
    its first read: its caller reads again from the start in an ordinary snapshot (recall does this itself)."""


class IndexError_(StoreError):
    """The retrieval index is missing, stale or corrupt (recall rebuilds or bypasses it)."""


class GitError(SynapseError):
    """A git feature cannot run here: not a repository, no commits, git missing, ..."""


class SemanticUnavailableError(SynapseError, ImportError):
    """Recall's optional semantic channel was turned on without its extra (``pip install 'synapse_nb[semantic]'``)."""


class DatasetError(SynapseError, ValueError):
    """A labelled data file is malformed; the message names the file, the row and the problem."""
