"""``synapse-nb agent install claude-code``: the synapse-nb hooks merged into Claude Code's settings.

Claude Code reads hooks from three settings files, by scope:

=========  ==========================================  ==============================================
scope      file                                        for
=========  ==========================================  ==============================================
project    ``<project>/.claude/settings.json``         everyone on the project (committed)
local      ``<project>/.claude/settings.local.json``   you, in this project (not committed)
user       ``~/.claude/settings.json``                 you, in every project
=========  ==========================================  ==============================================

Each file is JSON: ``{"hooks": {"EVENT": [{"matcher": "...", "hooks": [{"type": "command", "command": "..."}]}]}}``.
Installing adds one matcher group per event (:data:`HOOK_EVENTS`) whose one command is ``synapse-nb hook EVENT``;
it keeps every other key, every other event and every group and command of the user's, in their order. It is
idempotent (a second install changes nothing), keeps a backup of the file it changes (``<file>.synapse-nb.bak``),
and a dry run only shows the diff. Uninstalling removes exactly the commands that run ``synapse-nb ... hook``
(and the containers that held only them), so an install followed by an uninstall gives back the settings that were
there. The project scope also registers the MCP server in the project's ``.mcp.json`` (``mcpServers.synapse-nb``);
for the other scopes, :func:`mcp_add_command` is the ``claude mcp add`` line to run. Either runs ``synapse-nb mcp
--hooks`` (:data:`MCP_HOOKS_FLAG`): the server then tells the agent that the lessons, the checkpoint and each
prompt's recall arrive by these hooks, so it does not fetch them again (review 86: it got everything twice). An
earlier install's ``.mcp.json`` entry without the flag is replaced by the next install; :func:`status` notes it.

A malformed settings file is never rewritten: the error names the file and what is wrong in it.

Examples
--------
>>> merged = with_hooks({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}, "synapse-nb")
>>> sorted(merged["hooks"])
['PostToolUse', 'PreCompact', 'SessionEnd', 'SessionStart', 'Stop', 'UserPromptSubmit']
>>> without_hooks(merged)
{'hooks': {'Stop': [{'hooks': [{'type': 'command', 'command': 'say done'}]}]}}
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synapse_nb.errors import StoreError, ValidationError
from synapse_nb.own_files import write_atomic

__all__ = ["AGENTS", "BACKUP_SUFFIX", "HOOK_EVENTS", "MCP_HOOKS_FLAG", "MCP_NAME", "SCOPES", "SCRIPT", "SHARED",
           "FileChange", "ScopeStatus", "apply_changes", "command_notes", "console_script", "default_command",
           "hook_command", "install", "is_ours", "mcp_add_command", "project_root", "resolved_command", "settings_path",
           "status", "uninstall", "with_hooks", "without_hooks"]

#: The console script the hooks run.
SCRIPT = "synapse-nb"
#: How :func:`resolved_command`'s note on the project scope starts (its files are committed: the bare name is kept).
SHARED = "the project scope's files are shared"
#: The agents ``synapse-nb agent install`` knows.
AGENTS = ("claude-code",)
#: Where Claude Code's settings live, by scope.
SCOPES = ("project", "local", "user")
#: The events installed, with the matcher of each (None: the event takes no matcher).
HOOK_EVENTS: dict[str, str | None] = {
    "SessionStart": "startup|resume|clear|compact",
    "UserPromptSubmit": None,
    "PreCompact": "manual|auto",
    "PostToolUse": "Edit|Write|MultiEdit|NotebookEdit",
    "SessionEnd": None,
}
#: The name of the MCP server in ``.mcp.json``.
MCP_NAME = "synapse-nb"
#: The ``synapse-nb mcp`` option the install registers the server with: the harness runs the hooks.
MCP_HOOKS_FLAG = "--hooks"
#: A changed file's previous content is kept beside it under this suffix.
BACKUP_SUFFIX = ".synapse-nb.bak"
#: A command is ours when it runs synapse-nb (the script or the module), maybe with ``--vault``/``--mind``, then
#: ``hook``.
_OURS = re.compile(r"(?:^|[\s/\\\"'])(?:synapse-nb|synapse_nb)(?:\.exe)?[\"']?"
                   r"(?:\s+--(?:vault|mind)(?:=|\s+)(?:'[^']*'|\"[^\"]*\"|\S+))*\s+hook(?:\s|$)")


def project_root(path: str | Path | None = None) -> Path:
    """The project folder whose ``.claude/`` is meant: the git work tree containing ``path`` (default: the current
    folder), else the folder itself. It must exist."""
    from synapse_nb.gitscope.repo import find_repo

    base = Path(path or Path.cwd()).expanduser()
    if not base.is_dir():
        raise ValidationError(f"project folder {str(base)!r} does not exist (a typo?); name an existing folder")
    repo = find_repo(base)
    return (repo.work_tree if repo is not None else base).resolve()


def settings_path(scope: str, project: Path, home: Path | None = None) -> Path:
    """The settings file of ``scope`` (project, local or user)."""
    if scope not in SCOPES:
        raise ValidationError(f"scope {scope!r} is not accepted; use one of: {', '.join(SCOPES)}")
    if scope == "user":
        return (home or Path.home()) / ".claude" / "settings.json"
    return project / ".claude" / ("settings.json" if scope == "project" else "settings.local.json")


def resolved_command(scope: str = "local") -> tuple[str, str | None]:
    """How the hooks run synapse-nb, and a note when that may not run everywhere: the absolute path of the
    ``synapse-nb`` console script (this interpreter's scripts folder first, then PATH), so a Claude Code started
    without the venv on its PATH still runs it (review 68: a bare ``synapse-nb`` then did nothing, silently); else
    this Python with ``-P -m synapse_nb`` (``-P``: the project folder Claude Code runs hooks from is not put first on
    ``sys.path``); else (no interpreter path known) the bare name. The ``project`` scope's files are committed and
    shared with the team, so there the bare name is kept while it is on PATH here (one person's venv path would run
    nothing on a teammate's machine), with a note naming ``--scope local``."""
    if scope == "project" and shutil.which(SCRIPT):
        return SCRIPT, (f"{SHARED}: the hooks run {SCRIPT!r} from the PATH Claude Code starts with; for this machine's "
                        "absolute path use --scope local (or pass --command)")
    script = console_script()
    if script is not None:
        return shlex.quote(script), None
    if sys.executable:
        return f"{shlex.quote(sys.executable)} -P -m synapse_nb", None
    return SCRIPT, (f"neither the {SCRIPT} script nor this Python's path could be found: the hooks run the bare name "
                    f"{SCRIPT!r}, found only when it is on the PATH Claude Code starts with (or pass --command)")


def default_command() -> str:
    """How the hooks run synapse-nb (:func:`resolved_command`)."""
    return resolved_command()[0]


def console_script() -> str | None:
    """The absolute path of the ``synapse-nb`` console script: this interpreter's scripts folder first (the install
    that runs now), then PATH; None when neither has it."""
    scripts = sysconfig.get_path("scripts")
    for found in (shutil.which(SCRIPT, path=scripts) if scripts else None, shutil.which(SCRIPT)):
        if found:
            return os.path.abspath(found)
    return None


def command_notes(commands: Iterable[str], scope: str = "local") -> tuple[str, ...]:
    """What is wrong or fragile in the programs ``commands`` (of ``scope``'s settings) start, one line each: one that
    does not resolve to an executable here (the hooks do nothing), or a bare name found only through PATH (it works
    while Claude Code starts with that PATH). A bare name is what install writes in the ``project`` scope's shared
    files (and ``.mcp.json``) on purpose: there the note names the ways to an absolute path (``--scope local``,
    ``--command``) instead of a reinstall, which would write the bare name again (review 78)."""
    notes: list[str] = []
    again = f"synapse-nb agent install claude-code --scope {scope}"
    for prog in dict.fromkeys(_program(c) for c in commands):
        found = shutil.which(prog) if prog else None
        if found is None:
            notes.append(f"{prog!r} does not resolve to an executable here: these commands do nothing; reinstall "
                         f"({again}) or pass --command")
        elif os.sep not in prog and "/" not in prog and scope == "project":
            notes.append(f"{prog!r} is found through PATH ({found}), kept bare on purpose in the project's shared "
                         "files (a teammate's path differs); a Claude Code started without it on PATH runs nothing: "
                         f"for this machine's absolute path install with --scope local (or --command {found})")
        elif os.sep not in prog and "/" not in prog:
            notes.append(f"{prog!r} is found through PATH ({found}); a Claude Code started without it on PATH runs "
                         f"nothing: reinstall ({again}) to write the absolute path")
    return tuple(notes)


def _program(command: str) -> str:
    try:
        argv = shlex.split(command)
    except ValueError:  # an unclosed quote: no program at all
        return ""
    return argv[0] if argv else ""


def hook_command(base: str, event: str, mind: str = "default") -> str:
    """The command one hook runs, e.g. ``synapse-nb hook UserPromptSubmit``."""
    return f"{base}{'' if mind == 'default' else ' --mind ' + shlex.quote(mind)} hook {event}"


def is_ours(handler: Any) -> bool:
    """True for a hook handler that runs ``synapse-nb ... hook`` (what install writes and uninstall removes)."""
    return (isinstance(handler, dict) and handler.get("type", "command") == "command"
            and isinstance(handler.get("command"), str) and bool(_OURS.search(handler["command"])))


def _check_settings(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValidationError(f"{where} holds a JSON {type(obj).__name__}, not an object; Claude Code's settings are "
                              "an object ({\"hooks\": {...}, ...}): fix it or move it aside (nothing was changed)")
    hooks = obj.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ValidationError(f"{where}: \"hooks\" is a {type(hooks).__name__}, not an object of events; fix it or "
                              "move it aside (nothing was changed)")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise ValidationError(f"{where}: hooks.{event} is a {type(groups).__name__}, not a list of matcher "
                                  "groups; fix it or move it aside (nothing was changed)")
    return obj


def without_hooks(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without synapse-nb's hook commands; a group, an event or ``hooks`` that held only them goes
    too (one that was empty before stays)."""
    out = copy.deepcopy(_check_settings(settings, "the settings"))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(is_ours(h) for h in handlers):
                kept.append(group)
                continue
            rest = [h for h in handlers if not is_ours(h)]
            if rest:
                kept.append({**group, "hooks": rest})
        if kept or not groups:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks and settings.get("hooks"):
        del out["hooks"]
    return out


def _ours_by_event(settings: dict[str, Any]) -> dict[str, list[Any]]:
    hooks = settings.get("hooks") or {}
    return {e: [g for g in groups if isinstance(g, dict) and any(is_ours(h) for h in g.get("hooks") or [])]
            for e, groups in hooks.items()}


def with_hooks(settings: dict[str, Any], base: str, mind: str = "default") -> dict[str, Any]:
    """``settings`` with synapse-nb's hooks, one matcher group per event of :data:`HOOK_EVENTS`; unchanged
    (the same object) when exactly those are already there."""
    out = without_hooks(settings)
    hooks = out.setdefault("hooks", {})
    for event, matcher in HOOK_EVENTS.items():
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": hook_command(base, event, mind)}]
        hooks.setdefault(event, []).append(group)
    if {k: v for k, v in _ours_by_event(settings).items() if v} == {k: v for k, v in _ours_by_event(out).items() if v}:
        return settings
    return out


def _mcp_entry(base: str, mind: str) -> dict[str, Any]:
    argv = shlex.split(base)
    return {"type": "stdio", "command": argv[0],
            "args": [*argv[1:], *([] if mind == "default" else ["--mind", mind]), "mcp", MCP_HOOKS_FLAG], "env": {}}


def mcp_add_command(scope: str, base: str | None = None, mind: str = "default") -> str:
    """The ``claude mcp add`` line that registers the server for ``scope`` beside the hooks (``mcp --hooks``;
    Claude Code keeps local and user servers in its own ``~/.claude.json``, which synapse-nb does not edit)."""
    entry = _mcp_entry(base or resolved_command(scope)[0], mind)
    return shlex.join(["claude", "mcp", "add", "--scope", scope, MCP_NAME, "--", entry["command"], *entry["args"]])


def _is_our_server(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    argv = [str(entry.get("command", "")), *(str(a) for a in entry.get("args") or [])]
    return any(re.search(r"synapse[-_]nb", a) for a in argv) and "mcp" in argv


# ------------------------------------------------------------------------------------------------ files
@dataclass(frozen=True)
class FileChange:
    """One file install or uninstall would change: its text ``before`` (None: no file) and ``after`` (None: the file
    is removed, because only synapse-nb's entries were in it)."""

    path: Path
    before: str | None
    after: str | None
    what: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """A unified diff of the change ("" when there is none)."""
        a = (self.before or "").splitlines(keepends=True)
        b = (self.after or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, fromfile=f"{self.path} (before)", tofile=f"{self.path} (after)"))


def _read_json(path: Path) -> tuple[str | None, dict[str, Any]]:
    if not path.exists():
        return None, {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return text, {}
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); fix it "
                              "or move it aside (nothing was changed)") from None
    return text, _check_settings(obj, str(path))


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def _settings_change(path: Path, base: str, mind: str, remove: bool) -> FileChange:
    before, obj = _read_json(path)
    new = without_hooks(obj) if remove else with_hooks(obj, base, mind)
    if new == obj:
        return FileChange(path, before, before, "hooks")
    after = None if remove and not new and obj else _dump(new)
    return FileChange(path, before, after, "hooks")


def _mcp_change(path: Path, base: str, mind: str, remove: bool) -> FileChange:
    before, obj = _read_json(path)
    servers = obj.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValidationError(f"{path}: \"mcpServers\" is a {type(servers).__name__}, not an object; fix it or move "
                              "it aside (nothing was changed)")
    new = copy.deepcopy(obj)
    if remove:
        if not _is_our_server(servers.get(MCP_NAME)):
            return FileChange(path, before, before, "mcp")
        del new["mcpServers"][MCP_NAME]
        if not new["mcpServers"]:
            del new["mcpServers"]
        return FileChange(path, before, None if not new else _dump(new), "mcp")
    entry = _mcp_entry(base, mind)
    if servers.get(MCP_NAME) == entry:
        return FileChange(path, before, before, "mcp")
    if MCP_NAME in servers and not _is_our_server(servers[MCP_NAME]):
        raise ValidationError(f"{path}: an MCP server named {MCP_NAME!r} that does not run synapse-nb is already "
                              "registered; rename it or pass --no-mcp (nothing was changed)")
    new.setdefault("mcpServers", {})[MCP_NAME] = entry
    return FileChange(path, before, _dump(new), "mcp")


def install(scope: str = "project", *, project: str | Path | None = None, home: Path | None = None,
            command: str | None = None, mind: str = "default", mcp: bool = True) -> list[FileChange]:
    """The changes that install the hooks for ``scope`` (and, for the project scope, the MCP server in
    ``.mcp.json``); nothing is written: :func:`apply_changes` writes them."""
    root = project_root(project)
    base = command or resolved_command(scope)[0]  # the scope's: the project's files are shared (review 68)
    if not base.strip():
        raise ValidationError("--command must not be empty; give how to run synapse-nb, e.g. 'synapse-nb'")
    changes = [_settings_change(settings_path(scope, root, home), base, mind, remove=False)]
    if mcp and scope == "project":
        changes.append(_mcp_change(root / ".mcp.json", base, mind, remove=False))
    return changes


def uninstall(scope: str = "project", *, project: str | Path | None = None, home: Path | None = None,
              mcp: bool = True) -> list[FileChange]:
    """The changes that remove synapse-nb's hooks from ``scope`` (and its server from the project's
    ``.mcp.json``); nothing is written."""
    root = project_root(project)
    changes = [_settings_change(settings_path(scope, root, home), "", "default", remove=True)]
    if mcp and scope == "project":
        changes.append(_mcp_change(root / ".mcp.json", "", "default", remove=True))
    return changes


def _write_atomic(path: Path, text: str) -> None:
    """``path`` replaced by ``text`` at once, keeping the file's permissions when it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, mode=path.stat().st_mode & 0o777 if path.exists() else None)


def apply_changes(changes: list[FileChange]) -> list[Path]:
    """Write the changes that change something, each after a backup of its file's previous content; returns the
    backups written.

    A person's act: refused in an agent's environment (:func:`synapse_nb.context.require_human`), writing nothing.
    The hooks and the MCP entry are commands the harness runs at every later session, with the mind they name
    (review 36: an agent's ``apply_changes(install("user", command="touch /tmp/PWNED; synapse-nb", mind="decoy"))``
    rewrote the person's ``~/.claude/settings.json``; the check was in the CLI only). :func:`install`,
    :func:`uninstall` and :meth:`FileChange.diff` only read, and stay open."""
    from synapse_nb.context import require_human

    require_human("write a coding agent's hooks or MCP server settings (commands its harness runs at every later "
                  "session)")
    backups: list[Path] = []
    for ch in changes:
        if not ch.changed:
            continue
        try:
            if ch.before is not None:
                backup = ch.path.with_name(ch.path.name + BACKUP_SUFFIX)
                _write_atomic(backup, ch.before)
                backups.append(backup)
            if ch.after is None:
                ch.path.unlink(missing_ok=True)
            else:
                _write_atomic(ch.path, ch.after)
        except OSError as exc:
            raise StoreError(f"cannot write {ch.path}: {exc.strerror or exc}") from None
    return backups


# ------------------------------------------------------------------------------------------------ status
@dataclass(frozen=True)
class ScopeStatus:
    """What one scope's settings file holds of synapse-nb: the events hooked and their commands, and ``notes``: a
    command whose program does not resolve to an executable here, or is found only through PATH
    (:func:`command_notes`)."""

    scope: str
    path: Path
    exists: bool
    events: tuple[str, ...]
    commands: tuple[str, ...]
    error: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "path": str(self.path), "exists": self.exists, "events": list(self.events),
                "commands": list(self.commands), "error": self.error, "notes": list(self.notes)}


def status(*, project: str | Path | None = None, home: Path | None = None
           ) -> tuple[list[ScopeStatus], bool, tuple[str, ...]]:
    """Every scope's hooks, whether the project's ``.mcp.json`` registers the server, and the notes on the server's
    command (:func:`command_notes`) and on its mode (``--hooks`` where hooks are installed, and only there)."""
    root = project_root(project)
    out, off = [], []
    for scope in SCOPES:
        path = settings_path(scope, root, home)
        try:
            _, obj = _read_json(path)
        except (ValidationError, StoreError) as exc:
            out.append(ScopeStatus(scope, path, True, (), (), str(exc)))
            continue
        if obj.get("disableAllHooks"):
            off.append(f"{scope} scope, {path}")
        ours = {e: g for e, g in _ours_by_event(obj).items() if g}
        cmds = tuple(h["command"] for g in ours.values() for grp in g for h in grp["hooks"] if is_ours(h))
        out.append(ScopeStatus(scope, path, path.exists(), tuple(ours), cmds, notes=command_notes(cmds, scope)))
    try:
        _, mcp = _read_json(root / ".mcp.json")
        servers = mcp.get("mcpServers")
        entry = servers.get(MCP_NAME) if isinstance(servers, dict) else None
        registered = _is_our_server(entry)
    except (ValidationError, StoreError):
        registered, entry = False, None
    notes = command_notes([shlex.quote(str(entry.get("command", "")))], "project") if registered and entry else ()
    if registered and entry:
        notes = (*notes, *_mode_notes(entry, [s for s in out if s.events], off))
    return out, registered, notes


#: The hooks that give the agent what ``mcp --hooks`` tells it not to fetch: the lessons and the checkpoint at
#: session start, each prompt's recall.
GIVING_EVENTS = ("SessionStart", "UserPromptSubmit")


def _mode_notes(entry: dict[str, Any], hooked: list[ScopeStatus], off: list[str]) -> tuple[str, ...]:
    """What is wrong in the server's mode beside the hooks: without ``--hooks`` where hooks are installed the agent
    is told to fetch what the hooks give (twice: review 86); with it, and no hooks, or not the hooks that give it
    (:data:`GIVING_EVENTS`: hooks of every scope run, merged), or every hook turned off (``disableAllHooks`` in a
    scope: ``off``), nothing gives it (review 87: an edit that dropped SessionStart said nothing)."""
    aware = MCP_HOOKS_FLAG in [str(a) for a in entry.get("args") or []]
    if aware and hooked and off:
        note = (f"the server runs with {MCP_HOOKS_FLAG} but disableAllHooks is set ({'; '.join(off)}): no hook "
                "runs, and the agent is told the hooks give it the lessons, the checkpoint and each prompt's recall; "
                "remove disableAllHooks, or drop --hooks from .mcp.json")
        return (note,)
    missing = [e for e in GIVING_EVENTS if not any(e in s.events for s in hooked)]
    if aware and hooked and missing:
        note = (f"the server runs with {MCP_HOOKS_FLAG} but the synapse-nb hooks for {' and '.join(missing)} are "
                "installed in no scope: the agent is told the hooks give it the lessons, the checkpoint and each "
                "prompt's recall, and nothing does; run synapse-nb agent install claude-code again")
        return (note,)
    if hooked and not aware:
        note = (f"the server runs without {MCP_HOOKS_FLAG} while the hooks are installed ({hooked[0].scope} scope): "
                "the agent is told to fetch the lessons, the checkpoint and each turn's recall the hooks already give "
                "it; run synapse-nb agent install claude-code again to register it with --hooks")
        return (note,)
    if aware and not hooked:
        note = (f"the server runs with {MCP_HOOKS_FLAG} but no synapse-nb hooks are installed: the agent is told the "
                "hooks give it the lessons, the checkpoint and each prompt's recall, and nothing does; install the "
                "hooks (synapse-nb agent install claude-code) or drop --hooks from .mcp.json")
        return (note,)
    return ()
