"""Team vault benchmark: a real PostgreSQL started here, 2 simulated machines (separate local folders).

Run: ``nice .venv/bin/python benchmarks/team.py [--procs 8] [--writes 500] [--sizes 10000,100000]``

Prints (asserts nothing; figures go to docs/benchmarks.md):

1. writes: ``--procs`` processes (half on machine A, half on B) x ``--writes`` mixed writes each (new memories,
   upserts of 50 shared hot keys, decisions, checkpoints): lost, duplicated, errors reaching a caller, writes/s,
   and whether gate_df/gate_stats equal a recount;
2. recall p50 at each size: the team path vs the local SQLite path on the same records (ratio; median of runs);
3. change-feed lag: a write on machine A until machine B's index search finds it (pull), until B's index holds it
   while B follows the feed (LISTEN wake-up, no search), and until B's recall gives it (p50, p95);
4. determinism: 100 queries recalled on both machines, byte-identical texts;
5. outage (``--parts outage``): on a server of its own, stopped for each of ``--outages`` seconds (default 10,60)
   while a client keeps calling: whether the first call after the server accepts connections again succeeds, and
   how long from "ready" to that call's answer (goal: < 1 s);
6. kills (``--parts kills``): ``--procs`` writer processes of decisions (the kind a cut commit used to duplicate),
   each retrying a failed call as its message says; meanwhile the server's postmaster is killed with SIGKILL and
   restarted, and one writer process is killed with SIGKILL: acknowledged writes lost and duplicated (bar: 0 / 0);
7. agent quota (``--parts agentquota``): an agent login's checkpoint write (the API) p50 / p90 with the server's
   quota triggers (migration 12) and with them disabled for the measurement, alternated in rounds (A B A B), with
   the per-round ratio; and a raw ``INSERT`` of 10,000 rows by the agent login: refused, and how long it took.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psycopg

import synapse_nb as syn
from synapse_nb.errors import BusyError, CommitUnknownError, OfflineError
from synapse_nb.store.postgres import gate_terms
from synapse_nb.store.postgres.dialect import rank_tokens
from synapse_nb.store.postgres.server import PgServer
from synapse_nb.team import init, open_team_vault

WORDS = ("deploy migrate backup retry cache index schema timeout queue worker token auth session billing invoice "
         "report metric alert latency shard replica vacuum lock commit branch review release rollback feature flag "
         "config secret tenant export import search ranking gate lesson memory notebook kernel widget").split()
HOT = 50


def text(rnd: random.Random, n: int = 12) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


def writer(args: tuple[str, str, int, int]) -> dict[str, int]:
    url, folder, proc, n = args
    rnd = random.Random(proc)
    v = open_team_vault(url, local=folder)
    done = {"new": 0, "hot": 0, "decision": 0, "checkpoint": 0, "errors": 0}
    try:
        for i in range(n):
            r = rnd.random()
            try:
                if r < 0.55:
                    v.remember("knowledge", f"p{proc}_k{i}", text(rnd))
                    done["new"] += 1
                elif r < 0.8:
                    v.remember("knowledge", f"hot_{rnd.randrange(HOT)}", text(rnd))
                    done["hot"] += 1
                elif r < 0.9:
                    v.decide(f"p{proc} decision {i}: {text(rnd, 6)}")
                    done["decision"] += 1
                else:
                    v.checkpoint(f"p{proc} step {i}: {text(rnd, 6)}", files=[f"src/m{proc}.py"])
                    done["checkpoint"] += 1
            except Exception as exc:
                print(f"error in process {proc}: {exc}", file=sys.stderr)
                done["errors"] += 1
    finally:
        v.close()
    return done


def bench_writes(url: str, a: Path, b: Path, procs: int, writes: int) -> None:
    t = time.perf_counter()
    with mp.get_context("spawn").Pool(procs) as pool:
        res = pool.map(writer, [(url, str(a if p % 2 == 0 else b), p, writes) for p in range(procs)])
    wall = time.perf_counter() - t
    v = open_team_vault(url, local=a)
    mems = v.memories.list()
    keys = [m.key for m in mems]
    new = sum(r["new"] for r in res)
    hot_keys = {k for k in keys if k.startswith("hot_")}
    lost = new - sum(1 for k in keys if not k.startswith("hot_"))
    dup = len(keys) - len(set(keys))
    total = sum(sum(r.values()) - r["errors"] for r in res)
    print(f"writes: {procs} processes on 2 machines x {writes}: {total} writes in {wall:.1f} s = "
          f"{total / wall:.0f} writes/s; lost {lost}, duplicated {dup}, errors {sum(r['errors'] for r in res)}; "
          f"hot keys {len(hot_keys)}; decisions {v.decisions.list().__len__()} of {sum(r['decision'] for r in res)}; "
          f"checkpoints {len(v.checkpoints.list())} of {sum(r['checkpoint'] for r in res)}; "
          f"frequencies vs recount: {v._store.integrity_check()}")
    v.close()


def load(url: str, project: str, local_dir: Path, n: int) -> None:
    """n memories into the team project (COPY) and into a local SQLite vault (import), same records."""
    rnd = random.Random(n)
    ts = "2026-01-01T12:00:00.000000Z"
    docs = []
    for i in range(n):
        content = text(rnd, 14)
        docs.append({"kind": "memory", "id": f"mem_{i:012x}", "mind": "default", "category": "knowledge",
                     "key": f"fact_{i}", "content": content, "tags": [], "priority": 2, "source": "user",
                     "verified": 1, "confidence": 1.0, "expires_at": None, "created_at": ts, "updated_at": ts})
    conninfo = url.split("?")[0]
    with psycopg.connect(conninfo, autocommit=True) as c, c.transaction():
        c.execute(f"SET search_path = {project}")
        with c.cursor().copy("COPY memories(id, mind, category, key, content, tags, priority, source, verified, "
                             "confidence, created_at, updated_at, terms, rank_body) FROM STDIN") as cp:
            for d in docs:
                body = f"{d['key'].replace('_', ' ')} {d['content']} "
                cp.write_row((d["id"], "default", "knowledge", d["key"], d["content"], "[]", 2, "user", 1, 1.0, ts, ts,
                              gate_terms(body), rank_tokens(body)))
        c.execute("UPDATE memories SET rank_body = stem_all(rank_body)")  # the server's stems, as a write stores
    local = syn.open_vault(local_dir)
    header = local.export_jsonl().splitlines()[0]  # the export format's header line
    local.import_jsonl([header, *(json.dumps(d) for d in docs)], trust=True)
    local.close()


def p50(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def memo_ranking(store: object) -> None:
    """Keep the team store's BM25 answers per (data version, arguments): a stand-in for the per-version ranking
    cache, to show what the rest of a team recall costs once the ranking read is cached."""
    queries = store.recall  # type: ignore[attr-defined]
    bm25, memo = queries.bm25, {}

    def cached(*args: object, **kw: object) -> object:
        key = repr((store.data_version(), args, sorted(kw.items())))  # type: ignore[attr-defined]
        if key not in memo:
            memo[key] = bm25(*args, **kw)
        return memo[key]

    queries.bm25 = cached


def bench_recall(url: str, base: Path, sizes: list[int], runs: int, memo: bool = False) -> None:
    for n in sizes:
        project = f"bench{n}"
        purl = url.split("?")[0] + f"?project={project}"
        init(purl, local=base)
        (base / f"local{n}").mkdir()
        (base / f"team{n}").mkdir()
        t = time.perf_counter()
        load(purl, project, base / f"local{n}", n)
        print(f"recall@{n}: loaded {n} records into both in {time.perf_counter() - t:.0f} s")
        team = open_team_vault(purl, local=base / f"team{n}")
        if memo:
            memo_ranking(team._store)
        local = syn.open_vault(base / f"local{n}")
        rnd = random.Random(1)
        queries = [f"how do we handle {rnd.choice(WORDS)} and {rnd.choice(WORDS)}?" for _ in range(20)]
        for v in (team, local):  # warm: index built, candidates cached, scorer loaded
            for q in queries[:3]:
                v.recall(q)
        if team._store.keeper is not None:  # steady state: this machine's offline copy built (once per machine)
            team._store.keeper.flush(300)
        lt: list[float] = []
        tt: list[float] = []
        rt0 = team._store.round_trips.count
        per_run: list[int] = []
        for _ in range(runs):
            rr = team._store.round_trips.count
            for q in queries:  # alternate, so noise hits both alike
                t0 = time.perf_counter()
                local.recall(q)
                lt.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                tt.append(0.0)
                team.recall(q)
                tt[-1] = time.perf_counter() - t0
            per_run.append(team._store.round_trips.count - rr)
        rts = (team._store.round_trips.count - rt0) / len(tt)
        again = sum(per_run[1:]) / max(1, len(queries) * (runs - 1))  # each query already recalled once
        store = team._store  # the ranking read recall engine v2 makes once per recall (BM25 over body + context)
        bt = []
        for _ in range(runs):
            for q in queries:
                t0 = time.perf_counter()
                store.recall.bm25("default", q.rstrip("?").split()[4::2], depth=200)
                bt.append(time.perf_counter() - t0)
        if not memo:
            print(f"bm25@{n} (team, 2 words, depth 200): p50 {p50(bt):.1f} ms (n={len(bt)})")
        path = team.recall(queries[0]).path
        print(f"recall@{n} ({path} path{', ranking read memoised' if memo else ''}): team p50 {p50(tt):.1f} ms, "
              f"local SQLite p50 {p50(lt):.1f} ms, "
              f"ratio {statistics.median(tt) / statistics.median(lt):.2f}x (n={len(tt)}); "
              f"{rts:.1f} round trips per team recall ({again:.1f} when the query was recalled before)")
        team.close()
        local.close()


def bench_feed_and_bytes(url: str, a_dir: Path, b_dir: Path, samples: int) -> None:
    a, b = open_team_vault(url, local=a_dir), open_team_vault(url, local=b_dir)
    b.index.search("warm")
    lags = []
    for i in range(samples):
        word = f"zq{i}x{random.Random(i).randrange(10**6)}"
        a.remember("knowledge", f"feed_{i}", f"the feed probe {word}")
        t0 = time.perf_counter()
        while not any(h.id for h in b.index.search(word, k=5)):
            time.sleep(0.005)
        lags.append(time.perf_counter() - t0)
    lags.sort()
    print(f"feed lag A write -> B index search (pull: the search syncs first, polled every 5 ms): p50 "
          f"{p50(lags):.1f} ms, p95 {lags[int(len(lags) * 0.95) - 1] * 1000:.1f} ms (n={len(lags)})")
    lags = []
    with b.index.follow(timeout=30) as f:  # push: woken by the commit's NOTIFY, reads with the snapshot rule
        f.wait_synced(0, 60)
        for i in range(samples):
            word = f"zf{i}x{random.Random(-i).randrange(10**6)}"
            a.remember("knowledge", f"follow_{i}", f"the follow probe {word}")
            t0 = time.perf_counter()
            while not b.index.raw.search(word, mind="default", now="9999", k=5):  # no sync: the follower's work
                time.sleep(0.002)
            lags.append(time.perf_counter() - t0)
    lags.sort()
    print(f"feed lag A write -> B index, B following (LISTEN wake-up, no search, checked every 2 ms): p50 "
          f"{p50(lags):.1f} ms, p95 {lags[int(len(lags) * 0.95) - 1] * 1000:.1f} ms (n={len(lags)}; "
          f"{f.syncs} syncs for {samples} writes)")
    lags = []
    for i in range(samples):
        word = f"zr{i}x{random.Random(i + 7).randrange(10**6)}"
        m = a.remember("knowledge", f"recall_{i}", f"the recall probe {word}")
        t0 = time.perf_counter()
        while m.id not in [x.id for x in b.recall(f"recall probe {word}").items]:
            time.sleep(0.002)
        lags.append(time.perf_counter() - t0)
    lags.sort()
    print(f"lag A write -> B recall (recall reads the server): p50 {p50(lags):.1f} ms, p95 "
          f"{lags[int(len(lags) * 0.95) - 1] * 1000:.1f} ms (n={len(lags)})")
    rnd = random.Random(7)
    queries = [f"{rnd.choice(WORDS)} {rnd.choice(WORDS)} {rnd.choice(WORDS)}" for _ in range(100)]
    same = sum(a.recall(q).text == b.recall(q).text for q in queries)
    print(f"determinism: {same}/100 recall texts byte-identical on both machines (recall has one path since v2)")
    a.close()
    b.close()


def bench_outage(outages: list[float]) -> None:
    srv = PgServer.launch()
    base = Path(tempfile.mkdtemp(prefix="synapse-team-outage-"))
    try:
        url = f"{srv.url}?project=outage"
        init(url, local=base)
        v = open_team_vault(url, local=base)
        v.remember("knowledge", "deploys", "deploys go through the canary first")
        for outage in outages:
            v.recall("how do deploys go?")
            srv.stop()
            end, failed = time.monotonic() + outage, 0
            while time.monotonic() < end:  # a client that keeps calling during the outage
                try:
                    v.recall("how do deploys go?")
                except OfflineError:
                    failed += 1
                time.sleep(min(1.0, max(0.0, end - time.monotonic())))
            srv.start(port=srv.port)  # pg_ctl -w: returns once the server accepts connections
            ready = time.monotonic()
            tries = 0
            while True:
                tries += 1
                try:
                    v.recall("how do deploys go?")
                    break
                except OfflineError:
                    time.sleep(0.05)
            print(f"outage {outage:.0f} s: {failed} calls refused during it (OfflineError); first call after the "
                  f"server was ready {'succeeded' if tries == 1 else f'failed, call {tries} succeeded'}, "
                  f"{time.monotonic() - ready:.2f} s after ready")
        v.close()
    finally:
        srv.destroy()


def kill_writer(args: tuple[str, str, int, int, str]) -> None:
    url, folder, proc, n, ack = args
    v = open_team_vault(url, local=folder)
    with open(ack, "a", encoding="utf-8") as out:
        for i in range(n):
            text_i = f"p{proc} decision {i}"
            deadline = time.monotonic() + 120
            while True:
                try:
                    v.decide(text_i)
                    break
                except (OfflineError, CommitUnknownError, BusyError) as exc:  # each says: call again
                    print(f"writer {proc}, {text_i}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr, flush=True)
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            out.write(text_i + "\n")
            out.flush()


def bench_kills(procs: int, writes: int) -> None:
    srv = PgServer.launch()
    base = Path(tempfile.mkdtemp(prefix="synapse-team-kills-"))
    try:
        url = f"{srv.url}?project=kills"
        init(url, local=base)
        ctx = mp.get_context("spawn")
        acks = [base / f"ack{p}.txt" for p in range(procs)]
        workers = [ctx.Process(target=kill_writer, args=((url, str(base), p, writes, str(acks[p])),))
                   for p in range(procs)]
        for w in workers:
            w.start()

        def n_acked() -> int:
            return sum(len(a.read_text().splitlines()) for a in acks if a.exists())

        def wait_for(n: int) -> None:
            while n_acked() < n and any(w.is_alive() for w in workers):
                time.sleep(0.05)

        wait_for(procs * writes // 3)  # a third written: kill the server mid-load
        pid = int((srv.data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)  # the postmaster, as kill -9; its backends exit when they notice
        time.sleep(1.0)
        for _ in range(20):
            try:
                srv.start(port=srv.port)
                break
            except Exception:  # the old backends still hold the port or shared memory
                time.sleep(0.5)
        wait_for(procs * writes * 2 // 3)  # two thirds: kill a client mid-write
        os.kill(workers[0].pid or 0, signal.SIGKILL)
        for w in workers:
            w.join()
        acked = [line for a in acks if a.exists() for line in a.read_text().splitlines()]
        v = open_team_vault(url, local=base)
        stored = [d.decision for d in v.decisions.list(limit=None)]
        lost = len(set(acked) - set(stored))
        dup = len(stored) - len(set(stored))
        print(f"kills: {procs} writers x {writes} decisions, postmaster SIGKILLed and restarted, writer 0 SIGKILLed: "
              f"{len(acked)} acknowledged, {len(stored)} stored; lost {lost}, duplicated {dup}; "
              f"frequencies vs recount: {v._store.integrity_check()}"
              + (f"; lost: {sorted(set(acked) - set(stored))[:5]}" if lost else ""))
        v.close()
    finally:
        srv.destroy()


def bench_agent_quota(srv: PgServer, base: Path, rounds: int = 6, writes: int = 100) -> None:
    """The server-side agent quota's cost on an agent's write, and a raw flood's refusal (part 7)."""
    url = f"{srv.url}?project=aq"
    folder = base / "machine_aq"
    folder.mkdir()
    init(url, local=folder)
    human = open_team_vault(url, local=folder)
    human.settings.set("agent_writes_per_hour", 10_000_000)
    with psycopg.connect(srv.url, autocommit=True) as c:
        c.execute("CREATE ROLE aq_bot LOGIN IN ROLE aq_agent")
        c.execute("INSERT INTO aq.mind_grants(grantee, mind) VALUES ('aq_bot', '*')")
    scheme, rest = srv.url.split("://", 1)
    bot_url = f"{scheme}://aq_bot@{rest.split('@', 1)[-1]}"
    agent = open_team_vault(f"{bot_url}?project=aq", local=folder, actor="agent")

    def triggers(on: bool) -> None:
        verb = "ENABLE" if on else "DISABLE"
        with psycopg.connect(srv.url, autocommit=True) as c:
            names = c.execute("SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE tgname LIKE '%agent_rate%' "
                              "AND tgrelid::regclass::text LIKE 'aq.%' ORDER BY 1, 2").fetchall()
            for table, name in names:
                c.execute(f"ALTER TABLE {table} {verb} TRIGGER {name}")

    def timed(n: int) -> list[float]:
        out = []
        for i in range(n):
            t0 = time.perf_counter()
            agent.checkpoint(f"agent step {i} of the quota benchmark", next_step="the next one")
            out.append((time.perf_counter() - t0) * 1000)
        return sorted(out)

    timed(20)  # warm the pool and the caches
    on_all, off_all, ratios = [], [], []
    for _ in range(rounds):
        on = timed(writes)
        triggers(False)
        off = timed(writes)
        triggers(True)
        on_all += on
        off_all += off
        ratios.append(statistics.median(on) / statistics.median(off))
    on_all.sort()
    off_all.sort()
    med = statistics.median
    print(f"agent quota: agent checkpoint write p50 / p90 {med(on_all):.2f} / {on_all[len(on_all) * 9 // 10]:.2f} ms "
          f"with the server's quota triggers, {med(off_all):.2f} / {off_all[len(off_all) * 9 // 10]:.2f} ms without "
          f"({rounds} rounds x {writes} writes); per-round ratio of medians "
          f"{', '.join(f'{r:.2f}' for r in ratios)}, median {statistics.median(ratios):.2f}x")
    human.settings.set("agent_writes_per_hour", 600)
    with psycopg.connect(bot_url, autocommit=True) as c:
        c.execute("SET search_path = aq")
        t0 = time.perf_counter()
        try:
            c.execute("INSERT INTO checkpoints(id, mind, doing, origin, source, created_at, updated_at, terms) "
                      "SELECT 'ckp_flood' || i, 'default', 'flood ' || i, 'agent', 'agent', "
                      "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', '{flood}' "
                      "FROM generate_series(1, 10000) i")
            verdict = "ACCEPTED"
        except psycopg.errors.ConfigurationLimitExceeded as e:
            verdict = f"refused ({e.diag.message_primary})"
        took = (time.perf_counter() - t0) * 1000
        kept = c.execute("SELECT count(*) FROM checkpoints WHERE id LIKE 'ckp_flood%'").fetchone()
    print(f"agent quota: a raw INSERT of 10,000 checkpoints by the agent login: {verdict} in {took:.0f} ms; "
          f"rows kept: {kept[0] if kept else '?'}")
    agent.close()
    human.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--writes", type=int, default=500)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--feed-samples", type=int, default=50)
    ap.add_argument("--parts", default="writes,feed,recall,outage,kills,agentquota",
                    help="which parts to run (comma-separated)")
    ap.add_argument("--outages", default="10,60", help="outage part: seconds the server is away, each in turn")
    ap.add_argument("--memo-ranking", action="store_true",
                    help="recall part: keep the team's BM25 answers per data version (the rest of the path alone)")
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="synapse-team-bench-"))
    srv = PgServer.launch()
    print(f"server: PostgreSQL started in {srv.initdb_seconds + srv.start_seconds:.2f} s (initdb + start)")
    try:
        url = f"{srv.url}?project=bench"
        ma, mb = base / "machine_a", base / "machine_b"
        ma.mkdir()
        mb.mkdir()
        init(url, local=ma)
        parts = a.parts.split(",")
        if "writes" in parts:
            bench_writes(url, ma, mb, a.procs, a.writes)
        if "feed" in parts:
            bench_feed_and_bytes(url, ma, mb, a.feed_samples)
        if "recall" in parts:
            bench_recall(url, base, [int(x) for x in a.sizes.split(",") if x], a.runs, a.memo_ranking)
        if "outage" in parts:
            bench_outage([float(x) for x in a.outages.split(",") if x])
        if "kills" in parts:
            bench_kills(a.procs, a.writes // 2)
        if "agentquota" in parts:
            bench_agent_quota(srv, base)
    finally:
        srv.destroy()


if __name__ == "__main__":
    main()
