"""What one hostile record costs every reader: recall and the record's displays over a record an agent wrote at the
field cap (32,768 characters) in a shape that made a pattern of the read path super-linear before, against the same
reads of an ordinary text of the same length.

Run: ``nice .venv/bin/python benchmarks/adversarial_reads.py [--runs 5]``. For each shape, a fresh vault in a temp
folder gets one agent memory of that text, and a recall that delivers it is timed with its text, HTML and Markdown
renderings and the record's own displays. Prints, per
shape, the median ms and the ratio to the ordinary text's median measured in the same run (one JSON line each; the
machine's load moves both alike). Every shape should sit near 1x: reading is linear in the text. Figures:
docs/benchmarks.md ("Hostile records").
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import synapse_nb as syn

CAP = 32_768
HEAD = "deploy the service "  # the query's words first, so that recall delivers the record and renders it
SHAPES: dict[str, str] = {name: (HEAD + body)[:CAP] for name, body in {
    "ordinary text (reference)": "with make deploy then tag the release " * 900,
    "run of 'a' (banner start)": "a" * CAP,
    "run of 'c' (banner start)": "c" * CAP,
    "'a' + run of 'p' (doubled letter)": "a" + "p" * CAP,
    "'approved system' + run of 'm' (junction)": "approved system" + "m" * CAP,
    "'[agent reported by an ' repeated (mark tail)": "[agent reported by an " * 1500,
    "run of '[' (labels, marks)": "[" * CAP,
    "'1' run then '!' and a word (cut word)": "1" * (CAP - 40) + "! deployment",
    "'a ' repeated (spaced-out letters)": "a " * (CAP // 2),
    "run of ' ' (whitespace squeezed)": " " * CAP,
    "'a*' repeated (markup inside a word)": "a*" * (CAP // 2),
    "run of '(' (other brackets)": "(" * CAP,
    "'( user · ' repeated (mark in other brackets)": "( user · " * (CAP // 9),
    "'(main, ' repeated (label in other brackets)": "(main, " * (CAP // 7),
    "'[ab · ' repeated (a mark of any language)": "[ab · " * (CAP // 6),
    "'x[user ' repeated (a subscript)": "x[user " * (CAP // 7),
    "'[a'b' repeated (a label's apostrophe)": "[a'b" * (CAP // 4),
    "'<user> ' repeated (bare role tags)": "<user> " * (CAP // 7),
    "run of ' ' then '<user>' (a turn's start read back)": " " * (CAP - 30) + "<user>",
    "'\\n<user>' repeated (a line break before a tag)": "\n<user>" * (CAP // 7),
    "'[\"a\", ' repeated (an open literal)": '["a", ' * (CAP // 6),
    "'[user · \"' repeated (a quote as a mark's gap)": '[user · "' * (CAP // 9),
    "'x[user] ' repeated (subscripts spared)": "x[user] " * (CAP // 8),
    "'.) 🙂 <user> ' repeated (a turn's end read back)": ".) \U0001f642 <user> " * (CAP // 12),
    "run of '🙂' then '<user>' (symbols read back)": "\U0001f642" * (CAP - 30) + "<user>",
    "'[ab cd · ' repeated (a mark of a few words)": "[ab cd · " * (CAP // 9),
}.items()}


def timed(v: syn.Vault, query: str, runs: int, rid: str) -> float:
    if rid not in {item.id for item in v.recall(query).items}:
        raise SystemExit(f"recall {query!r} did not deliver {rid}: the shape would not be read")
    took = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = v.recall(query)
        str(r), r._repr_html_(), r._repr_markdown_()
        for item in r.items:
            item.record._repr_html_(), item.record._repr_markdown_()
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took)


def one(text: str, runs: int, folder: Path) -> float:
    folder.mkdir()
    v = syn.open_vault(folder)
    agent = v.as_agent()
    rid = agent.remember("context", "hostile", text).id
    v.recall("warm up")
    ms = timed(v, "deploy the service", runs, rid)
    v.close()
    return ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref = one(SHAPES["ordinary text (reference)"], args.runs, Path(tmp) / "ref")
        rows = [(name, len(text), one(text, args.runs, Path(tmp) / str(n)), ref)
                for n, (name, text) in enumerate(SHAPES.items())]
    for name, chars, ms, base in rows:
        line = {"shape": name, "chars": chars, "median_ms": round(ms, 2), "x_reference": round(ms / base, 2)}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
