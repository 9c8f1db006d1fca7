"""Shared machinery of the per-kind managers (``vault.memories``, ``vault.decisions``, ...)."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from synapse_nb._util import check_limit
from synapse_nb.errors import AmbiguousIdError, NotFoundError, PermissionDeniedError, ValidationError
from synapse_nb.models import Record, RecordList

if TYPE_CHECKING:
    from synapse_nb.vault import Vault

R = TypeVar("R", bound=Record)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # as FTS5 unicode61 splits: "_" separates words
_ID_CHARS = re.compile(r"^[A-Za-z0-9_]+$")
#: Most words taken from a search query (the rest are ignored).
MAX_QUERY_TERMS = 32


def fts_query(text: str) -> str | None:
    """Turn arbitrary user text into a safe FTS5 query: every word quoted, all required.

    Operators, quotes, parentheses and column filters in the input are treated as
    plain text; ``None`` when the text holds no word at all.

    >>> fts_query('deploy "prod" OR NOT x*')
    '"deploy" "prod" "or" "not" "x"'
    """
    if not isinstance(text, str):
        raise ValidationError(f"a search query must be text, got {type(text).__name__}")
    words = _WORD.findall(text.lower())[:MAX_QUERY_TERMS]
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


def loads(value: str | None, default: Any) -> Any:
    return default if value is None else json.loads(value)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class KindManager(Generic[R]):
    """Operations common to every kind: get by id or unique prefix, list, full-text search."""

    table: str = ""
    record_cls: type[Record] = Record
    #: ORDER BY used by list()
    order_by: str = "created_at DESC, id DESC"

    def __init__(self, vault: Vault) -> None:
        self._v = vault

    # subclasses turn a row into a record
    def _from_row(self, row: sqlite3.Row) -> R:  # pragma: no cover - abstract
        raise NotImplementedError

    def _visible(self) -> tuple[str, tuple[Any, ...]]:
        """Extra WHERE clause (``$col`` placeholders) and params limiting what the current actor may read."""
        return "1", ()

    def _rows(self, where: str = "1", params: tuple[Any, ...] = (), *, order: str | None = None,
              limit: int | None = None) -> list[sqlite3.Row]:
        vis, vparams = self._visible()
        sql = (f"SELECT * FROM {self.table} WHERE mind = ? AND ({vis}) AND ({where}) "
               f"ORDER BY {order or self.order_by}").replace("$", "")
        if check_limit(limit) is not None:
            sql += f" LIMIT {int(limit)}"
        return self._v._store.query(sql, (self._v.mind, *vparams, *params))

    def _list(self, where: str = "1", params: tuple[Any, ...] = (), *, order: str | None = None,
              limit: int | None = None) -> RecordList[R]:
        return RecordList(self._from_row(r) for r in self._rows(where, params, order=order, limit=limit))

    def resolve_id(self, id_or_prefix: str) -> str:
        """The full id for an id or any unique prefix of one (within this kind and mind).

        The same rule for every actor: the id or prefix is looked up among all the records of this kind
        in the mind, so a prefix that is unique for the user is unique for an agent too. What the actor
        may then do with the record is checked by the caller (:meth:`get` refuses to show an agent a
        pending lesson; an agent may still submit an analysis to one). Messages list only ids the actor
        may read.
        """
        if not isinstance(id_or_prefix, str) or not id_or_prefix.strip():
            raise ValidationError(f"a {self.record_cls.kind} id must be a non-empty string, got {id_or_prefix!r}")
        ident = id_or_prefix.strip()
        if not _ID_CHARS.match(ident) or len(ident) > 64:
            raise NotFoundError(f"no {self.record_cls.kind} with id {ident!r} (ids look like "
                                f"'{self.record_cls.prefix}_3f9a0c12be47')")
        store = self._v._store
        exact = store.query_one(f"SELECT id, mind FROM {self.table} WHERE id = ?", (ident,))
        if exact is not None and exact["mind"] == self._v.mind:
            return ident
        rows = store.query(  # the primary key drives the range scan; mind is checked per row (+mind)
            f"SELECT id FROM {self.table} WHERE id >= ? AND id < ? AND +mind = ? ORDER BY id LIMIT 6",
            (ident, ident + "\U0010ffff", self._v.mind),
        )
        ids = [r["id"] for r in rows]
        if not ids:
            raise NotFoundError(f"no {self.record_cls.kind} with id or id prefix {ident!r} in mind {self._v.mind!r}")
        if len(ids) > 1:
            readable = [i for i in ids[:5] if self._visible()[0] == "1" or self._rows("$id = ?", (i,))]
            shown = ", ".join(readable) + (", ..." if len(readable) < len(ids) else "")
            raise AmbiguousIdError(f"id prefix {ident!r} matches several {self.table}"
                                   + (f" ({shown})" if readable else "") + "; give more characters")
        return ids[0]

    def get(self, id: str) -> R:
        """The record with this id (or unique id prefix)."""
        full = self.resolve_id(id)
        rows = self._rows("id = ?", (full,))
        if not rows:  # named by the caller's own words: an id the actor may not read is not spelled out
            raise PermissionDeniedError(f"{self.record_cls.kind} {id.strip()!r} is not readable by the "
                                        f"{self._v.actor} actor")
        return self._from_row(rows[0])

    def list(self, *, limit: int | None = None) -> RecordList[R]:
        """All records of this kind in the mind, newest first."""
        return self._list(limit=limit)

    def count(self) -> int:
        vis, vparams = self._visible()
        row = self._v._store.query_one(
            f"SELECT count(*) FROM {self.table} WHERE mind = ? AND ({vis})".replace("$", ""),
            (self._v.mind, *vparams))
        return int(row[0]) if row else 0

    def _search(self, q: str, *, where: str = "1", params: tuple[Any, ...] = (), limit: int = 50,
                order_tail: str = "") -> RecordList[R]:
        if limit is None or check_limit(limit) is None:
            raise ValidationError(f"limit must be a whole number from 1 to 1,000,000,000, got {limit!r}")
        match = fts_query(q)
        if match is None:
            return self._list(where, params, limit=limit)
        vis, vparams = self._visible()
        sql = (f"SELECT t.* FROM {self.table}_fts f JOIN {self.table} t ON t.rowid = f.rowid "
               f"WHERE {self.table}_fts MATCH ? AND t.mind = ? AND ({vis}) "
               f"AND ({where}) ORDER BY f.rank{order_tail}, t.updated_at DESC, t.id LIMIT {limit}").replace("$", "t.")
        rows = self._v._store.query(sql, (match, self._v.mind, *vparams, *params))
        return RecordList(self._from_row(r) for r in rows)

    def search(self, q: str, *, limit: int = 50) -> RecordList[R]:
        """Full-text search (SQLite FTS5, stemmed); any text is safe. An empty query lists everything."""
        return self._search(q, limit=limit)

    # permission helpers
    def _require_user(self, action: str) -> None:
        if self._v.actor != "user":
            raise PermissionDeniedError(f"an agent may not {action}; a human must do it "
                                        "(from a notebook, the widgets or the CLI)")

    def _require_owner(self, record: Any, action: str) -> None:
        if self._v.actor == "agent" and getattr(record, "source", "agent") == "user":
            raise PermissionDeniedError(
                f"an agent may not {action} {record.kind} {record.id}: it was written by the user; "
                "propose a new record instead")
