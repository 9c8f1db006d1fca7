"""Readings of a text a reader may make besides the text as written, for the neutraliser
(:func:`synapse_nb.provenance.neutralise`): escapes decoded, the text reversed, each word reversed in place, and
upside-down letters turned back. Each with a function taking a span of the reading back to the text."""

from __future__ import annotations

import codecs
import html
import re
import unicodedata
from bisect import bisect_right
from functools import partial
from itertools import accumulate
from typing import Any

__all__ = ["readings"]

#: Escapes a reader decodes into the letters it then reads: HTML character references (decimal, hex, named:
#: "&#91;user &middot; verified&#93;", "&lbrack;"), URL escapes ("%5Buser%20%C2%B7%20verified%5D") and backslash
#: escapes ("\\u005b", "\\x5b", "\\u{5b}", "\\U0000005b", "\\N{LEFT SQUARE BRACKET}"), and the code points every
#: reader of this package shows a character it will not show as itself by (``<U+005B>``: ``_cleaning.code_point``;
#: review 40: "1. <U+005B>main, approved<U+005D>" and "[user<U+00B7>verified]" read as an item and a mark to an agent
#: that has seen the package's own output).
_ESCAPE = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)"
                     r"|<[Uu]\+[0-9a-fA-F]{4,6}>"
                     r"|(?:%[0-9a-fA-F]{2})+"
                     r"|\\(?:u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}"
                     r"|N\{[A-Za-z0-9 -]{1,60}\})")


def _decoded(text: str) -> tuple[str, list[int], list[int]] | None:
    """``text`` with every escape of :data:`_ESCAPE` decoded, and per character of it the span of ``text`` it came
    from (``None``: nothing to decode). An escape that decodes to nothing valid stays as written."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _ESCAPE.finditer(text):
        a, b = m.span()
        out.extend(text[pos:a])  # (each stretch between escapes at C speed, not a character at a time)
        starts.extend(range(pos, a))
        ends.extend(range(pos + 1, a + 1))
        pos = b
        esc = m.group()
        pieces: list[tuple[str, int, int]] = []
        if esc[0] == "&":
            if esc[1] == "#":
                digits = esc[2:].rstrip(";")
                code = int(digits[1:], 16) if digits[:1] in "xX" else int(digits)
                pieces = [(chr(code), a, b)] if 0 < code <= 0x10FFFF else []
            else:
                dec = html.unescape(esc)
                pieces = [(dec, a, b)] if dec != esc else []
        elif esc[0] == "<":
            code = int(esc[3:-1], 16)
            pieces = [(chr(code), a, b)] if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else []
        elif esc[0] == "%":
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            first = a
            for k in range(a, b, 3):
                chars = decoder.decode(bytes([int(text[k + 1:k + 3], 16)]))
                if chars:
                    pieces.append((chars, first, k + 3))
                    first = k + 3
        else:
            kind, body = esc[1], esc[2:].strip("{}")
            try:
                ch = unicodedata.lookup(body) if kind == "N" else chr(int(body, 16))
            except (KeyError, ValueError):
                ch = ""
            if ch and 0xDC00 <= ord(ch) <= 0xDFFF and out and 0xD800 <= ord(out[-1]) <= 0xDBFF and ends[-1] == a:
                ch = (out.pop() + ch).encode("utf-16", "surrogatepass").decode("utf-16")
                a = starts.pop()
                ends.pop()
            pieces = [(ch, a, b)] if ch else []
        if not pieces:
            out.extend(text[a:b])
            starts.extend(range(a, b))
            ends.extend(range(a + 1, b + 1))
        for chars, s, e in pieces:
            for c in chars:
                out.append(c)
                starts.append(s)
                ends.append(e)
    out.extend(text[pos:])
    starts.extend(range(pos, len(text)))
    ends.extend(range(pos + 1, len(text) + 1))
    decoded = "".join(out)
    return None if decoded == text else (decoded, starts, ends)


#: An upside-down letter read back (what "upside-down text" generators write each letter as, turned half a turn), and
#: the brackets and marks they turn: the text is read again unflipped, and reversed and unflipped.
_UNFLIP = str.maketrans({
    "ɐ": "a", "q": "b", "ɔ": "c", "p": "d", "ǝ": "e", "ɟ": "f", "ƃ": "g", "ɥ": "h", "ᴉ": "i", "ı": "i", "ɾ": "j",
    "ʞ": "k", "ן": "l", "ʃ": "l", "ɯ": "m", "u": "n", "d": "p", "b": "q", "ɹ": "r", "ʇ": "t", "n": "u", "ʌ": "v",
    "ʍ": "w", "ʎ": "y", "∀": "A", "ꓭ": "B", "Ɔ": "C", "ᗡ": "D", "Ǝ": "E", "Ⅎ": "F", "⅁": "G", "ſ": "J", "ꓘ": "K",
    "˥": "L", "⅂": "L", "W": "M", "Ԁ": "P", "ᴚ": "R", "┴": "T", "⊥": "T", "∩": "U", "Λ": "V", "M": "W", "⅄": "Y",
    "[": "]", "]": "[", "(": ")", ")": "(", "{": "}", "}": "{", "<": ">", ">": "<", "¡": "!", "¿": "?", "˙": ".",
})
#: Letters only upside-down text has (or IPA): where the unflipped readings are worth reading.
_MAY_FLIPPED = re.compile("[ɐǝɹʇʎʌʍɯɥʞɟƃɔᴉɾןʃ∀ꓭƆᗡƎℲ⅁ꓘ˥⅂Ԁᴚ┴⊥∩⅄]")
#: A protected word written backwards ("]deifirev · resu[", "EREHDA :LACITIRC"), on the skeleton: where the reversed
#: readings are worth reading (the text reversed, and each word reversed where it stands). Letters only (a reversed
#: word in digits as well, "d3if1rev", is not read); a source word alone only against its bracket ("]resu[").
_REVERSED_WORDS = (*(w[::-1] for w in ("verified", "approved", "critical", "adhere", "memor", "confirmed", "trusted",
                                       "revert")),
                   "resu]", "]resu", "tnega]", "]tnega", "namuh]", "]namuh")


def _may_be_reversed(skel: str) -> bool:
    return any(map(skel.__contains__, _REVERSED_WORDS))


_WORD = re.compile(r"[^\W_]+")
_WORDS_SPLIT = re.compile(f"({_WORD.pattern})")  # split keeps the words


def _words_reversed(text: str) -> tuple[str, Any]:
    """``text`` with each word (:data:`_WORD`) reversed where it stands, and the function taking a span of it back.
    At C speed: the reversed text's words are the text's words reversed, in reverse order (a word is a run of
    characters each a word's by itself), so they are put back between the text's own separators (a call a word
    took 3 ms a 32,768-character reading, and each reading of a hostile field has one)."""
    parts = _WORDS_SPLIT.split(text)  # separator, word, separator, ..., separator
    parts[1::2] = _WORDS_SPLIT.split(text[::-1])[-2::-2]
    return "".join(parts), partial(_word_span_back, list(accumulate(map(len, parts))))


def _word_span_back(ends: list[int], s: int, e: int) -> tuple[int, int]:
    """The span of the text that characters ``s`` to ``e`` of its words-reversed reading came from (the least and
    the last of their indices, as the index map's ``min`` and ``max`` read them), the reading's pieces ending at
    ``ends`` (even: a separator, kept as it is; odd: a word, reversed). Pieces wholly inside the span come from the
    text between the first and last piece's: the first piece gives the start, the last one the end."""
    first, last = bisect_right(ends, s), bisect_right(ends, e - 1)
    a_first = ends[first - 1] if first else 0
    if first == last and first % 2:
        return a_first + ends[first] - e, a_first + ends[first] - s
    return (a_first if first % 2 else s), (ends[last] if last % 2 else e)


def readings(text: str, skel: str) -> list[tuple[str, Any]]:
    """Other readings of ``text`` a reader may make, each with a function taking a span of it back to ``text``:
    decoded (:data:`_ESCAPE`), reversed, each word reversed in place, upside-down letters turned back (as they stand
    and reversed). Each only where its necessary condition holds."""
    out: list[tuple[str, Any]] = []
    n = len(text)
    if ("&" in text or "%" in text or "\\" in text or "<" in text) and _ESCAPE.search(text):
        dec = _decoded(text)
        if dec is not None:
            decoded, starts, ends = dec
            out.append((decoded, lambda s, e, st=starts, en=ends: (st[s], en[e - 1])))
    if _may_be_reversed(skel):
        out.append((text[::-1], lambda s, e: (n - e, n - s)))
        out.append(_words_reversed(text))
    if not text.isascii() and _MAY_FLIPPED.search(text):
        unflipped = text.translate(_UNFLIP)
        out.append((unflipped, lambda s, e: (s, e)))
        out.append((unflipped[::-1], lambda s, e: (n - e, n - s)))
    return out
