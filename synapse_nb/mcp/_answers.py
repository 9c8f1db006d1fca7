"""What the MCP server says: answers within a budget, and one-line messages for refused arguments.

- :func:`result` fits a tool answer (text and structured content together) in the answer budget and says what
  it left out: the text keeps whole lines from the top and is the structured content's first field, ``text``
  (Claude Code and VS Code give the model only the structured content whenever there is one: review 86), the
  other fields keep their shape (strings are shortened and lists lose items from the end, never a field turned
  into another type), so it still matches the tool's ``outputSchema``.
- :func:`argument_error` turns the SDK's validation error (a multi-line pydantic dump with a URL) into one line
  that says which argument was wrong and what is accepted, without echoing a huge value.

>>> cut_data({"items": list(range(1000)), "id": "x"}, 300)["left_out"]
{'items': '950 of 1,000 items'}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.types import CallToolResult, TextContent

from synapse_nb.provenance import inline
from synapse_nb.render import head_lines, plural

__all__ = ["answer_text", "argument_error", "cut_data", "cut_text", "result"]

#: The shrink steps tried in turn: (longest string kept, most items kept per list; None = all).
_STEPS: tuple[tuple[int, int | None], ...] = ((1000, None), (1000, 50), (300, 20), (120, 5), (40, 1), (10, 0))


def result(text: str, data: dict[str, Any], budget_tokens: int,
           borrowed: dict[str, Any] | None = None) -> CallToolResult:
    """A tool answer within ``budget_tokens`` (what is sent: the text and the structured content together; about 4
    characters a token).

    The text is the answer: it is the text content and, whole, the structured content's first field ``text``, so a
    client that gives the model only the structured content (Claude Code, VS Code: anthropics/claude-code#79944)
    loses none of it. Sent twice, it gets half of what the other fields leave (they take at most a quarter while it
    is long), keeps whole lines from the top and says how many it left out; the other fields keep their shape and
    say what they left out under ``"left_out"``. ``borrowed`` (a borrowed vault:
    :meth:`synapse_nb.borrowed.Borrowed.to_dict`) makes its ``line`` the first line of the text and is the
    ``"borrowed"`` field of the structured content; no cut ever drops either.

    >>> r = result("a\\nb", {"n": 1}, 1000)
    >>> r.structured_content
    {'text': 'a\\nb', 'n': 1}
    """
    limit = max(400, budget_tokens * 4)
    if borrowed is not None:
        line = borrowed["line"]
        if not text.startswith(line):  # a recall's text starts with it already
            text = f"{line}\n\n{text}"
        limit = max(400, limit - _size(borrowed))
    rest = {k: v for k, v in data.items() if k not in ("text", "borrowed")}
    room = limit - min(_size(rest), limit // 4)  # for the text, twice (the text content and the field)
    if len(text) + _size(text) > room:  # JSON's escapes (a newline's backslash) counted at the text's own rate
        text = cut_text(text, max(200, int(room / (1 + _size(text) / len(text)))))
    data = {"text": text, **cut_data(rest, max(200, limit - len(text) - _size(text)))}
    if borrowed is not None:
        data["borrowed"] = borrowed
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def answer_text(res: CallToolResult) -> str:
    """The text of an answer :func:`result` made (what the client reads: a recall marks as given only what it holds
    whole, :meth:`synapse_nb.recall.types.Recall.given_in`)."""
    return "\n".join(c.text for c in res.content if isinstance(c, TextContent))


def cut_text(text: str, max_chars: int) -> str:
    """``text`` in at most about ``max_chars`` characters: whole lines from the top, then what was left out."""
    if len(text) <= max_chars:
        return text
    out, left, _ = head_lines(text, max_chars - 120)
    return "\n".join(out) + (f"\n(… {plural(left, 'more line')} left out to fit the answer budget; ask for less, "
                             "e.g. a narrower query or a smaller limit)" if left else "\n(… the rest of the line "
                             "was left out to fit the answer budget)")


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


class _Tally:
    """What one shrink step left out of one top-level field."""

    def __init__(self) -> None:
        self.chars = 0
        self.items = 0

    def say(self, value: Any) -> str:
        parts = []
        if self.items:
            parts.append(f"{self.items:,} of {len(value):,} items" if isinstance(value, list) else
                         f"{self.items:,} list items")
        if self.chars:
            parts.append(f"{self.chars:,} characters")
        return ", ".join(parts)


def _shrink(value: Any, max_str: int, max_items: int | None, tally: _Tally) -> Any:
    if isinstance(value, str):
        if len(value) <= max_str:
            return value
        tally.chars += len(value) - max_str
        return value[:max_str] + "…"
    if isinstance(value, list):
        keep = value if max_items is None else value[:max_items]
        tally.items += len(value) - len(keep)
        return [_shrink(v, max_str, max_items, tally) for v in keep]
    if isinstance(value, dict):
        return {k: _shrink(v, max_str, max_items, tally) for k, v in value.items()}
    return value


def cut_data(data: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """``data`` in at most about ``max_chars`` characters of JSON, same keys and same types: long strings cut,
    lists shortened from the end, in steps until it fits; what was cut is counted per field in ``"left_out"``
    (the fields in their order: each is cut on its own, so the same answer is cut the same way)."""
    if _size(data) <= max_chars:
        return data
    out: dict[str, Any] = data
    left: dict[str, str] = {}
    for max_str, max_items in _STEPS:
        out, left = {}, {}
        for key in data:
            tally = _Tally()
            out[key] = _shrink(data[key], max_str, max_items, tally)
            if tally.chars or tally.items:
                left[key] = tally.say(data[key])
        if _size(out) + _size(left) + 20 <= max_chars:
            break
    out["left_out"] = left
    return out


# ------------------------------------------------------------------------------------------------ refused arguments
_JSON_TYPES = {bool: "true/false", int: "a whole number", float: "a number with a fraction", str: "text",
               list: "a list", dict: "an object", type(None): "null"}


def _what(value: Any) -> str:
    """What a rejected value was, shortly (never the value itself when it is long)."""
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, bool | int | float) or value is None:
        return f"{kind} ({json.dumps(value)})"
    if isinstance(value, str):
        return f"text ({len(value):,} characters)" if len(value) > 40 else f"text ({inline(value, 40)!r})"
    return kind


def _name(loc: tuple[Any, ...]) -> str:
    head = str(loc[0]) if loc else "arguments"
    rest = [f"item {p + 1}" if isinstance(p, int) else str(p) for p in loc[1:]]
    return " ".join([head, *rest])


def _expected(prop: dict[str, Any]) -> str:
    """What a parameter's schema accepts, in words (for a wrong type)."""
    for alt in prop.get("anyOf", [prop]):
        if "enum" in alt:
            return "one of: " + ", ".join(map(str, alt["enum"]))
        t = alt.get("type")
        if t == "integer":
            lo, hi = alt.get("minimum"), alt.get("maximum")
            return "a whole number" + (f" from {lo:,} to {hi:,}" if lo is not None and hi is not None else
                                       f" >= {lo:,}" if lo is not None else "")
        if t == "string":
            return "text" + (f" of at most {alt['maxLength']:,} characters" if "maxLength" in alt else "")
        if t == "array":
            return "a list of text"
    return "a value of the documented type"


def argument_error(errors: Sequence[Mapping[str, Any]], schema: dict[str, Any]) -> str:
    """One line for the SDK's argument validation ``errors`` (pydantic's ``exc.errors()``), read with the tool's
    input ``schema``: which argument, what was wrong, what is accepted. The first two problems are named.

    >>> argument_error([{"type": "int_type", "loc": ("limit",), "input": True}],
    ...                {"properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 100}}})
    'limit must be a whole number from 1 to 100, got true/false (true)'
    """
    props = schema.get("properties", {})
    said: list[str] = []
    for err in errors[:2]:
        loc = tuple(err.get("loc", ()))
        name = _name(loc)
        prop = props.get(str(loc[0]), {}) if loc else {}
        kind, ctx, value = err.get("type", ""), err.get("ctx") or {}, err.get("input")
        if kind == "missing":
            said.append(f"{name} is required ({_expected(prop)})")
        elif kind == "string_too_long":
            said.append(f"{name} is {len(value) if isinstance(value, str) else 0:,} characters long; at most "
                        f"{ctx.get('max_length', 0):,} are accepted")
        elif kind == "too_long":
            said.append(f"{name} has {ctx.get('actual_length', 0):,} items; at most {ctx.get('max_length', 0):,} "
                        "are accepted")
        elif kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            said.append(f"{name} must be {_expected(prop)}, got {_what(value)}")
        elif kind in ("literal_error", "enum"):  # the value, not its type: "category text ('bogus')" read as if
            # "category text" were a field (review 68)
            shown = (f"{inline(value, 40)!r}" if isinstance(value, str) and len(value) <= 40
                     else f"of {_what(value)}")
            said.append(f"{name} {shown} is not accepted; use {_expected(prop)}")
        elif len(loc) > 1:  # a list item
            said.append(f"{name} must be text, got {_what(value)}")
        else:
            said.append(f"{name} must be {_expected(prop)}, got {_what(value)}")
    more = len(errors) - len(said)
    return "; ".join(said) + (f" (and {plural(more, 'more problem')})" if more > 0 else "")
