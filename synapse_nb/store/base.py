"""The store seam: what the core asks of a system of record, written for a second backend.

:class:`VaultStore` is a :class:`typing.Protocol`, implemented by SQLite (:class:`synapse_nb.store.sqlite.SqliteStore`)
and a PostgreSQL team vault (:mod:`synapse_nb.store.postgres`). The kind managers, recall, follow, transfer and
settings talk to a store only through it; every SQL statement lives behind it, in ``synapse_nb/store/``.

Contract (every backend)
------------------------
**Transactions.** ``with store.transaction():`` is one write transaction (SQLite: ``BEGIN IMMEDIATE``, retried while
another process holds the write lock; PostgreSQL: a pooled connection, READ COMMITTED plus row locks). Nested calls
join the outer one. It commits when the outermost block ends normally and rolls back on any exception;
``after_commit(cb)`` runs ``cb`` after the outermost commit (at once outside a transaction) and ``on_rollback(cb)``
if it rolls back. What it yields is the backend's own (no connection leaves the store). A read-only store refuses to
open one (:class:`~synapse_nb.errors.StoreError`).

**Snapshots.** ``with store.snapshot():`` makes several reads see one committed state (SQLite: a deferred read
transaction; PostgreSQL: REPEATABLE READ). Recall reads its lessons, candidates and word statistics inside one.
Inside a write transaction it joins it; a write transaction may not be opened inside a snapshot.

**What "now" is.** The store never reads the machine's clock. Callers take "now" from their context's clock
(or, inside a snapshot of a shared store, from :meth:`VaultStore.snapshot_now`: the server's clock, so every
machine reading one state agrees on the time) and pass it as fixed-width UTC text
(``2026-01-01T12:00:00.000000Z``, :func:`synapse_nb._util.fmt_ts`), which sorts as time: in a :class:`View` for
reads that depend on it (memory expiry, the effective lesson status, what an agent may read), and as an argument
to writes that do (prune, stamps).

**Write stamps.** ``store.stamp(now)``, in a write transaction, returns the timestamp to write: the store's clock
(SQLite: ``now``; a team vault: the server's, ``now`` unused: no client moves it), or 1 µs after the vault's last
stamp when that is not earlier. Strictly increasing per vault across processes (taken under the write lock), so
records never tie on ``created_at``/``updated_at``; a SQLite import moves the last stamp past every imported time.

**Ordering.** Every listing has a total order that ends in the record id, so the same vault lists the same way
whatever the backend's plan or the hash seed.

**Change notification.** After a commit the store calls each ``on_change`` listener once with the sorted
``(kind, id, deleted)`` of every record written through it (by any vault handle); a rollback reports nothing.

**Typed records in and out.** Kind tables take and return model records (:class:`~synapse_nb.models.Memory`,
:class:`~synapse_nb.models.Lesson`, ...) or the small frozen dataclasses below; rows, cursors and connections
never leave the store. A record read through a :class:`View` carries the lesson status in effect at
``view.now`` (an approved lesson past its ``expires_at`` reads as ``expired``).

**Validation and permissions are not the store's job.** The kind managers check every value and every actor
before they call a write; the store trusts them. Visibility is a parameter (``View.in_force_only``), never a
rule the store decides. The store raises :class:`~synapse_nb.errors.StoreError` for I/O failures and
:class:`~synapse_nb.errors.ConflictError` when a write breaks a uniqueness rule, never a backend's exceptions.

**Full-text search** takes raw text (FTS5 ``MATCH``, ``tsquery`` are the backend's): any text is safe.

**Recall's word statistics must agree across backends** (recall is deterministic: same vault, same answer). A
candidate's gate text is, per kind: memory ``key`` (``_`` as spaces) + content + tags; decision: decision + rationale +
tags; checkpoint: doing + next step + blockers + changed files; episode: task key (``_`` as spaces) + outcome + refs;
note: name (``_`` as spaces) + trigger; parts joined by single spaces, missing parts empty (lessons are not candidates).
``doc_freq`` counts the candidates (all minds) holding a word as SQLite FTS5's ``unicode61 remove_diacritics 2``
tokenizer splits and folds it; ``count`` is the number of candidates. With ``agents=True`` both count only the agents'
unverified ones (``RankRow.agent``; SQLite v8, team migration 18): the duplicate check weighs by people's, the rest.

**Ranking (recall engine v2, schema v3).** Every gate candidate is also a *ranking document* with two fields: ``body`` =
its gate text (above) and ``context`` = the bodies of the previous two records of the same (mind, thread) ordered by
``(seq, id)``, oldest first, joined by one space (``''`` for a record without a thread or without predecessors). Only
episodes carry ``thread``/``seq``/``actor`` today (NULL elsewhere). The backend keeps ``context`` exact on every insert,
update (body, thread, seq) and delete, including the next two records of the thread whose context names the changed one.

- :meth:`RecallQueries.bm25` scores documents with Okapi BM25 exactly as SQLite FTS5's ``bm25()`` does:
  terms are the given words stemmed with the Porter stemmer after ``unicode61 remove_diacritics 2`` folding
  (FTS5's ``porter`` tokenizer); a document matches when it holds at least one term (OR); for each term
  ``idf = ln((N - n + 0.5) / (n + 0.5))``, floored at ``1e-6`` when it is not positive, where ``N`` is the
  number of ranking documents of the whole vault (all minds) and ``n`` those holding the term;
  ``tf = w_body * tf_body + w_context * tf_context``; ``score = sum idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b
  * dl / avgdl))`` with ``k1 = 1.2``, ``b = 0.75``, ``dl`` the document's token count over both columns and
  ``avgdl`` the vault-wide mean of it. Hits are returned best first, ties by id ascending, at most ``depth``.
  (PostgreSQL: ``ts_rank`` is not BM25; compute it from a per-term posting table or an extension, and keep the
  same ordering and tie-break. A backend whose stemmer differs from Porter ranks slightly differently; it
  must still be deterministic.)
- Recall computes that BM25 itself (numpy, per-term postings cached per data version; docs/recall.md), bit for
  bit: :meth:`RecallQueries.postings` gives each word's stem, its postings (tf per column; at least the mind's
  documents, by id or by ``RankRow.doc``), ``n`` and the agents' unverified documents' ``n``; ``rank_totals`` gives
  ``N`` and the total token count (``agents=True``: those documents'; recall weighs by people's, the difference);
  ``RankRow.length`` is ``dl``. :attr:`RecallQueries.bm25_style` names the summation the backend's ``bm25`` uses,
  which recall replays: ``"fts5"`` (each query word is a phrase, in query order, repeats counted; ``tf`` adds the
  column weight once per occurrence, body first; ``idf * (tf * (k1 + 1) / (tf + k1 * (...)))``) or ``"sql"`` (each
  distinct stem once, in code-point order; ``tf = w_body * tf_body + w_context * tf_context``; ``idf * tf * (k1 +
  1) / (...)``). ``bm25`` stays the reference the parity tests compare against.
- :meth:`RecallQueries.rank_rows` lists the mind's ranking documents with their structure, in id order.
- **"Now" does not enter the ranking**: both reads ignore time. Recall masks memories expired at its own "now"
  (from the candidates' ``expires_at``) after ranking, so a backend never filters by time here.
- Episodes with a ``thread`` and no ``seq`` get ``EpisodeTable.next_seq`` (1 + the largest ``seq`` of the
  thread in the mind, 0 for a new thread), computed by the caller inside its write transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from synapse_nb.store.history_base import ExportTable, HistoryTable, LinkTable, RevisionTable
from synapse_nb.store.records import (
    EXPORT_FIELDS,
    JSON_FIELDS,
    PAGE_SORTS,
    Candidate,
    Change,
    MemoryCounts,
    MemoryFilter,
    RankDigests,
    RankHit,
    RankRow,
    RankState,
    RefSource,
    TermPostings,
    View,
)

if TYPE_CHECKING:
    from pathlib import Path

    from synapse_nb.models import Checkpoint, Decision, Episode, Lesson, Memory, Note, Record
    from synapse_nb.models import Checkpoint as Ckp

__all__ = ["EXPORT_FIELDS", "JSON_FIELDS", "PAGE_SORTS", "Candidate", "Change", "CheckpointTable", "DecisionTable",
           "EpisodeTable", "ExportTable", "FlagTable", "HistoryTable", "KindTable", "LessonTable", "LinkTable",
           "MemoryCounts", "MemoryFilter", "MemoryTable", "MetaTable", "NoteTable", "Outbox", "RankHit", "RankRow",
           "RecallQueries", "RefSource", "RefTable", "RevisionTable", "SessionTable", "TermPostings", "TransferTable",
           "VaultStore", "View"]

R = TypeVar("R", bound="Record")


# -- the kind tables ------------------------------------------------------------------------------------------
class KindTable(Protocol[R]):
    """What every kind table offers. Reads take a :class:`View`; writes take records or field values."""

    def get(self, view: View, id: str) -> R | None:
        """The record with this exact id in ``view.mind``, if the view may read it."""

    def get_many(self, view: View, ids: Iterable[str]) -> dict[str, R]:
        """:meth:`get` of several ids in one read (one statement per few hundred ids): id -> record, in id order;
        ids the view may not read, of another mind or of no record are absent."""

    def mind_of(self, id: str) -> str | None:
        """The mind holding this exact id (any mind), or None."""

    def ids_from(self, mind: str, prefix: str, *, limit: int) -> builtins.list[str]:
        """Ids of the mind starting with ``prefix``, in id order, at most ``limit`` (every record, any view)."""

    def list(self, view: View, *, limit: int | None = None) -> builtins.list[R]:
        """Records of the view in the kind's default order (each table documents it)."""

    def count(self, view: View) -> int: ...

    def search(self, view: View, text: str, *, limit: int) -> builtins.list[R]:
        """Full-text search: best match first, then newest, then id; no word in ``text``: :meth:`list`."""

    def insert(self, record: R) -> None:
        """Store a new record (its id, mind and stamps set by the caller)."""

    def update(self, id: str, *, updated_at: str, **changes: Any) -> None:
        """Set fields of a record, named and typed as the record's fields, and its ``updated_at``."""
        ...

    def agents_before(self, view: View, before: str) -> builtins.list[R]:  # agents' records, changed before then
        ...

    def delete(self, id: str) -> None: ...


class MemoryTable(KindTable["Memory"], Protocol):
    """Memories. Default order: priority (critical first), newest, id descending."""

    def by_key(self, mind: str, category: str, key: str) -> Memory | None: ...

    def list(self, view: View, *, where: MemoryFilter = ..., limit: int | None = None) -> builtins.list[Memory]: ...

    def search(self, view: View, text: str, *, where: MemoryFilter = ..., limit: int) -> builtins.list[Memory]: ...

    def count(self, view: View, *, where: MemoryFilter = ...) -> int: ...

    def page(self, view: View, text: str, *, where: MemoryFilter, sort: str | None, descending: bool, offset: int,
             limit: int) -> tuple[builtins.list[Memory], int]:
        """One page and the total matching. ``sort`` is one of :data:`PAGE_SORTS` (None: best match first for a
        text with words, else priority then newest); ties end in id ascending."""
        ...

    def expiring(self, mind: str, after: str, until: str) -> builtins.list[Memory]:
        """Memories expiring in ``(after, until]``, soonest first."""
        ...

    def stats(self, mind: str, now: str) -> MemoryCounts: ...

    def delete_expired(self, mind: str, now: str) -> tuple[str, ...]:
        """Delete memories expired at ``now``; their ids, in order."""
        ...


class CheckpointTable(KindTable["Checkpoint"], Protocol):
    """Checkpoints. Default order: newest first, then id descending."""

    def latest(self, view: View, branch: str | None, *, automatic: bool = True, person: bool = False) -> Ckp | None:
        """The newest checkpoint saved on ``branch`` (None: saved without a branch); ``automatic=False``: the newest
        saved on purpose (:attr:`~synapse_nb.models.Checkpoint.automatic` ones left out); ``person``: a person's."""

    def list(self, view: View, *, branch: str | None = None, limit: int | None = None) -> builtins.list[Checkpoint]:
        """Checkpoints of one ``branch``, or of all when None."""

    def since(self, view: View, after: Ckp, *, limit: int | None) -> tuple[builtins.list[Ckp], int, int]:
        """The checkpoints saved on ``after``'s branch after it (newer, or as new with a greater id), people's first,
        each newest first, at most ``limit`` (None: all); how many there are in all, and how many are agents'."""


class DecisionTable(KindTable["Decision"], Protocol):
    """Decisions. Default order: newest first, then id descending; ``list(source=)``: one author's only."""

    def list(self, view: View, *, limit: int | None = None, source: str | None = None) -> builtins.list[Decision]: ...
    def search(self, view: View, text: str, *, tag: str | None = None, limit: int) -> builtins.list[Decision]: ...


class LessonTable(KindTable["Lesson"], Protocol):
    """Lessons. Default order: newest first, then id descending; by status ``approved``: most recently approved
    first. Status filters and the records' ``status`` are the effective status at ``view.now``."""

    def list(self, view: View, *, status: str | None = None, limit: int | None = None) -> builtins.list[Lesson]: ...

    def has_revert(self, mind: str, sha: str) -> bool:
        """Whether the mind has a lesson for this revert commit."""

    def holding_revert(self, mind: str, sha: str) -> tuple[str, str, str] | None:
        """(id, source, stored status) of the mind's lesson for this revert, or None (a person's read)."""

    def analysis_state(self, id: str) -> tuple[str, str | None] | None:
        """(stored status, who wrote the analysis) of a lesson, whatever the view; None when it does not exist."""

    def agent_pending(self, mind: str) -> int:
        """Pending lessons of the mind agents made, or a person's scan took over from an agent's (``first_by``)."""

    def pending_total(self, mind: str) -> int:
        """Pending lessons of the mind in all, whoever made them (counted past what the caller may read)."""

    def status_counts(self, mind: str, now: str) -> dict[str, int]:
        """How many lessons per effective status at ``now`` (statuses with none are left out)."""

    def expiring(self, mind: str, after: str, until: str) -> tuple[str, ...]:
        """Ids of approved lessons running out in ``(after, until]``, soonest first."""

    def run_out(self, mind: str, after: str, now: str) -> int:
        """How many approved lessons ran out in ``[after, now]`` (stored as expired or not yet)."""

    def expire(self, mind: str, now: str, updated_at: str) -> tuple[str, ...]:
        """Store the status ``expired`` on approved lessons whose time ran out at ``now``; their ids."""


class EpisodeTable(KindTable["Episode"], Protocol):
    """Episodes. Default order: newest first, then id descending; ``last(source="user")``: a person's latest."""

    def last(self, view: View, task_key: str, *, source: str | None = None) -> Episode | None: ...

    def history(self, view: View, task_key: str | None, *, limit: int | None) -> builtins.list[Episode]: ...

    def next_seq(self, mind: str, thread: str) -> int:
        """1 + the largest ``seq`` of the mind's episodes in ``thread`` (0 when the thread is new)."""
        ...


class NoteTable(KindTable["Note"], Protocol):
    """Notes. Default order: name."""

    def by_name(self, view: View, name: str) -> Note | None: ...


# -- everything else ----------------------------------------------------------------------------------------
class MetaTable(Protocol):
    """Vault settings and per-mind bookkeeping (values are JSON-able)."""

    def settings(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        """Saved values of these settings (all when None) by name; unsaved: absent; text not JSON: ``NotJson``."""
        ...

    def set_settings(self, values: Mapping[str, Any]) -> None: ...

    def agent_writes(self, since: str) -> int:
        """Agents' writes (history entries, proposed revisions) at ``since`` or later, every mind (PG: the login's)."""
        ...

    def agent_memories(self, mind: str) -> int:
        """How many memories of the mind an agent wrote (source agent)."""

    def agent_held(self, mind: str) -> tuple[int, int, int, int]:
        """What agents hold: (records in ``mind``, their text's bytes, records in every mind, bytes), kept counts."""

    def minds(self) -> tuple[str, ...]:
        """The minds holding a record of any kind, sorted (PG: those the login's row-level security shows)."""
    def scan_tips(self, scope: str) -> tuple[str, ...]:
        """Branch tips the last lesson scan reached (none before the first, or if malformed): ``scope`` a mind, or
        ``agent:<mind>`` (a team vault's is the agent login's)."""

    def set_scan_tips(self, scope: str, tips: Sequence[str]) -> None: ...


class SessionTable(Protocol):
    """What each recall session was given: (mind, session, id) -> content digest."""

    def seen(self, mind: str, session: str, ids: Sequence[str], *, lessons: bool = False) -> dict[str, str]:
        """id -> digest of what ``session`` was given of ``ids`` (``lessons``: and of every lesson, in one read)."""

    def mark(self, mind: str, session: str, pairs: Sequence[tuple[str, str]], now: str, *,
             new_since: str | None = None, new_limit: int = 0) -> None:
        """Record what ``session`` was given; with ``new_since``, a session new to the mind only while fewer than
        ``new_limit`` sessions of the mind were given something since then (one statement on a team vault)."""

    def prune(self, mind: str, before: str) -> int:
        """Forget entries recorded before ``before``; how many."""


class FlagTable(Protocol):
    """Marks left by ``verify(fix=True)``: ``dangling`` (missing file paths) and ``stale`` (commit shas)."""

    def of_mind(self, mind: str) -> dict[str, dict[str, Any]]:
        """{id: {flag: detail}}, ids and flags in order."""

    def dangling(self, ids: Sequence[str]) -> dict[str, builtins.list[str]]:
        """{id: missing paths} for those of ``ids`` flagged dangling."""
        ...

    def replace(self, mind: str, dangling: Mapping[str, Sequence[str]], stale: Mapping[str, Sequence[str]],
                updated_at: str) -> None:
        """Replace every flag of the mind by these."""
        ...


class RefTable(Protocol):
    def sources(self, mind: str) -> builtins.list[RefSource]:
        """Every lesson, checkpoint, decision and memory of the mind, with its files or text, by kind then id."""
        ...


class RecallQueries(RankDigests, Protocol):
    """Rows and statistics for the recall gate (the scoring itself lives in :mod:`synapse_nb.recall`)."""

    def count(self, *, agents: bool = False) -> int:
        """How many gate candidates the vault holds, all minds together (the N of the word statistics)."""
        ...

    def candidates(self, mind: str) -> builtins.list[Candidate]:
        """Every candidate of the mind (expired memories too), in id order."""
        ...

    def fetch(self, mind: str, ids_by_kind: Mapping[str, Iterable[str]]) -> builtins.list[Candidate]:
        """These candidates of the mind (unknown ids left out), in id order."""
        ...

    def doc_freq(self, terms: Sequence[str], *, agents: bool = False) -> dict[str, int]:
        """In how many candidates (all minds) each term occurs, as whole words, case-folded; absent: none."""
        ...

    def tag_counts(self, mind: str, tags: Sequence[str]) -> dict[str, int]:
        """How many records of the mind carry each tag; absent: none."""
        ...

    def tag_matches(self, mind: str, tags: Sequence[str]) -> builtins.list[tuple[str, str, int]]:
        """(id, tag, how many tags it carries) of the mind's records carrying these tags, by id then tag."""
        ...

    def key_matches(self, mind: str, keys: Sequence[str]) -> builtins.list[tuple[str, str]]:
        """(id, key) for memories whose key, and notes whose name, is one of ``keys``."""
        ...

    def rank_rows(self, mind: str, ids: Sequence[str] | None = None,
                  threads: Sequence[str] | None = None) -> builtins.list[RankRow]:
        """Every ranking document of the mind with its structure (thread, seq, actor, question), in id order.
        With ``ids`` or ``threads``: only the documents of these ids, of these threads, and of the threads these
        ids are in now (what a change to them can have changed: a record's context is the two before it)."""
        ...

    def rank_state(self) -> RankState | None:
        """Where the ranking table stands, durably: recall keys its structure arrays on disk by it (None: no such
        log, a team vault; recall keys them by :meth:`data_version`)."""
        ...

    def rank_changes(self, since: int, state: RankState) -> builtins.list[str] | None:
        """The ids (sorted, distinct) changed after generation ``since`` up to ``state``; None: not in the log."""
        ...

    def rank_logged(self, gen: int) -> str | None:
        """The id the change of generation ``gen`` logged (None: not in the log)."""

    def rank_cache_dir(self) -> Path | None:
        """The folder beside the database for recall's structure arrays (None: a team vault; read-only: read)."""
        ...

    def bm25(self, mind: str, words: Sequence[str], *, depth: int, w_body: float = 1.0,
             w_context: float = 0.2) -> builtins.list[RankHit]:
        """The mind's best ``depth`` ranking documents for the OR of ``words`` (already lower-case, folded, stop
        words removed; the backend stems them), by BM25 as the module docstring defines it: best first, ties by
        id ascending. No words: no hits. The N and average length are the whole vault's, all minds."""
        ...

    def rank_count(self, mind: str) -> tuple[int, int]:
        """(ranking documents of the mind, ranking documents of the vault)."""

    #: How ``bm25`` sums (``"fts5"`` or ``"sql"``; see the module docstring): recall replays it exactly.
    bm25_style: str
    #: True when every read is a network round trip (a team vault): the walk then reads the stamps of the records
    #: it needs in one statement and reuses records kept from earlier data versions, rather than reading each kind's
    #: records again after every write. A local store reads the records themselves (as cheap as their stamps).
    remote: bool

    def postings(self, mind: str, words: Sequence[str]) -> dict[str, TermPostings]:
        """Each word's stem and postings (:class:`TermPostings`: at least the mind's ranking documents holding it;
        every word given is a key; a word held by no document has empty postings). Recall reads them in one
        snapshot with ``rank_rows`` and ``rank_totals``."""
        ...

    def rank_totals(self, *, agents: bool = False) -> tuple[int, int]:
        """(ranking documents of the whole vault, their total token count over both columns): BM25's N and
        N x avgdl, exactly as ``bm25`` reads them; ``agents``: of the agents' unverified documents alone."""


class Outbox(Protocol):
    """Index upkeep: ids whose candidate text changed since the retrieval index last applied them."""

    def has_pending(self) -> bool: ...

    def pending(self, limit: int) -> builtins.list[tuple[str, int]]:
        """(id, sequence number), oldest change first."""

    def ack(self, entries: Sequence[tuple[str, int]]) -> None:
        """Forget these exact (id, sequence) pairs (an id changed again since keeps its newer entry)."""
        ...

    def high_water(self) -> int:
        """The newest sequence number queued (0 when none)."""
        ...

    def ack_through(self, seq: int) -> None:
        """Forget every entry up to ``seq``."""
        ...

    def wait(self, timeout: float) -> bool:
        """Block until a change may be pending (True) or ``timeout`` seconds passed (False): what a follower
        waits on between syncs. PostgreSQL: a ``LISTEN`` wake-up from the committing transaction's ``NOTIFY``
        (the reading still goes by the snapshot rule); SQLite: polls :meth:`has_pending`."""
        ...

    def docs(self, ids: Sequence[str]) -> builtins.list[Candidate]:
        """Candidates (any mind) for these ids; ids no longer present are left out."""
        ...

    def all_docs(self) -> Iterator[Candidate]:
        """Every candidate of the vault in id order, streamed."""
        ...


class TransferTable(Protocol):
    """Export and import in the documented format (:data:`EXPORT_FIELDS`)."""

    def rows(self, kind: str) -> Iterator[dict[str, Any]]:
        """Every record of the kind (all minds) as an export document without ``kind``, in id order."""
        ...

    def to_record(self, kind: str, doc: Mapping[str, Any]) -> Record:
        """The record an export document describes (raises ValidationError when a field is not in the
        format's encoding, e.g. a priority outside 0-3)."""
        ...

    def insert(self, kind: str, doc: Mapping[str, Any]) -> bool:
        """Insert an export document as it is; False when the id exists with identical fields (nothing written).
        Raises ConflictError when the id, or a unique key, holds something else."""
        ...

    def advance_clock(self, ts: str) -> None:
        """Make later stamps come after ``ts`` (imported records keep their times)."""
        ...


class VaultStore(Protocol):
    """The system of record of one vault (see the module docstring for the contract)."""

    @property
    def memories(self) -> MemoryTable: ...

    @property
    def checkpoints(self) -> CheckpointTable: ...

    @property
    def decisions(self) -> DecisionTable: ...

    @property
    def lessons(self) -> LessonTable: ...

    @property
    def episodes(self) -> EpisodeTable: ...

    @property
    def notes(self) -> NoteTable: ...

    @property
    def meta(self) -> MetaTable: ...

    @property
    def sessions(self) -> SessionTable: ...

    @property
    def flags(self) -> FlagTable: ...

    @property
    def refs(self) -> RefTable: ...

    @property
    def recall(self) -> RecallQueries: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def transfer(self) -> TransferTable: ...

    @property
    def history(self) -> HistoryTable: ...

    @property
    def revisions(self) -> RevisionTable: ...

    @property
    def links(self) -> LinkTable: ...

    @property
    def exports(self) -> ExportTable: ...

    def scrub(self) -> None:
        """After a deletion, in the same call: leave none of the deleted text in the store's files (SQLite: merge the
        FTS5 indexes, checkpoint and truncate the WAL; ``secure_delete`` zeroes freed pages). Best effort."""
        ...

    @property
    def schema_version(self) -> int: ...

    @property
    def readonly(self) -> bool: ...

    @property
    def location(self) -> str:
        """Where the vault's records are, for messages (a file path, a database URL without secrets)."""
        ...

    @property
    def in_transaction(self) -> bool: ...

    def table(self, kind: str) -> KindTable[Any]:
        """The table of a kind ("memory" -> ``memories``)."""
        ...

    def transaction(self) -> AbstractContextManager[object]: ...

    def snapshot(self, *, lazy: bool = False) -> AbstractContextManager[object]:
        """Several reads that see one committed state. ``lazy``: a shared store may answer the state's version
        (and its clock) first and open the transaction only when a read inside needs the server; if the vault
        changed in between it raises :class:`~synapse_nb.errors.SnapshotMoved` before any such read (the caller
        reads again in an ordinary snapshot). A caller that serves every read from caches keyed by
        :meth:`data_version` then costs one round trip. SQLite ignores it."""
        ...

    def after_commit(self, callback: Callable[[], None]) -> None: ...

    def on_rollback(self, callback: Callable[[], None]) -> None: ...

    def stamp(self, now: str) -> str: ...

    def on_change(self, listener: Callable[[builtins.list[Change]], None], *, before: bool = False) -> None: ...

    def data_version(self) -> tuple[int, ...]:
        """Changes whenever anyone commits (for caches of query results; in a snapshot, the snapshot's). Its first
        number names the committed state for every connection and machine (recall's ``version``: PostgreSQL's
        ``gate_stats.version``, SQLite's ``meta`` row ``state_version``); the rest, if any, is this connection's."""
        ...

    def changes_between(self, old: tuple[int, ...], new: tuple[int, ...]) -> builtins.list[Change] | None:
        """The records (kind, id, deleted) that commits between two :meth:`data_version` answers changed, when the
        store knows them (SQLite: this connection's own recent commits); None when it cannot tell (another
        connection or machine wrote, or the commits are too far back), and the caller reads afresh. A commit that
        changed no record (a setting, a flag) adds nothing, yet moves the version."""
        ...

    def snapshot_now(self) -> str | None:
        """Inside a snapshot of a shared store: the server's clock when the snapshot began (fixed-width UTC text),
        the "now" every machine reading that state uses. None elsewhere (SQLite: always)."""
        ...

    def for_actor(self, actor: str) -> VaultStore:
        """This store acting for ``actor`` ("user" or "agent"). A backend that enforces the human gate itself
        (PostgreSQL: the agent's database role) returns a store bound to that role; one that relies on the kind
        managers alone (SQLite, one user's file) returns itself."""
        ...

    def integrity_check(self) -> str:
        """"ok", or what is wrong."""
        ...

    def close(self) -> None: ...
