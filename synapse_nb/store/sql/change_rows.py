"""The rows of a vault's own changes read whatever they hold (review 46), as :mod:`~synapse_nb.store.sql.decode` reads
the record tables (review 37).

An agent's database login on a team vault (or anyone with an old or edited local vault) writes ``history``,
``revisions`` and ``links`` rows with SQL. A person must still list them, read a record's versions, recall as of a
time, and reject what they cannot read:

- every text column reads as text (:func:`~synapse_nb.store.sql.decode.text`), every timestamp as one or
  :data:`~synapse_nb.store.sql.decode.NO_TIME`; an actor other than ``user`` is an agent's; a status, relation or
  score outside its choices reads as the one a person decides (``pending``, ``open``; ``duplicate``; 0);
- a history entry's ``before`` that describes its own record (a JSON object of its kind and id) is read as a record
  row of that kind is: keys a record does not have dropped, values of the wrong type read as the row's column would
  be (a priority that is not one: ``normal``; tags that are not text: dropped; a source other than ``user``: an
  agent's), and stored back as the canonical JSON of that record. A ``before`` that does not describe it is kept
  as it is: :attr:`synapse_nb.changes.HistoryEntry.unreadable` reads it as unknown, never as a record;
- a revision's ``fields`` are kept as they are: :attr:`synapse_nb.changes.Revision.readable` says whether they are
  values a revision holds (a person rejects one that is not; none is ever accepted).

Every reader prints these fields through ``provenance.inline`` (the rows are not checked on the way in on a local
vault; migration 22 checks an agent login's on a team vault).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from synapse_nb.changes import (
    LINK_STATUSES,
    RELATIONS,
    REVISION_STATUSES,
    UNKNOWN_REASON,
    HistoryEntry,
    Link,
    Revision,
    reason_ok,
    state_json,
)
from synapse_nb.models import KIND_BY_NAME
from synapse_nb.store.sql import decode as dec
from synapse_nb.store.sql.connection import Row
from synapse_nb.store.sql.tables import PRIORITY_RANK, Table

__all__ = ["entry", "link", "record_state", "revision"]

#: record field (``to_dict``) -> its table column, where the two differ
_COLUMN = {"commit": "commit_sha"}


def _row_of_state(table: Table[Any, Any], state: Mapping[str, Any], mind: str) -> dict[str, Any]:
    """A record's ``to_dict()`` as the row its table would hold (the table's own mapping then reads it)."""
    out: dict[str, Any] = dict.fromkeys(table.fields)
    for k, v in state.items():
        col = _COLUMN.get(k, k)
        if col in out:
            out[col] = v
    if table.kind == "memory":  # stored as its rank; a name that is not a priority reads as normal
        out["priority"] = PRIORITY_RANK.get(out["priority"]) if isinstance(out["priority"], str) else None
    if table.kind == "lesson":
        rc = dec.commit(out["revert_commit"])
        out["revert_sha"] = None if rc is None else rc["sha"]
    if not isinstance(out["mind"], str):
        out["mind"] = mind
    return out


def record_state(tables: Mapping[str, Table[Any, Any]], before: Any, kind: str, rid: str, mind: str) -> Any:
    """A stored ``before`` as the canonical JSON of the record it describes, read tolerantly; None stays None, and a
    ``before`` that describes no record of this entry (not JSON, not an object, another record's) is returned as it
    is (read as unknown by :class:`~synapse_nb.changes.HistoryEntry`)."""
    if before is None:
        return None
    state = dec.json_value(before, dict)
    table = tables.get(kind)
    if state is None or table is None or state.get("kind") != kind or state.get("id") != rid:
        return before if isinstance(before, str) else json.dumps(before, default=str)
    try:
        return state_json(table.from_row(_row_of_state(table, state, mind), ""))
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):  # pragma: no cover - decode reads any value
        return before if isinstance(before, str) else json.dumps(before, default=str)


def _version(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _login(v: Any) -> str | None:
    """A login the server recorded (None: a local vault's row, or one from before the server recorded logins)."""
    return dec.opt_text(v) or None


def entry(r: Row, tables: Mapping[str, Table[Any, Any]]) -> HistoryEntry:
    """One ``history`` row as an entry, whatever it holds."""
    kind, rid, mind = dec.text(r["kind"]), dec.text(r["rid"]), dec.text(r["mind"])
    return HistoryEntry(
        id=dec.text(r["id"]), rid=rid, kind=kind, mind=mind, version=_version(r["version"]),
        action=dec.text(r["action"]), actor=dec.source(r["actor"]), surface=dec.text(r["surface"]),
        at=dec.stamp(r["at"]), digest_before=dec.opt_text(r["digest_before"]),
        digest_after=dec.opt_text(r["digest_after"]),
        before=record_state(tables, r["before"], kind, rid, mind), login=_login(r["login"]))


def revision(r: Row) -> Revision:
    """One ``revisions`` row; its ``fields`` as stored (``Revision.readable`` judges them)."""
    return Revision(
        id=dec.text(r["id"]), rid=dec.text(r["rid"]), kind=dec.text(r["kind"]), mind=dec.text(r["mind"]),
        status=dec.one_of(r["status"], REVISION_STATUSES, "pending"), fields=dec.text(r["fields"]),
        base_digest=dec.text(r["base_digest"]), actor=dec.source(r["actor"]), surface=dec.text(r["surface"]),
        created_at=dec.stamp(r["created_at"]), decided_at=dec.opt_stamp(r["decided_at"]), login=_login(r["login"]),
        decided_login=_login(r["decided_login"]))


def link(r: Row) -> Link:
    """One ``links`` row, read as the duplicate check writes one: a score outside 0..1 reads 0, a hidden side that is
    not one of the pair's, or on a contradiction, none, and a reason the check does not give :data:`UNKNOWN_REASON`
    (an agent's SQL wrote its own words there, listed as the check's: migration 22 refuses them since)."""
    kinds = tuple(KIND_BY_NAME)
    a, b = dec.text(r["a"]), dec.text(r["b"])
    relation, hidden, reason = dec.one_of(r["relation"], RELATIONS, "duplicate"), dec.opt_text(r["hidden"]), \
        dec.text(r["reason"])
    return Link(
        id=dec.text(r["id"]), mind=dec.text(r["mind"]), a=a, a_kind=dec.one_of(r["a_kind"], kinds, "memory"), b=b,
        b_kind=dec.one_of(r["b_kind"], kinds, "memory"), relation=relation,
        score=dec.number(r["score"], 0.0, 0.0, 1.0) or 0.0,
        hidden=hidden if relation == "duplicate" and hidden in (a, b) else None,
        status=dec.one_of(r["status"], LINK_STATUSES, "open"), reason=reason if reason_ok(reason) else UNKNOWN_REASON,
        created_at=dec.stamp(r["created_at"]), decided_at=dec.opt_stamp(r["decided_at"]))
