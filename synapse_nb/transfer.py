"""Export and import of a whole vault as JSON Lines: sorted, stable, diffable, reviewable in git.

Format: a header line ``{"format": "synapse_nb-export", "schema": N}``, then one object per record
with ``"kind"`` first-class, rows ordered by kind then id, keys sorted. JSON columns (tags, files,
commits) are real JSON values. Settings travel as ``{"kind": "setting", "name": ..., "value": ...}``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from synapse_nb._util import MAX_TEXT, MAX_TRIGGER, check_key, check_text, fmt_ts, parse_ts
from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.models import RECORD_TYPES, TABLES

if TYPE_CHECKING:
    from synapse_nb.store.sqlite import Store
    from synapse_nb.vault import Vault

__all__ = ["EXPORT_FORMAT", "export_lines", "import_lines"]

EXPORT_FORMAT = "synapse_nb-export"
#: kind -> (table, JSON columns)
_JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "memory": ("tags",), "checkpoint": ("changed_files",), "decision": ("tags",),
    "lesson": ("revert_commit", "reverted_commits", "files_affected", "diffstat"), "episode": ("refs",), "note": (),
}
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {k: (TABLES[k], cols) for k, cols in _JSON_COLUMNS.items()}


def _columns(conn_or_store: Any, table: str) -> list[str]:
    rows = conn_or_store.execute(f"PRAGMA table_info({table})").fetchall() if isinstance(
        conn_or_store, sqlite3.Connection) else conn_or_store.query(f"PRAGMA table_info({table})")
    return [r["name"] for r in rows]


def export_lines(store: Store) -> Iterator[str]:
    """Yield the export, one JSON document per line."""
    from synapse_nb.store.sqlite import SCHEMA_VERSION

    yield json.dumps({"format": EXPORT_FORMAT, "schema": SCHEMA_VERSION}, sort_keys=True)
    for row in store.query("SELECT key, value FROM meta WHERE key LIKE 'setting:%' ORDER BY key"):
        yield json.dumps({"kind": "setting", "name": row["key"][8:], "value": json.loads(row["value"])},
                         sort_keys=True, ensure_ascii=False)
    for kind in sorted(KINDS):
        table, json_cols = KINDS[kind]
        for row in store.query(f"SELECT * FROM {table} ORDER BY id"):
            doc: dict[str, Any] = {"kind": kind}
            for k in row.keys():
                v = row[k]
                doc[k] = json.loads(v) if k in json_cols and v is not None else v
            yield json.dumps(doc, sort_keys=True, ensure_ascii=False)


def _fail(lineno: int, msg: str) -> ValidationError:
    return ValidationError(f"import line {lineno}: {msg}; nothing was imported")


def import_lines(vault: Vault, lines: Iterable[str]) -> dict[str, int]:
    """Import an export into ``vault`` in one transaction; see :meth:`Vault.import_jsonl`."""
    from synapse_nb.store.sqlite import SCHEMA_VERSION
    from synapse_nb.vault import SETTINGS

    parsed: list[tuple[int, dict[str, Any]]] = []
    seen_ids: dict[str, int] = {}
    header_seen = False
    for lineno, line in enumerate(lines, 1):
        if not isinstance(line, str):
            raise _fail(lineno, f"expected a text line, got {type(line).__name__}")
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(lineno, f"not valid JSON ({exc.msg})") from None
        if not isinstance(doc, dict):
            raise _fail(lineno, "expected a JSON object")
        if "format" in doc:
            if doc.get("format") != EXPORT_FORMAT:
                raise _fail(lineno, f"unknown format {doc.get('format')!r}; expected {EXPORT_FORMAT!r}")
            if not isinstance(doc.get("schema"), int) or doc["schema"] > SCHEMA_VERSION:
                raise _fail(lineno, f"export schema {doc.get('schema')!r} is newer than this synapse_nb "
                                    f"({SCHEMA_VERSION}); upgrade to import it")
            header_seen = True
            continue
        kind = doc.get("kind")
        if kind == "setting":
            name = doc.get("name")
            if name not in SETTINGS:
                raise _fail(lineno, f"unknown setting {name!r}")
            try:
                SETTINGS[name][1](doc.get("value"))
            except ValidationError as exc:
                raise _fail(lineno, f"setting {name}: {exc}") from None
            parsed.append((lineno, doc))
            continue
        if kind not in KINDS:
            raise _fail(lineno, f"unknown kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}, setting")
        rid = doc.get("id")
        if not isinstance(rid, str) or not rid:
            raise _fail(lineno, "record has no id")
        if rid in seen_ids:
            raise _fail(lineno, f"duplicate id {rid} (first on line {seen_ids[rid]})")
        seen_ids[rid] = lineno
        try:
            _validate_record(kind, doc)
        except ValidationError as exc:
            raise _fail(lineno, f"{kind} {rid}: {exc}") from None
        parsed.append((lineno, doc))
    if parsed and not header_seen:
        raise ValidationError("import: the header line {\"format\": \"synapse_nb-export\", ...} is missing; "
                              "nothing was imported")

    counts: dict[str, int] = {k: 0 for k in sorted(KINDS)} | {"skipped": 0, "setting": 0}
    latest = ""
    with vault._store.transaction() as c:
        cols_by_table = {t: _columns(c, t) for t, _ in KINDS.values()}
        for lineno, doc in parsed:
            kind = doc["kind"]
            if kind == "setting":
                c.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                          "excluded.value", (f"setting:{doc['name']}", json.dumps(doc["value"])))
                counts["setting"] += 1
                continue
            table, json_cols = KINDS[kind]
            cols = cols_by_table[table]
            keys = sorted(k for k in doc if k != "kind")
            if sorted(cols) != keys:
                missing = sorted(set(cols) - set(keys))
                extra = sorted(set(keys) - set(cols))
                raise _fail(lineno, f"{kind} fields do not match (missing: {missing or 'none'}, unknown: "
                                    f"{extra or 'none'})")
            values = []
            for col in cols:
                v = doc[col]
                if col in json_cols:
                    v = None if v is None else json.dumps(v, sort_keys=True, ensure_ascii=False)
                elif isinstance(v, str):
                    try:
                        check_text(v, f"{kind}.{col}", max_len=MAX_TEXT, allow_empty=True)
                    except ValidationError as exc:
                        raise _fail(lineno, str(exc)) from None
                elif v is not None and not isinstance(v, int | float) or isinstance(v, bool):
                    raise _fail(lineno, f"{kind}.{col} has an unsupported value {v!r}")
                values.append(v)
            existing = c.execute(f"SELECT * FROM {table} WHERE id = ?", (doc["id"],)).fetchone()
            if existing is not None:
                if [existing[col] for col in cols] == values:
                    counts["skipped"] += 1
                    continue
                raise ConflictError(f"import line {lineno}: {kind} {doc['id']} already exists with different "
                                    "content; nothing was imported")
            try:
                c.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", values)
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"import line {lineno}: {kind} {doc['id']} conflicts with the vault ({exc}); "
                                    "nothing was imported") from None
            vault._touched(kind, doc["id"])
            counts[kind] += 1
            latest = max(latest, doc["updated_at"], doc["created_at"])
        if latest:  # later writes must stamp after everything imported
            c.execute("INSERT INTO meta(key, value) VALUES ('clock', ?) ON CONFLICT(key) DO UPDATE SET value = "
                      "max(value, excluded.value)", (latest,))
    return counts


_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def _ts(doc: dict[str, Any], field: str, *, required: bool) -> None:
    """Check an ISO 8601 timestamp and store it in the vault's fixed-width UTC form (which sorts as text)."""
    v = doc.get(field)
    if v is None and not required:
        return
    if not isinstance(v, str):
        raise ValidationError(f"{field} {v!r} is not an ISO 8601 timestamp")
    if not _TS.match(v):
        try:
            doc[field] = fmt_ts(parse_ts(v, field))
        except (ValueError, OverflowError):
            raise ValidationError(f"{field} {v!r} is not an ISO 8601 timestamp") from None


def _str_list(doc: dict[str, Any], field: str) -> None:
    v = doc.get(field)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValidationError(f"{field} must be a list of strings, got {v!r}")


def _stored_tags(tags: list[str]) -> None:
    """Tags as a vault stores them: lower-case, stripped, unique, sorted.

    Looser than :func:`synapse_nb._util.check_tags` on purpose: tags written by older versions (``"#c"``, ``"a b"``) stay
    importable, exactly as they were exported.
    """
    for t in tags:
        check_text(t, "tag", max_len=64, multiline=False)
    if tags != sorted(set(tags)) or any(t != t.strip().lower() for t in tags):
        raise ValidationError("tags must be lower-case, stripped, unique and sorted")


def _validate_record(kind: str, doc: dict[str, Any]) -> None:
    """Check an imported record's values the way the write path checks them (fields must already match)."""
    from synapse_nb.kinds.checkpoints import ORIGINS
    from synapse_nb.kinds.episodes import STATUSES as EPISODE_STATUSES
    from synapse_nb.kinds.lessons import STATUSES as LESSON_STATUSES
    from synapse_nb.models import CATEGORIES
    from synapse_nb.vault import _MIND

    rid = doc.get("id")
    prefix = RECORD_TYPES[kind].prefix
    if not isinstance(rid, str) or not re.match(rf"^{prefix}_[0-9a-z]{{1,40}}$", rid):
        raise ValidationError(f"id {rid!r} is not a {kind} id (expected '{prefix}_' and lower-case hex)")
    mind = doc.get("mind")
    if not isinstance(mind, str) or not _MIND.match(mind):
        raise ValidationError(f"mind {mind!r} is not a valid mind name")
    _ts(doc, "created_at", required=True)
    _ts(doc, "updated_at", required=True)
    if doc.get("source") not in ("user", "agent"):
        raise ValidationError(f"source {doc.get('source')!r} is not user or agent")
    if kind == "memory":
        if doc.get("category") not in CATEGORIES:
            raise ValidationError(f"category {doc.get('category')!r} is not one of {', '.join(CATEGORIES)}")
        if check_key(doc.get("key")) != doc.get("key"):
            raise ValidationError(f"key {doc.get('key')!r} is not snake_case")
        check_text(doc.get("content"), "content")
        _str_list(doc, "tags")
        _stored_tags(doc["tags"])
        prio, ver, conf = doc.get("priority"), doc.get("verified"), doc.get("confidence")
        if isinstance(prio, bool) or prio not in (0, 1, 2, 3):
            raise ValidationError(f"priority {prio!r} must be 0 (critical) to 3 (low)")
        if ver not in (0, 1) or isinstance(ver, float):
            raise ValidationError(f"verified {ver!r} must be 0 or 1")
        if isinstance(conf, bool) or not isinstance(conf, int | float) or not 0.0 <= conf <= 1.0:
            raise ValidationError(f"confidence {conf!r} must be between 0 and 1")
        _ts(doc, "expires_at", required=False)
    elif kind == "checkpoint":
        check_text(doc.get("doing"), "doing")
        _str_list(doc, "changed_files")
        if doc.get("origin") not in ORIGINS:
            raise ValidationError(f"origin {doc.get('origin')!r} is not one of {', '.join(ORIGINS)}")
    elif kind == "decision":
        check_text(doc.get("decision"), "decision")
        _str_list(doc, "tags")
    elif kind == "lesson":
        if doc.get("status") not in LESSON_STATUSES:
            raise ValidationError(f"status {doc.get('status')!r} is not one of {', '.join(LESSON_STATUSES)}")
        check_text(doc.get("summary"), "summary")
        _str_list(doc, "files_affected")
        for f in ("approved_at", "expires_at"):
            _ts(doc, f, required=False)
        if doc.get("status") == "approved" and (doc.get("approved_at") is None or doc.get("expires_at") is None):
            raise ValidationError("an approved lesson needs approved_at and expires_at")
    elif kind == "episode":
        check_text(doc.get("task_key"), "task_key", multiline=False)
        if doc.get("status") not in EPISODE_STATUSES:
            raise ValidationError(f"status {doc.get('status')!r} is not one of {', '.join(EPISODE_STATUSES)}")
        _str_list(doc, "refs")
    elif kind == "note":
        if check_key(doc.get("name"), "name") != doc.get("name"):
            raise ValidationError(f"name {doc.get('name')!r} is not snake_case")
        check_text(doc.get("trigger"), "trigger", max_len=MAX_TRIGGER)
        check_text(doc.get("body"), "body")
