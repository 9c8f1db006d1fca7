"""The vault: the front door to every memory kind.

A vault is a folder (by default ``.synapse/`` at the root of the git work tree; worktrees of one
repository share it; outside git, the current folder) holding ``synapse.db`` (SQLite, the system of
record) and ``index/`` (the LanceDB retrieval cache, rebuildable).

Every vault handle has a ``mind`` (records never cross minds unless asked) and an ``actor``:
``"user"`` for human surfaces (notebook, widgets, CLI) and ``"agent"`` for agent surfaces (MCP).
The permission model lives here, in the core, so that no surface can forget it: an agent proposes
(unverified memories, checkpoints, decisions, episodes, lesson analyses) and can never approve or
reject a lesson, verify a memory, overwrite or delete a user's record, claim ``source="user"``,
read pending lessons, change settings or import.

The package has four modules, one job each: :mod:`~synapse_nb.vault.locate` (where a vault lives: the path
rules), :mod:`~synapse_nb.vault.opening` (:func:`open_vault`, :func:`open_team_vault`: creating, migrating, the
offline copy), :mod:`~synapse_nb.vault.facade` (:class:`Vault`, the handle) and :mod:`~synapse_nb.vault.session`
(:class:`VaultSession`: how every surface opens a vault to read or to write, its notices, taking back an unused new
vault). Import from ``synapse_nb.vault`` (or ``synapse_nb``); the submodules are the layout, not the API.
"""

from __future__ import annotations

from synapse_nb.context import ACTORS
from synapse_nb.settings import BAR_SETTINGS, SETTINGS, Settings
from synapse_nb.vault.facade import Vault
from synapse_nb.vault.locate import find_vault_dir
from synapse_nb.vault.opening import ReadableVault, open_team_vault, open_vault
from synapse_nb.vault.session import Notice, NoticeKind, VaultSession

__all__ = ["ACTORS", "BAR_SETTINGS", "SETTINGS", "Notice", "NoticeKind", "ReadableVault", "Settings", "Vault",
           "VaultSession", "find_vault_dir", "open_team_vault", "open_vault"]
