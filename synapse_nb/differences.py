"""What a person decides on, shown so that every difference is visible: a memory's value line by line, and the
differences between its current value and an agent's proposed one (``memory accept``, ``memory verify`` at a
terminal and the ChangeReview widget).

:func:`synapse_nb.provenance.inline` renders stored text as one line for readers: line breaks become spaces,
whitespace runs collapse, and a letter of another script that looks like a Latin one is shown as itself. That is
right for a listing and wrong for a decision: an agent's revision that moved a line break (so ``rm -rf $HOME`` left
a ``#`` comment) or wrote Cyrillic "ру" into ``pypi.org`` read exactly like the person's text (review 26). Here:

- each stored line is one shown line (the diff's ``-`` / ``+`` / two-space prefix starts each);
- a space in a run of two or more, or at the start or end of a line, is shown as ``␣``, a tab as ``⇥``;
- a character is shown as itself only if it is printable ASCII, a Latin letter with an accent ("é") or a letter of
  a script people write whole texts in and that has no Latin look-alikes (CJK ideographs, Hiragana, Katakana, Hangul
  syllables: :data:`_WHOLE_SCRIPTS`); every other one is shown as its code point (``<U+0440>``): letters of other
  scripts (Cyrillic "р"), full-width and styled forms, punctuation and symbols that pass for ASCII signs ("∕" for
  "/", "꞉" for ":", "ꓸ" for "."; review 31), modifier letters, digits of other scripts, right-to-left characters
  (which would reorder the line around them), combining marks, spaces other than ASCII's, controls and invisible
  characters, and a literal ``␣`` or ``⇥``;
- the neutraliser (:func:`synapse_nb.provenance.neutralise`) runs first, as for every reader;
- :func:`lookalike_warning` says when two values differ in a character shown as a code point, or would read the
  same (line breaks, spaces, accents or look-alike letters only), whether or not :func:`diff_lines` marks the
  characters that changed in a line (it does up to 1,000 characters a line pair; past that it marks the window
  between the pair's common start and end).

Standard library only.

Examples
--------
>>> shown_lines("a  b\\nhttps://\\u0440\\u0443pi.org\\t")
['a␣␣b', 'https://<U+0440><U+0443>pi.org⇥']
>>> diff_lines(["same", "old"], ["same", "new"])
['  same', '- old', '? ^^^', '+ new', '? ^^^']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

from synapse_nb._cleaning import code_point
from synapse_nb._skeleton import skeleton
from synapse_nb.provenance import mark, neutralise

__all__ = ["LEGEND", "SHOWN", "FieldChange", "changes", "diff_lines", "lookalike_warning", "shown_lines",
           "shown_memory", "value_lines"]

#: How a value is shown line by line (said where it is).
SHOWN = ("as stored, a line each (a space in a run shown as ␣, a tab as ⇥, a character other than ASCII, an accented "
         "Latin letter or a CJK, kana or Hangul letter as its code point)")
#: What the signs of a diff mean, said once above it.
LEGEND = ("(- now, + proposed, two spaces: both; a space in a run shown as ␣, a tab as ⇥, a character other than "
          "ASCII, an accented Latin letter or a CJK, kana or Hangul letter as its code point <U+0440>)")
_SPACE, _TAB = "␣", "⇥"
#: Longest pair of lines (both together) whose changed characters are marked (a ``?`` line under each), and the most
#: characters marked so in one diff: comparing characters is quadratic at worst (a 32,768-character value of
#: near-identical lines took 4 s with every pair marked), so past them the changed window is marked instead
_GUIDE_CHARS = 1_000
_GUIDE_BUDGET = 8_000


#: The scripts whose letters are shown as themselves (besides ASCII and accented Latin letters): people write whole
#: texts in them, they run left to right, and their letters are not drawn like Latin ones (unlike Cyrillic, Greek,
#: Armenian, Cherokee or Lisu, whose letters stay code points). CJK ideographs (the unified blocks; not the
#: compatibility ideographs, duplicates of unified ones), Hiragana and Katakana letters, Hangul syllables.
_WHOLE_SCRIPTS = ((0x3041, 0x3096), (0x30A1, 0x30FA), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
                  (0x20000, 0x323AF))
#: Their few letters drawn like an ASCII character (a stroke or two: "-", "|", "/", "\\", "`", "J", "T", "+", "=",
#: "x", "Z", "[", "L", "^", "<"), and the square ones drawn like a Latin capital or a sign ("卩" "P", "丅" "T", "丫"
#: "Y", "工" "I", "凵" "U", "冂" "n", "乚" "L", "匸" "[", "口" "ロ" "O", "エ" "I", "コ" "]", "ト" "卜" "F"/"|-", "丄"
#: "⊥", "冫" ":", "几" "n", "卄" "廾" "H", "彐" "ヨ" "E"/"3", "乛" "7", "刂" "IJ", "丌" "TT", "亠" "-", "冖" "^",
#: "丩" "4"; review 32): shown as code points. Not the kana the provenance skeleton reads as Latin letters
#: in fancy text ("の" for "o", "ん" for "h"): full-width and curved, they pass for no ASCII character beside ASCII
#: text, and "の" shown as a code point would leave no Japanese sentence readable.
_DRAWN_ASCII = frozenset("一丨丿乀丶亅丁十二乂乙匚ノニメレヘへく"
                         "卩丅丫工凵冂乚匸口エロコト卜丄冫几卄廾彐ヨ乛刂丌亠冖丩")


@lru_cache(maxsize=4096)
def _shown_as_itself(ch: str) -> bool:
    """Whether non-ASCII ``ch`` is shown as itself: an accented Latin letter (a letter that decomposes to an ASCII
    letter and combining marks: "é", not "ǃ", "ı" or a full-width "ａ") or a letter of :data:`_WHOLE_SCRIPTS` that
    passes for no ASCII character; every other one (punctuation, symbols, modifier letters, other digits, other
    scripts' letters, right-to-left characters, combining marks, spaces, format and control characters) is shown as
    its code point.

    >>> [c for c in "é日かカ한ж∕꞉ꓸ٠ʼ’ا\\u0301\\u00a0ノ" if _shown_as_itself(c)]
    ['é', '日', 'か', 'カ', '한']
    """
    cat = unicodedata.category(ch)
    if cat not in ("Lu", "Ll", "Lt", "Lo") or unicodedata.bidirectional(ch) != "L":
        return False
    if cat != "Lo":
        base = unicodedata.normalize("NFD", ch)
        return (len(base) > 1 and base[0].isascii() and base[0].isalpha()
                and all(unicodedata.category(m) == "Mn" for m in base[1:]))
    o, parts = ord(ch), unicodedata.decomposition(ch).split()
    # not a duplicate ideograph (its decomposition is one other character, "丽" U+2F800); "が" (か + a mark) is itself
    return any(lo <= o <= hi for lo, hi in _WHOLE_SCRIPTS) and ch not in _DRAWN_ASCII and len(parts) != 1


def _coded(ch: str) -> bool:
    """Whether ``ch`` is shown as its code point (a tab, a space and a line break are shown otherwise)."""
    if ch.isascii():
        return not ch.isprintable() and ch not in "\t\n\r"
    return not _shown_as_itself(ch)


def _shown_line(line: str) -> str:
    if line.isascii() and line.isprintable() and "  " not in line and line.strip(" ") == line:
        return line
    out: list[str] = []
    n = len(line)
    for i, ch in enumerate(line):
        if ch == " ":
            run = (i > 0 and line[i - 1] == " ") or (i + 1 < n and line[i + 1] == " ")
            out.append(_SPACE if run or i == 0 or i == n - 1 else " ")
        elif ch == "\t":
            out.append(_TAB)
        elif ch.isascii():
            out.append(ch if ch.isprintable() else code_point(ch))
        else:
            out.append(ch if _shown_as_itself(ch) else code_point(ch))
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


def shown_memory(mem: Any) -> str:
    """All a person verifies of a memory (what ``Memories.verify(seen=)`` binds), as ``memory verify ID`` at a terminal
    and ``%memory verify ID`` show it before verifying: its mark, priority and address, its text a line each as stored
    (review 26: one quoted line hid where its line breaks were), then its tags, confidence and expiry (review 3: the
    text alone was shown, and "critical" and free-text tags were verified unseen).

    >>> from synapse_nb.models import Memory
    >>> m = Memory(id="mem_1", mind="default", created_at="", updated_at="", category="procedure", key="deploy",
    ...            content="make deploy\\n  # never", tags=("ops",), source="agent", verified=False, confidence=0.5)
    >>> print(shown_memory(m).replace(SHOWN, "SHOWN"))
    [agent · unverified] [normal] procedure/deploy, SHOWN:
        make deploy
        ␣␣# never
      tags: ops; confidence 0.5; never expires
    """
    tags = ", ".join(line for t in mem.tags for line in shown_lines(t)) or "none"
    expiry = f"expires {mem.expires_at}" if mem.expires_at else "never expires"
    body = "".join(f"\n    {line}" for line in shown_lines(mem.content))
    return (f"{mark(mem)} [{mem.priority}] {mem.address}, {SHOWN}:{body}\n"
            f"  tags: {tags}; confidence {mem.confidence:g}; {expiry}")


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


def _window(a: Sequence[str], b: Sequence[str]) -> tuple[int, int, int]:
    """The changed window of two sequences, linear: ``a[i:ea]`` and ``b[i:eb]`` lie between their common prefix
    and their common suffix."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    k = 0
    while k < n - i and a[len(a) - 1 - k] == b[len(b) - 1 - k]:
        k += 1
    return i, len(a) - k, len(b) - k


def _window_guides(a: str, b: str) -> tuple[str, str]:
    """The ``?`` lines of a line pair too long to compare character by character: the whole changed window marked
    (``^`` when both sides have one, else ``-`` / ``+``), so two long lines never look identical (review 32)."""
    i, ea, eb = _window(a, b)
    sign_a, sign_b = ("^", "^") if ea > i and eb > i else ("-", "+")
    return (" " * i + sign_a * (ea - i)).rstrip(), (" " * i + sign_b * (eb - i)).rstrip()


def diff_lines(now: Sequence[str], proposed: Sequence[str]) -> list[str]:
    """Every line of both values, each after its sign: ``"  "`` in both, ``"- "`` now only, ``"+ "`` proposed only,
    and under a changed line (one replaced by one) a ``"? "`` line marking which characters differ (past 1,000
    characters a pair or 8,000 a diff, the window between the pair's common start and end).

    >>> diff_lines(["x" * 600 + "abc" + "y" * 600], ["x" * 600 + "aXc" + "y" * 600])[1].split()
    ['?', '^']
    """
    out: list[str] = []
    budget = _GUIDE_BUDGET
    for op, i1, i2, j1, j2 in SequenceMatcher(None, now, proposed).get_opcodes():
        if op == "equal":
            out += [f"  {line}" for line in now[i1:i2]]
            continue
        old, new = list(now[i1:i2]), list(proposed[j1:j2])
        if len(old) != len(new):
            out += [f"- {line}" for line in old] + [f"+ {line}" for line in new]
            continue
        for a, b in zip(old, new, strict=True):
            if len(a) + len(b) <= min(_GUIDE_CHARS, budget):
                budget -= len(a) + len(b)
                ga, gb = _guides(a, b)
            else:
                ga, gb = _window_guides(a, b)
            out += [f"- {a}", *([f"? {ga}"] if ga else []), f"+ {b}", *([f"? {gb}"] if gb else [])]
    return out


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def _read(text: str) -> str:
    return " ".join(skeleton(text)[0].split())


def _coded_chars(text: str) -> list[str]:
    return [] if text.isascii() and text.isprintable() else [ch for ch in text if _coded(ch)]


#: Words, whitespace runs and single other characters: the units the warning compares changed values in
_TOKEN = re.compile(r"\w+|\s+|.", re.S)
#: The most tokens compared token by token in one value (quadratic at worst); past it, each changed block of lines
#: is cut at its anchors (:func:`_anchored_spans`, near-linear)
_SPAN_BUDGET = 2_000


def _anchors(ta: Sequence[str], tb: Sequence[str]) -> list[tuple[int, int]]:
    """The words and signs found once in each of ``ta`` and ``tb``, as ``(index in ta, index in tb)`` pairs in the
    order both have them (the longest such run: patience sorting, O(n log n))."""
    count_a: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for t in ta:
        count_a[t] = count_a.get(t, 0) + 1
    where_b: dict[str, int] = {}
    for j, t in enumerate(tb):
        count_b[t] = count_b.get(t, 0) + 1
        where_b[t] = j
    pairs = [(i, where_b[t]) for i, t in enumerate(ta)
             if not t.isspace() and count_a[t] == 1 and count_b.get(t) == 1]
    tails: list[int] = []  # per run length, the index in pairs of the run's last pair with the smallest tb index
    back: list[int] = []
    for k, (_, j) in enumerate(pairs):
        n = _bisect_tails(pairs, tails, j)
        back.append(tails[n - 1] if n else -1)
        if n == len(tails):
            tails.append(k)
        else:
            tails[n] = k
    run: list[tuple[int, int]] = []
    k = tails[-1] if tails else -1
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _bisect_tails(pairs: list[tuple[int, int]], tails: list[int], j: int) -> int:
    """The first run length whose last pair's tb index is not below ``j``."""
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if pairs[tails[mid]][1] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _anchored_spans(ta: Sequence[str], tb: Sequence[str]) -> list[tuple[str, str]]:
    """The changed parts of a block too long to compare token by token (review 34), without a quadratic diff: the
    block is cut at its anchors (:func:`_anchors`), each part between two anchors trimmed to its changed window, and
    within a window the run of words and signs it starts (or ends) with that both sides share is a changed part
    too when only its spaces or line breaks differ (``./build`` -> ``. /build`` before ``dir`` -> ``directory``)."""
    spans: list[tuple[str, str]] = []
    pi = qi = 0
    for ai, bi in [*_anchors(ta, tb), (len(ta), len(tb))]:
        gx, gy = ta[pi:ai], tb[qi:bi]
        pi, qi = ai + 1, bi + 1
        i, ex, ey = _window(gx, gy)
        x, y = gx[i:ex], gy[i:ey]
        if not x and not y:
            continue
        spans.append(("".join(x), "".join(y)))
        nx = [k for k, t in enumerate(x) if not t.isspace()]
        ny = [k for k, t in enumerate(y) if not t.isspace()]
        p, kx, ky = _window([x[k] for k in nx], [y[k] for k in ny])
        if p:  # the shared words and signs the window starts with, with the spaces among them
            spans.append(("".join(x[:nx[p - 1] + 1]), "".join(y[:ny[p - 1] + 1])))
        if kx < len(nx):  # ... and ends with
            spans.append(("".join(x[nx[kx]:]), "".join(y[ny[ky]:])))
        spans += _moved_spaces(x, y, nx[p:kx], ny[p:ky])
    return spans


def _moved_spaces(x: Sequence[str], y: Sequence[str], nx: Sequence[int], ny: Sequence[int]) -> list[tuple[str, str]]:
    """The spaces moved between equal words or signs inside a window that starts and ends with visible edits
    (review 35: ``alpha ... ./build ... gamma`` -> ``beta ... . /build ... delta`` with no word found once near
    it): ``nx`` and ``ny`` index the words and signs of ``x`` and ``y`` past their shared start and end; from each
    end, past the first unequal ones, the run of equal ones aligned in lockstep is read, and each two neighbours in
    it with other spaces or line breaks between them on each side (present or absent, a line break or a space) are
    a changed part. Linear; a space beside the visible edit itself is left to it, as token by token."""
    spans: list[tuple[str, str]] = []
    n = min(len(nx), len(ny))
    for order in (range(n), range(-1, -n - 1, -1)):
        prev: tuple[int, int] | None = None
        started = False
        for k in order:
            i, j = nx[k], ny[k]
            if x[i] != y[j]:
                if started:
                    break
                continue
            started = True
            if prev is not None:
                (i0, j0), (i1, j1) = sorted((prev, (i, j)))
                if x[i0 + 1:i1] != y[j0 + 1:j1]:
                    spans.append(("".join(x[i0:i1 + 1]), "".join(y[j0:j1 + 1])))
            prev = (i, j)
    return spans


def _changed_spans(a: str, b: str) -> list[tuple[str, str]]:
    """Each changed part of ``a`` beside what replaces it in ``b``: lines compared first, then the words, spaces and
    signs of each changed block of lines."""
    la, lb = a.split("\n"), b.split("\n")
    spans: list[tuple[str, str]] = []
    budget = _SPAN_BUDGET
    for op, i1, i2, j1, j2 in SequenceMatcher(None, la, lb).get_opcodes():
        if op in ("insert", "delete"):  # whole lines, with their line breaks
            spans.append(("".join("\n" + x for x in la[i1:i2]), "".join("\n" + y for y in lb[j1:j2])))
        elif op == "replace":
            ta, tb = _TOKEN.findall("\n".join(la[i1:i2])), _TOKEN.findall("\n".join(lb[j1:j2]))
            if len(ta) + len(tb) > budget:
                spans += _anchored_spans(ta, tb)
                if i2 - i1 == j2 - j1:  # and line by line, where a word's anchors are the line's own
                    for x, y in zip(la[i1:i2], lb[j1:j2], strict=True):
                        if x != y:
                            spans += _anchored_spans(_TOKEN.findall(x), _TOKEN.findall(y))
                continue
            budget -= len(ta) + len(tb)
            # a space matches only beside a matched word, not one far off (so "a b" -> "a  b c" is " " -> "  ")
            for o, p1, p2, q1, q2 in SequenceMatcher(str.isspace, ta, tb, autojunk=False).get_opcodes():
                if o != "equal":
                    spans.append(("".join(ta[p1:p2]), "".join(tb[q1:q2])))
    return spans


def _passes_for_ascii(ch: str, word: str) -> bool:
    """Whether ``ch``, shown as itself, reads as an ASCII letter or sign: an accented Latin letter (its base), or
    a CJK or kana letter the skeleton reads as one inside a word with ASCII letters or digits ("pypの", not
    "日本語の")."""
    if ch.isascii() or not _shown_as_itself(ch):
        return False
    if unicodedata.normalize("NFD", ch)[0].isascii():
        return True
    read = skeleton(ch)[0]
    return read.isascii() and read.strip() != "" and any(c.isascii() and c.isalnum() for c in word)


def _lookalikes(spans: list[tuple[str, str]]) -> list[str]:
    found: dict[str, None] = {}
    for x, y in spans:
        for word in _TOKEN.findall(x + " " + y):
            found.update((ch, None) for ch in word if _passes_for_ascii(ch, word))
    return list(found)


def _reads_alike(x: str, y: str) -> bool:
    """Whether a changed part reads like what it replaces (spaces, line breaks, accents or look-alike letters only;
    not a change of case alone, which is visible)."""
    return x.lower() != y.lower() and "".join(skeleton(x)[0].split()) == "".join(skeleton(y)[0].split())


def lookalike_warning(field: str, now: Any, proposed: Any) -> str | None:
    """A warning when the two values differ in a character shown as its code point (one that passes for another,
    a right-to-left or invisible one: the characters shown as code points are not the same, in the same order, in
    both), or would read the same (they differ only in line breaks, spaces, accents or look-alike letters; a change
    of case alone is visible and not warned about), or when any changed part, whatever else changed, reads like
    what it replaces or holds a letter shown as itself that reads as an ASCII one (an accented "ị" in "pypị.org";
    review 32: a visible change beside it silenced the warning); else None. Said whether or not the changed
    characters are marked under the lines.

    >>> lookalike_warning("content", "pypi.org", "\\u0440\\u0443pi.org") is not None
    True
    >>> lookalike_warning("content", "a\\nb", "a b") is not None, lookalike_warning("content", "Make", "make")
    (True, None)
    >>> lookalike_warning("content", "https://pypi.org x", "https\\u2236//pypi.org y") is not None
    True
    >>> print(lookalike_warning("content", "pypi.org incident", "pyp\\u1ecb.org incidents"))
    ⚠ content: a changed part holds letters shown as themselves that read as ASCII ones: <U+1ECB> (ị, read as i); \
read them in the - / + lines
    """
    a, b = _text(now), _text(proposed)
    if a == b:
        return None
    if a.lower() != b.lower() and _read(a) == _read(b):
        return (f"⚠ {field}: the proposed value reads like the current one but is not: it differs only in line "
                "breaks, spaces, accents, letters that look alike or invisible characters (see the - / + lines and "
                "the code points)")
    if _coded_chars(a) != _coded_chars(b):
        return (f"⚠ {field}: the change is in characters shown as code points (<U+...>: a character that passes "
                "for another, runs right to left or is invisible), not only in what reads as shown: read them in the "
                "- / + lines")
    spans = _changed_spans(a, b)
    if chars := _lookalikes(spans):
        named = ", ".join(f"{code_point(c)} ({c}, read as {unicodedata.normalize('NFD', c)[0]})"
                          if unicodedata.normalize("NFD", c)[0].isascii() else f"{code_point(c)} ({c})" for c in chars)
        return (f"⚠ {field}: a changed part holds letters shown as themselves that read as ASCII ones: {named}; "
                "read them in the - / + lines")
    alike = [(x, y) for x, y in spans if _reads_alike(x, y)]
    if alike:
        named = ", ".join(code_point(c) for c in dict.fromkeys(c for x, y in alike for c in x + y if not c.isascii()))
        return (f"⚠ {field}: beside the visible change, a changed part reads like what it replaces (line breaks, "
                f"spaces, accents or look-alike letters only{': ' + named if named else ''}): read the - / + lines")
    return None


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
