"""People's records first, within a limit, saying what the limit left out: the rule of every listing an agent can
fill (the CLI's listings, ``memory expiring`` and ``%memory expiring``, the id lines of ``memory status``).

Whose a record stands as is :func:`synapse_nb.provenance.human_record` (what a person wrote, a memory a person
verified, a lesson a person approved). Review 70 F3: 21 agent decisions pushed a person's out of ``decision list``
and nothing said so. Review 73 F3: 250 agent memories expiring sooner put the person's expiring memory at line 250 of
``%memory expiring`` and last of ``memory status``'s one line of every expiring id.

Standard library only (plus :mod:`synapse_nb.errors`, :mod:`synapse_nb._util` and :mod:`synapse_nb.provenance`, which
are too): the CLI's ``--help`` loads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from synapse_nb._util import plural
from synapse_nb.errors import ValidationError
from synapse_nb.provenance import human_record

if TYPE_CHECKING:  # pragma: no cover
    from synapse_nb.models import Record

__all__ = ["People", "people_first"]

R = TypeVar("R", bound="Record")
T = TypeVar("T")

def people_first(records: Iterable[T]) -> list[T]:
    """``records`` with people's first (:func:`~synapse_nb.provenance.human_record`), each side in the given order.

    >>> from synapse_nb.models import Decision
    >>> d = [Decision(id=f"dec_{i}", mind="m", created_at="", updated_at="", decision="d", source=s)
    ...      for i, s in enumerate(["agent", "user", "agent", "user"])]
    >>> [r.id for r in people_first(d)]
    ['dec_1', 'dec_3', 'dec_0', 'dec_2']
    """
    return sorted(records, key=lambda r: not human_record(r))  # stable: each side in the given order


@dataclass(frozen=True)
class People(Generic[R]):
    """A listing within ``--limit``, people's records first, as recall and the restore pack put them
    (:func:`~synapse_nb.provenance.human_record`: what a person wrote, a memory a person verified), each side in
    the order the vault gave; ``source`` keeps one author's records only (``user``: a person's, ``agent``:
    agents'). Review 70: 21 agent decisions pushed a person's out of ``decision list`` (newest first, 20 shown),
    its ``--search`` and ``--tag``, and nothing said so. ``more`` says how many the limit left out.

    >>> from synapse_nb.models import Decision
    >>> d = [Decision(id=f"dec_{i}", mind="m", created_at="", updated_at="", decision="d", source=s)
    ...      for i, s in enumerate(["agent", "agent", "user"])]
    >>> p = People.of(d, 2, "decision", "decisions")
    >>> [r.id for r in p.records], p.left_out, p.more
    (['dec_2', 'dec_0'], 1, '(… 1 more decision not listed: -n 0 lists all)')
    """

    records: list[R]
    left_out: int
    noun: str
    plural_form: str
    #: False when the records were read up to :meth:`search_read` (a search: the store gives people's first and
    #: stops at the limit plus one), so ``left_out`` > 0 says only that more match, not how many.
    counted: bool = True

    @staticmethod
    def search_read(limit: int | None, source: str | None) -> int:
        """How many matches a search command reads: one past ``limit`` (the store's search gives people's records
        first, so the first ``limit`` are the listing, and one more says that more match), all of them when there
        is no limit or when ``source`` keeps one author's only (a search does not filter by author). A vault of a
        million memories answers ``memory search deploy`` without reading every match.

        >>> People.search_read(20, None), People.search_read(None, None), People.search_read(20, "agent")
        (21, 1000000000, 1000000000)
        """
        return 10**9 if limit is None or source is not None else min(limit + 1, 10**9)

    @classmethod
    def of(cls, records: Iterable[R], limit: int | None, noun: str, plural_form: str,
           source: str | None = None, *, read: int | None = None) -> People[R]:
        """``records`` in the vault's order (``read``: how many a search asked for, :meth:`search_read`)."""
        if limit is not None and not 1 <= limit <= 10**9:  # --limit 0 (all) arrives as None
            raise ValidationError(f"--limit must be 0 (all) or a whole number up to 1,000,000,000, got {limit}")
        src = None if source is None else source.strip().lower()
        if src not in (None, "user", "agent"):
            raise ValidationError(f"--source {source!r} is not accepted; use one of: user, agent")
        found = list(records)
        kept = people_first(r for r in found if src is None or _source(r) == src)
        cut = kept if limit is None else kept[:limit]
        counted = read is None or len(found) < read
        return cls(cut, len(kept) - len(cut), noun, plural_form, counted)

    @property
    def more(self) -> str:
        """What the limit left out, as a line (empty when nothing was)."""
        if not self.left_out:
            return ""
        if not self.counted:
            return f"(… more {self.plural_form} match, not listed: -n 0 lists all)"
        what = plural(self.left_out, f"more {self.noun}", f"more {self.plural_form}")
        return f"(… {what} not listed: -n 0 lists all)"


def _source(record: Any) -> str | None:
    return getattr(record, "source", None)
