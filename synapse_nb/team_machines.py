"""``team status``'s machines: every machine's feed position on the server, less this machine's rows of an earlier
join of the folder.

The server keeps one ``followers`` row per machine and login (``<hostname>:<cache folder>``, ``#copy`` for the offline
copy's): a machine's cache folder is per server, login and project (``vault.locate.team_cache_dir``), so after a
person's ``team join`` to another URL (the server moved, another host name or login) the old folder's rows stay on
the server, and no person's login may delete a row (migration 7). ``team status`` listed them beside the current
join's as if this machine still synced them (a twenty-first pass: a real team's leftovers).
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from synapse_nb.provenance import inline

__all__ = ["COPY_SUFFIX", "current_join"]

#: What the offline copy's row adds to its cache folder's name (``store.postgres.copy``: ``name="#copy"``).
COPY_SUFFIX = "#copy"


def _folder_of(name: str, prefix: str) -> str | None:
    """The cache folder's name a row of this machine's under ``prefix`` (``<hostname>:<.synapse/team>/``) names, else
    None (another machine's, or another folder's)."""
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix):]
    rest = rest[:-len(COPY_SUFFIX)] if rest.endswith(COPY_SUFFIX) else rest
    return rest if rest and "/" not in rest else None


def _current(folder: str, names: Iterable[str]) -> bool:
    """Whether a cache folder's name is one of the current join's (or the ``<name>.uid-<uid>`` folder another Unix
    user keeps beside it for the same login: ``cachedir.claim_folder``)."""
    return any(folder == n or folder.startswith(f"{n}.uid-") for n in names)


def current_join(machines: Sequence[Mapping[str, Any]], team_dir: Path, current: Iterable[Path],
                 project: str) -> tuple[list[Mapping[str, Any]], str | None]:
    """(the rows that apply to the folder's current join, what is said of this machine's other rows): a row of this
    machine (its hostname) and this project folder (``team_dir``: ``.synapse/team``) whose cache folder is not one of
    ``current`` (the folder's URL's and its agent login's) is from an earlier join: left out, counted, and the
    statement an administrator runs to drop them named (None: there is none)."""
    prefix = f"{socket.gethostname()}:{team_dir}/"
    names = [p.name for p in current]
    kept: list[Mapping[str, Any]] = []
    old: list[str] = []
    for row in machines:
        folder = _folder_of(str(row.get("name", "")), prefix)
        if folder is not None and not _current(folder, names):
            old.append(str(row["name"]))
        else:
            kept.append(row)
    if not old:
        return kept, None
    quoted = ", ".join("'" + inline(n, 4096).replace("'", "''") + "'" for n in sorted(set(old)))
    folders = sorted({inline(f, 200) for n in old if (f := _folder_of(n, prefix)) is not None})
    return kept, (f"{len(old)} feed position{'s' if len(old) != 1 else ''} this machine reported for this folder under "
                  f"an earlier join ({', '.join(folders)} in {team_dir}: another URL than team.toml's now) are not "
                  "shown: nothing syncs them any more. They are rows on the server, which no person's or agent's "
                  f"login may delete; the administrator drops them with: DELETE FROM \"{project}\".followers WHERE "
                  f"name IN ({quoted}); and the old folders in {team_dir} are caches this machine may delete")
