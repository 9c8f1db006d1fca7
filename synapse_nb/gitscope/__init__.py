"""Git awareness: where the repository is, what is checked out, reverts, hooks, a watcher.

Everything here is pure over git: inputs are paths and shas, outputs are frozen
dataclasses. Nothing imports the vault at import time (the vault imports us).

- :func:`find_repo`, :func:`head` read files only (no ``git`` process).
- :func:`scan_reverts` finds revert commits on all branches (one ``git log``).
- :func:`changed_paths` says which files differ from HEAD (the one ``git status`` parser).
- :func:`install_hooks` / :func:`uninstall_hooks` manage ``post-commit`` / ``post-rewrite`` hooks.
- :class:`Watcher` reacts to commits and file changes (watchdog on the git dir).
- :func:`check_paths`, :func:`commits_touching` tell whether remembered paths still exist.
- :mod:`synapse_nb.gitscope.vaultdir` keeps the vault folder out of git (its own ``.gitignore``) and says
  what git still tracks of it.
- :func:`show_commit` gives one commit's ``git show --stat`` and patch, capped in size (for review).

Heavier submodules are imported on first use, so ``import synapse_nb.gitscope``
costs only the standard library.

Examples
--------
>>> from synapse_nb.gitscope import find_repo
>>> find_repo("/") is None
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from synapse_nb.gitscope.repo import HeadState, RepoInfo, find_repo, head

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.gitscope.githook_install import install_hooks, uninstall_hooks
    from synapse_nb.gitscope.reverts import CommitInfo, RevertInfo, ScanResult, scan_reverts
    from synapse_nb.gitscope.show import CommitDiff, show_commit
    from synapse_nb.gitscope.status import changed_paths
    from synapse_nb.gitscope.verify import PathStatus, check_paths, commits_touching
    from synapse_nb.gitscope.watch import Watcher

__all__ = [
    "CommitDiff",
    "CommitInfo",
    "HeadState",
    "PathStatus",
    "RepoInfo",
    "RevertInfo",
    "ScanResult",
    "Watcher",
    "changed_paths",
    "check_paths",
    "commits_touching",
    "find_repo",
    "head",
    "install_hooks",
    "scan_reverts",
    "show_commit",
    "uninstall_hooks",
]

_LAZY = {
    "CommitInfo": "reverts",
    "RevertInfo": "reverts",
    "ScanResult": "reverts",
    "scan_reverts": "reverts",
    "install_hooks": "githook_install",
    "uninstall_hooks": "githook_install",
    "PathStatus": "verify",
    "check_paths": "verify",
    "commits_touching": "verify",
    "Watcher": "watch",
    "changed_paths": "status",
    "CommitDiff": "show",
    "show_commit": "show",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'synapse_nb.gitscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"synapse_nb.gitscope.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
