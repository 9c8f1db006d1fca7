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
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from synapse_nb._util import shown_id
from synapse_nb.models import RECORD_TYPES, Record

__all__ = ["ACTIONS", "LINK_STATUSES", "RELATIONS", "REVISION_STATUSES", "SURFACES", "ExportMark", "HistoryEntry",
           "Link", "Revision", "record_from_dict", "state_json"]

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


def _ts(ts: str | None) -> str:
    return "-" if not ts else ts[:19].replace("T", " ")


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

    @property
    def previous(self) -> Record | None:
        """The record as it was before this change (None: it did not exist). An agent's entry describes an agent's
        record that no person verified, whatever its ``before`` says: an agent changes only its own unverified
        records (a change to a person's is a revision), so a ``before`` claiming a person's or a verified record
        is forged (review 4 wrote one with a team login's own SQL) and reads as the agent's."""
        if self.before is None:
            return None
        state = json.loads(self.before)
        if state.get("kind") != self.kind or state.get("id") != self.rid:  # of another record: forged (review 12)
            from synapse_nb.errors import ValidationError

            raise ValidationError(f"history entry {self.id}: its before does not describe {self.kind} {self.rid}")
        if self.actor == "agent":
            state["source"] = "agent"
            if "verified" in state or state.get("kind") == "memory":  # a memory without it reads as verified
                state["verified"] = False
            if state.get("kind") == "lesson":  # an agent's lesson was never a decided one (review 17 wrote one
                # approved in the agent's words with a team login's own SQL; an as_of recall put it under the banner)
                state.update(status="pending", approved_at=None, expires_at=None, lesson_text=None)
                if state.get("analysis_by") == "user":
                    state["analysis_by"] = "agent"
        return record_from_dict(state)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["before"] = None if self.before is None else json.loads(self.before)
        return out

    def line(self) -> str:
        from synapse_nb.provenance import inline  # an imported entry's fields are checked; a stored one is quoted

        return (f"v{self.version:<3} {_ts(self.at)}  {inline(self.action, 12):<9} [{inline(self.actor, 8)} via "
                f"{inline(self.surface, 12)}]  {inline(self.digest_before or '-', 16):>16} -> "
                f"{inline(self.digest_after or '-', 16)}")


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

    @property
    def proposed(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.fields)
        return value

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["fields"] = self.proposed
        return out

    def line(self) -> str:
        """One line: the proposed values after the mark of an agent's words no person checked (a revision is an
        agent's until a human accepts it; the memory then takes the values as the human's)."""
        from synapse_nb.provenance import inline  # one quoted line, whatever the agent wrote

        what = ", ".join(f"{k}={inline(str(v), 60)}" for k, v in sorted(self.proposed.items()))
        return (f"{shown_id(self.id)} {self.status:<8} {_ts(self.created_at)} [{self.actor} via {self.surface}] "
                f"{shown_id(self.rid)}: "
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
        return (f"{shown_id(self.id)} {self.relation:<13} {self.status:<10} {self.score:.2f}  "
                f"{side(self.a)} ~ {side(self.b)}"
                f"  ({inline(self.reason)}{hid})")


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
