"""Malformed JSON-RPC over a real stdio pipe: ``python -m synapse_nb mcp PATH`` as a subprocess, spoken to with
raw newline-delimited JSON (the MCP stdio transport), no SDK client in between.

After each piece of garbage (invalid JSON, invalid UTF-8, a JSON array, a wrong ``jsonrpc`` version, unknown
methods and tools, wrong argument types, a 2 MB argument, missing params, ...) a valid ``tools/call get_status``
must still be answered; a malformed request that carries an id gets a JSON-RPC error or a tool error (never
silence, never a crash); nothing is written to the vault; and closing stdin ends the server cleanly with exit 0 and
no traceback on stderr. Every wait is bounded.

What the SDK (mcp 2.3) does with a line it cannot validate as a JSON-RPC message (invalid JSON, an array,
``jsonrpc: "1.0"``, and also a request WITH an id whose ``params`` is a list or holds a lone-surrogate escape): it
drops the line without a reply (JSON-RPC 2.0 would answer ``-32700``/``-32600``/``-32602``). A client that sent
such a request with an id waits for an answer that never comes. The test pins that the server keeps serving
after those lines, not the missing reply (that is the SDK's stdio reader, not synapse_nb).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import synapse_nb as syn

pytestmark = pytest.mark.reliability
REPO = Path(__file__).resolve().parents[2]
#: The protocol version this client offers in ``initialize`` (one the SDK's server accepts).
PROTOCOL = "2025-11-25"
TIMEOUT = 8.0


class Pipe:
    """A server subprocess and a reader thread that queues its stdout lines (so every read has a timeout)."""

    def __init__(self, project: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "synapse_nb", "mcp", str(project)], cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.append(self.proc.stderr.read()), daemon=True).start()
        self.next_id = 100
        self.last = ""

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        self.send_raw(json.dumps(msg).encode())

    def reply(self, want_id: Any) -> dict[str, Any]:
        """The response with ``id == want_id``; other lines (notifications, late replies) are collected."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no reply to id {want_id!r} within {TIMEOUT} s (after {self.last!r})"
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                raise AssertionError(f"no reply to id {want_id!r} within {TIMEOUT} s (after {self.last!r}); stderr: "
                                     f"{self.stderr()[-800:]}") from None
            assert line is not None, f"server closed stdout before answering id {want_id!r}: {self.stderr()[-800:]}"
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") == want_id and ("result" in msg or "error" in msg):
                return msg

    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})
        return self.reply(self.next_id)

    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")


def _status_ok(pipe: Pipe) -> None:
    r = pipe.call("get_status", {})
    assert "result" in r and not r["result"].get("isError"), r
    assert "actor agent" in r["result"]["content"][0]["text"]


HUGE = "x" * (2 * 1024 * 1024)
#: (what, raw line, the id a reply must carry or None when the SDK drops it, must the reply be an error)
GARBAGE: list[tuple[str, bytes, Any]] = [
    ("invalid json", b"{not json", None),
    ("truncated json", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/ca', None),
    ("invalid utf-8", b'{"jsonrpc": "2.0", "id": "\xff\xfe", "method": "ping"}', None),
    ("empty line", b"", None),
    ("whitespace", b"   \t ", None),
    ("json array", b"[1, 2, 3]", None),
    ("batch of requests", json.dumps([{"jsonrpc": "2.0", "id": 9, "method": "ping"}]).encode(), None),
    ("json scalar", b"42", None),
    ("json null", b"null", None),
    ("wrong jsonrpc version", json.dumps({"jsonrpc": "1.0", "id": 3, "method": "ping"}).encode(), None),
    ("no jsonrpc field", json.dumps({"id": 4, "method": "tools/list"}).encode(), None),
    ("unknown method", json.dumps({"jsonrpc": "2.0", "id": "u1", "method": "nope/nothing"}).encode(), "u1"),
    ("unknown notification", json.dumps({"jsonrpc": "2.0", "method": "notifications/nope"}).encode(), None),
    ("method of wrong type", json.dumps({"jsonrpc": "2.0", "id": "m1", "method": 12}).encode(), None),
    ("tools/call without params", json.dumps({"jsonrpc": "2.0", "id": "p1", "method": "tools/call"}).encode(), "p1"),
    ("tools/call params a list", json.dumps({"jsonrpc": "2.0", "id": "p2", "method": "tools/call",
                                             "params": ["get_status"]}).encode(), None),  # dropped by the SDK
    ("tools/call without name", json.dumps({"jsonrpc": "2.0", "id": "p3", "method": "tools/call",
                                            "params": {"arguments": {}}}).encode(), "p3"),
    ("unknown tool", json.dumps({"jsonrpc": "2.0", "id": "t1", "method": "tools/call",
                                 "params": {"name": "approve_lesson", "arguments": {"lesson_id": "les_x"}}}).encode(),
     "t1"),
    ("wrong argument type", json.dumps({"jsonrpc": "2.0", "id": "t2", "method": "tools/call",
                                        "params": {"name": "recall", "arguments": {"query": 5}}}).encode(), "t2"),
    ("arguments not an object", json.dumps({"jsonrpc": "2.0", "id": "t3", "method": "tools/call",
                                            "params": {"name": "remember", "arguments": "content"}}).encode(), "t3"),
    ("missing required argument", json.dumps({"jsonrpc": "2.0", "id": "t4", "method": "tools/call",
                                              "params": {"name": "remember", "arguments": {"key": "k"}}}).encode(),
     "t4"),
    ("2 MB argument", json.dumps({"jsonrpc": "2.0", "id": "t5", "method": "tools/call",
                                  "params": {"name": "recall", "arguments": {"query": HUGE}}}).encode(), "t5"),
    ("2 MB invalid line", b'{"jsonrpc": "2.0", "id": "t6", "params": "' + HUGE.encode(), None),
    ("control characters", json.dumps({"jsonrpc": "2.0", "id": "t7", "method": "tools/call",
                                       "params": {"name": "create_checkpoint",
                                                  "arguments": {"doing": "\x00\x1b[2J\u202e",
                                                                "changed_files": 7}}}).encode(),
     "t7"),
    ("smuggled human fields", json.dumps({"jsonrpc": "2.0", "id": "t8", "method": "tools/call",
                                          "params": {"name": "submit_lesson_analysis",
                                                     "arguments": {"lesson_id": "les_nope", "analysis": "x",
                                                                   "approve": True}}}).encode(), "t8"),
    ("lone surrogate escape", json.dumps({"jsonrpc": "2.0", "id": "t9", "method": "tools/call",  # dropped by the SDK
                                          "params": {"name": "recall", "arguments": {"query": "\ud800"}}}).encode(),
     None),
    ("a response nobody asked for", json.dumps({"jsonrpc": "2.0", "id": 777, "result": {}}).encode(), None),
    ("initialize again", json.dumps({"jsonrpc": "2.0", "id": "i2", "method": "initialize",
                                     "params": {"protocolVersion": "1999-01-01", "capabilities": {},
                                                "clientInfo": {"name": "evil", "version": "0"}}}).encode(), "i2"),
]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    v = syn.open_vault(p)
    v.remember("preference", "style", "numpy docstrings")
    v.lessons.create("pending lesson about caching")
    v.close()
    return p


def test_malformed_json_rpc_over_a_real_stdio_pipe(project: Path) -> None:
    v = syn.open_vault(project)
    before = v.export_jsonl()
    v.close()
    pipe = Pipe(project)
    try:
        pipe.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                              "clientInfo": {"name": "fuzz", "version": "1"}}})
        init = pipe.reply(1)
        assert init["result"]["serverInfo"]["name"], init
        pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        _status_ok(pipe)
        answered = 0
        for what, raw, want_id in GARBAGE:
            pipe.last = what
            pipe.send_raw(raw)
            if want_id is not None:
                r = pipe.reply(want_id)
                is_error = "error" in r or bool(r.get("result", {}).get("isError"))
                assert is_error or what == "initialize again", (what, str(r)[:300])
                answered += 1
            _status_ok(pipe)  # the server keeps serving after every one
            assert pipe.proc.poll() is None, (what, pipe.stderr()[-800:])
        assert answered == sum(1 for g in GARBAGE if g[2] is not None)
    finally:
        assert pipe.proc.stdin is not None
        pipe.proc.stdin.close()
        try:
            code = pipe.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pipe.proc.kill()
            pipe.proc.wait(timeout=5)
            raise AssertionError("the server did not exit within 20 s of stdin closing") from None
    assert code == 0, (code, pipe.stderr()[-800:])
    time.sleep(0.1)
    assert "Traceback" not in pipe.stderr(), pipe.stderr()[-1500:]
    v = syn.open_vault(project)
    try:
        assert v.export_jsonl() == before  # no garbage wrote anything (the valid calls only read)
    finally:
        v.close()
