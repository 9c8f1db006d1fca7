"""What differs between the SQL of the two backends, and nothing else: :class:`Dialect`.

Every statement in ``synapse_nb/store/`` is written once, in one dialect-neutral form:

- ``?`` stands for each bound value (a literal ``?`` is written ``chr(63)``); the backend renders the placeholder it
  wants (:meth:`Dialect.render`) when the statement is sent;
- ``TRUE`` is the condition that holds always (:data:`ALWAYS`), a fragment's ``$`` the table a statement names
  (see :mod:`synapse_nb.store.sql.tables`);
- anything else standard SQL both SQLite and PostgreSQL run as written (``ON CONFLICT ... DO UPDATE``, ``CASE``,
  ``coalesce``, ``count(CASE ...)``, ``UNION ALL``).

What each backend says its own way is a method of its dialect (``store/sqlite/dialect.py``,
``store/postgres/dialect.py``): the placeholder, a list of values (``IN (?, ?, ...)`` per chunk, or one
``= ANY(?)``), how a record's columns are read, the planner's hints, NULL-safe equality, full-text search (FTS5 or
``tsvector``), and the columns a backend derives from a record when it writes one (PostgreSQL's gate terms).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

__all__ = ["ALWAYS", "CHUNK", "Derived", "Dialect", "TextSearch", "chunks", "marks"]

T = TypeVar("T")

#: The condition that always holds (an empty filter).
ALWAYS = "TRUE"
#: Most values bound in one statement by a list of values (below SQLite's limit on parameters).
CHUNK = 500


def marks(n: int) -> str:
    """``n`` placeholders for an ``IN (...)`` list.

    >>> marks(3)
    '?,?,?'
    """
    return ",".join("?" * n)


def chunks(seq: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``seq`` in slices of at most ``size`` (values bound in one statement each); nothing for an empty ``seq``.

    >>> [list(c) for c in chunks("abcde", 2)]
    [['a', 'b'], ['c', 'd'], ['e']]
    """
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


class TextSearch(NamedTuple):
    """How a statement searches a kind table's text: ``FROM {source} WHERE {condition} ... ORDER BY {rank}``.

    ``source`` names the kind table as ``t``; the search query (:meth:`Dialect.search_query`) is the statement's
    first bound value.
    """

    source: str
    condition: str
    rank: str


class Derived(NamedTuple):
    """A column a backend stores beside a record's own (``terms``): its name and its value expression (one ``?``)."""

    column: str
    value: str


class Dialect(abc.ABC):
    """A backend's way of saying what standard SQL does not say alike. The defaults are standard SQL."""

    #: The backend's name, for messages.
    name: str = "sql"
    #: Whether ``history`` and ``revisions`` record the database login of each change (a team vault's server sets it:
    #: migrations 11 and 31); a local vault has one person and no logins.
    logins: bool = False

    def render(self, sql: str, *, bound: bool) -> str:
        """The statement as the driver wants it; ``bound``: values are bound to it (else it is sent as written)."""
        return sql

    # -- lists of values --------------------------------------------------------------------------------------
    def batches(self, values: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
        """``values`` in the batches one statement each binds (:func:`chunks`); nothing when empty."""
        return chunks(values, size)

    def is_in(self, expr: str, values: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
        """(condition, its bound values): ``expr`` is one of ``values`` (one of :meth:`batches`)."""
        return f"{expr} IN ({marks(len(values))})", tuple(values)

    # -- reading a record ---------------------------------------------------------------------------------------
    def columns(self, fields: Sequence[str], alias: str = "") -> str:
        """The select list reading a kind's record ``fields`` (of the table named ``alias``, if given): the fields
        themselves, as the backend's tables may hold more columns than a record (derived ones)."""
        return ", ".join(f"{alias}.{f}" if alias else f for f in fields)

    # -- the planner and NULLs --------------------------------------------------------------------------------
    def unindexed(self, column: str) -> str:
        """``column`` as a condition names it when no index on it should drive the plan (the statement's other
        condition is the selective one)."""
        return column

    def same(self, left: str, right: str) -> str:
        """NULL-safe equality."""
        return f"{left} IS NOT DISTINCT FROM {right}"

    # -- full-text search -------------------------------------------------------------------------------------
    @abc.abstractmethod
    def search_query(self, text: str) -> str | None:
        """The bound value searching for the words of any user text (None: the text holds no word)."""

    @abc.abstractmethod
    def search(self, table: str, *, text_first: bool = False) -> TextSearch:
        """How to search ``table``'s text, best match first; ``text_first``: the text match drives the join."""

    # -- derived columns --------------------------------------------------------------------------------------
    def derived_columns(self, kind: str) -> tuple[Derived, ...]:
        """Columns the backend stores beside the fields of a record of ``kind`` (none by default)."""
        return ()

    def derived_values(self, kind: str, fields: Mapping[str, Any]) -> tuple[Any, ...]:
        """Their bound values, from a record's fields as stored (one per :meth:`derived_columns`)."""
        return ()
