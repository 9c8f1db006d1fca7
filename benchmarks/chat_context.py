"""Chat-style LoCoMo: a record's BM25 ``context`` over its speaker's units instead of two records (issue 33, fifth
round; measured, not shipped: docs/recall.md).

Run: ``nice .venv/bin/python benchmarks/chat_context.py UNITS CAP {chat,orig} {dev,heldout,all}``, or ``unit -``
instead of ``UNITS CAP`` (tenth round): the two records before the record's unit, then the unit's other messages.
Builds each conversation's vault as ``synapse-nb recall eval`` does, then rewrites every threaded record's
``context`` to the records before it back over ``UNITS`` changes of speaker, at most ``CAP`` records (today's
context: the two records before it; ``2 2`` reproduces it) through the store, whose transaction applies the FTS5
writes its triggers queue, and prints the eval's JSON (one object). On LoCoMo as written, whose speakers alternate,
``2 N`` is today's context for any N.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import synapse_nb.eval.retrieval as retrieval
from synapse_nb.cli import app
from synapse_nb.recall.asks import back_channel


def unit_contexts(rows: list[tuple[int, str, str]], units: int, cap: int) -> dict[int, str]:
    """gid -> context: the bodies before each row back over ``units`` changes of speaker, at most ``cap``, oldest
    first. ``rows``: (gid, actor, body) of one thread in order."""
    out: dict[int, str] = {}
    for i, (gid, actor, _) in enumerate(rows):
        got: list[str] = []
        changes, prev = 0, actor
        for j in range(i - 1, -1, -1):
            if rows[j][1] != prev:
                changes, prev = changes + 1, rows[j][1]
            if changes > units or len(got) >= cap:
                break
            got.append(rows[j][2])
        out[gid] = " ".join(reversed(got))
    return out


def unit_members_contexts(rows: list[tuple[int, str, str]], before: int = 2) -> dict[int, str]:
    """gid -> context: the ``before`` records before the row's *unit* (one speaker's consecutive records, at most
    6, back-channel records neither joining nor cutting it), then the unit's other members, before and after the row
    (a back-channel record keeps today's context). ``rows``: (gid, actor, body) of one thread in order."""
    unit_of: dict[int, int | None] = {}
    members: dict[int, list[int]] = {}
    cur: int | None = None
    last: str | None = None
    for i, (_, actor, body) in enumerate(rows):
        if back_channel(body):
            unit_of[i] = None
            continue
        if cur is not None and last == actor and len(members[cur]) < 6:
            members[cur].append(i)
        else:
            cur = i
            members[cur] = [i]
        unit_of[i], last = cur, actor
    out: dict[int, str] = {}
    for i, (gid, _, _) in enumerate(rows):
        u = unit_of[i]
        if u is None:
            got = [rows[j][2] for j in range(max(0, i - before), i)]
        else:
            head = members[u][0]
            got = [rows[j][2] for j in range(max(0, head - before), head)] + [rows[j][2] for j in members[u] if j != i]
        out[gid] = " ".join(got)
    return out


def main(argv: list[str]) -> None:
    style, subset = argv[2], argv[3]
    if argv[0] == "unit":
        def pick(rows: list[tuple[int, str, str]]) -> dict[int, str]:
            return unit_members_contexts(rows)
    else:
        units, cap = int(argv[0]), int(argv[1])

        def pick(rows: list[tuple[int, str, str]]) -> dict[int, str]:
            return unit_contexts(rows, units, cap)
    build = retrieval.build_locomo_vault

    def patched(conv: Any, folder: Any, **kw: Any) -> Any:
        vault, ids = build(conv, folder, **kw)
        store: Any = vault._ctx.store  # its own transaction applies the FTS5 writes the triggers queue (schema v4)
        threads: dict[str, list[tuple[int, str, str]]] = {}
        for gid, thread, actor, body in store.query("SELECT gid, thread, actor, body FROM gate_docs WHERE thread "
                                                    "IS NOT NULL ORDER BY thread, seq, rid"):
            threads.setdefault(thread, []).append((gid, actor, body))
        with store.transaction():
            for rows in threads.values():
                store.executemany("UPDATE gate_docs SET context = ? WHERE gid = ?",
                                  [(ctx, gid) for gid, ctx in pick(rows).items()])
        return vault, ids

    retrieval.build_locomo_vault = patched  # type: ignore[assignment]
    args = ["recall", "eval", str(Path(__file__).resolve().parents[1] / "datasets" / "locomo"), "--subset", subset,
            "--json", *(["--style", "chat"] if style == "chat" else [])]
    app(args, standalone_mode=False)


if __name__ == "__main__":
    main(sys.argv[1:])
