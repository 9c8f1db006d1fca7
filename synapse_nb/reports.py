"""What a vault reports about itself: :class:`Status` (``memory status``) and :class:`PruneReport` (``prune()``).

Both are re-exported by :mod:`synapse_nb.models`, where the records are; they are apart because they describe a
vault, not a record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from synapse_nb._util import plural
from synapse_nb.provenance import file_names, md_fenced, quoted
from synapse_nb.render import NOT_IN_FORCE

__all__ = ["PruneReport", "Status"]

#: The most ids one line of a report lists (``memory status``'s expiring memories, pending lessons, dangling
#: records); people's come first and the rest are counted.
MOST_IDS = 10


def ids_line(ids: Sequence[str], rest: str, most: int = MOST_IDS) -> str:
    """Ids as one line, at most ``most`` of them (give them people's first), the rest counted, ``rest`` saying where
    they are all listed.

    >>> ids_line(["a", "b"], "x --json"), ids_line([f"m{i}" for i in range(12)], "x --json", most=2)
    ('a, b', 'm0, m1, … 10 more (x --json lists all)')
    """
    shown = ", ".join(ids[:most])
    return shown if len(ids) <= most else f"{shown}, … {len(ids) - most:,} more ({rest} lists all)"


#: How a status names the open pairs of two agents' unverified records (one, many), counted apart from the person's
AGENTS_PAIRS = ("open conflict between agents' unverified records", "open conflicts between agents' unverified records")

#: Where every id of a :class:`Status` line is listed (its text shows the first few of each, people's first)
ALL_IDS = "synapse-nb memory status --json"


@dataclass(frozen=True)
class Status:
    """Counts per kind and state, pending lessons and what expires soon. Each tuple of ids gives people's records
    first (:func:`synapse_nb.people.people_first`); the text shows the first few of each (:func:`ids_line`)."""

    vault_path: str
    mind: str
    actor: str
    counts: dict[str, dict[str, int]]
    pending_lessons: tuple[str, ...]
    expiring_memories: tuple[str, ...]
    expiring_lessons: tuple[str, ...]
    schema_version: int
    #: records whose files were missing at the last ``verify(fix=True)``
    dangling: tuple[str, ...] = ()
    #: records whose files changed after they were written (at the last ``verify(fix=True)``)
    possibly_stale: tuple[str, ...] = ()
    #: files of the vault folder git tracks (repository-relative): a checkout, stash or revert can replace them
    tracked_by_git: tuple[str, ...] = ()
    #: the one command that untracks the vault (run at the repository root), when git tracks it
    untrack_command: str | None = None
    #: why the vault is borrowed and what to do (:mod:`synapse_nb.borrowed`), None for a vault of one's own
    borrowed: str | None = None
    #: lessons approved in the borrowed vault that no human here re-approved yet (not in force)
    awaiting_local_approval: tuple[str, ...] = ()
    #: a borrowed vault's stored settings that are not in force, one line each (``name: stored "X", in force Y``:
    #: :meth:`synapse_nb.settings.Settings.not_in_force_lines`)
    settings_not_in_force: tuple[str, ...] = ()
    #: agents' revisions and duplicate or contradicting pairs waiting for a human (None in an agent's view): pairs
    #: with a person's record in them
    pending_revisions: int | None = None
    open_conflicts: int | None = None
    #: open pairs of two agents' unverified records, counted apart (review 83: not a person's queue; None in an
    #: agent's view)
    agents_conflicts: int | None = None

    @property
    def git_warning(self) -> str | None:
        """One line for a vault git tracks: the risk, and the command that untracks it; None otherwise."""
        if not self.tracked_by_git:
            return None
        n = len(self.tracked_by_git)
        # each name quoted: a file's name is anyone's choice (review 23: an agent's `git add -f` of a file named with
        # line breaks and a forged banner drew a banner in the person's `memory status`)
        first = file_names(self.tracked_by_git[:1])
        return (f"warning: git tracks this vault ({n} file{'s' if n != 1 else ''}, e.g. {first}): "
                "a revert, stash or checkout can replace or delete your memory. Untrack it (the files stay on disk) "
                f"at the repository root with: {self.untrack_command}  (then commit)"
                + ("; a borrowed vault stays borrowed when untracked (adopting it is a human's choice: synapse-nb "
                   "lessons adopt)" if self.borrowed else ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "vault_path": self.vault_path, "mind": self.mind, "actor": self.actor, "counts": self.counts,
            "pending_lessons": list(self.pending_lessons), "expiring_memories": list(self.expiring_memories),
            "expiring_lessons": list(self.expiring_lessons), "schema_version": self.schema_version,
            "dangling": list(self.dangling), "possibly_stale": list(self.possibly_stale),
            "tracked_by_git": quoted(list(self.tracked_by_git)), "untrack_command": self.untrack_command,
            "borrowed": self.borrowed, "awaiting_local_approval": list(self.awaiting_local_approval),
            "settings_not_in_force": list(self.settings_not_in_force),
            **({} if self.pending_revisions is None else {"pending_revisions": self.pending_revisions,
                                                          "open_conflicts": self.open_conflicts,
                                                          "agents_conflicts": self.agents_conflicts or 0}),
        }

    def __str__(self) -> str:
        lines = [f"vault {self.vault_path} (mind {self.mind}, actor {self.actor}, schema v{self.schema_version})"]
        if self.borrowed:
            lines.insert(0, self.borrowed)
        if self.awaiting_local_approval:
            lines.append(f"  approved elsewhere, awaiting local approval (not in force): "
                         f"{ids_line(self.awaiting_local_approval, ALL_IDS)}")
        if self.settings_not_in_force:
            lines.append(f"  {NOT_IN_FORCE}: {'; '.join(self.settings_not_in_force)}")
        if self.git_warning:
            lines.append(f"  {self.git_warning}")
        for kind in sorted(self.counts):
            parts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts[kind].items()))
            lines.append(f"  {kind:<11} {parts}")
        waiting = ((self.pending_revisions, "agent's revision", "agents' revisions", "revisions"),
                   (self.open_conflicts, "open conflict", "open conflicts", "conflicts"))
        lines += [f"  {plural(n, one, many)} awaiting a human (synapse-nb memory {cmd})"  # "1 agents' revisions" before
                  for n, one, many, cmd in waiting if n]
        if self.agents_conflicts:  # not a person's queue (review 83): counted apart, with the command that lists them
            lines.append(f"  {plural(self.agents_conflicts, AGENTS_PAIRS[0], AGENTS_PAIRS[1])} "
                         "(synapse-nb memory conflicts --agents)")
        for title, ids in (("pending lessons awaiting a human", self.pending_lessons),
                           ("memories expiring within 7 days", self.expiring_memories),
                           ("approved lessons expiring within 2 days", self.expiring_lessons),
                           ("records naming files missing at HEAD", self.dangling),
                           ("possibly stale (their files changed since)", self.possibly_stale)):
            if ids:  # the vault gives people's first; a few shown, the rest counted (review 73: 250 agents' ids)
                lines.append(f"  {title}: {ids_line(ids, ALL_IDS)}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return md_fenced(str(self))

    def _repr_html_(self) -> str:
        from synapse_nb.render import status_html  # loaded on first notebook display

        return status_html(self)


@dataclass(frozen=True)
class PruneReport:
    """What ``prune()`` removed or marked."""

    memories_deleted: tuple[str, ...] = ()
    lessons_expired: tuple[str, ...] = ()
    sessions_cleared: int = 0
    agent_records_deleted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"memories_deleted": list(self.memories_deleted), "lessons_expired": list(self.lessons_expired),
                "sessions_cleared": self.sessions_cleared, "agent_records_deleted": list(self.agent_records_deleted)}

    def __str__(self) -> str:
        agents = (f", {plural(len(self.agent_records_deleted), 'old agent record')} deleted"
                  if self.agent_records_deleted else "")
        return (f"pruned: {plural(len(self.memories_deleted), 'expired memory', 'expired memories')} deleted, "
                f"{plural(len(self.lessons_expired), 'lesson')} marked expired, "
                f"{plural(self.sessions_cleared, 'old session entry', 'old session entries')} cleared{agents}")

    __repr__ = __str__
