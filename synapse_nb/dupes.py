"""Likely duplicates and contradictions, found on write by a deterministic lexical check (no model call), decided by
a human (issue 30, docs/decisions/0013-memory-history.md).

After a write transaction commits, each record it created or changed (every kind recall ranks, but checkpoints:
work state repeats itself on purpose) is compared with the mind's records that share its words; a transaction that
wrote more than :data:`SYNC_MAX` of them (a person's bulk load) is checked later, from history, by :func:`check_pending`
(a person's listing checks :data:`READ_CHECKS` a call; an agent's transaction is checked at its commit, in batches):

1. **words**: the record's text as recall analyses a query (:func:`synapse_nb.recall.rank.rank_words`: FTS5's
   ``unicode61`` folding, recall's 74 stop words out), then a light suffix fold (``deploying`` ~ ``deploy``);
2. **candidates**: the mind's best :data:`DEPTH` ranking documents by the store's BM25 (the ranking table recall
   reads), other kinds included, for the record's :data:`MAX_WORDS` rarest words that some other record holds too
   (then its own words, if fewer);
3. **similarity**: two idf-weighted measures of the two word sets, idf from the vault's word statistics
   (``doc_freq``: the documents holding each word, as recall's coverage weighs them; for a pair of two people's
   records, people's records' alone: see below), numbers, dates and negations left out of both: the **Jaccard**
   (shared weight / weight of either side: how far the two say the same thing and nothing else) and the
   **overlap** (shared weight / the lighter side's weight: how much of the shorter text the longer one holds, so a
   one-line fact is found in the longer note or message that states it);
4. **verdict** (:func:`classify`): the same subject (Jaccard at least :data:`SUBJECT_AT`) with differing numbers or
   dates, or a negation on one side only, is a ``contradiction``; otherwise an overlap at least :data:`DUPLICATE_AT`
   over at least :data:`MIN_SHARED` shared words, and at least :data:`MIN_SHARE` of the shorter side's words, is a
   ``duplicate``, unless the numbers or dates differ or the shorter side alone is negated (``"we do not deploy on
   Fridays"`` inside a longer text that does not negate: not the same fact; a negation elsewhere in a long message does
   not count against it).

A record is paired with what was written before it (records checked together are read oldest first). One already
waiting for a human as the hidden side of a duplicate link takes no second duplicate pair within that group, a
candidate that waits behind another brings that other in too (hidden copies cannot fill the candidates and keep
it out), a contradiction with a waiting record is one with the record it waits behind, and one contradiction with
a group of records open against each other stands for the whole group: copies or values written over and over
add about one pair each to the human's queue.

A duplicate link hides one side from recall while it is open (:func:`hidden_side`: a human's record stands over an
agent's; otherwise the older one stands) when the one that stands holds :data:`COVERED_AT` of the other's weighted
words (:func:`covered`); a contradiction hides nothing. A human decides every link (``Memories.resolve``): merge,
keep both, or supersede. Precision and recall on a labelled set: ``notebooks/memory_conflicts.ipynb``.

**Two people's records are weighed by people's records alone** (review 22). Between them the newer one is the hidden
side, and a word's weight is its rarity: thirty agent memories holding only the words a person's new procedure adds to
an older one made those words weigh almost nothing (the weight's floor), so the older one "held" the new one and the
person's newer rule left recall. The verdict and the coverage of a pair whose two sides stand as a person's
(:func:`human_record`) therefore read document frequencies and a document count that leave the agents' unverified
records out (the store's ``count`` and ``doc_freq`` less their ``agents=True`` counts, kept exact by triggers as
records are written, verified or deleted: SQLite schema v8, PostgreSQL migration 18), so nothing an agent writes
changes whether such a pair hides one side, or which. (What agents write still counts in BM25's choice of a record's
:data:`DEPTH` candidates, as it does in recall's ranking, so it can keep a pair from being found, and both records
then stay in recall, or bring one in; a pair that is found is judged on its two texts and people's records as if
agents had written nothing.) A pair with an agent's unverified record is weighed by every record, as before: its copy
is the side hidden.
"""

from __future__ import annotations

import functools
import math
import re
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from synapse_nb._util import new_id
from synapse_nb.changes import Link
from synapse_nb.dupes_reads import Apart, Stats, fetch, near
from synapse_nb.errors import PermissionDeniedError, StoreError
from synapse_nb.models import RANKED_KINDS, Record, kind_of_id
from synapse_nb.provenance import human_record
from synapse_nb.store.records import View

if TYPE_CHECKING:
    from synapse_nb.context import Context
    from synapse_nb.store.base import VaultStore

__all__ = ["CHECKED_KINDS", "COVERED_AT", "DEPTH", "DUPLICATE_AT", "MIN_SHARE", "MIN_SHARED", "SUBJECT_AT", "Verdict",
           "check_after_commit", "classify", "covered", "hidden_side", "human_record", "words"]

#: The kinds the check compares (recall's ranked kinds but checkpoints).
CHECKED_KINDS: tuple[str, ...] = tuple(k for k in RANKED_KINDS if k != "checkpoint")
#: Candidates read per record (BM25 over the mind's ranking documents).
DEPTH = 8
#: Idf-weighted overlap (shared weight / the lighter side's) from which two records are the same fact (chosen on the
#: labelled set's development part: hand pairs and LoCoMo conversations 0-3, the middle of the range 0.40-0.50 where
#: precision stays above 0.94; conversations 4-6 held out).
DUPLICATE_AT = 0.45
#: Fewest distinct shared words (after folding) for a duplicate: the overlap of a two-word text with anything that
#: names both words is 1.0 (``"the billing team meets on Thursdays"`` / ``"... owned by the billing team"``).
MIN_SHARED = 3
#: ... and at least this share of the shorter side's distinct words, counted (not weighted): in a small vault idf
#: weighs every word alike-ish, and a few shared topic words (tags such as ``survey``, ``data``) would pass the overlap.
MIN_SHARE = 0.5
#: Idf-weighted Jaccard from which two records speak of the same subject (a contradiction when numbers, dates or
#: negation differ).
SUBJECT_AT = 0.5
#: Share of a duplicate's words (weighted by rarity) the record that stands must hold for recall to leave the
#: duplicate out: a link below it is listed for a human (``memory conflicts``) but hides nothing, so a record that
#: says more than the one it resembles is never lost from recall on a guess.
COVERED_AT = 0.8
#: Most words of a record the check sends to BM25 (the rarest another record holds).
MAX_WORDS = 6

_NEGATIONS = frozenset(("not", "no", "never", "none", "nobody", "nothing", "cannot", "nor", "without", "t", "neither",
                        "isn", "aren", "wasn", "weren", "don", "doesn", "didn", "won", "shouldn", "couldn"))
_MONTHS = frozenset(("january", "february", "march", "april", "may", "june", "july", "august", "september",
                     "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
                     "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                     "yesterday", "today", "tomorrow"))
_NUMBER_WORDS = frozenset(("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                           "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million", "first",
                           "second", "third", "fourth", "fifth", "once", "twice", "half", "dozen"))
_DIGIT = re.compile(r"\d")
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b([A-Z][a-z]+)\b")
_NEG_TOKENS = re.compile(r"[^\W_]+")


def _fold(w: str) -> str:
    """A light suffix fold so that inflections meet (``deploys``, ``deployed``, ``deploying`` -> ``deploy``)."""
    if len(w) > 5 and w.endswith("ing"):
        return w[:-3]
    if len(w) > 4 and w.endswith("ied"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("ed"):
        return w[:-2]
    if len(w) > 4 and w.endswith("es") and w[-3] in "sxz":
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


class _Parts(NamedTuple):
    subject: dict[str, str]  # folded word -> a raw word (for its document frequency)
    values: frozenset[str]  # numbers and dates
    negated: bool
    names: frozenset[str]  # folded words written capitalised inside a sentence (places, people, products)


@functools.lru_cache(maxsize=65_536)
def _fold_cached(w: str) -> str:
    return _fold(w)


def words(text: str) -> list[str]:
    """The words the check reads of a text: recall's query analysis (:func:`~synapse_nb.recall.rank.rank_words`).

    >>> words("Deploy steps: run `make deploy`, then tag the release")
    ['deploy', 'steps', 'run', 'make', 'tag', 'release']
    """
    from synapse_nb.recall.rank import rank_words  # light (no numpy); recall's own analysis

    return rank_words(text)


#: Texts up to this many characters are parsed into the large cache, longer ones into a small one: a long-lived
#: process (an MCP server) that reads many 32 KB texts held up to 16,384 of them (0.5-2 GB); now at worst ~0.2 GB
#: of short texts (about 13 KB parsed, for 2,048 characters of random words) and ~10 MB of long ones.
SHORT_TEXT = 2_048


def _parts(text: str) -> _Parts:
    return _parts_short(text) if len(text) <= SHORT_TEXT else _parts_long(text)


def _parse(text: str) -> _Parts:
    subject: dict[str, str] = {}
    values: set[str] = set()
    for w in words(text):
        if _DIGIT.search(w) or w in _MONTHS or w in _NUMBER_WORDS:
            values.add(w)
        elif w not in _NEGATIONS:
            subject.setdefault(_fold_cached(w), w)
    raw = _NEG_TOKENS.findall(text.lower())
    negated = any(t in _NEGATIONS for t in raw)
    names = frozenset(f for f in (_fold_cached(m.lower()) for m in _NAME.findall(text)) if f in subject)
    return _Parts(subject, frozenset(values), negated, names)


_parts_short = functools.lru_cache(maxsize=16_384)(_parse)
_parts_long = functools.lru_cache(maxsize=256)(_parse)


class Verdict(NamedTuple):
    """What :func:`classify` says of a pair: ``relation`` (``duplicate``, ``contradiction`` or None), the subject
    similarity (the weighted Jaccard), the reason in words, and the weighted overlap (shared weight / the lighter
    side's weight) a duplicate is decided on."""

    relation: str | None
    score: float
    reason: str
    overlap: float = 0.0


@functools.lru_cache(maxsize=262_144)
def _weight(df: int, n_docs: int) -> float:
    """A word's weight: its idf among ``n_docs`` documents, ``df`` of which hold it (at least 0.05)."""
    return max(0.05, math.log((n_docs + 1) / (max(0, df) + 0.5)) if n_docs > 0 else 1.0)


def classify(a: str, b: str, doc_freq: Mapping[str, int], n_docs: int) -> Verdict:
    """Whether two texts look like the same fact, a contradiction, or neither (pure; deterministic).

    ``doc_freq``: in how many of the vault's ``n_docs`` records each word occurs (absent: none), both texts
    counted among them: a word's weight is its rarity in the rest of the vault (the pair's own documents are
    taken out, so two copies of a fact do not make their words look common).

    >>> classify("deploy with make deploy then tag the release", "to deploy: make deploy, then tag release",
    ...          {"deploy": 3, "make": 5, "tag": 4, "release": 4}, 100).relation
    'duplicate'
    >>> classify("the API rate limit is 100 requests per minute", "the API rate limit is 500 requests per minute",
    ...          {}, 100).relation
    'contradiction'
    """
    pa, pb = _parts(a), _parts(b)
    sa, sb = pa.subject.keys(), pb.subject.keys()
    if not sa or not sb:
        return Verdict(None, 0.0, "no content words")
    shared = sa & sb
    if not shared:
        return Verdict(None, 0.0, "different")
    rest = max(0, n_docs - 2)
    get = doc_freq.get
    inter = sum(_weight(int(get(pa.subject[w], 0)) - 2, rest) for w in sorted(shared))
    only_a = sum(_weight(int(get(pa.subject[w], 0)) - 1, rest) for w in sorted(sa - shared))
    only_b = sum(_weight(int(get(pb.subject[w], 0)) - 1, rest) for w in sorted(sb - shared))
    union = inter + only_a + only_b
    score = round(inter / union, 6) if union > 0 else 0.0
    lighter = min(inter + only_a, inter + only_b)
    overlap = round(inter / lighter, 6) if lighter > 0 else 0.0
    differ = bool(pa.values and pb.values and pa.values != pb.values)
    if score >= SUBJECT_AT:
        if differ:
            diff = sorted(pa.values ^ pb.values)[:4]
            return Verdict("contradiction", score, f"same subject, differing numbers or dates ({', '.join(diff)})",
                           overlap)
        if pa.negated != pb.negated:
            return Verdict("contradiction", score, "same subject, negated on one side", overlap)
        names_a, names_b = pa.names - pb.subject.keys(), pb.names - pa.subject.keys()
        if names_a and names_b:  # "moved to Lisbon" / "moved to Berlin": one name put for another
            diff = sorted(pa.subject[w] for w in names_a)[:2] + sorted(pb.subject[w] for w in names_b)[:2]
            return Verdict("contradiction", score, f"same subject, differing names ({', '.join(diff)})", overlap)
    if overlap >= DUPLICATE_AT and len(shared) >= max(MIN_SHARED, MIN_SHARE * min(len(sa), len(sb))) \
            and not differ:  # other numbers: another fact
        shorter_negated = pa.negated if inter + only_a <= inter + only_b else pb.negated
        if pa.negated == pb.negated or not shorter_negated:
            return Verdict("duplicate", score, "the shorter one's words are in the other, weighted by rarity", overlap)
    return Verdict(None, score, "different", overlap)


def covered(text: str, by: str, doc_freq: Mapping[str, int], n_docs: int) -> float:
    """The share of ``text``'s words, weighted by rarity as in :func:`classify`, that ``by`` holds too (0 when
    ``text`` holds a number or date ``by`` lacks): how little a record would lose by being left out for ``by``.

    >>> covered("deploy: make deploy, then tag", "deploy with make deploy then tag the release", {}, 10)
    1.0
    >>> covered("migrations run in CI before every deploy", "run the migrations with alembic upgrade head", {}, 10)
    0.333333
    """
    pa, pb = _parts(text), _parts(by)
    if not pa.subject or not pa.values <= pb.values:
        return 0.0
    rest = max(0, n_docs - 2)
    get = doc_freq.get
    total = held = 0.0
    for w in sorted(pa.subject):
        weight = _weight(int(get(pa.subject[w], 0)) - (2 if w in pb.subject else 1), rest)
        total += weight
        held += weight if w in pb.subject else 0.0
    return round(held / total, 6) if total > 0 else 0.0


def hidden_side(new: Record, old: Record) -> str:
    """Which of a duplicate pair recall leaves out: a human's record (:func:`human_record`) stands over an agent's;
    between equals the older one (``old``) stands."""
    return old.id if human_record(new) and not human_record(old) else new.id


# -- on write ------------------------------------------------------------------------------------------------------
#: A person's write transaction that wrote at most this many checked records has them checked right after its commit;
#: a larger one (a bulk load: the check costs about a millisecond a record, the write a tenth of that) leaves them to
#: :func:`check_pending` (``Memories.conflicts``, ``memory conflicts``), which reads them from history. An agent's is
#: checked after its commit however large, in batches of :data:`BATCH`: the agent's call pays (review 75: an agent's
#: 3,000 decisions of 32 KB in one transaction left a person's next listing 45 s of checks, over 600 s repetitive).
SYNC_MAX = 32
BATCH = 500
#: The history entries a person's listing checks at most in one call (``Memories.conflicts``, the review widget),
#: and the seconds after which it starts no further batch (its batches grow from :data:`_FIRST_BATCH`, doubling): what
#: still waits is counted and said; ``memory conflicts --check-all`` checks it all (review 75: a record's check costs
#: a BM25 read, about a millisecond, 0.7 s when 3,000 records repeat its words, which an agent login's SQL can store).
READ_CHECKS = 100
READ_SECONDS = 2.0
_FIRST_BATCH = 4
_clock = time.monotonic
#: The history actions whose record gets the check (a write of its content).
CHECKED_ACTIONS: tuple[str, ...] = ("create", "update", "revert", "accept")
#: A view reading any record of a mind (lessons, whose visibility depends on "now", are never checked).
_ALL_TIME = "9999-12-31T23:59:59.999999Z"


@dataclass
class _Written:
    """The checked records a write transaction wrote, and whether an agent wrote every one of them."""

    agent: bool
    records: list[Record] = field(default_factory=list)


_pending: weakref.WeakKeyDictionary[Any, _Written] = weakref.WeakKeyDictionary()


def check_after_commit(ctx: Context, rec: Record) -> None:
    """Check ``rec`` once the current write transaction commits; a person's transaction that wrote more than
    :data:`SYNC_MAX` checked records leaves them to :func:`check_pending` (from their history entries: nothing is lost
    if the process stops before)."""
    if rec.kind not in CHECKED_KINDS:
        return
    store = ctx.store
    written = _pending.get(store)
    if written is None:
        written = _pending[store] = _Written(ctx.actor == "agent")
        store.on_rollback(lambda: _forget(store))
        store.after_commit(lambda: _run(store))
    written.agent = written.agent and ctx.actor == "agent"
    written.records.append(rec)


def _forget(store: VaultStore) -> None:
    _pending.pop(store, None)


def _run(store: VaultStore) -> None:
    written = _pending.pop(store, None)
    if not written or not written.records or store.readonly:
        return
    pending = written.records
    latest = {rec.id: rec for rec in pending}  # the last write of each record in the transaction
    if len(latest) > SYNC_MAX and not written.agent:
        return  # a person's bulk load: checked later, from history
    first = min(r.updated_at for r in pending)
    checked = store.links.checked_at()
    ordered = sorted(latest.values(), key=lambda r: (r.updated_at, r.id))  # a record at its last write
    for start in range(0, len(ordered), BATCH):
        batch = ordered[start:start + BATCH]
        last = max(r.updated_at for r in batch)  # the next batches' records pair with these when their turn comes
        found = find_links(sorted(batch, key=lambda r: r.id), store,
                           waiting_after=last if len(batch) < len(ordered) else None)
        try:
            with store.transaction():
                store.links.insert(found)
                # every write before this transaction was checked already: the mark moves past the batch (else
                # check_pending will)
                if not store.links.unchecked(checked, first, CHECKED_KINDS, CHECKED_ACTIONS, 1):
                    store.links.advance(last)
        except (PermissionDeniedError, StoreError):
            # a team vault's server holds an agent login to so many pairs an hour, and to pairs of two stored records
            # (one deleted meanwhile) (migration 12); or the pairs' own transaction failed (a full disk): the write
            # itself is stored (raising here said "nothing was changed" of a committed record), and the mark stays,
            # so a human's next `memory conflicts` (check_pending) finds these pairs
            return


def check_pending(store: VaultStore, limit: int | None = None, seconds: float | None = None) -> int:
    """Check the records written since the last check (what large write transactions left), oldest first, at most
    ``limit`` history entries (None: all of them), in batches of :data:`BATCH`; with ``seconds``, in batches that grow
    from :data:`_FIRST_BATCH` and none started once ``seconds`` have passed. Returns how many entries were read."""
    done, size, start = 0, BATCH if seconds is None else _FIRST_BATCH, _clock()
    while limit is None or done < limit:
        if done and seconds is not None and _clock() - start >= seconds:
            break
        batch = _unchecked(store, size if limit is None else min(size, limit - done))
        if not batch:
            break
        by_kind: dict[tuple[str, str], list[str]] = {}
        for _, rid, kind, mind in batch:
            by_kind.setdefault((mind, kind), []).append(rid)
        records: list[Record] = []
        for (mind, kind), rids in sorted(by_kind.items()):
            records += store.table(kind).get_many(View(mind, _ALL_TIME), rids).values()
        found = find_links(sorted(records, key=lambda r: r.id), store, waiting_after=batch[-1][0])
        with store.transaction():
            store.links.insert(found)
            store.links.advance(batch[-1][0])
        done += len(batch)
        size = min(BATCH, 2 * size)
    return done


def _unchecked(store: VaultStore, n: int) -> list[tuple[str, str, str, str]]:
    """The next ``n`` history entries to check, or fewer, never cut between two of one stamp (the mark moves past a
    stamp: an import keeps its lines' stamps, which may repeat); more when ``n`` entries share the first stamp."""
    after = store.links.checked_at()
    while True:
        rows = store.links.unchecked(after, None, CHECKED_KINDS, CHECKED_ACTIONS, n + 1)
        if len(rows) <= n or rows[n][0] != rows[n - 1][0]:
            return rows[:n]
        kept = [r for r in rows[:n] if r[0] != rows[n][0]]
        if kept:
            return kept
        n *= 2


def waiting(store: VaultStore) -> int:
    """How many history entries still wait for the duplicate check (:func:`check_pending`)."""
    return store.links.count_unchecked(store.links.checked_at(), CHECKED_KINDS, CHECKED_ACTIONS)


def find_links(records: Sequence[Record], store: VaultStore, *, at: str | None = None,
               waiting_after: str | None = None, apart: Apart | None = None) -> list[Link]:
    """The links the check finds for ``records`` (already stored) against their minds' records: one BM25 read per
    record, then one read of every candidate's text, then :func:`classify` per pair (each text analysed once).
    ``waiting_after``: records written after this stamp wait for a later check of their own, which pairs them with
    what was written before them (``records`` are one batch of a larger backlog), so they are no candidates here.
    ``apart``: records never paired with ``records`` (an import's own: :func:`synapse_nb.dupes_reads.near`)."""
    texts = {r.id: r.text for r in records}
    extra = min(len(records) - 1, SYNC_MAX)
    vocab = sorted({w for t in texts.values() for w in words(t)})
    out: list[Link] = []
    with store.snapshot():
        stats = Stats(store, any(human_record(r) for r in records))
        df, pdf, n_docs, n_people = stats.df, stats.people, stats.n_docs, stats.n_people
        stats.read(vocab)
        hits: dict[str, list[str]] = {}
        wanted: dict[str, dict[str, set[str]]] = {}  # mind -> kind -> ids
        for rec in records:
            ws = words(texts[rec.id])
            if not ws:
                continue
            # the rarest words another record holds too (the record's own count is 1): a long record's words of
            # its own would fill the query and find nothing but itself
            query = (sorted(ws, key=lambda w: (df.get(w, 0) <= 1, df.get(w, 0), w))[:MAX_WORDS] if apart is None
                     else apart.query(ws, df, MAX_WORDS))  # (no word another record holds: no candidate)
            # (deeper by the records checked with it, up to SYNC_MAX: copies written together tie with each other
            # and would otherwise fill the depth, keeping the record they all repeat out of it)
            got = near(store, rec, query, 2 * DEPTH + 1 + extra, CHECKED_KINDS, apart.ids if apart else frozenset()) \
                if query else []
            # the best DEPTH and every hit tied with the last of them: ids are random, so a cut inside a tie would
            # make the check's answer depend on them
            ids = [h.id for h in got if len(got) <= DEPTH or h.score >= got[DEPTH - 1].score]
            hits[rec.id] = ids
            for i in ids:
                wanted.setdefault(rec.mind, {}).setdefault(str(kind_of_id(i)), set()).add(i)
        cand = {c.id: c for mind, by_kind in sorted(wanted.items())
                for c in store.recall.fetch(mind, {k: sorted(v) for k, v in sorted(by_kind.items())})}
        later = (set() if waiting_after is None else
                 store.links.written_after(sorted(set(cand) - set(texts)), waiting_after, CHECKED_ACTIONS))
        stats.read(sorted({w for c in cand.values() for w in words(c.text)} - set(df)))
        linked: set[frozenset[str]] = set()  # pairs found in this call (two records of one batch find each other)
        # A record an open duplicate link hides waits for a human behind the one that stands: a candidate that is
        # such a record stands for that one (forty copies of one text made 513 pairs to review, about thirteen a
        # write, and hidden copies could fill the candidates and keep the one that stands out of them).
        # (read only for a mind where some record has candidates: most writes have none, and pay no read for it)
        near_minds = {r.mind for r in records if hits.get(r.id)}
        waiting = {mind: set(store.links.hidden(mind)) if mind in near_minds else set()
                   for mind in sorted({r.mind for r in records})}
        behind: dict[str, str] = {}  # a hidden record -> the record it waits behind (stored links, or this call's)

        def standing(cid: str, mind: str) -> str:
            path: set[str] = set()
            while cid in waiting[mind] and cid not in path:
                path.add(cid)
                nxt = behind.get(cid)
                if nxt is None:
                    nxt = next((x.a if x.b == cid else x.b for x in store.links.of_record(cid)
                                if x.status == "open" and x.relation == "duplicate" and x.hidden == cid), None)
                    if nxt is None:
                        break
                    behind[cid] = nxt
                cid = nxt
            return cid

        def passed(relation: str | None, rec: Record, cid: str, settled: set[str]) -> bool:
            """Whether a pair of this relation of ``rec`` with ``cid`` is still to be made (else another stands for
            it; ``settled``: the records an earlier contradiction of ``rec`` put before a human)."""
            return relation is not None and not (
                # a contradiction with a record that waits behind another is one with that other (a candidate too),
                # and one with a group already open against each other stands for the group
                (relation == "contradiction" and (cid in settled or cid in waiting[rec.mind]))
                # rec waits behind a record already: no second pair in that record's group
                or (relation == "duplicate" and rec.id in waiting[rec.mind]
                    and standing(rec.id, rec.mind) == standing(cid, rec.mind)))

        # oldest first: a record is paired with what was written before it (stored, or earlier in this call), as
        # hidden_side reads a pair, and this call's later records pair with it when their turn comes
        unread = {r.id for r in records}
        for rec in sorted(records, key=lambda r: (r.updated_at, r.id)):
            unread.discard(rec.id)
            hit = hits.get(rec.id, [])
            ids = [i for i in dict.fromkeys([*hit, *(standing(i, rec.mind) for i in hit)])
                   if i != rec.id and (apart is None or i not in apart.ids)]
            fetch(store, rec.mind, [i for i in ids if i not in cand], cand, stats)
            # a person's record is also weighed by people's records alone, for the case its candidate is a person's
            # too (known once the candidate is read, below): agents' writes then change nothing of the pair
            mine = stats.split and human_record(rec)
            found = []
            for cid in ids:
                c = cand.get(cid)
                if c is None or c.mind != rec.mind:
                    continue
                verdict = classify(texts[rec.id], c.text, df, n_docs)
                by_people = classify(texts[rec.id], c.text, pdf, n_people) if mine else verdict
                if verdict.relation is not None or by_people.relation is not None:
                    found.append((c, verdict, by_people))
            if not found:
                continue
            known = {x.a if x.b == rec.id else x.b for x in store.links.of_record(rec.id)}
            settled: set[str] = set()  # records an earlier contradiction of this record already puts before a human
            for c, verdict, by_people in found:
                if (c.id in known or c.id in unread or c.id in later or frozenset((rec.id, c.id)) in linked
                        or not (passed(verdict.relation, rec, c.id, settled)
                                or passed(by_people.relation, rec, c.id, settled))):
                    continue
                old = store.table(c.kind).get_many(View(rec.mind, rec.updated_at), [c.id]).get(c.id)
                if old is None:  # not there at rec's time (written after it, or deleted): its own check pairs it
                    continue
                # Two people's records: the pair, and which side recall leaves out, are decided by people's words
                # alone (review 22: thirty agent memories holding the words a person's newer record adds made them
                # weigh nothing, and the person's newer record was hidden behind the older one). A pair with an
                # agent's record is weighed by every record, as recall weighs them.
                people = mine and human_record(old)
                weights, n = (pdf, n_people) if people else (df, n_docs)
                if people:
                    verdict = by_people
                relation = verdict.relation
                if relation is None or not passed(relation, rec, c.id, settled):
                    continue
                linked.add(frozenset((rec.id, c.id)))
                hidden = hidden_side(rec, old) if relation == "duplicate" else None
                if hidden is not None:  # left out of recall only when the one that stands says all it says
                    gone, stays = (rec.text, old.text) if hidden == rec.id else (old.text, rec.text)
                    if covered(gone, stays, weights, n) < COVERED_AT:
                        hidden = None
                out.append(Link(id=new_id("lnk"), mind=rec.mind, a=rec.id, a_kind=rec.kind, b=c.id, b_kind=c.kind,
                                relation=relation, score=verdict.score, hidden=hidden, status="open",
                                reason=verdict.reason, created_at=at or rec.updated_at))
                known.add(c.id)
                if hidden is not None:  # later records of this call see it waiting
                    waiting[rec.mind].add(hidden)
                    behind[hidden] = c.id if hidden == rec.id else rec.id
                if relation == "contradiction":  # the records c is open against, directly or through others,
                    # state the same subject: one pair with c puts the new value before the human beside all of
                    # them (forty values of one number made 528 pairs, thirteen a write); a record outside that
                    # group is still paired on its own
                    settled |= _contradiction_group(store, c.id, out)
    return out


#: The most records :func:`_contradiction_group` walks (each one read of its links).
GROUP_WALK = 32


def _contradiction_group(store: VaultStore, rid: str, new: Sequence[Link]) -> set[str]:
    """The records joined to ``rid`` by open contradiction links (stored, or ``new`` in this check), walked
    breadth first up to :data:`GROUP_WALK` records."""
    seen, todo = {rid}, [rid]
    while todo and len(seen) < GROUP_WALK:
        at = todo.pop(0)
        for x in [*store.links.of_record(at), *(x for x in new if at in (x.a, x.b))]:
            other = x.a if x.b == at else x.b
            if x.status == "open" and x.relation == "contradiction" and other not in seen and len(seen) < GROUP_WALK:
                seen.add(other)
                todo.append(other)
    return seen
