"""On-demand notes: a short trigger the gate always sees, and a body fetched only when needed."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from synapse_nb._util import MAX_TEXT, MAX_TRIGGER, check_key, check_text, new_id
from synapse_nb.errors import NotFoundError, ValidationError
from synapse_nb.kinds._base import KindManager, check_agent_room, exactly_once
from synapse_nb.models import Note
from synapse_nb.provenance import inline, mark

if TYPE_CHECKING:
    from synapse_nb.store.base import NoteTable

__all__ = ["Notes"]


class Notes(KindManager[Note]):
    """``vault.notes``: named notes whose trigger is recalled and whose body is expanded on demand.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> _ = v.notes.add("release_checklist", "how to cut a release: tags, changelog, PyPI upload",
    ...                 "1. bump version\\n2. tag\\n3. twine upload")
    >>> v.notes.expand("release_checklist").splitlines()[0]
    '1. bump version'
    """

    record_cls = Note

    @property
    def _table(self) -> NoteTable:
        return self._ctx.store.notes

    @staticmethod
    def check_record(n: Note) -> None:
        """What a stored note is: the write path builds only such records, and an import refuses others."""
        if check_key(n.name, "name") != n.name:
            raise ValidationError(f"name {n.name!r} is not snake_case")
        check_text(n.trigger, "trigger", max_len=MAX_TRIGGER, stored=True)
        check_text(n.body, "body", max_len=MAX_TEXT, stored=True)

    @exactly_once
    def add(self, name: str, trigger: str, body: str) -> Note:
        """Create or update (by name) a note. An agent may not overwrite a note the user wrote."""
        name = check_key(name, "name")
        trigger = check_text(trigger, "trigger", max_len=MAX_TRIGGER)
        body = check_text(body, "body", max_len=MAX_TEXT)
        ctx = self._ctx
        with ctx.store.transaction():
            ts = self._begin_write()
            existing = self._table.by_name(self._view(), name)
            if existing is None:
                check_agent_room(ctx)  # the bounded totals, before a note is added
                nid = new_id("note")
                note = Note(id=nid, mind=ctx.mind, created_at=ts, updated_at=ts, name=name, trigger=trigger,
                            body=body, source=ctx.actor)
                self._table.insert(note)
                self._changed("create", None, note, ts)
            else:
                self._require_owner(existing, "overwrite")
                nid = existing.id
                self._table.update(nid, updated_at=ts, trigger=trigger, body=body, source=ctx.actor)
                self._changed("update", existing, replace(existing, updated_at=ts, trigger=trigger, body=body,
                                                          source=ctx.actor), ts)
        return self.get(nid)

    def get_by_name(self, name: str) -> Note:
        """The note called ``name``."""
        name = check_key(name, "name")
        note = self._table.by_name(self._view(), name)
        if note is None:
            raise NotFoundError(f"no note named {name!r} in mind {self._ctx.mind!r}")
        return note

    def expand(self, name: str) -> str:
        """The body of the note called ``name`` (recall shows only its trigger, and names this to fetch the rest).

        A human's note comes back as written. An agent's comes back as every reader shows an agent's text: its
        provenance mark on a first line, then each line of the body after ``| `` as quoted data (banner, label and
        mark look-alikes neutralised, control and invisible characters shown), so the body an agent is told to
        fetch cannot pass for an approved rule. ``get_by_name(name).body`` is the stored text as it is.

        >>> v.notes.expand("deploy_runbook")  # doctest: +SKIP
        'make deploy, then tag the release'
        """
        note = self.get_by_name(name)
        if note.source != "agent":
            return note.body
        lines = [f"| {inline(line)}".rstrip() for line in note.body.splitlines()]
        head = f"{mark(note)} note {inline(note.name)}, written by an agent (not reviewed by a human):"
        return "\n".join([head, *lines])

    def delete(self, name: str) -> Note:
        """Delete a note by name. An agent may only delete its own notes."""
        note = self.get_by_name(name)
        self._require_owner(note, "delete")
        self._delete(note)
        return note
