"""The conflicts a lesson's approval and analysis raise (:class:`~synapse_nb.kinds.lessons.Lessons`), in the words
a person reads: what changed, that nothing was written, and what to do."""

from __future__ import annotations

from synapse_nb.errors import ConflictError
from synapse_nb.provenance import inline

__all__ = ["changed_since", "not_pending"]


def changed_since(lesson_id: str, text: str, by: str) -> ConflictError:
    """An approval bound to a wording (``seen``) that someone (``by``: ``agent`` or another) changed since."""
    return ConflictError(
        f"lesson {lesson_id}'s wording changed after you read it ({'an agent' if by == 'agent' else 'someone'} "
        f"wrote it since); nothing was approved. It now reads: {inline(text, 300)}. Read it again, then approve "
        "it, or give your own wording (text=...; CLI --text)")


def not_pending(named: str, status: str) -> ConflictError:
    """An analysis of a lesson no longer pending; ``status`` is the stored one: "approved" is also a lesson whose
    approval ran out (expiry is read, not written)."""
    return ConflictError(f"lesson {named} is not pending ({status}): an analysis proposes the wording of a pending "
                         "lesson; to word it anew, withdraw it first if it is in force (lessons withdraw ID), or "
                         "approve it again with your text if it has expired (text=...; CLI lessons approve ID "
                         "--text ...)")
