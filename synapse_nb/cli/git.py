"""``synapse-nb hooks`` (install or remove the git hooks) and ``synapse-nb watch`` (react to commits and changes)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from synapse_nb.cli._common import Group, group_help, open_vault_for, refuse_in_an_agents_shell, state
from synapse_nb.errors import GitError
from synapse_nb.gitscope import HeadState, RepoInfo, find_repo, install_hooks, uninstall_hooks
from synapse_nb.provenance import label_text
from synapse_nb.render import plural

__all__ = ["hooks_app", "watch"]


hooks_app = typer.Typer(cls=Group, no_args_is_help=True, help=group_help(
    "Install or remove the git hooks that turn reverts into pending lessons.",
    "synapse-nb hooks install", "synapse-nb hooks uninstall"))


def _repo_for(ctx: typer.Context, path: str | None) -> RepoInfo:
    base = path if path is not None else (state(ctx).vault or os.getcwd())
    if not os.path.isdir(os.path.expanduser(base)):
        raise GitError(f"{base} is not an existing folder (a typo?); name a folder inside the repository")
    repo = find_repo(base)
    if repo is None:
        raise GitError(f"{base} is not inside a git repository; hooks need git (run 'git init' first)")
    return repo


def _person_only(action: str) -> None:
    """Refuse ``action`` in an agent's shell (the core refuses it again: ``githook_install``): the git hooks run at
    the person's commits, and turn the person's reverts into pending lessons (review 36)."""
    refuse_in_an_agents_shell(f"{action} is a person's: the git hooks run at every commit of the person's")


@hooks_app.command("install")
def hooks_install(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A folder inside the repository (default: current).")] = None,
) -> None:
    """Install post-commit / post-rewrite hooks that scan for reverts (existing hooks are chained).

    Examples:

        synapse-nb hooks install

        synapse-nb hooks install ~/project
    """
    _person_only("hooks install")
    for p in install_hooks(_repo_for(ctx, path)):
        typer.echo(f"installed {p}")


@hooks_app.command("uninstall")
def hooks_uninstall(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A folder inside the repository (default: current).")] = None,
) -> None:
    """Remove the hooks installed by ``hooks install`` (restoring chained ones).

    Examples:

        synapse-nb hooks uninstall
    """
    _person_only("hooks uninstall")
    removed = uninstall_hooks(_repo_for(ctx, path))
    if not removed:
        typer.echo("no synapse-nb hooks installed")
    for p in removed:
        typer.echo(f"removed {p}")


def watch(
    ctx: typer.Context,
    path: Annotated[str | None, typer.Argument(help="A folder inside the repository (default: current).")] = None,
    every: Annotated[int | None, typer.Option("--every", min=1, help=(
        "Auto checkpoint every N newly changed files (default: the vault setting auto_checkpoint_files, "
        "else auto_checkpoint_every)."))] = None,
) -> None:
    """Watch the repository: scan for reverts on each commit, auto-checkpoint as changes pile up (Ctrl-C stops).

    Each newly changed file counts once; every N of them make an automatic checkpoint (origin "watch").

    Examples:

        synapse-nb watch

        synapse-nb watch ~/project --every 5
    """
    from synapse_nb.gitscope import Watcher  # here: watchdog loads only for this command
    from synapse_nb.kinds.autocheckpoint import AutoCheckpoint  # here: the core loads only when a command runs

    # one watcher a vault: an agent's in the background locked the person's out (review 18)
    refuse_in_an_agents_shell("watch is a person's: one watcher runs a vault (an agent's session checkpoints "
                              "through its hooks: synapse-nb agent install)")
    repo = _repo_for(ctx, path)
    v = open_vault_for(ctx, path)
    n = every if every is not None else AutoCheckpoint.every_from(v.settings.get, "file")
    auto = AutoCheckpoint(every=n, enabled=True, unit="file")

    def on_commit(now: HeadState) -> None:
        created = v.lessons.scan()
        typer.echo(f"commit {(now.commit or '')[:12]} on {label_text(now.branch) or '-'}: "  # a name, shown safe
                   f"{plural(len(created), 'new pending lesson')}")

    def on_files(paths: list[str]) -> None:
        if auto.observe_files(paths):
            c = auto.save(v.checkpoints, origin="watch")
            typer.echo(f"checkpoint {c.id}: {plural(len(c.changed_files), 'changed file')}")

    # every_files=1: the watcher reports each newly changed file; AutoCheckpoint does the counting
    w = Watcher(repo.work_tree, on_commit=on_commit, on_files_changed=on_files, every_files=1,
                lock_path=v.path / "watch.lock")
    # said once it watches (its first git status read, its observer running), not before: a change made after the
    # line is counted, one made before may be in the baseline (a test that waited for the lock file raced that)
    w.run_forever(on_start=lambda: typer.echo(
        f"watching {path or os.getcwd()} (auto checkpoint every {plural(n, 'changed file')}); Ctrl-C stops", err=True))
