"""The statements of a vault's own changes, written once for both backends (schema v6 / team migration 9):
``history`` (append-only, one row per mutation of a record), ``revisions`` (an agent's pending change to a verified
memory), ``links`` (likely duplicates and contradictions for a human to decide) and ``exports`` (exports taken).

Every listing ends its order in the row id; history is ordered by ``at`` (the write stamp) then id. Deletes go
through named statements, which PostgreSQL runs through checked functions (its dialect's ``DELETES``): only a
human purges or prunes history.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from synapse_nb.changes import ExportMark, HistoryEntry, Link, Revision
from synapse_nb.store.sql import change_rows
from synapse_nb.store.sql.authors import person_sql
from synapse_nb.store.sql.connection import D, Repository, Row
from synapse_nb.store.sql.tables import (
    CheckpointsTable,
    DecisionsTable,
    EpisodesTable,
    LessonsTable,
    MemoriesTable,
    NotesTable,
    Table,
)

__all__ = ["DELETE_HISTORY_OF", "DELETE_LINKS_OF", "DELETE_REVISIONS_OF", "HISTORY_COLUMNS", "NEXT_VERSION",
           "PRUNE_HISTORY", "PURGED_MARKS", "ExportsQueries", "HistoryQueries", "LinksQueries", "RevisionsQueries"]

HISTORY_COLUMNS = ("id", "rid", "kind", "mind", "version", "action", "actor", "surface", "at", "digest_before",
                   "digest_after", "before")
REVISION_COLUMNS = ("id", "rid", "kind", "mind", "status", "fields", "base_digest", "actor", "surface", "created_at",
                    "decided_at")
LINK_COLUMNS = ("id", "mind", "a", "a_kind", "b", "b_kind", "relation", "score", "hidden", "status", "reason",
                "created_at", "decided_at")
EXPORT_COLUMNS = ("id", "taken_at", "dest", "records", "history")

_H = ", ".join(HISTORY_COLUMNS)


class LoginRead(NamedTuple):
    """A read of ``history`` / ``revisions`` in the two spellings its ``@history_login`` / ``@login`` /
    ``@decided_login`` columns take, built once (at import): the logins a team vault's server records
    (``Dialect.logins``), or NULL on a local vault, which has no logins (its output unchanged)."""

    local: str
    team: str

    def on(self, dialect: Any) -> str:
        """The statement as ``dialect``'s backend reads it."""
        return self.team if dialect.logins else self.local


#: The login a team vault's history entry shows: the one that made the change, never an import's (an imported entry
#: keeps the login its file named in ``file_login``, as data: migration 31)
_HISTORY_LOGIN = "CASE WHEN file_login IS NULL THEN login END AS login"


def logins(sql: str) -> LoginRead:
    """Both spellings of a read holding ``@history_login`` / ``@login`` / ``@decided_login``.

    >>> logins("SELECT id, @history_login FROM history").local
    'SELECT id, NULL AS login FROM history'
    >>> logins("SELECT id, @login, @decided_login FROM revisions").team
    'SELECT id, login, decided_login FROM revisions'
    """
    def spell(team: bool) -> str:
        out = sql.replace("@history_login", _HISTORY_LOGIN if team else "NULL AS login")
        for col in ("@decided_login", "@login"):
            out = out.replace(col, col[1:] if team else f"NULL AS {col[1:]}")
        return out
    return LoginRead(spell(False), spell(True))


INSERT_HISTORY = f"INSERT INTO history({_H}) VALUES ({', '.join('?' * len(HISTORY_COLUMNS))})"
NEXT_VERSION = "SELECT coalesce(max(version), 0) + 1 FROM history WHERE rid = ?"
HISTORY_OF = logins(f"SELECT {_H}, @history_login FROM history WHERE rid = ? ORDER BY at, id")
HISTORY_OF_MIND = logins(f"SELECT {_H}, @history_login FROM history WHERE mind = ? ORDER BY at DESC, id DESC LIMIT ?")
HISTORY_AFTER = logins(f"SELECT {_H}, @history_login FROM history WHERE mind = ? AND at > ? ORDER BY rid, at, id")
HISTORY_ALL = logins(f"SELECT {_H}, @history_login FROM history ORDER BY at, id")
HISTORY_REMOVALS = logins(f"SELECT {_H}, @history_login FROM history WHERE mind = ? AND kind = ? AND "
                          "digest_after IS NULL AND before IS NOT NULL ORDER BY at, id")
#: The last entry (by at, id) of each record of a list, in one statement (``{rids}``: the dialect's ``is_in``)
LAST_OF = logins(f"SELECT {_H}, @history_login FROM (SELECT *, row_number() OVER (PARTITION BY rid ORDER BY at DESC, "
                 "id DESC) AS nth FROM history WHERE {rids}) h WHERE nth = 1")
HAS_VERSION = "SELECT 1 FROM history WHERE rid = ? AND version = ?"
DELETE_HISTORY_OF = "DELETE FROM history WHERE rid = ?"
#: What the sessions given a purged record hold of it: ``purged`` (recall.delta.PURGED), not a digest of its text. A
#: lesson's marks outlive its deletion (schema v14), so recall tells such a session it was deleted; a mark that told
#: it already (``gone``) stays. A team vault's ``purge_history()`` does it with the owner's rights (migration 33).
PURGED_MARKS = "UPDATE session_seen SET digest = 'purged' WHERE rid = ? AND digest <> 'gone'"
#: Entries of a mind older than a time, but never a record's newest one (its last known state stays).
PRUNE_HISTORY = ("DELETE FROM history WHERE mind = ? AND at < ? AND id NOT IN "
                 "(SELECT h.id FROM history h WHERE h.mind = ? AND h.at = (SELECT max(g.at) FROM history g "
                 "WHERE g.rid = h.rid))")

_R = ", ".join(REVISION_COLUMNS)
_RL = f"{_R}, @login, @decided_login"  # a read: the logins that proposed and decided it (None on a local vault)
INSERT_REVISION = f"INSERT INTO revisions({_R}) VALUES ({', '.join('?' * len(REVISION_COLUMNS))})"
REVISIONS_OF_MIND = logins(f"SELECT {_RL} FROM revisions WHERE mind = ? ORDER BY created_at, id")
REVISIONS_BY_STATUS = logins(f"SELECT {_RL} FROM revisions WHERE mind = ? AND status = ? ORDER BY created_at, id")
REVISION_BY_ID = logins(f"SELECT {_RL} FROM revisions WHERE id = ?")
REVISION_MIND = "SELECT mind FROM revisions WHERE id = ?"
REVISION_IDS_FROM = "SELECT id FROM revisions WHERE id >= ? AND id < ? AND mind = ? ORDER BY id LIMIT ?"
PENDING_REVISIONS_OF = logins(f"SELECT {_RL} FROM revisions WHERE rid = ? AND status = 'pending' "
                              "ORDER BY created_at, id")
DECIDE_REVISION = "UPDATE revisions SET status = ?, decided_at = ? WHERE id = ? AND status = 'pending'"
DELETE_REVISIONS_OF = "DELETE FROM revisions WHERE rid = ?"

_L = ", ".join(LINK_COLUMNS)
INSERT_LINK = (f"INSERT INTO links({_L}) VALUES ({', '.join('?' * len(LINK_COLUMNS))}) "
               "ON CONFLICT (a, b) DO NOTHING")
LINKS_OF_MIND = f"SELECT {_L} FROM links WHERE mind = ? ORDER BY created_at, id"
LINKS_BY_STATUS = f"SELECT {_L} FROM links WHERE mind = ? AND status = ? ORDER BY created_at, id"
LINK_BY_ID = f"SELECT {_L} FROM links WHERE id = ?"
LINK_MIND = "SELECT mind FROM links WHERE id = ?"
LINK_IDS_FROM = "SELECT id FROM links WHERE id >= ? AND id < ? AND mind = ? ORDER BY id LIMIT ?"
LINKS_OF_RECORD = f"SELECT {_L} FROM links WHERE a = ? OR b = ? ORDER BY created_at, id"
LINKS_ALL = f"SELECT {_L} FROM links ORDER BY id"
LINK_OF_PAIR = f"SELECT {_L} FROM links WHERE (a = ? AND b = ?) OR (a = ? AND b = ?) ORDER BY id"


# the hidden side of each open link, unless it stands as a person's and the other side does not: a record that became
# a person's after the pair was made (a person's remember over an agent's key) is never left behind an agent's copy
# (review 14), whatever the link says; only a duplicate's side hides, as the check writes one (a link written with SQL
# hid a record it does not name, or one side of a contradiction)
_SHOWN = "CASE WHEN l.hidden = l.a THEN l.b ELSE l.a END"  # the side an open link shows in the hidden one's place
HIDDEN = (f"SELECT l.hidden, {_SHOWN} FROM links l WHERE l.mind = ? AND l.status = 'open' AND l.relation = 'duplicate' "
          "AND l.hidden IN (l.a, l.b) "
          f"AND NOT ({person_sql('l.hidden')} AND NOT {person_sql(_SHOWN)}) ORDER BY l.hidden, 2")
DECIDE_LINK = "UPDATE links SET status = ?, decided_at = ? WHERE id = ? AND status = 'open'"
DELETE_LINKS_OF = "DELETE FROM links WHERE a = ? OR b = ?"

CHECKED_AT = "SELECT at FROM dup_checked WHERE id = 1"
ADVANCE_CHECKED = "UPDATE dup_checked SET at = ? WHERE id = 1 AND at < ?"
#: The duplicate checks imports still owe (synapse_nb.dupes_owed): one ``meta`` row, a JSON object (no schema change:
#: ``meta`` holds keys of any name; never deleted: a team vault's people may insert and update ``meta``, not delete)
OWED_KEY = "dupes:owed"
OWED_CHECKS = "SELECT value FROM meta WHERE key = ?"
LOCK_OWED = "UPDATE meta SET value = value WHERE key = ?"
SET_OWED = "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"

_E = ", ".join(EXPORT_COLUMNS)
INSERT_EXPORT = f"INSERT INTO exports({_E}) VALUES (?, ?, ?, ?, ?)"
EXPORTS = f"SELECT {_E} FROM exports ORDER BY taken_at, id"


#: An imported entry on a team vault: the login its file named ('' none), which the reader never shows
INSERT_IMPORTED = (f"INSERT INTO history({_H}, file_login) "
                   f"VALUES ({', '.join('?' * (len(HISTORY_COLUMNS) + 1))})")


# rows are read whatever they hold (review 46: written with an agent login's SQL): store/sql/change_rows.py
_revision = change_rows.revision
_link = change_rows.link


class HistoryQueries(Repository[D]):
    """``store.history``: append, read by record or mind, purge one record's, prune a mind's older entries."""

    @functools.cached_property
    def _tables(self) -> Mapping[str, Table[Any, Any]]:
        """The kind tables' row mappings, which read an entry's ``before`` as a row of its kind."""
        tables = (MemoriesTable, CheckpointsTable, DecisionsTable, LessonsTable, EpisodesTable, NotesTable)
        return {t.kind: t(self._db) for t in tables}

    def _entry(self, r: Row) -> HistoryEntry:
        return change_rows.entry(r, self._tables)

    def next_version(self, rid: str) -> int:
        row = self._db.query_one(NEXT_VERSION, (rid,))
        return int(row[0]) if row else 1

    def append(self, entries: Sequence[HistoryEntry]) -> None:
        rows = [tuple(getattr(e, c) for c in HISTORY_COLUMNS) for e in entries]
        if len(rows) == 1:
            self._db.write(INSERT_HISTORY, rows[0])
        elif rows:
            self._db.executemany(INSERT_HISTORY, rows)

    def of_record(self, rid: str) -> list[HistoryEntry]:
        return [self._entry(r) for r in self._db.query(HISTORY_OF.on(self._db.dialect), (rid,))]

    def last_of(self, rids: Sequence[str]) -> dict[str, HistoryEntry]:
        """The last entry (by at, id) of each record of ``rids`` that has one, in one statement (a batch of the
        dialect's: PostgreSQL binds every id as one array)."""
        dialect = self._db.dialect
        out: dict[str, HistoryEntry] = {}
        for batch in dialect.batches(sorted(set(rids))):
            cond, params = dialect.is_in("rid", list(batch))
            for r in self._db.query(LAST_OF.on(dialect).format(rids=cond), params):
                e = self._entry(r)
                out[e.rid] = e
        return out

    def of_mind(self, mind: str, *, limit: int) -> list[HistoryEntry]:
        return [self._entry(r) for r in self._db.query(HISTORY_OF_MIND.on(self._db.dialect), (mind, int(limit)))]

    def after(self, mind: str, at: str) -> list[HistoryEntry]:
        """The mind's entries stamped after ``at``, by record then time (what an ``as_of`` read rewinds)."""
        return [self._entry(r) for r in self._db.query(HISTORY_AFTER.on(self._db.dialect), (mind, at))]

    def removals(self, mind: str, kind: str) -> list[HistoryEntry]:
        """The mind's entries that removed a record of ``kind`` (no digest after, a record before), by time then id."""
        return [self._entry(r) for r in self._db.query(HISTORY_REMOVALS.on(self._db.dialect), (mind, kind))]

    def all(self) -> Iterator[HistoryEntry]:
        """Every entry of the vault (all minds), by time then id (export)."""
        return (self._entry(r) for r in self._db.iter_query(HISTORY_ALL.on(self._db.dialect)))

    def insert_entry(self, e: HistoryEntry) -> bool:
        """Import one entry as it is; False when the record's version is there already (identical or not: history is
        append-only, the first copy stands)."""
        if self._db.query_one(HAS_VERSION, (e.rid, e.version)) is not None:
            return False
        if self._db.dialect.logins:  # the login the file names is kept as data, never as who made the change
            self._db.write(INSERT_IMPORTED, (*(getattr(e, c) for c in HISTORY_COLUMNS), e.login or ""))
        else:
            self.append([e])
        return True

    def purge(self, rid: str) -> int:
        with self._db.transaction():
            n = max(0, self._db.write(DELETE_HISTORY_OF, (rid,)).rowcount)
            if not self._db.dialect.logins:  # a team vault's purge_history() marks them (migration 33)
                self._db.write(PURGED_MARKS, (rid,))
            return n

    def prune(self, mind: str, before: str) -> int:
        with self._db.transaction():
            return max(0, self._db.write(PRUNE_HISTORY, (mind, before, mind)).rowcount)


class RevisionsQueries(Repository[D]):
    """``store.revisions``: agents' pending changes to verified memories."""

    def insert(self, rev: Revision) -> None:
        self._db.write(INSERT_REVISION, tuple(getattr(rev, c) for c in REVISION_COLUMNS))

    def get(self, id: str) -> Revision | None:
        row = self._db.query_one(REVISION_BY_ID.on(self._db.dialect), (id,))
        return None if row is None else _revision(row)

    def mind_of(self, id: str) -> str | None:
        row = self._db.query_one(REVISION_MIND, (id,))
        return None if row is None else str(row["mind"])

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> list[str]:
        """Ids of the mind starting with ``prefix``, in id order, at most ``limit`` (the primary key's range)."""
        rows = self._db.query(REVISION_IDS_FROM, (prefix, prefix + "\U0010ffff", mind, int(limit)))
        return [str(r["id"]) for r in rows]

    def of_mind(self, mind: str, status: str | None = None) -> list[Revision]:
        if status is None:
            return [_revision(r) for r in self._db.query(REVISIONS_OF_MIND.on(self._db.dialect), (mind,))]
        return [_revision(r) for r in self._db.query(REVISIONS_BY_STATUS.on(self._db.dialect), (mind, status))]

    def pending_of(self, rid: str) -> list[Revision]:
        return [_revision(r) for r in self._db.query(PENDING_REVISIONS_OF.on(self._db.dialect), (rid,))]

    def decide(self, id: str, status: str, at: str) -> bool:
        return self._db.write(DECIDE_REVISION, (status, at, id)).rowcount > 0

    def purge(self, rid: str) -> int:
        with self._db.transaction():
            return max(0, self._db.write(DELETE_REVISIONS_OF, (rid,)).rowcount)


class LinksQueries(Repository[D]):
    """``store.links``: pairs the duplicate check found, and what a human decided about them."""

    def insert(self, links: Iterable[Link]) -> None:
        rows = [tuple(getattr(x, c) for c in LINK_COLUMNS) for x in links]
        if rows:
            self._db.executemany(INSERT_LINK, rows)

    def get(self, id: str) -> Link | None:
        row = self._db.query_one(LINK_BY_ID, (id,))
        return None if row is None else _link(row)

    def mind_of(self, id: str) -> str | None:
        row = self._db.query_one(LINK_MIND, (id,))
        return None if row is None else str(row["mind"])

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> list[str]:
        """Ids of the mind starting with ``prefix``, in id order, at most ``limit`` (the primary key's range)."""
        rows = self._db.query(LINK_IDS_FROM, (prefix, prefix + "\U0010ffff", mind, int(limit)))
        return [str(r["id"]) for r in rows]

    def of_mind(self, mind: str, status: str | None = None) -> list[Link]:
        if status is None:
            return [_link(r) for r in self._db.query(LINKS_OF_MIND, (mind,))]
        return [_link(r) for r in self._db.query(LINKS_BY_STATUS, (mind, status))]

    def of_record(self, rid: str) -> list[Link]:
        return [_link(r) for r in self._db.query(LINKS_OF_RECORD, (rid, rid))]

    def all(self) -> Iterator[Link]:
        """Every link of the vault (all minds), by id (export)."""
        return (_link(r) for r in self._db.iter_query(LINKS_ALL))

    def of_pair(self, a: str, b: str) -> Link | None:
        """The link of these two records, in either order (the least id, were there two), or None."""
        row = self._db.query_one(LINK_OF_PAIR, (a, b, b, a))
        return None if row is None else _link(row)

    def hidden(self, mind: str) -> dict[str, str]:
        """Ids recall leaves out: the hidden side of each open link of the mind, each to the record shown in its
        place (of several links that hide it, the least such id)."""
        out: dict[str, str] = {}
        for r in self._db.query(HIDDEN, (mind,)):
            out.setdefault(str(r[0]), str(r[1]))
        return out

    def decide(self, id: str, status: str, at: str) -> bool:
        return self._db.write(DECIDE_LINK, (status, at, id)).rowcount > 0

    def purge(self, rid: str) -> int:
        with self._db.transaction():
            return max(0, self._db.write(DELETE_LINKS_OF, (rid, rid)).rowcount)

    def checked_at(self) -> str:
        row = self._db.query_one(CHECKED_AT)
        return "" if row is None else str(row[0])

    def advance(self, at: str) -> None:
        self._db.write(ADVANCE_CHECKED, (at, at))

    def owed(self, *, lock: bool = False) -> str:
        """The duplicate checks imports still owe (JSON text; "" when none ever was); ``lock``: in a write
        transaction, the row locked first, so the value read is the latest (a team vault's other writers wait)."""
        if lock:
            self._db.write(LOCK_OWED, (OWED_KEY,))
        row = self._db.query_one(OWED_CHECKS, (OWED_KEY,))
        return "" if row is None else str(row["value"])

    def set_owed(self, value: str) -> None:
        self._db.write(SET_OWED, (OWED_KEY, value))

    def unchecked(self, after: str, before: str | None, kinds: Sequence[str], actions: Sequence[str],
                  limit: int) -> list[tuple[str, str, str, str]]:
        dialect = self._db.dialect
        in_kinds, kparams = dialect.is_in("kind", list(kinds))
        in_actions, aparams = dialect.is_in("action", list(actions))
        upper, uparams = ("", ()) if before is None else (" AND at < ?", (before,))
        rows = self._db.query(f"SELECT at, rid, kind, mind FROM history WHERE at > ?{upper} AND {in_kinds} AND "
                              f"{in_actions} ORDER BY at, id LIMIT ?", (after, *uparams, *kparams, *aparams, limit))
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]

    def written_after(self, rids: Sequence[str], after: str, actions: Sequence[str]) -> set[str]:
        dialect = self._db.dialect
        in_actions, aparams = dialect.is_in("action", list(actions))
        out: set[str] = set()
        for batch in dialect.batches(sorted(set(rids))):
            in_rids, rparams = dialect.is_in("rid", list(batch))
            out |= {str(r[0]) for r in self._db.query(
                f"SELECT DISTINCT rid FROM history WHERE {in_rids} AND at > ? AND {in_actions}",
                (*rparams, after, *aparams))}
        return out

    def count_unchecked(self, after: str, kinds: Sequence[str], actions: Sequence[str]) -> int:
        dialect = self._db.dialect
        in_kinds, kparams = dialect.is_in("kind", list(kinds))
        in_actions, aparams = dialect.is_in("action", list(actions))
        row = self._db.query_one(f"SELECT count(*) FROM history WHERE at > ? AND {in_kinds} AND {in_actions}",
                                 (after, *kparams, *aparams))
        return 0 if row is None else int(row[0])


class ExportsQueries(Repository[D]):
    """``store.exports``: the exports taken, so a purge can name those that still hold a record."""

    def record(self, mark: ExportMark) -> None:
        self._db.write(INSERT_EXPORT, tuple(getattr(mark, c) for c in EXPORT_COLUMNS))

    def all(self) -> list[ExportMark]:
        return [ExportMark(*(r[c] for c in EXPORT_COLUMNS)) for r in self._db.query(EXPORTS)]
