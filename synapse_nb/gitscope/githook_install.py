"""Install and remove the ``post-commit`` / ``post-rewrite`` hooks that keep lessons current.

The hooks run ``python -P -m synapse_nb.gitscope.githook <name>`` (:data:`ENTRY`; ``-P``: the work tree is not on
``sys.path``), which scans for new
reverts and never fails or blocks the commit (see :mod:`synapse_nb.gitscope.githook`).

- The hooks directory is the one git uses: ``core.hooksPath`` when set, else
  ``<common git dir>/hooks`` (shared by all worktrees).
- An existing hook is kept: it is moved to ``<name>.synapse-chained`` and called
  first, with the same arguments and stdin; its exit status is the hook's status.
- Installing twice changes nothing; :func:`uninstall_hooks` puts back exactly what was there.
- Installing and uninstalling are a person's: both are refused in an agent's environment
  (:func:`synapse_nb.context.require_human`), as ``synapse-nb agent install`` and ``watch`` are.
- Installing again rewrites a managed hook whose text differs, e.g. one written before the entry
  module was renamed (it runs ``synapse_nb.gitscope.hook``, which still works but says so in ``hook.log``).

Examples
--------
>>> from synapse_nb.gitscope import find_repo, install_hooks, uninstall_hooks
>>> paths = install_hooks(find_repo())  # doctest: +SKIP
>>> [p.name for p in paths]  # doctest: +SKIP
['post-commit', 'post-rewrite']
>>> uninstall_hooks(find_repo())  # doctest: +SKIP
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from synapse_nb.errors import ConflictError, StoreError, ValidationError
from synapse_nb.gitscope._git import coerce_repo, run_git
from synapse_nb.gitscope.githook import COMMITTER_AGENT, SNAPSHOT
from synapse_nb.gitscope.history import REFS_FORMAT, SNAPSHOT_END
from synapse_nb.gitscope.repo import RepoInfo
from synapse_nb.own_files import write_atomic

__all__ = ["CHAIN_SUFFIX", "ENTRY", "HOOK_NAMES", "MARKER", "hooks_dir", "install_hooks", "is_managed",
           "uninstall_hooks"]

HOOK_NAMES: tuple[str, ...] = ("post-commit", "post-rewrite")
MARKER = "# synapse-nb managed hook"
CHAIN_SUFFIX = ".synapse-chained"
#: The module the hooks run (``python -m``).
ENTRY = "synapse_nb.gitscope.githook"


def hooks_dir(repo: RepoInfo | str | Path) -> Path:
    """The directory git runs hooks from (``core.hooksPath`` aware), as an absolute path."""
    info = coerce_repo(repo)
    out = run_git(info, "rev-parse", "--git-path", "hooks").decode("utf-8", "surrogateescape").strip()
    path = Path(out)
    return path if path.is_absolute() else (info.work_tree / path).resolve()


def is_managed(path: Path) -> bool:
    """True when ``path`` is a hook written by :func:`install_hooks`."""
    try:
        with open(path, "rb") as fh:
            return MARKER.encode() in fh.read(4096)
    except OSError:
        return False


def _person_only(action: str) -> None:
    """Refuse ``action`` in an agent's environment (:func:`synapse_nb.context.require_human`), before anything is
    read or written: the hooks run at the person's commits (review 36: an agent's ``install_hooks(".",
    python="/agent/python")`` wrote a hook that ran an interpreter of its choosing at the person's next commit, and
    its ``uninstall_hooks`` silently stopped the person's revert-to-lesson pipeline)."""
    from synapse_nb.context import require_human  # here: the context imports gitscope

    require_human(action)


def _package_path() -> str | None:
    """The folder to put on PYTHONPATH so the hook finds this copy of synapse_nb (None if installed)."""
    parent = Path(__file__).resolve().parents[2]  # synapse_nb/gitscope/githook_install.py -> the package's folder
    if parent.name in ("site-packages", "dist-packages"):
        return None
    return str(parent)


def _marker_test() -> str:
    """A POSIX ``grep -E`` pattern matching a line ``NAME=value`` of a coding agent's marker
    (:data:`synapse_nb.context.AGENT_ENVIRONMENT`, with its rules: a value neither empty nor "0"; ``SYNAPSE_ACTOR``
    only when it says agent)."""
    from synapse_nb.context import AGENT_ENVIRONMENT

    names = "|".join(n for n, _ in AGENT_ENVIRONMENT if n != "SYNAPSE_ACTOR")
    return f"^({names})=.*[^0[:space:]]|^SYNAPSE_ACTOR=[[:space:]]*[Aa][Gg][Ee][Nn][Tt][[:space:]]*$"


#: The hook's test that it may find a vault: ``$SYNAPSE_HOME`` set, or a ``.synapse`` folder where git runs it (the work
#: tree's root), or a work tree whose ``.git`` is no folder of its own (a linked worktree, a submodule: githook's
#: vault_dir decides). Elsewhere githook finds none and does nothing, so the hook reads nothing and starts nothing:
#: the commit waits for no ref read and no walk of /proc.
_MAY_HAVE_A_VAULT = ('if [ -n "${SYNAPSE_HOME:-}" ] || [ -d .synapse ] || [ ! -d .git ] || [ -f .git/commondir ]; '
                     "then")


#: The hook script's shell variable holding the snapshot it passes on stdin (never exported).
_LISTING = "SYNAPSE_HOOK_LISTING"


def _script(name: str, python: str, pythonpath: str | None, background: bool) -> str:
    env = ""
    if pythonpath:
        env = f'env PYTHONPATH={shlex.quote(pythonpath)}"${{PYTHONPATH:+:$PYTHONPATH}}" '
    # -P: the work tree (git runs hooks from its root) is not put first on sys.path, so a ``synapse_nb/`` or any
    # module an agent wrote there is never imported by the human's commit
    # where HEAD and the refs are now, while git runs, passed on stdin: the scan reads no commit made after this one
    # (a person's detached scan that ran after an agent's commit found the agent's revert as the person's)
    feed = f"printf '%s\\n' \"${_LISTING}\" | "
    run = f"{env}{shlex.quote(python)} -P -m {ENTRY} {name} >/dev/null 2>&1"
    # ids and names only (REFS_FORMAT): the commit waits for no object read (githook's tips() reads their types later);
    # the end line only when the listing succeeded: without it the hook reads the refs itself (review 51)
    # a name of the package's own, unset first: an exported variable of the person's environment named as the script's
    # (``snapshot``) carried the whole listing into python's environment, and past 128 KiB exec failed (E2BIG) and
    # no scan ran (review 51); unset drops an inherited export, so the listing stays the shell's
    snapshot = (f"unset {_LISTING}\n"
                f"{_LISTING}=$(printf 'HEAD %s' \"$(git rev-parse -q --verify HEAD 2>/dev/null)\"; echo; "
                f"git for-each-ref --format={shlex.quote(REFS_FORMAT)} refs/heads refs/remotes refs/tags "
                f"2>/dev/null && echo {SNAPSHOT_END})\n{SNAPSHOT}=1\nexport {SNAPSHOT}\n")
    committer = ""
    if background:  # detached: git returns at once; the scan finishes on its own (serialised by a lock), in a
        # session of its own (setsid where there is one), so it is no job a shell left behind
        # (context.inherited_agent_marker); whether an agent committed is read here, while the committer runs:
        # this hook's own environment and each parent's (Linux /proc), as the package reads them
        run = (f"( if command -v setsid >/dev/null 2>&1; then {feed}setsid {run}; else {feed}{run}; fi "
               "</dev/null >/dev/null 2>&1 & )")  # the waiting shell holds none of git's descriptors either
        committer = (
            f"{COMMITTER_AGENT}=0\n"
            "pid=$$; n=0\n"
            'while [ -n "$pid" ] && [ "$pid" -gt 1 ] 2>/dev/null && [ $n -lt 64 ]; do\n'
            f"    if tr '\\000' '\\n' < \"/proc/$pid/environ\" 2>/dev/null | grep -Eq {shlex.quote(_marker_test())}; "
            f"then {COMMITTER_AGENT}=1; break; fi\n"
            "    pid=$(sed -n 's/.*) [A-Za-z] \\([0-9][0-9]*\\) .*/\\1/p' \"/proc/$pid/stat\" 2>/dev/null); "
            "n=$((n + 1))\n"
            "done\n"
            f"export {COMMITTER_AGENT}\n")
    return (
        "#!/bin/sh\n"
        f"{MARKER}: after each {name.split('-')[1]}, record new git reverts as pending lessons.\n"
        "# Written by synapse_nb.gitscope.install_hooks; uninstall_hooks restores the previous hook.\n"
        "# It never fails the git command: the scan's own errors go to .synapse/hook.log.\n"
        "status=0\n"
        f'chained="$(dirname "$0")/{name}{CHAIN_SUFFIX}"\n'
        'if [ -x "$chained" ]; then\n'
        '    "$chained" "$@"\n'
        "    status=$?\n"
        "fi\n"
        f"{_MAY_HAVE_A_VAULT}\n"
        f"{committer}"
        f"{snapshot}"
        f"{run if background else feed + run}\n"
        "fi\n"
        "exit $status\n"
    )


def install_hooks(
    repo: RepoInfo | str | Path, *, python: str = sys.executable, background: bool = True
) -> list[Path]:
    """Write the ``post-commit`` and ``post-rewrite`` hooks, chaining any hook already there.

    Parameters
    ----------
    repo : RepoInfo or path
        The repository (any of its worktrees: hooks are shared).
    python : str
        The interpreter the hooks run (default: this one).
    background : bool
        True (default): the hook starts the scan detached and returns at once, so a
        commit waits only for a fork, a read of HEAD and the refs' ids and names (no object: 20,000 tags
        cost no more than a few ms) and a look at the committer's processes; the scan's outcome lands in
        ``hook.log``. False: the commit waits for the scan (at most its time limit). Either way, where the
        hook can find no vault (no ``$SYNAPSE_HOME``, no ``.synapse`` folder in a work tree whose ``.git`` is
        a folder) it reads and starts nothing.

    Returns
    -------
    list of Path
        The two hook files, in ``HOOK_NAMES`` order. A second call with the same
        arguments rewrites nothing.

    Raises
    ------
    ConflictError
        A foreign hook is in place *and* a ``.synapse-chained`` file already exists
        (installing would lose one of them); move one away and retry.
    StoreError
        The hooks directory cannot be written.

    Examples
    --------
    >>> install_hooks("/path/to/repo")  # doctest: +SKIP
    [PosixPath('/path/to/repo/.git/hooks/post-commit'), PosixPath('/path/to/repo/.git/hooks/post-rewrite')]
    """
    _person_only("install git hooks (they run the python they name at every later commit of the person)")
    if not isinstance(python, str) or not python.strip():
        raise ValidationError(f"python must be the path of a Python interpreter, got {python!r}")
    directory = hooks_dir(repo)
    written: list[Path] = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name in HOOK_NAMES:
            hook = directory / name
            chained = directory / f"{name}{CHAIN_SUFFIX}"
            text = _script(name, python, _package_path(), background)
            if os.path.lexists(hook) and not is_managed(hook):
                if os.path.lexists(chained):
                    raise ConflictError(
                        f"{hook} is a foreign hook and {chained.name} already exists; move one of them away and retry"
                    )
                os.rename(hook, chained)
            elif is_managed(hook) and hook.read_text(encoding="utf-8") == text:
                written.append(hook)
                continue
            write_atomic(hook, text, mode=0o755)
            written.append(hook)
    except OSError as exc:
        raise StoreError(f"cannot write git hooks in {directory}: {exc.strerror or exc}") from exc
    return written


def uninstall_hooks(repo: RepoInfo | str | Path) -> list[Path]:
    """Remove the managed hooks and put any chained original back under its own name.

    Foreign hooks (not written by :func:`install_hooks`) are left untouched.

    Returns
    -------
    list of Path
        The hook paths that were removed or restored, in ``HOOK_NAMES`` order.

    Examples
    --------
    >>> uninstall_hooks("/path/to/repo")  # doctest: +SKIP
    [PosixPath('/path/to/repo/.git/hooks/post-commit'), PosixPath('/path/to/repo/.git/hooks/post-rewrite')]
    """
    _person_only("remove the git hooks (they turn the person's reverts into pending lessons)")
    directory = hooks_dir(repo)
    changed: list[Path] = []
    try:
        for name in HOOK_NAMES:
            hook = directory / name
            chained = directory / f"{name}{CHAIN_SUFFIX}"
            if not is_managed(hook):
                continue
            if os.path.lexists(chained):
                os.replace(chained, hook)
            else:
                hook.unlink()
            changed.append(hook)
    except OSError as exc:
        raise StoreError(f"cannot remove git hooks in {directory}: {exc.strerror or exc}") from exc
    return changed
