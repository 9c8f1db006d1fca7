"""The stdio streams of ``synapse-nb mcp``: the SDK's ``stdio_server`` loop, fed by a reader that fixes three limits.

- **Ctrl-C stops the server at once.** The SDK reads stdin in a worker thread that the event loop waits for on
  exit, so after SIGINT the process hung until Enter was pressed. Here stdin is read by a daemon thread: the loop
  never waits for it, and SIGINT ends the server immediately.
- **A line that is not JSON gets an answer.** The SDK drops it without a reply (the client waits forever); here
  it is answered with a JSON-RPC parse error (``-32700``, id null), and a JSON value that is not a JSON-RPC
  message with an invalid-request error (``-32600``, its id when it has one).
- **A message nested deeper than :data:`MAX_DEPTH` gets an answer.** The SDK's JSON parser refuses 200 levels or
  more without a reply, and deeper nesting crashed the server (review 43: about 1 KB of brackets ended the
  session's memory server); here it is answered with an invalid-request error (``-32600``, its id when it has one).
- **A lone surrogate does not swallow the request.** ``"\\ud800"`` is valid JSON but not valid Unicode: the SDK's
  parser refused the whole line and the request got no reply. Here each lone surrogate becomes U+FFFD and the
  request is served (answers are written as UTF-8 with the same replacement, never a broken byte sequence).

While serving, fd 0 points at the null device and fd 1 at stderr (as the SDK does), so a child process or a stray
``print`` cannot read from or write into the protocol; both are restored on exit.

>>> screen('{"jsonrpc": "2.0", "id": 1, "method": "ping"}')[1] is None
True
>>> screen("not json")[1]["error"]["code"]
-32700
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError as PydanticValidationError

__all__ = ["Lines", "Out", "claim_stdio", "screen"]

_SURROGATE = re.compile("[\ud800-\udfff]")
#: The deepest nesting of arrays and objects a message may have (no tool's arguments need more than a few levels;
#: the SDK's own parser stops at 200).
MAX_DEPTH = 64
#: What the reader thread meets when the server has stopped.
_GONE = (RuntimeError, OSError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError)


def _fix(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [_fix(v) for v in value]
    if isinstance(value, dict):
        return {_fix(k): _fix(v) for k, v in value.items()}
    return value


def _depth(value: Any) -> int:
    """How deeply ``value``'s arrays and objects nest (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v if isinstance(x, dict | list))
    return deepest


def _id_of(obj: Any) -> Any:
    id_ = obj.get("id") if isinstance(obj, dict) else None
    return id_ if isinstance(id_, str | int) and not isinstance(id_, bool) else None


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def screen(line: str) -> tuple[str | None, dict[str, Any] | None]:
    """(the line to pass to the SDK, or None; the error reply to send instead, or None) for one input line."""
    text = line.strip()
    if not text:
        return None, None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None, _error(None, -32700, "Parse error: the line is not JSON; send one JSON-RPC message per line")
    if _depth(obj) > MAX_DEPTH:
        return None, _error(_id_of(obj), -32600, f"Invalid Request: arrays and objects nested more than {MAX_DEPTH} "
                                                 "levels deep; no tool's arguments need that many")
    fixed = _fix(obj)
    try:
        jsonrpc_message_adapter.validate_python(fixed, by_name=False)
    except PydanticValidationError:
        return None, _error(_id_of(fixed), -32600,
                            "Invalid Request: not a JSON-RPC 2.0 message (jsonrpc, id, method, params)")
    return (text if fixed == obj else json.dumps(fixed, ensure_ascii=False)), None


class Out:
    """The protocol's output: whole lines as UTF-8 (a lone surrogate becomes U+FFFD), one writer at a time."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            self._stream.write(text.encode("utf-8", "replace"))

    async def flush(self) -> None:
        self._stream.flush()

    async def reply(self, message: dict[str, Any]) -> None:
        """Send one JSON-RPC message the SDK would not have sent (an error for a line it could not read)."""
        await self.write(json.dumps(message) + "\n")
        await self.flush()


class Lines:
    """The protocol's input, as the SDK's loop reads it (``async for line in stdin``): lines from a daemon
    thread, screened by :func:`screen`; lines the SDK could not answer are answered here through ``out``."""

    def __init__(self, stream: BinaryIO, out: Out) -> None:
        self._stream = stream
        self._out = out
        self._recv: MemoryObjectReceiveStream[str] | None = None

    def _read(self, send: MemoryObjectSendStream[str], token: Any) -> None:
        # the loop gone (Ctrl-C), the stream closed or the pipe broken: nothing more to read
        with suppress(*_GONE):
            for raw in iter(self._stream.readline, b""):
                anyio.from_thread.run(send.send, raw.decode("utf-8", "replace"), token=token)
        with suppress(*_GONE):
            anyio.from_thread.run_sync(send.close, token=token)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        send, recv = anyio.create_memory_object_stream[str](0)
        threading.Thread(target=self._read, args=(send, anyio.lowlevel.current_token()), daemon=True,
                         name="synapse-nb mcp stdin").start()
        async with recv:
            async for line in recv:
                passed, reply = screen(line)
                if reply is not None:
                    await self._out.reply(reply)
                elif passed is not None:
                    yield passed


@contextmanager
def claim_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """(input, output): private copies of fds 0 and 1 for the protocol, while fd 0 reads the null device and fd 1
    writes to stderr; restored on exit. Where the descriptors cannot be duplicated, the streams are used in place."""
    import sys

    try:
        fd_in, fd_out = os.dup(0), os.dup(1)
    except OSError:
        yield sys.stdin.buffer, sys.stdout.buffer
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        # never closed: the daemon reader may still be blocked in a read on it when the server stops (closing a
        # buffered reader waits for that read, and would bring back the hang on Ctrl-C)
        rin = os.fdopen(fd_in, "rb", closefd=False)
        with os.fdopen(fd_out, "wb", closefd=False) as rout:
            yield rin, rout
    finally:
        for fd, private in ((0, fd_in), (1, fd_out)):
            try:
                os.dup2(private, fd)
            except OSError:
                pass
        # the private input descriptor stays open for the same reason (closing would let its number be reused
        # under the blocked read); the output copy is closed once fd 1 is restored
        try:
            os.close(fd_out)
        except OSError:
            pass
