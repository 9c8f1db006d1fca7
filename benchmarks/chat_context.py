"""Chat-style LoCoMo: a record's BM25 ``context`` over its speaker's units instead of two records (issue 33, fifth
round; measured, not shipped: docs/recall.md).

Run: ``nice .venv/bin/python benchmarks/chat_context.py UNITS CAP {chat,orig} {dev,heldout,all}``. Builds each
conversation's vault as ``synapse-nb recall eval`` does, then rewrites every threaded record's ``context`` to the
records before it back over ``UNITS`` changes of speaker, at most ``CAP`` records (today's context: the two records
before it; ``2 2`` reproduces it), rebuilds the ranking index, and prints the eval's JSON (one object). On LoCoMo as
written, whose speakers alternate, ``2 N`` is today's context for any N.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import synapse_nb.eval.retrieval as retrieval
from synapse_nb.cli import app


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


def main(argv: list[str]) -> None:
    units, cap, style, subset = int(argv[0]), int(argv[1]), argv[2], argv[3]
    build = retrieval.build_locomo_vault

    def patched(conv: Any, folder: Any, **kw: Any) -> Any:
        vault, ids = build(conv, folder, **kw)
        db = sqlite3.connect(Path(folder) / ".synapse" / "synapse.db")
        threads: dict[str, list[tuple[int, str, str]]] = {}
        for gid, thread, actor, body in db.execute("SELECT gid, thread, actor, body FROM gate_docs WHERE thread IS "
                                                   "NOT NULL ORDER BY thread, seq, rid"):
            threads.setdefault(thread, []).append((gid, actor, body))
        with db:
            for rows in threads.values():
                db.executemany("UPDATE gate_docs SET context = ? WHERE gid = ?",
                               [(ctx, gid) for gid, ctx in unit_contexts(rows, units, cap).items()])
            db.execute("INSERT INTO rank_fts(rank_fts) VALUES ('rebuild')")
        db.close()
        return vault, ids

    retrieval.build_locomo_vault = patched  # type: ignore[assignment]
    args = ["recall", "eval", str(Path(__file__).resolve().parents[1] / "datasets" / "locomo"), "--subset", subset,
            "--json", *(["--style", "chat"] if style == "chat" else [])]
    app(args, standalone_mode=False)


if __name__ == "__main__":
    main(sys.argv[1:])
