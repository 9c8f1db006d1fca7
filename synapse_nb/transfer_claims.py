"""The trust claims of an export's lines (:mod:`synapse_nb.transfer`): what only a human makes, refused by an
import unless the person passes ``trust=True`` (CLI ``--trust``)."""

from __future__ import annotations

import json
from typing import Any

from synapse_nb.changes import record_from_dict
from synapse_nb.kinds.registry import MANAGERS
from synapse_nb.provenance import inline
from synapse_nb.settings import EMBEDDER
from synapse_nb.store.embedders import loads_code
from synapse_nb.transfer_history import HISTORY_KIND

__all__ = ["trust_claims"]


def trust_claims(doc: dict[str, Any]) -> list[str]:
    """The trust claims one export line makes: what only a human can make (see the module docstring).

    >>> trust_claims({"kind": "memory", "source": "user", "verified": 1})
    ['memory source=user', 'memory verified']
    >>> trust_claims({"kind": "lesson", "source": "agent", "status": "approved", "approved_at": "...",
    ...               "expires_at": "...", "analysis_by": "user"})
    ['lesson status=approved', 'lesson approved_at', 'lesson expires_at', 'lesson analysis_by=user']
    >>> trust_claims({"kind": "setting", "name": "recall_floor", "value": 0}), trust_claims({"kind": "note"})
    (['setting recall_floor'], [])
    >>> trust_claims({"kind": "setting", "name": "recall_embedder", "value": "import:evil:make"})
    ["setting recall_embedder=import:evil:make (runs that module's code in every process of the vault)"]
    >>> trust_claims({"kind": "episode", "source": "agent", "actor": "Maria"})
    ["episode actor as the speaker's own words"]
    >>> trust_claims({"kind": "memory", "source": "agent", "verified": 0, "confidence": 1.0})
    ['memory confidence>0.7']
    >>> trust_claims({"kind": "history", "kind_of": "memory", "actor": "agent",
    ...               "before": '{"source": "user", "verified": true}'})
    ['history before source=user', 'history before verified']
    """
    kind = doc.get("kind")
    if kind == "setting":
        value = doc.get("value")
        # every process that recalls with the semantic channel loads it: a module's code, a folder's (review 63)
        if doc.get("name") == EMBEDDER and isinstance(value, str) and (note := loads_code(value)):
            return [f"setting {EMBEDDER}={inline(value, 120)} ({note})"]
        return [f"setting {doc.get('name')}"]
    if kind == HISTORY_KIND:  # who changed a record, and what it was: what `memory revert` and as_of reads bring back
        out = ["history actor=user"] if doc.get("actor") == "user" else []
        try:
            before = json.loads(doc["before"]) if isinstance(doc.get("before"), str) else None
        except ValueError:
            before = None
        if isinstance(before, dict) and doc.get("kind_of") != HISTORY_KIND:  # a record, never another entry
            was = trust_claims(_as_read({**before, "kind": doc.get("kind_of")}))
            out += [f"history before {c.split(' ', 1)[1]}" for c in was]
        return out
    out = [f"{kind} source=user"] if doc.get("source") == "user" else []
    if kind == "memory" and doc.get("verified"):
        out.append("memory verified")
    if doc.get("source") != "user" and kind in MANAGERS:  # what no agent's write could have written (review 38)
        out += [f"{kind} {c}" for c in MANAGERS[kind].past_agent_limits(doc)]
    if kind == "lesson":
        if doc.get("status") not in (None, "pending"):
            out.append(f"lesson status={doc['status']}")
        # lesson_text: the wording a human approved; on a pending lesson, what an approval without text would
        # take as the user's wording (no agent-wording check)
        out += [f"lesson {f}" for f in ("approved_at", "expires_at", "lesson_text") if doc.get(f) is not None]
        if doc.get("analysis_by") == "user":
            out.append("lesson analysis_by=user")
    return out


def _as_read(state: dict[str, Any]) -> dict[str, Any]:
    """A history entry's ``before`` as the vault reads it back (``memory revert``, ``as_of``): a field it leaves
    out takes the record's default (a memory without ``confidence`` is 1.0 sure, without ``verified`` verified)."""
    try:
        return record_from_dict(state).to_dict()
    except (TypeError, ValueError, KeyError):  # not a whole record: its claims are what it says
        return state
