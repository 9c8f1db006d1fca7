"""Review 93, the smaller things a newcomer trips on in the CLI: a ``--help`` example that did not do what its comment
said, an empty stdin imported as if a file had been read, and ``memory search`` without a query answered unlike
``%memory search``."""

from __future__ import annotations

import inspect
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import synapse_nb as syn
from synapse_nb.cli import app
from synapse_nb.cli.memory import memory_expiring


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "project"
    p.mkdir()
    syn.open_vault(p).close()
    return p


@pytest.fixture()
def run(project: Path) -> Any:
    runner = CliRunner()

    def _run(*args: str, input: str | None = None, code: int = 0) -> Any:
        res = runner.invoke(app, ["--vault", str(project), *args], input=input)
        assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
        return res

    return _run


def test_the_expiring_example_that_lists_them_all_lists_them_all(run: Any, project: Path) -> None:
    """``memory expiring -n 0  # all of them`` said "nothing expires within 7d" beside a memory expiring in 14 days:
    ``-n`` is how many, ``--within`` how far ahead. The example with ``-n 0`` lists every one its comment names."""
    [example] = [line.strip() for line in (inspect.getdoc(memory_expiring) or "").splitlines() if "-n 0" in line]
    command, _, comment = example.partition("#")
    assert comment.strip().startswith("all")  # what it promises: every one (within its horizon, if it names one)
    v = syn.open_vault(project)
    for i in range(25):  # more than the 20 shown by default
        v.remember("context", f"sprint_goal_{i}", f"ship part {i}", expires="14d")
    v.remember("context", "next_quarter", "plan the next quarter", expires="120d")
    args = shlex.split(command)
    assert args[:3] == ["synapse-nb", "memory", "expiring"]
    out = run(*args[1:]).stdout
    assert all(f"context/sprint_goal_{i}:" in out for i in range(25)), out
    assert "next_quarter" not in out  # beyond 90 days


def test_an_empty_stdin_is_nothing_to_import(run: Any, project: Path, tmp_path: Path) -> None:
    res = run("memory", "import", "-", "--trust", "--yes", input="")  # `cat missing.jsonl | ... import -`
    assert res.stdout.strip() == "nothing to import: standard input was empty"
    assert "imported" not in res.stdout
    res = run("memory", "import", "-", "--yes", "--json", input="\n\n")
    assert json.loads(res.stdout)["empty"] is True and "nothing to import" in res.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert run("memory", "import", str(empty), "--yes").stdout.strip() == (
        f"nothing to import: the file {str(empty)!r} is empty")
    # an export of an empty vault is a file that was read: its header, nothing more
    export = tmp_path / "export.jsonl"
    run("memory", "export", str(export))
    assert run("memory", "import", str(export), "--yes").stdout.startswith("imported: ")


def test_memory_search_needs_a_query_or_a_filter_as_the_magic_does(run: Any, project: Path) -> None:
    v = syn.open_vault(project)
    v.remember("procedure", "run_migrations", "alembic upgrade head", tags=["db"])
    v.remember("context", "sprint_goal", "ship the v2 API")
    for args in ((), ("   ",)):
        res = run("memory", "search", *args, code=2)
        assert "memory search needs a query" in res.stderr and "mem_" not in res.stdout
    assert "run_migrations" in run("memory", "search", "alembic").stdout
    by_tag = run("memory", "search", "--tag", "db").stdout
    assert "run_migrations" in by_tag and "sprint_goal" not in by_tag
    assert "sprint_goal" in run("memory", "search", "--category", "context").stdout
    assert "sprint_goal" in run("memory", "search", "--source", "user").stdout
