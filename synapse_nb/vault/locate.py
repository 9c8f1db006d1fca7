"""Where a vault lives: the path rules (a project folder, a vault folder, the git work tree, worktrees).

``find_vault_dir`` is public; ``locate`` is what :func:`~synapse_nb.vault.open_vault` uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from synapse_nb.errors import (
    ConflictError,
    VaultNotFoundError,
)
from synapse_nb.gitscope.repo import find_repo

__all__ = ["DB_NAME", "TEAM_DIRNAME", "TEAM_FILE", "VAULT_DIRNAME", "find_vault_dir", "locate", "login_key",
           "record_team_url", "retire_shared_cache", "set_aside_databases", "set_local_aside", "team_agent_url_of",
           "team_cache_dir", "team_url_of", "without_secrets"]

VAULT_DIRNAME = ".synapse"
DB_NAME = "synapse.db"
#: ``.synapse/team.toml``: this folder's vault is a team vault (written by ``synapse-nb team join``).
TEAM_FILE = "team.toml"
#: ``.synapse/team/<login>@<server>-<project>/``: this machine's caches of one team vault for one login (its offline
#: copy and feed positions).
TEAM_DIRNAME = "team"


def _team_toml(vault_dir: Path) -> dict[str, object] | None:
    from synapse_nb.own_files import CONFIG, read_text

    path = vault_dir / TEAM_FILE
    # a regular file (a symlink followed) of 64 KiB at most, never waited on (review 81: a FIFO there hung every
    # command, /dev/zero ate the memory, a 2 GB sparse file took 26 s)
    text = read_text(path, cap=CONFIG[TEAM_FILE], follow=True)
    if text is None and not os.path.lexists(path):
        return None
    if text is None:
        raise ConflictError(f"{path} is not a readable file of at most {CONFIG[TEAM_FILE] // 1024} KiB (a FIFO, a "
                            "device, a folder, a larger file or one not UTF-8 is in its place); it should hold "
                            'url = "postgresql://user@host:port/database?project=NAME" (written by `synapse-nb team '
                            "join`): move it aside and join again, or remove it for a local vault")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConflictError(f"{path} cannot be read ({exc}); it should hold "
                            'url = "postgresql://user@host:port/database?project=NAME" and, optionally, agent_url = '
                            '"postgresql://agent_login@..." (written by `synapse-nb team join`): fix or delete '
                            "it") from None


def _is_pg_url(value: object) -> bool:
    return isinstance(value, str) and value.lower().startswith(("postgresql://", "postgres://"))


def team_url_of(vault_dir: Path) -> str | None:
    """The team vault URL recorded for this vault folder (``team.toml``'s ``url``), or None.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> team_url_of(d) is None
    True
    >>> _ = record_team_url(d, "postgresql://alice:secret@db:5432/team?project=acme")
    >>> team_url_of(d)
    'postgresql://alice@db:5432/team?project=acme'
    """
    data = _team_toml(vault_dir)
    if data is None:
        return None
    url = data.get("url")
    if not isinstance(url, str) or not _is_pg_url(url):
        raise ConflictError(f"{vault_dir / TEAM_FILE} names no team vault URL (url = \"postgresql://...\"): fix or "
                            "delete it")
    return url


def team_agent_url_of(vault_dir: Path) -> str | None:
    """The URL agent surfaces in this folder log in with (``team.toml``'s ``agent_url``: the agent's own database
    login, set by a person with ``synapse-nb team agent-login``), or None: they use ``url`` (the person's login) and
    ``SET ROLE <project>_agent``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = record_team_url(d, "postgresql://alice@db/team?project=acme", "postgresql://agent_a:pw@db/team?project=acme")
    >>> team_agent_url_of(d)
    'postgresql://agent_a@db/team?project=acme'
    """
    data = _team_toml(vault_dir)
    if data is None or "agent_url" not in data:
        return None
    url = data["agent_url"]
    if not isinstance(url, str) or not _is_pg_url(url):
        raise ConflictError(f"{vault_dir / TEAM_FILE}'s agent_url is not a team vault URL (accepted: agent_url = "
                            '"postgresql://agent_login@host:port/database?project=NAME", or no agent_url line): '
                            "a person sets it with `synapse-nb team agent-login URL`")
    return url


#: The URL parameters that are secrets (libpq's ``password``, and ``sslpassword``: the client key's passphrase): never
#: written to ``team.toml`` or a pin, as a ``user:password@`` password is not.
SECRET_PARAMS = frozenset({"password", "sslpassword"})


def without_secrets(url: str) -> str:
    """``url`` without its secrets: the password in ``user:password@`` and every :data:`SECRET_PARAMS` query
    parameter (its name as libpq reads it, percent-decoded), the rest as written. ``team.toml`` is read by every
    process in the folder (the agent's Unix user's too, in the set-up docs/team.md recommends): before, a password
    given as ``?password=`` (or ``&sslpassword=``) was written there as it was (review 57).

    >>> without_secrets("postgresql://al:pw@db/t?project=a&password=x&pass%77ord=y&sslpassword=k&sslmode=require")
    'postgresql://al@db/t?project=a&sslmode=require'
    """
    parts = urlsplit(url.strip())
    netloc = parts.netloc
    if "@" in netloc and ":" in netloc.split("@", 1)[0]:
        netloc = netloc.split("@", 1)[0].split(":", 1)[0] + "@" + netloc.split("@", 1)[1]
    query = "&".join(p for p in parts.query.split("&") if unquote(p.split("=", 1)[0]) not in SECRET_PARAMS)
    # by hand, not urlunsplit: it drops the "//" of a URL with no host ("postgresql:///team", a local socket)
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


def record_team_url(vault_dir: Path, url: str, agent_url: str | None = None) -> Path:
    """What ``team join`` writes (:func:`_record_team_url`), for a person only: refused in an agent's environment
    (review 45: an agent's Python pointed a person's folder at a server of its choosing with it).

    Raises
    ------
    PermissionDeniedError
        The process runs in a coding agent's environment.
    """
    from synapse_nb.context import require_human  # here: context imports the vault package

    require_human("record a team vault's URL for a folder (`synapse-nb team join` does this)")
    return _record_team_url(vault_dir, url, agent_url)


def _record_team_url(vault_dir: Path, url: str, agent_url: str | None = None) -> Path:
    """Write ``team.toml`` into the vault folder: from now on the folder's vault is that team vault, for every surface
    (without ``SYNAPSE_HOME``); ``agent_url``: the login agent surfaces use there (:func:`team_agent_url_of`). A
    password in a URL (``user:password@``, ``?password=``, ``?sslpassword=``) is left out (:func:`without_secrets`;
    libpq reads ``~/.pgpass``, ``PGPASSFILE`` or ``passfile=``)."""
    path = vault_dir / TEAM_FILE
    agent = ("# Agent surfaces here (an agent's shell, MCP, hooks, actor=\"agent\") log in as agent_url's login.\n"
             f"agent_url = {json.dumps(without_secrets(agent_url))}\n") if agent_url else ""
    path.write_text("# This folder's vault is the team vault below (written by `synapse-nb team join`; docs/team.md).\n"
                    "# To use the local vault here again: delete this file, and rename the newest\n"
                    "# synapse.db.before-team-* file beside it (the local vault the join set aside)\n"
                    "# back to synapse.db.\n"
                    f"url = {json.dumps(without_secrets(url))}\n" + agent, encoding="utf-8")
    return path


_ASIDE = re.compile(re.escape(DB_NAME) + r"\.before-team-\d{8}T\d{6}")


def set_local_aside(vault_dir: Path) -> Path | None:
    """What ``team join`` does to a folder's local vault (:func:`_set_local_aside`), for a person only: refused in an
    agent's environment (review 45: an agent's Python renamed a person's local vault aside with it).

    Raises
    ------
    PermissionDeniedError
        The process runs in a coding agent's environment.
    """
    from synapse_nb.context import require_human  # here: context imports the vault package

    require_human("set a folder's local vault aside (`synapse-nb team join` does this)")
    return _set_local_aside(vault_dir)


def _set_local_aside(vault_dir: Path) -> Path | None:
    """Rename a local vault database in a folder that now names a team vault aside (kept, never deleted):
    ``synapse.db`` -> ``synapse.db.before-team-YYYYmmddTHHMMSS`` (with its ``-wal``/``-shm`` files). Returns the new
    name, or None when there was none."""
    db = vault_dir / DB_NAME
    if not db.is_file():
        return None
    aside = vault_dir / f"{DB_NAME}.before-team-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
    for suffix in ("-wal", "-shm", ""):
        part = vault_dir / f"{DB_NAME}{suffix}"
        if part.exists():
            part.rename(aside.with_name(aside.name + suffix))
    return aside


def set_aside_databases(vault_dir: Path) -> list[Path]:
    """The local vault databases :func:`set_local_aside` renamed aside in ``vault_dir``, oldest first (only names it
    writes: ``synapse.db.before-team-YYYYmmddTHHMMSS``; their ``-wal``/``-shm`` files are not listed)."""
    try:
        names = sorted(p for p in vault_dir.glob(f"{DB_NAME}.before-team-*") if _ASIDE.fullmatch(p.name))
    except OSError:
        return []
    return [p for p in names if p.is_file()]


def _libpq_params(conninfo: str) -> dict[str, str]:
    """The connection parameters of a libpq URL as libpq reads them: a parameter in the query overrides the same one
    before it (``postgresql://db/team?host=other`` connects to ``other``). psycopg's parser (libpq's own) when it is
    installed (a team vault needs it), else the same rule by hand."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        return {k: str(v) for k, v in conninfo_to_dict(conninfo).items()}
    except Exception:  # noqa: BLE001 - no psycopg, or a URL libpq cannot read (the connection says so later)
        parts = urlsplit(conninfo)
        out = {"host": parts.hostname or "", "port": str(parts.port or ""), "dbname": parts.path.lstrip("/")}
        return {k: v for k, v in out.items() if v} | dict(parse_qsl(parts.query))


def _login(params: dict[str, str]) -> str:
    """The database login libpq connects as: the URL's ``user``, else ``PGUSER``, else the operating system user."""
    if params.get("user"):
        return params["user"]
    if os.environ.get("PGUSER"):
        return os.environ["PGUSER"]
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, AttributeError):
        import getpass

        return getpass.getuser()


def _server_key(params: dict[str, str], project: str) -> str:
    """``<host>-<port>-<database>-<project>`` (+ a digest of ``hostaddr``/``service``): the server and project."""
    host = ",".join(h if h.startswith("/") else h.lower() for h in params.get("host", "").split(",")) or "local"
    port = params.get("port") or "5432"
    db = params.get("dbname") or "postgres"
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{host}-{port}-{db}-{project}")[:120]
    routes = {k: params[k] for k in ("hostaddr", "service") if params.get(k)}
    if routes:
        key += "-" + hashlib.sha256(json.dumps(routes, sort_keys=True).encode()).hexdigest()[:12]
    return key


def team_cache_dir(vault_dir: Path, conninfo: str, project: str) -> Path:
    """This machine's cache folder of one team vault for one login:
    ``.synapse/team/<login>@<host>-<port>-<database>-<project>``, apart from a local vault's index, so no rebuild can
    mix a local vault's records into a team vault's copy.

    The host, port and database are the ones libpq connects to (a ``host`` in the query overrides the one before
    it), and a URL that routes further (``hostaddr``, ``service``) gets a digest of them appended, so two servers
    never share one offline copy or feed position. The login (the URL's user, else ``PGUSER``, else the system
    user) is part of it: what a login reads is its own (row-level security: its minds), so two logins sharing one
    copy made each sync restart the other's from nothing, and a login granted fewer minds stamp the copy fresh
    while it missed the other minds' changes (review 30). A login that is not a plain name gets a digest of it.

    >>> team_cache_dir(Path(".synapse"), "postgresql://bob@db.example.com:5433/team?sslmode=require", "acme")
    PosixPath('.synapse/team/bob@db.example.com-5433-team-acme')
    >>> team_cache_dir(Path(".synapse"), "postgresql://bob@db.example.com:5433/team?host=other", "acme")
    PosixPath('.synapse/team/bob@other-5433-team-acme')
    >>> team_cache_dir(Path(".s"), "postgresql://bob@db:5433/team?hostaddr=10.0.0.9", "acme")  # doctest: +ELLIPSIS
    PosixPath('.s/team/bob@db-5433-team-acme-...')
    >>> team_cache_dir(Path(".s"), "postgresql://a%20b@db/team", "acme")  # doctest: +ELLIPSIS
    PosixPath('.s/team/a_b-...@db-5432-team-acme')
    """
    params = _libpq_params(conninfo)
    return vault_dir / TEAM_DIRNAME / f"{login_key(_login(params))}@{_server_key(params, project)}"


def login_key(login: str) -> str:
    """What a cache folder's name holds of its login, before its ``@`` (:func:`team_cache_dir`): the login when it is
    a plain name, else a digest of it beside its plain characters ("a b" and "a_b" are two logins: two folders).

    >>> login_key("alice"), login_key("a b")  # doctest: +ELLIPSIS
    ('alice', 'a_b-...')
    """
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", login)[:40]
    if name != login:
        name += "-" + hashlib.sha256(login.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return name


def retire_shared_cache(vault_dir: Path, conninfo: str, project: str) -> bool:
    """Remove the cache folder an older version kept for every login of a server (``.synapse/team/<host>-<port>-
    <database>-<project>``, no login in its name): its copy may hold another login's view, records purged since
    (a sync from nothing never deleted) and another login's sync time. It is a cache: this login's own folder is
    rebuilt from the server. An attempt left in doubt there (``in-doubt.json``) moves to this login's folder when
    that has none. True when there was one."""
    old = vault_dir / TEAM_DIRNAME / _server_key(_libpq_params(conninfo), project)
    if old.is_symlink() or not old.is_dir():
        return False
    doubt = old / "in-doubt.json"
    new = team_cache_dir(vault_dir, conninfo, project)
    if doubt.is_file() and new.is_dir() and not (new / "in-doubt.json").exists():
        with contextlib.suppress(OSError):
            doubt.replace(new / "in-doubt.json")
    shutil.rmtree(old, ignore_errors=True)
    return True


def find_vault_dir(path: str | Path | None = None) -> tuple[Path, Path]:
    """Where the vault for ``path`` lives, and the project folder it belongs to. Creates nothing.

    ``path`` (and ``SYNAPSE_HOME``, which is used when ``path`` is None: the two mean the same thing)
    names either

    - a **vault folder**: a folder named ``.synapse`` (it need not exist yet, its parent must), or an
      existing folder holding ``synapse.db``. Its project is the folder around a ``.synapse``, and the
      current folder for a vault folder of another name; but the current folder (no ``path``, no
      ``SYNAPSE_HOME``) holding ``synapse.db`` inside a git work tree whose own vault exists (local or team) is a
      project folder: the work tree's vault is its vault (anyone who can write there can drop a database file;
      agent hooks look from the work tree, not from their session's folder); or
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
        repo = None if path is not None else find_repo(base)
        own = None if repo is None else repo.main_work_tree / VAULT_DIRNAME
        if own is not None and ((own / DB_NAME).is_file() or (own / TEAM_FILE).is_file()):
            # the current folder holding a database file, inside a work tree that has its vault (local or team), is
            # not another vault: anyone who can write a file there can drop one (review 27: an agent's `mv` of a vault
            # it made into services/api/ made every session started there read it; review 31: a team project's too).
            # A folder named explicitly (--vault, SYNAPSE_HOME) is what the person named: a second vault in the tree
            return own, base, f"{label}{base}", None
        # a vault folder of another name serves the project you work in
        return base, Path.cwd().resolve(), f"{label}{base}", named
    repo = find_repo(base)
    if repo is not None:
        return repo.main_work_tree / VAULT_DIRNAME, base, f"{label}{base}", None
    return base / VAULT_DIRNAME, base, f"{label}{base}", None
