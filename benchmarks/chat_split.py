"""Chat-style LoCoMo, tenth round (issue 33): what each step of the rewrite costs recall, and whether a message's
unit siblings help when put beside it (measured, not shipped: docs/recall.md).

Run from the repository root::

    nice .venv/bin/python benchmarks/chat_split.py ablate dev none split opener abbrev lower punct typo repeat \\
        emoji backch captions
    nice .venv/bin/python benchmarks/chat_split.py siblings dev
    nice .venv/bin/python benchmarks/chat_split.py misses dev

``ablate``: for each name, the chat-style rewrite with that one step turned off (``none``: the documented rewrite),
then recall and the bare FTS5 BM25 as ``synapse-nb recall eval --style chat`` ranks them; one JSON line each.
Turning a step off also shifts the later random draws of the same turn (each turn has its own seeded generator), so
a step's figure carries about ±.005 of draw noise.

``siblings``: recall's ranking (open bars, top 50) of every question, then re-ranked with the *unit siblings*
(the same speaker's consecutive messages in the session, at most 6, back-channel messages neither joining nor
cutting a unit, as recall's structure arrays cut units) of each of the first ``M`` hits put right after it, at
most ``S`` of them, optionally only siblings already in the top 50. Prints R@5 / R@10 per point.

``misses``: each gold message recall's top 10 misses, counted by whether it is in the top 50, whether it shares a
content stem with the question (FTS5's porter stems of the question's ranking words), and whether another message
cut from the same LoCoMo turn (``sib10``) or a message within three positions (``near10``) is in the top 10.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.eval.chatstyle import ChatStyle, chat_style_all
from synapse_nb.eval.locomo import load_locomo
from synapse_nb.eval.metrics import recall_at_k
from synapse_nb.eval.retrieval import _rank, _resolve, _select, build_locomo_vault, run_locomo_eval
from synapse_nb.recall.asks import back_channel
from synapse_nb.recall.rank import rank_words
from synapse_nb.store.sqlite.ranking import fts5_stems

DATA = str(Path(__file__).resolve().parents[1] / "datasets" / "locomo")

#: A step of the rewrite turned off: the ChatStyle fields that do so.
OFF: dict[str, dict[str, object]] = {
    "none": {}, "split": {"split": 0.0}, "opener": {"opener": 0.0}, "abbrev": {"abbrev": 0.0},
    "lower": {"lowercase": 0.0}, "punct": {"punct_drop": 0.0, "apostrophe_drop": 0.0}, "typo": {"typo": 0.0},
    "repeat": {"repeat": 0.0}, "emoji": {"emoji": 0.0}, "backch": {"backchannel": 0.0},
    "captions": {"keep_captions": True},
}


def ablate(subset: str, names: list[str]) -> None:
    for name in names:
        t = time.time()
        for retriever in ("recall", "fts5"):
            out = run_locomo_eval(DATA, subset, retriever=retriever, style="chat",
                                  chat=replace(ChatStyle(), **OFF[name]))  # type: ignore[arg-type]  # field values
            print(json.dumps({"off": name, "retriever": retriever, "r5": round(out["recall_at_5"], 4),
                              "r10": round(out["recall_at_10"], 4), "nothing_new": out.get("nothing_new_rate"),
                              "s": round(time.time() - t)}), flush=True)


def units(turns: list[tuple[str, str, int, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(dia_id -> its unit's head, head -> members) over one conversation's (dia_id, speaker, session, text)."""
    unit: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    cur: str | None = None
    last: tuple[str, int] | None = None
    for d, speaker, session, text in turns:
        if back_channel(text):
            unit[d], members[d] = d, [d]
            continue
        if cur is not None and last == (speaker, session) and len(members[cur]) < 6:
            members[cur].append(d)
        else:
            cur = d
            members[cur] = [d]
        unit[d], last = cur, (speaker, session)
    return unit, members


def with_siblings(ranked: list[str], unit: dict[str, str], members: dict[str, list[str]], m: int, s: int,
                  only_ranked: bool) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    pool = set(ranked)
    for i, d in enumerate(ranked):
        if d in seen:
            continue
        out.append(d)
        seen.add(d)
        if i < m:
            sibs = [x for x in members[unit[d]] if x not in seen and (not only_ranked or x in pool)]
            for x in sibs[:s]:
                out.append(x)
                seen.add(x)
    return out


def siblings(subset: str) -> None:
    source = _resolve(DATA)
    convs = chat_style_all(_select(load_locomo(source), subset, source), ChatStyle())
    data = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, conv in enumerate(convs):
            vault, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            turns = [(t.dia_id, t.speaker, t.session, t.text) for t in conv.turns]
            qs = [(list(q.evidence), _rank(vault, q.question, "recall", ids)) for q in conv.questions if q.evidence]
            data.append((units(turns), qs))
            vault.index.raw.close()
            vault.close()
    grid = [(0, 0, False)] + [(m, s, o) for m in (1, 2, 3, 5) for s in (1, 2, 3) for o in (False, True)]
    for m, s, only in grid:
        r5 = r10 = 0.0
        n = 0
        for (unit, members), qs in data:
            for gold, ranked in qs:
                got = with_siblings(ranked, unit, members, m, s, only)
                r5 += recall_at_k(got, gold, 5) or 0.0
                r10 += recall_at_k(got, gold, 10) or 0.0
                n += 1
        print(f"first {m} hits, at most {s} siblings each{' (ranked ones)' if only else ''}: "
              f"R@5 {r5 / n:.4f}  R@10 {r10 / n:.4f}", flush=True)


def stems(text: str) -> set[str]:
    words = rank_words(text)
    got = fts5_stems(words)
    return {s for w in words for s in got.get(w, ())}


def misses(subset: str) -> None:
    source = _resolve(DATA)
    convs = chat_style_all(_select(load_locomo(source), subset, source), ChatStyle())
    counts: dict[str, int] = {}
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, conv in enumerate(convs):
            vault, ids = build_locomo_vault(conv, Path(tmp) / str(n))
            text = {t.dia_id: t.text for t in conv.turns}
            pos = {t.dia_id: i for i, t in enumerate(conv.turns)}
            for q in conv.questions:
                if not q.evidence:
                    continue
                ranked = _rank(vault, q.question, "recall", ids)
                top10, asked = ranked[:10], stems(q.question)
                for g in q.evidence:
                    total += 1
                    if g in top10:
                        key = "hit"
                    else:
                        turn = g.split(".")[0]
                        sib = any(d.split(".")[0] == turn and d != g for d in top10)
                        near = any(abs(pos[d] - pos[g]) <= 3 for d in top10)
                        key = (("in50" if g in ranked else "out50") + ("/shareQ" if asked & stems(text[g]) else "/noQ")
                               + ("/sib10" if sib else "/near10" if near else ""))
                    counts[key] = counts.get(key, 0) + 1
            vault.index.raw.close()
            vault.close()
    print("gold messages", total)
    for key, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{key:24s} {c:5d} {c / total:.3f}")


if __name__ == "__main__":
    {"ablate": lambda: ablate(sys.argv[2], sys.argv[3:]), "siblings": lambda: siblings(sys.argv[2]),
     "misses": lambda: misses(sys.argv[2])}[sys.argv[1]]()
