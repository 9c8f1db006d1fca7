"""What the shared statements need from a database: :class:`SqlDatabase`, and the base of every repository.

Both backends' connections (:class:`synapse_nb.store.sqlite.db.Database`,
:class:`synapse_nb.store.postgres.db.PgDatabase`) implement it; the repositories of :mod:`synapse_nb.store.sql`
are generic over it (:class:`Repository`), so a backend's own repository reaches its own connection's extras with
their types (PostgreSQL's role, its one-round-trip writes).

Statements are dialect-neutral (:mod:`synapse_nb.store.sql.dialect`); the connection renders them. Rows read
by column name or position (``sqlite3.Row``, PostgreSQL's ``Row``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

from synapse_nb.store.records import Change
from synapse_nb.store.sql.dialect import Dialect

__all__ = ["D", "Fields", "Repository", "Row", "SqlDatabase", "Written"]


class Fields(Protocol):
    """What reads a record's fields: a row, or an export document (a dict)."""

    def __getitem__(self, key: str, /) -> Any: ...


class Row(Protocol):
    """A result row: by column name or position, and its values in order."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


class Written(Protocol):
    """What a write statement answers: how many rows it changed."""

    @property
    def rowcount(self) -> int: ...


class SqlDatabase(Protocol):
    """A vault database as the shared repositories use it.

    Reads run in the current transaction or snapshot, else alone; writes (:meth:`write`, :meth:`executemany`) in
    the current write transaction, else in one of their own. :meth:`touched` and the ``change`` of :meth:`write`
    note the records a transaction changed (listeners hear them after the commit).
    """

    @property
    def dialect(self) -> Dialect: ...

    def query(self, sql: str, params: Sequence[Any] = ...) -> Sequence[Row]: ...

    def query_one(self, sql: str, params: Sequence[Any] = ...) -> Row | None: ...

    def iter_query(self, sql: str, params: Sequence[Any] = ..., *, size: int = ...) -> Iterator[Row]: ...

    def write(self, sql: str, params: Sequence[Any] = ..., change: Change | None = ...) -> Written: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def transaction(self, *, moves_version: bool = ...) -> AbstractContextManager[object]:
        """One write transaction; nested calls join it. ``moves_version=False``: it writes nothing a cache keyed
        by the data version holds (a session's marks)."""
        ...

    def snapshot(self, *, lazy: bool = ...) -> AbstractContextManager[object]: ...

    def touched(self, kind: str, rid: str, *, deleted: bool = ...) -> None: ...

    def stamp(self, now: str) -> str: ...

    def advance_clock(self, ts: str) -> None: ...

    def snapshot_cache(self, name: str) -> dict[Any, Any] | None:
        """A dict for answers read inside the open snapshot, kept while the vault's data version stays the same;
        None when the connection keeps none (SQLite: reads are local, nothing is kept)."""
        ...


#: A repository's connection type: the backend's own (its extras keep their types in its own repositories).
D = TypeVar("D", bound=SqlDatabase)


class Repository(Generic[D]):
    """Statements on some tables of one database (``D``: the backend's connection type)."""

    def __init__(self, db: D) -> None:
        self._db: D = db
