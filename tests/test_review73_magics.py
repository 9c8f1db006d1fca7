"""Review 73: the magics' lines reach them as typed (F2), and ``%memory verify ID`` verifies only the memory it
showed (F1).

F2: IPython expands ``{expr}`` and ``$name`` in a magic's line against the notebook's variables unless the magic opts
out (``@no_var_expand``): ``%remember procedure fmt use {secret_token} as the placeholder; costs are $5`` stored the
secret's value, lost the ``$``, and every agent then recalled it as the person's verified memory (and IPython's
expansion of a 200,000-character paste took minutes before the length limit refused it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from synapse_nb.magics import _REGISTERED, _parse
from tests.test_magics import TestingShell, _shell, _vault

#: A line IPython would expand: a Python expression in braces, a variable after ``$``, a ``$$`` and a ``$5``.
TYPED = "procedure k use {x} and {x + 1} and $y, costs are $5 per $$y"


@pytest.fixture
def ip(tmp_path: Path) -> Iterator[TestingShell]:
    shell = _shell(tmp_path / "proj")
    shell.run_cell("x = 41\ny = 'sk-live-123'")
    yield shell
    shell.run_line_magic("unload_ext", "synapse_nb")
    TestingShell.clear_instance()


def _synapse_magics(ip: TestingShell) -> list[tuple[str, str]]:
    """Every (kind, name) the extension registered on ``ip``, read from what it registered (not a list kept here:
    a magic added later is found too)."""
    magics, _shadowed = _REGISTERED[id(ip)]
    return sorted((kind, name) for m in magics for kind, table in m.magics.items() for name in table)


def test_every_synapse_magic_gets_its_line_as_typed(ip: TestingShell) -> None:
    found = _synapse_magics(ip)
    assert {("line", "remember"), ("line", "memory"), ("line", "recall"), ("line", "checkpoint"),
            ("line", "lessons"), ("line", "synapse"), ("cell", "decision"), ("cell", "episode")} <= set(found)
    registry = ip.magics_manager.magics
    for kind, name in found:
        real = registry[kind][name]
        got: list[str] = []

        @functools.wraps(real)  # what IPython reads of the magic (its opt-outs) comes along; the vault is not touched
        def recorder(line: str, *rest: Any, _got: list[str] = got, **kw: Any) -> None:
            _got.append(line)

        registry[kind][name] = recorder
        try:
            ip.run_cell(f"%{name} {TYPED}" if kind == "line" else f"%%{name} {TYPED}\npass\n")
        finally:
            registry[kind][name] = real
        assert got == [TYPED], (kind, name, got)


def test_remember_stores_braces_and_dollars_as_typed(ip: TestingShell) -> None:
    ip.run_cell(f"m = %remember {TYPED}")
    m = ip.user_ns["m"]
    assert m.content == "use {x} and {x + 1} and $y, costs are $5 per $$y"
    assert _vault(ip).memories.get(m.id).content == m.content
    ip.run_cell("%checkpoint create --doing 'tuning {x}' --next-step 'try $y'")
    c = _vault(ip).checkpoints.restore("latest")
    assert (c.doing, c.next_step) == ("tuning {x}", "try $y")
    ip.run_cell("%%decision --tags a{x}\nUse {x}\n")
    [d] = _vault(ip).decisions.list()
    assert (d.decision, d.tags) == ("Use {x}", ("a{x}",))  # the line of a cell magic too, not a41


def test_a_long_paste_is_refused_without_expanding_it(ip: TestingShell, monkeypatch: pytest.MonkeyPatch) -> None:
    """IPython's expansion of a 200,000-character line is quadratic (190 s): the magic refuses a long content at its
    limit without IPython expanding the line first; and splitting a line like a shell is quadratic in a word's length
    (2,000,000 characters: 90 s), so a line past every text's limit is refused before it is split."""
    expanded: list[str] = []
    monkeypatch.setattr(ip, "var_expand", lambda line, *a, **kw: expanded.append(line) or line)
    with pytest.raises(UsageError, match="content is 100,000 characters; the limit is 32,768"):  # TestingShell
        ip.run_cell("%remember procedure long " + "x" * 100_000)  # re-raises the magic's error
    assert expanded == []

    def no_split(*a: Any, **kw: Any) -> list[str]:
        raise AssertionError("split")

    monkeypatch.setattr(_parse, "arg_split", no_split)
    for cell in ("%remember procedure long ", "%checkpoint create --doing ", "%recall ", "%%decision --tags x"):
        with pytest.raises(UsageError, match="the magic's line is 2,000,0[0-9]{2} characters; the limit is 131,072"):
            ip.run_cell(cell + "x" * 2_000_000 + ("\nUse WAL\n" if cell.startswith("%%") else ""))
    assert expanded == [] and not _vault(ip).memories.count()
