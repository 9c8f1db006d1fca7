"""The context every core module works in: which store, which mind, which actor, what time it is, and git.

:class:`synapse_nb.vault.Vault` (the facade) builds one :class:`Context` per handle and hands it to the kind
managers, recall, follow, transfer and settings; none of them sees the ``Vault``. A context is immutable:
:meth:`Context.with_mind` and :meth:`Context.as_agent` make new ones sharing the store and the git view.

>>> import tempfile, pathlib
>>> from synapse_nb.store.sqlite import SqliteStore
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> ctx = Context(SqliteStore(folder / "synapse.db"), "default", "user", git=GitView(folder, folder))
>>> ctx.as_agent().actor, ctx.with_mind("research").mind
('agent', 'research')
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Self

from synapse_nb._util import Clock, fmt_ts, parse_ts, utcnow
from synapse_nb.errors import PermissionDeniedError, ValidationError
from synapse_nb.gitscope.repo import RepoInfo, default_branch, default_branches, find_repo, head
from synapse_nb.gitscope.vaultdir import in_prefix, repo_prefix
from synapse_nb.models import Record, kind_of_id
from synapse_nb.store.records import View

if TYPE_CHECKING:
    from synapse_nb.borrowed import Borrowed
    from synapse_nb.store.base import VaultStore

__all__ = ["ACTORS", "AGENT_CLOCKS", "AGENT_ENVIRONMENT", "MAX_PARENTS", "MIND_PATTERN", "Actor", "Context",
           "GitView", "acting_actor", "agent_environment", "check_actor", "check_agent_clock", "check_identity",
           "check_mind", "check_surface", "inherited_agent_marker", "readonly_requested", "require_human"]

Actor = Literal["user", "agent"]
#: Who acts through a vault handle: a human surface, or an agent's.
ACTORS: tuple[str, ...] = ("user", "agent")
#: What a mind name looks like.
MIND_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


#: Environment variables by which coding agents mark the processes they start (name, agent), checked in this order;
#: ``SYNAPSE_ACTOR=agent`` marks one for synapse-nb itself. A variable counts when set to anything but "" or "0".
AGENT_ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("SYNAPSE_ACTOR", "synapse-nb's own marker"),
    ("CLAUDECODE", "Claude Code"),
    ("CLAUDE_CODE_ENTRYPOINT", "Claude Code"),
    ("GEMINI_CLI", "Gemini CLI"),
    ("CODEX_SANDBOX", "Codex CLI"),
    ("CODEX_THREAD_ID", "Codex CLI"),
    ("CURSOR_AGENT", "Cursor's agent"),
    ("GOOSE_TERMINAL", "Goose"),
    ("AI_AGENT", "an AI agent"),
    ("AGENT", "an AI agent"),
)


def readonly_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``SYNAPSE_READONLY`` in ``environ`` (default: this process's environment) asks every surface (CLI,
    MCP server, agent hooks) to open the vault read-only: set, and neither empty nor ``0``.

    >>> [readonly_requested(env) for env in ({"SYNAPSE_READONLY": "1"}, {"SYNAPSE_READONLY": "0"}, {})]
    [True, False, False]
    """
    env = os.environ if environ is None else environ
    return env.get("SYNAPSE_READONLY", "").strip() not in ("", "0")


def _marker_in(env: Mapping[str, str]) -> str | None:
    for name, who in AGENT_ENVIRONMENT:
        value = env.get(name, "").strip()
        if not value or value == "0" or (name == "SYNAPSE_ACTOR" and value.lower() != "agent"):
            continue
        return f"{name}={value[:40]} ({who})"
    return None


def agent_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """The marker of a coding agent in ``environ``, as ``"NAME=value (agent)"``; None when there is none.
    ``SYNAPSE_ACTOR`` counts only when it says ``agent``.

    Without ``environ``: this process's environment, then the environments this process and each of its parents
    started with (:func:`inherited_agent_marker`), so ``env -u CLAUDECODE synapse-nb ...`` in an agent's shell, or
    a Python process that deletes the variable from ``os.environ``, is still the agent's.

    >>> agent_environment({"CLAUDECODE": "1"}), agent_environment({"SYNAPSE_ACTOR": "user", "AGENT": "0"})
    ('CLAUDECODE=1 (Claude Code)', None)
    """
    if environ is not None:
        return _marker_in(environ)
    return _marker_in(os.environ) or inherited_agent_marker()


#: How many parents :func:`inherited_agent_marker` reads at most (a shell, the agent, its terminal, ...).
MAX_PARENTS = 64
#: A process at which :func:`inherited_agent_marker`'s walk stops, unread: a test suite that plays the human under a
#: harness an agent runs sets it to its own first process, for itself and the processes it starts (tests/conftest.py).
#: Code that sets it patches the package, which no check of a local vault stands against (docs/architecture.md).
WALK_STOPS_AT: int | None = None
_inherited: dict[int, str | None] = {}


class _Process(NamedTuple):
    env: dict[str, str] | None  # None: not readable (another user's, or a process made non-dumpable)
    parent: int
    group: int  # its process group's leader
    session: int  # its session's leader
    name: str


def _started_with(pid: int) -> _Process | None:
    """What process ``pid`` started with, its parent, process group, session and name: from Linux's ``/proc``,
    else from psutil when it is installed (macOS, Windows; no group or session there: 0); None when the process
    cannot be found. Its environment is None when it cannot be read while the rest can: ``/proc/PID/stat`` stays
    readable where ``/proc/PID/environ`` does not (a process that made itself non-dumpable)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
        name, _, rest = stat.partition(" (")[2].rpartition(") ")
        fields = rest.split()
        env: dict[str, str] | None
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes()
            env = dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
        except OSError:
            env = None
        return _Process(env, int(fields[1]), int(fields[2]), int(fields[3]), name)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # type: ignore[import-untyped]  # optional: not a dependency
    except ImportError:
        return None
    try:
        proc = psutil.Process(pid)
        try:
            penv: dict[str, str] | None = dict(proc.environ())
        except psutil.AccessDenied:
            penv = None
        return _Process(penv, int(proc.ppid()), 0, 0, str(proc.name()))
    except (psutil.Error, OSError, ValueError):  # NoSuchProcess, ZombieProcess; a platform's gap
        return None


def _left_behind(pid: int, proc: _Process) -> bool:
    """Whether ``pid`` is a job a shell left behind: handed to init (its parent is pid 1, or the user's systemd,
    a subreaper), leading neither its
    process group nor its session (a shell's background job: ``( cmd & )``, ``nohup cmd &`` in a script), and its
    session's leader gone. Where it came from cannot be read any more, and an agent's shell that exits at once after
    ``( env -u CLAUDECODE cmd & )`` leaves exactly that. A daemon that made its own session (``setsid``, systemd)
    is not one; a job of an interactive shell leads its own group. Linux only (``/proc``)."""
    if proc.group in (0, pid) or proc.session in (0, pid):
        return False
    if proc.parent != 1:  # or the user's service manager, which takes orphans as a subreaper
        parent = _started_with(proc.parent)
        if parent is None or parent.name != "systemd":
            return False
    return not Path(f"/proc/{proc.session}").exists()


def inherited_agent_marker(pid: int | None = None) -> str | None:
    """The marker of a coding agent in the environment a process or any of its parents *started with*, or the
    leader of its process group or session (``pid``: default this process), as ``"NAME=value (agent; process PID
    name)"``; None when there is none.

    A process's own ``os.environ`` can drop a variable its parent set (``env -u CLAUDECODE``, ``env -i``,
    ``os.environ.pop``); the environment each parent started with is still there to read on Linux
    (``/proc/PID/environ``) and, with psutil installed, elsewhere. A parent whose environment cannot be read (another
    user's: ``sudo``; one that made itself non-dumpable) is passed over, not taken for the end of the tree. A process
    left without its parents (``( cmd & )``, ``nohup``: the shell exits, the process is handed to init) keeps its
    process group and session, whose leaders are read too. The walk stops at the first process it cannot find; a tree
    deeper than :data:`MAX_PARENTS` is taken for an agent's (its unread parents may be). It is a bar, not a wall: a
    process that leaves the agent's tree *and* session (``setsid``, a job handed to a daemon) is not found, which is
    why a team vault's database roles are the hard boundary.
    The answer for this process is kept (its parents do not change).
    """
    own = pid is None
    if own and os.getpid() in _inherited:
        return _inherited[os.getpid()]
    at = os.getpid() if pid is None else pid
    found = None
    leaders: list[int] | None = None  # the first process's group and session leaders
    for _ in range(MAX_PARENTS):
        if at == WALK_STOPS_AT:  # inside the tree of the process that set it: its group and session are its own
            leaders = []
            break
        got = _started_with(at)
        if got is None:
            break
        if leaders is None:
            leaders = [p for p in dict.fromkeys((got.group, got.session)) if p > 1 and p != at]
        marker = _marker_in(got.env) if got.env is not None else None
        if marker is not None:
            found = f"{marker[:-1]}; process {at} {got.name[:40]!r})"
            break
        if _left_behind(at, got):
            found = (f"a job its shell left behind: process {at} {got.name[:40]!r} was handed to init and leads "
                     "neither its process group nor its session, whose leader has exited (whose it was cannot be "
                     "read: an agent's '( cmd & ); exit' looks so)")
            break
        if got.parent <= 0 or got.parent == at:
            break
        at = got.parent
    else:  # no end of the tree in MAX_PARENTS steps: unread parents may be the agent's (review 29: a chain of 64
        # clean-environment shells under the agent's process passed for a person), so it is not taken for one
        found = (f"a process tree deeper than {MAX_PARENTS} processes: process {at}'s parents were not read (an "
                 "agent's chain of shells looks so)")
    for leader in leaders or () if found is None else ():
        got = _started_with(leader)
        marker = _marker_in(got.env) if got is not None and got.env is not None else None
        if got is not None and marker is not None:
            found = (f"{marker[:-1]}; process {leader} {got.name[:40]!r}, the leader of this process's group or "
                     "session)")
            break
    if own:
        _inherited[os.getpid()] = found
    return found


def acting_actor(actor: Actor, *, environ: Mapping[str, str] | None = None) -> Actor:
    """Who a vault handle asked for as ``actor`` acts as: ``actor``, except that a "user" handle in an agent's
    environment (:func:`agent_environment`: ``python -c ...`` or a notebook kernel a coding agent started) acts as
    the agent, as the CLI does there. What such a process writes is a proposal (``source="agent"``, unverified),
    never a record a human seems to have written; what it reads is what an agent is shown (approved lessons only,
    no pending lesson's id in ``status()``), read-only or not: a read-only handle kept "user" once, and read as the
    person there (its ``status()`` then failed on the pending lessons it may not list).

    >>> acting_actor("user", environ={"CLAUDECODE": "1"}), acting_actor("user", environ={})
    ('agent', 'user')
    """
    if actor == "user" and agent_environment(environ) is not None:
        return "agent"
    return actor


def require_human(action: str, actor: Actor = "user") -> None:
    """Refuse ``action`` unless a human does it: the ``"user"`` actor, in a process no coding agent started.

    Raises :class:`~synapse_nb.errors.PermissionDeniedError` for the agent actor, and for the user actor when
    :func:`agent_environment` finds an agent's marker in the environment (an agent with a shell runs
    ``synapse-nb lessons approve`` or ``python -c ...`` as any user would: there it is still the agent).
    :meth:`Context.require_human` asks it for a handle's actor; code with no vault handle (``team trust``, which
    moves a folder's pinned team server) asks it directly.
    """
    env = agent_environment()  # first: a "user" handle opened there acts as the agent (acting_actor); say why
    if env is not None:
        raise PermissionDeniedError(
            f"refusing to {action}: this process runs in an agent's environment ({env}), and only a human may "
            f"{action}; do it in your own terminal or notebook, outside the agent (docs/agents.md, "
            "'Agents with a shell')")
    if actor != "user":
        raise PermissionDeniedError(f"an agent may not {action}; a human must do it "
                                    "(from a notebook, the widgets or the CLI in their own terminal)")


#: Whether a handle that acts as the agent may run on a clock other than the real one (:func:`check_agent_clock`):
#: only the test suite sets it (tests/conftest.py), to play the agent on a fake clock. Code that sets it patches the
#: package, which no check of a local vault stands against (docs/architecture.md, "What is not defended").
AGENT_CLOCKS = False


def check_agent_clock(actor: Actor, clock: Clock | None, *, environ: Mapping[str, str] | None = None) -> None:
    """Refuse a handle that acts as the agent (``actor``: the actor :func:`acting_actor` gave it) on any clock but
    the real one (``clock`` None or :func:`synapse_nb._util.utcnow`), unless :data:`AGENT_CLOCKS` is set.

    "Now" bounds the agent: the hour its write quota (``agent_writes_per_hour``) and its new recall sessions
    (``recall.delta.SESSIONS_PER_HOUR``) are counted over, and the write stamps its writes leave, which move the
    vault's clock for everyone. A clock the agent chooses (one that jumps an hour a call) would escape both bounds
    and stamp the vault years ahead. A person's handle keeps the clock it is given.

    >>> from datetime import UTC, datetime
    >>> check_agent_clock("agent", None), check_agent_clock("user", lambda: datetime(2040, 1, 1, tzinfo=UTC))
    (None, None)
    """
    if actor != "agent" or clock is None or clock is utcnow or AGENT_CLOCKS:
        return
    env = agent_environment(environ)
    where = (f"this process runs in an agent's environment ({env}), so its writable handles act as the agent; "
             if env is not None else "")
    raise PermissionDeniedError(
        f"clock= is refused: {where}an agent's handle runs on the real clock (it bounds the agent's write quota "
        "and recall sessions per hour, and stamps its writes); clock= is for a person's handles. Open the vault "
        "without clock=")


def check_mind(mind: object) -> str:
    """A mind name: 1-64 letters, digits, ``_``, ``.`` or ``-``, starting with a letter or digit."""
    if not isinstance(mind, str) or not MIND_PATTERN.match(mind):
        raise ValidationError(f"mind {mind!r} is not accepted; use 1-64 letters, digits, '_', '.' or '-', "
                              "starting with a letter or digit")
    return mind


def check_actor(actor: object) -> Actor:
    """An actor: "user" or "agent"."""
    if actor == "user":
        return "user"
    if actor == "agent":
        return "agent"
    raise ValidationError(f"actor {actor!r} is not accepted; use one of: {', '.join(ACTORS)}")


def check_surface(surface: object) -> str:
    """A surface name for history entries (:data:`synapse_nb.changes.SURFACES`)."""
    from synapse_nb.changes import SURFACES  # light: models and provenance, loaded already

    if surface not in SURFACES:
        raise ValidationError(f"surface {surface!r} is not accepted; use one of: {', '.join(SURFACES)}")
    return str(surface)


def check_identity(mind: object, actor: object) -> Actor:
    """Check a handle's mind and actor (the actor first); returns the actor."""
    checked = check_actor(actor)
    check_mind(mind)
    return checked


class GitView:
    """What the core needs of git for one vault: the repository, HEAD, the default branch, the vault's folder.

    Everything is read from files (no ``git`` process); the repository and the vault's repository-relative
    folder are found once and cached. Outside git every answer is None. ``borrowed`` says whether the vault is
    borrowed (:mod:`synapse_nb.borrowed`: git tracks it, or a symlink leads out of the project), as
    :func:`synapse_nb.vault.open_vault` found once; None for a vault of one's own.
    """

    def __init__(self, project_dir: Path, vault_dir: Path, borrowed: Borrowed | None = None) -> None:
        self.project_dir = project_dir
        self.vault_dir = vault_dir
        self.borrowed = borrowed

    @cached_property
    def repo(self) -> RepoInfo | None:
        """The git repository of the project folder, or None outside git (found once)."""
        return find_repo(self.project_dir)

    @cached_property
    def prefix(self) -> str | None:
        """The vault folder relative to the repository root (``".synapse/"``), or None (found once)."""
        return repo_prefix(self.repo, self.vault_dir)

    def head(self) -> tuple[str | None, str | None]:
        """(branch, commit) checked out; (None, None) outside git or when HEAD cannot be read."""
        repo = self.repo
        if repo is None:
            return None, None
        try:
            h = head(repo)
        except Exception:  # noqa: BLE001 - a broken repository must never block a write
            return None, None
        return h.branch, h.commit

    def default_branch(self) -> str | None:
        """The repository's default branch: origin's HEAD, else main, else master (None outside git)."""
        repo = self.repo
        return None if repo is None else default_branch(repo)

    def default_branches(self) -> frozenset[str]:
        """The branches whose approved lessons hold on every branch (:func:`~synapse_nb.gitscope.repo.default_branches`:
        main, master, and origin's HEAD's branch)."""
        return default_branches(self.repo)

    def in_vault(self, path: str) -> bool:
        """Whether a remembered file path (repository-relative, or absolute) lies inside the vault folder."""
        if not isinstance(path, str):
            return False
        if os.path.isabs(path):
            try:
                Path(os.path.realpath(path)).relative_to(Path(os.path.realpath(self.vault_dir)))
                return True
            except ValueError:
                return False
        return in_prefix(self.prefix, path)


class _Fields(NamedTuple):
    store: VaultStore
    mind: str
    actor: Actor
    git: GitView
    clock: Clock = utcnow
    surface: str = "api"


class _ChosenClock:
    """A clock a person's code chose for a context that acts as the agent: a person's handle's ``as_agent()`` (a
    notebook's tour plays the agent on the person's clock) or a vault rebuilt at a past moment for an ``as_of`` read.
    :class:`~synapse_nb.vault.Vault` wraps such a clock in it after deciding so; :class:`Context` lets an agent's
    context run on no other clock but the real one (:func:`check_agent_clock`). Code that wraps its own clock in it
    patches the package, like ``Vault(..., _person_clock=True)``."""

    __slots__ = ("clock",)

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def __call__(self) -> datetime:
        return self.clock()


class _StoppedClock:
    """A clock stopped at one moment (:meth:`Context.at`: one recall, one "now"). An agent's context may stop its
    clock only near the real now (within :data:`STOPPED_NEAR`): the moment a read is made at, not a moment of the
    agent's choosing."""

    __slots__ = ("moment",)

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


#: How far from the real now an agent's context may stop its clock (:class:`_StoppedClock`): a team server's clock
#: and this machine's may differ by this much.
STOPPED_NEAR = 600.0


def _real_enough(clock: Clock) -> bool:
    """Whether an agent's context may run on ``clock``: the real one, one a person chose (:class:`_ChosenClock`), a
    clock stopped near the real now, or any clock while the test suite plays agents on fake clocks
    (:data:`AGENT_CLOCKS`)."""
    if clock is utcnow or AGENT_CLOCKS or isinstance(clock, _ChosenClock):
        return True
    return isinstance(clock, _StoppedClock) and abs((clock.moment - utcnow()).total_seconds()) <= STOPPED_NEAR


class Context(_Fields):
    """One handle's view of a vault: the store, the mind, the actor, the clock and git (immutable).

    Attributes
    ----------
    store : the system of record (:class:`~synapse_nb.store.base.VaultStore`).
    mind : whose records are read and written.
    actor : "user" (a human surface) or "agent"; the kind managers check permissions on it. "user" asked for in an
        agent's environment is "agent" (:func:`acting_actor`, applied here, however the context is built).
    clock : returns an aware ``datetime``; the only source of "now" for the core (tests pin it). A context that acts
        as the agent runs on the real clock (:func:`check_agent_clock`, checked here and, before anything is
        opened, by :func:`~synapse_nb.vault.open_vault` and :class:`~synapse_nb.vault.Vault`).
    git : the project's repository, HEAD and default branch.
    surface : where the handle's changes come from, for their history (``synapse_nb.changes.SURFACES``: "cli",
        "mcp", "notebook", "hook", ...; "api" for code that opens a vault itself). Each surface sets it when it
        opens its vault through :class:`~synapse_nb.vault.VaultSession`.
    """

    __slots__ = ()

    def __new__(cls, store: VaultStore, mind: str, actor: Actor, git: GitView, clock: Clock = utcnow,
                surface: str = "api") -> Self:
        """The context, acting as :func:`acting_actor` says: a "user" context built in an agent's environment is the
        agent's, however it is built (a context made by hand from the public classes wrote ``[user · verified]``
        records there: review 3); an agent's context runs on the real clock (:func:`_real_enough`)."""
        acting = acting_actor(actor)
        if acting == "agent" and not _real_enough(clock):
            check_agent_clock(acting, clock)
        return super().__new__(cls, store, mind, acting, git, clock, surface)

    def _replace(self, **changes: Any) -> Self:
        """This context with ``changes``, built through :meth:`__new__`: the same checks (a tuple's own ``_replace``
        skips them, and turned an agent's context into a person's)."""
        return type(self)(**{**self._asdict(), **changes})

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> Self:  # type: ignore[override]  # typeshed names its first arg _cls
        return cls(*iterable)

    def now(self) -> datetime:
        return self.clock()

    def now_ts(self) -> str:
        """Now as the store's fixed-width UTC text."""
        return fmt_ts(self.clock())

    def read_now(self) -> str:
        """"Now" for reads inside a store snapshot: a shared store's clock (a team vault's server ``now()``: every
        machine reading one state agrees on it), unless this context's clock was given explicitly (tests pin
        time); else this machine's clock. Fixed-width UTC text."""
        server = self.store.snapshot_now() if self.clock is utcnow else None
        return server or self.now_ts()

    def at(self, now: str) -> Context:
        """This context with its clock stopped at ``now`` (fixed-width UTC text): one recall, one "now"."""
        stopped = _StoppedClock(parse_ts(now))
        return self._replace(clock=_ChosenClock(stopped) if isinstance(self.clock, _ChosenClock) else stopped)

    def require_human(self, action: str) -> None:
        """Refuse ``action`` unless a human does it: the user actor, in a process no coding agent started
        (:func:`require_human`, for this handle's actor)."""
        require_human(action, self.actor)

    def view(self, *, in_force_only: bool = False) -> View:
        """A read of this mind at this moment (``in_force_only``: lessons in force only, the agent's view)."""
        return View(self.mind, self.now_ts(), in_force_only)

    def stored(self, ids: Iterable[str]) -> dict[str, Record]:
        """The records of this mind with these ids as stored (expired or withdrawn ones too), by id, read a kind at a
        time; an id no record answers (deleted since, or of another mind) is left out."""
        by_kind: dict[str, list[str]] = {}
        for rid in sorted(set(ids)):
            kind = kind_of_id(rid)
            if kind is not None:
                by_kind.setdefault(kind, []).append(rid)
        every = View(self.mind, "")
        return {rid: rec for kind, rids in by_kind.items()
                for rid, rec in self.store.table(kind).get_many(every, rids).items()}

    def with_mind(self, mind: str) -> Context:
        check_mind(mind)
        return self._replace(mind=mind)

    def as_agent(self) -> Context:
        return self._replace(actor="agent")
