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

An agent running as the same user can edit the pins file too: the pin turns the redirect from an ordinary edit of
a project file into an explicit edit of a file of the person's, outside the project (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, NamedTuple
from urllib.parse import quote, urlencode

from synapse_nb.context import acting_actor
from synapse_nb.errors import StoreError, TeamPinError
from synapse_nb.provenance import inline
from synapse_nb.vault.locate import TEAM_FILE, team_url_of

__all__ = ["PINS_ENV", "Pin", "PinBy", "checked_team_url", "is_person", "pin_for", "pin_folder", "pin_state",
           "pins_file", "read_pins", "server_identity", "write_pin"]

#: Names the pins file itself (tests; a person who keeps it elsewhere).
PINS_ENV = "SYNAPSE_TEAM_PINS"
PinBy = Literal["join", "trust", "first open"]  # "first open": pins an earlier version made on first use
_HEADER = ("# The team server pinned for each project folder on this machine (synapse_nb; docs/team.md, \"Pinning\").\n"
           "# Written by `synapse-nb team join` and `synapse-nb team trust` (a person confirms a server for a\n"
           "# folder; a folder whose .synapse/team.toml names another server is refused until `team trust`.\n")


class Pin(NamedTuple):
    """One folder's pinned team server: ``server`` (:func:`server_identity`), when and how it was pinned."""

    folder: str
    server: str
    pinned_at: str
    by: str


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
    base = env.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "synapse_nb" / "team_pins.toml"


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
    try:
        from psycopg.conninfo import conninfo_to_dict

        from synapse_nb.store.postgres import parse_team_url, project_for
    except ImportError as exc:
        raise StoreError(f"a team vault needs psycopg ({exc}); install it with: "
                         "pip install 'synapse_nb[team]'") from exc
    conninfo, project = parse_team_url(url, project_for(project_dir))
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items()}
    except Exception as exc:  # noqa: BLE001 - psycopg.ProgrammingError: libpq cannot read the URL
        # libpq's message quotes the URL, which anyone who writes the file chose (review 23: a forged banner in a
        # URL's fragment reached every surface's error): quoted, and cut
        raise TeamPinError(f"the team vault URL cannot be read ({inline(exc, 120)}): fix "
                           f"{TEAM_FILE} or name the URL again with `synapse-nb team join URL`") from None
    params.pop("password", None)
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
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise _problem(path, str(exc)) from None
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
        out[str(fields[0])] = Pin(*(str(f or "") for f in fields))
    return out


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer of the pins file at a time (a lock file beside it; POSIX ``flock``, where there is one)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the atomic replace still never leaves a half-written file
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _render(pins: Mapping[str, Pin]) -> str:
    blocks = [_HEADER]
    for folder in sorted(pins):
        p = pins[folder]
        blocks.append("\n[[pin]]\n" + "".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in (
            ("folder", p.folder), ("server", p.server), ("pinned_at", p.pinned_at), ("by", p.by))))
    return "".join(blocks)


def write_pin(folder: Path, server: str, by: PinBy, *, path: Path | None = None) -> Pin | None:
    """Pin ``server`` for ``folder`` (resolved), replacing its pin; returns the pin it replaced, or None.

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
            pins[key] = Pin(key, server, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), by)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(_render(pins))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
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
    """The team vault URL the folder's ``team.toml`` names (None: there is none), once it agrees with the folder's
    pin; checked before anything connects.

    Raises :class:`~synapse_nb.errors.TeamPinError`: ``team.toml`` names another server than the pinned one; or no
    person has confirmed a server for the folder on this machine (``synapse-nb team join URL`` or ``team trust``);
    or the pins file cannot be read. Nothing pins on first use: reviews 5 to 7 made a pinned folder look fresh
    every way a first use could be told from (a symlinked ``.synapse``, a moved folder, a repository made inside or
    around it, a local vault stashed away), and a person's commit (the git hook) pinned an agent's server silently.
    """
    url = team_url_of(vault_dir)
    if url is None:
        return None
    folder = pin_folder(vault_dir)
    named = server_identity(url, folder)
    toml = vault_dir / TEAM_FILE
    pin = pin_for(folder)
    if pin is not None and pin.server == named:
        return url
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
        "asks), or synapse-nb team join URL",
        folder=str(folder), named=named)


def pin_state(vault_dir: Path) -> dict[str, str | None]:
    """What ``team status`` shows of the pin: ``pinned_server``, ``pinned_at``, ``pinned_by`` and ``pin``
    ("agrees", "differs: ...", "none: ...", "no team.toml"); a pins file that cannot be read is said in ``pin``."""
    folder = pin_folder(vault_dir)
    try:
        pin = pin_for(folder)
    except TeamPinError as exc:
        return {"pinned_server": None, "pinned_at": None, "pinned_by": None, "pin": f"unreadable: {exc}"}
    out: dict[str, str | None] = {"pinned_server": pin.server if pin else None,
                                  "pinned_at": pin.pinned_at if pin else None, "pinned_by": pin.by if pin else None}
    url = team_url_of(vault_dir) if vault_dir.is_dir() else None
    if url is None:
        return out | {"pin": "no team.toml"}
    named = server_identity(url, folder)
    if pin is None:
        return out | {"pin": f"none: team.toml names {named}; every open here is refused until a person runs "
                             "`synapse-nb team trust` (or `team join URL`)"}
    if pin.server == named:
        return out | {"pin": "agrees"}
    return out | {"pin": f"differs: team.toml names {named}; every open here is refused until a person runs "
                         "`synapse-nb team trust`, or team.toml names the pinned server again"}
