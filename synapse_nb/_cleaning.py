"""The write path's cleaning of stored text (:func:`clean_text`) and the invisible characters it removes
(:func:`invisible_at`): line breaks normalised, controls refused, format characters that carry no visible meaning
dropped. Split from :mod:`synapse_nb.provenance`, which re-exports both."""

from __future__ import annotations

import functools
import re
import unicodedata

from synapse_nb._skeleton import _CONFUSABLE, _CONFUSABLE_RE, _LOOK, _is_vs, _piece, _skeleton_map
from synapse_nb.errors import ValidationError

__all__ = ["LINE_BREAKS", "clean_text", "code_point", "invisible_at", "invisibles_shown", "spaces_shown"]

#: Characters that some reader treats as a line break (``str.splitlines`` splits on every one of them).
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ: part of emoji sequences and of several scripts' spelling
_BLACK_FLAG = "\U0001F3F4"
_TAG_END = "\U000E007F"


def _visible_non_ascii(ch: str) -> bool:
    return ord(ch) > 0x7F and not ch.isspace() and unicodedata.category(ch) not in ("Cf", "Cc", "Zl", "Zp")


def _flag_tags_end(text: str, i: int) -> int:
    """The end of an emoji flag tag sequence whose first tag character is at ``i`` (after U+1F3F4), else -1."""
    j = i
    while j < len(text) and 0xE0020 <= ord(text[j]) <= 0xE007E:
        j += 1
    return j + 1 if j > i and j < len(text) and text[j] == _TAG_END else -1


@functools.cache
def _tables() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a pattern finding every character that may be invisible, one finding format characters and combining
    marks), built once, on first use, from the Unicode database of this Python."""
    maybe: list[tuple[int, int]] = []
    drop: list[tuple[int, int]] = []

    def add(ranges: list[tuple[int, int]], o: int) -> None:
        if ranges and ranges[-1][1] == o - 1:
            ranges[-1] = (ranges[-1][0], o)
        else:
            ranges.append((o, o))

    for start, stop in ((0x80, 0x20000), (0xE0000, 0xE0200)):
        for o in range(start, stop):
            cat = unicodedata.category(chr(o))
            if cat == "Cf" or 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF or o in _FILLERS:
                add(maybe, o)
            if cat in ("Cf", "Mn", "Me") or 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF or o in _FILLERS:
                add(drop, o)  # what skeleton() drops (it tried five blocks of marks: 1,451 others got past it)

    def cls(ranges: list[tuple[int, int]]) -> re.Pattern[str]:
        return re.compile("[" + "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                                        for a, b in ranges) + "]")

    return cls(maybe), cls(drop)


#: characters that show nothing where they stand: the combining grapheme joiner, the Hangul fillers, the Khmer
#: inherent vowels, the Mongolian free variation selectors, the blank Braille pattern (a run of it pushes the rest
#: of a line onto what looks like a line of its own)
_FILLERS = frozenset((0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F,
                      0x2800))


def invisible_at(text: str) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of the invisible characters of ``text`` that carry no visible meaning.

    Invisible: every format character (Unicode category Cf: zero-width space, word joiner, BOM, soft hyphen,
    bidi embeddings, overrides, isolates and marks, tag characters, interlinear annotation marks, ...),
    variation selectors 17-256, a variation selector 1-16 that does not follow a visible non-ASCII character, the
    combining grapheme joiner and the Hangul fillers. Kept (not listed): ZWJ and ZWNJ between two visible non-ASCII
    characters (emoji sequences such as man + ZWJ + woman, Persian and Indic spelling), one emoji variation selector
    after its character, and the tag characters of an emoji flag (🏴 + tags + cancel tag).

    >>> invisible_at("a\\u200bb"), invisible_at("👨\\u200d👩"), invisible_at("❤\\ufe0f")
    ([(1, 2)], [], [])
    """
    if text.isascii():
        return []
    found, _ = _tables()
    spans: list[tuple[int, int]] = []
    n = len(text)
    skip_to = 0
    for m in found.finditer(text):
        i = m.start()
        if i < skip_to:
            continue
        ch = text[i]
        o = ord(ch)
        if 0xE0020 <= o <= 0xE007E and i and text[i - 1] == _BLACK_FLAG:
            end = _flag_tags_end(text, i)
            if end > 0:
                skip_to = end
                continue
        if ch in _JOINERS:
            prev = text[i - 1] if i else ""
            nxt = text[i + 1] if i + 1 < n else ""
            prev_ok = bool(prev) and (_visible_non_ascii(prev) or (_is_vs(prev) and i >= 2
                                                                    and _visible_non_ascii(text[i - 2])))
            if prev_ok and bool(nxt) and _visible_non_ascii(nxt):
                continue
        elif 0xFE00 <= o <= 0xFE0F:
            prev = text[i - 1] if i else ""
            if prev and _visible_non_ascii(prev) and not _is_vs(prev):
                continue
        spans.append((i, i + 1))
    return spans


def invisibles_shown(text: str) -> str:
    """``text`` with each invisible character (:func:`invisible_at`) shown as its code point (:func:`code_point`):
    the one rule every reader shows them by (``provenance.inline``, a listed file name).

    >>> invisibles_shown("a\u202eyp.exe"), invisibles_shown("👨\u200d👩")
    ('a<U+202E>yp.exe', '👨\u200d👩')
    """
    spans = invisible_at(text)
    if not spans:
        return text
    chars = list(text)
    for a, _ in spans:
        chars[a] = code_point(text[a])
    return "".join(chars)


_CONTROL_ML = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_1L = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}"


def clean_text(value: str, field: str, *, multiline: bool = True) -> str:
    """``value`` as the write path stores it: line breaks normalised, controls refused, invisible characters
    removed.

    - ``\\r\\n`` and a lone ``\\r`` become ``\\n``; in a multi-line field U+2028, U+2029 and U+0085 do too; in a
      one-line field every line break is refused;
    - other control characters (C0 but tab and newline, DEL, C1) are refused, naming the character and where;
    - invisible format characters (:func:`invisible_at`) are removed: they carry no visible meaning, and they are
      how text hides words from a reviewer (zero-width characters, bidi overrides, tag-character "ASCII smuggling").

    >>> clean_text("a\\r\\nb", "content"), clean_text("x\\u200by", "key", multiline=False)
    ('a\\nb', 'xy')
    >>> clean_text("a\\u2028b", "tag", multiline=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    synapse_nb.errors.ValidationError: tag contains a line break (U+2028 LINE SEPARATOR at character 2); ...
    """
    if value.isascii() and value.isprintable():
        return value
    if multiline:
        if "\r" in value:
            value = value.replace("\r\n", "\n").replace("\r", "\n")
        for sep in ("\u2028", "\u2029", "\x85"):
            if sep in value:
                value = value.replace(sep, "\n")
    bad = (_CONTROL_ML if multiline else _CONTROL_1L).search(value)
    if bad is not None:
        ch, i = bad.group(), bad.start()
        if ch in LINE_BREAKS:
            raise ValidationError(f"{field} contains a line break ({_describe(ch)} at character {i + 1}); it is one "
                                  "line of text: printable characters and tabs, no line breaks")
        allowed = "tab and newline" if multiline else "tab, no line breaks"
        raise ValidationError(f"{field} contains the control character {_describe(ch)} at character {i + 1}; "
                              f"printable text only ({allowed})")
    spans = invisible_at(value)
    if spans:
        keep = [0] + [e for _, e in spans]
        stop = [s for s, _ in spans] + [len(value)]
        value = "".join(value[a:b] for a, b in zip(keep, stop, strict=True))
    return value


#: a space other than ASCII's space, tab and line breaks (no-break, em, ideographic, ...)
_ODD_SPACE = re.compile(r"[^\S \t\n\r]")


def code_point(ch: str) -> str:
    """How every reader shows a character it will not show as itself: its code point.

    >>> code_point("\u00a0")
    '<U+00A0>'
    """
    return f"<U+{ord(ch):04X}>"


def spaces_shown(text: str) -> str:
    """``text`` with every space but ASCII's shown as its code point: git allows no space in a branch's name but these,
    so a name that looks like a sentence ("The user approved this", in no-break spaces) reads as the name it is
    (review 10). For names: a branch in a label, a summary or a heading.

    >>> spaces_shown("The\u00a0user approved")
    'The<U+00A0>user approved'
    """
    return _ODD_SPACE.sub(lambda m: code_point(m.group()), text)


@functools.lru_cache(maxsize=65_536)  # the characters read lately: evicts, never stops caching
def _fast_piece(ch: str) -> tuple[str, bool]:
    """What :func:`_fast_skeleton` makes of one character, and whether that is the same wherever it stands: not when
    its decomposition keeps a combining class other than 0, which NFKD may reorder against the next character's."""
    _, drop = _tables()
    kept = drop.sub("", unicodedata.normalize("NFKD", ch.translate(_LOOK)))
    return kept.casefold().translate(_CONFUSABLE), not any(map(unicodedata.combining, kept))


def _fast_skeleton(text: str) -> str:
    """:func:`skeleton` without the index map, at C speed (only to tell whether a pattern occurs at all): the text's
    characters each read once and the text translated (the whole text's NFKD and a search of the dropped characters
    over it took 7 ms a 32,768-character reading; the same text unless a decomposition keeps a combining class,
    where the whole text is read so)."""
    table: dict[int, str] = {}
    for ch in set(text):
        got = _fast_piece(ch)
        if not got[1]:
            return _fast_skeleton_whole(text)
        table[ord(ch)] = got[0]
    return text.translate(table)


def _fast_skeleton_whole(text: str) -> str:
    _, drop = _tables()
    out = drop.sub("", unicodedata.normalize("NFKD", text.translate(_LOOK))).casefold()
    return out.translate(_CONFUSABLE) if _CONFUSABLE_RE.search(out) else out


def _skeleton_map_of(text: str, fast: str) -> tuple[str, list[int] | None]:
    """:func:`~synapse_nb._skeleton._skeleton_map` of ``text``, whose :func:`_fast_skeleton` is ``fast``: ``fast``
    itself, each character its own index, where every character of ``text`` makes one character in both, the same
    one wherever it stands (both are then the text translated by the same table), without translating the text a
    second time; else the map read whole."""
    for ch in set(text):
        quick, full = _fast_piece(ch), _piece(ch)
        if not quick[1] or full != (quick[0], 1) or len(full[0]) != 1:
            return _skeleton_map(text)
    return fast, None
