"""How quickly MemoryBrowser answers a click on vaults of 10k and 100k memories (target: well under 0.5 s).

Builds a throwaway vault per size, then times the widget's own handlers headless (what runs in the
kernel when a person clicks: the query to SQLite and the rows handed to the front end): the first page,
Next, a page far down, a header click (sort by content), a search, a filter. Reference, measured in the
same run: loading every matching memory and sorting in Python, which is what a widget without
``memories.page`` would do. Prints medians over the repetitions and the ratio to the reference.

Usage::

    .venv/bin/python benchmarks/memory_browser.py [--sizes 10000 100000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

import synapse_nb as syn
from synapse_nb.widgets import ANY, MemoryBrowser


def _median_ms(fn: Callable[[], object], repeat: int, reset: Callable[[], object] = lambda: None) -> float:
    times = []
    for _ in range(repeat):
        reset()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def run(size: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        v = syn.open_vault(tmp)
        t0 = time.perf_counter()
        with v.transaction():
            for i in range(size):
                v.remember("knowledge", f"fact_{i:07d}", f"generated fact {i} about service {i % 97}",
                           tags=[f"t{i % 13}"], priority=("high", "normal", "low")[i % 3])
        print(f"\n{size:,} memories (built in {time.perf_counter() - t0:.1f} s)")
        b = MemoryBrowser(v, page_size=25)

        def reset() -> None:  # every case starts from the unfiltered first page (not timed)
            b.query.value, b.priority.value, b.table.sort_by = "", ANY, ""
            b.refresh(page=1)

        def sort_by_content() -> None:
            b.table.sort_by = "content"

        def search() -> None:
            b.query.value = "service 42"

        def filt() -> None:
            b.priority.value = "low"

        cases = {
            "first page": lambda: b.refresh(page=1),
            "next page": lambda: b.go_to(b.page + 1),
            "page 300": lambda: b.go_to(300),
            "sort by a column": sort_by_content,
            "search": search,
            "filter by priority": filt,
        }
        figures = {name: _median_ms(fn, repeat, reset) for name, fn in cases.items()}

        def load_everything() -> None:
            rows = v.memories.search("", limit=10**9)
            sorted(rows, key=lambda m: m.content)[:25]

        ref = _median_ms(load_everything, max(3, repeat // 2))
        for name, ms in figures.items():
            print(f"  {name:<20} median {ms:7.1f} ms   ({ms / ref:.2f} x loading everything)")
        print(f"  {'reference':<20} median {ref:7.1f} ms   (load every memory, sort in Python, take 25)")
        v.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    for size in args.sizes:
        run(size, args.repeat)


if __name__ == "__main__":
    main()
