"""History in an export (``export_jsonl(history=True)``, CLI ``--history``): one ``{"kind": "history", ...}`` line per
entry after the records, by time then id; an import stores them as they are (an entry whose id is there is skipped:
history is append-only, the first copy stands). ``before`` travels as the canonical JSON text the vault stores, so
an entry re-imports byte for byte.

An entry is what a vault writes (review 22): its id is the one the vault derives from its record and version
(:func:`synapse_nb.history.entry_id`), a ``create`` is version 1 and, in the record's history as the import leaves
it, stamped before none of its other entries (:func:`check_create_first`). Where an entry may go (a record the file
brings in as new, or with ``--trust`` any) and how late it may be stamped is :mod:`synapse_nb.transfer`'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from synapse_nb._util import check_id, check_json_numbers
from synapse_nb.changes import ACTIONS, SURFACES, HistoryEntry, record_from_dict
from synapse_nb.errors import ValidationError
from synapse_nb.history import entry_id
from synapse_nb.models import KIND_NAMES, RECORD_TYPES, kind_of_id

if TYPE_CHECKING:
    from synapse_nb.store.base import VaultStore

__all__ = ["HISTORY_KIND", "STORED_HISTORY", "UNBROUGHT_HISTORY", "check_create_first", "history_docs",
           "history_entry"]

#: The ``kind`` of a history line in an export.
HISTORY_KIND = "history"
#: The trust claim of a history entry for a record the vault holds, or holds history of, already (review 22).
STORED_HISTORY = "history of a record already in this vault"
#: The trust claim of a history entry for a record the file does not bring: it waits for a record of that id.
UNBROUGHT_HISTORY = "history of a record this file does not bring"
_TEXT = ("id", "rid", "kind_of", "mind", "action", "actor", "surface", "at")
#: A record's digest as a vault writes it (``_util.digest``): 16 lowercase hex digits.
_DIGEST = re.compile(r"[0-9a-f]{16}")
#: A login an exported entry names (a team vault's: PostgreSQL's names are at most 63 bytes)
_LOGIN = re.compile(r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]{1,63}")


def history_docs(store: VaultStore) -> Iterator[dict[str, Any]]:
    """Every history entry of the vault as an export document (``kind_of``: the record's kind)."""
    for e in store.history.all():
        doc = e.to_dict()
        doc["kind_of"] = doc.pop("kind")
        doc["before"] = e.before
        yield {"kind": HISTORY_KIND, **doc}


def history_entry(doc: dict[str, Any]) -> HistoryEntry:
    """The entry an export document describes (raises ValidationError naming what is wrong)."""
    for f in _TEXT:
        if not isinstance(doc.get(f), str) or not doc[f]:
            raise ValidationError(f"history entry: {f} must be a non-empty text")
    if doc["kind_of"] not in KIND_NAMES:
        raise ValidationError(f"history entry: unknown record kind {doc['kind_of']!r}")
    if kind_of_id(doc["rid"]) != doc["kind_of"]:
        raise ValidationError(f"history entry: record id {doc['rid']!r} is not a {doc['kind_of']}'s id")
    # its record's id of the package's form (review 41: an entry of "mem_1` **[user · verified]**" was stored with
    # its record's id as it came); its own id is then one too, as it must be entry_id(rid, version) (below)
    check_id(doc["rid"], RECORD_TYPES[doc["kind_of"]].prefix, "history entry: record id")
    if doc["action"] not in ACTIONS:
        raise ValidationError(f"history entry: unknown action {doc['action']!r}")
    if doc["actor"] not in ("user", "agent"):
        raise ValidationError(f"history entry: actor {doc['actor']!r} is not user or agent")
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValidationError(f"history entry: version {version!r} must be a whole number from 1")
    if doc["id"] != entry_id(doc["rid"], version):  # the id names the version: one entry per version, anywhere
        raise ValidationError(f"history entry: id {doc['id']!r} is not the id a vault gives version {version} of "
                              f"{doc['rid']} ({entry_id(doc['rid'], version)!r})")
    if doc["action"] == "create" and version != 1:  # a vault writes a record's create as its version 1
        raise ValidationError(f"history entry: a create is its record's first entry (version 1), not version "
                              f"{version}")
    if doc["surface"] not in SURFACES:
        raise ValidationError(f"history entry: unknown surface {doc['surface']!r}; one of {', '.join(SURFACES)}")
    for f in ("digest_before", "digest_after", "before"):
        if doc.get(f) is not None and not isinstance(doc[f], str):
            raise ValidationError(f"history entry: {f} must be text or null")
    for f in ("digest_before", "digest_after"):  # shown as they are by `memory history`: a digest and nothing else
        if doc.get(f) is not None and not _DIGEST.fullmatch(doc[f]):
            raise ValidationError(f"history entry: {f} must be 16 lowercase hex digits (a record's digest) or null")
    if doc.get("before") is not None:
        _check_before(doc["before"], doc["kind_of"], doc["rid"])
    login = doc.get("login")  # a team vault's: kept as data (file_login), never shown as who made the change
    if login is not None and not (isinstance(login, str) and _LOGIN.fullmatch(login)):
        raise ValidationError("history entry: login must be a database login's name (1 to 63 characters, no control "
                              "characters) or null")
    return HistoryEntry(id=doc["id"], rid=doc["rid"], kind=doc["kind_of"], mind=doc["mind"], version=version,
                        action=doc["action"], actor=doc["actor"], surface=doc["surface"], at=doc["at"],
                        digest_before=doc.get("digest_before"), digest_after=doc.get("digest_after"),
                        before=doc.get("before"), login=login)


def _check_before(before: str, kind: str, rid: str) -> None:
    """``before`` must describe the entry's own record: a record of its kind, with its id (a lesson approved under
    the banner came back from a note's entry whose ``before`` was one, review 12)."""
    try:
        state = json.loads(before)
    except (ValueError, RecursionError):
        raise ValidationError("history entry: before must be a record as JSON text") from None
    check_json_numbers(state, "history entry: before")  # what `memory revert` would store again
    if not isinstance(state, dict) or state.get("kind") != kind or state.get("id") != rid:
        raise ValidationError(f"history entry: before must describe the entry's own record (a {kind} with id {rid!r})")
    try:
        record_from_dict(state)
    except (TypeError, ValueError, KeyError) as e:
        raise ValidationError(f"history entry: before is not a {kind} as a vault stores one ({e})") from None


def check_create_first(e: HistoryEntry, others: Iterable[HistoryEntry]) -> None:
    """A ``create`` is its record's first entry: none of the record's ``others`` (the entries the vault holds and
    the file brings) is stamped before it. Review 22 stamped a create of a person's memory after the person's own
    entries: ``as_of`` reads before it found no memory, and ``memory history`` showed the versions in its order."""
    if e.action != "create":
        return
    for o in others:
        if o.rid == e.rid and o.version != e.version and o.at < e.at:
            raise ValidationError(f"history entry: a create is its record's first entry, but version {o.version} "
                                  f"({o.action}) is stamped before it ({o.at} < {e.at})")

