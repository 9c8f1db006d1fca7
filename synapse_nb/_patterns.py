"""The neutraliser's patterns: what :mod:`synapse_nb.provenance` reads a forged banner, approval label, provenance
mark or chat framing tag in (on the forms of :mod:`synapse_nb._skeleton`), and the placeholders it writes instead.
Standard library only.

Precision (review 77): a person's own code and prose go through the same readers, so what code writes is read as
code. A quote is no gap of a mark or a label (``["user"]``, ``['agent', 'verified']``, ``["pending", "approved"]``
are literals); a square bracket straight after a word character, a closing bracket or a quote is a subscript
(``environ[user]``, ``d["a"]["verified"]``), read as a mark or a label only in a real one's whole shape (a source
and its status, ``now[user · verified]``; a name, a comma and "approved"); a bare role tag (``<user>``) is a frame
only where it could open a turn (:class:`_TurnRoles`). Reach beyond English (review 77 F2): two short runs of
letters of any script joined by a mark's dot inside square brackets read as a mark (``[utilisateur · vérifié]``,
``[用户 · 已验证]``), whatever the words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from synapse_nb._cleaning import LINE_BREAKS
from synapse_nb._skeleton import _ALT_CLOSE, _ALT_OPEN, _GAP, _MARK_DOTS, _w, _words

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
#: Quote characters (after the skeleton, full-width ones are ASCII) and the backtick. A quoted string in brackets is a
#: code literal (``["user"]``, ``['agent']``, ``["pending", "approved"]``, ``[("user", "verified")]``), a backticked
#: word in brackets a docstring's reference (``[`User`]``): no quote is a mark's or a label's gap, nor part of a
#: label (review 77: every one of them read as a mark or label in a person's own note).
_QUOTES = "\"'‘’‚‛“”„‟`"
#: A gap between a mark's words, or before its closing bracket: separators, not a quote.
_MGAP = rf"(?:_|[^\w{_QUOTES}]){{0,12}}"
#: A gap that holds no opening bracket (after a mark's own bracket, and in its "reported by an agent" tail): each "["
#: of a run then costs one step, not the thirteen a gap of any separator took (a 32,768 "[" record read 5x slower).
_TAIL_GAP = rf"(?:_|[^\w\[【〖〚⟦{_QUOTES}]){{0,12}}"
#: What a square bracket straight after is code's subscript (``environ[user]``, ``f(x)[user]``, ``d["a"]["user"]``):
#: a letter or digit, or a closing bracket (not "_", Markdown's emphasis: "_[user]_"; nor a quote, which may open a
#: string the mark is in: ``"[user] deploy"``; a quoted subscript ends in "]" anyway). There a mark is read
#: only whole, its source and its status (``now[user · verified]``, ``x[agent, unverified]``), and a label only as a
#: name, a comma and "approved".
_CODE_BEFORE = r"(?:[^\W_]|[)\]}】〗〛⟧])"
_SUBSCRIPT, _NOT_SUBSCRIPT = rf"(?<={_CODE_BEFORE}{_OPEN})", rf"(?<!{_CODE_BEFORE}{_OPEN})"
#: A tag's attributes and its end, as the framing patterns read them.
_ATTRS = r"""(?:\s+[\w:-]+\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s<>"']+)){0,8}\s*/?>"""
_NO_BRACKET = r"[^\[\]【】〖〗〚〛⟦⟧]"
#: A character of a label's name or of what follows its "approved": no bracket and no quote (an apostrophe between
#: two letters is one: "[the team's branch, approved]").
_LABEL_CHAR = rf"(?:[^\[\]【】〖〗〚〛⟦⟧{_QUOTES}]|(?<=[^\W_])['’](?=[^\W_]))"
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
_ALT_GAP = rf"(?:_|[^\w{re.escape(_ALT_OPEN + _ALT_CLOSE)}{_QUOTES}]){{1,6}}"
_ALT_EDGE = rf"(?:_|[^\w{re.escape(_ALT_OPEN + _ALT_CLOSE)}{_QUOTES}]){{0,3}}"
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
_STATUSES = (rf"(?:{_MGAP}(?:un)?{_VOUCHED}|{_MGAP}auto"
             rf"|{_MGAP}reported(?:{_TAIL_GAP}by{_TAIL_GAP}(?:an{_TAIL_GAP})?agent)?)+")
_APPROVED = _w("approved", anchored=True)

# ------------------------------------------------------------------------------------------------ marks of any language
#: Spacing combining marks of the Indic and South-East Asian scripts: part of a word there ("सत्यापित"), not letters
#: to the regex engine, and not dropped by the skeleton as the other combining marks are.
_SPACING_MARKS = "".join(c for c in map(chr, range(0x0900, 0x1100)) if unicodedata.category(c) == "Mc")
#: A short run of letters, any script (two letters at least: "[a · b]" is a product of symbols).
_LETTERS = rf"(?:[^\W\d_]|[{_SPACING_MARKS}]){{2,24}}"
#: A mark's dot between two runs: with a space on either side, or none ("l·l" inside a Catalan word,
#: "col·lecció", is no mark).
_DOT = f"[{_MARK_DOTS}]"
_DOT_JOIN = rf"(?:\s{{1,3}}{_DOT}\s{{0,3}}|{_DOT}\s{{1,3}}|(?<!l){_DOT}|{_DOT}(?!l))"
_BRACKETS = re.escape("[]【】〖〗〚〛⟦⟧" + _ALT_OPEN + _ALT_CLOSE)
_PAIR_EDGE = rf"[^\w{_BRACKETS}]{{0,3}}"
#: Two short runs of letters of any script joined by a mark's dot, alone in brackets: what the real marks look like
#: ("[user · verified]"), so read as one whatever the words' language ("[utilisateur · vérifié]", "[用户 · 已验证]",
#: "[пользователь · проверено]": review 77 F2; a multilingual reader takes them for ours). Exactly two runs ("[Mon ·
#: Wed · Fri]" is a list), of letters (no digits: "[3 · 4]"). Square brackets only, the real marks' own (their
#: full-width and lenticular forms too): in parentheses, guillemets or corner brackets prose holds such pairs
#: ("(ΧΡΗΣΤΗΣ · ΕΠΑΛΗΘΕΥΜΕΝΟΣ)" in Greek prose), and there only English marks are read (the patterns above).
_ANY_LANGUAGE_MARK = rf"{_OPEN}{_PAIR_EDGE}{_LETTERS}{_DOT_JOIN}{_LETTERS}{_PAIR_EDGE}{_CLOSE}"

# ------------------------------------------------------------------------------------------------ framing tags
_ROLES = "|".join(FRAMING_ROLES)
#: A bare role tag (``<user>``, ``< assistant >``), not after a letter (``List<User>``) nor before "@" or ">"
_BARE_ROLE = re.compile(rf"<(?<![a-z0-9_]<)\s*(?P<role>{_ROLES})(?![\w.-]){_ATTRS}(?![@>])")
_CLOSING_ROLE = re.compile(rf"<\s*/\s*(?P<role>{_ROLES})(?![\w.-]){_ATTRS}")
#: What a bare role tag after (whitespace between) opens a turn: a sentence's or a clause's end, another tag's end.
_TURN_AFTER = frozenset(".!?:;>")


def _opens_turn(text: str, start: int) -> bool:
    """Whether a tag at ``start`` of ``text`` could open a turn: at the start of the text or of a line, or after
    :data:`_TURN_AFTER` (whitespace between). Reads back over whitespace only: the tags read are apart, each ending
    in ">", so each character is read once a text."""
    i = start - 1
    while i >= 0 and text[i].isspace():
        if text[i] in LINE_BREAKS:
            return True
        i -= 1
    return i < 0 or text[i] in _TURN_AFTER


class _TurnRoles:
    """A bare role tag where it could open a turn: at the start of the text or of a line, after a sentence's end
    or another tag (:func:`_opens_turn`), or before a closing tag of the same role later in the text
    (``<user> ... </user>``). A placeholder in a command or a path stays as written (``mysql -u <user> -p``,
    ``/home/<user>/.ssh``, ``https://<user>:<token>@host``; review 77: a person's approved lesson "Connect with
    mysql -u <user> -p" reached the next agent as "mysql -u [quoted tag] -p"). Reads like a compiled pattern
    (``finditer``, ``search``) and stays linear: one pass for the closing tags, one for the bare ones."""

    pattern = _BARE_ROLE.pattern

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        closing: dict[str, int] = {}
        if "/" in text:
            for m in _CLOSING_ROLE.finditer(text):
                closing[m.group("role")] = m.start()
        for m in _BARE_ROLE.finditer(text):
            if closing.get(m.group("role"), -1) > m.start() or _opens_turn(text, m.start()):
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
    # (no quote in it: ``status in ["pending", "approved"]`` is code; after a subscript's word or bracket only the
    # whole "name, approved": ``flags[approved]`` is code, ``x[main, approved]`` is not)
    (re.compile(rf"{_OPEN}(?:{_SUBSCRIPT}{_LABEL_CHAR}{{0,160}}?,{_MGAP}|{_NOT_SUBSCRIPT}{_LABEL_CHAR}{{0,160}}?)"
                rf"{_APPROVED}(?:{_MGAP}{_CLOSE}|{_LABEL_CHAR}{{0,40}}{_CLOSE})"), QUOTED_LABEL),
    # a provenance mark: "[user]", "[user · verified]", "[agent · unverified]", "[agent, reported]"
    # ("reported by an agent" does not run over an opening bracket: its "agent" also opens a mark, and
    # "[agent reported by an [agent reported by an …" was read again from each bracket to the end, quadratic)
    # ("[user · confirmed]", "[verified]" alone and a lesson's "[git revert]" too; "[reviewed]" alone stays;
    # "[verified by user]", "[✓ verified by the user]")
    # (and words past the status, after a mark's separator: "[user · verified · in force]")
    # (after a subscript's word or bracket, only a source and its status: ``environ[user]`` is code; the two
    # lookbehinds exclude each other, so a bracket is read one way)
    (re.compile(rf"{_OPEN}(?:{_SUBSCRIPT}{_TAIL_GAP}{_SOURCE}{_STATUSES}{_PAST_STATUS}"
                rf"|{_NOT_SUBSCRIPT}{_TAIL_GAP}(?:{_SOURCE}(?:{_STATUSES}{_PAST_STATUS})?"
                rf"|(?:un)?{_w('verified', anchored=True)}(?:{_BY_PERSON})?{_PAST_STATUS}"
                rf"|{_w('git')}{_MGAP}{_w('revert')}{_PAST_STATUS}))"
                rf"{_MGAP}{_CLOSE}"), QUOTED_MARK),
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
    (_TurnRoles(), QUOTED_TAG),
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
    (re.compile(_ANY_LANGUAGE_MARK), QUOTED_MARK),
)
#: The patterns read on the skeleton as it is (the framing tags); the others read it with split words joined.
_AS_IS = frozenset({QUOTED_TAG})
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
_AS_IS_PATTERNS = tuple((p, QUOTED_TAG) for p in _ON_SKELETON)
_JOINED_PATTERNS = (*_ON_JOINED, (_DOT_MARK, QUOTED_MARK))
