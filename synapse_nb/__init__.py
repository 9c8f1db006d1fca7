"""synapse_nb: memory for LLM agents and the people who steer them, living in Jupyter.

>>> import synapse_nb as syn, tempfile
>>> v = syn.open_vault(tempfile.mkdtemp())
>>> _ = v.remember("project", "project_status", "v1.5 deployed", tags=["deploy"], priority="high")
>>> print(v.memories.recall_text())
MEMORY (1 entry: 1 verified, 0 unverified)
- [user · verified] [high] project/project_status: v1.5 deployed #deploy

In IPython or Jupyter: ``%load_ext synapse_nb``.
"""

from __future__ import annotations

from typing import Any

from synapse_nb._version import __version__
from synapse_nb.errors import (
    AmbiguousIdError,
    BusyError,
    CommitUnknownError,
    ConflictError,
    DatasetError,
    EmbedderRefused,
    GitError,
    IndexError_,
    NoCheckpointError,
    NotFoundError,
    OfflineError,
    PermissionDeniedError,
    QueryError,
    QuotaExceededError,
    SchemaError,
    SemanticUnavailableError,
    ServerRefusedError,
    SnapshotMoved,
    StoreError,
    SynapseError,
    TeamPinError,
    ValidationError,
    VaultNotFoundError,
)
from synapse_nb.models import (
    CATEGORIES,
    PRIORITIES,
    Checkpoint,
    Decision,
    Episode,
    Lesson,
    Memory,
    Note,
    RecordList,
    Status,
)
from synapse_nb.vault import Vault, open_vault

__all__ = [
    "CATEGORIES",
    "PRIORITIES",
    "AmbiguousIdError",
    "BusyError",
    "Checkpoint",
    "CommitUnknownError",
    "ConflictError",
    "DatasetError",
    "Decision",
    "EmbedderRefused",
    "Episode",
    "GitError",
    "IndexError_",
    "Lesson",
    "Memory",
    "NoCheckpointError",
    "Note",
    "NotFoundError",
    "OfflineError",
    "PermissionDeniedError",
    "QueryError",
    "QuotaExceededError",
    "RecordList",
    "SchemaError",
    "SemanticUnavailableError",
    "ServerRefusedError",
    "SnapshotMoved",
    "Status",
    "StoreError",
    "SynapseError",
    "TeamPinError",
    "ValidationError",
    "Vault",
    "VaultNotFoundError",
    "__version__",
    "load_ipython_extension",
    "open_vault",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext synapse_nb``: register the magics (imported lazily so ``import synapse_nb`` stays light)."""
    from synapse_nb.magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext synapse_nb``: remove the magics and the auto-checkpoint hook."""
    from synapse_nb.magics import unload_ipython_extension as _unload

    _unload(ipython)
