"""Who approved a lesson, and when, as ``lessons list`` (text and ``--json``) and the lessons widget show it (s21: the
listing showed a lesson approved, never by whom; a team vault's history entry carries the login).

Only a person approves a lesson (:meth:`~synapse_nb.kinds.lessons.Lessons.approve` refuses an agent), so every
approval is a person's: on a team vault the login its newest ``approve`` history entry was written with (the server
sets it: migration 11), on a local vault "a person" (it records no logins), with the time of the approval. An entry
an agent's actor wrote is no approval (none is, but a forged one is not believed). In a borrowed vault
(:mod:`synapse_nb.borrowed`) a lesson in force was approved by a person here (its local approval's time) and one
awaiting local approval by whoever committed the vault (:data:`ELSEWHERE`), not by a person here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from synapse_nb._util import when
from synapse_nb.changes import LOGIN_CHARS
from synapse_nb.errors import SynapseError

if TYPE_CHECKING:
    from synapse_nb.models import Lesson
    from synapse_nb.vault import Vault

__all__ = ["A_PERSON", "A_PERSON_HERE", "ELSEWHERE", "Approval", "approvals", "proposed_wording"]

#: Who approved a lesson when no login is known (a local vault records none; an imported entry names none).
A_PERSON = "a person"
#: Who approved a borrowed vault's lesson in force: a person in this checkout (its local approval).
A_PERSON_HERE = "a person here"
#: Who approved a borrowed vault's lesson awaiting local approval (borrowed.ELSEWHERE_BY).
ELSEWHERE = "whoever committed the vault"


@dataclass(frozen=True)
class Approval:
    """Who approved a lesson (``by``: the login on a team vault, else :data:`A_PERSON`, :data:`A_PERSON_HERE` or
    :data:`ELSEWHERE`) and when (``at``: stored UTC text); ``login`` is the team login or None."""

    by: str
    at: str
    login: str | None = None

    def line(self) -> str:
        """The listing's line for it.

        >>> Approval("alice", "2026-11-30T21:15:07.123456Z", "alice").line()
        'approved by alice, 2026-11-30 21:15:07 UTC'
        """
        from synapse_nb.provenance import inline

        return f"approved by {inline(self.by, LOGIN_CHARS)}, {when(self.at, seconds=True)}"

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "login": self.login, "at": self.at}


def approvals(vault: Vault, lessons: Iterable[Lesson]) -> dict[str, Approval]:
    """Lesson id -> its :class:`Approval`, for each of ``lessons`` that was approved (in force or run out; a pending
    one has none), at its ``approved_at``. On a team vault one history read per such lesson, for the login; a local
    vault records no logins, so nothing is read there; a history this handle may not read (or none: an imported
    lesson) gives :data:`A_PERSON`."""
    borrowed = vault.borrowed
    logins = bool(getattr(getattr(vault._ctx.store, "dialect", None), "logins", False))
    local = borrowed.approvals.entries() if borrowed is not None and borrowed.approvals is not None else {}
    out: dict[str, Approval] = {}
    for les in lessons:
        if les.approved_at is None:
            continue
        if borrowed is not None:
            entry = local.get(les.id) if vault.lessons.approved_here(les) else None
            at = entry.get("at") if entry is not None else None
            out[les.id] = (Approval(A_PERSON_HERE, at) if isinstance(at, str)
                           else Approval(ELSEWHERE, les.approved_at))
            continue
        if not logins:
            out[les.id] = Approval(A_PERSON, les.approved_at)
            continue
        try:
            entries = list(vault.history(les.id))
        except SynapseError:  # no history (imported), or not this handle's to read: a person, when it says
            entries = []
        last = next((e for e in reversed(entries) if e.action == "approve" and e.actor == "user"), None)
        login = last.login if last is not None and last.login else None
        out[les.id] = Approval(login or A_PERSON, les.approved_at, login)
    return out


def proposed_wording(les: Lesson) -> tuple[str, str]:
    """The wording an approval without ``text`` would give ``les``, and who wrote it: ``"user"`` (the wording a human
    approved before, or an analysis a human wrote), ``"agent"`` (an agent's analysis, or the summary of a lesson an
    agent created) or ``"git"`` (the summary a revert scan wrote from the commits). ``Lessons.proposed_wording``.

    >>> from synapse_nb.models import Lesson
    >>> proposed_wording(Lesson(id="les_1", mind="m", created_at="", updated_at="", status="pending",
    ...                         summary="Reverted 'x'", analysis="Because y", analysis_by="agent"))
    ('Because y', 'agent')
    """
    if les.lesson_text:
        return les.lesson_text, les.wording_by or "user"
    if les.analysis:
        return les.analysis, "user" if les.analysis_by == "user" else "agent"
    return les.summary, "agent" if les.source == "agent" else "git"
