"""Review 78 F4: without the ``[team]`` extra (no psycopg), ``team init``, ``team status``, ``team grant``, ``team
search-local`` and ``team dev-server`` ended in ``unexpected error (ModuleNotFoundError): No module named
'psycopg'``; ``team join`` alone named the extra. Every ``team`` command now says it in one line, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer

from synapse_nb.cli import app

ROOT = Path(__file__).resolve().parent.parent
URL = "postgresql://alice@127.0.0.1:1/team?project=acme"
#: each team command's arguments (a command missing here fails the test: every one must be tried)
ARGS = {
    "init": [URL], "grant": [URL, "agent_a", "--mind", "default"], "join": [URL], "status": [URL], "trust": ["--yes"],
    "agent-login": ["postgresql://agent_a@127.0.0.1:1/team?project=acme"], "search-local": ["deploy"],
    "dev-server": ["--dir", "{tmp}/pg"],
}

# psycopg hidden (None in sys.modules: every import of it raises ImportError), then each command through the CLI
_RUN = """
import contextlib, io, json, sys
sys.modules["psycopg"] = None
from synapse_nb.cli import main
out = {}
for name, args in json.loads(sys.argv[1]).items():
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["team", name, *args])
    out[name] = [code, err.getvalue()]
print(json.dumps(out))
"""


def test_every_team_command_without_psycopg_names_the_team_extra(tmp_path: Path) -> None:
    commands = set(typer.main.get_command(app).commands["team"].commands)  # type: ignore[attr-defined]  # a group
    assert commands == set(ARGS)
    (tmp_path / "proj").mkdir()
    args = {name: [a.replace("{tmp}", str(tmp_path)) for a in given] for name, given in ARGS.items()}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SYNAPSE_HOME": "", "SYNAPSE_ACTOR": "user"}
    env.pop("CLAUDECODE", None)
    res = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args)], cwd=tmp_path / "proj", env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    for name, (code, err) in json.loads(res.stdout).items():
        assert code == 1, (name, err)
        assert err.count("\n") == 1 and err.startswith("synapse-nb: error: a team vault needs psycopg ("), (name, err)
        assert err.rstrip().endswith("install it with: pip install 'synapse_nb[team]'"), (name, err)
