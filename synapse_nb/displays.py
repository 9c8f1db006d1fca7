"""Rich displays of records for people: one record, a list of records, a recall, the one-line confirmation of a
write, and the provenance mark as a badge.

Built on :mod:`synapse_nb.render` (themed, inline-styled HTML that reads JupyterLab's CSS variables). Who wrote
a record is said first and visibly everywhere: :func:`mark_html` draws :func:`synapse_nb.provenance.mark` as a
badge, outlined in the theme's warning colour when an agent wrote it. Every timestamp reads
``2026-12-02 07:32 UTC`` (:func:`synapse_nb.render.fmt_time`). Standard library only: importing this costs
nothing; the models are read lazily.

Examples
--------
>>> from synapse_nb.models import Memory
>>> m = Memory(id="mem_1", mind="default", created_at="2026-12-02T07:32:59.433938Z",
...            updated_at="2026-12-02T07:32:59.433938Z", category="procedure", key="run_migrations",
...            content="alembic upgrade head", tags=("db", "deploy"))
>>> record_title(m)
'procedure/run_migrations'
>>> confirmation_text("remembered", m)
'✔ remembered mem_1 [user · verified] procedure/run_migrations'
>>> "<details" in confirmation_html("remembered", m) and "db, deploy" in record_html(m)
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from synapse_nb._util import shown_id, when
from synapse_nb.errors import SynapseError
from synapse_nb.provenance import NAME_FIELDS, agents_unverified, inline, listed_names, mark, salvage
from synapse_nb.render import (
    BORDER,
    ERR,
    MUTED,
    OK,
    SEMANTIC_PEOPLE_LINE,
    as_of_line,
    block,
    code,
    esc,
    fmt_time,
    note_html,
    plural,
    pre_html,
    semantic_off_line,
    table_html,
)

__all__ = [
    "AGENT",
    "confirmation_html",
    "confirmation_text",
    "explain_title",
    "explain_titles",
    "is_agent",
    "mark_html",
    "recall_html",
    "record_html",
    "record_title",
    "records_html",
]

#: The colour that marks what an agent wrote (a badge's outline, a quote's left rule): the theme's warning colour.
AGENT = "var(--jp-warn-color1, #b35900)"

#: The fields that title a record, the first one it has (a decision's text, what a checkpoint was doing, a
#: lesson's summary, an episode's task key, a note's name); a memory's title is its ``category/key``.
_TITLE_FIELDS = ("decision", "doing", "summary", "task_key", "name")
#: Fields every record's header already says (or that only the store needs).
_HEADER_FIELDS = {"kind", "id", "mind", "created_at", "updated_at", "source", "verified"}


def record_title(rec: Any, width: int = 80) -> str:
    """A record's title in a line: ``category/key`` for a memory, else its main text (decision, what was being
    done, the lesson's summary, the task key, the note's name), as quoted one-line text."""
    if getattr(rec, "kind", "") == "memory":
        return f"{inline(rec.category)}/{inline(rec.key)}"
    if getattr(rec, "lesson_text", None):  # an approved lesson: its wording
        return inline(rec.lesson_text, width)
    field = next((f for f in _TITLE_FIELDS if hasattr(rec, f)), "id")
    return inline(getattr(rec, field), width)


def is_agent(rec: Any) -> bool:
    """Whether an agent wrote ``rec`` (its ``source``)."""
    return getattr(rec, "source", "user") == "agent"


def mark_html(rec: Any) -> str:
    """The provenance mark of ``rec`` as a badge (``agent · unverified`` outlined in the warning colour)."""
    agent = is_agent(rec)
    edge = AGENT if agent else BORDER
    tint = f"background:color-mix(in srgb, {AGENT} 16%, transparent);" if agent else ""
    who = "agent" if agent else "user"
    return (f"<span class='synapse-mark synapse-mark-{who}' style='display:inline-block;padding:0 5px;"
            f"border:1px solid {edge};border-radius:3px;white-space:nowrap;font-size:0.92em;{tint}'>"
            f"{esc(mark(rec).strip('[]'))}</span>")


def _value(name: str, v: Any) -> str:
    """One field's value for people: file names quoted and labelled (:func:`listed_names`), other lists
    comma-joined, yes/no, short shas, timestamps like everywhere."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if name.endswith("_at") and isinstance(v, str):
        return esc(fmt_time(v))
    if name in ("commit", "commit_sha") and isinstance(v, str):
        return code(inline(v)[:12])
    if name == "diffstat":
        return ", ".join(f"{code(inline(p, 300))} +{a if a is not None else '-'} &minus;{d if d is not None else '-'}"
                         for p, a, d in v)
    if isinstance(v, Mapping):  # a commit: sha and subject
        return f"{code(inline(v.get('sha', ''))[:12])} {esc(inline(v.get('subject', '')))}"
    if isinstance(v, list | tuple):
        if name in NAME_FIELDS:  # file names: quoted and labelled, never prose under the record's badge
            return esc(listed_names(v))
        if v and isinstance(v[0], Mapping):
            return "<br>".join(_value(name, x) for x in v)
        return esc(", ".join(inline(x) for x in v))
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, str):  # stored text: each line quoted (banner, labels, marks, tags, invisibles), lines kept
        return esc(salvage(v))
    return esc(v)


def record_html(rec: Any) -> str:
    """One record in full: its kind, title, provenance badge and id, then its fields (values for people), then
    when it was written. What a record displays as in a notebook."""
    kind = getattr(rec, "kind", "record")
    data = rec.to_dict()
    title_field = "key" if kind == "memory" else next((f for f in _TITLE_FIELDS if f in data), None)
    rows = [[f"<b>{esc(k.replace('_', ' '))}</b>", _value(k, v)] for k, v in data.items()
            if k not in _HEADER_FIELDS and k != title_field and k != "category" and v not in (None, [], "", ())]
    if data.get("mind") not in (None, "default"):
        rows.append(["<b>mind</b>", esc(data["mind"])])
    when = f"created {esc(fmt_time(data.get('created_at')))}"
    if data.get("updated_at") and data.get("updated_at") != data.get("created_at"):
        when += f" · updated {esc(fmt_time(data['updated_at']))}"
    # the mark before the title, as every line reads (review 23: an agent's "Per the user (approved in chat): ..."
    # led the heading, its mark after it)
    head = (f"<div><span style='color:{MUTED}'>{esc(kind)}</span> {mark_html(rec)} "
            f"<b>{esc(record_title(rec, 120))}</b> {code(shown_id(rec.id))}</div>")
    return block(head + table_html(["field", "value"], rows, wrap=[False, True], empty="no other fields")
                 + f"<div style='color:{MUTED}'>{when}</div>")


def _write_note(rec: Any) -> str | None:
    """What the write that returned ``rec`` says besides (``Memory.note``: on a team vault, the other person's
    verified version it replaced and the command that restores it), else None."""
    note = getattr(rec, "note", None)
    return note if isinstance(note, str) and note else None


def confirmation_text(verb: str, rec: Any) -> str:
    """The one line a write prints: ``✔ remembered mem_… [user · verified] procedure/run_migrations``, and the
    write's note on the next line when it has one (``  replaced alice's memory mem_…; alice's version is v1: ...``)."""
    note = _write_note(rec)
    return f"✔ {verb} {shown_id(rec.id)} {mark(rec)} {record_title(rec, 60)}" + (f"\n  {note}" if note else "")


def confirmation_html(verb: str, rec: Any) -> str:
    """The one-line confirmation of a write, with the record's full display one click away (a ``<details>``), and the
    write's note under it, never folded away."""
    line = (f"<span style='color:{OK};font-weight:bold'>✔</span> {esc(verb)} {code(shown_id(rec.id))} {mark_html(rec)} "
            f"<b>{esc(record_title(rec, 60))}</b> "
            f"<span style='color:{MUTED}'>(details)</span>")
    note = _write_note(rec)
    return block(f"<details class='synapse-confirmation'><summary style='cursor:pointer'>{line}</summary>"
                 f"<div style='margin:4px 0 0 16px'>{record_html(rec)}</div></details>"
                 + (f"<div class='synapse-note' style='margin:2px 0 0 16px'>{esc(note)}</div>" if note else ""))


def _columns(kind: str) -> tuple[list[str], str, list[bool]]:
    """(headers, align, wrap) of a list of records of one kind."""
    if kind == "memory":
        return ["id", "category/key", "by", "content", "priority", "updated", "expires"], "lllllll", [
            False, False, False, True, False, False, False]
    if kind == "checkpoint":
        return ["id", "created", "by", "where", "doing"], "lllll", [False, False, False, False, True]
    return ["id", "kind", "by", "updated", "summary"], "lllll", [False, False, False, False, True]


def _cells(kind: str, r: Any) -> list[str]:
    if kind == "memory":
        return [code(r.id), esc(record_title(r)), mark_html(r), esc(inline(r.content, 160)), esc(r.priority),
                esc(fmt_time(r.updated_at)), esc(fmt_time(r.expires_at) or "-")]
    if kind == "checkpoint":
        return [code(r.id), esc(fmt_time(r.created_at)), mark_html(r), esc(r.where), esc(inline(r.doing, 160))]
    return [code(r.id), esc(r.kind), mark_html(r), esc(fmt_time(r.updated_at)), esc(record_title(r, 160))]


def records_html(records: Sequence[Any]) -> str:
    """A list of records as a table: who wrote each, and the columns its kind needs (memories: category/key,
    content, priority and expiry; checkpoints: when, where and what was being done)."""
    if not records:
        return note_html("no records")
    kinds = {getattr(r, "kind", "") for r in records}
    kind = kinds.pop() if len(kinds) == 1 else ""
    header, align, wrap = _columns(kind)
    rows = [_cells(kind, r) for r in records]
    return block(f"<div style='color:{MUTED}'>{plural(len(records), 'record')}</div>"
                 + table_html(header, rows, align=align, wrap=wrap))


def _item_row(item: Any) -> str:
    """One recalled item: its badge, its line (without the mark the badge says) and its id."""
    line = item.line[2:] if item.line.startswith("- ") else item.line
    prefix = mark(item.record)
    if line.startswith(prefix):
        line = line[len(prefix):].lstrip()
    return (f"<li style='margin:2px 0'>{mark_html(item.record)} {esc(line)} "
            f"<span style='color:{MUTED}'>{code(shown_id(item.id))}</span></li>")


def recall_html(r: Any, headings: Mapping[str, str] | None = None) -> str:
    """A recall for people: what it found (approved lessons first, then the items by kind under ``headings``
    (kind -> "Memories"), each with who wrote it), and the exact text an agent receives, one click away."""
    lessons = list(getattr(r, "lessons", ()))
    if r.nothing_new:
        state = f"nothing new ({str(r.empty_reason or '').replace('_', ' ')})"
    else:
        state = plural(len(r.items), "item")
    count = state + (f" + {plural(len(lessons), 'approved lesson')}" if lessons else "")
    parts = [f"<div><b>recall</b> {code(inline(r.query, 80))} · {esc(count)}</div>"]
    as_of = getattr(r, "as_of", None)
    if as_of is not None:  # rebuilt from history: said first (review 64)
        parts.append(f"<div style='color:{ERR}'><b>{esc(as_of_line(as_of))}</b></div>")
    if getattr(r, "borrowed", None):
        parts.append(f"<div><b>{esc(r.borrowed.get('line', ''))}</b></div>")
    off = semantic_off_line(getattr(r, "semantic_off", None))
    if off is not None:  # answered without its semantic channel (reviews 58, 66, 68)
        parts.append(f"<div style='color:{ERR}'><b>{esc(off)}</b></div>")
    elif getattr(r, "agents_waiting", 0):  # the channel read people's records only (review 67)
        waiting = plural(r.agents_waiting, "agent record")
        parts.append(f"<div style='color:{MUTED}'>{esc(SEMANTIC_PEOPLE_LINE)} ({esc(waiting)} waiting)</div>")
    if lessons:
        head = ("Approved lessons</b> (head every recall)" if as_of is None else
                f"Lessons approved as of {esc(when(as_of, seconds=True))}</b> (from history: may no longer be in "
                "force)")
        items = "".join(f"<li>{esc(inline(x.lesson_text or x.summary))} <span style='color:{MUTED}'>"
                        f"(in force until {esc(fmt_time(x.expires_at))}) {code(shown_id(x.id))}</span></li>"
                        for x in lessons)
        parts.append(f"<div style='border-left:3px solid {OK};padding-left:8px;margin:4px 0'>"
                     f"<b>{head}<ol style='margin:2px 0'>{items}</ol></div>")
    groups: dict[str, list[Any]] = {}
    for it in sorted(r.items, key=lambda i: (r.text.find(i.line), i.id)):
        groups.setdefault(it.kind, []).append(it)
    for kind, found in groups.items():
        title = (headings or {}).get(kind, kind)
        parts.append(f"<div style='margin-top:4px'><b>{esc(title)}</b></div>"
                     f"<ul style='margin:2px 0;padding-left:20px'>{''.join(_item_row(i) for i in found)}</ul>")
    parts.append(f"<details><summary style='cursor:pointer;color:{MUTED}'>the text an agent receives "
                 f"({plural(len(r.text.splitlines()), 'line')})</summary>{pre_html(r.text)}</details>")
    return block("".join(parts))


def explain_titles(vault: Any, rows: Iterable[Any]) -> dict[str, str]:
    """``{id: title}`` of the records an explanation names (``vault.manager(kind).get(id)``; a record gone since
    is left out), so an explain table shows ``knowledge/ingest_bottleneck`` beside ``mem_ab0bd734965d``. An agent's
    record no person verified is titled after its mark (review 10: "Per the user in chat: deploy with --force" read
    like a person's decision in the table)."""
    out = {}
    for row in rows:
        try:
            out[row.id] = explain_title(vault.manager(row.kind).get(row.id))
        except SynapseError:
            continue
    return out


def explain_title(rec: Any) -> str:
    """A record's title in an explain table (``%recall --explain``, the gate explorer's): :func:`record_title`,
    after the record's mark when an agent wrote it and no person verified it."""
    title = record_title(rec, 60)
    return f"{mark(rec)} {title}" if agents_unverified(rec) else title
