"""The duplicate check's links in an export (review 74): one ``{"kind": "link", ...}`` line per pair, after the
records and before any history, by id; an import stores them with the records, in the same transaction.

A link is part of what a vault answers: an open duplicate link leaves its hidden side out of recall
(:mod:`synapse_nb.dupes`), ``memory conflicts`` lists the pairs, and a person's decision of one (``memory resolve``:
kept, merged, superseded) is its status. An export without them, imported (``memory import``, ``team join``), gave a
vault that recalled the hidden duplicate again and had forgotten the person's decisions, while its export was
byte-identical to the original's.

A line holds every column of the ``links`` table as the vault reads it (:class:`synapse_nb.changes.Link`): ``id``,
``mind``, ``a`` and ``a_kind`` (the record the check read), ``b`` and ``b_kind`` (the one it found it like),
``relation``, ``score``, ``hidden`` (the side an open duplicate leaves out of recall, or null), ``status``,
``reason``, ``created_at`` and ``decided_at`` (null while open). An import checks each as the check writes one: ids
of their kinds, two different records, a relation, status and reason the check gives, a score from 0 to 1, a hidden
side that is one of a duplicate's two, ``decided_at`` set exactly when the link is decided; times as a record's.

Where a link may go. An **open** link needs both its records in the vault after the import, in its mind; else the
import is refused whole (such a line is a file edited or put together elsewhere: an open pair decides what recall
leaves out and what the person's queue lists, and the vault would not be the one the file describes). A **decided**
link may name a record the vault does not hold: a merge or a supersede deletes one side, and the decision stays on
record (``memory conflicts --status all``). A link whose id the vault holds with the same fields is skipped (a
re-import), and so is one whose two records the vault links already, under another id, with the same relation,
hidden side and status (two vaults' checks of one pair: link ids are random); one holding anything else refuses the
import (:class:`~synapse_nb.errors.ConflictError`), as a record does.

Trust (:mod:`synapse_nb.transfer`: an import without ``trust=True`` refuses what only a human makes). What a link
claims:

- a decided link is a person's decision (``link status=kept``, ``merged``, ``superseded``);
- a link naming a record the vault holds (identical records the file brings are held, not brought in as new) is
  :data:`STORED_LINK`: it would hide that record from recall, or put it in the person's queue, or say its conflict
  is decided (an agent's file hid a person's verified memory this way);
- an open duplicate between two records the file brings in as new whose hidden side is not the one the duplicate
  check would hide (:func:`synapse_nb.dupes.hidden_side`: a person's record stands over an agent's, else the newer,
  ``a``, is hidden) is :data:`HIDING_LINK`.

An open link between two records the file brings in as new, hiding nothing or the side the check would hide,
claims nothing: without ``--trust`` those records are an agent's, and the check pairs an agent's writes alike.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from synapse_nb._util import check_id, shown_id
from synapse_nb.changes import LINK_STATUSES, RELATIONS, UNKNOWN_REASON, Link, reason_ok
from synapse_nb.context import check_mind
from synapse_nb.dupes import CHECKED_ACTIONS, CHECKED_KINDS, hidden_side
from synapse_nb.dupes_owed import Owed, owe, run, run_owed
from synapse_nb.errors import ConflictError, PermissionDeniedError, StoreError, ValidationError
from synapse_nb.models import KIND_NAMES, RECORD_TYPES, Record
from synapse_nb.provenance import inline

if TYPE_CHECKING:
    from synapse_nb.store.base import VaultStore

__all__ = ["CHECKED_FIELD", "HIDING_LINK", "LINK_FIELDS", "LINK_KIND", "STORED_LINK", "BroughtCheck", "FileLinks",
           "checked_header", "explain", "link_docs"]

#: The ``kind`` of a link line in an export.
LINK_KIND = "link"
#: A link line's fields (besides ``kind``): every column of the ``links`` table.
LINK_FIELDS: tuple[str, ...] = ("id", "mind", "a", "a_kind", "b", "b_kind", "relation", "score", "hidden", "status",
                                "reason", "created_at", "decided_at")
#: The trust claim of a link naming a record the vault holds (not one the file brings in as new).
STORED_LINK = "link of a record already in this vault"
#: The trust claim of an open duplicate whose hidden side is not the one the duplicate check would hide.
HIDING_LINK = "link hiding a side the duplicate check would not"
#: The header field of an export that holds its history: the stamp up to which the vault's duplicate check had read
#: that history (``store.links.checked_at()``), so the copy re-checks no more of it than the vault would (review 84).
CHECKED_FIELD = "checked_at"


def link_docs(store: VaultStore) -> Iterator[dict[str, Any]]:
    """Every link of the vault (all minds) as an export document, by id."""
    for link in store.links.all():
        yield {"kind": LINK_KIND, **link.to_dict()}


def checked_header(store: VaultStore) -> dict[str, str]:
    """The header's :data:`CHECKED_FIELD` of an export with history ({} before the vault's first check)."""
    mark = store.links.checked_at()
    return {CHECKED_FIELD: mark} if mark else {}


def _q(value: Any) -> str:
    """A value a file gave, as an error names it: one line, at most 80 characters (:func:`inline`), quoted."""
    return repr(inline(value, 80)) if isinstance(value, str) else inline(repr(value), 80)


def _check(doc: dict[str, Any]) -> None:
    """Check an export document's link format (its times are checked by the caller)."""
    keys = sorted(k for k in doc if k != "kind")
    if keys != sorted(LINK_FIELDS):
        missing = sorted(set(LINK_FIELDS) - set(keys))
        extra = sorted(set(keys) - set(LINK_FIELDS))
        raise ValidationError(f"fields do not match (missing: {missing or 'none'}, unknown: {extra or 'none'})")
    check_id(doc["id"], "lnk", "link id")
    try:
        check_mind(doc["mind"])
    except ValidationError:
        raise ValidationError(f"mind {_q(doc['mind'])} is not a valid mind name") from None
    for side in ("a", "b"):
        kind = doc[f"{side}_kind"]
        if not isinstance(kind, str) or kind not in KIND_NAMES:
            raise ValidationError(f"{side}_kind {_q(kind)} is not a record kind; one of "
                                  f"{', '.join(sorted(KIND_NAMES))}")
        check_id(doc[side], RECORD_TYPES[kind].prefix, f"{side} (a {kind}'s id)")
    if doc["a"] == doc["b"]:
        raise ValidationError(f"a and b are the same record ({doc['a']}): a link pairs two records")
    if doc["relation"] not in RELATIONS:
        raise ValidationError(f"relation {_q(doc['relation'])} is not one of {', '.join(RELATIONS)}")
    if doc["status"] not in LINK_STATUSES:
        raise ValidationError(f"status {_q(doc['status'])} is not one of {', '.join(LINK_STATUSES)}")
    score = doc["score"]
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ValidationError(f"score {_q(score)} is not a number from 0 to 1")
    hidden = doc["hidden"]
    if hidden is not None and (doc["relation"] != "duplicate" or hidden not in (doc["a"], doc["b"])):
        raise ValidationError(f"hidden {_q(hidden)} is not a side of the pair, or the pair is a contradiction: only a "
                              "duplicate hides one of its two records (or null)")
    reason = doc["reason"]
    if not isinstance(reason, str) or not (reason_ok(reason) or reason == UNKNOWN_REASON):
        raise ValidationError(f"reason {_q(reason)} is not one the duplicate check gives")
    if (doc["status"] == "open") != (doc["decided_at"] is None):
        raise ValidationError(f"{'an' if doc['status'] == 'open' else 'a'} {doc['status']} link "
                              f"{'has no' if doc['decided_at'] is None else 'has a'} "
                              "decided_at: it is set exactly when a person decided the link")


class FileLinks:
    """The link lines of one import: :meth:`add` each while the file is read (before anything is written), then
    :meth:`write` them in the import's transaction once its records are written."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, Link]] = []
        self._ids: dict[str, int] = {}
        self._pairs: dict[frozenset[str], int] = {}
        #: the header's :data:`CHECKED_FIELD`, in a file of schema 4 or later (it carries the check's links); else ""
        self.checked = ""
        #: the file is of schema 4 or later: its link lines are its vault's pairs of its records (none: no pair)
        self._carried = False
        self._waiting = self._held = False  # read by before()
        self._mark = ""  # set by keep_checked()

    def read_header(self, doc: dict[str, Any], check_time: Callable[..., None]) -> None:
        """Keep the header's :data:`CHECKED_FIELD` (``check_time`` checks and normalises it); raises ValidationError
        saying what is wrong."""
        self._carried = doc["schema"] >= 4
        if doc.get(CHECKED_FIELD) is not None:
            check_time(CHECKED_FIELD, required=True)
            self.checked = doc[CHECKED_FIELD] if self._carried else ""

    def before(self, store: VaultStore, minds: Iterable[str]) -> None:
        """Read before the import writes anything (``minds``: those its records go into): whether writes of the
        vault's own wait for the duplicate check, and whether any of those minds holds a record already."""
        self._waiting = bool(self.checked) and bool(store.links.unchecked(
            store.links.checked_at(), None, CHECKED_KINDS, CHECKED_ACTIONS, 1))
        self._held = bool(set(minds) & set(store.meta.minds()))

    def keep_checked(self, store: VaultStore, latest: str) -> None:
        """Once the file's history is written: what its vault had checked of it is checked here too, its links being
        that check's pairs, when the file's records land in minds that held none (a copy: review 84, a copy re-judged
        every entry with its own word statistics and batches, and listed conflicts the original never had). The mark
        moves to the file's, never past ``latest`` (the latest time imported: the clock stamps later writes after
        it), and stays where it is while writes of the vault's own wait: their check reads the file's entries again,
        as before. Into a mind that held records it moves only once the records the import brought are compared
        with the mind's (:meth:`check_brought`, after the commit): the file's vault never compared its records with
        these (review 87: an agent's export moved it, and its copy of a person's memory came in unpaired)."""
        self._mark = min(self.checked, latest) if self.checked and latest and not self._waiting else ""
        if self._mark and not self._held:
            store.links.advance(self._mark)

    @property
    def held(self) -> bool:
        """Whether a mind the import's records go into held a record before it (read by :meth:`before`)."""
        return self._held

    def check_brought(self, store: VaultStore, brought: Sequence[Record], at: str) -> BroughtCheck | None:
        """Into a mind that held records: the duplicate check of the records the import brought in as new, each as
        written at ``at`` (the import's stamp; the newer side of a pair it makes), against the records the mind held
        before, never against each other when the file carries its vault's links (schema 4: its vault judged those
        pairs; review 92). It runs once the import's transaction has committed (``store.after_commit``), in batches
        of :data:`~synapse_nb.dupes.BATCH` records, each batch's pairs stored in a transaction of their own: the
        import holds the write lock no longer than its own writes, and a write waits for a batch's pairs at most
        (the check of a 3,001-record file held it 58 s, past the lock timeout: writes beside it failed). A file of
        an older schema (no links) has its records also compared with each other, each with those of the batches
        before it. Their history entries keep their own times, and the mark may be past them (or the file brought
        none): this is the check they get (review 87); once every record is compared, the mark moves as a copy's
        (:meth:`keep_checked`), so a later listing does not judge the file's entries again. What the check is to compare
        is recorded as owed in the import's own transaction, and each batch moves it past the records it compared
        (:mod:`synapse_nb.dupes_owed`): a process killed between the commit and the last batch leaves the rest owed,
        and a person's next writable open, ``memory conflicts`` or import finishes it (a twenty-second pass: the rest
        was lost, unsaid). Returns what the check did (None: no mind held records), filled in once the outermost
        transaction has committed."""
        if not self._held:
            return None
        records = sorted((replace(r, updated_at=at) for r in brought if r.kind in CHECKED_KINDS),
                         key=lambda r: r.id)
        check = BroughtCheck(len(records))
        if records or self._mark:  # with no record: the mark alone
            entry = owe(store, records, at, self._carried, self._mark)
            store.after_commit(functools.partial(check.run, store, entry, records))
        return check

    def add(self, lineno: int, doc: dict[str, Any], check_time: Callable[..., None]) -> None:
        """Check one link line (``check_time(field, required=...)`` checks and normalises a time in ``doc``);
        raises ValidationError saying what is wrong."""
        _check(doc)
        check_time("created_at", required=True)
        check_time("decided_at", required=False)
        values: dict[str, Any] = {f: doc[f] for f in LINK_FIELDS}
        link = Link(**(values | {"score": float(values["score"])}))
        if link.id in self._ids:
            raise ValidationError(f"duplicate link id {link.id} (first on line {self._ids[link.id]})")
        pair = frozenset((link.a, link.b))
        if pair in self._pairs:
            raise ValidationError(f"{link.a} and {link.b} are linked already on line {self._pairs[pair]}")
        self._ids[link.id], self._pairs[pair] = lineno, lineno
        self.lines.append((lineno, link))

    def write(self, store: VaultStore, brought: Mapping[str, Record], counts: dict[str, int],
              fail: Callable[[int, str], ValidationError], claim: Callable[[str, str, list[str]], None]) -> str:
        """Store the links (``brought``: the records the import wrote as new, by id), counting them in ``counts``
        (``link``, ``skipped``) and each link's claims through ``claim(record, text, claims)``; returns the latest
        time written ("" for none). Refuses (raises) as the module docstring says."""
        latest = ""
        for lineno, link in self.lines:
            held = {}  # each side -> whether the vault holds it after the import
            for rid, kind in ((link.a, link.a_kind), (link.b, link.b_kind)):
                mind = brought[rid].mind if rid in brought else store.table(kind).mind_of(rid)
                if mind is not None and mind != link.mind:
                    raise fail(lineno, f"link {link.id} pairs {kind} {rid}, which is in mind {inline(mind, 80)!r}, "
                                       f"not in {link.mind!r}: a link pairs two records of its own mind")
                held[rid] = mind is not None
            missing = [rid for rid, is_held in held.items() if not is_held]
            if link.status == "open" and missing:
                raise fail(lineno, f"open link {link.id} pairs {missing[0]}, which is neither in this file nor in "
                                   "this vault: an open link decides what recall leaves out and what `memory "
                                   "conflicts` lists, so both its records must be in the vault (only a decided link "
                                   "may name a record its merge or supersede deleted)")
            there = store.links.get(link.id) or store.links.of_pair(link.a, link.b)
            if there is not None:
                same = there == link if there.id == link.id else (
                    (there.relation, there.hidden, there.status) == (link.relation, link.hidden, link.status))
                if same:
                    counts["skipped"] += 1
                    continue
                raise ConflictError(
                    f"import line {lineno}: link {link.id} ({_said(link)}) conflicts with the vault's link "
                    f"{shown_id(there.id)} ({_said(there)}): a link the vault holds is changed only by a person's "
                    "decision (memory resolve); nothing was imported")
            store.links.insert([link])
            counts[LINK_KIND] = counts.get(LINK_KIND, 0) + 1
            made = [] if link.status == "open" else [f"link status={link.status}"]
            if any(is_held and rid not in brought for rid, is_held in held.items()):
                made.append(STORED_LINK)
            elif link.status == "open" and link.hidden is not None and \
                    link.hidden != hidden_side(brought[link.a], brought[link.b]):
                made.append(HIDING_LINK)
            claim(f"link {link.id}", _said(link), made)
            latest = max(latest, link.created_at, link.decided_at or "")
        return latest


@dataclass
class BroughtCheck:
    """The duplicate check of the records an import brought into minds that held records
    (:meth:`FileLinks.check_brought`), run after the import's commit: ``records`` to compare, how many were
    (``checked``), the pairs it found (``pairs``; ``memory conflicts`` lists them) and, when it stopped before the
    end, why (``stopped``: the pairs of the batches before are stored, the rest are owed:
    :mod:`synapse_nb.dupes_owed`)."""

    records: int
    checked: int = 0
    pairs: int = 0
    stopped: str = ""

    def run(self, store: VaultStore, entry: Owed, records: Sequence[Record]) -> None:
        """Check ``records`` (the import's, as ``entry`` owes their check) in batches, then move the duplicate check's
        mark (:func:`synapse_nb.dupes_owed.run`); what older imports left owed first (counted apart). A batch that
        fails stops the check: the rest stays owed."""
        try:
            run_owed(store, skip=entry.name)
        except (PermissionDeniedError, StoreError) as exc:  # theirs stays owed; this import's own check still runs
            logging.getLogger("synapse_nb.dupes").warning("the duplicate check an earlier import left owed did not "
                                                          "run (%s)", exc)
        try:
            run(store, entry, records, progress=self)
        except (PermissionDeniedError, StoreError) as exc:  # the import is stored: say so, and what was not
            self.stopped = str(exc)

    def line(self) -> str:
        """What the check did, for a person: ``duplicate check: the 3,001 records brought in, against those the
        vault held: 12 pairs found (...)``."""
        n = f"{self.checked:,} of the {self.records:,}" if self.checked < self.records else f"the {self.records:,}"
        return (f"duplicate check: {n} record{'' if self.records == 1 else 's'} brought in, against those the vault "
                f"held: {self.pairs:,} pair{'' if self.pairs == 1 else 's'} found"
                + (" (synapse-nb memory conflicts lists them)" if self.pairs else "")
                + (f"; it stopped ({self.stopped}): the other records are compared later, at a person's next "
                   "writable open of the vault, `synapse-nb memory conflicts` or import (they are owed)"
                   if self.stopped else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "checked": self.checked, "pairs": self.pairs} | (
            {"stopped": self.stopped} if self.stopped else {})


def _said(link: Link) -> str:
    """A link in a few words: ``"duplicate mem_1 ~ mem_2, open, hides mem_1"``."""
    hides = f", hides {shown_id(link.hidden)}" if link.hidden else ""
    return f"{link.relation} {shown_id(link.a)} ~ {shown_id(link.b)}, {link.status}{hides}"


def explain(claims: Counter[str]) -> str:
    """What an import refused for its links' claims says of them (``""`` when it made none)."""
    if not any(k.startswith(LINK_KIND + " ") for k in claims):
        return ""
    return (" Without --trust a file's links may pair only records it brings in as new, open and hiding nothing or "
            "the side the duplicate check would hide: a link decides what recall leaves out of a record the vault "
            "holds, and a decided one is a person's decision (memory resolve).")
