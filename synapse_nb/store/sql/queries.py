"""Every shared statement that is not one kind table's: settings and bookkeeping (``meta``), recall sessions,
verify's flags, file references, the recall gate's candidates, tags and keys, the candidates the retrieval index
reads, export and import.

Each class is a small repository over its tables, written once for both backends; statements are named constants,
and a list of values is bound the backend's way (:meth:`~synapse_nb.store.sql.dialect.Dialect.batches`,
:meth:`~synapse_nb.store.sql.dialect.Dialect.is_in`). What a backend does its own way subclasses these (the
word statistics, ranking and change feed of each backend; PostgreSQL's one-statement session marks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.models import PRIORITIES, TABLES, Record, past_agent_limits
from synapse_nb.store.records import EXPORT_FIELDS, JSON_FIELDS, Candidate, NotJson, RefSource
from synapse_nb.store.sql import decode as dec
from synapse_nb.store.sql.connection import D, Fields, Repository, Row
from synapse_nb.store.sql.tables import Table

__all__ = ["AGENT_SESSIONS_PER_MIND", "AGENT_SESSIONS_PER_VAULT", "AGENT_SESSION_LESSONS", "AGENT_SESSION_ROWS",
           "CANDIDATES", "HOOK_SESSIONS", "CandidateDocs",
           "FlagsQueries", "MetaQueries", "RecallQueries", "RefsQueries",
           "SessionsQueries", "TransferQueries", "candidate"]

# -- meta: settings, scan tips ---------------------------------------------------------------------------------
UPSERT_META = "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
ALL_SETTINGS = "SELECT key, value FROM meta WHERE key LIKE 'setting:%' ORDER BY key"
GET_META = "SELECT value FROM meta WHERE key = ?"


#: Agent writes since a stamp, in every mind of the vault (an agent picks its mind: a count per mind let it write
#: the quota once in each of as many minds as it liked): the history entries agents made (one per create, update,
#: delete or analysis: a record rewritten ten times, or created and deleted, counts every time, since each entry
#: keeps the record as it was), through the partial index history_agent_at; plus the revisions agents proposed to
#: humans' memories since then (each a write that waits for a human, with no history entry of its own), through
#: revisions_agent. PostgreSQL runs the count in a function of its schema (agent_writes_since), past row-level
#: security, for the calling database login's own writes (one agent login cannot use up another's quota).
AGENT_WRITES = ("SELECT (SELECT count(*) FROM history WHERE at >= ? AND actor = 'agent')"
                " + (SELECT count(*) FROM revisions WHERE created_at >= ? AND actor = 'agent')")
AGENT_MEMORIES = "SELECT count(*) FROM memories WHERE mind = ? AND source = 'agent'"
#: What agents hold: records and their bytes in a mind, then in every mind (kept by triggers as records are written:
#: two rows read by key, at any number of records; SQLite schema v7, PostgreSQL migration 15).
AGENT_HELD = ("SELECT coalesce((SELECT records FROM agent_held WHERE mind = ?), 0),"
              " coalesce((SELECT bytes FROM agent_held WHERE mind = ?), 0), records, bytes"
              " FROM agent_held_all WHERE id = 1")

#: The minds that hold a record (any kind): a loose scan of each kind table's index led by ``mind`` (every kind table
#: has one: memories_key, checkpoints_latest, decisions_recent, lessons_status, episodes_task, notes' UNIQUE (mind,
#: name)), one index probe per mind and table, whatever the number of records. On a team vault it runs under
#: row-level security like every reader: an agent login finds only the minds granted to it (and of lessons, those it
#: may read: approved, in force).
MINDS = "WITH RECURSIVE " + ", ".join(
    f"m_{t}(mind) AS (SELECT min(mind) FROM {t} UNION ALL"
    f" SELECT (SELECT min(mind) FROM {t} WHERE mind > m_{t}.mind) FROM m_{t} WHERE m_{t}.mind IS NOT NULL)"
    for t in sorted(set(TABLES.values()))) + " " + " UNION ".join(
    f"SELECT mind FROM m_{t} WHERE mind IS NOT NULL" for t in sorted(set(TABLES.values()))) + " ORDER BY 1"

_COMMIT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def scan_tips_of(value: object) -> tuple[str, ...]:
    """A stored lesson scan place: a JSON array of commit ids. Anything else is no place (the scan starts afresh,
    which finds no revert twice) rather than an error: one bad value (review 30: an agent login's own SQL wrote
    ``7``) stopped every later scan that read it.

    >>> scan_tips_of('["' + "a" * 40 + '"]') == ("a" * 40,)
    True
    >>> scan_tips_of("7"), scan_tips_of('["HEAD"]'), scan_tips_of("not json")
    ((), (), ())
    """
    try:
        tips = json.loads(value) if isinstance(value, str | bytes) else None
    except ValueError:
        return ()
    if not isinstance(tips, list) or not all(isinstance(t, str) and _COMMIT_ID.fullmatch(t) for t in tips):
        return ()
    return tuple(tips)


def _setting_value(text: Any) -> Any:
    """A stored setting's value: its JSON decoded, or :class:`~synapse_nb.store.records.NotJson` holding the text
    when it is not JSON (a hand edit of ``meta``; review 41: ``%synapse`` raised JSONDecodeError). Whether the value
    is one the setting accepts is :mod:`synapse_nb.settings`' to judge.

    >>> _setting_value("7"), _setting_value("7 days")
    (7, NotJson(text='7 days'))
    """
    if not isinstance(text, str):
        return NotJson(str(text))
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NotJson(text)


class MetaQueries(Repository[D]):
    """Settings are kept per data version inside a snapshot of a connection that keeps answers (a team vault's:
    writing a setting moves the version), so a warm recall's saved default bars cost no round trip."""

    def agent_writes(self, since: str) -> int:
        row = self._db.query_one(AGENT_WRITES, (since, since))
        return int(row[0] or 0) if row else 0

    def agent_memories(self, mind: str) -> int:
        row = self._db.query_one(AGENT_MEMORIES, (mind,))
        return int(row[0] or 0) if row else 0

    def agent_held(self, mind: str) -> tuple[int, int, int, int]:
        """What agents hold: (records in ``mind``, their bytes, records in every mind, their bytes)."""
        row = self._db.query_one(AGENT_HELD, (mind, mind))
        return (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0), int(row[3] or 0)) if row else (0, 0, 0, 0)

    def minds(self) -> tuple[str, ...]:
        return tuple(sorted(str(r[0]) for r in self._db.query(MINDS)))

    def settings(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        memo = self._db.snapshot_cache("settings")
        if memo is None:
            return self._settings(names)
        key = None if names is None else tuple(names)
        if key not in memo:
            memo[key] = self._settings(key)
        return dict(memo[key])

    def _settings(self, names: Iterable[str] | None) -> dict[str, Any]:
        if names is None:
            rows = list(self._db.query(ALL_SETTINGS))
        else:
            dialect, rows = self._db.dialect, []
            for batch in dialect.batches(sorted({f"setting:{n}" for n in names})):
                cond, params = dialect.is_in("key", batch)
                rows += self._db.query(f"SELECT key, value FROM meta WHERE {cond} ORDER BY key", params)
        return {r["key"][len("setting:"):]: _setting_value(r["value"]) for r in rows}

    def set_settings(self, values: Mapping[str, Any]) -> None:
        self._db.executemany(UPSERT_META, [(f"setting:{k}", v.text if isinstance(v, NotJson) else json.dumps(v))
                                           for k, v in values.items()])

    def scan_tips(self, scope: str) -> tuple[str, ...]:
        row = self._db.query_one(GET_META, (f"scan_tips:{scope}",))
        return scan_tips_of(row["value"]) if row else ()

    def set_scan_tips(self, scope: str, tips: Sequence[str]) -> None:
        self._db.write(UPSERT_META, (f"scan_tips:{scope}", json.dumps(sorted(tips))))


# -- sessions ---------------------------------------------------------------------------------------------------
#: The rows an agent's session holds in ``session_seen`` (a record given, and its digest): past it a new record given
#: is not marked (given again later, as to a session past the hour's bound), what it holds stays. A recall gives at
#: most top_k (5 by default, 20 at most) records and the lessons, each once unless it changed: a session reaches
#: 1,000 only after some 200 recalls that each gave five records it never had. Review 28: an agent's reads alone
#: added a row per record given, without end.
AGENT_SESSION_ROWS = 1000
#: The rows of lessons an agent's session holds, bounded apart from its records' (review 95): a session's lesson marks
#: are recorded even past the hour's room of new sessions and past :data:`AGENT_SESSION_ROWS` (they tell it later
#: that a lesson it was given is no longer in force), and only people approve lessons: a session holds few.
AGENT_SESSION_LESSONS = 200
#: The agent sessions a mind keeps, the agent hooks' (:data:`HOOK_SESSIONS`) and the others' each apart: a new one
#: admitted past it, those of its kind given something least recently give way whole (their records are given again
#: if asked for: a lost mark, never a lost record). At least the hour's bound on new sessions of a kind
#: (recall.delta.SESSIONS_PER_HOUR), so that a session given something in the past hour never gives way to the hour's
#: new ones, and the hour's bound holds: a session that gave way is no longer counted. Review 95: one bound for every
#: agent session let an agent's throw-away recalls fill it, and the hooks' sessions recorded nothing.
AGENT_SESSIONS_PER_MIND = 256
#: The agent sessions of a kind the vault keeps, every mind together (an agent names its mind): the same rule.
AGENT_SESSIONS_PER_VAULT = 512
#: How the agent hooks' sessions are stored (recall.delta.stored_session: ``agent:<surface>:<id>``, surface "hook"),
#: and on a team vault after the login (``agent:<login>:hook:<id>``, session_key): they have room of their own.
HOOK_SESSIONS = "agent:hook:"

MARK_SEEN = ("INSERT INTO session_seen(mind, session, rid, digest, seen_at) VALUES (?,?,?,?,?) "
             "ON CONFLICT(mind, session, rid) DO UPDATE SET digest = excluded.digest, seen_at = excluded.seen_at")
#: A mind's marks older than a time, and its agent sessions first given something before it (review 28: an agent
#: re-giving the same records kept their ``seen_at`` new, and its sessions for ever). A team vault runs it as
#: ``delete_sessions_before`` (migration 19).
PRUNE_SESSIONS = ("DELETE FROM session_seen WHERE mind = ?1 AND (seen_at < ?2 OR session IN (SELECT session FROM "
                  "session_registry WHERE mind = ?1 AND agent = 1 AND first_seen < ?2))")
#: The lessons a session was given: its key's rows whose id starts "les_" (a range of the primary key: '`' follows
#: '_'; the shared layer runs on SQLite, whose text compares byte by byte).
LESSONS_RANGE = "(rid >= 'les_' AND rid < 'les`')"
LESSON_PREFIX = "les_"
#: Whether a session may be recorded: it holds the mark of a record (not only lessons': those are recorded past the
#: room, and make no session known), or its mind had fewer than N sessions of its kind given something since a time:
#: people's, the agent hooks' (``agent:hook:...``) and other agents' (``agent:...``, recall.delta) apart, so agents
#: naming new sessions fill only their own kind's room, and an agent's reads through the API, MCP or the CLI never
#: the hooks' (review 95). The count reads ``session_registry`` (schema v9): the registry rows of the hour.
SESSION_ROOM = (f"SELECT EXISTS (SELECT 1 FROM session_seen WHERE mind = ? AND session = ? AND NOT {LESSONS_RANGE}) "
                "OR (SELECT count(*) FROM session_registry "
                "WHERE mind = ? AND agent = (substr(?, 1, 6) = 'agent:') AND last_seen >= ? "
                f"AND (substr(session, 1, 11) = '{HOOK_SESSIONS}') = (substr(?, 1, 11) = '{HOOK_SESSIONS}')) < ?")


class SessionsQueries(Repository[D]):
    def seen(self, mind: str, session: str, ids: Sequence[str], *, lessons: bool = False) -> dict[str, str]:
        dialect = self._db.dialect
        out: dict[str, str] = {}
        batches = list(dialect.batches(list(ids))) or ([[]] if lessons else [])
        for n, batch in enumerate(batches):
            cond, params = dialect.is_in("rid", batch) if batch else ("0 = 1", ())
            if lessons and n == 0:  # review 87: the lessons it was given, whatever their ids, in the same statement
                cond = f"({LESSONS_RANGE} OR {cond})"
            out.update((r["rid"], r["digest"]) for r in self._db.query(
                f"SELECT rid, digest FROM session_seen WHERE mind = ? AND session = ? AND {cond}",
                (mind, session, *params)))
        return out

    def mark(self, mind: str, session: str, pairs: Sequence[tuple[str, str]], now: str, *,
             new_since: str | None = None, new_limit: int = 0) -> None:
        # a session's marks are no part of what recall ranks or caches: they do not move the data version (every
        # recall with a session that gave something new would otherwise start its next one cold)
        with self._db.transaction(moves_version=False):
            if new_since is not None:
                room = self._db.query_one(SESSION_ROOM, (mind, session, mind, session, new_since, session,
                                                         new_limit))
                if not (room and room[0]):  # past the room a session's lesson marks only (review 95)
                    pairs = [p for p in pairs if p[0].startswith(LESSON_PREFIX)]
                    if not pairs:
                        return
            # in id order, as a team vault's one statement: past an agent session's bound the same ones are kept
            given = dict(pairs)  # the last digest of a repeated id wins
            self._db.executemany(MARK_SEEN, [(mind, session, r, given[r], now) for r in sorted(given)])

    def prune(self, mind: str, before: str) -> int:
        with self._db.transaction(moves_version=False):
            return max(0, self._db.write(PRUNE_SESSIONS, (mind, before)).rowcount)


# -- flags ------------------------------------------------------------------------------------------------------
FLAGS_OF_MIND = "SELECT rid, flag, detail FROM flags WHERE mind = ? ORDER BY rid, flag"
DELETE_FLAGS = "DELETE FROM flags WHERE mind = ?"
INSERT_FLAG = "INSERT INTO flags(rid, mind, flag, detail, updated_at) VALUES (?,?,?,?,?)"


class FlagsQueries(Repository[D]):
    def of_mind(self, mind: str) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self._db.query(FLAGS_OF_MIND, (mind,)):
            out.setdefault(r["rid"], {})[r["flag"]] = json.loads(r["detail"])
        return out

    def dangling(self, ids: Sequence[str]) -> dict[str, list[str]]:
        dialect = self._db.dialect
        out: dict[str, list[str]] = {}
        for batch in dialect.batches(list(ids)):
            cond, params = dialect.is_in("rid", batch)
            out.update((r["rid"], json.loads(r["detail"])) for r in self._db.query(
                f"SELECT rid, detail FROM flags WHERE flag = 'dangling' AND {cond}", params))
        return out

    def replace(self, mind: str, dangling: Mapping[str, Sequence[str]], stale: Mapping[str, Sequence[str]],
                updated_at: str) -> None:
        rows = [(rid, mind, "dangling", json.dumps(sorted(ps)), updated_at) for rid, ps in sorted(dangling.items())]
        rows += [(rid, mind, "stale", json.dumps(list(shas)), updated_at) for rid, shas in sorted(stale.items())]
        with self._db.transaction():
            self._db.write(DELETE_FLAGS, (mind,))
            self._db.executemany(INSERT_FLAG, rows)


# -- file references (verify) ---------------------------------------------------------------------------------
REF_LESSONS = "SELECT id, updated_at, files_affected FROM lessons WHERE mind = ? ORDER BY id"
REF_CHECKPOINTS = "SELECT id, updated_at, changed_files FROM checkpoints WHERE mind = ? ORDER BY id"
REF_DECISIONS = ("SELECT id, updated_at, decision || ' ' || coalesce(rationale, '') AS t FROM decisions "
                 "WHERE mind = ? ORDER BY id")
REF_MEMORIES = "SELECT id, updated_at, content FROM memories WHERE mind = ? ORDER BY id"


class RefsQueries(Repository[D]):
    def sources(self, mind: str) -> list[RefSource]:
        q = self._db.query
        out = [RefSource("lesson", r["id"], r["updated_at"], files=dec.text_items(r["files_affected"]))
               for r in q(REF_LESSONS, (mind,))]
        out += [RefSource("checkpoint", r["id"], r["updated_at"], files=dec.text_items(r["changed_files"]))
                for r in q(REF_CHECKPOINTS, (mind,))]
        out += [RefSource("decision", r["id"], r["updated_at"], text=r["t"]) for r in q(REF_DECISIONS, (mind,))]
        out += [RefSource("memory", r["id"], r["updated_at"], text=r["content"]) for r in q(REF_MEMORIES, (mind,))]
        return out


# -- recall: candidates, tags, keys ------------------------------------------------------------------------------
#: The recall gate's candidates (a view in both schemas): one row per ranked record, with its gate text.
CANDIDATES = "SELECT id, kind, mind, text, updated_at, expires_at FROM gate_candidates"
MIND_CANDIDATES = f"{CANDIDATES} WHERE mind = ? ORDER BY id"
#: Most keys matched by one statement of :meth:`RecallQueries.key_matches`.
KEY_BATCH = 400


def candidate(r: Fields) -> Candidate:
    """A ``gate_candidates`` row as the value recall and the index read."""
    return Candidate(r["kind"], r["id"], r["mind"], r["text"], r["updated_at"], r["expires_at"])


class RecallQueries(Repository[D]):
    """What recall reads alike on both backends; each backend adds its word statistics and ranking reads
    (``count``, ``fetch``, ``doc_freq``, ``bm25`` and the rest of :class:`~synapse_nb.store.base.RecallQueries`)."""

    def candidates(self, mind: str) -> list[Candidate]:
        return [candidate(r) for r in self._db.query(MIND_CANDIDATES, (mind,))]

    def tag_counts(self, mind: str, tags: Sequence[str]) -> dict[str, int]:
        dialect = self._db.dialect
        out: dict[str, int] = {}
        for batch in dialect.batches(list(tags)):
            cond, params = dialect.is_in("tag", batch)
            out.update((r["tag"], int(r["n"])) for r in self._db.query(
                f"SELECT tag, count(*) AS n FROM tags WHERE {cond} AND mind = ? GROUP BY tag ORDER BY tag",
                (*params, mind)))
        return out

    def tag_matches(self, mind: str, tags: Sequence[str]) -> list[tuple[str, str, int]]:
        dialect = self._db.dialect
        out: list[tuple[str, str, int]] = []
        batches = list(dialect.batches(list(tags)))
        for batch in batches:
            cond, params = dialect.is_in("t.tag", batch)
            # each record's own number of tags (tags_rid): a tag names less of a record that carries many
            out += [(r["rid"], r["tag"], int(r["n"])) for r in self._db.query(
                "SELECT t.rid AS rid, t.tag AS tag, (SELECT count(*) FROM tags u WHERE u.rid = t.rid) AS n FROM tags t "
                f"WHERE t.mind = ? AND {cond} ORDER BY t.rid, t.tag", (mind, *params))]
        return sorted(out) if len(batches) > 1 else out

    def key_matches(self, mind: str, keys: Sequence[str]) -> list[tuple[str, str]]:
        """Memories then notes, each by id, per batch of keys."""
        dialect = self._db.dialect
        out: list[tuple[str, str]] = []
        for batch in dialect.batches(list(keys), KEY_BATCH):
            keyed, kparams = dialect.is_in("key", batch)
            named, nparams = dialect.is_in("name", batch)
            out += [(r["id"], r["name"]) for r in self._db.query(
                f"SELECT id, name FROM (SELECT 0 AS src, id, key AS name FROM memories WHERE mind = ? AND {keyed} "
                f"UNION ALL SELECT 1, id, name FROM notes WHERE mind = ? AND {named}) m ORDER BY src, id",
                (mind, *kparams, mind, *nparams))]
        return out


class CandidateDocs(Repository[D]):
    """The candidates the retrieval index reads (``docs``, ``all_docs`` of :class:`~synapse_nb.store.base.Outbox`)."""

    def docs(self, ids: Sequence[str]) -> list[Candidate]:
        dialect = self._db.dialect
        rows: list[Row] = []
        for batch in dialect.batches(list(ids)):
            cond, params = dialect.is_in("id", batch)
            rows += self._db.query(f"{CANDIDATES} WHERE {cond} ORDER BY id", params)
        return [candidate(r) for r in rows]

    def all_docs(self) -> Iterator[Candidate]:
        return (candidate(r) for r in self._db.iter_query(f"{CANDIDATES} ORDER BY id"))


# -- export / import -------------------------------------------------------------------------------------------
def _columns_json(kind: str, doc: Mapping[str, Any]) -> list[Any]:
    """An export document's values in :data:`EXPORT_FIELDS` order, JSON fields as stored JSON text."""
    json_fields = JSON_FIELDS[kind]
    return [None if doc[f] is None else json.dumps(doc[f], sort_keys=True, ensure_ascii=False)
            if f in json_fields else doc[f] for f in EXPORT_FIELDS[kind]]


class TransferQueries(Repository[D]):
    def __init__(self, db: D, tables: Mapping[str, Table[Any, D]]) -> None:
        super().__init__(db)
        self._tables = tables

    def rows(self, kind: str) -> Iterator[dict[str, Any]]:
        json_fields = JSON_FIELDS[kind]
        cols = EXPORT_FIELDS[kind]
        for row in self._db.query(f"SELECT {', '.join(cols)} FROM {TABLES[kind]} ORDER BY id"):
            yield {k: json.loads(row[k]) if k in json_fields and row[k] is not None else row[k] for k in cols}

    def to_record(self, kind: str, doc: Mapping[str, Any]) -> Record:
        values = dict(zip(EXPORT_FIELDS[kind], _columns_json(kind, doc), strict=True))
        if kind == "memory":
            prio, ver = values["priority"], values["verified"]
            if isinstance(prio, bool) or prio not in range(len(PRIORITIES)):
                raise ValidationError(f"priority {prio!r} must be 0 (critical) to 3 (low)")
            if ver not in (0, 1) or isinstance(ver, float):
                raise ValidationError(f"verified {ver!r} must be 0 or 1")
        for f in JSON_FIELDS[kind]:
            v = doc[f]
            if f == "revert_commit":
                if v is not None and not isinstance(v, dict):
                    raise ValidationError(f"{f} must be an object or null, got {v!r}")
            elif not isinstance(v, list):
                raise ValidationError(f"{f} must be a list, got {v!r}")
        try:
            # export documents are rows: the table's own mapping reads them (no view: the stored status is kept)
            record: Record = self._tables[kind].from_row(values, "")
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            raise ValidationError(f"malformed {kind} fields: {exc}") from None
        # the read is tolerant (a malformed item is dropped, an unknown source read as an agent's: decode.py); an
        # import stores the document, so it must be what the record read back from it holds. But for what no agent's
        # write leaves, which an agent's record reads held to (an agent's checkpoint origin: the import's trust claim)
        held = past_agent_limits(kind, values) if getattr(record, "source", None) == "agent" else {}
        for f, back in zip(EXPORT_FIELDS[kind], self._tables[kind].to_row(record), strict=True):
            given, got = values[f], back
            if f in JSON_FIELDS[kind]:
                given, got = (None if x is None else json.loads(x) for x in (given, got))
            if given != got and not (f == "revert_commit" and given == {} and got is None) and not (
                    f in held and got == held[f]):
                raise ValidationError(f"malformed {kind} field {f}: {values[f]!r} (accepted: what a {kind} of this "
                                      f"version of synapse_nb writes there, read back as {back!r})")
        return record

    def insert(self, kind: str, doc: Mapping[str, Any]) -> bool:
        table = self._tables[kind]
        values = _columns_json(kind, doc)
        with self._db.transaction():
            existing = self._db.query_one(f"SELECT {', '.join(table.fields)} FROM {table.table} WHERE id = ?",
                                          (doc["id"],))
            if existing is not None:
                if list(existing) == values:
                    return False
                raise ConflictError(f"{kind} {doc['id']} already exists with different content")
            try:
                table.insert_row(doc["id"], tuple(values))
            except ConflictError as exc:
                raise ConflictError(f"{kind} {doc['id']} conflicts with the vault ({exc})") from None
        return True

    def advance_clock(self, ts: str) -> None:
        self._db.advance_clock(ts)
