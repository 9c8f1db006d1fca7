"""Running the ``git`` command safely: explicit directories, a clean environment, clear errors."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from synapse_nb.errors import GitError, ValidationError
from synapse_nb.gitscope.repo import RepoInfo, find_repo

__all__ = ["coerce_repo", "git_environment", "run_git", "validate_sha"]

# What `git rev-parse --local-env-vars` lists: variables that point git at one
# particular repository. Hooks run with several of them set (GIT_DIR,
# GIT_INDEX_FILE for `git commit -- paths`, ...), relative to the hook's cwd; we
# always pass --git-dir/--work-tree explicitly, so they must not leak in.
_LOCAL_ENV_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_DIR",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
)
_SHA_ARG_RE = re.compile(r"^[0-9a-fA-F]{4,64}$")
DEFAULT_TIMEOUT = 120.0


def git_environment() -> dict[str, str]:
    """The current environment without repository-locating ``GIT_*`` variables, in the C locale."""
    env = {k: v for k, v in os.environ.items() if k not in _LOCAL_ENV_VARS}
    env["LC_ALL"] = "C"
    env["GIT_OPTIONAL_LOCKS"] = "0"  # never take index.lock behind the user's back (status refresh)
    env["GIT_TERMINAL_PROMPT"] = "0"
    # the objects as stored, never as a replace ref or a grafts file says (review 42: an agent's `git replace` of a
    # revert, or `git replace --graft` of its child, hid the revert from the scan, which then saved its place past it)
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    env["GIT_GRAFT_FILE"] = os.devnull  # <git-dir>/info/grafts is read even with --no-replace-objects
    return env


def run_git(
    repo: RepoInfo,
    *args: str,
    input: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    ok_codes: tuple[int, ...] = (0,),
    shallow_file: str | None = None,
) -> bytes:
    """Run ``git <args>`` against ``repo`` and return stdout as bytes.

    Raises
    ------
    GitError
        git is missing, timed out, or exited with a code not in ``ok_codes``
        (the message carries git's first line of stderr).

    ``shallow_file`` is the file git reads as the shallow boundary instead of ``<git-dir>/shallow`` (review 45).
    """
    cmd = [
        "git",
        f"--git-dir={repo.git_dir}",
        f"--work-tree={repo.work_tree}",
        "--no-replace-objects",
        "-c",
        "core.quotepath=off",
        "-c",
        "log.showSignature=false",
        "-c",
        "i18n.logOutputEncoding=UTF-8",  # a commit's words come out as UTF-8 whatever an agent's config says
        *args,
    ]
    try:
        proc = subprocess.run(
            cmd,
            cwd=str(repo.work_tree),
            env=git_environment() | ({"GIT_SHALLOW_FILE": shallow_file} if shallow_file else {}),
            input=input,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("the git executable was not found on PATH; install git to use git features") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0] if args else ''} timed out after {timeout:g} s in {repo.work_tree}") from exc
    if proc.returncode not in ok_codes:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        # git's own line, not a hint before it (with GIT_GRAFT_FILE set, git 2.39 says grafts are deprecated first,
        # and a person read that instead of "fatal: invalid object type": review 52)
        said = [line for line in err if not line.startswith("hint:")] or err
        first = said[0] if said else f"exit code {proc.returncode}"
        raise GitError(f"git {args[0] if args else ''} failed in {repo.work_tree}: {first}")
    return proc.stdout


def coerce_repo(repo: RepoInfo | str | Path) -> RepoInfo:
    """Accept a :class:`RepoInfo` or a path inside a work tree; raise GitError when it is not one."""
    if isinstance(repo, RepoInfo):
        if not (repo.git_dir / "HEAD").is_file():
            raise GitError(f"{repo.git_dir} is not a git directory (no HEAD); pass a RepoInfo from find_repo()")
        return repo
    if isinstance(repo, (str, os.PathLike)):
        info = find_repo(repo)
        if info is None:
            raise GitError(f"{repo} is not inside a git work tree; run `git init` or pass a path inside a repository")
        return info
    raise ValidationError(f"repo must be a RepoInfo or a path, got {type(repo).__name__}")


def validate_sha(value: object, what: str = "sha") -> str:
    """Return ``value`` lower-cased if it is 4..64 hex digits, else raise ValidationError."""
    if not isinstance(value, str) or not _SHA_ARG_RE.match(value):
        raise ValidationError(f"{what} must be a hex commit id (4 to 64 hex digits), got {value!r}")
    return value.lower()
