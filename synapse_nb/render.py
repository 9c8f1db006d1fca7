"""Rendering for people: the themed HTML of the rich displays and widgets, and the small text helpers
every surface shares (plurals, timestamps, shortened lines, token estimates, tags as stored).

Everything is plain HTML with inline styles (no ``<style>`` block, so it survives being embedded
anywhere) that read JupyterLab's CSS variables, each with a fallback for other front ends; colours
follow the light and the dark theme. Status lines keep their text in the theme's main font colour
and carry the green or red in a mark and a left border, so they stay readable on both themes.

Standard library only: importing this costs nothing.

Examples
--------
>>> plural(1, "memory"), plural(3, "memory"), plural(2, "match")
('1 memory', '3 memories', '2 matches')
>>> fmt_time("2026-12-08T12:00:00.123456Z")
'2026-12-08 12:00 UTC'
>>> "text-align:right" in table_html(["score"], [["0.500"]], align="r")
True
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from synapse_nb._util import check_tags, estimate_tokens, head_lines, parse_ts, plural, shorten, shown_id, when

__all__ = [
    "BORDER",
    "BORROWED_EMBEDDER_LINE",
    "ERR",
    "EXPLAIN_TABLE",
    "FG",
    "HEAD_BG",
    "LINE_HEIGHT",
    "MULTIPLIER_PARTS",
    "MODEL_OFF",
    "MUTED",
    "NOT_IN_FORCE",
    "OK",
    "SEMANTIC_NO_MODEL_LINE",
    "SEMANTIC_OFF_LINE",
    "SEMANTIC_PEOPLE_LINE",
    "as_of_line",
    "block",
    "code",
    "esc",
    "estimate_tokens",
    "explanation_html",
    "fmt_time",
    "head_lines",
    "message_html",
    "note_html",
    "plural",
    "pre_html",
    "semantic_off_line",
    "shorten",
    "shown_id",
    "shown_parts",
    "whole_ids",
    "status_html",
    "table_html",
    "tags_text",
    "when",
]

#: The line a recall's text starts with (after a borrowed vault's) when it answered without the semantic channel it
#: had on (``Recall.semantic_off``): the package's own words, never stored
#: text, so a person's terminal, the notebook and an agent's hook context all say that a record found only by
#: meaning is missing (review 58: a warning on stderr only, and a person's rule silently left every later answer).
SEMANTIC_OFF_LINE = ("(the semantic channel could not be read: answered from the vault's words alone, so a record "
                     "found only by meaning is missing; a person's `synapse-nb index check --repair` repairs it)")
#: How ``Recall.semantic_off`` starts when the channel's model, not its index, could not be loaded in this process
#: (its extra not installed here, an unknown name, a factory failing); the reason follows.
MODEL_OFF = "the semantic channel's model could not be loaded here: "
#: The line in place of :data:`SEMANTIC_OFF_LINE` then (review 68: every recall failed, and the agent hook answered
#: nothing, its error on stderr only).
SEMANTIC_NO_MODEL_LINE = ("(the semantic channel's model could not be loaded here: answered from the vault's words "
                          "alone, so a record found only by meaning is missing; a person installs the model's extra "
                          "(wordllama: pip install 'synapse_nb[semantic]'), fixes the setting recall_embedder, or "
                          "sets recall_semantic to 0)")


def semantic_off_line(reason: str | None) -> str | None:
    """The line a recall's text starts with (after a borrowed vault's) for ``Recall.semantic_off`` ``reason``: None
    when the channel answered, :data:`BORROWED_EMBEDDER_LINE` when the vault's code-loading embedder was refused,
    :data:`SEMANTIC_NO_MODEL_LINE` when its model could not be loaded (``reason`` starts
    with :data:`MODEL_OFF`), else :data:`SEMANTIC_OFF_LINE` (its index could not be read). The package's words
    only, never the reason's.

    >>> semantic_off_line(None), semantic_off_line(MODEL_OFF + "x") == SEMANTIC_NO_MODEL_LINE
    (None, True)
    """
    if reason is None:
        return None
    if reason == BORROWED_EMBEDDER_LINE:  # code or files no person here set, not loaded (reviews 66, 69)
        return BORROWED_EMBEDDER_LINE
    return SEMANTIC_NO_MODEL_LINE if reason.startswith(MODEL_OFF) else SEMANTIC_OFF_LINE

#: The line a recall's text starts with (after a borrowed vault's) while agents' records no person verified wait to
#: be embedded in the semantic table (``Recall.agents_waiting``, review 67): the channel then reads people's records
#: only, so two recalls of an unchanged vault give one answer whatever share of the backlog the machine embedded.
#: The package's own words, without the count (it changes from sync to sync; the field and the notebook give it).
SEMANTIC_PEOPLE_LINE = ("(the semantic channel read people's records only: agents' records wait to be embedded; "
                        "every record was read by its words)")


def as_of_line(at: str) -> str:
    """The line an ``as_of`` recall's text starts with (``Recall.as_of``): the package's own words, never stored
    text, so no reader takes an answer rebuilt from history for today's (review 64).

    >>> as_of_line("2026-12-01T10:00:00.000000Z")
    "AS OF 2026-12-01 10:00:00 UTC: rebuilt from the vault's history as it stood then, not today's rules (a lesson \
or record given here may since have been withdrawn, changed or deleted)"
    """
    return (f"AS OF {when(at, seconds=True)}: rebuilt from the vault's history as it stood then, not today's rules "
            "(a lesson or record given here may since have been withdrawn, changed or deleted)")


#: The line a recall's text starts with instead (after a borrowed vault's own) when its semantic channel is on and
#: the vault's ``recall_embedder`` names code or files that no person set for this vault as this user on this machine
#: (:meth:`synapse_nb.settings.Settings.embedder_spec`: a vault that came with a repository, a downloaded archive of
#: one, a copied file, or a spec set before the record existed): the package's own words, never the stored spec.
BORROWED_EMBEDDER_LINE = (
    "(the semantic channel is off: this vault's setting recall_embedder names code or model files to load "
    "(import:... or sentence-transformers:...), and no person set it for this vault as this user on this machine (a "
    "vault that came with a repository, a downloaded archive or a copied file brings its settings along); answered "
    "from the vault's words alone. If you trust that code, set it in your own terminal: `synapse-nb settings set "
    "recall_embedder SPEC` (`synapse-nb settings list` shows the stored one); or choose a built-in model: "
    "`synapse-nb settings set recall_embedder wordllama`)")


#: How ``memory status`` and ``settings list`` title a borrowed vault's stored settings that are not in force.
NOT_IN_FORCE = ("settings not in force (a borrowed vault's stored value only tightens: the stricter of it and the "
                "default is; adopting the vault puts them in force)")
#: Main text colour of the theme.
FG = "var(--jp-ui-font-color1, #1f2328)"
#: Secondary text (dropped rows, notes).
MUTED = "var(--jp-ui-font-color2, #59636e)"
#: Success mark (the text itself stays FG).
OK = "var(--jp-success-color1, #1a7f37)"
#: Error mark.
ERR = "var(--jp-error-color1, #b42318)"
#: Table rules and card borders.
BORDER = "var(--jp-border-color2, #d0d7de)"
#: Table header background.
HEAD_BG = "var(--jp-layout-color2, #f6f8fa)"
_FONT = "var(--jp-ui-font-size1, 13px)"
_CODE = "var(--jp-code-font-family, monospace)"
#: Line height of our blocks (ipywidgets' HTML sets the height of a form row, far too loose for text).
LINE_HEIGHT = "1.4"

def tags_text(tags: str | Iterable[str]) -> str:
    """Tags as the vault stores them (trimmed, lower-cased, a leading ``#`` dropped), comma-joined, for messages.

    >>> tags_text(["#DB"]), tags_text("deploy, #DB")
    ('db', 'db, deploy')
    """
    return ", ".join(check_tags(tags))


def esc(value: Any) -> str:
    """HTML-escape any value (``None`` becomes an empty string)."""
    return "" if value is None else html.escape(str(value))


def fmt_time(ts: str | None) -> str:
    """A stored UTC timestamp as every display shows it: ``2026-12-08 12:00 UTC`` (``""`` for None).

    >>> fmt_time(None), fmt_time("2026-01-02T03:04:05Z")
    ('', '2026-01-02 03:04 UTC')
    """
    text = str(ts or "")
    return when(text) if len(text) >= 16 and text[10] in "T " else text


def from_now(ts: str, now: Any) -> str:
    """How far stored timestamp ``ts`` is from ``now`` (stored UTC text or an aware datetime), in words: ``in
    3 h`` or ``passed 2 s ago``; what a prompt shows beside an expiry a person accepts (review 22: a bare time hid
    that it had passed).

    >>> from_now("2026-01-02T03:04:05.000000Z", "2026-01-02T03:04:02.000000Z")
    'in 3 s'
    >>> from_now("2026-01-02T03:04:05.000000Z", "2026-01-04T05:04:05.000000Z")
    'passed 2 d ago'
    """
    secs = int((parse_ts(ts) - parse_ts(now)).total_seconds())  # parse_ts takes a datetime as it is
    size = abs(secs)
    unit = next(((n, u) for n, u in ((86_400, "d"), (3_600, "h"), (60, "min")) if size >= n), (1, "s"))
    shown = f"{size // unit[0]} {unit[1]}"
    return f"in {shown}" if secs > 0 else f"passed {shown} ago"


def block(inner: str) -> str:
    """Wrap HTML in a block with readable line height, the theme's font colour and size."""
    return f"<div style='line-height:{LINE_HEIGHT};color:{FG};font-size:{_FONT}'>{inner}</div>"


def note_html(text: str) -> str:
    """A muted, italic one-line note (for "nothing to show")."""
    return f"<div style='color:{MUTED};font-style:italic;margin:2px 0'>{esc(text)}</div>"


def message_html(text: str, *, error: bool = False) -> str:
    """A one-line outcome: a green check or a red cross and a coloured left border; the text in the theme colour."""
    if not text:
        return ""
    mark, colour = ("✘", ERR) if error else ("✔", OK)
    role = "alert" if error else "status"
    return (f"<div role='{role}' class='synapse-message synapse-{'error' if error else 'ok'}' "
            f"style='border-left:3px solid {colour};padding:1px 8px;margin:4px 0;line-height:{LINE_HEIGHT};"
            f"color:{FG}'><span style='color:{colour};font-weight:bold'>{mark}</span> {esc(text)}</div>")


def table_html(header: Sequence[str], rows: Iterable[Sequence[str]], *, align: str | None = None,
               empty: str = "nothing to show", wrap: Sequence[bool] | None = None,
               widths: Sequence[int] | None = None) -> str:
    """A compact themed HTML table; cells are already-escaped HTML.

    Parameters
    ----------
    header : column titles (plain text).
    rows : rows of cell HTML.
    align : one letter per column, ``l`` (text, the default) or ``r`` (numbers).
    empty : the note shown instead of an empty table.
    wrap : per column, whether long text may wrap (default: every column may); non-wrapping columns
        suit ids, numbers and timestamps.
    widths : per column, its share of the width in percent: the table then fills the width with a fixed
        layout (its width does not follow its content); a long word breaks rather than overflow.
    """
    rows = list(rows)
    if not rows:
        return note_html(empty)
    n = len(header)
    aligns = ["right" if a == "r" else "left" for a in (align or "l" * n).ljust(n, "l")]
    wraps = list(wrap) if wrap is not None else [True] * n
    cell = "padding:2px 8px;vertical-align:top;border-bottom:1px solid " + BORDER
    clip = ";overflow:hidden;text-overflow:ellipsis" if widths is not None else ""  # a fixed column never spills
    head = "".join(f"<th style='text-align:{a};{cell};background:{HEAD_BG};font-weight:600;white-space:nowrap{clip}'>"
                   f"{esc(h)}</th>" for h, a in zip(header, aligns, strict=True))
    body = "".join(
        "<tr>" + "".join(
            f"<td style='text-align:{a};{cell};"
            + ("overflow-wrap:break-word;word-break:normal" if w else "white-space:nowrap" + clip) + f"'>{c}</td>"
            for c, a, w in zip(row, aligns, wraps, strict=True)) + "</tr>"
        for row in rows)
    fixed, cols = "", ""
    if widths is not None:
        fixed = "table-layout:fixed;width:100%;overflow-wrap:anywhere;"
        cols = "<colgroup>" + "".join(f"<col style='width:{w}%'>" for w in widths) + "</colgroup>"
    return (f"<table style='border-collapse:collapse;margin:4px 0;line-height:{LINE_HEIGHT};color:{FG};"
            f"font-size:{_FONT};{fixed}'>{cols}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def code(text: Any) -> str:
    """Inline code (ids, paths, shas)."""
    return f"<code style='font-family:{_CODE}'>{esc(text)}</code>"


def pre_html(text: str, *, max_height: str | None = None) -> str:
    """Preformatted text that wraps at spaces (never mid-word unless a word is wider than the box)."""
    scroll = f"max-height:{max_height};overflow:auto;" if max_height else ""
    return (f"<pre style='white-space:pre-wrap;overflow-wrap:break-word;word-break:normal;margin:4px 0;"
            f"padding:6px 8px;border:1px solid {BORDER};font-family:{_CODE};line-height:{LINE_HEIGHT};"
            f"color:{FG};background:transparent;{scroll}'>{esc(text)}</pre>")


#: The rank parts (``Recall.explain()``) that multiply the score (1: no effect); the others add to it (0: no effect).
MULTIPLIER_PARTS = ("question", "actor")


def shown_parts(parts: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """The rank parts worth printing: ``bm25`` always, a multiplier when it is not 1, an added part when not 0.

    >>> shown_parts([("bm25", 0.0), ("neighbours", 0.2), ("thread", 0.0), ("question", 0.75), ("actor", 1.0)])
    [('bm25', 0.0), ('neighbours', 0.2), ('question', 0.75)]
    """
    return [(k, v) for k, v in parts if k == "bm25" or (v != 1.0 if k in MULTIPLIER_PARTS else v != 0)]


#: The explain table's columns: (title, alignment, share of the width in %). The width is fixed (the table
#: fills the output), so it does not change from one query to the next.
EXPLAIN_TABLE = (("kept", "l", 8), ("rank", "r", 7), ("rank parts", "l", 14), ("coverage", "r", 11),
                 ("record", "l", 25), ("bar", "l", 8), ("reason", "l", 15), ("matched", "l", 12))


def explanation_html(rows: Iterable[Any], titles: Mapping[str, str] | None = None) -> str:
    """The gate's table for one recall: kept or dropped, rank score and its parts (one per line), gate coverage,
    the record (its title over its kind and id), the deciding bar, reason, matched terms.

    ``rows`` are the rows of :meth:`synapse_nb.recall.Recall.explain`; ``titles`` maps ids to the record's
    title (``category/key`` of a memory, a decision's text: :func:`synapse_nb.displays.explain_titles`). Text
    columns are left-aligned, the numbers right-aligned; dropped rows are muted. The table fills the width.
    """
    titles = titles or {}
    out = []
    for r in rows:
        style = f" style='color:{MUTED}'" if not r.kept else ""
        kept = "✔ yes" if r.kept else "✘ no"
        cov = "-" if r.coverage is None else f"{r.coverage:.3f}"
        parts = "<br>".join(f"{esc(k)}&nbsp;{v:.3f}" for k, v in shown_parts(r.parts))
        title = titles.get(r.id)
        # a category/key breaks after its "/" rather than inside a word
        what = (f"<b>{esc(title).replace('/', '/<wbr>')}</b><br>" if title else "") \
            + f"<span style='color:{MUTED}'>{esc(r.kind)}</span> " + code(shown_id(r.id))
        out.append([f"<span{style}>{kept}</span>", f"<span{style}>{r.score:.3f}</span>",
                    f"<span style='color:{MUTED}'>{parts or '-'}</span>", f"<span{style}>{cov}</span>", what,
                    esc(r.bar), esc(r.reason), esc(", ".join(r.matched) or "-")])
    header = [c[0] for c in EXPLAIN_TABLE]
    align = "".join(c[1] for c in EXPLAIN_TABLE)
    return block(table_html(header, out, align=align, wrap=[False, False, True, False, True, False, True, True],
                            empty="no candidate ranked", widths=[c[2] for c in EXPLAIN_TABLE]))


def status_html(status: Any) -> str:
    """``vault.status()`` as HTML: where, who, then a table of counts per kind and state, then what needs a human."""
    counts = status.counts
    rows = []
    for kind in sorted(counts):
        c = counts[kind]
        total = c["total"] if "total" in c else sum(c.values())
        detail = ", ".join(f"{v:,} {k}" for k, v in sorted(c.items()) if k != "total")
        rows.append([esc(kind), f"{total:,}", esc(detail or "-")])
    parts = [(f"<div><b>vault</b> {code(status.vault_path)} · mind {code(status.mind)} · actor "
              f"{esc(status.actor)} · schema v{status.schema_version}</div>"),
             table_html(["kind", "total", "by state"], rows, align="lrl", wrap=[False, False, True])]
    if getattr(status, "borrowed", None):  # a borrowed vault: said first (synapse_nb.borrowed)
        parts.insert(0, f"<div><b>{esc(status.borrowed)}</b></div>")

    def listing(title: str, ids: Sequence[str]) -> None:
        if ids:
            parts.append(f"<div><b>{esc(title)}</b> ({len(ids):,}): " + ", ".join(code(i) for i in ids[:20])
                         + (f" and {len(ids) - 20:,} more" if len(ids) > 20 else "") + "</div>")

    for n, what in ((getattr(status, "pending_revisions", None), "agents' revisions awaiting a human"),
                    (getattr(status, "open_conflicts", None), "open conflicts awaiting a human"),
                    (getattr(status, "agents_conflicts", None),  # not a person's queue: apart (review 83)
                     "open conflicts between agents' unverified records (synapse-nb memory conflicts --agents)")):
        if n:
            parts.append(f"<div><b>{esc(what)}</b>: {n:,}</div>")
    listing("pending lessons awaiting a human", status.pending_lessons)
    listing("approved elsewhere, awaiting local approval (not in force)",
            getattr(status, "awaiting_local_approval", ()))
    held = getattr(status, "settings_not_in_force", ())
    if held:
        parts.append(f"<div><b>{esc(NOT_IN_FORCE)}</b>: {esc('; '.join(held))}</div>")
    listing("memories expiring within 7 days", status.expiring_memories)
    listing("approved lessons expiring within 2 days", status.expiring_lessons)
    listing("records naming files missing at HEAD", status.dangling)
    listing("possibly stale (their files changed since)", status.possibly_stale)
    return block("".join(parts))


def whole_ids(parts: Iterable[tuple[str, Iterable[str]]], lines: int) -> set[str]:
    """The ids of ``parts`` (texts, one after the other on their own lines, and the ids each gives) whose every
    line is among the first ``lines`` lines: what a cut that kept those lines whole gave (review 31: the hooks
    marked what their cut removed; review 71: the MCP recall too).

    >>> sorted(whole_ids([("a", ["x"]), ("b\\nc", ["y"]), ("d", ["z"])], 2))
    ['x']
    """
    seen, kept = 0, set[str]()
    for text, ids in parts:
        seen += text.count("\n") + 1
        if seen > lines:
            break
        kept.update(ids)
    return kept
