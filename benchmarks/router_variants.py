"""The router's variants on CLINC150 and agent_vault: test figures, 95 % intervals and costs, for the notebooks.

Run from the repository root::

    nice .venv/bin/python benchmarks/router_variants.py                      # both sets, every row (~15 min)
    nice .venv/bin/python benchmarks/router_variants.py --only agent_vault --no-record

Rows: the default (``DEFAULTS``: lexical, criterion balanced), the same with ``--criterion accuracy``, the
cross-fitted protocol (``--cross-fit 5``: trains on val too), and the semantic options (``--embedder wordllama``
and ``--embedder e5-small`` at ``DEFAULTS.semantic_weight``). Thresholds and blends come from val only; test is
scored once per row. e5-small's vectors are cached on disk (``CachedEmbedder``; a first run embeds CLINC150's
23,700 texts, about 8-10 minutes on one core), so ``fit_seconds`` of that row excludes embedding when the cache is
warm: the first-run embedding time is printed separately. The rows are written to
``benchmarks/results/router_variants.json``; ``notebooks/gate_clinc150.ipynb`` and ``gate_hub_routing.ipynb``
show the rows too expensive to run under nbval from that file, and compute the headline default row live.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from synapse_nb.eval import load_dataset
from synapse_nb.eval.compare import compare_routers
from synapse_nb.eval.embedding_cache import CachedEmbedder
from synapse_nb.gate import DEFAULTS, Router

OUT = Path(__file__).resolve().parent / "results" / "router_variants.json"


def rows_for(with_descriptions: bool, embedders: dict[str, Any]) -> dict[str, dict[str, Any]]:
    common = {"with_descriptions": with_descriptions}
    rows: dict[str, dict[str, Any]] = {
        "default": {"router": Router, **common},
        "criterion accuracy": {"router": Router, "criterion": "accuracy", **common},
        "cross-fitted train+val (5 folds)": {"router": Router, "cross_fit": 5, **common},
    }
    for spec, emb in embedders.items():
        rows[f"semantic {spec}"] = {"router": lambda emb=emb: Router(embedder=emb), **common}
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="clinc150,agent_vault", help="comma-separated datasets")
    ap.add_argument("--embedders", default="wordllama,e5-small", help="comma-separated embedder specs")
    ap.add_argument("--no-record", action="store_true", help=f"do not write {OUT.name}")
    args = ap.parse_args(argv)
    from synapse_nb.store.embedders import load_embedder

    embedders: dict[str, Any] = {}
    for spec in (s for s in args.embedders.split(",") if s):
        inner = load_embedder(spec)
        embedders[spec] = CachedEmbedder(inner) if spec == "e5-small" else inner
    recorded: list[dict[str, Any]] = []
    print(f"DEFAULTS: {DEFAULTS}")
    for ds in args.only.split(","):
        data = load_dataset(ds)
        with_desc = bool(data.route_descriptions or data.route_examples)
        for spec, emb in embedders.items():
            if isinstance(emb, CachedEmbedder):  # warm the cache, timing the first run's embedding
                t0 = time.perf_counter()
                n_before = len(emb)
                texts = list(data.texts) + list(data.route_descriptions.values()) + [
                    x for v in data.route_examples.values() for x in v]
                emb.embed(texts, query=True)
                took = time.perf_counter() - t0
                print(f"{ds}: {spec} vectors: {len(emb) - n_before} embedded now in {took:.1f}s "
                      f"({len(emb)} cached)")
        routers: dict[str, Any] = {}
        specs = rows_for(with_desc, embedders)
        for name, spec in specs.items():  # keep each fitted router, to time a cached embedder's row uncached
            make = spec["router"]
            specs[name] = spec | {"router": lambda make=make, name=name, kept=routers: kept.setdefault(name, make())}
        table = compare_routers(data, specs)
        for row in table.iter_rows(named=True):
            emb = getattr(routers[row["variant"]], "embedder", None)
            if isinstance(emb, CachedEmbedder):  # its vectors were read back: time the model itself
                router = routers[row["variant"]]
                x_test = data.split("test")[0][:200]
                router.embedder = emb.inner
                t0 = time.perf_counter()
                router.decision_scores(x_test)
                row["queries_per_second"] = len(x_test) / (time.perf_counter() - t0)
                router.embedder = emb
                print(f"{ds}: {row['variant']}: queries/s measured uncached on the first {len(x_test)} test queries; "
                      "fit_seconds excludes embedding train (cached)")
            print(f"{ds:<12} {row['variant']:<34} acc {100 * row['accuracy']:5.1f} "
                  f"[{100 * row['accuracy_lo']:5.1f}, {100 * row['accuracy_hi']:5.1f}]  in-scope "
                  f"{100 * row['in_scope_accuracy']:5.1f}  oos {100 * row['oos_recall']:5.1f}  "
                  f"NR {100 * row['nr_in_scope']:5.1f}  "
                  f"fit {row['fit_seconds']:6.1f}s  {row['queries_per_second']:9,.0f} q/s", flush=True)
            recorded.append(row)
    if not args.no_record:
        OUT.parent.mkdir(exist_ok=True)
        old = json.loads(OUT.read_text()) if OUT.exists() else []
        done = {(r["dataset"], r["variant"]) for r in recorded}
        keep = [r for r in old if (r["dataset"], r["variant"]) not in done]
        OUT.write_text(json.dumps(keep + recorded, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
