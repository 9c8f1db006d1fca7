"""What a vault remembers about its own changes: history entries, pending revisions, duplicate / contradiction links,
and the exports it has handed out (issue 30, docs/decisions/0013-memory-history.md).

These are values, not records of a kind: they never enter recall. Each is a frozen dataclass with ``to_dict()``
(stable field names, JSON-safe) and one ``line()`` for listings, the provenance of the change first.

- :class:`HistoryEntry`: one mutation of one record (create, update, verify, approve, reject, expire, delete,
  import, revert, accept). ``before`` is the record as it was (its ``to_dict()``), None for a record that did not
  exist; the digests are :attr:`synapse_nb.models.Record.digest` before and after (None: no record).
- :class:`Revision`: an agent's proposed change to a memory a human verified, pending until a human accepts or
  rejects it.
- :class:`Link`: two records of a mind that look like the same fact (``duplicate``) or the same subject with
  differing numbers, dates or negation (``contradiction``), open until a human merges, keeps both or supersedes.
- :class:`ExportMark`: an export taken (when, where to), so a purge can say which exports still hold a record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from synapse_nb._cleaning import invisible_at
from synapse_nb._util import parse_ts, plural, shown_id
from synapse_nb.models import PRIORITIES, RECORD_TYPES, Record, past_agent_limits

__all__ = ["ACTIONS", "ALL_PAIRS", "LINK_STATUSES", "MOST_PAIRS", "RELATIONS", "REVISED_FIELDS", "REVISION_STATUSES",
           "SURFACES", "UNKNOWN_REASON", "Conflicts", "ExportMark", "HistoryEntry", "Link", "Revision", "proposal",
           "reason_ok", "record_from_dict", "state_json"]

#: What a history entry records.
ACTIONS: tuple[str, ...] = ("create", "update", "verify", "approve", "reject", "expire", "delete", "import",
                            "revert", "accept", "merge", "supersede", "analyse")
#: Where a change came from (``Context.surface``): the Python API unless a surface says otherwise.
SURFACES: tuple[str, ...] = ("api", "cli", "mcp", "notebook", "hook", "git-hook", "import", "widget")
REVISION_STATUSES: tuple[str, ...] = ("pending", "accepted", "rejected")
RELATIONS: tuple[str, ...] = ("duplicate", "contradiction")
#: A link is ``open`` until a human decides: ``merged`` (the hidden one's tags join the other, it is deleted),
#: ``kept`` (both stand, both recalled), ``superseded`` (the newer stands, the older is deleted).
LINK_STATUSES: tuple[str, ...] = ("open", "kept", "merged", "superseded")
#: The reasons the duplicate check gives (``dupes.classify``; "same words, ..." an earlier version's), and the form of
#: those that list words of the two texts (1 to 4, each 1 to 64 characters without a comma, bracket, space or control):
#: migration 22 (``_link_reason_ok``) holds an agent login's pairs to the same forms.
_REASONS = frozenset(("same subject, negated on one side",
                      "the shorter one's words are in the other, weighted by rarity", "same words, weighted by rarity"))
_LISTED = re.compile(r"same subject, differing (?:numbers or dates|names) \((.*)\)", re.DOTALL)
_WORD = re.compile(r"[^,()\s\x00-\x1f\x7f-\x9f\u2028\u2029]{1,64}")
#: What a pair's reason reads as when it is not one the check gives (written with SQL: an agent's words, which the
#: person would read as the check's).
UNKNOWN_REASON = "a reason the duplicate check does not give (not shown)"


def reason_ok(reason: str) -> bool:
    """Whether ``reason`` is one the duplicate check gives.

    >>> reason_ok("same subject, differing numbers or dates (5, 7)"), reason_ok("the user approved superseding it")
    (True, False)
    """
    if reason in _REASONS:
        return True
    m = _LISTED.fullmatch(reason)
    if m is None or invisible_at(m.group(1)):  # an invisible format character (U+202E...): _text_fault refuses it
        return False
    words = m.group(1).split(", ")
    return 1 <= len(words) <= 4 and all(_WORD.fullmatch(w) for w in words)


#: The fields an agent's revision may change.
REVISED_FIELDS: tuple[str, ...] = ("content", "tags", "priority", "expires_at")
#: What a revision shows when its ``fields`` are not values an agent's revision holds (written with SQL, review 46).
UNREADABLE = "(unreadable: not the values of a memory's content, tags, priority or expiry; reject it)"


def state_json(record: Record | None) -> str | None:
    """A record as a history entry stores it: its ``to_dict()`` as canonical JSON (sorted keys), or None."""
    if record is None:
        return None
    return json.dumps(record.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def record_from_dict(d: dict[str, Any]) -> Record:
    """The record a ``to_dict()`` describes (lists become the tuples the record types hold)."""
    cls = RECORD_TYPES[d["kind"]]
    record: Record = cls(**{k: _tuples(v) for k, v in d.items() if k != "kind"})
    return record


def _ts(ts: object) -> str:
    from synapse_nb.provenance import inline

    return "-" if not ts else inline(str(ts)[:19].replace("T", " "))


def _stamp(v: Any) -> bool:
    try:
        parse_ts(v)
    except (ValueError, TypeError, OverflowError):  # ValidationError is a ValueError
        return False
    return True


#: What each field a revision may change holds (``Memory``'s types: text, a list of text, a priority, a time or None).
_PROPOSED_TYPES = {
    "content": lambda v: isinstance(v, str),
    "tags": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "priority": lambda v: isinstance(v, str) and v in PRIORITIES,
    "expires_at": lambda v: v is None or (isinstance(v, str) and _stamp(v)),
}


def proposal(fields: object) -> dict[str, Any] | None:
    """A revision's proposed values if ``fields`` is a JSON object of :data:`REVISED_FIELDS` keys with values of
    their types, else None: unreadable (a row written with SQL, review 46), shown as such, never accepted.

    >>> proposal('{"content": "x", "tags": ["a"]}'), proposal('["content"]'), proposal('{"verified": true}')
    ({'content': 'x', 'tags': ['a']}, None, None)
    """
    if not isinstance(fields, str):
        return None
    try:
        value = json.loads(fields)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not value:
        return None
    if not all(k in _PROPOSED_TYPES and _PROPOSED_TYPES[k](v) for k, v in value.items()):
        return None
    return value


@dataclass(frozen=True)
class HistoryEntry:
    """One change of one record (append-only; ordered by ``at`` then ``id``)."""

    id: str
    rid: str
    kind: str
    mind: str
    version: int
    action: str
    actor: str
    surface: str
    at: str
    digest_before: str | None
    digest_after: str | None
    before: str | None = None  # the record before the change, as canonical JSON (state_json)
    #: the database login that wrote the entry on a team vault (set by the server: migration 11), else None
    login: str | None = None

    @property
    def state(self) -> dict[str, Any] | None:
        """``before`` as the dict it holds when it describes this entry's record (its kind and id), else None: no
        ``before``, or an unreadable one (not JSON, not an object, another record's: :attr:`unreadable`). The store
        reads a stored ``before`` as a record row is read (``store/sql/change_rows.py``: unknown keys dropped,
        values of the wrong type read as a row's are)."""
        if self.before is None:
            return None
        try:
            state = json.loads(self.before)
        except (ValueError, TypeError, RecursionError):
            return None
        if not isinstance(state, dict) or state.get("kind") != self.kind or state.get("id") != self.rid:
            return None  # of another record: forged (review 12), read as unknown
        return state

    @property
    def previous(self) -> Record | None:
        """The record as it was before this change (None: it did not exist, or :attr:`unreadable`: unknown). An
        agent's entry describes an agent's record that no person verified, whatever its ``before`` says: an agent
        changes only its own unverified records (a change to a person's is a revision), so a ``before`` claiming a
        person's or a verified record is forged (review 4 wrote one with a team login's own SQL) and reads as the
        agent's, held to what an agent's write of its kind leaves (``models.past_agent_limits``: a memory at most
        0.7 sure, a checkpoint of an agent's origin, an episode's actor marked as reported; an entry at 1.0 written
        with the agent login's SQL came back that sure through a revert, one of a checkpoint "from the CLI"). A
        ``before`` that describes no record of this entry (written with SQL, review 46) reads as unknown: an
        ``as_of`` read skips the entry, and no reader fails on it."""
        state = self.state
        if state is None:
            return None
        state = dict(state)
        if self.actor != "user":
            state["source"] = "agent"
            if "verified" in state or state.get("kind") == "memory":  # a memory without it reads as verified
                state["verified"] = False
            # what an agent's write of its kind leaves: a memory at most AGENT_MAX_CONFIDENCE sure, a checkpoint of
            # an agent's origin, an episode's actor other than the agent marked as reported (an entry written with
            # the agent login's SQL claimed a person's origin or a person's own words)
            state.update(past_agent_limits(str(state.get("kind")), state))
            if state.get("kind") == "lesson":  # an agent's lesson was never a decided one (review 17 wrote one
                # approved in the agent's words with a team login's own SQL; an as_of recall put it under the banner)
                state.update(status="pending", approved_at=None, expires_at=None, lesson_text=None)
                if state.get("analysis_by") == "user":
                    state["analysis_by"] = "agent"
        try:
            return record_from_dict(state)
        except (TypeError, ValueError, KeyError, AttributeError):
            return None

    @property
    def unreadable(self) -> bool:
        """Whether the entry has a ``before`` that describes no record of it: what the record was is unknown."""
        return self.before is not None and self.previous is None

    def to_dict(self) -> dict[str, Any]:
        out = _logins(asdict(self))
        # an unreadable before is given as the text it is (quoted by every surface), never as a record
        out["before"] = None if self.before is None else self.state if not self.unreadable else self.before
        return out

    @property
    def whose(self) -> str:
        """``alice's``: the login that made this change, as a line shows it (``''``: none, a local vault)."""
        from synapse_nb.provenance import inline

        return f"{inline(self.login, LOGIN_CHARS)}'s" if self.login else ""

    def restore_hint(self) -> str:
        """``alice's version is v1: `synapse-nb memory revert mem_... --to 1```: the version this entry left, whose
        it is, and the command that restores it (what every surface says of a person's write that replaced it)."""
        sid = shown_id(self.rid)
        return f"{self.whose} version is v{self.version}: `synapse-nb memory revert {sid} --to {self.version}`"

    def replaced_note(self) -> str:
        """The note of a person's write that replaced the version this entry left (``Memory.note``, every surface's
        one sentence: ``Versions.overwritten`` decides when): ``replaced alice's memory mem_...; alice's version is
        v1: `synapse-nb memory revert mem_... --to 1```."""
        return f"replaced {self.whose} memory {shown_id(self.rid)}; {self.restore_hint()}"

    def line(self, *, from_file: bool = False) -> str:
        """The entry as ``memory history`` lists it; ``from_file``: an imported file supplied it, and what it says
        of who, when and through which surface is the file's (``Versions.from_file``; review 92)."""
        from synapse_nb.provenance import inline  # an imported entry's fields are checked; a stored one is quoted

        return (f"v{inline(self.version, 6):<3} {_ts(self.at)}  {inline(self.action, 12):<9} "
                f"[{'from a file: ' if from_file else ''}{_who(self.actor, self.login)} via "
                f"{inline(self.surface, 12)}]  "
                f"{inline(self.digest_before or '-', 16):>16} -> {inline(self.digest_after or '-', 16)}")


#: The longest login a line shows (PostgreSQL's NAMEDATALEN - 1)
LOGIN_CHARS = 63


def _who(actor: str, login: str | None) -> str:
    """``user`` / ``agent``, and on a team vault the login that made the change (the server's, every machine alike):
    ``user alice``, ``agent agent_alice``."""
    from synapse_nb.provenance import inline

    return inline(actor, 8) + ("" if not login else f" {inline(login, LOGIN_CHARS)}")


def _logins(out: dict[str, Any]) -> dict[str, Any]:
    """A ``to_dict()`` without the login fields a local vault never has (its output as before team logins were
    shown)."""
    for k in ("login", "decided_login"):
        if k in out and out[k] is None:
            del out[k]
    return out


#: the mark before a revision's proposed values: an agent's words, whatever memory they would change
PROPOSED_MARK = "[agent · unverified]"


@dataclass(frozen=True)
class Revision:
    """An agent's proposed change to a human-verified memory: ``fields`` are the values it would set."""

    id: str
    rid: str
    kind: str
    mind: str
    status: str
    fields: str  # canonical JSON object of the proposed values
    base_digest: str
    actor: str
    surface: str
    created_at: str
    decided_at: str | None = None
    #: on a team vault, the login that proposed it and the one that accepted or rejected it (the server's), else None
    login: str | None = None
    decided_login: str | None = None

    @property
    def proposed(self) -> dict[str, Any]:
        """The proposed values ({} when :attr:`readable` is false)."""
        return proposal(self.fields) or {}

    @property
    def readable(self) -> bool:
        """Whether ``fields`` are values a revision holds (:func:`proposal`); an unreadable one is rejected only."""
        return proposal(self.fields) is not None

    def to_dict(self) -> dict[str, Any]:
        out = _logins(asdict(self))
        out["fields"] = self.proposed if self.readable else self.fields  # unreadable: the text it is, quoted
        out["readable"] = self.readable
        return out

    def line(self) -> str:
        """One line: the proposed values after the mark of an agent's words no person checked (a revision is an
        agent's until a human accepts it; the memory then takes the values as the human's). Every field is one
        quoted line (review 46: a surface written with SQL held ESC sequences that erased the line)."""
        from synapse_nb.provenance import inline  # one quoted line, whatever the agent wrote

        what = (", ".join(f"{k}={inline(str(v), 60)}" for k, v in sorted(self.proposed.items())) if self.readable
                else UNREADABLE)
        decided = ("" if not self.decided_login else
                   f", {inline(self.status, 10)} by {inline(self.decided_login, LOGIN_CHARS)}")
        return (f"{shown_id(self.id)} {inline(self.status, 10):<8} {_ts(self.created_at)} "
                f"[{_who(self.actor, self.login)} via {inline(self.surface, 12)}{decided}] {shown_id(self.rid)}: "
                f"{PROPOSED_MARK} {what}")


@dataclass(frozen=True)
class Link:
    """Two records that look like the same fact (or the same subject, contradicting); ``hidden`` is the one recall
    leaves out while the link is open (None: neither)."""

    id: str
    mind: str
    a: str
    a_kind: str
    b: str
    b_kind: str
    relation: str
    score: float
    hidden: str | None
    status: str
    reason: str
    created_at: str
    decided_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self, marks: Mapping[str, str] | None = None) -> str:
        """One line; ``marks`` (record id -> its provenance mark) says who wrote each side, after its id."""
        from synapse_nb.provenance import inline  # the reason quotes words of the two records' text

        def side(rid: str) -> str:
            got = (marks or {}).get(rid)
            return f"{shown_id(rid)} {got}" if got else shown_id(rid)

        hid = f", hides {shown_id(self.hidden)}" if self.hidden else ""
        return (f"{shown_id(self.id)} {inline(self.relation, 13):<13} {inline(self.status, 10):<10} "
                f"{self.score:.2f}  {side(self.a)} ~ {side(self.b)}  ({inline(self.reason)}{hid})")


#: The most pairs a listing of conflicts shows unless told (``memory conflicts -n``; the list itself holds them all)
MOST_PAIRS = 20
#: Where every pair of a cut listing is listed
ALL_PAIRS = "synapse-nb memory conflicts"


class Conflicts(list[Link]):
    """The pairs ``Memories.conflicts()`` lists: people's first, then the pairs of two agents' records.

    Ordered by how many of a pair's two sides stand as a person's (:func:`~synapse_nb.provenance.human_record`: both,
    one, none), each group oldest first. The last ``agents`` pairs have no person's record in them (two agents'
    unverified records): they are not what a person's queue is about, so :meth:`lines` (``memory conflicts``, the
    list's text) counts them in one line unless asked for them, and ``memory status`` counts them apart (review 83:
    5,000 near-duplicate agent memories put 24,994 pairs in the person's queue, the listing printed every one).
    ``marks`` is each side's provenance mark by id (:func:`~synapse_nb.provenance.mark`).

    ``unchecked``: how many writes a person's bulk load (or an agent's transaction whose pairs a team server refused)
    left waiting for the duplicate check past what this listing checked (``dupes.READ_CHECKS`` a listing: review 75);
    ``note`` says so and how to check the rest."""

    unchecked: int = 0
    #: how many pairs, the last ones, are between two records no person stands behind (agents' unverified records)
    agents: int = 0
    marks: dict[str, str]

    def __init__(self, links: Iterable[Link] = ()) -> None:
        super().__init__(links)
        self.marks = {}

    @classmethod
    def of(cls, links: Iterable[Link], read: Callable[[list[str]], Mapping[str, Any]]) -> Conflicts:
        """``links`` people's pairs first, then those with a person's record on one side, then agents' pairs, each
        group in the given order; ``read`` gives the records of ids (``Context.stored``). A side no record answers
        (deleted since) stands as no person's, but a pair is agents' only when both its records were read."""
        from synapse_nb.provenance import human_record, mark

        links = list(links)
        recs = read(sorted({rid for x in links for rid in (x.a, x.b)}))
        persons = {rid: human_record(rec) for rid, rec in recs.items()}  # False: an agent's; absent: deleted since

        def rank(x: Link) -> int:  # 0: two people's records; 1: one; 2: none, a side deleted since; 3: two agents'
            a, b = persons.get(x.a), persons.get(x.b)
            return 3 if a is False and b is False else 2 - (a is True) - (b is True)

        ranks = {x.id: rank(x) for x in links}
        out = cls(sorted(links, key=lambda x: ranks[x.id]))  # stable: each group in the given order
        out.agents = sum(r == 3 for r in ranks.values())
        out.marks = {rid: mark(rec) for rid, rec in recs.items()}
        return out

    @property
    def people(self) -> list[Link]:
        """The pairs with a person's record in them (or a side deleted since): the person's queue."""
        return self[:len(self) - self.agents]

    def lines(self, limit: int | None = MOST_PAIRS, *, agents: bool = False) -> list[str]:
        """The listing a person reads: a line a pair (:meth:`Link.line`, each side with its mark), people's first,
        at most ``limit`` (None: all); ``agents``: agents' pairs too, after them, else one line counts them. A line
        says what the limit left out.

        >>> got = Conflicts([Link(id=f"lnk_{i}", mind="m", a=f"mem_a{i}", a_kind="memory", b=f"mem_b{i}",
        ...                       b_kind="memory", relation="duplicate", score=0.9, hidden=None, status="open",
        ...                       reason="same words", created_at="") for i in range(30)])
        >>> got.agents = 27
        >>> print("\\n".join(got.lines(2)))
        lnk_0 duplicate     open       0.90  mem_a0 ~ mem_b0  (same words)
        lnk_1 duplicate     open       0.90  mem_a1 ~ mem_b1  (same words)
        (… 1 more conflict not listed: synapse-nb memory conflicts -n 0 lists all)
        27 conflicts between agents' unverified records not listed: synapse-nb memory conflicts --agents lists them
        """
        listed = list(self) if agents else self.people
        shown = listed if limit is None else listed[:limit]
        out = [x.line(self.marks) for x in shown]
        if len(listed) > len(shown):
            more = plural(len(listed) - len(shown), "more conflict")
            out.append(f"(… {more} not listed: {ALL_PAIRS} {'--agents ' if agents else ''}-n 0 lists all)")
        if self.agents and not agents:
            out.append(f"{plural(self.agents, 'conflict')} between agents' unverified records not listed: {ALL_PAIRS} "
                       "--agents lists them")
        return out

    def __str__(self) -> str:
        """The listing's lines (:meth:`lines`: people's pairs first, at most :data:`MOST_PAIRS`) and the note."""
        return "\n".join([*self.lines(), *([] if self.note is None else [f"note: {self.note}"])]) or "no conflicts"

    __repr__ = __str__

    @property
    def note(self) -> str | None:
        """One line when writes still wait for the check, else None.

        >>> got = Conflicts(); got.unchecked = 2900; print(got.note)
        2,900 writes waiting for the duplicate check (a listing checks some): synapse-nb memory conflicts --check-all
        """
        if not self.unchecked:
            return None
        return (f"{plural(self.unchecked, 'write')} waiting for the duplicate check (a listing checks some): "
                "synapse-nb memory conflicts --check-all")


@dataclass(frozen=True)
class ExportMark:
    """An export taken: when, where to (None: returned as text), how many records and history entries."""

    id: str
    taken_at: str
    dest: str | None
    records: int
    history: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
