"""LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0): long conversations with evidence-labelled questions.

:func:`load_locomo` reads ``locomo10.json`` into :class:`Conversation` objects: the dialog turns (the only
text a retrieval index should hold) and the questions with their evidence turn ids, normalised as the
dataset README describes (``D\\s*:?\\s*(\\d+)\\s*:\\s*(\\d+)`` -> ``D<s>:<t>``, de-duplicated, ids absent from
the conversation dropped). Category ids follow the official evaluation code: 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial.

The data is test/evaluation data of the repository only (non-commercial license): it is never shipped
in the wheel or sdist.

Examples
--------
>>> convs = load_locomo("datasets/locomo/locomo10.json")   # doctest: +SKIP
>>> len(convs), sum(len(c.turns) for c in convs)            # doctest: +SKIP
(10, 5882)
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synapse_nb.errors import DatasetError

__all__ = ["CATEGORIES", "TURN_TIME_KEYS", "Conversation", "Question", "Turn", "format_time", "load_locomo",
           "normalize_evidence", "parse_time"]

#: category id -> name, as scored by LoCoMo's task_eval/evaluation.py
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

#: A turn's own time, when a file gives one (a messaging app's export gives each message its time); LoCoMo gives
#: a time per session only.
TURN_TIME_KEYS = ("date_time", "timestamp", "time", "datetime")
_LOCOMO_TIME = ("%I:%M %p on %d %B %Y", "%I:%M %p on %d %b %Y")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")


def parse_time(value: object) -> _dt.datetime | None:
    """A time as LoCoMo writes it (``"1:56 pm on 8 May, 2023"``), in ISO 8601 (``"2023-05-08T13:56:00Z"``,
    ``"2023-05-08 13:56"``) or as Unix seconds; naive, in the time it was written in (UTC for seconds and zones).

    >>> parse_time("1:56 pm on 8 May, 2023") == parse_time("2023-05-08T15:56:00+02:00") == parse_time(1683554160)
    True
    >>> parse_time("2023-05-08 13:56")
    datetime.datetime(2023, 5, 8, 13, 56)
    >>> parse_time("last Tuesday") is None
    True
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return _dt.datetime.fromtimestamp(value, _dt.UTC).replace(tzinfo=None)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = " ".join(value.replace(",", " ").split())
    for fmt in _LOCOMO_TIME:
        try:
            return _dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
    try:
        t = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.astimezone(_dt.UTC).replace(tzinfo=None) if t.tzinfo is not None else t


def format_time(t: _dt.datetime) -> str:
    """LoCoMo's own format: ``"1:56 pm on 8 May, 2023"`` (no locale, no platform-specific directive).

    >>> format_time(_dt.datetime(2023, 5, 8, 13, 56))
    '1:56 pm on 8 May, 2023'
    """
    hour = t.hour % 12 or 12
    return f"{hour}:{t.minute:02d} {'am' if t.hour < 12 else 'pm'} on {t.day} {_MONTHS[t.month - 1]}, {t.year}"


def _when(value: object, default: str) -> str:
    """A time of the file as LoCoMo writes it (another format it knows is rewritten; anything else kept as text)."""
    if value is None or value == "":
        return default
    t = parse_time(value)
    if isinstance(value, str) and (t is None or " on " in value):  # LoCoMo's own format, or free text: as written
        return value
    return default if t is None else format_time(t)


_EVIDENCE = re.compile(r"D\s*(?::\s*)?(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    """One dialog turn.

    Attributes
    ----------
    dia_id
        ``D<session>:<turn>``, unique within the conversation.
    speaker, text
        Who spoke and what they said (the raw text, without the image caption).
    session
        Session number (1-based, chronological).
    session_date
        The turn's time as free text, e.g. ``"1:56 pm on 8 May, 2023"``: its own when the file gives one
        (:data:`TURN_TIME_KEYS`), else its session's.
    caption
        BLIP caption of a shared image, or ``None``.
    """

    dia_id: str
    speaker: str
    text: str
    session: int
    session_date: str
    caption: str | None = None

    def document(self, *, date: bool = True, caption: bool = True) -> str:
        """Text to index: ``"[<date>] <speaker>: <text> [shares <caption>]"`` (parts optional).

        Examples
        --------
        >>> Turn("D1:1", "Ann", "Hi!", 1, "1 May, 2023", "a dog").document()
        '[1 May, 2023] Ann: Hi! [shares a dog]'
        """
        out = f"{self.speaker}: {self.text}"
        if date and self.session_date:
            out = f"[{self.session_date}] {out}"
        if caption and self.caption:
            out = f"{out} [shares {self.caption}]"
        return out


@dataclass(frozen=True)
class Question:
    """One QA item.

    Attributes
    ----------
    question, answer
        ``answer`` is the gold answer as text (``None`` for adversarial items without one).
    evidence
        Normalised, de-duplicated evidence ``dia_id`` s present in the conversation, in source order.
    category
        1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (see :data:`CATEGORIES`).
    adversarial_answer
        Category 5's distractor answer, else ``None``.
    raw_evidence
        The evidence strings as in the file.
    """

    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: int
    adversarial_answer: str | None = None
    raw_evidence: tuple[str, ...] = ()

    @property
    def category_name(self) -> str:
        """The category's name, e.g. ``"single-hop"``."""
        return CATEGORIES[self.category]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: two speakers, chronological sessions of turns, and questions about them."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def session_dates(self) -> dict[int, str]:
        """Session number -> timestamp, for the sessions that have turns."""
        return {t.session: t.session_date for t in self.turns}

    def turn(self, dia_id: str) -> Turn:
        """The turn with that id (raises DatasetError if absent)."""
        for t in self.turns:
            if t.dia_id == dia_id:
                return t
        raise DatasetError(f"{self.sample_id}: no turn {dia_id!r}")


def normalize_evidence(raw: list[Any] | tuple[Any, ...],
                       known: set[str] | frozenset[str] | None = None) -> tuple[str, ...]:
    """Parse evidence strings into ``D<s>:<t>`` ids: every match of the id pattern, leading zeros dropped,
    duplicates removed (first kept); ids not in ``known`` (when given) are dropped.

    Examples
    --------
    >>> normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D8:6", "D"])
    ('D8:6', 'D9:17', 'D11:26', 'D30:5')
    >>> normalize_evidence(["D1:2", "D4:36"], known={"D1:2"})
    ('D1:2',)
    """
    out: list[str] = []
    for item in raw:
        for s, t in _EVIDENCE.findall(str(item)):
            ident = f"D{int(s)}:{int(t)}"
            if ident not in out and (known is None or ident in known):
                out.append(ident)
    return tuple(out)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def load_locomo(path: str | os.PathLike[str]) -> list[Conversation]:
    """Read ``locomo10.json`` (or a file of the same schema) into conversations, in file order.

    Only the raw dialog turns are kept (``observation``, ``session_summary`` and ``event_summary`` are
    model-written or derived and must not be indexed for retrieval evaluation). Sessions are read from
    the ``session_<n>`` keys (not the date keys: ``conv-26`` has dates for sessions that have no turns).

    Raises
    ------
    DatasetError
        Unreadable file, invalid JSON, or a sample missing ``sample_id``/``conversation``/``qa``.
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file; expected LoCoMo's locomo10.json") from None
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: bytes that are not UTF-8 at offset {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(raw, list):
        raise DatasetError(f"{path}: expected a JSON list of samples, got {type(raw).__name__}")
    convs: list[Conversation] = []
    for i, sample in enumerate(raw, start=1):
        if not isinstance(sample, dict) or not all(k in sample for k in ("sample_id", "conversation", "qa")):
            raise DatasetError(f"{path}: sample {i}: expected keys sample_id, conversation, qa")
        conv = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION.fullmatch(key)) and isinstance(conv[key], list)
        )
        turns: list[Turn] = []
        for number, key in sessions:
            date = _when(conv.get(f"{key}_date_time"), "")
            for turn in conv[key]:
                own = next((turn[k] for k in TURN_TIME_KEYS if turn.get(k) not in (None, "")), None)
                turns.append(
                    Turn(
                        dia_id=str(turn["dia_id"]),
                        speaker=str(turn["speaker"]),
                        text=str(turn.get("text", "")),
                        session=number,
                        session_date=_when(own, date),
                        caption=_text(turn.get("blip_caption")),
                    )
                )
        known = frozenset(t.dia_id for t in turns)
        questions = []
        for item in sample["qa"]:
            category = int(item["category"])
            if category not in CATEGORIES:
                raise DatasetError(f"{path}: sample {sample['sample_id']}: unknown category {category}; accepted: 1-5")
            evidence_raw = tuple(str(e) for e in item.get("evidence", []))
            questions.append(
                Question(
                    question=str(item["question"]),
                    answer=_text(item.get("answer")),
                    evidence=normalize_evidence(evidence_raw, known),
                    category=category,
                    adversarial_answer=_text(item.get("adversarial_answer")),
                    raw_evidence=evidence_raw,
                )
            )
        convs.append(
            Conversation(
                sample_id=str(sample["sample_id"]),
                speaker_a=str(conv.get("speaker_a", "")),
                speaker_b=str(conv.get("speaker_b", "")),
                turns=tuple(turns),
                questions=tuple(questions),
            )
        )
    return convs
