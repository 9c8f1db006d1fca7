"""The plain logic of the magics' lines and cells, testable without IPython.

Everything here takes and returns plain Python values: a magic line split like a shell, comma lists,
``--name value`` options pulled out of free text, a ``%%decision`` cell split into decision and
rationale, ``on``/``off`` switches, the stable notebook session id and the input transformer that keeps
``%recall how do we deploy?`` a recall. Errors raised here are :class:`~synapse_nb.errors.ValidationError`;
the magics turn them into one-line ``UsageError`` messages.

Examples
--------
>>> split_line('create --doing "two words" --files a.py')
['create', '--doing', 'two words', '--files', 'a.py']
>>> split_line("how's the deploy")   # a lone apostrophe is text, not an open quote
["how's", 'the', 'deploy']
>>> split_list("a.py, b.py,,c.py")
['a.py', 'b.py', 'c.py']
>>> split_decision_cell("Use SQLite WAL mode\\nReaders never block writers.\\n")
('Use SQLite WAL mode', 'Readers never block writers.')
"""

from __future__ import annotations

import hashlib
import re
import sys
import uuid
from argparse import ArgumentParser, Namespace

from IPython.core.error import UsageError
from IPython.utils._process_common import arg_split  # what IPython.utils.process re-exports (its %magic parsing)

from synapse_nb.errors import ValidationError
from synapse_nb.models import MAX_TEXT

__all__ = [
    "MAX_LINE",
    "all_is_zero",
    "default_session_id",
    "keep_recall_questions",
    "parse_line",
    "parse_switch",
    "split_decision_cell",
    "split_line",
    "split_list",
    "split_options",
]

#: Longest magic line read, in characters: four texts at their limit (a checkpoint's ``--doing``, ``--next-step`` and
#: ``--blockers``, a memory's content: 32,768 each). Splitting like a shell (``shlex``) takes time quadratic in a
#: word's length, so a longer paste is refused before it is split (review 73: 2,000,000 characters took 90 s).
MAX_LINE = 4 * MAX_TEXT


def split_line(line: str) -> list[str]:
    """Split a magic line like a shell with IPython's ``arg_split`` (quotes group words, and are removed).

    A line whose quotes do not pair up (an apostrophe, as in ``how's``) is split on whitespace
    instead, keeping every character: in POSIX mode ``arg_split`` would drop the apostrophe, and in
    IPython's default non-POSIX mode (what ``parse_argstring`` uses) ``--doing "two words"`` would keep
    its quotes in the value. A line over :data:`MAX_LINE` characters is refused (:class:`ValidationError`).
    """
    if len(line) > MAX_LINE:
        raise ValidationError(f"the magic's line is {len(line):,} characters; the limit is {MAX_LINE:,} (a memory's "
                              f"content, a checkpoint's --doing and each text like them: {MAX_TEXT:,})")
    try:
        return arg_split(line, posix=True, strict=True)
    except ValueError:
        return line.split()


def parse_line(parser: ArgumentParser, line: str) -> Namespace:
    """Parse a magic line with the method's ``@magic_arguments`` parser (``magic.parser``).

    Options and positional words may be mixed in any order. The parser is IPython's
    ``MagicArgumentParser``: a mistake raises ``UsageError``, it never exits.
    """
    argv = split_line(line)
    try:
        try:
            return parser.parse_intermixed_args(argv)
        except TypeError:  # argparse refuses intermixed parsing for some layouts
            return parser.parse_args(argv)
    except UsageError as exc:  # a required word missing: say what it may be, as a wrong one does (review 68)
        missing = str(exc).partition("the following arguments are required: ")[2].split(", ")
        choices = [(a.dest, ", ".join(map(repr, a.choices))) for a in parser._actions
                   if a.dest in missing and a.choices]
        if choices:
            said = "; ".join(f"{d}: choose from {c}" if len(choices) > 1 else f"choose from {c}" for d, c in choices)
            raise UsageError(f"{exc} ({said})") from None
        raise


def split_list(text: str | None) -> list[str]:
    """Split ``"a, b,c"`` into ``["a", "b", "c"]`` (empty items dropped, order kept); ``None`` gives ``[]``."""
    if text is None:
        return []
    return [part.strip() for part in text.split(",") if part.strip()]


def split_options(argv: list[str], options: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """Pull ``--name value`` / ``--name=value`` for the given option names out of ``argv``; keep the rest in order.

    Anything else, including unknown ``--flags``, stays a word of the free text, so
    ``%remember procedure clean python clean.py --wave 2025 --tags data`` keeps ``--wave 2025`` in the
    content. After a lone ``--`` every word is text.

    >>> split_options(["k", "python", "x.py", "--wave", "1", "--tags=a,b", "--", "--tags"], ("--tags",))
    ({'--tags': 'a,b'}, ['k', 'python', 'x.py', '--wave', '1', '--tags'])
    """
    found: dict[str, str] = {}
    words: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if tok == "--":
            words.extend(argv[i:])
            break
        name, eq, value = tok.partition("=")
        if name in options:
            if not eq:
                if i >= len(argv):
                    raise ValidationError(f"{name} needs a value")
                value = argv[i]
                i += 1
            if name in found:
                raise ValidationError(f"{name} given twice")
            found[name] = value
            continue
        words.append(tok)
    return found, words


def split_decision_cell(body: str) -> tuple[str, str | None]:
    """Split a ``%%decision`` cell: the first non-blank line is the decision, the rest the rationale.

    Raises
    ------
    ValidationError
        When the cell has no text at all.
    """
    lines = body.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise ValidationError("a %%decision cell needs the decision on its first line "
                              "(and the rationale, if any, on the following lines)")
    decision = lines[0].strip()
    rationale = "\n".join(lines[1:]).strip()
    return decision, (rationale or None)


def all_is_zero(limit: int | None) -> int | None:
    """A magic's ``--limit``/``-n`` as the CLI reads it: ``0`` is all (None); a negative or a huge number is refused.

    >>> all_is_zero(0), all_is_zero(20)
    (None, 20)
    >>> all_is_zero(-1)
    Traceback (most recent call last):
    ...
    synapse_nb.errors.ValidationError: --limit must be 0 (all) or a whole number from 1 to 1,000,000,000, got -1
    """
    if not limit:
        return None
    if not 1 <= limit <= 10**9:
        raise ValidationError(f"--limit must be 0 (all) or a whole number from 1 to 1,000,000,000, got {limit}")
    return limit


def parse_switch(value: str) -> bool:
    """``"on"`` -> True, ``"off"`` -> False (case-insensitive); anything else is refused."""
    v = value.strip().lower()
    if v in ("on", "off"):
        return v == "on"
    raise ValidationError(f"expected 'on' or 'off', got {value!r}")


def default_session_id() -> str:
    """A session id stable for this kernel: derived from the Jupyter connection file when there is one.

    ``nb-`` and 12 hex digits. Outside a Jupyter kernel it is random (the magics make it once and keep it).
    """
    if "ipykernel" in sys.modules:
        try:
            from ipykernel import get_connection_file  # only inside a kernel: plain IPython need not have ipykernel

            path = get_connection_file()
            return "nb-" + hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:12]
        except Exception:  # noqa: BLE001, S110 - no kernel app running (plain IPython with ipykernel imported): a random id
            pass
    return f"nb-{uuid.uuid4().hex[:12]}"


_RECALL_QUESTION = re.compile(r"^(?P<lead>\s*(?:[A-Za-z_][A-Za-z0-9_]*\s*=\s*)?)%recall[ \t]+(?P<args>\S.*?\?)\s*$")


def keep_recall_questions(lines: list[str]) -> list[str]:
    r"""IPython input transformer: keep ``%recall how do we deploy?`` a recall, not a help request.

    IPython reads a line ending in ``?`` as "show help for the last word". A ``%recall`` line (or
    ``r = %recall ...``) with a query is rewritten to the explicit magic call; ``%recall?`` alone
    still shows the help.

    >>> keep_recall_questions(["r = %recall how do we deploy?\n"])
    ["r = get_ipython().run_line_magic('recall', 'how do we deploy?')\n"]
    >>> keep_recall_questions(["%recall?\n", "x = 1?\n"])
    ['%recall?\n', 'x = 1?\n']
    """
    out = []
    for line in lines:
        m = _RECALL_QUESTION.match(line)
        if m and m.group("args").strip("?").strip():
            end = "\n" if line.endswith("\n") else ""
            line = f"{m.group('lead')}get_ipython().run_line_magic('recall', {m.group('args')!r}){end}"
        out.append(line)
    return out
