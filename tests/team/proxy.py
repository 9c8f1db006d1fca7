"""A TCP forwarder on 127.0.0.1 in front of the test server that can cut a connection at its COMMIT.

``CutProxy(port)`` listens on a free loopback port and forwards each connection to ``127.0.0.1:port``. Armed with
:meth:`CutProxy.cut`, it watches what clients send: the first client message holding a ``COMMIT`` query is either
forwarded and then both sides are closed (``"after"``: the server commits, the client never hears it) or dropped
with the connection (``"before"``: the server never sees it and rolls back). :meth:`CutProxy.refuse` makes it
close every new connection at once (the server "unreachable" for the client) until :meth:`CutProxy.accept`.
"""

from __future__ import annotations

import re
import socket
import threading
from typing import Self

#: A simple-protocol Query message's text for COMMIT, as psycopg sends it.
COMMIT = b"COMMIT\x00"


class CutProxy:
    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self._listen = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listen.bind(("127.0.0.1", 0))
        self._listen.listen(64)
        self.port = int(self._listen.getsockname()[1])
        self._lock = threading.Lock()
        self._cuts: list[str] = []  # pending cuts, each "after" or "before"
        self._refusing = False
        self._closed = False
        self._socks: set[socket.socket] = set()
        self.cut_done = 0
        self._prepared: set[bytes] = set()  # names of statements prepared from "COMMIT"
        threading.Thread(target=self._serve, name="cut-proxy", daemon=True).start()

    def url(self, server_url: str) -> str:
        """``server_url`` (postgresql://user@127.0.0.1:PORT/...) through this proxy."""
        return server_url.replace(f":{self.target[1]}/", f":{self.port}/", 1)

    def cut(self, when: str = "after", times: int = 1) -> None:
        assert when in ("after", "before")
        with self._lock:
            self._cuts.extend([when] * times)

    def pending_cuts(self) -> int:
        with self._lock:
            return len(self._cuts)

    def refuse(self) -> None:
        self._refusing = True

    def accept(self) -> None:
        self._refusing = False

    def close(self) -> None:
        self._closed = True
        self._listen.close()
        with self._lock:
            for s in list(self._socks):
                _close(s)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- forwarding -----------------------------------------------------------------------------------------
    def _serve(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listen.accept()
            except OSError:
                return
            if self._refusing:
                _close(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._socks.update((client, server))
            # set by the client's side when it cuts "after" a COMMIT, before the COMMIT leaves: the server's side
            # then forwards nothing more, so the answer never reaches the client, however the threads are scheduled
            cut = threading.Event()
            threading.Thread(target=self._pump, args=(client, server, True, cut), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False, cut), daemon=True).start()

    def _commits(self, tail: bytes, data: bytes) -> bool:
        """Whether the client's bytes hold a COMMIT: as a query (its text may straddle two reads: ``tail`` is the
        end of the previous one, too short to hold it whole), or as the execution of a statement psycopg prepared
        from "COMMIT" (after a few runs it sends Parse "_pg3_N" once, then only Bind/Execute by that name)."""
        for name in re.findall(rb"P....([^\x00]+)\x00COMMIT\x00", data, re.DOTALL):
            self._prepared.add(bytes(name))
        return COMMIT in tail + data or any(b"\x00" + n + b"\x00" in data for n in self._prepared)

    def _pump(self, src: socket.socket, dst: socket.socket, from_client: bool, cut: threading.Event) -> None:
        when, tail = None, b""
        try:
            while True:
                data = src.recv(65536)
                if not data or (not from_client and cut.is_set()):
                    break
                when = None
                if from_client and self._commits(tail, data):
                    with self._lock:
                        when = self._cuts.pop(0) if self._cuts else None
                if when == "before":
                    break
                if when == "after":
                    cut.set()
                dst.sendall(data)
                if when == "after":
                    break
                tail = data[-(len(COMMIT) - 1):]
        except OSError:
            pass
        finally:
            if from_client and when is not None:
                self.cut_done += 1
            for s in (src, dst):
                _close(s)
            with self._lock:
                self._socks.discard(src)
                self._socks.discard(dst)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
