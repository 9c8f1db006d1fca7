"""Recovery after the server was away (issue 29, D5), on a server of the test's own.

Calls made during an outage fail with an ``OfflineError`` (and make the pool retry in the background); the first
call once the server accepts connections again succeeds, within a second, however long the outage was: the
pool's reconnection backoff is bounded (psycopg_pool's own doubles from 1 s, so after a 30 s outage its next
attempt could come 16 s after the server was back). The pool's lines go to the package's logger, never to a
CLI user's stderr. The default run has a 6 s outage; the ``slow`` variant 60 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from synapse_nb.errors import OfflineError
from synapse_nb.store.postgres.server import PgServer, ServerUnavailable
from synapse_nb.team import init, open_team_vault


@pytest.fixture()
def own_server(pg_admin_url: str) -> Iterator[PgServer]:
    """A server this test may stop (the session's server keeps serving the others)."""
    try:
        srv = PgServer.launch()
    except ServerUnavailable as exc:  # pragma: no cover - the session server started, so this one does too
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))
    yield srv
    srv.destroy()


def _outage_then_first_call(srv: PgServer, tmp_path: Path, outage: float) -> float:
    """Seconds from the server accepting connections again to the end of the first call, which must succeed."""
    url = f"{srv.url}?project=outage"
    init(url, local=tmp_path)
    v = open_team_vault(url, local=tmp_path)
    try:
        v.remember("knowledge", "deploys", "deploys go through the canary first")
        assert v.recall("how do deploys go?").items
        srv.stop()
        end = time.monotonic() + outage
        while time.monotonic() < end:  # callers keep trying during the outage (each one fails, saying so)
            with pytest.raises(OfflineError):
                v.recall("how do deploys go?")
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        srv.start(port=srv.port)  # pg_ctl -w: returns once the server accepts connections
        ready = time.monotonic()
        assert v.recall("how do deploys go?").items  # the first call after the outage: no error
        took = time.monotonic() - ready
        v.remember("knowledge", "after", "writes work again too")
        return took
    finally:
        v.close()


def test_the_first_call_after_an_outage_succeeds_within_a_second(own_server: PgServer, tmp_path: Path) -> None:
    assert _outage_then_first_call(own_server, tmp_path, 6.0) < 1.0


@pytest.mark.slow
def test_the_first_call_after_a_60_s_outage_succeeds_within_a_second(own_server: PgServer, tmp_path: Path) -> None:
    assert _outage_then_first_call(own_server, tmp_path, 60.0) < 1.0


CLIENT = textwrap.dedent("""
    import sys, time
    from synapse_nb.team import open_team_vault
    v = open_team_vault(sys.argv[1], local=sys.argv[2])
    v.remember("knowledge", "k", "c")
    print("ready", flush=True)
    sys.stdin.readline()            # the test stops the server meanwhile
    try:
        v.recall("what is k?")
    except Exception as exc:
        print(type(exc).__name__, flush=True)
    time.sleep(1.5)                 # the pool keeps reconnecting in the background
""")


def test_the_pools_lines_never_reach_stderr(own_server: PgServer, tmp_path: Path) -> None:
    url = f"{own_server.url}?project=quiet"
    init(url, local=tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, url, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    own_server.stop()
    out, err = proc.communicate("\n", timeout=60)
    assert out.strip() == "OfflineError"
    assert "error connecting" not in err and "discarding" not in err and err.strip() == "", err
