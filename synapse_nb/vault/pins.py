"""The team server pinned for each project folder on this machine, by a person, kept outside the project.

A folder's ``.synapse/team.toml`` names the team vault every surface there opens (``synapse-nb team join`` writes
it), and anything that can write the folder can rewrite it: an agent running as the person's Unix user could point
it at a server of its own, whose answers (forged "approved" lessons) would be shown as the team vault's. So this
machine keeps, per project folder, the server a **person** connected it to, in a file of the person's outside every
project (:func:`pins_file`: ``$SYNAPSE_TEAM_PINS``, else ``$XDG_CONFIG_HOME/synapse_nb/team_pins.toml``, else
``~/.config/synapse_nb/team_pins.toml``), and every open of a folder's team vault checks ``team.toml`` against it
*before connecting* (:func:`checked_team_url`):

- the same server: opened;
- another server: :class:`~synapse_nb.errors.TeamPinError` naming both, for everyone, a person included; a person
  accepts the change with ``synapse-nb team trust`` (human-only: it shows old -> new and asks);
- no pin yet: refused too, until a person confirms the server (``synapse-nb team trust``, which shows it and asks,
  or ``synapse-nb team join URL``). There is no trust on first use: an agent made a pinned folder look fresh every
  way a first use could be told from (reviews 5 to 7), and a person's commit (the git hook) pinned its server.

A person's ``team join URL`` pins URL; an agent's never creates or moves a pin. What is pinned is the server's
identity (:func:`server_identity`): the URL as libpq reads it (a ``host`` in the query overrides the one before
it), without the password, normalised. Any other change of the URL (host, ``hostaddr``, port, database, user,
project, ``sslmode``, ``service``, ...) is a change of server.

The pin also holds the folder's **agent login** (``team.toml``'s ``agent_url``, :func:`agent_identity`; "" when
there is none): the login every handle that acts as the agent there connects with. A ``team.toml`` whose
``agent_url`` was added, changed or removed since a person pinned it is refused the same way (review 30: without
an agent login, agent surfaces log in as the person and only ``SET ROLE`` to the agent role, which any code the
agent runs can skip with the person's password file).

An agent running as the same user can edit the pins file too: the pin turns the redirect from an ordinary edit of
a project file into an explicit edit of a file of the person's, outside the project (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import tomllib
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, NamedTuple
from urllib.parse import quote, unquote, urlencode

from synapse_nb._util import user_config_dir
from synapse_nb.context import acting_actor
from synapse_nb.errors import StoreError, TeamPinError, ValidationError
from synapse_nb.own_files import read_text, state, write_atomic
from synapse_nb.provenance import inline
from synapse_nb.vault.locate import (
    DB_NAME,
    SECRET_PARAMS,
    TEAM_FILE,
    set_aside_databases,
    team_agent_url_of,
    team_url_of,
    without_secrets,
)

__all__ = ["PINS_ENV", "Pin", "PinBy", "TeamUrls", "agent_identity", "checked_team_url", "checked_team_urls",
           "is_person", "login_of", "not_yours", "pin_folder", "pin_for", "pin_state", "pins_file", "read_pins",
           "server_identity", "write_pin"]

#: Names the pins file itself (tests; a person who keeps it elsewhere).
PINS_ENV = "SYNAPSE_TEAM_PINS"
#: A pins file larger than this is not read (a pin is a few hundred bytes).
MAX_PINS_BYTES = 4 << 20
PinBy = Literal["join", "trust", "first open", "agent-login"]  # "first open": pins an earlier version made on first use
_HEADER = ("# The team server pinned for each project folder on this machine (synapse_nb; docs/team.md, \"Pinning\").\n"
           "# Written by `synapse-nb team join` and `synapse-nb team trust` (a person confirms a server for a\n"
           "# folder; a folder whose .synapse/team.toml names another server is refused until `team trust`.\n")


class Pin(NamedTuple):
    """One folder's pinned team server: ``server`` (:func:`server_identity`), when and how it was pinned, and the
    agent login agent surfaces there use (``agent_server``, :func:`agent_identity`; "": none, the person's login)."""

    folder: str
    server: str
    pinned_at: str
    by: str
    agent_server: str = ""


class TeamUrls(NamedTuple):
    """A folder's checked team vault URLs: ``url`` (a person's handles) and ``agent_url`` (None: agent handles use
    ``url`` and ``SET ROLE``)."""

    url: str
    agent_url: str | None


def pins_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where this machine's pins are: ``$SYNAPSE_TEAM_PINS``, else ``$XDG_CONFIG_HOME/synapse_nb/team_pins.toml``
    (an absolute ``XDG_CONFIG_HOME`` only, as the XDG spec says), else ``~/.config/synapse_nb/team_pins.toml``.

    >>> str(pins_file({"XDG_CONFIG_HOME": "/cfg"})), str(pins_file({"SYNAPSE_TEAM_PINS": "/x/pins.toml"}))
    ('/cfg/synapse_nb/team_pins.toml', '/x/pins.toml')
    """
    env = os.environ if environ is None else environ
    named = env.get(PINS_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return user_config_dir(env) / "team_pins.toml"


def pin_folder(vault_dir: Path) -> Path:
    """The folder a pin is kept under: the project folder around ``.synapse/``, resolved (a vault folder of another
    name: itself, resolved). ``.synapse`` itself is not followed: moved aside and replaced by a symlink to a folder
    whose ``team.toml`` names another server, it once keyed a pin of its own, which the person's next open took for a
    first use (review 5)."""
    vault_dir = Path(vault_dir)
    if vault_dir.name == ".synapse":
        return vault_dir.absolute().parent.resolve()
    return vault_dir.resolve()


def server_identity(url: str, project_dir: str | Path) -> str:
    """The server a team vault URL reaches, as a URL without a password: what a pin holds and compares.

    The URL is read as libpq reads it (a parameter in the query overrides the same one before it), the host
    lower-cased (a socket folder kept as written), a missing port as 5432, the project (``project_dir`` 's default
    when the URL names none) first among the parameters and the rest sorted; the package's own
    ``require_auth=!password`` is left out, any other value kept.

    >>> server_identity("postgresql://Alice:secret@DB.example.com/team?sslmode=require&project=acme", "/src/x")
    'postgresql://Alice@db.example.com:5432/team?project=acme&sslmode=require'
    >>> server_identity("postgresql://alice@db/team?host=evil.example&project=acme", "/src/x")
    'postgresql://alice@evil.example:5432/team?project=acme'
    """
    from synapse_nb.team_extra import require_psycopg

    require_psycopg()
    from psycopg.conninfo import conninfo_to_dict

    from synapse_nb.store.postgres import parse_team_url, project_for
    conninfo, project = parse_team_url(url, project_for(project_dir))
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items()}
    except Exception as exc:  # noqa: BLE001 - psycopg.ProgrammingError: libpq cannot read the URL
        # libpq's message quotes the URL, which anyone who writes the file chose (review 23: a forged banner in a
        # URL's fragment reached every surface's error): quoted, and cut
        raise TeamPinError(f"the team vault URL cannot be read ({inline(exc, 120)}): fix "
                           f"{TEAM_FILE} or name the URL again with `synapse-nb team join URL`") from None
    for secret in SECRET_PARAMS:  # never into the pins file (a sslpassword once was: review 57)
        params.pop(secret, None)
    if params.get("require_auth") == "!password":
        params.pop("require_auth")
    user = params.pop("user", "")
    host = params.pop("host", "")
    port = params.pop("port", "") or "5432"
    dbname = params.pop("dbname", "")
    hosts = [h if h.startswith("/") else h.lower() for h in host.split(",")] if host else []
    # every part as printable ASCII: a host or port holding control characters (percent-decoded from the query) once
    # drew another server on the person's terminal than the one `team trust` pinned (review 8)
    shown = ",".join(f"[{h}]" if _ipv6(h) else quote(h, safe=".-_") for h in hosts)
    port = quote(port, safe=",")
    if "," in port:  # one port per host: as a parameter, not glued to the host list
        params["port"] = port
        port = ""
    netloc = (f"{quote(user, safe='')}@" if user else "") + shown + (f":{port}" if port and shown else "")
    if port and not shown:
        params["port"] = port
    query = urlencode([("project", project), *sorted(params.items())])
    return f"postgresql://{netloc}/{quote(dbname, safe='')}?{query}"


def login_of(identity: str) -> str:
    """The login a :func:`server_identity` names ("": none, libpq's default: the Unix user's name).

    >>> login_of("postgresql://agent%20a@db:5432/team?project=acme"), login_of("postgresql://db:5432/t?project=a")
    ('agent a', '')
    """
    netloc = identity.split("/", 3)[2]
    return unquote(netloc.rsplit("@", 1)[0]) if "@" in netloc else ""


#: Parameters that may differ between the person's URL and the agent's: how one login authenticates, not where to.
_PER_LOGIN = frozenset({"passfile", "sslcert", "sslkey", "sslpassword", "sslcertmode", "application_name",
                        "connect_timeout", "require_auth"})


def _without_login(identity: str) -> str:
    """A :func:`server_identity` without its login and the parameters of one login's authentication."""
    scheme, rest = identity.split("://", 1)
    netloc, tail = rest.split("/", 1)
    path, _, query = tail.partition("?")
    kept = "&".join(p for p in query.split("&") if p.split("=", 1)[0] not in _PER_LOGIN)
    return f"{scheme}://{netloc.rsplit('@', 1)[-1]}/{path}?{kept}"


def agent_identity(agent_url: str, url: str, project_dir: str | Path) -> str:
    """The agent login ``agent_url`` names, as a pin holds it (:func:`server_identity`), once it reaches the same
    server, database and project as ``url`` under another, named login.

    >>> agent_identity("postgresql://agent_a@db/team?project=acme", "postgresql://alice@db/team?project=acme", "/x")
    'postgresql://agent_a@db:5432/team?project=acme'

    Raises :class:`~synapse_nb.errors.ValidationError` saying what is wrong and what is accepted."""
    agent, person = server_identity(agent_url, project_dir), server_identity(url, project_dir)
    accepted = ("accepted: the team vault URL with the agent's own database login in it, "
                "postgresql://AGENT_LOGIN@host:port/database?project=NAME (docs/team.md, \"An agent's own login\")")
    if _without_login(agent) != _without_login(person):
        raise ValidationError(f"the agent URL reaches {_without_login(agent)}, not the team vault "
                              f"{_without_login(person)} this folder uses; {accepted}")
    login = login_of(agent)
    if not login:
        raise ValidationError(f"the agent URL names no login (libpq would log in as the Unix user, often the "
                              f"person's name); {accepted}")
    if login == login_of(person):
        raise ValidationError(f"the agent URL logs in as {login}, the same login as the folder's url (a person's): "
                              f"{accepted}")
    return agent


def _ipv6(host: str) -> bool:
    """Whether ``host`` is an IPv6 address (written in brackets in a URL's netloc); anything else is quoted."""
    try:
        return isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address)
    except ValueError:
        return False


def _problem(path: Path, what: str) -> TeamPinError:
    return TeamPinError(
        f"the team server pins file {path} cannot be read ({what}); nothing was changed and no team vault is opened "
        "until it is fixed: repair it, or move it aside (every folder is then unpinned: a person's `synapse-nb team "
        "trust` in each pins the server its team.toml names again)")


def read_pins(path: Path | None = None) -> dict[str, Pin]:
    """This machine's pins by folder (empty when there is no pins file yet).

    Raises :class:`~synapse_nb.errors.TeamPinError` naming the file when it cannot be read or parsed; it is never
    rewritten then (nothing is lost)."""
    path = pins_file() if path is None else path
    text = read_text(path, cap=MAX_PINS_BYTES)  # never through a symlink, never a FIFO's hang (review 79)
    if text is None:
        what = state(path)
        if what == "missing":
            return {}
        raise _problem(path, "not a regular file (a symlink, a FIFO or a folder is in its place)" if what == "damaged"
                       else f"it cannot be read, is not UTF-8 or is over {MAX_PINS_BYTES} bytes")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _problem(path, f"not TOML: {exc}") from None
    entries = data.get("pin", [])
    if not isinstance(entries, list):
        raise _problem(path, "'pin' is not a list of [[pin]] tables")
    out: dict[str, Pin] = {}
    for i, entry in enumerate(entries, 1):
        fields = [entry.get(k) if isinstance(entry, dict) else None for k in ("folder", "server", "pinned_at", "by")]
        if not all(isinstance(f, str) and f for f in fields[:2]):
            raise _problem(path, f"pin {i} needs folder = \"...\" and server = \"postgresql://...\"")
        agent = entry.get("agent_server", "") if isinstance(entry, dict) else ""
        if not isinstance(agent, str):
            raise _problem(path, f"pin {i}'s agent_server is not a string (\"postgresql://...\", or no such line)")
        folder, server, pinned_at, by = (str(f or "") for f in fields)
        # a pin written before review 57 kept a sslpassword: compared (and rewritten) without it
        out[folder] = Pin(folder, without_secrets(server), pinned_at, by, without_secrets(agent) if agent else agent)
    return out


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer of the pins file at a time (a lock file beside it; POSIX ``flock``, where there is one)."""
    try:
        from synapse_nb.locks import held
    except ImportError:  # pragma: no cover - Windows (no fcntl): the atomic replace never leaves a half-written file
        yield
        return
    with held(path.with_name(path.name + ".lock"), None):  # a FIFO or a symlink in its place: made anew
        yield


def _render(pins: Mapping[str, Pin]) -> str:
    blocks = [_HEADER]
    for folder in sorted(pins):
        p = pins[folder]
        blocks.append("\n[[pin]]\n" + "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in (
            ("folder", p.folder), ("server", p.server), ("pinned_at", p.pinned_at), ("by", p.by),
            *((("agent_server", p.agent_server),) if p.agent_server else ()))))
    return "".join(blocks)


def write_pin(folder: Path, server: str, by: PinBy, *, agent_server: str = "", path: Path | None = None) -> Pin | None:
    """Pin ``server`` (and ``agent_server``, the folder's agent login, "" for none) for ``folder`` (resolved),
    replacing its pin; returns the pin it replaced, or None.

    The file is rewritten atomically (a temporary file beside it, flushed to disk, then renamed over it) under a
    lock, so a crash or a concurrent pin never leaves half a file or loses another folder's pin; a file that cannot
    be read is never rewritten (:func:`read_pins` raises first). Callers check that a person acts."""
    path = pins_file() if path is None else path
    key = str(Path(folder).resolve())
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with _locked(path):
            pins = read_pins(path)
            before = pins.get(key)
            pins[key] = Pin(key, server, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), by, agent_server)
            write_atomic(path, _render(pins), fsync=True)
    except OSError as exc:
        raise StoreError(f"cannot write the team server pins file {path}: {exc.strerror or exc}") from exc
    return before


def pin_for(folder: Path, *, path: Path | None = None) -> Pin | None:
    """The pin of ``folder`` (resolved), or None."""
    return read_pins(path).get(str(Path(folder).resolve()))


def is_person(actor: str) -> bool:
    """Whether a handle asked for as ``actor`` is a person's: the user actor, in a process no coding agent started
    (:func:`~synapse_nb.context.acting_actor`: no agent marker, parents' environments included). Only a person pins."""
    return actor == "user" and acting_actor("user") == "user"


def checked_team_url(vault_dir: Path, *, actor: str = "user") -> str | None:
    """The team vault URL the folder's ``team.toml`` names (None: there is none), once it (and its ``agent_url``)
    agrees with the folder's pin; checked before anything connects (:func:`checked_team_urls`)."""
    urls = checked_team_urls(vault_dir, actor=actor)
    return None if urls is None else urls.url


def _agent_shown(identity: str) -> str:
    return identity or "(none: agent surfaces log in with url, the person's login)"


def checked_team_urls(vault_dir: Path, *, actor: str = "user") -> TeamUrls | None:
    """The folder's team vault URLs (``team.toml``'s ``url`` and ``agent_url``; None: no ``team.toml``), once they
    agree with the folder's pin; checked before anything connects. A handle that acts as the agent connects with
    ``agent_url`` when there is one (:func:`synapse_nb.vault.open_vault`).

    Raises :class:`~synapse_nb.errors.TeamPinError`: ``team.toml`` names another server than the pinned one, or
    another agent login (one added, changed or removed since a person pinned it: agent surfaces would log in as
    someone else); or no person has confirmed a server for the folder on this machine (``synapse-nb team join URL``
    or ``team trust``); or the pins file cannot be read. Nothing pins on first use: reviews 5 to 7 made a pinned
    folder look fresh every way a first use could be told from (a symlinked ``.synapse``, a moved folder, a
    repository made inside or around it, a local vault stashed away), and a person's commit (the git hook) pinned an
    agent's server silently.
    """
    url = team_url_of(vault_dir)
    if url is None:
        return None
    agent_url = team_agent_url_of(vault_dir)
    folder = pin_folder(vault_dir)
    named = server_identity(url, folder)
    named_agent = server_identity(agent_url, folder) if agent_url is not None else ""
    toml = vault_dir / TEAM_FILE
    pin = pin_for(folder)
    if pin is not None and pin.server == named and pin.agent_server == named_agent:
        return TeamUrls(url, agent_url)
    if pin is not None and pin.server == named:
        put_back = (f"agent_url = {json.dumps(pin.agent_server)}" if pin.agent_server else "no agent_url line")
        raise TeamPinError(
            f"{toml} names the agent login {_agent_shown(named_agent)}, but the one pinned for {folder} on this "
            f"machine is {_agent_shown(pin.agent_server)} (pinned {pin.pinned_at} by {pin.by}): refusing to connect, "
            "since anything that can write the folder (an agent too) can rewrite team.toml, and agent surfaces would "
            "log in as another login. If the change is yours, accept it in your own terminal: synapse-nb team trust "
            f"(shows both and asks), or synapse-nb team agent-login URL; if not, put back {put_back} in {toml}",
            folder=str(folder), pinned=pin.server, named=named)
    if pin is not None:
        raise TeamPinError(
            f"{toml} names the team server {named}, but the one pinned for {folder} on this machine is {pin.server} "
            f"(pinned {pin.pinned_at} by {pin.by}): refusing to connect, since anything that can write the folder (an "
            "agent too) can rewrite team.toml. If the change is yours, accept it in your own terminal: synapse-nb "
            f"team trust (shows both servers and asks); if not, put back url = {json.dumps(pin.server)} in {toml}",
            folder=str(folder), pinned=pin.server, named=named)
    who = ("" if is_person(actor) else
           "an agent's handle connects to a team server only once a person has confirmed it (an agent may have "
           "written team.toml). ")
    raise TeamPinError(
        f"{toml} names the team server {named}, which no person has confirmed for {folder} on this machine: "
        f"refusing to connect (anything that can write the folder, an agent too, can write team.toml). {who}If it is "
        "your team's server, confirm it once in your own terminal: synapse-nb team trust (shows the server and "
        f"asks), or synapse-nb team join URL{_put_back(vault_dir, toml)}",
        folder=str(folder), named=named)


def _put_back(vault_dir: Path, toml: Path) -> str:
    """What the refusal of an unconfirmed server adds when a local vault was set aside beside ``team.toml`` (review
    36: an agent's ``team join`` set the person's vault aside, and nothing told the person where it went): its
    name, and how to use it again."""
    aside = set_aside_databases(vault_dir)
    if not aside:
        return ""
    names = ", ".join(p.name for p in aside)
    return (f". The local vault this folder had was set aside beside it ({names}; kept): if you did not join this "
            f"team vault, use your local vault again: delete {toml} and rename {aside[-1]} back to "
            f"{vault_dir / DB_NAME} (with its -wal and -shm files, if there are any)")


def pin_state(vault_dir: Path) -> dict[str, str | None]:
    """What ``team status`` shows of the pin: ``pinned_server``, ``pinned_agent_login``, ``pinned_at``,
    ``pinned_by`` and ``pin`` ("agrees", "differs: ...", "none: ...", "no team.toml"); a pins file that cannot be
    read is said in ``pin``."""
    folder = pin_folder(vault_dir)
    try:
        pin = pin_for(folder)
    except TeamPinError as exc:
        return {"pinned_server": None, "pinned_agent_login": None, "pinned_at": None, "pinned_by": None,
                "pin": f"unreadable: {exc}"}
    out: dict[str, str | None] = {"pinned_server": pin.server if pin else None,
                                  "pinned_agent_login": (pin.agent_server or None) if pin else None,
                                  "pinned_at": pin.pinned_at if pin else None, "pinned_by": pin.by if pin else None}
    url = team_url_of(vault_dir) if vault_dir.is_dir() else None
    if url is None:
        return out | {"pin": "no team.toml"}
    named = server_identity(url, folder)
    if pin is None:
        return out | {"pin": f"none: team.toml names {named}; every open here is refused until a person runs "
                             "`synapse-nb team trust` (or `team join URL`)"}
    if pin.server == named:
        agent_url = team_agent_url_of(vault_dir)
        named_agent = server_identity(agent_url, folder) if agent_url is not None else ""
        if named_agent == pin.agent_server:
            return out | {"pin": "agrees"}
        return out | {"pin": f"differs: team.toml names the agent login {_agent_shown(named_agent)}, pinned: "
                             f"{_agent_shown(pin.agent_server)}; every open here is refused until a person runs "
                             "`synapse-nb team trust` (or `team agent-login`), or team.toml names the pinned one again"}
    return out | {"pin": f"differs: team.toml names {named}; every open here is refused until a person runs "
                         "`synapse-nb team trust`, or team.toml names the pinned server again"}


def _login_server(identity: str) -> str:
    """The server and database a :func:`server_identity` logs in to, without its login, project and parameters."""
    return _without_login(identity).split("?", 1)[0]


def not_yours(named: str, named_agent: str | None, *, environ: Mapping[str, str] | None = None,
              path: Path | None = None) -> str | None:
    """Why the logins a folder's ``team.toml`` names (``named``, ``named_agent``: :func:`server_identity` s) may be
    another person's, or None: a committed ``team.toml`` names its committer's login and their agent's, and pinning
    it made this person work as them (review 90). This person's logins on that server: the ones this machine pinned
    for it before (``team join``, ``team trust``, any folder), and ``PGUSER``; with neither, the Unix user's name
    (libpq's default). The agent login is another's when the URL's is, or when this machine pinned other agent
    logins for that server and not it.

    >>> p = Path("/nonexistent/pins.toml")
    >>> not_yours("postgresql://alice@db:5432/t?project=a", None, environ={"PGUSER": "bob"}, path=p)
    'its url logs in as alice, not as you (bob: PGUSER)'
    >>> not_yours("postgresql://bob@db:5432/t?project=a", None, environ={"PGUSER": "bob"}, path=p) is None
    True
    """
    env = os.environ if environ is None else environ
    base = _login_server(named)  # a login is the server's (host, port, database), whatever the project
    pins = [p for p in read_pins(path).values() if _login_server(p.server) == base]
    known = {login_of(p.server) for p in pins} - {""}
    said = "the logins this machine pinned for that server" if known else ""
    if user := env.get("PGUSER", "").strip():
        known.add(user)
        said = f"{said} and PGUSER" if said else "PGUSER"
    if not known:
        try:
            import getpass

            known, said = {getpass.getuser()}, "your Unix user's name"
        except (OSError, KeyError):  # no name for this uid: nothing to compare with
            return None
    out = []
    login = login_of(named)
    if login and login not in known:
        out.append(f"its url logs in as {login}, not as you ({', '.join(sorted(known))}: {said})")
    if named_agent:
        agents = {login_of(p.agent_server) for p in pins if p.agent_server}
        agent = login_of(named_agent)
        if out:
            out.append(f"its agent login {agent} came with it (set up for that person's agent)")
        elif agents and agent not in agents:
            out.append(f"its agent login {agent} is none this machine pinned for that server "
                       f"({', '.join(sorted(agents))})")
    return "; ".join(out) or None
