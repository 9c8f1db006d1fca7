"""Decisions: a permanent log of design choices with their rationale."""

from __future__ import annotations

import sqlite3
from typing import Any

from synapse_nb._util import MAX_TEXT, check_optional_text, check_tags, check_text, new_id
from synapse_nb.errors import ValidationError
from synapse_nb.kinds._base import KindManager, dumps, loads
from synapse_nb.models import Decision, RecordList

__all__ = ["Decisions"]


class Decisions(KindManager[Decision]):
    """``vault.decisions``: log, list and search decisions.

    Examples
    --------
    >>> import synapse_nb as syn, tempfile
    >>> v = syn.open_vault(tempfile.mkdtemp())
    >>> d = v.decide("Use SQLite WAL mode", rationale="Readers never block writers", tags=["storage"])
    >>> [x.decision for x in v.decisions.search("wal")]
    ['Use SQLite WAL mode']
    """

    table = "decisions"
    record_cls = Decision

    def _from_row(self, r: sqlite3.Row) -> Decision:
        return Decision(
            id=r["id"], mind=r["mind"], created_at=r["created_at"], updated_at=r["updated_at"],
            decision=r["decision"], rationale=r["rationale"], tags=tuple(loads(r["tags"], [])), branch=r["branch"],
            commit=r["commit_sha"], source=r["source"],
        )

    def create(self, decision: str, *, rationale: str | None = None, tags: Any = None) -> Decision:
        """Log a decision (with the current git branch and commit). Agents may log decisions too (source agent).

        ``tags`` is a list of strings or "a,b": one word each, trimmed, a leading ``#`` dropped, lower-cased
        (``"#Storage, sqlite"`` gives ``("sqlite", "storage")``); a tag with a space inside is refused.
        """
        decision = check_text(decision, "decision", max_len=MAX_TEXT)
        rationale = check_optional_text(rationale, "rationale")
        tag_t = check_tags(tags)
        branch, commit = self._v._git_head()
        did = new_id("dec")
        with self._v._store.transaction() as c:
            ts = self._v._stamp(c)
            c.execute(
                "INSERT INTO decisions(id, mind, decision, rationale, tags, branch, commit_sha, source, created_at, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (did, self._v.mind, decision, rationale, dumps(list(tag_t)), branch, commit, self._v.actor, ts, ts),
            )
            self._v._touched("decision", did)
        return Decision(id=did, mind=self._v.mind, created_at=ts, updated_at=ts, decision=decision,
                        rationale=rationale, tags=tag_t, branch=branch, commit=commit, source=self._v.actor)

    def search(self, q: str, *, tag: str | None = None, limit: int = 50) -> RecordList[Decision]:
        """Full-text search over decision, rationale and tags; any text is safe."""
        where, params = "1", ()
        if tag is not None:
            t = check_tags([tag])
            if not t:
                raise ValidationError("tag must not be empty")
            where, params = "$id IN (SELECT rid FROM tags WHERE tag = ? AND kind = 'decision')", (t[0],)
        return self._search(q, where=where, params=params, limit=limit)

    def by_tag(self, tag: str) -> RecordList[Decision]:
        """Decisions carrying this tag (case-insensitive), newest first."""
        check_text(tag, "tag", max_len=64, multiline=False)
        return self.search("", tag=tag, limit=1_000_000)

    def delete(self, id: str) -> Decision:
        """Remove a decision logged by mistake (user only: the log is otherwise permanent)."""
        self._require_user("delete a decision")
        dec = self.get(id)
        with self._v._store.transaction() as c:
            c.execute("DELETE FROM decisions WHERE id = ?", (dec.id,))
            self._v._touched("decision", dec.id, deleted=True)
        return dec
