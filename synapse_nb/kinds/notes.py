"""On-demand notes: a short trigger the gate always sees, and a body fetched only when needed."""

from __future__ import annotations

import sqlite3

from synapse_nb._util import MAX_TEXT, MAX_TRIGGER, check_key, check_text, new_id
from synapse_nb.errors import NotFoundError
from synapse_nb.kinds._base import KindManager
from synapse_nb.models import Note

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

    table = "notes"
    record_cls = Note
    order_by = "name ASC"

    def _from_row(self, r: sqlite3.Row) -> Note:
        return Note(id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
                    name=r["name"], trigger=r["trigger"], body=r["body"], source=r["source"])

    def add(self, name: str, trigger: str, body: str) -> Note:
        """Create or update (by name) a note. An agent may not overwrite a note the user wrote."""
        name = check_key(name, "name")
        trigger = check_text(trigger, "trigger", max_len=MAX_TRIGGER)
        body = check_text(body, "body", max_len=MAX_TEXT)
        with self._v._store.transaction() as c:
            ts = self._v._stamp(c)
            row = c.execute("SELECT * FROM notes WHERE mind = ? AND name = ?", (self._v.mind, name)).fetchone()
            if row is None:
                nid = new_id("note")
                c.execute("INSERT INTO notes(id, mind, name, trigger, body, source, created_at, updated_at) "
                          "VALUES (?,?,?,?,?,?,?,?)", (nid, self._v.mind, name, trigger, body, self._v.actor, ts, ts))
            else:
                self._require_owner(self._from_row(row), "overwrite")
                nid = row["id"]
                c.execute("UPDATE notes SET trigger = ?, body = ?, source = ?, updated_at = ? WHERE id = ?",
                          (trigger, body, self._v.actor, ts, nid))
            self._v._touched("note", nid)
        return self.get(nid)

    def get_by_name(self, name: str) -> Note:
        """The note called ``name``."""
        name = check_key(name, "name")
        rows = self._rows("$name = ?", (name,))
        if not rows:
            raise NotFoundError(f"no note named {name!r} in mind {self._v.mind!r}")
        return self._from_row(rows[0])

    def expand(self, name: str) -> str:
        """The body of the note called ``name`` (recall shows only its trigger)."""
        return self.get_by_name(name).body

    def delete(self, name: str) -> Note:
        """Delete a note by name. An agent may only delete its own notes."""
        note = self.get_by_name(name)
        self._require_owner(note, "delete")
        with self._v._store.transaction() as c:
            c.execute("DELETE FROM notes WHERE id = ?", (note.id,))
            self._v._touched("note", note.id, deleted=True)
        return note
