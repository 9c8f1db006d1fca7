"""Surfaces together: a real Jupyter kernel (the magics), the MCP server over stdio (SDK client) and git commits
with the synapse hooks installed, all acting on ONE vault inside a real git repository at the same time.

Afterwards: every acknowledged write (a kernel cell that returned an id, a tool call that returned one) is there
exactly once, ``PRAGMA integrity_check`` is ok, the single ``git revert`` became exactly one pending lesson, every
hook run logged ``ok``, no commit failed and no error reached any actor.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from jupyter_client.manager import start_new_kernel
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import synapse_nb as syn
from synapse_nb.gitscope import install_hooks
from synapse_nb.gitscope.testing import ScratchRepo

pytestmark = pytest.mark.reliability
#: Operations per actor at least (each kernel op and MCP op writes a memory and a checkpoint and recalls); both
#: go on until the commits are done (at most MAX_OPS), so every commit and the revert run while they write.
OPS = 20
MAX_OPS = 200
COMMITS = 10
#: Bound of the whole concurrent phase; an actor still running after it is a failure, not a hang.
BOUND_S = 120.0
REVERTED = "Add retry to payment client"


def _kernel_actor(repo: Path, out: dict[str, Any]) -> None:
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(repo), startup_timeout=60)
    try:
        def run(code: str) -> str:
            texts: list[str] = []

            def hook(msg: dict[str, Any]) -> None:
                kind, content = msg["header"]["msg_type"], msg["content"]
                if kind == "stream" and content["name"] == "stdout":
                    texts.append(content["text"])
                elif kind == "stream" and content["name"] == "stderr":
                    out["errors"].append(f"kernel stderr: {content['text'][:300]}")
                elif kind == "error":
                    out["errors"].append(f"kernel error: {content['ename']}: {content['evalue'][:300]}")

            reply = kc.execute_interactive(code, timeout=60, output_hook=hook, store_history=False)
            if reply["content"]["status"] != "ok":
                out["errors"].append(f"kernel reply {reply['content']['status']}: {code[:80]}")
            return "".join(texts)

        run(f"%load_ext synapse_nb\n%config SynapseMagics.vault_path = {str(repo)!r}\n")
        out["ready"].set()
        out["go"].wait(BOUND_S)
        out["window"].append(time.monotonic())
        for n in range(MAX_OPS):
            if n >= OPS and out["git_done"].is_set():
                break
            tok = f"zqk{n}"
            text = run(
                f"m = %remember knowledge kernel_{tok} {tok} fact from the notebook\n"
                f"c = %checkpoint create --doing \"{tok} notebook step\" --files src/k{n % 3}.py\n"
                f"r = %recall {tok} notebook fact --all\n"
                "import json; print(json.dumps([m.id, c.id, len(r.text)]))\n")
            if text.strip():
                mid, cid, _n = json.loads(text.strip().splitlines()[-1])
                out["acks"] += [("memory", mid, tok), ("checkpoint", cid, tok)]
        out["window"].append(time.monotonic())
    except Exception as exc:  # noqa: BLE001 - thread actor: every failure of the actor itself is a finding
        out["errors"].append(f"kernel actor: {type(exc).__name__}: {exc}")
        out["ready"].set()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _mcp_actor(repo: Path, out: dict[str, Any]) -> None:
    async def go() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "synapse_nb", "mcp", str(repo)],
                                       cwd=str(repo))
        with anyio.fail_after(BOUND_S):
            await session(params)

    async def session(params: StdioServerParameters) -> None:
        async with Client(params) as c:
            out["ready"].set()
            await anyio.to_thread.run_sync(out["go"].wait, BOUND_S)
            out["window"].append(time.monotonic())
            for n in range(MAX_OPS):
                if n >= OPS and out["git_done"].is_set():
                    break
                tok = f"zqm{n}"
                for name, args, kind in (
                        ("remember", {"category": "knowledge", "key": f"mcp_{tok}",
                                      "content": f"{tok} fact from the agent"}, "memory"),
                        ("create_checkpoint", {"doing": f"{tok} agent step", "changed_files": [f"src/m{n % 3}.py"]},
                         "checkpoint"),
                        ("recall", {"query": f"{tok} agent fact", "session_id": f"s{n}"}, None)):
                    r = await c.call_tool(name, args)
                    if r.is_error:
                        out["errors"].append(f"mcp {name}: {r.content[0].text[:300]}")
                    elif kind is not None:
                        out["acks"].append((kind, r.structured_content["id"], tok))
            out["window"].append(time.monotonic())

    try:
        anyio.run(go)
    except BaseException as exc:  # noqa: BLE001 - an exception group from the SDK is a finding too
        out["errors"].append(f"mcp actor: {type(exc).__name__}: {exc}")
        out["ready"].set()


def _git_actor(repo: ScratchRepo, out: dict[str, Any]) -> None:
    try:
        reverted = ""
        out["window"].append(time.monotonic())
        for n in range(COMMITS):
            if n == 1:
                reverted = repo.commit_file("pay.py", "retry = 3\n", REVERTED)
            else:
                repo.commit_file(f"src/g{n}.py", f"x = {n}\n", f"Change g{n}")
            out["commits"] += 1
            if n == COMMITS // 2:  # the revert, in the middle of the run
                repo.git("revert", "--no-edit", reverted)
                out["commits"] += 1
        out["window"].append(time.monotonic())
    except Exception as exc:  # noqa: BLE001 - thread actor: any failure is a finding (a failed commit: git's stderr)
        out["errors"].append(f"git: {type(exc).__name__}: {exc}")
    finally:
        out["git_done"].set()


def _count_tokens(export: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in export.splitlines():
        doc = json.loads(line)
        text = doc.get("content") or doc.get("doing") or ""
        first = text.split()[0] if text.split() else ""
        if first.startswith("zq"):
            key = f"{doc.get('kind')}:{first}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_kernel_mcp_and_git_hook_on_one_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    monkeypatch.setenv("SYNAPSE_HOOK_TIMEOUT", "60")  # three busy actors on 2 cores: the scan must not give up
    repo = ScratchRepo.init(tmp_path / "repo")
    repo.commit_file("README.md", "scratch\n", "Initial commit")
    syn.open_vault(repo.root).close()  # <repo>/.synapse: the vault every surface finds
    install_hooks(repo.root, background=False)  # a commit waits for its scan: the lesson is there when git returns

    go = threading.Event()  # all three start their operations at the same moment
    git_done = threading.Event()
    kernel = {"acks": [], "errors": [], "ready": threading.Event(), "go": go, "git_done": git_done, "window": []}
    mcp = {"acks": [], "errors": [], "ready": threading.Event(), "go": go, "git_done": git_done, "window": []}
    git = {"commits": 0, "errors": [], "window": [], "git_done": git_done}
    tk = threading.Thread(target=_kernel_actor, args=(repo.root, kernel), daemon=True)
    tm = threading.Thread(target=_mcp_actor, args=(repo.root, mcp), daemon=True)
    tg = threading.Thread(target=_git_actor, args=(repo, git), daemon=True)
    tk.start()
    tm.start()
    # start the commits once both the kernel and the server are up, so the three really overlap
    assert kernel["ready"].wait(90) and mcp["ready"].wait(90), (kernel["errors"], mcp["errors"])
    t0 = time.monotonic()
    go.set()
    tg.start()
    for t in (tk, tm, tg):
        t.join(timeout=max(1.0, BOUND_S - (time.monotonic() - t0)))
        assert not t.is_alive(), f"an actor was still running after {BOUND_S} s"

    assert kernel["errors"] == [] and mcp["errors"] == [] and git["errors"] == [], (
        kernel["errors"][:3], mcp["errors"][:3], git["errors"][:3])
    assert git["commits"] == COMMITS + 1
    assert len(kernel["acks"]) >= 2 * OPS and len(mcp["acks"]) >= 2 * OPS
    # they really overlapped: every actor started before any of them finished
    starts, ends = [a["window"][0] for a in (kernel, mcp, git)], [a["window"][-1] for a in (kernel, mcp, git)]
    print(f"ops: kernel {len(kernel['acks']) // 2}, mcp {len(mcp['acks']) // 2}, commits {git['commits']}; "
          f"windows (s): kernel {ends[0] - starts[0]:.2f}, mcp {ends[1] - starts[1]:.2f}, "
          f"git {ends[2] - starts[2]:.2f}")
    assert max(starts) < min(ends), (starts, ends)

    v = syn.open_vault(repo.root)
    try:
        counts = _count_tokens(v.export_jsonl())
        for kind, rid, tok in kernel["acks"] + mcp["acks"]:
            rec = v.memories.get(rid) if kind == "memory" else v.checkpoints.get(rid)
            assert tok in (rec.content if kind == "memory" else rec.doing)
            assert counts.get(f"{kind}:{tok}") == 1, (kind, tok, counts.get(f"{kind}:{tok}"))
        assert sum(counts.values()) == len(kernel["acks"]) + len(mcp["acks"])  # nothing doubled, no phantom
        agent_mem = v.memories.get(mcp["acks"][0][1])
        assert agent_mem.source == "agent" and not agent_mem.verified
        pending = v.lessons.pending()
        assert len(pending) == 1 and pending[0].summary.startswith(f'Reverted "{REVERTED}"'), [
            p.summary for p in pending]
        assert v.lessons.list(status="approved") == []
        db = v.path / "synapse.db"
    finally:
        v.close()
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
    log = (repo.root / ".synapse" / "hook.log").read_text(encoding="utf-8").splitlines()
    assert len(log) == COMMITS + 1 and all(" ok: " in line for line in log), log[-3:]
    assert sum(int(line.split(" ok: ", 1)[1].split()[0]) for line in log) == 1  # "ok: N new pending lesson[s]"
