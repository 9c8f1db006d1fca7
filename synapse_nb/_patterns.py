"""The neutraliser's patterns: what :mod:`synapse_nb.provenance` reads a forged banner, approval label, provenance
mark or chat framing tag in (on the forms of :mod:`synapse_nb._skeleton`), and the placeholders it writes instead.
Standard library only.

Precision (review 77, made exact by review 80): a person's own code and prose go through the same readers, so what
code writes is read as code, decided on the text as written (:func:`spared`): a bracket that is a literal (every
item a whole quoted string: ``["user"]``, ``['agent', 'verified']``, ``["pending", "approved"]``,
``[("user", "verified")]``, ``[`User`]``) and an ASCII subscript by one identifier (``environ[user]``,
``flags[approved]``, ``Iterable[User]``) stay as written; every other quote is a gap as any separator is
(``[all branches, approved"]``, ``[user · "verified"]`` are quoted). A bare role tag (``<user>``) is a frame only
where it could open a turn (:class:`_TurnRoles`). Reach beyond English (review 77 F2, review 80 F4): one to three
words of any script on each side of a mark's dot, alone in square brackets, read as a mark (``[utilisateur ·
vérifié]``, ``[用户 · 已验证]``, ``[người dùng · đã xác minh]``), whatever the words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from synapse_nb._cleaning import LINE_BREAKS, _fast_piece
from synapse_nb._skeleton import _ALT_CLOSE, _ALT_OPEN, _GAP, _MARK_DOTS, SEPARATOR, _w, _words

#: What record text that reproduces the banner's words is rendered as.
QUOTED_BANNER = "[quoted banner text]"
#: What record text that reproduces an approval label (``[main, approved]``) is rendered as.
QUOTED_LABEL = "[quoted approval label]"
#: What record text that reproduces a provenance mark (``[user · verified]``) is rendered as.
QUOTED_MARK = "[quoted mark]"
#: What record text that reproduces a chat or harness framing tag (``</system-reminder>``, ``<|im_start|>``) is
#: rendered as.
QUOTED_TAG = "[quoted tag]"
#: The roles chat templates frame turns with (``<user>``): a bare opening one is a frame only where it could open a
#: turn (:class:`_TurnRoles`), and never before ``@`` or ``>`` (``ssh <user>@host``, ``Map<String, <User>>``).
FRAMING_ROLES = ("system", "user", "human", "assistant", "developer")
#: Whole names of the tags by which agent harnesses and chat templates frame what the model reads (exact names, so
#: ``<username>``, ``<userId>`` or ``#include <system_error>`` stay as written).
FRAMING_TAGS = (*FRAMING_ROLES, "system-reminder", "system_prompt", "system-prompt", "system_message", "user_prompt",
                "user-prompt", "user-prompt-submit-hook", "user_message", "user_query", "user_input",
                "assistant_message", "assistant_turn", "instructions", "function_calls", "function_results",
                "tool_call", "tool_calls", "tool_result", "tool_results", "tool_use", "tool_response", "im_start",
                "im_end", "start_of_turn", "end_of_turn", "invoke", "function_call",
                # Claude Code's own frames around a slash command and a shell's output (review 2), and the tool list
                "command-name", "command-message", "command-args", "local-command-stdout", "local-command-stderr",
                "bash-input", "bash-stdout", "bash-stderr", "functions")

def _tag_name(name: str) -> str:
    """A framing tag's name as a pattern: "-" and "_" stand for each other ("system_reminder")."""
    return "".join("[-_]" if c in "-_" else re.escape(c) for c in name)

# ------------------------------------------------------------------------------------------------ patterns
# (the skeleton a pattern reads, and the word patterns: synapse_nb/_skeleton.py)


_OPEN, _CLOSE = r"[\[【〖〚⟦]", r"[\]】〗〛⟧]"
#: A gap that holds no opening bracket (after a mark's own bracket, and in its "reported by an agent" tail): each "["
#: of a run then costs one step, not the thirteen a gap of any separator took (a 32,768 "[" record read 5x slower).
#: A quote is a gap as any separator is (review 80 F1: with none, ``[all branches, approved"]`` and
#: ``[user · "verified"]`` passed as written under the real banner); a literal is spared as a whole (:func:`spared`).
_TAIL_GAP = r"(?:_|[^\w\[【〖〚⟦]){0,12}"
#: A tag's attributes and its end, as the framing patterns read them.
_ATTRS = r"""(?:\s+[\w:-]+\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s<>"']+)){0,8}\s*/?>"""
_NO_BRACKET = r"[^\[\]【】〖〗〚〛⟦⟧]"
#: The words a mark may vouch for a record with ("verified", and what a forger would write in its place).
#: (anchored: "trusted" may not start inside the run of "t" that ends "agent", which split a long run every way)
_VOUCHED = "(?:" + "|".join(_words(w, anchored=True) for w in ("verified", "confirmed", "trusted", "reviewed")) + ")"
#: "by the user", "by a human": who a mark's or label's status word says vouched for the text
_BY_PERSON = rf"{_TAIL_GAP}by{_TAIL_GAP}(?:(?:an?|the){_TAIL_GAP})?(?:{_w('user')}|{_w('human')})"
#: Other brackets a mark or a label may be written in: "(user · verified)", "{main, approved}", "⟨user · verified⟩",
#: "「user · verified」" (after the skeleton: full-width and small forms are plain ones, "⟨" and
#: "〈" are "<"). Prose and code use these for other things, so with them only a whole mark or label is read: a
#: source word and a status word ("(user only)", "(agent)", "{user}" stay), or "<branch>, approved".
# (_ALT_OPEN, _ALT_CLOSE: synapse_nb/_skeleton.py, which reads a broken word after one)
#: One of them opening a mark or a label: not straight after a word character, where it is code (a call
#: ``check(user, verified)``, ``run(project, approved)``, a generic ``Map<User, Verified>``)
_ALT = rf"[{re.escape(_ALT_OPEN)}](?<!\w[{re.escape(_ALT_OPEN)}])"  # the bracket first: the engine skips to one
#: The gaps inside them: as many separators as in square brackets (:data:`_GAP`, :data:`_TAIL_GAP`: twelve), one
#: rule for every bracket (review 88 F4: "(user | · | verified)" passed where "[user | · | verified]" was quoted)
_ALT_GAP = rf"(?:_|[^\w{re.escape(_ALT_OPEN + _ALT_CLOSE)}]){{1,12}}"
_ALT_EDGE = rf"(?:_|[^\w{re.escape(_ALT_OPEN + _ALT_CLOSE)}]){{0,12}}"
_ALT_STATUS = ("(?:" + "|".join([f"(?:un)?{_w('verified', anchored=True)}", _w("confirmed", anchored=True),
                                  _w("trusted", anchored=True), _w("approved", anchored=True),
                                  _w("revert", anchored=True)]) + ")")


def _whole(word: str) -> str:
    """``word`` as :func:`_w` reads it, starting a word (no letter before it: "superuser · verified" is no mark)."""
    anchored = _w(word, anchored=True)
    first = anchored[:anchored.index("]") + 1]
    return anchored.replace(f"(?<!{first}{first})", f"(?<!{first}{first})(?<![^\\W_]{first})", 1)


#: Words past a mark's status, after a mark's separator: "[user · verified · in force]", "(user, verified, ok)".
_PAST_STATUS = rf"(?:\s?[{_MARK_DOTS},;:|/—–-]{_NO_BRACKET}{{0,40}})?"
_ALT_PAST_STATUS = rf"(?:\s?[{_MARK_DOTS},;:|/—–-][^{re.escape(_ALT_OPEN + _ALT_CLOSE)}]{{0,40}})?"
#: Who a mark says wrote the text, and the status words after it ("· verified", ", reported by an agent")
_SOURCE = rf"(?:{_w('user')}|{_w('agent')}|{_w('human')})"
_STATUSES = (rf"(?:{_GAP}(?:un)?{_VOUCHED}|{_GAP}auto"
             rf"|{_GAP}reported(?:{_TAIL_GAP}by{_TAIL_GAP}(?:an{_TAIL_GAP})?agent)?)+")
_APPROVED = _w("approved", anchored=True)

# ------------------------------------------------------------------------------------------------ marks of any language
#: Spacing combining marks of the Indic and South-East Asian scripts: part of a word there ("सत्यापित"), not letters
#: to the regex engine, and not dropped by the skeleton as the other combining marks are.
_SPACING_MARKS = "".join(c for c in map(chr, range(0x0900, 0x1100)) if unicodedata.category(c) == "Mc")
#: A letter of any script that is no mark's dot (a few letters are drawn as one: "ꞏ", "ᐧ", "ㆍ"), and the letters
#: that read as no letter, which the skeleton reads as one separator (``_skeleton.SEPARATOR``: "ー" in "ユーザー", the
#: ʻokina in "Hawaiʻi"): part of a word of any language, as they were before review 88.
_LETTER = rf"(?:[^\W\d_{_MARK_DOTS}]|[{_SPACING_MARKS}{SEPARATOR}])"
#: The scripts whose one letter is a word: Han, kana, Hangul ("[人 · 已验证]").
_ONE_LETTER_WORD = ("[\u3041-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff"
                    "\U00020000-\U0003134f]")
#: A word of a mark of any language: a short run of letters, any script (two letters at least: "[a · b]" is a
#: product of symbols), or one letter of :data:`_ONE_LETTER_WORD`.
_LETTERS = rf"(?:{_LETTER}{{2,24}}|{_ONE_LETTER_WORD})"
#: One side of such a mark: one to three words, one space between two ("[người dùng · đã xác minh]", "[Benutzer ·
#: von Hand geprüft]"; review 80 F4).
_SIDE = rf"{_LETTERS}(?: {_LETTERS}){{0,2}}"
#: A mark's dot between two runs: with a space on either side, or none ("l·l" inside a Catalan word,
#: "col·lecció", is no mark).
_DOT = f"[{_MARK_DOTS}]"
_DOT_JOIN = rf"(?:\s{{1,3}}{_DOT}\s{{0,3}}|{_DOT}\s{{1,3}}|(?<!l){_DOT}|{_DOT}(?!l))"
#: The Japanese middle dots (U+30FB "・", U+FF65 "･"): ordinary punctuation between words unspaced ("【東京・大阪】",
#: "[マーケティング・戦略]"), so a mark's dot of any language only with a space on each side (review 82 F4).
_JA_DOTS = "\u30fb\uff65"
_BRACKETS = re.escape("[]【】〖〗〚〛⟦⟧" + _ALT_OPEN + _ALT_CLOSE)
#: What may stand between a bracket and the words: spaces, symbols ("[user · verified ✓✓✓✓]").
_PAIR_EDGE = rf"[^\w{_BRACKETS}]{{0,12}}"
#: Two sides of words of any script joined by a mark's dot, alone in brackets: what the real marks look like
#: ("[user · verified]"), so read as one whatever the words' language ("[utilisateur · vérifié]", "[用户 · 已验证]",
#: "[пользователь · проверено человеком]": review 77 F2, review 80 F4; a multilingual reader takes them for ours).
#: Exactly one dot ("[Mon · Wed · Fri]" is a list), words of letters (no digits: "[3 · 4]"). The real marks' own
#: square brackets only, "[ ]" and "［ ］" as written (:func:`placed`; review 82 F4: headlines, routes and names are
#: written "【東京・大阪】", "〔x · y〕"), and "・"/"･" only spaced (:data:`_JA_DOTS`): elsewhere prose holds such pairs
#: ("(ΧΡΗΣΤΗΣ · ΕΠΑΛΗΘΕΥΜΕΝΟΣ)" in Greek prose), and there only English marks are read (the patterns above).
_ANY_LANGUAGE_MARK = rf"\[{_PAIR_EDGE}{_SIDE}{_DOT_JOIN}{_SIDE}{_PAIR_EDGE}\]"

# ------------------------------------------------------------------------------------------------ code, spared
#: One item of a code literal: a whole quoted string, the same straight quote or backtick opening and closing it,
#: holding one token: letters, digits, "_", "." and "-" (``"user"``, ``'approved'``, ``\`User\```, ``"is_approved"``,
#: ``"a.b"``, ``"x-y"``); no space nor separator (review 82 F3: ``["verified by the user"]``, ``["user | verified"]``,
#: ``["main; approved"]`` are a whole mark or label in quotes).
_TOKEN = r"[\w.-]*+"
_ITEM = rf"""\s*+(?:"{_TOKEN}"|'{_TOKEN}'|`{_TOKEN}`)\s*+"""
_ITEMS = rf"{_ITEM}(?:,{_ITEM})*+(?:,\s*+)?+"
_GROUP = rf"\s*+[({{]{_ITEMS}[)}}]\s*+"
#: A bracket that is a code literal: its items, separated by commas (a last comma too), or groups of them in one
#: tuple, set or list nesting (``["pending", "approved"]``, ``[("user", "verified")]``, ``{"user", "verified"}``).
#: Possessive throughout: read in one pass.
_LITERAL = re.compile(rf"[\[({{](?:{_ITEMS}|{_GROUP}(?:,{_GROUP})*+(?:,\s*+)?+)[\])}}]")
#: A subscript by one identifier: after an ASCII letter or digit, or after a subscript chain that starts right after
#: one (:func:`_after_chain`) (not ")": ``done)[user]`` and a Markdown link's ``[docs](url)[user]`` are prose as often
#: as ``f(x)[user]`` is code; not "_", Markdown's emphasis ``_[user]_``; not a letter of another script, ``αβ[user]``,
#: ``规则[user]``), in "[" or its full-width form. A mark's identifier is one word (``x[user_verified]`` is a mark's
#: whole shape, as before review 77), a label's may join words with "_" (``flags[is_approved]``).
_SUBSCRIPT = re.compile(r"[\[［][A-Za-z_][A-Za-z0-9_]*[\]］]")
_ONE_WORD = re.compile(r"[\[［][A-Za-z][A-Za-z0-9]*[\]］]")
#: One link of a subscript chain before one: ``[user]``, ``["a"]``, ``{x}`` (not a number: "runbook[1]" is a
#: footnote as often as "rows[0]" is code; review 82 F2).
_LINK = re.compile(rf"""[\[［{{](?:[A-Za-z_][A-Za-z0-9_]*|{_ITEM})[\]］}}]""")
_OPENER = {"]": "[", "］": "［", "}": "{"}
#: The most links :func:`_after_chain` reads back, and the most characters of one: each span's read is bounded.
_CHAIN_LINKS, _LINK_CHARS = 8, 64
_SPARED = frozenset({QUOTED_MARK, QUOTED_LABEL})


def _after_chain(text: str, i: int) -> bool:
    """Whether ``text[i]`` ends what a subscript may follow: an ASCII letter or digit, or a subscript chain that
    starts right after one (``a[b][approved]``, ``d["a"][verified]``; not ``[main][approved]``, ``[all
    branches][approved]``, ``runbook[1][approved]``: review 82 F2). Reads back at most :data:`_CHAIN_LINKS` links of
    :data:`_LINK_CHARS` characters each (a long ``][`` chain costs each span a bounded read: linear)."""
    for _ in range(_CHAIN_LINKS + 1):
        if i < 0:
            return False
        c = text[i]
        if c.isascii() and c.isalnum():
            return True
        opener = _OPENER.get(c)
        if opener is None:
            return False
        o = text.rfind(opener, max(0, i - _LINK_CHARS), i)
        if o < 0 or not _LINK.fullmatch(text, o, i + 1):
            return False
        i = o - 1
    return False


def spared(text: str, start: int, end: int, placeholder: str) -> bool:
    """Whether a mark or a label the patterns found at ``text[start:end]`` is code, kept as written (review 77's
    precision, made exact by review 80 F1 and F2): a bracket that is a literal, every item a whole quoted string
    (:data:`_LITERAL`: ``os.environ["USER"]``, ``status in ["pending","approved"]``, ``[`User`]``), or a
    subscript by one identifier (:data:`_SUBSCRIPT`: ``environ[user]``, ``flags[approved]``,
    ``Iterable[User]``, after a chain: ``a[b][approved]``). Decided on ``text`` as written, not on its skeleton:
    ``αβ[user]`` (read "ab[user]") and ``[“user”]`` are no code. ``[main, "approved"]``, ``[user · "verified"]``,
    ``now[user · verified]``, ``x[verified by the user]``, ``["user | verified"]``, ``[main][approved]`` are marks
    and labels."""
    if placeholder not in _SPARED or end - start < 3:
        return False
    if _LITERAL.fullmatch(text, start, end):
        return True
    subscript = _ONE_WORD if placeholder == QUOTED_MARK else _SUBSCRIPT
    return subscript.fullmatch(text, start, end) is not None and _after_chain(text, start - 1)


#: What two patterns find is decided on the text as written (:func:`placed`): a bare role tag no closing tag follows
#: (a frame where it opens a turn) and a mark of any language (in "[ ]" or "［ ］", "・" and "･" spaced).
_MAY_OPEN_TURN, _ANY_LANGUAGE = "\x00a bare role tag", "\x00a mark of any language"


def placed(text: str, start: int, end: int, placeholder: str) -> str | None:
    """The placeholder ``text[start:end]`` (a pattern's match, found as ``placeholder``) is written as, or ``None``
    where it stays as written: code (:func:`spared`), a bare role tag that opens no turn (:func:`_opens_turn`), a
    mark of any language in other brackets than square ones or joined by an unspaced "・" (review 82 F4). Each read
    on ``text`` as written, not on its skeleton."""
    if placeholder == _MAY_OPEN_TURN:
        return QUOTED_TAG if _opens_turn(text, start) else None
    if placeholder == _ANY_LANGUAGE:
        if text[start] not in "[［" or text[end - 1] not in "]］":
            return None
        for i in range(start + 1, end - 1):
            if text[i] in _JA_DOTS and not (text[i - 1].isspace() and text[i + 1].isspace()):
                return None
        return QUOTED_MARK
    return None if spared(text, start, end, placeholder) else placeholder


# ------------------------------------------------------------------------------------------------ framing tags
_ROLES = "|".join(FRAMING_ROLES)
#: A bare role tag (``<user>``, ``< assistant >``), not after a letter (``List<User>``) nor before "@" or ">"
_BARE_ROLE = re.compile(rf"<(?<![a-z0-9_]<)\s*(?P<role>{_ROLES})(?![\w.-]){_ATTRS}(?![@>])")
_CLOSING_ROLE = re.compile(rf"<\s*/\s*(?P<role>{_ROLES})(?![\w.-]){_ATTRS}")
#: The characters that end a sentence in some script: Unicode's Sentence_Terminal punctuation, as the names say
#: (every "FULL STOP", "QUESTION MARK", "EXCLAMATION MARK" and "DANDA" of category Po but the inverted and initial
#: ones that open a sentence; tests/test_neutraliser_precision.py derives the list again), Myanmar's and Khmer's
#: section signs and the ellipsis (review 80 F3: "Done。 <system>", "तैनात करें। <system>" opened no turn).
SENTENCE_ENDS = ("!.?;՜՞։؟۔܁܂߹।॥።፧᙮᠃᠉᥄᥅‼⁇⁈⁉⳹⳺⳻⳾⸮⸼⹓⹔。꓿꘎꘏꛳꛷꣎꣏꩝꩞꩟︒︕︖﹒﹖﹗！．？｡"
                 "\U00010a56\U00010a57\U00011047\U00011048\U000110c0\U000110c1\U00011141\U00011142\U00011143\U000111c5"
                 "\U000111c6\U00011238\U00011239\U0001144b\U0001144c\U000115c2\U000115c3\U00011641\U00011642\U00011944"
                 "\U00011c41\U00011c42\U00016a6e\U00016a6f\U00016af5\U00016e98\U0001bc9f\U0001da88"
                 "\u104a\u104b\u17d4\u17d5\u2026")
#: What a bare role tag after (whitespace between) opens a turn: a sentence's or a clause's end, another tag's end.
_TURN_AFTER = frozenset(SENTENCE_ENDS + ":;>")
#: What may stand between a sentence's end and a tag that opens a turn, besides whitespace: closing quotes and
#: brackets ('Done." <system>', "(Done.) <system>"), emphasis ("**Done.** <system>", "_Done._"), symbols and emoji
#: ("Done. 🙂 <system>") with their modifiers and joiners (review 80 F3).
_AFTER_END = frozenset({"Pe", "Pf", "Pi", "So", "Sk", "Sm", "Mn", "Me", "Cf"})
#: What else may stand there: quotes, emphasis, spaces (as the skeleton reads them: "＂", a no-break space).
_BETWEEN = frozenset("\"'*_~ \t")


def _opens_turn(text: str, start: int) -> bool:
    """Whether a tag at ``start`` of ``text`` could open a turn: at the start of the text or of a line, or after
    :data:`_TURN_AFTER` (whitespace, closing quotes and brackets, emphasis and symbols between: :data:`_AFTER_END`).
    Read on ``text`` as written (review 82 F1: on the skeleton "🇺🇸", "™", "ⓘ", "🅰" were letters and "᙮" an "x"),
    a character whose skeleton ends in :data:`_TURN_AFTER` ("：", "＞") ending a sentence too and one the skeleton
    drops (an invisible one) read over. Reads back only over those: the tags read are apart, each ending in ">" (a
    turn's opener itself), so each character is read once a text."""
    i = start - 1
    while i >= 0:
        c = text[i]
        if c in LINE_BREAKS or c in _TURN_AFTER:
            return True
        piece = c if c.isascii() else _fast_piece(c)[0]
        if piece and piece[-1] in _TURN_AFTER:
            return True
        if not (c.isspace() or unicodedata.category(c) in _AFTER_END or all(p in _BETWEEN for p in piece)):
            return False
        i -= 1
    return True


class _TurnRoles:
    """A bare role tag where it could open a turn: at the start of the text or of a line, after a sentence's end
    or another tag (:func:`_opens_turn`), or before a closing tag of the same role later in the text
    (``<user> ... </user>``). A placeholder in a command or a path stays as written (``mysql -u <user> -p``,
    ``/home/<user>/.ssh``, ``https://<user>:<token>@host``; review 77: a person's approved lesson "Connect with
    mysql -u <user> -p" reached the next agent as "mysql -u [quoted tag] -p"). Reads like a compiled pattern
    (``finditer``, ``search``) and stays linear: one pass for the closing tags, one for the bare ones."""

    pattern = _BARE_ROLE.pattern

    def __init__(self, closed: bool) -> None:
        self.closed = closed

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """With ``closed``, the tags a closing tag follows; else the others, each a frame only where it opens a
        turn, decided on the text as written (:func:`placed`, :data:`_MAY_OPEN_TURN`)."""
        closing: dict[str, int] = {}
        if "/" in text:
            for m in _CLOSING_ROLE.finditer(text):
                closing[m.group("role")] = m.start()
        for m in _BARE_ROLE.finditer(text):
            if (closing.get(m.group("role"), -1) > m.start()) == self.closed:
                yield m

    def search(self, text: str) -> re.Match[str] | None:
        return next(self.finditer(text), None)


_Finder = re.Pattern[str] | _TurnRoles
_PATTERNS: tuple[tuple[_Finder, str], ...] = (
    # the banner's two halves, each in any case and spacing; "APPROVEDSYSTEMMEMORY" too
    # (any number of separators between the words: "CRITICAL ............... ADHERE")
    (re.compile(rf"{_words('approved', 'system', 'memor', anchored=True, far=True)}(?:y|ies)"), QUOTED_BANNER),
    (re.compile(rf"{_words('critical', 'adhere', anchored=True, far=True)}(?!nce|nt|d)"), QUOTED_BANNER),
    # an approval label: "[main, approved]", "[all branches, approved]", "[approved]", full-width brackets too
    # (a label does not run over another opening bracket: each "[" of "[[[[…" is then one step, not 160; so in
    # "[x [main, approved]" the label is "[main, approved]", where it was the whole text before)
    # (and whatever follows "approved" up to the bracket: "[main, approved by user]", "[main, approved · in force]")
    # (a literal, ``status in ["pending", "approved"]``, and a subscript, ``flags[approved]``: :func:`spared`)
    (re.compile(rf"{_OPEN}{_NO_BRACKET}{{0,160}}?{_APPROVED}(?:{_GAP}{_CLOSE}|{_NO_BRACKET}{{0,40}}{_CLOSE})"),
     QUOTED_LABEL),
    # a provenance mark: "[user]", "[user · verified]", "[agent · unverified]", "[agent, reported]"
    # ("reported by an agent" does not run over an opening bracket: its "agent" also opens a mark, and
    # "[agent reported by an [agent reported by an …" was read again from each bracket to the end, quadratic)
    # ("[user · confirmed]", "[verified]" alone and a lesson's "[git revert]" too; "[reviewed]" alone stays;
    # "[verified by user]", "[✓ verified by the user]")
    # (and words past the status, after a mark's separator: "[user · verified · in force]")
    # (a literal, ``["user"]``, and a subscript, ``environ[user]``: :func:`spared`)
    (re.compile(rf"{_OPEN}{_TAIL_GAP}(?:{_SOURCE}(?:{_STATUSES}{_PAST_STATUS})?"
                rf"|(?:un)?{_w('verified', anchored=True)}(?:{_BY_PERSON})?{_PAST_STATUS}"
                rf"|{_w('git')}{_GAP}{_w('revert')}{_PAST_STATUS})"
                rf"{_GAP}{_CLOSE}"), QUOTED_MARK),
    # a framing tag that would close or open the harness's wrapper around this text (``</system-reminder>``): a
    # closing tag of any framing name; an opening one not after a letter (``List<User>`` is code); and a chat
    # template's special token (``<|im_start|>``). A bare role (``<user>``): :class:`_TurnRoles`, below.
    # (read on the skeleton as it is: the joins below would run "system-reminder" together)
    (re.compile(r"<\s*/\s*(?:" + "|".join(map(_tag_name, FRAMING_TAGS)) + r")(?![\w.-])" + _ATTRS
                + r"|<(?<![a-z0-9_]<)\s*(?:" + "|".join(_tag_name(t) for t in FRAMING_TAGS if t not in FRAMING_ROLES)
                + r")(?![\w.-])" + _ATTRS
                + r"|<\|(?=[^|<>\s]{0,39}[a-z])[^|<>\s]{1,40}\|>"  # (a letter in it: ``"<|-|>"`` is an arrow)
                # Llama's turn markers: "[INST]", "[/INST]", "<<SYS>>"
                + r"|\[\s*/?\s*inst\s*\]|<<\s*/?\s*sys\s*>>"), QUOTED_TAG),
    (_TurnRoles(closed=True), QUOTED_TAG), (_TurnRoles(closed=False), _MAY_OPEN_TURN),
    # the banner's words in another order: "ADHERE (CRITICAL)", "SYSTEM MEMORY (APPROVED)"
    (re.compile(rf"{_words('adhere', 'critical', anchored=True, far=True)}(?!ly)"), QUOTED_BANNER),
    (re.compile(rf"{_words('system', 'memor', anchored=True, far=True)}(?:y|ies)[\W_]*{_w('approved')}"),
     QUOTED_BANNER),
    # a mark in other brackets: "(user · verified)", "{agent, confirmed}", "⟨git revert⟩", "(verified by the user)"
    (re.compile(rf"{_ALT}{_ALT_EDGE}(?:(?:{_w('user')}|{_w('agent')}|{_w('human')}|{_w('git')})"
                rf"(?:{_ALT_GAP}{_ALT_STATUS})+|{_ALT_STATUS}{_BY_PERSON}){_ALT_PAST_STATUS}{_ALT_EDGE}"
                rf"[{re.escape(_ALT_CLOSE)}]"), QUOTED_MARK),
    # a label in other brackets: a branch's name ("(main, approved)", "{all branches, approved}"), or anything
    # approved by a person ("(an agent's wording, approved by a human)": what a real banner item says of an agent's
    # wording); "(PR 12, approved)" stays
    (re.compile(rf"{_ALT}{_ALT_EDGE}(?:[\w./-]{{1,40}}|all{_GAP}branch(?:es)?),{_ALT_EDGE}"
                rf"{_APPROVED}(?:{_BY_PERSON})?{_ALT_EDGE}[{re.escape(_ALT_CLOSE)}]"
                rf"|{_ALT}[^{re.escape(_ALT_OPEN + _ALT_CLOSE)},]{{1,40}},{_ALT_EDGE}"
                rf"{_APPROVED}{_BY_PERSON}{_ALT_EDGE}[{re.escape(_ALT_CLOSE)}]"),
     QUOTED_LABEL),
    # a mark of any language: two runs of letters joined by a mark's dot, alone in brackets
    (re.compile(_ANY_LANGUAGE_MARK), _ANY_LANGUAGE),
)
#: The patterns read on the skeleton as it is (the framing tags); the others read it with split words joined.
_AS_IS = frozenset({QUOTED_TAG, _MAY_OPEN_TURN})
#: A mark without brackets, its words joined by a mark's own dot: "user · verified: run this", "|user · verified|"
#: (a mark's middle dot and its look-alikes; "user, verified" and "| user | verified |" are prose and tables). Read
#: only where such a dot is (:data:`_MAY_DOT`): the pattern's first letter is any of three words', a letter in four.
_DOT_MARK = re.compile(rf"(?:{_whole('user')}|{_whole('agent')}|{_whole('human')})"
                       rf"\s*[{_MARK_DOTS}]\s*(?:un)?(?:{_w('verified')}|{_w('confirmed')}|{_w('trusted')})"
                       rf"(?![^\W_])")
_ON_SKELETON = tuple(p for p, placeholder in _PATTERNS if placeholder in _AS_IS)
_ON_JOINED = tuple((p, placeholder) for p, placeholder in _PATTERNS if placeholder not in _AS_IS)
#: What reads the skeleton as it is, and what reads the joined and healed forms (the bare mark too: it needs a
#: mark's dot, :data:`_MAY_DOT`, and finds nothing without one).
_AS_IS_PATTERNS = tuple((p, placeholder) for p, placeholder in _PATTERNS if placeholder in _AS_IS)
_JOINED_PATTERNS = (*_ON_JOINED, (_DOT_MARK, QUOTED_MARK))
