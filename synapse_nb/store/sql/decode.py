"""A row's columns read into a record's values whatever the row holds (review 37).

The write path stores only well-formed values, but rows reach a vault other ways: an agent's database login writing
with SQL on a team server, an old local vault, a file someone edited. A reader must still list, review, reject and
purge such a row, so every column is read tolerantly here, one rule for every kind:

- a JSON column that is not JSON, or not the JSON type the field holds (a list, an object), reads as empty;
- a list's items that are not what the field holds (a file name that is not a string, a diffstat row that is not
  ``[path, added, deleted]``, a commit that is not an object with a ``sha``) are dropped;
- a value outside its field's choices reads as the least trusted choice (a ``source`` other than ``user`` is
  ``agent``; a lesson status other than the three is ``pending``, which a person reviews; an episode's is
  ``unknown``; a priority out of range is ``normal``), and a number that is not one reads as its default;
- a timestamp that is not one (``2026-11-30T21:15:07.123456Z``) reads as :data:`NO_TIME`, the start of 1970: an
  approved lesson whose expiry is not a time is expired, and no reader prints what the column held.

Free text (a category, a key, a content) is kept as stored: the readers render it (``provenance.inline``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from synapse_nb._util import ts_text
from synapse_nb.models import PRIORITIES

__all__ = ["NO_TIME", "commit", "commits", "diffstat", "json_value", "number", "one_of", "priority", "seq", "source",
           "stamp", "text_items", "verified"]

#: The statuses a lesson row may hold (``kinds.lessons.STATUSES``; the store imports no kind manager).
LESSON_STATUSES = ("pending", "approved", "expired")
#: The statuses an episode row may hold (``kinds.episodes.STATUSES``).
EPISODE_STATUSES = ("success", "failure", "unknown")
#: The keys of a commit description (``kinds.lesson_fields._COMMIT_KEYS``).
COMMIT_KEYS = ("sha", "subject", "author", "date")


def json_value(raw: Any, kind: type) -> Any:
    """A JSON column's value if it is JSON of type ``kind`` (``list`` or ``dict``), else None. A backend that hands
    the value over decoded (a list, a dict) is read as it is.

    >>> json_value('["a"]', list), json_value("[", list), json_value('{"a": 1}', list), json_value(None, dict)
    (['a'], None, None, None)
    """
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, kind) else None


def text_items(raw: Any) -> tuple[str, ...]:
    """A JSON list of strings (tags, file names, refs): items that are not strings dropped.

    >>> text_items('["a.py", null, {"a": 1}, 3, "b.py"]'), text_items('"a.py"')
    (('a.py', 'b.py'), ())
    """
    return tuple(x for x in json_value(raw, list) or () if isinstance(x, str))


def _count(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def diffstat(raw: Any) -> tuple[tuple[str, int, int], ...]:
    """Diffstat rows ``(path, added, deleted)`` (counts whole numbers >= 0, or None for a binary file); other rows
    dropped.

    >>> diffstat('[null, 1, ["a.py", 1, 2], ["b.py", "x", 1], ["c.py", null, null, 4]]')
    (('a.py', 1, 2),)
    """
    return tuple((x[0], x[1], x[2]) for x in json_value(raw, list) or ()
                 if isinstance(x, list | tuple) and len(x) == 3 and isinstance(x[0], str) and _count(x[1])
                 and _count(x[2]))


def commit(value: Any) -> dict[str, Any] | None:
    """A commit description (an object with a non-empty ``sha`` string; subject, author and date strings or null),
    else None; a subject, author or date that is not a string reads as null (other keys are kept: the readers name
    the four).

    >>> commit({"sha": "abc", "subject": 3, "x": 1}), commit({"sha": ""}), commit("abc")
    ({'sha': 'abc', 'subject': None, 'x': 1}, None, None)
    """
    if isinstance(value, str | bytes):
        value = json_value(value, dict)
    if not isinstance(value, dict) or not isinstance(value.get("sha"), str) or not value["sha"]:
        return None
    return {k: None if k in COMMIT_KEYS and not isinstance(v, str) else v for k, v in value.items()}


def commits(raw: Any) -> tuple[dict[str, Any], ...]:
    """A JSON list of commit descriptions (:func:`commit`); other items dropped."""
    return tuple(c for c in map(commit, json_value(raw, list) or ()) if c is not None)


def one_of(value: Any, choices: tuple[str, ...], default: str) -> str:
    """``value`` if it is one of ``choices``, else ``default``."""
    return value if isinstance(value, str) and value in choices else default


def source(value: Any) -> str:
    """Who wrote a row: ``user`` only when the row says exactly that; anything else is an agent's."""
    return "user" if value == "user" else "agent"


def priority(value: Any) -> str:
    """A memory's stored priority number (0 critical ... 3 low); anything else reads as ``normal``."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(PRIORITIES):
        return PRIORITIES[value]
    return "normal"


def verified(value: Any) -> bool:
    """Whether a person verified a memory: only a stored 1 (or true) says so."""
    return value is True or (isinstance(value, int) and value == 1)


def number(value: Any, default: float | None, low: float = -math.inf, high: float = math.inf) -> float | None:
    """A finite number in ``[low, high]``, else ``default``."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and low <= value <= high:
        return float(value)
    return default


def seq(value: Any) -> int | None:
    """An episode's order in its thread: a whole number, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: Any) -> str:
    """A text column that must hold text: a value of another type as its string form (None as "")."""
    return value if isinstance(value, str) else "" if value is None else str(value)


def opt_text(value: Any) -> str | None:
    """A text column that may be null: a value of another type as its string form."""
    return None if value is None else text(value)


#: What a timestamp column that holds no timestamp reads as.
NO_TIME = "1970-01-01T00:00:00.000000Z"


def stamp(value: Any) -> str:
    """A stored timestamp, or :data:`NO_TIME` when the column holds something else.

    A stored timestamp is the one form every version wrote (:func:`synapse_nb._util.ts_text`: Python's ``fmt_ts``
    since the first vault, an import's normalised stamp, PostgreSQL's ``fmt_ts`` under the ``ts`` domain's check):
    a row with an offset or a short fraction was written by SQL, not by us, and reads as no time.

    >>> stamp("2026-11-30T21:15:07.123456Z"), stamp("zz \\x1b[2J")
    ('2026-11-30T21:15:07.123456Z', '1970-01-01T00:00:00.000000Z')
    """
    return value if ts_text(value) else NO_TIME


def opt_stamp(value: Any) -> str | None:
    """A timestamp that may be null (an expiry, an approval)."""
    return None if value is None else stamp(value)
