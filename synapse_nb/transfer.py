"""Export and import of a whole vault as JSON Lines: sorted, stable, diffable, reviewable in git.

Format: a header line ``{"format": "synapse_nb-export", "schema": N}``, then one object per record with
``"kind"`` first-class, rows ordered by kind then id, keys sorted. The fields of each kind are
:data:`synapse_nb.store.base.EXPORT_FIELDS`; JSON fields (tags, files, commits) are real JSON values. Settings
travel as ``{"kind": "setting", "name": ..., "value": ...}``; the duplicate check's links as ``{"kind": "link", ...}``
lines after the records, by id (:mod:`synapse_nb.transfer_links`: what recall leaves out, and a person's decisions);
with the history, the header says how far the check had read it (``checked_at``, moved to in the copy: review 84).

An export escapes, inside its JSON strings, every character some reader treats as a line break or hides
(U+2028, U+2029, U+0085 and the other C1 controls, DEL, zero-width and bidi controls: categories Cc, Cf, Zl, Zp),
so a line is a line for every tool, a diff shows them, and the import reads records split on ``\n`` only: any
stored text re-imports byte for byte.

An import is checked whole before anything is written: the format (header, fields, value types, timestamps:
1970-01-01 to 2100-01-01, and written no later than the vault's clock plus a day; a history entry no later than
the clock plus :data:`HISTORY_SLACK`) here, and each record by its kind's own definition of a valid record
(``Memories.check_record``, ...), the same rules the write path follows. Then it is written in one transaction, all
or nothing.

An import is explicit about trust. What only a human can make is a *trust claim*: a record with
``source="user"``, a verified memory, a record no agent's write could have written (each kind's
``past_agent_limits``: an agent's memory surer than 0.7, an agent's checkpoint naming a person's origin, an agent's
episode in someone else's name; review 38), a lesson decided (status approved or expired, ``approved_at``,
``expires_at``), worded (``lesson_text``: the wording a human approves) or analysed by the user
(``analysis_by="user"``), a setting, and a history entry by the user or whose earlier record makes one of these
claims (``history actor=user``, ``history before source=user``, ...), and a history entry of any record but one
the same file brings in as new (:data:`STORED_HISTORY`, :data:`UNBROUGHT_HISTORY`: it would rewrite what
``memory history``, ``memory revert`` and ``as_of`` reads show of a record the vault holds, or of one it takes in
later; review 22), and an agent's record an agent's own write would have been refused for past the agents' caps
(:mod:`synapse_nb.transfer_caps`; review 69), and a link that is a person's decision or that hides, lists or decides
a record the vault holds (:mod:`synapse_nb.transfer_links`; review 74). Unless the human passes ``trust=True`` (CLI
``--trust``) an import that would write one is refused whole, the claims listed per kind; with it, they are accepted
and listed (:attr:`ImportCounts.claims`). Records and links skipped as identical, settings that already hold the
imported value and history entries whose version the vault holds already claim nothing.

An export of a *borrowed* vault (:mod:`synapse_nb.borrowed`: it came with the repository, or a symlink leads to it)
says so in its header: ``"borrowed": true`` and ``"approved_elsewhere"``, the ids of the lessons whose decision or
wording no person in that checkout approved (approved, expired or worded by whoever committed the vault; a lesson
re-approved there, or every lesson of an adopted vault, is not listed). Importing such a lesson is a further claim,
:data:`BORROWED_CLAIM`, that ``trust=True`` alone does not accept: it takes ``trust_borrowed=True`` as well (CLI
``--trust-borrowed-approvals``), else the whole import is refused (review 63: ``team join`` of a cloned vault put its
committer's approved lessons in force for the whole team).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from synapse_nb import history
from synapse_nb._util import (
    MAX_TEXT,
    TS_MAX,
    TS_MIN,
    check_id,
    check_json_numbers,
    check_text,
    fmt_ts,
    parse_ts,
    ts_text,
)
from synapse_nb.context import check_mind
from synapse_nb.embedder_trust import record_code, unrecorded
from synapse_nb.errors import ConflictError, PermissionDeniedError, ValidationError
from synapse_nb.kinds.lesson_scan import NOT_GITS, gits_commits, revert_claims
from synapse_nb.kinds.registry import MANAGERS
from synapse_nb.models import KIND_NAMES, RECORD_TYPES, Record
from synapse_nb.provenance import inline
from synapse_nb.settings import EMBEDDER, SETTINGS, check_setting
from synapse_nb.store.records import EXPORT_FIELDS, JSON_FIELDS, OPTIONAL_FIELDS, NotJson
from synapse_nb.transfer_caps import AgentCaps
from synapse_nb.transfer_claims import trust_claims
from synapse_nb.transfer_entries import import_history, owed_import_entries
from synapse_nb.transfer_history import HISTORY_KIND, STORED_HISTORY, UNBROUGHT_HISTORY, history_docs, history_entry
from synapse_nb.transfer_links import LINK_KIND, BroughtCheck, FileLinks, checked_header, link_docs
from synapse_nb.transfer_links import explain as explain_links

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.store.base import VaultStore

__all__ = ["BORROWED_CLAIM", "EXPORT_FORMAT", "KINDS", "STORED_HISTORY", "UNBROUGHT_HISTORY", "ImportCounts",
           "approved_elsewhere", "dump_line", "export_lines", "import_lines", "source_lines", "trust_claims"]

EXPORT_FORMAT = "synapse_nb-export"
#: The version of what an export holds (v3: episodes' thread, seq, actor; v4: the duplicate check's links,
#: :mod:`synapse_nb.transfer_links`, review 74). A newer store schema that changes no exported row (SQLite v4 only
#: queues its FTS5 writes) keeps it; a file of an older version (no link lines) imports as before.
EXPORT_SCHEMA = 4
#: Each kind's own check of a stored record: one definition of what a valid memory, lesson, ... is.
RECORD_CHECKS: dict[str, Callable[[Any], None]] = {kind: m.check_record for kind, m in MANAGERS.items()}
#: The kinds an export holds, in export order.
KINDS: tuple[str, ...] = tuple(sorted(KIND_NAMES))
#: How far past the vault's clock an imported record may have been written or approved (clocks differ a little).
CLOCK_SLACK = timedelta(days=1)
#: How far past the vault's clock an imported history entry may be stamped: clocks that differ a little, and no more.
#: An entry stamped after the import sorts after the changes made since (a person verifying the record), and
#: ``memory history``, ``memory revert`` and ``as_of`` reads take its ``before`` for what they left (review 22: an
#: entry stamped 20 hours ahead hid a person's memory from every ``as_of`` read).
HISTORY_SLACK = timedelta(minutes=5)
#: Timestamps that may lie in the future (up to 2100): when something stops being in force.
FUTURE_FIELDS = frozenset({"expires_at"})
#: The trust claim of a lesson an export of a borrowed vault lists as decided or worded by no person there: accepted
#: only with ``trust_borrowed=True`` (``--trust-borrowed-approvals``), never by ``trust=True`` alone.
BORROWED_CLAIM = "lesson approved in a borrowed vault, not by a person there"
_NON_ASCII = re.compile(r"[^\x00-\x7f]|\x7f")
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


class ImportCounts(dict[str, int]):
    """What an import wrote: records per kind, ``setting`` and ``skipped`` (identical records), as a dict;
    :attr:`claims` holds the trust claims it accepted (only with ``trust=True``), as ``"kind claim" -> count``.

    >>> c = ImportCounts({"memory": 2, "skipped": 0}, claims={"memory source=user": 2})
    >>> c["memory"], c.claims, c.claims_text()
    (2, {'memory source=user': 2}, 'memory source=user 2')
    """

    def __init__(self, counts: dict[str, int], claims: dict[str, int] | None = None,
                 claimed: list[dict[str, Any]] | None = None) -> None:
        super().__init__(counts)
        self.claims: dict[str, int] = dict(sorted((claims or {}).items()))
        #: each record (setting, history entry) that made an accepted claim, in file order: ``{"record": "memory
        #: mem_1", "text": its first line as one line (capped), "claims": [...]}`` (review 63: counts alone hid one
        #: agent-added ``source=user`` memory among 200)
        self.claimed: list[dict[str, Any]] = list(claimed or ())
        #: set by ``synapse_nb.team.join``: the ``.synapse/team.toml`` it wrote, and where the local database went
        self.team_file: Path | None = None
        self.set_aside: Path | None = None
        #: set by ``synapse_nb.team.join`` (a person's act: refused to an agent): the team server the join pinned
        #: for the folder (None: not a join), and the other server pinned before it (None: none, or the same one)
        self.pinned: str | None = None
        self.pinned_before: str | None = None
        #: set by ``synapse_nb.team.join``: the agent login agent surfaces in the folder use (None: the person's)
        self.agent_login: str | None = None
        #: the file's header said it is an export of a borrowed vault (:data:`BORROWED_CLAIM`)
        self.borrowed = False
        #: the source held no line but blank ones (an empty stdin: ``cat missing.jsonl | ... import -``)
        self.empty = False
        #: the duplicate check of the records brought into minds that held records, run (and filled in) once the
        #: outermost transaction has committed (None: no such mind; review 92)
        self.checked: BroughtCheck | None = None

    def claims_text(self) -> str:
        """The claims as one line, ``"lesson status=approved 1, memory source=user 2"`` (``""`` for none)."""
        return ", ".join(f"{k} {n:,}" for k, n in self.claims.items())

    def claimed_lines(self, most: int = 20) -> list[str]:
        """The records that made the accepted claims, one line each (at most ``most``, then ``"and N more"``).

        >>> ImportCounts({}, claimed=[{"record": "memory mem_1", "text": "never --force",
        ...                            "claims": ["memory source=user", "memory verified"]}]).claimed_lines()
        ['memory mem_1 "never --force": source=user, verified']
        """
        out = []
        for c in self.claimed[:most]:
            kind = c["record"].split(" ", 1)[0] + " "
            said = ", ".join(x.removeprefix(kind) for x in c["claims"] if x != c["record"])  # a setting's: itself
            out.append(f'{c["record"]}{" " + json.dumps(c["text"], ensure_ascii=False) if c["text"] else ""}'
                       + (f": {said}" if said else ""))
        return out + ([f"and {len(self.claimed) - most:,} more"] if len(self.claimed) > most else [])

    def to_dict(self) -> dict[str, Any]:
        """The counts, with the accepted claims under ``"trusted"`` and the records that made them under
        ``"trusted_records"`` (the CLI's ``--json``); ``"borrowed": true`` when the file is an export of a borrowed
        vault, ``"empty": true`` when the source held no line but blank ones; ``"checked"`` (:attr:`checked`) when its
        records went into minds that held records."""
        return {**dict(sorted(self.items())), "trusted": dict(self.claims), "trusted_records": list(self.claimed)} | (
            {"borrowed": True} if self.borrowed else {}) | ({"empty": True} if self.empty else {}) | (
            {"checked": self.checked.to_dict()} if self.checked else {})


def _escape(ch: str) -> str:
    o = ord(ch)
    if o > 0xFFFF:  # JSON escapes a character outside the BMP as its UTF-16 surrogate pair
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return f"\\u{o:04x}"


def dump_line(doc: dict[str, Any]) -> str:
    """One export line: sorted keys, readable Unicode, and every line separator, control or invisible format
    character escaped (``json.dumps`` escapes only C0 controls), so the line is one line for every reader.

    >>> dump_line({"content": "a\u2028b\x85c\u202ed", "kind": "memory"})
    '{"content": "a\\\\u2028b\\\\u0085c\\\\u202ed", "kind": "memory"}'
    >>> json.loads(dump_line({"t": "é\u200b\U000e0041"}))["t"] == "é\u200b\U000e0041"
    True
    """
    line = json.dumps(doc, sort_keys=True, ensure_ascii=False)
    if line.isascii() and "\x7f" not in line:
        return line
    return _NON_ASCII.sub(lambda m: _escape(m[0]) if unicodedata.category(m[0]) in _ESCAPED_CATEGORIES
                          else m[0], line)


#: The lesson claims of a decision or its wording (:func:`trust_claims`): what :func:`approved_elsewhere` lists a
#: borrowed vault's lesson for (never who made it, nor what an agent's lesson holds past its limits: a pending one).
DECIDED = ("lesson status=", "lesson approved_at", "lesson expires_at", "lesson lesson_text", "lesson analysis_by=user")


def approved_elsewhere(store: VaultStore, approved_here: Callable[[Record], bool]) -> list[str]:
    """The ids of a borrowed vault's lessons whose decision or wording no person here approved: a claim of
    :data:`DECIDED` on a lesson ``approved_here`` does not accept (second reader of this pass: any claim but the
    creator's listed a pending agent lesson whose revert was in its own words, and ``team join`` asked the person to
    approve it)."""
    out = []
    for doc in store.transfer.rows("lesson"):
        if any(c.startswith(DECIDED) for c in trust_claims({"kind": "lesson", **doc})) and \
                not approved_here(store.transfer.to_record("lesson", doc)):
            out.append(doc["id"])
    return sorted(out)


def export_lines(store: VaultStore, *, history: bool = False, elsewhere: list[str] | None = None) -> Iterator[str]:
    """Yield the export, one JSON document per line (``history``: every history entry too, after the records).
    ``elsewhere`` (a borrowed vault: :func:`approved_elsewhere`) puts ``"borrowed": true`` and its ids in the
    header."""
    header: dict[str, Any] = {"format": EXPORT_FORMAT, "schema": min(store.schema_version, EXPORT_SCHEMA)}
    if elsewhere is not None:
        header |= {"borrowed": True, "approved_elsewhere": elsewhere}
    if history:  # how far the duplicate check had read that history (review 84)
        header |= checked_header(store)
    yield json.dumps(header, sort_keys=True)
    for name, value in store.meta.settings().items():
        if isinstance(value, NotJson):  # stored text that is not JSON (a hand edit) reads as the default: not exported
            continue
        yield dump_line({"kind": "setting", "name": name, "value": value})
    for kind in KINDS:
        optional = OPTIONAL_FIELDS.get(kind, ())
        for doc in store.transfer.rows(kind):
            if optional:  # written only when set: a vault that does not use them exports as before
                doc = {k: v for k, v in doc.items() if v is not None or k not in optional}
            yield dump_line({"kind": kind, **doc})
    for link in link_docs(store):  # what recall leaves out, and the person's decisions (review 74)
        yield dump_line(link)
    if history:
        for entry in history_docs(store):
            yield dump_line(entry)


def _fail(lineno: int, msg: str) -> ValidationError:
    return ValidationError(f"import line {lineno}: {msg}; nothing was imported")


def source_lines(source: Any) -> Iterable[str]:
    """The lines of an import source: a path, a text file, or lines as they are. A file is split on ``\\n``
    only: U+2028, ``\\x85`` and the other separators ``str.splitlines()`` breaks on are text inside a record."""
    if isinstance(source, str | Path):
        p = Path(source)
        if not p.is_file():
            raise ValidationError(f"import file {str(p)!r} does not exist")
        try:
            return p.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"import file {str(p)!r} is not UTF-8 text: {exc}") from None
    if hasattr(source, "read"):
        return str(source.read()).split("\n")
    return cast(Iterable[str], source)


def _horizon(ctx: Context, slack: timedelta) -> str:
    """The vault's clock plus ``slack``, as stored text (never past 2100)."""
    try:
        return fmt_ts(min(ctx.now() + slack, parse_ts(TS_MAX)))
    except OverflowError:  # a clock near year 9999
        return TS_MAX


def _borrowed_header(lineno: int, doc: dict[str, Any]) -> tuple[bool, frozenset[str]]:
    """Whether a header says the file is an export of a borrowed vault, and the lessons it lists as approved
    elsewhere (:data:`BORROWED_CLAIM`)."""
    borrowed, ids = doc.get("borrowed", False), doc.get("approved_elsewhere", [])
    if not isinstance(borrowed, bool) or not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
        raise _fail(lineno, "the header's borrowed must be true or false and its approved_elsewhere a list of lesson "
                            "ids")
    if ids and not borrowed:
        raise _fail(lineno, "the header lists lessons approved elsewhere but does not say borrowed: true")
    return borrowed, frozenset(ids)


def import_lines(ctx: Context, lines: Iterable[str], *, trust: bool = False,
                 trust_borrowed: bool = False) -> ImportCounts:
    """Import an export through ``ctx``'s store in one transaction; see :meth:`Vault.import_jsonl`."""
    store = ctx.store
    horizon, history_horizon = _horizon(ctx, CLOCK_SLACK), _horizon(ctx, HISTORY_SLACK)
    schema = min(store.schema_version, EXPORT_SCHEMA)
    parsed: list[tuple[int, dict[str, Any]]] = []
    hist: list[tuple[int, dict[str, Any]]] = []  # written after the records: where an entry goes depends on them
    links = FileLinks()  # written after the records too, before the history
    seen_ids: dict[str, int] = {}
    header_seen = borrowed = read = False
    elsewhere: frozenset[str] = frozenset()
    for lineno, line in enumerate(lines, 1):
        if not isinstance(line, str):
            raise _fail(lineno, f"expected a text line, got {type(line).__name__}")
        if not line.strip():
            continue
        read = True
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _fail(lineno, f"not valid JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:  # a whole number of over 4,300 digits; nesting past the stack
            raise _fail(lineno, f"not JSON a vault stores ({type(exc).__name__}: {str(exc)[:100]})") from None
        if not isinstance(doc, dict):
            raise _fail(lineno, "expected a JSON object")
        try:  # numbers a vault stores (review 38: duration_s 10**30 failed the import with an OverflowError)
            check_json_numbers(doc, "the line")
        except ValidationError as exc:
            raise _fail(lineno, str(exc).removeprefix("the line.")) from None
        if "format" in doc:
            if doc.get("format") != EXPORT_FORMAT:
                raise _fail(lineno, f"unknown format {doc.get('format')!r}; expected {EXPORT_FORMAT!r}")
            if not isinstance(doc.get("schema"), int) or doc["schema"] > schema:
                raise _fail(lineno, f"export schema {doc.get('schema')!r} is newer than this synapse_nb "
                                    f"({schema}); upgrade to import it")
            borrowed, elsewhere = _borrowed_header(lineno, doc)
            try:
                links.read_header(doc, functools.partial(_ts, doc, horizon=None))  # the mark stops at what came
            except ValidationError as exc:
                raise _fail(lineno, f"header: {exc}") from None
            header_seen = True
            continue
        kind = doc.get("kind")
        if kind == HISTORY_KIND:
            try:
                history_entry(doc)
            except ValidationError as exc:
                raise _fail(lineno, str(exc)) from None
            # its time is checked like a record's (review 9: an agent's entry dated 9999, imported without --trust,
            # counted against the agents' hourly quota for ever and blocked every agent write)
            try:
                _ts(doc, "at", required=True, horizon=horizon)
            except ValidationError as exc:
                raise _fail(lineno, f"history entry: {exc}") from None
            if doc["at"] > history_horizon:  # review 22: stamped 20 hours ahead, it hid a person's memory
                raise _fail(lineno, f"history entry: at {doc['at']} is after the vault's clock plus "
                                    f"{HISTORY_SLACK.seconds // 60} minutes ({history_horizon}): an entry cannot "
                                    "come after the import that brings it")
            hist.append((lineno, doc))
            continue
        if kind == LINK_KIND:
            try:
                links.add(lineno, doc, functools.partial(_ts, doc, horizon=horizon))
            except ValidationError as exc:
                raise _fail(lineno, f"link: {exc}") from None
            continue
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
        try:  # before the id is named in any message (review 41: it was stored, and printed, as it came)
            check_id(rid, RECORD_TYPES[kind].prefix, f"{kind} id")
        except ValidationError as exc:
            raise _fail(lineno, str(exc)) from None
        if rid in seen_ids:
            raise _fail(lineno, f"duplicate id {rid} (first on line {seen_ids[rid]})")
        seen_ids[rid] = lineno
        try:
            _check_document(store, kind, doc, horizon)
        except ValidationError as exc:
            raise _fail(lineno, f"{kind} {rid}: {exc}") from None
        parsed.append((lineno, doc))
    if (parsed or hist or links.lines) and not header_seen:
        raise ValidationError("import: the header line {\"format\": \"synapse_nb-export\", ...} is missing; "
                              "nothing was imported")
    not_gits = _not_gits(ctx, parsed)

    counts: dict[str, int] = dict.fromkeys(KINDS, 0) | {"skipped": 0, "setting": 0}
    claims: Counter[str] = Counter()
    claimed: list[dict[str, Any]] = []  # the records that made them, one entry each
    latest = ""
    imported: list[tuple[None, Record]] = []
    with store.transaction():
        links.before(store, {d["mind"] for _, d in parsed if d["kind"] != "setting"})  # before the file's writes
        settings = store.meta.settings() if any(d["kind"] == "setting" for _, d in parsed) else {}
        caps = AgentCaps(ctx, [d for _, d in parsed])  # what agents hold, before the file's records (review 69)
        for lineno, doc in parsed:
            kind = doc["kind"]
            if kind == "setting":
                if settings.get(doc["name"], _UNSET) != doc["value"] or _unrecorded_code(store, doc):
                    # the value it holds already claims nothing, unless it is code no person here set (review 69)
                    value = doc["value"]
                    _claim(claims, claimed, f"setting {doc['name']}",
                           value if isinstance(value, str) else json.dumps(value), trust_claims(doc))
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
            rec = store.transfer.to_record(kind, doc)
            _claim(claims, claimed, f"{kind} {rec.id}", rec.text,
                   trust_claims(doc) + ([NOT_GITS] if kind == "lesson" and doc["id"] in not_gits else [])
                   + ([BORROWED_CLAIM] if kind == "lesson" and doc["id"] in elsewhere else [])
                   + caps.add(kind, doc))
            counts[kind] += 1
            latest = max(latest, doc["updated_at"], doc["created_at"])
            imported.append((None, rec))
        brought = {rec.id: rec for _, rec in imported}  # the records this file brings in as new
        latest = max(latest, links.write(store, brought, counts, _fail, lambda *c: _claim(claims, claimed, *c)))
        wrote: set[str] = set()  # the records the file's history lines were written for
        if hist:
            when, wrote = import_history(store, hist, set(brought), counts, lambda *c: _claim(claims, claimed, *c),
                                         _fail)
            latest = max(latest, when)
            links.keep_checked(store, latest)
        if claims and not trust:  # raised inside the transaction: everything above rolls back
            listed = ", ".join(f"{k} {n:,}" for k, n in sorted(claims.items()))
            where = ""
            if claims[STORED_HISTORY] or claims[UNBROUGHT_HISTORY]:
                where = (" Without --trust a file's history may describe only the records it brings in as new (not "
                         "in this vault, with no history here yet): history of another record rewrites what "
                         "`memory history`, `memory revert` and as_of reads show of it.")
            where += caps.explain() + explain_links(claims)
            raise PermissionDeniedError(
                f"import: the file claims what only a human makes ({listed}); nothing was imported.{where} If you "
                "made these records and settings (your own export, a colleague's you have read), re-run with "
                "--trust (API: trust=True) to accept them as they are")
        if claims[BORROWED_CLAIM] and not trust_borrowed:
            raise PermissionDeniedError(
                f"import: the file is an export of a borrowed vault (one that came with a repository), and "
                f"{claims[BORROWED_CLAIM]:,} of its lessons were approved or worded by whoever committed that vault, "
                "not by a person in that checkout; --trust alone does not make them approved here, and nothing was "
                "imported. Approve them there (synapse-nb lessons review) or adopt that vault (synapse-nb lessons "
                "adopt) and export again, or, if you have read each of them and stand behind those approvals, "
                "re-run with --trust --trust-borrowed-approvals (API: trust_borrowed=True)")
        specs = [check_setting(EMBEDDER, d["value"]) for _, d in parsed if d["kind"] == "setting"
                 and d["name"] == EMBEDDER]  # the last one is stored
        if trust and specs:  # the person set it (a failure raises here: nothing is imported)
            record_code(ctx, specs[-1])
        if latest:  # later writes must stamp after everything imported
            store.transfer.advance_clock(latest)
        check = links.check_brought(store, [rec for _, rec in imported], store.stamp(ctx.now_ts()))  # at commit
        # each record imported gets its history entry, after any history the file brought, unless that history
        # ends in the record as the file brings it in a copy (review 91: `memory history` and revert of a copy;
        # review 92: elsewhere the file's history read as the vault's own)
        owed = owed_import_entries(store, imported, wrote, copy=trust and not links.held)
        if owed:
            history.record_many(ctx, "import", owed, at=store.stamp(ctx.now_ts()))
    out = ImportCounts(counts, dict(claims), claimed)
    out.borrowed, out.empty, out.checked = borrowed, not read, check
    return out


_UNSET = object()


def _unrecorded_code(store: VaultStore, doc: dict[str, Any]) -> bool:
    """Whether a setting line names a code-loading ``recall_embedder`` no person set for this vault here
    (:func:`synapse_nb.embedder_trust.unrecorded`): a claim even when the vault already stores it (a downloaded
    vault's own export, imported back, approved its code without ``--trust``: second reader of review 69's fix)."""
    return doc["name"] == EMBEDDER and unrecorded(store, doc["value"])


#: The characters of a claiming record's first line an import lists.
CLAIMED_TEXT = 80


def _claim(claims: Counter[str], claimed: list[dict[str, Any]], record: str, text: str, made: list[str]) -> None:
    """Count the claims ``made`` by one record and, if any, list it: its first line as one line, capped."""
    if made:
        claims.update(made)
        first = next((x for x in str(text).strip().splitlines() if x.strip()), "")
        claimed.append({"record": record, "text": inline(first, CLAIMED_TEXT), "claims": made})


def _not_gits(ctx: Context, parsed: list[tuple[int, dict[str, Any]]]) -> set[str]:
    """The agents' lessons in a scan's words (:func:`~synapse_nb.kinds.lesson_scan.scan_worded`) whose commits are
    not git's in this vault's repository (:data:`NOT_GITS`): a scan here writes git's subjects (review 63). One git
    process, only when the file holds such lessons and the vault is in a git repository."""
    docs = [d for _, d in parsed if d["kind"] == "lesson" and d["source"] != "user" and d.get("revert_commit")
            and not revert_claims(d)]
    repo = ctx.git.repo if docs else None
    return {d["id"] for d, ok in zip(docs, gits_commits(repo, docs), strict=True) if not ok} if repo else set()


def _check_document(store: VaultStore, kind: str, doc: dict[str, Any], horizon: str) -> None:
    """Check an exported record the way the write path checks one (normalising its timestamps in place).

    ``horizon``: the latest time a record can have been written or approved (the vault's clock plus a day).

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
        elif (v is not None and not isinstance(v, int | float)) or isinstance(v, bool):
            raise ValidationError(f"{kind}.{f} has an unsupported value {v!r}")
    check_id(doc["id"], RECORD_TYPES[kind].prefix, f"{kind} id")
    try:
        check_mind(doc["mind"])
    except ValidationError:
        raise ValidationError(f"mind {doc['mind']!r} is not a valid mind name") from None
    for f in fields:
        if f.endswith("_at"):
            _ts(doc, f, required=f in ("created_at", "updated_at"),
                horizon=None if f in FUTURE_FIELDS else horizon)
    if doc["source"] not in ("user", "agent"):
        raise ValidationError(f"source {doc['source']!r} is not user or agent")
    record: Record = store.transfer.to_record(kind, doc)
    RECORD_CHECKS[kind](record)


def _ts(doc: dict[str, Any], field: str, *, required: bool, horizon: str | None) -> None:
    """Check an ISO 8601 timestamp and store it in the vault's fixed-width UTC form (which sorts as text).

    It must lie in the sane window (1970-01-01 to 2100-01-01, :data:`synapse_nb._util.TS_MIN`/``TS_MAX``) and,
    unless ``horizon`` is None, not after it.
    """
    v = doc.get(field)
    if v is None and not required:
        return
    if not isinstance(v, str):
        raise ValidationError(f"{field} {v!r} is not an ISO 8601 timestamp")
    if not ts_text(v):  # the whole text in the vault's form (a trailing "\n" is normalised away)
        try:
            doc[field] = v = fmt_ts(parse_ts(v, field))
        except (ValueError, OverflowError):
            raise ValidationError(f"{field} {v!r} is not an ISO 8601 timestamp") from None
    if not TS_MIN <= v < TS_MAX:
        raise ValidationError(f"{field} {v} is outside the accepted window, 1970-01-01 to 2100-01-01")
    if horizon is not None and v > horizon:
        raise ValidationError(f"{field} {v} is after the vault's clock plus one day ({horizon}): a record cannot "
                              "have been written in the future")
