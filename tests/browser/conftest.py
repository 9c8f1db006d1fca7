"""A real JupyterLab on 127.0.0.1 and headless Chromium driven by Playwright, for tests/browser/.

Recipe (what works offline on a CI machine running as root):

- Debian's ``chromium`` package (``apt-get install -y chromium fonts-dejavu-core fonts-liberation``;
  ``.ci/run`` installs it), launched by Playwright's Python package with ``executable_path`` set and
  ``--no-sandbox --disable-gpu`` plus the flags that stop background networking. ``playwright install``
  is never run (it downloads browsers).
- ``jupyter-lab`` itself (the ``jupyter lab`` wrapper forks, so its PID would be the wrong one) with the
  token off, ``--allow-root``, every ``JUPYTER*`` folder in a temporary directory, and an
  ``overrides.json`` that sets ``windowingMode: "none"`` (every cell is rendered, not only those in
  view) and turns off the news fetch. It is stopped by its PID.

Without Chromium or the ``browser`` extra the suite fails in CI (``CI`` set) and is skipped elsewhere
with the command that installs what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _notebook import nb, ui  # noqa: E402,F401  (the one notebook every test drives, opened once per session)
from _ui import ARTIFACTS  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions", "--mute-audio"]
OVERRIDES = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
_INSTALL = ('install them with: apt-get install -y chromium fonts-dejavu-core fonts-liberation && '
            'pip install -e ".[test,browser]"  (.ci/run does both)')


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the browser suite cannot run: {reason}; {_INSTALL}", pytrace=False)
    pytest.skip(f"{reason}; {_INSTALL}")


def chromium_path() -> str:
    """Debian's Chromium (or ``SYNAPSE_CHROMIUM``)."""
    for candidate in (os.environ.get("SYNAPSE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    _missing("no Chromium found (looked for SYNAPSE_CHROMIUM, /usr/bin/chromium, chromium on PATH)")
    raise AssertionError  # unreachable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running JupyterLab: its URL, the folder it serves and the server process."""

    url: str
    root: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def notebook(self, name: str, cells: list[str]) -> str:
        """Write a notebook of code cells into the served folder; returns its path for ``/lab/tree/``."""
        import nbformat

        book = nbformat.v4.new_notebook()
        book.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        nbformat.write(book, self.root / name)
        return name


@pytest.fixture(scope="package")
def lab() -> Iterator[Lab]:
    """A JupyterLab server on 127.0.0.1 with temporary JUPYTER_* folders, stopped by its PID."""
    chromium_path()
    try:
        import jupyterlab  # noqa: F401
        import playwright  # noqa: F401
    except ImportError as exc:
        _missing(f"the 'browser' extra is not installed ({exc.name} is missing)")
    exe = Path(sys.executable).with_name("jupyter-lab")
    if not exe.is_file():
        _missing(f"{exe} does not exist")
    tmp = Path(tempfile.mkdtemp(prefix="synapse-lab-"))
    dirs = {name: tmp / name for name in ("config", "data", "runtime", "user-settings", "workspaces", "app-settings",
                                          "notebooks")}
    for d in dirs.values():
        d.mkdir()
    (dirs["app-settings"] / "overrides.json").write_text(json.dumps(OVERRIDES), encoding="utf-8")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(dirs["config"]), "JUPYTER_DATA_DIR": str(dirs["data"]),
           "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]), "JUPYTERLAB_SETTINGS_DIR": str(dirs["user-settings"]),
           "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]), "JUPYTER_PLATFORM_DIRS": "1"}
    env.pop("SYNAPSE_HOME", None)
    port = _free_port()
    log = tmp / "jupyterlab.log"
    proc = subprocess.Popen(
        [str(exe), "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.token=",
         "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={dirs['notebooks']}",
         f"--LabApp.app_settings_dir={dirs['app-settings']}"],
        env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=dirs["notebooks"])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter-lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter-lab did not answer within 90 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield Lab(url=url, root=dirs["notebooks"], proc=proc, log=log)
    finally:
        proc.send_signal(signal.SIGTERM)  # its own PID: it shuts its kernels down, then exits
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copyfile(log, ARTIFACTS / "jupyterlab.log")
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="package")
def browser(lab: Lab) -> Iterator[Any]:
    """Headless Debian Chromium through Playwright's sync API."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()
