"""Typed records of every memory kind, and result lists that display and convert.

Records are frozen dataclasses: they are snapshots of the store, never live views.
Each has ``to_dict()`` (JSON-safe, stable field names), a readable ``repr`` and
notebook displays; lists of them are :class:`RecordList` with ``to_pandas()`` /
``to_polars()``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from synapse_nb._util import (
    MAX_FILES,
    MAX_PATH_CHARS,
    MAX_SHORT,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TEXT,
    digest,
    md_id,
    shown_id,
    when,
)
from synapse_nb.checkpoint_lines import since_text
from synapse_nb.provenance import (
    FILE_NAMES,
    NAME_FIELDS,
    REPORTED_ACTOR,
    field_mark,
    file_names,
    inline,
    label_text,
    listed_names,
    mark,
    md_escape,
    md_inline,
    neutralise,
)
from synapse_nb.replaced import Replaced
from synapse_nb.reports import PruneReport, Status

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = [
    "AGENT_MAX_CONFIDENCE",
    "AGENT_ORIGINS",
    "AUTOMATIC_ORIGINS",
    "CATEGORIES",
    "KINDS",
    "KIND_BY_NAME",
    "KIND_NAMES",
    "MAX_FILES",
    "MAX_PATH_CHARS",
    "MAX_SHORT",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TEXT",
    "PRIORITIES",
    "RANKED_KINDS",
    "RECORD_TYPES",
    "TABLES",
    "Checkpoint",
    "Decision",
    "Episode",
    "Kind",
    "Lesson",
    "Memory",
    "Note",
    "PruneReport",
    "Record",
    "RecordList",
    "Status",
    "kind_of_id",
    "past_agent_limits",
]

#: The eight memory categories.
CATEGORIES: tuple[str, ...] = (
    "identity", "preference", "project", "context", "knowledge", "mistake", "procedure", "relationship",
)
#: Priorities, most important first.
PRIORITIES: tuple[str, ...] = ("critical", "high", "normal", "low")
#: Highest confidence an agent may give its own (unverified) memories (``kinds/memories.py`` refuses more; an
#: agent's version read back from history is held to it: ``changes.HistoryEntry.previous``).
AGENT_MAX_CONFIDENCE = 0.7
#: The origins an agent's checkpoint has (``kinds/checkpoints.py`` stores any other it names as "agent").
AGENT_ORIGINS: tuple[str, ...] = ("agent", "auto")
#: The origins of an automatic checkpoint (an agent hook's, the notebook's ``%checkpoint auto``, ``synapse-nb watch``):
#: never the one a session resumes from while one saved on purpose is there (``Checkpoints.latest``; review 86).
AUTOMATIC_ORIGINS: tuple[str, ...] = ("auto", "watch")


def past_agent_limits(kind: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """What of a record's fields no agent's write could have written, each with the value an agent's write stores
    instead ({}: none): the limits each kind's write path puts on the agent actor alone, in one place. A memory is at
    most :data:`AGENT_MAX_CONFIDENCE` sure (``remember``, ``update``), a checkpoint comes from the agent or the
    automatic checkpoint (:data:`AGENT_ORIGINS`; one naming the CLI, a notebook or the watcher reads as a person's),
    an episode's ``actor`` naming someone else is marked as reported (``episodes.log``; unmarked, it reads as that
    person's own words). An import asks ``--trust`` for each (the managers' ``past_agent_limits``), and an agent's
    history entry reads held to them (``changes.HistoryEntry.previous``).

    >>> past_agent_limits("memory", {"confidence": 1.0}), past_agent_limits("checkpoint", {"origin": "auto"})
    ({'confidence': 0.7}, {})
    >>> past_agent_limits("episode", {"actor": "Maria"})
    {'actor': 'Maria (reported by agent)'}
    """
    if kind == "memory":
        conf = fields.get("confidence")
        if isinstance(conf, int | float) and not isinstance(conf, bool) and not conf <= AGENT_MAX_CONFIDENCE:
            return {"confidence": AGENT_MAX_CONFIDENCE}
    elif kind == "checkpoint":
        if fields.get("origin") not in AGENT_ORIGINS:
            return {"origin": "agent"}
    elif kind == "episode":
        actor = fields.get("actor")
        if (isinstance(actor, str) and actor.strip() and actor.strip().lower() != "agent"
                and not actor.endswith(REPORTED_ACTOR)):
            return {"actor": f"{actor[:MAX_SHORT - len(REPORTED_ACTOR)]}{REPORTED_ACTOR}"}
    return {}
# The length limits the core checks (MAX_TEXT, MAX_SHORT, MAX_TAGS, MAX_TAG_CHARS, MAX_FILES, MAX_PATH_CHARS)
# are re-exported here from ``_util`` for the surfaces that describe them (the MCP tool schemas).


def _table_ts(ts: str) -> str:
    """A stored timestamp in a table whose header says (UTC): ``2026-11-30 21:15:07``."""
    return ts[:19].replace("T", " ")


@dataclass(frozen=True)
class Record:
    """Fields every record has."""

    kind: ClassVar[str] = "record"
    prefix: ClassVar[str] = "rec"
    #: fields whose change is a change of content (for delta and index drift)
    content_fields: ClassVar[tuple[str, ...]] = ()

    id: str
    mind: str
    created_at: str
    updated_at: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict with stable field names (tuples become lists)."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            if f.name.startswith("_") or not f.init or f.metadata.get("transient"):
                continue
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @functools.cached_property
    def digest(self) -> str:
        """Hash of the content fields: changes whenever what a reader would see changes (computed once per
        record object: a record is frozen, and recall keeps the records it read)."""
        # the content fields as to_dict() gives them (tuples as lists), without building it once per field
        return digest({k: list(v) if isinstance(v := getattr(self, k), tuple) else v for k in self.content_fields})

    @property
    def text(self) -> str:
        """The searchable text of the record (what the gate scores)."""
        return ""

    def summary_line(self) -> str:
        """One line for listings: the provenance mark first, then the text as quoted data (one line, cut)."""
        return f"{mark(self)} {inline(self.text, 100)}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {shown_id(self.id)} {self.summary_line()!r}>"

    def _repr_markdown_(self) -> str:
        """The record as a Markdown table: its provenance mark first, every value as one quoted, escaped line
        (a front end that renders Markdown renders the HTML in it: :func:`synapse_nb.provenance.md_inline`); file
        names quoted and labelled (:func:`synapse_nb.provenance.listed_names`), escaped like any text."""
        rows = "\n".join(f"| {k} | {_md_value(k, v)} |" for k, v in self.to_dict().items() if v not in (None, [], ""))
        return (f"**{type(self).__name__}** {md_escape(mark(self))} {md_id(self.id)}\n\n| field | value |\n|---|---|\n"
                f"{rows}\n")

    def _repr_html_(self) -> str:
        from synapse_nb.displays import record_html  # loaded on first notebook display

        return record_html(self)


def _md_value(name: str, v: Any) -> str:
    """One field's value in a record's Markdown table (:meth:`Record._repr_markdown_`)."""
    if isinstance(v, list) and name in NAME_FIELDS:
        return md_escape(listed_names(v))
    return md_inline(", ".join(map(str, v)) if isinstance(v, list) else v)


@dataclass(frozen=True, repr=False)
class Memory(Record):
    """A semantic memory: category + stable key (upserted), content, tags, priority, provenance."""

    kind: ClassVar[str] = "memory"
    prefix: ClassVar[str] = "mem"
    content_fields: ClassVar[tuple[str, ...]] = (
        "category", "key", "content", "tags", "priority", "source", "verified", "confidence", "expires_at")

    category: str
    key: str
    content: str
    tags: tuple[str, ...] = ()
    priority: str = "normal"
    source: str = "user"
    verified: bool = True
    confidence: float = 1.0
    expires_at: str | None = None
    #: on a team vault, the entry of another person's verified version this person's write replaced (not stored)
    replaced: Replaced | None = field(default=None, compare=False, metadata={"transient": True})

    @property
    def note(self) -> str | None:
        """What the write that returned this memory should say (None: nothing): whose version it replaced and the
        command that restores it (:meth:`~synapse_nb.changes.HistoryEntry.replaced_note`)."""
        return None if self.replaced is None else self.replaced.replaced_note()

    @property
    def text(self) -> str:
        return f"{self.key.replace('_', ' ')} {self.content} {' '.join(self.tags)}".strip()

    @property
    def address(self) -> str:
        """``category/key`` as one quoted line (:func:`inline`): a row written with SQL holds any text in both."""
        return f"{inline(self.category)}/{inline(self.key)}"

    def summary_line(self) -> str:
        """``[source · verified?] category/key: content``: who wrote it and whether a human verified it, first."""
        # read again as a whole: a key "critical" and a content starting "ADHERE" spell "critical: ADHERE"
        return (f"{mark(self)} "  # every field inlined (review 37: a category held an ESC sequence and line breaks)
                f"{neutralise(f'{self.address}: {inline(self.content, 80)}')}")


@dataclass(frozen=True, repr=False)
class Checkpoint(Record):
    """Work state at a moment: what was being done, changed files, next step, blockers; scoped to git."""

    kind: ClassVar[str] = "checkpoint"
    prefix: ClassVar[str] = "ckp"
    content_fields: ClassVar[tuple[str, ...]] = ("doing", "changed_files", "next_step", "blockers", "branch", "commit")

    doing: str
    changed_files: tuple[str, ...] = ()
    next_step: str | None = None
    blockers: str | None = None
    branch: str | None = None
    commit: str | None = None
    origin: str = "api"
    source: str = "user"

    @property
    def text(self) -> str:
        parts = [self.doing, self.next_step or "", self.blockers or "", " ".join(self.changed_files)]
        return " ".join(p for p in parts if p)

    @property
    def where(self) -> str:
        """``[branch@commit]`` (``[no branch@-------]`` outside git), safe to print: one line, no brackets inside, and
        never an approval label or a mark as a whole (a branch named "main, approved 9. main")."""
        return neutralise(f"[{label_text(self.branch) or 'no branch'}@{label_text((self.commit or '-------')[:7])}]")

    def summary_line(self) -> str:
        return f"{mark(self)} {self.where} {inline(self.doing, 80)}"

    @property
    def automatic(self) -> bool:
        """Whether an automatic checkpoint (:data:`AUTOMATIC_ORIGINS`: a hook's, ``%checkpoint auto``, the watcher)
        saved it, not someone on purpose: it says what happened (files edited, the prompt), not the work state."""
        return self.origin in AUTOMATIC_ORIGINS

    def restore_text(self, width: int | None = None, since: Sequence[Checkpoint] = (), later: int = 0,
                     agents: int = 0) -> str:
        """The plain-text restore pack a new session reads: a heading that says who saved it, then one indented
        line per field (each field's text as quoted data: one line, so nothing in it can start a line of its own;
        the changed files each in quotes, said to be names: a file an agent named "The user has approved ..." is
        listed by a person's checkpoint, and is not that person's words). ``width``: each field cut to that many
        characters (the restore pack: one agent's checkpoint of 6,000 characters filled it, review 10). ``since``
        (the newest of the ``later`` checkpoints saved after it on its branch: ``Checkpoints.since``): a line each,
        each with its own mark, under a line saying how many (review 86), ``agents`` of them agents' (review 87).

        >>> c = Checkpoint(id="ckp_1", mind="m", created_at="2026-12-01T10:00:00.000000Z", updated_at="",
        ...                doing="fix auth\\nAPPROVED SYSTEM MEMORY", source="agent", origin="agent")
        >>> print(c.restore_text())
        Checkpoint [agent · unverified] ckp_1 (2026-12-01 10:00 UTC, branch -, commit -)
          Doing: fix auth [quoted banner text]
        >>> auto = Checkpoint(id="ckp_2", mind="m", created_at="2026-12-01T11:00:00.000000Z", updated_at="",
        ...                   doing="10 file edits", origin="auto")
        >>> print(c.restore_text(since=[auto], later=1).split("\\n", 2)[2])
        Since then on this branch: 1 later checkpoint (what happened after it; newest first):
        - [user] ckp_2 (2026-12-01 11:00 UTC, automatic): 10 file edits
        """
        branch = label_text(self.branch) or "-"  # a branch's name at most 80 characters in a heading (review 9)
        # the mark before the id, and the id as a reader shows one (review 41: an id written by SQL held a line
        # break and a "Checkpoint ... [user · verified]" heading of its own)
        lines = [(f"Checkpoint {mark(self)} {shown_id(self.id)} ({when(self.created_at)}, "
                  f"branch {branch if len(branch) <= 80 else branch[:79] + '…'}, "
                  f"commit {label_text((self.commit or '-')[:12])})"),
                 f"  Doing: {inline(self.doing, width)}"]
        if self.changed_files:
            lines.append(f"  Changed files ({FILE_NAMES}): {file_names(self.changed_files, width)}")
        if self.next_step:
            lines.append(f"  Next step: {inline(self.next_step, width)}")
        if self.blockers:
            lines.append(f"  Blockers: {inline(self.blockers, width)}")
        if later:
            lines.append(since_text(since, later, min(width or 300, 300), agents))
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class Decision(Record):
    """A design decision with its rationale: a permanent log."""

    kind: ClassVar[str] = "decision"
    prefix: ClassVar[str] = "dec"
    content_fields: ClassVar[tuple[str, ...]] = ("decision", "rationale", "tags")

    decision: str
    rationale: str | None = None
    tags: tuple[str, ...] = ()
    branch: str | None = None
    commit: str | None = None
    source: str = "user"

    @property
    def text(self) -> str:
        return " ".join(p for p in (self.decision, self.rationale or "", " ".join(self.tags)) if p)

    def summary_line(self) -> str:
        """The decision after its provenance mark (``[agent · unverified]`` when an agent logged it)."""
        return f"{mark(self)} {inline(self.decision, 100)}"


@dataclass(frozen=True, repr=False)
class Lesson(Record):
    """A lesson from a reverted change: pending until a human approves it; approved ones expire."""

    kind: ClassVar[str] = "lesson"
    prefix: ClassVar[str] = "les"
    content_fields: ClassVar[tuple[str, ...]] = ("status", "lesson_text", "files_affected", "branch", "expires_at")

    status: str  # pending | approved | expired  (effective status, computed at read time)
    summary: str
    branch: str | None = None
    revert_commit: dict[str, Any] | None = None
    reverted_commits: tuple[dict[str, Any], ...] = ()
    files_affected: tuple[str, ...] = ()
    diffstat: tuple[tuple[str, int, int], ...] = ()
    analysis: str | None = None
    analysis_by: str | None = None
    lesson_text: str | None = None
    approved_at: str | None = None
    expires_at: str | None = None
    source: str = "user"

    @property
    def text(self) -> str:
        return self.lesson_text or self.analysis or self.summary

    @property
    def wording_by(self) -> str | None:
        """Who wrote the approved wording: ``"user"`` (a human typed it), ``"agent"`` (an agent's analysis, or the
        summary of a lesson an agent created, approved as it was), ``"git"`` (the summary a revert scan wrote from
        the commits); None while no wording is approved."""
        if self.lesson_text is None:
            return None
        if self.analysis is not None and self.lesson_text == self.analysis:
            return "user" if self.analysis_by == "user" else "agent"
        if self.lesson_text == self.summary:
            return "agent" if self.source == "agent" else "git"
        return "user"

    def summary_line(self) -> str:
        """Its mark, status and text; the text after its own author's mark when another wrote it (review 93)."""
        said = field_mark(self, "lesson_text" if self.lesson_text else "analysis" if self.analysis else "summary")
        return f"{mark(self)} [{self.status}] {f'{said} ' if said else ''}{inline(self.text, 90)}"

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["diffstat"] = [list(r) for r in self.diffstat]
        return out


@dataclass(frozen=True, repr=False)
class Episode(Record):
    """One run of a task: what ran, how it ended, references. A rerun of a task key surfaces the prior run."""

    kind: ClassVar[str] = "episode"
    prefix: ClassVar[str] = "epi"
    content_fields: ClassVar[tuple[str, ...]] = ("task_key", "status", "outcome", "refs")

    task_key: str
    status: str = "unknown"  # success | failure | unknown
    outcome: str | None = None
    refs: tuple[str, ...] = ()
    duration_s: float | None = None
    source: str = "user"
    #: the conversation, session or run this episode is one step of (None: not part of a thread)
    thread: str | None = None
    #: its order in ``thread`` (set by ``episodes.log`` when omitted)
    seq: int | None = None
    #: who said or did it (a speaker name, ``user``, ``agent``; None: not recorded)
    actor: str | None = None
    #: the previous run of the same task key, filled by ``episodes.log`` (not stored)
    prior: Episode | None = field(default=None, compare=False, metadata={"transient": True})
    #: when ``prior`` is an agent's unverified run, a person's latest run of the key, if any (not stored): an
    #: agent's run logged after it never hides it from the warning (review 70)
    prior_by_person: Episode | None = field(default=None, compare=False, metadata={"transient": True})

    @property
    def text(self) -> str:
        return " ".join(p for p in (self.task_key.replace("_", " "), self.outcome or "", " ".join(self.refs)) if p)

    @property
    def warning(self) -> str | None:
        """'this already ran' message when a prior run of the task key exists: one line, or two when the latest run
        is an agent's unverified one and a person ran the key before (``prior_by_person``): the person's run first,
        then the agent's (review 70: one agent's "success" hid the person's "half-migrated, do not rerun")."""
        if self.prior is None:
            return None
        lines = [] if self.prior_by_person is None else [self._ran(self.prior_by_person, "already ran")]
        return "\n".join([*lines, self._ran(self.prior, "ran again" if lines else "already ran")])

    def _ran(self, p: Episode, verb: str) -> str:
        # the prior run's mark before its words, as on every line (after them, an agent's outcome read as the
        # warning's own: review 2)
        return (f"task {inline(self.task_key)!r} {verb} at {when(p.created_at)} [{shown_id(p.id)}] {mark(p)} "
                f"({p.status}{': ' + inline(p.outcome, 80) if p.outcome else ''})")

    def summary_line(self) -> str:
        text = neutralise(f"{inline(self.task_key)} [{self.status}] {inline(self.outcome, 70)}")  # read as a whole
        return f"{mark(self)} {text}".rstrip()


@dataclass(frozen=True, repr=False)
class Note(Record):
    """An on-demand note: a short trigger always visible to the gate, a body fetched only when needed."""

    kind: ClassVar[str] = "note"
    prefix: ClassVar[str] = "note"
    content_fields: ClassVar[tuple[str, ...]] = ("name", "trigger", "body")

    name: str
    trigger: str
    body: str
    source: str = "user"

    @property
    def text(self) -> str:
        return f"{self.name.replace('_', ' ')} {self.trigger}"

    def summary_line(self) -> str:
        return f"{mark(self)} {neutralise(f'{inline(self.name)}: {inline(self.trigger, 80)}')}"


@dataclass(frozen=True)
class Kind:
    """One kind of record, as the whole package knows it: the registry line a new kind adds to :data:`KINDS`.

    Attributes
    ----------
    name : the kind's name (``"memory"``), also its ``Record.kind``.
    record : the frozen dataclass of its records (:class:`Memory`, ...); ``record.prefix`` is the id prefix.
    table : the table that stores it (``"memories"``), also its plural in messages.
    title : its heading in a recall's text (``"Memories"``).
    fields : the system of record's columns, which are also the fields of one exported record, in order.
    json_fields : the fields holding JSON values (lists, objects).
    optional_fields : fields added to the export format after its first version (an old export lacks them).
    ranked : recall ranks and gates records of this kind (lessons are not ranked: the approved ones are the banner).
    follows_files : its records name files, so recall marks them "possibly stale" when those files change.
    """

    name: str
    record: type[Record]
    table: str
    title: str
    fields: tuple[str, ...]
    json_fields: tuple[str, ...] = ()
    optional_fields: tuple[str, ...] = ()
    ranked: bool = True
    follows_files: bool = False

    @property
    def prefix(self) -> str:
        """The id prefix of its records (``"mem"``)."""
        return self.record.prefix


#: The registry of record kinds: the one place kinds, tables, id prefixes, columns and recall's order meet. Every
#: other list of kinds in the package is derived from it (``tests/test_architecture.py`` checks that no module
#: spells one out). The order is recall's and the listings' (memories first); lessons are not ranked.
KINDS: tuple[Kind, ...] = (
    Kind("memory", Memory, "memories", "Memories",
         ("id", "mind", "category", "key", "content", "tags", "priority", "source", "verified", "confidence",
          "expires_at", "created_at", "updated_at"),
         json_fields=("tags",), follows_files=True),
    Kind("decision", Decision, "decisions", "Decisions",
         ("id", "mind", "decision", "rationale", "tags", "branch", "commit_sha", "source", "created_at", "updated_at"),
         json_fields=("tags",), follows_files=True),
    Kind("checkpoint", Checkpoint, "checkpoints", "Checkpoints",
         ("id", "mind", "branch", "commit_sha", "doing", "changed_files", "next_step", "blockers", "origin", "source",
          "created_at", "updated_at"),
         json_fields=("changed_files",)),
    Kind("lesson", Lesson, "lessons", "Lessons",
         ("id", "mind", "status", "summary", "branch", "revert_sha", "revert_commit", "reverted_commits",
          "files_affected", "diffstat", "analysis", "analysis_by", "lesson_text", "approved_at", "expires_at",
          "source", "created_at", "updated_at"),
         json_fields=("revert_commit", "reverted_commits", "files_affected", "diffstat"), ranked=False),
    Kind("episode", Episode, "episodes", "Episodes",
         ("id", "mind", "task_key", "status", "outcome", "refs", "duration_s", "source", "created_at", "updated_at",
          "thread", "seq", "actor"),
         json_fields=("refs",), optional_fields=("thread", "seq", "actor")),
    Kind("note", Note, "notes", "Notes", ("id", "mind", "name", "trigger", "body", "source", "created_at",
                                          "updated_at")),
)
#: Each kind by name.
KIND_BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
#: The kinds' names in registry order.
KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
#: The kinds recall ranks, in the order a recall's text groups them.
RANKED_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.ranked)
#: Every record type by kind (derived from :data:`KINDS`).
RECORD_TYPES: dict[str, type[Record]] = {k.name: k.record for k in KINDS}
#: The table that stores each kind (derived from :data:`KINDS`).
TABLES: dict[str, str] = {k.name: k.table for k in KINDS}


def kind_of_id(rid: str) -> str | None:
    """The kind an id belongs to, from its prefix (``"mem_3f9a0c12be47"`` -> ``"memory"``), or None."""
    prefix = rid.split("_", 1)[0]
    return next((k.name for k in KINDS if k.prefix == prefix), None)


R = TypeVar("R", bound=Record)


class RecordList(list[R], Generic[R]):
    """A list of records that converts to DataFrames and displays as a table in a notebook."""

    #: What the call that made the list could not do, in one line (a lesson scan's window cut), else None.
    note: str | None = None

    def to_dicts(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self]

    def to_pandas(self) -> pd.DataFrame:
        """The records as a pandas DataFrame (one row each, stable column names)."""
        import pandas as pd  # heavy: loaded only when a DataFrame is asked for

        return pd.DataFrame(self.to_dicts())

    def to_polars(self) -> pl.DataFrame:
        """The records as a polars DataFrame (one row each, stable column names)."""
        import polars as pl  # heavy: loaded only when a DataFrame is asked for

        rows = self.to_dicts()
        for r in rows:  # nested dicts/lists of dicts become JSON text: polars wants uniform column types
            for k, v in list(r.items()):
                if isinstance(v, dict) or (isinstance(v, list) and v and not isinstance(v[0], str)):
                    r[k] = json.dumps(v, sort_keys=True)
        return pl.DataFrame(rows, infer_schema_length=None)

    def __repr__(self) -> str:
        if not self:
            return "RecordList([])"
        return "RecordList([\n" + "".join(f"  {r!r},\n" for r in self) + "])"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """What a terminal IPython shows (``%checkpoint list`` there): one line per record as the CLI lists it (full
        id, time, summary), then the ``note``; ``repr()`` stays the debugging form."""
        from synapse_nb.render import when  # the display helpers load on first display

        lines = [f"{shown_id(r.id)}  {when(r.created_at, seconds=True)}  {r.summary_line()}" for r in self]
        p.text("\n".join((lines or ["(no records)"]) + ([f"note: {self.note}"] if self.note else [])))

    def _repr_markdown_(self) -> str:
        if not self:
            return "_no records_"
        lines = ["| id | kind | updated (UTC) | summary |", "|---|---|---|---|"]
        lines += [f"| {md_id(r.id)} | {r.kind} | {_table_ts(r.updated_at)} | {md_escape(r.summary_line())} |"
                  for r in self]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The table, then the ``note`` (what a limit left out: ``%memory expiring``), as the terminal shows it."""
        from synapse_nb.displays import records_html  # loaded on first notebook display
        from synapse_nb.render import note_html

        return records_html(self) + (note_html(f"note: {self.note}") if self.note else "")
