"""A command's docstring as its ``--help`` text (standard library only, like :mod:`synapse_nb.cli._common`).

A docstring is written for the source, wrapped at 120 columns; a terminal is often 80. Typer's rich help keeps
every newline after a command's first paragraph and then wraps each line again at the terminal's width, so a
sentence broke where the source did ("... except in a" / "shell a coding agent started"), and an example longer
than the terminal was cut into two lines that no longer ran (review 78). :func:`reflow` gives help text whose
prose paragraphs are one line each (the terminal wraps them at its width) and whose indented blocks (the examples)
keep their lines, a long command continued with `` \\`` so that each line fits in 80 columns and still runs when
pasted.

>>> print(reflow('''Do a thing.
...
...     More about the
...     thing.
...
...     Examples:
...
...         synapse-nb thing --alpha "one two" --beta three --gamma four --delta five --epsilon six
... '''))
Do a thing.
<BLANKLINE>
More about the thing.
<BLANKLINE>
Examples:
<BLANKLINE>
    synapse-nb thing --alpha "one two" --beta three --gamma four \\
        --delta five --epsilon six
"""

from __future__ import annotations

import inspect
import re

__all__ = ["EXAMPLE_WIDTH", "reflow"]

#: the longest line an example block keeps (its indent included): the help's margin and 80 columns leave room
EXAMPLE_WIDTH = 72
_WORD = re.compile(r"""(?:"[^"]*"|'[^']*'|\S)+""")  # a shell word: quotes keep their spaces
_ITEM = re.compile(r"(?:[-*•]|\d+[.)])\s")  # a line that starts a list item stays a line of its own


def reflow(text: str, *, plain: bool = False) -> str:
    """``text`` (a docstring) as help: each prose paragraph on one line (a list item on its own), each indented
    block (examples) line by line, too-long lines continued with `` \\``. ``plain`` (click's own formatter, without
    rich, which re-wraps every paragraph): each block is marked with click's ``\\b`` so that it is kept as is."""
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(text))
    out: list[str] = []
    for para in paragraphs:
        lines = para.splitlines()
        if lines and all(line[:1].isspace() for line in lines):
            block = [piece for line in lines for piece in _fit(line)]
            out.append("\n".join(["\b", *block] if plain else block))
        else:
            out.append("\n".join(_joined(lines)))
    return "\n\n".join(out)


def _joined(lines: list[str]) -> list[str]:
    """A paragraph's lines joined into one, except that a list item starts a line of its own."""
    joined: list[str] = []
    for line in lines:
        stripped = line.strip()
        if joined and not _ITEM.match(stripped):
            joined[-1] = f"{joined[-1]} {stripped}"
        else:
            joined.append(line.rstrip())
    return joined


def _fit(line: str) -> list[str]:
    """An example's line as lines of at most :data:`EXAMPLE_WIDTH` characters: broken between shell words, each
    line but the last ending in `` \\`` (a shell continues the command), the rest indented four more spaces. A
    comment is never continued (a shell reads it to its line's end: a `` \\`` in it continues nothing, and the
    words on the next line ran as a command; review 93): it stays after the command when both fit, else it goes
    above the command, on lines of its own that each start with ``#``.

    >>> _fit("    synapse-nb memory verify --fix      # follow renames in lessons and checkpoints, mark dangling and "
    ...      "possibly stale records")  # doctest: +NORMALIZE_WHITESPACE
    ['    # follow renames in lessons and checkpoints, mark dangling and',
     '    # possibly stale records', '    synapse-nb memory verify --fix']
    """
    if len(line) <= EXAMPLE_WIDTH:
        return [line.rstrip()]
    indent = line[: len(line) - len(line.lstrip())]
    words = _WORD.findall(line)
    at = next((i for i, word in enumerate(words) if word.startswith("#")), None)
    if at is None:
        return _lines(words, indent, indent + "    ", " \\")
    said, command = words[at:], indent + " ".join(words[:at])
    if at and len(command) + 1 + len(" ".join(said)) <= EXAMPLE_WIDTH:
        return [f"{command} {' '.join(said)}"]
    said = [w for w in (said[0].lstrip("#"), *said[1:]) if w]
    above = _lines(said, indent + "# ", indent + "# ", "") if said else [indent + "#"]
    return [*above, *(_fit(command) if at else [])]


def _lines(words: list[str], first: str, then: str, end: str) -> list[str]:
    """``words`` on lines of at most :data:`EXAMPLE_WIDTH` characters, the first line starting with ``first``, the
    others with ``then``, each but the last ending in ``end``."""
    lines: list[str] = []
    current = first + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) + len(end) > EXAMPLE_WIDTH:
            lines.append(current + end)
            current = then + word
        else:
            current += " " + word
    return [*lines, current]
