"""Where a vault lives: the path rules (a project folder, a vault folder, the git work tree, worktrees).

``find_vault_dir`` is public; ``locate`` is what :func:`~synapse_nb.vault.open_vault` uses.
"""

from __future__ import annotations

import os
from pathlib import Path

from synapse_nb.errors import (
    ConflictError,
    VaultNotFoundError,
)
from synapse_nb.gitscope.repo import find_repo

__all__ = ["DB_NAME", "VAULT_DIRNAME", "find_vault_dir", "locate"]

VAULT_DIRNAME = ".synapse"
DB_NAME = "synapse.db"


def find_vault_dir(path: str | Path | None = None) -> tuple[Path, Path]:
    """Where the vault for ``path`` lives, and the project folder it belongs to. Creates nothing.

    ``path`` (and ``SYNAPSE_HOME``, which is used when ``path`` is None: the two mean the same thing)
    names either

    - a **vault folder**: a folder named ``.synapse`` (it need not exist yet, its parent must), or an
      existing folder holding ``synapse.db``. Its project is the folder around a ``.synapse``, and the
      current folder for a vault folder of another name; or
    - a **project folder** (anything else; it must exist): its vault is ``.synapse/`` at the main work
      tree of the git repository containing it (so worktrees share one vault), or ``.synapse/`` in the
      folder itself outside git.

    Without ``path`` and ``SYNAPSE_HOME`` the project folder is the current folder.

    Raises
    ------
    VaultNotFoundError
        The folder named does not exist (a typo must never look like an empty vault), or is a file.
    ConflictError
        The folder holds a ``synapse.db`` *and* a ``.synapse/`` vault: two vaults, and no way to tell
        which one is meant (an older version wrote ``SYNAPSE_HOME/synapse.db`` beside the project's vault).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> proj = pathlib.Path(tempfile.mkdtemp())
    >>> find_vault_dir(proj) == (proj.resolve() / ".synapse", proj.resolve())
    True
    """
    vault_dir, project_dir, _, _ = locate(path)
    return vault_dir, project_dir


def locate(path: str | Path | None) -> tuple[Path, Path, str, Path | None]:
    """:func:`find_vault_dir` plus how to name the location in a message (``SYNAPSE_HOME=/x`` or ``/x``), and the
    vault folder as named (absolute, not resolved) when the path named the vault folder itself (else None)."""
    label = ""
    if path is None and os.environ.get("SYNAPSE_HOME", "").strip():
        path, label = os.environ["SYNAPSE_HOME"].strip(), "SYNAPSE_HOME="
    try:
        named = None if path is None else Path(path).expanduser().absolute()
        base = (Path.cwd() if path is None else Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as exc:
        raise VaultNotFoundError(f"cannot resolve the vault location {label}{path!s}: {exc}") from None
    if base.name == VAULT_DIRNAME:
        if not base.parent.is_dir():
            raise VaultNotFoundError(f"no vault at {label}{base}: the folder {base.parent} does not exist (a typo?); "
                                     "synapse-nb never creates missing folders")
        if base.exists() and not base.is_dir():
            raise VaultNotFoundError(f"no vault at {label}{base}: it is a file, not a vault folder")
        return base, base.parent, f"{label}{base}", named
    if not base.exists():
        raise VaultNotFoundError(f"no vault at {label}{base}: the folder does not exist (a typo?); name an existing "
                                 "project folder or vault folder (synapse-nb never creates missing folders)")
    if not base.is_dir():
        hint = f"; name the folder that holds it: {base.parent}" if base.name == DB_NAME else ""
        raise VaultNotFoundError(f"no vault at {label}{base}: it is a file, not a project or vault folder{hint}")
    if (base / DB_NAME).is_file():
        if (base / VAULT_DIRNAME / DB_NAME).is_file():
            aside = base / "old-vault"
            raise ConflictError(
                f"{label}{base} holds two vaults: {base / DB_NAME} and {base / VAULT_DIRNAME}/; a path names a "
                "project folder (its vault is .synapse/) or a vault folder, never both. Keep the project's vault and "
                f"move the stray one aside: mkdir {aside} && mv {base / DB_NAME}* {aside}/ (then merge it if wanted: "
                f"synapse-nb --vault {aside} memory export | synapse-nb --vault {base} memory import -)")
        # a vault folder of another name serves the project you work in
        return base, Path.cwd().resolve(), f"{label}{base}", named
    repo = find_repo(base)
    if repo is not None:
        return repo.main_work_tree / VAULT_DIRNAME, base, f"{label}{base}", None
    return base / VAULT_DIRNAME, base, f"{label}{base}", None
