"""Workers and checkers shared by the reliability tests and ``benchmarks/reliability.py``.

A worker is a separate process (``python harness.py MODE VAULT JOURNAL SEED N [--cli N]``) that
performs a seeded mix of operations on one vault and journals them to its own file:

- ``{"op": "intent", ...}`` is written *before* a write is attempted,
- ``{"op": "ack", ...}`` only after the call returned (the write is acknowledged),
- ``{"op": "error", ...}`` when any exception reached the caller (the load tests require none).

Each write carries a unique token (``zq<worker>k<n>``) in its text, so the checker can count, per
token, how many records hold it: an acknowledged write must be there exactly once, and nothing may
be there that no worker ever intended. :func:`verify_vault` also checks SQLite's integrity, that the
derived rows (FTS, tags, gate documents) agree with the records, and that the LanceDB index agrees
with SQLite after a sync.

Killing a worker with SIGKILL at any point leaves at most a partial last journal line, which the
reader ignores.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Errors pinned by a strict-xfail test (core_bugs.md); the load tests count them apart until they are fixed.
KNOWN_RACES: tuple[str, ...] = ()  # errors tolerated as known races: none (core bug 12 is fixed)
#: Kinds a worker writes, and the operations it mixes in (weights).
WRITE_OPS = ("memory", "agent_memory", "checkpoint", "decision", "lesson", "episode", "note", "update", "delete")
READ_OPS = ("recall", "search", "sync", "status")
_WEIGHTS = {"memory": 14, "agent_memory": 8, "checkpoint": 8, "decision": 8, "lesson": 5, "episode": 8, "note": 5,
            "update": 8, "delete": 4, "recall": 14, "search": 8, "sync": 5, "status": 5}
#: The bounded (CI) mix: the same operations, fewer of the slow ones (recall ~0.1 s, index sync ~0.2 s alone).
_LIGHT = {**_WEIGHTS, "recall": 4, "sync": 1}
_TABLE = {"memory": "memories", "checkpoint": "checkpoints", "decision": "decisions", "lesson": "lessons",
          "episode": "episodes", "note": "notes"}
_RECORD_KINDS = tuple(sorted(_TABLE))
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def token(worker: int, n: int) -> str:
    """The unique word a worker's n-th write carries (one FTS token: letters and digits only)."""
    return f"zq{worker}k{n}"


class Journal:
    """Append-only JSON-lines journal written with one ``os.write`` per line (O_APPEND)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **entry: Any) -> None:
        os.write(self._fd, (json.dumps(entry, sort_keys=True) + "\n").encode())


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Entries of a journal; a last line cut short by a kill is ignored."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _cli(vault_dir: str, *args: str) -> dict[str, Any]:
    """Run the CLI as a separate process (the way a human would) and return its JSON output."""
    proc = subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", vault_dir, *args, "--json"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    if proc.returncode != 0 or "Traceback" in proc.stderr:
        raise RuntimeError(f"CLI {args[:2]} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def run_worker(mode: str, vault_dir: str, journal_path: str, seed: int, n_ops: int, cli_ops: int = 0,
               worker: int | None = None) -> None:
    """Perform ``n_ops`` seeded operations on the vault (see the module docstring).

    ``mode`` is ``"load"`` or ``"light"`` (every kind of write and read mixed) or ``"write"`` (writes only, as fast
    as possible: the crash tests kill it) or ``"sync"`` (only index syncs, after the vault was filled).
    """
    import synapse_nb as syn

    wid = seed if worker is None else worker
    rng = random.Random(seed)
    j = Journal(Path(journal_path))
    v = syn.open_vault(vault_dir)
    agent = v.as_agent()
    mine: list[tuple[str, str, str]] = []  # (id, token, actor) of this worker's memories still alive
    table = _LIGHT if mode == "light" else _WEIGHTS
    ops = [op for op in table if mode in ("load", "light") or op in WRITE_OPS]
    weights = [table[op] for op in ops]
    cli_every = max(1, n_ops // cli_ops) if cli_ops else 0
    j.write(op="start", pid=os.getpid())
    if mode == "sync":
        for _ in range(n_ops):
            j.write(op="sync_start")
            v.index.sync()
            j.write(op="sync_done")
        return
    for n in range(n_ops):
        tok = token(wid, n)
        op = "cli" if cli_every and n % cli_every == cli_every - 1 else rng.choices(ops, weights)[0]
        if op in ("update", "delete") and not mine:
            op = "memory"
        t0 = time.perf_counter()
        try:
            if op == "memory":
                j.write(op="intent", kind="memory", token=tok)
                m = v.remember("knowledge", f"w{wid}_n{n}", f"{tok} fact number {n} " + "x" * rng.randint(0, 400),
                               tags=[f"t{rng.randint(0, 9)}", "load"], priority=rng.choice(["low", "normal", "high"]))
                mine.append((m.id, tok, "user"))
                j.write(op="ack", kind="memory", id=m.id, token=tok)
            elif op == "agent_memory":
                j.write(op="intent", kind="memory", token=tok)
                m = agent.remember("context", f"a{wid}_n{n}", f"{tok} agent proposal {n}", tags=["agent"])
                mine.append((m.id, tok, "agent"))
                j.write(op="ack", kind="memory", id=m.id, token=tok)
            elif op == "checkpoint":
                j.write(op="intent", kind="checkpoint", token=tok)
                c = (agent if n % 2 else v).checkpoint(f"{tok} working on step {n}", files=[f"src/m{n % 7}.py"],
                                                       next_step=f"{tok} next", blockers=None)
                j.write(op="ack", kind="checkpoint", id=c.id, token=tok)
            elif op == "decision":
                j.write(op="intent", kind="decision", token=tok)
                d = v.decide(f"{tok} use option {n % 3}", rationale=f"{tok} because reasons", tags=["load"])
                j.write(op="ack", kind="decision", id=d.id, token=tok)
            elif op == "lesson":
                j.write(op="intent", kind="lesson", token=tok)
                les = v.lessons.create(f"{tok} reverted change {n}", files=[f"src/l{n % 5}.py"])
                j.write(op="ack", kind="lesson", id=les.id, token=tok)
            elif op == "episode":
                j.write(op="intent", kind="episode", token=tok)
                e = v.episodes.log(f"task_{tok}", status=rng.choice(["success", "failure"]), outcome=f"{tok} ran")
                j.write(op="ack", kind="episode", id=e.id, token=tok)
            elif op == "note":
                j.write(op="intent", kind="note", token=tok)
                note = v.notes.add(f"note_{tok}", f"{tok} when needed", f"{tok} body text")
                j.write(op="ack", kind="note", id=note.id, token=tok)
            elif op == "update":
                i = rng.randrange(len(mine))
                mid, _old, actor = mine[i]
                j.write(op="intent", kind="memory", token=tok, id=mid)
                (agent if actor == "agent" else v).memories.update(mid, content=f"{tok} updated fact {n}")
                mine[i] = (mid, tok, actor)
                j.write(op="ack", kind="memory", id=mid, token=tok, update=True)
            elif op == "delete":
                mid, old, actor = mine.pop(rng.randrange(len(mine)))
                j.write(op="intent_delete", kind="memory", id=mid, token=old)
                (agent if actor == "agent" else v).memories.delete(mid)
                j.write(op="ack_delete", kind="memory", id=mid, token=old)
            elif op == "recall":
                r = v.recall(f"fact number {rng.randint(0, n_ops)} load", session=f"s{wid}")
                assert isinstance(r.text, str)
            elif op == "search":
                v.memories.search(f"fact {rng.randint(0, n_ops)}")
                v.decisions.search("option")
            elif op == "sync":
                v.index.sync()
            elif op == "status":
                v.status()
            elif op == "cli":
                j.write(op="intent", kind="memory", token=tok)
                doc = _cli(vault_dir, "remember", "procedure", f"c{wid}_n{n}", f"{tok} via the command line")
                j.write(op="ack", kind="memory", id=doc["id"], token=tok, cli=True)
                _cli(vault_dir, "recall", f"{tok} command line")
        except Exception as exc:  # noqa: BLE001 - fuzz worker: every error that reaches a caller is a finding
            j.write(op="error", what=op, type=type(exc).__name__, msg=str(exc)[:500],
                    tb=traceback.format_exc()[-2000:])
        else:
            j.write(op="timing", what=op, s=round(time.perf_counter() - t0, 4))
    j.write(op="done")
    v.close()


# -------------------------------------------------------------------------------------------- checking
@dataclass
class Report:
    """What :func:`verify_vault` found; ``problems`` is empty when every promise held."""

    acked: int = 0
    records: int = 0
    errors: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    integrity: str = ""


def _token_of(text: str | None) -> str | None:
    if not text:
        return None
    first = text.split()[0] if text.split() else ""
    if first.startswith(("task_", "note_")):
        first = first[5:]
    return first if first.startswith("zq") else None


def _record_tokens(doc: dict[str, Any]) -> str | None:
    kind = doc["kind"]
    text = {"memory": doc.get("content"), "checkpoint": doc.get("doing"), "decision": doc.get("decision"),
            "lesson": doc.get("summary"), "episode": doc.get("task_key"), "note": doc.get("name")}.get(kind)
    return _token_of(text)


def verify_vault(vault_dir: str | Path, journals: list[Path], *, allow_errors: bool = False,
                 check_index: bool = True) -> Report:
    """Check every promise of the load/crash tests against a vault and its workers' journals."""
    import synapse_nb as syn

    rep = Report()
    entries = [e for p in journals for e in read_journal(p)]
    errors = [f"{e['what']}: {e['type']}: {e['msg']}" for e in entries if e["op"] == "error"]
    rep.known = [x for x in errors if x in KNOWN_RACES]
    rep.errors = [x for x in errors if x not in KNOWN_RACES]
    if rep.errors and not allow_errors:
        rep.problems.append(f"{len(rep.errors)} errors reached a caller, first: {rep.errors[0]}")
    intended = {e["token"] for e in entries if e["op"] == "intent"}
    # the last acknowledged state of every record id, and ids whose deletion was acknowledged / attempted
    last_ack: dict[str, tuple[str, str]] = {}
    pending_update: dict[str, set[str]] = {}
    deleted, delete_tried = set(), set()
    for e in entries:
        if e["op"] == "ack":
            last_ack[e["id"]] = (e["kind"], e["token"])
            pending_update.pop(e["id"], None)
        elif e["op"] == "intent" and e.get("id"):
            pending_update.setdefault(e["id"], set()).add(e["token"])
        elif e["op"] == "intent_delete":
            delete_tried.add(e["id"])
        elif e["op"] == "ack_delete":
            deleted.add(e["id"])
    rep.acked = len(last_ack)

    v = syn.open_vault(vault_dir)
    try:
        rep.integrity = v._store.integrity_check()
        if rep.integrity != "ok":
            rep.problems.append(f"integrity_check: {rep.integrity}")
        docs = [json.loads(line) for line in v.export_jsonl().splitlines()[1:]]
        docs = [d for d in docs if d.get("kind") in _TABLE]
        rep.records = len(docs)
        by_id = {d["id"]: d for d in docs}
        seen_tokens: dict[str, list[str]] = {}
        for d in docs:
            tok = _record_tokens(d)
            if tok is None:
                continue
            seen_tokens.setdefault(tok, []).append(d["id"])
            if tok not in intended:
                rep.problems.append(f"{d['kind']} {d['id']} holds token {tok} that no worker intended (phantom)")
        for rid, (kind, tok) in sorted(last_ack.items()):
            if rid in deleted:
                if rid in by_id:
                    rep.problems.append(f"{kind} {rid} was deleted (acknowledged) but is still there")
                continue
            d = by_id.get(rid)
            if d is None:
                if rid not in delete_tried:
                    rep.problems.append(f"acknowledged {kind} {rid} ({tok}) is missing")
                continue
            got = _record_tokens(d)
            if got != tok and got not in pending_update.get(rid, set()):
                rep.problems.append(f"{kind} {rid} holds {got}, expected the acknowledged {tok}")
            if len(seen_tokens.get(got or tok, [])) != 1:
                rep.problems.append(f"token {got} is in {len(seen_tokens.get(got or tok, []))} records, not 1")
        # derived rows agree with the records (no half-written record is visible)
        rep.problems += consistency_problems(v, docs)
        if check_index:
            v.index.sync()
            drift = v.index.check()
            if not drift.ok:
                rep.problems.append(f"index drift after sync: missing {len(drift.missing)}, stale "
                                    f"{len(drift.stale)}, extra {len(drift.extra)}")
    finally:
        v.close()
    return rep


def consistency_problems(v: Any, docs: list[dict[str, Any]]) -> list[str]:
    """FTS, tags and gate documents agree with the records: each record's token finds exactly it."""
    problems: list[str] = []
    conn = sqlite3.connect(v.db_path, isolation_level=None)
    try:
        for table in sorted(_TABLE.values()):  # FTS5's own structural check (raises on a corrupt index)
            try:
                conn.execute(f"INSERT INTO {table}_fts({table}_fts) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{table}_fts integrity-check: {exc}")
        for kind in ("memory", "decision"):
            table = _TABLE[kind]
            want = sorted((t, d["id"]) for d in docs if d["kind"] == kind for t in d["tags"])
            got = sorted(conn.execute("SELECT tag, rid FROM tags WHERE kind = ?", (kind,)).fetchall())
            if [tuple(x) for x in got] != want:
                problems.append(f"{table}: tags side table disagrees with the records' tags")
        gate_tables = ("memories", "checkpoints", "decisions", "episodes", "notes")
        n_rows = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in gate_tables)
        n_gate = conn.execute("SELECT count(*) FROM gate_docs").fetchone()[0]
        n_joined = conn.execute("SELECT count(*) FROM gate_candidates").fetchone()[0]
        if not n_rows == n_gate == n_joined:
            problems.append(f"gate documents: {n_gate} for {n_rows} records ({n_joined} joined)")
    finally:
        conn.close()
    managers: dict[str, Callable[[str], Any]] = {
        "memory": v.memories.search, "checkpoint": v.checkpoints.search, "decision": v.decisions.search,
        "lesson": v.lessons.search, "episode": v.episodes.search, "note": v.notes.search}
    for d in docs:
        tok = _record_tokens(d)
        if tok is None:
            continue
        hits = [r.id for r in managers[d["kind"]](tok)]
        if hits != [d["id"]]:
            problems.append(f"full-text search for {tok} finds {hits}, expected exactly [{d['id']}]")
    return problems


def spawn(mode: str, vault_dir: Path, journal: Path, seed: int, n_ops: int, cli_ops: int = 0,
          worker: int | None = None) -> subprocess.Popen[bytes]:
    """Start a worker process (stdout/stderr to ``journal`` + ``.log``)."""
    log = open(f"{journal}.log", "wb")  # noqa: SIM115 - closed by the child's exit
    args = [sys.executable, str(Path(__file__).resolve()), mode, str(vault_dir), str(journal), str(seed),
            str(n_ops), str(cli_ops), str(seed if worker is None else worker)]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)


def wait_for_acks(journal: Path, n: int, timeout: float = 60.0) -> bool:
    """Wait until ``journal`` holds at least ``n`` acknowledgements (True) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for e in read_journal(journal) if e["op"] in ("ack", "sync_start")) >= n:
            return True
        time.sleep(0.01)
    return False


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    mode_, vault_, journal_, seed_, n_, cli_, worker_ = sys.argv[1:8]
    run_worker(mode_, vault_, journal_, int(seed_), int(n_), int(cli_), int(worker_))
