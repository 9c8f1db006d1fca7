"""Export and import of a whole vault as JSON Lines: sorted, stable, diffable, reviewable in git.

Format: a header line ``{"format": "synapse_nb-export", "schema": N}``, then one object per record with
``"kind"`` first-class, rows ordered by kind then id, keys sorted. The fields of each kind are
:data:`synapse_nb.store.base.EXPORT_FIELDS`; JSON fields (tags, files, commits) are real JSON values. Settings
travel as ``{"kind": "setting", "name": ..., "value": ...}``.

An import is checked whole before anything is written: the format (header, fields, value types, timestamps)
here, and each record by its kind's own definition of a valid record (``Memories.check_record``, ...), the
same rules the write path follows. Then it is written in one transaction, all or nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from synapse_nb._util import MAX_TEXT, check_text, fmt_ts, parse_ts
from synapse_nb.context import check_mind
from synapse_nb.errors import ConflictError, ValidationError
from synapse_nb.kinds.checkpoints import Checkpoints
from synapse_nb.kinds.decisions import Decisions
from synapse_nb.kinds.episodes import Episodes
from synapse_nb.kinds.lessons import Lessons
from synapse_nb.kinds.memories import Memories
from synapse_nb.kinds.notes import Notes
from synapse_nb.models import RECORD_TYPES, Record
from synapse_nb.settings import SETTINGS, check_setting
from synapse_nb.store.records import EXPORT_FIELDS, JSON_FIELDS, OPTIONAL_FIELDS

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.store.base import VaultStore

__all__ = ["EXPORT_FORMAT", "KINDS", "export_lines", "import_lines"]

EXPORT_FORMAT = "synapse_nb-export"
#: The version of what an export's records hold: the store schema that last changed it (v3: episodes' thread, seq,
#: actor). A newer store schema that changes no record (SQLite v4 only queues its FTS5 writes) keeps it, so a team
#: vault (PostgreSQL, schema 3) imports a local vault's export.
EXPORT_SCHEMA = 3
#: Each kind's own check of a stored record: one definition of what a valid memory, lesson, ... is.
RECORD_CHECKS: dict[str, Callable[[Any], None]] = {
    "memory": Memories.check_record, "checkpoint": Checkpoints.check_record, "decision": Decisions.check_record,
    "lesson": Lessons.check_record, "episode": Episodes.check_record, "note": Notes.check_record,
}
#: The kinds an export holds, in export order.
KINDS: tuple[str, ...] = tuple(sorted(EXPORT_FIELDS))
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def export_lines(store: VaultStore) -> Iterator[str]:
    """Yield the export, one JSON document per line."""
    yield json.dumps({"format": EXPORT_FORMAT, "schema": min(store.schema_version, EXPORT_SCHEMA)}, sort_keys=True)
    for name, value in store.meta.settings().items():
        yield json.dumps({"kind": "setting", "name": name, "value": value}, sort_keys=True, ensure_ascii=False)
    for kind in KINDS:
        optional = OPTIONAL_FIELDS.get(kind, ())
        for doc in store.transfer.rows(kind):
            if optional:  # written only when set: a vault that does not use them exports as before
                doc = {k: v for k, v in doc.items() if v is not None or k not in optional}
            yield json.dumps({"kind": kind, **doc}, sort_keys=True, ensure_ascii=False)


def _fail(lineno: int, msg: str) -> ValidationError:
    return ValidationError(f"import line {lineno}: {msg}; nothing was imported")


def import_lines(ctx: Context, lines: Iterable[str]) -> dict[str, int]:
    """Import an export through ``ctx``'s store in one transaction; see :meth:`Vault.import_jsonl`."""
    store = ctx.store
    schema = min(store.schema_version, EXPORT_SCHEMA)
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
            if not isinstance(doc.get("schema"), int) or doc["schema"] > schema:
                raise _fail(lineno, f"export schema {doc.get('schema')!r} is newer than this synapse_nb "
                                    f"({schema}); upgrade to import it")
            header_seen = True
            continue
        kind = doc.get("kind")
        if kind == "setting":
            name = doc.get("name")
            if not isinstance(name, str) or name not in SETTINGS:
                raise _fail(lineno, f"unknown setting {name!r}")
            try:
                check_setting(name, doc.get("value"))
            except ValidationError as exc:
                raise _fail(lineno, f"setting {name}: {exc}") from None
            parsed.append((lineno, doc))
            continue
        if kind not in EXPORT_FIELDS:
            raise _fail(lineno, f"unknown kind {kind!r}; known kinds: {', '.join(KINDS)}, setting")
        rid = doc.get("id")
        if not isinstance(rid, str) or not rid:
            raise _fail(lineno, "record has no id")
        if rid in seen_ids:
            raise _fail(lineno, f"duplicate id {rid} (first on line {seen_ids[rid]})")
        seen_ids[rid] = lineno
        try:
            _check_document(store, kind, doc)
        except ValidationError as exc:
            raise _fail(lineno, f"{kind} {rid}: {exc}") from None
        parsed.append((lineno, doc))
    if parsed and not header_seen:
        raise ValidationError("import: the header line {\"format\": \"synapse_nb-export\", ...} is missing; "
                              "nothing was imported")

    counts: dict[str, int] = {k: 0 for k in KINDS} | {"skipped": 0, "setting": 0}
    latest = ""
    with store.transaction():
        for lineno, doc in parsed:
            kind = doc["kind"]
            if kind == "setting":
                store.meta.set_settings({doc["name"]: doc["value"]})
                counts["setting"] += 1
                continue
            try:
                written = store.transfer.insert(kind, doc)
            except ConflictError as exc:
                raise ConflictError(f"import line {lineno}: {exc}; nothing was imported") from None
            if not written:
                counts["skipped"] += 1
                continue
            counts[kind] += 1
            latest = max(latest, doc["updated_at"], doc["created_at"])
        if latest:  # later writes must stamp after everything imported
            store.transfer.advance_clock(latest)
    return counts


def _check_document(store: VaultStore, kind: str, doc: dict[str, Any]) -> None:
    """Check an exported record the way the write path checks one (normalising its timestamps in place).

    First the format: the kind's fields exactly, text and numbers where the format has them, ISO 8601 times,
    an id of the kind, a valid mind and source; then the record, by its kind's own check.
    """
    fields = EXPORT_FIELDS[kind]
    for f in OPTIONAL_FIELDS.get(kind, ()):  # exports written before these fields existed
        doc.setdefault(f, None)
    keys = sorted(k for k in doc if k != "kind")
    if sorted(fields) != keys:
        missing = sorted(set(fields) - set(keys))
        extra = sorted(set(keys) - set(fields))
        raise ValidationError(f"fields do not match (missing: {missing or 'none'}, unknown: {extra or 'none'})")
    json_fields = JSON_FIELDS[kind]
    for f in fields:
        v = doc[f]
        if f in json_fields:
            continue
        if isinstance(v, str):
            check_text(v, f"{kind}.{f}", max_len=MAX_TEXT, allow_empty=True, stored=True)
        elif v is not None and not isinstance(v, int | float) or isinstance(v, bool):
            raise ValidationError(f"{kind}.{f} has an unsupported value {v!r}")
    prefix = RECORD_TYPES[kind].prefix
    rid = doc["id"]
    if not re.match(rf"^{prefix}_[0-9a-z]{{1,40}}$", rid):
        raise ValidationError(f"id {rid!r} is not a {kind} id (expected '{prefix}_' and lower-case hex)")
    try:
        check_mind(doc["mind"])
    except ValidationError:
        raise ValidationError(f"mind {doc['mind']!r} is not a valid mind name") from None
    for f in fields:
        if f.endswith("_at"):
            _ts(doc, f, required=f in ("created_at", "updated_at"))
    if doc["source"] not in ("user", "agent"):
        raise ValidationError(f"source {doc['source']!r} is not user or agent")
    record: Record = store.transfer.to_record(kind, doc)
    RECORD_CHECKS[kind](record)


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
