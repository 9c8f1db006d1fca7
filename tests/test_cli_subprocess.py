"""The real ``python -m synapse_nb`` process: exit codes and one-line stderr (a handful, they cost a process each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def sh(*args: str, cwd: Path, env_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SYNAPSE_HOME"}
    if env_home is not None:
        env["SYNAPSE_HOME"] = str(env_home)
    return subprocess.run([sys.executable, "-m", "synapse_nb", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


def test_version_and_roundtrip(project: Path) -> None:
    res = sh("--version", cwd=project)
    assert res.returncode == 0 and res.stdout.startswith("synapse-nb ")
    res = sh("checkpoint", "create", "--doing", "Refactoring JWT", "--files", "a.py,b.py", cwd=project)
    vault = (project / ".synapse").resolve()
    assert res.returncode == 0 and res.stderr == f"synapse-nb: created a new vault at {vault}\n"  # said once
    assert (project / ".synapse" / "synapse.db").is_file()  # the vault lives in the current folder
    res = sh("checkpoint", "create", "--doing", "Refactoring JWT", cwd=project)
    assert res.returncode == 0 and res.stderr == ""  # not again
    res = sh("checkpoint", "list", "--json", cwd=project)
    rows = json.loads(res.stdout)
    assert res.returncode == 0 and rows[0]["doing"] == "Refactoring JWT" and rows[0]["id"].startswith("ckp_")


def test_synapse_home_means_what_vault_means(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home-project"
    home.mkdir()
    res = sh("remember", "project", "status_line", "deployed", cwd=project, env_home=home)
    assert res.returncode == 0, res.stderr
    assert (home / ".synapse" / "synapse.db").is_file() and not (home / "synapse.db").exists()
    assert not (project / ".synapse").exists()
    by_option = sh("--vault", str(home), "memory", "list", "--json", cwd=project)
    by_env = sh("memory", "list", "--json", cwd=project, env_home=home)
    assert by_option.returncode == by_env.returncode == 0
    assert by_option.stdout == by_env.stdout and json.loads(by_env.stdout)[0]["key"] == "status_line"


def test_refused_operation_is_exit_1_one_line(project: Path) -> None:
    assert sh("init", cwd=project).returncode == 0
    res = sh("lessons", "approve", "--yes", "les_doesnotexist", cwd=project)
    assert res.returncode == 1
    assert res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith("synapse-nb: error: no lesson") and "Traceback" not in res.stderr


def test_usage_error_is_exit_2_one_line(project: Path) -> None:
    res = sh("checkpoint", "create", "--doing", cwd=project)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("synapse-nb: usage error:")


def test_rebuild_and_purge_write_nothing_to_stderr(project: Path) -> None:
    """The index's rewrites create their tables afresh: lance's own logger (the process's stderr, below Python's)
    warned "No existing dataset ... it will be created" on every purge after a rebuild."""
    assert sh("remember", "project", "k1", "hello world", cwd=project).returncode == 0
    mem = json.loads(sh("memory", "list", "--json", cwd=project).stdout)[0]["id"]
    res = sh("index", "rebuild", cwd=project)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    res = sh("memory", "purge", mem, "--yes", cwd=project)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    res = sh("index", "rebuild", cwd=project)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_mcp_at_a_terminal_says_what_it_is_on_stderr_and_keeps_stdout_for_the_protocol(project: Path) -> None:
    """Review 68 F3: run by a person at a terminal, ``synapse-nb mcp`` printed nothing and waited."""
    import pty
    import select
    import signal
    import time

    assert sh("init", cwd=project).returncode == 0
    controller, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "SYNAPSE_HOME"}
    proc = subprocess.Popen([sys.executable, "-m", "synapse_nb", "mcp"], cwd=project, env=env, stdin=terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(terminal)
    try:
        assert proc.stderr is not None
        ready = select.select([proc.stderr], [], [], 30)[0]  # said before serving (before: nothing, ever)
        line = proc.stderr.readline() if ready else "(nothing on stderr after 30 s)"
        vault = (project / ".synapse").resolve()
        assert line == (f"synapse-nb MCP server (stdio) for vault {vault}: configure your client as in "
                        "docs/agents.md; Ctrl-C to stop\n")
        time.sleep(1.0)
        assert proc.poll() is None  # and it keeps serving
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 130 and out == ""
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(controller)
