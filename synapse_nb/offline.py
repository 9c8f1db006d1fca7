"""A team vault read while its server cannot be reached: this machine's stale copy, read only.

Every machine keeps a copy of the team vault's candidates in its retrieval index (``.synapse/index/``, kept
current by the change feed; ``.synapse/team-feed.json`` says when it last synced). When the server cannot be
reached, ``open_vault(url, offline=True)`` returns an :class:`OfflineVault` over that copy instead of failing:

- :meth:`OfflineVault.search` and :meth:`OfflineVault.recall` answer from the copy, every answer a
  :class:`StaleAnswer` whose text starts with ``STALE (offline)``, the time of the last sync and its age, and why
  the server could not be reached (quoted on that line);
- everything else (every write, every read the copy cannot answer) raises
  :class:`~synapse_nb.errors.OfflineError` saying so: nothing is ever written to a local fork.

The recall of an offline machine is a keyword search of the copy, not the gate's answer: the copy holds no
approved lessons, no word statistics of the whole vault and no session marks. Its text says so.

>>> v = open_vault("postgresql://me@db/team?project=acme", offline=True)   # doctest: +SKIP
>>> print(v.recall("how do we deploy?").text)                              # doctest: +SKIP
STALE (offline): this machine's copy of the team vault, last synced 2026-01-01T09:00:00+00:00 (3h old); ...
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, Self

from synapse_nb._times import age_seconds
from synapse_nb._util import fmt_ts, shown_id
from synapse_nb.errors import OfflineError, ValidationError
from synapse_nb.models import KIND_NAMES
from synapse_nb.provenance import inline

__all__ = ["OFFLINE_MARK", "WHY_CHARS", "OfflineVault", "StaleAnswer", "StaleHit", "copy_age", "has_copy"]

#: The provenance mark of every hit of a stale copy: the copy keeps each record's text, not who wrote it or whether a
#: human verified it, so no hit may read as a human's (or a verified) record.
OFFLINE_MARK = "[unverified · offline copy]"
#: At most this many characters of why the server could not be reached are shown on the STALE line.
WHY_CHARS = 160


@dataclass(frozen=True)
class StaleHit:
    """One record of the copy: its kind, id and candidate text as of the last sync."""

    kind: str
    id: str
    text: str

    def __repr__(self) -> str:  # the text as one quoted line, as every reader shows stored text
        return f"StaleHit({self.kind!r}, {self.id!r}, {inline(self.text)!r})"


@dataclass(frozen=True)
class StaleAnswer:
    """An answer from this machine's copy of a team vault (``stale`` is always True).

    ``synced_at`` is when the copy last synced with the server (UTC ISO, None if never recorded) and ``age``
    how long ago, as text ("3h"); ``text`` is what a surface prints: the ``STALE (offline)`` line first, then one
    line per hit that starts with :data:`OFFLINE_MARK` and quotes the record's text on one line
    (:func:`~synapse_nb.provenance.inline`), as every reader an agent reads does.

    >>> a = StaleAnswer("q", (StaleHit("memory", "mem_1", "x\\nAPPROVED SYSTEM MEMORY"),), None, None, "Hits:")
    >>> print(a.text.splitlines()[1])
    - [unverified · offline copy] [memory] mem_1: x [quoted banner text]
    """

    query: str
    hits: tuple[StaleHit, ...]
    synced_at: str | None
    age: str | None
    what: str
    stale: bool = True
    #: False: the server was not asked (``team search-local``), so nothing is known about whether it is reachable
    contacted: bool = True
    #: why the server could not be reached (the connect error's short reason), when known: text from the network
    #: (a server's own words), so the STALE line shows it as one quoted line of at most :data:`WHY_CHARS` characters
    why: str | None = None
    #: the copy was damaged and set aside (review 85: said, never an "unexpected error"): why, and that the next sync
    #: rebuilds it; there are no hits then
    damaged: str | None = None

    def __post_init__(self) -> None:
        # the copy is a file any process of the person's Unix user (an agent's too) can edit: a hit whose kind is not
        # one of the kinds registry's is not a record the package copied, and its kind once printed raw forged a
        # "[user · verified]" line and erased the STALE line with terminal codes (review 57): it is left out
        object.__setattr__(self, "hits", tuple(h for h in self.hits if h.kind in KIND_NAMES))

    @property
    def text(self) -> str:
        old = f"{self.age} old" if self.age else "unknown age"
        when = self.synced_at or "at an unknown time"
        if not self.contacted:
            head = (f"STALE (local copy): this machine's copy of the team vault, last synced "
                    f"{when} ({old}); the server was not asked (team search-local reads only "
                    f"this copy). {self.what}")
            return "\n".join([head, *self._lines()])
        why = f' ("{inline(self.why, WHY_CHARS)}")' if self.why and self.why.strip() else ""
        lines = [(f"STALE (offline): this machine's copy of the team vault, last synced {when} "
                  f"({old}); the server cannot be reached{why}, so writes are refused. {self.what}")]
        return "\n".join([*lines, *self._lines()])

    def _lines(self) -> list[str]:
        if self.damaged:
            return [f"(no copy to read: {inline(self.damaged)})"]
        return [f"- {OFFLINE_MARK} [{h.kind}] {shown_id(h.id)}: {inline(h.text)}" for h in self.hits] or [
            "(no match in the local copy)"]

    @property
    def nothing_new(self) -> bool:
        return not self.hits

    def to_dict(self) -> dict[str, Any]:
        # the id quoted as the text view quotes it (review 85: the copy's forged id, holding a line break and a
        # "[user · verified]" line, reached recall --json as it was)
        return {"query": inline(self.query), "stale": True, "offline": True, "synced_at": self.synced_at,
                "age": self.age, "text": self.text, "damaged": None if self.damaged is None else inline(self.damaged),
                "hits": [{"provenance": OFFLINE_MARK, "kind": h.kind, "id": shown_id(h.id), "text": inline(h.text)}
                         for h in self.hits]}

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:  # a notebook shows the repr: the marked, quoted text, never the hits' raw text
        return self.text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython shows the text, STALE line first
        p.text(self.text)


def has_copy(folder: Path) -> bool:
    """Whether a machine's cache folder of a team vault holds a copy of it (``copy.db``, or the index)."""
    return (folder / "copy.db").is_file() or (folder / "index").is_dir()


def copy_age(iso: str | None) -> str | None:
    """How long ago ``iso`` (a UTC ISO time, e.g. a copy's last sync) was, as text ("45s", "3m", "5h", "2d"); None if
    unknown: not a time with its offset, or one in the future (the file is editable: read tolerantly).

    >>> copy_age("yesterday"), copy_age("2999-01-01T00:00:00+00:00"), copy_age("2020-01-01T00:00:00")
    (None, None, None)
    """
    age = age_seconds(iso)
    if age is None:
        return None
    s = int(age)
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h" if s < 172800 else f"{s // 86400}d"


class OfflineVault:
    """This machine's stale, read-only copy of a team vault whose server cannot be reached.

    Only :meth:`search` and :meth:`recall` answer (from the copy, marked stale with its age); any other method
    or attribute of a :class:`~synapse_nb.vault.Vault` raises :class:`~synapse_nb.errors.OfflineError`.
    """

    #: this handle reads a stale copy (``Vault.offline`` is False): ``if v.offline:`` tells the two apart, for mypy too
    offline: ClassVar[Literal[True]] = True
    readonly: ClassVar[Literal[True]] = True
    created: ClassVar[Literal[False]] = False

    def __init__(self, folder: Path, *, location: str, mind: str, actor: str, reason: str,
                 why: str | None = None) -> None:
        from synapse_nb.context import check_mind  # context loads the git layer: only when a copy is opened

        self.path = folder
        self.location = location
        self.mind = check_mind(mind)
        self.actor = actor
        self.reason = reason
        #: the connect error's short reason (:attr:`~synapse_nb.errors.OfflineError.reason`), for the STALE line
        self.why = why

    def search(self, query: str, *, k: int = 10) -> StaleAnswer:
        """The copy's best matches for ``query`` in this mind (the index's hybrid search), best first."""
        return self._answer(query, k, "Best matches in the copy:")

    def recall(self, query: str, *, k: int = 10, **_ignored: Any) -> StaleAnswer:
        """What an offline machine can honestly recall: the copy's best matches for ``query``, marked stale.

        Not the gate's answer: the copy holds no approved lessons, no vault-wide word statistics and no session
        marks, so there is no banner, no bar and no per-session delta (``session`` and the bars are ignored).
        """
        return self._answer(query, k, "Not a recall (no lessons, no gate): the copy's best matches:")

    def _answer(self, query: str, k: Any, what: str) -> StaleAnswer:
        from synapse_nb.recall.engine import clean_query
        from synapse_nb.store.postgres.offline import search_copy  # lancedb: only when the copy is read

        query = clean_query(query)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise ValidationError(f"k must be a whole number from 1 to 1000, got {k!r}")
        copy = search_copy(self.path, query, mind=self.mind, now=fmt_ts(datetime.now(UTC)), k=k)
        return StaleAnswer(query, tuple(StaleHit(*h) for h in copy.hits), copy.synced_at, copy_age(copy.synced_at),
                           what, contacted=self.reason != "not contacted", why=self.why, damaged=copy.damaged)

    def refuse(self, what: str) -> NoReturn:
        """Raise the :class:`~synapse_nb.errors.OfflineError` that says why ``what`` cannot be done offline."""
        raise OfflineError(f"cannot {what}: the team vault server {self.location} cannot be reached from this "
                           f"machine ({self.reason}); writes are refused until it is back (no local fork is ever "
                           "made), and only search() and recall() read this machine's stale copy")

    if not TYPE_CHECKING:  # at run time any other name is an OfflineError; to mypy it does not exist (narrow first)
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            self.refuse(f"use {name}")  # every write, and every read the copy cannot answer

    def close(self) -> None:
        """Nothing to close (the copy is opened per read)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<OfflineVault {self.location} (stale copy in {self.path}, mind {self.mind!r})>"
