"""Shared, generic fixtures: a user vault on a fake clock, its agent handle, and a real git repository.

Kept small on purpose; fixtures that only one feature needs live in that feature's test file.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import synapse_nb as syn
from synapse_nb.context import AGENT_ENVIRONMENT

# the suite plays the human (and plays the agent where a test says so): a coding agent's marker in the environment
# that runs it (CLAUDECODE=1, ...) would make every human-only action refuse, here and in the CLI subprocesses
for _name, _ in AGENT_ENVIRONMENT:
    os.environ.pop(_name, None)


def _play_the_human_under_an_agent() -> None:
    """Popping the variables does not change the environment this process and its parents started with, which
    every vault and the CLI read too (synapse_nb.context.inherited_agent_marker). When a coding agent runs the suite,
    the parents' walk stops at the suite's first process, here and (through a sitecustomize on PYTHONPATH) in every
    process the suite starts: a marker of the agent that started the suite is not read, one a test sets is."""
    from synapse_nb import context

    if context.inherited_agent_marker() is None:
        return
    root = int(os.environ.setdefault("SYNAPSE_TEST_SUITE_PID", str(os.getpid())))
    context.WALK_STOPS_AT = root
    context._inherited.clear()
    site = Path(tempfile.mkdtemp(prefix="synapse-suite-site-"))
    (site / "sitecustomize.py").write_text(
        "import os\n"
        "if os.environ.get('SYNAPSE_TEST_SUITE_PID'):\n"
        "    import synapse_nb.context as _c\n"
        "    _c.WALK_STOPS_AT = int(os.environ['SYNAPSE_TEST_SUITE_PID'])\n", encoding="utf-8")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)


_play_the_human_under_an_agent()


def _let_the_agent_run_on_fake_clocks() -> None:
    """An agent's handle runs on the real clock (synapse_nb.context.check_agent_clock); the suite plays the agent on
    fake clocks too (the ``agent_vault`` fixture, quotas over an hour). tests/test_agent_clock.py turns it off."""
    from synapse_nb import context

    context.AGENT_CLOCKS = True


_let_the_agent_run_on_fake_clocks()

# the team server pins (synapse_nb.vault.pins) live in the person's ~/.config: never the suite's. A folder of the
# session's for anything outside a test (and the processes it starts); each test gets its own (_own_team_pins)
os.environ["SYNAPSE_TEAM_PINS"] = str(Path(tempfile.mkdtemp(prefix="synapse-suite-pins-")) / "team_pins.toml")


# the code-loading embedders a person set (synapse_nb.embedder_trust) live in ~/.config (XDG_CONFIG_HOME): never the
# person's running the suite; each test gets its own folder (_own_config)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="synapse-suite-config-")


@pytest.fixture(autouse=True)
def _own_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own ``XDG_CONFIG_HOME`` (this user's synapse_nb folder), inherited by the processes it starts."""
    path = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(path))
    return path


@pytest.fixture(autouse=True)
def _own_team_pins(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own team server pins file (``SYNAPSE_TEAM_PINS``), inherited by the processes it starts."""
    path = tmp_path_factory.mktemp("pins") / "team_pins.toml"
    monkeypatch.setenv("SYNAPSE_TEAM_PINS", str(path))
    return path

#: The instant every fake clock starts at.
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


class FakeClock:
    """A clock that stands still until told to move: ``clock()`` -> aware UTC datetime.

    >>> c = FakeClock(); _ = c.advance(days=1); c() - T0
    datetime.timedelta(days=1)
    """

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now


def wait_for(cond: Callable[[], bool], limit: float = 20.0, step: float = 0.1) -> bool:
    """Wait for a condition set by another process or thread (a bound for safety, not a timing assertion)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


def said_watching(proc: subprocess.Popen[str], limit: float = 60.0) -> str:
    """The stderr of a ``synapse-nb watch`` process up to and with its "watching ..." line, said once its baseline
    is read and its observer runs: a change made after this returns is counted (waiting for its lock file and
    sleeping raced the baseline's ``git status`` on a busy machine). "" if the line did not come within ``limit``."""
    import select

    assert proc.stderr is not None
    said = ""
    end = time.monotonic() + limit
    while not said.endswith("Ctrl-C stops\n"):
        if not select.select([proc.stderr], [], [], max(0.0, end - time.monotonic()))[0]:
            return ""
        line = proc.stderr.readline()
        if not line:
            return ""
        said += line
    return said


def cpu_seconds(fn: Callable[[Any], object], arg: Any, n: int = 5) -> float:
    """The least CPU time of this process over ``n`` calls of ``fn(arg)``: what the complexity tests compare at two
    input sizes (another job on the machine does not count, and the ratio does not depend on the machine's speed)."""
    import time

    best = float("inf")
    for _ in range(n):
        t0 = time.process_time()
        fn(arg)
        best = min(best, time.process_time() - t0)
    return best


def downgrade(conn: Any, to: int) -> None:
    """Make a SQLite vault look as an older synapse_nb left it (schema ``to``, 6 to 14): drop the objects each later
    version added and set ``user_version``, so the next writable open migrates it. The one place that knows what
    v7 (agent totals), v8 (agents' word statistics), v9 (the session registry), v10 (rank file digests), v11
    (people's contexts without agents' records), v12 (the capped ranking indexes), v13 (agents' ranking
    statistics), v14 (a lesson's session marks outlive it) and v15 (the hooks' sessions bounded apart) added."""
    def drop(kind: str, where: str) -> None:
        for (name,) in conn.execute(f"SELECT name FROM sqlite_master WHERE type = '{kind}' AND {where}").fetchall():
            conn.execute(f"DROP {kind.upper()} IF EXISTS {name}")

    from synapse_nb.store.sqlite import schema

    if to < 15:  # sessions_schema.V15_SESSION_CLASSES: v9's bounds again (every agent session of one kind)
        from synapse_nb.store.sqlite.sessions_schema import V9_BOUNDS

        conn.execute("DROP TRIGGER session_seen_agent_rows")
        conn.execute("DROP TRIGGER session_registry_agent_ai")
        for stmt in schema.split_sql(V9_BOUNDS):
            conn.execute(stmt)
    if to < 14:  # sessions_schema.V14_LESSON_MARKS: v4's lessons_ad again, which deletes a lesson's session marks
        conn.execute("DROP TRIGGER lessons_ad")
        conn.execute(next(t for t in schema._kind_triggers(("lessons",)) if t.startswith("CREATE TRIGGER lessons_ad")))
    if to < 13:  # agent_rank_schema: v8's triggers on gate_docs again, without the agents' ranking index
        from synapse_nb.store.sqlite.agent_vocab_schema import V8_AGENT_VOCAB

        drop("trigger", "name IN ('gate_docs_agent_ai', 'gate_docs_agent_au', 'gate_docs_agent_ad')")
        conn.execute("DELETE FROM fts_queue WHERE target = 'agent_rank_fts'")
        for name in ("agent_rank_vocab", "agent_rank_fts"):
            conn.execute(f"DROP TABLE {name}")
        for stmt in schema.split_sql(V8_AGENT_VOCAB):
            if stmt.startswith("CREATE TRIGGER"):
                conn.execute(stmt)
    if to < 12:  # rankcap_schema: v11's joiner of a context, and the three indexes of every word, as v11 kept them
        from synapse_nb.store.sqlite.context_schema import v11_context_triggers
        from synapse_nb.store.sqlite.rankcap_schema import CAPPED_COLUMNS

        for stmt in schema.split_sql("\n".join([
                *schema._kind_triggers(("episodes",), own=True, sep="' '"), v11_context_triggers("' '"),
                *(f"{schema.RAW_FLUSH[t]};" for t in schema.FTS_TABLES if t not in CAPPED_COLUMNS),
                f"{schema.FTS_QUEUE_CLEAR};", """
                DROP TABLE gate_vocab_row; DROP TABLE gate_vocab; DROP TABLE rank_fts;
                CREATE VIRTUAL TABLE gate_vocab USING fts5(body, content='gate_docs', content_rowid='gid',
                    tokenize="unicode61 remove_diacritics 2");
                CREATE VIRTUAL TABLE gate_vocab_row USING fts5vocab(gate_vocab, 'row');
                INSERT INTO gate_vocab(gate_vocab) VALUES ('rebuild');
                CREATE VIRTUAL TABLE rank_fts USING fts5(body, context, content='gate_docs', content_rowid='gid',
                    tokenize="porter unicode61 remove_diacritics 2");
                INSERT INTO rank_fts(rank_fts) VALUES ('rebuild');
                INSERT INTO agent_vocab_fts(agent_vocab_fts) VALUES ('delete-all');
                INSERT INTO agent_vocab_fts(rowid, body) SELECT d.gid, d.body FROM gate_docs d
                    JOIN agent_gids a ON a.gid = d.gid;"""])):
            conn.execute(stmt)
    if to < 11:  # context_schema: v4's episode triggers, v3's refresh of the followers, and v3's contexts again
        drop("trigger", "name IN ('gate_docs_ctx_ai', 'gate_docs_ctx_au', 'gate_docs_ctx_ad')")
        was = schema._SELF_CONTEXT
        for stmt in schema.split_sql("\n".join([
                *schema._kind_triggers(("episodes",)), schema._CTX_TRIGGERS,
                f"UPDATE gate_docs SET context = {was} WHERE thread IS NOT NULL AND context <> {was};",
                *(f"{schema.RAW_FLUSH[t]};" for t in schema.FTS_TABLES if t != "agent_rank_fts"),
                f"{schema.FTS_QUEUE_CLEAR};"])):
            conn.execute(stmt)
    if to < 10:  # rankfile_schema
        conn.execute("DROP TABLE rank_files")
    if to < 9:  # sessions_schema
        drop("trigger", "tbl_name = 'session_seen'")
        conn.execute("DROP TABLE session_registry")
    if to < 8:  # agent_vocab_schema
        drop("trigger", "name IN ('gate_docs_agent_ai', 'gate_docs_agent_au', 'gate_docs_agent_ad')")
        for name in ("agent_vocab_row", "agent_vocab_fts", "agent_gids"):
            conn.execute(f"DROP TABLE {name}")
    if to < 7:  # agent totals
        drop("trigger", "name LIKE '%_held_%'")
        conn.execute("DROP TABLE agent_held")
        conn.execute("DROP TABLE agent_held_all")
    conn.execute(f"PRAGMA user_version = {int(to)}")
    conn.commit()


def git_env() -> dict[str, str]:
    """An environment for the git CLI: no user/system config, a fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "HOME": "/nonexistent-synapse-test-home",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "Test User",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test User",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        "LC_ALL": "C",
    })
    return env


def run_git(cwd: Path, *args: str) -> str:
    """Run ``git args...`` in ``cwd`` and return stripped stdout (raises on failure)."""
    out = subprocess.run(["git", *args], cwd=cwd, env=git_env(), check=True, capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture()
def clock() -> FakeClock:
    """A fake clock standing at :data:`T0`; ``clock.advance(days=8)`` moves it."""
    return FakeClock()


@pytest.fixture()
def vault(tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[syn.Vault]:
    """A fresh user vault in ``tmp_path/project`` (outside git) on the fake ``clock``."""
    monkeypatch.delenv("SYNAPSE_HOME", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    v = syn.open_vault(project, clock=clock)
    yield v
    v.close()


@pytest.fixture()
def agent_vault(vault: syn.Vault) -> syn.Vault:
    """The same vault (same connection, same clock) acting as the agent."""
    return vault.as_agent()


@pytest.fixture()
def git() -> Callable[..., str]:
    """``git(cwd, *args)``: run the git CLI with a fixed identity, return stdout."""
    return run_git


@pytest.fixture()
def git_repo(tmp_path: Path) -> Path:
    """A real git repository at ``tmp_path/repo`` on branch ``main`` with one commit (README.md)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n", encoding="utf-8")
    run_git(repo, "add", "README.md")
    run_git(repo, "commit", "-q", "-m", "Initial commit")
    return repo


@pytest.fixture()
def count_git(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """``started = count_git()``: from then on, every git process the test's code starts is listed in ``started`` by
    its subcommand (past ``-c``'s ``key=value`` and ``--options``)."""

    def start() -> list[str]:
        started: list[str] = []
        run = subprocess.run

        def counting(cmd: list[str], *args: object, **kwargs: object) -> object:
            if cmd[0] == "git":
                started.append(next(a for a in cmd[1:] if not a.startswith("-") and "=" not in a))
            return run(cmd, *args, **kwargs)  # type: ignore[call-overload]

        monkeypatch.setattr(subprocess, "run", counting)
        return started

    return start


# -- a real PostgreSQL for the team vault tests (tests/team/, the store contract suite) -------------------------
@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway PostgreSQL server on 127.0.0.1 (superuser URL), started once per test session.

    Skips only when no server can be started here (no binaries, no ``postgres`` user when root), saying why; under
    CI (env ``CI`` set) that is a failure instead: CI must run the team tests.
    """
    try:
        from synapse_nb.store.postgres.server import ServerUnavailable
    except ImportError as exc:  # psycopg missing: the test extra was not installed
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the team vault needs psycopg (pip install -e '.[test]'): {exc}")
    try:
        srv = launch_test_server()
    except ServerUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the team vault tests, but no PostgreSQL server could be started: {exc}")
        pytest.skip(f"no PostgreSQL server can be started here: {exc}")
    try:
        yield srv.url
    finally:
        srv.destroy()


#: The ports the test servers listen on: below the kernel's ephemeral range (32768-60999 on Linux), which is where
#: every ``bind(port 0)`` and every outgoing connection on the machine gets its port, and a block of its own for each
#: xdist worker (``-n 2`` in pyproject's addopts). The fault and outage tests stop their server and start it again
#: on the same port; with ports from the ephemeral range, the other worker's notebook kernels, JupyterLab or
#: PostgreSQL could be handed that port in between, and the restart would fail.
TEST_PORTS_FROM, TEST_PORTS_PER_WORKER = 20_000, 1_500


def _worker_number() -> int:
    """0 for ``gw0`` (and for a run without xdist), 1 for ``gw1``, ..."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def launch_test_server(attempts: int = 8) -> Any:
    """A new throwaway :class:`PgServer`, started on a free port of this worker's block (``TEST_PORTS_*``)."""
    from synapse_nb.store.postgres.server import PgServer, ServerUnavailable

    first = TEST_PORTS_FROM + (_worker_number() % 8) * TEST_PORTS_PER_WORKER
    ports = random.Random().sample(range(first, first + TEST_PORTS_PER_WORKER), TEST_PORTS_PER_WORKER)
    srv = PgServer.create()
    last: Exception | None = None
    try:
        for port in (p for p in ports if _bindable(p)):
            try:
                return srv.start(port=port)  # one attempt on that port; another process may take it meanwhile
            except ServerUnavailable as exc:
                last = exc
                attempts -= 1
                if attempts == 0:
                    break
        raise ServerUnavailable(f"could not start PostgreSQL on a port in {first}-{first + TEST_PORTS_PER_WORKER - 1}:"
                                f" {last}")
    except BaseException:
        shutil.rmtree(srv.base, ignore_errors=True)
        raise


@pytest.fixture(scope="session")
def launch_pg_server() -> Callable[[], Any]:
    """``launch_pg_server()``: one more throwaway server (a test's own, which it may stop, kill and restart), on
    a port of this worker's block like the session's server; the test destroys it."""
    return launch_test_server


@pytest.fixture(scope="session")
def new_team_project(pg_admin_url: str) -> Callable[[str], str]:
    """``new_team_project(prefix)``: create a fresh, migrated project on the test server; returns its name."""
    import psycopg

    from synapse_nb.store.postgres.migrate import migrate

    made = [0]

    def make(prefix: str = "t") -> str:
        made[0] += 1
        name = f"{prefix}{made[0]}"
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            migrate(conn, name)
        return name

    return make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs the PostgreSQL server ``team`` (the inner loop deselects them:
    ``pytest -m "not browser and not team"``): tests under tests/team/, tests that ask for the server, and the
    PostgreSQL cases of suites parametrised over the backends."""
    team_dir = Path(__file__).resolve().parent / "team"
    for item in items:
        callspec = getattr(item, "callspec", None)
        if (team_dir in Path(str(item.fspath)).resolve().parents or "pg_admin_url" in getattr(item, "fixturenames", ())
                or (callspec is not None and "postgres" in callspec.params.values())):
            item.add_marker(pytest.mark.team)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """After the run, the code-health checkers' own summary lines (tests/test_code_health.py), so a CI log shows
    "mypy: Success: no issues found ..." and "ruff: All checks passed!" beside the test counts."""
    lines = [f"{name}: {value}" for reports in terminalreporter.stats.values() for r in reports
             for name, value in getattr(r, "user_properties", ()) if name in ("mypy", "ruff")
             and getattr(r, "when", "call") == "call"]
    if lines:
        terminalreporter.section("code health")
        for line in sorted(set(lines)):
            terminalreporter.write_line(line)


# -- the default run on two xdist workers (pyproject's addopts: -n 2 --dist loadfile) ----------------------------
#: tests/browser/ is one unit of work: its package-scoped JupyterLab, Chromium and demo notebook are started once,
#: and its modules run in order on one page (test_reload.py reloads that page, after the others).
BROWSER_SUITE = Path(__file__).resolve().parent / "browser"


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, except that tests/browser/ goes to one worker as a whole, in collection order.

    loadfile keeps every file on one worker (so each notebook's cells run in order in one kernel, and module
    fixtures start once), but would deal the browser suite's files out to both workers: two JupyterLabs, two
    Chromiums, two copies of the notebook, and test_reload.py reloading a page that other modules still use."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    browser = BROWSER_SUITE.relative_to(config.rootpath).as_posix() + "/"

    class LoadFileBrowserTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return browser if nodeid.startswith(browser) else super()._split_scope(nodeid)

    return LoadFileBrowserTogether(config, log)


_DESELECTED: list[str] = []


def pytest_deselected(items: list[pytest.Item]) -> None:
    _DESELECTED.extend(item.nodeid for item in items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands the tests it deselected (``-m "not slow"``) to the controller, see below."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["deselected"] = list(_DESELECTED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Under xdist only the workers collect, so the controller's summary line would not say "N deselected": it
    says it again, from the first worker that finishes (every worker deselects the same tests)."""
    deselected = getattr(node, "workeroutput", {}).get("deselected")
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if deselected and reporter is not None and "deselected" not in reporter.stats:
        # objects, as the items are in a run without xdist: other plugins' summaries read every entry's attributes
        reporter.stats["deselected"] = [SimpleNamespace(nodeid=nodeid) for nodeid in deselected]
