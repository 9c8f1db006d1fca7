"""The recall gate's scorer on recall's own workload, against another revision's scorer in the same run.

Recall's gate scores the top 20 ranked records of every query (``CorpusScorer.score_batch``); in a fresh process
most of them were never analysed before. This records every ``score_batch`` call recall makes for the
benchmark queries of ``benchmarks/recall.py`` (two passes: the first meets new records, the second finds them
cached), then replays the calls on a fresh scorer of this checkout and on a fresh scorer of ``--against`` (a git
revision, default ``main``: its ``synapse_nb/gate/scorer.py`` loaded from ``git show``), alternating call by call
so load on a shared machine hits both alike. Every call's scores must be the same bytes and its matched terms
the same tuples. Prints medians per pass (of the per-round medians) and their ratio.

    python benchmarks/gate_scorer.py                       # builds a 10k vault in a temporary folder
    python benchmarks/gate_scorer.py --vault PATH --rounds 7 --against main
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import recall as recall_bench  # noqa: E402

import synapse_nb as syn  # noqa: E402
from synapse_nb.gate import scorer as this  # noqa: E402


def record(vault: Path, n_queries: int) -> list[tuple]:
    """Every score_batch call of recall over the benchmark queries: a warm-up query, then two passes."""
    calls: list[tuple] = []
    original = this.CorpusScorer.score_batch

    def spy(self, query, docs, *, doc_freq, n_docs, doc_keys=None):  # type: ignore[no-untyped-def]
        calls.append((query, list(docs), dict(doc_freq), n_docs, None if doc_keys is None else list(doc_keys)))
        return original(self, query, docs, doc_freq=doc_freq, n_docs=n_docs, doc_keys=doc_keys)

    this.CorpusScorer.score_batch = spy  # type: ignore[method-assign]
    try:
        v = syn.open_vault(vault)
        qs = recall_bench.queries(n_queries)
        v.recall(qs[0])
        first = len(calls)
        for q in qs:
            v.recall(q)
        second = len(calls)
        for q in qs:
            v.recall(q)
        v.close()
    finally:
        this.CorpusScorer.score_batch = original  # type: ignore[method-assign]
    return [(c, "warm" if i < first else "first" if i < second else "second") for i, c in enumerate(calls)]


def load_revision(rev: str):  # type: ignore[no-untyped-def]
    src = subprocess.run(["git", "show", f"{rev}:synapse_nb/gate/scorer.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="gate_scorer_")) / "reference_scorer.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("reference_scorer", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["reference_scorer"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def replay(calls: list[tuple], ref, rounds: int) -> dict[str, dict[str, float]]:  # type: ignore[no-untyped-def]
    per: dict[str, dict[str, list[float]]] = {"this": {}, "ref": {}}
    for r in range(rounds):
        scorers = {"this": this.CorpusScorer(cache_size=50_000), "ref": ref.CorpusScorer(cache_size=50_000)}
        times: dict[str, dict[str, list[float]]] = {"this": {}, "ref": {}}
        for k, ((q, docs, df, n, keys), phase) in enumerate(calls):
            out = {}
            for name in (("this", "ref") if (k + r) % 2 else ("ref", "this")):
                t = time.perf_counter()
                b = scorers[name].score_batch(q, docs, doc_freq=df, n_docs=n, doc_keys=keys)
                m = [b.matched(i) for i in range(len(docs))]
                times[name].setdefault(phase, []).append(time.perf_counter() - t)
                out[name] = (b.scores.tobytes(), m)
            if out["this"] != out["ref"]:
                raise SystemExit(f"call {k} ({q!r}): scores or matched terms differ from the reference")
        for name in times:
            for phase, ts in times[name].items():
                per[name].setdefault(phase, []).append(statistics.median(ts) * 1e3)
    return {name: {ph: statistics.median(v) for ph, v in d.items()} for name, d in per.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", type=Path, help="a vault built by benchmarks/recall.py (default: build one)")
    ap.add_argument("--size", type=int, default=10_000, help="records of the vault to build (default 10000)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", default="main", help="git revision whose scorer is the reference")
    args = ap.parse_args()
    vault = args.vault
    if vault is None:
        vault = Path(tempfile.mkdtemp(prefix="gate_scorer_vault_"))
        v = syn.open_vault(vault)
        v.import_jsonl(recall_bench.export_lines(args.size), trust=True)
        v.close()
    calls = record(vault, args.queries)
    ref = load_revision(args.against)
    res = replay(calls, ref, args.rounds)
    n_first = sum(1 for _, ph in calls if ph == "first")
    print(f"## recall gate scorer: {len(calls)} score_batch calls ({n_first} per pass), {args.rounds} rounds; "
          f"ms, median of per-round medians; scores and matched terms identical to {args.against}")
    print(f"{'pass':>8} {'this':>8} {args.against:>10} {'ratio':>7}")
    for phase in ("first", "second"):
        a, b = res["this"][phase], res["ref"][phase]
        print(f"{phase:>8} {a:>8.3f} {b:>10.3f} {b / a:>6.2f}x")


if __name__ == "__main__":
    main()
