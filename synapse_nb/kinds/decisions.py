"""Decisions: a permanent log of design choices with their rationale."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synapse_nb._calls import Tags
from synapse_nb._util import (
    MAX_TEXT,
    check_choice,
    check_limit,
    check_optional_text,
    check_stored_tags,
    check_tags,
    check_text,
    new_id,
)
from synapse_nb.errors import ValidationError
from synapse_nb.kinds._base import KindManager, check_query, check_search_limit, exactly_once
from synapse_nb.models import Decision, RecordList

if TYPE_CHECKING:
    from synapse_nb.store.base import DecisionTable

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

    record_cls = Decision

    @property
    def _table(self) -> DecisionTable:
        return self._ctx.store.decisions

    @staticmethod
    def check_record(d: Decision) -> None:
        """What a stored decision is: the write path builds only such records, and an import refuses others."""
        check_text(d.decision, "decision", max_len=MAX_TEXT, stored=True)
        check_stored_tags(d.tags)

    @exactly_once
    def create(self, decision: str, *, rationale: str | None = None, tags: Tags | None = None) -> Decision:
        """Log a decision (with the current git branch and commit). Agents may log decisions too (source agent).

        ``tags`` is a list of strings or "a,b": one word each, trimmed, a leading ``#`` dropped, lower-cased
        (``"#Storage, sqlite"`` gives ``("sqlite", "storage")``); a tag with a space inside is refused.
        """
        decision = check_text(decision, "decision", max_len=MAX_TEXT)
        rationale = check_optional_text(rationale, "rationale")
        tag_t = check_tags(tags)
        ctx = self._ctx
        branch, commit = ctx.git.head()
        with ctx.store.transaction():
            ts = self._begin_write(new_record=True)
            dec = Decision(id=new_id("dec"), mind=ctx.mind, created_at=ts, updated_at=ts, decision=decision,
                           rationale=rationale, tags=tag_t, branch=branch, commit=commit, source=ctx.actor)
            self._table.insert(dec)
            self._changed("create", None, dec, ts)
        return dec

    def list(self, *, limit: int | None = None, source: str | None = None) -> RecordList[Decision]:
        """Decisions of the mind, newest first; ``source``: only a person's (``"user"``) or only agents'
        (``"agent"``).

        >>> import synapse_nb as syn, tempfile
        >>> v = syn.open_vault(tempfile.mkdtemp())
        >>> _ = v.decide("Use SQLite WAL mode"); _ = v.as_agent().decide("Retry a failed upload twice")
        >>> [d.decision for d in v.decisions.list(source="user")], len(v.decisions.list())
        (['Use SQLite WAL mode'], 2)
        """
        src = None if source is None else check_choice(source, "source", ("user", "agent"))
        return RecordList(self._table.list(self._view(), limit=check_limit(limit), source=src))

    def search(self, q: str, *, tag: str | None = None, limit: int = 50) -> RecordList[Decision]:
        """Full-text search over decision, rationale and tags; any text is safe. People's decisions first, then
        agents' in what ``limit`` leaves."""
        limit = check_search_limit(limit)
        stored_tag = None
        if tag is not None:
            t = check_tags([tag])
            if not t:
                raise ValidationError("tag must not be empty")
            stored_tag = t[0]
        return RecordList(self._table.search(self._view(), check_query(q), tag=stored_tag, limit=limit))

    def by_tag(self, tag: str) -> RecordList[Decision]:
        """Decisions carrying this tag (case-insensitive), newest first."""
        check_text(tag, "tag", max_len=64, multiline=False)
        return self.search("", tag=tag, limit=1_000_000)

    def delete(self, id: str) -> Decision:
        """Remove a decision logged by mistake (user only: the log is otherwise permanent)."""
        self._require_user("delete a decision")
        dec = self.get(id)
        self._delete(dec)
        return dec
