"""What a person decides on, shown so that every difference is visible: a memory's value line by line, and the
differences between its current value and an agent's proposed one (``memory accept``, ``memory verify`` at a
terminal and the ChangeReview widget).

:func:`synapse_nb.provenance.inline` renders stored text as one line for readers: line breaks become spaces,
whitespace runs collapse, and a letter of another script that looks like a Latin one is shown as itself. That is
right for a listing and wrong for a decision: an agent's revision that moved a line break (so ``rm -rf $HOME`` left
a ``#`` comment) or wrote Cyrillic "ру" into ``pypi.org`` read exactly like the person's text (review 26). Here:

- each stored line is one shown line (the diff's ``-`` / ``+`` / two-space prefix starts each);
- a space in a run of two or more, or at the start or end of a line, is shown as ``␣``, a tab as ``⇥``;
- a character that passes for an ASCII one (a letter of another script, a full-width or styled letter or sign, a
  combining mark on an ASCII letter), a space other than ASCII's, a control or invisible character, and a literal
  ``␣`` or ``⇥`` are shown as their code point (``<U+0440>``); a Latin letter with an accent stays itself;
- the neutraliser (:func:`synapse_nb.provenance.neutralise`) runs first, as for every reader;
- :func:`lookalike_warning` says when two values differ but would read the same (line breaks, spaces, look-alike
  letters or invisible characters only), and :func:`diff_lines` marks the characters that changed in a line.

Standard library only.

Examples
--------
>>> shown_lines("a  b\\nhttps://\\u0440\\u0443pi.org\\t")
['a␣␣b', 'https://<U+0440><U+0443>pi.org⇥']
>>> diff_lines(["same", "old"], ["same", "new"])
['  same', '- old', '? ^^^', '+ new', '? ^^^']
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from synapse_nb._cleaning import invisible_at
from synapse_nb._skeleton import skeleton
from synapse_nb.provenance import neutralise

__all__ = ["LEGEND", "SHOWN", "FieldChange", "changes", "diff_lines", "lookalike_warning", "shown_lines", "value_lines"]

#: How a value is shown line by line (said where it is).
SHOWN = "as stored, a line each (a space in a run shown as ␣, a tab as ⇥, a look-alike character as its code point)"
#: What the signs of a diff mean, said once above it.
LEGEND = ("(- now, + proposed, two spaces: both; a space in a run shown as ␣, a tab as ⇥, a character that passes "
          "for another as its code point <U+0440>)")
_SPACE, _TAB = "␣", "⇥"
#: Longest pair of lines (both together) whose changed characters are marked (a ``?`` line under each), and the most
#: characters marked so in one diff: comparing characters is quadratic at worst, so longer lines are shown whole
#: (a 32,768-character value of near-identical lines took 4 s with every pair marked)
_GUIDE_CHARS = 1_000
_GUIDE_BUDGET = 8_000


def _code(ch: str) -> str:
    return f"<U+{ord(ch):04X}>"


def _passes_for_ascii(ch: str, prev: str) -> bool:
    """Whether non-ASCII ``ch`` may be read as an ASCII character: the provenance skeleton reads it as one (a
    Cyrillic "р", a full-width "ａ", "／"), or it is a combining mark on an ASCII character, a space or a sign this
    display uses; a Latin letter with an accent ("é", which decomposes to an ASCII letter and marks) is itself."""
    cat = unicodedata.category(ch)
    if ch in (_SPACE, _TAB) or ch.isspace() or cat in ("Cc", "Cf", "Zl", "Zp"):
        return True
    if cat in ("Mn", "Me"):
        return prev.isascii()
    base = unicodedata.normalize("NFD", ch)
    if len(base) > 1 and base[0].isascii() and unicodedata.name(ch, "").startswith("LATIN"):
        return False
    read = skeleton(ch)[0]
    return bool(read) and read.isascii()


def _shown_line(line: str) -> str:
    if line.isascii() and line.isprintable() and "  " not in line and line.strip(" ") == line:
        return line
    hidden = {a for a, _ in invisible_at(line)} if not line.isascii() else set()
    out: list[str] = []
    n = len(line)
    for i, ch in enumerate(line):
        if ch == " ":
            run = (i > 0 and line[i - 1] == " ") or (i + 1 < n and line[i + 1] == " ")
            out.append(_SPACE if run or i == 0 or i == n - 1 else " ")
        elif ch == "\t":
            out.append(_TAB)
        elif ch.isascii():
            out.append(ch if ch.isprintable() else _code(ch))
        elif i in hidden or _passes_for_ascii(ch, line[i - 1] if i else ""):
            out.append(_code(ch))
        else:
            out.append(ch)
    return "".join(out)


def shown_lines(text: object) -> list[str]:
    """Stored text as a person decides on it: one shown line per stored line (any line break splits), with the
    marks of the module's docstring; banner, label and mark look-alikes neutralised first.

    >>> shown_lines("make clean  # never\\nrm -rf $HOME "), shown_lines("café")
    (['make clean␣␣# never', 'rm -rf $HOME␣'], ['café'])
    """
    text = neutralise("" if text is None else str(text))
    for sep in ("\r\n", "\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"):
        text = text.replace(sep, "\n")
    # read again as shown: "[user  verified]" must not become a mark spelt with the sign for a space
    return [neutralise(_shown_line(line)) for line in text.split("\n")]


def value_lines(field: str, value: Any) -> list[str]:
    """One field's value as shown lines: text by :func:`shown_lines`, tags one a line, no value as ``(none)``."""
    if value is None:
        return ["(none)"]
    if isinstance(value, list | tuple):
        return [line for v in value for line in shown_lines(v)] or ["(none)"]
    return shown_lines(value)


def _guides(a: str, b: str) -> tuple[str, str]:
    """The ``?`` lines under a changed line pair: ``^`` under replaced characters, ``-`` deleted, ``+`` inserted."""
    ga, gb = [" "] * len(a), [" "] * len(b)
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            ga[i1:i2] = ["^" if op == "replace" else "-"] * (i2 - i1)
        if op in ("replace", "insert"):
            gb[j1:j2] = ["^" if op == "replace" else "+"] * (j2 - j1)
    return "".join(ga).rstrip(), "".join(gb).rstrip()


def diff_lines(now: Sequence[str], proposed: Sequence[str]) -> list[str]:
    """Every line of both values, each after its sign: ``"  "`` in both, ``"- "`` now only, ``"+ "`` proposed only,
    and under a changed line (one replaced by one) a ``"? "`` line marking which characters differ."""
    out: list[str] = []
    budget = _GUIDE_BUDGET
    for op, i1, i2, j1, j2 in SequenceMatcher(None, now, proposed).get_opcodes():
        if op == "equal":
            out += [f"  {line}" for line in now[i1:i2]]
            continue
        old, new = list(now[i1:i2]), list(proposed[j1:j2])
        pairs = list(zip(old, new, strict=True)) if len(old) == len(new) else []
        size = sum(len(a) + len(b) for a, b in pairs)
        if pairs and size <= budget and all(len(a) + len(b) <= _GUIDE_CHARS for a, b in pairs):
            budget -= size
            for a, b in pairs:
                ga, gb = _guides(a, b)
                out += [f"- {a}", *([f"? {ga}"] if ga else []), f"+ {b}", *([f"? {gb}"] if gb else [])]
            continue
        out += [f"- {line}" for line in old] + [f"+ {line}" for line in new]
    return out


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def _read(text: str) -> str:
    return " ".join(skeleton(text)[0].split())


def lookalike_warning(field: str, now: Any, proposed: Any) -> str | None:
    """A warning when the two values differ but would read the same: only in line breaks, spaces, look-alike
    letters or invisible characters (a change of case alone is visible and not warned about); else None.

    >>> lookalike_warning("content", "pypi.org", "\\u0440\\u0443pi.org") is not None
    True
    >>> lookalike_warning("content", "a\\nb", "a b") is not None, lookalike_warning("content", "Make", "make")
    (True, None)
    """
    a, b = _text(now), _text(proposed)
    if a == b or a.lower() == b.lower() or _read(a) != _read(b):
        return None
    return (f"⚠ {field}: the proposed value reads like the current one but is not: it differs only in line breaks, "
            "spaces, letters that look alike or invisible characters (see the - / + lines and the code points)")


@dataclass(frozen=True)
class FieldChange:
    """One proposed field beside the memory's current value: both as shown lines, their diff, and a warning when
    they differ only in what reads the same."""

    field: str
    now: list[str]
    proposed: list[str]
    diff: list[str]
    warning: str | None


def changes(current: Any, proposed: Mapping[str, Any]) -> list[FieldChange]:
    """Each field of ``proposed`` (a revision's values, by field name) beside ``current``'s (the memory), in field
    order."""
    out = []
    for field, value in sorted(proposed.items()):
        now = getattr(current, field, None)
        a, b = value_lines(field, now), value_lines(field, value)
        out.append(FieldChange(field, a, b, diff_lines(a, b), lookalike_warning(field, now, value)))
    return out
