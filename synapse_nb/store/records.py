"""The plain values that cross the store seam at run time: views, filters, candidate rows, the export format.

They are named tuples: immutable, cheap to build (a recall pool holds thousands of candidates), and cheap to
define (``import synapse_nb`` defines them).

:mod:`synapse_nb.store.base` states the seam itself (the :class:`~synapse_nb.store.base.VaultStore` protocol
and its contract) and re-exports these; code that only needs the values imports them from here, so
``import synapse_nb`` does not build the protocol classes.

Data format: :data:`EXPORT_FIELDS` names the fields of one exported record per kind (``memory export``): they
are the system of record's columns, and :data:`JSON_FIELDS` those holding JSON values. A second backend exports
and imports exactly these documents, so a vault moves between backends through an export.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from synapse_nb.models import KINDS

if TYPE_CHECKING:  # numpy loads with recall, never with ``import synapse_nb``
    from typing import TypeAlias

    import numpy as np
    from numpy.typing import NDArray

    #: Numbers of a posting list: Python ints, or a numpy array of them (a backend computing them with numpy).
    Ints: TypeAlias = Sequence[int] | NDArray[np.int64]

__all__ = ["EXPORT_FIELDS", "JSON_FIELDS", "OPTIONAL_FIELDS", "PAGE_SORTS", "Candidate", "Change", "MemoryCounts",
           "MemoryFilter", "NotJson", "RankDigests", "RankHit", "RankRow", "RankState", "RefSource", "TermPostings",
           "View"]

#: One change a committed transaction made: (kind, id, deleted).
Change = tuple[str, str, bool]

#: Fields of an exported record, per kind (the export format; see the module docstring): the registry's columns.
EXPORT_FIELDS: dict[str, tuple[str, ...]] = {k.name: k.fields for k in KINDS}
#: Fields added to the format after its first version: an export that lacks them imports them as null.
OPTIONAL_FIELDS: dict[str, tuple[str, ...]] = {k.name: k.optional_fields for k in KINDS if k.optional_fields}
#: Fields holding JSON values (lists, objects) in an exported record, per kind.
JSON_FIELDS: dict[str, tuple[str, ...]] = {k.name: k.json_fields for k in KINDS}
#: Orders :meth:`MemoryTable.page` accepts (the id always breaks ties, so a page is stable).
PAGE_SORTS: tuple[str, ...] = ("priority", "updated", "created", "category", "key", "content", "verified", "source",
                               "expires", "id")


class View(NamedTuple):
    """Who reads, and when: every read of a kind table takes one.

    Attributes
    ----------
    mind : the mind whose records are read.
    now : "now" as fixed-width UTC text: memory expiry and the effective lesson status are judged at it.
    in_force_only : lessons only: read approved lessons still in force at ``now`` and nothing else (what an
        agent may read). The lessons manager sets it; other tables ignore it.
    """

    mind: str
    now: str
    in_force_only: bool = False


class NotJson(NamedTuple):
    """A stored setting whose text is not JSON (written by hand into ``meta``: an explicit edit of the database).

    :meth:`~synapse_nb.store.base.MetaTable.settings` gives it instead of raising, so no reader fails on it;
    :mod:`synapse_nb.settings` reads it as the setting's default and says so, quoting ``text``. Written back
    (the as-of copy of a vault) it is stored as the same text.
    """

    text: str


class MemoryFilter(NamedTuple):
    """Which memories a listing, search, count or page keeps (``None``: no condition)."""

    unexpired: bool = False  # only memories not expired at ``View.now``
    category: str | None = None
    tag: str | None = None  # a tag in stored form (lower-case)
    priority: str | None = None  # critical | high | normal | low
    verified: bool | None = None
    source: str | None = None  # user | agent


class MemoryCounts(NamedTuple):
    """Memories of a mind: all, verified, and expired at the time asked."""

    total: int
    verified: int
    expired: int


class Candidate(NamedTuple):
    """One record as the recall gate and the retrieval index see it: its kind, id, mind and gate text.

    ``expires_at`` is set for memories only (recall masks expired ones at scoring time).
    """

    kind: str
    id: str
    mind: str
    text: str
    updated_at: str
    expires_at: str | None


class RefSource(NamedTuple):
    """A record that may refer to files: its file list (lessons, checkpoints) or its text (memories, decisions)."""

    kind: str
    id: str
    updated_at: str
    files: tuple[str, ...] = ()
    text: str = ""


#: How much of a threaded record's gate text the ranking rows carry (:attr:`RankRow.head`).
HEAD_CHARS = 200


class RankRow(NamedTuple):
    """One ranking document's place in its mind's structure (recall's structure step reads these).

    ``thread`` is None for a record outside any thread (it is ranked by BM25 alone); ``seq`` its order in the
    thread; ``actor`` who said or did it (None: unknown); ``question`` whether its gate text holds a ``?``;
    ``length`` its token count over both columns (BM25's ``dl``); ``doc`` the backend's number for it when
    :class:`TermPostings` name documents by number (-1: they name them by id); ``expires_at`` a memory's expiry
    (None: none, or not a memory), read with the rows so recall masks expired memories without a read per query;
    ``head`` the first :data:`HEAD_CHARS` characters of the gate text of a record in a thread that holds no ``?``
    (else None): recall reads from it whether the message asks without a question mark or is a back-channel turn
    (``recall/asks.py``); ``agent`` whether it is an agent's record no person verified
    (:func:`~synapse_nb.provenance.agents_unverified`): recall finds and judges people's records as if those were
    not there (``recall/bm25.py``'s people's candidates, the walk's people's margin).
    """

    kind: str
    id: str
    thread: str | None
    seq: int | None
    actor: str | None
    question: bool
    length: int = 0
    doc: int = -1
    expires_at: str | None = None
    head: str | None = None
    agent: bool = False


class RankState(NamedTuple):
    """Where a local vault's ranking table stands, the same for every process that reads the file (schema v5's
    ``rank_log``): ``uid`` the vault's own random id, ``gen`` the latest change's generation (0: none logged),
    ``last`` the id that change logged (a second check that two states of one generation are the same state),
    ``first`` the oldest generation the log still holds (changes since an older one are no longer known)."""

    uid: str
    gen: int
    last: str
    first: int


class RankDigests(Protocol):
    """The digests of recall's rank files (:mod:`synapse_nb.recall.rankfile`), kept in the vault's database so that a
    file rewritten on disk is no file (review 58; SQLite schema v10's ``rank_files``). Part of
    :class:`~synapse_nb.store.base.RecallQueries`; a team vault keeps no file: () and False."""

    def rank_digest(self, mind: str) -> tuple[str, ...]:
        """The SHA-256s (hex) a file of the mind's in ``rank_cache_dir()`` may have: the one kept for the file last
        written, and the one before it (a reader between a digest's write and its file's rename reads that file;
        an older honest file is patched forward by the log). (): none; a file is used only when its digest is one
        of these."""
        ...

    def keep_rank_digest(self, mind: str, gen: int, digest: str) -> bool:
        """Keep the digest of the mind's file about to be written at generation ``gen``, in a short write of its own
        that never waits for another writer and moves no data version of this process; False: not kept (the write
        lock busy, a read-only vault, inside a snapshot), and the file is then not written."""
        ...


class TermPostings(NamedTuple):
    """One query word's postings among a mind's ranking documents (recall computes BM25 from these).

    ``stem`` is the term the backend indexes the word as (None: the word is not exactly one term of the backend's
    tokenizer, so recall asks :meth:`~synapse_nb.store.base.RecallQueries.bm25` instead); the documents holding it
    — at least all of the mind's; recall ignores the others — by id (``ids``) or, when ``docs`` is given, by
    :attr:`RankRow.doc` (``ids`` then empty), each with its count in their ``body`` (``tf_body``) and ``context``
    (``tf_context``); ``n_vault`` the ranking documents of the whole vault (all minds) holding it, ``n_agents`` those
    of them an agent wrote that no person verified (``RankRow.agent``): recall weighs by people's (docs/recall.md).
    """

    stem: str | None
    ids: Sequence[str]
    tf_body: Ints
    tf_context: Ints
    n_vault: int
    docs: Ints | None = None
    n_agents: int = 0


class RankHit(NamedTuple):
    """One full-text ranking hit: a record id and its BM25 score (positive, larger is better)."""

    id: str
    score: float
