"""Review 68 F6: the small ones a new user met: hints in the magics' usage errors, the cell magics' usage lines,
``recall``'s help, RST literals in CLI help, and an empty recall refused alike by the CLI and ``%recall``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from synapse_nb.cli import app
from tests.test_magics import TestingShell, _shell, _usage


@pytest.fixture
def ip(tmp_path: Path) -> Iterator[TestingShell]:
    shell = _shell(tmp_path / "proj")
    yield shell
    shell.run_line_magic("unload_ext", "synapse_nb")
    TestingShell.clear_instance()


def test_a_decision_option_that_is_not_one_says_the_rationale_is_the_cell(ip: TestingShell) -> None:
    msg = _usage(ip, "%%decision --rationale x\nUse SQLite WAL mode\n")
    assert msg.startswith("unrecognized arguments: --rationale x; %%decision takes only --tags: the cell's first "
                          "line is the decision, the lines under it its rationale")


def test_a_missing_action_lists_the_actions(ip: TestingShell) -> None:
    assert _usage(ip, "%checkpoint") == ("the following arguments are required: action (choose from 'create', "
                                         "'list', 'restore', 'auto')")
    assert "(choose from 'status', 'search', 'expiring', 'prune', 'verify')" in _usage(ip, "%memory")


def test_the_cell_magics_usage_lines_name_them_with_two_percent_signs(ip: TestingShell) -> None:
    for name in ("decision", "episode"):
        doc = ip.find_cell_magic(name).__doc__
        assert f"\n  %%{name} " in doc and f"\n  %{name} " not in doc, doc[:80]


def test_recall_refuses_an_empty_query_in_the_cli_as_in_the_notebook(ip: TestingShell, tmp_path: Path) -> None:
    said = "recall needs a query (it was empty or blank), e.g. "
    assert _usage(ip, "%recall    ").startswith(f"%{said}%recall how do we run migrations?")
    for query in ("", "   "):
        res = CliRunner().invoke(app, ["--vault", str(tmp_path / "proj"), "recall", query])
        assert res.exit_code == 2 and f"{said}synapse-nb recall" in res.stderr, res.output


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def test_no_help_shows_rst_literals_and_recall_points_to_its_options() -> None:
    runner = CliRunner()
    root = typer.main.get_command(app)
    seen = 0
    for path in _commands(root):
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0 and "``" not in res.stdout, (path, res.stdout)
        seen += 1
    assert seen > 40
    query = " ".join(runner.invoke(app, ["recall", "query", "--help"]).stdout.split())
    assert "('synapse-nb recall QUERY' is the short form)" in query
    group = " ".join(runner.invoke(app, ["recall", "--help"]).stdout.split())
    assert "--session, --explain, --budget and --json: see 'synapse-nb recall query --help'" in group
