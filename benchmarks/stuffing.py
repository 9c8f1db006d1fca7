"""Stuffing and flood benchmark (issue 26, finding 7): prints figures, asserts nothing.

Run: ``.venv/bin/python benchmarks/stuffing.py [--sizes 10000,100000]``

1. **Stuffing.** A vault of the agent_vault set (datasets/agent_vault): its 20 hubs as verified user memories and
   its 220 train requests as agent checkpoints (what an agent's session leaves). An agent memory stuffed with
   the vault's 30 most common non-stop words (content) and 10 of them as tags (the most a write accepts), and a
   legacy record with all 30 as tags (stored by an older version, through the import path). Share of 20
   unrelated queries (the test split, evenly spaced) whose recall holds the stuffed record (goal <= 1/20); the
   same over every test query, and over those sharing a word with it.
2. **Verified first.** A user's verified deploy procedure and N competing agent memories ("deploy", "deploy
   3", ...): does every one of five deploy questions recall the procedure? (goal: always, N = 6 and 50).
3. **Answer budget.** ``get_approved_memory`` (MCP, in process) on vaults of 10k and 100k memories (bulk import):
   characters and estimated tokens against ``mcp_answer_tokens`` (8,000 by default).
4. **Quotas.** 20,000 agent writes tried: how many the default ``agent_writes_per_hour`` lets through, and the
   p50 of one agent ``remember`` (the quota's two counts included) at each vault size.
"""

from __future__ import annotations

import argparse
import collections
import csv
import inspect
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this checkout's synapse_nb, and this folder off the import path so ``import mcp`` finds the SDK (not mcp.py here)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import synapse_nb as syn  # noqa: E402 - must follow the sys.path set-up above
from synapse_nb.errors import QuotaExceededError  # noqa: E402 - must follow the sys.path set-up above
from synapse_nb.recall.rank import RANK_STOP_WORDS, rank_words  # noqa: E402 - must follow the sys.path set-up above
from synapse_nb.text import FTS_TOKEN_RE  # noqa: E402 - must follow the sys.path set-up above

DATA = ROOT / "datasets" / "agent_vault"


class Clock:
    """A clock that moves one millisecond a call (writes keep their order; an hour passes only when told)."""

    def __init__(self) -> None:
        self.t = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(milliseconds=1)
        return self.t


def _import(v: syn.Vault, lines: list[str]) -> None:
    """Bulk import; passes ``trust=True`` where import asks for it (records claiming a user's provenance)."""
    kw = {"trust": True} if "trust" in inspect.signature(v.import_jsonl).parameters else {}
    v.import_jsonl(lines, **kw)


def stuffing() -> None:
    hubs = [json.loads(line) for line in (DATA / "hubs.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = list(csv.DictReader((DATA / "queries.csv").open(encoding="utf-8")))
    clock = Clock()
    d = tempfile.mkdtemp()
    v, a = syn.open_vault(d, clock=clock), syn.open_vault(d, actor="agent", clock=clock)
    v.settings.set("agent_writes_per_hour", 100_000)
    texts = []
    for h in hubs:
        v.remember("knowledge", h["name"], h["trigger"], tags=[h["name"].replace("_", "-")])
        texts.append(h["trigger"])
    for r in rows:
        if r["split"] == "train":
            a.checkpoint(r["text"])
            texts.append(r["text"])
    df = collections.Counter(w for t in texts for w in set(FTS_TOKEN_RE.findall(t.lower()))
                             if w not in RANK_STOP_WORDS and len(w) > 2)
    common = sorted(df, key=lambda w: (-df[w], w))[:30]
    stuffed = a.remember("knowledge", "useful_notes", " ".join(common), tags=common[:10])
    # a legacy record: 30 tags, as an older version stored it (import keeps what it finds)
    header, line = v.export_jsonl().splitlines()[:2]
    legacy_doc = dict(json.loads(line), id="mem_00legacy0030", key="legacy_notes", content="notes for later",
                      tags=sorted(common), source="agent", verified=False, confidence=0.7)
    legacy_doc["verified"] = 0
    _import(v, [header, json.dumps(legacy_doc, sort_keys=True)])
    tests = [r["text"] for r in rows if r["split"] == "test"]
    step = len(tests) / 20
    unrelated = [tests[int(i * step)] for i in range(20)]
    sharing = [q for q in tests if set(rank_words(q)) & set(common)]
    print(f"stuffing: vault of {len(hubs)} hub memories + {len(texts) - len(hubs)} agent checkpoints; stuffed with "
          f"{', '.join(common[:6])}, ... ({len(common)} words, 10 tags)")
    for name, rid in (("stuffed agent memory (30 words, 10 tags)", stuffed.id),
                      ("legacy record (30 tags)", legacy_doc["id"])):
        for label, qs in (("20 unrelated queries", unrelated), ("all test queries", tests),
                          ("test queries sharing a stuffed word", sharing)):
            hits = sum(rid in {i.id for i in v.recall(q).items} for q in qs)
            goal = f"  goal <= 1/20 ({'ok' if hits <= 1 else 'OVER'})" if qs is unrelated else ""
            print(f"  {name:<42} {label:<38} {hits:>3} / {len(qs):<3} ({hits / len(qs):.1%}){goal}")


def verified_first() -> None:
    questions = ["how do we deploy", "deploy", "deploy steps", "how to deploy the api", "what is the deploy process"]
    for n in (0, 6, 50):
        d = tempfile.mkdtemp()
        clock = Clock()
        v, a = syn.open_vault(d, clock=clock), syn.open_vault(d, actor="agent", clock=clock)
        proc = v.remember("procedure", "deploy_procedure", "Deploy procedure: run make release, then helm upgrade "
                          "the api chart, watch Argo CD until it is synced, then run the smoke checks against "
                          "production.")
        for i in range(n):
            a.remember("knowledge", f"deploy_{i}", "deploy" if i % 2 == 0 else f"deploy {i}")
        kept = [proc.id in {i.id for i in v.recall(q).items} for q in questions]
        if n == 0:  # the questions that recall it alone: the ones a flood could push it out of
            questions = [q for q, k in zip(questions, kept, strict=True) if k]
            print(f"verified first: alone, the verified procedure is recalled by {sum(kept)}/{len(kept)} deploy "
                  "questions; with competitors, on those:")
            continue
        print(f"verified first: {n:>2} competing agent memories: the verified procedure is recalled by "
              f"{sum(kept)}/{len(questions)} (goal: always: {'ok' if all(kept) else 'NO'})")


def bulk_vault(size: int) -> Path:
    d = Path(tempfile.mkdtemp())
    with syn.open_vault(d) as t:
        t.remember("knowledge", "template", "x")
        header, line = t.export_jsonl().splitlines()[:2]
    tpl = json.loads(line)
    old = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # written yesterday
    tpl.update(created_at=old, updated_at=old)
    cats = ("identity", "preference", "project", "context", "knowledge", "mistake", "procedure", "relationship")
    proj = d / "vault"
    proj.mkdir()
    with syn.open_vault(proj) as v:
        for start in range(0, size, 20_000):
            lines = [header]
            for i in range(start, min(size, start + 20_000)):
                agent = i % 2 == 1
                lines.append(json.dumps(dict(
                    tpl, id=f"mem_{i:012x}", category=cats[i % 8], key=f"fact_{i}",
                    content=f"fact number {i}: the build of module {i % 97} takes {i % 13} minutes on runner {i % 7}",
                    tags=[f"m{i % 97}"], priority=i % 4, source="agent" if agent else "user", verified=int(not agent),
                    confidence=0.7 if agent else 1.0), sort_keys=True))
            _import(v, lines)
        # half the memories are an agent's: raise the per-mind quota so the timed writes pass (counted all the same)
        v.settings.set_many({"agent_writes_per_hour": 10_000_000, "agent_memories_per_mind": 100_000_000})
    return proj


def answer_budget_and_quota(sizes: list[int]) -> None:
    import anyio
    from mcp import Client

    from synapse_nb.mcp.server import build_server

    async def approved(project: Path) -> tuple[int, int]:
        async with Client(build_server(project)) as c:
            r = await c.call_tool("get_approved_memory", {})
        body = r.content[0].text
        data = json.dumps(r.structured_content or {}, ensure_ascii=False)
        return len(body), len(body) + len(data)

    for size in sizes:
        t0 = time.perf_counter()
        proj = bulk_vault(size)
        built = time.perf_counter() - t0
        text_chars, total = anyio.run(approved, proj)
        budget = syn.open_vault(proj).settings.get("mcp_answer_tokens")
        tokens = -(-total // 4)
        print(f"get_approved_memory at {size:>7,} memories (built in {built:.0f} s): text {text_chars:,} chars, "
              f"text + structured {total:,} chars ~ {tokens:,} tokens; budget {budget:,} "
              f"({'ok' if tokens <= budget else 'OVER'})")
        a = syn.open_vault(proj, actor="agent")
        lat = []
        for i in range(200):
            t = time.perf_counter()
            a.remember("knowledge", f"agent_fact_{i}", f"agent fact {i}")
            lat.append(time.perf_counter() - t)
        store = a._ctx.store
        since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        counts = []
        for _ in range(200):
            t = time.perf_counter()
            store.meta.agent_writes(since)
            store.meta.agent_memories("default")
            counts.append(time.perf_counter() - t)
        print(f"  agent remember p50 {statistics.median(lat) * 1000:.2f} ms, of which the quota's counts p50 "
              f"{statistics.median(counts) * 1000:.2f} ms ({size // 2:,} agent memories held)")

    d = tempfile.mkdtemp()
    a = syn.open_vault(d, actor="agent")
    ok = refused = 0
    t0 = time.perf_counter()
    for i in range(20_000):
        try:
            a.checkpoint(f"flood {i}")
            ok += 1
        except QuotaExceededError:
            refused += 1
    print(f"flood: 20,000 agent checkpoints tried in {time.perf_counter() - t0:.1f} s: {ok:,} written, "
          f"{refused:,} refused by agent_writes_per_hour (default 600)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="vault sizes for the answer budget (comma-separated)")
    args = ap.parse_args()
    stuffing()
    verified_first()
    answer_budget_and_quota([int(s) for s in args.sizes.split(",") if s])


if __name__ == "__main__":
    main()
