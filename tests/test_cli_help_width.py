"""Review 78 F1: ``synapse-nb --help`` at 80 columns broke its sentences where the docstring's source lines ended
and cut its own examples in two. Every command's help is rendered here at ``COLUMNS=80``."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import typer
from typer.testing import CliRunner

from synapse_nb.cli import app
from synapse_nb.cli._help import EXAMPLE_WIDTH, reflow

WIDTH = 80
TEXT_WIDTH = WIDTH - 2  # rich's help has a margin of one column on each side


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def _examples(doc: str) -> list[str]:
    """The example commands of a docstring, as written (a line the source continues with `` \\`` joined)."""
    block = [line for line in inspect.cleandoc(doc).splitlines() if line[:1].isspace()]
    return [c for c in _commands_shown(block) if c.startswith("synapse-nb ")]


def _prose(out: str) -> list[str]:
    """The help's text above its option panels, without the margin (examples stay indented)."""
    lines = out.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
    return [line[1:].rstrip() for line in lines[:end]]


def _commands_shown(prose: list[str]) -> set[str]:
    """Each command the help shows, a line continued with `` \\`` joined with the next."""
    shown: set[str] = set()
    pending = ""
    for line in prose:
        text = pending + line.strip()
        if text.endswith(" \\"):
            pending = text[:-1]
            continue
        pending = ""
        shown.add(" ".join(text.split()))
    return shown


def test_every_commands_help_keeps_its_sentences_and_examples_whole_at_80_columns() -> None:
    runner = CliRunner()
    root = typer.main.get_command(app)
    docs = {path: cmd.help or "" for path, cmd in _commands(root)}  # before the CLI polishes them
    examples = 0
    for path, doc in docs.items():
        res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": str(WIDTH)})
        assert res.exit_code == 0, (path, res.output)
        prose = _prose(res.stdout)
        assert all(len(line) <= TEXT_WIDTH for line in prose), (path, res.stdout)
        for line, after in pairwise(prose):
            if not line or not after or line.startswith(("Usage:", "    ")) or after.startswith(" "):
                continue
            # rich wraps a paragraph only where the next word would not fit: a break before that is the source's
            first = after.split()[0]
            assert len(line) + 1 + len(first) > TEXT_WIDTH - 2, (path, line, after)
        shown = _commands_shown(prose)
        for example in _examples(doc):
            assert example in shown, (path, example, res.stdout)
            examples += 1
    assert len(docs) > 40 and examples > 60


def test_a_long_example_is_continued_so_that_it_still_runs() -> None:
    example = 'synapse-nb checkpoint create --doing "Refactoring JWT auth" --files src/auth.py --next-step "Run pytest"'
    doc = f"Create it.\n\n    Examples:\n\n        {example}\n"
    assert reflow(doc) == ('Create it.\n\nExamples:\n\n    synapse-nb checkpoint create --doing "Refactoring JWT '
                           'auth" \\\n        --files src/auth.py --next-step "Run pytest"')
    assert reflow(doc, plain=True).split("\n\n")[2].startswith("\b\n    synapse-nb")  # click keeps a \b block
    one = "One sentence.\n\n- an item going on\n- another"
    assert reflow("One\nsentence.\n\n- an item\n  going on\n- another") == one


def test_no_option_help_carries_a_source_line_break() -> None:
    root = typer.main.get_command(app)
    for path, cmd in _commands(root):
        for param in cmd.params:
            assert "\n" not in (getattr(param, "help", None) or ""), (path, param.name)


def _comment_continued(prose: list[str]) -> list[str]:
    """The lines of a help's examples that continue a comment with `` \\`` (a shell continues nothing there: the words
    on the next line run as a command)."""
    return [line for line in prose if line.endswith(" \\") and any(w.startswith("#") for w in line.split())]


def test_no_examples_comment_is_continued_so_nothing_after_it_runs() -> None:
    """Review 93: ``memory verify --fix  # follow renames, mark dangling and stale records`` was shown as a line
    continued inside its comment, and pasted it ran ``stale records`` as a command."""
    doc = ("Check.\n\n    Examples:\n\n        synapse-nb memory verify --fix      # follow renames in lessons and "
           "checkpoints, mark dangling and possibly stale records\n")
    shown = reflow(doc).split("\n\n")[2].splitlines()
    assert shown == ["    # follow renames in lessons and checkpoints, mark dangling and",
                     "    # possibly stale records", "    synapse-nb memory verify --fix"]
    runner = CliRunner()
    for path, cmd in _commands(typer.main.get_command(app)):
        res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": str(WIDTH)})
        assert _comment_continued(_prose(res.stdout)) == [], (path, res.stdout)
        # and no example line is so long that rich wraps it (a comment's second half would be no comment)
        block = [line for line in reflow(cmd.help or "").splitlines() if line[:1].isspace()]
        assert all(len(line) <= EXAMPLE_WIDTH for line in block), (path, block)
