"""MCP server benchmark over stdio with the SDK client (prints figures, asserts nothing).

Run: ``.venv/bin/python benchmarks/mcp.py [--calls 200] [--records 10000]``

- server start to first answer (spawn ``synapse-nb mcp`` + handshake + ``get_status``), target <= 0.3 s;
- per-call p50 of ``create_checkpoint`` and ``log_decision`` (target <= 3 ms);
- per-call p50 of ``recall`` on a vault of N memories (target <= 10 ms);
- answer sizes on that vault (characters of text plus structured JSON, what a client receives) next to the answer
  budget (``mcp_answer_tokens`` x 4 characters): ``get_approved_memory``, ``search`` with a 100-result limit,
  ``recall`` with a 10,000-character query, and a 20M-character ``search`` query (refused in one line);
- per-call p50 of ``get_status`` in a git repository (``git ls-files`` is kept per index change).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

# this file is named mcp.py: keep its folder off the import path so ``import mcp`` finds the SDK
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def show(name: str, xs: list[float], target_ms: float | None) -> None:
    p50 = statistics.median(xs) * 1000
    tgt = f"  target <= {target_ms:g} ms ({'ok' if p50 <= target_ms else 'OVER'})" if target_ms else ""
    print(f"{name:<40} p50 {p50:8.2f} ms  p90 {pct(xs, 0.9) * 1000:8.2f} ms  (n={len(xs)}){tgt}")


async def bench(project: Path, big: Path, repo: Path, calls: int, records: int) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    starts = []
    for _ in range(5):
        t = time.perf_counter()
        async with Client(StdioServerParameters(command=sys.executable,
                                                args=["-m", "synapse_nb", "mcp", str(project)])) as c:
            await c.call_tool("get_status", {})
            starts.append(time.perf_counter() - t)
    show("server start to first answer", starts, 300)

    async with Client(StdioServerParameters(command=sys.executable,
                                            args=["-m", "synapse_nb", "mcp", str(project)])) as c:
        for tool, args in (("create_checkpoint", {"doing": "bench step", "changed_files": ["a.py"]}),
                           ("log_decision", {"decision": "bench decision", "rationale": "because"})):
            xs = []
            for _ in range(calls):
                t = time.perf_counter()
                r = await c.call_tool(tool, args)
                xs.append(time.perf_counter() - t)
                assert not r.is_error
            show(tool, xs, 3)
    async with Client(StdioServerParameters(command=sys.executable, args=["-m", "synapse_nb", "mcp", str(big)])) as c:
        await c.call_tool("recall", {"query": "warm up the payment retry"})
        xs = []
        for i in range(calls):
            t = time.perf_counter()
            r = await c.call_tool("recall", {"query": f"how does the payment retry work {i % 7}?"})
            xs.append(time.perf_counter() - t)
            assert not r.is_error
        show(f"recall ({records} memories)", xs, 10)

        budget = 8000 * 4  # the default mcp_answer_tokens, in characters
        cases = (("get_approved_memory", {}), ("search", {"query": "payment", "kind": "memory", "limit": 100}),
                 ("recall", {"query": "how does the payment retry work " * 320, "session_id": "bench"}),
                 ("search", {"query": "x" * 20_000_000}))
        for tool, args in cases:
            r = await c.call_tool(tool, args)
            size = sum(len(b.text) for b in r.content if b.type == "text")
            size += len(json.dumps(r.structured_content, ensure_ascii=False)) if r.structured_content else 0
            q = args.get("query")
            label = f"{tool}" + (f" (query {len(q):,} chars)" if isinstance(q, str) and len(q) > 100 else "")
            print(f"answer size {label:<44} {size:>10,} chars  budget {budget:,}  "
                  f"({'ok' if size <= budget else 'OVER'}{', refused' if r.is_error else ''})")

    async with Client(StdioServerParameters(command=sys.executable, args=["-m", "synapse_nb", "mcp", str(repo)])) as c:
        await c.call_tool("get_status", {})
        xs = []
        for _ in range(calls):
            t = time.perf_counter()
            await c.call_tool("get_status", {})
            xs.append(time.perf_counter() - t)
        show("get_status (git repository)", xs, None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--records", type=int, default=10_000)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import synapse_nb as syn

    tmp = Path(tempfile.mkdtemp(prefix="synapse-bench-mcp-"))
    try:
        project, big, repo = tmp / "small", tmp / "big", tmp / "repo"
        project.mkdir()
        big.mkdir()
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        syn.open_vault(repo).remember("knowledge", "k", "v")
        v = syn.open_vault(big)
        words = ["deploy", "migration", "auth", "cache", "retry", "payment", "index", "schema", "queue", "billing",
                 "token", "session", "worker", "api", "client", "build", "test", "release", "config", "logging"]
        with v.transaction():
            for i in range(a.records):
                w = [words[(i * k + 3) % len(words)] for k in (1, 7, 13)]
                v.remember("knowledge", f"fact_{i}", f"{w[0]} {w[1]} note {i}: how the {w[2]} works", tags=[w[0]])
        v.close()
        print(f"python {sys.version.split()[0]}; vault of {a.records} memories built")
        anyio.run(bench, project, big, repo, a.calls, a.records)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
