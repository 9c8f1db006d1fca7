"""The form of record text the neutraliser's patterns read (:func:`skeleton`, :func:`_joined`), and the word patterns
they are built from (:func:`_words`): what :mod:`synapse_nb.provenance` reads a forged banner, label or mark in.
Standard library only; the look-alike table is generated (``tools/lookalikes.py``)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from itertools import chain, pairwise

from synapse_nb._lookalikes import SEPARATORS as _NO_LETTERS
from synapse_nb._lookalikes import TABLE as _LOOKALIKES


def _is_vs(ch: str) -> bool:
    o = ord(ch)
    return 0xFE00 <= o <= 0xFE0F or 0xE0100 <= o <= 0xE01EF


# letters that look like Latin ones (Cyrillic, Greek, Armenian, ...) -> the Latin letter, lower case
_CONFUSABLE = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
    "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l", "к": "k", "м": "m", "н": "h", "т": "t", "в": "b", "ո": "n", "ս": "u",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "γ": "y", "η": "n", "μ": "u", "ѵ": "v", "ɑ": "a", "ɡ": "g", "ı": "i", "ȷ": "j", "ℓ": "l", "∨": "v",
})
# digits and signs that pass for letters: the patterns accept them in place of the letter
_ASCII_LOOKALIKE = {"o": "0", "l": "1|i!", "i": "1|l!", "e": "3", "a": "4@", "s": "5$", "t": "7", "b": "8", "g": "9"}
#: Letters of other scripts that disguised text writes for one of two Latin letters, as the skeleton has them (after
#: case folding): Greek "Σ" an E by its shape ("ΛPPRΘVΣD") or an S by its sound ("ΣΥΣΤΕΜ"), "Λ" an A or an L, Cyrillic
#: "Д" an A or a D, "И" an N, "П" and "Л" an N (or the P and L they stand for). The patterns accept each in place of
#: either letter (one skeleton letter cannot be both); the generated table maps the letters with one reading.
_READINGS = {"σ": "es", "λ": "al", "δ": "ad", "π": "np", "φ": "of", "ξ": "ex", "д": "ad", "и": "nu", "й": "nu",
             "п": "np", "л": "an"}
_SHAPE_OF = {c: "".join(k for k, v in _READINGS.items() if c in v) for c in "abcdefghijklmnopqrstuvwxyz"}
_CONFUSABLE_RE = re.compile("[" + re.escape("".join(chr(o) for o in _CONFUSABLE if o > 0x7F)) + "]")
#: Visible characters whose compatibility decomposition is combining marks alone (the half-width katakana sound
#: marks "ﾞ" and "ﾟ"; ``tests/test_provenance.py`` checks every code point): dropped with the marks, they glued the
#: words around them together, so "deployﾟC R I T I C A L" started no spaced-out word (review 44). A reader sees a
#: break there: they read as a space.
GLUE = "\uff9e\uff9f"
#: The dots a mark joins its words with ("user · verified") and the ones that pass for it: punctuation, operators and
#: letters drawn as a middle dot (review 80 F4: "ꞏ" U+A78F, a Latin letter, passed "[user ꞏ verified]" as written),
#: the raised dot "⸳" and the Aegean word separator "𐄁".
_MARK_DOTS = "·•∙⋅‧・⸱᛫⦁◦\u0387\ua78f\u1427\u18df\u119e\u318d\u2e33\U00010101"
#: What the skeleton reads a character that the regex engine takes for a letter (``\\w``) but that reads as no letter
#: as (``_lookalikes.SEPARATORS``, generated: modifier letters with no letter reading such as "ː", "ˑ", "ˈ", "ʼ",
#: "ꓸ", "ߺ", and letters Unicode lists as confusable with punctuation alone such as "ǃ"): one separator, a control
#: character no text the patterns read holds (inline reads control characters as spaces), not whitespace (a space
#: is prose's own break: :data:`_WORD_PIECES`) and no mark's dot. As letters they joined the words around them for
#: every pattern: "CRITICALː ADHERE", "CˑRˑIˑTˑIˑCˑAˑL", "[user ː verified]" passed as written (review 88 F1). A
#: mark of any language reads it as part of its words, as it read these letters before (``_patterns._LETTER``).
SEPARATOR = "\x1a"
#: Read before anything else: the letters Unicode lists as confusable with one Latin letter and the small capitals,
#: where decomposing and case folding read another letter or none (Greek capital "Μ" folded to "μ", read "u"; "ᴠ",
#: "օ" unread: ``synapse_nb/_lookalikes.py``, generated from Unicode's confusables.txt), the dashes a tag name may
#: be spelt with ("system‐reminder" with U+2010) and the angle brackets a tag may be written in ("‹/system>"); the
#: characters that read as no letter (:data:`SEPARATOR`), and the letters drawn as a mark's dot ("ꞏ", "ᐧ", "ㆍ": the
#: dot "·" they are drawn as, so that spaced-out letters joined by them are read as those joined by "·").
_LOOK: dict[int, str | int | None] = {
    **_LOOKALIKES, **dict.fromkeys(map(ord, _NO_LETTERS), SEPARATOR),
    **{ord(c): "\u00b7" for c in _MARK_DOTS if re.match(r"\w", c)},
    **{ord(c): "-" for c in "\u2010\u2011\u2012\u2013\u2043\u2212\ufe58\ufe63"},
    **{ord(c): "<" for c in "\u2039\u02c2\u1438\u3008\u27e8\u2329"},
    **{ord(c): ">" for c in "\u203a\u02c3\u1433\u3009\u27e9\u232a"},
    **{ord(c): "[" for c in "\u3014\u2045\u3018\u2997\u27e6\u2772"},  # 〔 ⁅ 〘 ⦗ ⟦ ❲: brackets of a label or mark
    **{ord(c): "]" for c in "\u3015\u2046\u3019\u2998\u27e7\u2773"},  # 〕 ⁆ 〙 ⦘ ⟧ ❳
    **{ord(c): " " for c in GLUE}}


@functools.lru_cache(maxsize=65_536)  # the characters read lately: evicts, never stops caching
def _piece(ch: str) -> tuple[str, int]:
    """What :func:`skeleton` makes of one character: its characters, and how many entries of the index map it adds
    (one for a character read as ASCII, whatever it became; one per character otherwise)."""
    if not ch.isascii():
        ch = ch.translate(_LOOK)
    if ch.isascii():
        return ch.lower().translate(_CONFUSABLE), 1
    cat = unicodedata.category(ch)
    if cat in ("Cf", "Mn", "Me") or _is_vs(ch):
        return "", 0
    out = "".join(c for d in unicodedata.normalize("NFKD", ch) if unicodedata.category(d) not in ("Mn", "Me")
                  for c in d.casefold().translate(_CONFUSABLE))
    return out, len(out)


def _skeleton_map(text: str) -> tuple[str, list[int] | None]:
    """:func:`skeleton`, its index map ``None`` where it is each character's own index (every character one
    character of the skeleton, the usual case). Each character is read once per text (its pieces cached), the text
    is translated at C speed, and only the characters that make no or several characters of the skeleton are
    walked (a character-by-character loop read 32,768 characters in 26 ms, 18 times per hostile text: review 44)."""
    table: dict[int, str] = {}
    odd: dict[str, int] = {}
    for ch in set(text):
        got = _piece(ch)
        table[ord(ch)] = got[0]
        if got[1] != 1 or len(got[0]) != 1:
            odd[ch] = got[1]
    out = text.translate(table)
    if not odd:
        return out, None
    idx: list[int] = []
    pos = 0
    for m in re.finditer("[" + "".join(map(re.escape, odd)) + "]", text):
        i = m.start()
        idx.extend(range(pos, i))
        idx.extend([i] * odd[text[i]])
        pos = i + 1
    idx.extend(range(pos, len(text)))
    return out, idx


def skeleton(text: str) -> tuple[str, list[int]]:
    """A matching form of ``text`` and, per character of it, the index of the character of ``text`` it came from.

    Compatibility-decomposed (NFKD: full-width and styled letters become plain ones), combining marks and
    invisible characters dropped, case-folded, look-alike letters and digits mapped to the Latin letter they
    imitate. Only for finding phrases: it never reaches output.

    >>> skeleton("АPPR\\u200bOVЕD")[0]
    'approved'
    """
    out, idx = _skeleton_map(text)
    return out, list(range(len(text))) if idx is None else idx


_GAP = r"[\W_]{0,12}"
def _raw_runs(*words: str) -> list[list[tuple[str, int]]]:
    """:func:`_runs` of words in a row, each class as its characters. A letter read two ways ("σ" an E or an S, "д" an
    A or a D) is in one of two neighbouring runs only, the one of the letter it is drawn as (its first reading:
    "USΣR" is "user"): two neighbouring runs that both take a character split a long run of it every way
    (quadratic)."""
    letters: list[list[tuple[str, int]]] = []
    for word in words:
        runs: list[tuple[str, int]] = []
        for c in word:
            if runs and runs[-1][0] == c:
                runs[-1] = (c, runs[-1][1] + 1)
            else:
                runs.append((c, 1))
        letters.append(runs)
    flat = [c for runs in letters for c, _ in runs]
    shapes = [set(_SHAPE_OF.get(c, "")) for c in flat]
    for i in range(1, len(flat)):
        if flat[i] == flat[i - 1]:
            continue
        for ch in shapes[i] & shapes[i - 1]:
            (shapes[i - 1] if _READINGS[ch][0] == flat[i] else shapes[i]).discard(ch)
    out: list[list[tuple[str, int]]] = []
    k = 0
    for runs in letters:
        out.append([])
        for c, n in runs:
            kept = "".join(x for x in _SHAPE_OF.get(c, "") if x in shapes[k])
            out[-1].append((c + _ASCII_LOOKALIKE.get(c, "") + kept, n))
            k += 1
    return out


def _runs(word: str) -> list[tuple[str, int]]:
    """``word`` as (character class, least count) runs: a letter and its ASCII look-alikes (and the letters of other
    scripts read as it, :data:`_READINGS`), a doubled letter once with a count of two ("approved": a, pp, r, o, v, e,
    d)."""
    return [(f"[{re.escape(raw)}]", n) for raw, n in _raw_runs(word)[0]]


def _count(cls: str, n: int) -> str:
    return f"{cls}+" if n == 1 else f"{cls}{{{n},}}"


def _words(*words: str, anchored: bool = False, far: bool = False) -> str:
    """A pattern for the words in a row, each also in ASCII look-alikes (``appr0ved``) and with doubled letters
    (``apprrooved``), anything of :data:`_GAP` between them ("APPROVED_SYSTEM memory", "approvedsystem"); ``far``: any
    number of separators between them ("CRITICAL ............... ADHERE", the banner's halves far apart).

    Reading stays linear in the text (a reader runs these over every record it shows, up to 32,768 characters):

    - a doubled letter is one run of at least two (``[p]{2,}``), not two runs side by side (``[p]+[p]+``), which
      split a long run of that letter every way before failing (quadratic: "a" + "p" * 32,768 took 3 s);
    - where one word ends with the letter the next starts with ("system" "memory"), the junction is one run of both
      counts, or the two runs with a separator between them: a possibly empty gap between two runs of one letter
      split a run the same way;
    - ``anchored``: a match may only start where a run of the first letter starts. Search tries every start;
      without the anchor a long run of that letter ("aaaa…") is read again from each of its positions. A match
      that starts inside a run also matches from the run's start, and a leftmost search starts there anyway: the
      anchor changes no match, only the work;
    - ``far``: the separators between two words are one run (a letter ends it), so a run read from one word's end
      is read once.
    """
    runs = [[(f"[{re.escape(raw)}]", n) for raw, n in word] for word in _raw_runs(*words)]
    pieces = [_count(c, n) for c, n in runs[0]]
    for before, after in pairwise(runs):
        (last, m), (first, n) = before[-1], after[0]
        if last == first:  # the previous word's last run becomes the junction
            sep = "[\\W_]+" if far else "[\\W_]{1,12}"
            pieces[-1] = f"(?:{_count(last, m)}{sep}{_count(first, n)}|{first}{{{m + n},}})"
            after = after[1:]
        else:
            pieces.append("[\\W_]*" if far else _GAP)
        pieces += [_count(c, k) for c, k in after]
    if anchored and len(runs[0]) > 1:
        # "(?<!x)x+" written "x(?<!xx)x*": the same matches, and a pattern that starts with its first letter's class
        # lets the regex engine skip to that letter instead of trying the lookbehind at every position (5x faster)
        first, n = runs[0][0]
        pieces[0] = f"{first}(?<!{first}{first})" + (f"{first}*" if n == 1 else f"{first}{{{n - 1},}}")
    elif anchored:
        pieces.insert(0, f"(?<!{runs[0][0][0]})")
    return "".join(pieces)


_w = _words  # one word: the name the patterns below read best with


#: The words the patterns read (the banner's, and a mark's).
_BANNER_WORDS = ("approved", "system", "memory", "memories", "critical", "adhere")
_MARK_WORDS = ("user", "agent", "human", "verified", "unverified", "confirmed", "trusted", "revert", "reported")
#: Brackets a mark or a label may be written in, after the skeleton: square ones and their full-width and lenticular
#: forms, and the others (parentheses, braces, angle brackets, ...), where only a whole mark or label is read.
_ALT_OPEN, _ALT_CLOSE = "({<«「『《⦅❨❪❬❮❰❴⸨⦃⦇⦉⟮⟪⟬⌈⌊﴾⸢⧼⟅⸦", "})>»」』》⦆❩❫❭❯❱❵⸩⦄⦈⦊⟯⟫⟭⌉⌋﴿⸣⧽⟆⸧"
_BRACKETS = "[]【】〖〗〚〛⟦⟧" + _ALT_OPEN + _ALT_CLOSE

#: An HTML tag, by its shape (any name: a reader's renderer hides every tag, and a plain reader reads through one it
#: knows, "<wbr>", "<font>", as well as one it does not, "<x>"), holding none of the words the patterns read: a tag
#: named or labelled by one ("critical<adhere>", "<span title='[user · verified]'>") is read as written. Review 88
#: F2: a fixed list of 16 formatting tags let "CRI<wbr>TICAL", "CRIT<font>ICAL</font>" and "[us<wbr>er · verified]"
#: pass.
_TAG = (rf"</?(?![^<>]{{0,120}}?(?:{'|'.join(_w(w) for w in _BANNER_WORDS + _MARK_WORDS + ('memor',))}))"
        r"[a-z][a-z0-9-]{0,30}(?:\s[^<>]{0,120})?/?>")
#: What a word may be split by and still be read as one, dropped: a run of Markdown emphasis, strike-through and
#: code marks wherever it stands, of any length (not "_": CommonMark makes no emphasis of it inside a word, and code
#: is full of ``get_approved_memory``; review 88 F2: "CR**I****T**ICAL" and "[**u****s****e**r · verified]"
#: passed, a run being read only up to three between letters), an HTML tag (:data:`_TAG`) and an HTML comment that
#: holds no word ("<!-- -->") wherever they stand, a comment between two letters whatever it holds ("CRIT<!-- x
#: -->ICAL" renders "CRITICAL"; review 2), a hyphen (also at a line's end) between two letters ("**CRIT**ICAL",
#: "CRIT<b>ICAL</b>", "ap-proved").
#: (each branch starts with its first character, so the engine skips to one of "*~`-<\\" instead of trying the
#: lookbehinds at every position)
_JOIN = re.compile(rf"[*~`]+|-(?<=[^\W_]-)\s?(?=[^\W_])"
                   rf"|<(?:{_TAG[1:]}|!--[^<>\w]{{0,40}}?-->"
                   rf"|!--(?<=[^\W_]<!--)[^<>]{{0,40}}?-->(?=[^\W_]))"
                   # a backslash inside a word (Markdown drops it before a letter it does not escape: "CRIT\ICAL")
                   rf"|\\(?<=[^\W_]\\)(?=[^\W_])")
#: A run of whitespace past its first character: every reader shows a record on one line with whitespace runs
#: collapsed, so "A     P     P" reaches the next agent as "A P P"
_SQUEEZE = re.compile(r"(?<=\s)\s+")
#: Letters spaced out one by one, each after the same separator, three letters or more read as one word: first with a
#: mark between them, perhaps in spaces ("A.P.P.R.O.V.E.D", "C-R-I-T", "a · d · h"), then with a space ("A P P R O V E
#: D"; whitespace runs are one by then). In that order, so that in "A D H E R E A.P.P.R.O.V.E.D" the second word
#: keeps its first letter.
_SPACED_MARKS = re.compile(r"(?<![^\W_])[^\W_](\s?(?:_|[^\w\s])\s?)[^\W_](?:\1[^\W_])+(?![^\W_])")
_SPACED_BLANKS = re.compile(r"(?<![^\W_])[^\W_](\s)[^\W_](?:\1[^\W_])+(?![^\W_])")
#: And single letters, three or more, each after a run of one or two separators of any kind but a bracket (a mark's
#: and a label's own): "C R.I T.I C.A L", "C‒R։I TˑI・C A·L" (review 88 F3: one repeated separator was needed). Each
#: piece is one letter or digit, as above (a word of two letters ends it), so prose keeps its words. Only a whole run:
#: not one a letter touches through marks alone (no space), at either end. Such letters are pieces of a word broken
#: apart ("APˇPꞈROVˇEꞏD SːYꞈS": "rov", then "e·d s·y·s·t", then "em"), which the healed form reads whole
#: (:func:`_healed`); joined, they ran one word into the next ("rov·edsys·t·em"). (A run starts only where no letter
#: comes before it through one or two marks, and the engine tries shorter ones only at that start: linear.)
_NO_SPACE = r"(?:_|[^\w\s])"
_SPACED_MIXED = re.compile(rf"(?<![^\W_])(?<![^\W_]{_NO_SPACE})(?<![^\W_]{_NO_SPACE}{_NO_SPACE})[^\W_]"
                           rf"(?:(?:_|[^\w{re.escape(_BRACKETS)}]){{1,2}}[^\W_]){{2,}}(?![^\W_])"
                           rf"(?!{_NO_SPACE}{{1,2}}[^\W_])")
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


def _letters(m: re.Match[str]) -> str:
    return m.group()[:: len(m.group(1)) + 1]


#: What each step of :func:`_joined_text` needs to find anything, as patterns that start with a rare character (the
#: engine skips to it, where the steps' own patterns try their lookbehinds at every letter): two whitespace
#: characters in a row; a single letter between two marks and another letter after the second mark (the second and
#: third letters of any run "A.P.P"); a single letter between two blanks and another after (" P P").
_MAY_SQUEEZE = re.compile(r"\s\s")
_MAY_SPACE_MARKS = re.compile(r"(?:_|[^\w\s])\s?[^\W_]\s?(?:_|[^\w\s])\s?[^\W_](?![^\W_])")
_MAY_SPACE_BLANKS = re.compile(r"\s[^\W_]\s[^\W_](?![^\W_])")
#: (and three single letters, each after one or two separators: a run's last three, "R.I T"; "0.5" or "v1.2" holds
#: two, so ordinary figures never run the step)
_MAY_SPACE_MIXED = re.compile(r"[^\W_][\W_]{1,2}[^\W_][\W_]{1,2}[^\W_](?![^\W_])")


def _joined_text(skel: str) -> str:
    """``skel`` with whitespace runs as one, and words split by :data:`_JOIN` marks or spaced out
    (:data:`_SPACED_MARKS`, :data:`_SPACED_BLANKS`) read as one word (:func:`_joined_steps`: each step runs only
    where its necessary condition, ``_MAY_*``, holds; the same text, about twice as fast on ordinary prose)."""
    return _joined_steps(skel)[0]


def _joined_text_reference(skel: str) -> str:
    """:func:`_joined_text` without the necessary conditions (what the tests hold it equal to)."""
    for pattern, _ in _JOIN_STEPS:
        if pattern is _SQUEEZE or pattern is _JOIN:
            skel = pattern.sub("", skel)
        elif pattern is _SPACED_MIXED:
            skel = pattern.sub(lambda m: "".join(_LETTER_OR_DIGIT.findall(m.group())), skel)
        else:
            skel = pattern.sub(_letters, skel)
    return skel


def _joined(skel: str, idx: list[int] | None) -> tuple[str, list[int] | None]:
    """:func:`_joined_text` with the index map (``None``: each character its own index) carried along."""
    joined, steps = _joined_steps(skel)
    return joined, _mapped(len(skel), idx, steps)


#: The steps that read letters spaced out, each with its necessary condition.
#: (:data:`_SPACED_MIXED` first: the repeated separator's steps took three letters out of a run of mixed ones, "e·d·s"
#: of "V⁃E·D·S\nY", which then held no single letter)
_SPACING = ((_SPACED_MIXED, _MAY_SPACE_MIXED), (_SPACED_MARKS, _MAY_SPACE_MARKS), (_SPACED_BLANKS, _MAY_SPACE_BLANKS))
#: :func:`_joined_text`'s steps, each with its necessary condition (``None``: none cheaper than the step). Letters
#: spaced out are read before the marks that split words are dropped, and after: an emphasis mark between two of
#: them is one of their separators ("C R﹘I~T`I'C": dropped first, it left "IT", no single letter; review 88 F3), and
#: a tag between two is read only once dropped ("A <wbr>P <wbr>P").
_JOIN_STEPS = ((_SQUEEZE, _MAY_SQUEEZE), *_SPACING, (_JOIN, None), *_SPACING)
_JOIN_AT = 1 + len(_SPACING)
#: What a step keeps of the text before it, as slices of it (``None``: all of it).
Kept = list[slice] | None
#: A step of :func:`_joined_steps`: what it kept, or the text it cut and the pattern of the spans it cut (read only
#: when the index map is wanted: most texts match no pattern, and a run of 32,768 marks was read a match at a time).
Step = Kept | tuple[str, re.Pattern[str]]


def _joined_steps(skel: str) -> tuple[str, list[Step]]:
    """:func:`_joined_text` and each of its steps (what :func:`_mapped` takes an index map through): the joined form
    and its index map from one reading of the steps, not two. A spaced-out word is one slice with a step ("A P P R O
    V E D": every second character), not a cut per separator; the cuts of the other two steps are read at C speed
    for the text, and a match at a time only for the map."""
    steps: list[Step] = []
    for n, (pattern, may) in enumerate(_JOIN_STEPS):
        # the marks cut nothing (the spacing read again reads the same), or no match (_joined_text relies on it too)
        if (n > _JOIN_AT and steps[_JOIN_AT] is None) or (may is not None and not may.search(skel)):
            steps.append(None)
        elif pattern is _SQUEEZE or pattern is _JOIN:
            cut = pattern.sub("", skel)
            steps.append(None if cut == skel else (skel, pattern))
            skel = cut
        else:
            kept = _kept_spaced(skel, pattern)
            if kept is not None:
                skel = "".join(map(skel.__getitem__, kept))
            steps.append(kept)
    return skel, steps


def _kept_spaced(skel: str, pattern: re.Pattern[str]) -> Kept:
    """What reading the words :data:`_SPACED_MARKS` or :data:`_SPACED_BLANKS` (``pattern``) finds spaced out as
    one keeps of ``skel``: each such word's every (separator + 1)th character; of :data:`_SPACED_MIXED`'s, each
    letter."""
    kept: list[slice] = []
    pos = 0
    for m in pattern.finditer(skel):
        a, b = m.span()
        if pattern is _SPACED_MIXED:
            kept.append(slice(pos, a))
            kept += _evenly([a + x.start() for x in _LETTER_OR_DIGIT.finditer(m.group())])
        else:
            kept += (slice(pos, a), slice(a, b, len(m.group(1)) + 1))
        pos = b
    if not kept:
        return None
    kept.append(slice(pos, len(skel)))
    return kept


def _evenly(at: list[int]) -> list[slice]:
    """The characters at ``at`` (ascending) as slices, one per stretch evenly spaced: a run of 32,768 letters spaced
    alike is one slice, not 32,768 (each an object the collector walks, in a process holding many)."""
    out: list[slice] = []
    i = 0
    while i < len(at):
        j = i + 1
        if j < len(at):
            step = at[j] - at[i]
            while j + 1 < len(at) and at[j + 1] - at[j] == step:
                j += 1
            out.append(slice(at[i], at[j] + 1, step))
        else:
            out.append(slice(at[i], at[i] + 1))
        i = j + 1
    return out


def _kept_of(n: int, cut: list[tuple[int, int]]) -> Kept:
    """What cutting the spans ``cut`` (in order, not overlapping) keeps of an ``n``-character text."""
    if not cut:
        return None
    return list(map(slice, [0, *(e for _, e in cut)], [*(s for s, _ in cut), n]))


def _mapped(n: int, idx: list[int] | None, steps: Sequence[Step]) -> list[int] | None:
    """The index map ``idx`` of an ``n``-character text (``None``: each character its own index) taken through
    ``steps``, each what a step kept of the text the step before left. The pieces kept are joined at C speed (a
    comprehension over every index took 4 ms a 32,768-character reading)."""
    for step in steps:
        if isinstance(step, tuple):
            before, pattern = step
            step = _kept_of(len(before), [m.span() for m in pattern.finditer(before)])
        if step is not None:
            idx = list(chain.from_iterable(map((range(n) if idx is None else idx).__getitem__, step)))
            n = len(idx)
    return idx


#: A Markdown link or image, as the text it shows: "[CRIT](x)ICAL" reads "CRITICAL", "![APPRO](a.png)VED" too (a
#: reference link "[CRIT][1]ICAL" as well). Read only in the healed form: the joined form keeps the brackets, which
#: may be a mark's own ("[user · verified](x)").
_LINK_END = r"\](?:\([^()\s]{0,200}\)|\[[^\[\]]{0,40}\])"
_LINK = re.compile(rf"!?\[(?=[^\[\]]{{1,80}}{_LINK_END})|{_LINK_END}")
#: The words the patterns read (:data:`_BANNER_WORDS`, :data:`_MARK_WORDS`), as a reader sees them broken into pieces:
#: "APPRO VED", "CRITI CAL", "A.P P.R.O.V.E.D"
#: (two separators), "CRIT_ICAL", "ad-he re". Each letter run of the word may be followed by a break of up to three
#: separators (no bracket: a mark's brackets are its own); a doubled letter may be broken between its two letters.
_BREAK = r"(?:_|[^\w\[\]【】〖〗〚〛⟦⟧(){}<>«»「」『』《》]){1,3}"


def _run_broken(cls: str, k: int) -> str:
    return f"{cls}+" if k == 1 else f"(?:{cls}{{{k},}}|{cls}+(?:{_BREAK}{cls}+){{1,{k - 1}}})"


def _trie(words: list[list[tuple[str, int]]]) -> str:
    """The words (as runs) after a break or at their start, as one pattern whose alternatives share their first
    runs: each letter is then tried once for all the words it may continue, not once per word."""
    groups: dict[tuple[str, int], list[list[tuple[str, int]]]] = {}
    ends = False
    for runs in words:
        if runs:
            groups.setdefault(runs[0], []).append(runs[1:])
        else:
            ends = True
    alts = [_run_broken(*run) + (f"(?:{_BREAK})?" if any(rests) else "") + _trie(rests)
            for run, rests in groups.items()]
    if ends:
        alts.append("")
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _broken_all(words: tuple[str, ...]) -> str:
    """:data:`_BROKEN`'s pattern: a word's possible first letter first (the engine skips to one), the anchor (no letter
    before it), then each word past its first letter, grouped by that letter and sharing their next runs."""
    runs = [_runs(w) for w in words]
    assert all(r[0][1] == 1 for r in runs)  # no word of the vocabulary starts with a doubled letter
    firsts = "".join(sorted({c for r in runs for c in r[0][0][1:-1].replace("\\", "")}))
    by_first: dict[str, list[list[tuple[str, int]]]] = {}
    for r in runs:
        by_first.setdefault(r[0][0], []).append(r[1:])
    alts = [f"(?<={first}){first}*(?:{_BREAK})?{_trie(rests)}" for first, rests in by_first.items()]
    first_cls = f"[{re.escape(firsts)}]"
    # (not after a letter, nor inside a run of first letters: "@" is no letter, and each "@" of "@@@@…" started a
    # match that read the rest of the run, quadratic)
    return (f"{first_cls}(?<![^\\W_]{first_cls})(?<!{first_cls}{first_cls})(?:" + "|".join(alts)
            + r")(?![^\W_])")


#: The banner's words broken (read in every text), and a mark's (read only where a mark may be: after an opening
#: bracket, or beside a mark's dot, :data:`_MAY_MARK`): each such search costs about as much as the joining steps.
_BROKEN_BANNER = re.compile(_broken_all(_BANNER_WORDS))
_BROKEN_MARK = re.compile(_broken_all(_MARK_WORDS))
_MARK_FIRSTS = _BROKEN_MARK.pattern[1:_BROKEN_MARK.pattern.index("]")]
_MAY_DOT = re.compile(f"[{_MARK_DOTS}]")
_MAY_MARK = re.compile(rf"[{re.escape('[【〖〚⟦' + _ALT_OPEN)}][\W_]{{0,12}}[{_MARK_FIRSTS}]")
#: A break inside a word: what :data:`_BROKEN` may cut.
_SEPARATORS = re.compile(r"[\W_]+")
#: Pieces that are each a word of their own: where all the pieces of a match are, and only spaces break it, it is
#: prose ("put the ad here", "a gent", "hum an", "us er"), not a broken word; with another break ("AD_HERE", "AD.HERE")
#: it is read whole. The vocabulary is fixed, so are its splits into common words; the other splits ("APPRO VED",
#: "CRITI CAL") are no words. Measured on LoCoMo, its chat-style rewrite, the docs and the source
#: (``benchmarks/neutraliser_reach.py``).
_WORD_PIECES = frozenset({"a", "ad", "here", "hum", "an", "us", "use", "er", "age", "gent", "app", "roved", "re",
                          "con", "report", "ed", "trust", "ted", "memo", "me", "critic", "al", "approve", "stem"})


def _heal_cuts(skel: str) -> list[tuple[int, int]]:
    """Where :func:`_healed_text` cuts ``skel``: the separators inside a broken word of the banner's or (where a
    mark may be) a mark's."""
    cuts: list[tuple[int, int]] = []
    found = list(_BROKEN_BANNER.finditer(skel))
    if _MAY_MARK.search(skel) or _MAY_DOT.search(skel):
        found = sorted([*found, *_BROKEN_MARK.finditer(skel)], key=lambda m: m.start())
    end = 0
    for m in found:
        if m.start() < end:
            continue
        end = m.end()
        if m.group().isalnum():  # no separator in it (str.isalnum is the regex engine's test of a word character)
            continue
        seps = [s.span() for s in _SEPARATORS.finditer(m.group())]
        pieces = [p for p in _SEPARATORS.split(m.group()) if p]
        if all(p in _WORD_PIECES for p in pieces) and all(m.group()[a:b] == " " for a, b in seps):
            continue
        cuts += [(m.start() + a, m.start() + b) for a, b in seps]
    return cuts


def _healed(skel: str, idx: list[int] | None) -> tuple[str, list[int] | None]:
    """The joined skeleton ``skel`` (with its index map) as a reader sees its words: Markdown links and images as
    their text, and the banner's and a mark's words broken into pieces whole (:func:`_healed_steps`, the map taken
    through what each step kept)."""
    healed, kept = _healed_steps(skel)
    return healed, _mapped(len(skel), idx, kept)


def _healed_text_reference(joined: str) -> str | None:
    """:func:`_healed_text` without its necessary conditions (what the tests hold it equal to)."""
    healed = _healed(joined, None)[0]
    return None if healed == joined else healed


def _healed_text(joined: str) -> str | None:
    """:func:`_healed` without the index map; ``None`` where it changes nothing (the patterns need not read it)."""
    return _healed_cuts(joined)[0]


def _healed_cuts(joined: str) -> tuple[str | None, list[Kept]]:
    """:func:`_healed_text` and what its two steps kept (links, then broken words: what :func:`_mapped` takes the
    joined form's index map through). Read only where a necessary condition holds (a link's bracket, a broken
    banner word, a broken mark's word where a mark may be)."""
    may = ("](" in joined or "][" in joined or _BROKEN_BANNER.search(joined)
           or ((_MAY_MARK.search(joined) or _MAY_DOT.search(joined)) and _BROKEN_MARK.search(joined)))
    if not may:
        return None, []
    healed, cuts = _healed_steps(joined)
    return (None if healed == joined else healed), cuts


def _healed_steps(joined: str) -> tuple[str, list[Kept]]:
    """:func:`_healed`'s text, and what each of its two steps kept (links, then broken words)."""
    links = _kept_of(len(joined), [m.span() for m in _LINK.finditer(joined)])
    unlinked = joined if links is None else "".join(map(joined.__getitem__, links))
    broken = _kept_of(len(unlinked), _heal_cuts(unlinked))
    return (unlinked if broken is None else "".join(map(unlinked.__getitem__, broken))), [links, broken]
