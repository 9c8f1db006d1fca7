"""Generate ``synapse_nb/_lookalikes.py``: the letters Unicode lists as confusable with one Latin letter, the Latin
small capitals and the Latin letters with a hook, stroke or tail, that the provenance skeleton (NFKD, case folding,
its own short table) does not already read as that letter; and the characters the regex engine takes for letters
(``\\w``) that read as no letter (``SEPARATORS``: the skeleton reads each as one separator).

With them, by their Unicode names, the Latin letters drawn negative circled, negative squared, parenthesized or as
regional indicators, the few letters listed in ``_BY_EYE``, and the letters of other scripts "fancy text" writes
Latin with, by shape (``_SHAPES``: Greek capitals, faux Cyrillic, CJK, Japanese and Ethiopic styles).

Source: Unicode's confusables.txt (UTS #39, Unicode Security Mechanisms), as packaged in the
``confusable_homoglyphs`` wheel (``confusables.json``). Run it from a development environment that has that
package (``pip install confusable_homoglyphs``); the generated table is committed, so nothing reads the network or
needs the package at run time:

    python tools/lookalikes.py > /tmp/lookalikes.py && mv /tmp/lookalikes.py synapse_nb/_lookalikes.py
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import synapse_nb._skeleton as _skeleton
from synapse_nb._patterns import _ONE_LETTER_WORD
from synapse_nb._skeleton import _CONFUSABLE, _READINGS, skeleton

_skeleton._LOOK = {}  # what the skeleton reads without the table it makes

_SAME = ({"i", "l"},)  # letters the patterns already accept for each other
#: "... LATIN CAPITAL LETTER X", "... LATIN SMALL LETTER X", "... SYMBOL LETTER X": the name says which letter it is
_DRAWN = re.compile(r"(?:LATIN (?:CAPITAL |SMALL )?|SYMBOL )LETTER ([A-Z])$")
#: Letters confusables.txt (as packaged) does not list, read as a Latin letter in common fonts: checked by eye, one
#: by one. Cherokee QUA "Ꮖ" (a capital I; the threat model named it as a known miss), and the rest of the Canadian
#: syllabics "fancy text" generators write Latin with ("ᗩᑭᑭᖇOᐯEᗪ": confusables.txt has ᑭ, ᖇ, ᐯ, ᗪ, not these).
_BY_EYE = {"\u13c6": "i", "\u15e9": "a", "\u1455": "c", "\u15f4": "e", "\u161c": "g", "\u14f0": "i",
           "\u144e": "n", "\u146b": "q", "\u1515": "s", "\u15ef": "w", "\u1614": "z"}


#: Letters of other scripts that "fancy text" generators and hand-made disguises write Latin letters with, by shape
#: (not what Unicode lists as confusable: a person reads "ΛPPRΘVΣD" as "APPROVED", Greek prose never spells it).
#: They change only the skeleton a pattern reads, which matches whole phrases and marks: Greek, Russian, Chinese,
#: Japanese or Amharic prose spells none (``tests/test_provenance.py``, ``benchmarks/neutraliser_reach.py``).
#: An entry here wins over confusables.txt (Greek capital "Σ" is an "E" in such text, not the "o" of its small form).
_SHAPES = {
    # Greek capitals used for their shape alone ("ΛPPRΘVΣD": the letters that may be read two ways, "Σ" an E or an
    # S, "Λ" an A or an L, are read both ways by the patterns instead: _skeleton._READINGS), and the "Greek" style of
    # fancy-text generators ("αв¢∂єƒgнιנкℓмησρqяѕтυνωχуz")
    "Θ": "o", "θ": "o", "ϑ": "o", "Ꮎ": "o", "¢": "c", "∂": "d", "נ": "j", "ω": "w", "ς": "c",
    # Cyrillic letters faux-Cyrillic writes Latin with ("ДPPЯӨVΣD", "ЦSΣЯ", "ИOW")
    "Я": "r", "я": "r", "Ц": "u", "ц": "u", "Ш": "w", "ш": "w", "Щ": "w", "щ": "w", "Ѳ": "o", "ѳ": "o",
    "Ө": "o", "ө": "o", "Э": "e", "э": "e", "Є": "e", "є": "e", "Б": "b", "б": "b", "Ч": "y", "ч": "y", "Ѵ": "v",
    "Ѷ": "v", "ғ": "f", "Ғ": "f",
    # CJK strokes and radicals of the "Chinese" style ("卂卩卩尺ㄖᐯ乇ᗪ", "匚尺丨ㄒ丨匚卂ㄥ")
    "卂": "a", "乃": "b", "匚": "c", "乇": "e", "千": "f", "卄": "h", "丨": "i", "ﾌ": "j", "Ҝ": "k", "ㄥ": "l",
    "爪": "m", "几": "n", "ㄖ": "o", "卩": "p", "Ɋ": "q", "尺": "r", "丂": "s", "ㄒ": "t", "ㄩ": "u", "山": "w",
    "乂": "x", "ㄚ": "y", "乙": "z",
    # the "Japanese" style (half-width katakana only where they are the style's own: full-width ones are prose)
    "ﾑ": "a", "ᄃ": "c", "り": "d", "ｷ": "f", "ム": "g", "ん": "h", "ﾉ": "i", "ズ": "k", "ﾚ": "l", "ﾶ": "m", "刀": "n",
    "の": "o", "ｱ": "p", "ゐ": "q", "ら": "s", "ｲ": "t", "ひ": "u", "√": "v", "ﾒ": "x", "ﾘ": "y",
    # the "Ethiopic" style ("ልየየዪዐሀቿዕ")
    "ል": "a", "ጌ": "b", "ር": "c", "ዕ": "d", "ቿ": "e", "ቻ": "f", "ኗ": "g", "ዘ": "h", "ጎ": "i", "ጋ": "j", "ጕ": "k",
    "ረ": "l", "ጠ": "m", "ክ": "n", "ዐ": "o", "የ": "p", "ዒ": "q", "ዪ": "r", "ነ": "s", "ፕ": "t", "ሁ": "u", "ሀ": "v",
    "ሠ": "w", "ሸ": "x", "ሃ": "y", "ጊ": "z",
    # the "mirrored" style's reversed capitals ("ᗡƎVOЯԀԀA" read backwards; Я above), and upside-down letters that
    # have no other reading ("ɐ", "ǝ", "ɹ": the reversed reading of such text is read apart, provenance.py)
    "ᗡ": "d", "Ǝ": "e", "ǝ": "e", "Ԁ": "p", "ꟻ": "f", "ᴎ": "n", "ᴙ": "r", "ɐ": "a", "ɹ": "r", "ʇ": "t", "ʌ": "v",
    "ʍ": "w", "ʎ": "y", "ɥ": "h", "ʞ": "k", "ɟ": "f", "ᴉ": "i", "∀": "a", "⅄": "y", "Ɐ": "a", "Ʌ": "v",
}


#: A Latin letter named as another one turned half a turn ("ɐ" LATIN SMALL LETTER TURNED A, "⅁" TURNED SANS-SERIF
#: CAPITAL G): upside-down text writes that letter with it, and upright text passes it for the letter (review 88 F4).
#: Not a turned M or W: upright, each is drawn as the other ("ɯ").
_TURNED = re.compile(r"^(?:LATIN (?:CAPITAL |SMALL )?LETTER (?:SMALL CAPITAL )?|MODIFIER LETTER SMALL |LATIN LETTER "
                     r"SMALL CAPITAL )?TURNED (?:SANS-SERIF )?(?:CAPITAL |SMALL )?([A-LN-VX-Z])$")
#: The same, a capital: what the letters of another script drawn as a turned Latin capital are confusable with
#: ("ꓯ" LISU LETTER AE with "Ɐ", "ꓨ" with "⅁"). Not a turned V either: "Ʌ" is drawn as "Λ", which the patterns
#: read as an A or an L (``_skeleton._READINGS``).
_TURNED_CAPITAL = re.compile(r"^(?:LATIN CAPITAL LETTER |)TURNED (?:SANS-SERIF )?(?:CAPITAL )?([A-LN-UX-Z])$")


def _confusables() -> dict[str, list[dict[str, str]]]:
    data: dict[str, list[dict[str, str]]] = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    return data


def _turned(ch: str, pattern: re.Pattern[str] = _TURNED) -> str:
    """The Latin letter ``ch``'s name says it is turned (lower case), else ""."""
    m = pattern.search(unicodedata.name(ch, ""))
    return m.group(1).lower() if m else ""


def table() -> dict[str, str]:
    data = _confusables()
    out: dict[str, str] = {}
    for ch, entries in sorted(data.items()):
        if len(ch) != 1 or ch.isascii() or ord(ch) in _CONFUSABLE:
            continue
        targets = {e["c"].lower() for e in entries if len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalpha()}
        if not targets and unicodedata.category(ch).startswith("L") and skeleton(ch)[0] not in _READINGS:
            # a letter confusable only with a turned Latin capital ("ꓯ" LISU LETTER AE, drawn "Ɐ"): read as the
            # letter turned, as the turned letters themselves are (review 88 F4: "CRITICAL: ꓯDHERE" passed)
            targets = {_turned(e["c"], _TURNED_CAPITAL) or "?" for e in entries if len(e["c"]) == 1}
            if "?" in targets or len(targets) != len(entries):
                targets = set()
        if len(targets) != 1:
            continue
        (target,) = targets
        now = skeleton(ch)[0]
        if now == target or any({now, target} <= group for group in _SAME):
            continue
        plain = "".join(c for c in unicodedata.normalize("NFKD", ch) if unicodedata.category(c) not in ("Mn", "Me"))
        if plain.isascii() and plain:  # a compatibility form of that letter ("ſ" is an s): Unicode's own reading wins
            continue
        out[ch] = target
    # small capitals ("ᴀᴘᴘʀᴏᴠᴇᴅ") and Latin letters with a hook, stroke or tail that NFKD keeps whole ("ƒ", "ɗ"):
    # read as the letter by a person and a model, listed by confusables.txt only for a few
    small_caps = ("LATIN LETTER SMALL CAPITAL ", "MODIFIER LETTER SMALL CAPITAL ", "LATIN SMALL CAPITAL LETTER ")
    for o in range(0x80, 0x20000):
        name = unicodedata.name(chr(o), "")
        letter = ""
        for prefix in small_caps:
            if name.startswith(prefix) and len(name) == len(prefix) + 1:
                letter = name[-1]
        for prefix in ("LATIN SMALL LETTER ", "LATIN CAPITAL LETTER "):
            base, sep, _ = name.removeprefix(prefix).partition(" WITH ")
            if name.startswith(prefix) and sep and len(base) == 1:
                letter = base
            # a bar or another form of the letter its name gives ("Ʉ" LATIN CAPITAL LETTER U BAR, "ꝛ" R ROTUNDA)
            base, sep, form = name.removeprefix(prefix).partition(" ")
            if name.startswith(prefix) and len(base) == 1 and form in ("BAR", "ROTUNDA"):
                letter = base
        # a Latin letter drawn in a shape Unicode keeps whole (NFKD reads no letter, or reads the parentheses
        # around it): "🅰" negative squared, "🅐" negative circled, "🇦" a regional indicator (a model reads the
        # letter), "⒜" parenthesized (read "(a)", each letter then stood apart)
        drawn = _DRAWN.search(name)
        if drawn and unicodedata.category(chr(o)) not in ("Mn", "Me", "Mc", "Cf"):
            letter = drawn.group(1)
        if letter.isalpha() and skeleton(chr(o))[0] != letter.lower():
            out.setdefault(chr(o), letter.lower())
    for ch, letter in _BY_EYE.items():
        out.setdefault(ch, letter)
    # the Latin letters named turned that neither confusables.txt nor _SHAPES reads otherwise ("ᵄ", "Ɐ")
    for o in range(0x80, 0x20000):
        letter = _turned(chr(o))
        if letter and unicodedata.category(chr(o)).startswith("L") and skeleton(chr(o))[0] != letter:
            out.setdefault(chr(o), letter)
    for ch, letter in _SHAPES.items():
        if skeleton(ch)[0] != letter:
            out[ch] = letter
    return dict(sorted(out.items()))


def _no_letter(reading: str) -> bool:
    """Whether a character's reading holds no letter or digit but modifier letters."""
    return not any(unicodedata.category(c)[0] in "LN" and unicodedata.category(c) != "Lm" for c in reading)


def separators(letters: dict[str, str]) -> str:
    """The characters the regex engine takes for letters (``\\w``: categories Lm and Lo) that read as no letter
    (review 88 F1: "CRITICALː ADHERE", "CˑRˑIˑTˑIˑCˑAˑL" passed, ː and ˑ being letters to ``\\w``): every modifier
    letter (Lm) whose reading (NFKD, the table) holds no other letter ("ː" a length mark, "ˈ" a stress mark, "ʼ"
    an apostrophe, "ꓸ" a tone mark drawn as a full stop, "ー", "々"; not "ʰ", read "h"), and every other letter
    Unicode lists as confusable with punctuation alone ("ǃ" with "!", "ʔ" with "?"; not a letter of a script whose
    one letter is a word, ``_patterns._ONE_LETTER_WORD``). The letters drawn as a mark's dot
    (``_skeleton._MARK_DOTS``) are read as that dot instead. Only the English patterns read them as separators: a
    mark of any language reads them as part of its words, as before (``_patterns._LETTER``)."""
    data = _confusables()
    out = []
    for o in range(0x80, 0x30000):
        ch = chr(o)
        cat = unicodedata.category(ch)
        if cat not in ("Lm", "Lo") or ch in letters or ch in _skeleton._MARK_DOTS or not re.match(r"\w", ch):
            continue
        if cat == "Lm":
            if _no_letter(skeleton(ch)[0]):
                out.append(ch)
            continue
        if re.match(_ONE_LETTER_WORD, ch):  # Han, kana, Hangul: one letter is a word ("ノ", "丶")
            continue
        protos = [e["c"] for e in data.get(ch, [])]
        if protos and all(unicodedata.category(c).startswith("P") for p in protos for c in p):
            out.append(ch)
    return "".join(out)


def main() -> None:
    t = table()
    seps = separators(t)
    src = "".join(t)
    dst = "".join(t.values())
    print('"""Letters that look like one Latin letter, for the provenance skeleton (generated by tools/lookalikes.py;')
    print("do not edit by hand).")
    print()
    print("Derived from Unicode's confusables.txt (UTS #39). Copyright © 1991-2024 Unicode, Inc. Unicode License v3:")
    print("https://www.unicode.org/license.txt. With them, the Latin small capitals, the Latin letters with a hook,")
    print("stroke or tail, and the Latin letters drawn negative circled, negative squared, parenthesized or as")
    print("regional indicators (by their Unicode names), a few letters checked by eye (tools/lookalikes.py:")
    print("_BY_EYE) and the letters of other scripts fancy text writes Latin with, by shape (_SHAPES). Only the")
    print('characters the skeleton did not already read as the same letter are listed; then the characters the')
    print("regex engine takes for letters that read as no letter (SEPARATORS: modifier letters with no letter")
    print('reading, other letters confusable with punctuation alone), each read as one separator."""')
    print()
    print()
    print(f"#: {len(t)} characters, each read as the letter at the same place of TARGET")
    for name, text in (("SOURCE", src), ("TARGET", dst)):
        print(f"{name} = (")
        for i in range(0, len(text), 40):
            print(f"    {text[i:i + 40]!r}")
        print(")")
    print("TABLE = str.maketrans(SOURCE, TARGET)")
    print()
    print(f"#: {len(seps)} characters, each read as one separator")
    print("SEPARATORS = (")
    for i in range(0, len(seps), 40):
        print(f"    {seps[i:i + 40]!r}")
    print(")")


if __name__ == "__main__":
    main()
