"""What every reader changes of ordinary code and prose: false positives of the neutraliser over a large corpus.

Run: ``nice .venv/bin/python benchmarks/neutraliser_precision.py [--sample 40] [--dump FILE] [--jobs N]`` from the
repository root (or with ``PYTHONPATH`` naming another checkout, to measure it on the same lines; ``--dump`` of two
checkouts, compared with ``--against``, lists the lines one changes and the other does not).

Renders every line of the virtual environment's site-packages ``*.py`` files and of this repository's ``docs/*.md``
and ``README.md`` with :func:`synapse_nb.provenance.inline` (what every reader shows of a record's text) and counts
the lines whose rendering differs from the line with only its whitespace collapsed and its invisible characters
shown (what ``inline`` does to any text): a placeholder (``[quoted mark]``, ``[quoted tag]`` ...) in place of some
of it. Each distinct line is rendered once and counted as often as it occurs. Prints the counts per set and a sample
of changed lines with their rendering.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _site_packages() -> Path:
    return next((Path(sys.prefix) / "lib").glob("python3*/site-packages"))


def _lines(paths: list[Path]) -> Counter[str]:
    lines: Counter[str] = Counter()
    for path in paths:
        try:
            lines.update(path.read_text(encoding="utf-8").splitlines())
        except (UnicodeDecodeError, OSError):
            continue
    return lines


def _changed(lines: list[str]) -> list[tuple[str, str]]:
    from synapse_nb._cleaning import invisibles_shown
    from synapse_nb.provenance import _CONTROLS, inline

    out = []
    for line in lines:
        shown = inline(line)
        if shown != " ".join(invisibles_shown(_CONTROLS.sub(" ", line)).split()):
            out.append((line, shown))
    return out


def _run(lines: Counter[str], jobs: int) -> list[tuple[str, str]]:
    distinct = sorted(lines)
    chunks = [distinct[i::jobs * 8] for i in range(jobs * 8)]
    with ProcessPoolExecutor(jobs) as pool:
        return [pair for part in pool.map(_changed, chunks) for pair in part]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=40, help="changed lines to print (a seeded sample)")
    ap.add_argument("--dump", help="write every changed line, by set, to this JSON file")
    ap.add_argument("--against", help="a --dump of another checkout: print the lines only one of them changes")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    import synapse_nb

    print(json.dumps({"package": synapse_nb.__file__}))
    sets = {"site-packages *.py lines": _lines(sorted(_site_packages().rglob("*.py"))),
            "docs lines": _lines([*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"])}
    dump: dict[str, list[str]] = {}
    rng = random.Random(0)
    for name, lines in sets.items():
        changed = _run(lines, args.jobs)
        dump[name] = sorted(line for line, _ in changed)
        print(json.dumps({"set": name, "lines": sum(lines.values()), "distinct": len(lines),
                          "changed lines": sum(lines[line] for line, _ in changed), "changed distinct": len(changed)}))
        for line, shown in sorted(rng.sample(changed, min(args.sample, len(changed)))):
            print("   ", repr(line.strip()[:160]), "->", repr(shown[:160]))
        if args.against:
            other = set(json.loads(Path(args.against).read_text(encoding="utf-8")).get(name, []))
            now = set(dump[name])
            print(json.dumps({"set": name, "changed here only": len(now - other), "changed there only":
                              len(other - now)}))
            for line in sorted(now - other)[:args.sample]:
                print("    here only:", repr(line.strip()[:160]))
    if args.dump:
        Path(args.dump).write_text(json.dumps(dump, ensure_ascii=False, indent=0), encoding="utf-8")


if __name__ == "__main__":
    main()
