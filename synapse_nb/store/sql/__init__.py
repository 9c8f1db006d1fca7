"""The SQL both backends share: one set of repositories, written once, over a small connection protocol.

The store seam (:mod:`synapse_nb.store.base`) says what a system of record offers; this package says it in SQL
once, for SQLite (``store/sqlite``) and PostgreSQL (``store/postgres``) alike, as langgraph's checkpoint savers
share one base and sqlite-utils keeps callers from writing SQL. Each backend brings its connection (an
implementation of :class:`~synapse_nb.store.sql.connection.SqlDatabase`) and its dialect, and overrides only
what it says its own way.

========================  =====================================================================================
``dialect.py``            :class:`Dialect`: what differs between the backends' SQL (the placeholder, lists of
                          values, planner hints, NULL-safe equality, full-text search, derived columns)
``connection.py``         :class:`SqlDatabase` (what the repositories ask of a connection), rows, and
                          :class:`Repository`, the base of every repository (generic over the connection)
``tables.py``             one repository per kind table (``memories`` ... ``notes``): reads, listings, search,
                          counts, writes, and the row <-> record mapping
``queries.py``            settings and scan tips (``meta``), ``session_seen``, ``flags``, file references,
                          recall's candidates, tags and keys, the index's candidate reads, export and import
``history.py``            the vault's own changes: ``history``, ``revisions``, ``links``, ``exports``
========================  =====================================================================================

Names here are public to both backends; neither backend imports the other (``tests/test_architecture.py``).
See ``docs/decisions/0010-one-sql-layer.md``.
"""

from __future__ import annotations

from synapse_nb.store.sql.connection import Fields, Repository, Row, SqlDatabase, Written
from synapse_nb.store.sql.dialect import ALWAYS, CHUNK, Derived, Dialect, TextSearch, chunks, marks
from synapse_nb.store.sql.history import (
    ExportsQueries,
    HistoryQueries,
    LinksQueries,
    RevisionsQueries,
)
from synapse_nb.store.sql.queries import (
    CANDIDATES,
    CandidateDocs,
    FlagsQueries,
    MetaQueries,
    RecallQueries,
    RefsQueries,
    SessionsQueries,
    TransferQueries,
    candidate,
)
from synapse_nb.store.sql.tables import (
    CheckpointsTable,
    DecisionsTable,
    EpisodesTable,
    LessonsTable,
    MemoriesTable,
    NotesTable,
    Table,
)

__all__ = ["ALWAYS", "CANDIDATES", "CHUNK", "CandidateDocs", "CheckpointsTable", "DecisionsTable", "Derived",
           "Dialect", "EpisodesTable", "ExportsQueries", "Fields", "FlagsQueries", "HistoryQueries", "LessonsTable",
           "LinksQueries", "MemoriesTable", "MetaQueries", "NotesTable", "RecallQueries", "RefsQueries", "Repository",
           "RevisionsQueries", "Row", "SessionsQueries", "SqlDatabase", "Table", "TextSearch", "TransferQueries",
           "Written", "candidate", "chunks", "marks"]
