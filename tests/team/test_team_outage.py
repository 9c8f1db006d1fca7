"""Recovery after the server was away (issue 29, D5), on a server of the test's own.

Calls made during an outage fail with an ``OfflineError`` (and make the pool retry in the background); the first
call once the server accepts connections again succeeds, within a second, however long the outage was: the
pool's reconnection backoff is bounded (psycopg_pool's own doubles from 1 s, so after a 30 s outage its next
attempt could come 16 s after the server was back). The pool's lines go to the package's logger, never to a
CLI user's stderr. The default run has a 10 s outage; the ``slow`` variant 60 s.

"Within a second" is read from the pool's own schedule, not from this process's clock: every reconnection attempt
the pool scheduled came at most ``RECONNECT_MAX`` (0.5 s, with its jitter) after the one before, so the first one
after the server is back is that soon. The first call's time on the clock also counts its own recall and the
server's new backend, which a busy machine can make longer than a second.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import ConnectionPool
from psycopg_pool.pool import AddConnection

from synapse_nb.errors import OfflineError
from synapse_nb.store.postgres.pool import RECONNECT_MAX, _Backoff
from synapse_nb.store.postgres.server import PgServer
from synapse_nb.team import init, open_team_vault


def _reconnection_delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays (seconds) before each reconnection attempt any pool schedules from now: psycopg_pool schedules a
    failed attempt's next one (``AddConnection`` with its backoff) through ``schedule_task``."""
    delays: list[float] = []
    schedule = ConnectionPool.schedule_task

    def recording(pool: ConnectionPool, task: Any, delay: float) -> None:
        if isinstance(task, AddConnection) and task.attempt is not None:
            delays.append(delay)
        schedule(pool, task, delay)

    monkeypatch.setattr(ConnectionPool, "schedule_task", recording)
    return delays


def _outage_then_first_call(srv: PgServer, tmp_path: Path, outage: float, delays: list[float]) -> None:
    """An outage of ``outage`` seconds, then the first call, which must succeed without waiting for a reconnection
    attempt more than ``RECONNECT_MAX`` after the server was back (``delays``: :func:`_reconnection_delays`)."""
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
        during = list(delays)
        assert v.recall("how do deploys go?").items  # the first call after the outage: no error
        v.remember("knowledge", "after", "writes work again too")
    finally:
        v.close()
    # the pool kept trying through the outage (its backoff grew to its bound: more than a few attempts), and never
    # waited longer than RECONNECT_MAX between two: its first attempt after the server was back came that soon
    # (psycopg_pool's own: 1, 2, 4, 8 s... apart)
    limit = RECONNECT_MAX * (1 + _Backoff.DELAY_JITTER)
    assert len(during) >= 5 and max(during) <= limit, during


def test_the_first_call_after_an_outage_succeeds_within_a_second(own_server: PgServer, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _outage_then_first_call(own_server, tmp_path, 10.0, _reconnection_delays(monkeypatch))


@pytest.mark.slow
def test_the_first_call_after_a_60_s_outage_succeeds_within_a_second(own_server: PgServer, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _outage_then_first_call(own_server, tmp_path, 60.0, _reconnection_delays(monkeypatch))


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


# -- D6: the offline copy stays current in normal use ---------------------------------------------------------
def test_a_machine_that_only_recalled_reads_a_current_copy_when_the_server_dies(own_server: PgServer,
                                                                               tmp_path: Path) -> None:
    url = f"{own_server.url}?project=onlyrecall"
    init(url, local=tmp_path)
    (tmp_path / "writer").mkdir()
    (tmp_path / "reader").mkdir()
    writer = open_team_vault(url, local=tmp_path / "writer")
    reader = open_team_vault(url, local=tmp_path / "reader")  # never searches its index, never rebuilds it
    writer.remember("knowledge", "deploy_day", "deploys run on fridays after the freeze")
    assert reader.recall("when do deploys run?").items
    last = writer.remember("knowledge", "rollback_rule", "rollbacks need two approvals")
    assert reader.recall("who approves a rollback?").items  # the last operation before the server dies
    reader.close()  # as a CLI command ends: the copy's pending sync is finished
    writer.close()
    own_server.stop()
    off = open_team_vault(url, local=tmp_path / "reader", offline=True)
    r = off.recall("who approves a rollback?")
    assert r.text.startswith("STALE (offline)") and [h.id for h in r.hits][:1] == [last.id]
    own_server.start(port=own_server.port)


CLI_RECALL = "from synapse_nb.cli import main; main()"


def test_the_cli_leaves_a_current_copy_after_a_recall(own_server: PgServer, tmp_path: Path) -> None:
    url = f"{own_server.url}?project=clicopy"
    init(url, local=tmp_path)
    (tmp_path / "writer").mkdir()
    (tmp_path / "laptop").mkdir()
    writer = open_team_vault(url, local=tmp_path / "writer")
    m = writer.remember("knowledge", "deploy_day", "deploys run on fridays after the freeze")
    writer.close()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("SYNAPSE_HOME", None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "synapse_nb", "--vault", url, *args], cwd=tmp_path / "laptop",
                              env=env, capture_output=True, text=True, timeout=120)

    live = cli("recall", "when do deploys run?")  # the only command this machine ever ran
    assert live.returncode == 0 and "fridays" in live.stdout and not live.stdout.startswith("STALE"), live.stderr
    assert live.stderr.strip() == ""
    own_server.stop()
    stale = cli("recall", "when do deploys run?")
    assert stale.returncode == 0 and stale.stdout.startswith("STALE (offline)") and m.id in stale.stdout, stale
    own_server.start(port=own_server.port)
