"""``team search-local``: this machine's offline copy of a team vault, read without asking the server.

Which copy is read, and for whom. The copies are per login (``vault.locate.team_cache_dir``): a person's holds every
mind the person reads. In an agent's shell the agent login's own copy only (review 90: the person's was read); with no
URL known there, none (a twenty-first pass: the one copy on disk may be the person's). A URL is compared by what it
resolves to, the cache folder and so its server and login, never as a string (review 97, F4: the person's URL with one
more libpq parameter, ``&connect_timeout=5``, was another string and the same folder, and the agent read the person's
copy). Reading the copy file directly as the person's Unix user is not defended: the file is hers (docs/team.md).
"""

from __future__ import annotations

from pathlib import Path

from synapse_nb.context import acting_actor
from synapse_nb.errors import PermissionDeniedError, ValidationError
from synapse_nb.gitscope.repo import find_repo
from synapse_nb.offline import OfflineVault, has_copy
from synapse_nb.team_extra import require_psycopg
from synapse_nb.vault.locate import TEAM_DIRNAME, VAULT_DIRNAME, team_cache_dir, team_url_of
from synapse_nb.vault.pins import checked_team_urls, pin_folder, pin_for

__all__ = ["offline_search"]


def _project_dir(base: str | Path | None = None) -> Path:
    start = Path(base or Path.cwd()).resolve()
    repo = find_repo(start)
    return repo.main_work_tree if repo is not None else start


def _split(url: str, project_dir: Path) -> tuple[str, str]:
    require_psycopg()
    from synapse_nb.store.postgres import parse_team_url, project_for

    return parse_team_url(url, project_for(project_dir))


def _login_folder(url: str, project_dir: Path) -> Path:
    """The cache folder of the team vault and login ``url`` names, as ``team_cache_dir`` keys it (its server, project
    and login): two spellings of one URL name one folder."""
    return team_cache_dir(project_dir / VAULT_DIRNAME, *_split(url, project_dir))


def _cache(url: str, project_dir: Path) -> tuple[str, str, Path]:
    """(libpq URL, project, this machine's cache folder of that team vault: this Unix user's own, the
    ``<name>.uid-<uid>`` one when the login's folder is another user's: ``cachedir.claim_folder``)."""
    conninfo, project = _split(url, project_dir)
    folder = team_cache_dir(project_dir / VAULT_DIRNAME, conninfo, project)
    from synapse_nb.store.postgres.cachedir import own_folder  # psycopg: loaded by _split already

    return conninfo, project, own_folder(folder)


def _agents_own(project_dir: Path, acting: str) -> tuple[Path, str] | None:
    """In an agent's shell: (the cache folder of the login agent surfaces here log in as, where that is said), or None
    when nothing here says (no ``team.toml``, no pin). ``team.toml`` (checked against the pin) first, else the pin
    alone (``team.toml`` is a project file an agent may delete): its agent login, else the person's, which agent
    surfaces use when the folder has no agent login (``team status`` says so)."""
    vault_dir = project_dir / VAULT_DIRNAME
    urls = checked_team_urls(vault_dir, actor=acting)
    if urls is not None:
        own = urls.agent_url or urls.url
        return _login_folder(own, project_dir), "team.toml"
    pin = pin_for(pin_folder(vault_dir))
    if pin is None:
        return None
    return _login_folder(pin.agent_server or pin.server, project_dir), "the folder's pin"


def _copy_folder(project_dir: Path, url: str | None, acting: str) -> Path:
    """The cache folder whose copy ``team search-local`` reads (see the module's docstring)."""
    vault_dir = project_dir / VAULT_DIRNAME
    recorded = team_url_of(vault_dir)
    if url is not None and recorded is not None and url != recorded \
            and _login_folder(url, project_dir) == _login_folder(recorded, project_dir):
        url = recorded  # the folder's team vault, spelt otherwise (review 97, F4): read as team.toml's
    if url is None or url == recorded:  # this folder's team vault: its copy only if team.toml agrees with the pin
        # in an agent's shell, the agent login's copy (its minds only), as offline recall reads it: the person's copy
        # holds every mind the person reads (review 90: an agent granted `default` was shown the `hr` mind's records)
        urls = checked_team_urls(vault_dir, actor=acting)
        url = None if urls is None else urls.agent_url if acting == "agent" and urls.agent_url else urls.url
    if url is not None:
        if acting == "agent" and (own := _agents_own(project_dir, acting)) is not None \
                and _login_folder(url, project_dir) != own[0]:
            raise PermissionDeniedError(
                f"team search-local in an agent's shell reads only the agent login's own copy ({own[0].name}, as "
                f"{own[1]} names it); the URL given resolves to another login's or server's copy "
                f"({_login_folder(url, project_dir).name}), which may hold every mind that login reads: refused. "
                "Run it without --vault (the agent login's copy), or a person runs it in their own terminal")
        return _cache(url, project_dir)[2]
    if acting == "agent":  # no URL known: which copy is the agent login's, no file here says (a twenty-first pass)
        raise PermissionDeniedError(
            "team search-local in an agent's shell reads the agent login's own copy, and this folder names no team "
            "vault (no .synapse/team.toml): the one copy on this machine may be the person's, which holds every mind "
            "the person reads. Name the agent's own login: --vault URL (or SYNAPSE_HOME), or a person runs `synapse-nb "
            "team join URL --agent-url AGENT_URL` here")
    # no URL known: the one copy this machine keeps (one per team vault and login), a person's shell only
    from synapse_nb.store.postgres.cachedir import ASIDE, is_own_folder

    # never a folder set aside (another user's, or a symlink: kept, never read), nor one another Unix user owns
    copies = sorted(p for p in (vault_dir / TEAM_DIRNAME).glob("*")
                    if ASIDE not in p.name and is_own_folder(p) and has_copy(p))
    if len(copies) != 1:
        kept = "no copy" if not copies else f"{len(copies)} copies (of team vaults, logins)"
        raise ValidationError(
            f"this machine keeps {kept} under {vault_dir / TEAM_DIRNAME}; name the team vault "
            "(--vault URL or SYNAPSE_HOME), or run `synapse-nb team join URL` so this folder records it")
    return copies[0]


def offline_search(query: str, *, mind: str = "default", k: int = 10, local: str | Path | None = None,
                   url: str | None = None) -> str:
    """Search this machine's index copy of the team vault without the server: a stale, read-only answer.

    For a machine that cannot reach the server (writes are refused: no local fork). The text starts with a
    ``STALE`` line giving the age of the copy (when its feed last synced), then one line per hit. In an agent's
    shell only the agent login's own copy is read: a URL that resolves to another login's copy (the person's, by any
    spelling) is a :class:`~synapse_nb.errors.PermissionDeniedError`.
    """
    acting = acting_actor("user")
    folder = _copy_folder(_project_dir(local), url, acting)
    copy = OfflineVault(folder, location="(not contacted)", mind=mind, actor=acting, reason="not contacted")
    return copy.search(query, k=k).text
