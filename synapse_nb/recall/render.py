"""Recall as text: one line per record, the approved-lesson banner, and the assembled answer.

:func:`record_line` is the one rendering of a record as a recall line; ``vault.memories.recall_text()`` uses it
too, so a memory reads the same wherever an LLM sees it (content cut at :data:`MEMORY_CONTENT_CHARS`).
"""

from __future__ import annotations

from collections.abc import Sequence

from synapse_nb._util import plural, shorten
from synapse_nb.models import PRIORITIES, Checkpoint, Decision, Episode, Lesson, Memory, Note, Record
from synapse_nb.recall.types import KIND_ORDER, Bars, ExplainRow, ExplainRows, RecallItem

__all__ = ["BANNER", "MEMORY_CONTENT_CHARS", "assemble", "banner_text", "empty_reason", "record_line"]

#: The heading of the approved-lesson banner that starts every recall when lessons are in force.
BANNER = "APPROVED SYSTEM MEMORY — CRITICAL: ADHERE"
#: Most characters of a memory's content on its line (longer content is cut, ending in "…").
MEMORY_CONTENT_CHARS = 600
_GROUP_TITLES = {"memory": "Memories", "decision": "Decisions", "checkpoint": "Checkpoints",
                 "episode": "Past runs", "note": "Notes (fetch the body with vault.notes.expand(name))"}


def record_line(rec: Record) -> str:
    """The line a record takes in a recall (and, for memories, in ``recall_text``).

    >>> from synapse_nb.models import Memory
    >>> record_line(Memory(id="mem_1", mind="m", created_at="", updated_at="", category="project", key="status",
    ...                    content="v1.5 deployed", tags=("deploy",), priority="high", verified=False))
    '- [high] project/status: v1.5 deployed #deploy [unverified]'
    """
    if isinstance(rec, Memory):
        tags = f" #{' #'.join(rec.tags)}" if rec.tags else ""
        flag = "" if rec.verified else " [unverified]"
        return f"- [{rec.priority}] {rec.category}/{rec.key}: {shorten(rec.content, MEMORY_CONTENT_CHARS)}{tags}{flag}"
    if isinstance(rec, Decision):
        why = f" — {shorten(rec.rationale, 300)}" if rec.rationale else ""
        tags = f" #{' #'.join(rec.tags)}" if rec.tags else ""
        flag = " [unverified]" if rec.source == "agent" else ""
        return f"- {shorten(rec.decision, 300)}{why} ({rec.created_at[:10]}){tags}{flag}"
    if isinstance(rec, Checkpoint):
        parts = [f"- [{rec.branch or 'no branch'}@{(rec.commit or '-------')[:7]}] {shorten(rec.doing, 300)}"]
        if rec.next_step:
            parts.append(f"next: {shorten(rec.next_step, 200)}")
        if rec.blockers:
            parts.append(f"blockers: {shorten(rec.blockers, 200)}")
        if rec.changed_files:
            parts.append("files: " + ", ".join(rec.changed_files[:10]))
        return "; ".join(parts) + f" ({rec.created_at[:16].replace('T', ' ')})"
    if isinstance(rec, Episode):
        out = f": {shorten(rec.outcome, 300)}" if rec.outcome else ""
        return f"- {rec.task_key} [{rec.status}] ran {rec.created_at[:16].replace('T', ' ')}{out}"
    if isinstance(rec, Note):
        return f"- {rec.name}: {shorten(rec.trigger, 300)}"
    return f"- {rec.summary_line()}"


def banner_text(lessons: Sequence[Lesson]) -> str:
    """The approved-lesson banner that heads a recall, for these lessons ("" when there are none).

    >>> banner_text([])
    ''
    """
    if not lessons:
        return ""
    return "\n".join([BANNER, *(_lesson_block(i, les) for i, les in enumerate(lessons, 1))])


def _lesson_block(i: int, les: Lesson) -> str:
    label = f"[{les.branch or 'all branches'}, approved]"
    lines = [f"{i}. {label} {les.text.strip()}"]
    if les.files_affected:
        lines.append("   Files affected: " + ", ".join(les.files_affected[:20]))
    return "\n".join(lines)


def _priority(rec: Record) -> int:
    return PRIORITIES.index(rec.priority) if isinstance(rec, Memory) else 2


def assemble(query: str, kept: Sequence[RecallItem], lessons: Sequence[Lesson], shown_before: set[str],
             note: str = "") -> str:
    """The text of a recall: the banner (lessons in ``shown_before`` named by id only), then the hits grouped by
    kind (priority, newest, id), or "nothing new" (with ``note`` saying why)."""
    parts: list[str] = []
    if lessons:
        new = [x for x in lessons if x.id not in shown_before]
        block = banner_text(new) or BANNER
        if shown_before:
            ids = ", ".join(x.id for x in lessons if x.id in shown_before)
            block += f"\n(still in force, shown earlier in this session: {ids})"
        parts.append(block)
    q = shorten(query, 120)
    if not kept:
        parts.append(f'nothing new for: "{q}"{note}' if query.strip() else "nothing new (empty query)")
    else:
        lines = [f'RELEVANT MEMORY for: "{q}"']
        for kind in KIND_ORDER:
            group = [k for k in kept if k.kind == kind]
            if not group:
                continue
            group.sort(key=lambda k: k.id)
            group.sort(key=lambda k: k.record.updated_at, reverse=True)
            group.sort(key=lambda k: _priority(k.record))
            lines.append(f"## {_GROUP_TITLES[kind]}")
            lines.extend(k.line for k in group)
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def empty_reason(query: str, kept: Sequence[RecallItem], rows: Sequence[ExplainRow] | ExplainRows,
                 bars: Bars) -> tuple[str | None, str]:
    """Why nothing is returned (one of :data:`~synapse_nb.recall.EMPTY_REASONS`, None when items are) and the
    note the text adds.

    Relevant items dropped by the budget come first (raising the budget would return them), then items
    already given to this session; otherwise nothing was relevant and the text stays the plain
    ``nothing new for: "q"``.
    """
    if kept:
        return None, ""
    if not query.strip():
        return "empty_query", ""
    decided = rows.bars if isinstance(rows, ExplainRows) else [r.bar for r in rows]  # no row is built for this
    over = decided.count("budget")
    given = decided.count("delta")
    if over:
        also = f"; {given} already given to this session" if given else ""
        return "over_budget", (f" ({plural(over, 'relevant item')} did not fit the budget of "
                               f"{plural(bars.budget_tokens, 'token')}{also})")
    if given:
        return "already_given", f" ({plural(given, 'relevant item')} already given to this session, unchanged)"
    return "nothing_relevant", ""
