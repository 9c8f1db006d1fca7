"""Assign the train/val/test split of ``queries.csv`` once, by a seeded deterministic procedure.

The split was decided with this script before any router was fitted or tuned on the data, and is
committed in ``queries.csv``. Re-running it must give the same file byte for byte; ``--check``
verifies that (the test suite runs it).

Procedure (stratified 50/20/30 by label, out of scope being its own stratum):

1. group the rows by label (the empty label is out of scope), labels sorted;
2. within a group, order rows by ``sha256(SEED + "\\x00" + text)`` (hex digest, then text);
3. the first ``floor(0.5 * n + 0.5)`` rows are ``train``, the next ``floor(0.2 * n + 0.5)`` are
   ``val``, the rest ``test``.

Row order in the file is unchanged; only the ``split`` column is written. The procedure uses no
random generator and no hash of Python objects, so it does not depend on PYTHONHASHSEED or on
library versions.

Usage::

    python datasets/agent_vault/make_splits.py           # rewrite queries.csv
    python datasets/agent_vault/make_splits.py --check   # exit 1 if the file differs
"""

from __future__ import annotations

import csv
import hashlib
import io
import sys
from pathlib import Path

SEED = "agent_vault/v1"
FRACTIONS = (("train", 0.5), ("val", 0.2))  # the rest is "test"
PATH = Path(__file__).with_name("queries.csv")


def assign(rows: list[dict[str, str]]) -> list[str]:
    """Return the split of each row, in row order."""
    by_label: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_label.setdefault(row["label"], []).append(i)
    splits = [""] * len(rows)
    for label in sorted(by_label):
        idx = sorted(
            by_label[label],
            key=lambda i: (hashlib.sha256(f"{SEED}\x00{rows[i]['text']}".encode()).hexdigest(), rows[i]["text"]),
        )
        start = 0
        for name, frac in FRACTIONS:
            k = int(frac * len(idx) + 0.5)
            for i in idx[start : start + k]:
                splits[i] = name
            start += k
        for i in idx[start:]:
            splits[i] = "test"
    return splits


def render(path: Path = PATH) -> str:
    """Return the content of ``queries.csv`` with the split column (re)computed."""
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    splits = assign(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["text", "label", "split"])
    for row, split in zip(rows, splits, strict=True):
        w.writerow([row["text"], row["label"], split])
    return buf.getvalue()


def main(argv: list[str]) -> int:
    new = render()
    if "--check" in argv:
        same = new == PATH.read_text(encoding="utf-8")
        print("queries.csv splits are up to date" if same else "queries.csv splits differ from make_splits.py")
        return 0 if same else 1
    PATH.write_text(new, encoding="utf-8", newline="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
