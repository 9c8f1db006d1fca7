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
from synapse_nb.vault.locate import login_key

__all__ = ["COPY_SUFFIX", "SHOWN_APART", "current_join", "literal"]

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


def _own_login(folder: str, login: str, current: set[str]) -> bool:
    """Whether ``login`` is the one the cache folder ``folder`` is kept for: the login its name holds before its
    ``@`` (``vault.locate.login_key``); a folder an older version shared between logins (no ``@``) was any login's of
    the current join, or of a row from before migration 13 (``''``)."""
    key, at, _ = folder.partition("@")
    if at:
        return key == login_key(login)
    return login == "" or login_key(login) in current


def _printable(name: str) -> bool:
    """Whether a row's name prints as it is (review 97, F5: a trailing newline, which ``inline`` trims, named
    another row)."""
    return name.isprintable() and name == name.strip()


def literal(value: str) -> str:
    r"""``value`` as a PostgreSQL escape string constant (``E'...'``) naming it exactly, on one printable ASCII line:
    a backslash and a quote escaped, any other character but printable ASCII as ``\uXXXX`` (``\UXXXXXXXX``).

    >>> print(literal("it's a\\b"), literal("x\n"), literal("café"))
    E'it''s a\\b' E'x\u000a' E'caf\u00e9'
    """
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("''")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "E'" + "".join(out) + "'"


#: The most rows of other logins ``team status`` names one by one.
SHOWN_APART = 10


def current_join(machines: Sequence[Mapping[str, Any]], team_dir: Path, current: Iterable[Path],
                 project: str) -> tuple[list[Mapping[str, Any]], str | None, str | None]:
    """(the rows that apply to the folder's current join, what is said of this machine's rows of an earlier join,
    what is said of rows named after this machine's folders that are not this machine's): a row of this machine (its
    hostname) and this project folder (``team_dir``: ``.synapse/team``) whose cache folder is not one of ``current``
    (the folder's URL's and its agent login's) is from an earlier join: left out, counted, and the statement an
    administrator runs to drop them named (None: there is none). Only a row whose ``login`` is the one its folder is
    kept for and whose name prints as it is counts as this machine's (review 97, F5: any login may report a row under
    any name; the agent login's rows named after the person's live folder plus a newline were called an earlier join,
    and the statement, the newline trimmed, dropped the person's live rows): the others are left out of both and
    listed apart, as another login's (None: there is none)."""
    prefix = f"{socket.gethostname()}:{team_dir}/"
    names = [p.name for p in current]
    logins = {n.partition("@")[0] for n in names if "@" in n}
    kept: list[Mapping[str, Any]] = []
    old: list[tuple[str, str]] = []
    apart: list[tuple[str, str]] = []
    for row in machines:
        name, login = str(row.get("name", "")), str(row.get("login", ""))
        folder = _folder_of(name, prefix)
        if folder is None:
            kept.append(row)
        elif not _printable(name) or not _own_login(folder, login, logins):
            apart.append((name, login))
        elif _current(folder, names):
            kept.append(row)
        else:
            old.append((name, login))
    return kept, _earlier(old, prefix, team_dir, project), _apart(apart, team_dir)


def _earlier(old: list[tuple[str, str]], prefix: str, team_dir: Path, project: str) -> str | None:
    if not old:
        return None
    by_login: dict[str, list[str]] = {}
    for name, login in sorted(set(old)):
        by_login.setdefault(login, []).append(name)
    where = " OR ".join(f"(login = {literal(login)} AND name IN ({', '.join(literal(n) for n in names)}))"
                        for login, names in sorted(by_login.items()))
    folders = sorted({inline(f, 200) for n, _ in old if (f := _folder_of(n, prefix)) is not None})
    return (f"{len(old)} feed position{'s' if len(old) != 1 else ''} this machine reported for this folder under "
            f"an earlier join ({', '.join(folders)} in {team_dir}: another URL than team.toml's now) are not "
            "shown: nothing syncs them any more. They are rows on the server, which no person's or agent's "
            f"login may delete; the administrator drops them with: DELETE FROM \"{project}\".followers WHERE "
            f"{where}; and the old folders in {team_dir} are caches this machine may delete")


def _apart(apart: list[tuple[str, str]], team_dir: Path) -> str | None:
    if not apart:
        return None
    rows = sorted(set(apart))
    shown = ", ".join(f"{literal(n)} by {literal(login)}" for n, login in rows[:SHOWN_APART])
    more = f" and {len(rows) - SHOWN_APART} more" if len(rows) > SHOWN_APART else ""
    return (f"{len(rows)} feed position{'s' if len(rows) != 1 else ''} named after this machine's cache folders in "
            f"{team_dir} are not this machine's (reported by another login than the folder's, or under a name that "
            f"does not print as it is; any login may report a row under any name), not counted as an earlier join "
            f"and not shown among the machines: {shown}{more}")
