"""LoCoMo retrieval through the vault's recall and its index: figures and wall time.

Run: ``.venv/bin/python benchmarks/locomo.py [--conversations conv-26,conv-30] [--retrievers recall,bm25]``.
Prints turn- and session-level recall@5/@10, NDCG@10 and MRR for all ten conversations, the three tuning ones
and the seven held out, then per category for the gate. About 90 s for all four retrievers on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("LANCEDB_LOG", "error")

import polars as pl

from synapse_nb.eval.retrieval import (
    HELD_OUT_CONVERSATIONS,
    RETRIEVERS,
    TUNE_CONVERSATIONS,
    locomo_questions,
    locomo_table,
)

COLS = ["retriever", "level", "n_questions", "recall_at_5", "recall_at_10", "ndcg_at_10", "mrr"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default="datasets/locomo")
    ap.add_argument("--conversations", default=None, help="comma-separated sample ids (default: all ten)")
    ap.add_argument("--retrievers", default=",".join(RETRIEVERS))
    args = ap.parse_args()
    start = time.perf_counter()
    frame = locomo_questions(args.path, args.conversations, retrievers=args.retrievers.split(","))
    elapsed = time.perf_counter() - start
    print(f"{frame.filter(pl.col('level') == 'turn').height // len(args.retrievers.split(','))} questions, "
          f"{elapsed:.1f} s")
    for name, ids in (("all", None), ("tune", TUNE_CONVERSATIONS), ("held out", HELD_OUT_CONVERSATIONS)):
        sub = frame if ids is None else frame.filter(pl.col("sample_id").is_in(list(ids)))
        if sub.height:
            print(f"\n== {name}")
            print(locomo_table(sub, by_category=False).select(COLS).to_pandas().round(3).to_string(index=False))
    per = locomo_table(frame).filter(pl.col("level") == "turn", pl.col("retriever") == "recall")
    print("\n== the gate (recall), turn level, per category")
    print(per.select("category", *COLS[2:]).to_pandas().round(3).to_string(index=False))


if __name__ == "__main__":
    main()
