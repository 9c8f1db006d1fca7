"""Helpers to build throw-away git repositories in tests (shipped so users can test their own code).

:class:`ScratchRepo` runs the real ``git`` command in an isolated environment
(no global/system config, fixed identity, fixed dates when asked), so tests
behave the same on every machine.

Examples
--------
>>> import tempfile
>>> from synapse_nb.gitscope.testing import ScratchRepo
>>> with tempfile.TemporaryDirectory() as tmp:
...     r = ScratchRepo.init(tmp)
...     sha = r.commit_file("a.txt", "hello", "Add a")
...     len(sha)
40
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["ScratchRepo", "git_env"]


def git_env(home: str | Path | None = None) -> dict[str, str]:
    """An environment for running ``git`` in tests: no user/system config, fixed identity.

    Parameters
    ----------
    home : str or Path, optional
        Used as ``HOME`` (defaults to a path that does not exist, so no ``~/.gitconfig`` is read).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "HOME": str(home) if home is not None else "/nonexistent-synapse-home",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_AUTHOR_NAME": "Ada Tester",
            "GIT_AUTHOR_EMAIL": "ada@example.com",
            "GIT_COMMITTER_NAME": "Ada Tester",
            "GIT_COMMITTER_EMAIL": "ada@example.com",
            "LC_ALL": "C",
        }
    )
    return env


class ScratchRepo:
    """A git work tree driven by the real ``git`` command, with a monotonic fake clock.

    Parameters
    ----------
    root : Path
        The work tree's root.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._tick = 0

    @classmethod
    def init(cls, root: str | Path, *, branch: str = "main") -> ScratchRepo:
        """``git init -b <branch>`` in ``root`` (created if needed)."""
        path = Path(root)
        path.mkdir(parents=True, exist_ok=True)
        repo = cls(path)
        repo.git("init", "-q", "-b", branch)
        return repo

    def env(self) -> dict[str, str]:
        """The environment the next git call gets: isolated, with the next fake date."""
        env = git_env()
        self._tick += 1
        date = f"{1_700_000_000 + self._tick * 60} +0000"
        env["GIT_AUTHOR_DATE"] = date
        env["GIT_COMMITTER_DATE"] = date
        return env

    def git(self, *args: str, check: bool = True, cwd: str | Path | None = None) -> str:
        """Run ``git <args>`` in the work tree and return its stdout (stripped)."""
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd or self.root),
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout.strip()

    def write(self, relpath: str, content: str) -> Path:
        """Write a file in the work tree (parents created)."""
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return path

    def commit_file(self, relpath: str, content: str, message: str) -> str:
        """Write, add and commit one file; return the new commit's sha."""
        self.write(relpath, content)
        self.git("add", "--", relpath)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def head_sha(self) -> str:
        """``git rev-parse HEAD``."""
        return self.git("rev-parse", "HEAD")
