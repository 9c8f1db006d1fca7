"""An import counts the agents' records a file brings against the agents' caps (review 69).

Without ``trust`` an import takes a file an agent could have written; what no agent's write could have put in the
vault is a trust claim (:mod:`synapse_nb.transfer`). An agent's writes are bounded: a mind holds at most
:data:`~synapse_nb.kinds.lessons.AGENT_PENDING_LESSONS` pending lessons agents made and an agent's lesson is refused
past :data:`~synapse_nb.kinds.lessons.SCAN_PENDING_LESSONS` pending ones in all (a human's review queue is bounded),
and agents hold at most ``agent_memories_per_mind`` memories in a mind and the bounded totals
(``agent_records_per_mind``, ``agent_records_per_vault``, ``agent_megabytes_per_vault``:
:func:`~synapse_nb.kinds._base.check_agent_totals`). An import is a person's write, which no cap refuses (on a team
vault the server counts a person's statements and never refuses them), so an agent-made file of 300 pending agent
lessons, imported by a person without ``--trust``, put 300 in the person's review queue.

Now the records a file brings are counted, in file order, with what the vault holds (read in the import's
transaction before its first record is written: the lessons table's ``agent_pending`` and ``pending_total``, the
store's ``agent_memories`` and ``agent_held``), as an agent's writes are: each record an agent's write would have
been refused for makes a claim (:data:`LESSON_CAP`, ``"<kind> past <setting>"``), which refuses the import whole
unless the person passes ``trust=True`` and lists the record with it. A claim, not a refusal even with trust: a
person's own records (a merge of two vaults' exports) are never limited, and the claim says what they accept.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from synapse_nb.kinds._base import MEGABYTE, QUOTA_SETTINGS
from synapse_nb.kinds.lesson_scan import FIRST_BY
from synapse_nb.kinds.lessons import AGENT_PENDING_LESSONS, SCAN_PENDING_LESSONS
from synapse_nb.models import TABLES
from synapse_nb.settings import Settings
from synapse_nb.store.records import JSON_FIELDS
from synapse_nb.store.sqlite.held_schema import HELD_FIELDS

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.store.base import LessonTable

__all__ = ["LESSON_CAP", "AgentCaps", "agent_pending", "held"]

#: The claim of a pending lesson agents made that an agent's write would not have added: the mind held
#: AGENT_PENDING_LESSONS of them, or SCAN_PENDING_LESSONS pending lessons in all.
LESSON_CAP = "lesson past the agents' pending lesson caps"


def agent_pending(doc: dict[str, Any]) -> bool:
    """A pending lesson agents made, or that a person's scan took over from an agent's (the lessons table's
    ``agent_pending``)."""
    commit = doc.get("revert_commit")
    return doc["status"] == "pending" and (
        doc["source"] == "agent" or (isinstance(commit, dict) and commit.get(FIRST_BY) == "agent"))


def held(kind: str, doc: dict[str, Any]) -> bool:
    """A record agents hold (the bounded totals' count, store/sqlite/held_schema.py ``HELD``)."""
    return doc.get("source") == "agent" and not (kind == "memory" and doc["verified"]) and not (
        kind == "lesson" and doc["status"] != "pending")


def held_bytes(kind: str, doc: dict[str, Any]) -> int:
    """The UTF-8 bytes of a held record's counted fields as stored (JSON fields as their stored text)."""
    json_fields = JSON_FIELDS[kind]
    n = 0
    for f in HELD_FIELDS[TABLES[kind]]:
        v = doc.get(f)
        if v is not None:
            text = json.dumps(v, sort_keys=True, ensure_ascii=False) if f in json_fields else str(v)
            n += len(text.encode("utf-8"))
    return n


class AgentCaps:
    """The agents' caps over one import: create it in the import's transaction before any record is written, then
    :meth:`add` each record written, in file order."""

    def __init__(self, ctx: Context, docs: list[dict[str, Any]]) -> None:
        store = ctx.store
        lessons = cast("LessonTable", store.table("lesson"))
        les_minds = {d["mind"] for d in docs if d["kind"] == "lesson" and agent_pending(d)}
        #: mind -> [pending lessons agents made, pending lessons in all]
        self.pending = {m: [lessons.agent_pending(m), lessons.pending_total(m)] for m in sorted(les_minds)}
        #: mind -> agents' memories
        self.memories = {m: store.meta.agent_memories(m) for m in
                         sorted({d["mind"] for d in docs if d["kind"] == "memory" and d["source"] == "agent"})}
        held_minds = sorted({d["mind"] for d in docs if d["kind"] != "setting" and held(d["kind"], d)})
        #: mind -> records agents hold there; and in every mind, with their bytes
        self.held: dict[str, int] = {}
        self.all_n = self.all_b = 0
        for m in held_minds:
            self.held[m], _, self.all_n, self.all_b = store.meta.agent_held(m)
        self.limits = Settings(ctx).get_many(QUOTA_SETTINGS) if self.memories or self.held else {}
        self.past: dict[str, set[str]] = {}  # claim -> the minds (or "" the vault) it was made in, for the message

    def add(self, kind: str, doc: dict[str, Any]) -> list[str]:
        """Count one record the import wrote; the claims it makes (an agent's write of it would have been
        refused)."""
        mind, out = doc["mind"], []
        if kind == "lesson" and mind in self.pending:
            counts = self.pending[mind]
            if agent_pending(doc):
                if counts[0] >= AGENT_PENDING_LESSONS or counts[1] >= SCAN_PENDING_LESSONS:
                    out.append(self._past(LESSON_CAP, mind))
                counts[0] += 1
            counts[1] += doc["status"] == "pending"
        if kind == "memory" and doc["source"] == "agent":
            if self.memories[mind] >= self.limits["agent_memories_per_mind"]:
                out.append(self._past("memory past agent_memories_per_mind", mind))
            self.memories[mind] += 1
        if held(kind, doc):
            size = held_bytes(kind, doc)
            for name, before, scope in (("agent_records_per_mind", self.held[mind], mind),
                                        ("agent_records_per_vault", self.all_n, "")):
                if before >= self.limits[name]:
                    out.append(self._past(f"{kind} past {name}", scope))
            bound = self.limits["agent_megabytes_per_vault"] * MEGABYTE
            if self.all_b >= bound or self.all_b + size > bound:
                out.append(self._past(f"{kind} past agent_megabytes_per_vault", ""))
            self.held[mind] += 1
            self.all_n += 1
            self.all_b += size
        return out

    def _past(self, claim: str, scope: str) -> str:
        self.past.setdefault(claim.split(" ", 1)[1], set()).add(scope)
        return claim

    def explain(self) -> str:
        """The caps the file passed, with the numbers the import would leave (``""`` when it passed none)."""
        said: list[str] = []
        for claim, scopes in sorted(self.past.items()):
            for m in sorted(scopes):
                if claim == LESSON_CAP.split(" ", 1)[1]:
                    ap, pt = self.pending[m]
                    said.append(f"mind {m!r} would hold {ap:,} pending lessons agents made (the agents' cap: "
                                f"{AGENT_PENDING_LESSONS}) and {pt:,} pending lessons in all (cap: "
                                f"{SCAN_PENDING_LESSONS}) for a person to review")
                elif claim == "past agent_memories_per_mind":
                    said.append(f"mind {m!r} would hold {self.memories[m]:,} agent memories "
                                f"(agent_memories_per_mind: {self.limits['agent_memories_per_mind']:,})")
                elif claim.endswith("agent_records_per_mind"):
                    said.append(f"mind {m!r} would hold {self.held[m]:,} records agents hold "
                                f"(agent_records_per_mind: {self.limits['agent_records_per_mind']:,})")
                elif claim.endswith("agent_records_per_vault"):
                    said.append(f"the vault would hold {self.all_n:,} records agents hold "
                                f"(agent_records_per_vault: {self.limits['agent_records_per_vault']:,})")
                else:
                    said.append(f"the vault would hold {self.all_b / MEGABYTE:,.1f} MB of the agents' text "
                                f"(agent_megabytes_per_vault: {self.limits['agent_megabytes_per_vault']:,})")
        if not said:
            return ""
        return (" Without --trust the agents' records a file brings count against the agents' caps, as an agent's "
                f"own writes do: {'; '.join(dict.fromkeys(said))}.")
